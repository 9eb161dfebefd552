"""`tritone.runtime.driver`: where kernels run, as Triton code asks it.

`driver.active` is one of two drivers:

- `NvidiaDriver` when an NVIDIA GPU is usable (the driver library loads, cuInit
  succeeds, a device is visible) and `TRITON_INTERPRET` is not set. It answers
  from the CUDA driver API (`cuda_driver`); where torch is already imported it
  uses torch's current device and stream, and `torch.cuda` as the device
  interface, so timings and launches follow torch's stream.
- `InterpreterDriver` otherwise: kernels run in the CPU interpreter. Its target
  is the one the compiler uses for the interpreter, `GPUTarget("interpreter",
  0, 32)` (upstream Triton has no driver at all in this case and its
  interpreter names its backend "interpreter"); its device interface times with
  the host clock.

The launcher decides where kernels run (`launch.active_target()`), and
`driver.active` follows it on each access (the interpreter knob may change),
unless `set_active` fixed a driver.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ..backends.compiler import INTERPRETER_TARGET, GPUTarget
from ..backends.driver import DriverBase
from ..errors import OutOfResources, TritonError
from . import cuda_driver
from .cuda_driver import FunctionAttribute

# CUdevice_attribute values read here that `cuda_driver.DeviceAttribute` does not name.
_ATTRIBUTE_CLOCK_RATE = 13  # kHz
_ATTRIBUTE_MEMORY_CLOCK_RATE = 36  # kHz
_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37  # bits

# Statically allocated shared memory is limited to 48 KiB; more needs the
# function's dynamic shared memory limit raised.
_STATIC_SHARED_LIMIT = 48 * 1024

# Triton flushes the L2 cache before each timed run by writing a 256 MB buffer.
GPU_BENCHMARK_FLUSH_BYTES = 256 * 1024 * 1024
# The interpreter's timings are dominated by Python, not by cache misses; a
# buffer the size of a large last-level CPU cache keeps do_bench's shape
# without spending tens of milliseconds per run zeroing 256 MB.
CPU_BENCHMARK_FLUSH_BYTES = 32 * 1024 * 1024


def _launch_target() -> GPUTarget:
    """Where the launcher runs kernels now (imported late: the launcher imports the
    compiler, which must not be loaded for `import tritone.runtime.driver`)."""
    from .launch import active_target

    return active_target()


def _torch_cuda() -> Any | None:
    """`torch.cuda` when torch is already imported and sees a GPU, else None.
    torch is never imported here: a process that does not use it should not
    pay for loading it."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return torch.cuda if torch.cuda.is_available() else None
    except Exception:
        # A half-initialised or CPU-only torch build: it is not the GPU's owner.
        return None


def _device_ordinal(device: Any) -> int:
    """An ordinal from an int, a `torch.device`, or a string such as "cuda:1"."""
    if isinstance(device, str):
        _, _, index = device.partition(":")
        return int(index or 0)
    index = getattr(device, "index", device)
    return 0 if index is None else int(index)


# ---------------------------------------------------------------- the interpreter (CPU)


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
        if _device_ordinal(device) != 0:
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
        return _launch_target().backend == INTERPRETER_TARGET.backend

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
        from ..testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self) -> HostFlushBuffer:
        return HostFlushBuffer(CPU_BENCHMARK_FLUSH_BYTES)

    def clear_cache(self, cache: Any) -> None:
        cache.zero_()

    def __repr__(self) -> str:
        return "InterpreterDriver(target=GPUTarget('interpreter', 0, 32))"


# ---------------------------------------------------------------- NVIDIA GPUs


def _current_context(device: int = 0) -> None:
    """Make sure a context is current on this thread, the primary context of
    `device` when none is (torch uses the same primary contexts)."""
    api = cuda_driver.driver()
    if api.context_get_current() == 0:
        api.context_set_current(api.primary_context_retain(api.device_get(device)))


class CudaEvent:
    """A CUDA event through the driver API, for timing without torch; the
    `torch.cuda.Event` methods `do_bench` uses."""

    def __init__(self, enable_timing: bool = True):
        _current_context()
        self._api = cuda_driver.driver()
        # CU_EVENT_DISABLE_TIMING (2) makes cheaper events when no timing is wanted.
        self.handle = self._api.event_create(0 if enable_timing else 2)

    def record(self, stream: int | None = None) -> None:
        self._api.event_record(self.handle, stream or 0)

    def synchronize(self) -> None:
        self._api.event_synchronize(self.handle)

    def elapsed_time(self, end: CudaEvent) -> float:
        """Milliseconds between this event and `end` (waits for `end`)."""
        end.synchronize()
        return self._api.event_elapsed_ms(self.handle, end.handle)

    def __del__(self):
        handle, self.handle = getattr(self, "handle", 0), 0
        if handle:
            try:
                self._api.event_destroy(handle)
            except TritonError:
                pass  # the context is gone (interpreter shutdown); so is the event


