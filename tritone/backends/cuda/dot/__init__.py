"""`tl.dot` on NVIDIA GPUs: one implementation per kind of hardware, chosen per op.

Every implementation keeps a two-step contract:

- `infer_layout(op, target, num_warps, chained)`: the layout of the dot's
  result (and accumulator); `register_operand_layout(op, index, result_layout)`
  and `shared_operand_layout(op, index, contiguous_dim)`: where it can take
  each operand from, registers in a dot-operand layout or a shared-memory tile;
- `lower(op, em)`: the code, once the layout pass, `operands.run` and the
  shared memory planner have put the operands where the implementation asked.

Implementations register themselves with `register`, most specific first;
`select(op, target)` picks the first one that supports the op on the target:
`mma.sync` m16n8 on 8.x and later (`mma_v2.py`), m16n8k8 / m8n8k16 on 7.5
(`mma_turing.py`), FMA otherwise (`fma.py`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from tritone.ir.core import Operation

from ....ir.layouts import DistributedLayout, DotOperandLayout, SwizzledSharedLayout


class DotImplementation(ABC):
    """How one kind of hardware computes `acc + a @ b`."""

    name: str

    @abstractmethod
    def supports(self, op: Operation, target: int) -> bool:
        """Whether this implementation computes `op` on compute capability `target`."""

    @abstractmethod
    def infer_layout(self, op: Operation, target: int, num_warps: int, chained: bool) -> DistributedLayout:
        """The layout of the result and accumulator. `chained`: the result feeds
        another dot (attention's `p @ v`), so warps should own whole rows."""

    def register_operand_layout(self, op: Operation, index: int,
                                result_layout: DistributedLayout) -> DotOperandLayout | None:
        """A register layout operand `index` (0 = a, 1 = b) may come in, or None
        when the implementation only reads it from shared memory."""
        return None

    @abstractmethod
    def shared_operand_layout(self, op: Operation, index: int, contiguous_dim: int) -> SwizzledSharedLayout:
        """The shared memory tile layout for operand `index` whose elements are
        contiguous along `contiguous_dim` where they come from."""

    @abstractmethod
    def lower(self, op: Operation, em) -> None:
        """Emit the op's code through the Emitter `em`."""


IMPLEMENTATIONS: list[DotImplementation] = []


def register(impl: DotImplementation) -> DotImplementation:
    """Add `impl`; implementations registered earlier are preferred."""
    IMPLEMENTATIONS.append(impl)
    return impl


def select(op: Operation, target: int) -> DotImplementation:
    """The implementation that computes the dot `op` on compute capability `target`."""
    for impl in IMPLEMENTATIONS:
        if impl.supports(op, target):
            return impl
    raise ValueError(f"no dot implementation for {op.operands[0].type} x {op.operands[1].type} on sm_{target}")


def chained_dots(fn) -> set[int]:
    """Ids of the dots of `fn` that reach another dot of the same region through
    their results or operands (Triton's test for attention-like chains)."""
    users: dict = {}
    for op in fn.walk():
        for v in op.operands:
            users.setdefault(v, []).append(op)
    chained = set()
    for dot in (op for op in fn.walk() if op.name == "dot"):
        region = dot.parent
        if _reaches_dot(dot, region, lambda o: [u for r in o.results for u in users.get(r, [])]):
            chained.add(id(dot))
        elif _reaches_dot(dot, region, lambda o: [v.defining_op for v in o.operands if v.defining_op is not None]):
            chained.add(id(dot))
    return chained


def _reaches_dot(start: Operation, region, neighbours) -> bool:
    seen = {id(start)}
    stack = [start]
    while stack:
        for nxt in neighbours(stack.pop()):
            if nxt.parent is not region or id(nxt) in seen:
                continue
            if nxt.name == "dot":
                return True
            seen.add(id(nxt))
            stack.append(nxt)
    return False


# Registration order is preference order: tensor cores first, FMA last.
from . import mma_v2, mma_turing, fma  # noqa: E402,F401,I001
from . import codegen_dot  # noqa: E402,F401  (the GPU ops' code generators)
