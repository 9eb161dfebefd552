"""Typing kernel arguments from their values, and the per-kernel binder.

`specialize_value` gives one argument's signature type and specialization
attribute as Triton does (TRITON_CONTRACT section 2, TRITON_SEMANTICS 11):

| value | type | attribute |
|---|---|---|
| None | constexpr | |
| bool | u1 | |
| int == 1 | constexpr 1 (i32 under do_not_specialize) | |
| int in [-2^31, 2^31) | i32 | "D" when divisible by 16 |
| int in [2^63, 2^64) | u64 | "D" |
| other int in [-2^63, 2^63) | i64 | "D" |
| float | fp32 | |
| tensor / array | `*dtype` (`*k...` for const params) | "D" when the address is 16-byte aligned |
| `@jit` function, `tl.constexpr` | constexpr | |
| tuple / namedtuple | `TupleSpecialization` | (per element) |
| `TensorDescriptor` | `tensordesc<fp16[64, 64]>` (dtype, block) | "D": dims divide by 16; "Z": zero padding |

The attribute is `"D"`, `""` (looked at, not divisible) or None (not looked
at: do_not_specialize, or a type that is never specialised); a descriptor's
is `"D"` or `""` followed by `"Z"` when it pads with zeros. A tuple argument
is typed element by element by the same table (its `(type, attribute)` pairs
are held by a `TupleSpecialization`, whose own attribute is None); numpy arrays
in a byte order other than the machine's are refused.

`make_binder(fn)` generates, once per kernel, a Python function with the
kernel's own parameter list that binds `*args, **kwargs` (defaults applied)
and computes every argument's specialization without `inspect`.
`make_key_binder(fn)` generates its cheap companion for launches of kernels
already compiled: a lookup key that determines the specialization, from a few
operations per torch tensor, int or float argument.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..language.core import constexpr
from ..tensors import data_address, is_pointer_like
from ..tools.tensor_descriptor import TensorDescriptor
from .jit import _CANONICAL_TYPE_NAMES, JITFunction

CONSTEXPR = "constexpr"
DIVISIBLE = "D"
# A host descriptor whose padding is zero (see specialize_value): part of its attribute, after any "D".
ZERO_PADDED = "Z"

_I32_MIN, _I32_END = -(1 << 31), 1 << 31
_I64_MIN, _I64_END = -(1 << 63), 1 << 63
_U64_END = 1 << 64


class UnknownKeywordError(KeyError, TypeError):
    """A launch keyword that is neither a parameter of the kernel nor a launch
    option. A KeyError as in Triton, and a TypeError as for any Python call."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _int_type(value: int) -> str:
    if _I32_MIN <= value < _I32_END:
        return "i32"
    if _I64_MIN <= value < _I64_END:
        return "i64"
    if _I64_END <= value < _U64_END:
        return "u64"
    raise OverflowError(f"integer argument {value} does not fit in 64 bits")


_element_type_names: dict[Any, str] = {}


def element_type_name(dtype: Any) -> str:
    """Signature name (`fp32`, `u1`, `fp8e4nv`...) of a torch or numpy dtype."""
    name = _element_type_names.get(dtype)
    if name is None:
        name = _element_type_names[dtype] = _element_type_name(dtype)
    return name


def _element_type_name(dtype: Any) -> str:
    text = str(dtype)
    if text.startswith("torch."):
        text = text[len("torch."):]
    else:
        text = getattr(dtype, "name", text)
    name = _CANONICAL_TYPE_NAMES.get(text)
    if name is None:
        raise TypeError(f"tensors of dtype {dtype} cannot be kernel arguments")
    return name


@dataclass(frozen=True)
class TupleSpecialization:
    """The type of a tuple argument: `items` holds one `(type, attribute)` pair
    per element, as `specialize_value` gives them (nested tuples as nested
    TupleSpecializations), and `kind` is `tuple` or the argument's namedtuple
    class, so that kernels compiled for namedtuples of other fields are not shared."""

    kind: type
    items: tuple[tuple[Any, Any], ...]

    def signature(self) -> Any:
        """The type as Triton's `ASTSource` signatures write it: a tuple (or a
        namedtuple of `kind`) of the element types, constexpr elements as
        `"constexpr"`."""
        types = [item.signature() if isinstance(item, TupleSpecialization) else item for item, _ in self.items]
        return self.kind._make(types) if self.kind is not tuple else tuple(types)


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields") and hasattr(type(value), "_make")


