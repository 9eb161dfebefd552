"""Layouts: where each element of a block lives on the GPU.

A distributed layout says which thread holds which element: for a block of a
given shape it maps (register index, lane, warp) to the element's coordinates.
Every layout here is a small frozen value with the parameters a person names
(`BlockedLayout(size_per_thread=..., threads_per_warp=..., warps_per_cta=...,
order=...)`), printed the way it is written, and has one function doing that
mapping, `linear(shape)`, which returns a `LinearLayout`.

A `LinearLayout` is linear over GF(2): each bit of the register index, of the
lane and of the warp has a basis coordinate vector, and the coordinates of
(reg, lane, warp) are the XOR of the bases of its set bits. This is the form
codegen, conversions, reductions and vectorisation are derived from. All block
dimensions are powers of two, so:

- a shape smaller than what the layout covers makes some bases zero: those
  bits *replicate* the element (lanes or warps holding the same element, or
  duplicate registers);
- a larger shape adds register bases: each thread holds the layout's tile
  several times (*wrapping*).

`SwizzledSharedLayout` (and `NvmmaSharedLayout`, the tiles `wgmma` reads) are
not distributed over threads: they map element coordinates to an element offset
in shared memory.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass
from typing import Callable, Union

import numpy as np

WARP_SIZE = 32

Coord = tuple[int, ...]


def _is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def _log2(n: int) -> int:
    if not _is_pow2(n):
        raise ValueError(f"{n} is not a power of two")
    return n.bit_length() - 1


def _xor(a: Coord, b: Coord) -> Coord:
    return tuple(x ^ y for x, y in zip(a, b))


def _check_shape(shape: tuple[int, ...], rank: int, layout: object) -> tuple[int, ...]:
    shape = tuple(int(s) for s in shape)
    if len(shape) != rank:
        raise ValueError(f"{layout} has rank {rank}, shape {list(shape)} has rank {len(shape)}")
    for size in shape:
        if not _is_pow2(size):
            raise ValueError(f"block dims must be powers of two, got shape {list(shape)}")
    return shape


@dataclass(frozen=True)
class LinearLayout:
    """(register, lane, warp) -> coordinates of a block of `shape`, linear over GF(2).

    `registers`, `lanes`, `warps` hold one basis coordinate tuple per bit of the
    respective index; a zero basis means that bit replicates elements."""

    shape: tuple[int, ...]
    registers: tuple[Coord, ...]
    lanes: tuple[Coord, ...]
    warps: tuple[Coord, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_registers(self) -> int:
        return 1 << len(self.registers)

    @property
    def num_lanes(self) -> int:
        return 1 << len(self.lanes)

    @property
    def num_warps(self) -> int:
        return 1 << len(self.warps)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def _combine(self, bases: tuple[Coord, ...], index: int) -> Coord:
        out = (0,) * self.rank
        bit = 0
        while index:
            if index & 1:
                out = _xor(out, bases[bit])
            index >>= 1
            bit += 1
        return out

    def register_coords(self, reg: int) -> Coord:
        """The coordinates register `reg` contributes (those of lane 0 of warp 0)."""
        return self._register_table[reg]

    def mapped_register_coords(self, linear_map: Callable[[Coord], Coord]) -> list[Coord]:
        """`linear_map(register_coords(r))` for every register r, where the map is
        linear over GF(2) as layouts are (broadcast, expand, permute, reshape): built
        from the images of the register bases alone."""
        table = [linear_map((0,) * self.rank)]
        for basis in self.registers:
            image = linear_map(basis)
            table += [_xor(coords, image) for coords in table]
        return table

    @functools.cached_property
    def _register_table(self) -> tuple[Coord, ...]:
        # every register's coordinates at once: the code generator asks for them
        # once per register of every op it emits
        return tuple(self.mapped_register_coords(lambda coords: coords))

    def thread_coords(self, lane: int, warp: int) -> Coord:
        """The coordinates lane `lane` of warp `warp` adds to every register."""
        return _xor(self._combine(self.lanes, lane), self._combine(self.warps, warp))

    def coords(self, reg: int, lane: int, warp: int) -> Coord:
        """The element that register `reg` of lane `lane` in warp `warp` holds."""
        if not (0 <= reg < self.num_registers and 0 <= lane < self.num_lanes and 0 <= warp < self.num_warps):
            raise IndexError(f"({reg}, {lane}, {warp}) outside {self.num_registers} registers, "
                             f"{self.num_lanes} lanes, {self.num_warps} warps")
        return _xor(self.register_coords(reg), self.thread_coords(lane, warp))

    def table(self) -> np.ndarray:
        """Every coordinate at once: an int array [registers, lanes, warps, rank]."""

        def expand(bases: tuple[Coord, ...]) -> np.ndarray:
            out = np.zeros((1 << len(bases), self.rank), dtype=np.int64)
            for bit, basis in enumerate(bases):
                half = 1 << bit
                out[half: 2 * half] = out[:half] ^ np.asarray(basis, dtype=np.int64)
            return out

        regs, lanes, warps = expand(self.registers), expand(self.lanes), expand(self.warps)
        return regs[:, None, None, :] ^ lanes[None, :, None, :] ^ warps[None, None, :, :]

    def replicated_lane_mask(self) -> int:
        """Lane bits whose basis is zero (lanes differing only there hold the same elements)."""
        return sum(1 << i for i, b in enumerate(self.lanes) if not any(b))

    def replicated_warp_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.warps) if not any(b))

    def duplicate_register_mask(self) -> int:
        """Register bits whose basis is zero (such registers repeat a lower one)."""
        return sum(1 << i for i, b in enumerate(self.registers) if not any(b))

    def contiguous_registers(self, dim: int) -> int:
        """How many consecutive registers (from every multiple of that count) hold
        consecutive elements along `dim`: the leading register bases 1, 2, 4, ... along `dim`."""
        run = 1
        for basis in self.registers:
            expected = tuple(run if d == dim else 0 for d in range(self.rank))
            if basis != expected:
                break
            run *= 2
        return run


class DistributedLayout:
    """A layout that spreads a block over the registers of the threads of a CTA."""

    rank: int

    def linear(self, shape: tuple[int, ...]) -> LinearLayout:
        """The (register, lane, warp) -> coordinates map for a block of `shape`."""
        return _linear_cached(self, tuple(shape))

    def _build_linear(self, shape: tuple[int, ...]) -> LinearLayout:
        raise NotImplementedError

    def num_registers(self, shape: tuple[int, ...]) -> int:
        """Registers each thread holds for a block of `shape`."""
        return self.linear(shape).num_registers

    def coords(self, shape: tuple[int, ...], reg: int, lane: int, warp: int) -> Coord:
        """The element of a `shape` block that register `reg` of `lane` in `warp` holds."""
        return self.linear(shape).coords(reg, lane, warp)

    @property
    def num_warps(self) -> int:
        raise NotImplementedError


@functools.lru_cache(maxsize=4096)
def _linear_cached(layout: DistributedLayout, shape: tuple[int, ...]) -> LinearLayout:
    return layout._build_linear(shape)


def _reduce_mod_shape(bases: list[Coord], shape: tuple[int, ...]) -> tuple[Coord, ...]:
    # Coordinates are taken modulo the shape: a basis reaching past a dim of a
    # smaller block wraps onto it, i.e. replicates (every basis is one power of two per dim).
    return tuple(tuple(c if c < s else 0 for c, s in zip(b, shape)) for b in bases)


def _unit(rank: int, dim: int, value: int) -> Coord:
    return tuple(value if d == dim else 0 for d in range(rank))


@dataclass(frozen=True)
class BlockedLayout(DistributedLayout):
    """Each thread holds `size_per_thread` contiguous elements; `threads_per_warp`
    lanes and `warps_per_cta` warps tile the block; `order` lists dims fastest first.

    Along dim d the layout covers `size_per_thread[d] * threads_per_warp[d] *
    warps_per_cta[d]` elements; larger blocks repeat that tile in more registers."""

    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]

    def __post_init__(self):
        for name in ("size_per_thread", "threads_per_warp", "warps_per_cta", "order"):
            object.__setattr__(self, name, tuple(int(v) for v in getattr(self, name)))
        rank = len(self.order)
        if not (len(self.size_per_thread) == len(self.threads_per_warp) == len(self.warps_per_cta) == rank):
            raise ValueError(f"BlockedLayout parameters of different ranks: {self}")
        if sorted(self.order) != list(range(rank)):
            raise ValueError(f"BlockedLayout order {self.order} is not a permutation")
        for v in self.size_per_thread + self.threads_per_warp + self.warps_per_cta:
            if not _is_pow2(v):
                raise ValueError(f"BlockedLayout parameters must be powers of two: {self}")
        if math.prod(self.threads_per_warp) != WARP_SIZE:
            raise ValueError(f"threads_per_warp {self.threads_per_warp} must multiply to {WARP_SIZE}")

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def num_warps(self) -> int:
        return math.prod(self.warps_per_cta)

    def tile(self) -> tuple[int, ...]:
        """Elements covered by one pass of all threads, per dim."""
        return tuple(s * t * w for s, t, w in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta))

    def _build_linear(self, shape: tuple[int, ...]) -> LinearLayout:
        shape = _check_shape(shape, self.rank, self)
        rank = self.rank
        registers: list[Coord] = []
        lanes: list[Coord] = []
        warps: list[Coord] = []
        for d in self.order:
            registers += [_unit(rank, d, 1 << i) for i in range(_log2(self.size_per_thread[d]))]
        for d in self.order:
            lanes += [_unit(rank, d, self.size_per_thread[d] << i) for i in range(_log2(self.threads_per_warp[d]))]
        for d in self.order:
            step = self.size_per_thread[d] * self.threads_per_warp[d]
            warps += [_unit(rank, d, step << i) for i in range(_log2(self.warps_per_cta[d]))]
        tile = self.tile()
        for d in self.order:
            repeats = max(1, shape[d] // tile[d])
            registers += [_unit(rank, d, tile[d] << i) for i in range(_log2(repeats))]
        return LinearLayout(shape, _reduce_mod_shape(registers, shape), _reduce_mod_shape(lanes, shape),
                            _reduce_mod_shape(warps, shape))

    def __str__(self) -> str:
        return (f"BlockedLayout(size_per_thread={list(self.size_per_thread)}, "
                f"threads_per_warp={list(self.threads_per_warp)}, warps_per_cta={list(self.warps_per_cta)}, "
                f"order={list(self.order)})")

    __repr__ = __str__


@dataclass(frozen=True)
class SliceLayout(DistributedLayout):
    """The layout of a block reduced along `dim` of a block in `parent`: the
    parent's map with that coordinate dropped. Threads that differed only along
    `dim` now hold the same elements; registers that did are dropped."""

    dim: int
    parent: DistributedLayout

    def __post_init__(self):
        if not 0 <= self.dim < self.parent.rank:
            raise ValueError(f"SliceLayout dim {self.dim} outside parent rank {self.parent.rank}")

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    def parent_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(shape[: self.dim]) + (1,) + tuple(shape[self.dim:])

    def _build_linear(self, shape: tuple[int, ...]) -> LinearLayout:
        shape = _check_shape(shape, self.rank, self)
        parent = self.parent.linear(self.parent_shape(shape))

        def drop(b: Coord) -> Coord:
            return b[: self.dim] + b[self.dim + 1:]

        registers = tuple(drop(b) for b in parent.registers if any(drop(b)))
        return LinearLayout(shape, registers, tuple(drop(b) for b in parent.lanes),
                            tuple(drop(b) for b in parent.warps))

    def __str__(self) -> str:
        return f"SliceLayout(dim={self.dim}, parent={self.parent})"

    __repr__ = __str__


def _warp_bases(rank: int, warps_per_cta: tuple[int, ...], tile: tuple[int, ...],
                order: tuple[int, ...]) -> list[Coord]:
    bases: list[Coord] = []
    for d in order:
        bases += [_unit(rank, d, tile[d] << i) for i in range(_log2(warps_per_cta[d]))]
    return bases


def _repeat_bases(rank: int, shape: tuple[int, ...], covered: tuple[int, ...], order: tuple[int, ...]) -> list[Coord]:
    bases: list[Coord] = []
    for d in order:
        repeats = max(1, shape[d] // covered[d])
        bases += [_unit(rank, d, covered[d] << i) for i in range(_log2(repeats))]
    return bases


@dataclass(frozen=True)
class NvidiaMmaLayout(DistributedLayout):
    """Accumulator fragments of `mma.sync` m16n8 (version (2, 0)): each warp owns
    16x8 tiles (`instr_shape`, with a leading 1 for batched rank-3 blocks); warps
    are arranged by `warps_per_cta`, dim -1 fastest. Lane l holds rows g, g + 8 and
    columns 2t, 2t + 1 (g = l >> 2, t = l & 3) of each tile (PTX_FACTS 1.2)."""

    version: tuple[int, int]
    warps_per_cta: tuple[int, ...]
    instr_shape: tuple[int, ...]

    def __post_init__(self):
        object.__setattr__(self, "version", tuple(self.version))
        object.__setattr__(self, "warps_per_cta", tuple(self.warps_per_cta))
        object.__setattr__(self, "instr_shape", tuple(self.instr_shape))
        if self.version[0] != 2:
            raise ValueError(f"only mma version 2 layouts exist so far, got {self.version}")
        if len(self.warps_per_cta) not in (2, 3) or len(self.instr_shape) != len(self.warps_per_cta):
            raise ValueError(f"NvidiaMmaLayout needs rank 2 or 3 parameters: {self}")
        if tuple(self.instr_shape[-2:]) != (16, 8):
            raise ValueError(f"mma v2 tiles are 16x8, got instr_shape {self.instr_shape}")

    @property
    def rank(self) -> int:
        return len(self.warps_per_cta)

    @property
    def num_warps(self) -> int:
        return math.prod(self.warps_per_cta)

    def _order(self) -> tuple[int, ...]:
        return tuple(reversed(range(self.rank)))

    def _build_linear(self, shape: tuple[int, ...]) -> LinearLayout:
        shape = _check_shape(shape, self.rank, self)
        rank = self.rank
        row, col = rank - 2, rank - 1
        registers = [_unit(rank, col, 1), _unit(rank, row, 8)]
        lanes = [_unit(rank, col, 2), _unit(rank, col, 4), _unit(rank, row, 1), _unit(rank, row, 2),
                 _unit(rank, row, 4)]
        tile = (1,) * (rank - 2) + (16, 8)
        warps = _warp_bases(rank, self.warps_per_cta, tile, self._order())
        covered = tuple(t * w for t, w in zip(tile, self.warps_per_cta))
        registers += _repeat_bases(rank, shape, covered, self._order())
        return LinearLayout(shape, _reduce_mod_shape(registers, shape), _reduce_mod_shape(lanes, shape),
                            _reduce_mod_shape(warps, shape))

    def __str__(self) -> str:
        return (f"NvidiaMmaLayout(version={list(self.version)}, warps_per_cta={list(self.warps_per_cta)}, "
                f"instr_shape={list(self.instr_shape)})")

    __repr__ = __str__


@dataclass(frozen=True)
class DotOperandLayout(DistributedLayout):
    """Register fragments of operand `op_idx` (0 = A [M, K], 1 = B [K, N]) of an
    mma whose accumulator is `parent`; `k_width` consecutive K elements per
    thread per register group (2 for 16-bit, 4 for 8-bit, 1 for 32-bit inputs).

    A: lane l holds rows g, g + 8 and K columns `k_width*t .. + k_width - 1`, then
    the same 4*k_width further; B: column n = g and the same K pattern. Warps that
    split the other operand's dim replicate the fragment (PTX_FACTS 1.2)."""

    op_idx: int
    parent: NvidiaMmaLayout
    k_width: int

    def __post_init__(self):
        if self.op_idx not in (0, 1):
            raise ValueError(f"DotOperandLayout op_idx must be 0 or 1, got {self.op_idx}")
        if self.k_width not in (1, 2, 4, 8):
            raise ValueError(f"DotOperandLayout k_width must be 1, 2, 4 or 8, got {self.k_width}")

    @property
    def rank(self) -> int:
        return self.parent.rank

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    def _build_linear(self, shape: tuple[int, ...]) -> LinearLayout:
        shape = _check_shape(shape, self.rank, self)
        rank = self.rank
        kw = self.k_width
        if self.op_idx == 0:
            mn, k = rank - 2, rank - 1
        else:
            k, mn = rank - 2, rank - 1
        registers = [_unit(rank, k, 1 << i) for i in range(_log2(kw))]
        lanes = [_unit(rank, k, kw), _unit(rank, k, 2 * kw)]
        lanes += [_unit(rank, mn, 1), _unit(rank, mn, 2), _unit(rank, mn, 4)]
        if self.op_idx == 0:
            registers += [_unit(rank, mn, 8), _unit(rank, k, 4 * kw)]
            tile = {mn: 16, k: 8 * kw}
        else:
            registers += [_unit(rank, k, 4 * kw)]
            tile = {mn: 8, k: 8 * kw}
        tile_shape = tuple(tile.get(d, 1) for d in range(rank))
        # The parent's warps split M and N; along this operand's K dim they replicate.
        warp_tile = list(tile_shape)
        warps: list[Coord] = []
        parent_order = tuple(reversed(range(rank)))
        for d in parent_order:
            for i in range(_log2(self.parent.warps_per_cta[d])):
                warps.append(_unit(rank, d, tile_shape[d] << i) if d != k else (0,) * rank)
        covered = tuple(warp_tile[d] * (self.parent.warps_per_cta[d] if d != k else 1) for d in range(rank))
        registers += _repeat_bases(rank, shape, covered, parent_order)
        return LinearLayout(shape, _reduce_mod_shape(registers, shape), _reduce_mod_shape(lanes, shape),
                            _reduce_mod_shape(warps, shape))

    def __str__(self) -> str:
        return f"DotOperandLayout(op_idx={self.op_idx}, parent={self.parent}, k_width={self.k_width})"

    __repr__ = __str__


