"""Host-side helpers for the OCP microscaling (MX) formats that `tl.dot_scaled` reads,
as torch tensors (Triton's `triton.tools.mxfp`):

- `MXFP4Tensor`: e2m1 (fp4) codes, one per uint8, made from floats by rounding to
  nearest even with saturation at +-6, read back as fp32, and packed two per byte
  (the first element in the low nibble) along a chosen dimension.
- `MXScaleTensor`: e8m0 scale exponents in uint8 (2^(e - 127), 255 is NaN), made from
  positive floats by taking the power of two at or below them.
"""

from __future__ import annotations

import torch

__all__ = ["MXFP4Tensor", "MXScaleTensor"]

E8M0_BIAS = 127
E8M0_NAN = 0xFF


def _e2m1_magnitudes() -> list[float]:
    """The magnitudes of e2m1 codes 0..7 (exponent bits 2-1 with bias 1, mantissa bit 0):
    0, 0.5 (subnormal), 1, 1.5, 2, 3, 4, 6."""
    values = []
    for code in range(8):
        exponent, mantissa = code >> 1, code & 1
        values.append(mantissa * 0.5 if exponent == 0 else (1 + mantissa * 0.5) * 2.0 ** (exponent - 1))
    return values


E2M1_MAGNITUDES = _e2m1_magnitudes()


def _shape(size) -> tuple:
    return tuple(size) if isinstance(size, (tuple, list, torch.Size)) else (size,)


class MXFP4Tensor:
    """e2m1 values held as one 4-bit code per uint8 in `data` (sign in bit 3)."""

    def __init__(self, data: torch.Tensor | None = None, size=None, device=None):
        """From `data` (a float tensor, rounded to e2m1) or, for `random()`, a `size` and
        `device`; one of the two must be given."""
        self.device = device
        if data is not None:
            if not isinstance(data, torch.Tensor):
                raise AssertionError(f"MXFP4Tensor: data must be a torch tensor, got {type(data).__name__}")
            self.device = data.device
            self.data = self._from_float(data)
        elif size is not None:
            self.size = _shape(size)
        else:
            raise ValueError("MXFP4Tensor needs data or size")

    def random(self) -> MXFP4Tensor:
        """Fill `data` with uniformly random codes (every e2m1 value, both zeros); returns self."""
        self.data = torch.randint(0, 16, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype) -> torch.Tensor:
        """The values of the codes as a float32 tensor (the only dtype offered)."""
        if dtype != torch.float32:
            raise AssertionError(f"MXFP4Tensor converts to torch.float32 only, not {dtype}")
        table = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=self.data.device)
        magnitude = table[(self.data & 0x7).long()]
        return torch.where((self.data & 0x8) != 0, -magnitude, magnitude)

    def _from_float(self, values: torch.Tensor) -> torch.Tensor:
        """e2m1 codes of `values`: nearest magnitude, ties to the even code (mantissa 0),
        beyond 6 (inf and NaN included) saturated to 6; the sign bit is kept, zeros too."""
        magnitude = values.abs().float()
        magnitude = torch.where(torch.isnan(magnitude), torch.full_like(magnitude, float("inf")), magnitude)
        code = torch.zeros(values.shape, dtype=torch.uint8, device=values.device)
        # the code is how many midpoints between neighbouring magnitudes lie below the
        # value; a value on a midpoint goes to the even code of the two
        for low in range(7):
            midpoint = (E2M1_MAGNITUDES[low] + E2M1_MAGNITUDES[low + 1]) / 2
            above = (magnitude > midpoint) | ((magnitude == midpoint) & (low % 2 == 1))
            code += above.to(torch.uint8)
        return code | (torch.signbit(values).to(torch.uint8) << 3)

    def to_packed_tensor(self, dim: int) -> torch.Tensor:
        """`data` packed two codes per uint8 along `dim`: element 2i in the low nibble,
        2i + 1 in the high one; an odd length is padded with a zero code."""
        data = self.data
        if not 0 <= dim < data.ndim:
            raise AssertionError(f"MXFP4Tensor: cannot pack along dim {dim} of a {data.ndim}-D tensor")
        if data.shape[dim] % 2:
            pad_shape = list(data.shape)
            pad_shape[dim] = 1
            data = torch.cat([data, torch.zeros(pad_shape, dtype=data.dtype, device=data.device)], dim)
        pairs = data.unflatten(dim, (-1, 2))
        return (pairs.select(dim + 1, 1) << 4) | pairs.select(dim + 1, 0)

    def unpack_packed_tensor(self, packed_tensor: torch.Tensor, dim: int, original_shape) -> torch.Tensor:
        """The codes of `packed_tensor` (packed along `dim` as `to_packed_tensor` does), one
        per uint8, cut to `original_shape[dim]` along `dim`."""
        pairs = torch.stack([packed_tensor & 0xF, (packed_tensor >> 4) & 0xF], dim=dim + 1)
        codes = pairs.flatten(dim, dim + 1)
        return codes.narrow(dim, 0, _shape(original_shape)[dim]).to(torch.uint8)


class MXScaleTensor:
    """e8m0 scales held as biased exponents in uint8 `data` (2^(e - 127); 255 is NaN)."""

    def __init__(self, data: torch.Tensor | None = None, size=None, device=None):
        """From `data` (a float tensor) or, for `random()`, a `size` and `device`."""
        self.device = device
        if data is not None:
            if not isinstance(data, torch.Tensor):
                raise AssertionError(f"MXScaleTensor: data must be a torch tensor, got {type(data).__name__}")
            self.device = data.device
            self.data = self._from_float(data)
        elif size is not None:
            self.size = _shape(size)
        else:
            raise ValueError("MXScaleTensor needs data or size")

    def random(self, low: float | None = None, high: float | None = None) -> MXScaleTensor:
        """Fill `data` with uniformly random exponents (never the NaN code), from the one of
        `low` to the one of `high` when given (log2 truncated toward zero); returns self."""
        first = 0 if low is None else max(0, int(torch.log2(torch.tensor(float(low)))) + E8M0_BIAS)
        last = 254 if high is None else min(254, max(0, int(torch.log2(torch.tensor(float(high)))) + E8M0_BIAS))
        if first > last:
            raise AssertionError(f"MXScaleTensor.random: low ({low}) must not be above high ({high})")
        self.data = torch.randint(first, last + 1, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype) -> torch.Tensor:
        """The scales as a float32 tensor: 2^(e - 127), NaN for 255."""
        if dtype != torch.float32:
            raise AssertionError(f"MXScaleTensor converts to torch.float32 only, not {dtype}")
        exponent = self.data.to(torch.float32) - E8M0_BIAS
        return torch.where(self.data == E8M0_NAN, torch.nan, torch.exp2(exponent))

    def _from_float(self, values: torch.Tensor) -> torch.Tensor:
        """e8m0 codes of `values`: floor(log2 v) + 127 clamped to 0..254 for finite v > 0,
        255 (NaN) for the rest."""
        values = values.float()
        valid = torch.isfinite(values) & (values > 0)
        # frexp: v = m * 2^e with 0.5 <= m < 1, so floor(log2 v) = e - 1 exactly
        _, exponent = torch.frexp(torch.where(valid, values, torch.ones_like(values)))
        biased = (exponent.to(torch.int32) - 1 + E8M0_BIAS).clamp(0, 254)
        return torch.where(valid, biased, torch.full_like(biased, E8M0_NAN)).to(torch.uint8)
