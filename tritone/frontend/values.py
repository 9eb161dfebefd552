"""What the codegen knows about the values a kernel variable can hold.

At compile time a variable holds a `tensor` (an IR value), a `constexpr` or
another compile-time Python object (a dtype, a module, a function...), an
aggregate (a block pointer, `tl.make_block_ptr`: tensors plus a static block
shape and order; a tensor descriptor: tensors plus a static block type), an
instance of an aggregate class (`tl.core._aggregate`: named fields of any of
these), or a `tl.tuple` of those. Control flow and calls need to move such
values across region boundaries: they are split into their tensor leaves
(which become IR values: `if`/`for` results, call arguments) and a `Slot`
structure that remembers the types of the leaves and the compile-time parts,
so that the value can be rebuilt on the other side. Two values can be merged
(if branches, loop iterations, return paths) exactly when their slots are
equal: a block pointer whose block shape, order or element type changes in
a loop is an error, and so is a descriptor whose block type changes.
"""

from __future__ import annotations

import types as pytypes
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from ..ir.core import Value
from ..ir.types import dtype
from ..language.aggregate import aggregate_fields, is_aggregate
from ..language.block_pointer import block_pointer, block_pointer_type
from ..language.core import constexpr, constexpr_type, tensor, tuple_type
from ..language.core import slice as tl_slice
from ..language.core import tuple as tl_tuple
from ..language.descriptor import tensor_descriptor, tensor_descriptor_type


@dataclass(frozen=True)
class TensorSlot:
    """A tensor leaf of IR type `type`."""

    type: dtype


@dataclass(frozen=True)
class ConstSlot:
    """A compile-time leaf; two are equal when their values have the same key."""

    key: str
    value: Any = field(compare=False)


@dataclass(frozen=True)
class TupleSlot:
    """A `tl.tuple` of slots, with the field names of a namedtuple argument."""

    items: tuple
    fields: tuple[str, ...] | None = None


# Values made of tensors and a static part (its `type`): `leaves()` lists the
# tensors, `type.leaf_types()` their types and `type.rebuild(leaves)` makes the value again.
AGGREGATES = (block_pointer, tensor_descriptor)


@dataclass(frozen=True)
class AggregateSlot:
    """A block pointer or a tensor descriptor: its tensors have the types `type.leaf_types()`."""

    type: block_pointer_type | tensor_descriptor_type

    @property
    def key(self) -> str:
        """Its text in specialisation keys."""
        return self.type.key


@dataclass(frozen=True)
class ClassSlot:
    """An instance of an aggregate class (`tl.core._aggregate`) `cls`: one slot per field."""

    cls: type
    items: tuple

    @property
    def key(self) -> str:
        """Its text in specialisation keys (the class, by identity, and its fields)."""
        fields = ",".join(slot_key(item) for item in self.items)
        return f"aggregate:{self.cls.__module__}.{self.cls.__qualname__}@{id(self.cls):x}<{fields}>"


Slot = TensorSlot | ConstSlot | TupleSlot | AggregateSlot | ClassSlot


def slot_key(slot: Slot) -> str:
    """A slot's text in specialisation keys (and names of specialised functions)."""
    if isinstance(slot, TensorSlot):
        return str(slot.type)
    if isinstance(slot, TupleSlot):
        return "(" + ",".join(slot_key(item) for item in slot.items) + ")"
    return slot.key


def is_tensor(value: Any) -> bool:
    return isinstance(value, tensor)


def unwrap(value: Any) -> Any:
    """The Python value behind a constexpr (other values unchanged)."""
    return value.value if isinstance(value, constexpr) else value


def wrap(value: Any) -> Any:
    """Give a compile-time Python result the form kernel code sees: tensors and
    tl.tuples stay, Python tuples/lists (and namedtuples holding tensors)
    become tl.tuples, the rest constexprs."""
    if isinstance(value, (tensor, constexpr, tl_tuple, *AGGREGATES)) or is_aggregate(value):
        return value
    if isinstance(value, (tuple, list)) and not _is_namedtuple_instance(value):
        return tl_tuple([wrap(v) for v in value])
    if _is_namedtuple_instance(value):
        items = [wrap(v) for v in value]
        if any(has_tensor(item) for item in items):
            # Built in kernel code from run-time values: a tl.tuple keeping its
            # fields, as a namedtuple argument is, so that calls can take it apart.
            return make_tuple(items, type(value)._fields)
    return constexpr(value)


