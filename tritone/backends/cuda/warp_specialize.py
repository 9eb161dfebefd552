"""Warp specialization of TMA-pipelined loops (`tl.range(..., warp_specialize=True)`, sm_90+).

`pipeline.py` makes a loop's tiles copies of the copy engine into stages,
issued by thread 0 `num_stages - 1` trips ahead after a barrier of the whole
block (every thread is done with the stage the copies overwrite). This pass,
after shared memory is placed, gives the kernel one warp more, the
*producer*, which issues every copy; the kernel's own warps, the
*consumers*, only wait for their tiles and compute, and tell the producer
per warp when a stage is free:

    prefix, every thread:  the stages; mbarriers `full` (the copy engine filled a stage)
                           and `empty` (each consumer warp is done with it: `num_warps`
                           arrivals); the tensor maps the copies read (`tensormap_create`)
    warp_roles {           the producer warp (warp `num_warps`), then it returns:
        the kernel sliced to what the copies need: scalars, loops, the copies,
        each trip's copies after a wait on `empty` for their stage
    }
    the consumers:         the kernel as it was without the copies; in a pipelined loop,
                           where the barrier before the copies stood, each warp arrives on
                           `empty` (`mbarrier_release`); after the loop they wait for the
                           producer to be done (`warp_join`) before the mbarriers go

The specialized loop is the pipelined loop itself or, in a persistent
kernel, the loop over tiles around it (whose stages then live across it,
`pipeline._tile_ahead` without the fused branch: the producer runs on into
the next tile by itself). Phases: see `_Producer.wait`. The consumers'
block-wide barriers become a named barrier of their threads alone
(`bar.sync 1`), the producer's a `__syncwarp`; the kernel launches with the
extra warp (its metadata's `num_warps`, as Triton reports a specialized
kernel's total), whose registers come from the same budget, so no
`setmaxnreg` is needed.

Only where the kernel's shared memory already keeps a second block off the
multiprocessor (`worthwhile`): the register file is split between the four
schedulers, so two blocks of 5 warps at 190 registers do not fit where two
of 4 do. The loop is left to `pipeline.py`'s single-role form where the
split cannot be done exactly: a loop inside another region, a second
specialized loop, copies in a branch, descriptors carried through loops
(`tensormap_at`), or a producer that would need anything but scalar
arithmetic (block values, loads, ops with effects).
"""

from __future__ import annotations

from tritone.ir.core import Function, Module, Operation, Region, Value, clone_operation
from tritone.ir.ops import is_pure
from tritone.ir.types import int1, int32

from . import smem
from .dot.shared import tile_bytes

_ISSUES = ("mbarrier_arrive", "tma_copy")
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
        if found is None or not worthwhile(fn, found, int(module.attrs.get("shared", 0)), max_shared):
            continue
        if specialize(fn, loop, found, int(options.get("num_warps", 4))):
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


def _pipelined(fn: Function, loop: Operation) -> list[Operation] | None:
    """The ops `pipeline.py` put before `loop` (stages, mbarriers, the first copies)
    where it pipelined tiles of `loop` or of the loop inside it with TMA copies; else None."""
    arrive = next((op for op in loop.walk() if op.name == "mbarrier_arrive"), None)
    if arrive is None:
        return None
    made_from = arrive.operands[0].defining_op
    if made_from is None or made_from.parent is not fn.body:
        return None
    return fn.body.ops[fn.body.ops.index(made_from):fn.body.ops.index(loop)]


def _scalar(op: Operation) -> bool:
    """A pure op without regions computing scalars: the producer may run its own copy."""
    return not op.regions and is_pure(op) and all(not r.type.is_block() for r in op.results)


def _has_copies(op: Operation) -> bool:
    return any(inner.name in _ISSUES for inner in op.walk())


