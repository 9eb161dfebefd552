"""`tritone.compile(ASTSource(...), target, options)`, called the way TorchInductor calls it."""

from __future__ import annotations

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler.compiler import ASTSource, CompiledKernel

INDUCTOR_OPTIONS = {"num_warps": 4, "num_stages": 1, "debug": True, "sanitize_overflow": False,
                    "enable_fp_fusion": True, "launch_cooperative_grid": False, "launch_pdl": False}


@triton.jit
def scaled_add(in_ptr0, in_ptr1, out_ptr0, xnumel, scale, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    a = tl.load(in_ptr0 + xindex, xmask)
    b = tl.load(in_ptr1 + xindex, xmask)
    tl.store(out_ptr0 + xindex, a + b * scale, xmask)


def inductor_source(constants_key="XBLOCK") -> ASTSource:
    signature = {"in_ptr0": "*fp32", "in_ptr1": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "scale": "fp32",
                 "XBLOCK": "constexpr"}
    attrs = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]], (3,): [["tt.divisibility", 16]]}
    return ASTSource(scaled_add, signature, {constants_key: 64}, attrs)


def test_compile_for_a_cuda_target_gives_ir_but_cannot_load():
    kernel = triton.compile(inductor_source(), target=GPUTarget("cuda", 80, 32), options=INDUCTOR_OPTIONS)
    assert isinstance(kernel, CompiledKernel)
    assert "tt.func @scaled_add" in kernel.asm["ttir"]
    assert kernel.kernel is None and "cubin" not in kernel.asm
    assert kernel.metadata.num_warps == 4 and kernel.metadata.num_stages == 1
    assert kernel.metadata.target == GPUTarget("cuda", 80, 32) and kernel.metadata.shared == 0
    assert kernel.metadata.global_scratch_size == 0 and kernel.metadata.profile_scratch_size == 0
    assert kernel.packed_metadata == (4, 1, 0) and kernel.name == "scaled_add"
    assert len(kernel.hash) == 64
    with pytest.raises(RuntimeError, match="CUDA backend"):
        kernel._init_handles()


def test_constexpr_keys_by_name_or_index_give_the_same_kernel():
    by_name = triton.compile(inductor_source("XBLOCK"), options=INDUCTOR_OPTIONS)
    by_index = triton.compile(inductor_source((5,)), options=INDUCTOR_OPTIONS)
    assert by_name.hash == by_index.hash
    other = triton.compile(ASTSource(scaled_add, inductor_source().signature, {"XBLOCK": 128}),
                           options=INDUCTOR_OPTIONS)
    assert other.hash != by_name.hash


def test_regular_launcher_call_runs_on_the_interpreter():
    binary = triton.compile(inductor_source(), options=INDUCTOR_OPTIONS)
    binary._init_handles()
    assert binary.n_spills == 0 and isinstance(binary.n_regs, int)
    rng = np.random.default_rng()
    n = 150
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    # Inductor: run(grid_0, grid_1, grid_2, stream, function, packed_metadata, launch_metadata,
    # enter_hook, exit_hook, *every parameter, constexprs included).
    binary.run(triton.cdiv(n, 64), 1, 1, None, binary.function, binary.packed_metadata, None, None, None,
               a, b, out, n, 0.5, 64)
    np.testing.assert_array_equal(out, a + b * np.float32(0.5))
    out[:] = np.nan
    binary[(triton.cdiv(n, 64),)](a, b, out, n, 2.0, 64)
    np.testing.assert_array_equal(out, a + b * np.float32(2.0))


def test_source_errors():
    with pytest.raises(TypeError, match="no parameter 'nope'"):
        ASTSource(scaled_add, {"nope": "i32"})
    partial = ASTSource(scaled_add, {"in_ptr0": "*fp32"}, {"XBLOCK": 64})
    with pytest.raises(TypeError, match="'in_ptr1' is missing from the signature"):
        triton.compile(partial)
    with pytest.raises(TypeError, match="ASTSource"):
        triton.compile("kernel.ttir")
