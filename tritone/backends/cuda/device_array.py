"""Arrays in GPU memory without torch, and arrays placed where kernels run now.

`DeviceArray` is one contiguous allocation made with the CUDA driver
(`cuMemAlloc`) in the primary context of its GPU, the context the launcher
launches in. A kernel takes it as a pointer argument as it takes a torch
tensor: it has `data_ptr()`, a numpy `dtype`, a `device` (`cuda:N`) and
`__cuda_array_interface__` version 3. Data goes in from numpy (`from_numpy`,
`copy_from`) and comes back as numpy (`numpy`). The memory is freed by `free()`
or at the end of a `with` block, or when the array is collected.

`KernelMemory` puts numpy arrays where kernels run now: as they are for the CPU
interpreter, in `DeviceArray`s on a GPU. `python -m tritone selftest` and the
tests use it to run the same code on both.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ...errors import TritonError
from .. import sites
from .bindings import driver_api
from .bindings.driver_api import CudaDriver
from .launch_plan import _make_context_current, current_device


@dataclass(frozen=True)
class CudaDevice:
    """The GPU an array lives on, read as a torch device is (`type`, `index`)."""

    index: int
    type: str = "cuda"

    def __str__(self) -> str:
        return f"{self.type}:{self.index}"


def _release(driver: CudaDriver, device: int, pointer: int) -> None:
    # cuMemFree needs a context current on this thread; the array's is the one that owns the memory.
    _make_context_current(driver, device)
    driver.memory_free(pointer)


def _release_when_collected(driver: CudaDriver, device: int, pointer: int) -> None:
    try:
        _release(driver, device, pointer)
    except TritonError:
        pass  # the context is gone (interpreter shutdown, a failed kernel); so is the memory


class DeviceArray:
    """A C-contiguous array of `shape` elements of numpy `dtype` in the memory of
    GPU `device` (default: the one kernels launch on now), uninitialised.
    `driver` defaults to this process's CUDA driver."""

    def __init__(self, shape: int | Sequence[int], dtype: DTypeLike, *, device: int | None = None,
                 driver: CudaDriver | None = None):
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        self.shape: tuple[int, ...] = tuple(int(n) for n in dims)
        if any(n < 0 for n in self.shape):
            raise ValueError(f"DeviceArray: the shape {self.shape} has a negative size")
        self.dtype = np.dtype(dtype)
        if self.dtype.hasobject or self.dtype.itemsize == 0:
            raise TypeError(f"DeviceArray: {self.dtype} has no fixed-size binary form that a GPU can hold")
        self._driver = driver if driver is not None else driver_api.driver()
        ordinal = current_device(self._driver) if device is None else device
        self.device = CudaDevice(ordinal)
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize
        _make_context_current(self._driver, ordinal)
        # cuMemAlloc refuses 0 bytes; an empty array is the null pointer, as torch's are.
        self._pointer = self._driver.memory_alloc(self.nbytes) if self.nbytes else 0
        self._finalizer = (weakref.finalize(self, _release_when_collected, self._driver, ordinal, self._pointer)
                           if self._pointer else None)
        self._freed = False

    @classmethod
    def from_numpy(cls, array: Any, *, device: int | None = None, driver: CudaDriver | None = None) -> DeviceArray:
        """A new DeviceArray holding a copy of `array` (anything numpy converts)."""
        host = np.ascontiguousarray(array)
        result = cls(host.shape, host.dtype, device=device, driver=driver)
        result.copy_from(host)
        return result

    @property
    def strides(self) -> tuple[int, ...]:
        """Bytes between neighbours along each axis (C order), as numpy gives them."""
        strides, step = [], self.dtype.itemsize
        for size in reversed(self.shape):
            strides.append(step)
            step *= size
        return tuple(reversed(strides))

    def data_ptr(self) -> int:
        """The device address of the first element (0 for an empty array)."""
        self._check_live()
        return self._pointer

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """Version 3 of the CUDA array interface (CuPy, Numba, torch.as_tensor read it)."""
        self._check_live()
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self._pointer, False),
                "strides": self.strides, "version": 3}

    def copy_from(self, array: Any) -> None:
        """Overwrite the contents with `array`, which must have this shape and dtype."""
        self._check_live()
        host = np.ascontiguousarray(array)
        if host.shape != self.shape or host.dtype != self.dtype:
            raise ValueError(f"DeviceArray.copy_from: got {host.dtype} {host.shape}, "
                             f"the array holds {self.dtype} {self.shape}")
        if self.nbytes:
            _make_context_current(self._driver, self.device.index)
            self._driver.copy_host_to_device(self._pointer, host, self.nbytes)

    def numpy(self) -> np.ndarray:
        """A numpy copy of the contents, once every kernel launched before has finished."""
        self._check_live()
        host = np.empty(self.shape, self.dtype)
        if self.nbytes:
            _make_context_current(self._driver, self.device.index)
            # Kernels may run on any stream of the context; the copy must see all they wrote.
            self._driver.context_synchronize()
            self._driver.copy_device_to_host(host, self._pointer, self.nbytes)
        return host

    def free(self) -> None:
        """Give the memory back now (again: nothing); the array cannot be used after."""
        finalizer, self._finalizer = self._finalizer, None
        self._freed = True
        if finalizer is not None and finalizer.detach() is not None:
            _release(self._driver, self.device.index, self._pointer)

    def _check_live(self) -> None:
        if self._freed:
            raise ValueError("this DeviceArray was freed")

    def __enter__(self) -> DeviceArray:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.free()

    def __repr__(self) -> str:
        state = ", freed" if self._freed else ""
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device='{self.device}'{state})"


class KernelMemory:
    """Numpy arrays placed where kernels run now (`launch.launch_site()` when made):
    `put` gives what to pass to a kernel (the array itself for the CPU
    interpreter, which then writes into it; a DeviceArray copy of it on a GPU),
    `get` the contents of what `put` gave as a numpy array. Closing (or leaving
    the `with` block) frees the device memory."""

    def __init__(self) -> None:
        self.target, self.device = sites.launch_site()
        self._arrays: list[DeviceArray] = []

    @property
    def on_gpu(self) -> bool:
        return self.target.backend == "cuda"

    @property
    def where(self) -> str:
        """Where kernels run, for people: the GPU's name and architecture, or "CPU interpreter"."""
        if not self.on_gpu:
            return "CPU interpreter"
        driver = driver_api.driver()
        return f"{driver.device_name(driver.device_get(self.device))} (sm_{self.target.arch})"

    def put(self, array: np.ndarray) -> Any:
        if not self.on_gpu:
            return array
        placed = DeviceArray.from_numpy(array, device=self.device)
        self._arrays.append(placed)
        return placed

    def get(self, placed: Any) -> np.ndarray:
        return placed.numpy() if isinstance(placed, DeviceArray) else np.asarray(placed)

    def close(self) -> None:
        arrays, self._arrays = self._arrays, []
        for array in arrays:
            array.free()

    def __enter__(self) -> KernelMemory:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

