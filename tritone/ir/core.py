"""The IR's data structures: values, operations, regions, functions, modules,
and the builder that creates operations at an insertion point.

The IR is block-level SSA with structured control flow. An `Operation` has a
name (its meaning is documented in docs/IR.md), operands, results, attributes
and zero or more regions; a `Region` is a single block of operations with
block arguments. Functions own one region; a `Module` owns functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from .types import dtype, type_text


@dataclass(frozen=True)
class Location:
    """Where an operation came from in the user's source (1-based line, 0-based column)."""

    file: str = "<unknown>"
    line: int = 0
    col: int = 0
    function: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN_LOC = Location()


class Value:
    """An SSA value: the result of an operation or an argument of a region."""

    __slots__ = ("type", "owner", "index", "name_hint")

    def __init__(self, type: dtype, owner: "Operation | Region | None" = None, index: int = 0,
                 name_hint: str | None = None):
        self.type = type
        self.owner = owner
        self.index = index
        self.name_hint = name_hint

    @property
    def defining_op(self) -> "Operation | None":
        return self.owner if isinstance(self.owner, Operation) else None

    def __repr__(self) -> str:
        return f"Value({type_text(self.type)}, #{id(self) & 0xFFFF:x})"


class Operation:
    """One IR operation.

    `attrs` values are plain Python data (ints, floats, bools, strings, tuples
    of those, types); they must print and parse back (see ir/printer.py).
    """

    __slots__ = ("name", "operands", "results", "attrs", "regions", "loc", "parent")

    def __init__(self, name: str, operands: Sequence[Value] = (), result_types: Sequence[dtype] = (),
                 attrs: dict[str, Any] | None = None, regions: Sequence["Region"] = (),
                 loc: Location = UNKNOWN_LOC):
        self.name = name
        self.operands = list(operands)
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs = dict(attrs or {})
        self.regions = list(regions)
        for region in self.regions:
            region.parent = self
        self.loc = loc
        self.parent: Region | None = None

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"operation {self.name} has {len(self.results)} results, not one")
        return self.results[0]

    def walk(self) -> Iterator["Operation"]:
        """This operation, then every operation nested in its regions, in program order."""
        yield self
        for region in self.regions:
            yield from region.walk()

    def __repr__(self) -> str:
        return f"Operation({self.name}, {len(self.operands)} operands, {len(self.results)} results)"


class Region:
    """A single block of operations with typed block arguments."""

    __slots__ = ("args", "ops", "parent")

    def __init__(self, arg_types: Sequence[dtype] = (), arg_names: Sequence[str | None] | None = None):
        names = list(arg_names) if arg_names is not None else [None] * len(arg_types)
        self.args = [Value(t, self, i, n) for i, (t, n) in enumerate(zip(arg_types, names))]
        self.ops: list[Operation] = []
        self.parent: Operation | Function | None = None

    def add_arg(self, type: dtype, name: str | None = None) -> Value:
        value = Value(type, self, len(self.args), name)
        self.args.append(value)
        return value

    def append(self, op: Operation) -> Operation:
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Operation) -> Operation:
        op.parent = self
        self.ops.insert(index, op)
        return op

    @property
    def terminator(self) -> Operation | None:
        return self.ops[-1] if self.ops else None

    def walk(self) -> Iterator[Operation]:
        for op in list(self.ops):
            yield from op.walk()


class Function:
    """A function: the kernel itself, or a `@jit` callee specialised for its argument types."""

    def __init__(self, name: str, arg_types: Sequence[dtype], arg_names: Sequence[str] | None = None,
                 result_types: Sequence[dtype] = (), attrs: dict[str, Any] | None = None,
                 loc: Location = UNKNOWN_LOC):
        self.name = name
        self.body = Region(arg_types, arg_names)
        self.body.parent = self
        self.result_types = list(result_types)
        self.attrs = dict(attrs or {})
        self.loc = loc

    @property
    def args(self) -> list[Value]:
        return self.body.args

    @property
    def arg_types(self) -> list[dtype]:
        return [a.type for a in self.body.args]

    def walk(self) -> Iterator[Operation]:
        return self.body.walk()


