"""Triton's `triton._filecheck`: the helpers Triton's frontend tests import.

`run_parser` works: it runs tritone's frontend on a kernel called with given
arguments, so tests that expect a kernel to compile, or to fail with a
CompilationError, run as they do on Triton. The FileCheck helpers cannot:
their patterns are written against Triton's MLIR text (`tt.make_range`,
`tt.call`, ...), and tritone builds no MLIR (its IR, `asm["ttir"]`, is its
own text). They raise `NoMLIRError` naming what was to be checked, so such a
test fails and says why rather than passing unchecked or being skipped.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .compiler.compiler import frontend_ir
from .ir.core import Module
from .ir.target import GPUTarget
from .runtime.dispatch import source_for_call
from .runtime.jit import JITFunction

# The target Triton's frontend tests compile for (the frontend does not depend on it).
stub_target = GPUTarget("cuda", 100, 32)


class MatchError(ValueError):
    """Triton's FileCheck mismatch error: the message, then the module text checked."""

    def __init__(self, message: str, module_str: str):
        super().__init__(message)
        self.module_str = module_str

    def __str__(self) -> str:
        return f"{super().__str__()}\n{self.module_str}"


class NoMLIRError(RuntimeError):
    """A FileCheck check of Triton's MLIR text was asked of tritone, which has none."""


def _no_mlir(what: str) -> NoMLIRError:
    return NoMLIRError(
        f"{what}: tritone has no MLIR text to FileCheck. Its IR (asm['ttir']) is tritone's own, not Triton's "
        f"MLIR, so CHECK patterns written against Triton's MLIR cannot be matched; this check runs only with "
        f"upstream Triton.")


def run_filecheck(name: str, module_str: str, check_template: str) -> None:
    """Triton matches `module_str` (MLIR text) against the FileCheck
    `check_template`; tritone raises `NoMLIRError` naming the check."""
    raise _no_mlir(f"FileCheck of {name!r}")


def run_parser(kernel_fn: JITFunction, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None,
               target: GPUTarget = stub_target) -> Module:
    """The IR tritone's frontend builds for `kernel_fn` specialised for `args`
    and `kwargs` (launch options among them; `sanitize_overflow` off unless
    given), as Triton's `run_parser` returns its frontend's module. A kernel
    that does not compile raises its CompilationError."""
    if not isinstance(kernel_fn, JITFunction):
        raise TypeError(f"run_parser takes a @triton.jit function, got {kernel_fn!r}")
    kwargs = {"sanitize_overflow": False, **(kwargs or {})}
    src, options = source_for_call(kernel_fn, tuple(args), kwargs)
    return frontend_ir(src, target, options)


def run_filecheck_test(kernel_fn: JITFunction) -> None:
    """Triton FileChecks the MLIR of `kernel_fn` against the CHECK lines of its
    own source; tritone compiles the kernel (so its compile errors still
    show) and raises `NoMLIRError` naming it."""
    if not isinstance(kernel_fn, JITFunction):
        raise TypeError(f"run_filecheck_test takes a @triton.jit function, got {kernel_fn!r}")
    run_parser(kernel_fn)
    raise _no_mlir(f"FileCheck test of kernel {kernel_fn.__name__}")


def filecheck_test(fn: JITFunction) -> Callable[[], None]:
    """A test function (for pytest to collect) running `run_filecheck_test(fn)`."""

    @functools.wraps(fn)
    def test_fn() -> None:
        run_filecheck_test(fn)

    return test_fn
