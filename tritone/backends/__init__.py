"""Code generation targets: one folder per target (`cuda/`, `interpreter/`),
each holding one backend object (`base.TargetBackend`) that `registry` finds by
`GPUTarget.backend`; `sites` decides where kernels run now.

`backends` is Triton's registry of installed backends by name, each a
`Backend(compiler, driver)`: `"nvidia"` (tritone's CUDA backend with its
driver class, whose `is_active()` says whether a GPU is usable). It is built
from `registry` on first use. `BaseBackend` is the base of the backends'
compiler classes, as Triton's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import registry
from .compiler import BaseBackend
from .driver import DriverBase

__all__ = ["Backend", "BaseBackend", "DriverBase", "backends"]


@dataclass(frozen=True)
class Backend:
    """An installed backend: its compiler class (`cuda.backend.CUDABackend`) and its
    driver class (`cuda.driver.NvidiaDriver`), as Triton's `backends` holds them."""

    compiler: type
    driver: type


def _installed() -> dict[str, Backend]:
    installed = {}
    for name in registry.REGISTRY:
        backend = registry.target_backend(name)
        if backend.triton_name is not None:
            installed[backend.triton_name] = Backend(backend.compiler, backend.driver)
    return installed


def __getattr__(name: str) -> Any:
    # Built on first use: it imports every backend, which `import tritone` should not pay for.
    if name == "backends":
        value = _installed()
        globals()["backends"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
