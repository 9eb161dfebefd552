"""Small kernels of the per-op sweep: each applies one `tl` operation, passed
as a `@jit` helper in a constexpr argument, to blocks loaded from memory.

Loaded like `_kernels.py` by `tests.kernels._loader.load_kernels(triton, tl)`.
Shapes are given as `(S0, S1, S2, RANK)`: a block of rank RANK takes the last
RANK of the three sizes; rank 0 is a scalar loaded through a scalar pointer.
Each kernel checks the result dtype at compile time (`RESULT`), so promotion
is tested, not only values.
"""

import torch

from tests.kernels._data import TORCH_DTYPES, poisoned

if "triton" not in globals() or "tl" not in globals():
    raise ImportError("load this file with tests.kernels._loader.load_kernels(triton, tl)")
triton = globals()["triton"]
tl = globals()["tl"]


@triton.jit
def _offsets(S0: tl.constexpr, S1: tl.constexpr, S2: tl.constexpr, RANK: tl.constexpr):
    if RANK == 0:
        offs = 0
    elif RANK == 1:
        offs = tl.arange(0, S2)
    elif RANK == 2:
        offs = tl.arange(0, S1)[:, None] * S2 + tl.arange(0, S2)[None, :]
    else:
        offs = (tl.arange(0, S0)[:, None, None] * (S1 * S2) + tl.arange(0, S1)[None, :, None] * S2
                + tl.arange(0, S2)[None, None, :])
    return offs


@triton.jit
def unary_kernel(x_ptr, out_ptr, OP: tl.constexpr, RESULT: tl.constexpr,
                 X0: tl.constexpr, X1: tl.constexpr, X2: tl.constexpr, XR: tl.constexpr,
                 O0: tl.constexpr, O1: tl.constexpr, O2: tl.constexpr, OR: tl.constexpr):
    x = tl.load(x_ptr + _offsets(X0, X1, X2, XR))
    r = OP(x)
    tl.static_assert(r.dtype == RESULT, "result dtype differs from the expected one")
    tl.store(out_ptr + _offsets(O0, O1, O2, OR), r)


@triton.jit
def unary_pair_kernel(x_ptr, out_ptr, out2_ptr, OP: tl.constexpr, RESULT: tl.constexpr, RESULT2: tl.constexpr,
                      X0: tl.constexpr, X1: tl.constexpr, X2: tl.constexpr, XR: tl.constexpr,
                      O0: tl.constexpr, O1: tl.constexpr, O2: tl.constexpr, OR: tl.constexpr):
    x = tl.load(x_ptr + _offsets(X0, X1, X2, XR))
    r, r2 = OP(x)
    tl.static_assert(r.dtype == RESULT, "first result dtype differs from the expected one")
    tl.static_assert(r2.dtype == RESULT2, "second result dtype differs from the expected one")
    offsets = _offsets(O0, O1, O2, OR)
    tl.store(out_ptr + offsets, r)
    tl.store(out2_ptr + offsets, r2)


@triton.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, RESULT: tl.constexpr,
                  X0: tl.constexpr, X1: tl.constexpr, X2: tl.constexpr, XR: tl.constexpr,
                  Y0: tl.constexpr, Y1: tl.constexpr, Y2: tl.constexpr, YR: tl.constexpr,
                  O0: tl.constexpr, O1: tl.constexpr, O2: tl.constexpr, OR: tl.constexpr):
    x = tl.load(x_ptr + _offsets(X0, X1, X2, XR))
    y = tl.load(y_ptr + _offsets(Y0, Y1, Y2, YR))
    r = OP(x, y)
    tl.static_assert(r.dtype == RESULT, "result dtype differs from the expected one")
    tl.store(out_ptr + _offsets(O0, O1, O2, OR), r)


