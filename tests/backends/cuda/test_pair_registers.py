"""`split` and `join` in registers, and permutes of linear layouts: where a
block's last dim of 2 is one register bit of its layout (a reshaped mma
accumulator, a join's result), split and join move no data, as Triton's do
(`layout_pass.with_pair_dim` / `without_pair_dim`); a split whose pair is in
other threads has its operand converted first, and a join whose result wants
another layout exchanges through shared memory as before.

Tutorial 09's persistent TMA matmul with EPILOGUE_SUBTILE (its best config on
an H100) reshapes the 128x256 accumulator to (128, 2, 128), permutes the pair
last and splits it: through shared memory that took 128 KB beside the pipeline
and did not fit. Without a GPU: the layouts, the scratch, and the kernels on
the CUDA emulator against numpy; on a GPU (`gpu` marker) the descriptor
kernel against torch.
"""

from __future__ import annotations

import cuda_emulator
import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import layout_pass, lowering, smem
from tritone.compiler import ASTSource
from tritone.compiler.compiler import make_ir
from tritone.ir.layouts import BlockedLayout, LinearEncodingLayout
from tritone.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def halves_of_a_product(a_ptr, b_ptr, left_ptr, right_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A @ B's left and right column halves, split from the accumulator as tutorial
    09's subtiled epilogue does (reshape, pair dim last, split)."""
    rm = tl.arange(0, BM)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + tl.arange(0, BN)[None, :])
    acc = tl.dot(a, b)
    left, right = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
    half = tl.arange(0, BN // 2)
    tl.store(left_ptr + rm[:, None] * (BN // 2) + half[None, :], left)
    tl.store(right_ptr + rm[:, None] * (BN // 2) + half[None, :], right)


@triton.jit
def interleave(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    """out[r, 2c] = x[r, c], out[r, 2c + 1] = 2 x[r, c]: a join, reshaped."""
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    pairs = tl.reshape(tl.join(x, x * 2.0), (R, 2 * C))
    tl.store(out_ptr + tl.arange(0, R)[:, None] * (2 * C) + tl.arange(0, 2 * C)[None, :], pairs)


@triton.jit
def split_rows_of_pairs(x_ptr, even_ptr, odd_ptr, N: tl.constexpr):
    """A (N, 2) block loaded as pairs and split: the pair is one thread's vector."""
    offs = tl.arange(0, N)
    pairs = tl.load(x_ptr + offs[:, None] * 2 + tl.arange(0, 2)[None, :])
    even, odd = tl.split(pairs)
    tl.store(even_ptr + offs, even)
    tl.store(odd_ptr + offs, odd + 1.0)


def _generate(kernel, signature, constants, arch=80, warps=4, stages=2):
    options = {"num_warps": warps, "num_stages": stages}
    module = make_ir(ASTSource(kernel, signature, constants, {(i,): [["tt.divisibility", 16]] for i in
                                                             range(len(signature))}),
                     GPUTarget("cuda", arch, 32), options)
    source, _, metadata = lowering.generate_cuda(module, arch, options)
    return module, source, metadata


def _ops(module, name):
    return [op for op in module.kernel.walk() if op.name == name]


# -- the layouts ---------------------------------------------------------------------------

def test_a_pair_added_and_taken_away_gives_back_the_same_placement():
    half = BlockedLayout((1, 4), (4, 8), (2, 2), (1, 0))
    paired = layout_pass.with_pair_dim(half, (32, 64))
    assert isinstance(paired, LinearEncodingLayout) and paired.shape == (32, 64, 2)
    assert paired.registers[0] == (0, 0, 1)  # the pair in register bit 0
    again = layout_pass.without_pair_dim(paired, (32, 64, 2))
    assert again is not None and again.linear((32, 64)) == half.linear((32, 64))


def test_a_pair_in_lanes_or_in_two_register_bits_is_not_split_in_registers():
    across_lanes = BlockedLayout((1, 1), (16, 2), (4, 1), (1, 0))
    assert layout_pass.without_pair_dim(across_lanes, (64, 2)) is None
    per_thread = BlockedLayout((1, 2), (32, 1), (4, 1), (1, 0))
    assert layout_pass.without_pair_dim(per_thread, (128, 2)) is not None
    assert layout_pass.without_pair_dim(per_thread, (128, 4)) is None  # not a pair


def test_a_permute_of_a_linear_layout_permutes_its_bases():
    layout = LinearEncodingLayout((4, 2, 8), [(1, 0, 0), (0, 1, 0)], [(2, 0, 0), (0, 0, 1), (0, 0, 2), (0, 0, 4),
                                                                      (0, 0, 0)], [])
    moved = layout_pass.permute_layout(layout, (0, 2, 1), (4, 2, 8))
    assert moved.shape == (4, 8, 2)
    assert moved.registers == ((1, 0, 0), (0, 0, 1))
    assert moved.lanes[1:4] == ((0, 1, 0), (0, 2, 0), (0, 4, 0))


# -- kernels, without a GPU -----------------------------------------------------------------

@pytest.mark.parametrize("arch", [80, 90])
def test_an_accumulator_splits_into_halves_without_shared_memory(arch):
    module, source, metadata = _generate(halves_of_a_product, {"a_ptr": "*fp16", "b_ptr": "*fp16",
                                                               "left_ptr": "*fp32", "right_ptr": "*fp32"},
                                         {"BM": 64, "BN": 64, "BK": 32}, arch=arch)
    (split,) = _ops(module, "split")
    assert smem.scratch_bytes(split) == 0
    # nothing converted on the way from the accumulator to the halves
    assert not [op for op in _ops(module, "convert_layout") if len(op.operands[0].type.shape) == 3]
    # the dot's operands go through shared memory; nothing else does
    assert metadata["shared"] <= (64 * 32 + 32 * 64) * 2
    if arch != 80 or not cuda_emulator.available():
        return
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 4, size=(64, 32)).astype(np.float16)
    b = rng.integers(-4, 4, size=(32, 64)).astype(np.float16)
    left, right = (np.full((64, 32), np.nan, np.float32) for _ in range(2))
    cuda_emulator.Emulator(source, 4, metadata["shared"]).launch((1,), a, b, left, right)
    product = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(left, product[:, :32])
    np.testing.assert_array_equal(right, product[:, 32:])


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
def test_a_join_interleaves_in_registers():
    module, source, metadata = _generate(interleave, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"R": 16, "C": 32})
    (join,) = _ops(module, "join")
    assert smem.scratch_bytes(join) == 0 and metadata["shared"] == 0
    x = np.random.default_rng(3).standard_normal((16, 32)).astype(np.float32)
    out = np.full((16, 64), np.nan, np.float32)
    cuda_emulator.Emulator(source, 4, metadata["shared"]).launch((1,), x, out)
    np.testing.assert_array_equal(out[:, 0::2], x)
    np.testing.assert_array_equal(out[:, 1::2], 2 * x)


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
def test_loaded_pairs_split_in_registers():
    module, source, metadata = _generate(split_rows_of_pairs, {"x_ptr": "*fp32", "even_ptr": "*fp32",
                                                               "odd_ptr": "*fp32"}, {"N": 256})
    (split,) = _ops(module, "split")
    assert smem.scratch_bytes(split) == 0
    x = np.random.default_rng(5).standard_normal((256, 2)).astype(np.float32)
    even, odd = (np.full(256, np.nan, np.float32) for _ in range(2))
    cuda_emulator.Emulator(source, 4, metadata["shared"]).launch((1,), x, even, odd)
    np.testing.assert_array_equal(even, x[:, 0])
    np.testing.assert_array_equal(odd, x[:, 1] + 1.0)


# -- tutorial 09's subtiled epilogue --------------------------------------------------------

@triton.jit
def subtiled_descriptor_matmul(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B.T for one BM x BN tile through descriptors, stored as two BN/2 halves."""
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([0, k]), b_desc.load([0, k]).T, acc)
    left, right = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
    c_desc.store([0, 0], left.to(tl.float16))
    c_desc.store([0, BN // 2], right.to(tl.float16))


def test_the_subtiled_epilogue_needs_only_its_staging_beside_the_pipeline():
    bm, bn, bk, stages = 128, 256, 64, 3
    signature = {"a_desc": f"tensordesc<fp16[{bm}, {bk}]>", "b_desc": f"tensordesc<fp16[{bn}, {bk}]>",
                 "c_desc": f"tensordesc<fp16[{bm}, {bn // 2}]>", "K": "i32"}
    module, _, metadata = _generate(subtiled_descriptor_matmul, signature, {"BM": bm, "BN": bn, "BK": bk},
                                    arch=90, warps=8, stages=stages)
    (split,) = _ops(module, "split")
    assert smem.scratch_bytes(split) == 0
    assert not [op for op in _ops(module, "convert_layout") if len(op.operands[0].type.shape) == 3]
    # the pipeline's stages, one staged half (reused by the second store) and the barriers
    assert metadata["shared"] <= stages * (bm + bn) * bk * 2 + bm * bn // 2 * 2 + 64


@pytest.mark.gpu
def test_the_subtiled_epilogue_on_the_gpu():
    torch.manual_seed(2)
    bm, bn, bk, k = 128, 256, 64, 256
    a = torch.randn(bm, k, device="cuda", dtype=torch.float16)
    b = torch.randn(bn, k, device="cuda", dtype=torch.float16)
    c = torch.full((bm, bn), float("nan"), device="cuda", dtype=torch.float16)
    descriptors = [TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bn, bk]),
                   TensorDescriptor.from_tensor(c, [bm, bn // 2])]
    subtiled_descriptor_matmul[(1,)](*descriptors, k, BM=bm, BN=bn, BK=bk, num_warps=8, num_stages=3)
    torch.testing.assert_close(c.float(), a.float() @ b.float().T, atol=5e-2, rtol=1e-2)
