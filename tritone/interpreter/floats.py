"""Exact float format conversions for the interpreter, done with numpy.

Every narrow float format (fp16, bf16, the fp8 family, and fp32 itself when
rounding from a wider value) is described by a `FloatFormat`, and one
vectorised routine rounds float64 values onto its grid in any IEEE rounding
direction, then applies the GPU's overflow rule (inf, max finite, or
saturation). Values of bf16 and fp8 types live in float32 arrays holding
exactly representable values; `encode`/`decode` turn those into the stored
bit patterns and back.

Also here: error-free transformations (TwoSum, TwoProduct), rounding to odd,
and the single-rounding fused multiply-add built from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format.

    `specials` says how the top of the encoding space is used:
    `"ieee"` (all-ones exponent = inf/NaN), `"fn"` (no inf; only S.1111.111 is
    NaN, as fp8e4nv), `"fnuz"` (no inf, no -0; 0x80 is NaN, AMD's fp8 types),
    `"finite"` (every code is a number, Triton's fp8e4b15).
    `saturation` is the largest magnitude a conversion produces when it saturates
    (it can be below the largest encodable value: fp8e4b15 stops at 1.75).
    """

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    specials: str
    saturation: float

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number."""
        return 1 - self.bias

    @property
    def has_inf(self) -> bool:
        return self.specials == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.specials != "finite"


def _max_finite(exp_bits: int, man_bits: int, bias: int, specials: str) -> float:
    top_exp = (1 << exp_bits) - 1
    if specials == "ieee":
        return (2.0 - 2.0 ** -man_bits) * 2.0 ** (top_exp - 1 - bias)
    if specials == "fn":
        return (2.0 - 2.0 ** (1 - man_bits)) * 2.0 ** (top_exp - bias)
    return (2.0 - 2.0 ** -man_bits) * 2.0 ** (top_exp - bias)


def _format(name: str, exp_bits: int, man_bits: int, bias: int, specials: str,
            saturation: float | None = None) -> FloatFormat:
    top = _max_finite(exp_bits, man_bits, bias, specials)
    return FloatFormat(name, exp_bits, man_bits, bias, specials, top if saturation is None else saturation)


FORMATS: dict[str, FloatFormat] = {
    "fp64": _format("fp64", 11, 52, 1023, "ieee"),
    "fp32": _format("fp32", 8, 23, 127, "ieee"),
    "fp16": _format("fp16", 5, 10, 15, "ieee"),
    "bf16": _format("bf16", 8, 7, 127, "ieee"),
    "fp8e5": _format("fp8e5", 5, 2, 15, "ieee"),
    "fp8e4nv": _format("fp8e4nv", 4, 3, 7, "fn"),
    "fp8e4b8": _format("fp8e4b8", 4, 3, 8, "fnuz"),
    "fp8e5b16": _format("fp8e5b16", 5, 2, 16, "fnuz"),
    # Triton's conversion clamps to 1.75 although 0x7F decodes as 1.875.
    "fp8e4b15": _format("fp8e4b15", 4, 3, 15, "finite", saturation=1.75),
}


# ---------------------------------------------------------------------------
# Rounding onto a format's grid


def round_to_format(x, fmt: FloatFormat, mode: str = "rn", saturate: bool = False) -> np.ndarray:
    """Round float64 values `x` to the nearest value of `fmt` in direction `mode`
    (`rn` nearest-even, `rz` toward zero, `rd` down, `ru` up), as float64.

    Overflow follows IEEE for the direction (`rn` gives inf, `rz` the largest
    finite value, `rd`/`ru` inf on the side they round toward), except when
    `saturate` is set or the format has no inf: then every finite overflow and
    every infinity becomes +-`fmt.saturation`. NaN stays NaN where the format
    has NaN (else saturates). Subnormals are rounded exactly; signs of zeros
    are kept (a fnuz format turns -0 into +0).
    """
    x = np.asarray(x, dtype=np.float64)
    _, e = np.frexp(x)
    # Quantum of the binade holding x, never below the subnormal quantum.
    qexp = np.maximum(e.astype(np.int64) - 1, fmt.emin) - fmt.man_bits
    scaled = np.ldexp(x, -qexp)
    if mode == "rn":
        q = np.rint(scaled)
    elif mode == "rz":
        q = np.trunc(scaled)
    elif mode == "rd":
        q = np.floor(scaled)
    elif mode == "ru":
        q = np.ceil(scaled)
    else:
        raise ValueError(f"unknown rounding mode {mode!r}")
    r = np.copysign(np.ldexp(q, qexp), x)
    top = _max_finite(fmt.exp_bits, fmt.man_bits, fmt.bias, fmt.specials)
    over = np.abs(r) > top
    if over.any() or not fmt.has_nan:
        r = _apply_overflow(x, r, over, fmt, mode, saturate)
    if fmt.specials == "fnuz":
        r = np.where(r == 0, 0.0, r)
    return r


def _apply_overflow(x, r, over, fmt: FloatFormat, mode: str, saturate: bool) -> np.ndarray:
    negative = np.signbit(x)
    if saturate or not fmt.has_inf:
        big = np.where(negative, -fmt.saturation, fmt.saturation)
        r = np.where(over, big, r)
        if not fmt.has_nan:
            r = np.where(np.isnan(x), big, r)
        return r
    if mode == "rn":
        to_inf = np.ones_like(over)
    elif mode == "rz":
        to_inf = np.isinf(x)
    elif mode == "rd":
        to_inf = negative | np.isinf(x)
    else:
        to_inf = ~negative | np.isinf(x)
    top = _max_finite(fmt.exp_bits, fmt.man_bits, fmt.bias, fmt.specials)
    limit = np.where(to_inf, np.inf, top)
    return np.where(over, np.where(negative, -limit, limit), r)


def round_to_dtype(x, name: str, mode: str = "rn") -> np.ndarray:
    """Convert values to float type `name` the way the GPU's `cvt` does and
    return them in the interpreter's representation (float16/32/64 arrays; bf16
    and fp8 as float32). fp8 targets saturate (inf too, `satfinite`) in `rn`;
    in `rz` finite overflow gives the largest finite value and inf stays inf
    where the format has one."""
    if name == "fp64":
        return np.asarray(x, dtype=np.float64)
    fmt = FORMATS[name]
    src = np.asarray(x)
    if mode == "rn" and name == "fp32":
        return src.astype(np.float32)
    if mode == "rn" and name == "fp16" and src.dtype in (np.float16, np.float32, np.float64):
        return src.astype(np.float16)
    saturate = name.startswith("fp8") and mode == "rn"
    r = round_to_format(src.astype(np.float64), fmt, mode, saturate)
    return r.astype(np.float16 if name == "fp16" else np.float32)


# ---------------------------------------------------------------------------
# Bit patterns of bf16 and fp8 values


@lru_cache(maxsize=None)
def decode_table(name: str) -> np.ndarray:
    """The float32 value of each of the 256 codes of an fp8 format."""
    fmt = FORMATS[name]
    codes = np.arange(256, dtype=np.int64)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exp = (codes >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    man = codes & ((1 << fmt.man_bits) - 1)
    frac = man / float(1 << fmt.man_bits)
    normal = np.ldexp(1.0 + frac, exp - fmt.bias)
    subnormal = np.ldexp(frac, fmt.emin)
    values = sign * np.where(exp == 0, subnormal, normal)
    low7 = codes & 0x7F
    if fmt.specials == "ieee":
        top = exp == (1 << fmt.exp_bits) - 1
        values = np.where(top & (man == 0), sign * np.inf, values)
        values = np.where(top & (man != 0), np.nan, values)
    elif fmt.specials == "fn":
        values = np.where(low7 == 0x7F, np.nan, values)
    elif fmt.specials == "fnuz":
        values = np.where(codes == 0x80, np.nan, values)
    return values.astype(np.float32)


@lru_cache(maxsize=None)
def _encode_table(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Sorted non-negative finite values of a format's positive codes, and those codes."""
    table = decode_table(name)[:128].astype(np.float64)
    codes = np.arange(128, dtype=np.uint8)
    finite = np.isfinite(table)
    return table[finite], codes[finite]


