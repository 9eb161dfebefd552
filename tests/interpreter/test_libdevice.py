"""libdevice functions (`extern` ops) against exact and numpy references."""

import math
from fractions import Fraction

import numpy as np
import pytest
from kernel_builder import elementwise

from tritone.ir.types import type_text
from tritone.language.extra.libdevice import LIBDEVICE

N = 64


def extern(name, inputs, in_types, out_type):
    return elementwise("extern", inputs, in_types, out_type, name=name)


def _rng():
    return np.random.default_rng()


def _round_exact(exact: Fraction, dtype, mode: str):
    """The value of `dtype` nearest to `exact` in rounding direction `mode`."""
    guess = dtype(float(exact))
    candidates = [np.nextafter(guess, dtype(-np.inf)), guess, np.nextafter(guess, dtype(np.inf))]
    candidates = [c for c in candidates if np.isfinite(c)]
    below = max((c for c in candidates if Fraction(float(c)) <= exact), key=lambda c: Fraction(float(c)))
    above = min((c for c in candidates if Fraction(float(c)) >= exact), key=lambda c: Fraction(float(c)))
    if mode == "rd":
        return below
    if mode == "ru":
        return above
    if mode == "rz":
        return below if exact >= 0 else above
    distance_below, distance_above = exact - Fraction(float(below)), Fraction(float(above)) - exact
    if distance_below != distance_above:
        return below if distance_below < distance_above else above
    bits = np.uint32 if dtype is np.float32 else np.uint64
    return below if int(np.array(below).view(bits)) % 2 == 0 else above


OPERATIONS = {
    "add": (2, lambda a, b: a + b), "sub": (2, lambda a, b: a - b), "mul": (2, lambda a, b: a * b),
    "div": (2, lambda a, b: a / b), "fma": (3, lambda a, b, c: a * b + c), "rcp": (1, lambda a: 1 / a),
    "sqrt": (1, None),
}


@pytest.mark.parametrize("mode", ["rn", "rz", "rd", "ru"])
@pytest.mark.parametrize("op", list(OPERATIONS))
@pytest.mark.parametrize("ty", ["fp32", "fp64"])
def test_directed_rounding_is_exact(op, mode, ty):
    dtype = np.float32 if ty == "fp32" else np.float64
    arity, fn = OPERATIONS[op]
    rng = _rng()
    inputs = [(rng.standard_normal(N) * np.exp2(rng.integers(-20, 20, N))).astype(dtype) for _ in range(arity)]
    if op == "sqrt":
        inputs = [np.abs(inputs[0])]
    got = extern(f"{op}_{mode}", inputs, [ty] * arity, ty)
    for i in range(N):
        args = [Fraction(float(x[i])) for x in inputs]
        if op == "sqrt":
            # Bracket the square root: the rounding of sqrt(a) is the candidate whose square brackets a.
            root = math.sqrt(float(args[0]))
            candidates = [np.nextafter(dtype(root), dtype(-np.inf)), dtype(root), np.nextafter(dtype(root),
                                                                                               dtype(np.inf))]
            exact_is_between = [c for c in candidates if Fraction(float(c)) ** 2 <= args[0]]
            low = max(exact_is_between)
            high = np.nextafter(low, dtype(np.inf))
            if Fraction(float(low)) ** 2 == args[0]:
                expected = low
            elif mode in ("rd", "rz"):
                expected = low
            elif mode == "ru":
                expected = high
            else:
                middle = (Fraction(float(low)) + Fraction(float(high))) / 2
                expected = low if middle ** 2 > args[0] else high
        else:
            expected = _round_exact(fn(*args), dtype, mode)
        assert got[i] == expected, (op, mode, [float(a) for a in args])


