"""Calls in kernel code.

- `@jit` functions are specialised per (argument types, constexpr values)
  and called through `call` ops (codegen.ModuleContext.call_jit).
- Builtins (callables with `__triton_builtin__`, tensor methods included)
  are called with `_semantic=`.
- `tl.static_assert`, `tl.static_print`, `print` (device_print) and the
  Python builtins `min`, `max`, `len`, `int`, `float`, `isinstance`,
  `getattr`, `hasattr`, `list`, `range` have their kernel meaning here.
- Any other Python callable runs at compile time on the Python values of
  its arguments; its result is a constexpr.

Errors raised while calling become CompilationErrors at the call; an error
inside a callee is re-raised at the call site (same class, message naming
both places) with the callee's error as `callee` and `__cause__`.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
from dataclasses import dataclass
from typing import Any

from ..errors import CompilationError, CompileTimeAssertionFailure
from ..language.core import base_value, constexpr, is_builtin, tensor
from ..language.core import tuple as tl_tuple
from . import hints
from .scope import is_jit_function, language_attr
from .values import has_tensor, to_python, unwrap, wrap


@dataclass(frozen=True)
class BoundJitMethod:
    """A `@jit` function reached as an attribute of a tensor (`x.sum` when the
    language defines `sum` with `@jit`): calling it passes the tensor first."""

    receiver: Any
    fn: Any


def _normalise_result(value: Any) -> Any:
    """A builtin's result as kernel code sees it (Python tuples as tl.tuples)."""
    if isinstance(value, (tuple, list)) and not hasattr(type(value), "_fields"):
        return tl_tuple([_normalise_result(v) for v in value])
    return value


