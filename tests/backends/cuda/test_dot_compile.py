"""Dot kernels written in the Triton language compile with NVRTC for every target
(sm_61 ... sm_120) without a GPU, with the instructions each target's dot
path calls for (mma.sync shapes, ldmatrix, cp.async; FMA on Pascal) and no
local-memory spills; the software pipeline's structure; shared memory that
does not fit fails at compile time.

The kernels here are also the GPU tests' (test_dot_gpu.py) and the fragment
simulator's (test_dot_fragments.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from types import SimpleNamespace

import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir
from tritone.errors import OutOfResources

# -- kernels ---------------------------------------------------------------------------------


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, stride_am, stride_ak, stride_bk, stride_bn, M: tl.constexpr, N: tl.constexpr,
               K: tl.constexpr, TRANS_A: tl.constexpr, TRANS_B: tl.constexpr, ACC: tl.constexpr,
               PRECISION: tl.constexpr):
    """c[M, N] = a @ b for one block; TRANS_A: a is read as the transpose of a [K, M] block (likewise b)."""
    offs_m = tl.arange(0, M)
    offs_n = tl.arange(0, N)
    offs_k = tl.arange(0, K)
    if TRANS_A:
        a = tl.trans(tl.load(a_ptr + offs_k[:, None] * stride_ak + offs_m[None, :] * stride_am))
    else:
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak)
    if TRANS_B:
        b = tl.trans(tl.load(b_ptr + offs_n[:, None] * stride_bn + offs_k[None, :] * stride_bk))
    else:
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn)
    c = tl.dot(a, b, out_dtype=ACC, input_precision=PRECISION)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], c)


@triton.jit
def batched_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """c[B, M, N] = a[B, M, K] @ b[B, K, N], contiguous."""
    ob = tl.arange(0, B)[:, None, None]
    om = tl.arange(0, M)[None, :, None]
    on = tl.arange(0, N)[None, None, :]
    ok = tl.arange(0, K)
    a = tl.load(a_ptr + ob * M * K + om * K + ok[None, None, :])
    b = tl.load(b_ptr + ob * K * N + ok[None, :, None] * N + on)
    tl.store(c_ptr + ob * M * N + om * N + on, tl.dot(a, b))


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  ACTIVATION: tl.constexpr, PRECISION: tl.constexpr, LOOP_STAGES: tl.constexpr):
    """Triton's tutorial matmul: grouped tile order, masked edges, an optional fused
    activation, the result cast to c's element type."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=LOOP_STAGES):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "leaky_relu":
        acc = leaky_relu(acc)
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.jit
def attention_kernel(Q, K, V, sm_scale, Out, stride_qz, stride_qh, stride_qm, stride_kz, stride_kh, stride_kn,
                     stride_vz, stride_vh, stride_vn, stride_oz, stride_oh, stride_om, H, N_CTX,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Flash attention forward (online softmax in base 2), one BLOCK_M rows of one head
    per program; N_CTX a multiple of the blocks."""
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :])
    k_ptrs = K + off_z * stride_kz + off_h * stride_kh + offs_n[None, :] * stride_kn + offs_d[:, None]
    v_ptrs = V + off_z * stride_vz + off_h * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :]
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        k = tl.load(k_ptrs)
        qk = tl.dot(q, k)
        if CAUSAL:
            qk = qk * qk_scale + tl.where(offs_m[:, None] >= (start_n + offs_n[None, :]), 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(v_ptrs)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    acc = acc / l_i[:, None]
    tl.store(Out + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :],
             acc.to(Out.type.element_ty))


@triton.jit
def attention_block_ptr_kernel(Q, K, V, sm_scale, Out, stride_qm, stride_kn, stride_vn, stride_om, N_CTX,
                               HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Attention over one head with block pointers and `k` loaded [BLOCK_N, HEAD_DIM] and
    transposed for the dot (the form of Triton's tutorial)."""
    start_m = tl.program_id(0)
    q_ptr = tl.make_block_ptr(Q, (N_CTX, HEAD_DIM), (stride_qm, 1), (start_m * BLOCK_M, 0), (BLOCK_M, HEAD_DIM),
                              (1, 0))
    k_ptr = tl.make_block_ptr(K, (N_CTX, HEAD_DIM), (stride_kn, 1), (0, 0), (BLOCK_N, HEAD_DIM), (1, 0))
    v_ptr = tl.make_block_ptr(V, (N_CTX, HEAD_DIM), (stride_vn, 1), (0, 0), (BLOCK_N, HEAD_DIM), (1, 0))
    q = tl.load(q_ptr)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for _ in tl.range(0, N_CTX, BLOCK_N):
        qk = tl.dot(q, tl.trans(tl.load(k_ptr)))
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), tl.load(v_ptr), acc * alpha[:, None])
        m_i = m_ij
        k_ptr = tl.advance(k_ptr, (BLOCK_N, 0))
        v_ptr = tl.advance(v_ptr, (BLOCK_N, 0))
    o_ptr = tl.make_block_ptr(Out, (N_CTX, HEAD_DIM), (stride_om, 1), (start_m * BLOCK_M, 0), (BLOCK_M, HEAD_DIM),
                              (1, 0))
    tl.store(o_ptr, (acc / l_i[:, None]).to(tl.float16))


