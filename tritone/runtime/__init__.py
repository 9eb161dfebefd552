"""Launching kernels: `@jit` and `JITFunction` (jit.py), argument typing and the
binder (specialize.py), `kernel[grid](...)` (launch.py), the CPU interpreter
path (interpreter_launch.py), autotuning (autotuner.py).

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
