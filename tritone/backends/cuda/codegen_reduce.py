"""Code generation for `reduce` and `scan`.

The combine region becomes a device function `tt_combineN(a..., b..., out...)`
(the region's ops as C++), called wherever two partial results meet, always
with the lower-index part on the left (the suffix for reverse scans), so that
every thread holding a result computes it in the same order; a combine that is
one commutative op (sum, max, ...) skips the lane-dependent swap.

Reduce: each thread combines its own registers along the axis (in index
order), then the lanes along the axis by `shfl.xor` butterflies, then the
warps along the axis through shared memory: lane j of every warp reads warp
j's partial result and the lanes combine them by butterflies again (where
the lanes of an output have the index bits for it). The results are in the operand layout's slice.
When warps follow, only the lowest lane of each group needs the lanes' result in
order (it alone writes the warp's partial), so that first butterfly skips the swap
too, as Triton's does.

Scan: each thread scans its runs of consecutive registers (chunks), the lanes
along the axis scan the chunk totals (Hillis-Steele over `shfl.idx`), and the
segments that warps and register repetitions make along the axis pass their
totals through shared memory to all later segments.
"""

from __future__ import annotations

from tritone.ir.core import Operation, Region, Value
from tritone.ir.ops import OP_SPECS

from ...ir.layouts import Coord, LinearLayout
from .codegen_base import CodegenError, Emitter, emits, linear_index_expr, needs_scratch, row_major_strides
from .codegen_types import ctype


def combine_function(em: Emitter, op: Operation) -> str:
    """Emit the op's combine region as a device function; its name. Regions
    that compute the same thing share one function (a bitonic sort's hundreds
    of sums would otherwise each get their own)."""
    region: Region = op.regions[0]
    types = [ctype(v.type) for v in op.operands]
    key = _region_key(region, types)
    known = em.memo.setdefault("combine functions", {})
    if key is not None and key in known:
        return known[key]
    name = _emit_combine(em, region, types)
    if key is not None:
        known[key] = name
    return name


def _region_key(region: Region, types: list[str]) -> tuple | None:
    """What a combine region computes, independent of its values' names: each op's
    name, attributes, operands (by position) and result types. None when the
    region holds nested regions or uses a value from outside."""
    ids = {arg: f"arg{i}" for i, arg in enumerate(region.args)}
    parts: list = [tuple(types)]
    for index, inner in enumerate(region.ops):
        if inner.regions or any(v not in ids for v in inner.operands):
            return None
        parts.append((inner.name, repr(sorted(inner.attrs.items(), key=lambda item: item[0])),
                      tuple(ids[v] for v in inner.operands), tuple(str(r.type) for r in inner.results)))
        for k, result in enumerate(inner.results):
            ids[result] = f"op{index}.{k}"
    return tuple(parts)


def _emit_combine(em: Emitter, region: Region, types: list[str]) -> str:
    n = len(types)
    name = em.fresh("tt_combine")
    params = [f"{t} a{i}" for i, t in enumerate(types)] + [f"{t} b{i}" for i, t in enumerate(types)]
    params += [f"{t}& r{i}" for i, t in enumerate(types)]
    for i, arg in enumerate(region.args):
        em.bind(arg, f"{'a' if i < n else 'b'}{i % n}")

    def assign(values: list[str]) -> None:
        for i, v in enumerate(values):
            em.line(f"r{i} = {v};")

    with em.helper(f"static __device__ __forceinline__ void {name}({', '.join(params)})", assign):
        em.emit_region(region)
    return name


def _call(em: Emitter, combine: str, left: list[str], right: list[str], out: list[str]) -> None:
    em.line(f"{combine}({', '.join(left + right + out)});")


def _drop(c: Coord, axis: int) -> Coord:
    return c[:axis] + c[axis + 1:]


def _pure_axis(basis: Coord, axis: int) -> bool:
    return all(v == 0 for d, v in enumerate(basis) if d != axis)


