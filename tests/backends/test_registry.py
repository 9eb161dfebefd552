"""The backend registry: a target is a module defining `BACKEND` and an entry
in `backends.registry`; compile(), loading, the launch site, Triton's driver
and `backends.backends` all go through it."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tritone
import tritone.language as tl
from tritone.backends import registry, sites
from tritone.backends.cuda.backend import CUDABackend
from tritone.backends.interpreter.backend import InterpreterBackend
from tritone.compiler import ASTSource, compile, make_backend
from tritone.errors import TritonError
from tritone.ir.target import INTERPRETER_TARGET, GPUTarget
from tritone.runtime import driver

FAKE_MODULE = "tests.backends.fake_backend"


@tritone.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


@pytest.fixture
def fake(monkeypatch):
    """The fake backend registered as the only device backend, with a fresh decision of where kernels run."""
    monkeypatch.setattr(registry, "_loaded", {})
    monkeypatch.setitem(registry.REGISTRY, "fake", FAKE_MODULE)
    monkeypatch.setattr(registry, "DEVICE_BACKENDS", ("fake",))
    # The knobs every launch reads, unset: the dispatcher's fast path is armed only then.
    for name in ("TRITON_INTERPRET", "TRITONE_INTERPRET", "TRITON_ALWAYS_COMPILE", "TRITON_DEBUG", "TRITON_F32_DEFAULT",
                 "TRITON_DEFAULT_FP_FUSION"):
        monkeypatch.delenv(name, raising=False)
    sites.reset_active_target()
    scale_kernel.device_caches.clear()
    backend = registry.target_backend("fake")  # imported by its module path, as the registry does
    backend.compiled.clear()  # the module, and so its BACKEND, outlives one test
    backend.loaded.clear()
    yield backend
    sites.reset_active_target()
    scale_kernel.device_caches.clear()


def test_the_shipped_backends_are_registered():
    assert registry.target_backend("cuda").compiler is CUDABackend
    assert registry.target_backend("interpreter").compiler is InterpreterBackend
    assert registry.backend_for(INTERPRETER_TARGET) is registry.target_backend("interpreter")
    assert isinstance(make_backend(GPUTarget("cuda", 80, 32)), CUDABackend)
    assert set(tritone.backends.backends) == {"nvidia"}


def test_an_unknown_backend_is_refused_by_name():
    with pytest.raises(TritonError, match="no backend 'hip'.*'cuda'.*'interpreter'"):
        registry.target_backend("hip")
    with pytest.raises(TritonError, match="not for GPUTarget\\(backend='hip'"):
        registry.backend_for(GPUTarget("hip", "gfx942", 64))
    with pytest.raises(RuntimeError, match="no tritone backend compiles for"):
        make_backend(GPUTarget("hip", "gfx942", 64))


def test_a_registered_backend_compiles_through_compile(fake):
    from tests.backends.fake_backend import FAKE_TARGET, FakeCompiler

    source = ASTSource(scale_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "factor": "fp32"},
                       {"BLOCK": 64})
    kernel = compile(source, target=FAKE_TARGET)
    assert fake.compiled == [("scale_kernel", FAKE_TARGET)] and kernel.target == FAKE_TARGET
    assert "ttir" in kernel.asm and isinstance(make_backend(FAKE_TARGET), FakeCompiler)


def test_kernels_run_on_a_registered_device_backend(fake):
    from tests.backends.fake_backend import FAKE_TARGET, FakeDriver

    assert sites.launch_site() == (FAKE_TARGET, 0)
    assert isinstance(driver.active, FakeDriver)
    rng = np.random.default_rng()
    x = rng.standard_normal(300).astype(np.float32)
    factor = float(rng.uniform(0.5, 2.0))
    out = np.empty_like(x)  # one array: a new one could differ in 16-byte alignment, another specialization
    for _ in range(3):  # the first launch compiles and loads; the others take the dispatcher's ready path
        out.fill(np.nan)
        scale_kernel[(5,)](x, out, x.size, factor, BLOCK=64)
        np.testing.assert_allclose(out, x * np.float32(factor), rtol=1e-6)
    assert fake.compiled == [("scale_kernel", FAKE_TARGET)] and fake.loaded == ["scale_kernel"]
    assert scale_kernel.device_caches.ready, "the dispatcher's fast path was not armed for the fake device"


def test_loading_the_cuda_backend_leaves_the_code_generator_and_frontend_unloaded():
    # A kernel found in the disk cache is loaded and launched through the backend
    # object alone; the lowering, the frontend and the passes come in with the first
    # compilation that needs them (the warm-cache first call stays fast).
    root = Path(__file__).resolve().parents[2]
    script = ("import sys, tritone; from tritone.backends import registry; registry.target_backend('cuda'); "
              "print(sorted(name for name in sys.modules if name.startswith('tritone.')))")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment,
                            cwd=root, check=True)
    loaded = set(ast.literal_eval(result.stdout.strip().splitlines()[-1]))
    assert "tritone.backends.cuda.backend" in loaded and "tritone.backends.cuda.launch_plan" in loaded
    heavy = ("tritone.backends.cuda.lowering", "tritone.backends.cuda.codegen", "tritone.frontend", "tritone.passes")
    unwanted = {name for name in loaded if name.startswith(heavy)}
    assert not unwanted, f"loaded with the CUDA backend: {sorted(unwanted)}"
