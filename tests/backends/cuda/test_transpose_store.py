"""Stores leave in 16-byte vectors where the pointer allows, whatever the loads
feeding them could do. A transposing copy in Inductor's style (the load
contiguous along one dim of the tile, the store along the other, both sharing
the mask): the store gets a coalesced layout of its own, so its data converts
through shared memory once, as Triton's does, instead of one 2-byte store per
element from the load's layout. A pointwise kernel whose inputs are not
16-byte aligned but whose output is: its loads give each thread the run of
elements the store moves as one vector. Checked on the CPU emulator."""

from __future__ import annotations

import cuda_emulator
import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir


@triton.jit
def transpose_kernel(in_ptr0, out_ptr0, ynumel, xnumel, YBLOCK: tl.constexpr, XBLOCK: tl.constexpr):
    yindex = tl.program_id(1) * YBLOCK + tl.arange(0, YBLOCK)[None, :]
    ymask = yindex < ynumel
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    # in: [xnumel][ynumel] (y contiguous), out: [ynumel][xnumel] (x contiguous)
    tmp0 = tl.load(in_ptr0 + (yindex + ynumel * xindex), xmask & ymask)
    tl.store(out_ptr0 + (xindex + xnumel * yindex), tmp0.to(tl.float32).to(out_ptr0.dtype.element_ty),
             xmask & ymask)


def _generate(dtype: str, yblock: int, xblock: int, num_warps: int) -> tuple[str, dict]:
    signature = {"in_ptr0": f"*{dtype}", "out_ptr0": f"*{dtype}", "ynumel": "i32", "xnumel": "i32",
                 "YBLOCK": "constexpr", "XBLOCK": "constexpr"}
    constexprs = {"YBLOCK": yblock, "XBLOCK": xblock}
    src = ASTSource(transpose_kernel, signature, constexprs, attrs={(0,): [["tt.divisibility", 16]],
                                                                   (1,): [["tt.divisibility", 16]],
                                                                   (2,): [["tt.divisibility", 16]],
                                                                   (3,): [["tt.divisibility", 16]]})
    module = make_ir(src, GPUTarget("cuda", 90, 32), {"num_warps": num_warps})
    source, _, metadata = generate_cuda(module, 90, {"num_warps": num_warps})
    return source, metadata


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_transposed_store_is_one_conversion_and_vector_stores(dtype):
    source, _ = _generate(dtype, 64, 64, 4)
    body = source[source.index("__global__"):]
    assert "st.global.v4.b32" in body
    assert "st.global.b16" not in body and "st.global.b32 " not in body
    # one barrier between the shared-memory writes and reads; none before the first use
    assert body.count("__syncthreads()") == 1


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
@pytest.mark.parametrize("dtype, ynumel, xnumel", [("bf16", 64, 128), ("fp32", 128, 64), ("i8", 64, 128)])
def test_transposed_copy_runs_on_the_emulator(dtype, ynumel, xnumel):
    source, metadata = _generate(dtype, 32, 32, 4)
    rng = np.random.default_rng(ynumel + xnumel)
    values = rng.standard_normal((xnumel, ynumel)).astype(np.float32)
    if dtype == "i8":
        x = rng.integers(-128, 128, (xnumel, ynumel)).astype(np.int8)
        out = np.full((ynumel, xnumel), 0x55, dtype=np.int8)
        expected = x.T
    elif dtype == "bf16":
        # bf16 bits: the top half of each fp32 (the values are then exact in bf16)
        x = (values.view(np.uint32) >> 16).astype(np.uint16)
        out = np.full((ynumel, xnumel), 0x7FC0, dtype=np.uint16)
        expected = x.T
    else:
        x = values
        out = np.full((ynumel, xnumel), np.nan, dtype=np.float32)
        expected = values.T
    cuda_emulator.Emulator(source, 4, metadata["shared"]).launch((xnumel // 32, ynumel // 32), x, out, ynumel,
                                                                  xnumel)
    np.testing.assert_array_equal(out, expected)


@triton.jit
def silu_mul_kernel(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
    tmp0 = tl.load(in_ptr0 + xindex, None).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + xindex, None).to(tl.float32)
    tl.store(out_ptr0 + xindex, (tmp0 / (tl.exp(-tmp0) + 1.0) * tmp1).to(out_ptr0.dtype.element_ty), None)


def _silu_mul_source() -> tuple[str, dict]:
    signature = {"in_ptr0": "*bf16", "in_ptr1": "*bf16", "out_ptr0": "*bf16", "xnumel": "i32",
                 "XBLOCK": "constexpr"}
    # only the output is known 16-byte aligned (Inductor's attrs for inputs that are views)
    src = ASTSource(silu_mul_kernel, signature, {"XBLOCK": 1024}, attrs={(2,): [["tt.divisibility", 16]]})
    module = make_ir(src, GPUTarget("cuda", 90, 32), {"num_warps": 4})
    source, _, metadata = generate_cuda(module, 90, {"num_warps": 4})
    return source, metadata


def test_unaligned_loads_keep_the_aligned_store_a_vector():
    source, _ = _silu_mul_source()
    body = source[source.index("__global__"):]
    assert body.count("ld.global.b16") == 16
    assert body.count("st.global.v4.b32") == 1 and "st.global.b16" not in body
    assert "__syncthreads()" not in body


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
def test_unaligned_loads_with_a_vector_store_run_on_the_emulator():
    source, metadata = _silu_mul_source()
    n = 2048
    rng = np.random.default_rng(3)
    # bf16 bits of random values; the inputs start 2 bytes into their buffers (not 16-byte aligned)
    a_bits = (rng.standard_normal(n + 1).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    b_bits = (rng.standard_normal(n + 1).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    out = np.full(n, 0x7FC0, dtype=np.uint16)
    a, b = a_bits[1:], b_bits[1:]
    assert a.ctypes.data % 16 != 0
    cuda_emulator.Emulator(source, 4, metadata["shared"]).launch((n // 1024,), a, b, out, n)
    wide = lambda bits: (bits.astype(np.uint32) << 16).view(np.float32)  # noqa: E731
    expected = wide(a) / (np.exp(-wide(a)) + 1.0) * wide(b)
    np.testing.assert_allclose(wide(out), expected, rtol=2 ** -7, atol=1e-6)