@dataclass(frozen=True)
class LinearEncodingLayout(DistributedLayout):
    """A distributed layout given by its bases for a block of `shape`: the layout
    a reshape gives its result when every thread keeps the elements it held
    (`reshaped`). As for a blocked layout, a smaller block of the same rank
    wraps coordinates past a dim to zero (those bits replicate), and a larger
    one (a broadcast of it) repeats the block in more registers."""

    shape: tuple[int, ...]
    registers: tuple[Coord, ...]
    lanes: tuple[Coord, ...]
    warps: tuple[Coord, ...]

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        for name in ("registers", "lanes", "warps"):
            object.__setattr__(self, name, tuple(tuple(int(c) for c in b) for b in getattr(self, name)))
        _check_shape(self.shape, len(self.shape), self)
        for basis in self.registers + self.lanes + self.warps:
            if len(basis) != len(self.shape) or any(c < 0 or c >= s or c & (c - 1) for c, s in zip(basis, self.shape)):
                raise ValueError(f"LinearEncodingLayout basis {list(basis)} is not a power-of-two "
                                 f"coordinate inside shape {list(self.shape)}")
        if len(self.lanes) != _log2(WARP_SIZE):
            raise ValueError(f"LinearEncodingLayout needs {_log2(WARP_SIZE)} lane bases, got {len(self.lanes)}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_warps(self) -> int:
        return 1 << len(self.warps)

    def _build_linear(self, shape: tuple[int, ...]) -> LinearLayout:
        shape = _check_shape(shape, self.rank, self)
        registers = _reduce_mod_shape(list(self.registers), shape)
        if shape != self.shape:
            # registers that now repeat a lower one are dropped, as a slice drops them
            registers = tuple(b for b in registers if any(b))
        for d, (size, own) in enumerate(zip(shape, self.shape)):
            registers += tuple(_unit(self.rank, d, own << i) for i in range(_log2(max(1, size // own))))
        return LinearLayout(shape, registers, _reduce_mod_shape(list(self.lanes), shape),
                            _reduce_mod_shape(list(self.warps), shape))

    def __str__(self) -> str:
        def bases(bs: tuple[Coord, ...]) -> str:
            return "[" + ", ".join(str(list(b)) for b in bs) + "]"

        return (f"LinearEncodingLayout(shape={list(self.shape)}, registers={bases(self.registers)}, "
                f"lanes={bases(self.lanes)}, warps={bases(self.warps)})")

    __repr__ = __str__


def reshaped(linear: LinearLayout, shape: tuple[int, ...]) -> LinearEncodingLayout | None:
    """The layout of `linear`'s block reshaped (row-major order kept) to `shape`
    in which every thread holds, in the same registers, the elements it held:
    each basis moves to the coordinates of the same row-major index. None when
    a basis is not a power of two in the new shape (only from non-power-of-two
    shapes) or the shapes hold different numbers of elements."""
    shape = tuple(shape)
    if math.prod(shape) != linear.numel or not all(_is_pow2(s) for s in shape):
        return None
    src_strides = [math.prod(linear.shape[d + 1:]) for d in range(linear.rank)]
    dst_strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]

    def move(basis: Coord) -> Coord:
        index = sum(c * s for c, s in zip(basis, src_strides))
        return tuple((index // s) % n for s, n in zip(dst_strides, shape))

    try:
        return LinearEncodingLayout(shape, tuple(move(b) for b in linear.registers),
                                    tuple(move(b) for b in linear.lanes), tuple(move(b) for b in linear.warps))
    except ValueError:
        return None


@dataclass(frozen=True)
class SwizzledSharedLayout:
    """A shared-memory staging layout: row-major along `order` (fastest first),
    with `vec`-element chunks of the contiguous dim XOR-swizzled by the row:
    `phase = (row // per_phase) % max_phase`, chunk `c // vec` stored at
    `(c // vec) ^ phase` (PTX_FACTS 4)."""

    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, ...]

    def __post_init__(self):
        object.__setattr__(self, "order", tuple(self.order))
        for v in (self.vec, self.per_phase, self.max_phase):
            if not _is_pow2(v):
                raise ValueError(f"SwizzledSharedLayout parameters must be powers of two: {self}")

    @property
    def rank(self) -> int:
        return len(self.order)

    def offset(self, shape: tuple[int, ...], coords: Coord) -> int:
        """The element offset of `coords` in a buffer holding a `shape` block."""
        shape = _check_shape(shape, self.rank, self)
        inner = self.order[0]
        col = coords[inner]
        row = 0
        stride = 1
        for d in self.order[1:]:
            row += coords[d] * stride
            stride *= shape[d]
        phase = (row // self.per_phase) % self.max_phase
        chunks = max(1, shape[inner] // self.vec)
        chunk = ((col // self.vec) ^ phase) % chunks
        return row * shape[inner] + chunk * self.vec + col % self.vec

    def __str__(self) -> str:
        return (f"SwizzledSharedLayout(vec={self.vec}, per_phase={self.per_phase}, max_phase={self.max_phase}, "
                f"order={list(self.order)})")

    __repr__ = __str__


@dataclass(frozen=True)
class NvmmaSharedLayout(SwizzledSharedLayout):
    """A shared-memory tile in the form Hopper's tensor cores (`wgmma`) and copy
    engine read: the swizzle is the hardware's 128-, 64- or 32-byte mode
    (`vec` = 16 bytes of elements, `max_phase` 16-byte chunks per swizzle row,
    `per_phase = 128 / span bytes`; PTX_FACTS 4 and 10), and the contiguous dim is
    cut into columns of one swizzle span (`vec * max_phase` elements) stored one
    after the other, each with rows `span` bytes apart. A tile no wider than a
    span is laid out exactly as the `SwizzledSharedLayout` of the same parameters."""

    @property
    def span(self) -> int:
        """Elements of the contiguous dim in one swizzle row."""
        return self.vec * self.max_phase

    def offset(self, shape: tuple[int, ...], coords: Coord) -> int:
        shape = _check_shape(shape, self.rank, self)
        inner = self.order[0]
        width = min(self.span, shape[inner])
        column, col = divmod(coords[inner], width)
        rows = math.prod(shape[d] for d in self.order[1:])
        narrowed = shape[:inner] + (width,) + shape[inner + 1:]
        within = coords[:inner] + (col,) + coords[inner + 1:]
        return column * rows * width + super().offset(narrowed, within)

    def __str__(self) -> str:
        return (f"NvmmaSharedLayout(vec={self.vec}, per_phase={self.per_phase}, max_phase={self.max_phase}, "
                f"order={list(self.order)})")

    __repr__ = __str__


Layout = Union[BlockedLayout, SliceLayout, NvidiaMmaLayout, DotOperandLayout, LinearEncodingLayout,
               SwizzledSharedLayout, NvmmaSharedLayout]

_CONSTRUCTORS = {cls.__name__: cls for cls in (BlockedLayout, SliceLayout, NvidiaMmaLayout, DotOperandLayout,
                                               LinearEncodingLayout, SwizzledSharedLayout, NvmmaSharedLayout)}


def same_placement(a: object, b: object, shape: tuple[int, ...]) -> bool:
    """Whether layouts `a` and `b` put every element of a `shape` block in the same
    register, lane and warp (equal layouts, or a reshape's linear encoding of a
    blocked layout, say): a value in one is a value in the other, no conversion."""
    if a == b:
        return True
    if not isinstance(a, DistributedLayout) or not isinstance(b, DistributedLayout):
        return False
    return a.linear(tuple(shape)) == b.linear(tuple(shape))


def parse_layout(text: str) -> Layout:
    """The layout written as `text` (the form layouts print in)."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"cannot parse layout {text!r}: {exc.msg}") from None
    return _build_layout(tree, text)


def _build_layout(node: ast.AST, text: str):
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CONSTRUCTORS:
        if node.args:
            raise ValueError(f"layout {text!r}: write parameters as keywords")
        kwargs = {kw.arg: _build_layout(kw.value, text) for kw in node.keywords}
        try:
            return _CONSTRUCTORS[node.func.id](**kwargs)
        except TypeError as exc:
            raise ValueError(f"layout {text!r}: {exc}") from None
    if isinstance(node, (ast.List, ast.Tuple)):
        return tuple(_build_layout(e, text) for e in node.elts)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    raise ValueError(f"cannot parse layout {text!r}")


def default_blocked_layout(shape: tuple[int, ...], num_warps: int, order: tuple[int, ...] | None = None,
                           size_per_thread: tuple[int, ...] | None = None) -> BlockedLayout:
    """A blocked layout for `shape`: `size_per_thread` (1s by default) along
    `order` (row-major by default), lanes then warps spread over the dims fastest
    first as far as each dim has room; what is left over replicates along the
    slowest dim."""
    rank = len(shape)
    order = tuple(order) if order is not None else tuple(reversed(range(rank)))
    spt = tuple(size_per_thread) if size_per_thread is not None else (1,) * rank
    tpw = [1] * rank
    wpc = [1] * rank
    lanes_left = WARP_SIZE
    warps_left = num_warps
    for d in order:
        room = max(1, shape[d] // spt[d])
        lanes = min(room, lanes_left)
        tpw[d] = lanes
        lanes_left //= lanes
        room = max(1, room // lanes)
        warps = min(room, warps_left)
        wpc[d] = warps
        warps_left //= warps
    tpw[order[-1]] *= lanes_left
    wpc[order[-1]] *= warps_left
    return BlockedLayout(spt, tuple(tpw), tuple(wpc), order)
