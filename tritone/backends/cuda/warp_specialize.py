"""Warp specialization of a TMA-pipelined loop (`tl.range(..., warp_specialize=True)`, sm_90+).

`pipeline.py` makes the loop's tiles copies of the copy engine into stages,
issued by thread 0 `num_stages - 1` trips ahead after a barrier of the whole
block (every thread is done with the stage the copies overwrite). Here the
kernel gets one warp more, the *producer*, which issues every copy; the
kernel's own warps, the *consumers*, only wait for their tiles and compute,
and tell the producer per warp when a stage is free:

    prefix, every thread:  the stages; mbarriers `full` (the copy engine filled a stage)
                           and `empty` (each consumer warp is done with it: `num_warps`
                           arrivals); the tensor maps the copies read (`tensormap_create`)
    warp_roles {           the producer warp (warp `num_warps`), then it returns:
        the prologue's copies
        for the loop's trips: wait on `empty[slot]`, then the trip's copies into `slot`
    }
    the consumers:         the kernel as it was without the copies; in the loop, where the
                           barrier before the copies stood, each warp arrives on `empty[slot]`
                           (`mbarrier_release`); after the loop they wait for the producer
                           to be done (`warp_join`) before the mbarriers are invalidated

The producer's wait at trip i is for the consumers' arrival at their trip i on
the same slot: both go through the same slots in the same order, so the
arrival is that slot's `i // stages`-th and its phase is the loop's carried
phase at trip i (the phase the consumers wait on `full` with). The consumers'
block-wide barriers become a named barrier of their threads alone
(`bar.sync 1`), the producer's a `__syncwarp`; the kernel launches with the
extra warp (its metadata's `num_warps`, as Triton reports a specialized
kernel's total), and the producer's registers come from the same budget, so
no `setmaxnreg` is needed (one block per multiprocessor: 160 threads keep 255
registers each, 288 threads 224).

The loop is left to `pipeline.py`'s single-role form where this cannot be done
exactly: a loop inside another region, a second specialized loop, copies
issued ahead of an outer loop's next trip, or a producer that would need
anything but scalar arithmetic (block values, loads, ops with regions).
"""

from __future__ import annotations

from tritone.ir.core import Function, Module, Operation, Region, Value, clone_operation
from tritone.ir.ops import is_pure

from . import smem
from .dot.shared import tile_bytes

ISSUES = ("mbarrier_arrive", "tma_copy")
# ops the producer and the consumers share from before the split
_SHARED = ("local_buffer", "mbarrier_init", "tensormap_create")


def run(module: Module, ctx=None) -> None:
    """Specialize the first TMA-pipelined loop of the kernel that asks for it, where
    the kernel keeps one block per multiprocessor anyway (see `worthwhile`), then
    place shared memory again."""
    options = getattr(ctx, "options", None) or {}
    if int(options.get("target", 80)) < 90:
        return
    fn = module.kernel
    max_shared = options.get("max_shared")
    for loop in [op for op in fn.body.ops if op.name == "for" and op.attrs.get("warp_specialize")]:
        found = _pipelined(fn, loop)
        if found is None or not worthwhile(fn, found[0], int(module.attrs.get("shared", 0)), max_shared):
            continue
        if specialize(fn, loop, *found, int(options.get("num_warps", 4))):
            smem.run(module, ctx)
            return


def worthwhile(fn: Function, made: list[Operation], shared: int, max_shared: int | None) -> bool:
    """Whether specializing the loop of `fn` that the pipeline made `made` for (the
    stages, mbarriers and prologue before it; `fn` needs `shared` bytes) costs
    no blocks per multiprocessor and surely fits: its shared memory already keeps a
    second block off the multiprocessor (otherwise the producer warp, allocated
    registers like every warp, would: an H100 ran a 4-warp attention at 2 blocks
    per multiprocessor single-role and at 1 specialized, 27% slower), and it stays
    within `max_shared` with every tile and scratch buffer before the loop, which
    then lives beside the stages, counted again."""
    if not max_shared:
        return False
    # a multiprocessor holds max_shared + 1 KiB, each block reserving 1 KiB (sm_90, sm_100)
    if 2 * (shared + 1024) <= max_shared + 1024:
        return False
    before = [inner for op in fn.body.ops[:fn.body.ops.index(made[0])] for inner in op.walk()]
    extra = sum(tile_bytes(op.results[0].type) + 1024 for op in before if op.name in ("local_alloc", "local_buffer"))
    extra += sum(smem.scratch_bytes(op) + 128 for op in before)
    return shared + extra + 1024 <= max_shared


