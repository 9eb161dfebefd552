"""`tl.range(..., flatten=True)` on a persistent kernel's loop over tiles
(pipeline.py's tile-ahead plan): the K loop's last trips copy the next tile's
first trips (or, where the K loop has fewer trips than stages ahead, they are
copied once it ends), so they arrive during the current tile's last trips and
epilogue; the stages and their mbarriers live across the loop over tiles, which
carries the stage and phase on. And a K loop that reads its in-flight wgmma
result in a branch (a hand-flattened loop's epilogue) waits for it there.

Without a GPU: where the ops go (sm_90 with TMA and with pointer code, sm_80),
what is left alone, the kernels' results in the interpreter, and the sm_80
pointer kernel's generated CUDA on the CUDA emulator for every K trip count
around the stages ahead. On a GPU (`gpu` marker): the same kernels against
torch, with tiles and K of every size, programs without tiles, no K trip, one
K trip, as many K trips as stages ahead.
"""

from __future__ import annotations

import re

import cuda_emulator
import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone._internal_testing import default_alloc_fn
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import lowering
from tritone.compiler import ASTSource
from tritone.compiler.compiler import make_ir
from tritone.ir import parse_module
from tritone.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _tile(tile, num_pid_n, BM: tl.constexpr, BN: tl.constexpr):
    return (tile // num_pid_n) * BM, (tile % num_pid_n) * BN


@triton.jit
def host_persistent(a_desc, b_desc, c_desc, M, N, K, NUM_PROGRAMS: tl.constexpr, BM: tl.constexpr,
                    BN: tl.constexpr, BK: tl.constexpr, FLATTEN: tl.constexpr):
    """C = A[:, :K] @ B[:K] over host descriptors, every NUM_PROGRAMS-th tile each."""
    num_pid_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * num_pid_n, NUM_PROGRAMS, flatten=FLATTEN):
        pm, pn = _tile(tile, num_pid_n, BM, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([pm, k * BK]), b_desc.load([k * BK, pn]), acc)
        c_desc.store([pm, pn], acc.to(c_desc.dtype))