@triton.jit
def dtype_zoo_kernel(f16, bf16, f32, i8, e4, e5, out32, out16, out_i32):
    """Every dot flavour once: each input holds a [32, K] a then a [K, 32] b (K = 32,
    64 for 8-bit types); results go to consecutive 32x32 blocks of the outputs."""
    r = tl.arange(0, 32)
    k64 = tl.arange(0, 64)
    a_off = r[:, None] * 32 + r[None, :]
    b_off = 1024 + a_off
    o = a_off
    a8_off = r[:, None] * 64 + k64[None, :]
    b8_off = 2048 + k64[:, None] * 32 + r[None, :]
    a16, b16 = tl.load(f16 + a_off), tl.load(f16 + b_off)
    tl.store(out32 + o, tl.dot(a16, b16))
    tl.store(out16 + o, tl.dot(a16, b16, out_dtype=tl.float16))
    tl.store(out32 + 1024 + o, tl.dot(tl.trans(b16), tl.trans(a16)))
    tl.store(out32 + 2048 + o, tl.dot(tl.load(bf16 + a_off), tl.load(bf16 + b_off)))
    a32, b32 = tl.load(f32 + a_off), tl.load(f32 + b_off)
    tl.store(out32 + 3072 + o, tl.dot(a32, b32, input_precision="tf32"))
    tl.store(out32 + 4096 + o, tl.dot(a32, b32, input_precision="tf32x3"))
    tl.store(out32 + 5120 + o, tl.dot(a32, b32, input_precision="ieee"))
    tl.store(out_i32 + o, tl.dot(tl.load(i8 + a8_off), tl.load(i8 + b8_off)))
    ae4, be4 = tl.load(e4 + a8_off), tl.load(e4 + b8_off)
    ae5, be5 = tl.load(e5 + a8_off), tl.load(e5 + b8_off)
    tl.store(out32 + 6144 + o, tl.dot(ae4, be4))
    tl.store(out32 + 7168 + o, tl.dot(ae5, be4))
    tl.store(out16 + 1024 + o, tl.dot(ae5, be5, out_dtype=tl.float16))
    tl.store(out32 + 8192 + o, tl.dot(tl.trans(tl.load(e4 + 2048 + k64[:, None] * 32 + r[None, :])), be5))


# -- compiling -------------------------------------------------------------------------------

ARCHS = (61, 75, 80, 86, 89, 90, 120)


def ir_module(fn, signature: dict, constexprs: dict, arch: int, num_warps: int = 4, num_stages: int = 3,
              divisible=None):
    """The frontend's IR of `fn` for sm_`arch`; the `divisible` arguments (all pointer
    and integer ones by default) specialised as multiples of 16."""
    if divisible is None:
        divisible = [name for name, ty in signature.items() if ty.startswith("*") or ty.startswith("i")]
    src = ASTSource(fn, signature, constexprs, {name: [["tt.divisibility", 16]] for name in divisible})
    return make_ir(src, GPUTarget("cuda", arch, 32), {"num_warps": num_warps, "num_stages": num_stages})


ZOO_SIG = {"f16": "*fp16", "bf16": "*bf16", "f32": "*fp32", "i8": "*i8", "e4": "*fp8e4nv", "e5": "*fp8e5",
           "out32": "*fp32", "out16": "*fp16", "out_i32": "*i32"}
