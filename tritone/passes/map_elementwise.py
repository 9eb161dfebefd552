"""`map_elementwise` -> block ops: the scalar function of each `map_elementwise`
op (docs/IR.md) applied to all elements at once, so that no later pass, the
interpreter or a backend has to know the op.

The op's region computes on scalars, one element of each input (`pack`
consecutive elements along the last dim with `pack > 1`). Its ops are written
again on blocks of the inputs' shape (with `pack > 1`, the last dim divided by
`pack`, one block per position in the group), and its control flow becomes
data flow, each element taking the path it would have taken alone:

- an `if` runs both branches and selects per element;
- a `for` with bounds the same for every element stays a loop; one whose
  bounds differ, and every `while`, runs until no element is left running,
  with a mask of the elements still running;
- loads, stores, atomics and asserts act only for the elements that would
  have run them (their masks are anded with the path's).

Values that do not depend on the element (constants, program ids, values from
outside the region) stay scalars and are splat where a block is needed.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from ..errors import TritonError
from ..ir.core import Builder, Function, Module, Operation, Region, Value, replace_all_uses
from ..ir.ops import OP_SPECS, PURE, effect_of
from ..ir.types import block_type, dtype, int1, int32

if TYPE_CHECKING:
    from . import PassContext

# Ops with no operands that read no element: kept as they are, once for all elements.
_ELEMENT_FREE = ("constant", "program_id", "num_programs", "special", "barrier")


class MapElementwiseError(TritonError):
    """A `map_elementwise` function does something this pass cannot do on blocks;
    the message names the source line."""


def run(module: Module, ctx: PassContext) -> None:
    """Rewrites every `map_elementwise` op of `module` as block ops."""
    for fn in module.functions.values():
        _lower_region(fn, fn.body)


def _lower_region(fn: Function, region: Region) -> None:
    index = 0
    while index < len(region.ops):
        op = region.ops[index]
        for inner in op.regions:
            _lower_region(fn, inner)
        if op.name != "map_elementwise":
            index += 1
            continue
        builder = Builder()
        builder.set_insertion_point(region, index)
        results = _Vectorizer(builder, op).lower()
        for old, new in zip(op.results, results):
            replace_all_uses(fn, old, new)
        index = builder.index
        del region.ops[index]


def _is_elementwise(op: Operation) -> bool:
    spec = OP_SPECS.get(op.name)
    return spec is not None and spec.elementwise


def _fail(op: Operation, message: str) -> MapElementwiseError:
    loc = op.loc
    return MapElementwiseError(f"map_elementwise function at {loc.file}:{loc.line}: {message}")


class _Vectorizer:
    """Writes one `map_elementwise` op's region as block ops at the builder's point."""

    def __init__(self, builder: Builder, op: Operation):
        self.b = builder
        self.op = op
        self.pack = op.attrs["pack"]
        shape = op.operands[0].type.shape
        if self.pack > 1:
            last = shape[-1]
            if self.pack & (self.pack - 1) or last % self.pack:
                raise _fail(op, f"pack={self.pack} must be a power of 2 dividing the last dim ({last})")
            shape = shape[:-1] + (last // self.pack,)
        self.shape = tuple(shape)
        # region value -> its value here: a block of `shape`, or a scalar the same for every element
        self.values: dict[Value, Value] = {}
        self.splats: dict[Value, Value] = {}

    # -- values ------------------------------------------------------------------------------
    def create(self, name: str, operands: list[Value], result_types: list[dtype], attrs=None,
               regions=(), source: Operation | None = None) -> Operation:
        loc = (source or self.op).loc
        return self.b.create(name, operands, result_types, attrs, regions, loc)

    def value(self, name: str, operands: list[Value], result_type: dtype, attrs=None,
              source: Operation | None = None) -> Value:
        return self.create(name, operands, [result_type], attrs, source=source).result

    def get(self, value: Value) -> Value:
        """What `value` of the region is here (values from outside are themselves)."""
        return self.values.get(value, value)

    def block_type(self, scalar: dtype) -> dtype:
        return block_type(scalar, self.shape)

    def block(self, value: Value) -> Value:
        """`value` as a block of the element shape (scalars splat once)."""
        if value.type.is_block():
            return value
        splat = self.splats.get(value)
        if splat is None:
            splat = self.splats[value] = self.value("splat", [value], self.block_type(value.type))
        return splat

    def constant(self, value, scalar: dtype) -> Value:
        return self.value("constant", [], self.block_type(scalar), {"value": value})

    def both(self, mask: Value | None, other: Value | None) -> Value | None:
        """The elements in both masks (None: every element)."""
        if mask is None:
            return other
        if other is None:
            return mask
        return self.value("and", [mask, other], mask.type)

    def negate(self, mask: Value) -> Value:
        return self.value("xor", [mask, self.constant(True, int1)], mask.type)

    def any(self, mask: Value) -> Value:
        """An i1 scalar: whether any element of `mask` is set."""
        flat = mask
        numel = 1
        for dim in self.shape:
            numel *= dim
        if len(self.shape) > 1:
            flat = self.value("reshape", [mask], block_type(int1, [numel]), {"can_reorder": True})
        as_int = self.value("cast", [flat], block_type(int32, [numel]))
        combine = Region([int32, int32])
        combine_builder = Builder(combine)
        larger = combine_builder.create_value("max", combine.args, int32, loc=self.op.loc)
        combine_builder.create("yield", [larger], loc=self.op.loc)
        count = self.create("reduce", [as_int], [int32], {"axis": 0}, [combine]).result
        zero = self.value("constant", [], int32, {"value": 0})
        return self.value("cmp", [count, zero], int1, {"pred": "ne"})

    # -- the op -------------------------------------------------------------------------------
    def lower(self) -> list[Value]:
        body = self.op.regions[0]
        pieces = [self.unpack(x) for x in self.op.operands]
        for index, arg in enumerate(body.args):
            self.values[arg] = pieces[index // self.pack][index % self.pack]
        yielded = [self.block(v) for v in self.region(body, None)]
        count = len(self.op.results)
        return [self.repack(yielded[k * self.pack:(k + 1) * self.pack], result.type)
                for k, result in zip(range(count), self.op.results)]

    def unpack(self, x: Value) -> list[Value]:
        """The blocks of `x`'s elements at each position of a pack group, by position."""
        if self.pack == 1:
            return [x]
        bits = self.pack.bit_length() - 1
        # row-major: the trailing dims of 2 are the position's bits, its lowest last
        grouped = self.value("reshape", [x], block_type(x.type.scalar, self.shape + (2,) * bits))
        pieces = {0: grouped}
        for bit in range(bits):
            split = {}
            for position, piece in pieces.items():
                half = block_type(x.type.scalar, piece.type.shape[:-1])
                low, high = self.create("split", [piece], [half, half]).results
                split[position], split[position | 1 << bit] = low, high
            pieces = split
        return [pieces[position] for position in range(self.pack)]

    def repack(self, pieces: list[Value], result_type: dtype) -> Value:
        """The inverse of `unpack`: the block of `result_type` from its positions' blocks."""
        if self.pack == 1:
            return pieces[0]
        bits = self.pack.bit_length() - 1
        current = dict(enumerate(pieces))
        for bit in reversed(range(bits)):
            joined = {}
            for position in range(1 << bit):
                low, high = current[position], current[position | 1 << bit]
                pair = block_type(low.type.scalar, low.type.shape + (2,))
                joined[position] = self.value("join", [low, high], pair)
            current = joined
        return self.value("reshape", [current[0]], result_type)

    @contextmanager
    def inside(self, region: Region) -> Iterator[None]:
        """Build at the end of `region` (a loop's), then where the builder was; splats
        made inside are not reused outside, where they are not defined."""
        point, splats = self.b.insertion_point(), dict(self.splats)
        self.b.set_insertion_point_to_end(region)
        try:
            yield
        finally:
            self.b.restore_insertion_point(point)
            self.splats = splats

    # -- regions and ops ----------------------------------------------------------------------
    def region(self, region: Region, mask: Value | None) -> list[Value]:
        """Write `region`'s ops for the elements of `mask`; what its terminator passes on."""
        for op in region.ops:
            if op.name in ("yield", "condition"):
                return [self.get(v) for v in op.operands]
            self.operation(op, mask)
        return []

    def operation(self, op: Operation, mask: Value | None) -> None:
        if op.regions:
            handler = {"if": self.if_op, "for": self.for_op, "while": self.while_op}.get(op.name)
            if handler is None:
                raise _fail(op, f"`{op.name}` on blocks is not supported inside map_elementwise")
            handler(op, mask)
            return
        if any(r.type.is_block() for r in op.results):
            raise _fail(op, "the function must compute on scalars only (it makes a block)")
        operands = [self.get(v) for v in op.operands]
        varying = any(v.type.is_block() for v in operands)
        effect = effect_of(op)
        if (not varying and effect == PURE) or (not operands and op.name in _ELEMENT_FREE):
            new = self.create(op.name, operands, [r.type for r in op.results], dict(op.attrs), source=op)
        elif _is_elementwise(op) or (op.name == "inline_asm" and (effect == PURE or mask is None)):
            # inline asm runs for every element: harmless when pure, and what is asked when no
            # condition singles elements out
            new = self.create(op.name, [self.block(v) for v in operands],
                              [self.block_type(r.type) for r in op.results], dict(op.attrs), source=op)
        elif op.name in ("hint", "assume"):
            # compiler facts about one element; dropped rather than restated for blocks
            if op.results:
                self.values[op.results[0]] = operands[0]
            return
        else:
            new = self.effect_op(op, operands, mask)
        for old, result in zip(op.results, new.results):
            result.name_hint = old.name_hint
            self.values[old] = result

    def effect_op(self, op: Operation, operands: list[Value], mask: Value | None) -> Operation:
        """A load, store, atomic, assert or print, for the elements of `mask`."""
        name = op.name
        blocks = [self.block(v) for v in operands]
        results = [self.block_type(r.type) for r in op.results]
        if name in ("load", "store", "atomic_rmw"):
            required = {"load": 1, "store": 2, "atomic_rmw": 2}[name]
            own_mask = blocks[required] if len(blocks) > required else None
            combined = self.both(mask, own_mask)
            if combined is not None:
                blocks = blocks[:required] + [combined] + blocks[required + 1:]
            return self.create(name, blocks, results, dict(op.attrs), source=op)
        if name == "assert":
            condition = blocks[0] if mask is None else self.value("or", [blocks[0], self.negate(mask)],
                                                                    blocks[0].type, source=op)
            return self.create(name, [condition], [], dict(op.attrs), source=op)
        if name in ("atomic_cas", "print") and mask is None:
            return self.create(name, blocks, results, dict(op.attrs), source=op)
        if name in ("atomic_cas", "print", "inline_asm"):
            raise _fail(op, f"`{name}` under a condition that differs between elements is not supported")
        raise _fail(op, f"`{name}` is not supported inside map_elementwise")

    def select(self, condition: Value, a: Value, b: Value) -> Value:
        if not (condition.type.is_block() or a.type.is_block() or b.type.is_block()) and a.type == b.type:
            return self.value("select", [condition, a, b], a.type)
        a, b = self.block(a), self.block(b)
        return self.value("select", [self.block(condition), a, b], a.type)

    def if_op(self, op: Operation, mask: Value | None) -> None:
        condition = self.get(op.operands[0])
        taken = self.block(condition)
        then_values = self.region(op.regions[0], self.both(mask, taken))
        else_values = self.region(op.regions[1], self.both(mask, self.negate(taken)))
        for result, a, b in zip(op.results, then_values, else_values):
            self.values[result] = self.select(condition, a, b)

    def for_op(self, op: Operation, mask: Value | None) -> None:
        lower, upper, step = (self.get(v) for v in op.operands[:3])
        if any(v.type.is_block() for v in (lower, upper, step)):
            self.masked_for(op, lower, upper, step, mask)
            return
        inits = [self.block(self.get(v)) for v in op.operands[3:]]
        body = op.regions[0]
        new_body = Region([body.args[0].type] + [v.type for v in inits])
        loop = self.create("for", [lower, upper, step, *inits], [v.type for v in inits], dict(op.attrs),
                           [new_body], source=op)
        for old, new in zip(body.args, new_body.args):
            self.values[old] = new
        with self.inside(new_body):
            yielded = [self.block(v) for v in self.region(body, mask)]
            self.create("yield", yielded, [], source=op)
        for old, new in zip(op.results, loop.results):
            self.values[old] = new

    def masked_for(self, op: Operation, lower: Value, upper: Value, step: Value, mask: Value | None) -> None:
        """A `for` whose bounds differ between elements, as a while loop over the
        elements still running."""
        lower, upper, step = self.block(lower), self.block(upper), self.block(step)
        running = self.both(mask, self.value("cmp", [lower, upper], lower.type.with_element_ty(int1),
                                             {"pred": "lt"}, source=op))
        carried = [self.block(self.get(v)) for v in op.operands[3:]]
        types = [running.type, lower.type] + [v.type for v in carried]
        before, after = Region(types), Region(types)
        loop = self.create("while", [running, lower, *carried], types, {}, [before, after], source=op)
        with self.inside(before):
            self.create("condition", [self.any(before.args[0]), *before.args], [], source=op)
        with self.inside(after):
            running, index, values = after.args[0], after.args[1], list(after.args[2:])
            body = op.regions[0]
            self.values[body.args[0]] = index
            for old, new in zip(body.args[1:], values):
                self.values[old] = new
            yielded = [self.block(v) for v in self.region(body, running)]
            kept = [self.value("select", [running, new, old], old.type) for new, old in zip(yielded, values)]
            following = self.value("add", [index, step], index.type, source=op)
            in_range = self.value("cmp", [following, upper], running.type, {"pred": "lt"})
            self.create("yield", [self.value("and", [running, in_range], running.type), following, *kept], [],
                        source=op)
        for old, new in zip(op.results, loop.results[2:]):
            self.values[old] = new

    def while_op(self, op: Operation, mask: Value | None) -> None:
        """A while loop over the elements still running: each leaves with the values
        its own `condition` passed on when it said stop."""
        before, after = op.regions
        carried = [self.block(self.get(v)) for v in op.operands]
        running = mask if mask is not None else self.constant(True, int1)
        # what each element leaves with, once it does (a placeholder until then)
        exits = [self.constant(0.0 if r.type.is_floating() else 0, r.type) for r in op.results]
        types = [running.type] + [v.type for v in carried] + [v.type for v in exits]
        new_before = Region(types)
        forwarded = [running.type] + [self.block_type(a.type) for a in after.args] + [v.type for v in exits]
        new_after = Region(forwarded)
        loop = self.create("while", [running, *carried, *exits], forwarded, {}, [new_before, new_after], source=op)
        with self.inside(new_before):
            running = new_before.args[0]
            for old, new in zip(before.args, new_before.args[1:1 + len(carried)]):
                self.values[old] = new
            condition, *passed = self.region(before, running)
            passed = [self.block(v) for v in passed]
            go_on = self.block(condition)
            leaving = self.both(running, self.negate(go_on))
            previous = new_before.args[1 + len(carried):]
            exits = [self.value("select", [leaving, new, old], old.type) for new, old in zip(passed, previous)]
            still = self.both(running, go_on)
            self.create("condition", [self.any(still), still, *passed, *exits], [], source=op)
        with self.inside(new_after):
            running = new_after.args[0]
            for old, new in zip(after.args, new_after.args[1:1 + len(after.args)]):
                self.values[old] = new
            yielded = [self.block(v) for v in self.region(after, running)]
            self.create("yield", [running, *yielded, *new_after.args[1 + len(after.args):]], [], source=op)
        for old, new in zip(op.results, loop.results[1 + len(after.args):]):
            self.values[old] = new
