"""The standard library and random.py compiled by the frontend and run by the
CPU interpreter on fresh random inputs, against numpy (and the numpy Philox
model of test_random_reference.py)."""

from __future__ import annotations

import numpy as np
import pytest

import tritone.language as tl
from tritone.frontend import ast_to_ir
from tritone.interpreter import run_kernel
from tritone.ir import verify
from tritone.runtime.jit import jit

from .test_random_reference import pair_uniform_to_normal, philox4x32, uint_to_uniform_float

RNG = np.random.default_rng()
OPTIONS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "debug": False}


def compile_and_run(kernel, signature: dict, args: list, constexprs: dict | None = None, grid=(1,)):
    module = ast_to_ir(kernel, signature, constexprs or {}, OPTIONS)
    verify(module)
    run_kernel(module, grid, args)
    return module


def result_types(module, op_name: str):
    return [r.type for op in module.walk() if op.name == op_name for r in op.results]


# -- reductions --------------------------------------------------------------------------

@jit
def reductions_kernel(X, S, M, A, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(S, tl.sum(x))
    tl.store(M, x.max())
    tl.store(M + 1, tl.min(x, axis=0))
    tl.store(A, tl.argmax(x, 0))
    tl.store(A + 1, x.argmin(0))
    value, index = tl.max(x, 0, return_indices=True)
    tl.store(M + 2, value)
    tl.store(A + 2, index)


def test_sum_max_min_argmax_argmin():
    n = 64
    # few distinct values: ties pick the smallest index
    x = RNG.integers(-4, 4, n).astype(np.float32)
    s, m, a = np.zeros(1, np.float32), np.zeros(3, np.float32), np.zeros(3, np.int32)
    compile_and_run(reductions_kernel, {"X": "*fp32", "S": "*fp32", "M": "*fp32", "A": "*i32"}, [x, s, m, a],
                    {"N": n})
    assert s[0] == x.sum()
    assert m.tolist() == [x.max(), x.min(), x.max()]
    assert a.tolist() == [x.argmax(), x.argmin(), x.argmax()]


@jit
def typed_sum_kernel(X, Y, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(Y, tl.sum(x))
    tl.store(Y + 1, tl.max(x))


@pytest.mark.parametrize("in_type, np_type, sum_type, max_type", [
    ("i8", np.int8, "i32", "i32"), ("u8", np.uint8, "u32", "i32"), ("fp16", np.float16, "fp16", "fp32"),
    ("bf16", None, "bf16", "fp32"), ("i64", np.int64, "i64", "i64"),
])
def test_reduction_result_dtypes(in_type, np_type, sum_type, max_type):
    n = 32
    if np_type is None:  # bf16 as the high half of fp32 values
        x = (RNG.integers(-50, 50, n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    else:
        x = RNG.integers(0, 100, n).astype(np_type)
    y = np.zeros(2, np.float64)
    module = compile_and_run(typed_sum_kernel, {"X": f"*{in_type}", "Y": "*fp64"}, [x, y], {"N": n})
    reduced = result_types(module, "reduce")
    assert reduced == [tl.dtype(sum_type), tl.dtype(max_type)]
    if np_type is not None:
        assert y[0] == x.astype(np.float64).sum() and y[1] == x.max()


@jit
def axis_kernel(X, Y, Z, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    x = tl.load(X + rows * C + cols)
    row_max = tl.max(x, axis=1, keep_dims=True)
    tl.store(Y + rows, row_max)
    tl.store(Z + tl.arange(0, C), tl.sum(x, axis=0))


def test_reductions_along_an_axis_with_keep_dims():
    r, c = 8, 16
    x = RNG.standard_normal((r, c)).astype(np.float32)
    y, z = np.zeros((r, 1), np.float32), np.zeros(c, np.float32)
    compile_and_run(axis_kernel, {"X": "*fp32", "Y": "*fp32", "Z": "*fp32"}, [x, y, z], {"R": r, "C": c})
    np.testing.assert_array_equal(y, x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(z, x.sum(axis=0), rtol=1e-5, atol=1e-5)


@jit
def bitwise_and_scan_kernel(X, Y, C, P, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(Y, tl.xor_sum(x, 0))
    tl.store(Y + 1, tl.reduce_or(x, 0))
    tl.store(C + offs, tl.cumsum(x, 0))
    tl.store(C + N + offs, tl.cumsum(x, 0, reverse=True))
    tl.store(P + offs, tl.cumprod(x, 0))


def test_xor_or_and_scans():
    n = 16
    x = RNG.integers(1, 4, n).astype(np.int32)
    y, c, p = np.zeros(2, np.int32), np.zeros(2 * n, np.int32), np.zeros(n, np.int32)
    compile_and_run(bitwise_and_scan_kernel, {"X": "*i32", "Y": "*i32", "C": "*i32", "P": "*i32"}, [x, y, c, p],
                    {"N": n})
    assert y.tolist() == [np.bitwise_xor.reduce(x), np.bitwise_or.reduce(x)]
    np.testing.assert_array_equal(c[:n], np.cumsum(x))
    np.testing.assert_array_equal(c[n:], np.cumsum(x[::-1])[::-1])
    np.testing.assert_array_equal(p, np.cumprod(x).astype(np.int32))


# -- elementwise helpers and reordering ------------------------------------------------------

@jit
def helpers_kernel(X, Y, F, Ints, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(Y + offs, tl.softmax(x))
    tl.store(Y + N + offs, tl.sigmoid(x))
    tl.store(Y + 2 * N + offs, tl.zeros_like(x) + 1.0)
    tl.store(F + offs, tl.flip(x))
    first = tl.arange(0, N // 2)
    tl.store(Ints + offs, tl.interleave(first, first + 100))
    tl.store(Ints + N + offs, tl.cdiv(offs, 4))


def test_softmax_sigmoid_flip_interleave_cdiv():
    n = 16
    x = RNG.standard_normal(n).astype(np.float32)
    y, f, i = np.zeros(3 * n, np.float32), np.zeros(n, np.float32), np.zeros(2 * n, np.int32)
    compile_and_run(helpers_kernel, {"X": "*fp32", "Y": "*fp32", "F": "*fp32", "Ints": "*i32"}, [x, y, f, i],
                    {"N": n})
    e = np.exp(x - x.max())
    np.testing.assert_allclose(y[:n], e / e.sum(), rtol=1e-5)
    np.testing.assert_allclose(y[n:2 * n], 1 / (1 + np.exp(-x)), rtol=1e-5)
    np.testing.assert_array_equal(y[2 * n:], np.ones(n, np.float32))
    np.testing.assert_array_equal(f, x[::-1])
    half = np.arange(n // 2)
    np.testing.assert_array_equal(i[:n], np.stack([half, half + 100], axis=1).reshape(-1))
    np.testing.assert_array_equal(i[n:], (np.arange(n) + 3) // 4)


@jit
def flip_2d_kernel(X, Y, R: tl.constexpr, C: tl.constexpr):
    index = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(X + index)
    tl.store(Y + index, tl.flip(x, 0))
    tl.store(Y + R * C + tl.arange(0, R * C), tl.ravel(x))


def test_flip_along_an_axis_and_ravel():
    r, c = 4, 8
    x = RNG.standard_normal((r, c)).astype(np.float32)
    y = np.zeros(2 * r * c, np.float32)
    compile_and_run(flip_2d_kernel, {"X": "*fp32", "Y": "*fp32"}, [x, y], {"R": r, "C": c})
    np.testing.assert_array_equal(y[:r * c].reshape(r, c), x[::-1])
    np.testing.assert_array_equal(y[r * c:], x.reshape(-1))


@jit
def swizzle_kernel(Y, SIZE_I: tl.constexpr, SIZE_J: tl.constexpr, SIZE_G: tl.constexpr):
    i = tl.arange(0, SIZE_I)[:, None]
    j = tl.arange(0, SIZE_J)[None, :]
    new_i, new_j = tl.swizzle2d(i, j, SIZE_I, SIZE_J, SIZE_G)
    tl.store(Y + i * SIZE_J + j, new_i * SIZE_J + new_j)


def test_swizzle2d():
    size_i, size_j, size_g = 8, 4, 3
    y = np.zeros((size_i, size_j), np.int32)
    compile_and_run(swizzle_kernel, {"Y": "*i32"}, [y], {"SIZE_I": size_i, "SIZE_J": size_j, "SIZE_G": size_g})
    expected = np.zeros_like(y)
    for i in range(size_i):
        for j in range(size_j):
            linear = i * size_j + j
            first = linear // (size_g * size_j) * size_g
            rows = min(size_i - first, size_g)
            within = linear % (size_g * size_j)
            expected[i, j] = (first + within % rows) * size_j + within // rows
    np.testing.assert_array_equal(y, expected)


# -- random -----------------------------------------------------------------------------------

@jit
def random_kernel(seed, Offsets, U, G, W, N: tl.constexpr):
    offs = tl.load(Offsets + tl.arange(0, N))
    tl.store(W + tl.arange(0, N), tl.randint(seed, offs))
    tl.store(U + tl.arange(0, N), tl.rand(seed, offs))
    tl.store(G + tl.arange(0, N), tl.randn(seed, offs))
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(W + N + tl.arange(0, N), d)
    u1, u2, u3, u4 = tl.rand4x(seed, offs)
    tl.store(U + N + tl.arange(0, N), u3)
    n1, n2, n3, n4 = tl.randn4x(seed, offs)
    tl.store(G + N + tl.arange(0, N), n4)


@pytest.mark.parametrize("offset_type, np_type", [("i32", np.int32), ("i64", np.int64)])
def test_random_matches_the_philox_model(offset_type, np_type):
    n = 16
    seed = int(RNG.integers(-2**40, 2**40))
    offsets = RNG.integers(-2**31, 2**31, n).astype(np_type)
    if np_type is np.int64:
        offsets += RNG.integers(-2**20, 2**20, n) << 32
    u, g, w = np.zeros(2 * n, np.float32), np.zeros(2 * n, np.float32), np.zeros(2 * n, np.uint32)
    seed_type = "i64" if not -2**31 <= seed < 2**31 else "i32"
    compile_and_run(random_kernel, {"seed": seed_type, "Offsets": f"*{offset_type}", "U": "*fp32", "G": "*fp32",
                                    "W": "*u32"}, [seed, offsets, u, g, w], {"N": n})
    c0, c1, c2, c3 = philox4x32(seed, offsets)
    np.testing.assert_array_equal(w[:n], c0)
    np.testing.assert_array_equal(w[n:], c3)
    np.testing.assert_array_equal(u[:n], uint_to_uniform_float(c0))
    np.testing.assert_array_equal(u[n:], uint_to_uniform_float(c2))
    first, _ = pair_uniform_to_normal(uint_to_uniform_float(c0), uint_to_uniform_float(c1))
    _, fourth = pair_uniform_to_normal(uint_to_uniform_float(c2), uint_to_uniform_float(c3))
    np.testing.assert_allclose(g[:n], first, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g[n:], fourth, rtol=1e-5, atol=1e-6)


@jit
def debug_random_kernel(seed, Out, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Out + offs, tl.rand(seed, offs))


def test_random_has_no_overflow_checks_in_debug_mode():
    module = ast_to_ir(debug_random_kernel, {"seed": "i32", "Out": "*fp32"}, {"N": 16}, {**OPTIONS, "debug": True})
    verify(module)
    assert not [op for op in module.walk() if op.name == "assert"]
