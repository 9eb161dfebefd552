"""Software pipelining of the loads that feed dots (compute capability 8.0+).

In a `for` loop, a load whose block goes straight into a dot operand's shared
tile (`load -> [permute ->] local_alloc`, see `dot/operands.py`) becomes an
asynchronous copy (`cp.async`) into a buffer of `num_stages - 1` tiles (as
many as Triton uses), issued `num_stages - 1` trips ahead of the trip that
reads it:

    buffers = local_buffer() ...                  # [num_stages - 1, *tile] each
    for s in 0 .. num_stages-2:                   # prologue
        per load: async_copy(buffer, s, ptr(trip s), mask(trip s) & trip s < ub); async_commit()
    for iv ...  carrying (..., stage):
        async_wait {pending = (num_stages - 2) * loads}   # and a barrier: trip iv's tiles are in
        tile = local_index(buffer, stage)
        ... the body, reading `tile` ...
        barrier                                   # every thread is done with the stage
        per load: async_copy(buffer, stage, ptr(iv + (num_stages-1) step), mask & in range); async_commit()
        stage = stage + 1 mod (num_stages - 1)
    async_wait {pending = 0}                      # nothing in flight afterwards

Each load's copies are a commit group of their own, as Triton makes them, so a
trip's wait leaves the groups of the `num_stages - 2` trips after it in flight.

The ops computing a pipelined load's pointer and mask (its *producer slice*:
address arithmetic, masks, and the loop-carried pointers they advance) run
`num_stages - 1` trips ahead: cloned into the prologue per stage, and at the
end of the body on loop-carried values that are that far ahead. The slice
may hold loads (the block indices a block-sparse kernel reads to find its
next tile, as FlexAttention's do) when nothing in the loop writes memory:
their clones run ahead under the trip's `< ub` too, so that no trip past the
end reads. A loop is left alone when that cannot be done exactly: a producer
op with other effects, a carried value of the slice that the rest of the body
or the code after the loop reads, a load with a non-zero `other`, or pieces
that `cp.async` cannot copy (4, 8 or 16 aligned bytes under one mask bit).

On sm_90, loads that `tma.py` made TMA copies (`tma_load` of a map the kernel
encodes, `tensormap_create`, or of a host descriptor's map argument) are
pipelined the same way with the copy engine: the tensor map's box becomes one swizzle column of the tile
(`NvmmaSharedLayout`: the box's rows and span, the layout's swizzle mode), so
that `cp.async.bulk.tensor` writes each stage in the very layout the dot
reads; thread 0 arrives on the stage's mbarrier announcing the trip's bytes
(`mbarrier_arrive`) and issues its copies (`tma_copy`, one per tile), every
thread waits on its phase (`mbarrier_wait`, the phase flipping each time the
stages wrap), and the mbarriers are invalidated after the loop. Where the
body's first readers of the tiles are not one op (attention's K tile at the
first dot, V at the second) and the later tiles are large enough to be worth
it (`_APART_BYTES`: d128's V, not d64's), each tile has mbarriers of its own,
announced and waited for apart, each wait just before the first op reading its
tile, so that the first dot runs while the later tiles land (not in
warp-specialized or tile-ahead loops, which keep one mbarrier a stage). A tile whose
map other loads also read gets a map of its own (`_own_map`). A loop pipelines its tiles one way:
where some of its tiles cannot use TMA, its TMA loads are left as they are.

Where the loop's parent loop asks for it (`tl.range(..., flatten=True)`, a
persistent kernel's loop over tiles; upstream Triton fuses the two loops), the
next outer trip's first copies are issued in this loop's last `num_stages - 1`
trips, the trips that have no trip of their own left to copy ahead (a branch
picks this tile's trip or the next tile's), so that they arrive during the
current tile's last trips and its epilogue (`_tile_ahead`, `_fused_trips`).
A run of the loop with fewer trips than that issues them after it ends
instead, before the epilogue. The stages and mbarriers are made before the
outer loop and dropped after it, the outer loop carries the stage and phase
from one run of the inner loop to the next, and the ops of the outer body that
the copies' addresses need are computed again for the next tile: its block
offsets where the copies are issued; its scalars (the tile's index and
offsets, divisions included) carried by the outer loop, each trip finding its
own and its next tile's and computing those of the tile after once the inner
loop is done (`_carried_next_trip`), so that no chain of divisions stands
between a tile's epilogue and its first wgmma.

Where the loop around asks for warp specialization instead (TMA copies), the
stages and mbarriers live across it the same way but without the branch:
the next tile's first copies come after the K loop, and `warp_specialize.py`
gives them to a producer warp that runs on into the next tile by itself.

A wgmma dot left in flight whose result a later `if` of the loop reads (a
store in the last trip, say) is waited for at the start of that branch.

`tl.range(..., num_stages=n)` sets a loop's stages, else the kernel's
`num_stages` (n <= 1: no pipelining).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tritone.ir.core import Function, Module, Operation, Region, Value, clone_operation, replace_all_uses
from tritone.ir.ops import has_side_effects, is_pure, is_pure_elementwise, is_zero_constant
from tritone.ir.types import block_type, int1, int32, int64

from ...ir.layouts import NvmmaSharedLayout, SwizzledSharedLayout
from .axis_info import AxisInfoMap, analyze
from .dot.shared import TileGeometry, copy_plan, is_shared_tile, tile_bytes
from .smem import scratch_bytes
from .tensormap import MAX_BOX_DIM, SWIZZLES, TENSOR_MAP_BYTES
from .tma import host_maps, set_map_box


def run(module: Module, ctx=None) -> None:
    """Pipeline the dot-feeding loads of every loop of `module` (targets 8.0+)."""
    options = getattr(ctx, "options", None) or {}
    target = int(options.get("target", 80))
    if target < 80:
        return
    default_stages = int(module.attrs.get("num_stages", options.get("num_stages", 3)) or 0)
    for fn in module.functions.values():
        # loops that may have a load feeding a dot's shared tile; the axis analysis
        # only where there is one (most kernels have none)
        loops = [(op, stages) for op in fn.walk() if op.name == "for"
                 for stages in [int(op.attrs.get("num_stages", default_stages) or 0)]
                 if stages >= 2 and any(inner.name == "local_alloc" for inner in op.regions[0].ops)]
        if not loops:
            continue
        infos = analyze(fn)
        for loop, stages in loops:
            pipeline_loop(fn, loop, stages, infos, options.get("max_shared"))


@dataclass
class _Chain:
    """A load, the permute between it and its tile (or None), and the tile's `local_alloc`."""

    load: Operation
    permute: Operation | None
    alloc: Operation
    box: tuple[int, int] | None = None  # a TMA copy's box (rows, columns), once chosen

    @property
    def load_layout(self) -> SwizzledSharedLayout:
        """The tile layout in the load's orientation."""
        layout = self.alloc.results[0].type.layout
        if self.permute is None:
            return layout
        order = tuple(self.permute.attrs["order"])
        return dataclasses.replace(layout, order=tuple(order[d] for d in layout.order))


