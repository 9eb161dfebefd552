"""The interval a 32-bit signed integer is proven to stay in: for a scalar, or
for every element of a block, `(low, high)` such that the value never wraps on
the way (each `add`, `sub` and `mul` of the computation stays inside the i32
range for every input in its operands' intervals), or None where nothing is
proven.

The facts come from constants, `arange`s, `program_id` (never negative), the
trip counter of a `for` with constant bounds, and flow through splats,
broadcasts, expand_dims, layout conversions, hints, `add`, `sub`, `mul`, `and`
with a non-negative operand, and `%` and `//` of a non-negative value by a
positive constant. What reads them: the code generator adds an offset proven
non-negative to its pointer as an unsigned 32-bit value, whose zero extension
lets the C++ compiler move the constant part of an address into the load's
immediate (see codegen_memory.emit_addptr), and pointer_steps splits a loop's
offsets where a range proves the split exact.
"""

from __future__ import annotations

from ...ir.core import Operation, Region, Value
from ...ir.types import type_text

I32_MIN = -(1 << 31)
I32_MAX = (1 << 31) - 1

Range = tuple[int, int]

_SAME_ELEMENTS = ("splat", "broadcast", "expand_dims", "convert_layout", "hint")


def int_range(value: Value, memo: dict[Value, Range | None] | None = None) -> Range | None:
    """The proven `(low, high)` of the i32 `value` (see the module docstring)."""
    memo = {} if memo is None else memo
    if value not in memo:
        memo[value] = None  # a cycle through a loop-carried value proves nothing
        memo[value] = _compute(value, memo)
    return memo[value]


def _fits(low: int, high: int) -> Range | None:
    return (low, high) if I32_MIN <= low <= high <= I32_MAX else None


def constant_int(value: Value) -> int | None:
    """The value of an integer constant (a scalar, or a block of one value), else None."""
    op = value.defining_op
    if op is None or op.name != "constant":
        return None
    constant = op.attrs.get("value")
    return constant if isinstance(constant, int) and not isinstance(constant, bool) else None


def constant_trips(loop: Operation) -> tuple[int, int, int] | None:
    """(first value, step, trip count) of the `for` `loop` where its bounds are
    constants, its step positive and it runs at least once; else None."""
    lower, upper, step = (constant_int(operand) for operand in loop.operands[:3])
    if lower is None or upper is None or step is None or step <= 0 or upper <= lower:
        return None
    return lower, step, -(-(upper - lower) // step)


def _trip_counter(value: Value) -> Range | None:
    """The range of the trip counter of a `for` with constant bounds and a positive step."""
    region = value.owner
    if not isinstance(region, Region) or value.index != 0:
        return None
    loop = region.parent
    if not isinstance(loop, Operation) or loop.name != "for":
        return None
    trips = constant_trips(loop)
    if trips is None:
        return None
    lower, step, count = trips
    return _fits(lower, lower + (count - 1) * step)


def _compute(value: Value, memo: dict[Value, Range | None]) -> Range | None:
    if type_text(value.type.scalar) != "i32":
        return None
    op = value.defining_op
    if op is None:
        return _trip_counter(value)
    constant = constant_int(value)
    if constant is not None:
        return _fits(constant, constant)
    if op.name == "arange":
        return _fits(int(op.attrs["start"]), int(op.attrs["end"]) - 1)
    if op.name == "program_id":
        return (0, I32_MAX)
    if op.name in _SAME_ELEMENTS and op.operands:
        return int_range(op.operands[0], memo)
    if op.name not in ("add", "sub", "mul", "and", "mod", "floordiv") or len(op.operands) != 2:
        return None
    a, b = (int_range(operand, memo) for operand in op.operands)
    if op.name == "and":  # a non-negative operand bounds the result
        bounds = [r[1] for r in (a, b) if r is not None and r[0] >= 0]
        return (0, min(bounds)) if bounds else None
    if op.name in ("mod", "floordiv"):
        divisor = constant_int(op.operands[1])
        if a is None or a[0] < 0 or divisor is None or divisor <= 0:
            return None
        if op.name == "mod":
            return (0, min(a[1], divisor - 1)) if a[1] >= divisor else a
        return (a[0] // divisor, a[1] // divisor)
    if a is None or b is None:
        return None
    if op.name == "add":
        return _fits(a[0] + b[0], a[1] + b[1])
    if op.name == "sub":
        return _fits(a[0] - b[1], a[1] - b[0])
    products = [x * y for x in a for y in b]
    return _fits(min(products), max(products))
