"""The exceptions tritone raises, under the names Triton gives them."""

from __future__ import annotations

import ast
import os


class TritonError(Exception):
    """Base of tritone's errors."""


_PACKAGE_DIR = os.path.normcase(os.path.dirname(os.path.abspath(__file__)))


def is_tritone_file(filename: str) -> bool:
    """Whether `filename` is one of tritone's own source files (its `@jit`
    library functions, say) rather than the user's."""
    return os.path.normcase(os.path.abspath(filename)).startswith(_PACKAGE_DIR + os.sep)


def show_internal_frames() -> bool:
    """Whether errors show tritone's own frames (`TRITONE_FULL_TRACEBACK=1` or `TRITON_DEBUG=1`)."""
    from . import knobs

    return knobs.compilation.full_traceback or knobs.compilation.debug


class CompilationError(TritonError):
    """A kernel could not be compiled. Names the file, line and column, shows the
    source line with a caret under the offending expression.

    An error inside a `@jit` function called from the kernel is raised at the call
    with the callee's error as `callee` (and `__cause__`): the text shows each call
    site of the user's code from the kernel down to the offending line, then the
    message (`error_message`, the innermost one) and, where one is known, a `hint`
    saying how to fix it. Call sites inside tritone's own `@jit` library functions
    are left out unless `show_internal_frames()`."""

    source_line_count_max_in_message = 12
    # Parameters of the failing function whose run-time values were used where a
    # constant is needed: the caller traces them to its own names for the hint.
    runtime_names: tuple[str, ...] = ()

    def __init__(self, src: str | None, node: ast.AST | None, error_message: str | None = None,
                 *, filename: str = "<unknown>", function: str = "", line_offset: int = 0,
                 callee: CompilationError | None = None, hint: str | None = None):
        self.src = src
        self.node = node
        self.error_message = error_message
        self.filename = filename
        self.function = function
        self.lineno = getattr(node, "lineno", 0) + line_offset if node is not None else 0
        self.col_offset = getattr(node, "col_offset", 0) if node is not None else 0
        self.line_offset = line_offset
        self.callee = callee
        self.hint = hint
        super().__init__(error_message)

    @property
    def message(self) -> str:
        """The whole text, as `str(error)` (the attribute upstream Triton's errors have)."""
        return self._format()

    def __str__(self) -> str:
        return self._format()

    def _source_line(self) -> str | None:
        if self.src is None or self.node is None:
            return None
        lines = self.src.splitlines()
        index = getattr(self.node, "lineno", 0) - 1
        if 0 <= index < len(lines):
            return lines[index]
        return None

    def _where(self) -> list[str]:
        """This error's own place: `at LINE:COL in kernel NAME (FILE):`, the source line, a caret."""
        where = f"at {self.lineno}:{self.col_offset}"
        if self.function:
            where += f" in kernel {self.function}"
        where += f" ({self.filename}):"
        parts = [where]
        line = self._source_line()
        if line is not None:
            parts.append(line)
            parts.append(" " * self.col_offset + "^")
        return parts

    def _format(self) -> str:
        full = show_internal_frames()
        chain = [self]
        while chain[-1].callee is not None:
            chain.append(chain[-1].callee)
        shown = [error for error in chain if full or not is_tritone_file(error.filename)] or [self]
        parts = [line for error in shown for line in error._where()]
        innermost = chain[-1]
        if innermost.error_message:
            parts.append(innermost.error_message)
        # The outermost hint knows most (which kernel parameter a value came from).
        hint = next((error.hint for error in chain if error.hint), None)
        if hint:
            parts.append(f"Hint: {hint}")
        return "\n".join(parts)

    def __reduce__(self):
        # Keyword-only fields travel too: an error pickled across processes
        # (compile workers) must name the same file, kernel and line.
        return (_rebuild_compilation_error, (type(self), self.src, self.node, self.error_message, self.filename,
                                             self.function, self.line_offset, self.callee, self.hint))


def with_hint(error: BaseException, hint: str) -> BaseException:
    """`error` carrying `hint`, which the frontend shows as the `Hint:` line of
    the CompilationError it becomes; the error's own text stays Triton's (the
    `__cause__` that upstream's tests compare)."""
    error.tritone_hint = hint
    return error


def _rebuild_compilation_error(cls: type, src: str | None, node: ast.AST | None, error_message: str | None,
                               filename: str, function: str, line_offset: int,
                               callee: CompilationError | None = None, hint: str | None = None) -> CompilationError:
    return cls(src, node, error_message, filename=filename, function=function, line_offset=line_offset,
               callee=callee, hint=hint)


def without_internal_frames(error: CompilationError) -> CompilationError:
    """`error` made ready to be raised again at a public entry point (`compile`,
    `kernel[grid](...)`, `warmup`) with `raise error from error.__cause__`: its
    traceback through tritone's internals is dropped, so what Python prints is
    the user's call and the kernel lines the message shows. Its cause becomes
    the exception that started it (the ValueError of `tl.program_id(20)`, say),
    without traceback or chain of its own, which Triton's callers read
    (`str(error.__cause__)`); None when the error began as a CompilationError
    (`tl.static_assert`). The callee errors stay reachable through `error.callee`."""
    root: BaseException | None = error
    while isinstance(root, CompilationError):
        root = root.__cause__
    if root is not None:
        root.__cause__ = None
        root.__suppress_context__ = True
        root = root.with_traceback(None)
    error.__cause__ = root
    error.__suppress_context__ = True
    return error.with_traceback(None)


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