def _nan_code(fmt: FloatFormat) -> int:
    if fmt.specials == "ieee":
        return (((1 << fmt.exp_bits) - 1) << fmt.man_bits) | (1 << (fmt.man_bits - 1))
    if fmt.specials == "fnuz":
        return 0x80
    return 0x7F


def encode_fp8(values, name: str) -> np.ndarray:
    """uint8 codes of fp8 values (which must already be representable)."""
    fmt = FORMATS[name]
    v = np.asarray(values, dtype=np.float64)
    magnitudes, codes = _encode_table(name)
    a = np.abs(v)
    idx = np.clip(np.searchsorted(magnitudes, a), 0, len(magnitudes) - 1)
    out = codes[idx]
    negative = np.signbit(v)
    if fmt.specials == "fnuz":
        negative &= a != 0
    out = out | np.where(negative, np.uint8(0x80), np.uint8(0))
    if fmt.has_inf:
        inf_code = ((1 << fmt.exp_bits) - 1) << fmt.man_bits
        out = np.where(np.isinf(v), np.uint8(inf_code) | (out & np.uint8(0x80)), out)
    out = np.where(np.isnan(v), np.uint8(_nan_code(fmt)), out)
    return out.astype(np.uint8)


def decode_fp8(codes, name: str) -> np.ndarray:
    """float32 values of uint8 fp8 codes."""
    return decode_table(name)[np.asarray(codes).astype(np.intp)]


