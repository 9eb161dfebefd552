"""The pass that puts every dot operand where its implementation reads it
(after the layout pass, which gave the dot's result and accumulator their
layout and every operand the layout its producer chose).

An operand stays in registers, converted to the implementation's dot-operand
layout, when that conversion moves no element between threads (attention's
`p`, computed in the accumulator layout of the previous dot), or when it is an
`a` operand defined outside the loop the dot runs in and its fragments are
small (attention's `q`: converted once, read from registers every trip).
Otherwise it is stored into a shared tile (`local_alloc`) right after its
definition, contiguous along the dim it is contiguous in now, so the store is
vectorised and the software pipeline can later fill the tile with `cp.async`
straight from global memory instead.
"""

from __future__ import annotations

from tritone.ir.core import Module, Operation, Value
from tritone.ir.types import block_type

from ..codegen_layout import register_sources
from ..layout_pass import make_convert
from ..layouts import BlockedLayout, DistributedLayout, DotOperandLayout
from . import select
from .shared import is_shared_tile

# A loop-invariant `a` operand stays in registers up to this many 32-bit registers per thread.
_MAX_INVARIANT_REGISTERS = 64


def run(module: Module, ctx=None) -> None:
    """Place the operands of every dot of `module` (see the module docstring)."""
    options = getattr(ctx, "options", None) or {}
    target = int(options.get("target", 80))
    for fn in module.functions.values():
        place_operands(fn, target)


def fastest_dim(value: Value) -> int:
    """The dim along which `value`'s registers hold the longest runs of consecutive elements."""
    layout = value.type.layout
    if isinstance(layout, BlockedLayout):
        return layout.order[0]
    linear = layout.linear(tuple(value.type.shape))
    rank = linear.rank
    return max(reversed(range(rank)), key=lambda d: linear.contiguous_registers(d))


def _innermost_loop(op: Operation) -> Operation | None:
    region = op.parent
    while region is not None:
        owner = region.parent
        if not isinstance(owner, Operation):
            return None
        if owner.name in ("for", "while"):
            return owner
        region = owner.parent
    return None


def _inside(op: Operation | None, loop: Operation) -> bool:
    while op is not None:
        if op is loop:
            return True
        region = op.parent
        owner = region.parent if region is not None else None
        op = owner if isinstance(owner, Operation) else None
    return False


def _defined_outside(value: Value, loop: Operation) -> bool:
    owner = value.owner
    if isinstance(owner, Operation):
        return not _inside(owner, loop)
    region_owner = owner.parent if owner is not None else None
    return not isinstance(region_owner, Operation) or not _inside(region_owner, loop)


def _stays_in_registers(op: Operation, index: int, value: Value, layout: DotOperandLayout) -> bool:
    shape = tuple(value.type.shape)
    src, dst = value.type.layout.linear(shape), layout.linear(shape)
    if register_sources(src, dst, lambda c: c) is not None:
        return True
    if index != 0:
        return False
    loop = _innermost_loop(op)
    if loop is None or not _defined_outside(value, loop):
        return False
    words = dst.num_registers * value.type.scalar.itemsize // 4
    return words <= _MAX_INVARIANT_REGISTERS


class _Placer:
    def __init__(self):
        self.made: dict[tuple[int, object], Value] = {}

    def after_definition(self, value: Value, op: Operation) -> Value:
        owner = value.owner
        if isinstance(owner, Operation):
            region = owner.parent
            region.insert(region.ops.index(owner) + 1, op)
        else:
            owner.insert(0, op)
        return op.results[0]

    def convert(self, value: Value, layout: DistributedLayout) -> Value:
        key = (id(value), layout)
        if key not in self.made:
            self.made[key] = self.after_definition(value, make_convert(value, layout))
        return self.made[key]

    def alloc(self, value: Value, layout, loc) -> Value:
        key = (id(value), layout)
        if key not in self.made:
            tile = block_type(value.type.scalar, list(value.type.shape), layout)
            op = Operation("local_alloc", [value], [tile], loc=loc)
            self.made[key] = self.after_definition(value, op)
        return self.made[key]


def place_operands(fn, target: int) -> None:
    """Put the operands of the dots of `fn` into registers or shared tiles."""
    placer = _Placer()
    for op in list(fn.walk()):
        if op.name != "dot":
            continue
        impl = select(op, target)
        result_layout = op.results[0].type.layout
        for index in (0, 1):
            value = op.operands[index]
            if is_shared_tile(value) or isinstance(value.type.layout, DotOperandLayout):
                continue
            in_registers = impl.register_operand_layout(op, index, result_layout)
            if in_registers is not None and _stays_in_registers(op, index, value, in_registers):
                op.operands[index] = placer.convert(value, in_registers)
            else:
                shared = impl.shared_operand_layout(op, index, fastest_dim(value))
                op.operands[index] = placer.alloc(value, shared, op.loc)
