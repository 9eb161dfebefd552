"""`DriverBase`: what every driver in `runtime.driver` offers, Triton's
`triton.backends.driver.DriverBase`, so code that checks
`isinstance(driver.active, DriverBase)` (or subclasses it for a fake driver)
works with tritone's."""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from typing import Any, Callable


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


__all__ = ["DriverBase"]
