"""numpy implementations of the libdevice functions reachable through `extern`.

Names are the short names of `triton.language.extra.cuda.libdevice` (`tanh`,
`pow`, `float2int_rn`, ...); the implementation is picked from the name and
the operand types (fp32 vs fp64, 32- vs 64-bit ints), and the result is
converted to the op's result type.

Float math is computed in float64 and rounded once to the result type, so it
is at least as accurate as libdevice. Functions with an explicit rounding
direction (`add_rd`, `double2float_ru`, `ll2float_rz`, ...) are exact: the
exact result is formed as a float64 pair with error-free transformations and
rounded once in that direction.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..ir.core import Operation
from ..ir.types import type_text
from . import arith, floats, special
from . import values as V

_MODES = ("rn", "rz", "rd", "ru")


def make_extern(op: Operation) -> Callable:
    """The function computing `op` (an `extern` op) from its operand values."""
    name = op.attrs["name"]
    arg_types = [V.scalar_of(v.type) for v in op.operands]
    result_type = V.scalar_of(op.results[0].type)
    builder = _lookup(name)
    if builder is None:
        raise NotImplementedError(f"libdevice function {name!r} is not implemented by the interpreter")
    impl = builder(arg_types, result_type)
    vdt = V.value_dtype(result_type)
    if result_type.is_floating():
        def run(*args):
            return V.round_value(impl(*args), result_type)[()]
    else:
        def run(*args):
            return np.asarray(impl(*args)).astype(vdt)[()]
    return run


def _lookup(name: str):
    if name in _BUILDERS:
        return _BUILDERS[name]
    base, _, mode = name.rpartition("_")
    if mode in _MODES and base in _ROUNDED:
        return _ROUNDED[base](mode)
    return None


def _f64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _float_name(arg_types) -> str:
    """The float type a function computes in: fp64 if any operand is fp64, else fp32."""
    return "fp64" if any(type_text(t) == "fp64" for t in arg_types) else "fp32"


# ---------------------------------------------------------------------------
# Float math computed in float64 and rounded once


def _math(fn) -> Callable:
    return lambda arg_types, result_type: lambda *args: fn(*[_f64(a) for a in args])


def _sinpi(x):
    # fmod by 2 is exact, so pi * r loses nothing to a huge argument.
    r = np.fmod(x, 2.0)
    return np.where(r == np.trunc(r), np.copysign(0.0, x), np.sin(math.pi * r))


def _cospi(x):
    r = np.fmod(x, 2.0)
    return np.where(np.abs(np.fmod(r, 1.0)) == 0.5, 0.0, np.cos(math.pi * r))


def _round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _logb(x):
    _, e = np.frexp(x)
    out = (e - 1).astype(np.float64)
    out = np.where(x == 0, -np.inf, out)
    return np.where(np.isfinite(x), out, np.abs(x))


def _ilogb(arg_types, result_type):
    def fn(x):
        x = _f64(x)
        _, e = np.frexp(x)
        out = (e - 1).astype(np.int64)
        out = np.where((x == 0) | np.isnan(x), np.iinfo(np.int32).min, out)
        return np.where(np.isinf(x), np.iinfo(np.int32).max, out)
    return fn


def _fdim(x, y):
    return np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0.0))


def _saturate(x):
    return np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))


def _norm(*xs):
    out = np.abs(xs[0])
    for x in xs[1:]:
        out = np.hypot(out, x)
    return out


def _abs(arg_types, result_type):
    if arg_types[0].is_int():
        return np.abs  # two's complement: INT_MIN stays INT_MIN
    return lambda x: np.abs(_f64(x))


def _fma_builder(arg_types, result_type):
    name = _float_name(arg_types)
    return lambda a, b, c: floats.fma(a, b, c, name)


def _ldexp_builder(arg_types, result_type):
    return lambda x, n: np.ldexp(_f64(x), np.clip(np.asarray(n, dtype=np.int64), -10000, 10000))


def _bessel(fn, order=None):
    def build(arg_types, result_type):
        if order is not None:
            return lambda x: fn(order, _f64(x))
        # jn/yn(n, x): one evaluation per distinct order present.
        def run(n, x):
            n = np.asarray(n).astype(np.int64)
            x = _f64(x)
            shape = np.broadcast(n, x).shape
            n, x = np.broadcast_to(n, shape), np.broadcast_to(x, shape)
            out = np.empty(shape, dtype=np.float64)
            for k in np.unique(n):
                sel = n == k
                out[sel] = fn(int(k), x[sel])
            return out
        return run
    return build


def _cyl_i(order):
    return lambda arg_types, result_type: lambda x: special.cyl_bessel_i(order, _f64(x))


def _predicate(fn):
    return lambda arg_types, result_type: lambda x: fn(_f64(x))


def _nextafter(arg_types, result_type):
    vdt = V.value_dtype(arg_types[0])
    return lambda x, y: np.nextafter(np.asarray(x, dtype=vdt), np.asarray(y, dtype=vdt))


def _fast_divide(a, b):
    return a / b


def _rcp64h(x):
    # The high word of 1/x with the low word cleared: the seed of libdevice's division.
    bits = (1.0 / x).view(np.uint64) & np.uint64(0xFFFFFFFF00000000)
    return bits.view(np.float64)


# ---------------------------------------------------------------------------
# Integer functions


def _int_width(t) -> int:
    return t.primitive_bitwidth


def _as_unsigned(x, bits: int) -> np.ndarray:
    return np.asarray(x).astype(V.unsigned_dtype(bits))


def _bit_length(u: np.ndarray, bits: int) -> np.ndarray:
    """Index of the highest set bit + 1 (0 for 0) of unsigned values, by halving."""
    u = u.astype(np.uint64)
    length = np.zeros(u.shape, dtype=np.int64)
    shift = bits // 2
    while shift:
        high = u >> np.uint64(shift)
        has = high != 0
        length = np.where(has, length + shift, length)
        u = np.where(has, high, u)
        shift //= 2
    return length + (u != 0)


def _clz(arg_types, result_type):
    bits = _int_width(arg_types[0])
    return lambda x: bits - _bit_length(_as_unsigned(x, bits), bits)


def _ffs(arg_types, result_type):
    bits = _int_width(arg_types[0])

    def ffs(x):
        u = _as_unsigned(x, bits)
        lowest = u & (~u + V.unsigned_dtype(bits).type(1))
        return _bit_length(lowest, bits)
    return ffs


_BYTE_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _bit_count(u: np.ndarray) -> np.ndarray:
    """Set bits of each unsigned element (np.bitwise_count, which numpy 1.x lacks)."""
    u = np.asarray(u)
    per_byte = _BYTE_POPCOUNT[np.ascontiguousarray(u).view(np.uint8)].reshape(u.shape + (u.itemsize,))
    return per_byte.sum(axis=-1, dtype=np.uint8)


def _popc(arg_types, result_type):
    bits = _int_width(arg_types[0])
    return lambda x: _bit_count(_as_unsigned(x, bits))


_BYTE_REVERSED = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint8)


def _brev(arg_types, result_type):
    bits = _int_width(arg_types[0])
    udt = V.unsigned_dtype(bits)

    def brev(x):
        u = np.ascontiguousarray(_as_unsigned(x, bits)).reshape(-1)
        as_bytes = u.view(np.uint8).reshape(-1, bits // 8)
        reversed_bytes = np.ascontiguousarray(_BYTE_REVERSED[as_bytes][:, ::-1])
        return reversed_bytes.view(udt).reshape(np.shape(x))
    return brev


def _byte_perm(arg_types, result_type):
    def byte_perm(x, y, s):
        x, y, s = (np.asarray(v).astype(np.uint32).astype(np.uint64) for v in (x, y, s))
        pool = x | (y << np.uint64(32))
        out = np.zeros(np.broadcast(x, y, s).shape, dtype=np.uint64)
        for position in range(4):
            selector = (s >> np.uint64(4 * position)) & np.uint64(7)
            byte = (pool >> (selector * np.uint64(8))) & np.uint64(0xFF)
            out |= byte << np.uint64(8 * position)
        return out.astype(np.uint32)
    return byte_perm


def _halving_add(rounding: int):
    def build(arg_types, result_type):
        def hadd(x, y):
            # Python-int-free: sum in 64 bits (operands are 32-bit) then shift.
            return (np.asarray(x).astype(np.int64) + np.asarray(y).astype(np.int64) + rounding) >> 1
        return hadd
    return build


def _mul24(arg_types, result_type):
    signed = arg_types[0].is_int_signed()

    def mul24(x, y):
        def low24(v):
            v = np.asarray(v).astype(np.int64) & 0xFFFFFF
            return np.where(v >= 0x800000, v - 0x1000000, v) if signed else v
        return (low24(x) * low24(y)) & 0xFFFFFFFF
    return mul24


def _mulhi(arg_types, result_type):
    bits = _int_width(arg_types[0])
    signed = arg_types[0].is_int_signed()
    if bits == 32:
        if signed:
            return lambda x, y: (np.asarray(x).astype(np.int64) * np.asarray(y).astype(np.int64)) >> 32
        return lambda x, y: (np.asarray(x).astype(np.uint64) * np.asarray(y).astype(np.uint64)) >> np.uint64(32)

    def mulhi64(x, y):
        ux, uy = np.asarray(x).astype(np.uint64), np.asarray(y).astype(np.uint64)
        high = arith.umulhi_u64(ux, uy)
        if signed:
            # Signed high word = unsigned high word - (x < 0 ? y : 0) - (y < 0 ? x : 0).
            high = high - np.where(np.asarray(x) < 0, uy, np.uint64(0)) - np.where(np.asarray(y) < 0, ux, np.uint64(0))
        return high
    return mulhi64


def _sad(arg_types, result_type):
    def sad(x, y, z):
        difference = np.abs(np.asarray(x).astype(np.int64) - np.asarray(y).astype(np.int64))
        return (difference + np.asarray(z).astype(np.int64)) & 0xFFFFFFFF
    return sad


def _float_to_int(rounding: str, dst_bits: int, signed: bool):
    def build(arg_types, result_type):
        lo = -(2 ** (dst_bits - 1)) if signed else 0
        hi = 2 ** (dst_bits - 1) - 1 if signed else 2 ** dst_bits - 1
        wide = V.signed_dtype(dst_bits) if signed else V.unsigned_dtype(dst_bits)
        integral = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil, "away": _round_half_away}[rounding]
        return lambda x: arith.saturating_float_to_int(integral(_f64(x)), lo, hi, wide)
    return build


# ---------------------------------------------------------------------------
# Bit reinterpretation


def _reinterpret(src: np.dtype, dst: np.dtype):
    def build(arg_types, result_type):
        def reinterpret(x):
            a = np.asarray(x).astype(src)
            return a.reshape(a.shape or (1,)).view(dst).reshape(a.shape)
        return reinterpret
    return build


def _double_word(high: bool):
    def build(arg_types, result_type):
        def word(x):
            bits = np.asarray(x, dtype=np.float64)
            bits = bits.reshape(bits.shape or (1,)).view(np.uint64).reshape(bits.shape)
            part = bits >> np.uint64(32) if high else bits & np.uint64(0xFFFFFFFF)
            return part.astype(np.uint32).astype(np.int32)
        return word
    return build


def _hiloint2double(arg_types, result_type):
    def combine(high, low):
        bits = (np.asarray(high).astype(np.uint32).astype(np.uint64) << np.uint64(32)) | \
            np.asarray(low).astype(np.uint32).astype(np.uint64)
        return bits.reshape(bits.shape or (1,)).view(np.float64).reshape(bits.shape)
    return combine


# ---------------------------------------------------------------------------
# Correctly rounded operations in a given direction


def _exact_pair(kind: str):
    """(hi, lo) float64 pair with hi + lo the exact result of a float32 or float64 operation."""
    def add(a, b):
        return floats.two_sum(_f64(a), _f64(b))

    def sub(a, b):
        return floats.two_sum(_f64(a), -_f64(b))

    def mul(a, b):
        return floats.two_product(_f64(a), _f64(b))

    def div(a, b):
        a, b = _f64(a), _f64(b)
        q = a / b
        p, e = floats.two_product(q, b)
        remainder = (a - p) - e
        lo = np.where(np.isfinite(q) & (b != 0), remainder / b, 0.0)
        return q, lo

    def sqrt(a):
        a = _f64(a)
        s = np.sqrt(a)
        p, e = floats.two_product(s, s)
        residual = (a - p) - e
        lo = np.where(np.isfinite(s) & (s > 0), residual / (2.0 * s), 0.0)
        return s, lo

    def rcp(a):
        return div(np.ones_like(_f64(a)), a)

    return {"add": add, "sub": sub, "mul": mul, "div": div, "sqrt": sqrt, "rcp": rcp}[kind]


def _rounded_op(kind: str):
    def with_mode(mode: str):
        def build(arg_types, result_type):
            pair = _exact_pair(kind)
            name = type_text(result_type)
            return lambda *args: floats.round_pair(*pair(*args), name, mode)
        return build
    return with_mode


def _rounded_fma(mode: str):
    def build(arg_types, result_type):
        name = _float_name(arg_types)
        return lambda a, b, c: floats.fma(a, b, c, name, mode)
    return build


def _int_to_float(mode: str):
    def build(arg_types, result_type):
        name = type_text(result_type)

        def convert(x):
            x = np.asarray(x)
            if x.dtype.itemsize < 8:
                return floats.round_pair(x.astype(np.float64), np.zeros(x.shape), name, mode)
            # 64-bit ints: an exact float64 pair from the high and low 32-bit halves.
            high = (x >> 32).astype(np.float64) * 4294967296.0 if x.dtype.kind == "i" else \
                (x >> np.uint64(32)).astype(np.float64) * 4294967296.0
            low = (x & 0xFFFFFFFF).astype(np.float64)
            return floats.round_pair(*floats.two_sum(high, low), name, mode)
        return convert
    return build


def _double_to_float(mode: str):
    def build(arg_types, result_type):
        return lambda x: floats.round_pair(_f64(x), np.zeros(np.shape(x)), "fp32", mode)
    return build


def _rsqrt_rn(arg_types, result_type):
    # 1/sqrt(x) in float64 is within 1e-16 relative: one more rounding to fp32
    # is correct except in astronomically rare ties.
    return lambda x: 1.0 / np.sqrt(_f64(x))


_ROUNDED: dict[str, Callable] = {
    "add": _rounded_op("add"), "sub": _rounded_op("sub"), "mul": _rounded_op("mul"), "div": _rounded_op("div"),
    "sqrt": _rounded_op("sqrt"), "rcp": _rounded_op("rcp"), "fma": _rounded_fma,
    "double2float": _double_to_float,
    "int2float": _int_to_float, "uint2float": _int_to_float, "ll2float": _int_to_float, "ull2float": _int_to_float,
    "int2double": _int_to_float, "uint2double": _int_to_float, "ll2double": _int_to_float,
    "ull2double": _int_to_float,
}


def _float_to_int_family(bits: int, signed: bool) -> Callable:
    return lambda mode: _float_to_int(mode, bits, signed)


for _dst, _bits, _signed in (("int", 32, True), ("uint", 32, False), ("ll", 64, True), ("ull", 64, False)):
    _ROUNDED[f"float2{_dst}"] = _ROUNDED[f"double2{_dst}"] = _float_to_int_family(_bits, _signed)


_BUILDERS: dict[str, Callable] = {
    # elementary functions
    "abs": _abs, "acos": _math(np.arccos), "acosh": _math(np.arccosh), "asin": _math(np.arcsin),
    "asinh": _math(np.arcsinh), "atan": _math(np.arctan), "atan2": _math(np.arctan2), "atanh": _math(np.arctanh),
    "cbrt": _math(np.cbrt), "ceil": _math(np.ceil), "cos": _math(np.cos), "cosh": _math(np.cosh),
    "cospi": _math(_cospi), "sinpi": _math(_sinpi),
    "exp": _math(np.exp), "exp10": _math(lambda x: np.power(10.0, x)), "exp2": _math(np.exp2),
    "expm1": _math(np.expm1), "floor": _math(np.floor), "fmod": _math(np.fmod), "hypot": _math(np.hypot),
    "log": _math(np.log), "log10": _math(np.log10), "log1p": _math(np.log1p), "log2": _math(np.log2),
    "logb": _math(_logb), "nearbyint": _math(np.rint), "rint": _math(np.rint), "round": _math(_round_half_away),
    "trunc": _math(np.trunc), "pow": _math(np.power), "rcbrt": _math(lambda x: 1.0 / np.cbrt(x)),
    "rsqrt": _math(lambda x: 1.0 / np.sqrt(x)), "sin": _math(np.sin), "sinh": _math(np.sinh),
    "sqrt": _math(np.sqrt), "tan": _math(np.tan), "tanh": _math(np.tanh), "copysign": _math(np.copysign),
    "fdim": _math(_fdim), "saturatef": _math(_saturate), "rhypot": _math(lambda x, y: 1.0 / np.hypot(x, y)),
    "norm3d": _math(_norm), "norm4d": _math(_norm),
    "rnorm3d": _math(lambda *xs: 1.0 / _norm(*xs)), "rnorm4d": _math(lambda *xs: 1.0 / _norm(*xs)),
    "remainder": _math(special.remainder), "fma": _fma_builder, "nextafter": _nextafter,
    "ldexp": _ldexp_builder, "scalbn": _ldexp_builder, "ilogb": _ilogb, "rsqrt_rn": _rsqrt_rn,
    "rcp64h": _math(_rcp64h), "fast_dividef": _math(_fast_divide),
    "fast_expf": _math(np.exp), "fast_exp10f": _math(lambda x: np.power(10.0, x)), "fast_logf": _math(np.log),
    "fast_log2f": _math(np.log2), "fast_log10f": _math(np.log10), "fast_powf": _math(np.power),
    "fast_sinf": _math(np.sin), "fast_cosf": _math(np.cos), "fast_tanf": _math(np.tan),
    # special functions
    "erf": _math(special.erf), "erfc": _math(special.erfc), "erfinv": _math(special.erfinv),
    "erfcinv": _math(special.erfcinv), "erfcx": _math(special.erfcx), "lgamma": _math(special.lgamma),
    "tgamma": _math(special.tgamma),
    "normcdf": _math(lambda x: 0.5 * special.erfc(-x / math.sqrt(2.0))),
    "normcdfinv": _math(lambda p: -math.sqrt(2.0) * special.erfcinv(2.0 * p)),
    "j0": _bessel(special.jn, 0), "j1": _bessel(special.jn, 1), "jn": _bessel(special.jn),
    "y0": _bessel(special.yn, 0), "y1": _bessel(special.yn, 1), "yn": _bessel(special.yn),
    "cyl_bessel_i0": _cyl_i(0), "cyl_bessel_i1": _cyl_i(1),
    # classification
    "isnan": _predicate(np.isnan), "isinf": _predicate(np.isinf), "finitef": _predicate(np.isfinite),
    "isfinited": _predicate(np.isfinite), "signbit": _predicate(np.signbit),
    # integers
    "brev": _brev, "byte_perm": _byte_perm, "clz": _clz, "ffs": _ffs, "popc": _popc,
    "hadd": _halving_add(0), "rhadd": _halving_add(1), "mul24": _mul24, "mulhi": _mulhi, "sad": _sad,
    "llrint": _float_to_int("rn", 64, True), "llround": _float_to_int("away", 64, True),
    # bit reinterpretation
    "float_as_int": _reinterpret(np.dtype(np.float32), np.dtype(np.int32)),
    "float_as_uint": _reinterpret(np.dtype(np.float32), np.dtype(np.uint32)),
    "int_as_float": _reinterpret(np.dtype(np.int32), np.dtype(np.float32)),
    "uint_as_float": _reinterpret(np.dtype(np.uint32), np.dtype(np.float32)),
    "double_as_longlong": _reinterpret(np.dtype(np.float64), np.dtype(np.int64)),
    "longlong_as_double": _reinterpret(np.dtype(np.int64), np.dtype(np.float64)),
    "double2hiint": _double_word(True), "double2loint": _double_word(False),
    "hiloint2double": _hiloint2double,
}
