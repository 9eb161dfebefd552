"""`tritone.tools.mxfp`: e2m1 codes and e8m0 scales as torch tensors, against values
computed here from the format definitions, and against `tl.dot_scaled`'s reading of them."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tritone.tools.mxfp import MXFP4Tensor, MXScaleTensor  # noqa: E402


def e2m1_value(code: int) -> float:
    sign = -1.0 if code & 0x8 else 1.0
    exponent, mantissa = (code >> 1) & 0x3, code & 0x1
    if exponent == 0:
        return sign * mantissa * 0.5
    return sign * (1 + mantissa / 2) * 2.0 ** (exponent - 1)


ALL_CODES = torch.arange(16, dtype=torch.uint8)


def test_every_code_reads_as_its_value():
    tensor = MXFP4Tensor(size=16)
    tensor.data = ALL_CODES.clone()
    got = tensor.to(torch.float32)
    assert got.dtype == torch.float32
    assert got.tolist() == [e2m1_value(c) for c in range(16)]
    assert torch.signbit(got[8]) and not torch.signbit(got[0])  # -0.0 stays negative


def nearest_even_code(x: float) -> int:
    """The e2m1 code nearest to `x`, ties to the even code, saturated, sign kept."""
    magnitude = abs(x) if not np.isnan(x) else np.inf
    distances = [(abs(magnitude - e2m1_value(c)), c % 2, c) for c in range(8)]
    code = min(distances)[2] if np.isfinite(magnitude) else 7
    return code | (8 if np.signbit(x) else 0)


def test_floats_round_to_the_nearest_code_ties_to_even():
    midpoints = [(e2m1_value(c) + e2m1_value(c + 1)) / 2 for c in range(7)]
    samples = midpoints + [-m for m in midpoints] + [0.0, -0.0, 0.1, -0.2, 6.5, 7.0, -1e9, np.inf, -np.inf, np.nan]
    samples += list(np.random.default_rng().uniform(-8, 8, 200))
    values = torch.tensor(samples, dtype=torch.float32)
    codes = MXFP4Tensor(values).data
    assert codes.dtype == torch.uint8
    assert codes.tolist() == [nearest_even_code(float(v)) for v in values]


def test_random_codes_round_trip_through_floats():
    tensor = MXFP4Tensor(size=(64, 48)).random()
    assert tensor.data.shape == (64, 48) and int(tensor.data.max()) <= 15
    assert torch.equal(MXFP4Tensor(tensor.to(torch.float32)).data, tensor.data)


@pytest.mark.parametrize("shape, dim", [((10,), 0), ((6, 7), 1), ((7, 6), 0), ((3, 4, 5), 2), ((4, 5, 3), 1)])
def test_packing_puts_the_first_element_in_the_low_nibble(shape, dim):
    tensor = MXFP4Tensor(size=shape).random()
    packed = tensor.to_packed_tensor(dim)
    codes = tensor.data.numpy()
    if shape[dim] % 2:
        pad = [(0, 0)] * len(shape)
        pad[dim] = (0, 1)
        codes = np.pad(codes, pad)
    even = np.take(codes, np.arange(0, codes.shape[dim], 2), axis=dim)
    odd = np.take(codes, np.arange(1, codes.shape[dim], 2), axis=dim)
    assert packed.dtype == torch.uint8
    assert np.array_equal(packed.numpy(), even | (odd << 4))
    assert torch.equal(tensor.unpack_packed_tensor(packed, dim, shape), tensor.data)


def test_packing_along_a_missing_dimension_is_refused():
    with pytest.raises(AssertionError, match="cannot pack along dim 2 of a 2-D tensor"):
        MXFP4Tensor(size=(4, 4)).random().to_packed_tensor(2)


def test_constructor_and_conversion_errors():
    with pytest.raises(ValueError, match="needs data or size"):
        MXFP4Tensor()
    with pytest.raises(ValueError, match="needs data or size"):
        MXScaleTensor()
    with pytest.raises(AssertionError, match="must be a torch tensor, got list"):
        MXFP4Tensor([1.0, 2.0])
    with pytest.raises(AssertionError, match="float32 only"):
        MXFP4Tensor(torch.ones(2)).to(torch.float16)
    with pytest.raises(AssertionError, match="float32 only"):
        MXScaleTensor(torch.ones(2)).to(torch.bfloat16)


def test_scales_are_the_power_of_two_at_or_below():
    rng = np.random.default_rng()
    values = np.concatenate([np.exp2(rng.uniform(-126, 127, 300)), [1.0, 0.75, 2.0**-127, 2.0**-140, 1e38]])
    codes = MXScaleTensor(torch.tensor(values, dtype=torch.float32)).data
    expected = np.clip(np.floor(np.log2(values.astype(np.float32).astype(np.float64))) + 127, 0, 254)
    assert codes.tolist() == expected.astype(int).tolist()


def test_non_positive_and_non_finite_scales_are_nan():
    values = torch.tensor([0.0, -0.0, -1.0, float("inf"), float("-inf"), float("nan")])
    assert MXScaleTensor(values).data.tolist() == [255] * 6


def test_scales_read_back_as_powers_of_two_and_nan():
    tensor = MXScaleTensor(size=256)
    tensor.data = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    got = tensor.to(torch.float32).double().numpy()
    assert np.isnan(got[255])
    assert np.array_equal(got[:255], np.exp2(np.arange(255) - 127.0))


def test_random_scales_stay_in_range_and_round_trip():
    tensor = MXScaleTensor(size=(40, 50)).random()
    assert int(tensor.data.max()) <= 254
    assert torch.equal(MXScaleTensor(tensor.to(torch.float32)).data, tensor.data)
    bounded = MXScaleTensor(size=1000).random(1 / 32, 32).data
    assert int(bounded.min()) >= 127 - 5 and int(bounded.max()) <= 127 + 5
    with pytest.raises(AssertionError, match="must not be above high"):
        MXScaleTensor(size=4).random(8, 2)


def test_dot_scaled_reads_what_the_helpers_write():
    """A kernel's `tl.dot_scaled` of packed e2m1 data and e8m0 scales made by the helpers
    equals the matmul of the values the helpers read back."""
    import tritone as triton
    import tritone.language as tl

    @triton.jit
    def kernel(A, A_SCALE, B, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
        m, n = tl.arange(0, M), tl.arange(0, N)
        a = tl.load(A + m[:, None] * (K // 2) + tl.arange(0, K // 2)[None, :])
        scale = tl.load(A_SCALE + m[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
        b = tl.load(B + tl.arange(0, K)[:, None] * N + n[None, :])
        tl.store(C + m[:, None] * N + n[None, :], tl.dot_scaled(a, scale, "e2m1", b, None, "bf16"))

    m, n, k = 16, 16, 64
    a = MXFP4Tensor(size=(m, k)).random()
    scale = MXScaleTensor(size=(m, k // 32)).random(1 / 64, 64)
    b = torch.randn(k, n).to(torch.bfloat16)
    c = torch.empty(m, n)
    kernel[(1,)](a.to_packed_tensor(1), scale.data, b, c, m, n, k)
    a_values = a.to(torch.float32).double() * scale.to(torch.float32).double().repeat_interleave(32, dim=1)
    expected = a_values @ b.double()
    bound = (k + 2) * 2.0**-24 * (a_values.abs() @ b.double().abs())
    assert bool(((c.double() - expected).abs() <= bound).all())
