"""tritone: Triton's programming model (block-level GPU kernels written in
Python with `@jit` and `tritone.language`) on a toolchain made of Python, ctypes
and NVRTC. Where no GPU is usable, kernels run on the CPU with numpy.

    import tritone as triton
    import tritone.language as tl
"""

# The version Triton-aware code (TorchInductor) parses as the Triton API level
# tritone implements; tritone's own release is `__tritone_version__`. The
# startup hook repeats the API level (_tritone_triton_hook.TRITON_API_VERSION)
# for importlib.metadata; docs/DROP_IN.md explains the versions.
__version__ = "3.6.0"
__tritone_version__ = "0.1.0"

from . import (
    backends,
    knobs,
    language,
    testing,
    tools,
)
from .compiler import compile
from .errors import CompilationError, InterpreterError, OutOfResources, TritonError
from .language.core import must_use_result
from .runtime._allocation import set_allocator
from .runtime.autotuner import Config, autotune, heuristics
from .runtime.jit import (
    JITFunction,
    KernelInterface,
    MockTensor,
    TensorWrapper,
    constexpr_function,
    jit,
    reinterpret,
)


@constexpr_function
def cdiv(x: int, y: int) -> int:
    """Ceiling of x / y for integers."""
    return (x + y - 1) // y


@constexpr_function
def next_power_of_2(n: int) -> int:
    """The smallest power of 2 greater than or equal to n (1 for n <= 1)."""
    if n <= 1:
        return 1
    return 1 << (int(n) - 1).bit_length()


__all__ = [
    "CompilationError",
    "Config",
    "InterpreterError",
    "JITFunction",
    "KernelInterface",
    "MockTensor",
    "OutOfResources",
    "TensorWrapper",
    "TritonError",
    "autotune",
    "backends",
    "cdiv",
    "compile",
    "constexpr_function",
    "heuristics",
    "jit",
    "knobs",
    "language",
    "must_use_result",
    "next_power_of_2",
    "reinterpret",
    "set_allocator",
    "testing",
    "tools",
]


def __getattr__(name: str):
    # `triton._C.libtriton.ir` is reached as an attribute (TorchInductor writes it
    # so), not imported; it is loaded on that first use, not by `import tritone`.
    if name == "_C":
        import importlib

        return importlib.import_module("._C", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
