"""Triton's `triton.runtime.interpreter`, as far as code outside Triton uses it.

In Triton, `@jit` returns an `InterpretedFunction` when TRITON_INTERPRET=1 is
set as the decorator runs; that object runs the Python function itself with
numpy stand-ins patched into `triton.language`. tritone has one kind of kernel:
a `JITFunction` compiles to tritone's IR, which the CPU interpreter
(`tritone.interpreter`) runs whenever TRITON_INTERPRET is set at launch or no
GPU is usable. So `jit` never returns an `InterpretedFunction`, and code that
asks `isinstance(kernel, InterpretedFunction)` (TorchInductor does, to handle
Python-interpreted kernels apart) rightly hears no and treats the kernel as
any `JITFunction`. Triton's numpy builder (`InterpreterBuilder`,
`GridExecutor`, `_patch_lang`) has no counterpart here.
"""

from __future__ import annotations

from ..errors import InterpreterError
from .jit import JITFunction

__all__ = ["InterpretedFunction", "InterpreterError"]


class InterpretedFunction(JITFunction):
    """Triton's type of kernels interpreted as Python. tritone's `jit` never
    makes one (see the module's docstring); made directly, it is a
    `JITFunction`, which runs in the interpreter exactly when other kernels do."""
