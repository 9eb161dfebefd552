"""The scripts of examples/ run and print what they promise, where kernels run
here: on the GPU with CUDA tensors when tritone and torch both have one, on the
CPU otherwise."""

from __future__ import annotations

import ast
import contextlib
import io
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tritone.backends.sites import active_target

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PYPROJECT = EXAMPLES.parent / "pyproject.toml"
# The examples' own rule: CUDA tensors where torch has CUDA.
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def run_example(name: str, run_name: str = "__main__") -> tuple[dict, str]:
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        namespace = runpy.run_path(str(EXAMPLES / name), run_name=run_name)
    return namespace, output.getvalue()


def gpu_without_torch_cuda() -> bool:
    """tritone runs kernels on a GPU but this torch cannot make CUDA tensors, so the
    examples' CPU tensors are refused, as Triton's launcher refuses them."""
    return active_target().backend == "cuda" and DEVICE == "cpu"


def test_vector_add_prints_zeros():
    if gpu_without_torch_cuda():
        with pytest.raises(ValueError, match=r"Pointer argument x_ptr \(at 0\) cannot be accessed .*cpu tensor\?"):
            run_example("vector_add.py")
        return
    _, printed = run_example("vector_add.py")
    zeros = str(torch.zeros(3, device=DEVICE))
    assert zeros == ("tensor([0., 0., 0.])" if DEVICE == "cpu" else "tensor([0., 0., 0.], device='cuda:0')")
    assert printed.splitlines() == [zeros, f"If you see {zeros}, then it works"]


def test_fused_softmax_on_torch_tensors():
    if gpu_without_torch_cuda():
        with pytest.raises(ValueError, match=r"cpu tensor\?"):
            run_example("fused_softmax.py")
        return
    namespace, printed = run_example("fused_softmax.py")
    assert printed.startswith("on cuda:0: " if DEVICE == "cuda" else "on cpu: ")
    assert float(printed.rsplit(":", 1)[1]) < 1e-6
    rng = np.random.default_rng()
    x = torch.randn(int(rng.integers(1, 20)), int(rng.integers(1, 1500)), device=DEVICE)
    torch.testing.assert_close(namespace["softmax"](x), torch.softmax(x, dim=1))


def test_fused_softmax_on_numpy_arrays_in_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    namespace, _ = run_example("fused_softmax.py", run_name="fused_softmax")
    array = np.random.default_rng().standard_normal((5, 64), dtype=np.float32)
    np.testing.assert_allclose(namespace["softmax"](array), torch.softmax(torch.from_numpy(array), dim=1).numpy(),
                               rtol=1e-5, atol=1e-7)


def _imported_packages(path: Path) -> set[str]:
    """The top-level packages a script imports, the standard library's left out."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return names - set(sys.stdlib_module_names) - {"__future__"}


def test_the_examples_extra_installs_what_the_examples_import():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    installed = {canonicalize_name(Requirement(text).name)
                 for text in project["dependencies"] + project["optional-dependencies"]["examples"]}
    installed.add(canonicalize_name(project["name"]))
    scripts = sorted(EXAMPLES.glob("*.py"))
    assert scripts, f"no examples in {EXAMPLES}"
    for script in scripts:
        missing = {name for name in _imported_packages(script) if canonicalize_name(name) not in installed}
        assert not missing, f"{script.name} imports {sorted(missing)}, which `pip install -e .[examples]` lacks"
