"""Constant folding and exact algebraic simplification.

Only rewrites that give the GPU's result bit for bit (docs/IR.md, the GPU
side of TRITON_SEMANTICS): integer ops wrap to their width with signedness
where it matters; float results are folded only for exactly rounded ops of
fp32/fp64 (add, sub, mul, fma), compares, casts between fp16/bf16/fp32/fp64
(rounding to nearest even) and from ints (a bf16 `other` of a load, written
as a float constant, is a bf16 constant, not a conversion per element); no
bf16 or fp8 arithmetic and no approximate math (exp, sqrt, fp32 div...).
Identities are applied only where they hold for every input (`x + 0` for ints
but not floats, `x * 1`, `x | 0`, `x & -1`, shifts by 0, `select(c, x, x)`).
An `if` on a constant condition becomes the ops of the branch taken; a `for`
that runs zero times becomes its initial values.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..ir.core import Module, Operation, Region, Value
from ..ir.ops import OP_SPECS
from ..ir.types import dtype, type_text

if TYPE_CHECKING:
    from . import PassContext

# Float formats folded exactly: precision (mantissa bits + 1), min and max exponent.
_FLOAT_FORMATS = {"fp16": (11, -14, 15), "bf16": (8, -126, 127), "fp32": (24, -126, 127),
                  "fp64": (53, -1022, 1023)}
_EXACT_ARITH_FLOATS = ("fp32", "fp64")


# -- value arithmetic --------------------------------------------------------------

def wrap_int(value: int, ty: dtype) -> int | bool:
    """`value` reduced modulo 2**width into `ty`'s range (a bool for i1)."""
    bits = ty.int_bitwidth
    value &= (1 << bits) - 1
    if ty.is_bool():
        return bool(value)
    if ty.is_int_signed() and value >> (bits - 1):
        value -= 1 << bits
    return value


def _unsigned_bits(value: int, ty: dtype) -> int:
    return value & ((1 << ty.int_bitwidth) - 1)


def _signed_bits(value: int, ty: dtype) -> int:
    bits = ty.int_bitwidth
    value = _unsigned_bits(value, ty)
    return value - (1 << bits) if value >> (bits - 1) else value


def round_to_float(value: Fraction, name: str) -> float:
    """`value` rounded to nearest-even into the float format `name` (fp16, bf16,
    fp32, fp64), overflowing to ±inf, with gradual underflow; as a Python float."""
    precision, emin, emax = _FLOAT_FORMATS[name]
    if value == 0:
        return 0.0
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    # Below the normal range the quantum stays at that of the smallest normal.
    quantum = max(exponent, emin) - (precision - 1)
    mantissa = round(magnitude / Fraction(2) ** quantum)  # Fraction rounds half to even
    result = math.inf if mantissa * Fraction(2) ** quantum >= Fraction(2) ** (emax + 1) \
        else math.ldexp(float(mantissa), quantum)
    return -result if value < 0 else result


def _round_float(value: float, name: str) -> float:
    if not math.isfinite(value) or value == 0:
        return value
    return round_to_float(Fraction(value), name)


