"""Pointer blocks a loop advances by one uniform step a trip become their start
plus a scalar offset the loop carries.

`a_ptrs += BLOCK_K * stride_ak` at the end of a K loop (Triton's tutorials,
Inductor's templates) makes every address of the block a loop-carried 64-bit
value, updated in place each trip after the loads of the trip read it. Where
those loads are `cp.async` copies, which read their address registers late,
ptxas moves each address into one scratch register pair before its copy so
that the update may go ahead, and every copy waits until the one before it
has read that pair: the K loop of a 128x128x64 fp16 matmul with 4 warps ran
its 16 copies one after another (ncu: the moves stalled on the scoreboard, a
third of the loop's samples), 0.87x of upstream Triton's speed (0.97-0.98x
rewritten, on an H100).

Rewritten (a GPU pass, before the layout pass), the loop carries an i64
offset instead, starting at 0 and advanced by the step: the block is
`addptr(start, splat(offset))`, computed afresh each trip from the start,
which no trip changes. The addresses are the same 64-bit sums (the steps
are added in 64 bits, as each `addptr` did), so nothing but the register
traffic changes. Applies to a carried pointer block whose next value is
`addptr(itself, step)` where the step is a splat of a scalar integer or an
integer constant: the loop no longer carries the block, and after the loop
its final value is `addptr(start, splat(offset))` too.

The other shape of the same loop recomputes its offsets from the trip
counter each trip (Inductor's mm template: `xindex = idx_n + K * idx_m`
with `idx_m = offs_k[:, None] + k_idx * BLOCK_K`, then `A + xindex`), so
every trip multiplied each thread's row index again (one IMAD per row, then
the IMAD.WIDE of the address). Such offsets are split into a part no trip
changes, computed once before the loop, plus a scalar the trip computes:
`addptr(p, add(hoisted, splat(uniform)))`. The split only reassociates the
integer adds and multiplies by a uniform factor; the offsets keep their
type and are the same values modulo 2^32 (the offsets' own wrapping), so
the addresses are unchanged. It applies where the offsets read a block
computed before the loop (`rm % M`), which the hoisted part replaces in the
registers live across the loop; offsets made of aranges, constants and
splats only are left in the loop (see `_OffsetSplit._reads_computed_block`).

A third shape is a short loop of constant bounds, which the code generator
unrolls (Inductor's looped reductions over a row, `x_ptr + (r0_index +
8192*x0)`): where the offsets are a part no trip changes and no range bounds,
a multiple of 2^k, plus a part proven to stay in [0, 2^k) (int_ranges), the
pointer plus the first part becomes a base made before the loop and kept in
registers as it is (`opaque`), onto which each trip adds the second part, so
that each unrolled trip's constant becomes the immediate of its loads (see
`_LoopBases`).
"""

from __future__ import annotations

from ...ir.core import Builder, Module, Operation, Region, Value, replace_all_uses
from ...ir.types import block_type, int64, type_text
from ...passes import dce
from . import axis_info
from .codegen_control import FULL_UNROLL_TRIPS, NOT_UNROLLED_PREFIXES
from .int_ranges import constant_trips, int_range


def run(module: Module, ctx=None) -> None:
    """Rewrite every uniformly stepped pointer block of `module`'s loops, split
    the offsets loops recompute each trip, and give short loops' addresses a base
    made before the loop (see above)."""
    split_any = False
    for fn in module.functions.values():
        infos = None
        for loop in [op for op in fn.walk() if op.name == "for"]:
            index = 0
            while index < len(loop.operands) - 3:
                step = _uniform_step(loop, index)
                if step is None:
                    index += 1
                else:  # the carried values after it move down one
                    loop = _rewrite(loop, index, step)
            for op in list(loop.regions[0].ops):
                if op.name == "addptr" and op.results[0].type.is_block():
                    split_any |= _OffsetSplit(loop).rewrite(op)
            if _short_loop(loop):
                infos = infos or axis_info.analyze(fn)
                split_any |= _LoopBases(loop, infos).rewrite()
    if split_any:  # the offsets' old computations
        dce.run(module, ctx)


def _uniform_step(loop: Operation, index: int) -> Value | None:
    """The scalar integer (or integer splat constant) carried pointer block `index`
    of `loop` advances by each trip, or None where it is not such a block."""
    body: Region = loop.regions[0]
    arg = body.args[1 + index]
    if not arg.type.is_block() or not arg.type.scalar.is_ptr():
        return None
    advance = body.terminator.operands[index].defining_op
    if advance is None or advance.name != "addptr" or advance.parent is not body or advance.operands[0] is not arg:
        return None
    step = advance.operands[1].defining_op
    if step is None:
        return None
    if step.name == "splat" and step.operands[0].type.scalar.is_int():
        return step.operands[0]
    if step.name == "constant" and isinstance(step.attrs.get("value"), int) and not isinstance(
            step.attrs.get("value"), bool):
        return step.results[0]
    return None