def _specialize_tuple(value: tuple, is_const: bool, specialize: bool, align: bool,
                      path: tuple[int, ...] = ()) -> TupleSpecialization:
    """The TupleSpecialization of `value`, whose elements are typed with the
    flags of the parameter; an element that cannot be an argument raises
    naming its index (`element [1][0]`) below the tuple argument."""
    items = []
    for index, item in enumerate(value):
        where = (*path, index)
        if isinstance(item, tuple):
            items.append((_specialize_tuple(item, is_const, specialize, align, where), None))
            continue
        try:
            items.append(specialize_value(item, is_const, specialize, align))
        except (TypeError, OverflowError) as error:
            raise type(error)(f"element {''.join(f'[{i}]' for i in where)}: {error}") from None
    return TupleSpecialization(type(value) if _is_namedtuple(value) else tuple, tuple(items))


def _check_byte_order(value: Any) -> None:
    """Refuse arrays whose elements are stored in the other byte order: kernels
    read memory in the machine's order and would compute on swapped bytes."""
    dtype = getattr(value, "dtype", None)
    if getattr(dtype, "isnative", True) is False:
        raise TypeError(f"a numpy array of non-native byte order ({dtype.str}) cannot be a kernel argument; "
                        f"convert it with .astype({dtype.newbyteorder('=').name!r})")


def constexpr_key(value: Any) -> Any:
    """A hashable stand-in for a constexpr value in cache keys. Keeps the type so
    that `1`, `True` and `1.0` do not share a compiled kernel."""
    if isinstance(value, JITFunction):
        return ("jit", value.cache_key)
    try:
        hash(value)
    except TypeError:
        return (type(value).__qualname__, repr(value))
    return (type(value).__qualname__, value)


def specialize_value(value: Any, is_const: bool = False, specialize: bool = True,
                     align: bool = True) -> tuple[str, Any]:
    """`(type, attribute)` of one argument; for constexprs `("constexpr", key)`
    where key is `constexpr_key(value)`. Raises TypeError for values that cannot
    be kernel arguments."""
    if value is None:
        return CONSTEXPR, constexpr_key(None)
    if isinstance(value, bool):
        return "u1", None
    if isinstance(value, int):
        if value == 1 and specialize:
            return CONSTEXPR, constexpr_key(1)
        type_name = _int_type(value)
        if not specialize:
            return type_name, None
        return type_name, DIVISIBLE if align and value % 16 == 0 else ""
    if isinstance(value, float):
        return "fp32", None
    if isinstance(value, (JITFunction, constexpr)):
        return CONSTEXPR, constexpr_key(value.value if isinstance(value, constexpr) else value)
    if isinstance(value, np.generic):
        # A numpy scalar (np.int32(3), np.bool_(True)) is the Python value it holds.
        return specialize_value(value.item(), is_const, specialize, align)
    if is_pointer_like(value):
        _check_byte_order(value)
        type_name = ("*k" if is_const else "*") + element_type_name(value.dtype)
        if not specialize:
            return type_name, None
        return type_name, DIVISIBLE if align and data_address(value) % 16 == 0 else ""
    if isinstance(value, tuple):
        return _specialize_tuple(value, is_const, specialize, align), None
    if isinstance(value, TensorDescriptor):
        # tritone's additions (Triton specialises descriptors on their type alone), for the pointer
        # code used where TMA is not: "D", a shape of multiples of 16, makes the bounds checks of whole
        # vectors one; "Z", zero padding, lets loads be asynchronous copies (which fill with zeros).
        if not specialize:
            return value.signature_type(), None
        divisible = DIVISIBLE if align and _dims_divide_by_16(value.shape) else ""
        return value.signature_type(), divisible + (ZERO_PADDED if value.padding == "zero" else "")
    raise TypeError(_unsupported_argument(value))


def _unsupported_argument(value: Any) -> str:
    """Why `value` cannot be a kernel argument, and what can."""
    kind = type(value).__qualname__
    message = (f"failed to specialize argument of type {kind}. Kernel arguments are tensors (torch tensors, numpy "
               f"arrays, objects with data_ptr()), ints, floats, bools, None, tl.constexpr values, TensorDescriptors "
               f"and tuples of these")
    if isinstance(value, (list, range)):
        message += f". A {kind} is not converted: put the values in a tensor, e.g. torch.tensor(values, device='cuda')"
    return message


def specialize_annotated(value: Any, annotation_type: str, specialize: bool, align: bool) -> tuple[str, Any]:
    """Specialization of a parameter annotated with a concrete type (`n: tl.int64`,
    `x: "*fp16"`): the type is the annotation; ints and pointers still get their
    divisibility attribute. Floats and bools are never specialised."""
    if annotation_type.startswith("*"):
        _check_byte_order(value)
    if annotation_type == "u1" or annotation_type.startswith(("fp", "bf")) or not specialize:
        return annotation_type, None
    if isinstance(value, bool):
        return annotation_type, None
    if isinstance(value, int):
        return annotation_type, DIVISIBLE if align and value % 16 == 0 else ""
    if is_pointer_like(value):
        return annotation_type, DIVISIBLE if align and data_address(value) % 16 == 0 else ""
    return annotation_type, None