@pytest.mark.parametrize("mode", ["rn", "rz", "rd", "ru"])
def test_float_to_int_conversions_round_and_saturate(mode):
    x = np.array([2.5, -2.5, 3.5, -0.7, 1e10, -1e10, np.nan, 2 ** 31 - 0.5] * 8, dtype=np.float64)
    integral = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}[mode]
    expected = np.clip(np.nan_to_num(integral(x), nan=0.0), -2 ** 31, 2 ** 31 - 1).astype(np.int64)
    assert extern(f"double2int_{mode}", [x], ["fp64"], "i32").tolist() == expected.tolist()
    unsigned = np.clip(np.nan_to_num(integral(x), nan=0.0), 0, 2 ** 32 - 1).astype(np.int64)
    got = extern(f"float2uint_{mode}", [x.astype(np.float32)], ["fp32"], "i32").view(np.uint32)
    expected32 = np.clip(np.nan_to_num(integral(x.astype(np.float32).astype(np.float64)), nan=0.0), 0, 2 ** 32 - 1)
    assert got.tolist() == expected32.astype(np.int64).tolist()
    assert unsigned.min() >= 0
    ll = extern(f"double2ll_{mode}", [x * 1e9], ["fp64"], "i64")
    assert ll[6] == 0 and ll[4] == 2 ** 63 - 1 and ll[5] == -2 ** 63


@pytest.mark.parametrize("mode", ["rn", "rz", "rd", "ru"])
def test_int_to_float_conversions_round_in_the_given_direction(mode):
    rng = _rng()
    x = rng.integers(-2 ** 63, 2 ** 63 - 1, N, dtype=np.int64)
    got = extern(f"ll2float_{mode}", [x], ["i64"], "fp32")
    assert all(got[i] == _round_exact(Fraction(int(x[i])), np.float32, mode) for i in range(N))
    u = rng.integers(0, 2 ** 64 - 1, N, dtype=np.uint64)
    got = extern(f"ull2double_{mode}", [u], ["u64"], "fp64")
    assert all(got[i] == _round_exact(Fraction(int(u[i])), np.float64, mode) for i in range(N))
    small = rng.integers(-2 ** 31, 2 ** 31 - 1, N, dtype=np.int64).astype(np.int32)
    got = extern(f"int2float_{mode}", [small], ["i32"], "fp32")
    assert all(got[i] == _round_exact(Fraction(int(small[i])), np.float32, mode) for i in range(N))
    d = (rng.standard_normal(N) * 1e30)
    got = extern(f"double2float_{mode}", [d], ["fp64"], "fp32")
    assert all(got[i] == _round_exact(Fraction(float(d[i])), np.float32, mode) for i in range(N))


def _ints(name, n=N):
    info = np.iinfo(name)
    x = _rng().integers(info.min, info.max, n, dtype=name, endpoint=True)
    x[:3] = [0, info.max, info.min]
    return x


