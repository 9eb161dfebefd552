"""ptxas keeps each K step's wgmmas in flight together only when no other
instruction touches their accumulator registers between their start and the
wait that ends them; otherwise it serializes them (info C7514/C7515, printed
with `--ptxas-options=--verbose`), waiting out each wgmma before the next and
draining the tensor pipe. Tutorial 09's TMA matmul at 128x128x128 with 8 warps
ran at 495 TFLOP/s against upstream's 611 on an H100 that way: the wait for
earlier TMA stores was a branch on thread 0 between the accumulator's
conversion to fp16 and its packing for stmatrix. Every thread now waits (a
no-op without stores). These kernels, compiled by NVRTC for sm_90a, must show
no serialization (attention's too, whose `p @ v` stays in flight across trips)."""

from __future__ import annotations

import pytest
from test_dot_compile import ATTENTION_SIG, MATMUL_SIG, attention_kernel, ir_module, matmul_constexprs, matmul_kernel
from test_pair_registers import subtiled_descriptor_matmul

import tritone as triton
import tritone.language as tl
from tritone.backends.cuda.lowering import generate_cuda


@triton.jit
def descriptor_matmul(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B.T for one tile through descriptors, as tutorial 09's TMA kernel."""
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([0, k]), b_desc.load([0, k]).T, acc)
    c_desc.store([0, 0], acc.to(tl.float16))


def _descriptors(bm, bn, bk, c_bn, dtype="fp16"):
    return {"a_desc": f"tensordesc<{dtype}[{bm}, {bk}]>", "b_desc": f"tensordesc<{dtype}[{bn}, {bk}]>",
            "c_desc": f"tensordesc<fp16[{bm}, {c_bn}]>", "K": "i32"}


CASES = {
    "tma 128x128x128 w8": (descriptor_matmul, _descriptors(128, 128, 128, 128),
                           {"BM": 128, "BN": 128, "BK": 128}, 8, 3),
    "tma 128x256x64 w8": (descriptor_matmul, _descriptors(128, 256, 64, 256), {"BM": 128, "BN": 256, "BK": 64}, 8, 3),
    "tma 128x128x64 w4": (descriptor_matmul, _descriptors(128, 128, 64, 128), {"BM": 128, "BN": 128, "BK": 64}, 4, 4),
    "tma subtiled 128x256x64 w8": (subtiled_descriptor_matmul, _descriptors(128, 256, 64, 128),
                                   {"BM": 128, "BN": 256, "BK": 64}, 8, 3),
    "pointers 128x128x64 w4": (matmul_kernel, MATMUL_SIG, matmul_constexprs(128, 128, 64), 4, 3),
    # tf32: both tiles K-major (a's rows and b's, transposed, along K)
    "tma tf32 128x256x32 w8": (descriptor_matmul, _descriptors(128, 256, 32, 256, "fp32"),
                               {"BM": 128, "BN": 256, "BK": 32}, 8, 3),
    # p @ v left in flight into the next trip (pipeline._scaled_in_flight)
    "attention d64 128x64 w4": (attention_kernel, ATTENTION_SIG,
                                {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False}, 4, 3),
    "attention d128 128x64 w8": (attention_kernel, ATTENTION_SIG,
                                 {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": True}, 8, 3),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_ptxas_keeps_the_wgmmas_in_flight(case):
    from tritone.backends.cuda.bindings import libs

    try:
        nvrtc = libs.nvrtc_for(90).nvrtc
    except libs.LibraryNotFound as exc:  # pragma: no cover - NVRTC is a test dependency
        pytest.skip(f"no NVRTC: {exc}")
    fn, signature, constexprs, warps, stages = CASES[case]
    module = ir_module(fn, signature, constexprs, 90, warps, stages, divisible=[])
    source, name, metadata = generate_cuda(module, 90, {"num_warps": warps, "num_stages": stages})
    assert "wgmma.mma_async" in source
    assert ("tf32.tf32" in source) == ("tf32" in case)
    result = nvrtc.compile(source, f"{name}.cu", 90, options=["-w", "--ptxas-options=--verbose"],
                           arch_suffix=metadata.get("arch_suffix", ""))
    assert "ptxas info" in result.log  # the verbose report is there to read
    assert "serialized" not in result.log, result.log