MATMUL_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
              "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
ATTENTION_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "Out": "*fp16",
                 **{name: "i32" for name in ("stride_qz", "stride_qh", "stride_qm", "stride_kz", "stride_kh",
                                             "stride_kn", "stride_vz", "stride_vh", "stride_vn", "stride_oz",
                                             "stride_oh", "stride_om", "H", "N_CTX")}}


ATTENTION_BLOCK_PTR_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "Out": "*fp16",
                           "stride_qm": "i32", "stride_kn": "i32", "stride_vn": "i32", "stride_om": "i32",
                           "N_CTX": "i32"}


def matmul_constexprs(block_m=64, block_n=64, block_k=32, activation="", precision="tf32", loop_stages=None):
    return {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP_M": 8, "ACTIVATION": activation,
            "PRECISION": precision, "LOOP_STAGES": loop_stages, "stride_ak": 1, "stride_bn": 1, "stride_cn": 1}


def _ptx_count(ptx: str, pattern: str) -> int:
    return len(re.findall(pattern, ptx))


def _no_local_memory(ptx: str, arch: int) -> None:
    assert "ld.local" not in ptx and "st.local" not in ptx, f"sm_{arch}: registers spilled to local memory"


# -- tests ----------------------------------------------------------------------------------------

def test_every_dot_flavour_compiles_for_every_target(cuda_compile):
    results = cuda_compile(lambda: SimpleNamespace(module=ir_module(dtype_zoo_kernel, ZOO_SIG, {}, 80)))
    for arch, (_, _, result) in results.items():
        ptx = result.ptx
        _no_local_memory(ptx, arch)
        mma = _ptx_count(ptx, r"mma\.sync")
        if arch >= 80:
            for shape in (r"m16n8k16\.row\.col\.f32\.f16", r"m16n8k16\.row\.col\.f16\.f16", r"m16n8k16.*bf16",
                          r"m16n8k8\.row\.col\.f32\.tf32", r"m16n8k32\.row\.col\.satfinite\.s32\.s8"):
                assert _ptx_count(ptx, shape), f"sm_{arch}: no {shape}"
            # native fp8 mma.sync from 8.9 on; on Hopper these 32-row blocks are fp16, as Triton's below wgmma
            native_fp8 = arch >= 89 and arch // 10 != 9
            assert bool(_ptx_count(ptx, r"\.e4m3\.e4m3")) == native_fp8, f"sm_{arch}: fp8 mma"
            assert _ptx_count(ptx, r"ldmatrix.*\.trans"), f"sm_{arch}: transposed operands without ldmatrix.trans"
        elif arch == 75:
            assert _ptx_count(ptx, r"m16n8k8\.row\.col\.f32\.f16")
            assert _ptx_count(ptx, r"m8n8k16\.row\.col\.satfinite\.s32\.s8")
            assert not _ptx_count(ptx, "bf16.bf16"), "Turing has no bf16 mma: FMA"
        else:
            assert mma == 0 and _ptx_count(ptx, r"fma\.rn\.f32"), "Pascal: FMA"


def test_matmul_compiles_for_every_target(cuda_compile):
    def build():
        return SimpleNamespace(module=ir_module(matmul_kernel, MATMUL_SIG, matmul_constexprs(activation="leaky_relu"),
                                                80))

    for arch, (_, metadata, result) in cuda_compile(build, options={"num_stages": 3}).items():
        ptx = result.ptx
        _no_local_memory(ptx, arch)
        assert bool(_ptx_count(ptx, r"cp\.async\.cg\.shared\.global")) == (arch >= 80), f"sm_{arch}: cp.async"
        assert bool(_ptx_count(ptx, r"wgmma\.mma_async")) == (arch == 90), f"sm_{arch}: wgmma"
        assert bool(_ptx_count(ptx, r"ldmatrix")) == (arch >= 75 and arch != 90), f"sm_{arch}: ldmatrix"
        if arch == 90:
            # wgmma stays in flight across trips: a third stage, so the copies never
            # overwrite the tiles the running group reads
            assert metadata["shared"] == 3 * (64 * 32 + 32 * 64) * 2
            assert _ptx_count(ptx, r"wgmma\.wait_group\.sync\.aligned 1") == 1
        elif arch >= 80:
            # two stages of a 64x32 and a 32x64 fp16 tile, as Triton
            assert metadata["shared"] == 2 * (64 * 32 + 32 * 64) * 2
            # one commit group per pipelined load (Triton's): trip i waits for all but
            # the (stages - 2) * 2 groups of the trips after it
            assert _ptx_count(ptx, r"cp\.async\.wait_group\s+2;") == 1
            assert _ptx_count(ptx, r"cp\.async\.commit_group") == 2 * 2 + 2


