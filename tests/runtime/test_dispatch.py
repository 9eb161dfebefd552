"""`kernel[grid](...)` through the kernel's generated dispatcher
(`runtime.dispatch.make_dispatcher`) on a simulated GPU: after a first launch of
some arguments through the general path, launches of arguments with the same
key go straight to the plan, and those of the first such key are launched by
the dispatcher itself (cuLaunchKernelEx); anything that changes what a launch
means (other arguments, launch options, knob variables, a changed kernel
cache, another GPU decision) goes the general way again. A kernel that takes
global scratch memory is always launched by its plan, which asks the allocator.

torch has no CUDA here, so the tensors are CPU tensors on a simulated device
-1 that torch reports as initialised, with a fixed current stream."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tests.runtime.test_gpu_path import SimulatedGPU, decode
from tritone import knobs
from tritone.backends import sites
from tritone.backends.cuda import backend as cuda_backend
from tritone.backends.cuda import build, launch_plan
from tritone.backends.cuda.bindings import driver_api
from tritone.compiler import compiler as compiler_module

STREAM = 0x5EA


@triton.jit
def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, alpha * x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@pytest.fixture
def gpu(monkeypatch, tmp_path) -> SimulatedGPU:
    for group, name in [(knobs.runtime, "interpret"), (knobs.compilation, "always_compile"),
                        (knobs.nvidia, "target"), (knobs.cache, "dir")]:
        delattr(group, name)
    for variable in ("TRITON_INTERPRET", "TRITONE_INTERPRET", "TRITONE_TARGET", "TRITON_ALWAYS_COMPILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    simulated = SimulatedGPU()
    monkeypatch.setattr(driver_api, "_driver", simulated.driver)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: STREAM, raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: -1, raising=False)
    # The backend imported the name: set there too (and imported above, so that a
    # first import here cannot keep the stand-in after the test).
    monkeypatch.setattr(launch_plan, "current_device", lambda driver=None: -1)
    monkeypatch.setattr(cuda_backend, "current_device", lambda driver=None: -1)
    sites.reset_active_target()
    build._driver_version.cache_clear()
    axpy.device_caches.clear()
    axpy._dispatch = None
    yield simulated
    sites.reset_active_target()
    build._driver_version.cache_clear()
    axpy.device_caches.clear()
    axpy._dispatch = None


def _compiles(monkeypatch) -> list:
    compiled = []
    real = compiler_module.compile
    monkeypatch.setattr(compiler_module, "compile", lambda *a, **k: compiled.append(1) or real(*a, **k))
    return compiled


def test_repeated_launches_are_made_by_the_dispatcher(gpu, monkeypatch):
    compiled = _compiles(monkeypatch)
    rng = np.random.default_rng()
    n = int(rng.integers(1, 200)) * 16
    grid = (triton.cdiv(n, 64),)
    first = axpy[grid](torch.rand(n), torch.rand(n), torch.empty(n), n, 2.5, BLOCK=64)
    assert gpu.launches[-1]["call"] == "cuLaunchKernel" and compiled == [1]
    for _ in range(3):
        x, y, out = torch.rand(n), torch.rand(n), torch.empty(n)
        m = int(rng.integers(1, 1000)) * 16
        alpha = float(rng.standard_normal())
        assert axpy[grid](x, y, out, m, alpha, BLOCK=64) is first
        record = gpu.launches[-1]
        assert record["call"] == "cuLaunchKernelEx" and record["grid"] == (grid[0], 1, 1)
        assert record["stream"] == STREAM and record["block"] == (128, 1, 1)
        assert decode(record["arguments"], "QQQif") == [x.data_ptr(), y.data_ptr(), out.data_ptr(), m,
                                                          pytest.approx(alpha, rel=1e-6)]
    assert compiled == [1]
    # Another grid object and a callable grid: the same kernel, launched from the plan.
    axpy[(3,)](x, y, out, n, 1.0, BLOCK=64)
    axpy[lambda meta: (meta["n"] // meta["BLOCK"],)](x, y, out, 128, 1.0, BLOCK=64)
    assert gpu.launches[-1]["grid"] == (2, 1, 1) and compiled == [1]


def test_other_arguments_options_and_knobs_take_the_general_path(gpu, monkeypatch):
    compiled = _compiles(monkeypatch)
    x, y, out = torch.rand(64), torch.rand(64), torch.empty(64)
    axpy[(1,)](x, y, out, 64, 2.0, BLOCK=64)
    axpy[(1,)](x, y, out, 64, 2.0, BLOCK=64)
    assert gpu.launches[-1]["call"] == "cuLaunchKernelEx" and compiled == [1]
    axpy[(1,)](torch.rand(65)[1:], y, out, 64, 2.0, BLOCK=64)  # unaligned: another specialization
    axpy[(1,)](x, y, out, 60, 2.0, BLOCK=64)                   # n not a multiple of 16
    axpy[(1,)](x, y, out, 64, 2.0, BLOCK=32)                   # another constexpr
    axpy[(1,)](x, y, out, 64, 2.0, BLOCK=64, num_warps=2)      # a launch option
    axpy[(1,)](x.double(), y.double(), out.double(), 64, 2.0, BLOCK=64)
    assert compiled == [1] * 6
    assert gpu.launches[-1]["call"] == "cuLaunchKernel"
    # A knob variable set: the general path reads it (here: the interpreter runs the kernel).
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    before = len(gpu.launches)
    axpy[(1,)](x, y, out, 64, 2.0, BLOCK=64)
    torch.testing.assert_close(out, 2.0 * x + y)
    assert len(gpu.launches) == before
    monkeypatch.delenv("TRITON_INTERPRET")
    # The interpreter's kernel joined the cache, which forgot what the dispatcher
    # launched: one launch through the general path, then the dispatcher's own again.
    axpy[(1,)](x, y, out, 64, 2.0, BLOCK=64)
    assert gpu.launches[-1]["call"] == "cuLaunchKernel"
    axpy[(1,)](x, y, out, 64, 2.0, BLOCK=64)
    assert gpu.launches[-1]["call"] == "cuLaunchKernelEx" and len(compiled) == 7


def test_a_changed_cache_or_gpu_decision_is_not_launched_from(gpu, monkeypatch):
    compiled = _compiles(monkeypatch)
    x, y, out = torch.rand(64), torch.rand(64), torch.empty(64)
    first = axpy[(1,)](x, y, out, 64, 2.0, BLOCK=64)
    assert axpy[(1,)](x, y, out, 64, 2.0, BLOCK=64) is first
    kernels = next(iter(axpy.device_caches.values()))
    kernels.pop(next(iter(kernels)))
    second = axpy[(1,)](x, y, out, 64, 2.0, BLOCK=64)
    assert second is not first and compiled == [1, 1]
    assert axpy[(1,)](x, y, out, 64, 2.0, BLOCK=64) is second
    sites.reset_active_target()
    assert axpy[(1,)](x, y, out, 64, 2.0, BLOCK=64) is second  # the same site and kernel, found again
    assert gpu.launches[-1]["call"] == "cuLaunchKernel" and compiled == [1, 1]


def test_kernels_with_global_scratch_are_launched_by_their_plan(gpu, monkeypatch):
    # What the code generator reports for a kernel that makes tensor descriptors on the device.
    real = build._cuda_generator()

    def with_scratch(module, arch, options, dump_ir=False):
        source, entry, metadata = real(module, arch, options, dump_ir=dump_ir)
        params = [*metadata["params"], ("tt_global_scratch", "unsigned char*", 8)]
        return source, entry, {**metadata, "global_scratch_size": 96, "global_scratch_align": 128, "params": params}

    monkeypatch.setattr(build, "_cuda_generator", lambda: with_scratch)
    calls = []
    triton.set_allocator(lambda size, alignment, stream: calls.append((size, alignment, stream)) or 0x7F00_0000_0000)
    try:
        x, y, out = torch.rand(64), torch.rand(64), torch.empty(64)
        for grid in [(3,), (3,), (5,)]:
            kernel = axpy[grid](x, y, out, 64, 2.0, BLOCK=64)
            record = gpu.launches[-1]
            assert record["call"] == "cuLaunchKernel" and record["grid"] == (grid[0], 1, 1)
            assert record["stream"] == STREAM and calls[-1] == (grid[0] * 96, 128, STREAM)
            assert decode(record["arguments"], "QQQifQ") == [x.data_ptr(), y.data_ptr(), out.data_ptr(), 64, 2.0,
                                                               0x7F00_0000_0000]
        assert kernel.metadata.global_scratch_size == 96 and len(calls) == 3
    finally:
        triton.set_allocator(None)
