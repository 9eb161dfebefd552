"""`triton._C.libtriton`: of Triton's native bindings, tritone offers `ir` (see
`ir.py`) and `nvidia.cublas` (cuBLASLt through ctypes, see `nvidia/cublas.py`).
The others (`passes`, `llvm`, `native_specialize_impl`, `nvidia.passes`...)
drive upstream's C++ compiler and are absent, so code probing for them takes
its fallback path."""

from . import ir, nvidia

__all__ = ["ir", "nvidia"]