def _pipelined(fn: Function, loop: Operation) -> tuple[list[Operation], Operation] | None:
    """(the ops `pipeline.py` put before `loop`, the barrier before its copies in the
    body) where it pipelined the loop's tiles with TMA copies; else None."""
    body = loop.regions[0]
    arrive = next((op for op in body.ops if op.name == "mbarrier_arrive"), None)
    if arrive is None:
        return None
    made_from = arrive.operands[0].defining_op
    if made_from is None or made_from.parent is not fn.body:
        return None
    first = body.ops.index(arrive)
    sync = next((op for op in reversed(body.ops[:first]) if op.name == "barrier"), None)
    if sync is None or not all(is_pure(op) for op in body.ops[body.ops.index(sync) + 1:first]):
        return None
    return fn.body.ops[fn.body.ops.index(made_from):fn.body.ops.index(loop)], sync


def _scalar(op: Operation) -> bool:
    """A pure op without regions computing scalars: the producer may run its own copy."""
    return not op.regions and is_pure(op) and all(not r.type.is_block() for r in op.results)


def specialize(fn: Function, loop: Operation, made: list[Operation], sync: Operation, num_warps: int) -> bool:
    """Split `fn` into a producer warp issuing the copies of pipelined `loop` and
    the consumer warps running the rest; whether it was done. `made`: the ops the
    pipeline put before the loop (stages, mbarriers, the prologue's copies and the
    scalars they read); `sync`: the barrier before the loop's copies."""
    body = loop.regions[0]
    if loop.parent is not fn.body or fn.attrs.get("warp_specialized") or any(
            op.name == "tensormap_at" for op in fn.walk()):
        return False
    issues = [op for op in body.ops if op.name in ISSUES]
    prologue = [op for op in made if op.name in ISSUES]
    if not issues:
        return False
    position = {id(op): i for i, op in enumerate(body.ops)}
    # the body's ops and carried values the copies need (the phase for the producer's wait)
    wanted_ops: set[int] = set()
    wanted_args = {len(body.args) - 1}
    stack = [v for op in issues for v in op.operands] + [body.terminator.operands[-1]]
    while stack:
        v = stack.pop()
        if v in body.args:
            i = body.args.index(v)
            if i and i not in wanted_args:
                wanted_args.add(i)
                stack.append(body.terminator.operands[i - 1])
            continue
        op = v.defining_op
        if op is None or id(op) not in position or id(op) in wanted_ops:
            continue
        if not _scalar(op):
            return False
        wanted_ops.add(id(op))
        stack.extend(op.operands)
    carried = sorted(i for i in wanted_args if i)
    # what the producer reads from before the loop: copies of scalar ops, or the shared prefix
    outside = [v for op in body.ops if id(op) in wanted_ops or op.name in ISSUES for v in op.operands]
    outside += list(loop.operands[:3]) + [loop.operands[2 + i] for i in carried]
    outside += [v for op in prologue for v in op.operands]
    before = {id(op): i for i, op in enumerate(fn.body.ops[:fn.body.ops.index(loop)])}
    copied: set[int] = set()
    shared: set[int] = set()
    stack = list(outside)
    while stack:
        v = stack.pop()
        op = v.defining_op
        if op is None or id(op) in position or id(op) in copied or id(op) in shared:
            continue
        if id(op) not in before:
            return False
        if op.name in _SHARED:
            shared.add(id(op))
        elif _scalar(op):
            copied.add(id(op))
        else:
            return False
        stack.extend(op.operands)
    # the stages and mbarriers, and the shared prefix's operands: scalars computed
    # there too (moved, not copied), in every thread before the split
    shared |= {id(op) for op in made if op.name in ("local_buffer", "mbarrier_init")}
    stack = [v for op in fn.body.ops if id(op) in shared for v in op.operands]
    while stack:
        op = stack.pop().defining_op
        if op is None or id(op) in shared:
            continue
        if id(op) not in before or not (_scalar(op) or op.name in _SHARED):
            return False
        shared.add(id(op))
        copied.discard(id(op))
        stack.extend(op.operands)

    barriers = next(op for op in issues if op.name == "mbarrier_arrive").operands[0]
    empty = Operation("local_buffer", [], [barriers.type], {}, loc=loop.loc)
    init_empty = Operation("mbarrier_init", [empty.results[0]], [], {"count": num_warps}, loc=loop.loc)

    # the producer: copies of the scalars, the prologue's copies, then its loop
    region = Region()
    mapping: dict[Value, Value] = {}
    prologue_ids = {id(op) for op in prologue}
    for op in fn.body.ops[:fn.body.ops.index(loop)]:
        if id(op) in copied or id(op) in prologue_ids:
            new = clone_operation(op, mapping)
            new.loc = op.loc
            region.append(new)
    producer_body = Region([body.args[0].type] + [body.args[i].type for i in carried],
                           [body.args[0].name_hint] + [body.args[i].name_hint for i in carried])
    inner = dict(mapping)
    inner[body.args[0]] = producer_body.args[0]
    for j, i in enumerate(carried):
        inner[body.args[i]] = producer_body.args[1 + j]
    phase = producer_body.args[1 + carried.index(len(body.args) - 1)]
    waited = False
    for op in body.ops[:-1]:
        if op.name in ISSUES and not waited:
            # the consumers are done with the slot the copies overwrite
            slot = inner.get(op.operands[1], op.operands[1])
            producer_body.append(Operation("mbarrier_wait", [empty.results[0], slot, phase], [], {}, loc=op.loc))
            waited = True
        if id(op) in wanted_ops or op.name in ISSUES:
            new = clone_operation(op, inner)
            new.loc = op.loc
            producer_body.append(new)
    producer_body.append(Operation("yield", [inner.get(body.terminator.operands[i - 1],
                                                       body.terminator.operands[i - 1]) for i in carried], [], {},
                                   loc=loop.loc))
    operands = [mapping.get(v, v) for v in list(loop.operands[:3]) + [loop.operands[2 + i] for i in carried]]
    region.append(Operation("for", operands, [body.args[i].type for i in carried], {}, [producer_body], loop.loc))
    region.append(Operation("yield", [], [], {}, loc=loop.loc))
    roles = Operation("warp_roles", [], [], {"num_warps": num_warps}, [region], loop.loc)

    # the consumers: no copies; each warp frees the slot where the barrier before them stood
    slot = issues[0].operands[1]
    at = body.ops.index(sync)
    if slot.defining_op is not None and slot.defining_op.parent is body:
        at = max(at, body.ops.index(slot.defining_op) + 1)  # the slot is computed after the barrier
    body.insert(at, Operation("mbarrier_release", [empty.results[0], slot], [], {}, loc=sync.loc))
    body.ops.remove(sync)
    for op in issues:
        body.ops.remove(op)
    for op in prologue:
        fn.body.ops.remove(op)
    after = fn.body.ops[fn.body.ops.index(loop) + 1:]
    drained = next(op for op in after if op.name == "mbarrier_inval" and op.operands[0] is barriers)
    at = fn.body.ops.index(drained)
    fn.body.insert(at, Operation("warp_join", [], [], {"num_warps": num_warps}, loc=loop.loc))
    fn.body.insert(at + 2, Operation("mbarrier_inval", [empty.results[0]], [], {}, loc=loop.loc))
    _drop_unused(fn, body)
    _drop_unused(fn, fn.body)

    # the prefix, in its order, then the split
    prefix = [op for op in fn.body.ops if id(op) in shared]
    for op in prefix:
        fn.body.ops.remove(op)
    for i, op in enumerate(prefix + [empty, init_empty, roles]):
        fn.body.insert(i, op)
    fn.attrs["warp_specialized"] = 1
    return True


def _drop_unused(fn: Function, region: Region) -> None:
    """Remove the pure ops of `region` whose results nothing in `fn` reads (the copies' scalars)."""
    while True:
        used = {id(v) for op in fn.walk() for v in op.operands}
        dead = [op for op in region.ops if is_pure(op) and not op.regions and op.results
                and not any(id(r) in used for r in op.results)]
        if not dead:
            return
        for op in dead:
            region.ops.remove(op)
