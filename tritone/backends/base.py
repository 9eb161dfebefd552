"""What a target backend is: one object per folder `backends/<name>/`
(`BACKEND` in its `backend.py`), found through `registry`.

A backend lowers the optimised IR to what its devices run (`compile`), loads
that on a device into a launch plan (`load`), names its Triton-facing compiler
and driver classes, and, for a device backend, finds its devices
(`open_devices`, see `sites`)."""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ir.target import GPUTarget, KernelOptions
from ..language.core import constexpr

if TYPE_CHECKING:
    from ..compiler.timer import CompileTimer
    from ..ir.core import Module


@dataclass(frozen=True, eq=False)
class KernelBinary:
    """What a backend's `compile` gives a `CompiledKernel`: its `hash`, `asm`
    (stage name -> text or bytes, "ttir" always), `metadata` (what the lowering
    reported: entry, shared, num_warps...), whether it came `from_cache`, and
    the optimised IR `module` where the backend kept it (the interpreter runs it)."""

    hash: str
    asm: Mapping[str, str | bytes]
    metadata: Mapping[str, Any]
    from_cache: bool
    module: Module | None = None


class TargetBackend(ABC):
    """One compilation target: `name` is the `GPUTarget.backend` it compiles for,
    `triton_name` its key in Triton's `tritone.backends.backends` (None: not
    listed there), `compiler` and `driver` the classes Triton's API hands out."""

    name: str
    triton_name: str | None = None
    compiler: type
    driver: type

    @abstractmethod
    def compile(self, name: str, src_hash: str, build_ir: Callable[[GPUTarget], Module], target: GPUTarget,
                options: KernelOptions, timer: CompileTimer | None = None) -> KernelBinary:
        """Kernel `name` (source and specialization digest `src_hash`) compiled for
        `target`; `build_ir(codegen_target)` runs the frontend and the
        target-independent passes, only when the backend needs the IR."""

    @abstractmethod
    def load(self, kernel: Any) -> Any:
        """A launch plan of the `CompiledKernel` on the current device: it has
        `module`, `function`, `n_regs`, `n_spills`, `n_max_threads` and
        `launch(grid_x, grid_y, grid_z, stream, *args)`."""

    def fp8_dtypes(self, options: KernelOptions) -> tuple[str, ...] | None:
        """The fp8 formats kernels may use with `options`; None for every format."""
        return options.supported_fp8_dtypes

    def open_devices(self) -> tuple[Any, str | None]:
        """`(devices, None)` when this backend's devices are usable here (see
        `sites` for what `devices` offers), else `(None, why not)`."""
        return None, f"the {self.name} backend runs on no device"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def normalize_grid(grid: Any, kernel_name: str) -> tuple[int, int, int]:
    """A grid of 1-3 integers (ints, numpy integers, constexprs of ints: whatever
    `operator.index` takes) as three ints, missing dimensions 1. Raises TypeError
    for anything else (a float or a string is not truncated or parsed) and
    ValueError for negative sizes, naming the kernel."""
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"kernel {kernel_name}: the grid must have 1 to 3 dimensions, got {grid!r}")
    result = []
    for dim in dims:
        value = dim.value if isinstance(dim, constexpr) else dim
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"kernel {kernel_name}: grid dimensions must be integers, got {grid!r} "
                            f"(a {type(value).__name__}; round or convert it with int() yourself)") from None
        if value < 0:
            raise ValueError(f"kernel {kernel_name}: grid dimensions must not be negative, got {grid!r}")
        result.append(value)
    while len(result) < 3:
        result.append(1)
    return result[0], result[1], result[2]
