"""What the frontend's IR computes: kernels with loops, early returns, helpers,
ternaries and unrolled loops, run by the CPU interpreter on fresh random
inputs and compared with numpy."""

from __future__ import annotations

import numpy as np

import tritone.language as tl
from tests.frontend._helpers import compile_ir
from tritone.interpreter import run_kernel
from tritone.runtime.jit import jit

RNG = np.random.default_rng()


def run(kernel, grid, signature, args, constexprs=None):
    run_kernel(compile_ir(kernel, signature, constexprs), grid, args)


@jit
def clamp_or_double(a, limit):
    if a > limit:
        return a - limit
    return a * 2


@jit
def swap(a, b):
    return b, a


@jit
def control_flow_kernel(X, Y, n, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0)
    acc = x
    for i in range(STEPS, 0, -1):  # i = STEPS .. 1
        acc = acc * i
    k = 0
    while k < pid:
        acc += 1.0
        k += 1
    for j in tl.static_range(3):
        acc += j * 0.5
    first, second = swap(acc, x)
    acc = second + clamp_or_double(pid, 1)
    tl.store(Y + offs, acc if pid % 2 == 0 else -first, mask=mask)


def test_loops_early_return_helpers_and_ternary_compute_what_python_would():
    n, block, steps = int(RNG.integers(65, 200)), 32, int(RNG.integers(2, 5))
    x = RNG.standard_normal(n).astype(np.float32)
    y = np.full(n, np.nan, np.float32)
    grid = (n + block - 1) // block + 2  # two programs past the end return early
    run(control_flow_kernel, (grid,), {"X": "*fp32", "Y": "*fp32", "n": "i32"}, [x, y, n],
        {"BLOCK": block, "STEPS": steps})
    pid = np.arange(n) // block
    acc = x * np.float32(np.prod(range(1, steps + 1))) + pid + 1.5
    # swap gives (x, acc): even programs store acc + helper(pid), odd ones -x
    expected = np.where(pid % 2 == 0, acc + np.where(pid > 1, pid - 1, pid * 2), -x)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


@jit
def runtime_if_kernel(X, Y, n):
    pid = tl.program_id(0)
    v = tl.load(X + pid)
    if v > 0:
        r = v * 2
        w = 1
    elif v > -0.5:
        r = v + 10
        w = 2
    else:
        r = -v
        w = 3
    tl.store(Y + pid, r + w)


def test_runtime_if_elif_else_merges_values():
    n = 64
    x = RNG.uniform(-1, 1, n).astype(np.float32)
    y = np.zeros(n, np.float32)
    run(runtime_if_kernel, (n,), {"X": "*fp32", "Y": "*fp32", "n": "i32"}, [x, y, n])
    expected = np.where(x > 0, x * 2 + 1, np.where(x > -0.5, x + 10 + 2, -x + 3))
    np.testing.assert_allclose(y, expected, rtol=1e-6)


@jit
def combine_max(a, b):
    return tl.maximum(a, b)


@jit
def reduce_loop_kernel(X, Y, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    total = 0.0
    for r in range(ROWS):
        row = tl.load(X + r * BLOCK + offs)
        best = tl.maximum(best, row)
        total += tl.reduce(row, 0, combine_max)
    tl.store(Y + offs, best + total)


def test_reduction_with_a_jit_combine_function_inside_a_loop():
    rows, block = 5, 16
    x = RNG.standard_normal((rows, block)).astype(np.float32)
    y = np.zeros(block, np.float32)
    run(reduce_loop_kernel, (1,), {"X": "*fp32", "Y": "*fp32"}, [x, y], {"ROWS": rows, "BLOCK": block})
    expected = x.max(axis=0) + np.float32(x.max(axis=1).astype(np.float32).sum(dtype=np.float32))
    np.testing.assert_allclose(y, expected, rtol=1e-5)


@jit
def condition_while_kernel(X, Y, n):
    # Halve each value until it is below 1: a data-dependent while through tl.condition.
    x = tl.load(X + tl.program_id(0))
    steps = 0
    while tl.condition(x >= 1.0, disable_licm=True):
        x = x * 0.5
        steps += 1
    tl.store(Y + tl.program_id(0), steps + n)


def test_while_on_a_tl_condition():
    x = RNG.uniform(0, 1000, 32).astype(np.float32)
    y = np.zeros(32, np.int32)
    run(condition_while_kernel, (32,), {"X": "*fp32", "Y": "*i32", "n": "i32"}, [x, y, 7])
    expected = [next(k for k in range(64) if v / 2.0**k < 1.0) + 7 for v in x.astype(np.float64)]
    assert y.tolist() == expected