@triton.jit
def device_persistent(a_ptr, b_ptr, c_ptr, M, N, K, K_LOOP, NUM_PROGRAMS: tl.constexpr, BM: tl.constexpr,
                      BN: tl.constexpr, BK: tl.constexpr):
    """The same over descriptors made in the kernel (B given as N x K, read transposed)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    num_pid_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * num_pid_n, NUM_PROGRAMS, flatten=True):
        pm, pn = _tile(tile, num_pid_n, BM, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(tl.cdiv(K_LOOP, BK)):
            acc = tl.dot(a_desc.load([pm, k * BK]), b_desc.load([pn, k * BK]).T, acc)
        c_desc.store([pm, pn], acc.to(c_desc.dtype))


@triton.jit
def pointer_persistent(a_ptr, b_ptr, c_ptr, M, N, K, K_LOOP, NUM_PROGRAMS: tl.constexpr, BM: tl.constexpr,
                       BN: tl.constexpr, BK: tl.constexpr, STEP: tl.constexpr = 1):
    """The same through pointers (cp.async copies); the K loop counts by STEP from STEP - 1
    (from 1 by twos: its end is no trip's)."""
    num_pid_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * num_pid_n, NUM_PROGRAMS, flatten=True):
        pm, pn = _tile(tile, num_pid_n, BM, BN)
        rm = pm + tl.arange(0, BM)
        rn = pn + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(STEP - 1, STEP * tl.cdiv(K_LOOP, BK), STEP):
            kk = (k // STEP) * BK + tl.arange(0, BK)
            a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K_LOOP),
                        other=0.0)
            b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K_LOOP) & (rn[None, :] < N),
                        other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def epilogue_in_the_loop(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """One tile per program whose store sits in the K loop's last trip."""
    pm, pn = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    trips = tl.cdiv(K, BK)
    for k in range(trips):
        acc = tl.dot(a_desc.load([pm, k * BK]), b_desc.load([k * BK, pn]), acc)
        if k == trips - 1:
            c_desc.store([pm, pn], acc.to(c_desc.dtype))


def _host_signature(bm: int, bn: int, bk: int) -> dict:
    return {"a_desc": f"tensordesc<fp16[{bm}, {bk}]>", "b_desc": f"tensordesc<fp16[{bk}, {bn}]>",
            "c_desc": f"tensordesc<fp16[{bm}, {bn}]>", "M": "i32", "N": "i32", "K": "i32"}


# as the launcher specialises host descriptors: zero padding, sizes divisible by 16
_HOST_ATTRS = {(i,): [["tt.divisibility", 16], *([["tritone.zero_padding", 1]] if i < 3 else [])] for i in range(6)}
_OPTIONS = {"num_warps": 4, "num_stages": 3}


def _after_passes(kernel, signature: dict, constants: dict, attrs: dict, arch: int):
    compiled = triton.compile(ASTSource(kernel, signature, constants, attrs), target=GPUTarget("cuda", arch, 32),
                              options=_OPTIONS)
    module = parse_module(compiled.asm["ttir"])
    lowering.generate_cuda(module, arch, _OPTIONS)
    (fn,) = module.functions.values()
    return compiled, fn


def _host_kernel(arch: int, flatten: bool = True):
    return _after_passes(host_persistent, _host_signature(64, 64, 32),
                         {"NUM_PROGRAMS": 4, "BM": 64, "BN": 64, "BK": 32, "FLATTEN": flatten}, _HOST_ATTRS, arch)


def _outer(fn):
    (outer,) = [op for op in fn.body.ops if op.name == "for"]
    return outer


def _copies(ops, name: str) -> int:
    return sum(1 for op in ops for inner in op.walk() if inner.name == name)


def _next_tile_copies(body, copy: str) -> tuple[int, int, int]:
    """Copies of the K loop in `body` (the loop over tiles' body): (in the K loop's branch
    for this tile's trips ahead, in its branch for the next tile's, after the K loop)."""
    (inner,) = [op for op in body.ops if op.name == "for"]
    (branch,) = [op for op in inner.regions[0].ops if op.name == "if"]
    current, following = branch.regions
    return (_copies(current.ops, copy), _copies(following.ops, copy),
            _copies(body.ops[body.ops.index(inner) + 1:], copy))


def test_the_next_tiles_first_copies_come_in_the_k_loops_last_trips_on_sm90():
    compiled, fn = _host_kernel(90)
    outer = _outer(fn)
    names = [op.name for op in fn.body.ops]
    # the stages and their mbarriers are made before the loop over tiles and dropped after it
    assert names.index("mbarrier_init") < names.index("for") < names.index("mbarrier_inval")
    body = outer.regions[0]
    (inner,) = [op for op in body.ops if op.name == "for"]
    # a trip ahead copies the two tiles (a and b) of this tile's trip or of the next tile's;
    # where the K loop has fewer trips than the two stages ahead, the next tile's come after it
    assert _next_tile_copies(body, "tma_copy") == (2, 2, 4)
    (after,) = [op for op in body.ops[body.ops.index(inner) + 1:] if op.name == "if"]
    assert after.regions[0].ops[0].name == "barrier" and len(after.regions[1].ops) == 1
    assert [op.name for op in fn.body.ops].count("tma_copy") == 4, "the first tile's, before the loop"
    # the loop over tiles carries the stage and the phase on to the next K loop
    at = body.args.index(inner.operands[-2])
    assert inner.operands[-2:] == body.args[at:at + 2] and [a.type.name for a in body.args[at:at + 2]] == ["int32"] * 2
    assert body.terminator.operands[at - 1:at + 1] == inner.results[-2:]
    # and the tile's and the next tile's index and offsets (pipeline._carried_next_trip): no
    # division before the K loop, those of the tile after the next after it
    carried = body.args[at + 2:]
    assert carried and len(carried) % 2 == 0 and all(a.type.name == "int32" for a in carried)
    before_k = body.ops[:body.ops.index(inner)]
    assert not [op for op in before_k if op.name in ("floordiv", "mod")]
    assert [op for op in body.ops[body.ops.index(inner):] if op.name == "floordiv"]
    ptx = compiled.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx
    # the stages' mbarriers are initialised, then fenced once (a fence after each cost a MEMBAR apiece)
    inits = [at for at in range(len(ptx)) if ptx.startswith("mbarrier.init.", at)]
    fences = [at for at in range(len(ptx)) if ptx.startswith("fence.mbarrier_init", at)]
    assert len(inits) == 3 and len(fences) == 1 and max(inits) < fences[0]


def test_only_a_tma_k_loop_inside_the_loop_over_tiles_is_kept_rolled():
    # NVVM unrolls a K loop by two and adds a remainder trip, paid once a tile in a
    # persistent kernel (codegen_control.unroll_pragma)
    persistent, _ = _host_kernel(90)
    assert [line.strip() for line in persistent.asm["cuda"].splitlines()].count("#pragma unroll 1") == 1
    one_tile, _ = _after_passes(epilogue_in_the_loop, {k: v for k, v in _host_signature(64, 64, 32).items()
                                                       if k not in ("M", "N")},
                                {"BM": 64, "BN": 64, "BK": 32}, {(i,): _HOST_ATTRS[(i,)] for i in range(4)}, 90)
    assert "#pragma unroll 1" not in one_tile.asm["cuda"]
    pointer, _ = _host_kernel(80)
    assert "#pragma unroll 1" not in pointer.asm["cuda"]


def test_a_persistent_k_loop_leaves_its_accumulator_unzeroed_and_its_first_wgmma_ignores_it():
    # upstream Triton's accumulator-initialisation pass: the first trip's wgmma has scale-d 0
    # (`codegen_control._zeroed_accumulators`), the registers are zeroed once a program, and
    # after a K loop of no trips the zeros are written, once its wgmma groups are done
    persistent, _ = _host_kernel(90)
    cuda = persistent.asm["cuda"]
    first_trip = re.findall(r'"r"\(\(unsigned\)\((iv\d+_k) != (\w+)\)\)', cuda)
    assert len(first_trip) == 1, "one wgmma group, its first step's scale-d set from the trip"
    iv, lb = first_trip[0]
    loop = cuda.index(f"for (int {iv} = {lb};")
    tile_loop = cuda.index("for (int iv")
    assert tile_loop < loop
    accumulator = re.search(r"float (c\d+)\[\d+\];\s*#pragma unroll\s*for \(int i = 0; i < \d+; \+\+i\) \1\[i\] = 0;",
                            cuda)
    assert accumulator and accumulator.start() < tile_loop, "zeroed once, before the loop over tiles"
    drained = cuda.index("wgmma.wait_group.sync.aligned 0;", loop)
    no_trips = cuda.index(f"if (!({lb} < ", loop)
    assert drained < no_trips and f"{accumulator.group(1)}[i] = " in cuda[no_trips:no_trips + 300]
    # a K loop run once a program (not inside another loop) adds its zeros as before
    one_tile, _ = _after_passes(epilogue_in_the_loop, {k: v for k, v in _host_signature(64, 64, 32).items()
                                                       if k not in ("M", "N")},
                                {"BM": 64, "BN": 64, "BK": 32}, {(i,): _HOST_ATTRS[(i,)] for i in range(4)}, 90)
    assert "(unsigned)(iv" not in one_tile.asm["cuda"]


def test_without_flatten_each_tile_fills_its_own_stages():
    _, fn = _host_kernel(90, flatten=False)
    body = _outer(fn).regions[0]
    names = [op.name for op in body.ops]
    assert "mbarrier_init" in names and "mbarrier_inval" in names
    assert not [op for op in fn.body.ops if op.name == "tma_copy"]


def test_pointer_code_copies_ahead_across_tiles_too():
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                 "K_LOOP": "i32"}
    for arch in (80, 90):
        _, fn = _after_passes(pointer_persistent, signature, {"NUM_PROGRAMS": 4, "BM": 64, "BN": 64, "BK": 32,
                                                              "STEP": 1},
                              {(i,): [["tt.divisibility", 16]] for i in range(7)}, arch)
        names = [op.name for op in fn.body.ops]
        assert names.index("for") < names.index("async_wait"), "drained after the loop over tiles"
        body = _outer(fn).regions[0]
        assert _next_tile_copies(body, "async_copy") == (2, 2, 4)
        assert _next_tile_copies(body, "async_commit") == (2, 2, 4)


