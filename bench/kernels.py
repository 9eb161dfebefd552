"""The benchmark kernels, written once in the Triton language and bound to either
implementation.

`KERNEL_SOURCE` is plain kernel text that names only `triton` and `tl`.
`bind(triton_module, tl_module)` executes it with those two names bound to the
chosen implementation (upstream `triton` or `tritone`), so both compile exactly
the same text. The text is compiled under this file's name with its real line
numbers, so `inspect.getsource` (which both implementations use to read a
kernel) finds each kernel here and error messages point into this file.
`Kernels.autotune` wraps one of them in the same implementation's autotuner.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

KERNEL_SOURCE = r'''
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def launch_probe_kernel(x_ptr, y_ptr, out_ptr, n):
    offsets = tl.arange(0, 16)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def launch_probe_tuned_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def launch_probe_descriptor_kernel(x_desc, y_desc, out_desc):
    out_desc.store([0], x_desc.load([0]) + y_desc.load([0]))


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # -inf in the padding adds exp(-inf) = 0 to the row's sum.
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)
    numerator = tl.exp(shifted)
    denominator = tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, numerator / denominator, mask=mask)


@triton.jit
def layer_norm_fwd_kernel(X, Y, W, B, Mean, Rstd, row_stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row * row_stride
    Y += row * row_stride
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    squares = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        centred = tl.where(cols < N, x - mean, 0.0)
        squares += centred * centred
    rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask).to(tl.float32)
        b = tl.load(B + cols, mask=mask).to(tl.float32)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def layer_norm_bwd_dx_kernel(DX, DY, X, W, Mean, Rstd, PartialDW, PartialDB, Lock, row_stride, N,
                             GROUP: tl.constexpr, BLOCK: tl.constexpr):
    # One program per row, the whole row in one block. The row's dw and db terms are
    # added into row `row % GROUP` of the partial buffers under that row's spin lock;
    # Lock[GROUP + g] says whether buffer row g holds a value yet.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    X += row * row_stride
    DY += row * row_stride
    DX += row * row_stride
    group = row % GROUP
    Lock += group
    Filled = Lock + GROUP
    PartialDW += group * N + cols
    PartialDB += group * N + cols
    x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = tl.where(mask, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx.to(DX.dtype.element_ty), mask=mask)
    dw = (dy * xhat).to(PartialDW.dtype.element_ty)
    db = dy.to(PartialDB.dtype.element_ty)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    filled = tl.load(Filled)
    if filled == 0:
        tl.atomic_xchg(Filled, 1)
    else:
        dw += tl.load(PartialDW, mask=mask)
        db += tl.load(PartialDB, mask=mask)
    tl.store(PartialDW, dw, mask=mask)
    tl.store(PartialDB, db, mask=mask)
    # Every thread's stores must be done before the lock is released.
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def layer_norm_bwd_dwdb_kernel(PartialDW, PartialDB, DW, DB, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offsets = rows[:, None] * N + cols[None, :]
        dw += tl.load(PartialDW + offsets, mask=mask, other=0.0)
        db += tl.load(PartialDB + offsets, mask=mask, other=0.0)
    tl.store(DW + cols, tl.sum(dw, axis=0).to(DW.dtype.element_ty), mask=cols < N)
    tl.store(DB + cols, tl.sum(db, axis=0).to(DB.dtype.element_ty), mask=cols < N)


@triton.jit
def matmul_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped ordering: consecutive programs sweep GROUP_M block rows of C column by
    # column, so the A and B blocks they share are still in L2 when reused.
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(M, BLOCK_M)
    blocks_n = tl.cdiv(N, BLOCK_N)
    programs_per_group = GROUP_M * blocks_n
    first_block_m = (pid // programs_per_group) * GROUP_M
    rows_in_group = tl.minimum(blocks_m - first_block_m, GROUP_M)
    block_m = first_block_m + (pid % programs_per_group) % rows_in_group
    block_n = (pid % programs_per_group) // rows_in_group
    # Rows and columns past the edge wrap around: loads stay in bounds and the
    # store below masks them off.
    offs_am = (block_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (block_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = B + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_left = K - k
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = block_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(C + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, acc.to(C.dtype.element_ty), mask=c_mask)


@triton.jit
def attention_key_blocks(acc, l_i, m_i, q, K, V, offs_m, offs_n, offs_d, lo, hi, qk_scale,
                         HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, ON_DIAGONAL: tl.constexpr):
    # Online softmax over key blocks [lo, hi): m_i is the running row maximum of the
    # scaled scores (base 2), l_i the running sum of exp2(score - m_i), acc the
    # running sum of those weights times V. Blocks on the diagonal mask the future.
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        keys = start_n + offs_n
        k = tl.load(K + keys[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, k) * qk_scale
        if ON_DIAGONAL:
            qk = qk + tl.where(offs_m[:, None] >= keys[None, :], 0.0, -1.0e6)
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp2(qk - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + keys[:, None] * HEAD_DIM + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attention_fwd_kernel(Q, K, V, Out, sm_scale, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    # Q, K, V, Out are contiguous (batch, heads, N_CTX, HEAD_DIM); one program per
    # BLOCK_M queries of one (batch, head). N_CTX is a multiple of BLOCK_M, and
    # BLOCK_M of BLOCK_N.
    start_m = tl.program_id(0)
    head_base = tl.program_id(1) * N_CTX * HEAD_DIM
    Q += head_base
    K += head_base
    V += head_base
    Out += head_base
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    # exp(x) = exp2(x * log2(e)): fold log2(e) into the score scale.
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        hi = start_m * BLOCK_M
    else:
        hi = N_CTX
    acc, l_i, m_i = attention_key_blocks(acc, l_i, m_i, q, K, V, offs_m, offs_n, offs_d, 0, hi, qk_scale,
                                         HEAD_DIM, BLOCK_N, False)
    if CAUSAL:
        acc, l_i, m_i = attention_key_blocks(acc, l_i, m_i, q, K, V, offs_m, offs_n, offs_d, start_m * BLOCK_M,
                                             (start_m + 1) * BLOCK_M, qk_scale, HEAD_DIM, BLOCK_N, True)
    out = acc / l_i[:, None]
    tl.store(Out + offs_m[:, None] * HEAD_DIM + offs_d[None, :], out.to(Out.dtype.element_ty))

@triton.jit
def gelu_mul_bf16_kernel(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # Inductor's pointwise style: loads upcast to fp32, math in fp32, the store
    # rounds back to the output's bf16.
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + xindex, xmask).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + xindex, xmask, eviction_policy="evict_last").to(tl.float32)
    tmp2 = tmp0 * 0.5
    tmp3 = tl.erf(tmp0 * 0.7071067811865476) + 1.0
    tmp4 = tmp2 * tmp3 * tmp1
    tl.store(out_ptr0 + xindex, tmp4.to(out_ptr0.dtype.element_ty), xmask)


@triton.jit
def softmax_bf16_kernel(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    # Inductor's persistent-reduction softmax: [XBLOCK, R0_BLOCK] rows in one block.
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    mask = xmask & r0_mask
    tmp0 = tl.load(in_ptr0 + (r0_index + r0_numel * xindex), mask, eviction_policy="evict_first",
                   other=0.0).to(tl.float32)
    tmp1 = tl.where(mask, tmp0, float("-inf"))
    tmp2 = tl.max(tmp1, 1)[:, None]
    tmp3 = tl.exp(tmp0 - tmp2)
    tmp4 = tl.sum(tl.where(mask, tmp3, 0.0), 1)[:, None]
    tl.store(out_ptr0 + (r0_index + r0_numel * xindex), (tmp3 / tmp4).to(out_ptr0.dtype.element_ty), mask)


@triton.jit
def cross_entropy_kernel(logits_ptr, row_stride, labels_ptr, loss_ptr, n_cols, BLOCK: tl.constexpr):
    # One row of a large vocabulary per program, block by block: an online
    # softmax (running max and sum), then the gradient softmax - onehot written
    # over the logits in place; the row's loss is logsumexp - logit[label].
    row = tl.program_id(0).to(tl.int64)
    logits_ptr += row * row_stride
    label = tl.load(labels_ptr + row)
    label_logit = tl.load(logits_ptr + label).to(tl.float32)
    running_max = float("-inf")
    running_sum = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max
    log_sum = running_max + tl.log(running_sum)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        grad = tl.exp(x - log_sum)
        grad = tl.where(cols == label, grad - 1.0, grad)
        tl.store(logits_ptr + cols, grad.to(logits_ptr.dtype.element_ty), mask=cols < n_cols)
    tl.store(loss_ptr + row, log_sum - label_logit)
'''


@dataclass(frozen=True)
class Kernels:
    """The benchmark kernels of one implementation, as its `@jit` functions, and the
    implementation's package (`triton` or `tritone`)."""

    implementation: str
    package: ModuleType
    add: Any
    launch_probe: Any
    launch_probe_tuned: Any
    launch_probe_descriptor: Any
    softmax: Any
    layer_norm_fwd: Any
    layer_norm_bwd_dx: Any
    layer_norm_bwd_dwdb: Any
    matmul: Any
    attention_fwd: Any
    gelu_mul_bf16: Any
    softmax_bf16: Any
    cross_entropy: Any

    def autotune(self, kernel: Any, configs: Sequence[tuple[dict[str, Any], int, int]], key: Sequence[str],
                 do_bench: Callable[..., Any] | None = None) -> Any:
        """`kernel` under this implementation's `autotune`, choosing among `configs`
        (meta-parameters, num_warps, num_stages) whenever the `key` arguments change,
        timing them with `do_bench(kernel_call, quantiles)` (None: the package's own).

        Each call makes a new autotuner, with no choice made yet."""
        package = self.package
        choices = [package.Config(dict(meta), num_warps=warps, num_stages=stages) for meta, warps, stages in configs]
        return package.autotune(configs=choices, key=list(key), do_bench=do_bench)(kernel)


