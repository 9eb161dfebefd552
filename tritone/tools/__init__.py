"""`tritone.tools` (Triton's `triton.tools`): host-side helpers for kernels."""

from . import tensor_descriptor

__all__ = ["tensor_descriptor"]
