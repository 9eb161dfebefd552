"""The end-to-end kernels of the test suite and the host functions that launch them.

Loaded by `tests.kernels._loader.load_kernels(triton, tl)`, which binds `triton`
and `tl` to tritone or to upstream Triton before this text runs; the same
kernels then run under both (tests/kernels checks them against numpy/torch,
tests/differential against upstream's interpreter).

Every launcher takes CPU or device tensors and plain Python values, allocates
its outputs on the inputs' device, filled with a poison value (NaN or an
integer sentinel) so a lane the kernel forgets to write is seen, and returns
`{output name: tensor}`.
"""

import torch

from tests.kernels._data import poisoned

if "triton" not in globals() or "tl" not in globals():
    raise ImportError("load this file with tests.kernels._loader.load_kernels(triton, tl)")
triton = globals()["triton"]
tl = globals()["tl"]


# --- vector add ------------------------------------------------------------------------------


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


def run_add(x, y, block_size=1024):
    output = poisoned(x.shape, x.dtype, x.device)
    n_elements = output.numel()

    def grid(meta):
        return (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)

    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=block_size)
    return {"out": output}


# --- softmax ---------------------------------------------------------------------------------


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    # Persistent programs: each walks rows with a run-time stride.
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf")).to(tl.float32)
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=mask)


