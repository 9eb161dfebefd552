"""Inductor's row reductions over bf16 (`triton_red_*`: one row per program, an
r-loop of constant bounds in chunks of R0_BLOCK, fp32 Welford and argmax state
carried through it) get their r-loop unrolled whole, as upstream's LLVM does,
so each thread issues the 16-byte-or-narrower loads of every trip before the
arithmetic that consumes them. NVRTC 13.0 kept such a 4-trip loop rolled (one
8-byte load in flight per thread); under `#pragma unroll` it is straight-line.
Where the whole loop would be too much code per thread, it is unrolled by the
largest power of two that is not (Inductor's bf16 layer norm backward: 8 trips,
by 4), if its loads are narrower than 16 bytes. Loops whose bounds are not
constant, or that are long, stay rolled."""

from __future__ import annotations

import cuda_emulator
import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir

ROW = 2048


@triton.jit
def _welford_combine(mean_a, m2_a, weight_a, mean_b, m2_b, weight_b):
    delta = mean_b - mean_a
    weight = weight_a + weight_b
    share_b = tl.where(weight == 0.0, 0.0, weight_b / weight)
    return mean_a + delta * share_b, m2_a + m2_b + delta * delta * weight_a * share_b, weight


@triton.jit
def row_stats(x_ptr, mean_ptr, var_ptr, argmax_ptr, row_length, R0_BLOCK: tl.constexpr,
              CONSTANT_ROW: tl.constexpr, EVICT: tl.constexpr = "evict_first"):
    """Per row of a bf16 matrix: mean and (unbiased) variance by Welford, and
    the first index of the maximum, the way Inductor's reduction kernels are
    written."""
    r0_numel = row_length
    if CONSTANT_ROW:
        r0_numel = 2048
    row = tl.program_id(0)
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    mean = tl.zeros([1, R0_BLOCK], tl.float32)
    m2 = tl.zeros([1, R0_BLOCK], tl.float32)
    weight = tl.zeros([1, R0_BLOCK], tl.float32)
    best = tl.full([1, R0_BLOCK], float("-inf"), tl.float32)
    best_index = tl.full([1, R0_BLOCK], 2147483647, tl.int32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        x = tl.load(x_ptr + (r0_index + r0_numel * row), r0_mask, eviction_policy=EVICT,
                    other=0.0).to(tl.float32)
        if r0_offset == 0:
            next_mean, next_m2, next_weight = x, tl.zeros_like(x), tl.full(x.shape, 1.0, tl.float32)
        else:
            delta = x - mean
            next_weight = weight + 1.0
            next_mean = mean + delta / next_weight
            next_m2 = m2 + delta * (x - next_mean)
        mean = tl.where(r0_mask, next_mean, mean)
        m2 = tl.where(r0_mask, next_m2, m2)
        weight = tl.where(r0_mask, next_weight, weight)
        better = (x > best) | ((x == best) & (r0_index < best_index))
        best = tl.where(r0_mask & better, x, best)
        best_index = tl.where(r0_mask & better, r0_index, best_index)
    row_mean, row_m2, row_weight = tl.reduce((mean, m2, weight), 1, _welford_combine)
    row_max = tl.max(best, 1)[:, None]
    first = tl.min(tl.where(best == row_max, best_index, 2147483647), 1)
    offset = row + tl.arange(0, 1)
    tl.store(mean_ptr + offset, row_mean)
    tl.store(var_ptr + offset, row_m2 / (row_weight - 1.0))
    tl.store(argmax_ptr + offset, first)


SIGNATURE = {"x_ptr": "*bf16", "mean_ptr": "*fp32", "var_ptr": "*fp32", "argmax_ptr": "*i32",
             "row_length": "i32", "R0_BLOCK": "constexpr", "CONSTANT_ROW": "constexpr", "EVICT": "constexpr"}


def _compile_sm90(r0_block: int, constant_row: bool = True, num_warps: int = 4):
    divisible = {(i,): [["tt.divisibility", 16]] for i in range(5)}
    constexprs = {"R0_BLOCK": r0_block, "CONSTANT_ROW": constant_row, "EVICT": "evict_first"}
    src = ASTSource(row_stats, SIGNATURE, constexprs, divisible)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})


