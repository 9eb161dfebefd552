"""Layout assignment: give every block value a distributed layout, insert
`convert_layout` where a producer's layout is not what a consumer needs, then
remove the conversions that are not needed.

How layouts are chosen (Triton's coalesce + remove-layout-conversions, in one
pass). How an op relates the layouts of its values is its layout rule, on its
spec (`ir/ops.py`: `OpSpec.layout`); the ops named below are examples.

1. Values that must share a layout form classes: the operands and results of
   the ops of the same-layout rule (elementwise ops, hints, scans, inline
   assembly), the carried values of `for`/`while`/`if`. Memory ops (the
   access rule) split their values in two classes: the *access* side
   (pointer, mask, `other`, atomic operands) and the *data* side (the loaded
   value, the stored value), so that a value can be loaded coalesced and used
   in another layout.
2. Classes are linked by ops that derive one layout from another: `broadcast`
   (same layout), `expand_dims` (the operand is a slice of the result's layout),
   `reduce` (the result is a slice of the operand's layout), `permute` (the
   layout with permuted dims), `reshape` (each thread keeps its elements),
   `split` and `join` (the pair dim in one register bit, both halves in one
   class).
3. Anchors: the result and accumulator of each dot get the layout its
   implementation (`dot/`) asks for (mma accumulator fragments on tensor
   cores); its a and b operands keep what their producers give them
   (`dot/operands.py` moves them afterwards). The access side of each load and atomic gets a *coalesced* blocked
   layout: dims ordered by the pointer's contiguity, and as many contiguous
   elements per thread as axis analysis proves aligned, up to 16 bytes (one per
   thread for atomics). The data side of a load prefers its access layout.
   Layouts then flow along the links; a store keeps the layout its value already
   has unless that would split a vector the pointer allows, else it is coalesced
   too. A store whose operands already have a layout giving each thread a longer
   run of consecutive elements than one vector of 8 or 16 bytes (8 fp32
   after fp16 loads, say) is coalesced on its own: each of its store
   instructions would otherwise cover only every other vector of a warp's span,
   twice the memory transactions (Triton stores coalesced too). Whatever is left takes the
   default blocked layout of its shape.
4. Wherever a link's rule or a memory op's two sides disagree, a conversion is
   inserted (once per value and layout, right after the value is defined).
5. Clean-up: conversions to the same layout and chains of conversions go; a
   conversion of a value computed only from cheap ops (`OpSpec.cheap`: constants,
   splats, aranges, broadcasts; and pure same-layout ops on those: elementwise
   arithmetic, hints) is replaced by computing the value again in the wanted
   layout; unused pure ops are dropped.
"""

from __future__ import annotations

from typing import Iterator

from tritone.ir.core import Function, Module, Operation, Region, Value, replace_all_uses
from tritone.ir.ops import (
    ACCESS_LAYOUT,
    BROADCAST_LAYOUT,
    DERIVED_LAYOUTS,
    EXPAND_DIMS_LAYOUT,
    JOIN_LAYOUT,
    OP_SPECS,
    PERMUTE_LAYOUT,
    REDUCE_LAYOUT,
    RESHAPE_LAYOUT,
    SAME_LAYOUT,
    SHARED_LAYOUT,
    SPLIT_LAYOUT,
    OpSpec,
    is_pure_elementwise,
    is_removable_when_unused,
)
from tritone.ir.types import type_text

from ...ir.layouts import (
    BlockedLayout,
    DistributedLayout,
    LinearEncodingLayout,
    SliceLayout,
    SwizzledSharedLayout,
    default_blocked_layout,
    reshaped,
    same_placement,
)
from . import dot
from .axis_info import AxisInfo, AxisInfoMap, analyze, max_vector_elements
from .codegen_memory import has_vector_atomic

_NO_RULE = OpSpec("", 0, None, "any")  # what an op without a spec relates: nothing
_REMAT_LIMIT = 32


def _spec(op: Operation) -> OpSpec:
    return OP_SPECS.get(op.name, _NO_RULE)


def _rule(op: Operation) -> str | None:
    """The layout rule of `op` (`OpSpec.layout`)."""
    return _spec(op).layout


def _recomputable(op: Operation) -> bool:
    """Whether computing `op` again in another layout is cheaper than converting
    its result: cheap sources, and pure ops of the same-layout rule without
    regions (elementwise arithmetic, hints; not inline assembly, whose cost is
    unknown and which, unless pure, must not run twice)."""
    return _spec(op).cheap or is_pure_elementwise(op)


def run(module: Module, ctx=None) -> None:
    """Assign layouts to every block value of `module` and insert the needed
    `convert_layout` ops (docs/IR.md); `num_warps` comes from the module's
    attributes, else from `ctx.options`, else 4; `target` (the compute
    capability, which decides the dots' layouts) from `ctx.options`, else 80."""
    options = getattr(ctx, "options", None) or {}
    num_warps = int(module.attrs.get("num_warps", options.get("num_warps", 4)))
    target = int(options.get("target", 80))
    for fn in module.functions.values():
        assign_layouts(fn, num_warps, target)
        cleanup_conversions(fn)


