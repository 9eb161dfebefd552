"""Python's `min` and `max` on constexprs fold at compile time, as in Triton,
except where Python's answer depends on the argument order (NaN, -0.0), which
Triton refuses; on tensors they are tl.minimum/tl.maximum."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tritone.language as tl
from tests.frontend._helpers import compile_error, compile_ir, ops_named
from tritone.interpreter import run_kernel
from tritone.runtime.jit import jit

RNG = np.random.default_rng()


@jit
def fold_min_max(X, Y, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    low: tl.constexpr = min(A, B, C)
    high: tl.constexpr = max(A, B)
    offs = tl.arange(0, 16)
    x = tl.load(X + offs)
    tl.store(Y + offs, min(x, high) + low)


def test_min_max_of_constexprs_fold_and_of_tensors_compute():
    a, b = float(RNG.uniform(-2, 2)), int(RNG.integers(-3, 4))
    c = float(RNG.uniform(-2, 2))
    module = compile_ir(fold_min_max, {"X": "*fp32", "Y": "*fp32"}, {"A": a, "B": b, "C": c})
    # the constexpr min and max are folded: only the tensor's min is an op
    assert len(ops_named(module, "min")) == 1 and not ops_named(module, "max")
    x = RNG.standard_normal(16).astype(np.float32)
    y = np.full(16, np.nan, np.float32)
    run_kernel(module, (1,), [x, y])
    expected = np.minimum(x, np.float32(max(a, b))) + np.float32(min(a, b, c))
    np.testing.assert_allclose(y, expected, rtol=1e-6)


@jit
def min_of_constexprs(A: tl.constexpr, B: tl.constexpr):
    tl.static_assert(min(A, B) <= A)


@jit
def max_of_constexprs(A: tl.constexpr, B: tl.constexpr):
    tl.static_assert(max(A, B) >= A)


@pytest.mark.parametrize("kernel, name", [(min_of_constexprs, "min"), (max_of_constexprs, "max")])
@pytest.mark.parametrize("special", [math.nan, -0.0])
def test_min_max_of_constexprs_refuse_nan_and_negative_zero(kernel, name, special):
    error = compile_error(kernel, {}, {"A": 1.0, "B": special})
    assert error.error_message == (f"{name}() of constexprs cannot take {special!r}: the result would depend on the "
                                   f"argument order; use tl.{'minimum' if name == 'min' else 'maximum'} on tensors")
    assert error.lineno == kernel.starting_line_number + 1
