"""Launching kernels, whatever the target: `@jit` and `JITFunction` (jit.py),
argument typing and the binder (specialize.py), `kernel[grid](...)`
(dispatch.py), the disk cache (cache.py), autotuning (autotuner.py) and
Triton's `driver` (driver.py). What runs a kernel on a target is that target's
folder under `tritone/backends/`.

The names are Triton's `triton.runtime` exports. `jit` is not among them:
`runtime.jit` is the module, as in Triton (`triton.runtime.jit.JITFunction`),
and the decorator is `tritone.jit`."""

from .autotuner import Autotuner, Config, Heuristics, autotune, heuristics
from .driver import driver
from .errors import InterpreterError, OutOfResources
from .jit import JITFunction, KernelInterface, MockTensor, TensorWrapper, reinterpret

__all__ = [
    "Autotuner",
    "Config",
    "Heuristics",
    "InterpreterError",
    "JITFunction",
    "KernelInterface",
    "MockTensor",
    "OutOfResources",
    "TensorWrapper",
    "autotune",
    "driver",
    "heuristics",
    "reinterpret",
]