def _checked(fn_name: str, param: str, specialize_fn: Callable, *args) -> tuple[str, Any]:
    try:
        return specialize_fn(*args)
    except (TypeError, OverflowError) as error:
        raise type(error)(f"kernel {fn_name}, argument {param!r}: {error}") from None


Binder = Callable[..., "tuple[dict[str, Any], tuple[tuple[str, Any], ...], dict[str, Any]]"]


def make_binder(fn: JITFunction) -> Binder:
    """A function with `fn`'s parameter list returning `(bound, specialization,
    options)`: every parameter's value by name (defaults applied), one
    `(type, attribute)` per parameter, and the remaining keywords (launch
    options). Python's own TypeError names the kernel on a wrong argument count."""
    namespace: dict[str, Any] = {
        "_specialize": specialize_value, "_annotated": specialize_annotated,
        "_checked": _checked, "_constexpr_key": constexpr_key, "_CONSTEXPR": CONSTEXPR,
        "_fn_name": fn.__name__,
    }
    parameters = []
    specializations = []
    for param in fn.params:
        name = param.name
        if param.has_default:
            namespace[f"_default_{name}"] = param.default
            parameters.append(f"{name}=_default_{name}")
        else:
            parameters.append(name)
        specialize = not param.do_not_specialize
        align = not param.do_not_specialize_on_alignment
        if param.is_constexpr:
            specializations.append(f"(_CONSTEXPR, _constexpr_key({name}))")
        elif param.annotation_type:
            specializations.append(
                f"_checked(_fn_name, {name!r}, _annotated, {name}, {param.annotation_type!r}, {specialize}, {align})")
        else:
            specializations.append(
                f"_checked(_fn_name, {name!r}, _specialize, {name}, {param.is_const}, {specialize}, {align})")
    bound = ", ".join(f"{p.name!r}: {p.name}" for p in fn.params)
    # The generated function carries the kernel's name so that Python's
    # "missing 1 required positional argument" errors name the kernel.
    source = (f"def {fn.__name__}({', '.join([*parameters, '**_launch_options'])}):\n"
              f"    return {{{bound}}}, ({', '.join(specializations)}{',' if specializations else ''}), "
              f"_launch_options\n")
    exec(compile(source, f"<binder of {fn.__name__}>", "exec"), namespace)
    return namespace[fn.__name__]


KeyBinder = Callable[..., "tuple[tuple, tuple, dict[str, Any]]"]


class _NoTensorType:
    """Stands for torch.Tensor while torch is not loaded: no argument has this type."""


# What `specialize_value` gives for the common scalars, shared by the key code so
# that its keys for them are the specializations themselves.
_ONE = (CONSTEXPR, constexpr_key(1))
_I32_DIVISIBLE, _I32, _I32_UNSPECIALIZED, _FP32 = ("i32", DIVISIBLE), ("i32", ""), ("i32", None), ("fp32", None)


# The builtins generated code calls, each reached as `<prefix><name>` (see key_namespace).
GENERATED_CODE_BUILTINS = (type, isinstance, int, float, tuple, len, callable, dict, zip)


def generated_prefix(fn: JITFunction) -> str:
    """A prefix for the names generated code owns beside `fn`'s parameters: more
    leading underscores than any parameter name has, so none can shadow them."""
    names = [param.name for param in fn.params]
    return "_" * (1 + max((len(n) - len(n.lstrip("_")) for n in names), default=0))


def make_key_binder(fn: JITFunction) -> KeyBinder:
    """A function with `fn`'s parameter list (the same binding and the same errors
    for a wrong argument count as `make_binder`'s) returning `(key, values, options)`:
    a hashable key, every parameter's value in order (defaults applied), and the
    remaining keywords (launch options).

    Two calls with equal keys have equal `make_binder` specializations, so the key
    can stand for the specialization in a cache of compiled kernels. It costs a few
    operations for a torch tensor (dtype and 16-byte alignment), a Python int in
    the i32 range and a float; any other value is specialised by `specialize_value`
    (whose errors name the parameter). A tensor of a dtype no kernel can take still
    gets a key: such keys are never in a cache, since `make_binder` refuses them."""
    prefix = generated_prefix(fn)
    namespace = key_namespace(fn, prefix)
    body = [f"    {line}" for index, param in enumerate(fn.params)
            for line in key_statements(param, f"{prefix}k{index}", prefix)]
    keys = "".join(f"{prefix}k{index}, " for index in range(len(fn.params)))
    source = "\n".join([f"def {fn.__name__}({parameter_list(fn, namespace, prefix)}):", *body,
                        f"    return ({keys}), ({argument_tuple(fn)}), {prefix}options"]) + "\n"
    exec(compile(source, f"<key binder of {fn.__name__}>", "exec"), namespace)
    return namespace[fn.__name__]


