"""Triton's standard library, written in Triton: reductions and scans over
`reduce`/`associative_scan`, `softmax`, `sigmoid`, `cdiv`, `flip`... The
frontend compiles these `@jit` functions like user code.

Result dtypes follow SEMANTICS 5.1: `sum` widens ints narrower than 32 bits
(signed to i32, unsigned and i1 to u32) and keeps floats; `max`/`min`
compute bf16 in fp32 and widen anything narrower than 32 bits; `cumsum`
computes bf16 in fp32 then widens like `sum`; `cumprod` does not widen ints.

`sort`, `topk` and `bitonic_merge` are bitonic networks over the last axis
(SEMANTICS 9): the tensor is viewed as a hypercube `[2, 2, ..., 2]` whose axis
`rank - 1 - b` is bit `b` of an element's row-major index, so exchanging
elements whose indices differ in bit `b` is a reduction over one axis of size 2.
"""

from __future__ import annotations

from ..runtime.jit import constexpr_function, jit
from . import core, math

__all__ = ["argmax", "argmin", "bitonic_merge", "cdiv", "cumprod", "cumsum", "flip", "interleave", "max", "min",
           "ravel", "reduce_or", "sigmoid", "softmax", "sort", "sum", "swizzle2d", "topk", "xor_sum", "zeros",
           "zeros_like"]


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


# -- sorting networks ---------------------------------------------------------------------


@constexpr_function
def _log2(n):
    """floor(log2(n)) for an int n >= 1, and 0 below: Triton's private helper of
    the same name, which torch inductor's triton_helpers imports (sorting)."""
    return int(n).bit_length() - 1 if n > 1 else 0


@constexpr_function
def _exact_log2(n, what):
    """log2 of the power of two `n` (`what` names it in the error otherwise)."""
    if not isinstance(n, int) or n < 1 or n & (n - 1):
        raise ValueError(f"{what} must be a power of two, got {n}")
    return n.bit_length() - 1


@constexpr_function
def _check_last_axis(fn_name, dim, rank):
    """Sorting runs along the last axis only: `dim` must be None, -1 or `rank - 1`."""
    if dim is not None and dim not in (-1, rank - 1):
        raise ValueError(f"{fn_name} only supports the last dimension (dim={rank - 1} of a {rank}-D tensor), "
                         f"got dim={dim}")
    return rank - 1


@constexpr_function
def _hypercube_shape(numel):
    """`[2] * log2(numel)`, or `[1]` for a single element."""
    return [2] * (numel.bit_length() - 1) if numel > 1 else [1]


@constexpr_function
def _bit_axis(rank, bit):
    """The hypercube axis holding bit `bit` of the row-major index."""
    return rank - 1 - bit


@constexpr_function
def _bit_shape(rank, bit):
    """A hypercube-rank shape of ones with 2 at the axis of bit `bit`."""
    shape = [1] * rank
    shape[rank - 1 - bit] = 2
    return shape


@constexpr_function
def _stage_order(stage, last_stage, descending):
    """The direction of merge stage `stage`: the requested one for the last stage;
    before it, None (alternating by block), so the next stage sees bitonic runs."""
    return descending if stage == last_stage else None


@constexpr_function
def _topk_shape(shape, k):
    return [int(s) for s in shape[:-1]] + [k]


@constexpr_function
def _check_topk(k, n):
    log_k = _exact_log2(k, "topk's k")
    if k > n:
        raise ValueError(f"topk's k ({k}) exceeds the size of the last dimension ({n})")
    return log_k


@jit
def _index_bit(rank: core.constexpr, bit: core.constexpr):
    """An i1 tensor broadcastable to the hypercube: bit `bit` of each element's index."""
    return core.reshape(core.arange(0, 2), _bit_shape(rank, bit)) == 1


