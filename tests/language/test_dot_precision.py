"""`tl.dot(input_precision="bf16x3" / "bf16x6")` (TRITON_SEMANTICS 6.3): fp32 operands
split into bf16 parts whose products are summed by bf16 dots with fp32 accumulation,
in the order upstream Triton 3.6 emits them (its TTIR for sm_80/sm_90: the small
cross terms smallest first, NaN of those dropped, then hi@hi, then `+ acc`)."""

from __future__ import annotations

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource
from tritone.errors import CompilationError
from tritone.ir.target import INTERPRETER_TARGET
from tritone.ir.types import type_text

from ._helpers import Kernel

RNG = np.random.default_rng()


@triton.jit
def dot_kernel(A, B, C, ACC, P: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(A + m[:, None] * K + k[None, :])
    b = tl.load(B + k[:, None] * N + n[None, :])
    acc = tl.load(ACC + m[:, None] * N + n[None, :])
    tl.store(C + m[:, None] * N + n[None, :], tl.dot(a, b, acc, input_precision=P))


def _bf16(x: np.ndarray) -> np.ndarray:
    """fp32 -> bf16 (round to nearest even), as fp32 values."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def _parts(x: np.ndarray, count: int) -> list[np.ndarray]:
    parts, rest = [], x.astype(np.float32)
    for _ in range(count):
        part = _bf16(rest)
        parts.append(part)
        rest = (rest - part).astype(np.float32)
    return parts


def _reference(a, b, acc, six: bool):
    """The split product in float64 (every bf16 product and its sum exact), with the
    terms that the kernel adds; the kernel differs by its fp32 accumulation only."""
    pa, pb = _parts(a, 3 if six else 2), _parts(b, 3 if six else 2)
    terms = [(1, 1), (2, 0), (0, 2), (1, 0), (0, 1)] if six else [(1, 0), (0, 1)]
    total = sum(pa[i].astype(np.float64) @ pb[j].astype(np.float64) for i, j in terms + [(0, 0)])
    return total + acc


def _run(a, b, acc, precision):
    m, k = a.shape
    n = b.shape[1]
    c = np.zeros((m, n), np.float32)
    dot_kernel[(1,)](a, b, c, acc, precision, m, n, k)
    return c


@pytest.mark.parametrize("precision", ["bf16x3", "bf16x6"])
@pytest.mark.parametrize("shape", [(16, 16, 16), (32, 16, 64)])
def test_split_dots_against_their_definition(precision, shape):
    m, n, k = shape
    a = RNG.standard_normal((m, k)).astype(np.float32) * np.float32(3.0)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    acc = RNG.standard_normal((m, n)).astype(np.float32)
    got = _run(a, b, acc, precision)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64) + np.abs(acc)
    reference = _reference(a, b, acc, precision == "bf16x6")
    assert np.all(np.abs(got - reference) <= 4 * k * 2.0**-24 * scale)
    # What the extra terms buy: bf16x3 is far closer than one bf16 dot, bf16x6 about fp32.
    exact = a.astype(np.float64) @ b.astype(np.float64) + acc
    one_bf16 = _bf16(a).astype(np.float64) @ _bf16(b).astype(np.float64) + acc
    error = np.abs(got - exact).max()
    assert error < np.abs(one_bf16 - exact).max() / 50
    if precision == "bf16x6":
        assert error <= np.abs(_run(a, b, acc, "ieee") - exact).max() * 4 + 1e-6


def test_an_infinite_operand_gives_infinity_not_nan():
    a = RNG.uniform(0.5, 1.0, (16, 16)).astype(np.float32)
    b = RNG.uniform(0.5, 1.0, (16, 16)).astype(np.float32)
    a[3, 5] = np.inf
    for precision in ("bf16x3", "bf16x6"):
        got = _run(a, b, np.zeros((16, 16), np.float32), precision)
        assert np.all(np.isposinf(got[3])) and np.all(np.isfinite(np.delete(got, 3, axis=0)))


def test_the_ir_is_bf16_dots_in_upstreams_order():
    k = Kernel()
    a, b, acc = k.arg("fp32", [16, 16]), k.arg("fp32", [16, 16]), k.arg("fp32", [16, 16])
    tl.dot(a, b, acc, input_precision="bf16x3", _semantic=k.sem)
    dots = k.ops("dot")
    assert len(dots) == 3
    assert all(type_text(op.operands[0].type) == "<16x16xbf16>" and type_text(op.results[0].type) == "<16x16xfp32>"
               for op in dots)
    names = k.op_names()
    # the NaN of the small terms is dropped before hi @ hi; acc is added last
    assert names.index("select") < len(names) - names[::-1].index("dot") - 1 < names.index("add")
    six = Kernel()
    x, y = six.arg("fp32", [2, 16, 16]), six.arg("fp32", [2, 16, 16])
    assert tl.dot(x, y, input_precision="bf16x6", _semantic=six.sem).type == tl.block_type(tl.float32, [2, 16, 16])
    assert len(six.ops("dot")) == 6
    k.verify()
    six.verify()


def test_other_operands_ignore_the_split_precisions():
    k = Kernel()
    a = k.arg("fp16", [16, 16])
    tl.dot(a, a, input_precision="bf16x3", _semantic=k.sem)
    (dot,) = k.ops("dot")
    assert type_text(dot.operands[0].type) == "<16x16xfp16>" and dot.attrs["input_precision"] == "ieee"
    k.verify()


def test_allowed_dot_input_precisions_limits_the_choice():
    src = ASTSource(dot_kernel, {"A": "*fp32", "B": "*fp32", "C": "*fp32", "ACC": "*fp32"},
                    {"P": "bf16x3", "M": 16, "N": 16, "K": 16})
    triton.compile(src, target=INTERPRETER_TARGET)
    with pytest.raises(CompilationError, match="input_precision must be one of"):
        triton.compile(src, target=INTERPRETER_TARGET, options={"allowed_dot_input_precisions": ("tf32", "ieee")})


def test_the_cuda_backend_compiles_split_dots(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    src = ASTSource(dot_kernel, {"A": "*fp32", "B": "*fp32", "C": "*fp32", "ACC": "*fp32"},
                    {"P": "bf16x3", "M": 32, "N": 32, "K": 32})
    kernel = triton.compile(src, target=GPUTarget("cuda", 80, 32))
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in kernel.asm["ptx"]
