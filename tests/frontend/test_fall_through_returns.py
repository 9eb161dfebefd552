"""A helper that returns a value on some paths and falls off its end on others,
which Triton compiles (the missing value is poison): tritone returns zeros
there, one value poison may take. A bare `return` beside `return value` is
still an error, as in Triton."""

from __future__ import annotations

import numpy as np

import tritone
import tritone.language as tl
from tests.frontend._helpers import compile_error, compile_ir
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource
from tritone.interpreter import run_kernel
from tritone.runtime.jit import jit

RNG = np.random.default_rng()
BLOCK = 16


@jit
def scaled_when_positive(x, s):
    if s > 0:
        return x * s, s
    # no return: this path falls off the end


@jit
def fall_through_kernel(X, Y, S, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    s = tl.load(S + pid)
    if s > 0:  # the kernel only reads the result where the helper returned one
        scaled, factor = scaled_when_positive(tl.load(X + offs), s)
        tl.store(Y + offs, scaled + factor)


def test_a_path_falling_off_the_end_gives_zeros_where_another_returns():
    module = compile_ir(fall_through_kernel, {"X": "*fp32", "Y": "*fp32", "S": "*fp32"}, {"BLOCK": BLOCK})
    programs = 6
    x = RNG.standard_normal(programs * BLOCK).astype(np.float32)
    s = RNG.standard_normal(programs).astype(np.float32)
    s[0], s[1] = abs(s[0]) + 0.5, -abs(s[1]) - 0.5  # both paths taken
    y = np.full_like(x, np.nan)
    run_kernel(module, (programs,), [x, y, s])
    per_element = np.repeat(s, BLOCK)
    expected = np.where(per_element > 0, x * per_element + per_element, np.nan)
    np.testing.assert_allclose(y, expected, rtol=1e-6, equal_nan=True)


def test_a_path_falling_off_the_end_compiles_for_cuda(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    src = ASTSource(fall_through_kernel, {"X": "*fp32", "Y": "*fp32", "S": "*fp32"}, {"BLOCK": BLOCK})
    compiled = tritone.compile(src, target=GPUTarget("cuda", 80, 32))
    assert ".entry fall_through_kernel" in compiled.asm["ptx"]


@jit
def zeros_when_not_positive(x):
    if x > 0:
        return x


@jit
def zeros_kernel(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, zeros_when_not_positive(tl.load(X + offs).sum()) + tl.zeros([BLOCK], tl.float32))


def test_the_fall_through_value_is_zero():
    module = compile_ir(zeros_kernel, {"X": "*fp32", "Y": "*fp32"}, {"BLOCK": BLOCK})
    for sign in (1.0, -1.0):
        x = sign * np.abs(RNG.standard_normal(BLOCK)).astype(np.float32)
        y = np.full(BLOCK, np.nan, np.float32)
        run_kernel(module, (1,), [x, y])
        np.testing.assert_allclose(y, np.full(BLOCK, max(x.sum(), 0.0)), rtol=1e-5)


@jit
def bare_return_beside_a_value(x):
    if x > 0:
        return x
    return


@jit
def bare_return_kernel(X):
    tl.store(X, bare_return_beside_a_value(tl.load(X)))


def test_a_bare_return_beside_a_value_is_an_error():
    error = compile_error(bare_return_kernel, {"X": "*fp32"})
    assert str(error).endswith("Inconsistent return types: fp32 and void")