def _users(region: Region) -> dict[Value, list[Operation]]:
    users: dict[Value, list[Operation]] = {}
    for op in region.walk():
        for v in op.operands:
            users.setdefault(v, []).append(op)
    return users


def _find_chains(body: Region, users, infos: AxisInfoMap) -> list[_Chain]:
    chains = []
    for op in body.ops:
        if op.name != "local_alloc":
            continue
        value = op.operands[0]
        permute = value.defining_op
        if permute is not None and permute.name == "permute" and permute.parent is body:
            value = permute.operands[0]
            if len(users.get(permute.results[0], [])) != 1:
                continue
        else:
            permute = None
        load = value.defining_op
        if load is None or load.name not in ("load", "tma_load") or load.parent is not body:
            continue
        if load.attrs.get("volatile") or len(users.get(value, [])) != 1 or not value.type.is_block():
            continue
        chain = _Chain(load, permute, op)
        if load.name == "tma_load":
            if tma_box(chain, users) is not None:
                chains.append(chain)
            continue
        if len(load.operands) > 2 and not is_zero_constant(load.operands[2]):
            continue
        if _copy_bytes(chain, infos) in (4, 8, 16):
            chains.append(chain)
    # a loop's tiles are copied one way: TMA only where every tile can be
    if any(c.load.name == "tma_load" for c in chains) and not all(c.load.name == "tma_load" for c in chains):
        chains = [c for c in chains if c.load.name == "load"]
    return chains


def tma_box(chain: _Chain, users) -> tuple[int, int, int] | None:
    """(box rows, box columns, swizzle bytes) of the copies that write `chain`'s
    tile in its own layout, one swizzle column (and at most 256 rows) at a time;
    None where the copy engine cannot: a tile layout other than a 2-D
    `NvmmaSharedLayout` whose contiguous dim is the tensor's, or a swizzle other
    than TMA's; a map of a descriptor carried through loops (`tensormap_at`);
    a load that pads fp8 with NaN itself. The map is the kernel's own
    (`tensormap_create`) or a host descriptor's argument, which the launcher
    encodes with that box (the kernel attribute `tensormap_boxes`)."""
    load = chain.load
    tensormap = load.operands[0]
    make = tensormap.defining_op
    if make is not None and make.name != "tensormap_create":
        return None
    if tensormap.type.rank != 2 or not _plain_tma_padding(load):
        return None
    layout = chain.load_layout
    rows, width = load.results[0].type.shape
    eb = tensormap.type.element_ty.itemsize
    if not isinstance(layout, NvmmaSharedLayout) or tuple(layout.order) != (1, 0) or layout.vec * eb != 16:
        return None
    span_bytes = layout.span * eb
    if span_bytes not in SWIZZLES or layout.per_phase != 128 // span_bytes or width % layout.span:
        return None
    if rows % 8:
        return None
    return min(rows, MAX_BOX_DIM), layout.span, span_bytes


def _plain_tma_padding(load: Operation) -> bool:
    """Whether the copy engine alone gives `load`'s padding: a load of the map and
    the offsets, or an fp8 load (which carries the shape and the NaN-padding flag
    for the padding the kernel writes itself) whose flag is a constant false."""
    rank = load.operands[0].type.rank
    if len(load.operands) == 1 + rank:
        return True
    return len(load.operands) == 2 + 2 * rank and is_zero_constant(load.operands[-1])


def tma_operands(load: Operation) -> list[Value]:
    """The map and the offsets of TMA load `load` (what a copy of its box needs)."""
    return load.operands[:1 + load.operands[0].type.rank]


def _copy_bytes(chain: _Chain, infos: AxisInfoMap) -> int:
    ptr = chain.load.operands[0]
    mask = chain.load.operands[1] if len(chain.load.operands) > 1 else None
    shape = tuple(ptr.type.shape)
    eb = ptr.type.scalar.element_ty.itemsize
    geom = TileGeometry(chain.load_layout, shape, eb)
    linear = ptr.type.layout.linear(shape)
    vec, _ = copy_plan(linear, infos.get(ptr), infos.get(mask) if mask is not None else None, geom, eb)
    return vec * eb


def _producer_slice(body: Region, chains: list[_Chain]) -> tuple[list[Operation], set[int]] | None:
    """The body ops (in order) computing the chains' pointers and masks and the
    carried values those read; and the indices of those carried values. None
    when some op of it cannot run ahead (effects, regions)."""
    in_body = {id(op) for op in body.ops}
    # Loads may run ahead of the trips they belong to only where no op of the loop writes.
    reads_ahead = not any(has_side_effects(op) for op in body.ops[:-1])
    args = {a: i for i, a in enumerate(body.args[1:])}
    chosen: set[int] = set()
    carried: set[int] = set()
    stack = [v for c in chains for v in c.load.operands[1:]] + [c.load.operands[0] for c in chains]
    yielded = body.terminator.operands
    while stack:
        v = stack.pop()
        if v in args:
            i = args[v]
            if i not in carried:
                carried.add(i)
                stack.append(yielded[i])
            continue
        op = v.defining_op
        if op is None or id(op) not in in_body or id(op) in chosen:
            continue
        if op.regions or not (is_pure(op) or (reads_ahead and _is_plain_load(op))):
            return None
        chosen.add(id(op))
        stack.extend(op.operands)
    return [op for op in body.ops if id(op) in chosen], carried


