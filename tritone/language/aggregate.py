"""Aggregates: user classes whose instances kernel code builds, passes and returns
as one value (`@tl.core._aggregate`, Triton's decorator).

    @tl.core._aggregate
    class Pair:
        first: tl.tensor
        second: tl.tensor

        def __init__(self, first, second):   # plain Python, run at compile time
            self.first = first
            self.second = second

        @triton.jit
        def swap(self):                       # a @jit method: `pair.swap()`
            return Pair(self.second, self.first)

The annotated names are the fields; the constructor must set each of them, and
no other attribute can be set (an annotation that is a class is also checked
with `isinstance`). Kernel code cannot assign attributes, so fields change only
through plain Python methods (which may take `_semantic` to build IR). Passing
an aggregate to a `@jit` function or returning it passes its tensor fields as
IR values; the frontend carries a modified aggregate through loops and
branches as it carries a tuple (`frontend/values.py`).
"""

from __future__ import annotations

import inspect
import marshal
import typing
from dataclasses import dataclass
from typing import Any

from .core import base_value

TRITON_AGGREGATE = "__triton_aggregate__"


@dataclass(frozen=True)
class aggregate_type:
    """The type of an aggregate value: its class and the types of its fields."""

    base_cls: type
    fields: tuple[tuple[str, Any], ...]

    def mangle(self) -> str:
        fields = ", ".join(str(getattr(ty, "mangle", lambda ty=ty: ty)()) for _, ty in self.fields)
        return f"{self.base_cls.__module__}.{self.base_cls.__qualname__}<{fields}>"

    def __str__(self) -> str:
        return self.mangle()


def is_aggregate(value: Any) -> bool:
    """Whether `value` is an instance of an aggregate class."""
    return getattr(type(value), TRITON_AGGREGATE, False) is True


def aggregate_fields(value: Any) -> tuple[str, ...]:
    """The field names of an aggregate instance (or class), in declaration order."""
    return value._aggregate_fields


def _field_types(cls: type) -> dict[str, Any]:
    """The annotations of `cls`, resolved where they are strings (`from __future__
    import annotations`); a name that cannot be resolved is left unchecked."""
    raw = dict(cls.__dict__.get("__annotations__", {}))
    try:
        return dict(typing.get_type_hints(cls))
    except Exception:  # noqa: BLE001 - unresolvable names (local classes) keep their text
        return raw


def _aggregate(cls: type) -> type:
    """The aggregate class made from `cls` (see the module docstring)."""
    types = _field_types(cls)
    fields = tuple(cls.__dict__.get("__annotations__", {}))
    user_init = cls.__dict__.get("__init__")

    class aggregate_value(base_value):
        __triton_builtin__ = True
        __triton_aggregate__ = True
        _aggregate_fields = fields

        @classmethod
        def _get_instance(this_cls):
            """An instance with no field set (rebuilt from IR values by the frontend)."""
            return object.__new__(this_cls)

        def __new__(this_cls, *args, _semantic=None, _generator=None, **kwargs):
            instance = this_cls._get_instance()
            if user_init is not None:
                extra = {}
                parameters = _parameters(user_init)
                if "_semantic" in parameters:
                    extra["_semantic"] = _semantic
                if "_generator" in parameters:
                    extra["_generator"] = _generator
                user_init(instance, *args, **extra, **kwargs)
            for name in fields:
                if not hasattr(instance, name):
                    raise AttributeError(f"constructor for {cls.__name__} did not initialize attribute '{name}'")
            return instance

        def __setattr__(self, name, value):
            if name not in fields:
                raise AttributeError(f"{cls.__name__} has no attribute '{name}'")
            expected = types.get(name)
            if isinstance(expected, type) and not isinstance(value, expected):
                raise TypeError(f"Expected {expected} for attribute '{name}', got {type(value)}")
            super().__setattr__(name, value)

        @property
        def type(self) -> aggregate_type:
            return aggregate_type(type(self), tuple((name, getattr(getattr(self, name), "type", None))
                                                    for name in fields))

        def __repr__(self) -> str:
            return f"{cls.__name__}(" + ", ".join(f"{name}={getattr(self, name, None)!r}" for name in fields) + ")"

    hashed = [user_init] if user_init is not None else []
    for name, member in inspect.getmembers(cls):
        if name == "__init__":
            continue
        if inspect.isfunction(member) or inspect.ismethod(member) or _is_kernel_callable(member):
            setattr(aggregate_value, name, member)
            hashed.append(member)
    aggregate_value._hashed_members = tuple(hashed)
    aggregate_value.__name__ = cls.__name__
    aggregate_value.__qualname__ = cls.__qualname__
    aggregate_value.__module__ = cls.__module__
    aggregate_value.__doc__ = cls.__doc__
    return aggregate_value


def aggregate_key(cls: type) -> str:
    """What of an aggregate class a kernel's cache key must hold: the sources of
    its constructor and methods (a `@jit` method by its own cache key)."""
    from ..runtime.jit import JITFunction

    parts = [f"{cls.__module__}.{cls.__qualname__}", repr(cls._aggregate_fields)]
    for member in cls._hashed_members:
        if isinstance(member, JITFunction):
            parts.append(member.cache_key)
            continue
        fn = getattr(member, "__wrapped__", None) or getattr(member, "__func__", None) or member
        try:
            parts.append(inspect.getsource(fn))
        except (OSError, TypeError):  # no source file (exec'd): its compiled code stands for it
            code = getattr(fn, "__code__", None)
            parts.append(marshal.dumps(code).hex() if code is not None else repr(fn))
    return "\n".join(parts)


def _parameters(fn) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def _is_kernel_callable(member: Any) -> bool:
    """`@jit` functions and `@constexpr_function`s."""
    from ..runtime.jit import ConstexprFunction, JITFunction

    return isinstance(member, (JITFunction, ConstexprFunction))
