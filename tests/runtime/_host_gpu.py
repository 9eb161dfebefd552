"""A simulated CUDA driver whose device memory is host memory, for the tests of
arrays in GPU memory on machines without a GPU: `cuMemAlloc` hands out the
address of a fresh host buffer and the copies are memmoves, so what a test puts
"on the device" can be checked byte for byte, and code that reads a device
address directly (instead of copying) is caught by the buffer staying unchanged."""

from __future__ import annotations

import ctypes

import pytest

from tritone.backends.cuda.bindings import driver_api
from tritone.backends.cuda.bindings.driver_api import CudaDriver, DeviceAttribute
from tritone.platform import SimulatedLibrary

_INVALID_VALUE = 1
_target = SimulatedLibrary.target


class HostBackedGPU:
    """One GPU named `name` of compute capability 9.0. `allocations` maps each live
    device address to its host buffer; `current_context` is the context current
    on the (one) simulated thread; `synchronized` counts cuCtxSynchronize calls."""

    def __init__(self, name: str = "Simulated GPU"):
        self.name = name
        self.allocations: dict[int, ctypes.Array] = {}
        self.current_context: int | None = None
        self.synchronized = 0
        self.library = SimulatedLibrary({
            "cuInit": lambda flags: 0,
            "cuDeviceGetCount": lambda out: self._store(out, 1),
            "cuDeviceGet": lambda out, ordinal: self._store(out, ordinal) if ordinal == 0 else _INVALID_VALUE,
            "cuDeviceGetName": self._device_name,
            "cuDeviceGetAttribute": lambda out, attribute, device: self._store(
                out, {DeviceAttribute.COMPUTE_CAPABILITY_MAJOR: 9}.get(attribute, 0)),
            "cuDevicePrimaryCtxRetain": lambda out, device: self._store(out, 0xC0 + device),
            "cuCtxGetCurrent": lambda out: self._store(out, self.current_context),
            "cuCtxSetCurrent": self._set_current,
            "cuCtxGetDevice": lambda out: self._store(out, 0),
            "cuCtxSynchronize": self._synchronize,
            "cuMemAlloc_v2": self._alloc,
            "cuMemFree_v2": self._free,
            "cuMemcpyHtoD_v2": self._copy_to_device,
            "cuMemcpyDtoH_v2": self._copy_to_host,
            "cuGetErrorName": lambda code, out: 1,
            "cuGetErrorString": lambda code, out: 1,
        })
        self.driver = CudaDriver(self.library, "/simulated/libcuda.so.1")

    @staticmethod
    def _store(out, value) -> int:
        _target(out).value = value
        return 0

    def _device_name(self, buffer, size, device) -> int:
        buffer.value = self.name.encode()[:size - 1]
        return 0

    def _set_current(self, context) -> int:
        self.current_context = context
        return 0

    def _synchronize(self) -> int:
        self.synchronized += 1
        return 0 if self.current_context else _INVALID_VALUE

    def _alloc(self, out, nbytes) -> int:
        if not self.current_context or nbytes == 0:
            return _INVALID_VALUE
        buffer = (ctypes.c_uint8 * nbytes)()
        self.allocations[ctypes.addressof(buffer)] = buffer
        return self._store(out, ctypes.addressof(buffer))

    def _free(self, pointer) -> int:
        return 0 if self.allocations.pop(pointer, None) is not None else _INVALID_VALUE

    def _inside(self, address: int, nbytes: int) -> bool:
        return any(start <= address and address + nbytes <= start + len(buffer)
                   for start, buffer in self.allocations.items())

    def _copy_to_device(self, destination, source, nbytes) -> int:
        if not self.current_context or not self._inside(destination, nbytes):
            return _INVALID_VALUE
        ctypes.memmove(destination, source, nbytes)
        return 0

    def _copy_to_host(self, destination, source, nbytes) -> int:
        if not self.current_context or not self._inside(source, nbytes):
            return _INVALID_VALUE
        ctypes.memmove(destination, source, nbytes)
        return 0

    def contents(self, address: int, nbytes: int) -> bytes:
        """The bytes at a device address."""
        assert self._inside(address, nbytes)
        return ctypes.string_at(address, nbytes)


def install_host_gpu(monkeypatch: pytest.MonkeyPatch) -> HostBackedGPU:
    """A HostBackedGPU installed as this process's CUDA driver until the test ends."""
    simulated = HostBackedGPU()
    monkeypatch.setattr(driver_api, "_driver", simulated.driver)
    return simulated