@pytest.mark.parametrize("bn, stages, warps", [(128, 2, 4), (128, 3, 8), (64, 2, 4)])
def test_the_next_tiles_copies_after_the_k_loop_read_their_own_trip(bn, stages, warps, monkeypatch):
    # fp8 operands of 128-wide K: the a tile's address computation is both a copy's and the
    # loop body's own, so it moved into the rewritten loop; the next tile's first copies,
    # issued after the loop when it has fewer trips than stages ahead, must read their
    # own trip, not the loop's induction variable (the IR verifier refused the kernel)
    monkeypatch.setenv("TRITONE_VERIFY_IR", "1")
    signature = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                 "K_LOOP": "i32"}
    options = {"num_warps": warps, "num_stages": stages}
    module = make_ir(ASTSource(pointer_persistent, signature, {"NUM_PROGRAMS": 4, "BM": 128, "BN": bn, "BK": 128},
                               {(i,): [["tt.divisibility", 16]] for i in range(7)}), GPUTarget("cuda", 90, 32),
                     options)
    source, _, _ = lowering.generate_cuda(module, 90, options)
    assert "tt_cp_async16(" in source


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
@pytest.mark.parametrize("step", [1, 2])
def test_pointer_code_across_tiles_runs_right_on_the_cuda_emulator(step):
    # sm_80's mma.sync and cp.async code, two programs of three tiles each: K loops of
    # 0, 1 (fewer trips than the 2 stages ahead: copied after the loop), 2, 3 and 5 trips,
    # counting by ones from 0 and by twos from 1
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
                 "K_LOOP": "i32"}
    options = {"num_warps": 4, "num_stages": 3}
    module = make_ir(ASTSource(pointer_persistent, signature, {"NUM_PROGRAMS": 2, "BM": 32, "BN": 32, "BK": 16,
                                                           "STEP": step},
                               {(i,): [["tt.divisibility", 16]] for i in range(7)}), GPUTarget("cuda", 80, 32),
                     options)
    source, _, metadata = lowering.generate_cuda(module, 80, options)
    assert "else {" in source, "the K loop copies the next tile's trips in a branch"
    emulated = cuda_emulator.Emulator(source, 4, metadata["shared"])
    rng = np.random.default_rng(80)
    for m, n, k, k_loop in ((96, 64, 80, 80), (64, 96, 16, 16), (96, 64, 32, 32), (64, 96, 48, 48),
                            (96, 64, 16, 0), (96, 64, 64, 40)):
        a = rng.integers(-4, 4, size=(m, k)).astype(np.float16)
        b = rng.integers(-4, 4, size=(k, n)).astype(np.float16)
        c = np.full((m, n), np.nan, dtype=np.float32)
        emulated.launch((2,), a, b, c, m, n, k, k_loop)
        expected = a[:, :k_loop].astype(np.float64) @ b[:k_loop].astype(np.float64)
        np.testing.assert_array_equal(c, expected.astype(np.float32), err_msg=f"M N K K_LOOP {m} {n} {k} {k_loop}")


