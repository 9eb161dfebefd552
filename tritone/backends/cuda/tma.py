"""TMA for tensor descriptors on sm_90+: the GPU pass that runs before
`passes/lower_descriptors.py`.

On sm_90 by default, as Triton does; TRITONE_TMA=1 (`knobs.nvidia.tma`) asks
for it from sm_90 on (sm_100 and sm_120 too), TRITONE_TMA=0 for pointer code.

Host descriptors. For each
host `TensorDescriptor` argument of the kernel whose block the copy engine
can move (`tensormap.tma_unsupported_reason`), the `descriptor_load` and
`descriptor_store` ops on the argument itself become `tma_load` and
`tma_store` ops on a new kernel argument of type `tensormap<...>`, appended
after all others: the 128-byte tensor map the launcher encodes for that
descriptor (`launch_plan.py`). Appending keeps the indices of the other
arguments (their `arg_attrs`) as they were. The function attribute
`tensormaps` lists, per appended argument in order, the index of the
descriptor argument it belongs to; `pointer_descriptors` maps the index of
each host descriptor left to pointer code to the reason.

Device descriptors. A `make_tensor_descriptor` whose every use is a `descriptor_load` or
`descriptor_store` of a block the copy engine can move gets a
`tensormap_create` right after it: the kernel encodes the tensor map itself
into 128 bytes of the program's global scratch memory (`global_offset`
within it), which the launcher asks `triton.set_allocator`'s allocator for.
A descriptor carried through loops or branches (its makes, loop-carried
values and branch results: one web) gets one such slot, which every make of
it writes and whose loads and stores read it through `tensormap_at`.
The kernel attribute `global_scratch_size` is the bytes per program (times
`num_ctas`, as Triton asks the allocator for). Its
loads and stores become `tma_load` and `tma_store` on that map, as above.

Both show under TRITONE_DUMP_IR, and the op names show the choice per op.

What stays pointer code (`lower_descriptors` after this pass): atomics,
gather and scatter, descriptors passed to calls, host descriptors reached
through loop-carried values or branches, and every descriptor below sm_90; and, chosen at run time, a load
whose innermost offset is not a multiple of 16 bytes, or a store where that
holds or an offset is negative: the copy engine faults on those ("illegal
instruction", seen on an H100), where Triton's descriptors allow them. A
TMA load then sits in an `if` whose other branch keeps the descriptor op; a
TMA store takes the check and the descriptor's base, shape and strides as
extra operands, and where the check fails the threads write the staged tile
out themselves, element by element within bounds (no second copy of the
block in registers, which pointer code would keep beside a loop's
accumulator). A check that axis info (`axis_info.py`) proves true is left
out, so offsets such as `pid * BLOCK` get no branch. A load of an fp8 type the copy engine
cannot fill with NaN takes the shape and the NaN-padding flag as extra
operands, so that the code generator writes the padding itself.

A 2-D map that only stores serve stages its blocks in the copy engine's
128-byte swizzle, one 128-byte column at a time (`_swizzle_stores`): the
threads' writes into the staged tile then spread over the banks, where
unswizzled rows of 256 bytes or more put an `stmatrix`'s eight rows on the
same ones (tutorial 09's TMA persistent matmul, fp16 at K=512 on an H100:
428 to 500 TFLOP/s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir.core import Builder, Function, Module, Operation, Region, Value, replace_all_uses
from ...ir.types import int1, tensordesc_type, tensormap_type
from .axis_info import AxisInfoMap, analyze
from .tensormap import (
    MAX_BOX_DIM,
    SOFTWARE_NAN_FILL,
    TENSOR_MAP_BYTES,
    TMA_COORDINATE_ALIGN_BYTES,
    TMA_MIN_ARCH,
    element_key,
    tma_unsupported_reason,
)

if TYPE_CHECKING:
    from ...passes import PassContext

_TMA_ACCESSES = ("descriptor_load", "descriptor_store")
# ops through which a descriptor value only flows into another of its web
_LINKING_OPS = ("for", "if", "while", "yield", "condition")
# TMA unless asked for stops here: from sm_100 on tritone's dots are mma.sync, whose tiles
# the copy engine's pipeline does not write, and pointer code pipelines them with cp.async
TMA_DEFAULT_BELOW = 100
# the swizzle of staged store blocks (`_swizzle_stores`): the copy engine's widest
SWIZZLE_BYTES = 128


def run(module: Module, ctx: PassContext) -> None:
    """Rewrite the descriptor loads and stores of `module`'s kernel as TMA copies
    when the target (`ctx.options["target"]`) is sm_90 or newer: those of host
    and made descriptors alike, as `ctx.options["tma"]` (`knobs.nvidia.tma`)
    says: unset, below sm_100 only (the targets whose dots read TMA's tiles); true,
    everywhere from sm_90; false, nowhere."""
    options = getattr(ctx, "options", None) or {}
    target = int(options.get("target", 0))
    if target < TMA_MIN_ARCH:
        return
    fn = module.kernel
    if not fn.attrs.get("kernel"):
        return
    choice = options.get("tma")
    if choice is False or (choice is None and target >= TMA_DEFAULT_BELOW):
        return
    facts = _rewrite_host_descriptors(fn)
    _rewrite_device_descriptors(fn, facts, int(options.get("num_ctas", 1) or 1))
    _swizzle_stores(fn)


def _rewrite_host_descriptors(fn: Function) -> AxisInfoMap | None:
    uses: dict[Value, list[Operation]] = {}
    for op in fn.walk():
        if op.name in _TMA_ACCESSES:
            uses.setdefault(op.operands[0], []).append(op)
    if not uses:
        return None
    tensormaps: list[int] = []
    pointer: dict[int, str] = {}
    facts = analyze(fn)
    for index, arg in enumerate(list(fn.args)):
        if not isinstance(arg.type, tensordesc_type):
            continue
        reason = tma_unsupported_reason(arg.type)
        if reason is not None:
            pointer[index] = reason
            continue
        if arg not in uses:
            continue
        hint = f"{arg.name_hint}_tensormap" if arg.name_hint else None
        tensormap = fn.body.add_arg(tensormap_type(arg.type.block), hint)
        tensormaps.append(index)
        for op in uses[arg]:
            _rewrite(op, tensormap, arg.type, facts)
    if tensormaps:
        fn.attrs["tensormaps"] = tuple(tensormaps)
    if pointer:
        fn.attrs["pointer_descriptors"] = pointer
    return facts


def _rewrite_device_descriptors(fn: Function, facts: AxisInfoMap | None, num_ctas: int) -> None:
    """Give the descriptors made in the kernel whose uses are all loads and stores
    of blocks TMA can move a tensor map encoded by the kernel, and those ops TMA.
    A program's scratch is `num_ctas` times its maps' bytes: Triton gives each
    block of a cluster its own, and the allocator is asked for as much (tritone
    runs a program as one block)."""
    webs = _descriptor_webs(fn)
    if not webs:
        return
    offset = 0
    for makes, accesses in webs:
        if facts is None:
            facts = analyze(fn)
        desc_type = makes[0].results[0].type
        maps = []
        for make in makes:
            builder = Builder()
            builder.set_insertion_point(make.parent, make.parent.ops.index(make) + 1)
            builder.loc = make.loc
            maps.append(builder.create_value("tensormap_create", list(make.operands), tensormap_type(desc_type.block),
                                             {"global_offset": offset, "padding": make.attrs["padding"]}))
            hint = make.results[0].name_hint
            if hint:
                maps[-1].name_hint = f"{hint}_tensormap"
        if len(makes) == 1 and all(op.operands[0] is makes[0].results[0] for op in accesses):
            tensormap = maps[0]
        else:
            # carried through loops or branches: every make writes the same bytes, read
            # where they are at each access (the last one made before it)
            builder = Builder()
            builder.set_insertion_point(fn.body, 0)
            tensormap = builder.create_value("tensormap_at", [], tensormap_type(desc_type.block),
                                             {"global_offset": offset})
        offset += TENSOR_MAP_BYTES
        for op in accesses:
            _rewrite(op, tensormap, desc_type, facts)
    if offset:
        fn.attrs["global_scratch_size"] = offset * num_ctas
        fn.attrs["global_scratch_ctas"] = num_ctas


def _descriptor_webs(fn: Function) -> list[tuple[list[Operation], list[Operation]]]:
    """The descriptors made in `fn` that TMA can serve, as webs: the values one
    descriptor flows through (a `make_tensor_descriptor`, loop-carried values,
    branch results) with the makes that start them and the loads and stores that
    read them. A web is left out when a value of it comes from elsewhere (a
    host descriptor, a call) or goes elsewhere (an atomic, a gather, a call)."""
    parent: dict[Value, Value] = {}

    def find(v: Value) -> Value:
        while parent.get(v, v) is not v:
            parent[v] = parent.get(parent[v], parent[v])
            v = parent[v]
        return v

    def join(a: Value, b: Value) -> None:
        if isinstance(a.type, tensordesc_type) and isinstance(b.type, tensordesc_type):
            parent[find(a)] = find(b)

    for op in fn.walk():
        if op.name == "for":
            body = op.regions[0]
            for i, init in enumerate(op.operands[3:]):
                join(init, body.args[1 + i])
                join(body.args[1 + i], op.results[i])
                join(body.args[1 + i], body.terminator.operands[i])
        elif op.name == "if":
            for region in op.regions:
                for i, v in enumerate(region.terminator.operands):
                    join(v, op.results[i])
        elif op.name == "while":
            before, after = op.regions
            for i, init in enumerate(op.operands):
                join(init, before.args[i])
                join(after.terminator.operands[i], before.args[i])
            for i, v in enumerate(before.terminator.operands[1:]):
                join(v, after.args[i])
                join(v, op.results[i])
    webs: dict[Value, tuple[list[Operation], list[Operation]]] = {}
    refused = {find(arg) for arg in fn.args if isinstance(arg.type, tensordesc_type)}
    for op in fn.walk():
        if op.name == "make_tensor_descriptor":
            webs.setdefault(find(op.results[0]), ([], []))[0].append(op)
            continue
        linking = op.name in _LINKING_OPS
        for index, v in enumerate(op.operands):
            if isinstance(v.type, tensordesc_type):
                if op.name in _TMA_ACCESSES and index == 0:
                    webs.setdefault(find(v), ([], []))[1].append(op)
                elif not linking:
                    refused.add(find(v))
        # descriptors coming from elsewhere: a call's results, a region argument of no loop
        comes = [] if linking else list(op.results)
        if op.name not in ("for", "while"):
            comes += [arg for region in op.regions for arg in region.args]
        refused.update(find(v) for v in comes if isinstance(v.type, tensordesc_type))
    return [(makes, accesses) for root, (makes, accesses) in webs.items()
            if makes and accesses and root not in refused
            and tma_unsupported_reason(makes[0].results[0].type) is None]


def _rewrite(op: Operation, tensormap: Value, desc_type: tensordesc_type, facts: AxisInfoMap) -> None:
    """Replace descriptor op `op` (operands: desc, shape.., strides.., nan flag
    or value, offsets..) with its TMA op, behind a run-time check where the
    offsets may be ones the copy engine faults on."""
    rank = desc_type.rank
    shape = op.operands[1:1 + rank]
    extra = op.operands[1 + 2 * rank]
    offsets = op.operands[2 + 2 * rank:]
    region = op.parent
    builder = Builder()
    builder.set_insertion_point(region, region.ops.index(op))
    builder.loc = op.loc
    loading = op.name == "descriptor_load"
    condition = _tma_condition(builder, offsets, desc_type.element_ty.itemsize, facts, stores=not loading)
    if loading:
        operands = [tensormap, *offsets]
        if element_key(desc_type) in SOFTWARE_NAN_FILL:
            operands += [*shape, extra]
        result = op.results[0]
        if condition is None:
            loaded = builder.create_value("tma_load", operands, result.type, {})
            replace_all_uses(region, result, loaded)
            region.ops.remove(op)
            return
        by_tma, by_pointers = Region(), Region()
        choice = builder.create("if", [condition], [result.type], regions=[by_tma, by_pointers])
        region.ops.remove(op)
        replace_all_uses(region, result, choice.results[0])
        inner = Builder(by_tma)
        inner.loc = op.loc
        inner.create("yield", [inner.create_value("tma_load", operands, result.type, {})], [], {})
        by_pointers.append(op)
        inner.set_insertion_point_to_end(by_pointers)
        inner.create("yield", [result], [], {})
        return
    operands = [tensormap, extra, *offsets]
    if condition is not None:
        # where the check fails, the staged tile is written out by the threads
        # (the descriptor's base, shape and strides place it, bounds dropped)
        operands += [condition, op.operands[0], *shape, *op.operands[1 + rank:1 + 2 * rank]]
    builder.create("tma_store", operands, [], {})
    region.ops.remove(op)


def _swizzle_stores(fn: Function) -> None:
    """Stage the blocks of 2-D stores in the copy engine's 128-byte swizzle, one
    column of 128 bytes after another, where a map serves nothing but stores: its
    box becomes one column (at most 256 rows) of the block, and the threads'
    writes of a row's 16-byte pieces spread over every bank (rows 256 or 512
    bytes apart, unswizzled, put the eight rows of an `stmatrix` on the same
    banks). The map's box and swizzle go where the launcher or the kernel encodes
    it: the kernel attribute `tensormap_boxes`, or the `tensormap_create`."""
    users: dict[Value, list[Operation]] = {}
    for op in fn.walk():
        if op.name in ("tma_load", "tma_store"):
            users.setdefault(op.operands[0], []).append(op)
    for tensormap, ops in users.items():
        make = tensormap.defining_op
        if make is not None and make.name != "tensormap_create":
            continue  # a map carried through loops (`tensormap_at`) keeps its box
        if any(op.name != "tma_store" for op in ops) or tensormap.type.rank != 2:
            continue
        rows, width = tensormap.type.block.shape
        itemsize = tensormap.type.element_ty.itemsize
        if rows % 8 or width * itemsize % SWIZZLE_BYTES:
            continue
        box = (min(rows, MAX_BOX_DIM), SWIZZLE_BYTES // itemsize)
        for op in ops:
            op.attrs.update(box=box, swizzle=SWIZZLE_BYTES)
        set_map_box(fn, tensormap, box, SWIZZLE_BYTES)


def host_maps(fn: Function) -> list[Value]:
    """The kernel's tensor map arguments, in the order of its `tensormaps` attribute."""
    return [a for a in fn.body.args if isinstance(a.type, tensormap_type)]


