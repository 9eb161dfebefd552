"""The seed of tl.rand / tl.randn / tl.randint must be an integer: a float or a
pointer (a tensor passed where its value was meant) is a CompilationError."""

from __future__ import annotations

import pytest

import tritone.language as tl
from tests.frontend._helpers import compile_error, compile_ir, ops_named
from tritone.runtime.jit import jit


@jit
def uniform(X, seed):
    offsets = tl.arange(0, 16)
    tl.store(X + offsets, tl.rand(seed, offsets))


@jit
def normal_pair(X, seed):
    offsets = tl.arange(0, 16)
    a, b, _, _ = tl.randint4x(seed, offsets)
    tl.store(X + offsets, tl.randn(seed, offsets) + a.to(tl.float32) + b.to(tl.float32))


@pytest.mark.parametrize("kernel", [uniform, normal_pair])
@pytest.mark.parametrize("seed_type", ["*i32", "*i64", "fp32", "fp16"])
def test_a_seed_that_is_not_an_integer_does_not_compile(kernel, seed_type):
    error = compile_error(kernel, {"X": "*fp32", "seed": seed_type})
    assert "seed of Triton's random numbers must be an integer" in str(error)


@pytest.mark.parametrize("seed_type", ["i32", "i64", "u32", "u64"])
def test_integer_seeds_compile(seed_type):
    module = compile_ir(uniform, {"X": "*fp32", "seed": seed_type})
    assert len(ops_named(module, "store")) == 1