# -- walking -------------------------------------------------------------------

def _walk_with_regions(region: Region) -> Iterator[Operation]:
    for op in list(region.ops):
        yield op
        for inner in op.regions:
            yield from _walk_with_regions(inner)


def _is_block(value: Value) -> bool:
    return value.type.is_block()


def _blocks(values) -> list[Value]:
    return [v for v in values if _is_block(v)]


# -- layout transforms along links -----------------------------------------------

def permute_layout(layout: DistributedLayout, order: tuple[int, ...],
                   shape: tuple[int, ...] | None = None) -> DistributedLayout | None:
    """The layout of `permute(x, order)` holding x's elements in the same registers:
    blocked for a blocked `layout`, else (given x's `shape`) a linear encoding with
    each basis's coordinates permuted (None without `shape`)."""
    if not isinstance(layout, BlockedLayout):
        if shape is None or not isinstance(layout, DistributedLayout):
            return None
        linear = layout.linear(tuple(shape))

        def moved(bases):
            return [tuple(basis[d] for d in order) for basis in bases]

        return LinearEncodingLayout(tuple(shape[d] for d in order), moved(linear.registers), moved(linear.lanes),
                                    moved(linear.warps))
    position = {d: i for i, d in enumerate(order)}
    return BlockedLayout(tuple(layout.size_per_thread[d] for d in order),
                         tuple(layout.threads_per_warp[d] for d in order),
                         tuple(layout.warps_per_cta[d] for d in order),
                         tuple(position[d] for d in layout.order))


def _inverse(order: tuple[int, ...]) -> tuple[int, ...]:
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return tuple(inverse)


def operand_layout_for(op: Operation, result_layout: DistributedLayout) -> DistributedLayout | None:
    """The layout the block operand of a one-operand op of a derived layout rule
    (broadcast, expand_dims, permute) needs for its result to be in `result_layout`."""
    rule = _rule(op)
    if rule == BROADCAST_LAYOUT:
        return result_layout
    if rule == EXPAND_DIMS_LAYOUT:
        return SliceLayout(op.attrs["axis"], result_layout)
    if rule == PERMUTE_LAYOUT:
        return permute_layout(result_layout, _inverse(tuple(op.attrs["order"])), _shape(op.results[0]))
    if rule == RESHAPE_LAYOUT:
        return _reshape_layout(result_layout, op.results[0], op.operands[0])
    if rule == SPLIT_LAYOUT:
        return with_pair_dim(result_layout, _shape(op.results[0]))
    if rule == JOIN_LAYOUT:
        return without_pair_dim(result_layout, _shape(op.results[0]))
    return None


def result_layout_for(op: Operation, operand_layout: DistributedLayout) -> DistributedLayout | None:
    """The result layout of an op of a derived layout rule or of the reduce rule
    whose block operand is in `operand_layout`."""
    rule = _rule(op)
    if rule == BROADCAST_LAYOUT:
        return operand_layout
    if rule == EXPAND_DIMS_LAYOUT:
        axis = op.attrs["axis"]
        if isinstance(operand_layout, SliceLayout) and operand_layout.dim == axis:
            return operand_layout.parent
        return None
    if rule == PERMUTE_LAYOUT:
        return permute_layout(operand_layout, tuple(op.attrs["order"]), _shape(op.operands[0]))
    if rule == REDUCE_LAYOUT:
        return SliceLayout(op.attrs["axis"], operand_layout)
    if rule == RESHAPE_LAYOUT:
        return _reshape_layout(operand_layout, op.operands[0], op.results[0])
    if rule == SPLIT_LAYOUT:
        return without_pair_dim(operand_layout, _shape(op.operands[0]))
    if rule == JOIN_LAYOUT:
        return with_pair_dim(operand_layout, _shape(op.operands[0]))
    return None


def _shape(value: Value) -> tuple[int, ...] | None:
    return tuple(value.type.shape) if _is_block(value) else None


def with_pair_dim(layout: DistributedLayout, shape: tuple[int, ...] | None) -> LinearEncodingLayout | None:
    """The layout of a block of `shape` + (2,) (a join's result, a split's operand)
    in which each thread holds both elements of each pair of what it holds of a
    `shape` block in `layout`, the pair's two in register bit 0: split and join
    then move no data (as Triton's)."""
    if shape is None:
        return None
    linear = layout.linear(tuple(shape))
    pair = (0,) * len(shape) + (1,)
    return LinearEncodingLayout(tuple(shape) + (2,), [pair] + [b + (0,) for b in linear.registers],
                                [b + (0,) for b in linear.lanes], [b + (0,) for b in linear.warps])


