"""`triton._C.libtriton`: of Triton's native bindings, tritone offers `ir` (see
`ir.py`). The others (`passes`, `llvm`, `nvidia`, `native_specialize_impl`...)
drive upstream's C++ compiler and are absent, so code probing for them takes
its fallback path."""

from . import ir

__all__ = ["ir"]