def _rewrite(loop: Operation, index: int, step: Value) -> Operation:
    """`loop` made again with carried block `index` replaced by its offset (the last
    carried value); the new loop, in its place."""
    body: Region = loop.regions[0]
    arg = body.args[1 + index]
    start = loop.operands[3 + index]
    advance = body.terminator.operands[index].defining_op
    offsets_type = block_type(int64, list(arg.type.shape))
    parent: Region = loop.parent

    # the offset: 0 before the loop, advanced by the step where the block was
    before = Builder()
    before.set_insertion_point(parent, parent.ops.index(loop))
    before.loc = loop.loc
    zero = before.create_value("constant", [], int64, {"value": 0})
    offset = body.add_arg(int64, "offset")
    at = Builder()
    at.set_insertion_point(body, body.ops.index(advance) + 1)
    at.loc = advance.loc
    if step.type.is_block():  # an integer constant block
        amount = at.create_value("constant", [], int64, {"value": int(step.defining_op.attrs["value"])})
    elif step.type.scalar == int64:
        amount = step
    else:
        amount = at.create_value("cast", [step], int64, {})
    advanced = at.create_value("add", [offset, amount], int64, {})

    # the block each trip: the start plus the offset
    top = Builder()
    top.set_insertion_point(body, 0)
    top.loc = loop.loc
    block = top.create_value("addptr", [start, top.create_value("splat", [offset], offsets_type, {})], arg.type, {})
    replace_all_uses(body, arg, block)

    # the loop without the block, carrying the offset last
    terminator = body.terminator
    terminator.operands = [v for i, v in enumerate(terminator.operands) if i != index] + [advanced]
    if not any(advance.results[0] in op.operands for op in body.walk()):
        body.ops.remove(advance)
    body.args.remove(arg)
    for number, value in enumerate(body.args):
        value.index = number
    operands = [v for i, v in enumerate(loop.operands) if i != 3 + index] + [zero]
    result_types = [r.type for i, r in enumerate(loop.results) if i != index] + [int64]
    new = Operation("for", operands, result_types, dict(loop.attrs), [body], loop.loc)
    parent.insert(parent.ops.index(loop), new)
    parent.ops.remove(loop)
    kept = [r for i, r in enumerate(loop.results) if i != index]
    for old, value in zip(kept, new.results):
        replace_all_uses(parent, old, value)
    # after the loop: the final block from the final offset, where something reads it
    final = loop.results[index]
    if any(final in op.operands for op in parent.walk()):
        after = Builder()
        after.set_insertion_point(parent, parent.ops.index(new) + 1)
        after.loc = loop.loc
        last = after.create_value("addptr", [start, after.create_value("splat", [new.results[-1]], offsets_type, {})],
                                  arg.type, {})
        replace_all_uses(parent, final, last)
    return new


# The pure ops an offset's part that no trip changes may be computed from, before the loop.
_HOISTABLE = frozenset({"constant", "splat", "broadcast", "expand_dims", "add", "sub", "mul", "arange"})


