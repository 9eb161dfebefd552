"""`tl.dot` on NVIDIA GPUs: one implementation per kind of hardware, chosen per op.

Every implementation keeps a two-step contract:

- `supports(op, target)`: whether it can compute this dot (its dtypes, its
  tile shape against the instruction shape) on compute capability `target`;
- `infer_layout(op, target, num_warps, chained)`: the layout of the dot's
  result (and accumulator); `register_operand_layout(op, index, result_layout)`
  and `shared_operand_layout(op, index, contiguous_dim)`: where it can take
  each operand from, registers in a dot-operand layout or a shared-memory tile;
- `lower(op, em)`: the code, once the layout pass, `operands.run` and the
  shared memory planner have put the operands where the implementation asked.

Implementations register themselves by name with `register`; `PREFERENCES`
lists, per range of targets, which of them may compute a dot there, most
preferred first, and `select(op, target)` picks the first of that row that
supports the op: `wgmma` on 9.0 (`wgmma.py`, sm_90a), `mma.sync` m16n8 on 8.x
and later (`mma_v2.py`), m16n8k8 /
m8n8k16 on 7.5 (`mma_turing.py`), FMA (`fma.py`) wherever the tensor cores
cannot (older targets, other dtypes, tiles below the instruction shape).
Adding an implementation is one module and its name in the rows of the
targets it serves. The layout pass chooses with the kernel's `num_warps` (an
implementation's `fits`) and records the choice on the dot (`implementation`);
later passes and codegen read it back.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from tritone.ir.core import Operation
from tritone.ir.types import type_text

from ....ir.layouts import DistributedLayout, DotOperandLayout, SwizzledSharedLayout


class DotImplementation(ABC):
    """How one kind of hardware computes `acc + a @ b`."""

    name: str

    @abstractmethod
    def supports(self, op: Operation, target: int) -> bool:
        """Whether this implementation computes `op` on compute capability `target`."""

    def fits(self, op: Operation, num_warps: int) -> bool:
        """Whether a kernel of `num_warps` warps can run this implementation for `op`
        (tensor-core instructions issued by whole warpgroups need some)."""
        return True

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


# Implementations by name (`register`).
IMPLEMENTATIONS: dict[str, DotImplementation] = {}

# (lowest compute capability, implementation names most preferred first): a row
# holds from its target up to the next row's. wgmma is Hopper's alone (sm_90a):
# Blackwell has no wgmma, and consumer Blackwell (12.x) keeps mma.sync.
PREFERENCES: tuple[tuple[int, tuple[str, ...]], ...] = (
    (0, ("fma",)),
    (75, ("mma_turing", "fma")),
    (80, ("mma_v2", "fma")),
    (90, ("wgmma", "mma_v2", "fma")),
    (100, ("mma_v2", "fma")),
)


def register(impl: DotImplementation) -> DotImplementation:
    """Make `impl` available under its `name` to the rows of `PREFERENCES` naming it."""
    if impl.name in IMPLEMENTATIONS:
        raise ValueError(f"two dot implementations named {impl.name!r}")
    IMPLEMENTATIONS[impl.name] = impl
    return impl


def preferences(target: int) -> tuple[DotImplementation, ...]:
    """The implementations that may compute a dot on compute capability `target`,
    most preferred first."""
    names = next(names for lowest, names in reversed(PREFERENCES) if target >= lowest)
    return tuple(IMPLEMENTATIONS[name] for name in names)


def select(op: Operation, target: int, num_warps: int | None = None, skip: tuple[str, ...] = ()) -> DotImplementation:
    """The implementation that computes the dot `op` on compute capability `target`:
    the one recorded on the op (`implementation`, set by the layout pass), else the
    first of `preferences(target)` not named in `skip` that supports it (and fits
    `num_warps` warps)."""
    chosen = op.attrs.get("implementation")
    if chosen is not None:
        if chosen not in IMPLEMENTATIONS:
            raise ValueError(f"dot implementation {chosen!r} recorded on the dot at {op.loc} does not exist")
        return IMPLEMENTATIONS[chosen]
    for impl in preferences(target):
        if impl.name in skip:
            continue
        if impl.supports(op, target) and (num_warps is None or impl.fits(op, num_warps)):
            return impl
    a, b, acc = (type_text(v.type) for v in op.operands)
    raise ValueError(f"no dot implementation for {a} x {b} + {acc} on sm_{target} (the dot at {op.loc})")


def chained_dots(fn) -> set[int]:
    """Ids of the dots of `fn` that reach another dot of the same region through
    their results or operands (Triton's test for attention-like chains)."""
    dots = [op for op in fn.walk() if op.name == "dot"]
    if len(dots) < 2:
        return set()
    users: dict = {}
    for op in fn.walk():
        for v in op.operands:
            users.setdefault(v, []).append(op)
    chained = set()
    for dot in dots:
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


# The implementations register themselves on import; `PREFERENCES` orders them.
from . import fma, mma_turing, mma_v2, wgmma  # noqa: E402,F401,I001
from . import codegen_dot  # noqa: E402,F401  (the GPU ops' code generators)
