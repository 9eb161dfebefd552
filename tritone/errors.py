"""The exceptions tritone raises, under the names Triton gives them."""

from __future__ import annotations

import ast


class TritonError(Exception):
    """Base of tritone's errors."""


class CompilationError(TritonError):
    """A kernel could not be compiled. Names the file, line and column, shows the
    source line with a caret under the offending expression."""

    source_line_count_max_in_message = 12

    def __init__(self, src: str | None, node: ast.AST | None, error_message: str | None = None,
                 *, filename: str = "<unknown>", function: str = "", line_offset: int = 0):
        self.src = src
        self.node = node
        self.error_message = error_message
        self.filename = filename
        self.function = function
        self.lineno = getattr(node, "lineno", 0) + line_offset if node is not None else 0
        self.col_offset = getattr(node, "col_offset", 0) if node is not None else 0
        self.line_offset = line_offset
        super().__init__(self._format())

    def _source_line(self) -> str | None:
        if self.src is None or self.node is None:
            return None
        lines = self.src.splitlines()
        index = getattr(self.node, "lineno", 0) - 1
        if 0 <= index < len(lines):
            return lines[index]
        return None

    def _format(self) -> str:
        where = f"at {self.lineno}:{self.col_offset}"
        if self.function:
            where += f" in kernel {self.function}"
        where += f" ({self.filename}):"
        parts = [where]
        line = self._source_line()
        if line is not None:
            parts.append(line)
            parts.append(" " * self.col_offset + "^")
        if self.error_message:
            parts.append(self.error_message)
        return "\n".join(parts)

    def __reduce__(self):
        # Keyword-only fields travel too: an error pickled across processes
        # (compile workers) must name the same file, kernel and line.
        return (_rebuild_compilation_error, (type(self), self.src, self.node, self.error_message, self.filename,
                                             self.function, self.line_offset))


def _rebuild_compilation_error(cls: type, src: str | None, node: ast.AST | None, error_message: str | None,
                               filename: str, function: str, line_offset: int) -> CompilationError:
    return cls(src, node, error_message, filename=filename, function=function, line_offset=line_offset)


class CompileTimeAssertionFailure(CompilationError):
    """`tl.static_assert` failed."""


class UnsupportedLanguageConstruct(CompilationError):
    """Python syntax that kernels cannot use (`break`, `lambda`, `try`, ...)."""


class OutOfResources(TritonError):
    """A kernel configuration needs more of a GPU resource than there is."""

    def __init__(self, required: int, limit: int, name: str):
        self.required = required
        self.limit = limit
        self.name = name
        super().__init__(f"out of resource: {name}, Required: {required}, Hardware limit: {limit}. "
                         "Reducing block sizes or `num_stages` may help.")

    def __reduce__(self):
        return (type(self), (self.required, self.limit, self.name))


class PTXASError(TritonError):
    """The GPU assembler (inside NVRTC/the driver) rejected generated code."""


class InterpreterError(TritonError):
    """A kernel failed while running in the CPU interpreter (out-of-bounds access,
    failed device_assert, ...). The message names the program id and source line."""
