"""Aggregates (`tl.core._aggregate`): classes of tensors and constexprs that
kernel code builds, calls methods of, indexes, passes to and returns from
`@jit` functions, and changes (through plain methods) inside loops and
branches. Kernels run in the CPU interpreter on random inputs, checked with
numpy; the mistakes Triton refuses are CompilationErrors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone._filecheck import run_parser
from tritone.errors import CompilationError

RNG = np.random.default_rng()
BLOCK = 8


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@tl.core._aggregate
class Pair:
    first: tl.tensor
    second: tl.tensor

    def __init__(self, first, second):
        self.first = first
        self.second = second

    @triton.jit
    def total(self):
        return self.first + self.second

    def scaled_second(self, factor, _semantic=None):
        return self.second.__mul__(factor, _semantic=_semantic)

    @triton.jit
    def swapped(self):
        return Pair(self.second, self.first)

    def __getitem__(self, index, _semantic=None):
        return self.first if tl.core._unwrap_if_constexpr(index) == 0 else self.second


@triton.jit
def difference(pair):
    return pair.first - pair.second


@triton.jit
def pair_kernel(X, Y, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    pair = Pair(tl.load(X + offs), tl.load(Y + offs))
    tl.store(OUT + offs, pair.total())
    tl.store(OUT + BLOCK + offs, pair.scaled_second(3.0))
    swapped = pair.swapped()
    tl.store(OUT + 2 * BLOCK + offs, difference(swapped))
    tl.store(OUT + 3 * BLOCK + offs, pair[0] * pair[1])


def _floats(n):
    return torch.from_numpy(RNG.standard_normal(n).astype(np.float32))


def test_methods_calls_and_indexing():
    x, y = _floats(BLOCK), _floats(BLOCK)
    out = torch.full((4 * BLOCK,), float("nan"))
    pair_kernel[(1,)](x, y, out, BLOCK=BLOCK)
    xs, ys = x.numpy(), y.numpy()
    expected = np.concatenate([xs + ys, ys * 3.0, ys - xs, xs * ys])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)


@tl.core._aggregate
class Accumulator:
    value: tl.tensor
    scale: tl.constexpr

    def __init__(self, value, scale):
        self.value = value
        self.scale = tl.constexpr(scale)

    def add(self, x, _semantic=None):
        self.value = self.value.__add__(x.__mul__(self.scale, _semantic=_semantic), _semantic=_semantic)

    @triton.constexpr_function
    def doubled_scale(self):
        return self.scale * 2

    @staticmethod
    @triton.jit
    def zeros(BLOCK: tl.constexpr, scale: tl.constexpr):
        return Accumulator(tl.zeros((BLOCK,), tl.float32), scale)


@triton.jit
def loops_kernel(X, OUT, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = Accumulator.zeros(BLOCK, 2)
    for i in range(n):
        acc.add(tl.load(X + i * BLOCK + offs))
    tl.store(OUT + offs, acc.value)
    counted = Accumulator(tl.zeros((BLOCK,), tl.float32), acc.doubled_scale())
    i = 0
    while i < n:
        counted.add(tl.full((BLOCK,), 1.0, tl.float32))
        i += 1
    tl.store(OUT + BLOCK + offs, counted.value)
    picked = Accumulator(tl.load(X + offs), 1)
    if n > 2:
        picked.add(tl.load(X + BLOCK + offs))
    tl.store(OUT + 2 * BLOCK + offs, picked.value)


@pytest.mark.parametrize("n", [2, 3])
def test_aggregates_changed_in_loops_and_branches(n):
    x = _floats(n * BLOCK)
    out = torch.full((3 * BLOCK,), float("nan"))
    loops_kernel[(1,)](x, out, n, BLOCK=BLOCK)
    rows = x.numpy().reshape(n, BLOCK)
    picked = rows[0] + (rows[1] if n > 2 else 0)
    expected = np.concatenate([2 * rows.sum(0), np.full(BLOCK, 4.0 * n), picked])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


@triton.constexpr_function
def Box(T):
    @tl.core._aggregate
    class BoxImpl:
        value: T

        def __init__(self, value):
            self.value = value

    return BoxImpl


TensorBox = Box(tl.tensor)


@triton.jit
def unbox(box):
    return box.value


@triton.jit
def box_kernel(X, OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + offs, unbox(TensorBox(tl.load(X + offs) * 2)))


def test_class_made_by_a_constexpr_function():
    x = _floats(BLOCK)
    out = torch.full((BLOCK,), float("nan"))
    box_kernel[(1,)](x, out, BLOCK=BLOCK)
    np.testing.assert_allclose(out.numpy(), x.numpy() * 2, rtol=1e-6)


@tl.core._aggregate
class Incomplete:
    a: tl.tensor
    b: tl.tensor

    def __init__(self, a):
        self.a = a


@triton.jit
def incomplete_kernel():
    Incomplete(tl.arange(0, 4))


@triton.jit
def wrong_field_type_kernel():
    Pair(tl.arange(0, 4), tl.constexpr(3))


@triton.jit
def attribute_assignment_kernel():
    pair = Pair(tl.arange(0, 4), tl.arange(0, 4))
    pair.first = tl.arange(4, 8)


@pytest.mark.parametrize("kernel, message", [
    (incomplete_kernel, "constructor for Incomplete did not initialize attribute 'b'"),
    (wrong_field_type_kernel, "Expected <class 'tritone.language.core.tensor'> for attribute 'second'"),
    (attribute_assignment_kernel, "Attribute assignment is not supported"),
])
def test_refused_as_triton_refuses(kernel, message):
    with pytest.raises(CompilationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_parser(kernel)


def test_an_aggregate_keeps_its_fields_only():
    box = Box(int)(3)
    with pytest.raises(AttributeError, match="BoxImpl has no attribute 'other'"):
        box.other = 1
    assert box.value == 3 and type(box).__name__ == "BoxImpl" and Pair.__module__ == __name__


def _holder(offset_source: str):
    namespace = {"tl": tl, "triton": triton}
    exec(compile(  # noqa: S102 - two classes that differ only in a method's body
        "@tl.core._aggregate\n"
        "class Holder:\n"
        "    value: tl.tensor\n"
        "    def __init__(self, value):\n"
        "        self.value = value\n"
        "    def shifted(self, _semantic=None):\n"
        f"        return {offset_source}\n", "<holder>", "exec"), namespace)
    return namespace["Holder"]


def test_the_cache_key_holds_the_aggregate_methods():
    from tritone.language.aggregate import aggregate_key

    assert "def scaled_second" in aggregate_key(Pair) and Pair.total.cache_key in aggregate_key(Pair)
    assert any(aggregate_key(Pair) in part for part in pair_kernel._dependency_key_parts())
    first, second = _holder("self.value"), _holder("self.value + 1")
    assert aggregate_key(first) != aggregate_key(second)
