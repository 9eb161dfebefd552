"""Which implementation computes a `tl.dot` (backends/cuda/dot/__init__.py): the
preference list per range of targets, the first implementation of it that can
compute the dot taking it, and the layout pass asking that one for the layout."""

from __future__ import annotations

import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import dot, layout_pass
from tritone.backends.cuda.dot.fma import FmaDot
from tritone.compiler.compiler import ASTSource, make_ir
from tritone.ir.layouts import BlockedLayout, NvidiaMmaLayout


@triton.jit
def one_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PRECISION: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, input_precision=PRECISION))


def _dot_module(target: int, dtype: str, m: int, n: int, k: int, precision: str = "tf32"):
    acc = "i32" if dtype == "i8" else "fp32"
    src = ASTSource(one_dot, {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{acc}"},
                    {"M": m, "N": n, "K": k, "PRECISION": precision})
    return make_ir(src, GPUTarget("cuda", target, 32), {"num_warps": 4})


def _the_dot(module):
    return next(op for op in module.kernel.walk() if op.name == "dot")


@pytest.mark.parametrize(("target", "names"), [
    (60, ("fma",)), (61, ("fma",)), (70, ("fma",)), (75, ("mma_turing", "fma")), (79, ("mma_turing", "fma")),
    (80, ("mma_v2", "fma")), (86, ("mma_v2", "fma")), (89, ("mma_v2", "fma")),
    (90, ("wgmma", "mma_v2", "fma")), (100, ("mma_v2", "fma")), (120, ("mma_v2", "fma"))])
def test_preferences_per_target(target, names):
    assert tuple(impl.name for impl in dot.preferences(target)) == names


@pytest.mark.parametrize(("dtype", "shape", "precision", "expected"), [
    # fp16 tiles of the instruction shape or more: tensor cores from 7.5 on; a
    # warpgroup's 64 rows: wgmma on Hopper
    ("fp16", (64, 64, 32), "tf32", {61: "fma", 75: "mma_turing", 80: "mma_v2", 90: "wgmma", 120: "mma_v2"}),
    ("fp16", (16, 8, 16), "tf32", {61: "fma", 75: "mma_turing", 80: "mma_v2", 90: "mma_v2"}),
    # below the m16n8 instruction shape: still the tensor cores (the layout wraps
    # onto the block, extra lanes compute copies), as Triton
    ("fp16", (8, 8, 16), "tf32", {61: "fma", 75: "mma_turing", 80: "mma_v2", 90: "mma_v2"}),
    ("fp16", (16, 4, 16), "tf32", {61: "fma", 75: "mma_turing", 80: "mma_v2", 90: "mma_v2"}),
    ("i8", (8, 32, 32), "tf32", {61: "fma", 75: "mma_turing", 80: "mma_v2", 90: "mma_v2"}),
    ("i8", (32, 32, 32), "tf32", {61: "fma", 75: "mma_turing", 80: "mma_v2", 90: "mma_v2"}),
    # Turing has no bf16 or tf32 mma; ieee fp32 never runs on tensor cores
    ("bf16", (32, 32, 32), "tf32", {61: "fma", 75: "fma", 80: "mma_v2", 90: "mma_v2"}),
    ("fp32", (32, 32, 16), "tf32", {61: "fma", 75: "fma", 80: "mma_v2", 90: "mma_v2"}),
    ("fp32", (32, 32, 16), "ieee", {61: "fma", 75: "fma", 80: "fma", 90: "fma"}),
])
def test_select_takes_the_first_implementation_that_supports_the_dot(dtype, shape, precision, expected):
    for target, name in expected.items():
        op = _the_dot(_dot_module(target, dtype, *shape, precision))
        assert dot.select(op, target).name == name, f"sm_{target}: {dtype} {shape} {precision}"


def test_the_layout_pass_takes_the_layout_of_the_selected_implementation():
    for target, layout_type in ((61, BlockedLayout), (75, NvidiaMmaLayout), (80, NvidiaMmaLayout)):
        module = _dot_module(target, "fp16", 64, 64, 32)
        layout_pass.run(module, _Ctx(target))
        assert isinstance(_the_dot(module).results[0].type.layout, layout_type), f"sm_{target}"


class _Ctx:
    def __init__(self, target: int):
        self.options = {"num_warps": 4, "target": target}


class _Refusing(FmaDot):
    """An implementation that computes nothing: the next one in the row must."""

    name = "refusing"

    def __init__(self):
        self.asked = []

    def supports(self, op, target):
        self.asked.append(target)
        return False


def test_the_table_decides_the_order(monkeypatch):
    op = _the_dot(_dot_module(80, "fp16", 64, 64, 32))
    monkeypatch.setattr(dot, "PREFERENCES", ((0, ("fma", "mma_v2")),))
    assert dot.select(op, 80).name == "fma"
    refusing = _Refusing()
    monkeypatch.setitem(dot.IMPLEMENTATIONS, refusing.name, refusing)
    monkeypatch.setattr(dot, "PREFERENCES", ((0, ("fma",)), (80, ("refusing", "mma_v2", "fma"))))
    assert dot.select(op, 86).name == "mma_v2"
    assert refusing.asked == [86]
    assert dot.select(op, 75).name == "fma"
    assert refusing.asked == [86], "a row applies only from its target on"


def test_no_implementation_is_an_error_naming_the_dot(monkeypatch):
    op = _the_dot(_dot_module(80, "fp16", 16, 16, 16))
    monkeypatch.setitem(dot.IMPLEMENTATIONS, "refusing", _Refusing())
    monkeypatch.setattr(dot, "PREFERENCES", ((0, ("refusing",)),))
    expected = (r"no dot implementation for <16x16xfp16> x <16x16xfp16> \+ <16x16xfp32> on sm_80 "
                r"\(the dot at .*test_dot_selection.py:23:")
    with pytest.raises(ValueError, match=expected):
        dot.select(op, 80)


def test_an_implementation_name_is_registered_once():
    with pytest.raises(ValueError, match="two dot implementations named 'fma'"):
        dot.register(FmaDot())
