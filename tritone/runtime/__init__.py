"""Launching kernels: `@jit` and `JITFunction` (jit.py), argument typing and the
binder (specialize.py), `kernel[grid](...)` (launch.py), the CPU interpreter
path (interpreter_launch.py)."""

from ..errors import InterpreterError, OutOfResources
from .autotuner import Autotuner, Heuristics
from .driver import driver
from .jit import JITFunction, KernelInterface, MockTensor, TensorWrapper, jit, reinterpret

__all__ = [
    "Autotuner",
    "Heuristics",
    "InterpreterError",
    "JITFunction",
    "KernelInterface",
    "MockTensor",
    "OutOfResources",
    "TensorWrapper",
    "driver",
    "jit",
    "reinterpret",
]
