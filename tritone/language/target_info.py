"""`tl.target_info`: what a kernel is being compiled for, as compile-time
constants (Triton 3.5+), so kernels can pick code per GPU generation:

    if tl.target_info.cuda_capability_geq(9, 0):
        ...

Inside a kernel the answer is the compilation's target (`GPUTarget("cuda", 90,
32)`, or the CPU interpreter's, which is neither CUDA nor HIP); called from
host code it is the active driver's target, as in Triton.
"""

from __future__ import annotations

from typing import Any, Callable

from ..ir.target import GPUTarget
from .core import TRITON_BUILTIN, constexpr

__all__ = ["cuda_capability_geq", "current_target", "is_cuda", "is_hip", "is_hip_cdna3", "is_hip_cdna4"]


def _compile_target(semantic: Any) -> GPUTarget | None:
    """The target a `Semantic` compiles for (its `target` option: a GPUTarget,
    `"sm_90"` or `90`), None when none is fixed."""
    target = semantic.options.get("target")
    if target is None or isinstance(target, GPUTarget):
        return target
    capability = semantic.target_capability
    return None if capability is None else GPUTarget("cuda", capability, 32)


def _driver_target() -> GPUTarget | None:
    from ..runtime.driver import driver

    try:
        return driver.active.get_current_target()
    except RuntimeError:
        return None


class _TargetQuery:
    """A question about the target: a builtin in kernels (answered for the
    compilation's target, as a constexpr) and a plain function on the host
    (answered for the active driver's target)."""

    def __init__(self, fn: Callable[..., Any]):
        setattr(self, TRITON_BUILTIN, True)
        self.fn = fn
        self.__name__ = self.__qualname__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__

    def __call__(self, *args, _semantic=None, **kwargs):
        args = [constexpr(a).value for a in args]
        kwargs = {key: constexpr(value).value for key, value in kwargs.items()}
        if _semantic is None:
            return self.fn(_driver_target(), *args, **kwargs)
        return constexpr(self.fn(_compile_target(_semantic), *args, **kwargs))

    def __repr__(self) -> str:
        return f"<tl.target_info.{self.__name__}>"


@_TargetQuery
def current_target(target: GPUTarget | None) -> GPUTarget | None:
    """The `GPUTarget` compiled for (in a kernel) or of the active driver (on the host)."""
    return target


@_TargetQuery
def is_cuda(target: GPUTarget | None) -> bool:
    """Whether the target is an NVIDIA GPU."""
    return target is not None and target.backend == "cuda"


@_TargetQuery
def cuda_capability_geq(target: GPUTarget | None, major: int, minor: int = 0) -> bool:
    """Whether the target is an NVIDIA GPU of compute capability at least `major.minor`."""
    return target is not None and target.backend == "cuda" and int(target.arch) >= major * 10 + minor


@_TargetQuery
def is_hip(target: GPUTarget | None) -> bool:
    """Whether the target is an AMD GPU (tritone compiles for none)."""
    return target is not None and target.backend == "hip"


@_TargetQuery
def is_hip_cdna3(target: GPUTarget | None) -> bool:
    """Whether the target is an AMD CDNA3 GPU (gfx942)."""
    return target is not None and target.arch == "gfx942"


@_TargetQuery
def is_hip_cdna4(target: GPUTarget | None) -> bool:
    """Whether the target is an AMD CDNA4 GPU (gfx950)."""
    return target is not None and target.arch == "gfx950"
