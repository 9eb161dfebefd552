"""Reductions whose axis spans warps, run on the CPU emulator: the warps'
partial results meet in shared memory and the lanes combine them by
butterflies (`codegen_reduce._reduce_across_warps`). Sums, maxima and
argmax with ties (a combine that is not commutative: the lower index wins)
over blocks whose other dim takes some lanes, so only part of a warp's lane
bits are free for the butterflies."""

from __future__ import annotations

import cuda_emulator
import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir

pytestmark = pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")


@triton.jit
def reduce_rows_kernel(X, Sums, Maxes, Firsts, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(X + rows * N + cols)
    out = tl.arange(0, N if AXIS == 0 else M)
    tl.store(Sums + out, tl.sum(x, axis=AXIS))
    tl.store(Maxes + out, tl.max(x, axis=AXIS))
    tl.store(Firsts + out, tl.argmax(x, axis=AXIS))


@triton.jit
def reduce_all_kernel(X, Out, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N)).to(tl.float32)
    total = tl.sum(x, axis=0)
    biggest = tl.max(x, axis=0)
    tl.store(Out, total)
    tl.store(Out + 1, biggest)
    tl.store(Out + 2, tl.argmin(x, axis=0).to(tl.float32))


def _emulate(fn, signature: dict, constexprs: dict, num_warps: int, butterflies: bool) -> cuda_emulator.Emulator:
    sig = {**signature, **{name: "constexpr" for name in constexprs}}
    module = make_ir(ASTSource(fn, sig, constexprs), GPUTarget("cuda", 90, 32), {"num_warps": num_warps})
    source, _, metadata = generate_cuda(module, 90, {"num_warps": num_warps})
    # whether the warps' partials meet by lane butterflies (else every thread reads them all)
    assert ("tt_wsrc" in source) == butterflies
    return cuda_emulator.Emulator(source, num_warps, metadata["shared"])


@pytest.mark.parametrize("m, n, axis, num_warps, butterflies", [
    (4, 256, 1, 4, True),   # rows along the warps' lanes, columns across warps
    (2, 512, 1, 8, True),
    (64, 8, 0, 8, False),   # 2 lane bits along the rows for 8 warps' partials
    (128, 8, 0, 2, True),
    (1, 1024, 1, 16, True),
])
def test_row_and_column_reductions_across_warps(m, n, axis, num_warps, butterflies):
    rng = np.random.default_rng(m * n + axis)
    # small integers in int32: sums are exact, maxima repeat (argmax must take the first)
    x = rng.integers(-20, 20, size=(m, n), dtype=np.int32)
    count = n if axis == 0 else m
    sums = np.full(count, 12345, dtype=np.int32)
    maxes = np.full(count, 12345, dtype=np.int32)
    firsts = np.full(count, -1, dtype=np.int32)
    kernel = _emulate(reduce_rows_kernel, {"X": "*i32", "Sums": "*i32", "Maxes": "*i32", "Firsts": "*i32"},
                      {"M": m, "N": n, "AXIS": axis}, num_warps, butterflies)
    kernel.launch((1,), x, sums, maxes, firsts)
    np.testing.assert_array_equal(sums, x.sum(axis=axis))
    np.testing.assert_array_equal(maxes, x.max(axis=axis))
    np.testing.assert_array_equal(firsts, x.argmax(axis=axis))


@pytest.mark.parametrize("n, num_warps", [(4096, 32), (2048, 8)])
def test_whole_block_reduction_over_many_warps(n, num_warps):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 4).astype(np.float16)
    x[rng.integers(0, n, size=3)] = x.min()  # ties for argmin: the first index wins
    out = np.full(3, np.nan, dtype=np.float32)
    _emulate(reduce_all_kernel, {"X": "*fp16", "Out": "*fp32"}, {"N": n}, num_warps, True).launch((1,), x, out)
    wide = x.astype(np.float32)
    np.testing.assert_allclose(out[0], wide.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)
    assert out[1] == wide.max()
    assert out[2] == float(np.argmin(wide))


@triton.jit
def _larger(a, b):
    return tl.maximum(a, b)


@triton.jit
def scans_kernel(X, Sums, Maxes, Sums2, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    # two sums (one combine function between them) and a max (its own)
    tl.store(Sums + tl.arange(0, N), tl.cumsum(x, axis=0))
    tl.store(Maxes + tl.arange(0, N), tl.associative_scan(x, 0, _larger))
    tl.store(Sums2 + tl.arange(0, N), tl.cumsum(x * 2, axis=0))


def test_scans_sharing_and_not_sharing_combine_functions():
    n, num_warps = 512, 4
    sig = {"X": "*i32", "Sums": "*i32", "Maxes": "*i32", "Sums2": "*i32", "N": "constexpr"}
    module = make_ir(ASTSource(scans_kernel, sig, {"N": n}), GPUTarget("cuda", 90, 32), {"num_warps": num_warps})
    source, _, metadata = generate_cuda(module, 90, {"num_warps": num_warps})
    assert source.count("void tt_combine") == 2
    rng = np.random.default_rng(5)
    x = rng.integers(-50, 50, size=n, dtype=np.int32)
    sums, maxes, sums2 = (np.full(n, 777, dtype=np.int32) for _ in range(3))
    cuda_emulator.Emulator(source, num_warps, metadata["shared"]).launch((1,), x, sums, maxes, sums2)
    np.testing.assert_array_equal(sums, np.cumsum(x))
    np.testing.assert_array_equal(maxes, np.maximum.accumulate(x))
    np.testing.assert_array_equal(sums2, np.cumsum(2 * x))
