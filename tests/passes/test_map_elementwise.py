"""`tl.map_elementwise` and the pass that writes its `map_elementwise` op as block ops:
per-element branches, loops with per-element trip counts, effects only where an
element runs them, `pack`, against numpy references on fresh random inputs.

(Upstream Triton's interpreter cannot run map_elementwise, so there is no upstream
run to compare with; the IR of the op follows upstream's TTIR: `pack`, arguments
input-major, results result-major.)"""

from __future__ import annotations

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource
from tritone.compiler.compiler import make_ir
from tritone.errors import CompilationError
from tritone.ir import print_module, verify
from tritone.ir.target import INTERPRETER_TARGET
from tritone.passes import inline, map_elementwise, run_pipeline
from tritone.passes.map_elementwise import MapElementwiseError

RNG = np.random.default_rng()


@triton.jit
def selu(x, alpha):
    if x > 0:
        return x
    else:
        return alpha * (tl.exp(x) - 1)


@triton.jit
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@triton.jit
def weighted_count(x, k):
    total = 0.0
    for i in range(k):
        total += x * i
    for j in range(3):
        total += j
    return total


@triton.jit
def guarded_load(ptr, index, n):
    if index < n:
        return tl.load(ptr + index)
    return -1.0


@triton.jit
def count_positive(x, counter):
    if x > 0:
        tl.atomic_add(counter, 1)
    return x


@triton.jit
def pairs(a0, a1, b0, b1):
    return a1 + b0, a0 - b1, a0 * 2, a1 * 3


@triton.jit
def quads(x0, x1, x2, x3):
    return x3, x2, x1, x0


