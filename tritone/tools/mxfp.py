"""Host-side tensors of the OCP microscaling (MX) formats, for preparing the
operands of `tl.dot_scaled` and checking its results (Triton's
`triton.tools.mxfp`, built on torch):

- `MXFP4Tensor`: 4-bit E2M1 floats (sign, 2 exponent bits, 1 mantissa bit;
  the values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives), one code per
  uint8 in `.data`, packed two per byte by `to_packed_tensor`.
- `MXScaleTensor`: 8-bit E8M0 block scales (a power of two, 2**(code - 127);
  code 255 is NaN), one per uint8 in `.data`.
"""

from __future__ import annotations

from typing import Any

import torch

# The magnitudes of E2M1 codes 0..7, in code order (code 8 + i is the negative of code i).
E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E2M1_MAX = 6.0
E8M0_BIAS = 127
E8M0_NAN = 255


class PackingDimensionError(ValueError, AssertionError):
    """`to_packed_tensor` was given a dimension the tensor does not have (an
    AssertionError too, which is what Triton raises there)."""


def _shape(size: Any) -> tuple[int, ...]:
    return tuple(size) if isinstance(size, (tuple, list, torch.Size)) else (int(size),)


def _check_data(data: Any, what: str) -> torch.Tensor:
    if not isinstance(data, torch.Tensor):
        raise TypeError(f"{what} takes a torch tensor of float values, got {type(data).__name__}")
    return data


