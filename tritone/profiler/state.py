"""States, as Proton's `state`, `enter_state` and `exit_state`: while a state
is set on a thread, the nodes recorded there (scopes entered, kernels
launched) get the state's name as one more frame of their path, after the
scopes (a kernel's own name comes after it). One state at a time."""

from __future__ import annotations

import functools
from collections.abc import Callable

from ._recorder import recorder


class state:
    """A state as a context manager (`with proton.state("name"):`) or a
    decorator (`@proton.state("name")`)."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self) -> state:
        enter_state(self.name)
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        exit_state()

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            enter_state(self.name)
            try:
                return func(*args, **kwargs)
            finally:
                exit_state()

        return wrapper


def enter_state(name: str) -> None:
    """Set this thread's state to `name`."""
    recorder.set_state(name)


def exit_state() -> None:
    """Clear this thread's state."""
    recorder.set_state(None)