@triton.jit
def ternary_kernel(x_ptr, y_ptr, z_ptr, out_ptr, OP: tl.constexpr, RESULT: tl.constexpr,
                   X0: tl.constexpr, X1: tl.constexpr, X2: tl.constexpr, XR: tl.constexpr,
                   Y0: tl.constexpr, Y1: tl.constexpr, Y2: tl.constexpr, YR: tl.constexpr,
                   Z0: tl.constexpr, Z1: tl.constexpr, Z2: tl.constexpr, ZR: tl.constexpr,
                   O0: tl.constexpr, O1: tl.constexpr, O2: tl.constexpr, OR: tl.constexpr):
    x = tl.load(x_ptr + _offsets(X0, X1, X2, XR))
    y = tl.load(y_ptr + _offsets(Y0, Y1, Y2, YR))
    z = tl.load(z_ptr + _offsets(Z0, Z1, Z2, ZR))
    r = OP(x, y, z)
    tl.static_assert(r.dtype == RESULT, "result dtype differs from the expected one")
    tl.store(out_ptr + _offsets(O0, O1, O2, OR), r)


@triton.jit
def scalar_operand_kernel(x_ptr, out_ptr, OP: tl.constexpr, C: tl.constexpr, C_ON_LEFT: tl.constexpr,
                          RESULT: tl.constexpr, X0: tl.constexpr, X1: tl.constexpr, X2: tl.constexpr,
                          XR: tl.constexpr):
    # A Python number meets a tensor: TRITON_SEMANTICS 1.5's scalar rules.
    offsets = _offsets(X0, X1, X2, XR)
    x = tl.load(x_ptr + offsets)
    if C_ON_LEFT:
        r = OP(C, x)
    else:
        r = OP(x, C)
    tl.static_assert(r.dtype == RESULT, "result dtype differs from the expected one")
    tl.store(out_ptr + offsets, r)


@triton.jit
def reduce_kernel(x_ptr, out_ptr, OP: tl.constexpr, RESULT: tl.constexpr, AXIS: tl.constexpr, KEEP: tl.constexpr,
                  X0: tl.constexpr, X1: tl.constexpr, X2: tl.constexpr, XR: tl.constexpr,
                  O0: tl.constexpr, O1: tl.constexpr, O2: tl.constexpr, OR: tl.constexpr):
    x = tl.load(x_ptr + _offsets(X0, X1, X2, XR))
    r = OP(x, AXIS, KEEP)
    tl.static_assert(r.dtype == RESULT, "result dtype differs from the expected one")
    tl.store(out_ptr + _offsets(O0, O1, O2, OR), r)


def _shape_args(prefix, shape):
    shape = tuple(shape)
    padded = (1,) * (3 - len(shape)) + shape
    return {f"{prefix}0": padded[0], f"{prefix}1": padded[1], f"{prefix}2": padded[2], f"{prefix}R": len(shape)}


def _out(shape, name, device):
    return poisoned(tuple(shape), TORCH_DTYPES[name], device)


def run_unary(x, op, result, out_shape):
    out = _out(out_shape, result, x.device)
    unary_kernel[(1,)](x, out, globals()[op], getattr(tl, result), **_shape_args("X", x.shape),
                       **_shape_args("O", out_shape))
    return {"out": out}


def run_unary_pair(x, op, result, result2, out_shape):
    out = _out(out_shape, result, x.device)
    out2 = _out(out_shape, result2, x.device)
    unary_pair_kernel[(1,)](x, out, out2, globals()[op], getattr(tl, result), getattr(tl, result2),
                            **_shape_args("X", x.shape), **_shape_args("O", out_shape))
    return {"out": out, "out2": out2}


def run_binary(x, y, op, result, out_shape):
    out = _out(out_shape, result, x.device)
    binary_kernel[(1,)](x, y, out, globals()[op], getattr(tl, result), **_shape_args("X", x.shape),
                        **_shape_args("Y", y.shape), **_shape_args("O", out_shape))
    return {"out": out}