def constexpr_named(value: Any) -> Any:
    """A value bound to a constexpr name (a kernel's constexpr parameter, `x:
    tl.constexpr = ...`) as kernel code sees it: `wrap(value)`; a tuple holding
    no tensors (or fields) stays a tl.tuple whose `type` is the constexpr type of
    the Python tuple, as Triton's constexpr-wrapped tuple answers
    (`x.type == constexpr_type((5, 6, 7))`)."""
    value = wrap(value)
    if isinstance(value, tl_tuple) and value.type is None and not has_tensor(value):
        return tl_tuple(value.values, constexpr_type(to_python(value)))
    return value


def to_python(value: Any) -> Any:
    """A compile-time value as plain Python (constexprs unwrapped, tl.tuples as
    tuples, tl.slices as slices)."""
    if isinstance(value, tl_tuple):
        return tuple(to_python(v) for v in value.values)
    if isinstance(value, tl_slice):
        return value.to_python()
    return unwrap(value)


def has_tensor(value: Any) -> bool:
    """Whether `value` is or contains a tensor (a run-time value)."""
    if isinstance(value, (tensor, *AGGREGATES)):
        return True
    if isinstance(value, tl_tuple):
        return any(has_tensor(v) for v in value.values)
    if isinstance(value, tl_slice):
        return any(has_tensor(part) for part in (value.start, value.stop, value.step))
    if is_aggregate(value):
        return any(has_tensor(getattr(value, name)) for name in aggregate_fields(value))
    return False


def slot_of(value: Any) -> Slot:
    if isinstance(value, tensor):
        return TensorSlot(value.type)
    if isinstance(value, tl_tuple):
        return TupleSlot(tuple(slot_of(v) for v in value.values), tuple_fields(value))
    if isinstance(value, AGGREGATES):
        return AggregateSlot(value.type)
    if is_aggregate(value):
        return ClassSlot(type(value), tuple(slot_of(getattr(value, name)) for name in aggregate_fields(value)))
    return ConstSlot(constexpr_key(unwrap(value)), value)


def leaves(value: Any) -> list[tensor]:
    """The tensors inside `value`, in order."""
    if isinstance(value, tensor):
        return [value]
    if isinstance(value, tl_tuple):
        return [leaf for v in value.values for leaf in leaves(v)]
    if isinstance(value, AGGREGATES):
        return value.leaves()
    if is_aggregate(value):
        return [leaf for name in aggregate_fields(value) for leaf in leaves(getattr(value, name))]
    return []


def slot_types(slot: Slot) -> list[dtype]:
    """The IR types of the tensor leaves of a slot, in order."""
    if isinstance(slot, TensorSlot):
        return [slot.type]
    if isinstance(slot, TupleSlot):
        return [t for item in slot.items for t in slot_types(item)]
    if isinstance(slot, AggregateSlot):
        return slot.type.leaf_types()
    if isinstance(slot, ClassSlot):
        return [t for item in slot.items for t in slot_types(item)]
    return []


def rebuild(slot: Slot, handles: Sequence[Value]) -> Any:
    """The value of shape `slot` whose tensor leaves are `handles` (in order)."""
    it = iter(handles)
    value = _rebuild(slot, it)
    if next(it, None) is not None:
        raise ValueError("more IR values than the slot has tensor leaves")
    return value


def _rebuild(slot: Slot, it: Iterator[Value]) -> Any:
    if isinstance(slot, TensorSlot):
        return tensor(next(it), slot.type)
    if isinstance(slot, TupleSlot):
        return make_tuple([_rebuild(item, it) for item in slot.items], slot.fields)
    if isinstance(slot, AggregateSlot):
        return slot.type.rebuild([tensor(next(it), t) for t in slot.type.leaf_types()])
    if isinstance(slot, ClassSlot):
        instance = slot.cls._get_instance()
        for name, item in zip(aggregate_fields(slot.cls), slot.items):
            object.__setattr__(instance, name, _rebuild(item, it))
        return instance
    return slot.value


def make_tuple(values: list, fields: Sequence[str] | None = None) -> tl_tuple:
    """A tl.tuple of `values`; with `fields`, the value of a namedtuple whose
    elements kernel code also reads as attributes (`t.x`, see `tuple_field`)."""
    if fields is None:
        return tl_tuple(values)
    return tl_tuple(values, tuple_type([getattr(v, "type", None) for v in values], list(fields)))


def tuple_like(original: tl_tuple, values: list) -> tl_tuple:
    """A tl.tuple of `values` with the field names of `original`, if it has some."""
    return make_tuple(values, tuple_fields(original))


