"""tl.sort, tl.topk and tl.bitonic_merge (standard.py) compiled by the frontend and
run by the CPU interpreter, against numpy on fresh random inputs; the quirks of
the network (ties, NaNs, topk's widening) against values measured on upstream
Triton 3.6 (TRITON_INTERPRET=1, which runs the same compare network as the GPU)."""

from __future__ import annotations

import numpy as np
import pytest

import tritone.language as tl
from tritone.errors import CompilationError
from tritone.frontend import ast_to_ir
from tritone.interpreter import run_kernel
from tritone.ir import verify
from tritone.ir.types import type_text
from tritone.runtime.jit import jit

RNG = np.random.default_rng()
OPTIONS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "debug": False}
NUMPY = {"fp32": np.float32, "fp16": np.float16, "i32": np.int32, "i8": np.int8, "u16": np.uint16}


def compile_and_run(kernel, signature: dict, args: list, constexprs: dict):
    module = ast_to_ir(kernel, signature, constexprs, OPTIONS)
    verify(module)
    run_kernel(module, (1,), args)
    return module


def random_values(shape, type_name: str) -> np.ndarray:
    if type_name.startswith("fp"):
        return RNG.uniform(-100, 100, shape).astype(NUMPY[type_name])
    info = np.iinfo(NUMPY[type_name])
    # a narrow range as well, so that rows hold duplicates
    high = int(info.max) if RNG.integers(2) else 8
    return RNG.integers(max(int(info.min), -high), high, shape, endpoint=True).astype(NUMPY[type_name])


