"""Elementwise arithmetic of docs/IR.md with the GPU's results, in numpy.

Each `make_<op>(op)` looks at the op's types and attributes once and returns a
function of the operand values; the executor calls that function per program.
The functions take and return the interpreter's representation (values.py) and
work on scalars and blocks alike (reduce/scan regions call them with blocks).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..ir.core import Operation
from ..ir.types import type_text
from . import floats, special
from . import values as V

Impl = Callable[..., object]


def _result_type(op: Operation):
    return V.scalar_of(op.results[0].type)


def _operand_type(op: Operation, i: int = 0):
    return V.scalar_of(op.operands[i].type)


def _bool_int_op(fn) -> Impl:
    """An integer op on i1 values: compute on 0/1 bytes, keep the low bit."""
    def run(*args):
        ints = [np.asarray(a).astype(np.uint8) for a in args]
        return (np.asarray(fn(*ints)) & 1).astype(bool)[()]
    return run


def _float_op(fn, ty) -> Impl:
    """A float op that numpy computes in the operands' dtype; bf16/fp8 are
    computed in float32 (exact enough: one rounding to the narrow type after)."""
    if V.is_emulated_float(ty):
        def run(*args):
            return V.round_value(fn(*args), ty)[()]
        return run
    return fn


# ---------------------------------------------------------------------------
# add sub mul div


def _binary(numpy_fn, bool_fn=None) -> Callable[[Operation], Impl]:
    def make(op: Operation) -> Impl:
        ty = _result_type(op)
        if ty.is_bool():
            return _bool_int_op(bool_fn or numpy_fn)
        if ty.is_floating():
            return _float_op(numpy_fn, ty)
        if ty.is_ptr():
            raise TypeError(f"{op.name} on pointers is not an IR operation (use addptr)")
        return numpy_fn
    return make


def make_floordiv(op: Operation) -> Impl:
    """C `/`: truncation toward zero; x / 0 gives 0 (the interpreter's choice)."""
    if _result_type(op).is_bool():
        return _bool_int_op(lambda a, b: np.where(b == 0, 0, a))
    # a - fmod(a, b) is an exact multiple of b, so numpy's floor division is
    # exact; numpy gives 0 for a division by zero (warnings are off).
    return lambda a, b: (a - np.fmod(a, b)) // b


def make_mod(op: Operation) -> Impl:
    ty = _result_type(op)
    if ty.is_int():
        if ty.is_bool():
            return _bool_int_op(lambda a, b: np.zeros_like(a))
        return np.fmod  # C's remainder; numpy gives 0 for a zero divisor
    name = type_text(ty)

    def float_mod(a, b):
        # The GPU's frem: fma.rn(-trunc(div.rn(a, b)), b, a), so an exact zero
        # result is +0 even for a negative a (fmod would give -0).
        quotient = np.trunc(V.round_value(np.asarray(a, np.float64) / np.asarray(b, np.float64), ty)
                            if V.is_emulated_float(ty) else np.true_divide(a, b))
        r = floats.fma(-quotient, b, a, name)
        # As `testp.infinite` + `selp`: x whenever y is infinite, whatever x is.
        return np.where(np.isinf(b), a, r).astype(V.value_dtype(ty))[()]
    return float_mod


# ---------------------------------------------------------------------------
# shifts


def _shift_amount(b, bits: int):
    """Shift amounts as unsigned, clamped to the width (PTX clamps, so shifting by
    >= width gives 0, or the sign fill for arithmetic right shifts)."""
    amount = np.asarray(b).astype(V.unsigned_dtype(bits) if bits > 1 else np.uint8)
    return np.minimum(amount.astype(np.uint64), np.uint64(bits))


def _logical_shift(np_shift) -> Callable[[Operation], Impl]:
    """`shl` (np.left_shift) or `lshr` (np.right_shift) on the unsigned bits of
    the result type; amounts of the bit width or more give 0."""
    def make(op: Operation) -> Impl:
        ty = _result_type(op)
        bits = ty.primitive_bitwidth
        if ty.is_bool():
            return lambda a, b: np.asarray(np.asarray(a) & (np.asarray(b) == 0))[()]
        udt = V.unsigned_dtype(bits)
        vdt = V.value_dtype(ty)

        def shift(a, b):
            s = _shift_amount(b, bits)
            ua = np.asarray(a).astype(udt)
            shifted = np_shift(ua, np.minimum(s, bits - 1).astype(udt))
            return np.where(s >= bits, 0, shifted).astype(udt).astype(vdt)[()]
        return shift
    return make


make_shl = _logical_shift(np.left_shift)
make_lshr = _logical_shift(np.right_shift)


def make_ashr(op: Operation) -> Impl:
    ty = _result_type(op)
    bits = ty.primitive_bitwidth
    if ty.is_bool():
        # The sign bit of an i1 is the bit itself.
        return lambda a, b: np.asarray(a).astype(bool)[()]
    sdt = V.signed_dtype(bits)
    vdt = V.value_dtype(ty)

    def ashr(a, b):
        s = np.minimum(_shift_amount(b, bits), bits - 1).astype(sdt)
        return np.right_shift(np.asarray(a).astype(sdt), s).astype(vdt)[()]
    return ashr


# ---------------------------------------------------------------------------
# max min umulhi fma abs cmp select


def make_maxmin(op: Operation) -> Impl:
    ty = _result_type(op)
    is_max = op.name == "max"
    if ty.is_floating():
        if op.attrs.get("propagate_nan", False):
            return np.maximum if is_max else np.minimum
        return np.fmax if is_max else np.fmin
    return np.maximum if is_max else np.minimum


def make_umulhi(op: Operation) -> Impl:
    ty = _result_type(op)
    bits = ty.primitive_bitwidth
    vdt = V.value_dtype(ty)
    if bits == 32:
        def umulhi32(a, b):
            product = np.asarray(a).astype(np.uint32).astype(np.uint64) * np.asarray(b).astype(np.uint32)
            return (product >> np.uint64(32)).astype(np.uint32).astype(vdt)[()]
        return umulhi32

    def umulhi64(a, b):
        return umulhi_u64(np.asarray(a).astype(np.uint64), np.asarray(b).astype(np.uint64)).astype(vdt)[()]
    return umulhi64


def umulhi_u64(a, b) -> np.ndarray:
    """High 64 bits of the 128-bit product of two uint64 arrays."""
    low = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a0, a1 = a & low, a >> s32
    b0, b1 = b & low, b >> s32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    middle = (p00 >> s32) + (p01 & low) + (p10 & low)
    return p11 + (p01 >> s32) + (p10 >> s32) + (middle >> s32)


def make_fma(op: Operation) -> Impl:
    name = type_text(_result_type(op))
    return lambda a, b, c: floats.fma(a, b, c, name)[()]


def make_abs(op: Operation) -> Impl:
    ty = _result_type(op)
    if ty.is_floating():
        return np.abs
    if ty.is_int_unsigned():
        return lambda x: x
    return np.abs


_PREDICATES = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
               "eq": np.equal, "ne": np.not_equal}