def set_map_box(fn: Function, tensormap: Value, box: tuple[int, int], swizzle: int) -> None:
    """Encode `tensormap` with `box` and `swizzle` (bytes) in place of its block
    and no swizzle: on its `tensormap_create`, or for a host descriptor's map in
    the kernel attribute `tensormap_boxes` the launcher reads."""
    if tensormap.defining_op is not None:
        tensormap.defining_op.attrs.update(box=box, swizzle=swizzle)
        return
    boxes = dict(fn.attrs.get("tensormap_boxes") or {})
    boxes[host_maps(fn).index(tensormap)] = (box, swizzle)
    fn.attrs["tensormap_boxes"] = boxes


def _tma_condition(builder: Builder, offsets: list[Value], itemsize: int, facts: AxisInfoMap,
                   stores: bool) -> Value | None:
    """The run-time check that the copy engine takes a box at `offsets`: the
    innermost offset a multiple of 16 bytes, and for a store every offset >= 0
    (a box starting before the tensor faults on a store, not on a load). Only
    the parts axis info cannot prove are checked; None when nothing is left."""
    checks: list[Value] = []
    zero = None

    def constant(value: int) -> Value:
        return builder.create_value("constant", [], offsets[0].type, {"value": value})

    inner = offsets[-1]
    step = TMA_COORDINATE_ALIGN_BYTES // itemsize if itemsize < TMA_COORDINATE_ALIGN_BYTES else 1
    if step > 1 and facts.get(inner).element_divisibility() % step:
        remainder = builder.create_value("and", [inner, constant(step - 1)], inner.type, {})
        zero = constant(0)
        checks.append(builder.create_value("cmp", [remainder, zero], int1, {"pred": "eq"}))
    if stores:
        for offset in offsets:
            known = facts.get(offset).constant
            if known is not None and known >= 0:
                continue
            zero = zero or constant(0)
            checks.append(builder.create_value("cmp", [offset, zero], int1, {"pred": "ge"}))
    condition = None
    for check in checks:
        condition = check if condition is None else builder.create_value("and", [condition, check], int1, {})
    return condition