def run_ternary(x, y, z, op, result, out_shape):
    out = _out(out_shape, result, x.device)
    ternary_kernel[(1,)](x, y, z, out, globals()[op], getattr(tl, result), **_shape_args("X", x.shape),
                         **_shape_args("Y", y.shape), **_shape_args("Z", z.shape), **_shape_args("O", out_shape))
    return {"out": out}


def run_scalar_operand(x, op, c, c_on_left, result):
    out = _out(x.shape, result, x.device)
    scalar_operand_kernel[(1,)](x, out, globals()[op], c, c_on_left, getattr(tl, result), **_shape_args("X", x.shape))
    return {"out": out}


def run_reduce(x, op, result, axis, keep_dims, out_shape):
    out = _out(out_shape, result, x.device)
    reduce_kernel[(1,)](x, out, globals()[op], getattr(tl, result), axis, keep_dims, **_shape_args("X", x.shape),
                        **_shape_args("O", out_shape))
    return {"out": out}


# --- the operations --------------------------------------------------------------------------
# Operators


@triton.jit
def op_add(a, b):
    return a + b


@triton.jit
def op_sub(a, b):
    return a - b


@triton.jit
def op_mul(a, b):
    return a * b


@triton.jit
def op_truediv(a, b):
    return a / b


@triton.jit
def op_floordiv(a, b):
    return a // b


@triton.jit
def op_mod(a, b):
    return a % b


@triton.jit
def op_and(a, b):
    return a & b


@triton.jit
def op_or(a, b):
    return a | b


@triton.jit
def op_xor(a, b):
    return a ^ b


@triton.jit
def op_lshift(a, b):
    return a << b


@triton.jit
def op_rshift(a, b):
    return a >> b


@triton.jit
def op_eq(a, b):
    return a == b


@triton.jit
def op_ne(a, b):
    return a != b


@triton.jit
def op_lt(a, b):
    return a < b


@triton.jit
def op_le(a, b):
    return a <= b


@triton.jit
def op_gt(a, b):
    return a > b


@triton.jit
def op_ge(a, b):
    return a >= b


@triton.jit
def op_neg(a):
    return -a


@triton.jit
def op_invert(a):
    return ~a


# Functions of two or three operands


@triton.jit
def op_maximum(a, b):
    return tl.maximum(a, b)


@triton.jit
def op_minimum(a, b):
    return tl.minimum(a, b)


@triton.jit
def op_maximum_propagate_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def op_tl_add(a, b):
    return tl.add(a, b)


@triton.jit
def op_tl_sub(a, b):
    return tl.sub(a, b)


@triton.jit
def op_tl_mul(a, b):
    return tl.mul(a, b)


@triton.jit
def op_umulhi(a, b):
    return tl.umulhi(a, b)


@triton.jit
def op_fdiv(a, b):
    return tl.fdiv(a, b)


@triton.jit
def op_div_rn(a, b):
    return tl.div_rn(a, b)


@triton.jit
def op_cdiv(a, b):
    return tl.cdiv(a, b)


@triton.jit
def op_where_gt(a, b):
    return tl.where(a > b, a, b)


@triton.jit
def op_where(c, a, b):
    return tl.where(c, a, b)


@triton.jit
def op_fma(a, b, c):
    return tl.fma(a, b, c)


@triton.jit
def op_clamp(x, lo, hi):
    return tl.clamp(x, lo, hi)


# One operand


@triton.jit
def op_abs(x):
    return tl.abs(x)


@triton.jit
def op_exp(x):
    return tl.exp(x)


@triton.jit
def op_exp2(x):
    return tl.exp2(x)


@triton.jit
def op_log(x):
    return tl.log(x)


@triton.jit
def op_log2(x):
    return tl.log2(x)


@triton.jit
def op_sin(x):
    return tl.sin(x)


@triton.jit
def op_cos(x):
    return tl.cos(x)


@triton.jit
def op_sqrt(x):
    return tl.sqrt(x)


@triton.jit
def op_sqrt_rn(x):
    return tl.sqrt_rn(x)


@triton.jit
def op_rsqrt(x):
    return tl.rsqrt(x)


