"""`dot_scaled`: the matrix product of blocks in microscaling (OCP MX) formats, written
in Triton the way upstream Triton lowers it on GPUs without block-scaled tensor cores.

Each operand is decoded to a 16-bit float, bf16 unless either operand is fp16 (then
fp16), multiplied by its scales, and the two meet in an ordinary `dot` with fp32
accumulation; so the interpreter and every GPU backend run it with the ops they have.

- Element formats: `e2m1` (fp4, two codes per uint8 along K, the first in the low
  nibble; along M for the lhs or N for the rhs when `k_pack` is False), `e4m3` and
  `e5m2` (uint8 bit patterns or `float8e4nv` / `float8e5` blocks), `bf16` and `fp16`
  (uint16 bit patterns or `bfloat16` / `float16` blocks). Decoding is exact.
- Scales: `e8m0` exponents held in uint8, one per 32 elements along K, meaning
  2^(s - 127); `float8e4nv` scales, one per 16 elements, are their own value.
  An e8m0 scale becomes the compute dtype by placing its bits in the exponent field
  (bf16 directly; fp16 through fp32, rounded, so far-off scales become 0 or inf),
  and s = 0xFF means NaN unless `fast_math` (then it is the infinity its bits spell).
  The lhs scale is `[M, K // group]`; the rhs scale is `[N, K // group]`, not transposed.
- A rank-3 call is batched: every shape above gains a leading batch dimension.
"""

from __future__ import annotations

from ..errors import with_hint
from ..runtime.jit import constexpr_function, jit
from . import core

__all__ = ["dot_scaled"]

_FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")

# format -> (its float dtype, the unsigned dtype that may hold its bit patterns)
_FORMAT_DTYPES = {
    "e4m3": (core.float8e4nv, core.uint8),
    "e5m2": (core.float8e5, core.uint8),
    "bf16": (core.bfloat16, core.uint16),
    "fp16": (core.float16, core.uint16),
}


# -- compile-time checks and shapes ----------------------------------------------------

@constexpr_function
def _compute_dtype(lhs_format, rhs_format):
    """The dtype both operands are decoded to: fp16 when either is fp16, else bf16."""
    return core.float16 if "fp16" in (lhs_format, rhs_format) else core.bfloat16


@constexpr_function
def _format_dtype(side, fmt, ty):
    """The float dtype to view a `ty` block of format `fmt` as (None for e2m1, which
    stays packed uint8); an error naming `side` when `ty` cannot hold `fmt`."""
    if fmt == "e2m1":
        if ty != core.uint8:
            raise TypeError(f"dot_scaled: {side} in e2m1 must be packed two per uint8, got {core.dtype_name(ty)}")
        return None
    float_ty, bits_ty = _FORMAT_DTYPES[fmt]
    if ty not in (float_ty, bits_ty):
        raise TypeError(f"dot_scaled: {side} in {fmt} must be {core.dtype_name(float_ty)} or "
                        f"{core.dtype_name(bits_ty)}, got {core.dtype_name(ty)}")
    return float_ty


@constexpr_function
def _check_operands(lhs_shape, lhs_format, lhs_k_pack, rhs_shape, rhs_format, rhs_k_pack):
    """Raise unless lhs `[..., M, K]` and rhs `[..., K, N]` (counted in elements, after
    unpacking e2m1) fit together in known formats; only e2m1 may be packed off the K dimension."""
    for side, fmt in (("lhs", lhs_format), ("rhs", rhs_format)):
        if fmt not in _FORMATS:
            raise ValueError(f"dot_scaled: invalid {side}_format {fmt!r}; expected one of {', '.join(_FORMATS)}")
    lhs_shape, rhs_shape = [int(s) for s in lhs_shape], [int(s) for s in rhs_shape]
    shapes = f"lhs is {lhs_shape}, rhs is {rhs_shape}"
    if not (len(lhs_shape) == len(rhs_shape) and len(lhs_shape) in (2, 3)):
        raise AssertionError(f"dot_scaled: both inputs must be either 2D or 3D ({shapes})")
    if lhs_shape[:-2] != rhs_shape[:-2]:
        raise AssertionError(f"dot_scaled: lhs and rhs must have equal batch dimensions ({shapes})")
    for side, fmt, k_pack in (("lhs", lhs_format, lhs_k_pack), ("rhs", rhs_format, rhs_k_pack)):
        if not k_pack and fmt != "e2m1":
            raise AssertionError(f"dot_scaled: only e2m1 can be packed along a dimension other than K, "
                                 f"but {side}_k_pack is False and {side}_format is {fmt}")
    lhs_k = lhs_shape[-1] * (2 if lhs_format == "e2m1" and lhs_k_pack else 1)
    rhs_k = rhs_shape[-2] * (2 if rhs_format == "e2m1" and rhs_k_pack else 1)
    if lhs_k != rhs_k:
        raise AssertionError(f"dot_scaled: the reduction dimension must hold as many elements on both sides "
                             f"({shapes}: K = {lhs_k} for lhs, {rhs_k} for rhs)")
    return True