def _is_plain_load(op: Operation) -> bool:
    return op.name == "load" and not op.attrs.get("volatile", False)


def _clone_ahead(b: _Builder, op: Operation, mapping: dict, in_range: Value) -> None:
    """Clone slice op `op` for the trip `mapping` describes; a load also under
    `in_range`, that trip's `iv < ub` (its value where that fails is never used
    by a copy that runs)."""
    if not _is_plain_load(op):
        b.clone(op, mapping)
        return
    ptr_ty = op.operands[0].type
    guard = in_range
    if ptr_ty.is_block():
        guard = b.value("splat", [in_range], block_type(int1, list(ptr_ty.shape), ptr_ty.layout))
    if len(op.operands) > 1:
        guard = b.value("and", [mapping.get(op.operands[1], op.operands[1]), guard], guard.type)
    new = b.clone(op, mapping)
    if len(new.operands) > 1:
        new.operands[1] = guard
    else:
        new.operands.append(guard)


def _depends_on(op: Operation, values: set[Value], memo: dict[int, bool]) -> bool:
    if id(op) in memo:
        return memo[id(op)]
    memo[id(op)] = False
    result = False
    for v in op.operands:
        if v in values or (v.defining_op is not None and v.defining_op.parent is op.parent
                           and _depends_on(v.defining_op, values, memo)):
            result = True
            break
    memo[id(op)] = result
    return result


def _in_flight_dots(body: Region, users, chains: list[_Chain]) -> list[tuple[Operation, int]]:
    """The wgmma dots of `body` that may stay in flight into the next trip, each with
    the index of the carried value it accumulates into: the dot reads two pipelined
    tiles, it is the only reader
    of that carried value and its result is yielded back in the same place and
    otherwise read only in branches of later `if`s (a hand-flattened loop's
    epilogue), which wait for it first (`_branches_reading`).
    Empty unless every wgmma dot of the body is one (the copies' stage rule changes
    for all tiles at once), or else the scaled ones of `_scaled_in_flight`."""
    found = []
    pipelined = {chain.alloc.results[0] for chain in chains}
    args = list(body.args[1:])
    terminator = body.terminator
    for op in body.ops:
        if op.name != "dot" or op.attrs.get("implementation") != "wgmma":
            continue
        acc, result = op.operands[2], op.results[0]
        if (op.operands[0] not in pipelined or op.operands[1] not in pipelined or acc not in args
                or len(users.get(acc, [])) != 1 or _branches_reading(body, op, users) is None
                or [i for i, v in enumerate(terminator.operands) if v is result] != [args.index(acc)]):
            return _scaled_in_flight(body, users, pipelined)
        found.append((op, args.index(acc)))
    return found


def _scaled_in_flight(body: Region, users, pipelined: set[Value]) -> list[tuple[Operation, int]]:
    """The wgmma dots of `body` that may stay in flight into the next trip although
    their carried accumulator is rescaled each trip first (attention's
    `acc = tl.dot(p, v, acc * alpha[:, None])`), each with the carried value's index:
    the dot reads a pipelined b tile and an a that is one too or in registers, its
    accumulator is an elementwise op of the body whose only reader it is, reading
    the carried value, of which it is the only reader, and the dot's result is only
    yielded back in that place. `_rewrite` marks the op `in_place` (it writes the
    carried value's registers), and a `dot_wait` before it waits for the trip
    before's dot (with Triton, the wgmma of `p @ v` runs on into the next trip's
    `q @ k`). Other dots of the body wait for their own results, as ever."""
    found = []
    args = list(body.args[1:])
    terminator = body.terminator
    for op in body.ops:
        if op.name != "dot" or op.attrs.get("implementation") != "wgmma":
            continue
        a, b, acc = op.operands
        scale = acc.defining_op
        if b not in pipelined or (a not in pipelined and is_shared_tile(a)):
            continue
        if scale is None or scale.parent is not body or not is_pure_elementwise(scale) or len(scale.results) != 1:
            continue
        carried = [v for v in scale.operands if v in args]
        if len(carried) != 1 or scale.operands.count(carried[0]) != 1 or users.get(carried[0], []) != [scale]:
            continue
        index = args.index(carried[0])
        if users.get(acc, []) != [op] or users.get(op.results[0], []) != [terminator]:
            continue
        if [i for i, v in enumerate(terminator.operands) if v is op.results[0]] != [index]:
            continue
        found.append((op, index))
    return found


def _branches_reading(body: Region, dot: Operation, users) -> list[Region] | None:
    """The branches of `if`s after `dot` in `body` that read its result, when all
    its readers but `body`'s yield are in such branches; else None."""
    after = {id(op): op for op in body.ops[body.ops.index(dot) + 1:-1] if op.name == "if"}
    branches: list[Region] = []
    for user in users.get(dot.results[0], []):
        if user is body.terminator:
            continue
        region = user.parent
        while isinstance(region.parent, Operation) and id(region.parent) not in after:
            region = region.parent.parent
        if not isinstance(region.parent, Operation) or region.parent.parent is not body:
            return None
        if not any(region is known for known in branches):
            branches.append(region)
    return branches


def pipeline_loop(fn: Function, loop: Operation, stages: int, infos: AxisInfoMap,
                  shared_limit: int | None = None) -> bool:
    """Pipeline `loop` over `stages` buffers if it can be done exactly; whether it was.
    Where the tiles' addresses come from loads of the loop (indirect loads) and that
    many stages of tiles would not fit in `shared_limit` bytes, the stages are
    shared among the levels of loads as Triton shares them: (stages - 1) // (levels
    + 1) trips ahead."""
    body = loop.regions[0]
    users = _users(fn.body)
    chains = _find_chains(body, users, infos)
    if not chains:
        return False
    found = _producer_slice(body, chains)
    if found is None:
        return False
    slice_ops, ahead = found
    ahead_args = {body.args[1 + i] for i in ahead}
    chain_ops = {id(op) for c in chains for op in (c.load, c.permute, c.alloc) if op is not None}
    slice_ids = {id(op) for op in slice_ops}
    memo: dict[int, bool] = {}
    # ops that stay in the body: everything but the chains and the yield, and the
    # slice ops only where the rest reads them; none of those may see an ahead value
    rest = [op for op in body.ops[:-1] if id(op) not in chain_ops and id(op) not in slice_ids]
    needed = set()
    stack = [v for op in rest for inner in op.walk() for v in inner.operands] + [
        v for i, v in enumerate(body.terminator.operands) if i not in ahead]
    while stack:
        v = stack.pop()
        if v in ahead_args:
            return False
        op = v.defining_op
        if op is not None and id(op) in slice_ids and id(op) not in needed:
            if _depends_on(op, ahead_args, memo):
                return False
            needed.add(id(op))
            stack.extend(op.operands)
    for op in rest:
        if any(inner_v in ahead_args for inner in op.walk() for inner_v in inner.operands):
            return False
    if any(users.get(loop.results[i]) for i in ahead):
        return False
    _rewrite(fn, loop, stages, chains, slice_ops, ahead, needed, users, shared_limit)
    return True