@triton.jit
def softmax_looped_kernel(output_ptr, input_ptr, row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # Rows longer than the block: an online max/sum pass, then a normalising pass.
    row = tl.program_id(0)
    row_in = input_ptr + row * row_stride
    row_out = output_ptr + row * row_stride
    running_max = -float("inf")
    running_sum = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(row_in + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(row_in + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(row_out + cols, tl.exp(x - running_max) / running_sum, mask=mask)


def run_softmax(x, block_size, num_programs):
    output = poisoned(x.shape, x.dtype, x.device)
    n_rows, n_cols = x.shape
    softmax_kernel[(num_programs,)](output, x, x.stride(0), output.stride(0), n_rows, n_cols,
                                    BLOCK_SIZE=block_size)
    return {"out": output}


def run_softmax_looped(x, block_size):
    output = poisoned(x.shape, x.dtype, x.device)
    softmax_looped_kernel[(x.shape[0],)](output, x, x.stride(0), x.shape[1], BLOCK_SIZE=block_size)
    return {"out": output}


# --- layer norm ------------------------------------------------------------------------------


@triton.jit
def layer_norm_fwd_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    partial_sums = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        partial_sums += tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(partial_sums, axis=0) / N
    partial_squares = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        partial_squares += x * x
    var = tl.sum(partial_squares, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def layer_norm_bwd_dx_kernel(DX, DY, DW, DB, X, W, Mean, Rstd, stride, N,
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    # dx for one row, and this row's share of dw/db added without a lock into
    # one of GROUP_SIZE_M partial rows.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    group = row % GROUP_SIZE_M
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.0)
    wdy = tl.where(mask, wdy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    partial_dw = dy * xhat
    partial_db = dy
    tl.atomic_add(DW + group * N + cols, partial_dw, mask=mask)
    tl.atomic_add(DB + group * N + cols, partial_db, mask=mask)


@triton.jit
def layer_norm_bwd_dwdb_kernel(DW, DB, FINAL_DW, FINAL_DB, M, N,
                               BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    # Second stage: sum the M partial rows column block by column block.
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.0)
        db += tl.load(DB + offs, mask=mask, other=0.0)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


def run_layer_norm_fwd(x, weight, bias, eps, block_size):
    M, N = x.shape
    y = poisoned(x.shape, x.dtype, x.device)
    mean = poisoned((M,), torch.float32, x.device)
    rstd = poisoned((M,), torch.float32, x.device)
    layer_norm_fwd_kernel[(M,)](x, y, weight, bias, mean, rstd, x.stride(0), N, eps, BLOCK_SIZE=block_size)
    return {"y": y, "mean": mean, "rstd": rstd}


def run_layer_norm_bwd(x, dy, weight, mean, rstd, group_size_m, block_size_n, block_size_m=4):
    M, N = x.shape
    dx = poisoned(x.shape, x.dtype, x.device)
    partial_dw = torch.zeros((group_size_m, N), dtype=torch.float32, device=x.device)
    partial_db = torch.zeros((group_size_m, N), dtype=torch.float32, device=x.device)
    dw = poisoned((N,), weight.dtype, x.device)
    db = poisoned((N,), weight.dtype, x.device)
    layer_norm_bwd_dx_kernel[(M,)](dx, dy, partial_dw, partial_db, x, weight, mean, rstd, x.stride(0), N,
                                   GROUP_SIZE_M=group_size_m, BLOCK_SIZE_N=block_size_n)
    dwdb_block_n = 16
    layer_norm_bwd_dwdb_kernel[(triton.cdiv(N, dwdb_block_n),)](
        partial_dw, partial_db, dw, db, group_size_m, N, BLOCK_SIZE_M=block_size_m, BLOCK_SIZE_N=dwdb_block_n)
    return {"dx": dx, "dw": dw, "db": db}


# --- dropout ---------------------------------------------------------------------------------


@triton.jit
def seeded_dropout_kernel(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    x_keep = random > p
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


def run_dropout(x, p, seed, block_size=256):
    output = poisoned(x.shape, x.dtype, x.device)
    n = x.numel()
    seeded_dropout_kernel[(triton.cdiv(n, block_size),)](x, output, n, p, seed, BLOCK_SIZE=block_size)
    return {"out": output}


# --- matmul ----------------------------------------------------------------------------------


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        accumulator = tl.dot(a, b, accumulator, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def run_matmul(a, b, out_dtype, block_m=32, block_n=32, block_k=16, group_m=2, input_precision=None):
    M, K = a.shape
    _, N = b.shape
    c = poisoned((M, N), out_dtype, a.device)
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                        GROUP_M=group_m, INPUT_PRECISION=input_precision)
    return {"c": c}


# --- scans -----------------------------------------------------------------------------------


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=AXIS, reverse=REVERSE))


@triton.jit
def _affine_combine(a_left, b_left, a_right, b_right):
    # Composition of h -> a*h + b maps: not commutative, so the argument order matters.
    return a_left * a_right, b_left * a_right + b_right


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def scan_kernel(a_ptr, b_ptr, h_ptr, runmax_ptr, N: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    _, h = tl.associative_scan((a, b), axis=0, combine_fn=_affine_combine, reverse=REVERSE)
    tl.store(h_ptr + offs, h)
    tl.store(runmax_ptr + offs, tl.associative_scan(b, 0, _max_combine, reverse=REVERSE))


def run_cumsum(x, axis, reverse, out_dtype):
    M, N = x.shape
    out = poisoned((M, N), out_dtype, x.device)
    cumsum_kernel[(1,)](x, out, M=M, N=N, AXIS=axis, REVERSE=reverse)
    return {"out": out}


def run_scan(a, b, reverse):
    n = a.numel()
    h = poisoned((n,), a.dtype, a.device)
    runmax = poisoned((n,), b.dtype, b.device)
    scan_kernel[(1,)](a, b, h, runmax, N=n, REVERSE=reverse)
    return {"h": h, "runmax": runmax}


# --- argmax ----------------------------------------------------------------------------------


@triton.jit
def argmax_kernel(x_ptr, argmax_ptr, argmin_ptr, max_ptr, max_index_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    x = tl.load(x_ptr + rows[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(argmax_ptr + rows, tl.argmax(x, axis=1))
    tl.store(argmin_ptr + rows, tl.argmin(x, axis=1))
    values, indices = tl.max(x, axis=1, return_indices=True)
    tl.store(max_ptr + rows, values)
    tl.store(max_index_ptr + rows, indices)


def run_argmax(x):
    M, N = x.shape
    outputs = {
        "argmax": poisoned((M,), torch.int32, x.device),
        "argmin": poisoned((M,), torch.int32, x.device),
        "max": poisoned((M,), x.dtype, x.device),
        "max_index": poisoned((M,), torch.int32, x.device),
    }
    argmax_kernel[(1,)](x, outputs["argmax"], outputs["argmin"], outputs["max"], outputs["max_index"], M=M, N=N)
    return outputs


# --- run-time loops --------------------------------------------------------------------------


@triton.jit
def collatz_kernel(n_ptr, steps_ptr, count, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < count
    n = tl.load(n_ptr + offsets, mask=mask, other=1)
    steps = tl.zeros((BLOCK,), dtype=tl.int32)
    while tl.max(n, axis=0) > 1:
        active = n > 1
        n = tl.where(active, tl.where(n % 2 == 0, n // 2, 3 * n + 1), n)
        steps += active.to(tl.int32)
    tl.store(steps_ptr + offsets, steps, mask=mask)


@triton.jit
def data_dependent_loops_kernel(x_ptr, reps_ptr, while_out_ptr, for_out_ptr, BLOCK: tl.constexpr):
    # Each program repeats its update a number of times read from memory.
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    reps = tl.load(reps_ptr + pid)
    x = tl.load(x_ptr + offsets)
    i = 0
    while i < reps:
        x = x * 3 + i
        i += 1
    tl.store(while_out_ptr + offsets, x)
    y = tl.load(x_ptr + offsets)
    for j in range(1, reps, 2):
        y = (y ^ j) + pid
    tl.store(for_out_ptr + offsets, y)


def run_collatz(n, block=64):
    count = n.numel()
    steps = poisoned((count,), torch.int32, n.device)
    collatz_kernel[(triton.cdiv(count, block),)](n, steps, count, BLOCK=block)
    return {"steps": steps}


def run_data_dependent_loops(x, reps):
    programs = reps.numel()
    block = x.numel() // programs
    while_out = poisoned(x.shape, x.dtype, x.device)
    for_out = poisoned(x.shape, x.dtype, x.device)
    data_dependent_loops_kernel[(programs,)](x, reps, while_out, for_out, BLOCK=block)
    return {"while_out": while_out, "for_out": for_out}


# --- atomic histogram ------------------------------------------------------------------------


@triton.jit
def atomic_histogram_kernel(x_ptr, weight_ptr, counts_ptr, weights_ptr, n,
                            NUM_BINS: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0)
    w = tl.load(weight_ptr + offsets, mask=mask, other=0.0)
    bins = x % NUM_BINS
    tl.atomic_add(counts_ptr + bins, 1, mask=mask)
    tl.atomic_add(weights_ptr + bins, w, mask=mask)


def run_atomic_histogram(x, w, num_bins, block=128):
    n = x.numel()
    counts = torch.zeros((num_bins,), dtype=torch.int32, device=x.device)
    weights = torch.zeros((num_bins,), dtype=torch.float32, device=x.device)
    atomic_histogram_kernel[(triton.cdiv(n, block),)](x, w, counts, weights, n, NUM_BINS=num_bins, BLOCK=block)
    return {"counts": counts, "weights": weights}


# --- nested @jit helpers ---------------------------------------------------------------------


@triton.jit
def _scale_shift(x, scale, shift):
    return x * scale + shift


@triton.jit
def _stats(x, y):
    # Calls a second-level helper, returns a tuple (block, scalar, scalar).
    s = _scale_shift(x, 3.0, y)
    return s, tl.sum(s, axis=0), tl.max(s, axis=0)


@triton.jit
def nested_helpers_kernel(x_ptr, y_ptr, out_ptr, sum_ptr, max_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    scaled, total, biggest = _stats(x, y)
    tl.store(out_ptr + offsets, scaled)
    tl.store(sum_ptr + pid, total)
    tl.store(max_ptr + pid, biggest)


def run_nested_helpers(x, y, block=32):
    programs = x.numel() // block
    out = poisoned(x.shape, x.dtype, x.device)
    sums = poisoned((programs,), x.dtype, x.device)
    maxes = poisoned((programs,), x.dtype, x.device)
    nested_helpers_kernel[(programs,)](x, y, out, sums, maxes, BLOCK=block)
    return {"out": out, "sum": sums, "max": maxes}