def _exact_fma(a: float, b: float, c: float, name: str) -> float:
    """`a * b + c` with one rounding into `name`, IEEE special values included."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return a * b + c
    if not math.isfinite(c):
        return c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        product_negative = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
        both_negative_zeros = a * b == 0 and c == 0 and product_negative and math.copysign(1.0, c) < 0
        return -0.0 if both_negative_zeros else 0.0
    return round_to_float(exact, name)


def _numpy_arith(name: str, a: float, b: float, fmt: str) -> float:
    np_type = np.float32 if fmt == "fp32" else np.float64
    x, y = np_type(a), np_type(b)
    with np.errstate(all="ignore"):
        result = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[name](x, y)
    return float(result)


def _int_binary(name: str, a: int, b: int, ty: dtype) -> int | bool | None:
    """The folded value of an integer op, or None when the GPU result is
    undefined (division by zero, signed overflow of div/rem, shifts out of range)."""
    bits = ty.int_bitwidth
    low, _ = ty.int_range()
    if name == "add":
        return wrap_int(a + b, ty)
    if name == "sub":
        return wrap_int(a - b, ty)
    if name == "mul":
        return wrap_int(a * b, ty)
    if name in ("floordiv", "mod"):
        if b == 0 or (ty.is_int_signed() and a == low and b == -1):
            return None
        quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C truncation toward zero
        return wrap_int(quotient if name == "floordiv" else a - b * quotient, ty)
    if name == "and":
        return wrap_int(a & b, ty)
    if name == "or":
        return wrap_int(a | b, ty)
    if name == "xor":
        return wrap_int(a ^ b, ty)
    if name in ("shl", "ashr", "lshr"):
        amount = _unsigned_bits(b, ty)
        if amount >= bits:
            return None
        if name == "shl":
            return wrap_int(a << amount, ty)
        if name == "ashr":
            return wrap_int(_signed_bits(a, ty) >> amount, ty)
        return wrap_int(_unsigned_bits(a, ty) >> amount, ty)
    if name == "max":
        return max(a, b) if not ty.is_bool() else bool(max(a, b))
    if name == "min":
        return min(a, b) if not ty.is_bool() else bool(min(a, b))
    if name == "umulhi":
        return wrap_int((_unsigned_bits(a, ty) * _unsigned_bits(b, ty)) >> bits, ty)
    return None


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}


def _cast(value: Any, src: dtype, dst: dtype, rounding: str | None) -> Any:
    """The folded value of `cast`, or None where it is not folded exactly."""
    if src.is_int() and dst.is_int():
        return bool(value) if dst.is_bool() else wrap_int(int(value), dst)
    if type_text(dst) not in _FLOAT_FORMATS:
        return None
    if src.is_int():
        return round_to_float(Fraction(int(value)), type_text(dst))
    if type_text(src) in _FLOAT_FORMATS and rounding in (None, "rtne"):
        return _round_float(value, type_text(dst))
    return None


# -- the pass ------------------------------------------------------------------------

def _constant_value(value: Value) -> Any:
    """The attribute value of a `constant` op defining `value`, else None."""
    op = value.defining_op
    if op is None or op.name != "constant":
        return None
    constant = op.attrs["value"]
    return int(constant) if value.type.scalar.is_int() else constant


def _is_int_constant(value: Value, expected: int) -> bool:
    return value.type.scalar.is_int() and _constant_value(value) == expected


def _is_float_one(value: Value) -> bool:
    return value.type.scalar.is_floating() and _constant_value(value) == 1.0


def _make_constant(op: Operation, value: Any) -> Operation:
    result = op.results[0]
    constant = Operation("constant", [], [result.type], {"value": value}, loc=op.loc)
    constant.results[0].name_hint = result.name_hint
    return constant


# What replaces a folded op: new ops to put in its place, and one value per result.
_Rewrite = tuple[list[Operation], list[Value]]


def _fold_constants(op: Operation) -> Any:
    """The value of `op`'s result when all the operands it needs are constants, else None."""
    consts = [_constant_value(v) for v in op.operands]
    if not consts or any(c is None for c in consts) or len(op.results) != 1:
        return None
    result_ty = op.results[0].type.scalar
    name = op.name
    if name in OP_SPECS and OP_SPECS[name].rearranges:
        return op.operands[0].defining_op.attrs["value"]
    if name == "cmp":
        return _COMPARE[op.attrs["pred"]](consts[0], consts[1])
    if name == "cast":
        return _cast(consts[0], op.operands[0].type.scalar, result_ty, op.attrs.get("rounding"))
    if result_ty.is_int() and len(consts) == 2:
        return _int_binary(name, consts[0], consts[1], result_ty)
    if type_text(result_ty) in _EXACT_ARITH_FLOATS:
        if name in ("add", "sub", "mul"):
            return _numpy_arith(name, consts[0], consts[1], type_text(result_ty))
        if name == "fma":
            return _exact_fma(*consts, type_text(result_ty))
    return None


def _fold_identity(op: Operation) -> Value | None:
    """The operand `op` always equals, for the identities that hold for every input."""
    name, operands = op.name, op.operands
    if name == "select":
        if operands[1] is operands[2]:
            return operands[1]
        cond = _constant_value(operands[0])
        return None if cond is None else operands[1] if cond else operands[2]
    if len(operands) != 2:
        return None
    a, b = operands
    commutative = {"add": 0, "or": 0, "xor": 0, "mul": 1, "and": -1}
    if name in commutative:
        neutral = commutative[name]
        if name == "and" and a.type.scalar.is_int_unsigned():
            neutral = (1 << a.type.scalar.int_bitwidth) - 1
        for x, y in ((a, b), (b, a)):
            if _is_int_constant(y, neutral) or (name == "mul" and _is_float_one(y)):
                return x
    if name in ("sub", "shl", "ashr", "lshr") and _is_int_constant(b, 0):
        return a
    if name == "floordiv" and _is_int_constant(b, 1):
        return a
    return None


def _fold_control_flow(op: Operation) -> _Rewrite | None:
    if op.name == "if":
        cond = _constant_value(op.operands[0])
        if cond is None:
            return None
        taken = op.regions[0] if cond else op.regions[1]
        return taken.ops[:-1], list(taken.ops[-1].operands)
    if op.name == "for":
        lower, upper = _constant_value(op.operands[0]), _constant_value(op.operands[1])
        if lower is not None and upper is not None and lower >= upper:
            return [], list(op.operands[3:])
    return None


def fold_op(op: Operation) -> _Rewrite | None:
    """How to replace `op` by something simpler with the same results, or None."""
    if op.regions:
        return _fold_control_flow(op)
    if op.name == "constant" or not op.results:
        return None
    identity = _fold_identity(op)
    if identity is not None:
        return [], [identity]
    value = _fold_constants(op)
    if value is None:
        return None
    constant = _make_constant(op, value)
    return [constant], [constant.results[0]]


class _Folder:
    def __init__(self) -> None:
        self.replaced: dict[Value, Value] = {}

    def region(self, region: Region) -> None:
        # A forward walk: operands are rewritten through `replaced` when an op is
        # reached, which is after every op that defines them.
        index = 0
        while index < len(region.ops):
            op = region.ops[index]
            op.operands = [self.replaced.get(v, v) for v in op.operands]
            for inner in op.regions:
                self.region(inner)
            rewrite = fold_op(op)
            if rewrite is None:
                index += 1
                continue
            new_ops, values = rewrite
            del region.ops[index]
            for offset, new_op in enumerate(new_ops):
                region.insert(index + offset, new_op)
            index += len(new_ops)
            for result, value in zip(op.results, values):
                self.replaced[result] = value


def run(module: Module, ctx: PassContext) -> None:
    """Folds constants and exact identities in every function of `module`."""
    for fn in module.functions.values():
        _Folder().region(fn.body)