def _tile_ahead(loop: Operation, chains: list[_Chain], slice_ops: list[Operation], ahead: set[int], levels: int,
                reserved: int, shared_limit: int | None) -> tuple[Operation, list[Operation]] | None:
    """Where the first trips of `loop` may be copied while the trip before of the
    loop around it runs its last trips and epilogue (`tl.range(..., flatten=True)`
    on that loop): (the outer loop, the ops of its body, in order, to compute again
    for its next trip). None where that cannot be done exactly: another outer loop,
    an outer step that is not a positive constant, a second loop in the outer body,
    copies whose addresses come from loads of the loop or from values the loop
    advances, or from values of the outer body that have effects or regions or
    depend on what the outer loop carries; or where the stages would stay in
    shared memory beside the epilogue's tiles (`reserved` bytes) beyond `shared_limit`."""
    outer = loop.parent.parent
    if not isinstance(outer, Operation) or outer.name != "for":
        return None
    # a warp-specialized loop over tiles keeps the stages too: its producer runs on into the next tile
    if not (outer.attrs.get("flatten") or (outer.attrs.get("warp_specialize") and chains[0].load.name == "tma_load")):
        return None
    step = outer.operands[2].defining_op
    step_value = step.attrs.get("value") if step is not None and step.name == "constant" else None
    if ahead or levels or type(step_value) is not int or step_value <= 0:
        return None
    outer_body = outer.regions[0]
    if [op for op in outer_body.ops if op.name in ("for", "while")] != [loop]:
        return None
    after = outer_body.ops[outer_body.ops.index(loop) + 1:]
    epilogue = max([tile_bytes(op.operands[1].type) for e in after for op in e.walk() if op.name == "tma_store"]
                   + [scratch_bytes(op) for e in after for op in e.walk() if op.name == "convert_layout"], default=0)
    if shared_limit and reserved + epilogue > shared_limit:
        return None
    chosen: set[int] = set()
    stack = [v for op in slice_ops for v in op.operands] + list(loop.operands[:3]) + [
        v for chain in chains for v in chain.load.operands]
    while stack:
        v = stack.pop()
        if v.owner is outer_body and v is not outer_body.args[0]:
            return None  # a value the outer loop carries: its next one comes after the epilogue
        op = v.defining_op
        if op is None or op.parent is not outer_body or id(op) in chosen:
            continue
        if op.regions or not is_pure(op):
            return None
        chosen.add(id(op))
        stack.extend(op.operands)
    return outer, [op for op in outer_body.ops if id(op) in chosen]


def _next_outer_trip(b: _Builder, plan: tuple[Operation, list[Operation]]) -> tuple[dict[Value, Value], Value]:
    """The outer loop's next trip, begun where `b` builds: its values of the scalar ops
    the copies' addresses need (a persistent kernel's next tile and its offsets: a few
    registers, and its divisions done once a tile), keyed by the outer body's values,
    and whether that trip runs. `_next_outer_blocks` adds the block ops where the
    copies are issued."""
    next_iv, next_ok = _next_outer_iv(b, plan[0])
    next_values = {plan[0].regions[0].args[0]: next_iv}
    for op in _scalar_chain(plan):
        b.clone(op, next_values)
    return next_values, next_ok


def _next_outer_iv(b: _Builder, outer: Operation) -> tuple[Value, Value]:
    """The outer loop's next trip's induction variable, and whether that trip runs."""
    iv = outer.regions[0].args[0]
    next_iv = b.value("add", [iv, outer.operands[2]], iv.type)
    return next_iv, b.value("cmp", [next_iv, outer.operands[1]], int1, pred="lt")


def _scalar_chain(plan: tuple[Operation, list[Operation]]) -> list[Operation]:
    """The scalar ops of `plan`'s outer body whose operands from it are the outer loop's
    induction variable and each other's results: what a trip's scalars are computed
    from (`_next_outer_trip`, `_carried_next_trip`)."""
    outer, outer_ops = plan
    iv = outer.regions[0].args[0]
    picked = {id(op) for op in outer_ops}
    chain: list[Operation] = []
    made: set[int] = set()
    for op in outer_ops:
        if all(not r.type.is_block() for r in op.results) and all(
                id(v.defining_op) in made or v is iv for v in op.operands if id(v.defining_op) in picked or v is iv):
            chain.append(op)
            made.add(id(op))
    return chain


