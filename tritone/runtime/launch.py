"""`kernel[grid](*args, **kwargs)`: bind the arguments, find or compile the
kernel for their specialization and the options, resolve the grid, run.

Where kernels run is decided here (`launch_site`): on the current NVIDIA GPU
when the driver loads and sees a GPU and TRITON_INTERPRET is not set, else in
the CPU interpreter. Compiled kernels are kept per kernel in
`fn.device_caches[(target, device)]`, keyed by (specialization, what the
options are made from: launch keywords, the kernel's debug flag, knob values).

The path of a launch whose kernel is cached is kept lean: no dictionaries
built beyond the binder's, knobs read through their fast path, the loaded
kernel's plan called directly when no launch hooks are set.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import knobs
from ..backends.compiler import INTERPRETER_TARGET, GPUTarget, KernelOptions
from ..compiler import compiler
from ..errors import TritonError
from ..language.core import constexpr
from . import cuda_driver
from .cuda_driver import CudaDriver, DeviceAttribute
from .launcher import current_device
from .specialize import CONSTEXPR, DIVISIBLE, UnknownKeywordError, make_binder

if TYPE_CHECKING:
    from .jit import JITFunction


# The interpreter has no device ordinal.
INTERPRETER_SITE: tuple[GPUTarget, int | None] = (INTERPRETER_TARGET, None)


@dataclass
class _GPU:
    """The usable GPU driver, the forced compute capability (TRITONE_TARGET) if
    any, how to ask for the current device, and the launch site of each device
    seen so far."""

    driver: CudaDriver
    forced_arch: int | None
    current_device: Callable[[], int]
    sites: dict[int, tuple[GPUTarget, int]] = field(default_factory=dict)


def _device_getter(driver: CudaDriver) -> Callable[[], int]:
    """`launcher.current_device`, through torch's raw accessor while torch has
    initialised CUDA (which spares `torch.cuda.current_device`'s Python layer on
    every launch) when torch is loaded already."""
    torch = sys.modules.get("torch")
    raw = getattr(getattr(torch, "_C", None), "_cuda_getDevice", None)
    if raw is None:
        return functools.partial(current_device, driver)
    is_initialized = torch.cuda.is_initialized

    def device() -> int:
        return raw() if is_initialized() else current_device(driver)

    return device


_UNDECIDED: Any = object()
_gpu: Any = _UNDECIDED  # a _GPU, None (no usable GPU) or _UNDECIDED
_gpu_reason: str | None = None
_gpu_lock = threading.Lock()

_TARGET_PATTERN = re.compile(r"(?:sm_|compute_)?(\d+)[af]?", re.IGNORECASE)


def parse_target(text: str | None) -> int | None:
    """The compute capability a TRITONE_TARGET value names ("sm_80", "compute_90",
    "sm_90a" or "86"), as major*10+minor; None when unset. The "a"/"f" suffixes
    are accepted and dropped (the code generator chooses architecture-specific
    features itself). Raises ValueError for anything else."""
    if text is None or not text.strip():
        return None
    match = _TARGET_PATTERN.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"TRITONE_TARGET must name a compute capability such as sm_80, compute_90 or 86, "
                         f"got {text!r}")
    return int(match.group(1))


def _decide_gpu() -> _GPU | None:
    """Probe the driver and its devices once per process (until `reset_active_target`)."""
    global _gpu, _gpu_reason
    with _gpu_lock:
        if _gpu is _UNDECIDED:
            forced_arch = parse_target(knobs.nvidia.target)
            try:
                driver = cuda_driver.driver()
                count = driver.device_count()
            except (TritonError, OSError) as error:
                _gpu, _gpu_reason = None, str(error).strip() or repr(error)
            else:
                if count < 1:
                    _gpu, _gpu_reason = None, "the CUDA driver sees no GPU"
                else:
                    _gpu, _gpu_reason = _GPU(driver, forced_arch, _device_getter(driver)), None
        return _gpu


def _new_site(gpu: _GPU, device: int) -> tuple[GPUTarget, int]:
    arch = gpu.forced_arch
    if arch is None:
        handle = gpu.driver.device_get(device)
        arch = (gpu.driver.device_attribute(DeviceAttribute.COMPUTE_CAPABILITY_MAJOR, handle) * 10
                + gpu.driver.device_attribute(DeviceAttribute.COMPUTE_CAPABILITY_MINOR, handle))
    with _gpu_lock:
        return gpu.sites.setdefault(device, (GPUTarget("cuda", arch, 32), device))


def launch_site() -> tuple[GPUTarget, int | None]:
    """`(target, device)` that kernels compile and launch for now, the key of
    `JITFunction.device_caches`: `(GPUTarget("cuda", arch, 32), ordinal)` of the
    current GPU (torch's current device once torch has initialised CUDA), with
    arch its compute capability or the one TRITONE_TARGET forces; else
    `INTERPRETER_SITE`. TRITON_INTERPRET / TRITONE_INTERPRET is read on every
    call; whether a GPU is usable is decided once per process."""
    return _site(knobs.runtime.interpret)


def _site(interpret: bool) -> tuple[GPUTarget, int | None]:
    if interpret:
        return INTERPRETER_SITE
    gpu = _gpu
    if gpu is _UNDECIDED:
        gpu = _decide_gpu()
    if gpu is None:
        return INTERPRETER_SITE
    device = gpu.current_device()
    site = gpu.sites.get(device)
    return site if site is not None else _new_site(gpu, device)


def active_target() -> GPUTarget:
    """Where kernels run now: the CUDA target of the current GPU, or the CPU
    interpreter's target when TRITON_INTERPRET is set or no GPU is usable. The
    one place that chooses between GPU and CPU (see `launch_site`)."""
    return launch_site()[0]


def gpu_unavailable_reason() -> str | None:
    """Why no GPU is used (the driver's or the library search's message), or
    None when one is usable or none was looked for yet."""
    return _gpu_reason


def reset_active_target() -> None:
    """Forget the GPU decision, so that the next launch probes the driver again
    and rereads TRITONE_TARGET (tests use it; so may a program that sets
    TRITONE_TARGET after its first launch)."""
    global _gpu, _gpu_reason
    with _gpu_lock:
        _gpu, _gpu_reason = _UNDECIDED, None


def normalize_grid(grid: Any, kernel_name: str) -> tuple[int, int, int]:
    """A grid of 1-3 ints (or constexprs) as three ints, missing dimensions 1."""
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"kernel {kernel_name}: the grid must have 1 to 3 dimensions, got {grid!r}")
    result = []
    for dim in dims:
        value = dim.value if isinstance(dim, constexpr) else dim
        try:
            value = int(value)
        except (TypeError, ValueError):
            raise TypeError(f"kernel {kernel_name}: grid dimensions must be integers, got {grid!r}") from None
        if value < 0:
            raise ValueError(f"kernel {kernel_name}: grid dimensions must not be negative, got {grid!r}")
        result.append(value)
    while len(result) < 3:
        result.append(1)
    return result[0], result[1], result[2]


def _source_for(fn: JITFunction, bound: dict[str, Any], specialization: tuple) -> compiler.ASTSource:
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    attrs: dict[tuple[int, ...], list] = {}
    for param, (type_name, attribute) in zip(fn.params, specialization):
        if type_name == CONSTEXPR:
            value = bound[param.name]
            if isinstance(value, constexpr):
                value = value.value
            constexprs[param.name] = value.item() if isinstance(value, np.generic) else value
        elif attribute == DIVISIBLE:
            attrs[(param.num,)] = [["tt.divisibility", 16]]
        signature[param.name] = type_name
    return compiler.ASTSource(fn, signature, constexprs, attrs)


def _unknown_keyword(fn: JITFunction, name: str) -> UnknownKeywordError:
    return UnknownKeywordError(
        f"Keyword argument {name} was specified but unrecognised (kernel {fn.__name__} has parameters "
        f"{', '.join(fn.arg_names)}; launch options are {', '.join(sorted(KernelOptions.FIELD_NAMES))}, stream)")


# What a kernel's options are made from: the launch keywords, the kernel's debug
# flag and the knobs that give defaults. Kernels are cached under this tuple
# (hashed in C, unlike KernelOptions) and options are built from it once.
_options_memo: dict[tuple, KernelOptions] = {}

# The knobs every launch reads: where to run, whether to use the cache, and those
# that give option defaults.
_launch_knobs = knobs.KnobReader((knobs.runtime, "interpret"), (knobs.compilation, "always_compile"),
                                 (knobs.compilation, "default_fp_fusion"), (knobs.language, "fp32_default"),
                                 (knobs.compilation, "debug"))


def _options(key: tuple, extra: dict[str, Any], debug_default: Any) -> KernelOptions:
    """The KernelOptions of an options key (see `launch`); raises ValueError for bad values."""
    options = _options_memo.get(key)
    if options is None:
        options = _options_memo[key] = KernelOptions.from_dict(extra, debug_default=bool(debug_default))
    return options


def _grid_dims(grid: Any, kernel_name: str) -> tuple[Any, Any, Any]:
    """The three grid dimensions; tuples of ints pass as they are (the plans check
    their ranges), anything else through `normalize_grid`."""
    if type(grid) is tuple:
        size = len(grid)
        if size == 1:
            x = grid[0]
            if type(x) is int:
                return x, 1, 1
        elif size == 3:
            x, y, z = grid
            if type(x) is int and type(y) is int and type(z) is int:
                return grid
    return normalize_grid(grid, kernel_name)


def launch(fn: JITFunction, args: tuple, kwargs: dict[str, Any], *, grid, warmup: bool) -> compiler.CompiledKernel:
    """Compile `fn` for these arguments if not cached and, unless `warmup`, run it
    over `grid`. Returns the CompiledKernel."""
    binder = fn._binder
    if binder is None:
        binder = fn._binder = make_binder(fn)
    bound, specialization, extra = binder(*args, **kwargs)
    stream = None
    if extra:
        stream = extra.pop("stream", None)
        for name in extra:
            if name not in KernelOptions.FIELD_NAMES:
                raise _unknown_keyword(fn, name)
    if fn.pre_run_hooks:
        for hook in fn.pre_run_hooks:
            hook(*args, **kwargs)

    interpret, always_compile, fp_fusion_default, fp32_default, debug_knob = _launch_knobs()
    options_key = (tuple(sorted(extra.items())) if extra else (), fn.debug, fp_fusion_default, fp32_default,
                   debug_knob)
    site = _site(interpret)
    cache = fn.device_caches.for_site(site)
    key = (specialization, options_key)
    kernel = None if always_compile else cache.get(key)
    if kernel is None:
        options = _options(options_key, extra, fn.debug)
        kernel = compiler.compile(_source_for(fn, bound, specialization), target=site[0], options=options)
        cache[key] = kernel
    elif fn.used_global_vals:
        fn.check_globals_unchanged()
    if warmup:
        return kernel

    plan = kernel._plan
    if plan is None:
        kernel._init_handles()
        plan = kernel._plan
    grid_x, grid_y, grid_z = _grid_dims(grid(bound) if callable(grid) else grid, fn.__name__)
    if knobs.runtime.launch_enter_hook is None:
        plan.launch(grid_x, grid_y, grid_z, stream, *bound.values())
        return kernel
    values = list(bound.values())
    metadata = kernel.launch_metadata((grid_x, grid_y, grid_z), stream, *values)
    kernel.run(grid_x, grid_y, grid_z, stream, kernel.function, kernel.packed_metadata, metadata,
               knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *values)
    return kernel