def _groups(linear: LinearLayout, axis: int) -> dict[Coord, list[int]]:
    """Distinct registers grouped by their coordinates off the axis, each group in axis order."""
    groups: dict[Coord, list[int]] = {}
    seen: set[Coord] = set()
    for reg in range(linear.num_registers):
        c = linear.register_coords(reg)
        if c in seen:
            continue
        seen.add(c)
        groups.setdefault(_drop(c, axis), []).append(reg)
    for regs in groups.values():
        regs.sort(key=lambda r: linear.register_coords(r)[axis])
    return groups


def _axis_bits(bases: tuple[Coord, ...], axis: int, what: str, loc) -> list[int]:
    bits = [bit for bit, b in enumerate(bases) if b[axis]]
    for bit in bits:
        if not _pure_axis(bases[bit], axis):
            raise CodegenError(f"{what} bases mixing the reduced axis with other dims are not supported (at {loc})")
    return sorted(bits, key=lambda bit: bases[bit][axis])


def _packed_bits(var: str, bits: list[int]) -> str:
    """The bits of `var` at positions `bits`, packed low to high."""
    if not bits:
        return "0"
    if bits == list(range(bits[0], bits[0] + len(bits))):
        shifted = f"({var} >> {bits[0]})" if bits[0] else var
        return f"({shifted} & {(1 << len(bits)) - 1})"
    return " | ".join(f"(({var} >> {bit}) & 1) << {j}" if j else f"(({var} >> {bit}) & 1)"
                      for j, bit in enumerate(bits))


def _group_index(em: Emitter, linear: LinearLayout, reg: int, axis: int, shape: tuple[int, ...]) -> str:
    """Row-major index of the register's element off the axis, in `shape` without the axis."""
    reduced = _drop(shape, axis)
    coords = [em.coord(linear, d, reg) for d in range(linear.rank) if d != axis]
    return linear_index_expr(coords, row_major_strides(reduced)) if reduced else "0"


