"""Layouts map (register, lane, warp) to element coordinates: every element of the
block is covered, exactly as often as the replication the layout implies."""

import itertools
from collections import Counter

import numpy as np
import pytest

from tritone.ir.layouts import (
    BlockedLayout,
    DotOperandLayout,
    NvidiaMmaLayout,
    SliceLayout,
    SwizzledSharedLayout,
    default_blocked_layout,
    parse_layout,
)

SHAPES_1D = [(1,), (2,), (16,), (32,), (64,), (128,), (256,), (1024,), (4096,)]
SHAPES_2D = [(1, 1), (1, 64), (64, 1), (2, 8), (16, 16), (32, 64), (64, 32), (128, 128), (8, 256), (256, 4)]


def _coverage(layout, shape):
    linear = layout.linear(shape)
    table = linear.table()
    assert table.shape == (linear.num_registers, 32, layout.num_warps, len(shape))
    flat = table.reshape(-1, len(shape))
    assert (flat >= 0).all() and (flat < np.asarray(shape)).all()
    counts = Counter(map(tuple, flat.tolist()))
    # the table and the one-element function agree
    rng = np.random.default_rng(len(counts))
    for _ in range(8):
        reg, lane, warp = int(rng.integers(linear.num_registers)), int(rng.integers(32)), int(
            rng.integers(layout.num_warps))
        assert linear.coords(reg, lane, warp) == tuple(table[reg, lane, warp].tolist())
    return linear, counts