def without_pair_dim(layout: DistributedLayout, shape: tuple[int, ...] | None) -> LinearEncodingLayout | None:
    """The layout of each half of a block of `shape` (last dim 2) in `layout` split
    along its last dim, each thread keeping what it holds: None unless the last
    dim is one register bit alone (its halves would be in other threads)."""
    if shape is None or shape[-1] != 2:
        return None
    linear = layout.linear(tuple(shape))
    pair = (0,) * (len(shape) - 1) + (1,)
    if any(b[-1] for b in linear.lanes + linear.warps) or [b for b in linear.registers if b[-1]] != [pair]:
        return None
    return LinearEncodingLayout(tuple(shape[:-1]), [b[:-1] for b in linear.registers if b != pair],
                                [b[:-1] for b in linear.lanes], [b[:-1] for b in linear.warps])


def _reshape_layout(layout: DistributedLayout, have: Value, want: Value) -> DistributedLayout | None:
    """The layout of `want` (the other side of a reshape) in which each thread
    holds the elements it holds of `have` in `layout`: the reshape then moves
    no data (Triton's reshape does the same with linear layouts)."""
    if not (_is_block(have) and _is_block(want)):
        return None
    return reshaped(layout.linear(tuple(have.type.shape)), tuple(want.type.shape))


# -- coalescing ------------------------------------------------------------------

