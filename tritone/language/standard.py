"""Triton's standard library, written in Triton: reductions and scans over
`reduce`/`associative_scan`, `softmax`, `sigmoid`, `cdiv`, `flip`... The
frontend compiles these `@jit` functions like user code.

Result dtypes follow SEMANTICS 5.1: `sum` widens ints narrower than 32 bits
(signed to i32, unsigned and i1 to u32) and keeps floats; `max`/`min`
compute bf16 in fp32 and widen anything narrower than 32 bits; `cumsum`
computes bf16 in fp32 then widens like `sum`; `cumprod` does not widen ints.
"""

from __future__ import annotations

from ..runtime.jit import constexpr_function, jit
from . import core, math

__all__ = ["argmax", "argmin", "cdiv", "cumprod", "cumsum", "flip", "interleave", "max", "min", "ravel",
           "reduce_or", "sigmoid", "softmax", "sum", "swizzle2d", "xor_sum", "zeros", "zeros_like"]


# -- compile-time helpers --------------------------------------------------------

@constexpr_function
def _sum_dtype(in_dtype, dtype):
    """`dtype` when given; else i32/u32 for ints narrower than 32 bits, else `in_dtype`."""
    if dtype is not None:
        return dtype
    if in_dtype.is_int() and in_dtype.int_bitwidth < 32:
        return core.int32 if in_dtype.is_int_signed() else core.uint32
    return in_dtype


@constexpr_function
def _min_max_dtype(in_dtype):
    """The dtype `max`/`min` reduce in: fp32 or i32 for types narrower than 32 bits."""
    if in_dtype.primitive_bitwidth >= 32:
        return in_dtype
    if in_dtype.is_floating():
        return core.float32
    if not in_dtype.is_int():
        raise TypeError(f"max/min cannot reduce {in_dtype}")
    return core.int32


@constexpr_function
def _flip_axis(dim, rank):
    """The axis `flip` reverses: `dim` wrapped, the last one when None."""
    if dim is None:
        return rank - 1
    if not -rank <= dim < rank:
        raise ValueError(f"flip dim {dim} out of range for a tensor of rank {rank}")
    return dim + rank if dim < 0 else dim


@constexpr_function
def _axes_except(rank, axis):
    return [d for d in range(rank) if d != axis]


@constexpr_function
def _merge_last_two(shape):
    """`shape` with its last two dims merged (unchanged for rank 1)."""
    shape = [int(s) for s in shape]
    if len(shape) < 2:
        return shape
    return shape[:-2] + [shape[-2] * shape[-1]]


# -- elementwise helpers ----------------------------------------------------------------

@jit
def cdiv(x, div):
    """`(x + div - 1) // div` with Triton's truncating `//` (a ceiling for x >= 0, div > 0)."""
    return (x + (div - 1)) // div


@jit
def sigmoid(x):
    """`1 / (1 + exp(-x))` (fp32 or fp64)."""
    return 1 / (1 + math.exp(-x))


@jit
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    """`exp(x - max(x)) / sum(exp(x - max(x)))` along `dim` (axis 0 when None)."""
    if dim is None:
        axis: core.constexpr = 0
    else:
        axis: core.constexpr = dim
    shifted = x - max(x, axis, keep_dims=keep_dims)
    numerator = math.exp(shifted)
    denominator = sum(numerator, axis, keep_dims=keep_dims)
    return math.fdiv(numerator, denominator, ieee_rounding)


@jit
def ravel(x, can_reorder=False):
    """`x` as a 1-D tensor (row-major order unless `can_reorder`)."""
    return core.reshape(x, [x.numel], can_reorder=can_reorder)