@pytest.mark.parametrize("stages", [2, 3, 5])
def test_pipeline_waits_for_one_group_per_load(cuda_compile, stages):
    """Each pipelined load is a commit group of its own, as in Triton's PTX (the
    count after a tab, as LLVM prints it): with two loads and `stages` stages, a
    trip leaves the 2 * (stages - 2) groups of the trips after it in flight."""
    consts = matmul_constexprs(64, 64, 64, loop_stages=stages)
    results = cuda_compile(lambda: SimpleNamespace(module=ir_module(matmul_kernel, MATMUL_SIG, consts, 90)),
                           archs=(90,))
    ptx = results[90][2].ptx
    waits = re.findall(r"cp\.async\.wait_group([^;]*);", ptx)
    assert waits == [f" \t{2 * (stages - 2)}", " \t0"]
    assert _ptx_count(ptx, r"cp\.async\.commit_group") == 2 * (stages - 1) + 2


def test_attention_compiles_for_every_target(cuda_compile):
    def build():
        consts = {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 32, "CAUSAL": True}
        return SimpleNamespace(module=ir_module(attention_kernel, ATTENTION_SIG, consts, 80))

    for arch, (_, _, result) in cuda_compile(build, archs=(61, 75, 80, 90, 120)).items():
        _no_local_memory(result.ptx, arch)
        assert bool(_ptx_count(result.ptx, r"mma\.sync|wgmma\.mma_async")) == (arch >= 75)
        assert bool(_ptx_count(result.ptx, r"wgmma\.mma_async")) == (arch == 90)


def test_attention_loop_code_shape():
    """What keeps the attention loop as short as Triton's: one block per SM in the
    launch bounds (ptxas may then use the registers it needs), the k/v addresses
    as 32-bit offsets added once onto an opaque base, and the row max and sum
    reduced across lanes without a lane-ordered swap (both are commutative)."""
    consts = {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 32, "CAUSAL": False}
    source, _, _ = generate_cuda(ir_module(attention_kernel, ATTENTION_SIG, consts, 80), 80)
    assert "__launch_bounds__(128, 1)" in source
    assert "tt_upper" not in source and source.count("tt_shfl_xor(") >= 4
    loads = re.findall(r"(v\w+)\[(?:\d+|i)\] = (tt_base\d+) \+ \(int\)\(", source)
    assert loads, "no address folded onto an opaque base"
    # the k/v offsets follow the result's registers by masks: one loop per address block
    assert re.search(r"for \(int i = 0; i < \d+; \+\+i\) v\w+\[i\] = tt_base\d+ \+ \(int\)\(", source)
    # a kernel without a dot leaves ptxas its occupancy heuristics
    source, _, _ = generate_cuda(ir_module(_copy_kernel, {"x": "*fp32", "y": "*fp32"}, {}, 80), 80)
    assert "__launch_bounds__(128) " in source


def test_register_maps_as_loop_indices():
    from tritone.backends.cuda.codegen_base import register_index

    maps = [[0, 1, 2, 3], [0, 1, 0, 1, 0, 1, 0, 1], [0, 0, 2, 2, 4, 4, 6, 6], [0, 0, 1, 1], [0, 2, 1, 3],
            [0, 1, 3, 2], [0] * 8]
    for sources in maps:
        index = register_index(sources)
        assert index is not None, sources
        # the C expression, evaluated as Python (the same operators), gives every register's source
        assert [eval(index, {"i": reg}) for reg in range(len(sources))] == sources, (sources, index)
    assert register_index([0, 1, 2, 3]) == "i"
    # maps that are not linear over the index bits: written out, register by register
    assert register_index([1, 0]) is None
    assert register_index([0, 1, 1, 1]) is None
    assert register_index([0, 0, 1]) is None  # three registers: no index bits