def make_cmp(op: Operation) -> Impl:
    # numpy's float comparisons are ordered, and != is unordered, as the IR wants.
    return _PREDICATES[op.attrs["pred"]]


def make_select(op: Operation) -> Impl:
    vdt = V.value_dtype(op.results[0].type)
    return lambda c, a, b: np.where(c, a, b).astype(vdt, copy=False)[()]


def make_addptr(op: Operation) -> Impl:
    size = np.uint64(V.scalar_of(op.results[0].type).element_ty.itemsize)

    def addptr(ptr, offset):
        # astype(uint64) zero-extends unsigned and sign-extends signed offsets.
        return (np.asarray(ptr, dtype=np.uint64) + np.asarray(offset).astype(np.uint64) * size)[()]
    return addptr


# ---------------------------------------------------------------------------
# math functions


def _ftz_input(fn, ty) -> Impl:
    """fp32 instructions with `.ftz` flush subnormal inputs (and outputs) to zero."""
    if type_text(ty) != "fp32":
        return fn
    return lambda x: floats.flush_subnormals(fn(floats.flush_subnormals(x)))[()]


def _erf(x):
    return special.erf(x).astype(np.asarray(x).dtype)[()]


def make_math(op: Operation) -> Impl:
    ty = _result_type(op)
    vdt = V.value_dtype(ty)
    name = op.name
    table = {
        "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sin": np.sin, "cos": np.cos,
        "sqrt": np.sqrt, "sqrt_rn": np.sqrt, "rsqrt": lambda x: np.asarray(1.0 / np.sqrt(x)).astype(vdt)[()],
        "erf": _erf, "floor": np.floor, "ceil": np.ceil,
    }
    fn = table[name]
    if type_text(ty) == "fp32" and name in ("sin", "cos", "exp", "log", "log2"):
        # numpy's float32 kernels are a few ulp off; compute in float64, round once.
        def precise(x, f=fn):
            return np.asarray(f(np.asarray(x, dtype=np.float64))).astype(np.float32)[()]
        fn = precise
    if name in ("exp2", "sqrt", "rsqrt", "floor", "ceil", "log", "log2"):
        fn = _ftz_input(fn, ty)
    return _float_op(fn, ty)


# ---------------------------------------------------------------------------
# casts


def make_cast(op: Operation) -> Impl:
    src = _operand_type(op)
    dst = _result_type(op)
    mode = "rz" if op.attrs.get("rounding") == "rtz" else "rn"
    return cast_function(src, dst, mode)


