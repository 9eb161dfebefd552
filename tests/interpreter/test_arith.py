"""Elementwise ops with the GPU's integer, float and cast semantics."""

import numpy as np
import pytest
from kernel_builder import elementwise

from tritone.interpreter import floats

INT_TYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
             "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}


def _wrap(values, name):
    bits = np.iinfo(INT_TYPES[name]).bits
    signed = name.startswith("i")
    out = []
    for v in values:
        v &= (1 << bits) - 1
        if signed and v >= 1 << (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array(out, dtype=INT_TYPES[name])


def _random_ints(name, n=256):
    info = np.iinfo(INT_TYPES[name])
    rng = np.random.default_rng()
    x = rng.integers(info.min, info.max, n, dtype=INT_TYPES[name], endpoint=True)
    x[:4] = [info.min, info.max, 0, 1]
    return x


@pytest.mark.parametrize("name", list(INT_TYPES))
@pytest.mark.parametrize("op,fn", [("add", lambda a, b: a + b), ("sub", lambda a, b: a - b),
                                   ("mul", lambda a, b: a * b)])
def test_integer_arithmetic_wraps(name, op, fn):
    a, b = _random_ints(name), _random_ints(name)
    got = elementwise(op, [a, b], [name, name], name)
    assert np.array_equal(got, _wrap([fn(int(x), int(y)) for x, y in zip(a, b)], name))


def _c_div(a, b):
    if b == 0:
        return 0, 0
    q = abs(a) // abs(b)
    q = q if (a >= 0) == (b >= 0) else -q
    return q, a - q * b


@pytest.mark.parametrize("name", ["i8", "i32", "i64", "u32"])
def test_division_truncates_and_remainder_takes_the_dividends_sign(name):
    a, b = _random_ints(name), _random_ints(name)
    b[4:12] = 0
    b[12:20] = np.array([1, 2, 3, 7, 1, 2, 3, 7]).astype(b.dtype)
    if name.startswith("i"):
        b[20:28] = -b[12:20]
        a[28], b[28] = np.iinfo(INT_TYPES[name]).min, -1
    q = elementwise("floordiv", [a, b], [name, name], name)
    r = elementwise("mod", [a, b], [name, name], name)
    expected = [_c_div(int(x), int(y)) for x, y in zip(a, b)]
    assert np.array_equal(q, _wrap([e[0] for e in expected], name))
    assert np.array_equal(r, _wrap([e[1] for e in expected], name))


def test_small_division_table():
    a = np.array([7, -7, 7, -7], dtype=np.int32)
    b = np.array([2, 2, -2, -2], dtype=np.int32)
    assert elementwise("floordiv", [a, b], ["i32", "i32"], "i32").tolist() == [3, -3, -3, 3]
    assert elementwise("mod", [a, b], ["i32", "i32"], "i32").tolist() == [1, -1, 1, -1]


@pytest.mark.parametrize("name", ["i8", "i32", "u32", "i64", "u64"])
def test_shifts_clamp_the_amount_like_ptx(name):
    bits = np.iinfo(INT_TYPES[name]).bits
    a = _random_ints(name, 128)
    s = np.resize(np.arange(bits + 8), 128).astype(INT_TYPES[name])
    mask = (1 << bits) - 1
    ua = [int(x) & mask for x in a]
    shl = [(x << int(k)) if int(k) < bits else 0 for x, k in zip(ua, s)]
    lshr = [(x >> int(k)) if int(k) < bits else 0 for x, k in zip(ua, s)]
    signed = [x - (1 << bits) if x >> (bits - 1) else x for x in ua]
    ashr = [v >> min(int(k), bits - 1) for v, k in zip(signed, s)]
    assert np.array_equal(elementwise("shl", [a, s], [name, name], name), _wrap(shl, name))
    assert np.array_equal(elementwise("lshr", [a, s], [name, name], name), _wrap(lshr, name))
    assert np.array_equal(elementwise("ashr", [a, s], [name, name], name), _wrap(ashr, name))


@pytest.mark.parametrize("name", ["i32", "u32", "i64", "u64"])
def test_umulhi_is_the_unsigned_high_half(name):
    bits = np.iinfo(INT_TYPES[name]).bits
    a, b = _random_ints(name), _random_ints(name)
    mask = (1 << bits) - 1
    expected = [((int(x) & mask) * (int(y) & mask)) >> bits for x, y in zip(a, b)]
    assert np.array_equal(elementwise("umulhi", [a, b], [name, name], name), _wrap(expected, name))


def test_bool_arithmetic_wraps():
    a = np.array([0, 0, 1, 1], dtype=np.uint8)
    b = np.array([0, 1, 0, 1], dtype=np.uint8)
    assert elementwise("add", [a, b], ["i1", "i1"], "i1").tolist() == [0, 1, 1, 0]
    assert elementwise("mul", [a, b], ["i1", "i1"], "i1").tolist() == [0, 0, 0, 1]


def test_abs_keeps_int_min():
    x = np.array([-128, -1, 5, 127], dtype=np.int8)
    assert elementwise("abs", [x], ["i8"], "i8").tolist() == [-128, 1, 5, 127]


def test_float_mod_is_the_gpu_fma_formula():
    x = np.array([1, np.nan, -2, .5, 1e10, 1.9999, 7.5, -7.5, -3, np.inf, np.inf, 0], dtype=np.float32)
    y = np.array([np.nan, 3, 5, .25, 3.3, 1, np.inf, 2, 3, 2, -np.inf, 0], dtype=np.float32)
    x, y = np.resize(x, 16), np.resize(y, 16)
    got = elementwise("mod", [x, y], ["fp32", "fp32"], "fp32")
    assert np.isnan(got[[0, 1, 9, 11]]).all()
    assert got[2] == -2 and got[3] == 0 and got[7] == -1.5 and got[6] == 7.5
    assert abs(got[4] - 323.696) < 1e-3
    assert got[5] == np.float32(1.9999) - 1
    # fma(1, 3, -3) is +0 (fmod would keep the dividend's sign); x is kept when y is infinite.
    assert got[8] == 0 and not np.signbit(got[8]) and got[10] == np.inf


def test_max_min_nan_handling():
    x = np.array([1, np.nan, -2, .5, np.nan, 0], dtype=np.float32)
    y = np.array([np.nan, 3, 5, .25, np.nan, -0.0], dtype=np.float32)
    ignore = elementwise("max", [x, y], ["fp32", "fp32"], "fp32", propagate_nan=False)
    assert ignore[:4].tolist() == [1, 3, 5, .5] and np.isnan(ignore[4])
    propagate = elementwise("min", [x, y], ["fp32", "fp32"], "fp32", propagate_nan=True)
    assert np.isnan(propagate[:2]).all() and propagate[2:4].tolist() == [-2, .25]


def test_compare_ordered_except_ne():
    x = np.array([1, np.nan, 2, np.nan], dtype=np.float32)
    y = np.array([1, 1, np.nan, np.nan], dtype=np.float32)
    assert elementwise("cmp", [x, y], ["fp32", "fp32"], "i1", pred="eq").tolist() == [1, 0, 0, 0]
    assert elementwise("cmp", [x, y], ["fp32", "fp32"], "i1", pred="ne").tolist() == [0, 1, 1, 1]
    assert elementwise("cmp", [x, y], ["fp32", "fp32"], "i1", pred="le").tolist() == [1, 0, 0, 0]
    a = np.array([-7, 3], dtype=np.int32).view(np.uint32)
    assert elementwise("cmp", [a, np.array([1, 1], np.uint32)], ["u32", "u32"], "i1", pred="lt").tolist() == [0, 0]


SATURATION = [
    ("i32", [1e10, -1e10, np.nan, np.inf, -np.inf, 2.7, -2.7, 2147483520.0],
     [2147483647, -2147483648, 0, 2147483647, -2147483648, 2, -2, 2147483520]),
    ("u32", [-2.7, 1e10, np.nan, 4e9, -np.inf, 2.7, 0.0, 1.0], [0, 4294967295, 0, 4000000000, 0, 2, 0, 1]),
    # fp32 -> i64 goes through the 64-bit conversion unit: NaN gives INT64_MIN (seen on an H200).
    ("i64", [1e19, -1e19, np.nan, 3.0, np.inf, -3.5, 1e18, 0.0],
     [2 ** 63 - 1, -2 ** 63, -2 ** 63, 3, 2 ** 63 - 1, -3, int(np.float32(1e18)), 0]),
    # 8-bit targets saturate at 16 bits and keep the low byte.
    ("i8", [200.0, 1e10, 300.0, -1e10, np.nan, -2.7, 127.9, -200.0], [-56, -1, 44, 0, 0, -2, 127, 56]),
    ("u8", [-2.7, 1e10, 4e4, 255.5, np.nan, 256.0, 3.9, 1.0], [0, 255, 64, 255, 0, 0, 3, 1]),
]


@pytest.mark.parametrize("target,inputs,expected", SATURATION)
def test_float_to_int_saturates_like_cvt_rzi(target, inputs, expected):
    got = elementwise("cast", [np.array(inputs, dtype=np.float32)], ["fp32"], target)
    assert got.tolist() == expected


def test_float_to_bool_is_unordered_not_equal_zero():
    x = np.array([0.0, -0.0, np.nan, 1e-45], dtype=np.float32)
    assert elementwise("cast", [x], ["fp32"], "i1").tolist() == [0, 0, 1, 1]


def test_int_casts_extend_by_source_signedness():
    x = np.array([-1, 300, 255, -128], dtype=np.int32)
    assert elementwise("cast", [x], ["i32"], "i8").tolist() == [-1, 44, -1, -128]
    assert elementwise("cast", [x], ["i32"], "u64").tolist() == [2 ** 64 - 1, 300, 255, 2 ** 64 - 128]
    u = np.array([0xFF, 1, 0x80, 0], dtype=np.uint8)
    assert elementwise("cast", [u], ["u8"], "i32").tolist() == [255, 1, 128, 0]
    b = np.array([1, 0, 2, 0], dtype=np.uint8)
    assert elementwise("cast", [b], ["i1"], "i32").tolist() == [1, 0, 1, 0]


def test_int_to_float_rounds_to_nearest_even():
    x = np.array([16777217, 16777219, -16777217, 2 ** 62 + 2 ** 38 + 1], dtype=np.int64)
    got = elementwise("cast", [x], ["i64"], "fp32")
    assert got.tolist() == [16777216.0, 16777220.0, -16777216.0, float(np.float32(2 ** 62 + 2 ** 39))]
    big = np.array([2 ** 64 - 1, 2 ** 63 + 2 ** 40 + 1, 3, 2 ** 8 + 1], dtype=np.uint64)
    bf = floats.decode_bf16(elementwise("cast", [big], ["u64"], "bf16"))
    assert bf.tolist() == [2.0 ** 64, 2.0 ** 63, 3.0, 256.0]


def test_bitcast_round_trips_bits():
    x = np.array([1.0, -0.0, np.inf, 3.5], dtype=np.float32)
    bits = elementwise("bitcast", [x], ["fp32"], "i32")
    assert np.array_equal(bits, x.view(np.int32))
    assert np.array_equal(elementwise("bitcast", [bits], ["i32"], "fp32").view(np.int32), bits)
    h = np.array([0x3F80, 0xBF80, 0x7F80, 0x0001], dtype=np.uint16)
    assert np.array_equal(elementwise("bitcast", [h], ["bf16"], "i16"), h.view(np.int16))


def test_floor_flushes_subnormal_inputs():
    x = np.array([-1e-40, 1e-40, -2.5, 2.5], dtype=np.float32)
    got = elementwise("floor", [x], ["fp32"], "fp32")
    assert got.tolist() == [0.0, 0.0, -3.0, 2.0] and np.signbit(got[0])


@pytest.mark.parametrize("op,fn", [("exp", np.exp), ("log", np.log), ("sin", np.sin), ("cos", np.cos),
                                   ("sqrt", np.sqrt), ("exp2", np.exp2), ("log2", np.log2)])
def test_math_is_close_to_numpy(op, fn):
    x = np.random.default_rng().uniform(0.01, 20, 256).astype(np.float32)
    got = elementwise(op, [x], ["fp32"], "fp32")
    assert np.allclose(got, fn(x.astype(np.float64)), rtol=3e-7, atol=0)


def test_erf_and_rsqrt():
    x = np.random.default_rng().uniform(0.01, 3, 256)
    import math
    assert np.allclose(elementwise("erf", [x], ["fp64"], "fp64"), [math.erf(v) for v in x], rtol=1e-15)
    assert np.allclose(elementwise("rsqrt", [x], ["fp64"], "fp64"), 1 / np.sqrt(x), rtol=1e-15)