def test_bit_functions():
    x32, x64 = _ints(np.int32), _ints(np.int64)
    u32 = [int(v) & 0xFFFFFFFF for v in x32]
    u64 = [int(v) & (2 ** 64 - 1) for v in x64]
    brev = [int(f"{v:032b}"[::-1], 2) for v in u32]
    assert extern("brev", [x32], ["i32"], "i32").view(np.uint32).tolist() == brev
    brev64 = [int(f"{v:064b}"[::-1], 2) for v in u64]
    assert extern("brev", [x64], ["i64"], "i64").view(np.uint64).tolist() == brev64
    assert extern("clz", [x32], ["i32"], "i32").tolist() == [32 - v.bit_length() for v in u32]
    assert extern("clz", [x64], ["i64"], "i32").tolist() == [64 - v.bit_length() for v in u64]
    assert extern("popc", [x64], ["i64"], "i32").tolist() == [bin(v).count("1") for v in u64]
    assert extern("popc", [x32], ["i32"], "i32").tolist() == [bin(v).count("1") for v in u32]
    assert extern("ffs", [x32], ["i32"], "i32").tolist() == [(v & -v).bit_length() for v in u32]
    s = _ints(np.int32)
    perm = []
    for a, b, sel in zip(u32, [int(v) & 0xFFFFFFFF for v in x32[::-1]], [int(v) & 0xFFFF for v in s]):
        pool = a | (b << 32)
        perm.append(sum(((pool >> (8 * ((sel >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4)))
    got = extern("byte_perm", [x32, x32[::-1].copy(), s], ["i32", "i32", "i32"], "i32").view(np.uint32)
    assert got.tolist() == perm


@pytest.mark.parametrize("name,bits", [("i32", 32), ("u32", 32), ("i64", 64), ("u64", 64)])
def test_mulhi(name, bits):
    dtype = {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64}[name]
    a, b = _ints(dtype), _ints(dtype)
    got = extern("mulhi", [a, b], [name, name], name)
    expected = [(int(x) * int(y)) >> bits for x, y in zip(a, b)]
    mask = (1 << bits) - 1
    assert [int(v) & mask for v in got] == [v & mask for v in expected]


def test_halving_add_mul24_sad():
    a, b = _ints(np.int32), _ints(np.int32)
    assert extern("hadd", [a, b], ["i32", "i32"], "i32").tolist() == [(int(x) + int(y)) >> 1 for x, y in zip(a, b)]
    assert extern("rhadd", [a, b], ["i32", "i32"], "i32").tolist() == \
        [(int(x) + int(y) + 1) >> 1 for x, y in zip(a, b)]

    def low24(v):
        v &= 0xFFFFFF
        return v - 0x1000000 if v >= 0x800000 else v
    expected = [np.int64((low24(int(x)) * low24(int(y))) & 0xFFFFFFFF).astype(np.uint32).astype(np.int32)
                for x, y in zip(a, b)]
    assert extern("mul24", [a, b], ["i32", "i32"], "i32").tolist() == [int(v) for v in expected]
    z = _ints(np.uint32)
    sad = [(abs(int(x) - int(y)) + int(w)) & 0xFFFFFFFF for x, y, w in zip(a, b, z)]
    assert extern("sad", [a, b, z], ["i32", "i32", "u32"], "i32").view(np.uint32).tolist() == sad


MATH_CASES = [
    ("tanh", np.tanh, (-5, 5)), ("atan", np.arctan, (-5, 5)), ("log1p", np.log1p, (-0.9, 5)),
    ("expm1", np.expm1, (-3, 3)), ("cbrt", np.cbrt, (-100, 100)), ("asinh", np.arcsinh, (-5, 5)),
    ("erfc", np.vectorize(math.erfc), (-4, 4)), ("lgamma", np.vectorize(math.lgamma), (0.1, 30)),
    ("tgamma", np.vectorize(math.gamma), (0.1, 20)), ("exp10", lambda x: 10.0 ** x, (-5, 5)),
    ("sinpi", lambda x: np.sin(np.pi * x), (-3, 3)), ("cospi", lambda x: np.cos(np.pi * x), (-3, 3)),
    ("normcdf", lambda x: 0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2)), (-5, 5)),
    ("erfinv", None, (-0.99, 0.99)), ("round", None, (-10, 10)), ("logb", None, (1e-3, 1e3)),
]


@pytest.mark.parametrize("name,fn,interval", MATH_CASES)
def test_math_functions(name, fn, interval):
    x = _rng().uniform(*interval, N)
    got64 = extern(name, [x], ["fp64"], "fp64")
    got32 = extern(name, [x.astype(np.float32)], ["fp32"], "fp32")
    if name == "erfinv":
        assert np.allclose(np.vectorize(math.erf)(got64), x, rtol=1e-14, atol=1e-15)
    elif name == "round":
        assert got64.tolist() == [math.floor(abs(v) + 0.5) * math.copysign(1, v) for v in x]
    elif name == "logb":
        assert got64.tolist() == [math.floor(math.log2(abs(v))) for v in x]
    else:
        assert np.allclose(got64, fn(x), rtol=1e-13, atol=1e-15)
        assert np.allclose(got32, fn(x.astype(np.float32).astype(np.float64)), rtol=2e-7, atol=1e-30)


def test_special_values_and_two_argument_functions():
    x = np.array([1.0, -0.0, np.nan, np.inf, -2.5, 3.0, 0.0, 1e-310])
    assert extern("isnan", [x], ["fp64"], "i32").tolist() == [0, 0, 1, 0, 0, 0, 0, 0]
    assert extern("isinf", [x], ["fp64"], "i32").tolist() == [0, 0, 0, 1, 0, 0, 0, 0]
    assert extern("signbit", [x], ["fp64"], "i32").tolist() == [0, 1, 0, 0, 1, 0, 0, 0]
    assert extern("isfinited", [x], ["fp64"], "i32").tolist() == [1, 1, 0, 0, 1, 1, 1, 1]
    assert extern("ilogb", [x], ["fp64"], "i32").tolist()[4:] == [1, 1, -2 ** 31, -1030]
    y = np.array([2.0, 3.0, 1.0, 0.5, 2.0, -2.0, 1.0, 2.0])
    assert np.array_equal(extern("pow", [x, y], ["fp64", "fp64"], "fp64"), np.power(x, y), equal_nan=True)
    assert np.array_equal(extern("atan2", [x, y], ["fp64", "fp64"], "fp64"), np.arctan2(x, y), equal_nan=True)
    n = np.array([3, -1, 0, 2, 1, 5, 4, 7], dtype=np.int32)
    assert np.array_equal(extern("ldexp", [x, n], ["fp64", "i32"], "fp64"), np.ldexp(x, n), equal_nan=True)
    with np.errstate(divide="ignore"):
        powers = np.power(x, n.astype(np.float64)).astype(np.float32)
    assert np.array_equal(extern("pow", [x.astype(np.float32), n], ["fp32", "i32"], "fp32"), powers, equal_nan=True)
    assert extern("saturatef", [x.astype(np.float32)], ["fp32"], "fp32").tolist() == [1, 0, 0, 1, 0, 1, 0, 0]


def test_bit_reinterpretation():
    x = _rng().standard_normal(N)
    high = extern("double2hiint", [x], ["fp64"], "i32")
    low = extern("double2loint", [x], ["fp64"], "i32")
    assert np.array_equal(extern("hiloint2double", [high, low], ["i32", "i32"], "fp64"), x)
    f = x.astype(np.float32)
    assert np.array_equal(extern("float_as_int", [f], ["fp32"], "i32"), f.view(np.int32))
    assert np.array_equal(extern("longlong_as_double", [x.view(np.int64)], ["i64"], "fp64"), x)


def test_bessel_functions():
    import scipy.special as scipy_special  # a test dependency: the reference values
    x = _rng().uniform(0.01, 80, N)
    assert np.allclose(extern("j0", [x], ["fp64"], "fp64"), scipy_special.j0(x), rtol=0, atol=1e-13)
    assert np.allclose(extern("y1", [x], ["fp64"], "fp64"), scipy_special.y1(x), rtol=1e-12, atol=1e-13)
    n = _rng().integers(0, 6, N).astype(np.int32)
    assert np.allclose(extern("jn", [n, x], ["i32", "fp64"], "fp64"), scipy_special.jv(n, x), rtol=0, atol=1e-13)
    assert np.allclose(extern("yn", [n, x], ["i32", "fp64"], "fp64"), scipy_special.yv(n, x), rtol=1e-12,
                       atol=1e-13)
    assert np.allclose(extern("cyl_bessel_i1", [x], ["fp64"], "fp64"), scipy_special.i1(x), rtol=1e-13)


def test_every_table_entry_runs():
    # One call per variant of every function, with ordinary inputs.
    samples = {"fp32": np.float32(0.75), "fp64": np.float64(0.75), "i32": np.int32(5), "i64": np.int64(5),
               "u32": np.uint32(5), "u64": np.uint64(5)}
    for name, variants in LIBDEVICE.items():
        for arg_types, result_type in variants:
            names = [type_text(t) for t in arg_types]
            inputs = [np.full(2, samples[t]) for t in names]
            out = extern(name, inputs, names, result_type.name)
            assert out.shape == (2,), name
