"""`tritone.set_allocator`: where kernels that need global scratch memory get it.

A kernel may need a global-memory workspace at launch: on sm_90 and newer, one
that makes tensor descriptors on the device (`tl.make_tensor_descriptor`) builds
their TMA tensor maps there. Its compiled metadata then reports
`global_scratch_size` (bytes per block) and `global_scratch_align`, and each
launch asks this context's allocator for grid size * num_ctas * that many bytes,
as Triton's launcher does: `allocator(size, alignment, stream)` with the raw
CUDA stream handle the kernel launches on. Kernels that need none never call it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable, Optional

# allocator(size in bytes, alignment in bytes, stream or None) -> a tensor-like buffer
Allocator = Callable[[int, int, Optional[int]], Any]


def no_allocator_error(size: int, kernel: Optional[str] = None) -> RuntimeError:
    """The error of a launch (of `kernel`, when named) that needs `size` bytes of
    global scratch memory where no allocator is set."""
    who = f"kernel {kernel}" if kernel else "a kernel"
    return RuntimeError(f"{who} asked for {size} bytes of global scratch memory, but no allocator is set: "
                        "call triton.set_allocator(fn) first")


class NullAllocator:
    """The allocator of "none set": Triton's tests reset to it. Asked for memory,
    it raises, naming the call that sets a real one."""

    def __call__(self, size: int, alignment: int, stream: Optional[int]) -> Any:
        raise no_allocator_error(size)


# Per context, as Triton keeps it: threads and asyncio tasks may set their own.
allocator: ContextVar[Optional[Allocator]] = ContextVar("tritone_allocator", default=None)


def set_allocator(fn: Optional[Allocator]) -> None:
    """Set the function that gives kernels global scratch memory in this context
    (this thread, or this asyncio task): `fn(size, alignment, stream)` returns a
    buffer on the current GPU (a tensor with `data_ptr()`, or an int address) of
    at least `size` bytes, aligned to `alignment`, for use on `stream` (the raw
    CUDA stream handle, 0 for the default stream); None removes it. Launches of
    kernels that make tensor descriptors on the device (sm_90 and newer) call it;
    the buffer may be freed once the launch returns, as torch's caching allocator
    does (it keeps stream order)."""
    if fn is not None and not callable(fn):
        raise TypeError(f"the allocator must be callable as fn(size, alignment, stream), got {type(fn).__name__}")
    allocator.set(fn)
