"""`triton._C`: where Triton keeps its compiled bindings. tritone has no compiled
extension; this package holds the pure-Python stand-ins that callers of
Triton's internals need, and nothing else: `libtriton.ir`, the small MLIR-like
view of a kernel's IR that TorchInductor walks to learn which arguments a user
kernel writes."""

from . import libtriton

__all__ = ["libtriton"]
