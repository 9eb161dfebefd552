"""Constexpr-ness comes from values, not from `tl.constexpr` annotations, as
Triton compiles kernels: each argument of a `@jit` callee decides whether its
parameter is a constexpr (baked into the callee) or a run-time value (an IR
argument), and a local annotated constexpr holds a run-time value as it is.
Kernels run in the CPU interpreter on random inputs and are checked with numpy;
one is also compiled for CUDA (NVRTC, no GPU needed)."""

from __future__ import annotations

import numpy as np

import tritone
import tritone.language as tl
from tests.frontend._helpers import compile_ir, ops_named
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource
from tritone.interpreter import run_kernel
from tritone.ir.types import float32, int32
from tritone.runtime.jit import jit

RNG = np.random.default_rng()
BLOCK = 16
SIGNATURE = {"X": "*fp32", "Y": "*fp32", "n": "i32"}


@jit
def times(a, K: tl.constexpr):
    return a * K


@jit
def shift_by_sign(a, K: tl.constexpr):
    # A run-time K makes this a run-time branch; a constexpr K decides it now.
    if K > 0:
        result = a + K
    else:
        result = a - K
    return result


@jit
def annotated_constexpr_given_run_time_values(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    first = tl.load(X)
    by_block = times(x, x)
    by_scalar = times(x, first)
    by_argument = times(x, n)
    by_constexpr = times(x, BLOCK)
    tl.store(Y + offs, by_block + by_scalar + by_argument + by_constexpr + shift_by_sign(x, first))


def _inputs():
    x = RNG.standard_normal(BLOCK).astype(np.float32)
    y = np.full(BLOCK, np.nan, np.float32)
    n = int(RNG.integers(-5, 6))
    return x, y, n


def test_a_parameter_annotated_constexpr_takes_a_tensor_as_an_ir_argument():
    module = compile_ir(annotated_constexpr_given_run_time_values, SIGNATURE, {"BLOCK": BLOCK})
    callees = [module.functions[c.attrs["callee"]] for c in ops_named(module.kernel, "call")]
    # block, scalar tensor and i32 argument are run-time values: two IR arguments;
    # the constexpr BLOCK is baked in: one.
    assert [len(f.args) for f in callees] == [2, 2, 2, 1, 2]
    assert (callees[1].args[1].type, callees[2].args[1].type) == (float32, int32)
    # the run-time K makes shift_by_sign branch at run time
    assert len(ops_named(callees[4], "if")) == 1

    x, y, n = _inputs()
    run_kernel(module, (1,), [x, y, n])
    shifted = np.where(x[0] > 0, x + x[0], x - x[0])
    expected = x * x + x * x[0] + x * np.float32(n) + x * np.float32(BLOCK) + shifted
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


def test_a_parameter_annotated_constexpr_given_tensors_compiles_for_cuda(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    src = ASTSource(annotated_constexpr_given_run_time_values, SIGNATURE, {"BLOCK": BLOCK})
    compiled = tritone.compile(src, target=GPUTarget("cuda", 80, 32))
    assert ".entry annotated_constexpr_given_run_time_values" in compiled.asm["ptx"]


@jit
def load_block(P, B):
    # B is not annotated: given a constexpr it stays one, so it can be a shape.
    tl.static_assert(B % 8 == 0, "B must be a multiple of 8")
    return tl.load(P + tl.arange(0, B))


@jit
def unannotated_given_constexprs(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, load_block(X, BLOCK) + load_block(X, B=BLOCK) + load_block(X, 16))


def test_an_unannotated_parameter_given_a_constexpr_stays_a_constexpr():
    module = compile_ir(unannotated_given_constexprs, {"X": "*fp32", "Y": "*fp32"}, {"BLOCK": BLOCK})
    calls = ops_named(module.kernel, "call")
    # positional, keyword and literal 16 are one specialisation, with only the pointer as an argument
    assert len({c.attrs["callee"] for c in calls}) == 1
    assert len(module.functions[calls[0].attrs["callee"]].args) == 1

    x = RNG.standard_normal(BLOCK).astype(np.float32)
    y = np.full(BLOCK, np.nan, np.float32)
    run_kernel(module, (1,), [x, y])
    np.testing.assert_allclose(y, 3 * x, rtol=1e-6)


@jit
def affine(a, K: tl.constexpr = 2, M=5):
    return a * K + M


@jit
def defaults_and_keywords(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    result = affine(x) + affine(x, M=1) + affine(x, K=x) + affine(x, M=n, K=3) + affine(M=x, a=x)
    tl.store(Y + offs, result)


def test_defaults_and_keywords_bind_like_python_and_any_of_them_may_be_a_tensor():
    module = compile_ir(defaults_and_keywords, SIGNATURE, {"BLOCK": BLOCK})
    callees = [module.functions[c.attrs["callee"]] for c in ops_named(module.kernel, "call")]
    assert [len(f.args) for f in callees] == [1, 1, 2, 2, 2]

    x, y, n = _inputs()
    run_kernel(module, (1,), [x, y, n])
    expected = (x * 2 + 5) + (x * 2 + 1) + (x * x + 5) + (x * 3 + np.float32(n)) + (x * 2 + x)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


@jit
def annotated_locals_given_run_time_values(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    block: tl.constexpr = tl.load(X + offs) * 2
    scalar: tl.constexpr = n
    width: tl.constexpr = BLOCK // 2  # a compile-time value stays one: a shape
    half = tl.load(X + tl.arange(0, width))
    tl.store(Y + offs, block + scalar)
    tl.store(Y + tl.arange(0, width), block.sum() + half)


def test_a_local_annotated_constexpr_holds_a_run_time_value_as_it_is():
    module = compile_ir(annotated_locals_given_run_time_values, SIGNATURE, {"BLOCK": BLOCK})
    x, y, n = _inputs()
    run_kernel(module, (1,), [x, y, n])
    expected = x * 2 + np.float32(n)
    expected[:BLOCK // 2] = (x * 2).sum() + x[:BLOCK // 2]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
