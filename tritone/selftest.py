"""`python -m tritone selftest`: run a few complete kernels where kernels run
now (the current NVIDIA GPU, else the CPU interpreter) and compare them with
numpy. Needs nothing but tritone and numpy, so it is the first check after an
install: on a GPU the inputs go to device memory in `DeviceArray`s (no torch).
The kernels are those of `examples/` (vector add, fused softmax) plus a blocked
matmul.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, TextIO

import numpy as np

import tritone as triton
import tritone.language as tl

from .backends.cuda.device_array import KernelMemory


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(input_ptr + row * input_row_stride + cols, mask=mask, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)
    numerator = tl.exp(shifted)
    denominator = tl.sum(numerator, axis=0)
    tl.store(output_ptr + row * output_row_stride + cols, numerator / denominator, mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc,
             mask=(rows[:, None] < M) & (cols[None, :] < N))


@dataclass(frozen=True)
class CheckResult:
    """One check: `ran_on` says where its kernel ran ("NVIDIA H200 (sm_90)", "CPU
    interpreter"; empty when that could not be found out)."""

    name: str
    size: str
    max_error: float
    tolerance: float
    seconds: float
    ran_on: str = ""
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and self.max_error <= self.tolerance


# A check runs its kernel on random inputs placed in `memory` and returns
# (size of the problem, largest absolute error against numpy, tolerance).
Check = Callable[[np.random.Generator, KernelMemory], tuple[str, float, float]]


def _vector_add(rng: np.random.Generator, memory: KernelMemory) -> tuple[str, float, float]:
    n = 10_000
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    out = memory.put(np.full(n, np.nan, dtype=np.float32))
    add_kernel[(triton.cdiv(n, 1024),)](memory.put(x), memory.put(y), out, n, BLOCK_SIZE=1024)
    return f"n={n}", float(np.max(np.abs(memory.get(out) - (x + y)))), 0.0


def _fused_softmax(rng: np.random.Generator, memory: KernelMemory) -> tuple[str, float, float]:
    rows, cols = 64, 781
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out = memory.put(np.full_like(x, np.nan))
    # Both arrays are C-contiguous float32 wherever they live: rows are `cols` elements apart.
    softmax_kernel[(rows,)](out, memory.put(x), cols, cols, cols, BLOCK_SIZE=triton.next_power_of_2(cols))
    shifted = x.astype(np.float64) - x.max(axis=1, keepdims=True)
    expected = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    return f"{rows}x{cols}", float(np.max(np.abs(memory.get(out) - expected))), 1e-6


def _matmul(rng: np.random.Generator, memory: KernelMemory) -> tuple[str, float, float]:
    m, n, k = 96, 80, 72
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = memory.put(np.full((m, n), np.nan, dtype=np.float32))
    grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
    matmul_kernel[grid](memory.put(a), memory.put(b), c, m, n, k, k, 1, n, 1, n, 1,
                        BLOCK_M=32, BLOCK_N=32, BLOCK_K=16)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    return f"{m}x{k} @ {k}x{n}", float(np.max(np.abs(memory.get(c) - expected))), 1e-3


CHECKS: tuple[tuple[str, Check], ...] = (
    ("vector_add", _vector_add),
    ("fused_softmax", _fused_softmax),
    ("matmul", _matmul),
)


def run_checks(seed: int | None = None) -> list[CheckResult]:
    """Run every check with fresh random inputs where kernels run now (device
    memory freed after each); failures are recorded, not raised."""
    rng = np.random.default_rng(seed)
    results = []
    for name, check in CHECKS:
        start = time.perf_counter()
        ran_on = ""
        try:
            with KernelMemory() as memory:
                ran_on = memory.where
                size, max_error, tolerance = check(rng, memory)
            error = None if np.isfinite(max_error) else "non-finite output"
        except Exception as exc:  # a broken kernel is a failed check, reported in the table
            size, max_error, tolerance, error = "", float("nan"), 0.0, f"{type(exc).__name__}: {exc}"
        results.append(CheckResult(name, size, max_error, tolerance, time.perf_counter() - start, ran_on, error))
    return results


def print_report(results: list[CheckResult], out: TextIO) -> None:
    """The results as a table, a heading naming where the kernels ran, and a last
    line "all N passed" or "K of N FAILED"."""
    places = list(dict.fromkeys(result.ran_on for result in results if result.ran_on))
    where = " and ".join(places) if places else "an unknown device"
    out.write(f"tritone {triton.__tritone_version__} (Triton API {triton.__version__}) selftest on {where}\n")
    out.write(f"{'kernel':<15}{'size':<20}{'max error':>11}{'tolerance':>11}  {'result':<7}{'time':>8}  ran on\n")
    for result in results:
        status = "ok" if result.passed else "FAILED"
        out.write(f"{result.name:<15}{result.size:<20}{result.max_error:>11.2e}{result.tolerance:>11.1e}  "
                  f"{status:<7}{result.seconds:>7.2f}s  {result.ran_on or '?'}\n")
        if result.error:
            for line in result.error.splitlines()[:8]:
                out.write(f"    {line}\n")
    failed = sum(not r.passed for r in results)
    out.write(f"all {len(results)} passed\n" if not failed else f"{failed} of {len(results)} FAILED\n")
