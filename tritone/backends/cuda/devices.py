"""The NVIDIA GPUs of this process as a launch site (`backends.sites`): the
usable driver, the compute capability TRITONE_TARGET forces, how to ask for
the current device on every launch, and the launch site of each device seen."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from ... import knobs
from ...errors import TritonError
from ...ir.target import GPUTarget
from .bindings import driver_api
from .bindings.driver_api import CudaDriver, DeviceAttribute
from .launch_plan import current_device


@dataclass
class CudaDevices:
    """The usable GPU driver, the forced compute capability (TRITONE_TARGET) if
    any, how to ask for the current device (`current_device()`, called by the
    dispatchers on every launch), and the launch site of each device seen so far."""

    driver: CudaDriver
    forced_arch: int | None
    current_device: Callable[[], int]
    sites: dict[int, tuple[GPUTarget, int]] = field(default_factory=dict)

    def target_of(self, device: int) -> GPUTarget:
        """What kernels compile for on GPU `device`: its compute capability, or the forced one."""
        arch = self.forced_arch
        if arch is None:
            handle = self.driver.device_get(device)
            arch = (self.driver.device_attribute(DeviceAttribute.COMPUTE_CAPABILITY_MAJOR, handle) * 10
                    + self.driver.device_attribute(DeviceAttribute.COMPUTE_CAPABILITY_MINOR, handle))
        return GPUTarget("cuda", arch, 32)


def _device_getter(driver: CudaDriver, settle: Callable[[Callable[[], int]], None]) -> Callable[[], int]:
    """`launch_plan.current_device`, through torch's raw accessor once torch has
    initialised CUDA (which spares `torch.cuda.current_device`'s Python layer on
    every launch) when torch is loaded already. From the first call that finds
    CUDA initialised, which it stays for the process, `settle(raw accessor)` is
    called so that the caller can use the accessor alone."""
    torch = sys.modules.get("torch")
    raw = getattr(getattr(torch, "_C", None), "_cuda_getDevice", None)
    if raw is None:
        return functools.partial(current_device, driver)
    is_initialized = torch.cuda.is_initialized

    def device() -> int:
        if is_initialized():
            settle(raw)
            return raw()
        return current_device(driver)

    return device


_TARGET_PATTERN = re.compile(r"(?:sm_|compute_)?(\d+)[af]?", re.IGNORECASE)


def parse_target(text: str | None) -> int | None:
    """The compute capability a TRITONE_TARGET value names ("sm_80", "compute_90",
    "sm_90a" or "86"), as major*10+minor; None when unset. The "a"/"f" suffixes
    are accepted and dropped (the code generator chooses architecture-specific
    features itself). Raises ValueError for anything else."""
    if text is None or not text.strip():
        return None
    match = _TARGET_PATTERN.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"TRITONE_TARGET must name a compute capability such as sm_80, compute_90 or 86, "
                         f"got {text!r}")
    return int(match.group(1))


def open_devices() -> tuple[CudaDevices | None, str | None]:
    """`(the GPUs, None)` when the driver loads and sees one, else `(None, why not)`.
    Raises ValueError for a TRITONE_TARGET that names no compute capability."""
    forced_arch = parse_target(knobs.nvidia.target)
    try:
        driver = driver_api.driver()
        count = driver.device_count()
    except (TritonError, OSError) as error:
        return None, str(error).strip() or repr(error)
    if count < 1:
        return None, "the CUDA driver sees no GPU"
    devices = CudaDevices(driver, forced_arch, int)
    devices.current_device = _device_getter(driver, functools.partial(setattr, devices, "current_device"))
    return devices, None