def parameter_list(fn: JITFunction, namespace: dict[str, Any], prefix: str) -> str:
    """`fn`'s parameters as generated code declares them (defaults from
    `namespace`, added there), then `**{prefix}options` for the other keywords."""
    parameters = []
    for param in fn.params:
        if param.has_default:
            namespace[f"{prefix}default_{param.name}"] = param.default
            parameters.append(f"{param.name}={prefix}default_{param.name}")
        else:
            parameters.append(param.name)
    return ", ".join([*parameters, f"**{prefix}options"])


def argument_tuple(fn: JITFunction) -> str:
    """The tuple of `fn`'s parameters, as generated code writes it."""
    return "".join(f"{param.name}, " for param in fn.params)


def key_namespace(fn: JITFunction, prefix: str) -> dict[str, Any]:
    """The names (after `prefix`) the statements of `key_statements` use, for `fn`."""
    torch = sys.modules.get("torch")
    namespace: dict[str, Any] = {}

    def checked(*arguments: Any) -> tuple[str, Any]:
        # Other values are rare on this path; torch imported after the key code was made is noticed here.
        if namespace[f"{prefix}Tensor"] is _NoTensorType and "torch" in sys.modules:
            namespace[f"{prefix}Tensor"] = sys.modules["torch"].Tensor
        return _checked(*arguments)

    names = {"specialize": specialize_value, "annotated": specialize_annotated, "checked": checked,
             "constexpr_key": constexpr_key, "fn_name": fn.__name__,
             "Descriptor": TensorDescriptor, "descriptor_key": _descriptor_key,
             "Tensor": getattr(torch, "Tensor", _NoTensorType),
             "ONE": _ONE, "I32D": _I32_DIVISIBLE, "I32": _I32, "I32N": _I32_UNSPECIALIZED, "FP32": _FP32}
    # Generated code reaches Python builtins through prefixed names too: a kernel
    # parameter may be called `type` or `len`, as Triton allows.
    names.update({f.__name__: f for f in GENERATED_CODE_BUILTINS})
    namespace.update({prefix + name: value for name, value in names.items()})
    return namespace


def _dims_divide_by_16(shape) -> bool:
    """Whether every dim of a host descriptor's shape divides by 16 (its "D" attribute)."""
    for dim in shape:  # a loop costs less than all() and a generator for a few dims
        if dim & 15:
            return False
    return True


def _descriptor_key(desc: TensorDescriptor) -> tuple:
    """What determines the specialization of host descriptor `desc` (its dtype, block,
    whether every dim divides by 16, its padding), cheaper than building it; a tuple of
    four, never equal to a specialization."""
    return desc.base.dtype, tuple(desc.block_shape), _dims_divide_by_16(desc.shape), desc.padding


def key_statements(param: Any, key: str, prefix: str) -> list[str]:
    """The generated statements (names from `key_namespace`) setting the variable
    `key` to parameter `param`'s part of the argument key (see `make_key_binder`)."""
    name, p = param.name, prefix
    specialize = not param.do_not_specialize
    align = not param.do_not_specialize_on_alignment
    if param.is_constexpr:
        # An int stands for itself; anything else is its constexpr_key, a tuple.
        return [f"{key} = {name} if {p}type({name}) is {p}int else {p}constexpr_key({name})"]
    if param.annotation_type:
        return [f"{key} = {p}checked({p}fn_name, {name!r}, {p}annotated, {name}, {param.annotation_type!r}, "
                f"{specialize}, {align})"]
    # The tensor's dtype (with its alignment): never equal to a specialization, which is
    # a tuple of strings. Ints and floats get their specialization itself.
    if specialize and align:
        tensor = f"{name}.dtype if not {name}.data_ptr() & 15 else ({name}.dtype, 0)"
        small_int = f"{p}ONE if {name} == 1 else {p}I32D if not {name} & 15 else {p}I32"
    else:
        tensor = f"{name}.dtype"
        small_int = f"{p}ONE if {name} == 1 else {p}I32" if specialize else f"{p}I32N"
    descriptor = [f"elif {p}type({name}) is {p}Descriptor:", f"    {key} = {p}descriptor_key({name})"] \
        if specialize and align else []
    return [
        f"if {p}isinstance({name}, {p}Tensor):",
        f"    {key} = {tensor}",
        f"elif {p}type({name}) is {p}int and -2147483648 <= {name} <= 2147483647:",
        f"    {key} = {small_int}",
        f"elif {p}type({name}) is {p}float:",
        f"    {key} = {p}FP32",
        *descriptor,
        "else:",
        f"    {key} = {p}checked({p}fn_name, {name!r}, {p}specialize, {name}, {param.is_const}, {specialize}, "
        f"{align})",
    ]