def tuple_fields(value: tl_tuple) -> tuple[str, ...] | None:
    """The field names of a tl.tuple made from a namedtuple, else None."""
    ty = value.type
    return tuple(ty.fields) if isinstance(ty, tuple_type) and ty.fields is not None else None


def tuple_field(value: tl_tuple, name: str) -> Any:
    """Element `name` of a tl.tuple with field names; AttributeError naming the
    fields otherwise."""
    fields = tuple_fields(value)
    if fields is None or name not in fields:
        known = f"its fields are {', '.join(fields)}" if fields else "it has no field names"
        raise AttributeError(f"tuple has no attribute {name!r} ({known})")
    return value.values[fields.index(name)]


def same_value(a: Any, b: Any) -> bool:
    """Whether two kernel values are the same value (same IR values, same
    compile-time objects): used to find which names a region reassigned."""
    if a is b:
        return True
    if isinstance(a, tensor) and isinstance(b, tensor):
        return a.handle is b.handle and a.type == b.type
    if isinstance(a, tl_tuple) and isinstance(b, tl_tuple):
        return len(a.values) == len(b.values) and all(same_value(x, y) for x, y in zip(a.values, b.values))
    if isinstance(a, AGGREGATES) and type(a) is type(b):
        return a.type == b.type and all(same_value(x, y) for x, y in zip(a.leaves(), b.leaves()))
    if is_aggregate(a) and type(a) is type(b):
        return all(same_value(getattr(a, name), getattr(b, name)) for name in aggregate_fields(a))
    return False


def detached(value: Any) -> Any:
    """`value` with every aggregate class instance in it copied (the fields
    themselves shared): a region's code sees its own copy, since a plain method of
    an aggregate changes its fields in place, and the region's changes must be
    found by comparing with the value from before it."""
    if is_aggregate(value):
        copy = type(value)._get_instance()
        for name in aggregate_fields(value):
            object.__setattr__(copy, name, detached(getattr(value, name)))
        return copy
    if isinstance(value, tl_tuple) and any(is_aggregate(v) or isinstance(v, tl_tuple) for v in value.values):
        return tl_tuple([detached(v) for v in value.values], value.type)
    return value


def detached_scope(scope: dict[str, Any]) -> dict[str, Any]:
    """A region's starting scope: `scope` with its aggregates `detached`."""
    return {name: detached(value) for name, value in scope.items()}


def constexpr_key(value: Any) -> str:
    """A stable text key of a compile-time value, for naming specialisations and
    comparing compile-time leaves (type included: `True` is not `1`)."""
    if isinstance(value, constexpr):
        value = value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, dtype):
        return f"dtype:{value}"
    if isinstance(value, tl_tuple):
        value = tuple(value.values)
    if isinstance(value, (tuple, list)):
        inner = ",".join(constexpr_key(v) for v in value)
        return f"{type(value).__name__}:({inner})"
    if isinstance(value, pytypes.ModuleType):
        return f"module:{value.__name__}"
    # Functions and other objects: two objects of one name (closures made by a
    # factory) must not share a specialisation, so the identity is part of the key.
    name = f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', type(value).__qualname__)}"
    return f"{type(value).__name__}:{name}@{id(value):x}"


def _is_namedtuple_instance(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_namedtuple_type(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields")


def describe_type(ty: Any) -> str:
    """A type as Triton prints it in its error messages (`int32`, `<['128'], fp32>`)."""
    return str(ty)


def describe_value(value: Any) -> str:
    """A kernel value as Triton prints it in its error messages (`int32[]`, `fp32[constexpr[128]]`)."""
    if isinstance(value, tensor):
        return str(value)
    if isinstance(value, tl_tuple):
        return "(" + ", ".join(describe_value(v) for v in value.values) + ")"
    if isinstance(value, AGGREGATES):
        return describe_type(value.type)
    if isinstance(value, constexpr):
        return f"constexpr[{value.value!r}]"
    return repr(value)


def describe_slot(slot: Slot) -> str:
    if isinstance(slot, TensorSlot):
        return describe_type(slot.type)
    if isinstance(slot, TupleSlot):
        return "(" + ", ".join(describe_slot(s) for s in slot.items) + ")"
    if isinstance(slot, AggregateSlot):
        return describe_type(slot.type)
    if isinstance(slot, ClassSlot):
        return f"{slot.cls.__qualname__}(" + ", ".join(describe_slot(s) for s in slot.items) + ")"
    if slot.value is None:
        return "void"
    return f"constexpr[{unwrap(slot.value)!r}]"