def test_a_branch_reading_the_in_flight_result_waits_for_it():
    _, fn = _after_passes(epilogue_in_the_loop, {k: v for k, v in _host_signature(64, 64, 32).items()
                                                 if k not in ("M", "N")},
                          {"BM": 64, "BN": 64, "BK": 32}, {(i,): _HOST_ATTRS[(i,)] for i in range(4)}, 90)
    (loop,) = [op for op in fn.body.ops if op.name == "for"]
    (dot,) = [op for op in loop.regions[0].ops if op.name == "dot"]
    assert dot.attrs.get("in_flight") == 1
    (branch,) = [op for op in loop.regions[0].ops if op.name == "if"]
    assert branch.regions[0].ops[0].name == "dot_wait"


# -- the same kernels run (on the GPU with the `gpu` marker, in the interpreter below) --------

def _operands(device: str, m: int, n: int, k: int, dtype: torch.dtype):
    torch.manual_seed(0)
    a = torch.randn(m, k, device=device).to(dtype)
    b = torch.randn(k, n, device=device).to(dtype)
    c = torch.full((m, n), float("nan"), device=device, dtype=dtype)
    return a, b, c


def _check(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, k_loop: int) -> None:
    expected = a[:, :k_loop].float() @ b[:k_loop].float()
    torch.testing.assert_close(c.float(), expected, atol=2e-2 * max(1, k_loop) ** 0.5, rtol=1e-2)