@triton.jit
def op_erf(x):
    return tl.erf(x)


@triton.jit
def op_floor(x):
    return tl.floor(x)


@triton.jit
def op_ceil(x):
    return tl.ceil(x)


@triton.jit
def op_sigmoid(x):
    return tl.sigmoid(x)


@triton.jit
def op_tensor_exp(x):
    return x.exp()


# Shapes (the input shape is read from the tensor)


@triton.jit
def op_trans(x):
    return tl.trans(x)


@triton.jit
def op_dot_T(x):
    return x.T


@triton.jit
def op_permute_201(x):
    return tl.permute(x, (2, 0, 1))


@triton.jit
def op_reshape_flat(x):
    return tl.reshape(x, (x.shape[0] * x.shape[1],))


@triton.jit
def op_reshape_swap(x):
    return tl.reshape(x, (x.shape[1], x.shape[0]))


@triton.jit
def op_ravel(x):
    return tl.ravel(x)


@triton.jit
def op_expand_dims_0(x):
    return tl.expand_dims(x, 0)


@triton.jit
def op_expand_dims_last_broadcast(x):
    return tl.broadcast_to(tl.expand_dims(x, 1), (x.shape[0], 4))


@triton.jit
def op_broadcast_to_rows(x):
    return tl.broadcast_to(x, (4, x.shape[1]))


@triton.jit
def op_broadcast_pair(a, b):
    left, right = tl.broadcast(a, b)
    return left * 2 + right


@triton.jit
def op_join(a, b):
    return tl.join(a, b)


@triton.jit
def op_split(x):
    return tl.split(x)


@triton.jit
def op_interleave(a, b):
    return tl.interleave(a, b)


@triton.jit
def op_cat(a, b):
    return tl.cat(a, b, can_reorder=True)


@triton.jit
def op_flip_last(x):
    return tl.flip(x, len(x.shape) - 1)


@triton.jit
def op_flip_0(x):
    return tl.flip(x, 0)


@triton.jit
def op_gather_axis1(src, index):
    return tl.gather(src, index, 1)


@triton.jit
def op_sort(x):
    return tl.sort(x)


@triton.jit
def op_sort_descending(x):
    return tl.sort(x, descending=True)


@triton.jit
def op_topk_4(x):
    return tl.topk(x, 4)


@triton.jit
def op_histogram_16(x):
    return tl.histogram(x, 16)


@triton.jit
def op_swizzle2d(i, j):
    r, c = tl.swizzle2d(i, j, 8, 8, 2)
    return r * 8 + c


@triton.jit
def op_softmax(x):
    return tl.softmax(x)


@triton.jit
def op_hints_identity(x):
    return tl.max_constancy(tl.max_contiguous(tl.multiple_of(x, 1), 1), 1)


# Casts


@triton.jit
def op_to_int8(x):
    return x.to(tl.int8)


@triton.jit
def op_to_int16(x):
    return x.to(tl.int16)


@triton.jit
def op_to_int32(x):
    return x.to(tl.int32)


@triton.jit
def op_to_int64(x):
    return x.to(tl.int64)


@triton.jit
def op_to_uint8(x):
    return x.to(tl.uint8)


@triton.jit
def op_to_uint32(x):
    return x.to(tl.uint32)


@triton.jit
def op_to_int1(x):
    return x.to(tl.int1)


@triton.jit
def op_to_float16(x):
    return x.to(tl.float16)


@triton.jit
def op_to_bfloat16(x):
    return x.to(tl.bfloat16)


@triton.jit
def op_to_float32(x):
    return x.to(tl.float32)


@triton.jit
def op_to_float64(x):
    return x.to(tl.float64)


@triton.jit
def op_to_float16_rtz(x):
    return x.to(tl.float16, fp_downcast_rounding="rtz")


@triton.jit
def op_fp8e4nv_roundtrip(x):
    return x.to(tl.float8e4nv).to(tl.float32)


@triton.jit
def op_fp8e5_roundtrip(x):
    return x.to(tl.float8e5).to(tl.float32)


