"""`NvidiaDriver`: Triton's driver interface (`driver.active`) while kernels run
on an NVIDIA GPU (the driver library loads, cuInit succeeds, a device is
visible) and `TRITON_INTERPRET` is not set. It answers from the CUDA driver API
(`bindings.driver_api`); where torch is already imported it uses torch's current
device and stream, and `torch.cuda` as the device interface, so timings and
launches follow torch's stream.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from ...errors import OutOfResources, TritonError
from ...ir.target import GPUTarget
from ..driver import DriverBase, device_ordinal, launch_target
from .bindings import driver_api
from .bindings.driver_api import FunctionAttribute

# CUdevice_attribute values read here that `driver_api.DeviceAttribute` does not name.
_ATTRIBUTE_CLOCK_RATE = 13  # kHz
_ATTRIBUTE_MEMORY_CLOCK_RATE = 36  # kHz
_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37  # bits

# Statically allocated shared memory is limited to 48 KiB; more needs the
# function's dynamic shared memory limit raised.
_STATIC_SHARED_LIMIT = 48 * 1024

# Triton flushes the L2 cache before each timed run by writing a 256 MB buffer.
GPU_BENCHMARK_FLUSH_BYTES = 256 * 1024 * 1024


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


def _current_context(device: int = 0) -> None:
    """Make sure a context is current on this thread, the primary context of
    `device` when none is (torch uses the same primary contexts)."""
    api = driver_api.driver()
    if api.context_get_current() == 0:
        api.context_set_current(api.primary_context_retain(api.device_get(device)))


class CudaEvent:
    """A CUDA event through the driver API, for timing without torch; the
    `torch.cuda.Event` methods `do_bench` uses."""

    def __init__(self, enable_timing: bool = True):
        _current_context()
        self._api = driver_api.driver()
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
        driver_api.driver().context_synchronize()

    @staticmethod
    def current_device() -> int:
        api = driver_api.driver()
        return api.context_get_device() if api.context_get_current() else 0

    @staticmethod
    def device_count() -> int:
        return driver_api.driver().device_count()

    @staticmethod
    def set_device(device: Any) -> None:
        api = driver_api.driver()
        ordinal = device_ordinal(device)
        api.context_set_current(api.primary_context_retain(api.device_get(ordinal)))

    @staticmethod
    def is_available() -> bool:
        return NvidiaDriver.is_active()

    @staticmethod
    def get_device_capability(device: Any = None) -> tuple[int, int]:
        ordinal = CudaDeviceInterface.current_device() if device is None else device_ordinal(device)
        return _device_record(ordinal).capability


class CudaFlushBuffer:
    """Device memory written before each timed run, freed with the object."""

    def __init__(self, nbytes: int):
        _current_context()
        self._api = driver_api.driver()
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


_devices: dict[int, driver_api.Device] = {}
_devices_lock = threading.Lock()


def _device_record(ordinal: int) -> driver_api.Device:
    with _devices_lock:
        device = _devices.get(ordinal)
        if device is None:
            device = _devices[ordinal] = driver_api.driver().device(ordinal)
        return device


class NvidiaUtils:
    """`driver.active.utils` on an NVIDIA GPU."""

    @staticmethod
    def get_device_properties(device: Any = 0) -> dict[str, int]:
        """Triton's keys: `max_shared_mem` (opt-in bytes per block), `max_num_regs`
        (per block), `multiprocessor_count`, `warpSize`, `sm_clock_rate` and
        `mem_clock_rate` (kHz), `mem_bus_width` (bits)."""
        ordinal = device_ordinal(device)
        record = _device_record(ordinal)
        api = driver_api.driver()
        handle = api.device_get(ordinal)

        def attribute(which: int) -> int:
            try:
                return api.device_attribute(which, handle)
            except driver_api.CudaError:
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
        ordinal = device_ordinal(device)
        _current_context(ordinal)
        api = driver_api.driver()
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


def _torch_sees_cuda() -> bool:
    """Whether torch, if this process has already imported it, sees an NVIDIA GPU."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.version.hip is None and torch.cuda.is_available())
    except Exception:  # a torch half imported, or without its CUDA runtime
        return False
_gpu_probe_lock = threading.Lock()


class NvidiaDriver(DriverBase):
    """Kernels run on an NVIDIA GPU through the CUDA driver API."""

    backend = "cuda"

    def __init__(self):
        self.utils = NvidiaUtils()

    @staticmethod
    def is_active() -> bool:
        """Whether a GPU is usable: the driver library loads, initialises, and sees
        at least one device. Probed once per process.

        A process forked after its parent initialised CUDA (Inductor's compile workers
        are) gets CUDA_ERROR_NOT_INITIALIZED from cuInit: the GPU is there and only
        this process cannot launch on it, which compiling for it does not need. So that
        answer, or torch (when already imported) seeing a CUDA GPU, counts as active."""
        global _gpu_usable
        with _gpu_probe_lock:
            if _gpu_usable is None:
                try:
                    _gpu_usable = driver_api.driver().device_count() > 0
                except driver_api.CudaError as error:
                    _gpu_usable = error.name == "CUDA_ERROR_NOT_INITIALIZED" or _torch_sees_cuda()
                except (TritonError, OSError):
                    _gpu_usable = False
            return _gpu_usable

    def get_current_target(self) -> GPUTarget:
        """`GPUTarget("cuda", major*10+minor, 32)`: the launcher's target (the current
        device's compute capability, or the one TRITONE_TARGET forces); the
        current device's when the launcher runs kernels in the interpreter."""
        target = launch_target()
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
        from ...testing import do_bench

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
