"""Shared memory allocation.

Every op that moves elements between threads (layout conversions through
shared memory, cross-warp reductions and scans, broadcasts of atomics' old
values) uses one scratch buffer only for the duration of the op, between two
barriers, so all of them share one buffer at offset 0 and the kernel needs
the largest of their sizes. The kernel's dynamic shared memory is that size,
recorded as the module attribute `shared` (bytes, a multiple of 16).
"""

from __future__ import annotations

from dataclasses import dataclass

from tritone.ir.core import Function, Module, Operation

from . import codegen  # noqa: F401  (registers each op's scratch size)
from .codegen_base import SCRATCH


@dataclass(frozen=True)
class SharedMemoryPlan:
    """`total`: bytes of dynamic shared memory the kernel needs; `largest`: the op needing them."""

    total: int
    largest: Operation | None = None


def scratch_bytes(op: Operation) -> int:
    """Bytes of shared scratch memory `op` needs while it runs."""
    size = SCRATCH.get(op.name)
    return size(op) if size is not None else 0


def plan(fn: Function) -> SharedMemoryPlan:
    """The shared memory `fn` needs."""
    total, largest = 0, None
    for op in fn.walk():
        size = scratch_bytes(op)
        if size > total:
            total, largest = size, op
    return SharedMemoryPlan(-(-total // 16) * 16, largest)


def run(module: Module, ctx=None) -> None:
    """Record the kernel's dynamic shared memory size as `module.attrs["shared"]`."""
    module.attrs["shared"] = plan(module.kernel).total
