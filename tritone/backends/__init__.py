"""Code generation targets. `compiler.GPUTarget` names a target and
`compiler.KernelOptions` holds the options a kernel is compiled with; the CUDA
backend (`backends/cuda/`) lowers the IR for NVIDIA GPUs.

`backends` is Triton's registry of installed backends by name, each a
`Backend(compiler, driver)`: `"nvidia"` (tritone's CUDA backend with its
driver class, whose `is_active()` says whether a GPU is usable).
`BaseBackend` is the base of the backends' compiler classes, as Triton's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .compiler import BaseBackend

__all__ = ["Backend", "BaseBackend", "backends"]


@dataclass(frozen=True)
class Backend:
    """An installed backend: its compiler class (`compiler.CUDABackend`) and its
    driver class (`runtime.driver.NvidiaDriver`), as Triton's `backends` holds them."""

    compiler: type
    driver: type


def _installed() -> dict[str, Backend]:
    from ..runtime.driver import NvidiaDriver
    from .compiler import CUDABackend

    return {"nvidia": Backend(CUDABackend, NvidiaDriver)}


def __getattr__(name: str) -> Any:
    # Built on first use: the driver module imports the runtime, which imports this package.
    if name == "backends":
        value = _installed()
        globals()["backends"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
