"""The interpreter backend object (`BACKEND`, registered as "interpreter"):
a compiled kernel is its optimised IR, run on the CPU by `tritone.interpreter`.
`InterpreterBackend` is its compiler class in Triton's API, `InterpreterDriver`
its driver."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ... import __tritone_version__
from ...ir.printer import print_module
from ...ir.target import INTERPRETER_TARGET, GPUTarget, KernelOptions
from ..base import KernelBinary, TargetBackend
from ..compiler import BaseBackend
from .driver import InterpreterDriver
from .launch_plan import InterpreterPlan

if TYPE_CHECKING:
    from ...compiler.timer import CompileTimer
    from ...ir.core import Module


class InterpreterBackend(BaseBackend):
    """tritone's CPU interpreter: `GPUTarget("interpreter", 0, 32)`, where kernels
    run when no GPU is usable or TRITON_INTERPRET is set."""

    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        return target.backend == INTERPRETER_TARGET.backend

    def option_defaults(self) -> dict[str, Any]:
        # numpy rounds to every fp8 format, fp8e4b15 included.
        return {"backend_name": INTERPRETER_TARGET.backend,
                "supported_fp8_dtypes": ("fp8e4b15", "fp8e4b8", "fp8e4nv", "fp8e5", "fp8e5b16")}


class InterpreterTargetBackend(TargetBackend):
    """The CPU, with numpy: tritone's reference semantics."""

    name = INTERPRETER_TARGET.backend
    compiler = InterpreterBackend
    driver = InterpreterDriver

    def compile(self, name: str, src_hash: str, build_ir: Callable[[GPUTarget], Module], target: GPUTarget,
                options: KernelOptions, timer: CompileTimer | None = None) -> KernelBinary:
        """The optimised IR, kept as the kernel (no disk cache: building it is the whole cost)."""
        if timer is not None:
            timer.lowering_started()
        module = build_ir(target)
        if timer is not None:
            timer.stage_finished("ttir")
        digest = hashlib.sha256("\n".join([src_hash, options.hash(), repr(target), __tritone_version__]).encode())
        return KernelBinary(digest.hexdigest(), {"ttir": print_module(module)}, {}, False, module)

    def load(self, kernel: Any) -> InterpreterPlan:
        return InterpreterPlan(kernel)

    def fp8_dtypes(self, options: KernelOptions) -> None:
        # numpy holds every fp8 format, whatever the options list for a GPU.
        return None


BACKEND = InterpreterTargetBackend()