class _OffsetSplit:
    """Splits an integer offset block computed in `loop`'s body into a block no trip
    changes (built before the loop) plus a splat scalar the trip computes."""

    def __init__(self, loop: Operation):
        self.loop = loop
        self.before = Builder()
        parent: Region = loop.parent
        self.before.set_insertion_point(parent, parent.ops.index(loop))
        self.before.loc = loop.loc
        self.at = Builder()
        self.hoisted: dict[Value, Value] = {}
        self.created: list[Operation] = []

    def rewrite(self, addptr: Operation) -> bool:
        """Give `addptr` (in the loop's body) the split offsets; whether it did."""
        offsets = addptr.operands[1]
        producer = offsets.defining_op
        if producer is None or not self._inside(offsets) or self._invariant(offsets):
            return False
        if producer.name == "add" and any(self._invariant(o) for o in producer.operands) and any(
                o.defining_op is not None and o.defining_op.name == "splat" for o in producer.operands):
            return False  # already a fixed block plus a splat
        if not self._reads_computed_block(offsets, set()):
            return False
        body: Region = addptr.parent
        self.at.set_insertion_point(body, body.ops.index(addptr))
        self.at.loc = addptr.loc
        parts = self._parts(offsets)
        if parts is None or parts[0] is None or parts[1] is None:
            for op in reversed(self.created):
                op.parent.ops.remove(op)
            self.created.clear()
            return False
        fixed, uniform = parts
        step = self._create(self.at, "splat", [uniform], offsets.type)
        addptr.operands[1] = self._create(self.at, "add", [fixed, step], offsets.type)
        self.created.clear()
        return True

    def _reads_computed_block(self, value: Value, seen: set[Value]) -> bool:
        """Whether `value`'s computation in the loop reads a block from before the loop
        that is not `_rebuildable`: a block that stays live across the loop anyway, so
        the hoisted part takes its registers' place. Where the offsets read only
        aranges, constants and splats, the compiler rebuilds those from the thread
        index each trip, and a hoisted block would add live registers (FlexAttention's
        template: 64 more bytes of spills)."""
        if value in seen:
            return False
        seen.add(value)
        if not self._inside(value):
            return value.type.is_block() and not _rebuildable(value)
        op = value.defining_op
        return op is not None and any(self._reads_computed_block(operand, seen) for operand in op.operands)

    def _create(self, builder: Builder, name: str, operands: list[Value], result_type, attrs=None) -> Value:
        value = builder.create_value(name, operands, result_type, dict(attrs or {}))
        self.created.append(value.defining_op)
        return value

    def _inside(self, value: Value) -> bool:
        owner = value.owner
        region = owner if isinstance(owner, Region) else getattr(owner, "parent", None)
        while isinstance(region, Region):
            holder = region.parent
            if holder is self.loop:
                return True
            if not isinstance(holder, Operation):
                return False
            region = holder.parent
        return False

    def _invariant(self, value: Value) -> bool:
        """Whether no trip changes `value`: defined before the loop, or a pure op of it
        on such values."""
        if not self._inside(value):
            return True
        op = value.defining_op
        return (op is not None and op.name in _HOISTABLE and not op.regions
                and all(self._invariant(operand) for operand in op.operands))

    def _hoist(self, value: Value) -> Value:
        """`value` (invariant) as a value defined before the loop."""
        if not self._inside(value):
            return value
        if value not in self.hoisted:
            op = value.defining_op
            self.hoisted[value] = self._create(self.before, op.name, [self._hoist(o) for o in op.operands],
                                               value.type, op.attrs)
        return self.hoisted[value]

    def _factor(self, value: Value) -> Value | None:
        """The scalar an invariant block of one integer value holds (a splat or an
        integer constant), built before the addptr; None for other blocks."""
        op = value.defining_op
        if not self._invariant(value) or op is None:
            return None
        if op.name == "splat":
            return self._hoist(op.operands[0])
        constant = op.attrs.get("value")
        if op.name == "constant" and isinstance(constant, int) and not isinstance(constant, bool):
            return self._create(self.at, "constant", [], value.type.scalar, {"value": constant})
        return None

    def _parts(self, value: Value) -> tuple[Value | None, Value | None] | None:
        """(the block before the loop, the scalar of the trip) whose sum is the
        integer block `value`, either None where it is zero; None where `value` does
        not split."""
        if self._invariant(value):
            return self._hoist(value), None
        op = value.defining_op
        if op is None:
            return None
        if op.name == "splat":
            return None, op.operands[0]
        if op.name in ("broadcast", "expand_dims"):
            inner = self._parts(op.operands[0])
            if inner is None:
                return None
            fixed = None if inner[0] is None else self._create(self.before, op.name, [inner[0]], value.type, op.attrs)
            return fixed, inner[1]
        if op.name in ("add", "sub"):
            left, right = self._parts(op.operands[0]), self._parts(op.operands[1])
            if left is None or right is None:
                return None
            negated = any(mine is None and theirs is not None for mine, theirs in zip(left, right))
            if op.name == "sub" and negated:
                return None  # a part that would be negated: not worth a rule
            fixed = self._combine(self.before, op.name, left[0], right[0], value.type)
            uniform = self._combine(self.at, op.name, left[1], right[1], value.type.scalar)
            return fixed, uniform
        if op.name == "mul":
            for term, other in (op.operands, op.operands[::-1]):
                factor = self._factor(other)
                if factor is None:
                    continue
                inner = self._parts(term)
                if inner is None:
                    return None
                fixed = None if inner[0] is None else self._create(self.before, "mul", [inner[0], self._hoist(other)],
                                                                   value.type)
                uniform = None if inner[1] is None else self._create(self.at, "mul", [inner[1], factor],
                                                                     value.type.scalar)
                return fixed, uniform
        return None

    def _combine(self, builder: Builder, name: str, left: Value | None, right: Value | None,
                 result_type) -> Value | None:
        if left is None or right is None:
            return right if left is None else left
        return self._create(builder, name, [left, right], result_type)


