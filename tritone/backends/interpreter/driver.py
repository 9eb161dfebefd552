"""`InterpreterDriver`: Triton's driver interface (`driver.active`) while kernels
run in the CPU interpreter (`TRITON_INTERPRET=1`, or no usable GPU). Its target
is the one the compiler uses for the interpreter, `GPUTarget("interpreter", 0,
32)` (upstream Triton has no driver at all in this case and its interpreter
names its backend "interpreter"); its device interface times with the host clock.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from ...ir.target import INTERPRETER_TARGET, GPUTarget
from ..driver import DriverBase, device_ordinal, launch_target

# The interpreter's timings are dominated by Python, not by cache misses; a
# buffer the size of a large last-level CPU cache keeps do_bench's shape
# without spending tens of milliseconds per run zeroing 256 MB.
CPU_BENCHMARK_FLUSH_BYTES = 32 * 1024 * 1024


class HostEvent:
    """A point in time on the host clock, with the `torch.cuda.Event` methods
    `do_bench` uses."""

    def __init__(self, enable_timing: bool = True):
        self.enable_timing = enable_timing
        self.time: float | None = None

    def record(self, stream: Any = None) -> None:
        self.time = time.perf_counter()

    def synchronize(self) -> None:
        """Host events are complete as soon as they are recorded."""

    def elapsed_time(self, end: HostEvent) -> float:
        """Milliseconds from this event to `end`."""
        if self.time is None or end.time is None:
            raise RuntimeError("elapsed_time needs both events recorded")
        return (end.time - self.time) * 1000.0


class HostDeviceInterface:
    """The device interface of the interpreter: the host, one device, no streams
    to wait for. Mirrors the parts of `torch.cuda` that benchmarking code calls."""

    Event = HostEvent

    @staticmethod
    def synchronize(device: Any = None) -> None:
        """Nothing runs asynchronously on the interpreter."""

    @staticmethod
    def current_device() -> int:
        return 0

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def set_device(device: Any) -> None:
        if device_ordinal(device) != 0:
            raise ValueError(f"the interpreter has one device, 0; got {device!r}")

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def get_device_capability(device: Any = None) -> tuple[int, int]:
        return (0, 0)


class InterpreterUtils:
    """`driver.active.utils` of the interpreter."""

    @staticmethod
    def get_device_properties(device: Any = 0) -> dict[str, int]:
        """What the interpreter offers, in the keys the GPU driver uses.

        There is no shared memory or register file to run out of; the limits are
        those of the largest current NVIDIA GPU (227 KiB of shared memory per
        block, 64K registers), so code that picks block sizes from them takes a
        path it would take on a GPU. `multiprocessor_count` is the number of CPU
        cores; clock rates and bus width are unknown and reported as 0."""
        return {
            "max_shared_mem": 232448,
            "max_num_regs": 65536,
            "multiprocessor_count": os.cpu_count() or 1,
            "warpSize": INTERPRETER_TARGET.warp_size,
            "sm_clock_rate": 0,
            "mem_clock_rate": 0,
            "mem_bus_width": 0,
        }


class HostFlushBuffer:
    """A host buffer written before each timed run (see CPU_BENCHMARK_FLUSH_BYTES)."""

    def __init__(self, nbytes: int):
        self.data = bytearray(nbytes)

    def zero_(self) -> HostFlushBuffer:
        # A slice assignment writes every byte, which is what evicts the cache.
        self.data[:] = bytes(len(self.data))
        return self


class InterpreterDriver(DriverBase):
    """Kernels run in the CPU interpreter (`TRITON_INTERPRET=1`, or no usable GPU)."""

    backend = "interpreter"

    def __init__(self):
        self.utils = InterpreterUtils()

    @staticmethod
    def is_active() -> bool:
        return launch_target().backend == INTERPRETER_TARGET.backend

    def get_current_target(self) -> GPUTarget:
        return INTERPRETER_TARGET

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: Any) -> None:
        HostDeviceInterface.set_device(device)

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cpu")

    def get_device_interface(self) -> HostDeviceInterface:
        return HostDeviceInterface()

    def get_benchmarker(self) -> Callable[..., Any]:
        from ...testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self) -> HostFlushBuffer:
        return HostFlushBuffer(CPU_BENCHMARK_FLUSH_BYTES)

    def clear_cache(self, cache: Any) -> None:
        cache.zero_()

    def __repr__(self) -> str:
        return "InterpreterDriver(target=GPUTarget('interpreter', 0, 32))"
