"""`DriverBase`: what every driver in `runtime.driver` offers, Triton's
`triton.backends.driver.DriverBase`, so code that checks
`isinstance(driver.active, DriverBase)` (or subclasses it for a fake driver)
works with tritone's. Each backend folder holds its driver class
(`cuda/driver.py`, `interpreter/driver.py`)."""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from typing import Any, Callable

from ..ir.target import GPUTarget
from . import sites


class DriverBase(metaclass=ABCMeta):
    """A place kernels run: says whether it is usable, which target it compiles
    for, which torch device holds its tensors and how it times kernels."""

    @classmethod
    @abstractmethod
    def is_active(cls) -> bool:
        """Whether kernels can run here in this process."""

    @abstractmethod
    def get_current_target(self) -> Any:
        """The `GPUTarget` kernels compile for now."""

    @abstractmethod
    def get_active_torch_device(self) -> Any:
        """The torch device whose tensors kernels read and write."""

    @abstractmethod
    def get_benchmarker(self) -> Callable[..., Any]:
        """The function that times a kernel call (`testing.do_bench`'s contract)."""


def launch_target() -> GPUTarget:
    """Where kernels run now (`sites.active_target()`), which the drivers follow."""
    return sites.active_target()


def device_ordinal(device: Any) -> int:
    """An ordinal from an int, a `torch.device`, or a string such as "cuda:1"."""
    if isinstance(device, str):
        _, _, index = device.partition(":")
        return int(index or 0)
    index = getattr(device, "index", device)
    return 0 if index is None else int(index)


__all__ = ["DriverBase"]
