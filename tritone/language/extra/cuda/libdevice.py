"""`tl.extra.cuda.libdevice`: the same functions as `tl.extra.libdevice` (Triton
maps the generic module to this one on NVIDIA targets)."""

from ..libdevice import *  # noqa: F403
from ..libdevice import __all__  # noqa: F401