@triton.jit
def op_bitcast_int32(x):
    return x.to(tl.int32, bitcast=True)


@triton.jit
def op_bitcast_float32(x):
    return x.to(tl.float32, bitcast=True)


@triton.jit
def op_cast_fn_int16(x):
    return tl.cast(x, tl.int16)


# Reductions and scans (x, axis, keep_dims)


@triton.jit
def red_sum(x, axis, keep_dims):
    return tl.sum(x, axis=axis, keep_dims=keep_dims)


@triton.jit
def red_method_sum(x, axis, keep_dims):
    return x.sum(axis, keep_dims=keep_dims)


@triton.jit
def red_max(x, axis, keep_dims):
    return tl.max(x, axis=axis, keep_dims=keep_dims)


@triton.jit
def red_min(x, axis, keep_dims):
    return tl.min(x, axis=axis, keep_dims=keep_dims)


@triton.jit
def red_argmax(x, axis, keep_dims):
    return tl.argmax(x, axis=axis, keep_dims=keep_dims)


@triton.jit
def red_argmin(x, axis, keep_dims):
    return tl.argmin(x, axis=axis, keep_dims=keep_dims)


@triton.jit
def red_xor_sum(x, axis, keep_dims):
    return tl.xor_sum(x, axis=axis, keep_dims=keep_dims)


@triton.jit
def red_reduce_or(x, axis, keep_dims):
    return tl.reduce_or(x, axis=axis, keep_dims=keep_dims)


@triton.jit
def _sum_of_squares_combine(a, b):
    return a + b


@triton.jit
def red_custom_reduce(x, axis, keep_dims):
    return tl.reduce(x * x, axis, _sum_of_squares_combine, keep_dims=keep_dims)


@triton.jit
def red_cumsum(x, axis, keep_dims):
    return tl.cumsum(x, axis=axis)


@triton.jit
def red_cumsum_reverse(x, axis, keep_dims):
    return tl.cumsum(x, axis=axis, reverse=True)


@triton.jit
def red_cumprod(x, axis, keep_dims):
    return tl.cumprod(x, axis=axis)


@triton.jit
def red_max_with_indices(x, axis, keep_dims):
    values, indices = tl.max(x, axis=axis, return_indices=True, keep_dims=keep_dims)
    return tl.join(values.to(tl.float32), indices.to(tl.float32))


@triton.jit
def red_min_with_indices(x, axis, keep_dims):
    values, indices = tl.min(x, axis=axis, return_indices=True, keep_dims=keep_dims)
    return tl.join(values.to(tl.float32), indices.to(tl.float32))


# Dots (a, b): shapes decide plain or batched


@triton.jit
def op_dot(a, b):
    return tl.dot(a, b)


@triton.jit
def op_dot_ieee(a, b):
    return tl.dot(a, b, input_precision="ieee")


@triton.jit
def op_dot_out_fp16(a, b):
    return tl.dot(a, b, out_dtype=tl.float16)


@triton.jit
def op_dot_acc(a, b):
    acc = tl.full((a.shape[0], b.shape[1]), 1.5, tl.float32)
    return tl.dot(a, b, acc)


# --- memory, program ids, construction, atomics ----------------------------------------------


@triton.jit
def masked_load_kernel(x_ptr, out_ptr, n, OTHER: tl.constexpr, USE_OTHER: tl.constexpr, COLUMN_MASK: tl.constexpr,
                       M: tl.constexpr, N: tl.constexpr):
    offsets = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    if COLUMN_MASK:
        mask = tl.arange(0, N)[None, :] < n  # [1, N], broadcast to the pointer's shape
    else:
        mask = offsets < n
    if USE_OTHER:
        x = tl.load(x_ptr + offsets, mask=mask, other=OTHER)
    else:
        x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x)


@triton.jit
def masked_store_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0)
    tl.store(out_ptr + offsets, x + 1, mask=(offsets < n) & (offsets % 3 != 0))


