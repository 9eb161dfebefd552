"""`tritone.tools.mxfp`: E2M1 and E8M0 host tensors, checked against references
written here in plain Python (exact rationals, `math.frexp`)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch

from tritone.tools.mxfp import MXFP4Tensor, MXScaleTensor

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def e2m1_code(value: float) -> int:
    """The nearest E2M1 code by exhaustive search over exact rationals, ties to the
    code whose mantissa bit (its lowest bit) is 0; beyond 6 (and inf, nan) saturates."""
    sign = 8 if math.copysign(1.0, value) < 0 else 0
    if math.isnan(value) or math.isinf(value):
        return sign | 7
    target = Fraction(abs(value))
    distances = [(abs(Fraction(m) - target), code & 1, code) for code, m in enumerate(E2M1)]
    return sign | min(distances)[2]


def random_values(count: int) -> torch.Tensor:
    scale = torch.exp2(torch.randint(-4, 5, (count,)).float())
    return torch.randn(count) * scale


def test_encoding_matches_the_exhaustive_reference():
    values = torch.cat([random_values(3000), torch.tensor(
        [0.0, -0.0, 0.25, -0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.5, 7.0, -7.0, 1e30, float("inf"),
         -float("inf"), float("nan"), 2.0**-130])])
    codes = MXFP4Tensor(values).data
    assert codes.dtype == torch.uint8 and codes.shape == values.shape
    expected = [e2m1_code(v) for v in values.tolist()]
    assert codes.tolist() == expected


def test_every_code_decodes_to_its_value_and_encodes_back():
    fp4 = MXFP4Tensor(size=16)
    fp4.data = torch.arange(16, dtype=torch.uint8)
    values = fp4.to(torch.float32)
    assert values.tolist() == E2M1 + [-m for m in E2M1]
    assert torch.signbit(values).tolist() == [False] * 8 + [True] * 8  # code 8 is -0.0
    assert torch.equal(MXFP4Tensor(values).data, fp4.data)
    assert torch.equal(fp4.to(torch.bfloat16).float(), values) and torch.equal(fp4.to(torch.float16).float(), values)


def test_random_codes_cover_all_sixteen():
    data = MXFP4Tensor(size=(64, 32)).random().data
    assert data.shape == (64, 32) and data.dtype == torch.uint8
    assert set(data.flatten().tolist()) == set(range(16))


@pytest.mark.parametrize("shape, dim", [((10,), 0), ((6, 9), 1), ((7, 4), 0), ((3, 5, 7), 2), ((4, 5, 2), 1)])
def test_packing_puts_even_elements_low_and_pads_odd_lengths(shape, dim):
    fp4 = MXFP4Tensor(size=shape).random()
    packed = fp4.to_packed_tensor(dim=dim)
    half = (shape[dim] + 1) // 2
    assert packed.dtype == torch.uint8 and packed.shape[dim] == half
    moved = fp4.data.movedim(dim, -1).reshape(-1, shape[dim]).tolist()
    packed_rows = packed.movedim(dim, -1).reshape(-1, half).tolist()
    for row, packed_row in zip(moved, packed_rows):
        padded = row + [0] * (len(row) % 2)
        assert packed_row == [padded[2 * i] | padded[2 * i + 1] << 4 for i in range(half)]
    assert torch.equal(fp4.unpack_packed_tensor(packed, dim=dim, original_shape=shape), fp4.data)


def test_packing_along_a_missing_dimension_is_refused():
    fp4 = MXFP4Tensor(size=(4, 4)).random()
    with pytest.raises(ValueError, match="dim 2 is not a dimension of this 2-d MXFP4Tensor"):
        fp4.to_packed_tensor(dim=2)
    with pytest.raises(AssertionError):  # what Triton raises there
        fp4.to_packed_tensor(dim=-1)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="MXFP4Tensor needs data"):
        MXFP4Tensor()
    with pytest.raises(TypeError, match="MXScaleTensor takes a torch tensor"):
        MXScaleTensor([1.0, 2.0])
    with pytest.raises(ValueError, match=r"no power of two lies in \[low=3, high=3.5\]"):
        MXScaleTensor(size=4).random(low=3, high=3.5)
    with pytest.raises(ValueError, match="high must be positive"):
        MXScaleTensor(size=4).random(high=0.0)


def e8m0_code(value: float) -> int:
    if not math.isfinite(value) or value <= 0:
        return 255
    _, exponent = math.frexp(value)
    return min(max(exponent - 1 + 127, 0), 254)


def test_scale_encoding_is_the_power_of_two_at_or_below():
    values = torch.cat([torch.rand(2000) * torch.exp2(torch.randint(-140, 128, (2000,)).float()),
                        torch.exp2(torch.arange(-149, 128).float()),
                        torch.tensor([0.0, -0.0, -2.0, float("nan"), float("inf"), -float("inf"), 3.4e38])])
    values = values.to(torch.float64)
    values = torch.cat([values, torch.nextafter(values, torch.zeros_like(values))])  # just below each power of 2
    codes = MXScaleTensor(values).data
    assert codes.tolist() == [e8m0_code(v) for v in values.tolist()]


def test_every_scale_code_decodes_to_its_power_of_two():
    scales = MXScaleTensor(size=256)
    scales.data = torch.arange(256).to(torch.uint8)
    values = scales.to(torch.float32)
    assert values[:255].tolist() == [2.0 ** (code - 127) for code in range(255)]
    assert torch.isnan(values[255])
    assert torch.equal(MXScaleTensor(values[:255]).data, scales.data[:255])
    assert MXScaleTensor(size=3).to(torch.float32).tolist() == [1.0, 1.0, 1.0]


def test_random_scales_stay_within_the_bounds():
    assert set(MXScaleTensor(size=5000).random().data.flatten().tolist()) <= set(range(255))
    bounded = MXScaleTensor(size=(50, 40)).random(low=0.3, high=32.0).to(torch.float32)
    assert bounded.min() >= 0.5 and bounded.max() <= 32.0
    assert set(bounded.flatten().tolist()) == {2.0 ** e for e in range(-1, 6)}
