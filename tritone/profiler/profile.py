"""Profiling sessions: `start`, `activate`, `deactivate`, `finalize`, and the
`profile` decorator, as Proton offers them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ._recorder import recorder

DEFAULT_PROFILE_NAME = "proton"

_CONTEXTS = ("shadow", "python")
_BACKENDS = (None, "cupti")
_HOOKS = (None, "triton")
_OUTPUT_FORMATS = ("", "hatchet")


def _check_start(context: str | None, data: str | None, backend: str | None, mode: Any, hook: str | None) -> None:
    """Refuse, naming the argument, what tritone's profiler does not record."""
    if context not in _CONTEXTS:
        raise ValueError(f"proton.start: context={context!r} is not supported; context must be 'shadow' (the "
                         "scopes open) or 'python' (the Python call stack)")
    if data != "tree":
        raise ValueError(f"proton.start: data={data!r} is not supported; tritone's profiler keeps a tree of "
                         "summed metrics (data='tree'), not a trace of every launch")
    if backend not in _BACKENDS:
        raise ValueError(f"proton.start: backend={backend!r} is not supported; tritone's profiler times with "
                         "CUDA events on a GPU and the host clock in the interpreter (backend=None; 'cupti' "
                         "is accepted and means the same)")
    if mode is not None:
        raise ValueError(f"proton.start: mode={mode!r} is not supported; PC sampling and instrumentation modes "
                         "need CUPTI or instrumented kernels, which tritone's profiler has not (mode=None)")
    if hook not in _HOOKS:
        raise ValueError(f"proton.start: hook={hook!r} is not supported; hook must be None or 'triton' (kernels "
                         "named by their launch_metadata, with its flops and bytes)")


def start(name: str | None = None, *, context: str | None = "shadow", data: str | None = "tree",
          backend: str | None = None, mode: Any = None, hook: str | None = None) -> int:
    """Start a profiling session, active at once, and return its id (0 for the
    first session of the process, then 1, 2, ...).

    `name` is the path `finalize` writes, without its ".hatchet" suffix
    (default "proton"; "-" prints to stdout). While a session is active, every
    kernel tritone launches is a node of its tree under the open scopes
    (`context="shadow"`) or the caller's Python frames (`context="python"`),
    with its count and time; `hook="triton"` names the node by the kernel's
    `launch_metadata` "name" and adds its flops8/16/32/64, flops and bytes.
    `data`, `backend` and `mode` accept only what tritone records ("tree",
    None or "cupti", None); anything else is refused naming the argument."""
    _check_start(context or "shadow", data or "tree", backend, mode, hook)
    return recorder.start(DEFAULT_PROFILE_NAME if name is None else name, context or "shadow", hook == "triton")


def activate(session: int | None = None) -> None:
    """Record again in `session` (every session when None)."""
    recorder.activate(session)


def deactivate(session: int | None = None) -> None:
    """Stop recording in `session` (every session when None); what it recorded
    is kept for `finalize`. The GPU times measured so far are read here."""
    recorder.deactivate(session)


def finalize(session: int | None = None, output_format: str | None = "hatchet") -> None:
    """End `session` (every session when None) and write its tree to
    `<name>.hatchet`. The launch hooks go when no session is left active."""
    if (output_format or "").lower() not in _OUTPUT_FORMATS:
        raise ValueError(f"proton.finalize: output_format={output_format!r} is not supported; tritone's profiler "
                         "writes 'hatchet' (a chrome trace needs data='trace', which it does not record)")
    recorder.finalize(session)


def profile(func: Callable | None = None, *, name: str | None = None, context: str | None = "shadow",
            data: str | None = "tree", backend: str | None = None, mode: Any = None,
            hook: str | None = None) -> Callable:
    """Decorator: each call of the function starts a session (the arguments
    are `start`'s), runs the function and deactivates the session; `finalize`
    writes it. Usable as `@profile` or `@profile(name=...)`."""
    _check_start(context or "shadow", data or "tree", backend, mode, hook)

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            session = start(name, context=context, data=data, backend=backend, mode=mode, hook=hook)
            try:
                return function(*args, **kwargs)
            finally:
                deactivate(session)

        return wrapper

    return decorate if func is None else decorate(func)
