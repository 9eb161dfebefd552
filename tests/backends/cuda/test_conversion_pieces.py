"""A layout conversion through shared memory in pieces (codegen_layout's
`_conversion_splits`): where a coordinate bit sits in a register bit of both
layouts, a conversion of more than `PIECE_BYTES` moves the elements with that
bit 0, then those with it 1, through half the scratch, so that a persistent
matmul's 4-stage pipeline keeps its tile-ahead copies beside a 128x256 fp16
epilogue.

Without a GPU: the pieces' layouts move every element of the conversion once,
each to the place its reader looks (simulated over every thread and register);
which conversions are cut; the scratch the plan gives them; an sm_80 matmul
whose epilogue moves in pieces, run on the CUDA emulator. On a GPU (`gpu`
marker): an 8-warp 128x256 wgmma tile stored through pointers, and the
persistent kernel whose tile-ahead plan needs the pieces, against torch.
"""

from __future__ import annotations

import cuda_emulator
import numpy as np
import pytest
import torch
from test_tile_ahead import pointer_persistent

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import codegen_layout, lowering
from tritone.backends.cuda.codegen_base import row_major_strides
from tritone.compiler import ASTSource
from tritone.compiler.compiler import make_ir


@triton.jit
def tile_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B for one BM x BN tile (A is BM x K, B is K x BN, all row-major)."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(c_ptr.dtype.element_ty))


def _compiled(arch: int, bm: int, bn: int, warps: int, out: str, stages: int = 3):
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": f"*{out}", "K": "i32"}
    options = {"num_warps": warps, "num_stages": stages}
    module = make_ir(ASTSource(tile_matmul, signature, {"BM": bm, "BN": bn, "BK": 32},
                               {(i,): [["tt.divisibility", 16]] for i in range(4)}), GPUTarget("cuda", arch, 32),
                     options)
    source, _, metadata = lowering.generate_cuda(module, arch, options)
    conversions = [op for op in module.kernel.walk() if op.name == "convert_layout"]
    return source, metadata, conversions


def _layouts(op):
    src, dst = op.operands[0], op.results[0]
    shape = tuple(src.type.shape)
    return src.type.layout.linear(shape), dst.type.layout.linear(shape), src.type.scalar.itemsize


def _simulate(src, dst, eb) -> int:
    """Every thread's writes and reads of each piece at the scratch indices the pieces'
    layouts give: each index written with one element, each destination register
    reading its own element there, every destination register read once. The pieces."""
    splits = codegen_layout._conversion_splits(src, dst, eb)
    shape = codegen_layout._piece_shape(tuple(src.shape), splits)
    strides = np.array(row_major_strides(shape))
    size = int(np.prod(shape))
    whole_src, whole_dst = src.table(), dst.table()
    read = np.zeros(whole_dst.shape[:3], dtype=np.int64)
    for piece in range(1 << len(splits)):
        written: dict[int, tuple] = {}
        for side, whole, linear in (("src", whole_src, src), ("dst", whole_dst, dst)):
            part = codegen_layout._piece_layout(linear, splits, side)
            bits = [s.src_reg if side == "src" else s.dst_reg for s in splits]
            register_of = codegen_layout._register_of(bits, piece)
            indices = part.table() @ strides
            assert indices.min() >= 0 and indices.max() < size
            for reg in range(part.num_registers):
                for lane in range(part.num_lanes):
                    for warp in range(part.num_warps):
                        element = tuple(whole[register_of(reg), lane, warp])
                        index = int(indices[reg, lane, warp])
                        if side == "src":
                            assert written.setdefault(index, element) == element, "two elements at one place"
                        else:
                            assert written.get(index) == element, f"piece {piece} reads {index} for {element}"
                            read[register_of(reg), lane, warp] += 1
    assert (read == 1).all(), "each destination register read once"
    return 1 << len(splits)


@pytest.mark.parametrize("arch, bm, bn, warps, out, pieces", [
    (90, 128, 256, 8, "fp16", 2),   # tutorial 09's persistent fp16 tile: wgmma to a coalesced store
    (90, 128, 128, 8, "fp32", 2),
    (80, 128, 256, 8, "fp16", 2),   # mma.sync
    (80, 128, 128, 8, "fp32", 2),
    (90, 128, 128, 4, "fp16", 1),   # 32 KB: whole
    (80, 64, 128, 4, "fp32", 1),
])
def test_the_pieces_move_every_element_to_its_reader(arch, bm, bn, warps, out, pieces):
    _, _, conversions = _compiled(arch, bm, bn, warps, out)
    (conversion,) = conversions
    assert _simulate(*_layouts(conversion)) == pieces
    whole = bm * bn * (2 if out == "fp16" else 4)
    assert codegen_layout.move_scratch_bytes(conversion) == whole // pieces