class CallsMixin:
    """The call part of FunctionCodegen (see codegen.py)."""

    def visit_Call(self, node: ast.Call) -> Any:
        fn = unwrap(self.visit(node.func))
        if node in self.discarded_calls:
            self._check_result_used(node, fn)
        args = self._elements(node.args)
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            value = self.visit(keyword.value)
            if keyword.arg is not None:
                kwargs[keyword.arg] = value
                continue
            mapping = unwrap(value)
            if has_tensor(value) or not isinstance(mapping, dict):
                raise self.error(keyword, "`**` arguments must be compile-time dicts")
            kwargs.update({k: wrap(v) for k, v in mapping.items()})
        return self.call(node, fn, args, kwargs)

    def _check_result_used(self, node: ast.Call, fn: Any) -> None:
        """Raise for a discarded call of a callee marked `must_use_result`,
        with the marker's words when it gave some."""
        marker = getattr(fn, "_must_use_result", False)
        if not marker:
            return
        message = f"The result of {ast.unparse(node.func)} is not being used."
        if isinstance(marker, str):
            message += " " + marker
        raise self.error(node, message)

    def call(self, node: ast.AST, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if isinstance(fn, BoundJitMethod):
            args = [fn.receiver] + args
            fn = fn.fn
        special = self._special_call(fn)
        if special is not None:
            return special(node, args, kwargs)
        if is_jit_function(fn):
            return self._nested(node, lambda: wrap(self.ctx.call_jit(fn, args, kwargs)), fn)
        if is_builtin(fn):
            return self._nested(node, lambda: _normalise_result(fn(*args, _semantic=self.semantic, **kwargs)))
        receiver = getattr(fn, "__self__", None)
        if isinstance(receiver, base_value):
            # A plain method of a tensor/tuple: it gets kernel values as they are.
            if "_semantic" in _parameters(fn):
                kwargs = dict(kwargs, _semantic=self.semantic)
            return _normalise_result(fn(*args, **kwargs))
        if not callable(fn):
            raise self.error(node, f"'{type(fn).__name__}' object is not callable")
        result = fn(*[to_python(a) for a in args], **{k: to_python(v) for k, v in kwargs.items()})
        return wrap(result)

    def _nested(self, node: ast.AST, emit, callee: Any = None) -> Any:
        """Run `emit`; an error already located elsewhere (in a callee, or in a
        combine function a builtin compiled) is re-raised at this call. When the
        callee is the `@jit` function `callee` and its error names parameters
        that got run-time values (`runtime_names`), the hint is traced to the
        names this call passed for them."""
        try:
            return emit()
        except CompilationError as error:
            hint, parameters = None, ()
            if error.runtime_names and callee is not None and isinstance(node, ast.Call):
                passed = [hints.argument_of(node, list(callee.arg_names), name) for name in error.runtime_names]
                names = hints.runtime_names(self.scope, [expression for expression in passed if expression])
                if names:
                    hint, parameters = hints.not_constexpr_hint(names, list(self.jit_fn.arg_names), self.fn_name,
                                                                self.is_kernel)
            located = self.error(node, error.error_message, type(error), callee=error, hint=hint)
            located.runtime_names = parameters
            raise located from error

    # -- calls with a kernel meaning of their own ----------------------------------
    def _special_call(self, fn: Any):
        """The handler of a callable with a kernel meaning of its own, else None."""
        # By identity: user objects may define `__eq__`/`__hash__` in any way.
        name = _SPECIAL_PYTHON.get(id(fn))
        if name is not None:
            return getattr(self, name)
        for language_name, method in (("static_assert", self._static_assert),
                                      ("static_print", self._static_print)):
            target = language_attr(language_name)
            if target is not None and fn is target:
                return method
        return None

    def _static_assert(self, node: ast.AST, args: list[Any], kwargs: dict[str, Any]) -> None:
        if not 1 <= len(args) + len(kwargs) <= 2:
            raise TypeError("`static_assert` requires one or two positional arguments only")
        cond = args[0] if args else kwargs.get("cond")
        message = args[1] if len(args) > 1 else kwargs.get("msg", "")
        if has_tensor(cond):
            raise NotImplementedError("Assertion condition could not be determined at compile-time. Make sure that "
                                      "it depends only on `constexpr` values")
        if not bool(unwrap(cond)):
            raise self.error(node, str(unwrap(message)), CompileTimeAssertionFailure)
        return constexpr(None)

    def _static_print(self, node: ast.AST, args: list[Any], kwargs: dict[str, Any]) -> None:
        # Tuples and lists (`x.shape`) print in Triton's form, as tl.tuple's str writes it.
        texts = [tl_tuple(a) if isinstance(a, list) else a if isinstance(a, tl_tuple) else to_python(a)
                 for a in args]
        builtins.print(*texts, **{k: to_python(v) for k, v in kwargs.items()})
        return constexpr(None)

    def _device_print(self, node: ast.AST, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return self.language_call("device_print", *args, **kwargs)

    def _min(self, node: ast.AST, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return self._min_max(builtins.min, "minimum", args, kwargs)

    def _max(self, node: ast.AST, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return self._min_max(builtins.max, "maximum", args, kwargs)

    def _min_max(self, python_fn, language_name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if not any(has_tensor(a) for a in args):
            values = [to_python(a) for a in args]
            for value in values:
                # Python's answer depends on the argument order for NaN and
                # ignores the sign of zero, unlike tl.minimum/maximum: Triton refuses both.
                if isinstance(value, float) and (math.isnan(value) or (value == 0.0 and math.copysign(1.0, value) < 0)):
                    raise ValueError(f"{python_fn.__name__}() of constexprs cannot take {value!r}: the result would "
                                     f"depend on the argument order; use tl.{language_name} on tensors")
            return wrap(python_fn(*values, **{k: to_python(v) for k, v in kwargs.items()}))
        if len(args) < 2:
            raise TypeError(f"{python_fn.__name__} of tensors requires at least 2 values")
        result = args[0]
        for other in args[1:]:
            result = self.language_call(language_name, result, other, **kwargs)
        return result


def _parameters(fn: Any) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def _compile_time_builtin(python_fn):
    """A handler running a Python builtin at compile time on the (unwrapped) values."""

    def handler(self, node: ast.AST, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if python_fn not in (isinstance, getattr, hasattr) and any(isinstance(a, tensor) for a in args):
            raise TypeError(f"{python_fn.__name__}() cannot be applied to a tensor in a kernel")
        return wrap(python_fn(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()}))

    return handler


for _fn in (len, list, range, float, int, isinstance, getattr, hasattr):
    setattr(CallsMixin, f"_python_{_fn.__name__}", _compile_time_builtin(_fn))

_SPECIAL_PYTHON = {
    id(builtins.print): "_device_print",
    id(builtins.min): "_min",
    id(builtins.max): "_max",
    **{id(f): f"_python_{f.__name__}" for f in (len, list, range, float, int, isinstance, getattr, hasattr)},
}
