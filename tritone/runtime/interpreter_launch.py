"""Running a compiled kernel in the CPU interpreter: checks the arguments can be
read on the CPU, then hands the IR and the run-time values to
`tritone.interpreter.run_kernel`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..interpreter import run_kernel
from .jit import TensorWrapper
from .specialize import is_pointer_like

if TYPE_CHECKING:
    from ..compiler.compiler import CompiledKernel


def _host_buffer(kernel_name: str, param: str, value: Any) -> Any:
    """The memory object the interpreter reads for a pointer argument."""
    if isinstance(value, TensorWrapper):
        value = value.base
    device = getattr(value, "device", None)
    device_type = getattr(device, "type", device)
    if device_type is not None and str(device_type) != "cpu":
        raise ValueError(
            f"kernel {kernel_name}, argument {param!r}: a tensor on device {device} cannot be used by the CPU "
            "interpreter, and tritone's GPU backend is not available yet; pass a CPU tensor (`.cpu()`) instead")
    return value


def run_on_interpreter(kernel: CompiledKernel, grid: tuple[int, int, int], args: list[Any]) -> None:
    """Run `kernel` over `grid` with the values of its run-time parameters."""
    if 0 in grid:
        return
    values = [
        _host_buffer(kernel.name, name, value) if is_pointer_like(value) else value
        for name, value in zip(kernel.runtime_parameters, args)
    ]
    run_kernel(kernel.ir, grid, values)