@triton.jit
def map_kernel(X, N, K, OUT_SELU, OUT_STEPS, OUT_COUNT, OUT_LOAD, OUT_P, OUT_Q, OUT_R, COUNTER, limit,
               BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(X + offsets)
    n = tl.load(N + offsets)
    k = tl.load(K + offsets)
    tl.store(OUT_SELU + offsets, tl.map_elementwise(selu, x, tl.full((BLOCK,), 0.5, tl.float32)))
    tl.store(OUT_STEPS + offsets, tl.map_elementwise(collatz_steps, n))
    tl.store(OUT_COUNT + offsets, tl.map_elementwise(weighted_count, x, k))
    tl.store(OUT_LOAD + offsets, tl.map_elementwise(guarded_load, X + tl.zeros_like(offsets), offsets * 3, limit))
    tl.map_elementwise(count_positive, x, COUNTER + tl.zeros_like(offsets))
    p, q = tl.map_elementwise(pairs, x, x * 10, pack=2)
    tl.store(OUT_P + offsets, p)
    tl.store(OUT_Q + offsets, q)
    (r,) = tl.map_elementwise(quads, x, pack=4)  # four values of one result: a 1-tuple, as upstream's
    tl.store(OUT_R + offsets, r)


MAP_KERNEL_SIGNATURE = {"X": "*fp32", "N": "*i32", "K": "*i32", "OUT_SELU": "*fp32", "OUT_STEPS": "*i32",
                        "OUT_COUNT": "*fp32", "OUT_LOAD": "*fp32", "OUT_P": "*fp32", "OUT_Q": "*fp32", "OUT_R": "*fp32",
                        "COUNTER": "*i32", "limit": "i32"}


def _collatz(v: int) -> int:
    steps = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        steps += 1
    return steps


def test_per_element_control_flow_against_numpy():
    block = 64
    x = RNG.standard_normal(block).astype(np.float32)
    n = RNG.integers(1, 60, block).astype(np.int32)
    k = RNG.integers(0, 7, block).astype(np.int32)
    limit = int(RNG.integers(10, block))
    outs = [np.zeros(block, t) for t in (np.float32, np.int32, np.float32, np.float32, np.float32, np.float32,
                                          np.float32)]
    counter = np.zeros(1, np.int32)
    map_kernel[(1,)](x, n, k, *outs, counter, limit, block)
    selu_out, steps, count, loaded, p, q, r = outs
    np.testing.assert_allclose(selu_out, np.where(x > 0, x, np.float32(0.5) * (np.exp(x) - 1)), rtol=1e-6, atol=1e-6)
    assert steps.tolist() == [_collatz(int(v)) for v in n]
    expected_count = [sum(float(v) * i for i in range(int(kk))) + 3.0 for v, kk in zip(x, k)]
    np.testing.assert_allclose(count, expected_count, rtol=1e-5, atol=1e-5)
    index = np.arange(block) * 3
    assert np.array_equal(loaded, np.where(index < limit, x[np.minimum(index, block - 1)], -1.0))
    assert counter[0] == np.count_nonzero(x > 0)
    a, b = x.reshape(-1, 2), (x * np.float32(10)).reshape(-1, 2)
    assert np.array_equal(p, np.stack([a[:, 1] + b[:, 0], a[:, 0] - b[:, 1]], axis=1).reshape(-1))
    assert np.array_equal(q, np.stack([a[:, 0] * 2, a[:, 1] * 3], axis=1).reshape(-1))
    assert np.array_equal(r, x.reshape(-1, 4)[:, ::-1].reshape(-1))


@triton.jit
def clamp_rows(x, low, high):
    if x < low:
        x = low
    elif x > high:
        x = high
    return x, x > low


@triton.jit
def two_d_kernel(X, LOW, OUT, FLAGS, M: tl.constexpr, N: tl.constexpr):
    rows, cols = tl.arange(0, M)[:, None], tl.arange(0, N)[None, :]
    x = tl.load(X + rows * N + cols)
    low = tl.load(LOW + rows)  # one bound per row, broadcast over the columns
    clamped, above = tl.map_elementwise(clamp_rows, x, low, 0.75)
    tl.store(OUT + rows * N + cols, clamped)
    tl.store(FLAGS + rows * N + cols, above.to(tl.int8))


def test_broadcast_inputs_scalars_and_several_results():
    m, n = 8, 16
    x = RNG.standard_normal((m, n)).astype(np.float32)
    low = RNG.uniform(-1.0, 0.0, m).astype(np.float32)
    out, flags = np.zeros((m, n), np.float32), np.zeros((m, n), np.int8)
    two_d_kernel[(1,)](x, low, out, flags, m, n)
    expected = np.minimum(np.maximum(x, low[:, None]), np.float32(0.75))
    assert np.array_equal(out, expected) and np.array_equal(flags, (expected > low[:, None]).astype(np.int8))


def test_the_op_is_gone_after_its_pass_and_uniform_loops_stay_loops():
    src = ASTSource(map_kernel, MAP_KERNEL_SIGNATURE, {"BLOCK": 32})
    module = make_ir(src, INTERPRETER_TARGET)
    verify(module)
    text = print_module(module, locations=False)
    assert "map_elementwise" not in text
    # `range(3)` has the same bounds for every element: still a `for`; the others became `while`s
    assert text.count(" = for(") == 1 and text.count(" = while(") == 2
    before = print_module(run_pipeline(make_ir_frontend(src), passes=[inline]), locations=False)
    assert before.count("map_elementwise(") == 7 and "pack = 4" in before


def make_ir_frontend(src: ASTSource):
    from tritone.frontend import ast_to_ir

    signature, constexprs, _ = src.frontend_inputs()
    return ast_to_ir(src.fn, signature, constexprs, {"target": INTERPRETER_TARGET})


def test_the_cuda_backend_needs_nothing_new(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    for kernel, signature, constexprs in (
            (two_d_kernel, {"X": "*fp32", "LOW": "*fp32", "OUT": "*fp32", "FLAGS": "*i8"}, {"M": 16, "N": 64}),
            (map_kernel, MAP_KERNEL_SIGNATURE, {"BLOCK": 128})):
        compiled = triton.compile(ASTSource(kernel, signature, constexprs), target=GPUTarget("cuda", 80, 32))
        assert f".entry {kernel.__name__}" in compiled.asm["ptx"]


@triton.jit
def scaled_sum(x, k):
    c = 2.0
    total = 0.0
    for _ in range(k):
        total += x * c
    for _ in range(2):
        total += c
    return total * c


@triton.jit
def scaled_sum_kernel(X, K, OUT, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(OUT + offsets, tl.map_elementwise(scaled_sum, tl.load(X + offsets), tl.load(K + offsets)))


def test_values_from_before_loops_are_used_in_and_after_them():
    src = ASTSource(scaled_sum_kernel, {"X": "*fp32", "K": "*i32", "OUT": "*fp32"}, {"BLOCK": 16})
    verify(make_ir(src, INTERPRETER_TARGET))
    x = RNG.standard_normal(16).astype(np.float32)
    k = RNG.integers(0, 4, 16).astype(np.int32)
    out = np.zeros(16, np.float32)
    scaled_sum_kernel[(1,)](x, k, out, 16)
    # the same float32 operations in the same order (a float64 reference drifts where
    # the sum nearly cancels against the 4 added after it)
    two = np.float32(2.0)
    total = np.zeros(16, np.float32)
    for trip in range(4):
        total = np.where(trip < k, total + x * two, total)
    expected = (total + two + two) * two
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@triton.jit
def scalar_only_kernel(OUT, a, b):
    tl.store(OUT, tl.map_elementwise(selu, a, b))


def test_scalar_inputs_are_a_plain_call():
    out = np.zeros(1, np.float32)
    scalar_only_kernel[(1,)](out, -2.0, 0.5)
    np.testing.assert_allclose(out, 0.5 * (np.exp(-2.0) - 1), rtol=1e-6)


@triton.jit
def makes_a_block(x):
    return x + tl.sum(tl.arange(0, 4))


@triton.jit
def returns_three(a0, a1):
    return a0, a1, a0


@triton.jit
def threes(a, b, c):
    return a, b, c


@triton.jit
def bad_kernel(X, CASE: tl.constexpr):
    x = tl.load(X + tl.arange(0, 8))
    if CASE == 0:
        y = tl.map_elementwise(makes_a_block, x)
    elif CASE == 1:
        (y,) = tl.map_elementwise(threes, x, pack=3)
    else:
        y = tl.map_elementwise(returns_three, x, pack=2)
    tl.store(X + tl.arange(0, 8), y)


@pytest.mark.parametrize("case, error, message", [
    (0, MapElementwiseError, "scalars only"),
    (1, MapElementwiseError, "must be a power of 2 dividing the last dim"),
    (2, CompilationError, "returns a multiple of 2 values"),
])
def test_what_cannot_be_mapped_is_reported(case, error, message):
    with pytest.raises(error, match=message):
        make_ir(ASTSource(bad_kernel, {"X": "*fp32"}, {"CASE": case}), INTERPRETER_TARGET)


def test_the_pass_alone_on_ir_text(golden):
    golden(map_elementwise, """
        module @k {
          tt.func @k(%x: <4xfp32>, %out: <4x*fp32>) {kernel = true} {
            %r = map_elementwise(%x) ({
            ^(%a: fp32, %b: fp32):
              %s = add(%a, %b) : (fp32, fp32) -> fp32
              yield(%s, %a) : (fp32, fp32) -> ()
            }) {pack = 2} : (<4xfp32>) -> <4xfp32>
            store(%out, %r) : (<4x*fp32>, <4xfp32>) -> ()
            return() : () -> ()
          }
        }
        """, """
        module @k {
          tt.func @k(%x: <4xfp32>, %out: <4x*fp32>) {kernel = true} {
            %0 = reshape(%x) : (<4xfp32>) -> <2x2xfp32>
            %1, %2 = split(%0) : (<2x2xfp32>) -> (<2xfp32>, <2xfp32>)
            %s = add(%1, %2) : (<2xfp32>, <2xfp32>) -> <2xfp32>
            %3 = join(%s, %1) : (<2xfp32>, <2xfp32>) -> <2x2xfp32>
            %4 = reshape(%3) : (<2x2xfp32>) -> <4xfp32>
            store(%out, %4) : (<4x*fp32>, <4xfp32>) -> ()
            return() : () -> ()
          }
        }
        """)
