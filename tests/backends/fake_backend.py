"""A backend tritone does not ship, registered by `test_registry.py`: kernels for
`GPUTarget("fake", 1, 32)` keep their optimised IR and run in the CPU
interpreter, on one "device" that is always current. It records what it was
asked to do, so a test sees that `compile()`, the loading of a kernel and the
choice of where kernels run went through it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tritone.backends.base import TargetBackend
from tritone.backends.compiler import BaseBackend
from tritone.backends.interpreter.backend import BACKEND as INTERPRETER
from tritone.backends.interpreter.driver import InterpreterDriver
from tritone.backends.interpreter.launch_plan import InterpreterPlan
from tritone.ir.target import GPUTarget

FAKE_TARGET = GPUTarget("fake", 1, 32)


class FakeCompiler(BaseBackend):
    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        return target.backend == FAKE_TARGET.backend


class FakeDriver(InterpreterDriver):
    backend = FAKE_TARGET.backend

    def get_current_target(self) -> GPUTarget:
        return FAKE_TARGET


@dataclass
class FakeDevices:
    sites: dict = field(default_factory=dict)

    @staticmethod
    def current_device() -> int:
        return 0

    def target_of(self, device: int) -> GPUTarget:
        return FAKE_TARGET


class FakeTargetBackend(TargetBackend):
    name = FAKE_TARGET.backend
    triton_name = "fake"
    compiler = FakeCompiler
    driver = FakeDriver

    def __init__(self) -> None:
        self.compiled: list[tuple[str, GPUTarget]] = []
        self.loaded: list[str] = []

    def compile(self, name, src_hash, build_ir, target, options, timer=None):
        self.compiled.append((name, target))
        return INTERPRETER.compile(name, src_hash, build_ir, target, options, timer)

    def load(self, kernel: Any) -> InterpreterPlan:
        self.loaded.append(kernel.name)
        return InterpreterPlan(kernel)

    def open_devices(self) -> tuple[FakeDevices, None]:
        return FakeDevices(), None


BACKEND = FakeTargetBackend()
