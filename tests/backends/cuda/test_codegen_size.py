"""Generated CUDA stays proportional to the IR for shape-heavy kernels.

Inductor's bitonic sort (`torch.sort`/`topk` under torch.compile) reshapes a
block into [outer, 2, inner] pairs at every compare-and-swap step and sums
over the pair axis to pick each side. A reshape whose result layout is the
operand's map seen in the new shape (`layouts.reshaped`) moves no data, so
the steps need no round trip through shared memory; these tests pin that
structurally (source size, barriers) and run the kernels on the CPU emulator.
"""

from __future__ import annotations

import cuda_emulator
import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.codegen_layout import move_scratch_bytes
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir
from tritone.ir.layouts import BlockedLayout, LinearEncodingLayout, parse_layout, reshaped

needs_gxx = pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")


@triton.jit
def _order_pairs(x, descending, DIST_LOG: tl.constexpr, LOG_N: tl.constexpr):
    # Elements k and k + 2**DIST_LOG (that bit of k clear) form a pair: seen as
    # [outer, 2, inner], the pair axis is the middle one.
    shape: tl.constexpr = [2 ** (LOG_N - DIST_LOG - 1), 2, 2 ** DIST_LOG]
    pairs = tl.reshape(x, shape)
    side = tl.arange(0, 2)[None, :, None]
    low = tl.reshape(tl.broadcast_to(tl.sum(pairs * (1 - side), 1)[:, None, :], shape), x.shape)
    high = tl.reshape(tl.broadcast_to(tl.sum(pairs * side, 1)[:, None, :], shape), x.shape)
    swap = (low > high) ^ descending
    # the partner of x is low + high - x
    return tl.where(swap, low + high - x, x)


@triton.jit
def bitonic_sort_kernel(X, Y, LOG_N: tl.constexpr):
    # one row of a [rows, 2**LOG_N] block, as Inductor sorts along its reduction axis
    index = tl.arange(0, 1)[:, None] * 2 ** LOG_N + tl.arange(0, 2 ** LOG_N)[None, :]
    x = tl.load(X + index)
    for stage in tl.static_range(LOG_N):
        descending = ((index >> (stage + 1)) & 1) != 0
        for step in tl.static_range(stage + 1):
            x = _order_pairs(x, descending, stage - step, LOG_N)
    tl.store(Y + index, x)


@triton.jit
def _pick_side(v, side, shape: tl.constexpr, full: tl.constexpr):
    # the element on `side` (0 or 1) of each pair, at both places of the pair
    picked = tl.sum(tl.reshape(v, shape) * side.to(v.dtype), 1).to(v.dtype)
    return tl.reshape(tl.broadcast_to(picked[:, None, :], shape), full)


@triton.jit
def _order_pairs_with_index(x, idx, descending, DIST_LOG: tl.constexpr, LOG_N: tl.constexpr):
    shape: tl.constexpr = [x.numel >> (DIST_LOG + 1), 2, 2 ** DIST_LOG]
    high_side = tl.arange(0, 2)[None, :, None]
    bits = x.to(tl.int32, bitcast=True)
    low_bits = _pick_side(bits, 1 - high_side, shape, x.shape)
    high_bits = _pick_side(bits, high_side, shape, x.shape)
    low_idx = _pick_side(idx, 1 - high_side, shape, x.shape)
    high_idx = _pick_side(idx, high_side, shape, x.shape)
    low = low_bits.to(tl.float32, bitcast=True)
    high = high_bits.to(tl.float32, bitcast=True)
    # NaN sorts last
    swap = ((low > high) | (low != low)) ^ descending
    bits = bits ^ tl.where(swap, low_bits ^ high_bits, 0)
    idx = idx ^ tl.where(swap, low_idx ^ high_idx, tl.zeros_like(idx))
    return bits.to(tl.float32, bitcast=True), idx


