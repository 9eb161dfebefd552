"""`tl.extra`: target libraries. `libdevice` (NVIDIA's math library, also reachable
as `tl.extra.cuda.libdevice`) and the `cuda` namespace."""

from . import cuda, libdevice

__all__ = ["cuda", "libdevice"]