def _carried_next_trip(plan: tuple[Operation, list[Operation]], parent: Region,
                       loop: Operation) -> tuple[dict[Value, Value], Value, list[Value], list[Value],
                                               dict[Value, Value]]:
    """`_next_outer_trip` for K loop `loop` (in `parent`, the outer body), with the
    outer loop made to carry the scalars instead of computing them at its trips'
    start: each trip finds its own and its next trip's (a persistent kernel's tile
    index and offsets, and the next tile's), and computes the ones of the trip after
    its next once `loop` is done, where ptxas can interleave their divisions with the
    epilogue. Computed at a trip's start, those chains of dependent instructions,
    issued in order, kept each tile's first wgmma waiting (tutorial 09's TMA
    persistent kernel: two chains of two divisions between a tile's epilogue and its
    first wgmma). The first two trips' are computed before the outer loop. Returns
    (the next trip's values by the outer body's values, whether it runs, the carried
    values before the loop, the values a trip yields, the block arguments standing for
    the outer body's values); the block arguments are added and the outer body's own
    ops of those scalars removed."""
    outer = plan[0]
    body = outer.regions[0]
    iv, step = body.args[0], outer.operands[2]
    next_iv, next_ok = _next_outer_iv(_Builder(parent, loop, loop.loc), outer)
    chain = _scalar_chain(plan)
    users = _users(body)
    carried = [r for op in chain for r in op.results if users.get(r)]
    if not carried:
        return {iv: next_iv}, next_ok, [], [], {}

    def values_at(builder: _Builder, trip_iv: Value) -> dict[Value, Value]:
        mapping = {iv: trip_iv}
        for op in chain:
            builder.clone(op, mapping)
        return mapping

    before = _Builder(outer.parent, outer, outer.loc)
    first = values_at(before, outer.operands[0])
    second = values_at(before, before.value("add", [outer.operands[0], step], iv.type))
    after = _Builder(parent, parent.ops[parent.ops.index(loop) + 1], loop.loc)
    two_on = after.value("add", [iv, after.value("mul", [step, after.constant(2, iv.type)], iv.type)], iv.type)
    third = values_at(after, two_on)
    own = [body.add_arg(v.type, v.name_hint) for v in carried]
    following = [body.add_arg(v.type, v.name_hint) for v in carried]
    next_scalars: dict[Value, Value] = {iv: next_iv}
    for value, mine, theirs in zip(carried, own, following):
        replace_all_uses(body, value, mine)
        next_scalars[value] = next_scalars[mine] = theirs
    for op in reversed(chain):
        body.ops.remove(op)
    return (next_scalars, next_ok, [first[v] for v in carried] + [second[v] for v in carried],
            list(following) + [third[v] for v in carried], dict(zip(carried, own)))


def _next_outer_blocks(b: _Builder, plan: tuple[Operation, list[Operation]],
                       scalars: dict[Value, Value]) -> dict[Value, Value]:
    """`scalars` (from `_next_outer_trip`) with the outer body's remaining ops for its
    next trip, built where `b` builds."""
    next_values = dict(scalars)
    for op in plan[1]:
        if op.results and op.results[0] not in next_values:
            b.clone(op, next_values)
    return next_values


def _fused_trips(parent: Region, loop: Operation, plan: tuple[Operation, list[Operation]], lb: Value, ub: Value,
                 step: Value, prefetch: int) -> tuple[Value, Value] | None:
    """For a K loop whose last `prefetch` trips copy the next tile's first trips (as
    upstream's fused loops do, so those arrive during this tile's last trips and
    epilogue, not only during the epilogue): (whether this run of the loop has at
    least `prefetch` trips to do it in, the end its trips count up to), built
    before `loop`. None where the next tile's step may differ (the trips could not
    be matched up), or the step is not a positive constant."""
    made = step.defining_op
    if made is None or made.name != "constant" or type(made.attrs.get("value")) is not int \
            or made.attrs["value"] <= 0:
        return None
    b = _Builder(parent, loop, loop.loc)
    ty = lb.type
    span = b.value("sub", [ub, lb], ty)
    on = b.value("cmp", [span, b.constant((prefetch - 1) * made.attrs["value"], ty)], int1, pred="gt")
    if made.attrs["value"] == 1:
        return on, ub
    # lb + trips * step: the iv the trip after the last would have
    trips = b.value("floordiv", [b.value("add", [span, b.constant(made.attrs["value"] - 1, ty)], ty), step], ty)
    return on, b.value("add", [lb, b.value("mul", [trips, step], ty)], ty)


def _carry_through(outer: Operation, inits: list[Value], yielded: list[Value]) -> Operation:
    """`outer` made again carrying `inits` too (their values in its body: the last
    block arguments, already added; `yielded`: their next values); the new loop,
    in its place."""
    body = outer.regions[0]
    body.terminator.operands = list(body.terminator.operands) + list(yielded)
    result_types = [r.type for r in outer.results] + [v.type for v in inits]
    new = Operation("for", list(outer.operands) + list(inits), result_types, dict(outer.attrs), [body], outer.loc)
    region = outer.parent
    region.insert(region.ops.index(outer), new)
    for old, value in zip(outer.results, new.results):
        replace_all_uses(region, old, value)
    region.ops.remove(outer)
    return new


def _indirection_levels(slice_ops: list[Operation]) -> int:
    """The longest chain of loads, one feeding the next's address, among the producer
    slice's loads (0: the tiles' addresses come from no load of the loop)."""
    in_slice = {id(op): op for op in slice_ops}
    depth: dict[int, int] = {}
    for op in slice_ops:  # in order: operands first
        below = max((depth.get(id(v.defining_op), 0) for v in op.operands
                     if v.defining_op is not None and id(v.defining_op) in in_slice), default=0)
        depth[id(op)] = below + (1 if _is_plain_load(op) else 0)
    return max(depth.values(), default=0)


class _Builder:
    """Appends new ops before a fixed op of a region (or at the end of a region)."""

    def __init__(self, region: Region, before: Operation | None, loc):
        self.region, self.before, self.loc = region, before, loc

    def op(self, name: str, operands, result_types=(), regions=(), **attrs) -> Operation:
        op = Operation(name, list(operands), list(result_types), attrs, list(regions), loc=self.loc)
        if self.before is None:
            self.region.append(op)
        else:
            self.region.insert(self.region.ops.index(self.before), op)
        return op

    def value(self, name: str, operands, result_type, **attrs) -> Value:
        return self.op(name, operands, [result_type], **attrs).results[0]

    def constant(self, value, ty) -> Value:
        return self.value("constant", [], ty, value=value)

    def clone(self, op: Operation, mapping: dict[Value, Value]) -> Operation:
        new = clone_operation(op, mapping)
        new.loc = op.loc
        if self.before is None:
            self.region.append(new)
        else:
            self.region.insert(self.region.ops.index(self.before), new)
        return new


# The bytes of a trip's later-read tiles from which they get mbarriers of their own. On an
# H100 (tutorial 06's forward, configs pinned), waiting for a 16 KB V tile (d128) apart made
# the 2-stage 4-warp kernel 11% faster and the 3-stage 8-warp one 5%; an 8 KB one (d64)
# landed before it was read anyway, and its extra wait cost 1-3%.
_APART_BYTES = 16 * 1024