def _r_loop_pragma(source: str) -> str | None:
    """The line before the r-loop's `for` (the one over `r0_offset`)."""
    lines = source.splitlines()
    for before, line in zip(lines, lines[1:]):
        if line.lstrip().startswith("for (") and "r0_offset" in line:
            return before.strip()
    raise AssertionError("no r-loop in the generated CUDA")


def test_four_trip_bf16_row_loop_is_unrolled_with_every_load_wide():
    # 512 bf16 per trip over 128 threads: 4 per thread, one 8-byte load each, 4 trips
    compiled = _compile_sm90(512)
    assert _r_loop_pragma(compiled.asm["cuda"]) == "#pragma unroll"
    ptx = compiled.asm["ptx"]
    loads = [line for line in ptx.splitlines() if "ld.global" in line]
    assert len(loads) == 4, loads
    assert all(".v2.b32" in line and "evict_first" in line for line in loads)


def test_row_loop_of_run_time_length_stays_rolled():
    compiled = _compile_sm90(512, constant_row=False)
    assert _r_loop_pragma(compiled.asm["cuda"]) != "#pragma unroll"
    assert compiled.asm["ptx"].count("ld.global") == 1


@pytest.mark.parametrize("r0_block, num_warps", [(128, 1)])
def test_row_loop_too_large_to_unroll_whole_is_unrolled_in_part(r0_block, num_warps):
    # 16 trips of 4 elements a thread (one 8-byte load): the whole loop is over the
    # unrolling budget, a power-of-two share of it is not (8 such trips, 256 a trip over
    # 2 warps, are under it since the row's offset is computed before the loop:
    # pointer_steps' `_LoopBases`)
    trips = ROW // r0_block
    compiled = _compile_sm90(r0_block, num_warps=num_warps)
    pragma = _r_loop_pragma(compiled.asm["cuda"])
    assert pragma.startswith("#pragma unroll "), pragma
    factor = int(pragma.split()[-1])
    assert 1 < factor < trips and trips % factor == 0 and factor & (factor - 1) == 0
    # the unrolled trips' loads are side by side: `factor` loads of the row in the PTX
    assert compiled.asm["ptx"].count("ld.global") == factor


def test_row_loop_of_16_byte_loads_too_large_to_unroll_whole_stays_rolled():
    # one warp, 8 trips of 8 elements a thread: one 16-byte load a trip already, and
    # unrolled in part the loop was slower (Inductor's fp32 layer norm backward,
    # unrolled by 2: 407 us on an H100, 377 rolled)
    compiled = _compile_sm90(256, num_warps=1)
    assert not _r_loop_pragma(compiled.asm["cuda"]).startswith("#pragma unroll")
    loads = [line for line in compiled.asm["ptx"].splitlines() if "ld.global" in line]
    assert len(loads) == 1 and ".v4.b32" in loads[0], loads


def test_long_row_loop_stays_rolled():
    # 64 trips of 32 elements: past the trip limit (NVVM may still unroll it partly)
    compiled = _compile_sm90(32)
    assert _r_loop_pragma(compiled.asm["cuda"]) != "#pragma unroll"