@triton.jit
def _copy_kernel(x, y):
    offsets = tl.arange(0, 512)
    tl.store(y + offsets, tl.load(x + offsets))


def test_block_pointer_attention_is_pipelined():
    consts = {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 32}
    module = ir_module(attention_block_ptr_kernel, ATTENTION_BLOCK_PTR_SIG, consts, 80)
    generate_cuda(module, 80)
    ops = _loop_ops(module)
    assert ops.count("async_copy") == 2 and "load" not in ops and "permute" in ops  # k's tile seen transposed


@triton.jit
def block_sparse_kernel(q_ptr, k_ptr, v_ptr, idx_ptr, out_ptr, NB, log_ptr, BM: tl.constexpr, BN: tl.constexpr,
                        D: tl.constexpr, LOG: tl.constexpr):
    """out = sum over the NB blocks listed in idx (rows block * BN ...) of
    (q @ k_blockᵀ) @ v_block: the next block's rows come from a load of the index
    table at the end of each trip, as FlexAttention's block-sparse loop reads them.
    With LOG, each trip also writes its block to `log_ptr` (a store in the loop)."""
    offs_m, offs_n, offs_d = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, D)
    q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :])
    acc = tl.zeros((BM, D), dtype=tl.float32)
    block = tl.load(idx_ptr)
    rows = (block * BN + offs_n)[:, None] * D + offs_d[None, :]
    k_ptrs, v_ptrs = k_ptr + rows, v_ptr + rows
    for i in range(NB):
        s = tl.dot(q, tl.trans(tl.load(k_ptrs)))
        acc = tl.dot(s.to(tl.float16), tl.load(v_ptrs), acc)
        if LOG:
            tl.store(log_ptr + i, block)
        following = tl.load(idx_ptr + i + 1, mask=i + 1 < NB, other=0)
        k_ptrs += (following - block) * BN * D
        v_ptrs += (following - block) * BN * D
        block = following
    tl.store(out_ptr + offs_m[:, None] * D + offs_d[None, :], acc)


@triton.jit
def subblock_sparse_kernel(q_ptr, k_ptr, v_ptr, idx_ptr, NB, out_ptr, BM: tl.constexpr, BN: tl.constexpr,
                           D: tl.constexpr, SPARSE: tl.constexpr):
    """FlexAttention's walk over sparse blocks of SPARSE rows in tiles of BN rows: out =
    sum over the NB blocks listed in idx of (q @ k_blockᵀ) @ v_block. The step to the
    next tile is computed from the trip number and the table, and read both by the
    tile's pointers (run ahead) and by `offs_n` in the body."""
    MULT: tl.constexpr = SPARSE // BN
    offs_m, offs_d = tl.arange(0, BM), tl.arange(0, D)
    q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :])
    acc = tl.zeros((BM, D), dtype=tl.float32)
    kv_start = tl.load(idx_ptr) * SPARSE
    offs_n = kv_start + tl.arange(0, BN)
    kv_offset = 0
    for trip in range(0, NB * MULT):
        rows = kv_start + kv_offset + tl.arange(0, BN)
        s = tl.dot(q, tl.trans(tl.load(k_ptr + rows[:, None] * D + offs_d[None, :])))
        s = tl.where(offs_n[None, :] >= 0, s, 0.0)
        acc = tl.dot(s.to(tl.float16), tl.load(v_ptr + rows[:, None] * D + offs_d[None, :]), acc)
        block = trip // MULT
        current = tl.load(idx_ptr + block)
        following = tl.load(idx_ptr + block + 1, mask=block + 1 < NB)
        jump = (trip + 1) % MULT == 0
        offset = tl.where(jump, (following - current) * SPARSE - (MULT - 1) * BN, BN)
        offs_n += offset
        kv_offset += offset
    tl.store(out_ptr + offs_m[:, None] * D + offs_d[None, :], acc)


SUBBLOCK_SPARSE_SIG = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "idx_ptr": "*i32", "NB": "i32",
                       "out_ptr": "*fp32"}


BLOCK_SPARSE_SIG = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "idx_ptr": "*i32", "out_ptr": "*fp32",
                    "NB": "i32", "log_ptr": "*i32"}


