"""Kernels written to real files: `@jit` reads a kernel's source from its file."""

from __future__ import annotations

import importlib.util
import itertools
import textwrap
from pathlib import Path
from types import ModuleType

_module_counter = itertools.count()


def load_module(folder: Path, source: str) -> ModuleType:
    """Import `source` (dedented) as a fresh module from a new file in `folder`."""
    name = f"_runtime_test_module_{next(_module_counter)}"
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
