"""`triton._C.libtriton.nvidia`: of upstream Triton's NVIDIA bindings, tritone
offers `cublas` (`cublas.CublasLt`, the cuBLASLt matrix multiply that upstream's
tutorials and tests compare their kernels with), through ctypes. The others
(`passes`, `load_dialects`, `set_short_ptr`, ...) drive upstream's MLIR
compiler, which tritone has not, and are absent."""

from . import cublas

__all__ = ["cublas"]
