"""`Semantic`: Triton's typing rules, and the one place that creates IR ops
from the language (docs/IR.md, ../shared/TRITON_SEMANTICS.md).

The frontend gives every builtin a `Semantic` (keyword `_semantic=`); the
builtins validate their arguments and call the methods here. Method names
follow upstream Triton's `TritonSemantic` where one exists, so readers who
know Triton find their way.

This module holds literal typing, promotion, elementwise arithmetic,
comparisons and casts; the mixins hold the rest by concept:
`semantic_shape.py` (construction and shapes), `semantic_memory.py` (loads,
stores, atomics) and `semantic_compute.py` (dot, reduce/scan, math, hints,
debugging).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

from ..ir.core import Region
from ..ir.types import block_type, dtype, type_text
from . import core as tl
from .core import _unwrap_if_constexpr, dtype_name, tensor
from .semantic_compute import ComputeSemantic
from .semantic_memory import MemorySemantic
from .semantic_shape import ShapeSemantic

__all__ = ["IncompatibleTypeErrorImpl", "Semantic", "constant_value", "literal_dtype"]


class IncompatibleTypeErrorImpl(TypeError):
    """Two operand types that no operator combines (float with `&`, pointer with pointer...)."""

    def __init__(self, type_a: dtype, type_b: dtype):
        self.type_a = type_a
        self.type_b = type_b
        super().__init__(f"invalid operands of type {dtype_name(type_a)} and {dtype_name(type_b)}")


# Largest finite value of each narrow float format; fp8 conversions saturate to it.
_MAX_FINITE = {
    "fp16": 65504.0,
    "bf16": math.ldexp(2.0 - 2.0 ** -7, 127),
    "fp32": math.ldexp(2.0 - 2.0 ** -23, 127),
    "fp8e4nv": 448.0,
    "fp8e5": 57344.0,
    "fp8e4b15": 1.875,
    "fp8e4b8": 240.0,
    "fp8e5b16": 57344.0,
}


def _round_float(value: float, ty: dtype) -> float:
    """`value` rounded to nearest-even in the format of `ty`; overflow gives inf
    for IEEE formats and saturates for fp8 (as the GPU's `satfinite` converts)."""
    if ty.is_fp64() or value != value or value == 0.0:
        return value
    saturate = ty.is_fp8()
    max_finite = _MAX_FINITE[type_text(ty)]
    if math.isinf(value):
        return math.copysign(max_finite, value) if saturate else value
    _, exp = math.frexp(abs(value))
    lowest_normal_exp = 1 - ty.exponent_bias
    quantum = math.ldexp(1.0, max(exp - 1, lowest_normal_exp) - ty.fp_mantissa_width)
    rounded = round(abs(value) / quantum) * quantum
    if rounded > max_finite:
        rounded = max_finite if saturate else math.inf
    return math.copysign(rounded, value)


def constant_value(value: Any, ty: dtype) -> int | float | bool:
    """The attribute value of a `constant` op of scalar type `ty` holding `value`:
    ints wrapped into the type's range, floats rounded to the type, bools for i1."""
    if isinstance(value, bool):
        value = int(value)
    if ty.is_ptr():
        return int(value)
    if ty.is_floating():
        return _round_float(float(value), ty)
    if isinstance(value, float):
        # float -> int follows the GPU's saturating conversion (NaN -> 0)
        if value != value:
            value = 0
        elif math.isinf(value):
            low, high = ty.int_range()
            value = high if value > 0 else low
        else:
            value = int(value)
    if ty.is_bool():
        return value != 0
    bits = ty.int_bitwidth
    value &= (1 << bits) - 1
    if ty.is_int_signed() and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _is_python_scalar(value) -> bool:
    return isinstance(value, (bool, int, float))


def literal_dtype(value: bool | int | float) -> dtype:
    """The dtype Triton gives a Python literal (SEMANTICS 1.4)."""
    if isinstance(value, bool):
        return tl.int1
    if isinstance(value, int):
        if -2**31 <= value < 2**31:
            return tl.int32
        if 2**31 <= value < 2**32:
            return tl.uint32
        if -2**63 <= value < 2**63:
            return tl.int64
        if 2**63 <= value < 2**64:
            return tl.uint64
        raise ValueError(f"Nonrepresentable integer {value}.")
    magnitude = abs(value)
    if value != value or magnitude == 0.0 or math.isinf(magnitude) or 2.0 ** -126 <= magnitude <= _MAX_FINITE["fp32"]:
        return tl.float32
    return tl.float64


class Semantic(ShapeSemantic, MemorySemantic, ComputeSemantic):
    """Typing rules and IR construction for one function being compiled.

    `builder` is an `ir.core.Builder` positioned where ops go. `options` is a
    dict: `debug` (emit device asserts and overflow checks), `sanitize_overflow`
    (default True), `fp32_default` (default `input_precision` of `dot`; the
    runtime's `default_dot_input_precision` is read too), `target` (`"sm_90"`,
    `90`, a `GPUTarget`, or None when no GPU target is fixed) and
    `max_num_imprecise_acc_default` (fp8 dots; by default 2**30 on sm_90).

    The codegen sets `call_jit_function`, a callable `(fn, args) -> results`
    that compiles a call of the `@jit` function `fn` at the builder's insertion
    point (used for combine functions and tensor methods written in Triton).
    """

    def __init__(self, builder, options: dict | None = None):
        self.builder = builder
        self.options = dict(options or {})
        self.call_jit_function: Callable[[Any, list], Any] | None = None

    # -- options ----------------------------------------------------------
    @property
    def debug(self) -> bool:
        return bool(self.options.get("debug", False))

    @property
    def sanitize_overflow(self) -> bool:
        return bool(self.options.get("sanitize_overflow", True))

    @property
    def target_capability(self) -> int | None:
        """Compute capability of the CUDA target (`90` for `"sm_90a"` or a
        `GPUTarget("cuda", 90, 32)`); None for the interpreter or no target."""
        target = self.options.get("target")
        backend = getattr(target, "backend", None)
        if backend is not None:
            target = target.arch if backend == "cuda" else None
        if target is None:
            return None
        if isinstance(target, int):
            return target
        digits = "".join(ch for ch in str(target) if ch.isdigit())
        return int(digits) if digits else None

    @property
    def fp32_default(self) -> str | None:
        """The `input_precision` of `tl.dot` when the call gives none (TRITON_F32_DEFAULT):
        the `fp32_default` option, or a `default_dot_input_precision` other than tf32."""
        explicit = self.options.get("fp32_default")
        if explicit is not None:
            return explicit
        configured = self.options.get("default_dot_input_precision")
        return configured if configured not in (None, "tf32") else None

    # -- building ops -----------------------------------------------------
    def create(self, op_name: str, operands: list[tensor], result_type: dtype, /, **attrs) -> tensor:
        """Create the single-result op `op_name` and return its result as a tensor."""
        value = self.builder.create_value(op_name, [t.handle for t in operands], result_type, attrs)
        return tensor(value, result_type)

    def create_void(self, op_name: str, operands: list[tensor], /, **attrs) -> None:
        """Create an op without results (stores, prints, asserts...)."""
        self.builder.create(op_name, [t.handle for t in operands], [], attrs)

    def create_block(self, element_ty: dtype, shape) -> block_type:
        """A block type of a shape checked as Triton checks it (powers of two, numel limit)."""
        shape = [int(_unwrap_if_constexpr(s)) for s in shape]
        tl.validate_block_shape(shape)
        return block_type(element_ty, shape)

    @staticmethod
    def shaped(element_ty: dtype, shape) -> dtype:
        """`element_ty` itself for an empty shape, else a block of that shape."""
        shape = [int(_unwrap_if_constexpr(s)) for s in shape]
        return block_type(element_ty, shape) if shape else element_ty

    @staticmethod
    def _bool_like(x: tensor) -> dtype:
        return x.type.with_element_ty(tl.int1) if x.type.is_block() else tl.int1

    # -- constants and literals ---------------------------------------------
    def scalar_constant(self, value, ty: dtype) -> tensor:
        """A `constant` op of scalar type `ty`."""
        if ty is None:
            raise ValueError("dtype must be specified when value is not a tensor")
        return self.create("constant", [], ty, value=constant_value(value, ty.scalar))

    def block_constant(self, value, ty: dtype) -> tensor:
        """A `constant` op of `ty` (scalar or block) with every element `value`."""
        return self.create("constant", [], ty, value=constant_value(value, ty.scalar))

    def to_tensor(self, x, check_type: bool = True):
        """A Python value as a tensor, typed as Triton types literals (SEMANTICS 1.4);
        tensors pass through. Other values raise TypeError (or pass through
        unchanged when `check_type` is False)."""
        x = _unwrap_if_constexpr(x)
        if isinstance(x, tensor):
            return x
        if _is_python_scalar(x):
            return self.scalar_constant(x, literal_dtype(x))
        if check_type:
            raise TypeError(f"cannot convert {x!r} of type {type(x).__name__} to tensor: kernel values are "
                            f"blocks and int, float or bool scalars")
        return x

    def to_cond(self, cond) -> tensor:
        """The i1 scalar tested by a run-time `if`/`while`: blocks of one element are
        reshaped to a scalar, others are rejected; non-i1 values compare `!= 0`."""
        cond = self.to_tensor(cond)
        if cond.type.is_block():
            if cond.type.numel != 1:
                raise ValueError("Boolean value of Tensor with more than one value is ambiguous")
            warnings.warn("If conditional called with multidimensional Tensor instead of scalar; "
                          "please use tl.reshape(x, []) to convert it to a scalar", stacklevel=2)
            cond = self.unsplat(cond)
        if not cond.dtype.is_bool():
            cond = self.cast(cond, tl.int1)
        return cond

    # -- promotion ----------------------------------------------------------
    @staticmethod
    def integer_promote_impl(a_ty: dtype, b_ty: dtype) -> dtype:
        """C's usual arithmetic conversions on (width, signedness) (SEMANTICS 1.2)."""
        a_bits, b_bits = a_ty.int_bitwidth, b_ty.int_bitwidth
        a_signed, b_signed = a_ty.is_int_signed(), b_ty.is_int_signed()
        if a_signed == b_signed:
            return a_ty if a_bits > b_bits else b_ty
        if not a_signed:
            return a_ty if a_bits >= b_bits else b_ty
        return b_ty if b_bits >= a_bits else a_ty

    def computation_type_impl(self, a_ty: dtype, a_is_scalar: bool, b_ty: dtype, b_is_scalar: bool,
                              div_or_mod: bool) -> dtype:
        """The dtype both operands of an arithmetic op convert to (SEMANTICS 1.3)."""
        if a_is_scalar != b_is_scalar:
            scalar_ty, tensor_ty = (a_ty, b_ty) if a_is_scalar else (b_ty, a_ty)
            if scalar_ty.kind() <= tensor_ty.kind():
                if div_or_mod and (tensor_ty.is_fp16() or tensor_ty.is_bf16()):
                    return tl.float32
                return tensor_ty
        if a_ty.is_fp64() or b_ty.is_fp64():
            return tl.float64
        if a_ty.is_fp32() or b_ty.is_fp32():
            return tl.float32
        if a_ty.is_fp16() or b_ty.is_fp16():
            return tl.float32 if div_or_mod else tl.float16
        if a_ty.is_bf16() and b_ty.is_bf16():
            return tl.float32 if div_or_mod else tl.bfloat16
        if a_ty.is_bf16() or b_ty.is_bf16():
            return tl.float32
        if a_ty.is_fp8() and b_ty.is_fp8():
            return a_ty if a_ty == b_ty else tl.float16
        if not a_ty.is_int() or not b_ty.is_int():
            raise TypeError(f"unexpected type {dtype_name(a_ty)} and {dtype_name(b_ty)}")
        if div_or_mod and a_ty.is_int_signed() != b_ty.is_int_signed():
            raise TypeError(f"Cannot use /, #, or % with {a_ty!r} and {b_ty!r} because they have different "
                            "signedness;this is unlikely to result in a useful answer. "
                            "Cast them to the same signedness.")
        return self.integer_promote_impl(a_ty, b_ty)

    @staticmethod
    def check_ptr_type_impl(type_a: dtype, type_b: dtype, allow_ptr_a: bool) -> None:
        if type_a.is_ptr():
            if not allow_ptr_a:
                raise IncompatibleTypeErrorImpl(type_a, type_b)
            if type_b.is_ptr() and type_a != type_b:
                raise IncompatibleTypeErrorImpl(type_a, type_b)
            if type_b.is_floating():
                raise IncompatibleTypeErrorImpl(type_a, type_b)

    def binary_op_type_checking_impl(self, lhs, rhs, allow_lhs_ptr: bool = False, allow_rhs_ptr: bool = False,
                                     arithmetic_check: bool = True, div_or_mod: bool = False
                                     ) -> tuple[tensor, tensor]:
        """Convert both operands to their computation type and broadcast them.

        A Python number on one side is a "scalar" (SEMANTICS 1.5): it does not
        widen the tensor's dtype when its kind is not higher, and it must fit
        the resulting integer type."""
        lhs = _unwrap_if_constexpr(lhs)
        rhs = _unwrap_if_constexpr(rhs)
        lhs_is_scalar = _is_python_scalar(lhs)
        rhs_is_scalar = _is_python_scalar(rhs)
        # Literals are only materialised once their dtype is known.
        lhs_sca_ty = literal_dtype(lhs) if lhs_is_scalar else self.to_tensor(lhs).type.scalar
        rhs_sca_ty = literal_dtype(rhs) if rhs_is_scalar else self.to_tensor(rhs).type.scalar
        self.check_ptr_type_impl(lhs_sca_ty, rhs_sca_ty, allow_lhs_ptr)
        self.check_ptr_type_impl(rhs_sca_ty, lhs_sca_ty, allow_rhs_ptr)
        if not arithmetic_check or lhs_sca_ty.is_ptr() or rhs_sca_ty.is_ptr():
            return self.broadcast_impl_value(self.to_tensor(lhs), self.to_tensor(rhs))
        ret_ty = self.computation_type_impl(lhs_sca_ty, lhs_is_scalar, rhs_sca_ty, rhs_is_scalar, div_or_mod)
        for is_scalar, value in ((lhs_is_scalar, lhs), (rhs_is_scalar, rhs)):
            if not is_scalar:
                continue
            if value < 0 and ret_ty.is_int_unsigned():
                raise ValueError("Cannot perform a binary operation between an unsigned tensor and a negative "
                                 "scalar. Perform a explicit cast on one of them.")
            if ret_ty.is_int():
                low, high = ret_ty.int_range()
                if not low <= value <= high:
                    raise ValueError(f"Scalar {value} is out of range for type {dtype_name(ret_ty)}")
        lhs_t = self.scalar_constant(lhs, ret_ty) if lhs_is_scalar else self.cast(lhs, ret_ty)
        rhs_t = self.scalar_constant(rhs, ret_ty) if rhs_is_scalar else self.cast(rhs, ret_ty)
        return self.broadcast_impl_value(lhs_t, rhs_t)

    # -- arithmetic -----------------------------------------------------------
    def _check_overflow(self, lhs: tensor, rhs: tensor, op_name: str) -> None:
        """In debug mode, assert that an int op narrower than 64 bits does not wrap
        (recomputed in i64, SEMANTICS 2)."""
        ty = lhs.type.scalar
        if not self.debug or not self.sanitize_overflow or ty.int_bitwidth >= 64:
            return
        wide_lhs = self.cast(lhs, tl.int64)
        wide_rhs = self.cast(rhs, tl.int64)
        wide = self.create(op_name, [wide_lhs, wide_rhs], wide_lhs.type)
        low, high = ty.int_range()
        in_range = self.and_(self.less_equal(wide, self.scalar_constant(high, tl.int64)),
                             self.greater_equal(wide, self.scalar_constant(low, tl.int64)))
        self.device_assert(in_range, f"int{ty.int_bitwidth} overflow detected for operation {op_name}", None)

    def add(self, input, other, sanitize_overflow: bool = True) -> tensor:
        input, other = self.binary_op_type_checking_impl(input, other, True, True)
        input_ty, other_ty = input.type.scalar, other.type.scalar
        if input_ty.is_ptr() and other_ty.is_ptr():
            raise TypeError("cannot add pointers together")
        if other_ty.is_ptr():
            input, other = other, input
            input_ty, other_ty = other_ty, input_ty
        if input_ty.is_ptr():
            if other_ty.is_int_unsigned() and other_ty.int_bitwidth < 64:
                # addptr reads its offset as signed: zero-extend unsigned offsets first
                other = self.cast(other, tl.int64)
            return self.create("addptr", [input, other], input.type)
        if input_ty.is_floating():
            return self.create("add", [input, other], input.type)
        if input_ty.is_int():
            if sanitize_overflow:
                self._check_overflow(input, other, "add")
            return self.create("add", [input, other], input.type)
        raise TypeError(f"unexpected type {dtype_name(input_ty)}")

    def sub(self, input, other, sanitize_overflow: bool = True) -> tensor:
        input, other = self.binary_op_type_checking_impl(input, other, True, False)
        scalar_ty = input.type.scalar
        if scalar_ty.is_ptr():
            return self.add(input, self.minus(other), sanitize_overflow=False)
        if scalar_ty.is_floating():
            return self.create("sub", [input, other], input.type)
        if scalar_ty.is_int():
            if sanitize_overflow:
                self._check_overflow(input, other, "sub")
            return self.create("sub", [input, other], input.type)
        raise TypeError(f"unexpected type {dtype_name(scalar_ty)}")

    def mul(self, input, other, sanitize_overflow: bool = True) -> tensor:
        input, other = self.binary_op_type_checking_impl(input, other)
        scalar_ty = input.type.scalar
        if scalar_ty.is_floating():
            return self.create("mul", [input, other], input.type)
        if scalar_ty.is_int():
            if sanitize_overflow:
                self._check_overflow(input, other, "mul")
            return self.create("mul", [input, other], input.type)
        raise TypeError(f"unexpected type {dtype_name(scalar_ty)}")

    def truediv(self, input, other) -> tensor:
        input, other = self.binary_op_type_checking_impl(input, other, False, False, True, True)
        scalar_ty = input.type.scalar
        if scalar_ty.is_int():
            # int / int divides in fp32, whatever the width
            input = self.cast(input, tl.float32)
            other = self.cast(other, tl.float32)
        elif not scalar_ty.is_floating():
            raise TypeError(f"unexpected type {dtype_name(scalar_ty)}")
        return self.create("div", [input, other], input.type)

    def floordiv(self, input, other) -> tensor:
        input, other = self.binary_op_type_checking_impl(input, other, False, False, True, True)
        scalar_ty = input.type.scalar
        if scalar_ty.is_int():
            return self.create("floordiv", [input, other], input.type)
        raise TypeError(f"unexpected type {dtype_name(scalar_ty)}")

    def fdiv(self, input: tensor, other: tensor, ieee_rounding: bool) -> tensor:
        """`tl.fdiv`: floats only, no promotion (only broadcasting). `ieee_rounding`
        has no effect, as in Triton 3.6."""
        input_ty, other_ty = input.type.scalar, other.type.scalar
        if not input_ty.is_floating() or not other_ty.is_floating():
            raise TypeError("both operands of fdiv must have floating scalar type")
        input, other = self.binary_op_type_checking_impl(input, other, False, False, False, True)
        if input.type.scalar != other.type.scalar:
            raise TypeError(f"fdiv operands must have the same dtype, got {dtype_name(input_ty)} "
                            f"and {dtype_name(other_ty)}")
        return self.create("div", [input, other], input.type)

    def mod(self, input, other) -> tensor:
        input, other = self.binary_op_type_checking_impl(input, other, False, False, True, True)
        scalar_ty = input.type.scalar
        if scalar_ty.is_floating() or scalar_ty.is_int():
            return self.create("mod", [input, other], input.type)
        raise TypeError(f"unexpected type {dtype_name(scalar_ty)}")

    def _min_max(self, op: str, x, y, propagate_nan) -> tensor:
        x, y = self.binary_op_type_checking_impl(x, y)
        scalar_ty = x.dtype
        if scalar_ty.is_floating():
            mode = int(_unwrap_if_constexpr(propagate_nan))
            if mode not in (tl.PropagateNan.NONE, tl.PropagateNan.ALL):
                raise ValueError(f"Unexpected propagate_nan {propagate_nan}")
            return self.create(op, [x, y], x.type, propagate_nan=mode == tl.PropagateNan.ALL)
        if scalar_ty.is_int():
            return self.create(op, [x, y], x.type, propagate_nan=False)
        raise TypeError(f"Unexpected dtype {dtype_name(scalar_ty)}")

    def minimum(self, x, y, propagate_nan=tl.PropagateNan.NONE) -> tensor:
        return self._min_max("min", x, y, propagate_nan)

    def maximum(self, x, y, propagate_nan=tl.PropagateNan.NONE) -> tensor:
        return self._min_max("max", x, y, propagate_nan)

    def clamp(self, x, low, high, propagate_nan=tl.PropagateNan.NONE) -> tensor:
        """`min(max(x, low), high)`; with PropagateNan.ALL a NaN `x` gives NaN (bounds
        that are NaN are ignored either way)."""
        low, high = self.binary_op_type_checking_impl(low, high)
        x, low = self.binary_op_type_checking_impl(x, low)
        x, high = self.binary_op_type_checking_impl(x, high)
        low, high = self.broadcast_impl_value(low, high)
        x, low = self.broadcast_impl_value(x, low)
        x, high = self.broadcast_impl_value(x, high)
        if not x.dtype.is_floating():
            raise TypeError(f"Unexpected dtype {dtype_name(x.dtype)}. Only floating point clamp is supported")
        mode = int(_unwrap_if_constexpr(propagate_nan))
        if mode not in (tl.PropagateNan.NONE, tl.PropagateNan.ALL):
            raise ValueError(f"Unexpected propagate_nan {propagate_nan}")
        clamped = self.create("min", [self.create("max", [x, low], x.type, propagate_nan=False), high], x.type,
                              propagate_nan=False)
        if mode == tl.PropagateNan.ALL:
            is_nan = self.create("cmp", [x, x], self._bool_like(x), pred="ne")
            clamped = self.create("select", [is_nan, x, clamped], x.type)
        return clamped

    # -- bitwise ----------------------------------------------------------------
    def bitwise_op_type_checking_impl(self, input, other) -> tuple[tensor, tensor]:
        input, other = self.binary_op_type_checking_impl(input, other)
        input_ty, other_ty = input.type.scalar, other.type.scalar
        if not input_ty.is_int() or not other_ty.is_int():
            raise IncompatibleTypeErrorImpl(input_ty, other_ty)
        ret_ty = self.integer_promote_impl(input_ty, other_ty)
        return self.cast(input, ret_ty), self.cast(other, ret_ty)

    def and_(self, input, other) -> tensor:
        input, other = self.bitwise_op_type_checking_impl(input, other)
        return self.create("and", [input, other], input.type)

    def or_(self, input, other) -> tensor:
        input, other = self.bitwise_op_type_checking_impl(input, other)
        return self.create("or", [input, other], input.type)

    def xor_(self, input, other) -> tensor:
        input, other = self.bitwise_op_type_checking_impl(input, other)
        return self.create("xor", [input, other], input.type)

    def shl(self, input, other) -> tensor:
        input, other = self.bitwise_op_type_checking_impl(input, other)
        return self.create("shl", [input, other], input.type)

    def ashr(self, input, other) -> tensor:
        input, other = self.bitwise_op_type_checking_impl(input, other)
        return self.create("ashr", [input, other], input.type)

    def lshr(self, input, other) -> tensor:
        input, other = self.bitwise_op_type_checking_impl(input, other)
        return self.create("lshr", [input, other], input.type)

    def logical_and(self, input: tensor, other: tensor) -> tensor:
        """`and` on tensors: operands are bitcast to i1 (so only 1-bit values work)."""
        input, other = self.to_tensor(input), self.to_tensor(other)
        if not input.dtype.is_bool():
            input = self.bitcast(input, tl.int1)
        if not other.dtype.is_bool():
            other = self.bitcast(other, tl.int1)
        return self.and_(input, other)

    def logical_or(self, input: tensor, other: tensor) -> tensor:
        input, other = self.to_tensor(input), self.to_tensor(other)
        if not input.dtype.is_bool():
            input = self.bitcast(input, tl.int1)
        if not other.dtype.is_bool():
            other = self.bitcast(other, tl.int1)
        return self.or_(input, other)

    def not_(self, input: tensor) -> tensor:
        input = self.to_tensor(input)
        if not input.dtype.is_bool():
            input = self.bitcast(input, tl.int1)
        return self.invert(input)

    # -- unary ------------------------------------------------------------------
    def plus(self, input: tensor) -> tensor:
        return input

    def minus(self, input) -> tensor:
        """`-x` as `0 - x` in x's dtype (so `-(+0.0)` is `+0.0`)."""
        input = self.to_tensor(input)
        scalar_ty = input.type.scalar
        if scalar_ty.is_ptr():
            raise ValueError(f"wrong type argument to unary minus ({scalar_ty!r})")
        return self.sub(self.scalar_constant(0, scalar_ty), input, True)

    def invert(self, input) -> tensor:
        """`~x` as `x ^ all-ones`; logical not on i1."""
        input = self.to_tensor(input)
        scalar_ty = input.type.scalar
        if scalar_ty.is_ptr() or scalar_ty.is_floating():
            raise ValueError(f"wrong type argument to unary invert ({scalar_ty!r})")
        return self.xor_(input, self.scalar_constant(-1, scalar_ty))

    # -- comparisons --------------------------------------------------------------
    def _compare(self, pred: str, input, other) -> tensor:
        input, other = self.binary_op_type_checking_impl(input, other)
        scalar_ty = input.type.scalar
        if not scalar_ty.is_floating() and not scalar_ty.is_int():
            raise TypeError(f"unexpected type {dtype_name(scalar_ty)}")
        return self.create("cmp", [input, other], self._bool_like(input), pred=pred)

    def greater_than(self, input, other) -> tensor:
        return self._compare("gt", input, other)

    def greater_equal(self, input, other) -> tensor:
        return self._compare("ge", input, other)

    def less_than(self, input, other) -> tensor:
        return self._compare("lt", input, other)

    def less_equal(self, input, other) -> tensor:
        return self._compare("le", input, other)

    def equal(self, input, other) -> tensor:
        return self._compare("eq", input, other)

    def not_equal(self, input, other) -> tensor:
        return self._compare("ne", input, other)

    # -- selection -----------------------------------------------------------------
    def where(self, condition, x, y) -> tensor:
        """`select(condition, x, y)`: x and y promoted together (scalar rules apply),
        then all three broadcast to one shape."""
        condition = self.to_tensor(condition)
        if not condition.dtype.is_bool():
            warnings.warn("tl.where with a non-boolean condition is deprecated and will error out in a future "
                          f"triton release. Got {dtype_name(condition.dtype)}", stacklevel=2)
            condition = self.cast(condition, tl.int1)
        x, y = self.binary_op_type_checking_impl(x, y, True, True)
        if x.type.scalar != y.type.scalar:
            raise IncompatibleTypeErrorImpl(x.type.scalar, y.type.scalar)
        condition, x = self.broadcast_impl_value(condition, x)
        x, y = self.broadcast_impl_value(x, y)
        condition, x = self.broadcast_impl_value(condition, x)
        return self.create("select", [condition, x, y], x.type)

    # -- casts -----------------------------------------------------------------------
    def bitcast(self, input: tensor, dst_ty: dtype) -> tensor:
        """Reinterpret the bits; sizes must match; pointers fall back to `cast`."""
        src_ty = input.type
        if src_ty.is_block():
            dst_ty = src_ty.with_element_ty(dst_ty.scalar)
        if src_ty == dst_ty:
            return input
        src_sca, dst_sca = src_ty.scalar, dst_ty.scalar
        if src_sca.is_ptr() or dst_sca.is_ptr():
            return self.cast(input, dst_ty)
        if src_sca.primitive_bitwidth != dst_sca.primitive_bitwidth:
            raise ValueError(f"Cannot bitcast data-type of size {src_sca.primitive_bitwidth} to data-type of size "
                             f"{dst_sca.primitive_bitwidth}")
        return self.create("bitcast", [input], dst_ty)

    def cast(self, input, dst_ty: dtype, fp_downcast_rounding: str | None = None) -> tensor:
        """Value conversion with Triton's dispatch order (SEMANTICS 3.1)."""
        input = self.to_tensor(input)
        src_ty = input.type
        src_sca, dst_sca = src_ty.scalar, dst_ty.scalar
        if src_sca == dst_sca:
            return input
        dst_ty = src_ty.with_element_ty(dst_sca) if src_ty.is_block() else dst_sca

        if fp_downcast_rounding not in (None, "rtne", "rtz"):
            raise ValueError(f"Invalid rounding mode: {fp_downcast_rounding}. "
                             "Supported rounding modes are 'rtne' and 'rtz'.")
        narrowing_fp = (src_sca.is_floating() and dst_sca.is_floating()
                        and dst_sca.primitive_bitwidth < src_sca.primitive_bitwidth)
        if narrowing_fp:
            rounding = fp_downcast_rounding or "rtne"
        elif fp_downcast_rounding is not None:
            raise ValueError("fp_downcast_rounding should be set only for truncating fp conversions. "
                             f"Source scalar type is {dtype_name(src_sca)} and destination type is "
                             f"{dtype_name(dst_sca)}")
        else:
            rounding = None

        def convert() -> tensor:
            attrs = {"rounding": rounding} if rounding is not None else {}
            return self.create("cast", [input], dst_ty, **attrs)

        both_float = src_sca.is_floating() and dst_sca.is_floating()
        if both_float and (src_sca.is_fp8() or dst_sca.is_fp8() or rounding == "rtz"):
            return convert()
        if (src_sca.is_fp16() or src_sca.is_bf16()) and not dst_sca.is_fp32():
            # Triton converts fp16/bf16 to anything but fp32 through fp32
            return self.cast(self.cast(input, tl.float32), dst_sca)
        if both_float:
            return convert()
        if src_sca.is_int() and dst_sca.is_int():
            if dst_sca.is_bool():
                return self.not_equal(input, self.scalar_constant(0, src_sca))
            return convert()
        if src_sca.is_standard_floating() and dst_sca.is_int():
            if dst_sca.is_bool():
                return self.not_equal(input, self.scalar_constant(0.0, src_sca))
            return convert()
        if src_sca.is_int() and dst_sca.is_standard_floating():
            return convert()
        if src_sca.is_ptr() and dst_sca.is_int():
            if dst_sca.int_bitwidth == 64:
                return convert()
            if dst_sca.is_bool():
                address = self.cast(input, tl.int64)
                return self.not_equal(address, self.scalar_constant(0, tl.int64))
        if src_sca.is_int() and dst_sca.is_ptr() and src_sca.int_bitwidth == 64:
            return convert()
        if src_sca.is_ptr() and dst_sca.is_ptr():
            return convert()
        raise AssertionError(f"cannot cast {dtype_name(src_sca)} to {dtype_name(dst_sca)}: "
                             f"{_cast_fix(src_sca, dst_sca)}")

    # -- combine regions (reduce / scan) ------------------------------------------------
    def call_combine_fn(self, combine_fn, args: list[tensor]) -> list[tensor]:
        """Compile a call of the `@jit` `combine_fn` on `args` at the insertion point
        (through the codegen's `call_jit_function`) and return its results as a list."""
        if self.call_jit_function is None:
            raise RuntimeError("combine functions need the codegen: Semantic.call_jit_function is not set")
        results = self.call_jit_function(combine_fn, list(args))
        if isinstance(results, (tl.tuple, tuple, list)):
            items = list(results)
        else:
            items = [results]
        return [self.to_tensor(item) for item in items]

    def build_combine_region(self, region: Region, combine_fn, element_types: list[dtype]) -> None:
        """Fill `region` (arguments `a0..an-1, b0..bn-1`) with a call of `combine_fn`
        and a `yield` of its results, which must have the input element types."""
        point = self.builder.insertion_point()
        self.builder.set_insertion_point_to_end(region)
        try:
            args = [tensor(arg, arg.type) for arg in region.args]
            results = self.call_combine_fn(combine_fn, args)
            if len(results) != len(element_types):
                raise TypeError(f"combine function returned {len(results)} values, expected {len(element_types)}")
            for index, (result, expected) in enumerate(zip(results, element_types)):
                if result.type != expected:
                    raise TypeError(f"combine function returned {result.type} for value {index}, "
                                    f"expected {expected}")
            self.create_void("yield", results)
        finally:
            self.builder.restore_insertion_point(point)


def _cast_fix(src: dtype, dst: dtype) -> str:
    """How to get from `src` to `dst` when no direct conversion exists."""
    if src.is_fp8() or dst.is_fp8():
        return "fp8 and integers do not convert directly; go through a wider float, e.g. .to(tl.float32).to(...)"
    if src.is_ptr() or dst.is_ptr():
        return ("a pointer converts only to int64, to int1 (is it null) and to other pointers, and only int64 "
                "converts to a pointer")
    return "no conversion between these types"
