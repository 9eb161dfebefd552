"""`tritone.set_allocator`: where kernels that need global scratch memory get it.

Triton kernels may need a global-memory workspace at launch (tensor-map
descriptors built on the device, say), which Triton asks the allocator for.
tritone's code generator uses no global scratch memory yet (every compiled
kernel reports `global_scratch_size == 0`), so launches never call the
allocator and do not need one; it is stored for the code that will.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable, Optional

# allocator(size in bytes, alignment in bytes, stream or None) -> a tensor-like buffer
Allocator = Callable[[int, int, Optional[int]], Any]



class NullAllocator:
    """The allocator of "none set": Triton's tests reset to it. Asked for memory,
    it raises, naming the call that sets a real one."""

    def __call__(self, size: int, alignment: int, stream: Optional[int]) -> Any:
        raise RuntimeError(f"a kernel asked for {size} bytes of global scratch memory, but no allocator is set: "
                           "call triton.set_allocator(fn) first")


# Per context, as Triton keeps it: threads and asyncio tasks may set their own.
allocator: ContextVar[Optional[Allocator]] = ContextVar("tritone_allocator", default=None)


def set_allocator(fn: Optional[Allocator]) -> None:
    """Set the function that gives kernels global scratch memory in this context:
    `fn(size, alignment, stream)` returns a buffer (a tensor with `data_ptr()`)
    of at least `size` bytes; None removes it. tritone's kernels use none yet,
    so it is kept and not called; launches do not need it."""
    if fn is not None and not callable(fn):
        raise TypeError(f"the allocator must be callable as fn(size, alignment, stream), got {type(fn).__name__}")
    allocator.set(fn)
