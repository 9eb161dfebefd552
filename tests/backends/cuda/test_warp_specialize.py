"""Warp specialization (`tl.range(..., warp_specialize=True)`) on sm_90: a TMA-pipelined
loop's copies move to one producer warp beyond the kernel's `num_warps`, which waits
on per-stage `empty` mbarriers the consumer warps arrive on; the consumers keep the
rest of the kernel and synchronise among themselves (named barrier 1). Only where
the kernel's shared memory already allows one block per multiprocessor (the extra
warp's registers would otherwise cost one). Without a GPU: the generated CUDA's two
roles, what is left single-role, the interpreter; on one (`gpu` marker): matmuls
and attention against torch, trip counts from one up."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from bench.warp_specialize import make_kernels
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir


@triton.jit
def ws_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
              WS: tl.constexpr, STAGES: tl.constexpr):
    """C = A @ B through descriptors made here, its K loop warp-specialized when WS."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES, warp_specialize=WS):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([pid_n * BN, k * BK]).T, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


@triton.jit
def ws_matmul_returning_early(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                              BK: tl.constexpr):
    """ws_matmul behind an early return: the consumers could leave without the producer."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    if pid_m * BM >= M:
        return
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=4, warp_specialize=True):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([pid_n * BN, k * BK]).T, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


@triton.jit
def ws_host_matmul(a_desc, b_desc, c_desc, K, BK: tl.constexpr):
    """ws_matmul's loop over host descriptors (tutorial 09's TMA kernel)."""
    BM: tl.constexpr = c_desc.block_shape[0]
    BN: tl.constexpr = c_desc.block_shape[1]
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, warp_specialize=True):
        acc = tl.dot(a_desc.load([pid_m * BM, k]), b_desc.load([pid_n * BN, k]).T, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


@triton.jit
def ws_pointer_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """One tile through pointer loads (cp.async): nothing for a producer warp to issue."""
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, warp_specialize=True):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))


# the benchmark's kernels (bench/warp_specialize.py), each with a WS constexpr
_, ws_persistent_matmul, ws_attention = make_kernels(triton, tl)


_MATMUL_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}


def _cuda(fn, signature, constexprs, num_warps=4, num_stages=3, arch=90):
    """(CUDA source, metadata) of `fn` for sm_`arch`, without a GPU."""
    signature = dict(signature, **{name: "constexpr" for name in constexprs})
    module = make_ir(ASTSource(fn, signature, constexprs, {}), GPUTarget("cuda", arch, 32),
                     {"num_warps": num_warps, "num_stages": num_stages})
    source, _, metadata = generate_cuda(module, arch, {"num_warps": num_warps, "num_stages": num_stages})
    return source, metadata


def _matmul_cuda(ws=True, num_warps=4, stages=4, arch=90):
    """128x128x64 tiles: 4 stages (128 KiB) keep one block per multiprocessor, 3 (96 KiB) two."""
    return _cuda(ws_matmul, _MATMUL_SIG, {"BM": 128, "BN": 128, "BK": 64, "WS": ws, "STAGES": stages},
                 num_warps, stages, arch)


def _roles(source: str) -> tuple[str, str, str]:
    """(the code every thread runs, the producer's, the consumers') of a specialized kernel."""
    start = source.index('extern "C" __global__')
    split = re.search(r"\n  if \(tt_warp == \d+\) \{\n", source[start:])
    assert split is not None, "no producer branch"
    head = source[start:start + split.start()]
    rest = source[start + split.end():]
    end = rest.index("\n    return;\n  }\n")
    return head, rest[:end], rest[end:]


@pytest.mark.parametrize("num_warps", [4, 8])
def test_the_copies_move_to_one_producer_warp(num_warps):
    source, metadata = _matmul_cuda(num_warps=num_warps)
    consumers = 32 * num_warps
    # one warp beyond the kernel's: launched with it, and reported as Triton reports a
    # specialized kernel's total
    assert metadata["num_warps"] == num_warps + 1 and metadata["threads"] == consumers + 32
    assert f"__launch_bounds__({consumers + 32}, 1)" in source
    head, producer, consumers_code = _roles(source)
    assert f"if (tt_warp == {num_warps})" in source
    # every mbarrier and tensor map is made before the split, by every thread (4 stages:
    # 3 copied ahead, one read by the dot in flight)
    assert head.count("tt_mbarrier_init(") == 8
    assert head.count(", 1);") == 4 and head.count(f", {num_warps});") == 4  # `empty`: an arrival a consumer warp
    assert head.count("tensormap.cp_fenceproxy") == 2  # a's and b's maps (c's is the consumers')
    # the producer issues all copies (the prologue's three stages and the loop's) from its
    # first thread, waiting on `empty` in the loop; the consumers issue none
    assert producer.count("tt_tma_load_2d_elect(") == 8
    assert f"threadIdx.x == {consumers} &&" in producer and "threadIdx.x == 0 &&" not in producer
    loop = producer[producer.index("for ("):]
    assert loop.index("tt_mbarrier_wait(") < loop.index("tt_tma_load_2d_elect(")
    assert "wgmma" not in producer and "__syncthreads" not in producer
    assert f'asm volatile("bar.arrive 2, {consumers + 32};"' in producer
    assert "tt_tma_load_2d_elect" not in consumers_code and "tt_mbarrier_expect_tx" not in consumers_code
    # the consumers' loop frees each stage per warp where the block barrier stood, and
    # their barriers are among themselves
    loop_end = consumers_code.index("wgmma.wait_group.sync.aligned 0")
    consumer_loop = consumers_code[consumers_code.index("for ("):loop_end]
    assert "wgmma.mma_async" in consumer_loop and "tt_mbarrier_wait(" in consumer_loop
    assert "__syncwarp();\n" in consumer_loop and "if (tt_lane == 0) tt_mbarrier_arrive(" in consumer_loop
    assert "__syncthreads" not in consumers_code and f"bar.sync 1, {consumers};" in consumers_code
    # after the loop they wait for the producer before the mbarriers go
    join = consumers_code.index(f'asm volatile("bar.sync 2, {consumers + 32};"')
    assert join < consumers_code.index("tt_mbarrier_inval(")


@pytest.mark.parametrize("ws, stages", [(False, 4), (True, 3)])
def test_without_the_flag_or_where_a_second_block_fits_nothing_changes(ws, stages):
    # 3 stages of 128x128x64 leave room for two blocks per multiprocessor, which the
    # producer warp's registers would take away: left single-role
    source, metadata = _matmul_cuda(ws=ws, stages=stages)
    assert metadata["num_warps"] == 4 and metadata["threads"] == 128
    assert "tt_warp == 4" not in source and "bar.sync 1" not in source and "tt_mbarrier_arrive(tt_smem" not in source
    assert source.count("tt_tma_load_2d_elect(tt_warp == 0") == 2 * stages


def test_host_descriptors_are_specialized_too():
    signature = {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp16[128, 64]>",
                 "c_desc": "tensordesc<fp16[128, 128]>", "K": "i32"}
    source, metadata = _cuda(ws_host_matmul, signature, {"BK": 64}, 4, 4)
    assert metadata["num_warps"] == 5
    _, producer, consumers = _roles(source)
    assert producer.count("tt_tma_load_2d_elect(") == 8 and "tt_tma_load" not in consumers


def test_a_persistent_kernel_s_producer_runs_on_into_the_next_tile():
    source, metadata = _cuda(ws_persistent_matmul, _MATMUL_SIG, {"BM": 128, "BN": 256, "BK": 64, "STAGES": 3,
                                                                 "WS": True, "PROGRAMS": 132}, 8, 3)
    assert metadata["num_warps"] == 9
    _, producer, consumers = _roles(source)
    # the producer: the first tile's two stages before its loop over tiles, then per tile
    # its K loop (a wait a trip) and the next tile's first two stages, each after a wait
    loops = [m.start() for m in re.finditer(r"\n\s*for \(int ", producer)]
    assert len(loops) == 2
    first, k_loop = producer[:loops[0]], producer[loops[1]:]
    assert first.count("tt_mbarrier_wait(") == 0 and first.count("tt_tma_load_2d_elect(") == 4  # A and B each
    k_end = k_loop.index("\n      }\n") if "\n      }\n" in k_loop else len(k_loop)
    assert k_loop[:k_end].count("tt_mbarrier_wait(") == 1
    assert k_loop[k_end:].count("tt_mbarrier_wait(") == 2 and k_loop[k_end:].count("tt_tma_load_2d_elect(") == 4
    assert k_loop[:k_end].count("tt_tma_load_2d_elect(") == 2
    assert "wgmma" not in producer and "tt_tma_load" not in consumers
    # the consumers free a stage a trip and carry the stage and phase from tile to tile
    assert consumers.count("if (tt_lane == 0) tt_mbarrier_arrive(") == 1
    assert consumers.count("tt_mbarrier_init") == 0


def test_a_loop_behind_an_early_return_stays_single_role():
    # the return makes the rest of the kernel a branch: consumers that took it would
    # leave the producer waiting for stages nobody frees
    source, metadata = _cuda(ws_matmul_returning_early, _MATMUL_SIG, {"BM": 128, "BN": 128, "BK": 64}, 4, 4)
    assert metadata["num_warps"] == 4 and "tt_warp == 4" not in source


def test_pointer_loads_and_older_targets_stay_single_role():
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32"}
    source, metadata = _cuda(ws_pointer_matmul, signature, {"BM": 128, "BN": 128, "BK": 64})
    assert metadata["num_warps"] == 4 and "tt_warp == 4" not in source
    source, metadata = _matmul_cuda(arch=80)
    assert metadata["num_warps"] == 4 and "tt_warp == 4" not in source


_ATTENTION_SIG = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp16", "sm_scale": "fp32",
                  "N_CTX": "i32"}


def test_attention_keeps_its_query_and_output_with_the_consumers():
    source, metadata = _cuda(ws_attention, _ATTENTION_SIG, {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 64,
                                                            "CAUSAL": True, "WS": True}, num_warps=8)
    assert metadata["num_warps"] == 9
    head, producer, consumers = _roles(source)
    # K's and V's maps are made before the split, Q's and O's by the consumers
    assert head.count("tensormap.cp_fenceproxy") == 2 and consumers.count("tensormap.cp_fenceproxy") == 2
    assert "wgmma" not in producer and consumers.count("if (tt_lane == 0) tt_mbarrier_arrive(") == 1


def _loop_body(source: str, head: str) -> str:
    """The text of the first C++ loop after `head` whose header holds `iv`."""
    start = source.index(head)
    loop = source.index("for (int iv", start)
    depth = 0
    for end in range(source.index("{", loop), len(source)):
        depth += {"{": 1, "}": -1}.get(source[end], 0)
        if depth == 0:
            return source[loop:end]
    raise AssertionError("the loop does not close")


def test_a_small_attention_keeps_its_second_block():
    # head dim 64: 64 KiB of shared memory, two blocks per multiprocessor single-role
    source, metadata = _cuda(ws_attention, _ATTENTION_SIG, {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64,
                                                            "CAUSAL": False, "WS": True})
    assert metadata["num_warps"] == 4 and "tt_warp == 4" not in source
    # its loop only reads shared tiles (Q's, the stages): no barrier before Q's first read
    # a trip (Q was written before a barrier ahead of the loop), one before the copies
    body = _loop_body(source, 'extern "C" __global__')
    assert body.count("__syncthreads();") == 1
    assert body.index("wgmma.mma_async") < body.index("__syncthreads();") < body.index("tt_tma_load_2d_elect(")


def test_the_consumers_loop_has_no_barrier():
    source, _ = _cuda(ws_attention, _ATTENTION_SIG, {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 64,
                                                     "CAUSAL": False, "WS": True}, num_warps=8)
    _, _, consumers = _roles(source)
    body = _loop_body(consumers, "")
    assert "bar.sync" not in body and "__syncthreads" not in body
    assert body.count("if (tt_lane == 0) tt_mbarrier_arrive(") == 1


def test_nvrtc_compiles_both_roles():
    from tritone.backends.cuda.bindings import libs

    try:
        nvrtc = libs.nvrtc_for(90).nvrtc
    except libs.LibraryNotFound as exc:  # pragma: no cover - NVRTC is a test dependency
        pytest.skip(f"no NVRTC: {exc}")
    source, metadata = _matmul_cuda()
    result = nvrtc.compile(source, "ws_matmul.cu", 90, options=["-w"], arch_suffix=metadata.get("arch_suffix", ""))
    assert "bar.arrive 2, 160;" in result.ptx and "bar.sync 1, 128;" in result.ptx
    assert re.search(r"mbarrier\.arrive\.shared::cta\.b64\s+_, \[", result.ptx)
    assert "cp.async.bulk.tensor.2d" in result.ptx and "wgmma.mma_async" in result.ptx


@pytest.mark.parametrize("ws", [False, True])
def test_a_tiles_boxes_are_issued_by_as_many_warps_as_there_are(ws):
    # BK = 128 fp16 is two 128-byte swizzle columns: two boxes a tile. Single-role, warps
    # 0 and 1 each issue one from the same instruction (one elected lane each); the
    # producer warp issues both, one round each
    from tritone.backends.cuda.bindings import libs

    source, metadata = _cuda(ws_matmul, _MATMUL_SIG, {"BM": 128, "BN": 128, "BK": 128, "WS": ws, "STAGES": 2},
                             4, 2)
    copies = re.findall(r"tt_tma_load_2d_elect\((.*)\);", source)
    assert copies and len(copies) % 2 == 0
    if not ws:
        assert all(c.startswith("(unsigned)tt_warp < 2u && ") and "tt_stage + (unsigned)tt_warp * 16384u," in c
                   and c.endswith(" + (int)((unsigned)tt_warp * 64)") for c in copies)
    else:
        _, producer, consumers = _roles(source)
        assert "tt_tma_load" not in consumers
        assert [c.split(" && ")[0] for c in re.findall(r"tt_tma_load_2d_elect\((.*)\);", producer)] == \
            ["(unsigned)(tt_warp - 4) < 1u", "(unsigned)(tt_warp - 3) < 2u"] * (len(copies) // 2)
    try:
        nvrtc = libs.nvrtc_for(90).nvrtc
    except libs.LibraryNotFound as exc:  # pragma: no cover - NVRTC is a test dependency
        pytest.skip(f"no NVRTC: {exc}")
    result = nvrtc.compile(source, "ws_matmul.cu", 90, options=["-w"], arch_suffix=metadata.get("arch_suffix", ""))
    assert "elect.sync" in result.ptx


def test_the_interpreter_computes_the_same(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    rng = np.random.default_rng(7)
    M, N, K = 64, 32, 80
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    triton.set_allocator(lambda size, align, stream: np.empty(size, np.int8))
    try:
        ws_matmul[(2, 1)](a, b, c, M, N, K, 32, 32, 32, True, 3)
    finally:
        triton.set_allocator(None)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32).T, rtol=2e-2,
                               atol=2e-2)


# -- on the GPU -----------------------------------------------------------------------------------

@pytest.fixture
def gpu(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    yield torch
    triton.set_allocator(None)


def _sm90(torch) -> None:
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("warp specialization needs sm_90")


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, K", [(256, 256, 64), (256, 512, 192), (200, 136, 520), (512, 512, 2048)])
@pytest.mark.parametrize("BN, BK, num_warps, stages", [(128, 64, 4, 4), (128, 64, 8, 4), (256, 64, 8, 3),
                                                       (128, 128, 4, 2)])
def test_matmul_on_the_gpu(M, N, K, BN, BK, num_warps, stages, gpu):
    torch = gpu
    _sm90(torch)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((N, K), device="cuda", dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, 128), triton.cdiv(N, BN))
    kernel = ws_matmul[grid](a, b, c, M, N, K, 128, BN, BK, True, stages, num_warps=num_warps, num_stages=stages)
    assert kernel.metadata.num_warps == num_warps + 1
    torch.testing.assert_close(c.float(), a.float() @ b.float().T, rtol=1e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("M, N, K, programs", [(512, 768, 512, 5), (640, 512, 64, 7), (256, 256, 128, 1),
                                              (1000, 520, 1000, 16), (128, 256, 2048, 3)])
def test_persistent_matmul_on_the_gpu(M, N, K, programs, gpu):
    # one to 32 trips a tile, tiles per program from 1 to 13, ragged edges
    torch = gpu
    _sm90(torch)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((N, K), device="cuda", dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    kernel = ws_persistent_matmul[(programs,)](a, b, c, M, N, K, 128, 256, 64, 3, True, programs, num_warps=8,
                                               num_stages=3)
    assert kernel.metadata.num_warps == 9
    torch.testing.assert_close(c.float(), a.float() @ b.float().T, rtol=1e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("head_dim, causal, n_ctx", [(64, False, 1024), (128, True, 640), (128, False, 384),
                                                     (128, True, 128)])
def test_attention_on_the_gpu(head_dim, causal, n_ctx, gpu):
    torch = gpu
    _sm90(torch)
    heads, scale = 6, 1 / math.sqrt(head_dim)
    q, k, v = (torch.randn((heads, n_ctx, head_dim), device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    kernel = ws_attention[(n_ctx // 128, heads)](q, k, v, o, scale, n_ctx, head_dim, 128, 64, causal, True,
                                                 num_warps=4 if head_dim == 64 else 8, num_stages=3)
    assert kernel.metadata.num_warps == (4 if head_dim == 64 else 9)  # d64: two blocks per multiprocessor
    expected = torch.nn.functional.scaled_dot_product_attention(q[None].float(), k[None].float(), v[None].float(),
                                                                is_causal=causal, scale=scale)[0]
    torch.testing.assert_close(o.float(), expected, rtol=1e-2, atol=1e-2)
