"""`tl.math`: elementwise math builtins (also at `tl` level).

Math functions accept only the dtypes Triton accepts, with no implicit
conversion (SEMANTICS 7.1): `tl.exp(x_f16)` is an error, `tl.exp(1.0)` is an
fp32 exp. A tensor argument is checked before anything else; a literal is
turned into a tensor first and checked after.
"""

from __future__ import annotations

from . import core
from .core import _tensor_member, _unwrap_if_constexpr, builtin
from .semantic_compute import check_math_dtype

__all__ = ["abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log", "log2", "rsqrt",
           "sin", "sqrt", "sqrt_rn", "umulhi"]

_FLOATS = ("fp32", "fp64")
_FP32 = ("fp32",)
_WIDE_INTS = ("int32", "int64", "uint32", "uint64")


def _check_tensor_args(allowed, *args) -> None:
    for arg in args:
        if isinstance(arg, core.tensor):
            check_math_dtype(arg, allowed)


def _math_unary(op: str, allowed: tuple[str, ...], description: str):
    def fn(x, _semantic=None):
        _check_tensor_args(allowed, x)
        return _semantic.math_unary(op, _semantic.to_tensor(x), allowed)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Elementwise {description} of `x` ({' or '.join(allowed)})."
    return _tensor_member(builtin(fn))


exp = _math_unary("exp", _FLOATS, "exponential")
exp2 = _math_unary("exp2", _FLOATS, "exponential (base 2)")
log = _math_unary("log", _FLOATS, "natural logarithm")
log2 = _math_unary("log2", _FLOATS, "logarithm (base 2)")
cos = _math_unary("cos", _FLOATS, "cosine")
sin = _math_unary("sin", _FLOATS, "sine")
sqrt = _math_unary("sqrt", _FLOATS, "fast square root")
sqrt_rn = _math_unary("sqrt_rn", _FP32, "square root rounded to nearest (IEEE)")
rsqrt = _math_unary("rsqrt", _FLOATS, "inverse square root")
erf = _math_unary("erf", _FLOATS, "error function")
floor = _math_unary("floor", _FLOATS, "floor")
ceil = _math_unary("ceil", _FLOATS, "ceiling")


@_tensor_member
@builtin
def abs(x, _semantic=None):
    """Elementwise absolute value: floats clear the sign bit, signed ints keep
    INT_MIN, unsigned ints are returned unchanged."""
    return _semantic.abs(_semantic.to_tensor(x))


@builtin
def umulhi(x, y, _semantic=None):
    """The most significant N bits of the unsigned 2N-bit product of `x` and `y`
    (32- or 64-bit ints)."""
    _check_tensor_args(_WIDE_INTS, x, y)
    return _semantic.umulhi(_semantic.to_tensor(x), _semantic.to_tensor(y))


@builtin
def fdiv(x, y, ieee_rounding=False, _semantic=None):
    """`x / y` on floats of one dtype, without promotion; `ieee_rounding` has no
    effect (as in Triton 3.6)."""
    ieee_rounding = _unwrap_if_constexpr(ieee_rounding)
    return _semantic.fdiv(_semantic.to_tensor(x), _semantic.to_tensor(y), ieee_rounding)


@builtin
def div_rn(x, y, _semantic=None):
    """`x / y` rounded to nearest (IEEE), fp32 only."""
    _check_tensor_args(_FP32, x, y)
    return _semantic.div_rn(_semantic.to_tensor(x), _semantic.to_tensor(y))


@builtin
def fma(x, y, z, _semantic=None):
    """`x * y + z` with a single rounding; the three are promoted together."""
    return _semantic.fma(_semantic.to_tensor(x), _semantic.to_tensor(y), _semantic.to_tensor(z))
