"""The package's public surface: `import tritone as triton; import tritone.language as tl`."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.cuda.device_array import KernelMemory
from tritone.backends.sites import active_target


def test_top_level_names():
    for name in ("jit", "JITFunction", "KernelInterface", "cdiv", "next_power_of_2", "CompilationError",
                 "TritonError", "OutOfResources", "InterpreterError", "compile", "language", "knobs",
                 "constexpr_function", "MockTensor", "TensorWrapper", "reinterpret"):
        assert hasattr(triton, name), name
    assert triton.language is tl
    assert issubclass(triton.CompilationError, triton.TritonError)


def test_version_parses_as_triton_api_level():
    major, minor = (int(part) for part in triton.__version__.split(".")[:2])
    assert (major, minor) == (3, 6)
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", triton.__tritone_version__)


def test_module_paths_used_by_inductor():
    from tritone.backends.compiler import GPUTarget
    from tritone.compiler import ASTSource, CompiledKernel, compile
    from tritone.compiler.compiler import ASTSource as ASTSource2
    from tritone.compiler.errors import CompilationError
    from tritone.runtime.jit import JITFunction, KernelInterface

    assert ASTSource is ASTSource2 and compile is triton.compile
    assert CompilationError is triton.CompilationError
    assert JITFunction is triton.JITFunction and KernelInterface is triton.KernelInterface
    assert CompiledKernel.__name__ == "CompiledKernel"
    target = GPUTarget("cuda", 80, 32)
    assert target == GPUTarget("cuda", 80, 32) and hash(target) == hash(GPUTarget("cuda", 80, 32))
    with pytest.raises(AttributeError):
        target.arch = 90


def test_no_attrs_descriptor():
    import tritone.backends.compiler
    import tritone.compiler.compiler

    assert not hasattr(tritone.backends.compiler, "AttrsDescriptor")
    assert not hasattr(tritone.compiler.compiler, "AttrsDescriptor")


def test_cdiv_and_next_power_of_2_on_the_host():
    assert [triton.cdiv(n, 16) for n in (0, 1, 16, 17, 1000)] == [0, 1, 1, 2, 63]
    assert [triton.next_power_of_2(n) for n in (0, 1, 2, 3, 17, 1024, 1025)] == [1, 1, 2, 4, 32, 1024, 2048]
    # constexprs (a launch grid's META values may be) and numpy integers are unwrapped or taken alike
    assert triton.cdiv(tl.constexpr(1000), 16) == triton.cdiv(np.int64(1000), tl.constexpr(16)) == 63
    assert triton.cdiv(x=tl.constexpr(1000), y=16) == 63


def test_cdiv_and_next_power_of_2_in_a_kernel():
    @triton.jit
    def sizes(out_ptr, N: tl.constexpr):
        tl.store(out_ptr + 0, triton.cdiv(N, 16))
        tl.store(out_ptr + 1, triton.next_power_of_2(N))

    with KernelMemory() as memory:  # a DeviceArray where kernels run on a GPU
        out = memory.put(np.zeros(2, dtype=np.int32))
        sizes[(1,)](out, 100)
        assert memory.get(out).tolist() == [7, 128]


def test_selftest_exit_code():
    """The README's first command, where kernels run here: on the GPU when there is one."""
    result = subprocess.run([sys.executable, "-m", "tritone", "selftest"], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "vector_add" in result.stdout and "fused_softmax" in result.stdout
    assert "all 3 passed" in result.stdout
    where = "CPU interpreter" if active_target().backend == "interpreter" else f"(sm_{active_target().arch})"
    table = result.stdout[result.stdout.index("kernel "):].splitlines()
    assert all(line.endswith(where) for line in table[1:4]), result.stdout
