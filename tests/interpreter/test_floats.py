"""Float format conversions: bf16, fp16 rtz, the fp8 family, tf32, exact fma."""

from fractions import Fraction

import numpy as np
import pytest
import torch
from kernel_builder import elementwise

from tritone.interpreter import floats
from tritone.interpreter import values as V
from tritone.ir.types import parse_type

# Random fp32 bit patterns include signalling NaNs, on which numpy's casts warn.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# The H200 run of TRITON_SEMANTICS.md section 13.
GPU_INPUTS = np.array([1, np.nan, -2, .5, 1e10, 1.9999, 500, 1e6, np.inf, -np.inf, 6e4, 1.005859375, 3.4e38,
                       65520, -1e-40, 464], dtype=np.float32)
GPU_OUTPUTS = {
    ("bf16", "rtne"): [1, np.nan, -2, .5, 9999220736, 2.0, 500, 999424, np.inf, -np.inf, 59904, 1.0078125, np.inf,
                       65536, -9.183549615799121e-41, 464],
    ("fp8e4nv", "rtne"): [1, np.nan, -2, .5, 448, 2, 448, 448, 448, -448, 448, 1, 448, 448, -0.0, 448],
    ("fp8e5", "rtne"): [1, np.nan, -2, .5, 57344, 2, 512, 57344, 57344, -57344, 57344, 1, 57344, 57344, -0.0, 448],
    ("fp16", "rtz"): [1, np.nan, -2, .5, 65504, 1.9990234375, 500, 65504, np.inf, -np.inf, 60000, 1.005859375, 65504,
                      65504, -0.0, 464],
}


def _same(a, b) -> bool:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return bool(np.all((np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))))


@pytest.mark.parametrize("target,rounding", list(GPU_OUTPUTS))
def test_cast_matches_gpu_table(target, rounding):
    stored = elementwise("cast", [GPU_INPUTS], ["fp32"], target, rounding=rounding)
    got = V.decode(stored, parse_type(target))
    assert _same(got, GPU_OUTPUTS[(target, rounding)])


TORCH_FP8 = {"fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2", "fp8e4b8": "float8_e4m3fnuz",
             "fp8e5b16": "float8_e5m2fnuz"}


@pytest.mark.parametrize("name", list(TORCH_FP8))
def test_fp8_decode_all_codes_matches_torch(name):
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    expected = codes.view(getattr(torch, TORCH_FP8[name])).float().numpy()
    assert _same(floats.decode_table(name), expected)


@pytest.mark.parametrize("name", ["fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16", "fp8e4b15"])
def test_fp8_codes_round_trip_through_a_cast(name):
    codes = np.arange(256, dtype=np.uint8)
    as_f32 = elementwise("cast", [codes], [name], "fp32")
    back = elementwise("cast", [as_f32], ["fp32"], name)
    values = floats.decode_table(name)
    finite = np.isfinite(values)
    assert _same(as_f32, values)
    assert np.array_equal(back[finite], codes[finite])
    assert np.isnan(values[back[np.isnan(values)]]).all()
    # Infinities saturate (cvt.rn.satfinite).
    top = floats.FORMATS[name].saturation
    assert _same(values[back[np.isinf(values)]], np.sign(values[np.isinf(values)]) * top)


def _nearest_even_reference(x: np.ndarray, name: str) -> np.ndarray:
    """Brute force: the nearest finite fp8 value, ties to the even code, saturating."""
    table = floats.decode_table(name).astype(np.float64)
    finite = np.isfinite(table)
    values, codes = table[finite], np.arange(256)[finite]
    distance = np.abs(x[:, None].astype(np.float64) - values[None, :])
    best = distance.min(axis=1, keepdims=True)
    candidates = distance == best
    even = candidates & (codes[None, :] % 2 == 0)
    pick = np.where(even.any(axis=1), even.argmax(axis=1), candidates.argmax(axis=1))
    out = values[pick]
    out = np.where(out == 0, np.copysign(0.0, x), out)
    top = floats.FORMATS[name].saturation
    out = np.where(np.abs(x) >= top, np.sign(x) * top, out)
    return np.where(np.isnan(x), np.nan, out)


@pytest.mark.parametrize("name", ["fp8e4nv", "fp8e5"])
def test_fp32_to_fp8_rounds_to_nearest_even_and_saturates(name):
    rng = np.random.default_rng()
    table = floats.decode_table(name).astype(np.float64)
    finite = np.sort(np.unique(table[np.isfinite(table)]))
    midpoints = (finite[1:] + finite[:-1]) / 2
    x = np.concatenate([finite, midpoints, np.nextafter(midpoints.astype(np.float32), np.inf),
                        np.nextafter(midpoints.astype(np.float32), -np.inf),
                        rng.standard_normal(2048) * rng.choice([1e-3, 1.0, 100.0, 1e5], 2048),
                        [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, 3e38]]).astype(np.float32)
    n = 1 << int(np.ceil(np.log2(len(x))))
    x = np.resize(x, n)
    got = V.decode(elementwise("cast", [x], ["fp32"], name), parse_type(name))
    assert _same(got, _nearest_even_reference(x, name))


