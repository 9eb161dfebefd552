"""Compile options as they show in the PTX tritone compiles (NVRTC, no GPU):
fp fusion from the option and from `knobs.language.default_fp_fusion`,
`maxnreg` as `.maxnreg` on the entry only, `enable_reflect_ftz` on fp32 `exp2`,
kernels named like a CUDA math function; and the option checks Triton makes
(`num_warps` a power of two, clusters only from sm_90)."""

from __future__ import annotations

import re

import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone import knobs
from tritone.backends.compiler import GPUTarget, make_backend
from tritone.backends.cuda.codegen import entry_name
from tritone.compiler import ASTSource


def _compile(fn, signature, arch=90, **options):
    compiled = triton.compile(ASTSource(fn, signature=signature), target=GPUTarget("cuda", arch, 32),
                              options=options or None)
    assert compiled.asm["cubin"][:4] == b"\x7fELF"
    return compiled


@triton.jit
def _mul_add(data):
    ptrs = data + tl.arange(0, 128)
    tl.store(ptrs, tl.load(ptrs) * 1.5 + 1.0)


_FMA = re.compile(r"\b(mad|fma)\.r[nzmp]\.(ftz\.)?f32")


@pytest.mark.parametrize("fusion", [False, True])
def test_fp_fusion_follows_the_option_and_the_language_knob(fusion):
    assert bool(_FMA.search(_compile(_mul_add, {"data": "*fp32"}, enable_fp_fusion=fusion).asm["ptx"])) == fusion
    knobs.language.default_fp_fusion = fusion
    try:
        assert bool(_FMA.search(_compile(_mul_add, {"data": "*fp32"}).asm["ptx"])) == fusion
    finally:
        del knobs.language.default_fp_fusion


@triton.jit(noinline=True)
def _store_one(X):
    tl.store(X, 1)


@triton.jit
def _calls_a_function(X):
    _store_one(X)
    tl.store(X, 0)


@pytest.mark.parametrize("arch", [61, 90])
def test_maxnreg_marks_the_entry_and_not_the_functions(arch):
    ptx = _compile(_calls_a_function, {"X": "*i32"}, arch, maxnreg=40).asm["ptx"]
    assert re.search(r"\.visible \.entry [^{;]*\.maxnreg 40", ptx)
    assert not re.search(r"\.func [^{;]*\.maxnreg", ptx)
    plain = _compile(_calls_a_function, {"X": "*i32"}, arch).asm["ptx"]
    assert ".maxnreg" not in plain and ".maxntid 128" in plain


@triton.jit
def exp2(data):
    ptrs = data + tl.arange(0, 128)
    tl.store(ptrs, tl.math.exp2(tl.load(ptrs)))


@pytest.mark.parametrize("ftz", [False, True])
def test_reflect_ftz_picks_the_exp2_flavour(ftz):
    compiled = _compile(exp2, {"data": "*fp32"}, enable_reflect_ftz=ftz)
    ex2 = set(re.findall(r"\bex2\.approx[\w.]*", compiled.asm["ptx"]))
    assert ex2 == {"ex2.approx.ftz.f32" if ftz else "ex2.approx.f32"}


def test_a_kernel_named_like_a_math_function_gets_its_own_entry():
    compiled = _compile(exp2, {"data": "*fp32"})
    assert compiled.metadata.name == "exp2"
    assert compiled.metadata.entry == "exp2_kernel"
    assert ".entry exp2_kernel(" in compiled.asm["ptx"]
    assert entry_name("my_kernel") == "my_kernel" and entry_name("sinf") == "sinf_kernel"


# -- option checks Triton makes ------------------------------------------------------------------

@triton.jit
def _empty(src):
    pass


@pytest.mark.parametrize("num_warps", [3, 6, 0])
def test_num_warps_not_a_power_of_two_fails_as_value_and_assertion_error(num_warps):
    src = torch.empty(1)
    for expected in (ValueError, AssertionError):
        with pytest.raises(expected, match="num_warps must be a power of 2"):
            _empty.warmup(src, grid=(1,), num_warps=num_warps)


@pytest.mark.parametrize("arch", ["sm80", "sm_86", 75])
def test_clusters_before_hopper_are_refused(arch):
    with pytest.raises(ValueError, match=r"num_ctas > 1 requires NVIDIA SM90\+ \(Hopper\)"):
        _empty.warmup(torch.empty(1), grid=(1,), num_ctas=2, arch=arch)
    with pytest.raises(ValueError, match=r"num_ctas > 1 requires NVIDIA SM90\+"):
        make_backend(GPUTarget("cuda", 80, 32)).parse_options({"num_ctas": 4})
    with pytest.raises(ValueError, match="sm_80"):
        _compile(_empty, {"src": "*fp32"}, 80, num_ctas=2)


def test_clusters_on_hopper_and_one_cta_anywhere_are_fine():
    _empty.warmup(torch.empty(1), grid=(1,), num_ctas=2, arch="sm90")
    _empty.warmup(torch.empty(1), grid=(1,), num_ctas=1, arch="sm80")
    assert make_backend(GPUTarget("cuda", 90, 32)).parse_options({"num_ctas": 2}).num_ctas == 2