def _rebuildable(value: Value) -> bool:
    """Whether a block is made of aranges, constants and splats only (through
    broadcasts, expand_dims, hints and integer arithmetic)."""
    op = value.defining_op
    if op is None:
        return False
    if op.name in ("arange", "constant", "splat"):
        return True
    return op.name in ("broadcast", "expand_dims", "hint", "add", "sub", "mul") and all(
        _rebuildable(operand) for operand in op.operands)


def _short_loop(loop: Operation) -> bool:
    """Whether `loop` has constant bounds, 2 to `FULL_UNROLL_TRIPS` trips and a body
    the code generator may unroll (no nested loop, dot or asynchronous copy)."""
    bounds = constant_trips(loop)
    if bounds is None or not 2 <= bounds[2] <= FULL_UNROLL_TRIPS:
        return False
    return not any(op.name.startswith(NOT_UNROLLED_PREFIXES) for op in loop.regions[0].walk())


class _LoopBases:
    """A short loop's block addresses `p + (rest + fixed)`, where `fixed` is the same
    every trip and a multiple of 2^k and `rest` is proven to stay in [0, 2^k), become
    `base + rest` with `base = p + fixed` made before the loop (marked `opaque`: the
    code generator keeps it in registers as it is). The two are the same addresses:
    no carry leaves rest's k bits, so `rest + fixed` does not wrap where `fixed`
    does not, and adding `rest` to the pointer after `fixed` sign-extends each on
    its own. Unrolled, each trip's constant part of `rest` then becomes the
    immediate of the load (Inductor's looped reductions, `r0_index + 8192*x0`:
    54 registers to 36 for RMS norm's backward on sm_90, as upstream Triton's
    LLVM gets by itself), where the C++ compiler, shown the whole sum, folded
    it back into one 32-bit sum a trip and a multiply-add into a new register
    pair per load."""

    def __init__(self, loop: Operation, infos: axis_info.AxisInfoMap):
        self.loop = loop
        self.split = _OffsetSplit(loop)
        self.infos = infos
        self.ranges: dict[Value, tuple[int, int] | None] = {}
        self.bases: dict[tuple[int, ...], Value] = {}

    def rewrite(self) -> bool:
        changed = False
        for op in list(self.loop.regions[0].ops):
            if op.name == "addptr" and op.results[0].type.is_block():
                changed |= self._rewrite(op)
        return changed

    def _terms(self, value: Value) -> list[Value]:
        """`value` as the terms of its `add`s made in the loop (a sum with a proven
        range is one term)."""
        op = value.defining_op
        if op is None or op.name != "add" or self.split._invariant(value) or not self.split._inside(value) \
                or int_range(value, self.ranges) is not None:
            return [value]
        return self._terms(op.operands[0]) + self._terms(op.operands[1])

    def _rewrite(self, addptr: Operation) -> bool:
        pointer, offsets = addptr.operands
        if type_text(offsets.type.scalar) != "i32" or not self.split._invariant(pointer):
            return False
        # fixed: the terms no trip changes and no range bounds; rest: the others
        terms = self._terms(offsets)
        bounds = [int_range(t, self.ranges) for t in terms]
        fixed = [t for t, b in zip(terms, bounds) if b is None]
        rest = [t for t, b in zip(terms, bounds) if b is not None]
        if not fixed or not rest or not all(self.split._invariant(t) for t in fixed) \
                or all(self.split._invariant(t) for t in rest):
            return False
        multiple = min(self.infos.get(t).element_divisibility() for t in fixed)
        low = sum(b[0] for b in bounds if b is not None)
        high = sum(b[1] for b in bounds if b is not None)
        if low < 0 or high >= min(multiple, 1 << 31):
            return False
        key = (id(pointer),) + tuple(sorted(id(t) for t in fixed))
        if key not in self.bases:
            before = self.split.before
            total = self.split._hoist(fixed[0])
            for term in fixed[1:]:
                total = before.create_value("add", [total, self.split._hoist(term)], offsets.type, {})
            self.bases[key] = before.create_value("addptr", [self.split._hoist(pointer), total], addptr.results[0].type,
                                                  {"opaque": True})
        body: Region = addptr.parent
        at = Builder()
        at.set_insertion_point(body, body.ops.index(addptr))
        at.loc = addptr.loc
        moving = rest[0]
        for term in rest[1:]:
            moving = at.create_value("add", [moving, term], offsets.type, {})
        addptr.operands = [self.bases[key], moving]
        return True
