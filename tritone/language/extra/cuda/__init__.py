"""`tl.extra.cuda`: CUDA-specific language extras. Only `libdevice` so far;
`globaltimer`, `num_threads`, `num_warps`, `smid`, the custom fp8 converters and
the `gdc_*` functions of Triton's namespace are not provided yet."""

from . import libdevice

__all__ = ["libdevice"]