class Module:
    """A compilation unit: the kernel (`entry`) and the functions it calls.

    `attrs` carries module-wide facts (`num_warps`, `num_ctas`, `target`, ...).
    """

    def __init__(self, entry: str = "", attrs: dict[str, Any] | None = None):
        self.functions: dict[str, Function] = {}
        self.entry = entry
        self.attrs = dict(attrs or {})

    def add(self, fn: Function) -> Function:
        if fn.name in self.functions:
            raise ValueError(f"function {fn.name} defined twice")
        self.functions[fn.name] = fn
        if not self.entry:
            self.entry = fn.name
        return fn

    @property
    def kernel(self) -> Function:
        return self.functions[self.entry]

    def walk(self) -> Iterator[Operation]:
        for fn in self.functions.values():
            yield from fn.walk()


class Builder:
    """Creates operations at an insertion point (the end of a region, or before
    a given index of it), stamping each with the current source location."""

    def __init__(self, region: Region | None = None):
        self.region = region
        self.index: int | None = None  # None: append at the end
        self.loc = UNKNOWN_LOC
        # Called with each result type of each operation created; raises for a
        # type the target cannot hold (the frontend sets it from the options).
        self.check_type: Callable[[dtype], None] | None = None

    def set_insertion_point_to_end(self, region: Region) -> None:
        self.region = region
        self.index = None

    def set_insertion_point(self, region: Region, index: int) -> None:
        self.region = region
        self.index = index

    def insertion_point(self) -> tuple[Region | None, int | None]:
        return self.region, self.index

    def restore_insertion_point(self, point: tuple[Region | None, int | None]) -> None:
        self.region, self.index = point

    def create(self, name: str, operands: Sequence[Value] = (), result_types: Sequence[dtype] = (),
               attrs: dict[str, Any] | None = None, regions: Sequence[Region] = (),
               loc: Location | None = None) -> Operation:
        if self.region is None:
            raise RuntimeError("builder has no insertion point")
        if self.check_type is not None:
            for result_type in result_types:
                self.check_type(result_type)
        op = Operation(name, operands, result_types, attrs, regions, loc or self.loc)
        if self.index is None:
            self.region.append(op)
        else:
            self.region.insert(self.index, op)
            self.index += 1
        return op

    def create_value(self, name: str, operands: Sequence[Value], result_type: dtype,
                     attrs: dict[str, Any] | None = None, loc: Location | None = None) -> Value:
        """Create a single-result operation and return its result."""
        return self.create(name, operands, [result_type], attrs, (), loc).result


def replace_all_uses(root: Module | Function | Region, old: Value, new: Value) -> None:
    """Make every operation under `root` that reads `old` read `new` instead."""
    for op in root.walk():
        operands = op.operands
        for v in operands:
            if v is old:
                op.operands = [new if v is old else v for v in operands]
                break


def clone_region(region: Region, value_map: dict[Value, Value]) -> Region:
    """A deep copy of `region` (args, ops, nested regions). `value_map` maps values
    defined outside to their replacements; it is extended with every value the
    copy defines (old -> new), so callers can look up the copies' results."""
    new = Region([a.type for a in region.args], [a.name_hint for a in region.args])
    for old_arg, new_arg in zip(region.args, new.args):
        value_map[old_arg] = new_arg
    for op in region.ops:
        new.append(clone_operation(op, value_map))
    return new


def clone_operation(op: Operation, value_map: dict[Value, Value]) -> Operation:
    """A deep copy of `op` whose operands are looked up in `value_map` (values not
    in it are kept); the copy's results are added to `value_map`."""
    regions = [clone_region(r, value_map) for r in op.regions]
    new = Operation(op.name, [value_map.get(v, v) for v in op.operands], [r.type for r in op.results],
                    op.attrs, regions, op.loc)
    for old_result, new_result in zip(op.results, new.results):
        new_result.name_hint = old_result.name_hint
        value_map[old_result] = new_result
    return new