class CudaDeviceInterface:
    """The device interface when torch is not in use: the parts of `torch.cuda`
    that benchmarking code calls, on the driver API."""

    Event = CudaEvent

    @staticmethod
    def synchronize(device: Any = None) -> None:
        _current_context()
        cuda_driver.driver().context_synchronize()

    @staticmethod
    def current_device() -> int:
        api = cuda_driver.driver()
        return api.context_get_device() if api.context_get_current() else 0

    @staticmethod
    def device_count() -> int:
        return cuda_driver.driver().device_count()

    @staticmethod
    def set_device(device: Any) -> None:
        api = cuda_driver.driver()
        ordinal = _device_ordinal(device)
        api.context_set_current(api.primary_context_retain(api.device_get(ordinal)))

    @staticmethod
    def is_available() -> bool:
        return NvidiaDriver.is_active()

    @staticmethod
    def get_device_capability(device: Any = None) -> tuple[int, int]:
        ordinal = CudaDeviceInterface.current_device() if device is None else _device_ordinal(device)
        return _device_record(ordinal).capability


class CudaFlushBuffer:
    """Device memory written before each timed run, freed with the object."""

    def __init__(self, nbytes: int):
        _current_context()
        self._api = cuda_driver.driver()
        self.nbytes = nbytes
        self.pointer = self._api.memory_alloc(nbytes)

    def zero_(self) -> CudaFlushBuffer:
        self._api.memset_d8(self.pointer, 0, self.nbytes)
        return self

    def __del__(self):
        pointer, self.pointer = getattr(self, "pointer", 0), 0
        if pointer:
            try:
                self._api.memory_free(pointer)
            except TritonError:
                pass  # the context is gone (interpreter shutdown); so is the memory


_devices: dict[int, cuda_driver.Device] = {}
_devices_lock = threading.Lock()


def _device_record(ordinal: int) -> cuda_driver.Device:
    with _devices_lock:
        device = _devices.get(ordinal)
        if device is None:
            device = _devices[ordinal] = cuda_driver.driver().device(ordinal)
        return device