def _pipelined_body(region: Region, full: Value) -> bool:
    """Whether `region` is the body of a loop whose tiles the copies bring (it waits
    on `full`, carrying the stage and its phase as its last two values)."""
    return isinstance(region.parent, Operation) and region.parent.name == "for" and any(
        op.name == "mbarrier_wait" and op.operands[0] is full for op in region.ops)


def _sync_before(region: Region, arrive: Operation) -> Operation | None:
    """The barrier the pipeline put before the copies that `arrive` starts (only
    scalars between them), or None."""
    at = region.ops.index(arrive)
    sync = next((op for op in reversed(region.ops[:at]) if not is_pure(op)), None)
    return sync if sync is not None and sync.name == "barrier" else None


class _Needs:
    """What the producer needs of one region: its ops (by id), the carried values of
    the loop it is the body of (indices into the body's arguments), and values from
    enclosing regions."""

    def __init__(self):
        self.ops: set[int] = set()
        self.args: set[int] = set()
        self.outside: list[Value] = []


class _Producer:
    """The producer's code: of each region, the scalar ops, loops and copies the
    copies need; a wait on `empty` before each trip's copies."""

    def __init__(self, fn: Function, full: Value, empty: Value):
        self.fn, self.full, self.empty = fn, full, empty
        self.slots = full.type.shape[0]
        self._loops: dict[int, _Needs | None] = {}

    def needs(self, region: Region) -> _Needs | None:
        """None where the producer cannot run what the copies need (block values,
        loads, effects, branches holding copies)."""
        found = _Needs()
        seeds: list[Value] = []
        last_pipelined = None
        for op in region.ops:
            if op.name in _ISSUES:
                seeds += op.operands
                after_run = last_pipelined is not None and not _pipelined_body(region, self.full)
                if op.name == "mbarrier_arrive" and after_run:
                    seeds += last_pipelined.results[-2:]  # the stage and phase the loop ended at
            elif op.name == "for" and _has_copies(op):
                inner = self.loop_needs(op)
                if inner is None:
                    return None
                seeds += list(op.operands[:3]) + [op.operands[2 + i] for i in inner.args] + inner.outside
                if _pipelined_body(op.regions[0], self.full):
                    last_pipelined = op
            elif op.regions and _has_copies(op):
                return None
        if _pipelined_body(region, self.full):
            seeds += region.args[-2:]
        loop_body = isinstance(region.parent, Operation) and region.parent.name == "for"
        stack = seeds
        while stack:
            v = stack.pop()
            if v.owner is region and not isinstance(v.owner, Operation):
                if loop_body and v.index and v.index not in found.args:
                    found.args.add(v.index)
                    stack.append(region.terminator.operands[v.index - 1])
                continue
            op = v.defining_op
            if op is None or op.parent is not region:
                if not (v.owner is self.fn.body and op is None):
                    found.outside.append(v)
                continue
            if op.name == "for" and _has_copies(op):
                inner = self.loop_needs(op)
                if inner is None or v.index + 1 not in inner.args:
                    return None  # a value the loop carries that its copies do not need
                continue
            if id(op) in found.ops:
                continue
            if not (_scalar(op) or (op.name in _SHARED and region is self.fn.body)):
                return None
            found.ops.add(id(op))
            stack.extend(op.operands)
        return found

    def loop_needs(self, loop: Operation) -> _Needs | None:
        if id(loop) not in self._loops:
            self._loops[id(loop)] = self.needs(loop.regions[0])
        return self._loops[id(loop)]

    def build(self, region: Region, into: Region, mapping: dict[Value, Value], needs: _Needs,
              skip: set[int]) -> None:
        """Append to `into` the producer's copies of `region`'s needed ops (not those of `skip`)."""
        last_pipelined = None
        for op in region.ops:
            if op is region.terminator and op.name == "yield":
                continue
            if op.name == "for" and _has_copies(op):
                into.append(self.build_loop(op, mapping))
                if _pipelined_body(op.regions[0], self.full):
                    last_pipelined = op
                continue
            if op.name == "mbarrier_arrive":
                self.wait(region, op, last_pipelined, into, mapping)
            if (id(op) in needs.ops and id(op) not in skip) or op.name in _ISSUES:
                new = clone_operation(op, mapping)
                new.loc = op.loc
                into.append(new)

    def build_loop(self, loop: Operation, mapping: dict[Value, Value]) -> Operation:
        needs = self.loop_needs(loop)
        body = loop.regions[0]
        carried = sorted(needs.args)
        new_body = Region([body.args[0].type] + [body.args[i].type for i in carried],
                          [body.args[0].name_hint] + [body.args[i].name_hint for i in carried])
        mapping[body.args[0]] = new_body.args[0]
        for j, i in enumerate(carried):
            mapping[body.args[i]] = new_body.args[1 + j]
        self.build(body, new_body, mapping, needs, set())
        yielded = [body.terminator.operands[i - 1] for i in carried]
        new_body.append(Operation("yield", [mapping.get(v, v) for v in yielded], [], {}, loc=loop.loc))
        operands = list(loop.operands[:3]) + [loop.operands[2 + i] for i in carried]
        new = Operation("for", [mapping.get(v, v) for v in operands], [body.args[i].type for i in carried], {},
                        [new_body], loop.loc)
        for j, i in enumerate(carried):
            mapping[loop.results[i - 1]] = new.results[j]
        return new

    def wait(self, region: Region, arrive: Operation, last_pipelined: Operation | None, into: Region,
             mapping: dict[Value, Value]) -> None:
        """Before a trip's copies into `slot`, wait until the consumers freed it.

        In the loop, at trip i (of all the loop's runs, stage and phase carried from one
        to the next), the copies go where the consumers' trip i freed a stage: its phase
        is the trip's (`i // slots`, both sides go through the slots in the same order).
        After a run of the loop (a persistent kernel's next tile) the copy into `slot`
        waits for the latest release of it, at trip r = n - slots + j + d of the n trips
        so far (copy j, d = 1 where the trip after frees a stage, a dot left in flight):
        its phase is the loop's last ^ 1 ^ (stage_end + j + d >= slots). Before any run
        the stages are fresh: no wait."""
        slot = mapping.get(arrive.operands[1], arrive.operands[1])
        if _pipelined_body(region, self.full):
            phase = mapping[region.args[-1]]
        elif last_pipelined is not None:
            stage_end, phase_end = (mapping[v] for v in last_pipelined.results[-2:])
            loc = arrive.loc

            def value(name, operands, ty, **attrs):
                op = Operation(name, operands, [ty], attrs, loc=loc)
                into.append(op)
                return op.results[0]

            def constant(number, ty):
                return value("constant", [], ty, value=number)

            wrapped = value("cmp", [slot, stage_end], int1, pred="lt")
            inner_arrive = next(op for op in last_pipelined.regions[0].ops if op.name == "mbarrier_arrive")
            if inner_arrive.operands[1] is not last_pipelined.regions[0].args[-2]:  # d = 1: the stage before
                last = value("cmp", [slot, constant(self.slots - 1, int32)], int1, pred="eq")
                wrapped = value("or", [wrapped, last], int1)
            flipped = value("xor", [phase_end, constant(1, int32)], int32)
            phase = value("select", [wrapped, phase_end, flipped], int32)
        else:
            return
        into.append(Operation("mbarrier_wait", [self.empty, slot, phase], [], {}, loc=arrive.loc))