def _random_fp32_bits(n: int) -> np.ndarray:
    rng = np.random.default_rng()
    bits = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 1, 0x807FFFFF, 0x7F7FFFFF,
                        0x3F808000, 0x3F818000, 0x7F7F8000], dtype=np.uint32)
    bits[:len(special)] = special
    return bits.view(np.float32)


def test_fp32_to_bf16_matches_torch_rounding():
    x = _random_fp32_bits(1 << 14)
    got = floats.decode_bf16(elementwise("cast", [x], ["fp32"], "bf16"))
    expected = torch.from_numpy(x).to(torch.bfloat16).float().numpy()
    assert _same(got, expected)


def test_fp32_to_bf16_rtz_truncates_the_low_half():
    # Toward zero, a bf16 is the fp32 with its low 16 bits cleared (never overflows to inf).
    x = _random_fp32_bits(1 << 14)
    got = floats.decode_bf16(elementwise("cast", [x], ["fp32"], "bf16", rounding="rtz"))
    expected = np.where(np.isnan(x), np.nan, (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32))
    assert _same(got, expected)


def test_fp32_to_fp16_rtz_against_reference():
    x = _random_fp32_bits(1 << 13)
    got = elementwise("cast", [x], ["fp32"], "fp16", rounding="rtz")
    nearest = x.astype(np.float16)
    too_far = np.abs(nearest.astype(np.float64)) > np.abs(x.astype(np.float64))
    expected = np.where(too_far, np.nextafter(nearest, np.float16(0)), nearest)
    expected = np.where(np.isinf(expected) & np.isfinite(x), np.copysign(np.float16(65504), x), expected)
    assert _same(got, expected)


def test_fp16_and_fp64_to_bf16_round_once():
    rng = np.random.default_rng()
    x16 = rng.standard_normal(1024).astype(np.float16)
    got = floats.decode_bf16(elementwise("cast", [x16], ["fp16"], "bf16"))
    assert _same(got, torch.from_numpy(x16).to(torch.bfloat16).float().numpy())
    x64 = rng.standard_normal(1024) * 1e3
    got = floats.decode_bf16(elementwise("cast", [x64], ["fp64"], "bf16"))
    # torch rounds fp64 to fp32 first, then to bf16: a value just below a bf16 midpoint can
    # round up to it in fp32 and then away (2295.99997 -> 2296 -> 2304, not 2288). Rounded to
    # fp32 toward zero with a sticky last bit (round to odd), the second rounding is exact.
    f32 = x64.astype(np.float32)
    inexact = f32.astype(np.float64) != x64
    bits = f32.view(np.uint32)
    bits = np.where(inexact & (np.abs(f32.astype(np.float64)) > np.abs(x64)), bits - np.uint32(1), bits)
    odd = np.where(inexact, bits | np.uint32(1), bits).astype(np.uint32).view(np.float32)
    assert _same(got, torch.from_numpy(odd).to(torch.bfloat16).double().numpy())


def test_bf16_arithmetic_rounds_each_result():
    rng = np.random.default_rng()
    a = torch.from_numpy(rng.standard_normal(1024).astype(np.float32)).to(torch.bfloat16)
    b = torch.from_numpy(rng.standard_normal(1024).astype(np.float32)).to(torch.bfloat16)
    stored = elementwise("mul", [a.view(torch.uint16).numpy(), b.view(torch.uint16).numpy()], ["bf16", "bf16"], "bf16")
    assert np.array_equal(stored, (a * b).view(torch.uint16).numpy())


def test_tf32_truncates_low_mantissa_bits():
    x = np.array([1.0 + 2 ** -10 + 2 ** -11, -3.0000002, np.inf, np.nan], dtype=np.float32)
    assert _same(floats.round_tf32(x), [1.0 + 2 ** -10, -3.0, np.inf, np.nan])


def test_fma_is_one_rounding():
    rng = np.random.default_rng()
    n = 512
    for name, dtype in (("fp32", np.float32), ("fp64", np.float64)):
        a = rng.standard_normal(n).astype(dtype)
        b = rng.standard_normal(n).astype(dtype)
        c = (-(a.astype(np.float64) * b) * (1 + rng.standard_normal(n) * 1e-9)).astype(dtype)
        got = elementwise("fma", [a, b, c], [name] * 3, name)
        for i in range(n):
            exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
            if name == "fp32":
                # Reference: nearest fp32 to the exact value, by comparing neighbours.
                guess = np.float32(float(exact))
                candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
                best = min(candidates, key=lambda v: (abs(Fraction(float(v)) - exact),
                                                      int(np.array(v).view(np.uint32)) & 1))
                assert got[i] == best
            else:
                assert got[i] == float(exact)
