"""Scopes: named regions of the host program that the kernels launched inside
are recorded under, as Proton's `scope`, `cpu_timed_scope`, `enter_scope` and
`exit_scope`.

A scope's metrics (`{"bytes": ..., "flops16": ...}`) are added to its node
each time it is entered while a session is active. A scope inside which no
tritone kernel launched gets the GPU time between its enter and exit on the
current stream (so a cuBLAS or torch call inside has its time; see the package
docstring). Outside any session scopes cost a check and do nothing.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, Union

from ._recorder import OpenScope, recorder

MetricValueType = Union[float, int]

_CPU_TIME = "cpu_time"


class scope:
    """A scope as a context manager (`with proton.scope("name", metrics):`)
    or a decorator (`@proton.scope("name", metrics)`)."""

    _cpu_timed = False

    def __init__(self, name: str, metrics: dict[str, Any] | None = None):
        self.name = name
        self.metrics = metrics
        self._open = threading.local()  # the scopes this object opened on each thread, innermost last

    def _enter(self) -> None:
        opened = recorder.enter_scope(self.name, self.metrics, cpu_timed=self._cpu_timed)
        stack = self._open.__dict__.setdefault("stack", [])
        stack.append(opened)

    def _exit(self) -> None:
        opened = self._open.stack.pop()
        if opened is not None:
            recorder.exit_scope(opened)

    def __enter__(self) -> scope:
        self._enter()
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self._exit()

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self._enter()
            try:
                return func(*args, **kwargs)
            finally:
                self._exit()

        return wrapper


class cpu_timed_scope(scope):
    """A scope that also records the host time spent inside it, as the
    exclusive metric "cpu_time (ns)"."""

    _cpu_timed = True

    def __init__(self, name: str, metrics: dict[str, Any] | None = None):
        if metrics and any(key.split("(")[0].strip() == _CPU_TIME for key in metrics):
            raise ValueError(f"proton.cpu_timed_scope({name!r}): the metric name {_CPU_TIME!r} is reserved for "
                             "the time it measures")
        super().__init__(name, metrics)


class _EnteredScopes(threading.local):
    def __init__(self):
        # (name, handle) of each scope enter_scope opened on this thread, innermost last;
        # the handle is None for a scope entered while no session existed.
        self.scopes: list[tuple[str, OpenScope | None]] = []


_entered = _EnteredScopes()


def enter_scope(name: str, *, metrics: dict[str, Any] | None = None) -> OpenScope | None:
    """Open a scope until the matching `exit_scope`; returns a handle, or None
    when no session exists."""
    opened = recorder.enter_scope(name, metrics)
    _entered.scopes.append((name, opened))
    return opened


def exit_scope(name: str | None = None, *, metrics: dict[str, Any] | None = None) -> OpenScope | None:
    """Close the scope `enter_scope` opened last on this thread (`name`, when
    given, must be its name), adding `metrics` to its node."""
    if not _entered.scopes:
        raise ValueError(f"proton.exit_scope({'' if name is None else repr(name)}): no scope entered with "
                         "enter_scope is open on this thread")
    open_name, opened = _entered.scopes[-1]
    if name is not None and name != open_name:
        raise ValueError(f"proton.exit_scope({name!r}): the scope entered last is {open_name!r}")
    _entered.scopes.pop()
    if opened is not None:
        recorder.exit_scope(opened, metrics)
    return opened
