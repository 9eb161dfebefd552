"""numpy models of what upstream Triton computes on the GPU (TRITON_SEMANTICS.md),
used as references by the per-op sweep.

Values of dtypes numpy lacks (bf16, fp8) travel as float32 arrays holding the
exact values (`tests.kernels._data`).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from tests.kernels._data import FP8_DTYPES, NUMPY_DTYPES, bit_width, is_float, is_signed, round_to


class PromotionError(TypeError):
    """The operands cannot be combined (upstream raises a TypeError)."""


def integer_promote(a: str, b: str) -> str:
    """TRITON_SEMANTICS 1.2: C's usual arithmetic conversions on (width, signedness)."""
    if a == b:
        return a
    wa, wb = bit_width(a), bit_width(b)
    if is_signed(a) == is_signed(b):
        return a if wa >= wb else b
    unsigned, signed = (a, b) if not is_signed(a) else (b, a)
    return unsigned if bit_width(unsigned) >= bit_width(signed) else signed


def computation_type(a: str, b: str, div_or_mod: bool = False) -> str:
    """TRITON_SEMANTICS 1.3 for tensor (op) tensor."""
    for wide in ("float64", "float32"):
        if wide in (a, b):
            return wide
    if "float16" in (a, b):
        return "float32" if div_or_mod else "float16"
    if a == b == "bfloat16":
        return "float32" if div_or_mod else "bfloat16"
    if "bfloat16" in (a, b):
        return "float32"
    if a in FP8_DTYPES or b in FP8_DTYPES:
        if a == b:
            return a
        if is_float(a) and is_float(b):
            return "float16"
        raise PromotionError(f"unexpected type {a} and {b}")
    if div_or_mod and is_signed(a) != is_signed(b):
        raise PromotionError("Cannot use /, //, or % with different signedness")
    return integer_promote(a, b)


def float_to_int(values: np.ndarray, target: str, source: str = "float32") -> np.ndarray:
    """GPU float -> int conversion (TRITON_SEMANTICS 3.2): truncate toward zero
    and saturate. i8/u8 convert with 16-bit saturation and keep the low byte
    (what a store of the result writes). NaN gives 0 when an fp32 (or narrower)
    value goes to a type of at most 32 bits, and otherwise the pattern 0b100...0
    of the target width (`cvt.rzi` from f64, or to 64 bits; measured on an
    H200 with upstream Triton 3.6)."""
    v = np.trunc(values.astype(np.float64))
    nan = np.isnan(v)
    v = np.where(nan, 0.0, v)
    if target in ("int8", "uint8"):
        lo, hi = (-(2**15), 2**15 - 1) if target == "int8" else (0, 2**16 - 1)
        wide = np.clip(v, lo, hi).astype(np.int64)
        # NaN's 0x8000 (from f64) and 0 share the low byte 0.
        return wide.astype(NUMPY_DTYPES[target])
    info = np.iinfo(NUMPY_DTYPES[target])
    nan_pattern = 0
    if source == "float64" or bit_width(target) == 64:
        nan_pattern = int(info.min) if is_signed(target) else 1 << (bit_width(target) - 1)
    result = np.empty(v.shape, dtype=NUMPY_DTYPES[target])
    flat = result.reshape(-1)
    nan_flat = nan.reshape(-1)
    # Python ints: float64 cannot hold 2**63 - 1 or 2**64 - 1 exactly.
    for i, x in enumerate(v.reshape(-1)):
        if nan_flat[i]:
            flat[i] = nan_pattern
        elif x >= info.max:
            flat[i] = info.max
        elif x <= info.min:
            flat[i] = info.min
        else:
            flat[i] = int(x)
    return result


def convert(values: np.ndarray, src: str, dst: str, *, rtz: bool = False) -> np.ndarray:
    """`x.to(dst)` for x of dtype `src` as the GPU computes it."""
    values = np.asarray(values)
    if dst == "int1":
        return values != 0
    if not is_float(dst):
        if is_float(src):
            return float_to_int(values, dst, src)
        return values.astype(NUMPY_DTYPES[dst])
    if not is_float(src):
        if dst in ("float32", "float64", "float16"):
            # Integers beyond float16's range become infinity, as cvt.rn.f16 gives.
            with np.errstate(over="ignore"):
                return values.astype(NUMPY_DTYPES[dst])
        return round_to(values.astype(np.float64), dst)
    if rtz:
        return round_toward_zero(values, dst)
    if dst == "float64":
        return values.astype(np.float64)
    return round_to(values, dst)