def _first_reader(region: Region, value: Value, default: int) -> int:
    """The index in `region` of the first op reading `value` (itself or an op inside it);
    `default` where none does."""
    return next((i for i, op in enumerate(region.ops) if any(value in inner.operands for inner in op.walk())),
                default)


def _read_apart(body: Region, chains: list[_Chain]) -> bool:
    """Whether the first ops of `body` reading the chains' tiles are not all one op, and
    the tiles read after the first such op are worth waiting for apart (`_APART_BYTES`)."""
    firsts = [_first_reader(body, chain.alloc.results[0], len(body.ops)) for chain in chains]
    later = sum(tile_bytes(chain.load.results[0].type) for chain, first in zip(chains, firsts) if first > min(firsts))
    return later >= _APART_BYTES


def _issue_copies(b: _Builder, chains: list[_Chain], buffers: list[Value], slot: Value, mapping: dict,
                  in_range: Value, barriers: tuple[Value, ...] | None) -> None:
    """Copy the chains' tiles for the trip `mapping` describes into stage `slot`,
    where `in_range`: with the copy engine, each completing on mbarrier `slot` of
    its chain's `barriers`, when they are given."""
    if barriers is not None:
        for barrier in dict.fromkeys(barriers):
            # the bytes of the tiles this mbarrier waits for announced, then the copies that bring them
            group = [(chain, buffer) for chain, buffer, own in zip(chains, buffers, barriers) if own is barrier]
            nbytes = sum(tile_bytes(chain.load.results[0].type) for chain, _ in group)
            b.op("mbarrier_arrive", [barrier, slot, in_range], bytes=nbytes)
            for chain, buffer in group:
                operands = [mapping.get(v, v) for v in tma_operands(chain.load)]
                b.op("tma_copy", [buffer, slot, barrier, *operands, in_range], box=chain.box)
        return
    for chain, buffer in zip(chains, buffers):
        load = chain.load
        ptr = mapping.get(load.operands[0], load.operands[0])
        ptr_ty = ptr.type
        mask_ty = block_type(int1, list(ptr_ty.shape), ptr_ty.layout)
        valid = b.value("splat", [in_range], mask_ty)
        if len(load.operands) > 1:
            mask = mapping.get(load.operands[1], load.operands[1])
            valid = b.value("and", [mask, valid], mask_ty)
        b.op("async_copy", [buffer, slot, ptr, valid])
        b.op("async_commit", [])


