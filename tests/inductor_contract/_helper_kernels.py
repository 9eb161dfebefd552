"""Kernels built on TorchInductor's own device helpers
(`torch._inductor.runtime.triton_helpers`), as its generated code calls them.
Importable only where tritone answers `import triton` (the helpers are
`@triton.jit` functions of whatever `triton` is)."""

import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers


@triton.jit
def welford_rows(x_ptr, mean_ptr, var_ptr, R_BLOCK: tl.constexpr, C_BLOCK: tl.constexpr):
    # The looped form Inductor emits for a large reduction: welford_reduce per chunk, then welford over lanes.
    rows = tl.arange(0, R_BLOCK)[:, None]
    mean = tl.zeros((R_BLOCK, C_BLOCK), tl.float32)
    m2 = tl.zeros((R_BLOCK, C_BLOCK), tl.float32)
    weight = tl.zeros((R_BLOCK, C_BLOCK), tl.float32)
    for chunk in range(0, 4):
        cols = chunk * C_BLOCK + tl.arange(0, C_BLOCK)[None, :]
        x = tl.load(x_ptr + rows * (4 * C_BLOCK) + cols)
        mean, m2, weight = triton_helpers.welford_reduce(x, mean, m2, weight, chunk == 0)
    row_mean, row_m2, row_weight = triton_helpers.welford(mean, m2, weight, 1)
    tl.store(mean_ptr + tl.arange(0, R_BLOCK), row_mean)
    tl.store(var_ptr + tl.arange(0, R_BLOCK), row_m2 / row_weight)


@triton.jit
def sort_rows(x_ptr, values_ptr, indices_ptr, n_cols, R_BLOCK: tl.constexpr, C_BLOCK: tl.constexpr,
              DESCENDING: tl.constexpr):
    rows = tl.arange(0, R_BLOCK)[:, None]
    cols = tl.arange(0, C_BLOCK)[None, :]
    mask = cols < n_cols
    x = tl.load(x_ptr + rows * n_cols + cols, mask=mask, other=float("inf"))
    index = tl.broadcast_to(cols, (R_BLOCK, C_BLOCK)).to(tl.int64)
    values, indices = triton_helpers.sort_with_index(x, index, n_cols, 1, stable=True, descending=DESCENDING)
    tl.store(values_ptr + rows * n_cols + cols, values, mask=mask)
    tl.store(indices_ptr + rows * n_cols + cols, indices, mask=mask)


@triton.jit
def bucketize(values_ptr, boundaries_ptr, out_ptr, N_BOUNDARIES: tl.constexpr, BLOCK: tl.constexpr,
              RIGHT: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    values = tl.load(values_ptr + offsets)
    buckets = triton_helpers.bucketize_binary_search(
        values, boundaries_ptr, N_BOUNDARIES, N_BOUNDARIES, 1, 0, tl.int64, RIGHT, None, None, None)
    tl.store(out_ptr + offsets, buckets)


@triton.jit
def bucketize_with_sorter(values_ptr, boundaries_ptr, sorter_ptr, out_ptr, N_BOUNDARIES: tl.constexpr,
                          BLOCK: tl.constexpr, RIGHT: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    values = tl.load(values_ptr + offsets)
    buckets = triton_helpers.bucketize_binary_search(
        values, boundaries_ptr, N_BOUNDARIES, N_BOUNDARIES, 1, 0, tl.int32, RIGHT, sorter_ptr, 1, 0)
    tl.store(out_ptr + offsets, buckets)


@triton.jit
def arg_extremes(x_ptr, max_ptr, argmax_ptr, min_ptr, argmin_ptr, R_BLOCK: tl.constexpr, C_BLOCK: tl.constexpr):
    rows = tl.arange(0, R_BLOCK)[:, None]
    cols = tl.arange(0, C_BLOCK)[None, :]
    x = tl.load(x_ptr + rows * C_BLOCK + cols)
    index = tl.broadcast_to(cols, (R_BLOCK, C_BLOCK))
    top, where_top = triton_helpers.max_with_index(x, index, 1)
    bottom, where_bottom = triton_helpers.min_with_index(x, index, 1)
    tl.store(max_ptr + tl.arange(0, R_BLOCK), top)
    tl.store(argmax_ptr + tl.arange(0, R_BLOCK), where_top)
    tl.store(min_ptr + tl.arange(0, R_BLOCK), bottom)
    tl.store(argmin_ptr + tl.arange(0, R_BLOCK), where_bottom)


@triton.jit
def online_softmax_rows(x_ptr, max_ptr, sum_ptr, R_BLOCK: tl.constexpr, C_BLOCK: tl.constexpr):
    rows = tl.arange(0, R_BLOCK)[:, None]
    cols = tl.arange(0, C_BLOCK)[None, :]
    x = tl.load(x_ptr + rows * C_BLOCK + cols)
    row_max, row_sum = triton_helpers.online_softmax_reduce(x, tl.full(x.shape, 1.0, tl.float32), 1, False)
    tl.store(max_ptr + tl.arange(0, R_BLOCK), row_max)
    tl.store(sum_ptr + tl.arange(0, R_BLOCK), row_sum)


@triton.jit
def products_and_any(x_ptr, flags_ptr, prod_ptr, any_ptr, R_BLOCK: tl.constexpr, C_BLOCK: tl.constexpr):
    rows = tl.arange(0, R_BLOCK)[:, None]
    cols = tl.arange(0, C_BLOCK)[None, :]
    tl.store(prod_ptr + tl.arange(0, R_BLOCK), triton_helpers.prod(tl.load(x_ptr + rows * C_BLOCK + cols), 1))
    flags = tl.load(flags_ptr + rows * C_BLOCK + cols) != 0
    tl.store(any_ptr + tl.arange(0, R_BLOCK), triton_helpers.any(flags, 1).to(tl.int8))


@triton.jit
def integer_division(a_ptr, b_ptr, quotient_ptr, remainder_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offsets)
    b = tl.load(b_ptr + offsets)
    tl.store(quotient_ptr + offsets, triton_helpers.div_floor_integer(a, b))
    tl.store(remainder_ptr + offsets, triton_helpers.remainder_integer(a, b))
