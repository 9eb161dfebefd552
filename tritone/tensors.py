"""What tritone reads of the tensors users pass to kernels, whatever runs them:
their address (`data_address`), whether a value is one (`is_pointer_like`),
and `TensorWrapper`/`reinterpret` (Triton's `triton.runtime.jit` names, which
re-exports them): a tensor's memory seen with another element type."""

from __future__ import annotations

from typing import Any


class TensorWrapper:
    """A tensor whose memory a kernel sees with another element type (`reinterpret`)."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        self.data = base.data
        self.shape = base.shape
        self.device = base.device

    def data_ptr(self) -> int:
        return self.base.data_ptr()

    def stride(self, *args):
        return self.base.stride(*args)

    def numel(self) -> int:
        return self.base.numel()

    def element_size(self) -> int:
        return self.base.element_size()

    # Copies and new tensors keep the reinterpretation, as Triton's wrappers do.
    def cpu(self) -> TensorWrapper:
        return TensorWrapper(self.base.cpu(), self.dtype)

    def to(self, device) -> TensorWrapper:
        return TensorWrapper(self.base.to(device), self.dtype)

    def clone(self) -> TensorWrapper:
        return TensorWrapper(self.base.clone(), self.dtype)

    def new_empty(self, sizes) -> TensorWrapper:
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def copy_(self, other) -> None:
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor, dtype):
    """View `tensor`'s memory as elements of `dtype` (a tl dtype such as
    `tl.float8e4nv`) when passed to a kernel."""
    if isinstance(tensor, TensorWrapper):
        if dtype == tensor.base.dtype:
            return tensor.base
        return TensorWrapper(tensor.base, dtype)
    if hasattr(tensor, "data_ptr"):
        return TensorWrapper(tensor, dtype)
    raise TypeError(f"cannot reinterpret a {type(tensor).__name__}")


def data_address(value: Any) -> int:
    """The address of a tensor's or array's first element."""
    data_ptr = getattr(value, "data_ptr", None)
    if data_ptr is not None:
        return data_ptr()
    return value.__array_interface__["data"][0]


def is_pointer_like(value: Any) -> bool:
    return hasattr(value, "data_ptr") or (hasattr(value, "__array_interface__") and hasattr(value, "dtype"))