@jit
def swizzle2d(i, j, size_i, size_j, size_g):
    """Map the row-major index (i, j) of a `size_i x size_j` grid to its position when
    groups of `size_g` rows are walked column by column (better L2 reuse)."""
    linear = i * size_j + j
    group_size = size_g * size_j
    first_row = (linear // group_size) * size_g
    # the last group may have fewer rows
    rows = core.minimum(size_i - first_row, size_g)
    in_group = linear % group_size
    return first_row + in_group % rows, in_group // rows


@jit
def zeros(shape, dtype):
    """A tensor of `shape` and `dtype` filled with zeros."""
    return core.full(shape, 0, dtype)


@jit
def zeros_like(input):
    """A tensor of zeros with the shape and dtype of `input`."""
    return zeros(input.shape, input.dtype)


# -- max / min / argmax / argmin ------------------------------------------------------

@jit
def _maximum_combine(a, b):
    return core.maximum(a, b)


@jit
def _minimum_combine(a, b):
    return core.minimum(a, b)


@jit
def _argmax_combine(value1, index1, value2, index2, tie_break_left: core.constexpr):
    if tie_break_left:
        take_first = (value1 > value2) | ((value1 == value2) & (index1 < index2))
    else:
        take_first = value1 > value2
    return core.where(take_first, value1, value2), core.where(take_first, index1, index2)


@jit
def _argmin_combine(value1, index1, value2, index2, tie_break_left: core.constexpr):
    if tie_break_left:
        take_first = (value1 < value2) | ((value1 == value2) & (index1 < index2))
    else:
        take_first = value1 < value2
    return core.where(take_first, value1, value2), core.where(take_first, index1, index2)


@jit
def _argmax_combine_tie_break_left(value1, index1, value2, index2):
    return _argmax_combine(value1, index1, value2, index2, True)


@jit
def _argmax_combine_tie_break_fast(value1, index1, value2, index2):
    return _argmax_combine(value1, index1, value2, index2, False)


@jit
def _argmin_combine_tie_break_left(value1, index1, value2, index2):
    return _argmin_combine(value1, index1, value2, index2, True)


@jit
def _argmin_combine_tie_break_fast(value1, index1, value2, index2):
    return _argmin_combine(value1, index1, value2, index2, False)


@jit
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """The maximum of `input` along `axis` (all axes when None), ignoring NaNs; with
    `return_indices`, also its i32 index (the smallest among ties by default)."""
    input = core._promote_bfloat16_to_float32(input)
    if return_indices:
        if return_indices_tie_break_left:
            return core._reduce_with_indices(input, axis, _argmax_combine_tie_break_left, keep_dims=keep_dims)
        else:
            return core._reduce_with_indices(input, axis, _argmax_combine_tie_break_fast, keep_dims=keep_dims)
    input = input.to(_min_max_dtype(input.dtype))
    return core.reduce(input, axis, _maximum_combine, keep_dims=keep_dims)


@jit
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    """The i32 index of the maximum of `input` along `axis`."""
    _, index = max(input, axis, return_indices=True, return_indices_tie_break_left=tie_break_left,
                   keep_dims=keep_dims)
    return index


@jit
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """The minimum of `input` along `axis` (all axes when None), ignoring NaNs; with
    `return_indices`, also its i32 index (the smallest among ties by default)."""
    input = core._promote_bfloat16_to_float32(input)
    if return_indices:
        if return_indices_tie_break_left:
            return core._reduce_with_indices(input, axis, _argmin_combine_tie_break_left, keep_dims=keep_dims)
        else:
            return core._reduce_with_indices(input, axis, _argmin_combine_tie_break_fast, keep_dims=keep_dims)
    input = input.to(_min_max_dtype(input.dtype))
    return core.reduce(input, axis, _minimum_combine, keep_dims=keep_dims)


@jit
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    """The i32 index of the minimum of `input` along `axis`."""
    _, index = min(input, axis, return_indices=True, return_indices_tie_break_left=tie_break_left,
                   keep_dims=keep_dims)
    return index


# -- sums and bitwise reductions --------------------------------------------------------

@jit
def _add_combine(a, b):
    return a + b


@jit
def _mul_combine(a, b):
    return a * b


@jit
def _xor_combine(a, b):
    return a ^ b


@jit
def _or_combine(a, b):
    return a | b


@jit
def sum(input, axis=None, keep_dims=False, dtype: core.constexpr = None):
    """The sum of `input` along `axis` (all axes when None), in `dtype` when given."""
    input = input.to(_sum_dtype(input.dtype, dtype))
    return core.reduce(input, axis, _add_combine, keep_dims=keep_dims)


@jit
def xor_sum(input, axis=None, keep_dims=False):
    """The bitwise xor of the integers of `input` along `axis`."""
    core.static_assert(input.type.scalar.is_int(), "xor_sum only supported for integers")
    return core.reduce(input, axis, _xor_combine, keep_dims=keep_dims)


@jit
def reduce_or(input, axis, keep_dims=False):
    """The bitwise or of the integers of `input` along `axis`."""
    core.static_assert(input.type.scalar.is_int(), "reduce_or only supported for integers")
    return core.reduce(input, axis, _or_combine, keep_dims=keep_dims)


@jit
def cumsum(input, axis=0, reverse=False, dtype: core.constexpr = None):
    """Inclusive prefix sums along `axis` (bf16 computed in fp32, ints widened like `sum`)."""
    input = core._promote_bfloat16_to_float32(input)
    input = input.to(_sum_dtype(input.dtype, dtype))
    return core.associative_scan(input, axis, _add_combine, reverse)


@jit
def cumprod(input, axis=0, reverse=False):
    """Inclusive prefix products along `axis` (bf16 computed in fp32, ints not widened)."""
    input = core._promote_bfloat16_to_float32(input)
    return core.associative_scan(input, axis, _mul_combine, reverse)


# -- reordering -------------------------------------------------------------------------------

@jit
def flip(x, dim=None):
    """`x` reversed along `dim` (the last axis when None)."""
    axis: core.constexpr = _flip_axis(dim, len(x.shape))
    n: core.constexpr = x.shape[axis]
    index = (n - 1) - core.arange(0, n)
    index = core.expand_dims(index, _axes_except(len(x.shape), axis))
    index = core.broadcast_to(index, x.shape)
    return core.gather(x, index, axis)


@jit
def interleave(a, b):
    """`[a0, b0, a1, b1, ...]` along the last axis (`join` then merge the last two axes)."""
    joined = core.join(a, b)
    return core.reshape(joined, _merge_last_two(joined.shape))


for _method in (cdiv, sigmoid, softmax, ravel, max, argmax, min, argmin, sum, xor_sum, reduce_or, cumsum,
                cumprod, flip):
    core.jit_tensor_method(_method)
del _method