@triton.jit
def sort_with_index_kernel(X, Y, Positions, LOG_N: tl.constexpr):
    # Inductor's shape of the problem: one row of fp32 keys with int16 positions
    cols = tl.arange(0, 2 ** LOG_N)[None, :]
    index = tl.arange(0, 1)[:, None] * 2 ** LOG_N + cols
    x = tl.load(X + index)
    idx = tl.broadcast_to(cols.to(tl.int16), x.shape)
    for stage in tl.static_range(LOG_N):
        descending = tl.broadcast_to(((cols >> (stage + 1)) & 1) != 0, x.shape)
        for step in tl.static_range(stage + 1):
            x, idx = _order_pairs_with_index(x, idx, descending, stage - step, LOG_N)
    tl.store(Y + index, x)
    tl.store(Positions + index, idx.to(tl.int32))


@triton.jit
def tl_sort_kernel(X, Y, N: tl.constexpr):
    index = tl.arange(0, N)
    tl.store(Y + index, tl.sort(tl.load(X + index)))


def _generate(fn, constexprs: dict, num_warps: int) -> tuple[str, dict]:
    signature = {"X": "*i32", "Y": "*i32", **{name: "constexpr" for name in constexprs}}
    if fn is sort_with_index_kernel:
        signature.update(X="*fp32", Y="*fp32", Positions="*i32")
    module = make_ir(ASTSource(fn, signature, constexprs), GPUTarget("cuda", 90, 32), {"num_warps": num_warps})
    source, _, metadata = generate_cuda(module, 90, {"num_warps": num_warps})
    return source, metadata


def _kernel_body(source: str) -> str:
    return source[source.index("__global__"):]


def test_reshaped_layout_keeps_every_element_in_its_thread():
    blocked = BlockedLayout((4,), (32,), (8,), (0,)).linear((1024,))
    layout = reshaped(blocked, (16, 2, 32))
    assert isinstance(layout, LinearEncodingLayout)
    view = layout.linear((16, 2, 32))
    strides = (64, 32, 1)
    for reg, lane, warp in [(0, 0, 0), (3, 5, 2), (1, 31, 7), (2, 17, 4)]:
        flat = sum(c * s for c, s in zip(view.coords(reg, lane, warp), strides))
        assert flat == blocked.coords(reg, lane, warp)[0]
    assert parse_layout(str(layout)) == layout
    # a smaller block of the same rank wraps (replicates) along the shrunk dim
    narrow = layout.linear((16, 1, 32))
    assert narrow.num_registers == view.num_registers
    # and a broadcast of that back to the full block repeats it in registers
    wide = LinearEncodingLayout(narrow.shape, narrow.registers, narrow.lanes, narrow.warps).linear((16, 2, 32))
    assert wide.num_registers == 2 * narrow.num_registers
    assert sorted(wide.coords(r, 3, 1) for r in range(wide.num_registers)) == sorted(
        narrow.coords(r, 3, 1)[:1] + (half,) + narrow.coords(r, 3, 1)[2:]
        for r in range(narrow.num_registers) for half in (0, 1))


def test_reshaped_rejects_a_different_number_of_elements():
    blocked = BlockedLayout((4,), (32,), (8,), (0,)).linear((1024,))
    assert reshaped(blocked, (16, 2, 16)) is None


def _reshapes_and_conversions(fn, constexprs: dict, num_warps: int) -> tuple[list[int], int, str]:
    """(scratch bytes of each reshape, number of layout conversions, kernel body) after the GPU passes."""
    signature = {"X": "*i32", "Y": "*i32", **{name: "constexpr" for name in constexprs}}
    if fn is sort_with_index_kernel:
        signature.update(X="*fp32", Y="*fp32", Positions="*i32")
    module = make_ir(ASTSource(fn, signature, constexprs), GPUTarget("cuda", 90, 32), {"num_warps": num_warps})
    source, _, _ = generate_cuda(module, 90, {"num_warps": num_warps})
    ops = list(module.kernel.walk())
    reshapes = [move_scratch_bytes(op) for op in ops if op.name == "reshape"]
    return reshapes, sum(op.name == "convert_layout" for op in ops), _kernel_body(source)


