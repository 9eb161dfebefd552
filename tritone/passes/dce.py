"""Dead-code elimination: ops whose results nobody uses and whose removal
changes nothing observable are deleted, innermost and last first.

Removable: pure ops, non-volatile loads, and `if`/`for`/`while`/`reduce`/
`scan` without side effects anywhere in their regions. Stores, atomics,
print, assert, assume, barrier, calls and terminators always stay.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ..ir.core import Module, Operation, Region
from ..ir.ops import is_removable_when_unused

if TYPE_CHECKING:
    from . import PassContext


def _forget_uses(op: Operation, uses: Counter) -> None:
    for inner in op.walk():
        for value in inner.operands:
            uses[value] -= 1


def _dce_region(region: Region, uses: Counter) -> None:
    # Backwards, so that removing an op frees the ops that fed only it: they
    # come earlier in this region or in an enclosing one, and are judged later.
    kept_reversed: list[Operation] = []
    for op in reversed(region.ops):
        unused = all(uses[r] == 0 for r in op.results)
        if unused and is_removable_when_unused(op):
            _forget_uses(op, uses)
            continue
        for inner in op.regions:
            _dce_region(inner, uses)
        kept_reversed.append(op)
    region.ops[:] = kept_reversed[::-1]


def run(module: Module, ctx: PassContext) -> None:
    """Removes dead ops from every function of `module`."""
    for fn in module.functions.values():
        uses: Counter = Counter(value for op in fn.walk() for value in op.operands)
        _dce_region(fn.body, uses)