def encode_bf16(values) -> np.ndarray:
    """uint16 bit patterns of bf16 values held in float32 (exactly representable)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    return (bits >> np.uint32(16)).astype(np.uint16)


def decode_bf16(bits) -> np.ndarray:
    """float32 values of uint16 bf16 bit patterns."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_tf32(x) -> np.ndarray:
    """fp32 values with the low 13 mantissa bits dropped: what a tensor core reads
    of an fp32 operand in tf32 mode (it truncates; no rounding instruction is emitted)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    finite = np.isfinite(np.asarray(x, dtype=np.float32))
    return np.where(finite, (bits & np.uint32(0xFFFFE000)).view(np.float32), x).astype(np.float32)


def flush_subnormals(x) -> np.ndarray:
    """Replace fp32 subnormals by zeros of the same sign (`.ftz` instructions)."""
    x = np.asarray(x)
    tiny = np.abs(x) < np.finfo(np.float32).tiny
    return np.where(tiny, np.copysign(np.zeros_like(x), x), x)


# ---------------------------------------------------------------------------
# Error-free transformations and fused multiply-add


def two_sum(a, b) -> tuple[np.ndarray, np.ndarray]:
    """(s, e) with s = fl(a + b) and s + e = a + b exactly (float64, no overflow)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, np.where(np.isfinite(s), e, 0.0)


_SPLITTER = float(2 ** 27 + 1)


def _split(a):
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_product(a, b) -> tuple[np.ndarray, np.ndarray]:
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (float64, Dekker/Veltkamp).

    Exact while the operands are below ~1e300 and the error is not subnormal."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, np.where(np.isfinite(p) & np.isfinite(e), e, 0.0)


def round_to_odd(hi, lo) -> np.ndarray:
    """The float64 nearest to hi + lo in round-to-odd: hi when lo is 0, else the
    neighbour of hi on lo's side or hi itself, whichever has an odd last bit.

    (hi, lo) must satisfy hi = fl(hi + lo). Rounding the result once more to a
    format with at most 51 significand bits, in any direction, gives the
    correctly rounded value of hi + lo."""
    hi = np.asarray(hi, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    even = (hi.view(np.uint64) & np.uint64(1)) == 0
    toward = np.nextafter(hi, np.where(lo > 0, np.inf, -np.inf))
    return np.where((lo != 0) & even & np.isfinite(hi), toward, hi)


def round_pair(hi, lo, name: str, mode: str = "rn") -> np.ndarray:
    """Round the exact value hi + lo (a float64 pair from an error-free
    transformation) to float type `name` with one rounding in direction `mode`."""
    hi = np.asarray(hi, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    if name == "fp64":
        if mode == "rn":
            return hi + lo
        down = np.nextafter(hi, -np.inf)
        up = np.nextafter(hi, np.inf)
        if mode == "rd":
            return np.where(lo < 0, down, hi)
        if mode == "ru":
            return np.where(lo > 0, up, hi)
        toward_zero = np.where(hi > 0, down, up)
        return np.where((lo != 0) & (np.signbit(lo) != np.signbit(hi)), toward_zero, hi)
    return round_to_dtype(round_to_odd(hi, lo), name, mode)


def fma(a, b, c, name: str, mode: str = "rn") -> np.ndarray:
    """a * b + c with a single rounding to float type `name` (values in the
    interpreter's representation of that type)."""
    a64 = np.asarray(a, dtype=np.float64)
    b64 = np.asarray(b, dtype=np.float64)
    c64 = np.asarray(c, dtype=np.float64)
    if name != "fp64":
        # Products of operands with at most 24 significand bits are exact in float64.
        hi, lo = two_sum(a64 * b64, c64)
        return round_pair(hi, lo, name, mode)
    return _fma64(a64, b64, c64, mode)


def _fma64(a, b, c, mode: str) -> np.ndarray:
    # Boldo and Melquiond's emulation: the product's high part and the addend
    # are summed exactly, the two small error terms are added with rounding to
    # odd, and one final rounding of the two gives the correctly rounded a*b + c.
    ph, pl = two_product(a, b)
    th, tl = two_sum(c, ph)
    v = round_to_odd(*two_sum(tl, pl))
    result = round_pair(*two_sum(th, v), "fp64", mode)
    naive = a * b + c
    # Infinite or NaN intermediate values: the plain expression has the IEEE answer.
    special = ~np.isfinite(ph) | ~np.isfinite(c) | ~np.isfinite(naive)
    return np.where(special, naive, result)
