"""Which names a kernel may read, and what they mean (TRITON_SEMANTICS 10).

Locals come first, then the function's globals and closure, then the few
Python builtins kernels may use. Globals are restricted: a kernel compiled
once must not silently depend on a mutable Python value, so only values that
are constant by nature (modules, `@jit` functions, builtins, dtypes,
namedtuple types, `tl.constexpr(...)` objects, anything from
`tritone.language`) are readable, unless the `allow_non_constexpr_globals`
option says otherwise.
"""

from __future__ import annotations

import builtins
import types as pytypes
from typing import Any, Callable

from ..ir.types import dtype
from ..language.core import constexpr, is_builtin
from .values import is_namedtuple_type

# Python builtins a kernel may call; `print`, `min` and `max` are handled by
# the codegen itself (device_print, tl.minimum/maximum on tensors).
PYTHON_BUILTINS: dict[str, Any] = {
    f.__name__: f
    for f in (len, list, range, float, int, isinstance, getattr, hasattr, print, min, max)
}

_ABSENT = object()

_NON_CONSTEXPR_GLOBAL = (
    "Cannot access global variable {name} from within @jit'ed function: a kernel reads only globals "
    "that are compile-time constants. Wrap the value as `{name} = tl.constexpr(...)` where it is defined, "
    "pass it to the kernel as a `tl.constexpr` parameter, or set TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1 to bake "
    "its current value into the kernel.")


def is_jit_function(value: Any) -> bool:
    """Whether `value` is a `@jit` function (a `JITFunction`)."""
    from ..runtime.jit import JITFunction

    return isinstance(value, JITFunction)


def _is_constant_by_nature(value: Any) -> bool:
    module = getattr(value, "__module__", None) or ""
    return (
        isinstance(value, (pytypes.ModuleType, dtype, constexpr))
        or is_jit_function(value)
        or is_builtin(value)
        or is_namedtuple_type(value)
        or module.startswith("tritone.language")
    )


class GlobalScope:
    """The non-local names of one `@jit` function: its closure, then its
    globals, then the allowed Python builtins."""

    def __init__(self, fn: Callable, globals_: dict[str, Any], allow_non_constexpr_globals: bool):
        self.globals = globals_
        self.closure: dict[str, Any] = {}
        code = getattr(fn, "__code__", None)
        if code is not None and getattr(fn, "__closure__", None):
            for name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:  # an empty cell: the name is not bound yet
                    continue
        self.allow_non_constexpr_globals = allow_non_constexpr_globals

    def lookup(self, name: str) -> Any:
        """The value of a non-local `name`; NameError when it is not defined or
        not readable from a kernel."""
        for table in (self.closure, self.globals):
            value = table.get(name, _ABSENT)
            if value is _ABSENT:
                continue
            if _is_constant_by_nature(value) or self.allow_non_constexpr_globals:
                return value
            # A name shadowing an allowed builtin with itself (`from builtins import range`).
            if PYTHON_BUILTINS.get(name) is value:
                return value
            raise NameError(_NON_CONSTEXPR_GLOBAL.format(name=name))
        value = PYTHON_BUILTINS.get(name, _ABSENT)
        if value is not _ABSENT:
            return value
        if hasattr(builtins, name):
            raise NameError(f"{name} is not defined (the Python builtin `{name}` cannot be used in a kernel)")
        raise NameError(f"{name} is not defined")


def language_attr(name: str) -> Any:
    """`tritone.language.<name>` (or `tritone.language.core.<name>`), None when
    the language does not define it."""
    import tritone.language as tl
    from tritone.language import core as tl_core


    value = getattr(tl, name, None)
    if value is None:
        value = getattr(tl_core, name, None)
    return value
