"""`tl.extra.cuda.convert_custom_float8_sm70/sm80`: conversions between fp8e4b15
and fp16/fp32 done with integer operations, as Triton's inline PTX does them.

fp8e4b15 is fp8e4nv's layout (sign, 4 exponent bits, 3 mantissa bits) with
fp16's exponent bias, 15, and no NaN or infinity. A code becomes fp16 exactly
by moving its bits into place; the other way, |x| is clamped to 1.75 (NaN and
infinities too), the 8 bits after fp16's top bit are kept, rounding half away
from zero on the first bit dropped, and fp32 input is first truncated to fp16.
The sm70 and sm80 flavours of Triton differ only in the PTX they use (the
sm80 one takes `min.f16x2`), not in their results.
"""

from __future__ import annotations

from ....runtime.jit import jit
from ... import core

__all__ = ["convert_custom_float8_sm70", "convert_custom_float8_sm80"]


@jit
def _fp8e4b15_to_fp16(x):
    bits = x.to(core.uint8, bitcast=True).to(core.uint32)
    fp16_bits = ((bits & 0x80) << 8) | ((bits & 0x7F) << 7)
    return fp16_bits.to(core.uint16).to(core.float16, bitcast=True)


@jit
def _fp16_to_fp8e4b15(x):
    bits = x.to(core.uint16, bitcast=True).to(core.uint32)
    magnitude = core.minimum(bits & 0x7FFF, 0x3F00)  # 0x3F00 is 1.75, the largest code
    code = ((magnitude * 2 + 0x80) >> 8) | ((bits >> 8) & 0x80)
    return code.to(core.uint8).to(core.float8e4b15, bitcast=True)


@jit
def _convert_custom_float8(arg, dst_ty: core.constexpr):
    if arg.dtype == core.float8e4b15:
        result = _fp8e4b15_to_fp16(arg)
        if dst_ty.scalar == core.float32:
            result = result.to(core.float32)
    else:
        core.static_assert(arg.dtype == core.float16 or arg.dtype == core.float32,
                           "convert_custom_float8 converts fp8e4b15 to fp16/fp32 and fp16/fp32 to fp8e4b15")
        result = _fp16_to_fp8e4b15(arg.to(core.float16, fp_downcast_rounding="rtz"))
    return result


@jit
def convert_custom_float8_sm80(arg, dst_ty: core.constexpr, fp_downcast_rounding: core.constexpr = None):
    """`arg` (fp8e4b15) as fp16, or as fp32 when `dst_ty` is fp32; or `arg` (fp16
    or fp32) as fp8e4b15. `fp_downcast_rounding` is accepted and, as in Triton,
    unused: fp32 is truncated to fp16 first."""
    return _convert_custom_float8(arg, dst_ty)


@jit
def convert_custom_float8_sm70(arg, dst_ty: core.constexpr, fp_downcast_rounding: core.constexpr = None):
    """The same conversions as `convert_custom_float8_sm80`, with the same results."""
    return _convert_custom_float8(arg, dst_ty)
