"""`tritone.language.standard._log2`, Triton's private constexpr helper that torch
inductor's triton_helpers imports for its sorting networks: floor(log2(n))
at compile time, usable as a shape exponent in kernels."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tritone.language as tl
from tests.frontend._helpers import compile_ir
from tritone.interpreter import run_kernel
from tritone.language.standard import _log2
from tritone.runtime.jit import jit

RNG = np.random.default_rng()


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 8, 9, 1023, 1024, 2**40 + 1])
def test_log2_is_the_floor_of_log2_and_zero_below_two(n):
    assert _log2(n) == (math.floor(math.log2(n)) if n >= 2 else 0)


@jit
def halves_kernel(X, Y, BLOCK: tl.constexpr):
    steps: tl.constexpr = _log2(BLOCK)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    width: tl.constexpr = 1 << steps
    tl.store(Y + offs, x * steps + tl.sum(tl.load(X + tl.arange(0, width))))


@pytest.mark.parametrize("block", [2, 16, 64])
def test_log2_gives_compile_time_values_in_kernels(block):
    module = compile_ir(halves_kernel, {"X": "*fp32", "Y": "*fp32"}, {"BLOCK": block})
    x = RNG.standard_normal(block).astype(np.float32)
    y = np.full(block, np.nan, np.float32)
    run_kernel(module, (1,), [x, y])
    np.testing.assert_allclose(y, x * math.log2(block) + x.sum(), rtol=1e-5, atol=1e-5)