def _source_first_line() -> int:
    """Line of this file on which KERNEL_SOURCE's text starts (1-based)."""
    text = Path(__file__).read_text(encoding="utf-8")
    return text[: text.index(KERNEL_SOURCE)].count("\n") + 1


def bind(triton_module: ModuleType, tl_module: ModuleType) -> Kernels:
    """Execute KERNEL_SOURCE with `triton` and `tl` bound to the given modules.

    Each call makes new `@jit` functions, with their own compile caches."""
    tree = ast.parse(KERNEL_SOURCE, filename=__file__)
    ast.increment_lineno(tree, _source_first_line() - 1)
    namespace: dict[str, Any] = {
        "__name__": f"bench.kernels.{triton_module.__name__}",
        "triton": triton_module,
        "tl": tl_module,
    }
    exec(compile(tree, __file__, "exec"), namespace)
    return Kernels(
        implementation=triton_module.__name__,
        package=triton_module,
        add=namespace["add_kernel"],
        launch_probe=namespace["launch_probe_kernel"],
        launch_probe_tuned=namespace["launch_probe_tuned_kernel"],
        launch_probe_descriptor=namespace["launch_probe_descriptor_kernel"],
        softmax=namespace["softmax_kernel"],
        layer_norm_fwd=namespace["layer_norm_fwd_kernel"],
        layer_norm_bwd_dx=namespace["layer_norm_bwd_dx_kernel"],
        layer_norm_bwd_dwdb=namespace["layer_norm_bwd_dwdb_kernel"],
        matmul=namespace["matmul_kernel"],
        attention_fwd=namespace["attention_fwd_kernel"],
        gelu_mul_bf16=namespace["gelu_mul_bf16_kernel"],
        softmax_bf16=namespace["softmax_bf16_kernel"],
        cross_entropy=namespace["cross_entropy_kernel"],
    )
