"""Running a compiled kernel in the CPU interpreter: checks the arguments can be
read on the CPU, then hands the IR and the run-time values to
`tritone.interpreter.run_kernel`. `InterpreterPlan` gives interpreter kernels
the launch interface of a GPU `LaunchPlan`.

With TRITON_INTERPRET set, arrays in GPU memory are accepted as upstream
Triton's interpreter accepts them, so that GPU code can be debugged on the CPU
unchanged: each is copied to host memory before the run (torch tensors as
their whole storage through torch, objects with `__cuda_array_interface__` as
the bytes they span through the CUDA driver), the kernel runs on the copies,
and once it has run to the end the copies are written back to the GPU. Arguments sharing memory
share one copy, so a kernel that writes through one sees it through the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import knobs
from ...interpreter import run_kernel
from ...tensors import TensorWrapper, is_pointer_like
from ..base import normalize_grid
from ..cuda.bindings import driver_api
from ..cuda.launch_plan import _make_context_current, current_device, element_at
from ..sites import gpu_unavailable_reason

if TYPE_CHECKING:
    from ...compiler.compiler import CompiledKernel


def _why_on_the_cpu() -> str:
    """Why kernels run in the interpreter now, for messages."""
    if knobs.runtime.interpret:
        return "TRITON_INTERPRET is set, so kernels run in tritone's CPU interpreter"
    reason = gpu_unavailable_reason()
    # The first sentence names the problem; the rest (places searched, fixes) is the doctor's to show.
    summary = reason.splitlines()[0].split(". ")[0].rstrip(".") if reason else ""
    return ("kernels run in tritone's CPU interpreter because no usable NVIDIA GPU and driver were found"
            + (f" ({summary})" if summary else ""))


def _device_type(value: Any) -> str | None:
    """The kind of device an array says it lives on ("cpu", "cuda", "meta"), or None when it does not say."""
    device = getattr(value, "device", None)
    kind = getattr(device, "type", device)
    return None if kind is None else str(kind).partition(":")[0]


def _in_gpu_memory(value: Any, kind: str | None) -> bool:
    """Whether an array lives in CUDA memory: it says so, or says nothing and has only the CUDA array interface."""
    if kind is not None:
        return kind == "cuda"
    return hasattr(value, "__cuda_array_interface__") and not hasattr(value, "__array_interface__")


@dataclass
class _Region:
    """Bytes [start, end) of GPU memory and their host copy."""

    start: int
    end: int
    host: np.ndarray | None = None


@dataclass(frozen=True)
class _CudaLayout:
    """Where an array with `__cuda_array_interface__` lies: first element's address, shape, dtype, byte strides."""

    address: int
    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...]

    @classmethod
    def of(cls, value: Any) -> _CudaLayout:
        interface = value.__cuda_array_interface__
        shape = tuple(int(n) for n in interface["shape"])
        dtype = np.dtype(interface["typestr"])
        strides = interface.get("strides")
        if strides is None:  # C-contiguous
            strides, step = [], dtype.itemsize
            for size in reversed(shape):
                strides.append(step)
                step *= size
            strides.reverse()
        return cls(int(interface["data"][0] or 0), shape, dtype, tuple(int(s) for s in strides))

    def span(self) -> tuple[int, int] | None:
        """The bytes [start, end) the elements cover, None when there are none."""
        if self.address == 0 or 0 in self.shape:
            return None
        low = high = self.address
        for size, stride in zip(self.shape, self.strides):
            reach = (size - 1) * stride
            low, high = (low + reach, high) if reach < 0 else (low, high + reach)
        return low, high + self.dtype.itemsize


class _HostCopies:
    """Host copies of the GPU arrays among one launch's arguments (see the module
    docstring): made when built, handed out by `host_array`, written back by `write_back`."""

    def __init__(self, arrays: list[Any]):
        self._storages: dict[int, tuple[Any, Any]] = {}  # device storage address -> (device, host) storages
        self._regions: list[_Region] = []
        self._driver: Any = None
        layouts = []
        for array in arrays:
            if hasattr(array, "untyped_storage"):
                storage = array.untyped_storage()
                if storage.data_ptr() not in self._storages:
                    self._storages[storage.data_ptr()] = (storage, storage.cpu())
            else:
                layouts.append(_CudaLayout.of(array))
        spans = sorted(span for span in (layout.span() for layout in layouts) if span is not None)
        for start, end in spans:
            if self._regions and start < self._regions[-1].end:
                self._regions[-1].end = max(self._regions[-1].end, end)
            else:
                self._regions.append(_Region(start, end))
        if self._regions:
            self._driver = _driver_for(arrays)
            # Kernels may still be writing these arrays on some stream of the context.
            self._driver.context_synchronize()
            for region in self._regions:
                region.host = np.empty(region.end - region.start, dtype=np.uint8)
                self._driver.copy_device_to_host(region.host, region.start, region.end - region.start)

    def host_array(self, array: Any) -> Any:
        """The host copy of `array`, one of those the copies were made for."""
        if hasattr(array, "untyped_storage"):
            _, host_storage = self._storages[array.untyped_storage().data_ptr()]
            view = array.new_empty(0, device="cpu")
            return view.set_(host_storage, array.storage_offset(), array.size(), array.stride())
        layout = _CudaLayout.of(array)
        span = layout.span()
        if span is None:
            return np.empty(layout.shape, layout.dtype)
        region = next(r for r in self._regions if r.start <= span[0] and span[1] <= r.end)
        return np.ndarray(layout.shape, layout.dtype, buffer=region.host, offset=layout.address - region.start,
                          strides=layout.strides)

    def write_back(self) -> None:
        """Copy what the kernel left in the host copies back to the GPU."""
        for device_storage, host_storage in self._storages.values():
            device_storage.copy_(host_storage)
        for region in self._regions:
            self._driver.copy_host_to_device(region.start, region.host, region.end - region.start)


