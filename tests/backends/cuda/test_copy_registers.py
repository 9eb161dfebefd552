"""Register copies (broadcasts, expand_dims, layout changes within a thread) of
`COPY_LOOP_MIN_REGISTERS` registers or more are one unrolled loop whose source
index is a function of the register index (`register_index`); smaller ones stay
written out register by register. The loop form must read the same registers:
checked on the CUDA emulator (the generated CUDA run on the CPU) and on the GPU."""

from __future__ import annotations

import re

import cuda_emulator
import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.codegen_layout import COPY_LOOP_MIN_REGISTERS
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir

SIGNATURE = {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "M": "constexpr", "N": "constexpr"}
COPY_LOOP = re.compile(r"for \(int i = 0; i < (\d+); \+\+i\) v\d+\[i\] = v\d+\[(.+)\];$")
WRITTEN_OUT = re.compile(r"^\s+v\d+\[\d+\] = v\d+\[\d+\];$")


@triton.jit
def broadcast_select(X, Y, Out, M: tl.constexpr, N: tl.constexpr):
    """out[m, n] = max(x[m], 3 * y[n]) by way of both vectors broadcast to (M, N)."""
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    xb = tl.broadcast_to(tl.load(X + rows)[:, None], (M, N))
    yb = tl.broadcast_to(tl.load(Y + cols)[None, :], (M, N))
    tl.store(Out + rows[:, None] * N + cols[None, :], tl.where(xb > yb * 3.0, xb, yb * 3.0))


def _generate(m: int, n: int, num_warps: int = 4):
    divisible = {(i,): [["tt.divisibility", 16]] for i in range(3)}
    module = make_ir(ASTSource(broadcast_select, SIGNATURE, {"M": m, "N": n}, divisible), GPUTarget("cuda", 90, 32),
                     {"num_warps": num_warps})
    return generate_cuda(module, 90, {"num_warps": num_warps})


def _copies(source: str) -> tuple[list[tuple[int, str]], int]:
    """(the copy loops: register count and source index, the written-out copy lines)."""
    loops = [(int(match.group(1)), match.group(2)) for match in map(COPY_LOOP.search, source.splitlines()) if match]
    return loops, sum(1 for line in source.splitlines() if WRITTEN_OUT.match(line))


def test_large_broadcasts_are_loops_and_small_ones_are_written_out():
    source, _, _ = _generate(64, 64)  # 32 registers a thread
    loops, written = _copies(source)
    broadcasts = [(count, index) for count, index in loops if index != "i"]
    assert broadcasts and all(count >= COPY_LOOP_MIN_REGISTERS for count, _ in broadcasts)
    assert written == 0
    source, _, _ = _generate(16, 16)  # 2 registers a thread: below the threshold
    loops, written = _copies(source)
    assert all(index == "i" for _, index in loops) and written > 0


def _inputs(m: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(m * n)
    return (rng.standard_normal(m).astype(np.float32), rng.standard_normal(n).astype(np.float32),
            np.full(m * n, np.nan, dtype=np.float32))


def _expected(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.maximum(x[:, None], 3.0 * y[None, :]).reshape(-1)


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
@pytest.mark.parametrize("m, n, num_warps", [(64, 64, 4), (128, 32, 2)])
def test_copy_loops_read_the_right_registers_on_the_cuda_emulator(m, n, num_warps):
    source, _, metadata = _generate(m, n, num_warps)
    assert any(index != "i" for _, index in _copies(source)[0])
    x, y, out = _inputs(m, n)
    cuda_emulator.Emulator(source, num_warps, metadata["shared"]).launch((1,), x, y, out)
    np.testing.assert_array_equal(out, _expected(x, y))


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, num_warps", [(64, 64, 4), (128, 32, 2), (16, 16, 4)])
def test_copy_loops_read_the_right_registers_on_the_gpu(m, n, num_warps):
    x, y, out = (torch.from_numpy(a).cuda() for a in _inputs(m, n))
    broadcast_select[(1,)](x, y, out, M=m, N=n, num_warps=num_warps)
    np.testing.assert_array_equal(out.cpu().numpy(), _expected(x.cpu().numpy(), y.cpu().numpy()))
