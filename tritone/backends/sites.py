"""Where kernels run: the launch site `(target, device)` of this moment.

On the current device of the first backend of `registry.DEVICE_BACKENDS` whose
devices are usable (the CUDA driver loads and sees a GPU), unless
TRITON_INTERPRET is set; else in the CPU interpreter. Whether a device backend
is usable is decided once per process (`reset_active_target` forgets it); the
interpreter knob is read on every call.

The generated dispatchers (`runtime.dispatch.make_dispatcher`) read `_gpu`
of this module on every launch: an object with `current_device()` (the
device's ordinal now) and `sites` (ordinal -> launch site), made by the
backend's `open_devices()`.
"""

from __future__ import annotations

import threading
from typing import Any

from .. import knobs
from ..ir.target import INTERPRETER_TARGET, GPUTarget
from . import registry

# The interpreter has no device ordinal.
INTERPRETER_SITE: tuple[GPUTarget, int | None] = (INTERPRETER_TARGET, None)

_UNDECIDED: Any = object()
_gpu: Any = _UNDECIDED  # the devices in use (see the module's docstring), None (none usable) or _UNDECIDED
_gpu_reason: str | None = None
_gpu_lock = threading.Lock()


def _decide_gpu() -> Any:
    """Ask the device backends for usable devices once per process (until `reset_active_target`)."""
    global _gpu, _gpu_reason
    with _gpu_lock:
        if _gpu is _UNDECIDED:
            # Decided only when every backend answered: one that raises (a bad
            # TRITONE_TARGET) leaves it undecided, to raise again on the next launch.
            found, why_not = None, None
            for name in registry.DEVICE_BACKENDS:
                devices, reason = registry.target_backend(name).open_devices()
                if devices is not None:
                    found, why_not = devices, None
                    break
                why_not = why_not or reason
            _gpu, _gpu_reason = found, why_not
        return _gpu


def _new_site(gpu: Any, device: int) -> tuple[GPUTarget, int]:
    target = gpu.target_of(device)
    with _gpu_lock:
        return gpu.sites.setdefault(device, (target, device))


def launch_site() -> tuple[GPUTarget, int | None]:
    """`(target, device)` that kernels compile and launch for now, the key of
    `JITFunction.device_caches`: `(GPUTarget("cuda", arch, 32), ordinal)` of the
    current GPU (torch's current device once torch has initialised CUDA), with
    arch its compute capability or the one TRITONE_TARGET forces; else
    `INTERPRETER_SITE`. TRITON_INTERPRET / TRITONE_INTERPRET is read on every
    call; whether a GPU is usable is decided once per process."""
    return site_for(knobs.runtime.interpret)


def site_for(interpret: bool) -> tuple[GPUTarget, int | None]:
    """`launch_site()` with the interpreter knob's value given."""
    if interpret:
        return INTERPRETER_SITE
    gpu = _gpu
    if gpu is _UNDECIDED:
        gpu = _decide_gpu()
    if gpu is None:
        return INTERPRETER_SITE
    device = gpu.current_device()
    site = gpu.sites.get(device)
    return site if site is not None else _new_site(gpu, device)


def active_target() -> GPUTarget:
    """Where kernels run now: the CUDA target of the current GPU, or the CPU
    interpreter's target when TRITON_INTERPRET is set or no GPU is usable. The
    one place that chooses between GPU and CPU (see `launch_site`)."""
    return launch_site()[0]


def gpu_unavailable_reason() -> str | None:
    """Why no GPU is used (the driver's or the library search's message), or
    None when one is usable or none was looked for yet."""
    return _gpu_reason


def reset_active_target() -> None:
    """Forget the GPU decision, so that the next launch probes the driver again
    and rereads TRITONE_TARGET (tests use it; so may a program that sets
    TRITONE_TARGET after its first launch)."""
    global _gpu, _gpu_reason
    with _gpu_lock:
        _gpu, _gpu_reason = _UNDECIDED, None


def site_of_device(device: Any) -> tuple[GPUTarget, int | None]:
    """The launch site of `device`, the GPU ordinal Triton keys its per-device
    caches by: the interpreter's site when kernels are interpreted or no GPU is
    usable, the current site for anything but an int ordinal."""
    site = launch_site()
    if site is INTERPRETER_SITE or not isinstance(device, int) or device == site[1]:
        return site
    known = _gpu.sites.get(device)
    return known if known is not None else _new_site(_gpu, device)