def _driver_for(arrays: list[Any]) -> Any:
    """The CUDA driver with a context of the arrays' GPU current (the launcher's, of
    the device the first array names, else of the current device)."""
    driver = driver_api.driver()
    named = [getattr(getattr(a, "device", None), "index", None) for a in arrays]
    device = next((index for index in named if isinstance(index, int)), None)
    _make_context_current(driver, current_device(driver) if device is None else device)
    return driver


def _host_buffer(kernel_name: str, param: str, value: Any) -> tuple[Any, bool]:
    """The memory object the interpreter reads for a pointer argument, and whether
    it is in GPU memory and must be copied to the host first."""
    if isinstance(value, TensorWrapper):
        value = value.base
    kind = _device_type(value)
    if kind in (None, "cpu") and not _in_gpu_memory(value, kind):
        return value, False
    in_gpu_memory = _in_gpu_memory(value, kind)
    copyable = hasattr(value, "untyped_storage") or hasattr(value, "__cuda_array_interface__")
    interpret = knobs.runtime.interpret
    if interpret and in_gpu_memory and copyable:
        return value, True
    device = getattr(value, "device", None) or "cuda"
    where = f"kernel {kernel_name}, argument {param!r}: a tensor on device {device} cannot be used here"
    if not in_gpu_memory:
        # Neither a GPU nor unsetting TRITON_INTERPRET would make such a tensor usable.
        reason = "a meta tensor holds no data" if kind == "meta" else "the interpreter reads host memory only"
        raise ValueError(f"{where}: {reason} ({_why_on_the_cpu()}). Pass a CPU tensor holding the data instead")
    if interpret:
        advice = ("Pass a CPU tensor (`.cpu()`), or unset TRITON_INTERPRET/TRITONE_INTERPRET where a GPU is "
                  "usable (`python -m tritone doctor` says what it finds)")
    else:
        advice = "Pass a CPU tensor (`.cpu()`); `python -m tritone doctor` says why no GPU is used"
    raise ValueError(f"{where}: {_why_on_the_cpu()}. {advice}")


def run_on_interpreter(kernel: CompiledKernel, grid: tuple[int, int, int], args: list[Any]) -> None:
    """Run `kernel` over `grid` with one value per argument of its function
    (`kernel.runtime_leaves`: tuple arguments flattened); GPU arrays (with
    TRITON_INTERPRET set) are copied to the host and back."""
    if 0 in grid:
        return
    values: list[Any] = []
    on_gpu: dict[int, Any] = {}
    for leaf, value in zip(kernel.runtime_leaves, args):
        if is_pointer_like(value):
            value, copy = _host_buffer(kernel.name, leaf.label, value)
            if copy:
                on_gpu[len(values)] = value
        values.append(value)
    if not on_gpu:
        run_kernel(kernel.ir, grid, values)
        return
    copies = _HostCopies(list(on_gpu.values()))
    for position, array in on_gpu.items():
        values[position] = copies.host_array(array)
    run_kernel(kernel.ir, grid, values)
    copies.write_back()


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
        self._arg_count = len(kernel.src.fn.arg_names)

    def launch(self, grid_x: Any, grid_y: Any, grid_z: Any, stream: Any, *args: Any) -> None:
        """Run the kernel over the grid (dimensions of 0 run nothing)."""
        kernel = self.kernel
        if len(args) != self._arg_count:
            raise TypeError(f"kernel {kernel.name} takes {self._arg_count} arguments (constexprs included), "
                            f"got {len(args)}")
        grid = normalize_grid((grid_x, grid_y, grid_z), kernel.name)
        leaves = [element_at(kernel.name, leaf.name, leaf.path, args[leaf.num]) for leaf in kernel.runtime_leaves]
        run_on_interpreter(kernel, grid, leaves)