@jit
def _compare_exchange(h, bit: core.constexpr, wants_high):
    """One round of the network: each element meets the element whose index differs
    in bit `bit`, and keeps the larger of the two where `wants_high`, else the smaller.

    The comparison is strict and made from each side's own point of view, as
    upstream Triton's network makes it: a position that wants the high value keeps
    its own only when it is strictly greater, so equal values (-0.0 and +0.0) and
    NaNs hand over the partner's value and can appear twice."""
    bits = h.to(core.get_int_dtype(h.dtype.primitive_bitwidth, True), bitcast=True)
    # the pair's xor, xored with one of them, gives the other
    pair_xor = xor_sum(bits, _bit_axis(len(h.shape), bit), keep_dims=True)
    partner = (bits ^ pair_xor).to(h.dtype, bitcast=True)
    takes_partner = (h > partner) != wants_high
    return core.where(takes_partner, partner, h)


@jit
def _merge_hypercube(h, stage: core.constexpr, descending: core.constexpr):
    """Sort every bitonic run of `2**stage` consecutive elements of the hypercube `h`:
    ascending or descending by `descending`, or when it is None, ascending and
    descending by turns (by bit `stage` of the index)."""
    rank: core.constexpr = len(h.shape)
    if descending is None:
        run_descending = _index_bit(rank, stage)
    else:
        run_descending = descending
    for bit in core.static_range(stage - 1, -1, -1):
        h = _compare_exchange(h, bit, _index_bit(rank, bit) != run_descending)
    return h


@jit
def sort(x, dim: core.constexpr = None, descending: core.constexpr = False):
    """`x` sorted along its last dimension (the only one supported), ascending unless
    `descending`; a bitonic sorting network."""
    _check_last_axis("sort", dim, len(x.shape))
    log_n: core.constexpr = _exact_log2(x.shape[len(x.shape) - 1], "the sorted dimension")
    h = core.reshape(x, _hypercube_shape(x.numel))
    for stage in core.static_range(1, log_n + 1):
        h = _merge_hypercube(h, stage, _stage_order(stage, log_n, descending))
    return core.reshape(h, x.shape)


@jit
def topk(x, k: core.constexpr, dim: core.constexpr = None):
    """The `k` largest elements of each row of `x` (last dimension), in descending
    order; `k` a power of two. Inputs narrower than 32 bits come back widened as
    `max` widens them (fp16 as fp32, int8 as int32) unless `k` is the whole row."""
    _check_last_axis("topk", dim, len(x.shape))
    log_n: core.constexpr = _exact_log2(x.shape[len(x.shape) - 1], "the sorted dimension")
    log_k: core.constexpr = _check_topk(k, 2 ** log_n)
    h = core.reshape(x, _hypercube_shape(x.numel))
    # Sort runs of k, ascending and descending by turns ...
    for stage in core.static_range(1, log_k + 1):
        h = _merge_hypercube(h, stage, _stage_order(stage, log_n, True))
    # ... then halve the row until k are left: the elementwise max of an ascending
    # run and the descending run next to it holds the top k of both, as a bitonic run.
    for level in core.static_range(log_k + 1, log_n + 1):
        h = max(h, _bit_axis(len(h.shape), log_k))
        h = _merge_hypercube(h, log_k, _stage_order(level, log_n, True))
    return core.reshape(h, _topk_shape(x.shape, k))


@jit
def bitonic_merge(x, dim: core.constexpr = None, descending: core.constexpr = False):
    """Sort each row of `x` (last dimension) that is a bitonic sequence (rising then
    falling, or the reverse): the last merge stage of a bitonic sort."""
    _check_last_axis("bitonic_merge", dim, len(x.shape))
    log_n: core.constexpr = _exact_log2(x.shape[len(x.shape) - 1], "the merged dimension")
    h = core.reshape(x, _hypercube_shape(x.numel))
    h = _merge_hypercube(h, log_n, descending)
    return core.reshape(h, x.shape)


for _method in (cdiv, sigmoid, softmax, ravel, max, argmax, min, argmin, sum, xor_sum, reduce_or, cumsum,
                cumprod, flip, sort, topk):
    core.jit_tensor_method(_method)
del _method
