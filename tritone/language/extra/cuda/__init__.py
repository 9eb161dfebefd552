"""`tl.extra.cuda`: CUDA-specific language extras, as Triton's namespace has them:
`libdevice`, the hardware registers `globaltimer` and `smid`, the launch
constants `num_warps` and `num_threads`, the fp8e4b15 converters and the
programmatic-dependent-launch controls `gdc_wait` / `gdc_launch_dependents`."""

from . import libdevice
from .fp8e4b15 import convert_custom_float8_sm70, convert_custom_float8_sm80
from .special import gdc_launch_dependents, gdc_wait, globaltimer, num_threads, num_warps, smid

__all__ = ["convert_custom_float8_sm70", "convert_custom_float8_sm80", "gdc_launch_dependents", "gdc_wait",
           "globaltimer", "libdevice", "num_threads", "num_warps", "smid"]
