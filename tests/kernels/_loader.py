"""Run one kernel source under either implementation: tritone or upstream Triton.

The kernel files of these tests (`_kernels.py`, `_ops.py`) never import a Triton
themselves: they read the names `triton` and `tl` from their globals.
`load_kernels(triton_module, tl_module, path)` compiles such a file under its
real path (so `inspect.getsource`, which both implementations use to read a
kernel, finds the text and line numbers), puts the two modules in a fresh
module's namespace and runs the file there. Each call gives a new module, so
one process can hold the same kernels bound to two implementations.

Which implementation the end-to-end tests run (`implementation_under_test()`):
tritone, unless `TRITONE_TEST_IMPL=upstream`, which runs the very same tests on
upstream Triton 3.6 to validate the tests themselves (on its GPU where torch
sees one, else on its interpreter). tritone is never run in such a process.

Upstream's interpreter is chosen by `TRITON_INTERPRET=1` *when `@triton.jit`
runs* (upstream reads its knob there, not at import). In a process that also
runs tritone, that variable would switch tritone to its own interpreter too, so
the differential tests never set it in the test process: they run upstream in
a subprocess (`tests/differential/_upstream_runner.py`) whose environment has
it, and exchange inputs and outputs through a file. The subprocess also keeps
upstream's import (and its patching of `triton.language` while a kernel
interprets) away from tritone.

`use_upstream_interpreter()` applies one compatibility shim to upstream's
interpreter: with numpy >= 2.3 its `tensor.__index__` calls `int()` on a
one-element array, which numpy now refuses, so every `range(n)` over a run-time
`n` fails ("only 0-dimensional arrays can be converted to Python scalars",
TRITON_SEMANTICS section 10). The shim converts with `.item()` instead; nothing
else of upstream is changed.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import os
import sys
import types
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS_PATH = HERE / "_kernels.py"
OPS_PATH = HERE / "_ops.py"

IMPL_ENV = "TRITONE_TEST_IMPL"

_module_counter = itertools.count()


def load_kernels(triton_module: types.ModuleType, tl_module: types.ModuleType,
                 path: Path | str = KERNELS_PATH) -> types.ModuleType:
    """Run the kernel file `path` with `triton` and `tl` bound to the given
    modules and return it as a new module (registered in `sys.modules` under a
    unique name, as upstream's `@jit` looks its module up there)."""
    path = Path(path).resolve()
    source = path.read_text()
    name = f"_bound_{path.stem.lstrip('_')}_{triton_module.__name__}_{next(_module_counter)}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__["triton"] = triton_module
    module.__dict__["tl"] = tl_module
    sys.modules[name] = module
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def use_upstream_interpreter() -> None:
    """Make the `@triton.jit` calls that follow build upstream interpreter
    functions, and apply the numpy shim described in the module docstring.
    Only for processes that do not run tritone."""
    os.environ["TRITON_INTERPRET"] = "1"
    from triton.runtime import interpreter

    if getattr(interpreter, "_tritone_tests_index_shim", False):
        return
    patch_tensor = interpreter._patch_lang_tensor

    def patch_tensor_with_item_index(tensor, scope):
        patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    interpreter._patch_lang_tensor = patch_tensor_with_item_index
    interpreter._tritone_tests_index_shim = True


@dataclass(frozen=True)
class Implementation:
    """The Triton the end-to-end tests drive, and where their tensors live."""

    name: str  # "tritone" or "upstream"
    triton: types.ModuleType
    tl: types.ModuleType
    device: str  # "cuda" or "cpu"
    upstream_interpreter: bool  # numerics of TRITON_SEMANTICS section 12's interpreter column

    def load(self, path: Path | str = KERNELS_PATH) -> types.ModuleType:
        return _load_cached(self, str(path))


@functools.lru_cache(maxsize=None)
def _load_cached(impl: Implementation, path: str) -> types.ModuleType:
    return load_kernels(impl.triton, impl.tl, path)


def _cuda_usable() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@functools.lru_cache(maxsize=None)
def implementation_under_test() -> Implementation:
    """tritone (default) or upstream Triton when `TRITONE_TEST_IMPL=upstream`."""
    choice = os.environ.get(IMPL_ENV, "tritone").strip().lower()
    if choice == "upstream":
        interpret = os.environ.get("TRITON_INTERPRET", "") not in ("", "0") or not _cuda_usable()
        if interpret:
            use_upstream_interpreter()
        triton = importlib.import_module("triton")
        tl = importlib.import_module("triton.language")
        return Implementation("upstream", triton, tl, "cpu" if interpret else "cuda", interpret)
    if choice != "tritone":
        raise ValueError(f"{IMPL_ENV} must be 'tritone' or 'upstream', got {choice!r}")
    triton = importlib.import_module("tritone")
    tl = importlib.import_module("tritone.language")
    # The runtime alone decides between the GPU and its CPU interpreter.
    sites = importlib.import_module("tritone.backends.sites")
    on_gpu = sites.active_target().backend == "cuda"
    return Implementation("tritone", triton, tl, "cuda" if on_gpu else "cpu", False)