@pytest.mark.parametrize("arch", [80, 90])
def test_a_loop_finding_its_next_tile_by_a_load_is_pipelined(arch):
    # The index loads of the producer slice run ahead with the copies, under `trip < ub`
    # (no trip past the end reads the table), as nothing in the loop writes memory.
    consts = {"BM": 64, "BN": 64, "D": 64, "LOG": False}
    module = ir_module(block_sparse_kernel, BLOCK_SPARSE_SIG, consts, arch, num_stages=3)
    generate_cuda(module, arch)
    ops = _loop_ops(module)
    # the index load now serves the trip the copies are for (the current trip's pointers are carried)
    assert ops.count("async_copy") == 2 and ops.count("load") == 1, ops
    loop = next(op for op in module.kernel.walk() if op.name == "for")
    ahead = next(op for op in loop.regions[0].ops if op.name == "load")
    guard = ahead.operands[1].defining_op
    assert guard.name == "and" and any(v.defining_op is not None and v.defining_op.name == "cmp"
                                       and v.defining_op.attrs.get("pred") == "lt" for v in guard.operands)
    prologue_loads = [op for op in module.kernel.body.ops if op.name == "load"]
    assert len(prologue_loads) >= 1 + 2  # q, the first index, and one index load per prologue stage


def test_slice_ops_the_body_also_reads_are_cloned_for_the_trip_ahead():
    # `block = trip // MULT` feeds both the pointers of the tiles (run ahead) and `offs_n`
    # (read in the body): the op stays in the body for the current trip, and its clone
    # that finds the tile ahead must read that trip's number, not the current one.
    consts = {"BM": 64, "BN": 32, "D": 64, "SPARSE": 128}
    module = ir_module(subblock_sparse_kernel, SUBBLOCK_SPARSE_SIG, consts, 90, num_stages=3)
    generate_cuda(module, 90)
    loop = next(op for op in module.kernel.walk() if op.name == "for")
    body = loop.regions[0]
    assert "async_copy" in [op.name for op in body.ops]
    iv = body.args[0]
    divisions = [op for op in body.ops if op.name == "floordiv"]
    assert len(divisions) == 2, [op.name for op in body.ops]
    current, ahead = divisions
    assert current.operands[0] is iv
    trip = ahead.operands[0].defining_op
    assert trip is not None and trip.name == "add" and trip.operands[0] is iv


def test_a_loop_that_writes_keeps_its_loads_in_their_trips():
    # a store in the loop could change what a load run ahead reads
    consts = {"BM": 64, "BN": 64, "D": 64, "LOG": True}
    module = ir_module(block_sparse_kernel, BLOCK_SPARSE_SIG, consts, 80)
    generate_cuda(module, 80)
    assert "async_copy" not in _loop_ops(module)


def test_shared_memory_that_does_not_fit_fails_at_compile_time():
    consts = matmul_constexprs(256, 256, 64)
    module = ir_module(matmul_kernel, MATMUL_SIG, consts, 80, num_warps=8, num_stages=4)
    with pytest.raises(OutOfResources, match="shared memory"):
        generate_cuda(module, 86, {"num_warps": 8})  # 3 x 64 KB of stages > 99 KB
    module = ir_module(matmul_kernel, MATMUL_SIG, consts, 80, num_warps=8, num_stages=3)
    _, _, metadata = generate_cuda(module, 90, {"num_warps": 8})
    assert metadata["shared"] == 3 * (256 * 64 + 64 * 256) * 2  # wgmma in flight: a third stage
    module = ir_module(matmul_kernel, MATMUL_SIG, consts, 80, num_warps=8, num_stages=3)
    _, _, metadata = generate_cuda(module, 80, {"num_warps": 8})
    assert metadata["shared"] == 2 * (256 * 64 + 64 * 256) * 2


def _loop_ops(module) -> list[str]:
    loop = next(op for op in module.kernel.walk() if op.name == "for")
    return [op.name for op in loop.regions[0].ops]


@pytest.mark.parametrize("loop_stages, stages", [(None, 4), (2, 2), (1, 0)])
def test_loop_num_stages_decides_the_pipeline(loop_stages, stages):
    module = ir_module(matmul_kernel, MATMUL_SIG, matmul_constexprs(loop_stages=loop_stages), 80, num_stages=4)
    generate_cuda(module, 80)
    buffers = [op for op in module.kernel.walk() if op.name == "local_buffer"]
    ops = _loop_ops(module)
    if stages:
        assert [b.results[0].type.shape[0] for b in buffers] == [stages - 1] * 2
        assert ops[0] == "async_wait" and ops.count("async_copy") == 2 and "load" not in ops
        assert ops.index("barrier") > ops.index("dot") and ops.index("async_copy") > ops.index("barrier")
    else:
        assert not buffers and ops.count("load") == 2 and ops.count("local_alloc") == 2


