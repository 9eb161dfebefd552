"""Block pointers (block_pointer.py, TRITON_SEMANTICS 4.3) compiled by the frontend
and run by the CPU interpreter on fresh random inputs, against numpy: loads and
stores with and without boundary checks, the paddings, advance in loops (a
blocked matmul), block pointers through `if`, tuples and calls, and the errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tritone.language as tl
from tritone.errors import CompilationError
from tritone.frontend import ast_to_ir
from tritone.interpreter import run_kernel
from tritone.ir import verify
from tritone.runtime.jit import jit

RNG = np.random.default_rng()
OPTIONS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "debug": False}


def compile_and_run(kernel, signature: dict, args: list, constexprs: dict, grid=(1,)):
    module = ast_to_ir(kernel, signature, constexprs, OPTIONS)
    verify(module)
    run_kernel(module, grid, args)
    return module


def compile_error(kernel, signature: dict, constexprs: dict) -> str:
    with pytest.raises(CompilationError) as info:
        ast_to_ir(kernel, signature, constexprs, OPTIONS)
    return str(info.value)


def window(x: np.ndarray, shape, offsets, block, checked, fill) -> np.ndarray:
    """What a block pointer load gives, computed by numpy: `x`'s elements at the
    block's indices; `fill` where a checked dimension's index is outside [0, shape)."""
    out = np.full(block, fill, x.dtype)
    for index in np.ndindex(*block):
        coords = [o + i for o, i in zip(offsets, index)]
        if all(0 <= coords[d] < shape[d] for d in checked):
            out[index] = x[tuple(coords)]
    return out


# -- loads -------------------------------------------------------------------------------

@jit
def load_kernel(X, Y, M, N, stride_m, off_m, off_n, BM: tl.constexpr, BN: tl.constexpr, CHECK: tl.constexpr,
                PADDING: tl.constexpr):
    bp = tl.make_block_ptr(X, shape=(M, N), strides=(stride_m, 1), offsets=(off_m, off_n), block_shape=(BM, BN),
                           order=(1, 0))
    block = tl.load(bp, boundary_check=CHECK, padding_option=PADDING)
    tl.store(Y + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], block)


# (nan padding of ints is an error: test_errors)
@pytest.mark.parametrize("type_name, np_type, padding", [
    ("fp32", np.float32, ""), ("fp32", np.float32, "zero"), ("fp32", np.float32, "nan"), ("fp16", np.float16, "nan"),
    ("fp16", np.float16, "zero"), ("i32", np.int32, ""), ("i32", np.int32, "zero"),
])
@pytest.mark.parametrize("check", [(0, 1), (1,)])
def test_load_with_boundary_check(type_name, np_type, check, padding):
    m, n, bm, bn = 10, 12, 8, 8
    x = RNG.uniform(-50, 50, (m, n)).astype(np_type)
    # unchecked dims are not masked: keep their indices inside x
    off_m = int(RNG.integers(-4, 6)) if 0 in check else int(RNG.integers(0, m - bm + 1))
    off_n = int(RNG.integers(-6, 10))
    y = np.zeros((bm, bn), np_type)
    compile_and_run(load_kernel, {"X": f"*{type_name}", "Y": f"*{type_name}", "M": "i32", "N": "i32",
                                  "stride_m": "i32", "off_m": "i32", "off_n": "i32"},
                    [x, y, m, n, n, off_m, off_n], {"BM": bm, "BN": bn, "CHECK": check, "PADDING": padding})
    expected = window(x, (m, n), (off_m, off_n), (bm, bn), check, np.nan if padding == "nan" else 0)
    np.testing.assert_array_equal(y, expected)


def test_load_unchecked_dims_read_past_the_shape():
    # the parent's shape says 3 columns, the rows are 8 wide: without a check on
    # dim 1 the block reads the memory that is there (no mask)
    x = RNG.uniform(-1, 1, (4, 8)).astype(np.float32)
    y = np.zeros((4, 8), np.float32)
    compile_and_run(load_kernel, {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32", "stride_m": "i32",
                                  "off_m": "i32", "off_n": "i32"},
                    [x, y, 4, 3, 8, 0, 0], {"BM": 4, "BN": 8, "CHECK": (), "PADDING": "nan"})
    np.testing.assert_array_equal(y, x)


@jit
def transposed_load_kernel(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # the parent is x.T: strides (1, N) over x's row-major storage, order (0, 1)
    bp = tl.make_block_ptr(X, shape=(N, M), strides=(1, N), offsets=(0, 0), block_shape=(BN, BM), order=(0, 1))
    tl.store(Y + tl.arange(0, BN)[:, None] * BM + tl.arange(0, BM)[None, :], tl.load(bp, boundary_check=(0, 1)))


def test_load_with_strides_of_a_transpose():
    m, n = 3, 6
    x = RNG.uniform(-1, 1, (m, n)).astype(np.float32)
    y = np.full((8, 4), -1, np.float32)
    compile_and_run(transposed_load_kernel, {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32"}, [x, y, m, n],
                    {"BM": 4, "BN": 8})
    np.testing.assert_array_equal(y, window(x.T.copy(), (n, m), (0, 0), (8, 4), (0, 1), 0))


@jit
def bool_load_kernel(X, Y, N):
    bp = tl.make_block_ptr(X, shape=(N,), strides=(1,), offsets=(0,), block_shape=(16,), order=(0,))
    value = tl.load(bp, boundary_check=(0,))
    tl.static_assert(value.dtype == tl.int8, "a *i1 block pointer reads bytes, as upstream's does")
    tl.store(Y + tl.arange(0, 16), value)


def test_bool_base_reads_int8():
    x = RNG.integers(0, 2, 16).astype(np.bool_)
    y = np.full(16, 7, np.int32)
    compile_and_run(bool_load_kernel, {"X": "*i1", "Y": "*i32", "N": "i32"}, [x, y, 11], {})
    np.testing.assert_array_equal(y, np.where(np.arange(16) < 11, x, 0).astype(np.int32))


# -- stores ------------------------------------------------------------------------------

@jit
def store_kernel(X, Y, M, N, W, off_m, off_n, BM: tl.constexpr, BN: tl.constexpr, CHECK: tl.constexpr,
                 GUARD: tl.constexpr):
    block = tl.load(X + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :])
    # the (M, N) parent sits inside a (M + 2 GUARD, W) buffer, so unchecked dims may run over
    bp = tl.make_block_ptr(Y + GUARD * W + GUARD, shape=(M, N), strides=(W, 1), offsets=(off_m, off_n),
                           block_shape=(BM, BN), order=(1, 0))
    tl.store(bp, block, boundary_check=CHECK)


@pytest.mark.parametrize("check", [(0, 1), (1,), (1, 0), ()])
def test_store_with_boundary_check(check):
    m, n, bm, bn, guard = 6, 10, 4, 8, 8
    width = n + 2 * guard
    x = RNG.uniform(-9, 9, (bm, bn)).astype(np.float16)
    off_m, off_n = (int(v) for v in RNG.integers(-3, 8, 2))
    y = np.full((m + 2 * guard, width), -7, np.float16)
    expected = y.copy()
    compile_and_run(store_kernel, {"X": "*fp16", "Y": "*fp16", "M": "i32", "N": "i32", "W": "i32", "off_m": "i32",
                                   "off_n": "i32"}, [x, y, m, n, width, off_m, off_n],
                    {"BM": bm, "BN": bn, "CHECK": check, "GUARD": guard})
    for i, j in np.ndindex(bm, bn):
        row, col = off_m + i, off_n + j
        if (0 in check and not 0 <= row < m) or (1 in check and not 0 <= col < n):
            continue
        expected[guard + row, guard + col] = x[i, j]
    np.testing.assert_array_equal(y, expected)


@jit
def store_scalar_kernel(Y, N, VALUE: tl.constexpr):
    bp = tl.make_block_ptr(Y, shape=(N,), strides=(1,), offsets=(0,), block_shape=(16,), order=(0,))
    tl.store(bp, VALUE, boundary_check=(0,))


def test_store_broadcasts_a_scalar_of_the_element_type():
    y = np.zeros(16, np.float32)
    value = float(RNG.uniform(-3, 3))
    compile_and_run(store_scalar_kernel, {"Y": "*fp32", "N": "i32"}, [y, 9], {"VALUE": value})
    np.testing.assert_array_equal(y, np.where(np.arange(16) < 9, np.float32(value), 0))


# -- advance, loops and other regions -------------------------------------------------

@jit
def matmul_kernel(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, METHOD: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a = tl.make_block_ptr(A, shape=(M, K), strides=(stride_am, stride_ak), offsets=(pid_m * BM, 0),
                          block_shape=(BM, BK), order=(1, 0))
    b = tl.make_block_ptr(B, shape=(K, N), strides=(stride_bk, stride_bn), offsets=(0, pid_n * BN),
                          block_shape=(BK, BN), order=(1, 0))
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(a, boundary_check=(0, 1), padding_option="zero"),
                      tl.load(b, boundary_check=(0, 1), padding_option="zero"))
        if METHOD:
            a = a.advance((0, BK))
            b = b.advance((BK, 0))
        else:
            a = tl.advance(a, (0, BK))
            b = tl.advance(b, [BK, 0])
    c = tl.make_block_ptr(C, shape=(M, N), strides=(stride_cm, 1), offsets=(pid_m * BM, pid_n * BN),
                          block_shape=(BM, BN), order=(1, 0))
    tl.store(c, acc, boundary_check=(0, 1))


@pytest.mark.parametrize("method", [False, True])
def test_blocked_matmul_over_block_pointers(method):
    m, n, k = (int(v) for v in RNG.integers(5, 40, 3))
    bm, bn, bk = 16, 16, 16
    a = RNG.uniform(-1, 1, (m, k)).astype(np.float16)
    b_storage = RNG.uniform(-1, 1, (n, k)).astype(np.float16)
    b = b_storage.T  # column-major B: strides (1, k)
    c = np.zeros((m, n), np.float32)
    grid = (-(-m // bm), -(-n // bn))
    compile_and_run(matmul_kernel, {"A": "*fp16", "B": "*fp16", "C": "*fp32", **{name: "i32" for name in (
        "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm")}},
        [a, b_storage, c, m, n, k, k, 1, 1, k, n], {"BM": bm, "BN": bn, "BK": bk, "METHOD": method}, grid)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=1e-3, atol=1e-3)


@jit
def _load_row(bp):
    return tl.load(bp, boundary_check=(0,), padding_option="zero")


@jit
def regions_kernel(X, Y, N, FLAG, BLOCK: tl.constexpr):
    pointers = (tl.make_block_ptr(X, shape=(N,), strides=(1,), offsets=(0,), block_shape=(BLOCK,), order=(0,)),
                tl.make_block_ptr(Y, shape=(N,), strides=(1,), offsets=(0,), block_shape=(BLOCK,), order=(0,)))
    # a tuple of block pointers carried by a while loop; one through an `if`
    done = 0
    while done < N:
        src, dst = pointers
        values = _load_row(src) * 2
        if FLAG > 0:
            values += 1
            dst = tl.advance(dst, (0,))
        tl.store(dst, values, boundary_check=(0,))
        pointers = (tl.advance(src, (BLOCK,)), dst.advance((BLOCK,)))
        done += BLOCK


@pytest.mark.parametrize("flag", [0, 1])
def test_block_pointers_through_tuples_if_while_and_calls(flag):
    n = int(RNG.integers(1, 50))
    x = RNG.integers(-100, 100, n).astype(np.int32)
    y = np.zeros(n, np.int32)
    compile_and_run(regions_kernel, {"X": "*i32", "Y": "*i32", "N": "i32", "FLAG": "i32"}, [x, y, n, flag],
                    {"BLOCK": 8})
    np.testing.assert_array_equal(y, x * 2 + flag)


@jit
def offsets_kernel(X, Y, OFF_A, OFF_B):
    bp = tl.make_block_ptr(X, shape=(64,), strides=(1,), offsets=(OFF_A.to(tl.uint32),), block_shape=(8,),
                           order=(0,))
    bp = tl.advance(bp, (OFF_B.to(tl.int16),))
    tl.store(Y + tl.arange(0, 8), tl.load(bp, boundary_check=(0,)))


def test_offsets_of_narrower_int_types():
    x = RNG.uniform(-1, 1, 64).astype(np.float32)
    y = np.zeros(8, np.float32)
    compile_and_run(offsets_kernel, {"X": "*fp32", "Y": "*fp32", "OFF_A": "i32", "OFF_B": "i32"}, [x, y, 30, -6], {})
    np.testing.assert_array_equal(y, x[24:32])


# -- errors ------------------------------------------------------------------------------

@jit
def make_error_kernel(X, N, CASE: tl.constexpr):
    if CASE == "block_shape":
        tl.make_block_ptr(X, shape=(N,), strides=(1,), offsets=(0,), block_shape=(N,), order=(0,))
    elif CASE == "order":
        tl.make_block_ptr(X, shape=(N, N), strides=(N, 1), offsets=(0, 0), block_shape=(4, 4), order=(1, 1))
    elif CASE == "lengths":
        tl.make_block_ptr(X, shape=(N, N), strides=(N, 1), offsets=(0,), block_shape=(4, 4), order=(1, 0))
    elif CASE == "i64 offset":
        tl.make_block_ptr(X, shape=(N,), strides=(1,), offsets=(N.to(tl.int64),), block_shape=(4,), order=(0,))
    elif CASE == "base":
        tl.make_block_ptr(N, shape=(N,), strides=(1,), offsets=(0,), block_shape=(4,), order=(0,))
    elif CASE == "power of two":
        tl.make_block_ptr(X, shape=(N,), strides=(1,), offsets=(0,), block_shape=(6,), order=(0,))
    bp = tl.make_block_ptr(X, shape=(N,), strides=(1,), offsets=(0,), block_shape=(4,), order=(0,))
    if CASE == "mask":
        tl.load(bp, mask=tl.arange(0, 4) < N)
    elif CASE == "store mask":
        tl.store(bp, tl.zeros((4,), tl.int32), mask=tl.arange(0, 4) < N)
    elif CASE == "nan padding":
        tl.load(bp, boundary_check=(0,), padding_option="nan")
    elif CASE == "boundary_check":
        tl.load(bp, boundary_check=(1,))
    elif CASE == "duplicate check":
        tl.load(bp, boundary_check=(0, 0))
    elif CASE == "store type":
        tl.store(bp, tl.zeros((4,), tl.float32))
    elif CASE == "store shape":
        tl.store(bp, tl.zeros((8,), tl.int32))
    elif CASE == "advance":
        bp = tl.advance(bp, (1, 2))
    elif CASE == "loop":
        for i in range(N):
            bp = tl.make_block_ptr(X, shape=(N,), strides=(1,), offsets=(i,), block_shape=(8,), order=(0,))


@pytest.mark.parametrize("case, message", [
    ("block_shape", "Expected a list of constant integers"),
    ("order", r"Expected a permutation of \(0, 1, ..., len\(order\)-1\) in order"),
    ("lengths", "Expected shape/strides/offsets/block_shape/order to have the same length"),
    ("i64 offset", "Block pointers only support 32 bit `offsets`"),
    ("base", "Expected `base` to be a pointer type"),
    ("power of two", "Shape element 0 must be a power of 2"),
    ("mask", "`mask` and `other` arguments cannot be specified for loading block pointers"),
    ("store mask", "`mask` cannot be specified for storing through block pointers"),
    ("nan padding", "Padding option `nan` is not supported for integer block pointers"),
    ("boundary_check", r"boundary_check dimensions must be ints in \[0, 1\), got 1"),
    ("duplicate check", "Duplicate dimension in `boundary_check`"),
    ("store type", r"Block element type\(int32\) and value element type\(fp32\) mismatch"),
    ("store shape", r"Block shape\(\[4\]\) and value shape\(\[8\]\) mismatch"),
    ("advance", "tl.advance of a rank-1 block pointer needs 1 offsets, got 2"),
    ("loop", r"Loop carried variable bp changed type, was pointer<<\['4'\], int32>> but is now "
             r"pointer<<\['8'\], int32>>"),
])
def test_errors(case, message):
    assert re.search(message, compile_error(make_error_kernel, {"X": "*i32", "N": "i32"}, {"CASE": case}))