def _blocked_reference(layout, shape, reg, lane, warp):
    """The blocked mapping written out directly, independent of the GF(2) form."""
    rank = len(shape)
    spt, tpw, wpc, order = layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta, layout.order
    lane_idx, warp_idx = [0] * rank, [0] * rank
    for d in order:
        lane_idx[d] = lane % tpw[d]
        lane //= tpw[d]
        warp_idx[d] = warp % wpc[d]
        warp //= wpc[d]
    within, reps = [0] * rank, [0] * rank
    per_thread = 1
    for s in spt:
        per_thread *= s
    inner, outer = reg % per_thread, reg // per_thread
    for d in order:
        within[d] = inner % spt[d]
        inner //= spt[d]
    tile = layout.tile()
    for d in order:
        n = max(1, shape[d] // tile[d])
        reps[d] = outer % n
        outer //= n
    return tuple((reps[d] * tile[d] + warp_idx[d] * spt[d] * tpw[d] + lane_idx[d] * spt[d] + within[d]) % shape[d]
                 for d in range(rank))


def _random_blocked(rng, rank, num_warps):
    def split(total):
        parts = [1] * rank
        for _ in range(total.bit_length() - 1):
            parts[rng.integers(rank)] *= 2
        return tuple(parts)

    spt = tuple(int(2 ** rng.integers(0, 3)) for _ in range(rank))
    order = tuple(int(i) for i in rng.permutation(rank))
    return BlockedLayout(spt, split(32), split(num_warps), order)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_blocked_matches_direct_formula_and_covers_each_element(num_warps):
    rng = np.random.default_rng(1000 + num_warps)
    for rank, shapes in ((1, SHAPES_1D), (2, SHAPES_2D)):
        for _ in range(6):
            layout = _random_blocked(rng, rank, num_warps)
            for shape in shapes:
                linear, counts = _coverage(layout, shape)
                assert set(counts) == set(itertools.product(*(range(s) for s in shape)))
                # every element is held equally often: the replication factor
                total = linear.num_registers * 32 * num_warps
                numel = int(np.prod(shape))
                assert set(counts.values()) == {total // numel}
                for _ in range(16):
                    reg = int(rng.integers(linear.num_registers))
                    lane, warp = int(rng.integers(32)), int(rng.integers(num_warps))
                    assert linear.coords(reg, lane, warp) == _blocked_reference(layout, shape, reg, lane, warp)


def test_blocked_wrapping_and_replication_counts():
    layout = BlockedLayout((4,), (32,), (4,), (0,))
    assert layout.num_registers((512,)) == 4
    assert layout.num_registers((2048,)) == 16  # the 512-element tile four times
    small = layout.linear((64,))
    assert small.num_registers == 4
    # 64 elements over 4 regs x 32 lanes x 4 warps: lanes 16..31 and warps 1..3 replicate
    assert small.replicated_lane_mask() == 0b10000
    assert small.replicated_warp_mask() == 0b11
    tiny = layout.linear((2,))
    assert tiny.duplicate_register_mask() == 0b10
    assert layout.linear((2048,)).contiguous_registers(0) == 4


def test_three_d_blocked_covers():
    layout = BlockedLayout((1, 2, 2), (2, 4, 4), (2, 1, 2), (2, 1, 0))
    for shape in [(2, 8, 8), (4, 4, 16), (1, 16, 2), (8, 8, 8)]:
        linear, counts = _coverage(layout, shape)
        assert len(counts) == int(np.prod(shape))
        assert len(set(counts.values())) == 1


@pytest.mark.parametrize("dim", [0, 1])
def test_slice_is_parent_with_dim_dropped(dim):
    parent = BlockedLayout((2, 4), (4, 8), (2, 2), (1, 0))
    sliced = SliceLayout(dim, parent)
    for n in (1, 8, 16, 64, 256):
        shape = (n,)
        linear, counts = _coverage(sliced, shape)
        assert set(counts) == {(i,) for i in range(n)}
        assert len(set(counts.values())) == 1
        # each thread holds the parent's elements of one slice, without the dim
        full = [8, 8]
        full[1 - dim] = n
        parent_linear = parent.linear(tuple(full))
        for lane in range(32):
            for warp in range(4):
                mine = set(map(tuple, linear.table()[:, lane, warp].tolist()))
                theirs = {(c[1 - dim],) for c in parent_linear.table()[:, lane, warp].tolist()}
                assert mine == theirs


def test_slice_of_slice():
    parent = BlockedLayout((1, 2, 4), (2, 2, 8), (1, 2, 2), (2, 1, 0))
    inner = SliceLayout(1, SliceLayout(0, parent))
    _, counts = _coverage(inner, (32,))
    assert len(counts) == 32


def _mma_fragment_reference(reg, lane, warp, warps_per_cta, shape):
    g, t = lane >> 2, lane & 3
    wn = warps_per_cta[1]
    wr, wc = warp // wn, warp % wn
    i, rep = reg & 3, reg >> 2
    row = g + 8 * (i >> 1)
    col = 2 * t + (i & 1)
    reps_n = max(1, shape[1] // (8 * wn))
    rep_m, rep_n = rep // reps_n, rep % reps_n
    return ((row + 16 * wr + 16 * warps_per_cta[0] * rep_m) % shape[0],
            (col + 8 * wc + 8 * wn * rep_n) % shape[1])


@pytest.mark.parametrize("warps", [(1, 1), (2, 2), (4, 1), (1, 4), (4, 2)])
def test_mma_accumulator_fragments(warps):
    layout = NvidiaMmaLayout((2, 0), warps, (16, 8))
    for shape in [(16, 8), (64, 64), (128, 32), (32, 128)]:
        linear, counts = _coverage(layout, shape)
        assert len(counts) == shape[0] * shape[1]
        table = linear.table()
        for reg in range(linear.num_registers):
            for lane in range(0, 32, 5):
                for warp in range(layout.num_warps):
                    expected = _mma_fragment_reference(reg, lane, warp, warps, shape)
                    assert tuple(table[reg, lane, warp].tolist()) == expected


@pytest.mark.parametrize("k_width", [1, 2, 4])
def test_dot_operand_a_fragments_match_ptx(k_width):
    """One m16n8k(8*k_width) A tile in one warp, PTX_FACTS 1.2's formulas."""
    parent = NvidiaMmaLayout((2, 0), (1, 1), (16, 8))
    layout = DotOperandLayout(0, parent, k_width)
    shape = (16, 8 * k_width)
    linear, counts = _coverage(layout, shape)
    assert len(counts) == shape[0] * shape[1] and set(counts.values()) == {1}
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(linear.num_registers):
            if k_width == 1:  # tf32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
                expected = (g + 8 * (i & 1), t + 4 * (i >> 1))
            else:
                group = i // k_width
                expected = (g + 8 * (group & 1), k_width * t + i % k_width + 4 * k_width * (group >> 1))
            assert linear.coords(i, lane, 0) == expected


@pytest.mark.parametrize("k_width", [1, 2, 4])
def test_dot_operand_b_fragments_match_ptx(k_width):
    parent = NvidiaMmaLayout((2, 0), (1, 1), (16, 8))
    layout = DotOperandLayout(1, parent, k_width)
    shape = (8 * k_width, 8)
    linear, counts = _coverage(layout, shape)
    assert len(counts) == shape[0] * shape[1]
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(linear.num_registers):
            group = i // k_width
            assert linear.coords(i, lane, 0) == (k_width * t + i % k_width + 4 * k_width * group, g)


def test_dot_operand_replicates_across_other_warps():
    parent = NvidiaMmaLayout((2, 0), (2, 2), (16, 8))
    a = DotOperandLayout(0, parent, 2)
    linear, counts = _coverage(a, (64, 32))
    assert len(counts) == 64 * 32
    assert set(counts.values()) == {2}  # the two warps along N hold the same A rows
    assert linear.replicated_warp_mask() == 0b01


def test_swizzled_shared_is_a_permutation():
    for vec, per_phase, max_phase in [(8, 1, 8), (8, 2, 4), (4, 1, 1), (2, 4, 2)]:
        layout = SwizzledSharedLayout(vec, per_phase, max_phase, (1, 0))
        shape = (32, 64)
        offsets = {layout.offset(shape, (r, c)) for r in range(32) for c in range(64)}
        assert offsets == set(range(32 * 64))
    # the 128-byte swizzle: chunk c of row r stored at chunk c ^ (r % 8)
    layout = SwizzledSharedLayout(8, 1, 8, (1, 0))
    assert layout.offset((16, 64), (3, 8 * 2 + 5)) == 3 * 64 + 8 * (2 ^ 3) + 5


def test_layouts_print_as_written_and_parse_back():
    blocked = BlockedLayout((1, 4), (8, 4), (4, 1), (1, 0))
    assert str(blocked) == ("BlockedLayout(size_per_thread=[1, 4], threads_per_warp=[8, 4], "
                            "warps_per_cta=[4, 1], order=[1, 0])")
    mma = NvidiaMmaLayout((2, 0), (2, 2), (16, 8))
    for layout in [blocked, SliceLayout(1, blocked), mma, DotOperandLayout(0, mma, 2),
                   SwizzledSharedLayout(8, 1, 8, (1, 0))]:
        assert parse_layout(str(layout)) == layout
        assert hash(parse_layout(str(layout))) == hash(layout)
    with pytest.raises(ValueError):
        parse_layout("BlockedLayout([1], [32], [4], [0])")
    with pytest.raises(ValueError):
        BlockedLayout((1,), (16,), (4,), (0,))


def test_default_blocked_layout_spreads_lanes_fastest_first():
    assert default_blocked_layout((4, 256), 4) == BlockedLayout((1, 1), (1, 32), (1, 4), (1, 0))
    assert default_blocked_layout((64, 8), 4) == BlockedLayout((1, 1), (4, 8), (4, 1), (1, 0))
    assert default_blocked_layout((16,), 4) == BlockedLayout((1,), (32,), (4,), (0,))
    coalesced = default_blocked_layout((64, 64), 8, order=(0, 1), size_per_thread=(4, 1))
    assert coalesced.threads_per_warp == (16, 2) and coalesced.warps_per_cta == (1, 8)
