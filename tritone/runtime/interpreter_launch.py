"""Running a compiled kernel in the CPU interpreter: checks the arguments can be
read on the CPU, then hands the IR and the run-time values to
`tritone.interpreter.run_kernel`. `InterpreterPlan` gives interpreter kernels
the launch interface of a GPU `LaunchPlan`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import knobs
from ..interpreter import run_kernel
from .jit import TensorWrapper
from .specialize import is_pointer_like

if TYPE_CHECKING:
    from ..compiler.compiler import CompiledKernel


def _why_on_the_cpu() -> str:
    """Why kernels run in the interpreter now, for messages."""
    if knobs.runtime.interpret:
        return "TRITON_INTERPRET is set, so kernels run in tritone's CPU interpreter"
    from .launch import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    # The first sentence names the problem; the rest (places searched, fixes) is the doctor's to show.
    summary = reason.splitlines()[0].split(". ")[0].rstrip(".") if reason else ""
    return ("kernels run in tritone's CPU interpreter because no usable NVIDIA GPU and driver were found"
            + (f" ({summary})" if summary else ""))


def _host_buffer(kernel_name: str, param: str, value: Any) -> Any:
    """The memory object the interpreter reads for a pointer argument."""
    if isinstance(value, TensorWrapper):
        value = value.base
    device = getattr(value, "device", None)
    device_type = getattr(device, "type", device)
    if device_type is not None and str(device_type) != "cpu":
        raise ValueError(
            f"kernel {kernel_name}, argument {param!r}: a tensor on device {device} cannot be used here: "
            f"{_why_on_the_cpu()}. Pass a CPU tensor (`.cpu()`), or unset TRITON_INTERPRET/TRITONE_INTERPRET "
            "where a GPU is usable (`python -m tritone doctor` says what it finds)")
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


class InterpreterPlan:
    """A kernel ready to run in the CPU interpreter, launched as a GPU plan is:
    `launch(grid_x, grid_y, grid_z, stream, *args)` with every parameter's value
    in order, constexprs included (skipped); the stream is ignored."""

    module = None
    n_regs = 0
    n_spills = 0
    n_max_threads = 1024

    def __init__(self, kernel: CompiledKernel):
        self.kernel = kernel
        self.function = kernel.name
        arg_names = kernel.src.fn.arg_names
        self._arg_count = len(arg_names)
        self._runtime_indices = [arg_names.index(name) for name in kernel.runtime_parameters]

    def launch(self, grid_x: Any, grid_y: Any, grid_z: Any, stream: Any, *args: Any) -> None:
        """Run the kernel over the grid (dimensions of 0 run nothing)."""
        from .launch import normalize_grid

        kernel = self.kernel
        if len(args) != self._arg_count:
            raise TypeError(f"kernel {kernel.name} takes {self._arg_count} arguments (constexprs included), "
                            f"got {len(args)}")
        grid = normalize_grid((grid_x, grid_y, grid_z), kernel.name)
        run_on_interpreter(kernel, grid, [args[i] for i in self._runtime_indices])