@triton.jit
def scalar_memory_kernel(x_ptr, out_ptr, INDEX: tl.constexpr):
    v = tl.load(x_ptr + INDEX)
    tl.store(out_ptr, v * 2)
    tl.store(out_ptr + 1, tl.load(x_ptr))
    tl.store(out_ptr + 2, 7)


@triton.jit
def pointer_arithmetic_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    reversed_i64 = (BLOCK - 1 - offsets).to(tl.int64)
    a = tl.load(x_ptr + reversed_i64)
    end = x_ptr + BLOCK
    b = tl.load(end - 1 - offsets)
    c = tl.load(x_ptr + offsets.to(tl.uint32))
    tl.store(out_ptr + offsets, a)
    tl.store(out_ptr + BLOCK + offsets, b)
    tl.store(out_ptr + 2 * BLOCK + offsets, c)


@triton.jit
def bool_memory_kernel(x_ptr, not_ptr, as_int8_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(not_ptr + offsets, ~x)
    tl.store(as_int8_ptr + offsets, x.to(tl.int8))


@triton.jit
def program_id_kernel(out_ptr):
    pid0 = tl.program_id(0)
    pid1 = tl.program_id(1)
    pid2 = tl.program_id(2)
    n0 = tl.num_programs(0)
    n1 = tl.num_programs(1)
    n2 = tl.num_programs(2)
    linear = (pid2 * n1 + pid1) * n0 + pid0
    tl.store(out_ptr + linear * 4 + 0, pid0)
    tl.store(out_ptr + linear * 4 + 1, pid1)
    tl.store(out_ptr + linear * 4 + 2, pid2)
    tl.store(out_ptr + linear * 4 + 3, n0 * n1 * n2)


@triton.jit
def construction_kernel(out_ptr, n):
    # full / zeros / zeros_like / arange with a non-zero start / cdiv / loops.
    a = tl.arange(3, 11)
    f = tl.full((8,), 2, tl.int32)
    z = tl.zeros_like(a.to(tl.float16))
    acc = tl.zeros((8,), tl.int32)
    for i in tl.static_range(0, 6, 2):
        acc += a * i
    for j in tl.range(1, n, 3):
        acc += j
    tl.debug_barrier()
    tl.store(out_ptr + tl.arange(0, 8), a)
    tl.store(out_ptr + 8 + tl.arange(0, 8), f)
    tl.store(out_ptr + 16 + tl.arange(0, 8), z.to(tl.int32) + tl.cdiv(n, 4))
    tl.store(out_ptr + 24 + tl.arange(0, 8), acc)


@triton.jit
def block_pointer_kernel(x_ptr, sums_ptr, tail_ptr, M, N, stride_m, stride_n, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    block = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_m, stride_n), offsets=(pid * BM, 0),
                              block_shape=(BM, BN), order=(1, 0))
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(0, tl.cdiv(N, BN)):
        acc += tl.load(block, boundary_check=(0, 1), padding_option="zero")
        block = tl.advance(block, (0, BN))
    sums = tl.make_block_ptr(sums_ptr, shape=(M, BN), strides=(BN, 1), offsets=(pid * BM, 0),
                             block_shape=(BM, BN), order=(1, 0))
    tl.store(sums, acc, boundary_check=(0,))
    last = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_m, stride_n),
                             offsets=(pid * BM, (tl.cdiv(N, BN) - 1) * BN), block_shape=(BM, BN), order=(1, 0))
    tail = tl.load(last, boundary_check=(0, 1), padding_option="nan")
    tl.store(tail_ptr + (pid * BM + tl.arange(0, BM))[:, None] * BN + tl.arange(0, BN)[None, :], tail)


