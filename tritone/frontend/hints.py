"""Hints that turn a compile error into its fix.

Misspelt names and attributes get the closest defined one (`did_you_mean`).

A value known only at run time used as a shape or an `arange` bound is the
most common first mistake: the fix is to declare the kernel parameter it came
from `tl.constexpr`. The error is raised deep inside a builtin, which knows only
that it got a tensor; the frontend knows the expression and the names in it,
and at each `@jit` call site which caller expression a callee parameter came
from, so the hint can name the kernel's own parameter.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable
from typing import Any

from ..language.core import tensor
from ..language.core import tuple as tl_tuple
from .values import has_tensor


def runtime_names(scope: dict[str, Any], expressions: list[ast.AST], offending: Any = None) -> list[str]:
    """The local names read in `expressions` whose values are known only at run
    time, in order of first appearance. Given the `offending` tensor, only the
    names holding it, or where none does (it was computed, as in `n * 2`), those
    holding an integer scalar: a pointer or a block passed beside a shape is not
    the culprit."""
    names: list[str] = []
    for expression in expressions:
        for node in ast.walk(expression):
            if (isinstance(node, ast.Name) and node.id not in names and node.id in scope
                    and has_tensor(scope[node.id])):
                names.append(node.id)
    if offending is None:
        return names
    holding = [name for name in names if _holds(scope[name], offending)]
    return holding or [name for name in names if _is_integer_scalar(scope[name])]


def _holds(value: Any, offending: Any) -> bool:
    if value is offending:
        return True
    return isinstance(value, tl_tuple) and any(_holds(item, offending) for item in value.values)


def _is_integer_scalar(value: Any) -> bool:
    return isinstance(value, tensor) and not value.type.is_block() and value.type.scalar.is_int()


def call_arguments(call: ast.Call) -> list[ast.AST]:
    """The argument expressions of a call (not the called function)."""
    return [*call.args, *(keyword.value for keyword in call.keywords)]


def argument_of(call: ast.Call, parameters: list[str], parameter: str) -> ast.AST | None:
    """The expression `call` passes for `parameter` of a callee whose parameters
    are `parameters`, when it can be told from the call's text (no `*args`)."""
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return keyword.value
    if any(isinstance(argument, ast.Starred) for argument in call.args):
        return None
    index = parameters.index(parameter) if parameter in parameters else -1
    return call.args[index] if 0 <= index < len(call.args) else None


def not_constexpr_hint(names: list[str], parameters: list[str], function: str,
                       is_kernel: bool) -> tuple[str, tuple[str, ...]]:
    """The hint for run-time values `names` used where a constant is needed in
    `function` (whose parameters are `parameters`), and those of `names` that
    are parameters (for a caller to trace further)."""
    from_parameters = tuple(name for name in names if name in parameters)
    if from_parameters and is_kernel:
        declared = ", ".join(f"`{name}: tl.constexpr`" for name in from_parameters)
        which = "parameter" if len(from_parameters) == 1 else "parameters"
        arguments = "a run-time argument" if len(from_parameters) == 1 else "run-time arguments"
        known = "its value is" if len(from_parameters) == 1 else "their values are"
        return (f"{_listed(from_parameters)} {_is_are(from_parameters)} {arguments} of kernel {function}; "
                f"declare the {which} {declared} in `def {function}(...)` so {known} known when the kernel is "
                f"compiled (each distinct value compiles its own kernel)."), from_parameters
    if from_parameters:
        return (f"{_listed(from_parameters)} {_is_are(from_parameters)} given a run-time value by the caller of "
                f"{function}; pass a compile-time constant instead, from a kernel parameter declared "
                f"`tl.constexpr`."), from_parameters
    if names:
        return (f"{_listed(names)} {_is_are(names)} computed at run time; build shapes and tl.arange bounds only "
                f"from constants and kernel parameters declared `tl.constexpr`."), ()
    return ("shapes and tl.arange bounds must be compile-time constants: integers, or kernel parameters declared "
            "`tl.constexpr`."), ()


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """` (did you mean `close`?)` for the candidate closest to a misspelt
    `name`, or "" when none is close."""
    close = difflib.get_close_matches(name, [c for c in candidates if isinstance(c, str)], n=1, cutoff=0.75)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _listed(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _is_are(names: tuple[str, ...] | list[str]) -> str:
    return "is" if len(names) == 1 else "are"