@pytest.mark.parametrize("fn, constexprs, num_warps", [
    (bitonic_sort_kernel, {"LOG_N": 10}, 8),
    (sort_with_index_kernel, {"LOG_N": 10}, 8),
    (sort_with_index_kernel, {"LOG_N": 11}, 16),
    (tl_sort_kernel, {"N": 2048}, 4),
])
def test_sort_reshapes_move_no_data(fn, constexprs, num_warps):
    reshapes, conversions, body = _reshapes_and_conversions(fn, constexprs, num_warps)
    assert reshapes and all(nbytes == 0 for nbytes in reshapes)
    assert conversions == 0
    # Only the sums whose pair axis crosses warps meet at barriers (two each).
    sums = body.count("tt_wpos")
    assert body.count("__syncthreads()") <= 2 * sums


@pytest.mark.parametrize("fn, constexprs", [(bitonic_sort_kernel, {"LOG_N": 8}),
                                             (sort_with_index_kernel, {"LOG_N": 8}), (tl_sort_kernel, {"N": 256})])
def test_sort_layouts_pass_the_debug_verifier(fn, constexprs):
    # a blocked layout and a reshape's linear encoding with the same map count as one
    signature = {"X": "*i32", "Y": "*i32", **{name: "constexpr" for name in constexprs}}
    if fn is sort_with_index_kernel:
        signature.update(X="*fp32", Y="*fp32", Positions="*i32")
    module = make_ir(ASTSource(fn, signature, constexprs), GPUTarget("cuda", 90, 32), {"num_warps": 4})
    source, _, _ = generate_cuda(module, 90, {"num_warps": 4, "debug": True})
    assert "__global__" in source


def test_sort_with_index_source_stays_proportional():
    # 55 compare-and-swap steps of 1024 elements over 8 warps: 2 x 4 per-register
    # sums, compares and selects each (about 500 KB of kernel before reshapes kept
    # their registers and `#line` its file name, 330 KB after).
    _, _, body = _reshapes_and_conversions(sort_with_index_kernel, {"LOG_N": 10}, 8)
    assert len(body) < 360_000, f"{len(body)} bytes of kernel"
    source, _ = _generate(sort_with_index_kernel, {"LOG_N": 10}, 8)
    # the 220 sums share one combine function per element type
    assert source.count("void tt_combine") <= 3


def test_tl_sort_source_stays_small():
    # 115 KB and 42 barriers before reshapes kept their registers, 88 KB and 24 after
    source, _ = _generate(tl_sort_kernel, {"N": 1024}, 8)
    body = _kernel_body(source)
    assert len(body) < 95_000, f"{len(body)} bytes of kernel for tl.sort of 1024"
    assert body.count("__syncthreads()") <= 24


def test_line_directives_name_the_file_once_per_change():
    source, _ = _generate(bitonic_sort_kernel, {"LOG_N": 6}, 1)
    body = _kernel_body(source)
    full = [line for line in body.splitlines() if line.startswith("#line") and '"' in line]
    short = [line for line in body.splitlines() if line.startswith("#line") and '"' not in line]
    assert full and short
    assert len(full) < len(short)


@needs_gxx
@pytest.mark.parametrize("fn, constexprs, num_warps", [
    (bitonic_sort_kernel, {"LOG_N": 8}, 4),
    (sort_with_index_kernel, {"LOG_N": 7}, 2),
    (bitonic_sort_kernel, {"LOG_N": 5}, 1),
    (tl_sort_kernel, {"N": 128}, 2),
])
def test_sorts_run_on_the_emulator(fn, constexprs, num_warps):
    source, metadata = _generate(fn, constexprs, num_warps)
    n = 2 ** constexprs["LOG_N"] if "LOG_N" in constexprs else constexprs["N"]
    rng = np.random.default_rng(n + num_warps)
    x = rng.integers(-1000, 1000, size=n, dtype=np.int32)
    y = np.full(n, 7777, dtype=np.int32)
    if fn is sort_with_index_kernel:
        x = rng.permutation(n).astype(np.float32) - n / 2  # distinct keys: one right order of positions
        y = np.full(n, np.nan, dtype=np.float32)
        positions = np.full(n, -1, dtype=np.int32)
        cuda_emulator.Emulator(source, num_warps, metadata["shared"]).launch((1,), x, y, positions)
        np.testing.assert_array_equal(positions, np.argsort(x))
    else:
        cuda_emulator.Emulator(source, num_warps, metadata["shared"]).launch((1,), x, y)
    np.testing.assert_array_equal(y, np.sort(x))
