"""Run-time errors under Triton's module path (`triton.runtime.errors`): the
classes themselves live in `tritone.errors` and `runtime.autotuner`, so each is
one class whichever path names it."""

from ..errors import InterpreterError, OutOfResources, PTXASError
from .autotuner import AutotunerError

__all__ = ["AutotunerError", "InterpreterError", "OutOfResources", "PTXASError"]
