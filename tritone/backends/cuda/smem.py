"""Shared memory allocation.

Two kinds of shared memory users:

- *scratch*: ops that move elements between threads (layout conversions,
  cross-warp reductions and scans, broadcasts of atomics' old values) use their
  bytes only while they run, between two barriers;
- *tiles*: `local_alloc` and `local_buffer` (the dot operands' staging tiles and
  the software pipeline's buffers, `dot/shared.py`) hold their bytes from their
  definition to the last use of the tile or of a view of it (`local_index`, a
  `permute` of a tile); a use inside a loop that the definition is outside of
  keeps them for the whole loop.

Each user gets an interval of program points, and users whose intervals
overlap get disjoint bytes (first fit, largest first). The offsets are
recorded as op attributes: `offset` on tile definitions, `scratch_offset` on
scratch users; the kernel's dynamic shared memory is the end of the highest
one, recorded as the module attribute `shared` (bytes, a multiple of 16).
"""

from __future__ import annotations

from dataclasses import dataclass

from tritone.ir.core import Function, Module, Operation, Value

from ...ir.layouts import NvmmaSharedLayout
from . import codegen  # noqa: F401  (registers each op's scratch size)
from .codegen_base import SCRATCH, SCRATCH_ALIGNMENT
from .dot.shared import TILE_DEFINING_OPS, is_shared_tile, tile_bytes

_LOOPS = ("for", "while")
_TILE_ALIGN = 128
# wgmma's and TMA's swizzle patterns repeat every 1024 bytes (128-byte mode) and
# assume a tile starts on a repeat (PTX_FACTS 4, 10)
_NVMMA_TILE_ALIGN = 1024
_SCRATCH_ALIGN = 16


@dataclass(frozen=True)
class SharedMemoryPlan:
    """`total`: bytes of dynamic shared memory the kernel needs; `largest`: the op
    needing the most; `offsets`: the byte offset of every user (op -> offset)."""

    total: int
    largest: Operation | None = None
    offsets: tuple[tuple[Operation, int], ...] = ()


@dataclass
class _User:
    op: Operation
    size: int
    start: int
    end: int
    align: int
    offset: int = -1


def tile_alignment(layout) -> int:
    """The byte alignment a shared tile of `layout` starts on."""
    return _NVMMA_TILE_ALIGN if isinstance(layout, NvmmaSharedLayout) else _TILE_ALIGN


def scratch_bytes(op: Operation) -> int:
    """Bytes of shared scratch memory `op` needs while it runs."""
    size = SCRATCH.get(op.name)
    return size(op) if size is not None else 0


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


class _Positions:
    """Program points: every op's index in a walk of the function, and for each
    loop the last index inside it."""

    def __init__(self, fn: Function):
        self.index: dict[int, int] = {}
        self.loop_end: dict[int, int] = {}
        for i, op in enumerate(fn.walk()):
            self.index[id(op)] = i
        for op in fn.walk():
            if op.name in _LOOPS:
                last = self.index[id(op)]
                for inner in op.walk():
                    last = max(last, self.index[id(inner)])
                self.loop_end[id(op)] = last

    def enclosing_loops(self, op: Operation) -> list[Operation]:
        loops = []
        region = op.parent
        while region is not None:
            owner = region.parent
            if not isinstance(owner, Operation):
                break
            if owner.name in _LOOPS:
                loops.append(owner)
            region = owner.parent
        return loops


def _tile_users(fn: Function, positions: _Positions) -> list[_User]:
    root_of: dict[Value, Operation] = {}
    users: list[_User] = []
    by_root: dict[int, _User] = {}
    for op in fn.walk():
        if op.name in TILE_DEFINING_OPS:
            root_of[op.results[0]] = op
            at = positions.index[id(op)]
            user = _User(op, tile_bytes(op.results[0].type), at, at, tile_alignment(op.results[0].type.layout))
            users.append(user)
            by_root[id(op)] = user
            continue
        for v in op.operands:
            root = root_of.get(v)
            if root is None:
                continue
            user = by_root[id(root)]
            end = positions.index[id(op)]
            outside = set(map(id, positions.enclosing_loops(root)))
            for loop in positions.enclosing_loops(op):
                if id(loop) not in outside:
                    end = max(end, positions.loop_end[id(loop)])
            user.end = max(user.end, end)
        # views of a tile keep the tile alive
        for r in op.results:
            if is_shared_tile(r) and op.operands and op.operands[0] in root_of:
                root_of[r] = root_of[op.operands[0]]
    return users


def _place(users: list[_User]) -> None:
    placed: list[_User] = []
    for user in sorted(users, key=lambda u: (-u.size, u.start)):
        live = sorted((p for p in placed if p.start <= user.end and user.start <= p.end), key=lambda p: p.offset)
        offset = 0
        for other in live:
            if offset < other.offset + other.size and other.offset < offset + user.size:
                offset = _align(other.offset + other.size, user.align)
        user.offset = offset
        placed.append(user)


def plan(fn: Function) -> SharedMemoryPlan:
    """The shared memory `fn` needs and where each user's bytes are."""
    positions = _Positions(fn)
    users = _tile_users(fn, positions)
    for op in fn.walk():
        size = scratch_bytes(op)
        if size > 0:
            at = positions.index[id(op)]
            align = SCRATCH_ALIGNMENT.get(op.name, _SCRATCH_ALIGN)
            if callable(align):
                align = align(op)
            users.append(_User(op, _align(size, _SCRATCH_ALIGN), at, at, align))
    _place(users)
    total = max((u.offset + u.size for u in users), default=0)
    largest = max(users, key=lambda u: u.size).op if users else None
    return SharedMemoryPlan(_align(total, 16), largest, tuple((u.op, u.offset) for u in users))


def run(module: Module, ctx=None) -> None:
    """Place every shared memory user of the kernel (op attributes `offset` and
    `scratch_offset`) and record the kernel's dynamic shared memory size as
    `module.attrs["shared"]`."""
    result = plan(module.kernel)
    for op, offset in result.offsets:
        op.attrs["offset" if op.name in TILE_DEFINING_OPS else "scratch_offset"] = offset
    module.attrs["shared"] = result.total
