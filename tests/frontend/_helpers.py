"""Helpers for frontend tests: compile a kernel to IR and look at its ops."""

from __future__ import annotations

import pytest

from tritone.errors import CompilationError
from tritone.frontend import ast_to_ir
from tritone.ir import verify
from tritone.ir.core import Function, Module, Operation

DEFAULT_OPTIONS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "debug": False}


def compile_ir(kernel, signature: dict, constexprs: dict | None = None, **options) -> Module:
    """The verified IR module of `kernel` for this specialisation."""
    module = ast_to_ir(kernel, signature, constexprs or {}, {**DEFAULT_OPTIONS, **options})
    verify(module)
    return module


def ops_named(where: Module | Function | Operation, name: str) -> list[Operation]:
    """Every op called `name` under `where` (nested regions included), in program order."""
    return [op for op in where.walk() if op.name == name]


def top_level_ops(fn: Function) -> list[str]:
    """The names of the ops directly in a function's body."""
    return [op.name for op in fn.body.ops]



def compile_error(kernel, signature: dict, constexprs: dict | None = None, cls: type = CompilationError,
                  **options) -> CompilationError:
    """The error compiling `kernel` raises (of class `cls`)."""
    with pytest.raises(cls) as info:
        compile_ir(kernel, signature, constexprs, **options)
    return info.value


def assert_error_at(error: CompilationError, kernel, line_after_def: int, col: int, message: str) -> None:
    """`error` points at the line `line_after_def` lines below the kernel's `def`
    (an absolute line of the file), column `col`, with exactly `message`, and
    its text shows that source line with a caret under the column."""
    assert error.filename == kernel.file_name
    assert (error.lineno, error.col_offset) == (kernel.starting_line_number + line_after_def, col)
    assert error.error_message == message
    source_line = kernel.src.splitlines()[line_after_def]
    assert f"{source_line}\n{' ' * col}^\n{message}" in str(error)