@triton.jit
def atomic_kernel(ptr, index_ptr, value_ptr, old_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    index = tl.load(index_ptr + offsets, mask=mask, other=0)
    value = tl.load(value_ptr + offsets, mask=mask)
    old = OP(ptr + index, value, mask)
    tl.store(old_ptr + offsets, old, mask=mask)


@triton.jit
def atomic_cas_kernel(ptr, cmp_ptr, value_ptr, old_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    old = tl.atomic_cas(ptr + offsets, tl.load(cmp_ptr + offsets), tl.load(value_ptr + offsets))
    tl.store(old_ptr + offsets, old)


@triton.jit
def at_add(p, v, m):
    return tl.atomic_add(p, v, mask=m)


@triton.jit
def at_max(p, v, m):
    return tl.atomic_max(p, v, mask=m)


@triton.jit
def at_min(p, v, m):
    return tl.atomic_min(p, v, mask=m)


@triton.jit
def at_and(p, v, m):
    return tl.atomic_and(p, v, mask=m)


@triton.jit
def at_or(p, v, m):
    return tl.atomic_or(p, v, mask=m)


@triton.jit
def at_xor(p, v, m):
    return tl.atomic_xor(p, v, mask=m)


@triton.jit
def at_xchg(p, v, m):
    return tl.atomic_xchg(p, v, mask=m)


@triton.jit
def at_add_relaxed_cta(p, v, m):
    return tl.atomic_add(p, v, mask=m, sem="relaxed", scope="cta")


def run_masked_load(x, n, other, use_other, column_mask):
    m, cols = x.shape
    out = poisoned(x.shape, x.dtype, x.device)
    masked_load_kernel[(1,)](x, out, n, other, use_other, column_mask, M=m, N=cols)
    return {"out": out}


def run_masked_store(x, n, block=64):
    out = poisoned(x.shape, x.dtype, x.device)
    masked_store_kernel[(triton.cdiv(x.numel(), block),)](x, out, n, BLOCK=block)
    return {"out": out}


def run_scalar_memory(x, index):
    out = poisoned((3,), x.dtype, x.device)
    scalar_memory_kernel[(1,)](x, out, index)
    return {"out": out}


def run_pointer_arithmetic(x):
    out = poisoned((3 * x.numel(),), x.dtype, x.device)
    pointer_arithmetic_kernel[(1,)](x, out, BLOCK=x.numel())
    return {"out": out}


def run_bool_memory(x):
    negated = poisoned(x.shape, torch.bool, x.device)
    as_int8 = poisoned(x.shape, torch.int8, x.device)
    bool_memory_kernel[(1,)](x, negated, as_int8, BLOCK=x.numel())
    return {"not": negated, "int8": as_int8}


def run_program_id(grid, device_probe):
    total = grid[0] * grid[1] * grid[2]
    out = poisoned((total, 4), torch.int32, device_probe.device)
    program_id_kernel[tuple(grid)](out)
    return {"out": out}


def run_construction(n, device_probe):
    out = poisoned((32,), torch.int32, device_probe.device)
    construction_kernel[(1,)](out, n)
    return {"out": out}


def run_block_pointer(x, bm, bn):
    m, n = x.shape
    sums = poisoned((m, bn), torch.float32, x.device)
    programs = triton.cdiv(m, bm)
    tail = poisoned((programs * bm, bn), torch.float32, x.device)
    block_pointer_kernel[(programs,)](x, sums, tail, m, n, x.stride(0), x.stride(1), BM=bm, BN=bn)
    return {"sums": sums, "tail": tail}


def run_atomic(initial, index, value, op, return_old, block=64):
    target = initial.clone()
    old = poisoned(value.shape, value.dtype, value.device)
    n = value.numel()
    atomic_kernel[(triton.cdiv(n, block),)](target, index, value, old, n, globals()[op], BLOCK=block)
    # With colliding indices the old values depend on the order of the updates.
    return {"memory": target, "old": old} if return_old else {"memory": target}


def run_atomic_cas(initial, cmp, value):
    target = initial.clone()
    old = poisoned(value.shape, value.dtype, value.device)
    atomic_cas_kernel[(1,)](target, cmp, value, old, BLOCK=value.numel())
    return {"memory": target, "old": old}