def test_old_targets_and_unaligned_loads_are_not_pipelined():
    module = ir_module(matmul_kernel, MATMUL_SIG, matmul_constexprs(), 75)
    generate_cuda(module, 75)
    assert "async_copy" not in _loop_ops(module)
    # without the divisibility of the strides nothing proves 4-byte pieces aligned
    module = ir_module(matmul_kernel, MATMUL_SIG, matmul_constexprs(), 80, divisible=[])
    generate_cuda(module, 80)
    assert "async_copy" not in _loop_ops(module)


@pytest.mark.parametrize("default, uses_mma", [(None, True), ("ieee", False), ("tf32x3", True)])
def test_fp32_default_decides_the_dot_path(monkeypatch, default, uses_mma):
    """`input_precision=None` follows TRITON_F32_DEFAULT (tf32 when unset); ieee has no tensor-core path."""
    if default is None:
        monkeypatch.delenv("TRITON_F32_DEFAULT", raising=False)
    else:
        monkeypatch.setenv("TRITON_F32_DEFAULT", default)
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "stride_am": "i32", "stride_bk": "i32"}
    consts = {"M": 32, "N": 32, "K": 32, "TRANS_A": False, "TRANS_B": False, "ACC": tl.float32, "PRECISION": None,
              "stride_ak": 1, "stride_bn": 1}
    module = ir_module(dot_kernel, sig, consts, 80)
    dot = next(op for op in module.kernel.walk() if op.name == "dot")
    assert dot.attrs["input_precision"] == (default or "tf32")
    source, _, _ = generate_cuda(module, 80)
    assert ("tt_mma_m16n8k8_f32_tf32(" in source) == uses_mma


def _cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import triton as upstream  # its wheel carries NVIDIA's binary tools
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(upstream.__file__), "backends", "nvidia", "bin", "cuobjdump")
    return path if os.path.exists(path) else None


def sass_loops(sass: str) -> list[list[str]]:
    """The loops of a kernel's SASS (cuobjdump -sass): for each backward branch, the
    instructions from its target to it."""
    instructions = re.findall(r"/\*([0-9a-f]{4,5})\*/\s+(.*?);", sass)
    loops = []
    for i, (address, text) in enumerate(instructions):
        jump = re.search(r"BRA.*?0x([0-9a-f]+)", text)
        if jump and int(jump.group(1), 16) < int(address, 16):
            start = next(j for j, (a, _) in enumerate(instructions) if int(a, 16) == int(jump.group(1), 16))
            loops.append([t for _, t in instructions[start:i + 1]])
    return loops


def test_matmul_main_loop_sass(tmp_path):
    """The 128x256x64, 8-warp, 3-stage fp16 matmul on sm_80: HMMA, LDSM and LDGSTS in
    the main loop, two barriers there, and nothing in local memory."""
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("no cuobjdump")
    from tritone.backends.cuda.bindings import libs

    module = ir_module(matmul_kernel, MATMUL_SIG, matmul_constexprs(128, 256, 64), 80, num_warps=8)
    source, name, _ = generate_cuda(module, 80, {"num_warps": 8})
    cubin = libs.nvrtc_for(80).nvrtc.compile(source, f"{name}.cu", 80, options=["-w"]).cubin
    path = tmp_path / "matmul.cubin"
    path.write_bytes(cubin)
    sass = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    usage = subprocess.run([tool, "-res-usage", str(path)], capture_output=True, text=True, check=True).stdout
    assert "LOCAL:0" in usage and "STL" not in sass
    main = max(sass_loops(sass), key=len)
    count = {op: sum(1 for t in main if re.search(rf"\b{op}\b", t)) for op in ("HMMA", "LDSM", "LDGSTS", "BAR")}
    # a 64x64 warp tile over four k steps; 16 KB of a and 32 KB of b in 16-byte copies by 256 threads
    assert count == {"HMMA": 128, "LDSM": 32, "LDGSTS": 12, "BAR": 2}, count


