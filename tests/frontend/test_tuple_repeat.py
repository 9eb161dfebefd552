"""A list in kernel code repeats like Python's (`[2] * (RANK - 2)`), as in
Triton: shapes of any rank built from constexprs, for example for a batched dot."""

from __future__ import annotations

import numpy as np
import pytest

import tritone.language as tl
from tests.frontend._helpers import compile_error, compile_ir
from tritone.interpreter import run_kernel
from tritone.runtime.jit import jit

RNG = np.random.default_rng()


@jit
def batched_dot(X, Y, Z, RANK: tl.constexpr, TRANS_B: tl.constexpr):
    n: tl.constexpr = 64 << RANK
    x = tl.load(X + tl.arange(0, n)).reshape([2] * (RANK - 2) + [16, 16])
    y = tl.load(Y + tl.arange(0, n)).reshape([2] * (RANK - 2) + [16, 16])
    if TRANS_B:
        y = tl.trans(y)
    z = tl.dot(x, y)
    tl.store(Z + tl.arange(0, n), z.reshape([n]))


@pytest.mark.parametrize("rank", [2, 3, 5])
@pytest.mark.parametrize("trans_b", [False, True])
def test_repeated_list_shapes_a_batched_dot(rank, trans_b):
    module = compile_ir(batched_dot, {"X": "*fp32", "Y": "*fp32", "Z": "*fp32"}, {"RANK": rank, "TRANS_B": trans_b})
    shape = (2,) * (rank - 2) + (16, 16)
    x = RNG.integers(-4, 5, shape).astype(np.float32)
    y = RNG.integers(-4, 5, shape).astype(np.float32)
    z = np.full(shape, np.nan, np.float32)
    run_kernel(module, (1,), [x, y, z])
    expected = x @ (np.swapaxes(y, -1, -2) if trans_b else y)
    np.testing.assert_array_equal(z, expected)


@jit
def repeat_by_float(X, N: tl.constexpr):
    shape: tl.constexpr = [2] * N
    tl.store(X + tl.arange(0, 4), tl.zeros(shape, tl.float32).reshape([4]))


def test_repeating_by_a_non_int_is_refused():
    message = compile_error(repeat_by_float, {"X": "*fp32"}, {"N": 1.5})
    assert "repeated a compile-time int number of times" in str(message)
