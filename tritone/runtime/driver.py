"""`tritone.runtime.driver`: where kernels run, as Triton code asks it.

`driver.active` is the driver class of the backend where kernels run now
(`backends.sites.active_target()`; `TargetBackend.driver`), made once per kind:

- `backends.cuda.driver.NvidiaDriver` when an NVIDIA GPU is usable and
  `TRITON_INTERPRET` is not set;
- `backends.interpreter.driver.InterpreterDriver` otherwise: kernels run in the
  CPU interpreter.

`driver.active` follows the launch site on each access (the interpreter knob
may change), unless `set_active` fixed a driver.
"""

from __future__ import annotations

from typing import Any

from ..backends import registry
from ..backends.driver import DriverBase, launch_target


class DriverConfig:
    """`driver.active`: the driver in use; `set_active(d)` fixes one (a test's
    fake, say) until `reset_active()`."""

    def __init__(self):
        self._active: Any = None
        # The driver `default` answered last (None before its first use: nothing
        # is probed at import), and each kind made so far, kept for when
        # TRITON_INTERPRET switches back.
        self._default: DriverBase | None = None
        self._made: dict[str, DriverBase] = {}

    @property
    def default(self) -> DriverBase:
        """The driver of the backend where kernels run now (`backends.sites`): the
        interpreter's when TRITON_INTERPRET is set or no GPU is usable, else the GPU's."""
        kind = registry.target_backend(launch_target().backend).driver
        if type(self._default) is not kind:
            made = self._made.get(kind.backend)
            if made is None:
                made = self._made[kind.backend] = kind()
            self._default = made
        return self._default

    @property
    def active(self) -> Any:
        return self._active if self._active is not None else self.default

    def set_active(self, driver: Any) -> None:
        self._active = driver

    def reset_active(self) -> None:
        self._active = None

    def __repr__(self) -> str:
        return f"DriverConfig(active={self.active!r})"


driver = DriverConfig()

__all__ = ["DriverConfig", "driver"]