class NvidiaUtils:
    """`driver.active.utils` on an NVIDIA GPU."""

    @staticmethod
    def get_device_properties(device: Any = 0) -> dict[str, int]:
        """Triton's keys: `max_shared_mem` (opt-in bytes per block), `max_num_regs`
        (per block), `multiprocessor_count`, `warpSize`, `sm_clock_rate` and
        `mem_clock_rate` (kHz), `mem_bus_width` (bits)."""
        ordinal = _device_ordinal(device)
        record = _device_record(ordinal)
        api = cuda_driver.driver()
        handle = api.device_get(ordinal)

        def attribute(which: int) -> int:
            try:
                return api.device_attribute(which, handle)
            except cuda_driver.CudaError:
                # Newer drivers may drop the clock attributes; 0 means unknown.
                return 0

        return {
            "max_shared_mem": record.max_shared_memory_per_block_optin,
            "max_num_regs": record.max_registers_per_block,
            "multiprocessor_count": record.multiprocessor_count,
            "warpSize": record.warp_size,
            "sm_clock_rate": attribute(_ATTRIBUTE_CLOCK_RATE),
            "mem_clock_rate": attribute(_ATTRIBUTE_MEMORY_CLOCK_RATE),
            "mem_bus_width": attribute(_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        }

    @staticmethod
    def load_binary(name: str, kernel: bytes, shared: int, device: Any) -> tuple[int, int, int, int, int]:
        """Load a cubin and find kernel `name` in it: returns `(module, function,
        n_regs, n_spills, n_max_threads)`. Raises OutOfResources when `shared`
        bytes of shared memory exceed what one block may have on `device`."""
        ordinal = _device_ordinal(device)
        _current_context(ordinal)
        api = cuda_driver.driver()
        limit = _device_record(ordinal).max_shared_memory_per_block_optin
        if shared > limit:
            raise OutOfResources(shared, limit, "shared memory")
        module = api.module_load_data(kernel)
        function = api.module_get_function(module, name)
        n_regs = api.function_attribute(FunctionAttribute.NUM_REGS, function)
        # Spills land in local memory, counted in 4-byte registers as Triton reports them.
        n_spills = api.function_attribute(FunctionAttribute.LOCAL_SIZE_BYTES, function) // 4
        n_max_threads = api.function_attribute(FunctionAttribute.MAX_THREADS_PER_BLOCK, function)
        if shared > _STATIC_SHARED_LIMIT:
            static = api.function_attribute(FunctionAttribute.SHARED_SIZE_BYTES, function)
            api.set_function_attribute(function, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, limit - static)
        return module, function, n_regs, n_spills, n_max_threads


_gpu_usable: bool | None = None
_gpu_probe_lock = threading.Lock()


class NvidiaDriver(DriverBase):
    """Kernels run on an NVIDIA GPU through the CUDA driver API."""

    backend = "cuda"

    def __init__(self):
        self.utils = NvidiaUtils()

    @staticmethod
    def is_active() -> bool:
        """Whether a GPU is usable: the driver library loads, initialises, and sees
        at least one device. Probed once per process."""
        global _gpu_usable
        with _gpu_probe_lock:
            if _gpu_usable is None:
                try:
                    _gpu_usable = cuda_driver.driver().device_count() > 0
                except (TritonError, OSError):
                    _gpu_usable = False
            return _gpu_usable

    def get_current_target(self) -> GPUTarget:
        """`GPUTarget("cuda", major*10+minor, 32)`: the launcher's target (the current
        device's compute capability, or the one TRITONE_TARGET forces); the
        current device's when the launcher runs kernels in the interpreter."""
        target = _launch_target()
        if target.backend == self.backend:
            return target
        return GPUTarget("cuda", _device_record(self.get_current_device()).arch, 32)

    def get_current_device(self) -> int:
        torch_cuda = _torch_cuda()
        if torch_cuda is not None:
            return torch_cuda.current_device()
        return CudaDeviceInterface.current_device()

    def set_current_device(self, device: Any) -> None:
        torch_cuda = _torch_cuda()
        if torch_cuda is not None:
            torch_cuda.set_device(device)
        else:
            CudaDeviceInterface.set_device(device)

    def get_current_stream(self, device: Any = None) -> int:
        """The raw `CUstream` kernels launch on: torch's current stream when torch
        is in use, else the default stream (0)."""
        torch_cuda = _torch_cuda()
        if torch_cuda is None:
            return 0
        if device is None:
            device = torch_cuda.current_device()
        return torch_cuda.current_stream(device).cuda_stream

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cuda", self.get_current_device())

    def get_device_interface(self) -> Any:
        """`torch.cuda` when torch is in use, else `CudaDeviceInterface`."""
        torch_cuda = _torch_cuda()
        return torch_cuda if torch_cuda is not None else CudaDeviceInterface()

    def get_benchmarker(self) -> Callable[..., Any]:
        from ..testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self) -> Any:
        """A 256 MB device buffer whose zeroing evicts the L2 cache."""
        torch_cuda = _torch_cuda()
        if torch_cuda is not None:
            import torch

            return torch.empty(GPU_BENCHMARK_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        return CudaFlushBuffer(GPU_BENCHMARK_FLUSH_BYTES)

    def clear_cache(self, cache: Any) -> None:
        cache.zero_()

    def __repr__(self) -> str:
        return "NvidiaDriver()"


# ---------------------------------------------------------------- the active driver


class DriverConfig:
    """`driver.active`: the driver in use; `set_active(d)` fixes one (a test's
    fake, say) until `reset_active()`."""

    def __init__(self):
        self._active: Any = None
        # The driver `default` answered last (None before its first use: nothing
        # is probed at import), and each kind made so far, kept for when
        # TRITON_INTERPRET switches back.
        self._default: InterpreterDriver | NvidiaDriver | None = None
        self._made: dict[str, InterpreterDriver | NvidiaDriver] = {}

    @property
    def default(self) -> InterpreterDriver | NvidiaDriver:
        """The driver of where the launcher runs kernels: the interpreter when
        TRITON_INTERPRET is set or no GPU is usable, else the GPU."""
        kind = NvidiaDriver if _launch_target().backend == NvidiaDriver.backend else InterpreterDriver
        if type(self._default) is not kind:
            made = self._made.get(kind.backend)
            if made is None:
                made = self._made[kind.backend] = kind()
            self._default = made
        return self._default

    @property
    def active(self) -> Any:
        return self._active if self._active is not None else self.default

    def set_active(self, driver: Any) -> None:
        self._active = driver

    def reset_active(self) -> None:
        self._active = None

    def __repr__(self) -> str:
        return f"DriverConfig(active={self.active!r})"


driver = DriverConfig()

__all__ = ["DriverConfig", "InterpreterDriver", "NvidiaDriver", "driver"]