@jit
def sort_kernel(X, Y, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr, AS_METHOD: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(X + offs)
    if AS_METHOD:
        y = x.sort(descending=DESCENDING)
    else:
        y = tl.sort(x, descending=DESCENDING)
    tl.store(Y + offs, y)


@pytest.mark.parametrize("type_name, shape", [
    ("fp32", (1, 1)), ("fp32", (8, 64)), ("fp16", (4, 2)), ("fp16", (2, 32)), ("i32", (2, 16)), ("i32", (8, 64)),
    ("i8", (4, 32)), ("u16", (2, 16)),
])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_numpy(type_name, shape, descending):
    x = random_values(shape, type_name)
    y = np.zeros_like(x)
    as_method = bool(RNG.integers(2))
    compile_and_run(sort_kernel, {"X": f"*{type_name}", "Y": f"*{type_name}"}, [x, y],
                    {"M": shape[0], "N": shape[1], "DESCENDING": descending, "AS_METHOD": as_method})
    expected = np.sort(x, axis=-1)
    np.testing.assert_array_equal(y, np.flip(expected, -1) if descending else expected)


@jit
def sort_1d_kernel(X, Y, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(Y + offs, tl.sort(tl.load(X + offs), dim=0))


def test_sort_1d_with_explicit_dim():
    x = random_values(128, "fp32")
    y = np.zeros_like(x)
    compile_and_run(sort_1d_kernel, {"X": "*fp32", "Y": "*fp32"}, [x, y], {"N": 128})
    np.testing.assert_array_equal(y, np.sort(x))


@jit
def topk_kernel(X, Y, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, AS_METHOD: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    x = tl.load(X + rows * N + tl.arange(0, N)[None, :])
    if AS_METHOD:
        y = x.topk(K)
    else:
        y = tl.topk(x, K)
    tl.static_assert(y.shape[1] == K)
    tl.store(Y + rows * K + tl.arange(0, K)[None, :], y)


@pytest.mark.parametrize("type_name, shape, k", [
    ("fp32", (4, 16), 4), ("i32", (2, 32), 1), ("fp32", (8, 8), 8), ("i32", (1, 64), 16), ("fp32", (2, 64), 2),
])
def test_topk_matches_numpy(type_name, shape, k):
    x = random_values(shape, type_name)
    y = np.zeros((shape[0], k), x.dtype)
    compile_and_run(topk_kernel, {"X": f"*{type_name}", "Y": f"*{type_name}"}, [x, y],
                    {"M": shape[0], "N": shape[1], "K": k, "AS_METHOD": bool(RNG.integers(2))})
    np.testing.assert_array_equal(y, np.flip(np.sort(x, axis=-1), -1)[:, :k])


@jit
def topk_1d_kernel(X, Y, N: tl.constexpr, K: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    tl.store(Y + tl.arange(0, K), tl.topk(x, K))


@pytest.mark.parametrize("k, result_type", [(4, "fp32"), (16, "fp16")])
def test_topk_widens_like_max_unless_k_is_the_whole_row(k, result_type):
    # upstream: topk(fp16 x, k < n) goes through tl.max, which computes fp16 in fp32
    x = random_values(16, "fp16")
    y = np.zeros(k, np.float64)
    module = compile_and_run(topk_1d_kernel, {"X": "*fp16", "Y": "*fp64"}, [x, y], {"N": 16, "K": k})
    np.testing.assert_array_equal(y, np.flip(np.sort(x.astype(np.float64)))[:k])
    kernel = module.functions["topk_1d_kernel"]
    calls = [op for op in kernel.walk() if op.name == "call"]
    assert [type_text(op.results[0].type) for op in calls] == [f"<{k}x{result_type}>"]


@jit
def merge_kernel(X, Y, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(Y + offs, tl.bitonic_merge(tl.load(X + offs), descending=DESCENDING))


@pytest.mark.parametrize("descending", [False, True])
def test_bitonic_merge_sorts_bitonic_rows(descending):
    m, n = 4, 32
    x = random_values((m, n), "fp32")
    # each row rising then falling, turned by a random amount (still bitonic)
    split = RNG.integers(1, n, m)
    rows = []
    for row, s in zip(x, split):
        rising = np.concatenate([np.sort(row[:s]), np.flip(np.sort(row[s:]))])
        rows.append(np.roll(rising, RNG.integers(n)))
    x = np.stack(rows).astype(np.float32)
    y = np.zeros_like(x)
    compile_and_run(merge_kernel, {"X": "*fp32", "Y": "*fp32"}, [x, y], {"M": m, "N": n, "DESCENDING": descending})
    expected = np.sort(x, axis=-1)
    np.testing.assert_array_equal(y, np.flip(expected, -1) if descending else expected)


def test_network_quirks_match_upstream():
    # Values measured on upstream Triton 3.6: a NaN and a +0.0 meeting their partner
    # hand over the partner's value (the comparison is strict from both sides).
    x = np.array([3.0, np.nan, 4.0, 1.0, -0.0, 0.0, 2.0, 6.0], np.float32)
    for descending, expected in ((False, [-0.0, -0.0, 1, 2, 3, 3, 4, 6]), (True, [6, 4, 3, 3, 2, 1, -0.0, -0.0])):
        y = np.zeros_like(x)
        compile_and_run(sort_kernel, {"X": "*fp32", "Y": "*fp32"}, [x, y],
                        {"M": 1, "N": 8, "DESCENDING": descending, "AS_METHOD": False})
        np.testing.assert_array_equal(y, np.array(expected, np.float32))
        assert np.signbit(y).tolist() == np.signbit(np.array(expected, np.float32)).tolist()
    # bitonic_merge of a row that is not bitonic leaves it partly unsorted
    x = np.array([[5, 3, 1, 7, 8, 6, 4, 2]], np.float32)
    y = np.zeros_like(x)
    compile_and_run(merge_kernel, {"X": "*fp32", "Y": "*fp32"}, [x, y], {"M": 1, "N": 8, "DESCENDING": False})
    assert y.tolist() == [[1, 2, 3, 5, 4, 6, 7, 8]]


@jit
def sort_dim_kernel(X, DIM: tl.constexpr):
    offs = tl.arange(0, 4)[:, None] * 8 + tl.arange(0, 8)[None, :]
    tl.store(X + offs, tl.sort(tl.load(X + offs), dim=DIM))


@jit
def topk_k_kernel(X, K: tl.constexpr):
    x = tl.load(X + tl.arange(0, 8))
    tl.store(X + tl.arange(0, 8), tl.topk(x, K))


@pytest.mark.parametrize("kernel, constexprs, message", [
    (sort_dim_kernel, {"DIM": 0}, "sort only supports the last dimension"),
    (topk_k_kernel, {"K": 3}, "topk's k must be a power of two, got 3"),
    (topk_k_kernel, {"K": 16}, r"topk's k \(16\) exceeds the size of the last dimension \(8\)"),
])
def test_errors(kernel, constexprs, message):
    with pytest.raises(CompilationError, match=message):
        ast_to_ir(kernel, {"X": "*fp32"}, constexprs, OPTIONS)