def test_a_split_keeps_the_vector_and_stmatrix_register_bits():
    _, _, (conversion,) = _compiled(90, 128, 256, 8, "fp16")
    src, dst, eb = _layouts(conversion)
    (split,) = codegen_layout._conversion_splits(src, dst, eb)
    # the accumulator's row 8 (register bit 1), the store's 8 fp16 of a thread kept whole
    assert (split.dim, split.bit, split.src_reg, split.dst_reg) == (0, 3, 1, 3)
    piece = codegen_layout._piece_layout(src, [split], "src")
    assert codegen_layout._stmatrix_block(piece, eb)


def test_the_generated_code_stores_each_piece_by_stmatrix_between_barriers():
    source, _, _ = _compiled(90, 128, 256, 8, "fp16")
    epilogue = source[source.index("tt_stmatrix_x4(tt_shared_address"):]
    steps = [line.strip() for line in epilogue.splitlines()
             if "tt_stmatrix_x4(" in line or "__syncthreads" in line or "reinterpret_cast<const tt_w16*>" in line]
    kinds = ["stmatrix" if "stmatrix" in s else "barrier" if "sync" in s else "read" for s in steps]
    # a piece: 64 x 256 fp16 over 256 threads, 8 stmatrix.x4 of 8 elements, 8 reads of 16 bytes
    piece = ["stmatrix"] * 8 + ["barrier"] + ["read"] * 8
    assert kinds[:len(piece) * 2 + 1] == piece + ["barrier"] + piece


def test_a_persistent_4_stage_fp16_kernel_keeps_its_tile_ahead_copies():
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                 "K_LOOP": "i32"}
    options = {"num_warps": 8, "num_stages": 4}
    module = make_ir(ASTSource(pointer_persistent, signature, {"NUM_PROGRAMS": 132, "BM": 128, "BN": 256, "BK": 64},
                               {(i,): [["tt.divisibility", 16]] for i in range(7)}), GPUTarget("cuda", 90, 32),
                     options)
    source, _, metadata = lowering.generate_cuda(module, 90, options)
    # 4 stages of 128x64 and 64x256 fp16 (192 KB) beside the epilogue's 32 KB piece:
    # the next tile's copies are issued in the K loop's branch for them
    assert metadata["shared"] == 4 * (128 * 64 + 64 * 256) * 2 + 128 * 256
    assert "else {" in source


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
def test_an_sm80_epilogue_in_pieces_runs_right_on_the_cuda_emulator():
    source, metadata, (conversion,) = _compiled(80, 128, 128, 8, "fp32", stages=2)
    assert codegen_layout.move_scratch_bytes(conversion) == 128 * 128 * 4 // 2
    emulated = cuda_emulator.Emulator(source, 8, metadata["shared"])
    rng = np.random.default_rng(128)
    a = rng.integers(-4, 4, size=(128, 64)).astype(np.float16)
    b = rng.integers(-4, 4, size=(64, 128)).astype(np.float16)
    c = np.full((128, 128), np.nan, dtype=np.float32)
    emulated.launch((1,), a, b, c, 64)
    np.testing.assert_array_equal(c, (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))


# -- on the GPU ---------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("out", [torch.float16, torch.float32])
def test_a_128x256_tile_in_pieces_on_the_gpu(out):
    torch.manual_seed(0)
    a = torch.randn(128, 192, device="cuda", dtype=torch.float16)
    b = torch.randn(192, 256, device="cuda", dtype=torch.float16)
    c = torch.full((128, 256), float("nan"), device="cuda", dtype=out)
    tile_matmul[(1,)](a, b, c, 192, BM=128, BN=256, BK=32, num_warps=8, num_stages=3)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k, programs", [(1024, 768, 320, 5), (300, 520, 200, 3), (256, 256, 64, 4)])
def test_the_persistent_4_stage_fp16_kernel_on_the_gpu(m, n, k, programs):
    torch.manual_seed(1)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    pointer_persistent[(programs,)](a, b, c, m, n, k, k, NUM_PROGRAMS=programs, BM=128, BN=256, BK=64,
                                    num_warps=8, num_stages=4)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2 * (k / 64) ** 0.5, rtol=1e-2)