def _buffers(em: Emitter, values: list[Value], count: int) -> list[str]:
    """One scratch array of `count` elements per value, back to back (16-byte aligned)."""
    names, offset = [], 0
    for value in values:
        t = ctype(value.type)
        nbytes = count * value.type.scalar.itemsize
        name = em.fresh("tt_buf")
        em.line(f"{t}* {name} = {em.scratch(t, offset, nbytes)};")
        names.append(name)
        offset += -(-nbytes // 16) * 16
    return names


def _scratch_for(values: list[Value], count: int) -> int:
    return sum(-(-count * v.type.scalar.itemsize // 16) * 16 for v in values)


# -- reduce -------------------------------------------------------------------------------

def _reduce_warp_bits(op: Operation) -> list[int]:
    x = op.operands[0]
    linear = x.type.layout.linear(tuple(x.type.shape))
    return [bit for bit, b in enumerate(linear.warps) if b[op.attrs["axis"]]]


def _out_numel(op: Operation) -> int:
    shape = list(op.operands[0].type.shape)
    del shape[op.attrs["axis"]]
    n = 1
    for s in shape:
        n *= s
    return n


@needs_scratch("reduce")
def reduce_scratch_bytes(op: Operation) -> int:
    warps = len(_reduce_warp_bits(op))
    if not warps:
        return 0
    return _scratch_for(list(op.operands), _out_numel(op) << warps)


@emits("reduce")
def emit_reduce(em: Emitter, op: Operation) -> None:
    axis = op.attrs["axis"]
    inputs = list(op.operands)
    n = len(inputs)
    linear = em.linear(inputs[0])
    combine = combine_function(em, op)
    groups = _groups(linear, axis)
    accs: dict[Coord, list[str]] = {}
    for key, regs in groups.items():
        names = [em.fresh("tt_acc") for _ in inputs]
        for k, value in enumerate(inputs):
            em.line(f"{ctype(value.type)} {names[k]} = {em.reg(value, regs[0])};")
        for reg in regs[1:]:
            _call(em, combine, names, [em.reg(v, reg) for v in inputs], names)
        accs[key] = names
    commutative = _commutative(op)
    lane_bits = _axis_bits(linear.lanes, axis, "lane", op.loc)
    warp_bits = _axis_bits(linear.warps, axis, "warp", op.loc)
    # The masks go up in the index they add, so the lowest lane of a group always takes
    # the left side and ends with the ordered result; when warps follow, no other
    # lane's result is used.
    _butterfly(em, inputs, list(accs.values()), [1 << bit for bit in lane_bits], commutative or bool(warp_bits),
               combine)
    if warp_bits:
        _reduce_across_warps(em, op, linear, groups, accs, warp_bits, combine, commutative)
    results = op.results
    if not results[0].type.is_block():
        (names,) = accs.values()
        for k, result in enumerate(results):
            em.define_scalar(result, names[k])
        return
    out = em.linear(results[0])
    outs = [em.define_block(r) for r in results]
    for reg in range(out.num_registers):
        names = accs.get(out.register_coords(reg))
        if names is None:
            raise CodegenError(f"reduce result layout does not match its operand's (at {op.loc})")
        for k in range(n):
            em.line(f"{outs[k]}[{reg}] = {names[k]};")


def _spec_is_commutative(op: Operation) -> bool:
    spec = OP_SPECS.get(op.name)
    return spec is not None and spec.commutative


def _commutative(op: Operation) -> bool:
    """Whether the reduce combines one value by one commutative op (`tl.sum`,
    `tl.max`, ...): then the order of the two sides does not matter."""
    region = op.regions[0]
    ops = region.ops
    return (len(op.operands) == 1 and len(ops) == 2 and _spec_is_commutative(ops[0]) and ops[1].name == "yield"
            and set(ops[0].operands) == set(region.args) and ops[1].operands[0] is ops[0].results[0])


def _butterfly(em: Emitter, inputs: list[Value], accs: list[list[str]], masks: list[int], unordered: bool,
               combine: str) -> None:
    """Combine each accumulator with the lanes whose index differs in the bits of
    `masks`, by `shfl.xor`: afterwards every lane of such a group holds the group's
    result. Unless `unordered`, the combine takes the lane with the mask bit set
    (the higher indices) on the right, so both lanes of a pair compute the same
    value. `unordered` puts every lane's own value on the left: right for a
    commutative combine, and for the lowest lane of each group whatever the combine."""
    for mask in masks:
        if unordered:
            for names in accs:
                others = [em.fresh("tt_r") for _ in inputs]
                for k, value in enumerate(inputs):
                    em.line(f"{ctype(value.type)} {others[k]} = tt_shfl_xor({names[k]}, {mask});")
                _call(em, combine, names, others, names)
            continue
        upper = em.fresh("tt_upper")
        em.line(f"const bool {upper} = (tt_lane & {mask}) != 0;")
        for names in accs:
            left, right = [em.fresh("tt_l") for _ in inputs], [em.fresh("tt_r") for _ in inputs]
            for k, value in enumerate(inputs):
                t = ctype(value.type)
                em.line(f"{t} {right[k]} = tt_shfl_xor({names[k]}, {mask});")
                em.line(f"{t} {left[k]} = {upper} ? {right[k]} : {names[k]};")
                em.line(f"if ({upper}) {right[k]} = {names[k]};")
            _call(em, combine, left, right, names)


def _reduce_across_warps(em: Emitter, op: Operation, linear: LinearLayout, groups: dict[Coord, list[int]],
                         accs: dict[Coord, list[str]], warp_bits: list[int], combine: str,
                         commutative: bool) -> None:
    """Each warp's partial results meet in shared memory. Then, where the lanes
    holding one output have enough index bits free (along the axis, or
    replicated), lane j of that set reads warp j's partial and the lanes combine
    them by butterflies, as Triton does: log2(warps) shuffles instead of a chain
    of reads and combines. Otherwise every thread combines all the partials."""
    axis = op.attrs["axis"]
    shape = tuple(op.operands[0].type.shape)
    count = 1 << len(warp_bits)
    free = sorted(_axis_bits(linear.lanes, axis, "lane", op.loc) + [
        bit for bit, basis in enumerate(linear.lanes) if not any(basis)])
    # a barrier first only where earlier shared-memory users may still read these bytes
    em.shared_access(em.scratch_base, em.scratch_base + reduce_scratch_bytes(op), True)
    em.open()
    buffers = _buffers(em, list(op.operands), _out_numel(op) * count)
    position = em.fresh("tt_wpos")
    em.line(f"const int {position} = {_packed_bits('tt_warp', warp_bits)};")
    slots = {key: _group_index(em, linear, regs[0], axis, shape) for key, regs in groups.items()}
    lane_mask = sum(1 << bit for bit in _axis_bits(linear.lanes, axis, "lane", op.loc))
    if not commutative and lane_mask:
        # after the unordered butterfly only the group's lowest lane holds the ordered partial
        em.open(f"if ((tt_lane & {lane_mask}) == 0)")
    for key, names in accs.items():
        for k, buf in enumerate(buffers):
            em.line(f"{buf}[({slots[key]}) * {count} + {position}] = {names[k]};")
    if not commutative and lane_mask:
        em.close()
    em.barrier()
    if len(free) >= len(warp_bits):
        lanes = free[:len(warp_bits)]
        source = em.fresh("tt_wsrc")
        em.line(f"const int {source} = {_packed_bits('tt_lane', lanes)};")
        for key, names in accs.items():
            for k, buf in enumerate(buffers):
                em.line(f"{names[k]} = {buf}[({slots[key]}) * {count} + {source}];")
        _butterfly(em, list(op.operands), list(accs.values()), [1 << bit for bit in lanes], commutative, combine)
    else:
        for key, names in accs.items():
            for k, buf in enumerate(buffers):
                em.line(f"{names[k]} = {buf}[({slots[key]}) * {count}];")
            for j in range(1, count):
                _call(em, combine, names, [f"{buf}[({slots[key]}) * {count} + {j}]" for buf in buffers], names)
    em.close()


# -- scan -------------------------------------------------------------------------------

class _ScanShape:
    """How the scanned axis is spread: registers inside a thread (`low`),
    lanes, warps, and register repetitions above the warps (`high`)."""

    def __init__(self, linear: LinearLayout, axis: int, loc):
        self.lane_bits = _axis_bits(linear.lanes, axis, "lane", loc)
        self.warp_bits = _axis_bits(linear.warps, axis, "warp", loc)
        reg_bits = _axis_bits(linear.registers, axis, "register", loc)
        lane_values = [linear.lanes[b][axis] for b in self.lane_bits]
        warp_values = [linear.warps[b][axis] for b in self.warp_bits]
        if lane_values and warp_values and max(lane_values) > min(warp_values):
            raise CodegenError(f"scan over a layout whose warps interleave its lanes (at {loc})")
        threads = lane_values + warp_values
        lowest, highest = (min(threads), max(threads)) if threads else (None, None)
        self.high_bits = []
        for bit in reg_bits:
            value = linear.registers[bit][axis]
            if lowest is not None and value > highest:
                self.high_bits.append(bit)
            elif lowest is not None and value > lowest:
                raise CodegenError(f"scan over a layout whose registers interleave its threads (at {loc})")
        self.segments = (1 << len(self.warp_bits)) << len(self.high_bits)


@needs_scratch("scan")
def scan_scratch_bytes(op: Operation) -> int:
    x = op.operands[0]
    shape = _ScanShape(x.type.layout.linear(tuple(x.type.shape)), op.attrs["axis"], op.loc)
    if shape.segments == 1:
        return 0
    return _scratch_for(list(op.operands), _out_numel(op) * shape.segments)


@emits("scan")
def emit_scan(em: Emitter, op: Operation) -> None:
    axis, reverse = op.attrs["axis"], bool(op.attrs["reverse"])
    inputs = list(op.operands)
    linear = em.linear(inputs[0])
    plan = _ScanShape(linear, axis, op.loc)
    combine = combine_function(em, op)
    outs = [em.define_block(r) for r in op.results]
    for k, value in enumerate(inputs):
        em.for_registers(linear.num_registers, f"{outs[k]}[i] = {em.name(value)}[i];")
    # chunks: (group off the axis, high repetition) -> registers in axis order
    chunks: dict[tuple[Coord, int], list[int]] = {}
    high_mask = sum(1 << b for b in plan.high_bits)
    for key, regs in _groups(linear, axis).items():
        for reg in regs:
            chunks.setdefault((key, reg & high_mask), []).append(reg)
    totals: dict[tuple[Coord, int], list[str]] = {}
    for chunk, regs in chunks.items():
        order = regs[::-1] if reverse else regs
        for prev, cur in zip(order, order[1:]):
            _call(em, combine, [f"{o}[{prev}]" for o in outs], [f"{o}[{cur}]" for o in outs],
                  [f"{o}[{cur}]" for o in outs])
        totals[chunk] = [f"{o}[{order[-1]}]" for o in outs]
    if plan.lane_bits:
        totals = _scan_lanes(em, op, plan, chunks, totals, outs, combine, reverse)
    if plan.segments > 1:
        _scan_segments(em, op, linear, plan, chunks, totals, outs, combine, reverse)
    _copy_duplicates(em, linear, outs)


def _lane_with(position: str, bits: list[int]) -> str:
    """This lane with its bits at `bits` replaced by those of `position`."""
    mask = sum(1 << b for b in bits)
    if bits == list(range(bits[0], bits[0] + len(bits))):
        deposit = f"((({position}) & {(1 << len(bits)) - 1}) << {bits[0]})"
    else:
        deposit = " | ".join(f"((({position}) >> {j}) & 1) << {b}" for j, b in enumerate(bits))
    if mask == 31:
        return deposit
    return f"((tt_lane & {~mask & 31}) | {deposit})"


def _scan_lanes(em: Emitter, op: Operation, plan: _ScanShape, chunks, totals, outs, combine, reverse):
    """Scan the chunk totals across the lanes along the axis; fold each lane's
    exclusive prefix into its chunks; return each chunk's segment total."""
    inputs = list(op.operands)
    lanes = 1 << len(plan.lane_bits)
    k = em.fresh("tt_k")
    em.line(f"const int {k} = {_packed_bits('tt_lane', plan.lane_bits)};")
    running: dict = {}
    for chunk, names in totals.items():
        running[chunk] = [em.fresh("tt_run") for _ in inputs]
        for j, value in enumerate(inputs):
            em.line(f"{ctype(value.type)} {running[chunk][j]} = {names[j]};")
    distance = 1
    while distance < lanes:
        source = f"{k} + {distance}" if reverse else f"{k} - {distance}"
        valid = f"{k} + {distance} < {lanes}" if reverse else f"{k} >= {distance}"
        source_lane = em.fresh("tt_src")
        em.line(f"const int {source_lane} = {_lane_with(source, plan.lane_bits)};")
        for names in running.values():
            got = [em.fresh("tt_got") for _ in inputs]
            for j, value in enumerate(inputs):
                em.line(f"{ctype(value.type)} {got[j]} = tt_shfl_idx({names[j]}, {source_lane});")
            em.open(f"if ({valid})")
            _call(em, combine, got, names, names)
            em.close()
        distance *= 2
    neighbour = f"{k} + 1" if reverse else f"{k} - 1"
    has_prefix = f"{k} + 1 < {lanes}" if reverse else f"{k} > 0"
    last = "0" if reverse else str(lanes - 1)
    neighbour_lane, last_lane = em.fresh("tt_src"), em.fresh("tt_src")
    em.line(f"const int {neighbour_lane} = {_lane_with(neighbour, plan.lane_bits)};")
    em.line(f"const int {last_lane} = {_lane_with(last, plan.lane_bits)};")
    segment_totals = {}
    for chunk, names in running.items():
        prefix = [em.fresh("tt_pre") for _ in inputs]
        for j, value in enumerate(inputs):
            em.line(f"{ctype(value.type)} {prefix[j]} = tt_shfl_idx({names[j]}, {neighbour_lane});")
        em.open(f"if ({has_prefix})")
        for reg in chunks[chunk]:
            _call(em, combine, prefix, [f"{o}[{reg}]" for o in outs], [f"{o}[{reg}]" for o in outs])
        em.close()
        segment = [em.fresh("tt_seg") for _ in inputs]
        for j, value in enumerate(inputs):
            em.line(f"{ctype(value.type)} {segment[j]} = tt_shfl_idx({names[j]}, {last_lane});")
        segment_totals[chunk] = segment
    return segment_totals


def _scan_segments(em: Emitter, op: Operation, linear: LinearLayout, plan: _ScanShape, chunks, totals, outs,
                   combine, reverse) -> None:
    """Pass every segment's total to the later segments (earlier ones for reverse scans)."""
    axis = op.attrs["axis"]
    shape = tuple(op.operands[0].type.shape)
    inputs = list(op.operands)
    count = plan.segments
    warps = 1 << len(plan.warp_bits)
    em.barrier()
    em.open()
    buffers = _buffers(em, inputs, _out_numel(op) * count)
    wpos = em.fresh("tt_wpos")
    em.line(f"const int {wpos} = {_packed_bits('tt_warp', plan.warp_bits)};")
    slots = {}
    for chunk, regs in chunks.items():
        high = sum(1 << j for j, b in enumerate(plan.high_bits) if chunk[1] >> b & 1)
        slots[chunk] = (_group_index(em, linear, regs[0], axis, shape), f"{high * warps} + {wpos}")
        base, seg = slots[chunk]
        for j, buf in enumerate(buffers):
            em.line(f"{buf}[({base}) * {count} + {seg}] = {totals[chunk][j]};")
    em.barrier()
    for chunk, regs in chunks.items():
        base, seg = slots[chunk]
        prefix = [em.fresh("tt_pre") for _ in inputs]
        has = em.fresh("tt_has")
        for j, value in enumerate(inputs):
            em.line(f"{ctype(value.type)} {prefix[j]} = {buffers[j]}[({base}) * {count}];")
        em.line(f"bool {has} = false;")
        loop = f"int s = {count - 1}; s >= 0; --s" if reverse else f"int s = 0; s < {count}; ++s"
        em.lines.append("#pragma unroll")
        em.open(f"for ({loop})")
        em.open(f"if (s {'>' if reverse else '<'} {seg})")
        got = [f"{buf}[({base}) * {count} + s]" for buf in buffers]
        em.open(f"if ({has})")
        _call(em, combine, prefix, got, prefix)
        em.close()
        em.open("else")
        for j in range(len(inputs)):
            em.line(f"{prefix[j]} = {got[j]};")
        em.close()
        em.line(f"{has} = true;")
        em.close()
        em.close()
        em.open(f"if ({has})")
        for reg in regs:
            _call(em, combine, prefix, [f"{o}[{reg}]" for o in outs], [f"{o}[{reg}]" for o in outs])
        em.close()
    em.close()


def _copy_duplicates(em: Emitter, linear: LinearLayout, outs: list[str]) -> None:
    first: dict[Coord, int] = {}
    for reg in range(linear.num_registers):
        c = linear.register_coords(reg)
        if c in first:
            for o in outs:
                em.line(f"{o}[{reg}] = {o}[{first[c]}];")
        else:
            first[c] = reg
