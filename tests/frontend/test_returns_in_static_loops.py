"""`return` inside a `tl.static_range` loop, which Triton accepts since the loop
is unrolled: a return reached at compile time ends the function there, and a
return under a run-time `if` skips the remaining iterations and the code after
the loop. Kernels run in the CPU interpreter on random inputs against numpy;
a return in a run-time loop is still refused."""

from __future__ import annotations

import numpy as np
import pytest

import tritone
import tritone.language as tl
from tests.frontend._helpers import compile_ir, ops_named
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource
from tritone.errors import UnsupportedLanguageConstruct
from tritone.interpreter import run_kernel
from tritone.runtime.jit import jit

RNG = np.random.default_rng()
BLOCK = 16
STEPS = 4
SIGNATURE = {"X": "*fp32", "Y": "*fp32", "n": "i32"}


@jit
def first_step_at_least(x, n, STEPS: tl.constexpr):
    # Returns x + i for the first i in 0..STEPS-1 with i >= n, else -x.
    for i in tl.static_range(STEPS):
        if i >= n:
            return x + i
    return -x


@jit
def stop_at_compile_time(x, STOP: tl.constexpr):
    acc = x
    for i in tl.static_range(8):
        if i == STOP:
            return acc
        acc = acc * 2
    return acc - 1


@jit
def static_loop_returns(X, Y, n, BLOCK: tl.constexpr, STEPS: tl.constexpr, STOP: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Y + offs, first_step_at_least(x, n, STEPS) + stop_at_compile_time(x, STOP))
    for i in tl.static_range(STEPS):
        if i >= n:  # the kernel itself stops at the first such i
            tl.store(Y + BLOCK + offs, x * i)
            return
    tl.store(Y + BLOCK + offs, x)


@pytest.mark.parametrize("n", [0, 2, STEPS - 1, STEPS, STEPS + 3])
def test_returns_in_static_loops_skip_the_rest(n):
    stop = int(RNG.integers(0, 8))
    module = compile_ir(static_loop_returns, SIGNATURE, {"BLOCK": BLOCK, "STEPS": STEPS, "STOP": stop})
    # the compile-time return leaves no branch; each run-time one is an `if`
    assert len(ops_named(module, "for")) == 0 and len(ops_named(module, "if")) == 2 * STEPS

    x = RNG.standard_normal(BLOCK).astype(np.float32)
    y = np.full(2 * BLOCK, np.nan, np.float32)
    run_kernel(module, (1,), [x, y, n])
    first = x + n if n < STEPS else -x
    np.testing.assert_allclose(y[:BLOCK], first + x * 2.0 ** stop, rtol=1e-6)
    np.testing.assert_allclose(y[BLOCK:], x * n if n < STEPS else x, rtol=1e-6)


def test_returns_in_static_loops_compile_for_cuda(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    src = ASTSource(static_loop_returns, SIGNATURE, {"BLOCK": BLOCK, "STEPS": STEPS, "STOP": 3})
    compiled = tritone.compile(src, target=GPUTarget("cuda", 80, 32))
    assert ".entry static_loop_returns" in compiled.asm["ptx"]


@jit
def static_loop_in_run_time_loop(X, n):
    for _ in range(n):
        for i in tl.static_range(2):
            if i == 1:
                return
    tl.store(X, 1.0)


def test_a_return_in_a_static_loop_inside_a_run_time_loop_is_refused():
    with pytest.raises(UnsupportedLanguageConstruct) as info:
        compile_ir(static_loop_in_run_time_loop, {"X": "*fp32", "n": "i32"})
    assert info.value.error_message == "Cannot have `return` statements inside `while` or `for` statements in triton."
    assert info.value.lineno == static_loop_in_run_time_loop.starting_line_number + 4


@jit
def count_up_to(x, STEPS: tl.constexpr, STOP: tl.constexpr):
    for i in tl.static_range(STEPS):
        if i == STOP:
            return x + i
        x = x + 1
    return x * 2


@jit
def long_static_loop_kernel(X, Y, STEPS: tl.constexpr, STOP: tl.constexpr):
    offs = tl.arange(0, 16)
    tl.store(Y + offs, count_up_to(tl.load(X + offs), STEPS, STOP))


@pytest.mark.parametrize("stop", [250, 10_000])  # returns in iteration 250, or never
def test_compile_time_returns_in_long_static_loops_do_not_nest(stop):
    steps = 2000  # far more iterations than Python's recursion limit allows frames
    module = compile_ir(long_static_loop_kernel, {"X": "*fp32", "Y": "*fp32"}, {"STEPS": steps, "STOP": stop})
    x = RNG.standard_normal(16).astype(np.float32)
    y = np.full(16, np.nan, np.float32)
    run_kernel(module, (1,), [x, y])
    expected = x + 2 * stop if stop < steps else (x + steps) * 2
    np.testing.assert_allclose(y, expected, rtol=1e-5)