def specialize(fn: Function, loop: Operation, made: list[Operation], num_warps: int) -> bool:
    """Split `fn` into a producer warp issuing the copies of `loop` (a pipelined loop,
    or a loop around one: a persistent kernel's loop over tiles) and the consumer
    warps running the rest; whether it was done. `made`: the ops the pipeline put
    before the loop (stages, mbarriers, the first copies and the scalars they read)."""
    if loop.parent is not fn.body or fn.attrs.get("warp_specialized") or any(
            op.name == "tensormap_at" for op in fn.walk()):
        return False
    arrive = next(op for op in loop.walk() if op.name == "mbarrier_arrive")
    full = arrive.operands[0]
    empty = Operation("local_buffer", [], [full.type], {}, loc=loop.loc)
    producer = _Producer(fn, full, empty.results[0])
    top = producer.needs(fn.body)
    if top is None:
        return False
    # ops after the loop are not the producer's
    after = {id(op) for op in fn.body.ops[fn.body.ops.index(loop) + 1:]}
    if any(id(op) in top.ops for op in fn.body.ops if id(op) in after):
        return False
    # the shared prefix (stages, mbarriers, tensor maps, and the scalars they read) runs in
    # every thread before the split; the producer copies the other scalars it needs
    shared = {id(op) for op in fn.body.ops if id(op) in top.ops and op.name in _SHARED}
    shared |= {id(op) for op in made if op.name in ("local_buffer", "mbarrier_init")}
    stack = [v for op in fn.body.ops if id(op) in shared for v in op.operands]
    while stack:
        op = stack.pop().defining_op
        if op is None or id(op) in shared:
            continue
        if not (_scalar(op) or op.name in _SHARED) or op.parent is not fn.body:
            return False
        shared.add(id(op))
        stack.extend(op.operands)

    init_empty = Operation("mbarrier_init", [empty.results[0]], [], {"count": num_warps}, loc=loop.loc)
    region = Region()
    producer.build(fn.body, region, {}, top, shared | after)
    region.append(Operation("yield", [], [], {}, loc=loop.loc))
    roles = Operation("warp_roles", [], [], {"num_warps": num_warps}, [region], loop.loc)

    # the consumers: no copies; in a pipelined loop each warp frees the stage where the
    # barrier before the copies stood, and elsewhere that barrier goes with the copies
    for arrive in [op for op in fn.walk() if op.name == "mbarrier_arrive"]:
        where = arrive.parent
        sync = _sync_before(where, arrive)
        if sync is None:
            continue
        if _pipelined_body(where, full):
            slot = arrive.operands[1]
            at = where.ops.index(sync)
            if slot.defining_op is not None and slot.defining_op.parent is where:
                at = max(at, where.ops.index(slot.defining_op) + 1)  # the slot is computed after the barrier
            where.insert(at, Operation("mbarrier_release", [empty.results[0], slot], [], {}, loc=sync.loc))
        where.ops.remove(sync)
    for op in [op for op in fn.walk() if op.name in _ISSUES]:
        op.parent.ops.remove(op)
    drained = next(op for op in fn.body.ops[fn.body.ops.index(loop) + 1:]
                   if op.name == "mbarrier_inval" and op.operands[0] is full)
    at = fn.body.ops.index(drained)
    fn.body.insert(at, Operation("warp_join", [], [], {"num_warps": num_warps}, loc=loop.loc))
    fn.body.insert(at + 2, Operation("mbarrier_inval", [empty.results[0]], [], {}, loc=loop.loc))
    _drop_unused(fn)

    # the prefix, in its order, then the split
    prefix = [op for op in fn.body.ops if id(op) in shared]
    for op in prefix:
        fn.body.ops.remove(op)
    for i, op in enumerate(prefix + [empty, init_empty, roles]):
        fn.body.insert(i, op)
    fn.attrs["warp_specialized"] = 1
    return True


def _drop_unused(fn: Function) -> None:
    """Remove the pure ops of `fn` whose results nothing reads (the copies' scalars)."""
    while True:
        used = {id(v) for op in fn.walk() for v in op.operands}
        dead = [op for op in fn.walk() if is_pure(op) and not op.regions and op.results
                and not any(id(r) in used for r in op.results)]
        if not dead:
            return
        for op in dead:
            op.parent.ops.remove(op)