def cast_function(src, dst, mode: str = "rn") -> Impl:
    """The value conversion src -> dst of docs/IR.md's `cast`, as the GPU does it."""
    vdt = V.value_dtype(dst)
    if src == dst:
        return lambda x: x
    if src.is_ptr() or dst.is_ptr():
        if dst.is_bool():
            return lambda x: (np.asarray(x) != 0)[()]
        return lambda x: np.asarray(x).astype(vdt)[()]
    if dst.is_bool():
        # Float NaN compares unordered-not-equal to 0: NaN -> True.
        return lambda x: (np.asarray(x) != 0)[()]
    if src.is_int() and dst.is_int():
        return lambda x: np.asarray(x).astype(vdt)[()]
    if dst.is_floating():
        if src.is_int():
            return _int_to_float(src, dst)
        return lambda x: V.round_value(x, dst, mode)[()]
    return _float_to_int(src, dst)


def _int_to_float(src, dst) -> Impl:
    name = type_text(dst)
    if name in ("fp32", "fp64"):
        # The C casts numpy uses round to nearest even, exactly (cvt.rn.f32.s64 ...).
        vdt = V.value_dtype(dst)
        return lambda x: np.asarray(x).astype(vdt)[()]

    def convert(x):
        x = np.asarray(x)
        if src.primitive_bitwidth < 64:
            return V.round_value(x.astype(np.float64), dst)[()]
        # Split 64-bit ints so float64 holds them exactly as hi + lo.
        high = (x >> 32).astype(np.float64) * 4294967296.0 if src.is_int_signed() else \
            (x >> np.uint64(32)).astype(np.float64) * 4294967296.0
        low = (x & 0xFFFFFFFF).astype(np.float64)
        return floats.round_pair(*floats.two_sum(high, low), name)[()]
    return convert


def _float_to_int(src, dst) -> Impl:
    bits = dst.primitive_bitwidth
    signed = dst.is_int_signed()
    vdt = V.value_dtype(dst)
    # cvt.rzi to an 8-bit type does not exist: the GPU saturates at 16 bits and
    # keeps the low byte.
    sat_bits = max(bits, 16)
    lo = -(2 ** (sat_bits - 1)) if signed else 0
    hi = 2 ** (sat_bits - 1) - 1 if signed else 2 ** sat_bits - 1
    wide = V.signed_dtype(sat_bits) if signed else V.unsigned_dtype(sat_bits)
    # NaN gives 0 for the 32-bit conversion unit (fp32 or narrower to at most 32
    # bits); the 64-bit paths give the pattern 0x80..0 of the saturation width
    # (measured on an H200: fp32 -> i64 is INT64_MIN, fp64 -> u32 is 0x80000000).
    nan_value = 0 if src.primitive_bitwidth <= 32 and bits <= 32 else 1 << (sat_bits - 1)

    def convert(x):
        return saturating_float_to_int(x, lo, hi, wide, nan_value).astype(vdt)[()]
    return convert


def saturating_float_to_int(x, lo: int, hi: int, wide: np.dtype, nan_bits: int = 0) -> np.ndarray:
    """Truncate toward zero and saturate to [lo, hi] (a range of `wide`); NaN gives
    the bit pattern `nan_bits` in `wide`."""
    t = np.trunc(np.asarray(x, dtype=np.float64))
    too_low = t <= float(lo)
    too_high = t >= float(hi)
    nan = np.isnan(t)
    inside = np.where(too_low | too_high | nan, 0.0, t)
    out = inside.astype(wide)
    out = np.where(too_low, wide.type(lo), out)
    out = np.where(too_high, wide.type(hi), out)
    if nan_bits:
        out = np.where(nan, np.array(nan_bits, dtype=np.uint64).astype(wide), out)
    return out.astype(wide)


def make_bitcast(op: Operation) -> Impl:
    src = _operand_type(op)
    dst = _result_type(op)
    return lambda x: V.from_bits(V.to_bits(x, src), dst)[()]


MAKERS: dict[str, Callable[[Operation], Impl]] = {
    "add": _binary(np.add, np.bitwise_xor),
    "sub": _binary(np.subtract, np.bitwise_xor),
    "mul": _binary(np.multiply, np.bitwise_and),
    "div": _binary(np.true_divide),
    "div_rn": _binary(np.true_divide),
    "floordiv": make_floordiv,
    "mod": make_mod,
    "and": _binary(np.bitwise_and),
    "or": _binary(np.bitwise_or),
    "xor": _binary(np.bitwise_xor),
    "shl": make_shl,
    "ashr": make_ashr,
    "lshr": make_lshr,
    "max": make_maxmin,
    "min": make_maxmin,
    "umulhi": make_umulhi,
    "fma": make_fma,
    "cmp": make_cmp,
    "select": make_select,
    "addptr": make_addptr,
    "abs": make_abs,
    "cast": make_cast,
    "bitcast": make_bitcast,
    **{name: make_math for name in ("exp", "exp2", "log", "log2", "sin", "cos", "sqrt", "sqrt_rn", "rsqrt",
                                    "erf", "floor", "ceil")},
}
