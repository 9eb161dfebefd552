"""The target backends by `GPUTarget.backend`. Adding a target is a folder
`backends/<name>/` whose `backend.py` defines `BACKEND` (a `TargetBackend`),
and a line in `REGISTRY`; a target with devices of its own also goes in
`DEVICE_BACKENDS`. Backends are imported on first use, so a process pays only
for those it compiles for."""

from __future__ import annotations

import importlib

from ..errors import TritonError
from ..ir.target import GPUTarget
from .base import TargetBackend

# GPUTarget.backend -> the module defining its BACKEND.
REGISTRY: dict[str, str] = {
    "cuda": "tritone.backends.cuda.backend",
    "interpreter": "tritone.backends.interpreter.backend",
}

# The backends whose devices run kernels when usable, in order of preference;
# with none usable (or TRITON_INTERPRET set) kernels run in the interpreter.
DEVICE_BACKENDS: tuple[str, ...] = ("cuda",)

_loaded: dict[str, TargetBackend] = {}


def target_backend(name: str) -> TargetBackend:
    """The backend registered as `name`; TritonError when none is."""
    backend = _loaded.get(name)
    if backend is None:
        module = REGISTRY.get(name)
        if module is None:
            raise TritonError(f"tritone has no backend {name!r}; it compiles for "
                              f"{', '.join(repr(known) for known in REGISTRY)}")
        # Threads racing here import the same module and so find the same BACKEND.
        backend = _loaded.setdefault(name, importlib.import_module(module).BACKEND)
    return backend


def backend_for(target: GPUTarget) -> TargetBackend:
    """The backend compiling for `target`; TritonError naming it when none does."""
    if target.backend not in REGISTRY:
        raise TritonError(f"tritone compiles for the targets {', '.join(repr(known) for known in REGISTRY)}, "
                          f"not for {target}")
    return target_backend(target.backend)