def _check_row_stats(r0_block: int, device: str, num_warps: int = 4) -> None:
    rows = 3
    generator = torch.Generator().manual_seed(r0_block)
    x = (torch.randn(rows, ROW, generator=generator) * 3 + 1).to(torch.bfloat16).to(device)
    mean = torch.empty(rows, dtype=torch.float32, device=device)
    var = torch.empty(rows, dtype=torch.float32, device=device)
    argmax = torch.empty(rows, dtype=torch.int32, device=device)
    row_stats[(rows,)](x, mean, var, argmax, ROW, R0_BLOCK=r0_block, CONSTANT_ROW=True, num_warps=num_warps)
    reference = x.cpu().float().numpy().astype(np.float64)
    np.testing.assert_allclose(mean.cpu().numpy(), reference.mean(axis=1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(var.cpu().numpy(), reference.var(axis=1, ddof=1), rtol=1e-4)
    np.testing.assert_array_equal(argmax.cpu().numpy(), reference.argmax(axis=1))


@pytest.mark.parametrize("r0_block", [512, 2048, 32])
def test_row_stats_match_numpy_in_the_interpreter(r0_block):
    _check_row_stats(r0_block, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("r0_block, num_warps", [(512, 4), (2048, 4), (32, 4), (256, 1), (128, 1)])
def test_row_stats_match_numpy_on_the_gpu(r0_block, num_warps):
    _check_row_stats(r0_block, "cuda", num_warps)


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
@pytest.mark.parametrize("r0_block, num_warps", [(512, 4), (1024, 8), (128, 1)])
def test_unrolled_row_stats_run_right_on_the_cuda_emulator(r0_block, num_warps):
    # the generated CUDA itself (unrolled r-loop; Welford and argmax partials of the
    # warps meeting in shared memory) on the CPU; ties make argmax take the first index.
    # No eviction policy: the emulator has no `createpolicy`.
    rows = 2
    rng = np.random.default_rng(r0_block)
    values = rng.integers(-40, 40, size=(rows, ROW)).astype(np.float32) / 8
    x_bits = (values.view(np.uint32) >> 16).astype(np.uint16)  # exact in bf16
    constexprs = {"R0_BLOCK": r0_block, "CONSTANT_ROW": True, "EVICT": ""}
    divisible = {(i,): [["tt.divisibility", 16]] for i in range(5)}
    module = make_ir(ASTSource(row_stats, SIGNATURE, constexprs, divisible), GPUTarget("cuda", 90, 32),
                     {"num_warps": num_warps})
    source, _, metadata = generate_cuda(module, 90, {"num_warps": num_warps})
    assert _r_loop_pragma(source).startswith("#pragma unroll")  # whole, or in part for (128, 1)
    mean = np.full(rows, 7.0, dtype=np.float32)
    var = np.full(rows, 7.0, dtype=np.float32)
    argmax = np.full(rows, -1, dtype=np.int32)
    emulated = cuda_emulator.Emulator(source, num_warps, metadata["shared"])
    emulated.launch((rows,), x_bits, mean, var, argmax, np.int32(ROW))
    reference = values.astype(np.float64)
    np.testing.assert_allclose(mean, reference.mean(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(var, reference.var(axis=1, ddof=1), rtol=1e-4)
    np.testing.assert_array_equal(argmax, reference.argmax(axis=1))


@triton.jit
def _first_nonzero(a, b):
    return tl.where(a != 0, a, b)


@triton.jit
def first_nonzero_kernel(X, Out, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N)[None, :])
    tl.store(Out + tl.arange(0, 1), tl.reduce(x, 1, _first_nonzero))


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
@pytest.mark.parametrize("n, num_warps", [(1024, 8), (512, 4), (2048, 16)])
def test_order_dependent_reduce_across_warps_on_the_cuda_emulator(n, num_warps):
    # A combine whose result depends on the order of its sides: the lanes' butterfly
    # before the warps meet runs unordered, so only each warp's lowest lane may write.
    rng = np.random.default_rng(n)
    x = rng.integers(1, 1000, size=n, dtype=np.int32)
    first = int(rng.integers(n // 8, n // 2))
    x[:first] = 0  # every lane's part is nonzero past `first`: an unordered combine picks another
    out = np.full(1, -1, dtype=np.int32)
    # 16-byte aligned rows: each thread's elements are a contiguous run (the
    # registers are combined first, so only then is the whole order the index order)
    divisible = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
    src = ASTSource(first_nonzero_kernel, {"X": "*i32", "Out": "*i32", "N": "constexpr"}, {"N": n}, divisible)
    module = make_ir(src, GPUTarget("cuda", 90, 32), {"num_warps": num_warps})
    source, _, metadata = generate_cuda(module, 90, {"num_warps": num_warps})
    cuda_emulator.Emulator(source, num_warps, metadata["shared"]).launch((1,), x, out)
    assert out[0] == x[first]
