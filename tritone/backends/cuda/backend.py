"""The CUDA backend object (`BACKEND`, registered as "cuda"): lowers the IR to
CUDA C++ and compiles it with NVRTC through the disk cache (`build`), loads
cubins into launch plans (`launch_plan`) and finds the GPUs (`devices`).
`CUDABackend` is its compiler class in Triton's API, `NvidiaDriver` its driver."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...ir.target import GPUTarget, KernelOptions
from ..base import KernelBinary, TargetBackend
from ..compiler import BaseBackend
from . import build, devices
from .bindings import driver_api
from .driver import NvidiaDriver
from .launch_plan import LaunchSpec, current_device, plan_for

if TYPE_CHECKING:
    from ...compiler.timer import CompileTimer
    from ...ir.core import Module


class CUDABackend(BaseBackend):
    """NVIDIA GPUs: `GPUTarget("cuda", capability, 32)`."""

    binary_ext = "cubin"

    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        return target.backend == "cuda"

    def option_defaults(self) -> dict[str, Any]:
        capability = int(self.target.arch)
        return {
            "arch": f"sm{capability}",
            # Triton widens fp8e4b15 dot operands on Hopper and warns that it will stop.
            "deprecated_fp8_dot_operand_dtypes": ("fp8e4b15",) if capability >= 90 else (),
            # Hopper's fp8 wgmma accumulates with fewer bits unless told otherwise, as in Triton.
            "max_num_imprecise_acc_default": 2**30 if capability == 90 else 0,
        }


class CudaTargetBackend(TargetBackend):
    """NVIDIA GPUs through NVRTC and the CUDA driver API."""

    name = "cuda"
    triton_name = "nvidia"
    compiler = CUDABackend
    driver = NvidiaDriver

    def compile(self, name: str, src_hash: str, build_ir: Callable[[GPUTarget], Module], target: GPUTarget,
                options: KernelOptions, timer: CompileTimer | None = None) -> KernelBinary:
        """The CUDA C++, PTX and cubin of the kernel, from the disk cache when there
        (see `build.compile_kernel`); needs NVRTC, no GPU."""
        return build.compile_kernel(name, src_hash, build_ir, target, options, timer=timer)

    def load(self, kernel: Any) -> Any:
        """The kernel's cubin loaded on the current GPU as a `launch_plan.LaunchPlan`."""
        driver = driver_api.driver()
        return plan_for(LaunchSpec.from_kernel(kernel), current_device(driver), driver)

    def open_devices(self) -> tuple[devices.CudaDevices | None, str | None]:
        return devices.open_devices()


BACKEND = CudaTargetBackend()
