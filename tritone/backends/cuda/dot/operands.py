"""The pass that puts every dot operand where its implementation reads it
(after the layout pass, which gave the dot's result and accumulator their
layout and every operand the layout its producer chose).

An operand stays in registers, converted to the implementation's dot-operand
layout, when that conversion moves no element between threads (attention's
`p`, computed in the accumulator layout of the previous dot). Otherwise it is
stored into a shared tile (`local_alloc`) right after its definition,
contiguous along the dim it is contiguous in now, so the store is vectorised
and the software pipeline can later fill the tile with `cp.async` straight
from global memory instead. A loop-invariant operand (attention's `q`) is
stored once before the loop and read from shared memory every trip, as
Triton does: its fragments would hold registers for the whole loop.
"""

from __future__ import annotations

from tritone.ir.core import Module, Operation, Value
from tritone.ir.types import block_type

from ....ir.layouts import BlockedLayout, DistributedLayout, DotOperandLayout
from ..codegen_layout import register_sources
from ..layout_pass import make_convert
from . import select
from .shared import is_shared_tile

# Its name in IR dumps and verification errors (the module's alone, `operands`, says too little).
PASS_NAME = "dot_operands"


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


def _stays_in_registers(value: Value, layout: DotOperandLayout) -> bool:
    shape = tuple(value.type.shape)
    return register_sources(value.type.layout.linear(shape), layout.linear(shape), lambda c: c) is not None


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
            if in_registers is not None and _stays_in_registers(value, in_registers):
                op.operands[index] = placer.convert(value, in_registers)
            else:
                shared = impl.shared_operand_layout(op, index, fastest_dim(value))
                op.operands[index] = placer.alloc(value, shared, op.loc)