class MXFP4Tensor:
    """E2M1 values: `MXFP4Tensor(values)` rounds a float tensor to the nearest
    E2M1 value (ties to the even mantissa; magnitudes beyond 6, infinities and
    NaNs become 6 with their sign; zeros keep their sign), and
    `MXFP4Tensor(size=shape, device=d)` makes a tensor of +0.0 to fill with
    `random()`. `.data` holds one code (0..15) per uint8."""

    def __init__(self, data: torch.Tensor | None = None, size: Any = None, device: Any = None):
        if data is not None:
            data = _check_data(data, "MXFP4Tensor")
            self.device = data.device
            self.data = self._from_float(data)
            self.size = tuple(data.shape)
        elif size is not None:
            self.device = device
            self.size = _shape(size)
            self.data = torch.zeros(self.size, dtype=torch.uint8, device=device)
        else:
            raise ValueError("MXFP4Tensor needs data (a float tensor) or size")

    def random(self) -> MXFP4Tensor:
        """Fill `.data` with codes drawn uniformly from all 16 (both zeros
        included); returns this tensor."""
        self.data = torch.randint(0, 16, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype: torch.dtype) -> torch.Tensor:
        """The values as a float tensor of `dtype` (every E2M1 value is exact in
        each torch float type)."""
        if not dtype.is_floating_point:
            raise TypeError(f"MXFP4Tensor.to converts to a float dtype, got {dtype}")
        magnitudes = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=self.data.device)
        table = torch.cat([magnitudes, -magnitudes])  # -magnitudes[0] is -0.0: code 8 keeps its sign
        return table[self.data.long()].to(dtype)

    def _from_float(self, values: torch.Tensor) -> torch.Tensor:
        """The E2M1 codes nearest `values` (see the class)."""
        wide = values.to(torch.float64)
        sign = torch.signbit(wide).to(torch.uint8)
        magnitude = torch.nan_to_num(wide.abs(), nan=E2M1_MAX, posinf=E2M1_MAX)
        # E2M1 values are spaced 0.5 below 2, 1 from 2 to 4 and 2 from 4 on. Rounding
        # to a multiple of the spacing with ties to even is rounding to the even
        # mantissa, because the multiple's parity is the mantissa bit in each range.
        spacing = torch.where(magnitude < 2, 0.5, torch.where(magnitude < 4, 1.0, 2.0)).to(torch.float64)
        rounded = (torch.round(magnitude / spacing) * spacing).clamp(max=E2M1_MAX)
        grid = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float64, device=values.device)
        code = torch.searchsorted(grid, rounded.contiguous()).to(torch.uint8)
        return (sign << 3) | code

    def to_packed_tensor(self, dim: int) -> torch.Tensor:
        """`.data` with two codes per uint8 along `dim` (element 2i in the low
        four bits, 2i + 1 in the high four); an odd length is padded with a
        +0.0 code at the end."""
        data = self.data
        if not 0 <= dim < data.ndim:
            raise PackingDimensionError(
                f"to_packed_tensor: dim {dim} is not a dimension of this {data.ndim}-d MXFP4Tensor")
        if data.shape[dim] % 2:
            padding = list(data.shape)
            padding[dim] = 1
            data = torch.cat([data, torch.zeros(padding, dtype=data.dtype, device=data.device)], dim=dim)
        pairs = data.unflatten(dim, (data.shape[dim] // 2, 2))
        low, high = pairs.select(dim + 1, 0), pairs.select(dim + 1, 1)
        return (high << 4) | low

    def unpack_packed_tensor(self, packed_tensor: torch.Tensor, dim: int, original_shape: Any) -> torch.Tensor:
        """The codes of a tensor `to_packed_tensor(dim)` made from a tensor of
        `original_shape`, one per uint8 (padding removed)."""
        packed = _check_data(packed_tensor, "unpack_packed_tensor")
        pairs = torch.stack([packed & 0xF, (packed >> 4) & 0xF], dim=dim + 1)
        codes = pairs.flatten(dim, dim + 1)
        length = _shape(original_shape)[dim]
        return codes.narrow(dim, 0, length).to(torch.uint8)


class MXScaleTensor:
    """E8M0 scales: `MXScaleTensor(values)` encodes positive finite floats as
    the power of two at or below them (2**floor(log2 v), clamped to the codes
    0..254), and zero, negative, infinite or NaN values as NaN (255);
    `MXScaleTensor(size=shape, device=d)` makes a tensor of 1.0 to fill with
    `random()`. `.data` holds one code per uint8."""

    def __init__(self, data: torch.Tensor | None = None, size: Any = None, device: Any = None):
        if data is not None:
            data = _check_data(data, "MXScaleTensor")
            self.device = data.device
            self.data = self._from_float(data)
            self.size = tuple(data.shape)
        elif size is not None:
            self.device = device
            self.size = _shape(size)
            self.data = torch.full(self.size, E8M0_BIAS, dtype=torch.uint8, device=device)
        else:
            raise ValueError("MXScaleTensor needs data (a float tensor) or size")

    def random(self, low: float | None = None, high: float | None = None) -> MXScaleTensor:
        """Fill `.data` with codes drawn uniformly from the powers of two in
        [low, high] (default: every code but NaN); returns this tensor."""
        smallest = 0 if low is None else max(0, _floor_log2(low, "low", ceiling=True) + E8M0_BIAS)
        largest = E8M0_NAN - 1 if high is None else min(E8M0_NAN - 1, _floor_log2(high, "high") + E8M0_BIAS)
        if smallest > largest:
            raise ValueError(f"MXScaleTensor.random: no power of two lies in [low={low}, high={high}]")
        self.data = torch.randint(smallest, largest + 1, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype: torch.dtype) -> torch.Tensor:
        """The scales as a float tensor of `dtype`, NaN for code 255 (float32
        and wider hold every code exactly)."""
        if not dtype.is_floating_point:
            raise TypeError(f"MXScaleTensor.to converts to a float dtype, got {dtype}")
        exponents = torch.arange(-E8M0_BIAS, E8M0_NAN - E8M0_BIAS, dtype=torch.float64, device=self.data.device)
        table = torch.cat([torch.exp2(exponents), torch.tensor([float("nan")], dtype=torch.float64,
                                                               device=self.data.device)])
        return table[self.data.long()].to(dtype)

    def _from_float(self, values: torch.Tensor) -> torch.Tensor:
        """The E8M0 codes of `values` (see the class)."""
        wide = values.to(torch.float64)
        invalid = ~torch.isfinite(wide) | (wide <= 0)
        # frexp gives v = m * 2**e with m in [0.5, 1): floor(log2 v) = e - 1, exactly.
        _, exponent = torch.frexp(torch.where(invalid, 1.0, wide))
        codes = (exponent.to(torch.int32) - 1 + E8M0_BIAS).clamp(0, E8M0_NAN - 1)
        return torch.where(invalid, E8M0_NAN, codes).to(torch.uint8)


def _floor_log2(value: float, name: str, ceiling: bool = False) -> int:
    """floor(log2 value) (ceil with `ceiling`) of a positive bound of `random`."""
    if not value > 0:
        raise ValueError(f"MXScaleTensor.random: {name} must be positive, got {value}")
    mantissa, exponent = torch.frexp(torch.tensor(float(value), dtype=torch.float64))
    floor = int(exponent) - 1
    return floor + 1 if ceiling and float(mantissa) != 0.5 else floor


__all__ = ["MXFP4Tensor", "MXScaleTensor"]
