"""`kernel[grid](...)` on the interpreter path: results, caching, grids, options,
errors. The interpreter is asked for (TRITON_INTERPRET), so that these run the
same where a GPU is present (tests/runtime/test_gpu_path.py covers the GPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tests.runtime._modules import load_module
from tritone import knobs
from tritone.backends.sites import launch_site
from tritone.compiler.compiler import CompiledKernel


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr = 64, ROWS=2):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def cache_entries(kernel) -> int:
    return len(kernel.device_caches.get(launch_site(), {}))


@pytest.mark.parametrize("n", [1, 100, 1024])
def test_vector_add_torch(n):
    x, y = torch.rand(n), torch.rand(n)
    out = torch.full((n,), float("nan"))
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


def test_vector_add_numpy():
    rng = np.random.default_rng()
    n = 300
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    add_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    np.testing.assert_array_equal(out, x + y)


def test_same_specialization_compiles_once():
    x = torch.rand(64)
    out = torch.empty(64)
    scale_kernel.device_caches.clear()
    first = scale_kernel[(1,)](x, out, 64, 2.0)
    second = scale_kernel[(1,)](torch.rand(64), out, 64, 3.0)
    assert first is second and isinstance(first, CompiledKernel)
    assert cache_entries(scale_kernel) == 1
    scale_kernel[(1,)](x, out, 63, 2.0)              # n not divisible by 16: a new specialization
    scale_kernel[(2,)](x, out, 64, 2.0, BLOCK=32)    # another constexpr value
    scale_kernel[(1,)](x, out, 64, 2.0, num_warps=8)  # other options
    assert cache_entries(scale_kernel) == 4
    scale_kernel[(1,)](x, out, 64, 2.0)
    assert cache_entries(scale_kernel) == 4


def test_options_holding_dicts_and_lists_are_cached():
    x = torch.rand(64)
    out = torch.full((64,), float("nan"))
    scale_kernel.device_caches.clear()
    first = scale_kernel[(1,)](x, out, 64, 2.0, extern_libs={"libdevice": "/lib.bc"}, ptx_options=["-v"])
    second = scale_kernel[(1,)](x, out, 64, 2.0, extern_libs={"libdevice": "/lib.bc"}, ptx_options=["-v"])
    assert first is second and cache_entries(scale_kernel) == 1
    torch.testing.assert_close(out, 2.0 * x, rtol=0, atol=0)


def test_changing_the_kernel_cache_is_seen_by_the_argument_key_lookup(monkeypatch):
    from tritone.compiler import compiler as compiler_module

    x, out = torch.rand(64), torch.empty(64)
    scale_kernel.device_caches.clear()
    first = scale_kernel[(1,)](x, out, 64, 2.0)
    kernels = scale_kernel.device_caches[launch_site()]
    assert len(kernels.by_arguments) == 1
    compiled = []
    real_compile = compiler_module.compile
    monkeypatch.setattr(compiler_module, "compile", lambda *a, **k: compiled.append(1) or real_compile(*a, **k))
    # A kernel removed from the cache (by any of the mapping's mutators) is not launched again.
    kernels.pop(next(iter(kernels)))
    assert not kernels.by_arguments
    second = scale_kernel[(1,)](x, out, 64, 2.0)
    assert second is not first and compiled == [1]
    assert scale_kernel[(1,)](x, out, 64, 2.0) is second and compiled == [1]
    scale_kernel.device_caches[launch_site()] = {}  # a plain dict put in its place is used as well
    assert scale_kernel[(1,)](x, out, 64, 2.0) is not second and compiled == [1, 1]


def test_always_compile_knob_bypasses_the_cache():
    x = torch.rand(16)
    out = torch.empty(16)
    first = scale_kernel[(1,)](x, out, 16, 2.0)
    knobs.compilation.always_compile = True
    try:
        assert scale_kernel[(1,)](x, out, 16, 2.0) is not first
    finally:
        del knobs.compilation.always_compile


def test_grid_callable_sees_constexprs_and_defaults():
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (triton.cdiv(meta["n"], meta["BLOCK"]),)

    x = torch.rand(200)
    out = torch.zeros(200)
    scale_kernel[grid](x, out, 200, 0.5)
    assert seen["BLOCK"] == 64 and seen["ROWS"] == 2 and seen["n"] == 200 and seen["factor"] == 0.5
    assert seen["x_ptr"] is x
    torch.testing.assert_close(out, x * 0.5)


@triton.jit
def builtin_named_kernel(type, len, isinstance, int, float, dict, zip, callable, tuple, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < len
    value = tl.load(type + offsets, mask=mask) * isinstance + int + float + dict + zip + callable + tuple
    tl.store(type + offsets, value, mask=mask)


def test_kernel_parameters_may_be_named_like_python_builtins():
    # Generated binder and dispatcher code must not read a parameter as a builtin.
    n = 100
    x = torch.rand(n)
    out = x.clone()
    scalars = (2.5, 1, 0.5, 3, 4, 5, 6)  # isinstance .. tuple
    for grid in [(triton.cdiv(n, 32),), lambda meta: (triton.cdiv(meta["len"], meta["BLOCK"]),)]:
        builtin_named_kernel[grid](out, n, *scalars, BLOCK=32)
        x = x * 2.5 + sum(scalars[1:])
    torch.testing.assert_close(out, x, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("grid", [4, (4,), (4, 1), (4, 1, 1), [4], (tl.constexpr(4),), (np.int64(4),),
                                  (np.uint8(4), np.int32(1)), lambda meta: (np.int16(4),)])
def test_grid_forms(grid):
    x = torch.rand(256)
    out = torch.zeros(256)
    scale_kernel[grid](x, out, 256, 2.0)
    torch.testing.assert_close(out, x * 2.0)


def test_empty_grid_runs_nothing():
    out = torch.zeros(64)
    scale_kernel[(0,)](torch.rand(64), out, 64, 2.0)
    assert not out.any()


def test_bad_grids():
    x = torch.rand(4)
    with pytest.raises(ValueError, match="1 to 3 dimensions"):
        scale_kernel[(1, 1, 1, 1)](x, x, 4, 1.0)
    with pytest.raises(ValueError, match="negative"):
        scale_kernel[(-1,)](x, x, 4, 1.0)
    with pytest.raises(ValueError, match="kernel scale_kernel: grid dimensions must not be negative"):
        scale_kernel[(2, np.int64(-3))](x, x, 4, 1.0)


@pytest.mark.parametrize("grid", [(2.7,), ("3",), (1, 2.0), (np.float32(2),), lambda meta: (4 / 2,), (None,)])
def test_grid_dimensions_must_be_integers(grid):
    x = torch.rand(4)
    out = torch.zeros(4)
    with pytest.raises(TypeError, match=r"kernel scale_kernel: grid dimensions must be integers, got"):
        scale_kernel[grid](x, out, 4, 1.0)
    assert not out.any()


def test_unknown_keyword_is_a_key_error():
    x = torch.rand(4)
    with pytest.raises(KeyError, match="Keyword argument num_wraps was specified but unrecognised"):
        scale_kernel[(1,)](x, x, 4, 1.0, num_wraps=4)
    with pytest.raises(TypeError, match="scale_kernel"):
        scale_kernel[(1,)](x, x, 4, 1.0, blok=4)


def test_launch_options_are_accepted_and_checked():
    x = torch.rand(64)
    out = torch.zeros(64)
    kernel = scale_kernel[(1,)](x, out, 64, 2.0, num_warps=2, num_stages=4, num_ctas=1, maxnreg=128,
                                enable_fp_fusion=False, launch_pdl=False, launch_cooperative_grid=False,
                                debug=True, sanitize_overflow=False, stream=None)
    assert kernel.metadata.num_warps == 2 and kernel.metadata.num_stages == 4
    assert kernel.metadata.enable_fp_fusion is False and kernel.metadata.debug is True
    torch.testing.assert_close(out, x * 2.0)
    with pytest.raises(ValueError, match="num_warps must be a power of 2"):
        scale_kernel[(1,)](x, out, 64, 2.0, num_warps=3)


def test_warmup_compiles_without_running():
    out = torch.zeros(32)
    kernel = scale_kernel.warmup(torch.rand(32), out, 32, 2.0, grid=(1,))
    assert isinstance(kernel, CompiledKernel) and "scale_kernel" in kernel.asm["ttir"]
    assert not out.any()
    mock = add_kernel.warmup(torch.float16, torch.float16, torch.float16, 64, BLOCK=64, grid=(1,))
    assert "*fp16" in mock.asm["ttir"]


def test_pre_run_hooks_receive_the_arguments():
    @triton.jit
    def hooked(x_ptr, n):
        tl.store(x_ptr, n)

    calls = []
    hooked.add_pre_run_hook(lambda *args, **kwargs: calls.append((args, kwargs)))
    x = torch.zeros(1, dtype=torch.int32)
    hooked[(1,)](x, n=5)
    assert calls == [((x,), {"n": 5})] and x.item() == 5


def test_launch_hooks():
    seen = []
    with knobs.runtime.scope():
        knobs.runtime.launch_enter_hook = lambda metadata: seen.append(("enter", metadata["name"]))
        knobs.runtime.launch_exit_hook = lambda metadata: seen.append(("exit", metadata["name"]))
        x = torch.rand(8)
        scale_kernel[(1,)](x, torch.empty(8), 8, 1.0)
    assert seen == [("enter", "scale_kernel"), ("exit", "scale_kernel")]


def test_non_cpu_tensor_is_refused_by_name():
    x = torch.empty(16, device="meta")
    with pytest.raises(ValueError, match=r"argument 'x_ptr'.*device meta"):
        scale_kernel[(1,)](x, torch.empty(16), 16, 1.0)


def test_changed_global_after_compile_raises(tmp_path):
    module = load_module(tmp_path, """
        import tritone as triton
        import tritone.language as tl

        FACTOR = tl.constexpr(3)

        @triton.jit
        def kernel(x_ptr):
            tl.store(x_ptr, FACTOR)
    """)
    x = torch.zeros(1, dtype=torch.int32)
    module.kernel[(1,)](x)
    assert x.item() == 3
    module.FACTOR = tl.constexpr(4)
    with pytest.raises(RuntimeError, match="FACTOR has changed"):
        module.kernel[(1,)](x)


def test_scalar_argument_kinds():
    @triton.jit
    def store_scalars(out_ptr, a, b, c, d):
        tl.store(out_ptr + 0, a.to(tl.float64))
        tl.store(out_ptr + 1, b.to(tl.float64))
        tl.store(out_ptr + 2, c.to(tl.float64))
        tl.store(out_ptr + 3, d)

    out = torch.zeros(4, dtype=torch.float64)
    store_scalars[(1,)](out, 2**40 + 3, -7, True, 0.1)
    assert out.tolist() == [float(2**40 + 3), -7.0, 1.0, float(np.float32(0.1))]


def test_launch_hook_chains_see_the_kernels_launch_metadata():
    def describe(grid, metadata, args):
        return {"grid": grid, "n": args["n"], "warps": metadata.num_warps}

    kernel = triton.jit(launch_metadata=describe)(scale_kernel.fn)
    seen = []
    with knobs.runtime.scope():
        knobs.runtime.launch_enter_hook.add(lambda metadata: seen.append(("enter", metadata.get())))
        knobs.runtime.launch_exit_hook.add(lambda metadata: seen.append(("exit", metadata["name"])))
        kernel[(2, 3, 1)](torch.rand(8), torch.empty(8), 8, 1.5, num_warps=2)
    (enter, entered), exit_seen = seen
    assert enter == "enter" and exit_seen == ("exit", "scale_kernel")
    assert entered["grid"] == (2, 3, 1) and entered["n"] == 8 and entered["warps"] == 2
    scale_kernel[(1,)](torch.rand(8), torch.empty(8), 8, 1.0)  # hooks removed: nothing more
    assert len(seen) == 2


def test_kernel_load_hooks_run_around_loading_once():
    kernel = triton.jit(scale_kernel.fn)
    seen = []

    def start(module, function, name, metadata_group, hash):
        seen.append(("start", module, function, name, hash))

    def end(module, function, name, metadata_group, hash):
        seen.append(("end", name, hash))

    with knobs.runtime.scope():
        knobs.runtime.kernel_load_start_hook.add(start)
        knobs.runtime.kernel_load_end_hook.add(end)
        compiled = kernel[(1,)](torch.rand(8), torch.empty(8), 8, 2.0)
        kernel[(1,)](torch.rand(8), torch.empty(8), 8, 3.0)  # already loaded: no hook
    assert seen == [("start", None, None, "scale_kernel", compiled.hash), ("end", "scale_kernel", compiled.hash)]


def test_jit_hooks_run_around_each_compilation():
    kernel = triton.jit(scale_kernel.fn)
    before, after = [], []
    x, out = torch.rand(16), torch.empty(16)
    with knobs.runtime.scope():
        knobs.runtime.jit_cache_hook = lambda **info: before.append(info)
        knobs.runtime.jit_post_compile_hook = lambda **info: after.append(info)
        kernel[(1,)](x, out, 16, 2.0)
        kernel[(1,)](x, out, 16, 3.0)  # same specialization: no compilation
        kernel[(1,)](x, out, 16, 2.0, num_warps=2, enable_fp_fusion=False)
    assert len(before) == len(after) == 2
    info = before[1]
    assert info["compile"]["num_warps"] == 2 and info["compile"]["enable_fp_fusion"] is False
    assert info["compile"]["signature"]["x_ptr"] == "*fp32" and info["compile"]["constants"][(4,)] == 64
    assert info["fn"].jit_function is kernel and info["fn"].name == "scale_kernel"
    assert info["repr"].startswith("scale_kernel[num_warps=2,") and info["is_manual_warmup"] is False
    assert after[1]["key"] == info["key"] and before[0]["key"] != info["key"]


def test_jit_cache_hook_answering_true_skips_the_kernel():
    kernel = triton.jit(scale_kernel.fn)
    x, out = torch.rand(8), torch.full((8,), 5.0)
    with knobs.runtime.scope():
        knobs.runtime.jit_cache_hook = lambda **info: True
        assert kernel[(1,)](x, out, 8, 2.0) is None
    assert torch.equal(out, torch.full((8,), 5.0)) and cache_entries(kernel) == 0
    kernel[(1,)](x, out, 8, 2.0)
    torch.testing.assert_close(out, x * 2.0)