def check_host(device: str, m: int, n: int, k: int, dtype: torch.dtype, programs: int) -> None:
    a, b, c = _operands(device, m, n, k, dtype)
    descriptors = [TensorDescriptor.from_tensor(t, block) for t, block in ((a, [64, 32]), (b, [32, 64]), (c, [64, 64]))]
    host_persistent[(programs,)](*descriptors, m, n, k, NUM_PROGRAMS=programs, BM=64, BN=64, BK=32, FLATTEN=True,
                                 num_stages=3)
    _check(c, a, b, k)


def check_device(device: str, m: int, n: int, k: int, k_loop: int, dtype: torch.dtype, programs: int) -> None:
    a, b, c = _operands(device, m, n, k, dtype)
    triton.set_allocator(default_alloc_fn)
    device_persistent[(programs,)](a, b.T.contiguous(), c, m, n, k, k_loop, NUM_PROGRAMS=programs, BM=64, BN=64,
                                   BK=32, num_stages=3)
    _check(c, a, b, k_loop)


def check_pointer(device: str, m: int, n: int, k: int, k_loop: int, dtype: torch.dtype, programs: int) -> None:
    a, b, c = _operands(device, m, n, k, dtype)
    pointer_persistent[(programs,)](a, b, c, m, n, k, k_loop, NUM_PROGRAMS=programs, BM=64, BN=64, BK=32,
                                    num_stages=3)
    _check(c, a, b, k_loop)


def check_pointer_fp8(device: str, m: int, n: int, k: int, programs: int, bn: int, bk: int, warps: int) -> None:
    """fp8 operands whose a tile goes through registers (its address computation is both
    the copies' and the loop body's), the next tile's first copies after a short K loop."""
    torch.manual_seed(0)
    a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
    b = torch.randn(k, n, device=device).to(torch.float8_e4m3fn)
    c = torch.full((m, n), float("nan"), device=device, dtype=torch.float16)
    pointer_persistent[(programs,)](a, b, c, m, n, k, k, NUM_PROGRAMS=programs, BM=128, BN=bn, BK=bk,
                                    num_warps=warps, num_stages=2)
    _check(c, a, b, k)


def check_epilogue_in_the_loop(device: str, m: int, n: int, k: int) -> None:
    a, b, c = _operands(device, m, n, k, torch.float16)
    descriptors = [TensorDescriptor.from_tensor(t, block) for t, block in ((a, [64, 32]), (b, [32, 64]), (c, [64, 64]))]
    epilogue_in_the_loop[(triton.cdiv(m, 64), triton.cdiv(n, 64))](*descriptors, k, BM=64, BN=64, BK=32, num_stages=3)
    _check(c, a, b, k)


# tiles that divide and do not, several tiles per program, programs without tiles,
# one K trip (fewer than the stages ahead), no K trip
CHECKS = [(check_host, (256, 192, 96, torch.float16, 4)),
          (check_host, (100, 72, 56, torch.float16, 3)),
          (check_host, (64, 64, 32, torch.bfloat16, 3)),
          (check_device, (256, 128, 160, 160, torch.float16, 5)),
          (check_device, (128, 128, 64, 0, torch.float16, 2)),
          (check_pointer, (192, 130, 100, 100, torch.float16, 4)),
          (check_pointer, (64, 64, 32, 32, torch.bfloat16, 1)),
          (check_pointer, (64, 128, 32, 0, torch.float16, 3)),
          (check_pointer, (256, 128, 64, 64, torch.float16, 2)),
          (check_host, (192, 128, 64, torch.float16, 2)),
          (check_epilogue_in_the_loop, (128, 192, 160)),
          (check_pointer_fp8, (384, 256, 128, 3, 128, 128, 4)),
          (check_pointer_fp8, (256, 192, 384, 2, 64, 128, 4))]


@pytest.mark.gpu
@pytest.mark.parametrize("check, arguments", CHECKS)
def test_on_the_gpu(check, arguments, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    check("cuda", *arguments)


@pytest.mark.parametrize("check, arguments", CHECKS)
def test_the_gpu_checks_in_the_interpreter(check, arguments, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    check("cpu", *arguments)