@triton.jit
def fp8_accumulate(a_ptr, b_ptr, c_ptr, K: tl.constexpr, LIMIT: tl.constexpr):
    offs = tl.arange(0, 64)
    offs_k = tl.arange(0, K)
    a = tl.load(a_ptr + offs[:, None] * K + offs_k[None, :])
    b = tl.load(b_ptr + offs_k[:, None] * 64 + offs[None, :])
    acc = tl.load(c_ptr + offs[:, None] * 64 + offs[None, :])
    acc = tl.dot(a, b, acc=acc, max_num_imprecise_acc=LIMIT)
    tl.store(c_ptr + offs[:, None] * 64 + offs[None, :], acc)


@pytest.mark.parametrize("arch, limit, adds_per_register", [(90, 32, 4), (90, 64, 2), (90, 128, 1), (90, None, 0),
                                                            (89, 32, 0)])
def test_hopper_fp8_dots_add_partial_sums_every_max_num_imprecise_acc(arch, limit, adds_per_register):
    # As Triton on Hopper: the products of each `max_num_imprecise_acc` slice of K are summed
    # apart and added into the fp32 accumulator, one add.f32 per accumulator register.
    src = ASTSource(fp8_accumulate, {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*fp32"},
                    {"K": 128, "LIMIT": limit})
    kernel = triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": 4})
    registers = 64 * 64 // (32 * 4)
    assert kernel.asm["ptx"].count("add.f32") == registers * adds_per_register


@triton.jit
def accumulating_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Inductor's form: `acc += tl.dot(a, b)` in the K loop."""
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("arch", [80, 90])
def test_acc_plus_dot_accumulates_in_place_on_tensor_cores(arch):
    # As upstream's combine: add(acc, dot(a, b, 0)) is dot(a, b, acc), so no add per element
    # follows each trip's products, and on sm_90 the wgmma stays in flight over the loop.
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    module = ir_module(accumulating_matmul, sig, {"BM": 128, "BN": 128, "BK": 64}, arch, num_warps=8)
    source, _, _ = generate_cuda(module, arch, {"num_warps": 8})
    dots = [op for op in module.kernel.walk() if op.name == "dot"]
    loop = next(op for op in module.kernel.walk() if op.name == "for")
    assert len(dots) == 1 and dots[0].operands[2] in loop.regions[0].args
    assert not [op for op in loop.regions[0].ops if op.name == "add" and op.results[0].type == dots[0].results[0].type]
    if arch == 90:
        assert dots[0].attrs.get("implementation") == "wgmma" and dots[0].attrs.get("in_flight") == 1


@triton.jit
def indirect_rows_kernel(out_ptr, a_ptr, b_ptr, index_ptr, K, BM: tl.constexpr, BK: tl.constexpr, BN: tl.constexpr):
    """out = b[index].T @ a[index]: the tiles' rows come from indices loaded in the loop."""
    acc = tl.zeros([BM, BN], tl.float32)
    for k in range(0, K, BK):
        rows = tl.load(index_ptr + k + tl.arange(0, BK))
        a = tl.load(a_ptr + rows[:, None] * BN + tl.arange(0, BN)[None, :])
        b = tl.load(b_ptr + rows[:, None] * BM + tl.arange(0, BM)[None, :])
        acc = tl.dot(b.T, a, acc)
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)


@pytest.mark.parametrize("stages, slots", [(3, 3), (5, 3)])
def test_indirect_tiles_share_their_stages_where_they_would_not_fit(stages, slots):
    # 128x128 bf16 tiles, 64 KB a stage, on sm_90 (227 KB): 5 stages would be 4 ahead and one
    # in flight, 320 KB; the index loads take half the stages ahead, as in Triton: 2 ahead
    signature = {"out_ptr": "*fp32", "a_ptr": "*bf16", "b_ptr": "*bf16", "index_ptr": "*i64", "K": "i32"}
    module = ir_module(indirect_rows_kernel, signature, {"BM": 128, "BK": 128, "BN": 128}, 90, num_stages=stages)
    _, _, metadata = generate_cuda(module, 90)
    buffers = [op for op in module.kernel.walk() if op.name == "local_buffer"]
    assert [op.results[0].type.shape[0] for op in buffers] == [slots, slots]
    assert metadata["shared"] <= 232448