def _rewrite(fn: Function, loop: Operation, stages: int, chains: list[_Chain], slice_ops: list[Operation],
             ahead: set[int], needed: set[int], users: dict[Value, list[Operation]],
             shared_limit: int | None) -> None:
    body = loop.regions[0]
    parent = loop.parent
    lb, ub, step = loop.operands[:3]
    iv_ty = lb.type
    prefetch = stages - 1
    # wgmma dots left in flight read their stage during the next trip too: one
    # more stage, and each trip's copies go to the stage the trip before read
    in_flight = _in_flight_dots(body, users, chains)
    # the epilogue branches reading an in-flight result wait for it first (found before
    # the body's ops move into the new loop)
    waits = [(dot, _branches_reading(body, dot, users)) for dot, _ in in_flight]
    stage_bytes = sum(tile_bytes(chain.load.results[0].type) for chain in chains)
    levels = _indirection_levels(slice_ops)
    if shared_limit and levels and (prefetch + (1 if in_flight else 0)) * stage_bytes > shared_limit:
        prefetch = max(1, prefetch // (levels + 1))
    slots = prefetch + (1 if in_flight else 0)
    plan = _tile_ahead(loop, chains, slice_ops, ahead, levels, slots * stage_bytes, shared_limit)
    # with a tile-ahead plan the stages live across the outer loop: made before it
    b = _Builder(plan[0].parent, plan[0], loop.loc) if plan else _Builder(parent, loop, loop.loc)
    barriers = None
    if chains[0].load.name == "tma_load":
        for chain in chains:
            rows, columns, swizzle = tma_box(chain, users)
            chain.box = (rows, columns)
            tensormap = chain.load.operands[0]
            if len(users.get(tensormap, [])) > 1:
                # other loads read the same descriptor (attention's two loops over K and
                # V, say): this tile's box and swizzle get a map of their own
                tensormap = chain.load.operands[0] = _own_map(fn, tensormap)
            set_map_box(fn, tensormap, (rows, columns), swizzle)
        # one mbarrier per stage, or per tile and stage where the body reads the tiles at
        # different points (attention's K tile at the first dot, V at the second) and the
        # later ones are big enough to wait for apart
        apart = not plan and not loop.attrs.get("warp_specialize") and _read_apart(body, chains)
        made = [b.value("local_buffer", [], block_type(int64, [slots], SwizzledSharedLayout(1, 1, 1, (0,))))
                for _ in (chains if apart else chains[:1])]
        for barrier in made:
            b.op("mbarrier_init", [barrier])
        barriers = tuple(made) if apart else (made[0],) * len(chains)
    buffers = []
    for chain in chains:
        load_ty = chain.load.results[0].type
        tile = chain.load_layout
        layout = dataclasses.replace(tile, order=tuple(d + 1 for d in tile.order) + (0,))
        buffers.append(b.value("local_buffer", [], block_type(load_ty.scalar, [slots] + list(load_ty.shape),
                                                              layout)))

    # prologue: the first `prefetch` trips' copies, and the ahead carried values after them;
    # with a tile-ahead plan, those of the outer loop's first trip, before it
    outer_values: dict[Value, Value] = {}
    outer_ok = None
    if plan:
        outer, outer_ops = plan
        outer_values = {outer.regions[0].args[0]: outer.operands[0]}
        for op in outer_ops:
            b.clone(op, outer_values)
        outer_ok = b.value("cmp", [outer.operands[0], outer.operands[1]], int1, pred="lt")
    current = {i: loop.operands[3 + i] for i in ahead}
    first_lb, first_ub, first_step = (outer_values.get(v, v) for v in (lb, ub, step))
    for s in range(prefetch):
        iv = b.value("add", [first_lb, b.value("mul", [first_step, b.constant(s, iv_ty)], iv_ty)],
                     iv_ty) if s else first_lb
        in_range = b.value("cmp", [iv, first_ub], int1, pred="lt")
        if outer_ok is not None:
            in_range = b.value("and", [in_range, outer_ok], int1)
        mapping = {**outer_values, body.args[0]: iv, **{body.args[1 + i]: current[i] for i in ahead}}
        for op in slice_ops:
            _clone_ahead(b, op, mapping, in_range)
        _issue_copies(b, chains, buffers, b.constant(s, int32), mapping, in_range, barriers)
        current = {i: mapping.get(body.terminator.operands[i], body.terminator.operands[i]) for i in ahead}

    # the new loop: the old carried values (ahead ones advanced), then the stage (and
    # with mbarriers the phase of the stage's next completion); with a tile-ahead plan
    # both go on from the outer loop's trip before, which carries them
    extra = [int32] if barriers is None else [int32, int32]
    if plan:
        starts = [b.constant(0, int32) for _ in extra]
        outer_body = plan[0].regions[0]
        carried = [outer_body.add_arg(int32, name) for name in ("stage", "phase")[:len(extra)]]
        inits = [current.get(i, v) for i, v in enumerate(loop.operands[3:])] + carried
    else:
        inits = [current.get(i, v) for i, v in enumerate(loop.operands[3:])] + [b.constant(0, int32) for _ in extra]
    new_body = Region([a.type for a in body.args] + extra,
                      [a.name_hint for a in body.args] + ["stage", "phase"][:len(extra)])
    new_loop = Operation("for", list(loop.operands[:3]) + inits, [r.type for r in loop.results] + extra,
                         dict(loop.attrs), [new_body], loop.loc)
    parent.insert(parent.ops.index(loop), new_loop)
    stage = new_body.args[len(body.args)]
    nb = _Builder(new_body, None, loop.loc)
    if barriers is None:
        nb.op("async_wait", buffers, pending=(prefetch - 1) * len(chains))
    elif len(made) == 1:
        nb.op("mbarrier_wait", [made[0], stage, new_body.args[-1]])
    tiles = {}
    for chain, buffer in zip(chains, buffers):
        tile_ty = block_type(buffer.type.scalar, list(buffer.type.shape[1:]), chain.load_layout)
        tile = nb.value("local_index", [buffer, stage], tile_ty)
        if chain.permute is not None:
            tile = nb.value("permute", [tile], chain.alloc.results[0].type, order=tuple(chain.permute.attrs["order"]))
        tiles[chain.alloc.results[0]] = tile

    chain_ops = {id(op) for c in chains for op in (c.load, c.permute, c.alloc) if op is not None}
    slice_ids = {id(op) for op in slice_ops}
    terminator = body.terminator
    for op in list(body.ops[:-1]):
        if id(op) in chain_ops or (id(op) in slice_ids and id(op) not in needed):
            continue
        body.ops.remove(op)
        new_body.append(op)
    for old, new in list(zip(body.args, new_body.args)) + list(tiles.items()):
        replace_all_uses(new_body, old, new)
    if barriers is not None and len(made) > 1:
        # each tile's mbarrier waited for just before the first op that reads the tile
        for chain, barrier in zip(chains, barriers):
            # (a tile the body never reads: waited for with the first)
            at = _first_reader(new_body, tiles[chain.alloc.results[0]], len(tiles))
            new_body.insert(at, Operation("mbarrier_wait", [barrier, stage, new_body.args[-1]], [], {}, loc=loop.loc))

    # the copies for trip iv + prefetch * step, into the stage every thread has finished reading
    nb.op("barrier", [])
    iv_ahead = nb.value("add", [new_body.args[0], nb.value("mul", [step, nb.constant(prefetch, iv_ty)], iv_ty)],
                        iv_ty)
    in_range = nb.value("cmp", [iv_ahead, ub], int1, pred="lt")
    # slice ops the rest also reads moved into the new body and read its induction
    # variable now: their clones must read the trip ahead too
    mapping = {body.args[0]: iv_ahead, new_body.args[0]: iv_ahead,
               **{body.args[1 + i]: new_body.args[1 + i] for i in ahead}}
    slot = stage
    if in_flight:
        first = nb.value("cmp", [stage, nb.constant(0, int32)], int1, pred="eq")
        before = nb.value("sub", [stage, nb.constant(1, int32)], int32)
        slot = nb.value("select", [first, nb.constant(slots - 1, int32), before], int32)
    # (not where a producer warp issues the copies: it needs no branch to run on into the next tile)
    fused = _fused_trips(parent, new_loop, plan, lb, ub, step, prefetch) if plan and not \
        plan[0].attrs.get("warp_specialize") else None
    scalar_inits, scalar_yields = [], []
    if plan and not plan[0].attrs.get("warp_specialize"):
        next_scalars, next_ok, scalar_inits, scalar_yields, own = _carried_next_trip(plan, parent, new_loop)
        if fused is not None:  # the K loop's end may be one of the scalars now carried
            fused = (fused[0], own.get(fused[1], fused[1]))
    elif plan:
        # a specialized loop's producer and consumers read the scalars apart: computed here
        next_scalars, next_ok = _next_outer_trip(_Builder(parent, new_loop, loop.loc), plan)
    if fused is None:
        for op in slice_ops:
            _clone_ahead(nb, op, mapping, in_range)
        _issue_copies(nb, chains, buffers, slot, mapping, in_range, barriers)
    else:
        # the last `prefetch` trips copy the next tile's first trips instead of none
        on, end = fused
        current, following = Region(), Region()
        take_current = nb.value("or", [in_range, nb.value("xor", [on, nb.constant(True, int1)], int1)], int1)
        nb.op("if", [take_current], regions=[current, following])
        cb = _Builder(current, None, loop.loc)
        for op in slice_ops:
            _clone_ahead(cb, op, mapping, in_range)
        _issue_copies(cb, chains, buffers, slot, mapping, in_range, barriers)
        cb.op("yield", [])
        fb = _Builder(following, None, loop.loc)
        next_values = _next_outer_blocks(fb, plan, next_scalars)
        next_lb, next_ub = (next_values.get(v, v) for v in (lb, ub))
        iv_next = fb.value("add", [next_lb, fb.value("sub", [iv_ahead, end], iv_ty)], iv_ty)
        next_in_range = fb.value("and", [fb.value("cmp", [iv_next, next_ub], int1, pred="lt"), next_ok], int1)
        next_mapping = {**next_values, body.args[0]: iv_next, new_body.args[0]: iv_next}
        for op in slice_ops:
            _clone_ahead(fb, op, next_mapping, next_in_range)
        _issue_copies(fb, chains, buffers, slot, next_mapping, next_in_range, barriers)
        fb.op("yield", [])
    advanced = {i: mapping.get(terminator.operands[i], terminator.operands[i]) for i in ahead}
    yielded = [advanced.get(i, v) for i, v in enumerate(terminator.operands)]
    yielded = [_remap(v, body, new_body) for v in yielded]
    bumped = nb.value("add", [stage, nb.constant(1, int32)], int32)
    wrapped = nb.value("cmp", [bumped, nb.constant(slots, int32)], int1, pred="eq")
    yielded.append(nb.value("select", [wrapped, nb.constant(0, int32), bumped], int32))
    if barriers is not None:
        phase = new_body.args[-1]
        flipped = nb.value("xor", [phase, nb.constant(1, int32)], int32)
        yielded.append(nb.value("select", [wrapped, flipped, phase], int32))
    nb.op("yield", yielded)

    after = parent.ops.index(new_loop) + 1
    drained = [Operation("async_wait", buffers, [], {"pending": 0}, loc=loop.loc)] if barriers is None else \
        [Operation("mbarrier_inval", [barrier], [], {}, loc=loop.loc) for barrier in made]
    if plan:
        # the outer loop's next trip's first copies, once every thread is done with the stages
        # (where the K loop did not copy them in its last trips: fewer trips than stages ahead)
        ab = _Builder(parent, parent.ops[after], loop.loc)
        if fused is not None:
            left, nothing = Region(), Region()
            ab.op("if", [ab.value("xor", [fused[0], ab.constant(True, int1)], int1)], regions=[left, nothing])
            _Builder(nothing, None, loop.loc).op("yield", [])
            ab = _Builder(left, None, loop.loc)
        ab.op("barrier", [])
        next_values = _next_outer_blocks(ab, plan, next_scalars)
        next_lb, next_ub, next_step = (next_values.get(v, v) for v in (lb, ub, step))
        stage_end = new_loop.results[len(loop.results)]
        for j in range(prefetch):
            iv = ab.value("add", [next_lb, ab.value("mul", [next_step, ab.constant(j, iv_ty)], iv_ty)],
                          iv_ty) if j else next_lb
            in_range = ab.value("and", [ab.value("cmp", [iv, next_ub], int1, pred="lt"), next_ok], int1)
            # slice ops the loop's body also reads moved into the new body: they read its iv
            mapping = {**next_values, body.args[0]: iv, new_body.args[0]: iv}
            for op in slice_ops:
                _clone_ahead(ab, op, mapping, in_range)
            slot = stage_end
            if j:
                bumped = ab.value("add", [stage_end, ab.constant(j, int32)], int32)
                wrapped = ab.value("cmp", [bumped, ab.constant(slots, int32)], int1, pred="ge")
                slot = ab.value("select", [wrapped, ab.value("sub", [bumped, ab.constant(slots, int32)], int32),
                                           bumped], int32)
            _issue_copies(ab, chains, buffers, slot, mapping, in_range, barriers)
        if fused is not None:
            ab.op("yield", [])
        new_outer = _carry_through(plan[0], starts + scalar_inits,
                                   list(new_loop.results[len(loop.results):]) + scalar_yields)
        for op in reversed(drained):
            new_outer.parent.insert(new_outer.parent.ops.index(new_outer) + 1, op)
    else:
        for op in reversed(drained):
            parent.insert(after, op)
    if in_flight:
        for dot, index in in_flight:
            if dot.operands[2] not in new_body.args:
                # a rescaled accumulator (`_scaled_in_flight`): the trip before's dot is done
                # before the scaling reads its registers, which it writes in place
                scale = dot.operands[2].defining_op
                carried = new_body.args[1 + index]
                scale.attrs["in_place"] = scale.operands.index(carried)
                new_body.insert(new_body.ops.index(scale),
                                Operation("dot_wait", [carried], [], {"pending": 0}, loc=dot.loc))
            dot.attrs["in_flight"] = 1
        for dot, branches in waits:
            for branch in branches:
                branch.insert(0, Operation("dot_wait", [dot.results[0]], [], {"pending": 0}, loc=dot.loc))
        accumulators = [new_loop.results[index] for _, index in in_flight]
        parent.insert(after, Operation("dot_wait", accumulators, [], {"pending": 0}, loc=loop.loc))
    for old, new in zip(loop.results, new_loop.results):
        replace_all_uses(fn.body, old, new)
    parent.ops.remove(loop)


def _own_map(fn: Function, tensormap: Value) -> Value:
    """A second tensor map of `tensormap`'s descriptor, for one pipelined tile: a
    copy of its `tensormap_create` into a new slot of global scratch memory, or for
    a host descriptor a new map argument the launcher encodes from the same
    descriptor."""
    make = tensormap.defining_op
    if make is not None:
        ctas = int(fn.attrs.get("global_scratch_ctas", 1))
        size = int(fn.attrs["global_scratch_size"])
        new = clone_operation(make, {})
        new.loc = make.loc
        new.attrs["global_offset"] = size // ctas
        make.parent.insert(make.parent.ops.index(make) + 1, new)
        fn.attrs["global_scratch_size"] = size + TENSOR_MAP_BYTES * ctas
        return new.results[0]
    descriptors = list(fn.attrs["tensormaps"])
    descriptors.append(descriptors[host_maps(fn).index(tensormap)])
    copy = fn.body.add_arg(tensormap.type, tensormap.name_hint)
    fn.attrs["tensormaps"] = tuple(descriptors)
    return copy


def _remap(value: Value, old_body: Region, new_body: Region) -> Value:
    if value in old_body.args:
        return new_body.args[old_body.args.index(value)]
    return value
