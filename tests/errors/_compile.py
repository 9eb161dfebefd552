"""Which Triton the bad-kernel tests compile with, and how a kernel is made to
compile.

tritone by default: the kernel is launched on CPU tensors, so the frontend
compiles it and raises. With `TRITONE_TEST_IMPL=upstream` the same tests run on
upstream Triton 3.6's *compiler* (not its interpreter, which runs kernels as
plain Python and checks none of this): `triton.compile(ASTSource(...))` for a
CUDA sm_90 target builds the IR on a CPU-only machine, with the signature
derived from the launch arguments as upstream's launcher would.
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path
from types import ModuleType

import torch

IMPL = os.environ.get("TRITONE_TEST_IMPL", "tritone").strip().lower()
# The message of a CompilationError starts "at LINE:COLUMN" in both implementations.
LOCATION = re.compile(r"at (\d+):(\d+)")


def modules() -> tuple[ModuleType, ModuleType]:
    """(triton, tl) of the implementation under test, compiled mode."""
    if IMPL == "upstream":
        os.environ.pop("TRITON_INTERPRET", None)
        return importlib.import_module("triton"), importlib.import_module("triton.language")
    return importlib.import_module("tritone"), importlib.import_module("tritone.language")


_TORCH_TO_SIGNATURE = {
    torch.float32: "*fp32", torch.float16: "*fp16", torch.int32: "*i32", torch.int64: "*i64",
    torch.uint32: "*u32", torch.int8: "*i8", torch.bool: "*i1",
}


def _upstream_compile(kernel, args: tuple, kwargs: dict) -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    bound = dict(zip([p.name for p in kernel.params], args))
    bound.update(kwargs)
    signature, constexprs = {}, {}
    for param in kernel.params:
        value = bound[param.name]
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            constexprs[param.name] = value
        elif isinstance(value, torch.Tensor):
            signature[param.name] = _TORCH_TO_SIGNATURE[value.dtype]
        elif isinstance(value, float):
            signature[param.name] = "fp32"
        else:
            signature[param.name] = "i32"
    triton.compile(ASTSource(kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32))


def compile_kernel(kernel, *args, **kwargs) -> None:
    """Compile `kernel` for these arguments (and, on tritone, run it on the CPU)."""
    if IMPL == "upstream":
        _upstream_compile(kernel, args, kwargs)
    else:
        kernel[(1,)](*args, **kwargs)


def location_of(marker: str, snippet: str, path: Path) -> tuple[int, int]:
    """(line, column) of `snippet` on the line of `path` carrying the comment
    `# E: marker`; columns count from 0 as in Python's AST."""
    tag = re.compile(rf"# E: {re.escape(marker)}(\s|$)")
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if tag.search(line):
            column = line.find(snippet)
            assert column >= 0, f"{snippet!r} is not on line {number}: {line!r}"
            return number, column
    raise AssertionError(f"no line carries '# E: {marker}' in {path}")