@constexpr_function
def _scale_group(side, scale_ty, scale_shape, rows_shape):
    """Elements per scale along K (32 for e8m0 in uint8, 16 for float8e4nv) after
    checking that `scale_shape` is `rows_shape` with K divided by it."""
    if scale_ty == core.uint8:
        group = 32
    elif scale_ty == core.float8e4nv:
        group = 16
    else:
        raise TypeError(f"dot_scaled: {side}_scale must be uint8 (e8m0) or float8e4nv, "
                        f"got {core.dtype_name(scale_ty)}")
    rows_shape = [int(s) for s in rows_shape]
    expected = rows_shape[:-1] + [rows_shape[-1] // group]
    if rows_shape[-1] % group or [int(s) for s in scale_shape] != expected:
        got = [str(int(s)) for s in scale_shape]
        raise with_hint(AssertionError(f"{side}_scale must be a tensor of shape {expected}. Got {got}"),
                        f"tl.dot_scaled takes one {side}_scale per {group} elements of K = {rows_shape[-1]}")
    return group


@constexpr_function
def _rows_by_k(shape, k_axis):
    """`shape` with its K axis (`k_axis`, counted from the end) moved last: the shape
    the operand's scale describes, one row per M (lhs) or N (rhs) index."""
    shape = [int(s) for s in shape]
    k_axis += len(shape)
    return [s for i, s in enumerate(shape) if i != k_axis] + [shape[k_axis]]


@constexpr_function
def _swap_last_two(rank):
    return list(range(rank - 2)) + [rank - 1, rank - 2]


@constexpr_function
def _scaled_axis(shape, axis, factor):
    """`shape` with the axis `axis` (counted from the end) multiplied by `factor`."""
    shape = [int(s) for s in shape]
    shape[axis] *= factor
    return shape


@constexpr_function
def _with_new_axis(shape, axis, size):
    """`shape` with an axis of `size` inserted just after `axis` (counted from the end)."""
    shape = [int(s) for s in shape]
    at = len(shape) + axis + 1
    return shape[:at] + [size] + shape[at:]


@constexpr_function
def _last_after(rank, axis):
    """The permutation moving the last of `rank` axes to just after `axis` (from the end)."""
    at = rank - 1 + axis + 1
    order = list(range(rank - 1))
    return order[:at] + [rank - 1] + order[at:]


@constexpr_function
def _field_bits(ty):
    """(mantissa bits, exponent bias) of bf16 or fp16."""
    return (7, 127) if ty == core.bfloat16 else (10, 15)


# -- decoding ---------------------------------------------------------------------------

@jit
def _e2m1_to_float(codes, dtype: core.constexpr):
    """The e2m1 values of the low four bits of `codes` (uint8), exactly, as `dtype`
    (bf16 or fp16). Codes 2..7 are normal numbers (exponent bias 1, one mantissa bit),
    1 is the subnormal 0.5, and 0 is zero; bit 3 is the sign."""
    MANTISSA: core.constexpr = _field_bits(dtype)[0]
    BIAS: core.constexpr = _field_bits(dtype)[1]
    HALF: core.constexpr = (BIAS - 1) << MANTISSA  # the bits of 0.5
    magnitude = (codes & 0x7).to(core.uint16)
    # The three magnitude bits land on the lowest exponent bit and the top mantissa
    # bit; adding the bits of 0.5 rebiases the exponent (code 2 = 1.0 = BIAS << MANTISSA).
    normal = (magnitude << (MANTISSA - 1)) + HALF
    bits = core.where(magnitude >= 2, normal, core.where(magnitude == 1, HALF, 0).to(core.uint16))
    sign = (codes & 0x8).to(core.uint16) << 12
    return (bits | sign).to(dtype, bitcast=True)


@jit
def _unpack_e2m1(packed, axis: core.constexpr, dtype: core.constexpr):
    """Two e2m1 values per uint8 of `packed`, the low nibble first, decoded to `dtype`
    and laid side by side along `axis` (-1 or -2), which doubles."""
    low = _e2m1_to_float(packed, dtype)
    high = _e2m1_to_float(packed >> 4, dtype)
    pairs = core.join(low, high)
    rank: core.constexpr = len(packed.shape)
    if axis != -1:
        pairs = core.permute(pairs, _last_after(rank + 1, axis))
    return core.reshape(pairs, _scaled_axis(packed.shape, axis, 2))


@jit
def _scale_to_float(scale, dtype: core.constexpr, fast_math: core.constexpr):
    """The factors that `scale` (uint8 e8m0 or float8e4nv) stands for, as `dtype`."""
    if scale.dtype == core.float8e4nv:
        return scale.to(dtype)
    if dtype == core.bfloat16:
        # bf16 has fp32's exponent field: s lands on it unchanged (0 -> 0.0, 0xFF -> inf)
        factor = (scale.to(core.uint16) << 7).to(core.bfloat16, bitcast=True)
    else:
        factor = (scale.to(core.uint32) << 23).to(core.float32, bitcast=True).to(dtype)
    if not fast_math:
        factor = core.where(scale == 0xFF, float("nan"), factor)
    return factor


@jit
def _repeat(values, axis: core.constexpr, count: core.constexpr):
    """`values` with every element along `axis` (counted from the end) repeated
    `count` times in place: [a, b] -> [a, a, ..., b, b, ...]."""
    spread = core.expand_dims(values, len(values.shape) + axis + 1)
    spread = core.broadcast_to(spread, _with_new_axis(values.shape, axis, count))
    return core.reshape(spread, _scaled_axis(values.shape, axis, count))


@jit
def _decode_operand(x, scale, fmt: core.constexpr, side: core.constexpr, k_axis: core.constexpr,
                    packed_axis: core.constexpr, dtype: core.constexpr, fast_math: core.constexpr):
    """Operand `x` of format `fmt` as `dtype`, multiplied by `scale` when there is one.
    `k_axis` is the operand's K axis (-1 for the lhs, -2 for the rhs), `packed_axis`
    the axis an e2m1 operand is packed along."""
    FLOAT_TYPE: core.constexpr = _format_dtype(side, fmt, x.dtype)
    if fmt == "e2m1":
        values = _unpack_e2m1(x, packed_axis, dtype)
    else:
        values = x.to(FLOAT_TYPE, bitcast=True).to(dtype)
    if scale is not None:
        GROUP: core.constexpr = _scale_group(side, scale.dtype, scale.shape, _rows_by_k(values.shape, k_axis))
        factor = _scale_to_float(scale, dtype, fast_math)
        if k_axis == -2:
            factor = core.permute(factor, _swap_last_two(len(factor.shape)))
        # An e8m0 factor is a power of two, so its product rounds only where it leaves
        # the range of `dtype`; a float8e4nv factor rounds like any product in `dtype`.
        values = values * _repeat(factor, k_axis, GROUP)
    return values


# -- the op -----------------------------------------------------------------------------

@jit
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
               lhs_k_pack=True, rhs_k_pack=True, out_dtype=core.float32):
    """`acc + (lhs * lhs_scale) @ (rhs * rhs_scale)` in fp32 for blocks in microscaling
    formats (see this module's docstring for the formats, scales and packing);
    `lhs_scale` / `rhs_scale` may be None (no scaling)."""
    core.static_assert(out_dtype == core.float32, "dot_scaled: only float32 is supported for out_dtype")
    _check_operands(lhs.shape, lhs_format, lhs_k_pack, rhs.shape, rhs_format, rhs_k_pack)
    COMPUTE: core.constexpr = _compute_dtype(lhs_format, rhs_format)
    a = _decode_operand(lhs, lhs_scale, lhs_format, "lhs", -1, -1 if lhs_k_pack else -2, COMPUTE, fast_math)
    b = _decode_operand(rhs, rhs_scale, rhs_format, "rhs", -2, -2 if rhs_k_pack else -1, COMPUTE, fast_math)
    return core.dot(a, b, acc, out_dtype=out_dtype)
