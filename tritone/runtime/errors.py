"""Triton's `triton.runtime.errors`: the errors of launching and tuning kernels
(the same classes as `tritone.errors` and `tritone.runtime.autotuner` hold)."""

from ..errors import InterpreterError, OutOfResources, PTXASError
from .autotuner import AutotunerError

__all__ = ["AutotunerError", "InterpreterError", "OutOfResources", "PTXASError"]