def round_toward_zero(values: np.ndarray, dst: str) -> np.ndarray:
    """Float narrowing with `fp_downcast_rounding="rtz"`: finite overflow gives
    the largest finite value, infinities and NaN stay."""
    assert dst == "float16", "only fp32 -> fp16 rtz is modelled"
    v = values.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        nearest = v.astype(np.float16)
        overshoot = np.abs(nearest.astype(np.float64)) > np.abs(v)
        toward_zero = np.where(overshoot, np.nextafter(nearest, np.float16(0)), nearest)
    finite_max = np.float16(65504)
    toward_zero = np.where(np.isfinite(v) & np.isinf(toward_zero), np.copysign(finite_max, v), toward_zero)
    return np.where(np.isnan(v), np.float16(np.nan), toward_zero).astype(np.float16)


def trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C integer division (toward zero) in the dtype of `a` and `b`."""
    with np.errstate(all="ignore"):
        q = a // b
        r = a - q * b
        fix = (r != 0) & ((a < 0) != (b < 0))
        return np.where(fix, q + 1, q).astype(a.dtype)


def trunc_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C `%`: the sign of the dividend."""
    with np.errstate(all="ignore"):
        return (a - trunc_div(a, b) * b).astype(a.dtype)


def float_mod(a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    """GPU float `%`: `a - trunc(div_rn(a, b)) * b` with one fused rounding; `a`
    when `b` is infinite."""
    np_dtype = NUMPY_DTYPES[dtype]
    with np.errstate(all="ignore"):
        q = np.trunc((a.astype(np_dtype) / b.astype(np_dtype)).astype(np_dtype))
        out = np.empty(a.shape, dtype=np_dtype)
        flat_a, flat_b, flat_q = a.reshape(-1), b.reshape(-1), q.reshape(-1)
        flat = out.reshape(-1)
        for i in range(flat.size):
            x, y, t = float(flat_a[i]), float(flat_b[i]), float(flat_q[i])
            if np.isinf(y) and np.isfinite(x):
                flat[i] = x
            elif not (np.isfinite(x) and np.isfinite(y) and np.isfinite(t)) or y == 0:
                flat[i] = np.nan
            else:
                # An exact zero is +0.0: x and t*y have the same sign, and
                # x - t*y of equal values rounds to +0 (unlike fmod's -0 for x < 0).
                flat[i] = _round_fraction(Fraction(x) - Fraction(t) * Fraction(y), dtype)
    return out


def _round_fraction(value: Fraction, dtype: str, signed_zero_of: float = 1.0) -> float:
    if value == 0:
        return float(np.copysign(0.0, signed_zero_of))
    # float(Fraction) rounds correctly to float64; float64 -> float32 can then
    # double-round, so round directly to the target through its neighbours.
    as64 = float(value)
    if dtype == "float64":
        return as64
    np_dtype = NUMPY_DTYPES[dtype]
    with np.errstate(over="ignore"):  # beyond the dtype's range: infinity, returned below
        candidate = np_dtype.type(as64)
    if not np.isfinite(candidate):
        return float(candidate)
    neighbours = [candidate, np.nextafter(candidate, np_dtype.type(np.inf)),
                  np.nextafter(candidate, np_dtype.type(-np.inf))]
    finite = [c for c in neighbours if np.isfinite(c)]
    return float(min(finite, key=lambda c: (abs(Fraction(float(c)) - value), int(np.abs(c).view(_uint(np_dtype))) & 1)))


def _uint(np_dtype: np.dtype):
    return {2: np.uint16, 4: np.uint32, 8: np.uint64}[np_dtype.itemsize]


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, dtype: str) -> np.ndarray:
    """a*b + c with a single rounding to `dtype`."""
    out = np.empty(np.broadcast(a, b, c).shape, dtype=NUMPY_DTYPES[dtype])
    a, b, c = np.broadcast_arrays(a, b, c)
    flat = out.reshape(-1)
    for i, (x, y, z) in enumerate(zip(a.reshape(-1), b.reshape(-1), c.reshape(-1))):
        x, y, z = float(x), float(y), float(z)
        if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
            flat[i] = x * y + z
        else:
            flat[i] = _round_fraction(Fraction(x) * Fraction(y) + Fraction(z), dtype, signed_zero_of=x * y + z)
    return out


def umulhi(a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    """High half of the unsigned product of the bit patterns (even for signed inputs)."""
    width = bit_width(dtype)
    mask = (1 << width) - 1
    out = np.empty(a.shape, dtype=NUMPY_DTYPES[dtype])
    flat = out.reshape(-1)
    for i, (x, y) in enumerate(zip(a.reshape(-1), b.reshape(-1))):
        high = ((int(x) & mask) * (int(y) & mask)) >> width
        if is_signed(dtype) and high >= 1 << (width - 1):
            high -= 1 << width
        flat[i] = high
    return out


def flush_subnormal(values: np.ndarray, dtype: str) -> np.ndarray:
    """What `.ftz` instructions see: fp32 subnormals as zeros of the same sign."""
    if dtype != "float32":
        return values
    tiny = np.finfo(np.float32).tiny
    return np.where(np.abs(values) < tiny, np.copysign(np.float32(0), values), values).astype(values.dtype)
