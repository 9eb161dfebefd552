"""Common-subexpression elimination: a pure op identical to one seen earlier in
its region, or in an enclosing region before it, is replaced by that one.

Identical means the same op name, operands, attributes and result types.
Ops with regions are left alone. The table of seen ops is scoped: entries
made inside a region are forgotten when the walk leaves it, and the regions
of isolated ops (reduce and scan combines) start with an empty table.
"""

from __future__ import annotations

from collections import ChainMap
from typing import TYPE_CHECKING, Any, Hashable

from ..ir.core import Module, Operation, Region, Value
from ..ir.ops import ISOLATED_PARENTS, is_pure

if TYPE_CHECKING:
    from . import PassContext


def _attr_key(value: Any) -> Hashable:
    # Tagged by kind: 0.0 and -0.0, 1 and 1.0 and True are equal in Python but
    # are different constants.
    if isinstance(value, (tuple, list)):
        return ("tuple", tuple(_attr_key(v) for v in value))
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def op_key(op: Operation) -> Hashable:
    """What two ops share exactly when one can stand for the other (for pure ops)."""
    attrs = tuple(sorted((k, _attr_key(v)) for k, v in op.attrs.items()))
    return (op.name, tuple(id(v) for v in op.operands), attrs, tuple(r.type for r in op.results))


def _cse_region(region: Region, seen: ChainMap, replaced: dict[Value, Value]) -> None:
    kept: list[Operation] = []
    for op in region.ops:
        op.operands = [replaced.get(v, v) for v in op.operands]
        for inner in op.regions:
            _cse_region(inner, ChainMap() if op.name in ISOLATED_PARENTS else seen.new_child(), replaced)
        if op.regions or not is_pure(op):
            kept.append(op)
            continue
        key = op_key(op)
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = op
            kept.append(op)
            continue
        for result, earlier_result in zip(op.results, earlier.results):
            replaced[result] = earlier_result
    region.ops[:] = kept


def run(module: Module, ctx: PassContext) -> None:
    """Merges identical pure ops in every function of `module`."""
    for fn in module.functions.values():
        _cse_region(fn.body, ChainMap(), {})