def coalesced_layout(ptr: Value, info: AxisInfo, num_warps: int, vector: bool = True,
                     at_least: int = 1) -> BlockedLayout:
    """A blocked layout for accessing the pointer block `ptr`: its most contiguous
    dim fastest, and (with `vector`) each thread owning one aligned vector of up
    to 16 bytes along it, no more than the block gives every thread; or, with
    `at_least`, that many contiguous elements where the pointer is contiguous
    that far (a run another access of the same shape moves as one vector)."""
    shape = tuple(ptr.type.shape)
    rank = len(shape)
    row_major = list(reversed(range(rank)))
    order = tuple(sorted(row_major, key=lambda d: -info.contiguity[d]))
    fastest = order[0]
    numel = 1
    for s in shape:
        numel *= s
    per_thread = 1
    if vector:
        elem_bytes = ptr.type.scalar.element_ty.itemsize
        per_thread = min(max(max_vector_elements(info, fastest, elem_bytes), min(at_least, info.contiguity[fastest])),
                         max(1, numel // (32 * num_warps)), shape[fastest])
    spt = tuple(per_thread if d == fastest else 1 for d in range(rank))
    return default_blocked_layout(shape, num_warps, order, spt)


def _vector_along(layout: DistributedLayout, shape: tuple[int, ...], dim: int) -> int:
    return layout.linear(shape).contiguous_registers(dim)


def _lanes_along(layout: DistributedLayout, shape: tuple[int, ...], dim: int) -> int:
    """How many of a warp's lanes hold distinct elements along `dim`."""
    return 1 << sum(1 for basis in layout.linear(shape).lanes if basis[dim])


# -- classes of values that share a layout -----------------------------------------

class _Classes:
    """Union-find over block values."""

    def __init__(self):
        self.parent: dict[Value, Value] = {}

    def find(self, v: Value) -> Value:
        self.parent.setdefault(v, v)
        root = v
        while self.parent[root] is not root:
            root = self.parent[root]
        while self.parent[v] is not root:
            self.parent[v], v = root, self.parent[v]
        return root

    def union(self, values: list[Value]) -> None:
        values = _blocks(values)
        for v in values:
            self.find(v)
        for other in values[1:]:
            a, b = self.find(values[0]), self.find(other)
            if a is not b:
                self.parent[b] = a


class _Link:
    """`dst` is derived from `src` by `op` (forward) and back (backward)."""

    def __init__(self, op: Operation, src: Value, dst: Value):
        self.op, self.src, self.dst = op, src, dst


def _from_constants(value: Value, depth: int = 4) -> bool:
    """Whether `value` is computed from constants alone, by ops cheap to compute
    again in another layout (a splat of zero cast to the loaded type, say)."""
    op = value.defining_op
    if op is None or depth < 0 or not _recomputable(op):
        return False
    if op.name == "constant":
        return True
    return bool(op.operands) and all(_from_constants(operand, depth - 1) for operand in op.operands)


def _is_cheap(value: Value) -> bool:
    op = value.defining_op
    return op is not None and _spec(op).cheap


class _Assigner:
    def __init__(self, fn: Function, num_warps: int, target: int = 80):
        self.fn = fn
        self.num_warps = num_warps
        self.target = target
        self.dots: list[Operation] = []
        self.infos: AxisInfoMap = analyze(fn)
        self.classes = _Classes()
        self.links: list[_Link] = []
        # (cheap value, a value of the class that consumes it): the cheap value
        # follows that class unless it gets a layout otherwise first.
        self.soft: list[tuple[Value, Value]] = []
        self.layout: dict[Value, DistributedLayout] = {}  # class root -> layout
        # Stores whose operands are converted to a coalesced layout of their own.
        self.store_layouts: dict[Operation, DistributedLayout] = {}
        self.values: list[Value] = []  # every block value, in program order
        self.memory_ops: list[Operation] = []
        self._users: dict[Value, list[Operation]] | None = None

    # -- building classes and links -----------------------------------------
    def collect(self) -> None:
        for op in _walk_with_regions(self.fn.body):
            for region in op.regions:
                self.values += _blocks(region.args)
            self.values += _blocks(op.results)
            for v in _blocks(op.results) + [a for r in op.regions for a in _blocks(r.args)]:
                self.classes.find(v)
            self.relate(op)

    def join(self, values: list[Value]) -> None:
        """Put `values` in one class; cheap values (constants, splats, aranges,
        broadcasts, expand_dims) only follow it, since computing them again in
        another layout costs less than tying unrelated classes together."""
        values = _blocks(values)
        firm = [v for v in values if not _is_cheap(v)] or values[:1]
        self.classes.union(firm)
        self.soft += [(v, firm[0]) for v in values if v not in firm]

    def relate(self, op: Operation) -> None:
        name, rule = op.name, _rule(op)
        if rule == SAME_LAYOUT:
            self.join(op.results + op.operands)
        elif rule == ACCESS_LAYOUT:
            self.memory_ops.append(op)
            if name == "load":  # the loaded value may go on in another layout
                # `other` made from constants (a zero cast to fp16, which CSE shares
                # between loads of one shape) follows the pointer rather than tying
                # the pointers of unrelated loads to one layout
                made = [v for v in op.operands[2:] if _from_constants(v)]
                self.join([v for v in op.operands if v not in made])
                self.soft += [(v, op.operands[0]) for v in _blocks(made)]
            elif name == "store":  # the stored value may come from another layout
                self.join([op.operands[0]] + op.operands[2:])
            else:
                self.join(op.operands + op.results)
        elif rule == REDUCE_LAYOUT:
            self.join(op.operands)
            if _is_block(op.results[0]):
                self.join(op.results)
                self.links.append(_Link(op, op.operands[0], op.results[0]))
        elif rule in DERIVED_LAYOUTS:
            self.links.append(_Link(op, op.operands[0], op.results[0]))
        elif rule in (SPLIT_LAYOUT, JOIN_LAYOUT):
            self.join(op.results if rule == SPLIT_LAYOUT else op.operands)
            self.links.append(_Link(op, op.operands[0], op.results[0]))
        elif name == "dot":
            self.join([op.results[0], op.operands[2]])
            self.dots.append(op)
        elif name == "gather":
            self.join([op.results[0], op.operands[1]])
        elif name == "histogram":
            self.join(op.operands)
        elif name == "for":
            body = op.regions[0]
            for i, result in enumerate(op.results):
                self.join([result, body.args[1 + i], body.terminator.operands[i], op.operands[3 + i]])
        elif name == "if":
            then, other = op.regions
            for i, result in enumerate(op.results):
                self.join([result, then.terminator.operands[i], other.terminator.operands[i]])
        elif name == "while":
            before, after = op.regions
            for i, init in enumerate(op.operands):
                self.join([before.args[i], after.terminator.operands[i], init])
            for i, result in enumerate(op.results):
                self.join([result, after.args[i], before.terminator.operands[1 + i]])

    # -- choosing ------------------------------------------------------------
    def get(self, v: Value) -> DistributedLayout | None:
        return self.layout.get(self.classes.find(v))

    def offer(self, v: Value, layout: DistributedLayout | None) -> bool:
        """Give `v`'s class `layout` unless it has one; whether it was taken."""
        if layout is None:
            return False
        root = self.classes.find(v)
        if root in self.layout:
            return False
        self.layout[root] = layout
        return True

    def _follow_links(self) -> bool:
        changed = False
        for link in self.links:
            src, dst = self.get(link.src), self.get(link.dst)
            if src is not None and dst is None:
                changed |= self.offer(link.dst, result_layout_for(link.op, src))
            elif dst is not None and src is None:
                if _rule(link.op) != REDUCE_LAYOUT:
                    changed |= self.offer(link.src, operand_layout_for(link.op, dst))
                elif isinstance(dst, SliceLayout) and dst.dim == link.op.attrs["axis"]:
                    changed |= self.offer(link.src, dst.parent)
        return changed

    def propagate(self) -> None:
        """Spread layouts along links until nothing changes, then let cheap
        values follow their consumers, and again."""
        while True:
            while self._follow_links():
                pass
            followed = False
            for cheap, consumer in self.soft:
                if self.get(cheap) is None and self.get(consumer) is not None:
                    followed |= self.offer(cheap, self.get(consumer))
            if not followed:
                return

    def anchor_layout(self, op: Operation) -> DistributedLayout:
        ptr = op.operands[0]
        vector = op.name in ("load", "store") or has_vector_atomic(op, self.target, self._result_used(op))
        at_least = self.widest_access(ptr) if op.name == "load" else 1
        return coalesced_layout(ptr, self.infos.get(ptr), self.num_warps, vector=vector, at_least=at_least)

    def _result_used(self, op: Operation) -> bool:
        """Whether anything reads the result of atomic `op` (the users map is built once)."""
        if op.name != "atomic_rmw":
            return True
        if self._users is None:
            self._users = _users(self.fn)
        return bool(self._users.get(op.results[0]))

    def tile_layout(self, block: Value) -> BlockedLayout:
        """The layout a block copied by TMA (`tma_load`, `tma_store`) is read from
        or written to its row-major shared tile in when nothing else asks for
        one: each thread's elements up to 16 contiguous bytes along the row."""
        shape = tuple(block.type.shape)
        numel = 1
        for s in shape:
            numel *= s
        per_thread = min(max(1, 16 // block.type.scalar.itemsize), max(1, numel // (32 * self.num_warps)), shape[-1])
        return default_blocked_layout(shape, self.num_warps, None, (1,) * (len(shape) - 1) + (per_thread,))

    def widest_access(self, ptr: Value) -> int:
        """The most elements one vector access of any load or store on a pointer
        block of `ptr`'s shape and dim order moves. A load whose own pointer is
        less aligned (an unaligned input beside an aligned output, say) still
        gives each thread that many contiguous elements, as Triton's coalescing
        does, so the store of what it computes needs no narrower layout."""
        key = (tuple(ptr.type.shape), self._access_order(ptr))
        widest = 1
        for op in self.memory_ops:
            other = op.operands[0]
            if op.name in ("load", "store") and _is_block(other) and (
                    tuple(other.type.shape), self._access_order(other)) == key:
                layout = coalesced_layout(other, self.infos.get(other), self.num_warps)
                widest = max(widest, layout.size_per_thread[layout.order[0]])
        return widest

    def _tf32_across_k(self, op: Operation) -> bool:
        """Whether tf32 dot `op` loads an operand contiguous along M or N. wgmma reads
        32-bit tiles K-major only: such a tile is copied 4 bytes at a time, which on an
        H100 took an 8192^3 matmul with a row-major b from mma.sync's 180 TFLOP/s to 86-93
        (upstream's 88-93); with both tiles K-major wgmma gave 280-368 against 209-222."""
        if type_text(op.operands[0].type.scalar) != "fp32":
            return False
        for index, k_dim in ((0, 1), (1, 0)):
            source = self._loaded_contiguous_dim(op.operands[index])
            if source is not None and source != k_dim:
                return True
        return False

    def _loaded_contiguous_dim(self, value: Value) -> int | None:
        """The dim along which the memory block `value` was loaded from is contiguous
        (through permutes and layout conversions), or None for a value computed otherwise."""
        op = value.defining_op
        if op is None:
            return None
        if op.name == "convert_layout":
            return self._loaded_contiguous_dim(op.operands[0])
        if op.name == "permute":
            inner = self._loaded_contiguous_dim(op.operands[0])
            return None if inner is None else tuple(op.attrs["order"]).index(inner)
        if op.name == "load" and _is_block(op.operands[0]):
            return self._access_order(op.operands[0])[0]
        if op.name in ("tma_load", "descriptor_load"):
            return len(value.type.shape) - 1  # row-major tiles
        return None

    def _access_order(self, ptr: Value) -> tuple[int, ...]:
        return coalesced_layout(ptr, self.infos.get(ptr), self.num_warps, vector=False).order

    def choose(self) -> None:
        chained = dot.chained_dots(self.fn) if self.dots else set()
        for op in self.dots:
            impl = dot.select(op, self.target, self.num_warps)
            if impl.name == "wgmma" and self._tf32_across_k(op):
                impl = dot.select(op, self.target, self.num_warps, skip=("wgmma",))
            op.attrs["implementation"] = impl.name
            self.offer(op.results[0], impl.infer_layout(op, self.target, self.num_warps, id(op) in chained))
        block_memory = [op for op in self.memory_ops if _is_block(op.operands[0])]
        for op in block_memory:
            if op.name != "store":
                self.offer(op.operands[0], self.anchor_layout(op))
        for op in block_memory:
            if op.name == "load":
                self.offer(op.results[0], self.get(op.operands[0]))
        tma = [op for op in _walk_with_regions(self.fn.body) if op.name in ("tma_load", "tma_store")]
        for op in tma:
            if op.name == "tma_load":
                self.offer(op.results[0], self.tile_layout(op.results[0]))
        self.propagate()
        for op in block_memory:
            if op.name != "store":
                continue
            ptr, value = op.operands[0], op.operands[1]
            wanted = self.anchor_layout(op)
            have = self.get(value)
            if have is not None and self.get(ptr) is None:
                fastest = wanted.order[0]
                shape = tuple(ptr.type.shape)
                if (isinstance(have, SliceLayout)
                        or _vector_along(have, shape, fastest) >= _vector_along(wanted, shape, fastest)):
                    wanted = have
            self.offer(ptr, wanted)
            self.offer(value, self.get(ptr))
            self.propagate()
            have, coalesced = self.get(ptr), self.anchor_layout(op)
            fastest = coalesced.order[0]
            shape = tuple(ptr.type.shape)
            vector = _vector_along(coalesced, shape, fastest)
            have_vector = _vector_along(have, shape, fastest) if isinstance(have, BlockedLayout) else vector
            if vector * ptr.type.scalar.element_ty.itemsize >= 8 and have_vector > vector:
                self.store_layouts[op] = coalesced
            elif have_vector < vector and _lanes_along(coalesced, shape, fastest) > _lanes_along(have, shape, fastest):
                # The value's layout (a transposing copy's load layout, say) would
                # store fewer elements per instruction than the pointer allows, with
                # a warp's lanes spread across rows: its store converts to the
                # coalesced layout through shared memory first, as Triton's does.
                self.store_layouts[op] = coalesced
        for op in tma:
            if op.name == "tma_store" and self.offer(op.operands[1], self.tile_layout(op.operands[1])):
                self.propagate()
        for v in self.values:
            if self.get(v) is None:
                self.offer(v, default_blocked_layout(tuple(v.type.shape), self.num_warps))
                self.propagate()

    # -- rewriting -----------------------------------------------------------
    def apply(self) -> None:
        for v in self.values:
            v.type = v.type.with_layout(self.get(v))
        inserter = _ConversionInserter(self.fn)
        for op in list(_walk_with_regions(self.fn.body)):
            if _rule(op) == REDUCE_LAYOUT and _is_block(op.results[0]):
                needed = SliceLayout(op.attrs["axis"], op.operands[0].type.layout)
                for result in op.results:
                    if result.type.layout != needed:
                        inserter.convert_result(result, needed)
            elif op.name == "load" and _is_block(op.results[0]):
                access = op.operands[0].type.layout
                if op.results[0].type.layout != access:
                    inserter.convert_result(op.results[0], access)
            elif op in self.store_layouts:
                # Right before the store: the pointers and mask are then computed again
                # there (cheap), not kept in registers from their definition on.
                own = self.store_layouts[op]
                for i, operand in enumerate(op.operands):
                    if _is_block(operand) and operand.type.layout != own:
                        op.operands[i] = inserter.convert_before(op, operand, own)
            for i, needed in enumerate(required_operand_layouts(op)):
                operand = op.operands[i]
                if needed is not None and _is_block(operand) and not _same_map(operand, needed):
                    op.operands[i] = inserter.convert(operand, needed)


def _same_map(value: Value, layout: DistributedLayout) -> bool:
    """Whether `value`'s layout puts every element where `layout` does (a
    reshape's linear encoding of a blocked layout, say): no conversion needed."""
    return same_placement(value.type.layout, layout, tuple(value.type.shape))


def required_operand_layouts(op: Operation) -> list[DistributedLayout | None]:
    """The layout each operand of `op` must have given its results' (or, for
    memory ops, its pointer's) layouts; None where any layout will do."""
    n = len(op.operands)
    blocks = _blocks(op.results)
    name, rule = op.name, _rule(op)
    if rule == SAME_LAYOUT:
        return [blocks[0].type.layout if blocks else None] * n
    if rule in (ACCESS_LAYOUT, REDUCE_LAYOUT):
        first = op.operands[0]
        return [first.type.layout if _is_block(first) else None] * n
    if rule in DERIVED_LAYOUTS:
        return [operand_layout_for(op, op.results[0].type.layout) if blocks else None]
    if rule == SPLIT_LAYOUT:
        # an operand with its pair in any one register bit splits without moving data
        operand, result = op.operands[0], op.results[0]
        have = without_pair_dim(operand.type.layout, _shape(operand))
        if have is not None and same_placement(have, result.type.layout, _shape(result)):
            return [operand.type.layout]
        return [operand_layout_for(op, result.type.layout)]
    if rule == JOIN_LAYOUT:
        # a result with its pair elsewhere than one register bit is exchanged through
        # shared memory (codegen_layout.emit_join)
        return [operand_layout_for(op, op.results[0].type.layout)] * n
    if name == "dot":
        return [None, None, op.results[0].type.layout]
    if name == "gather":
        return [None, op.results[0].type.layout]
    if name == "histogram":
        return [None, op.operands[0].type.layout] if n > 1 else [None]
    if name == "for":
        return [None] * 3 + [r.type.layout if _is_block(r) else None for r in op.results]
    if name == "while":
        return [a.type.layout if _is_block(a) else None for a in op.regions[0].args]
    if name in ("yield", "condition"):
        parent = op.parent.parent if op.parent is not None else None
        if not isinstance(parent, Operation):
            return [None] * n
        if parent.name in ("for", "if"):
            targets = list(parent.results)
        elif parent.name == "while" and name == "condition":
            targets = [None] + list(parent.regions[1].args)
        elif parent.name == "while":
            targets = list(parent.regions[0].args)
        else:
            return [None] * n
        return [t.type.layout if t is not None and _is_block(t) else None for t in targets]
    return [None] * n


def assign_layouts(fn: Function, num_warps: int, target: int = 80) -> None:
    """Give every block value of `fn` a layout, inserting conversions where needed;
    dots get the layouts of their implementation on compute capability `target`."""
    assigner = _Assigner(fn, num_warps, target)
    assigner.collect()
    assigner.choose()
    assigner.apply()


# -- inserting conversions -----------------------------------------------------------

def _definition_point(value: Value) -> tuple[Region, int]:
    """Where ops computing from `value` can go first: (region, index)."""
    owner = value.owner
    if isinstance(owner, Operation):
        region = owner.parent
        return region, region.ops.index(owner) + 1
    return owner, 0


def make_convert(value: Value, layout: DistributedLayout) -> Operation:
    """A `convert_layout` op of `value` into `layout` (not yet placed)."""
    result_type = value.type.with_layout(layout)
    defining = value.defining_op
    loc = defining.loc if defining is not None else None
    op = Operation("convert_layout", [value], [result_type])
    if loc is not None:
        op.loc = loc
    return op


class _ConversionInserter:
    def __init__(self, fn: Function):
        self.fn = fn
        self.made: dict[tuple[int, DistributedLayout], Value] = {}

    def convert(self, value: Value, layout: DistributedLayout) -> Value:
        """`value` in `layout`, converted once right after its definition."""
        key = (id(value), layout)
        if key not in self.made:
            region, index = _definition_point(value)
            op = make_convert(value, layout)
            region.insert(index, op)
            self.made[key] = op.result
        return self.made[key]

    def convert_before(self, user: Operation, value: Value, layout: DistributedLayout) -> Value:
        """`value` in `layout`, converted right before `user`, for `user` alone."""
        op = make_convert(value, layout)
        region = user.parent
        region.insert(region.ops.index(user), op)
        return op.result

    def convert_result(self, result: Value, layout: DistributedLayout) -> None:
        """Make `result` (of its op) be in `layout`, converting it back for its users."""
        wanted = result.type.layout
        result.type = result.type.with_layout(layout)
        region, index = _definition_point(result)
        op = make_convert(result, wanted)
        replace_all_uses(self.fn, result, op.result)
        region.insert(index, op)


# -- clean-up -----------------------------------------------------------------------

def _users(fn: Function) -> dict[Value, list[Operation]]:
    users: dict[Value, list[Operation]] = {}
    for op in fn.walk():
        for v in op.operands:
            users.setdefault(v, []).append(op)
    return users


def _remat_chain(value: Value, layout: DistributedLayout) -> list[tuple[Operation | Value, DistributedLayout]] | None:
    """The steps to compute `value` again in `layout` (producers first), or None
    when that is not cheap. A step is an op to clone in the wanted layout, or a
    value to convert: a value the chain cannot recompute (a load, say) that is
    smaller than `value` because broadcasts follow it, so that converting it
    moves fewer elements between threads than converting `value` would."""
    order: list[tuple[Operation | Value, DistributedLayout]] = []
    seen: dict[int, DistributedLayout] = {}
    converted = [0]

    def visit(v: Value, wanted: DistributedLayout) -> bool:
        if v.type.layout == wanted:
            return True
        op = v.defining_op
        if op is None or not _recomputable(op) or len(op.results) != 1:
            if v is value or v.type.numel >= value.type.numel:
                return False
            if id(v) in seen:
                return seen[id(v)] == wanted
            seen[id(v)] = wanted
            converted[0] += v.type.numel
            order.append((v, wanted))
            return True
        if id(op) in seen:
            return seen[id(op)] == wanted
        if len(seen) >= _REMAT_LIMIT:
            return False
        seen[id(op)] = wanted
        for operand in _blocks(op.operands):
            needed = operand_layout_for(op, wanted) if _rule(op) in DERIVED_LAYOUTS else wanted
            if needed is None or not visit(operand, needed):
                return False
        order.append((op, wanted))
        return True

    if not visit(value, layout) or converted[0] >= value.type.numel:
        return None
    return order


def _rematerialize(fn: Function, convert: Operation) -> bool:
    """Replace `convert` by computing its source again in the wanted layout, when cheap."""
    source, layout = convert.operands[0], convert.results[0].type.layout
    chain = _remat_chain(source, layout)
    if not chain:
        return False
    region = convert.parent
    index = region.ops.index(convert)
    clones: dict[Value, Value] = {}
    for step, wanted in chain:
        if isinstance(step, Value):
            narrow = make_convert(step, wanted)
            region.insert(index, narrow)
            index += 1
            clones[step] = narrow.results[0]
            continue
        operands = [clones.get(v, v) for v in step.operands]
        clone = Operation(step.name, operands, [step.results[0].type.with_layout(wanted)], dict(step.attrs),
                          loc=step.loc)
        region.insert(index, clone)
        index += 1
        clones[step.results[0]] = clone.results[0]
    # the conversion's result is defined in `region`, so every use of it is there
    replace_all_uses(region, convert.results[0], clones[source])
    return True


def _remove_dead(fn: Function) -> None:
    """Remove unused conversions and removable ops, and then the producers that
    only they read (a worklist over use counts, not a walk per round)."""
    uses = {value: len(ops) for value, ops in _users(fn).items()}
    worklist = list(fn.walk())  # popped from the end: users before their producers
    removed: set[int] = set()
    while worklist:
        op = worklist.pop()
        if id(op) in removed or not op.results:
            continue
        removable = op.name == "convert_layout" or is_removable_when_unused(op)
        if not removable or any(uses.get(r) for r in op.results):
            continue
        op.parent.ops.remove(op)
        for inner in op.walk():  # the op and everything in its regions
            removed.add(id(inner))
            for value in inner.operands:
                uses[value] -= 1
                if not uses[value] and value.defining_op is not None:
                    worklist.append(value.defining_op)


def cleanup_conversions(fn: Function) -> None:
    """Remove conversions that change nothing, fold chains of conversions,
    compute cheap values again in the wanted layout instead of converting them,
    and drop what became unused."""
    for op in list(fn.walk()):
        if op.name != "convert_layout":
            continue
        source = op.operands[0]
        while source.defining_op is not None and source.defining_op.name == "convert_layout":
            source = source.defining_op.operands[0]
        op.operands[0] = source
        if source.type == op.results[0].type:
            replace_all_uses(fn, op.results[0], source)
        else:
            _rematerialize(fn, op)
    _remove_dead(fn)


def conversions(fn: Function) -> list[Operation]:
    """The `convert_layout` ops of `fn`, in program order."""
    return [op for op in fn.walk() if op.name == "convert_layout"]



def verify_layouts(fn: Function) -> None:
    """Check the invariants codegen relies on; AssertionError naming the op when broken:
    every block value has a distributed layout, except the shared tiles of the dot
    ops (`dot/shared.py`) and permutes of them; ops of the same-layout and access
    rules and carried values agree; broadcasts, expand_dims, reductions and dots
    follow their layout rules."""

    def same(op: Operation, values: list[Value]) -> None:
        # layouts written differently that place every element alike (a blocked
        # layout and a reshape's linear encoding of it) agree
        blocks = _blocks(values)
        layouts = {v.type.layout for v in blocks}
        assert len(layouts) <= 1 or all(_same_map(v, blocks[0].type.layout) for v in blocks), (
            f"{op.name} at {op.loc} mixes layouts {layouts}")

    for op in _walk_with_regions(fn.body):
        rule = _rule(op)
        for v in _blocks(op.results) + [a for r in op.regions for a in _blocks(r.args)]:
            shared = isinstance(v.type.layout, SwizzledSharedLayout) and (
                rule == SHARED_LAYOUT or (rule == PERMUTE_LAYOUT and isinstance(op.operands[0].type.layout,
                                                                  SwizzledSharedLayout)))
            assert shared or isinstance(v.type.layout, DistributedLayout), (
                f"{op.name} at {op.loc}: {v.type} has no layout")
        if op.name == "dot":
            same(op, [op.operands[2], op.results[0]])
        if rule in (SAME_LAYOUT, ACCESS_LAYOUT):
            same(op, op.operands + op.results)
        elif rule in (BROADCAST_LAYOUT, EXPAND_DIMS_LAYOUT):
            assert _same_map(op.operands[0], operand_layout_for(op, op.results[0].type.layout)), (
                f"{op.name} at {op.loc}: operand {op.operands[0].type} for result {op.results[0].type}")
        elif rule == REDUCE_LAYOUT and _is_block(op.results[0]):
            expected = SliceLayout(op.attrs["axis"], op.operands[0].type.layout)
            assert all(r.type.layout == expected for r in op.results), f"reduce at {op.loc}: {op.results[0].type}"
        elif op.name == "for":
            body = op.regions[0]
            for i, result in enumerate(op.results):
                same(op, [op.operands[3 + i], body.args[1 + i], body.terminator.operands[i], result])
        elif op.name == "if":
            for i, result in enumerate(op.results):
                same(op, [op.regions[0].terminator.operands[i], op.regions[1].terminator.operands[i], result])
        elif op.name == "while":
            before, after = op.regions
            for i, init in enumerate(op.operands):
                same(op, [init, before.args[i], after.terminator.operands[i]])
            for i, result in enumerate(op.results):
                same(op, [before.terminator.operands[1 + i], after.args[i], result])
