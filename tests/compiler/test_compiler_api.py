"""Triton's compiler-side API beyond `compile(ASTSource)`: `make_backend(target).parse_options`,
the backends registry, every CUDAOptions name, IR files (`IRSource`), `LazyDict` launch
metadata and `get_cache_key`, called as TorchInductor and Triton's tools call them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone import knobs
from tritone.backends.compiler import GPUTarget
from tritone.compiler import IRSource, LazyDict, get_cache_key, make_backend
from tritone.compiler import compiler as compiler_module
from tritone.compiler.compiler import ASTSource
from tritone.ir.target import INTERPRETER_TARGET, KernelOptions

RNG = np.random.default_rng()
CUDA_OPTION_NAMES = {
    "num_warps", "num_ctas", "num_stages", "warp_size", "maxnreg", "ptx_version", "ptx_options", "ir_override",
    "enable_fp_fusion", "enable_reflect_ftz", "launch_cooperative_grid", "launch_pdl", "supported_fp8_dtypes",
    "deprecated_fp8_dot_operand_dtypes", "default_dot_input_precision", "allowed_dot_input_precisions",
    "max_num_imprecise_acc_default", "extern_libs", "debug", "backend_name", "sanitize_overflow", "arch",
    "instrumentation_mode"}


@triton.jit
def scaled_add(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask) * scale, mask)


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "scale": "fp32", "BLOCK": "constexpr"}


def test_every_cuda_options_name_is_an_option():
    assert CUDA_OPTION_NAMES <= KernelOptions.FIELD_NAMES


def test_option_names_match_upstream():
    upstream = pytest.importorskip("triton.backends.nvidia.compiler")
    assert set(upstream.CUDAOptions.__dataclass_fields__) <= KernelOptions.FIELD_NAMES


@triton.jit
def _fp8_dot(a_ptr, b_ptr, c_ptr, DTYPE: tl.constexpr):
    r = tl.arange(0, 64)
    a = tl.load(a_ptr + r[:, None] * 64 + r[None, :]).to(DTYPE, bitcast=True)
    b = tl.load(b_ptr + r[:, None] * 64 + r[None, :]).to(DTYPE, bitcast=True)
    tl.store(c_ptr + r[:, None] * 64 + r[None, :], tl.dot(a, b))


@pytest.mark.parametrize("arch", [80, 90])
def test_a_launch_without_options_gets_the_targets_fp8_dot_defaults(arch, recwarn):
    # As Triton's CUDA backend fills them when a kernel gives none: fp8 dots on sm_90 sum
    # 2**30 products imprecisely (upstream's TTIR: maxNumImpreciseAcc = 1073741824), and
    # fp8e4b15 operands there are deprecated, with Triton's warning.
    sig = {"a_ptr": "*u8", "b_ptr": "*u8", "c_ptr": "*fp32"}
    e4m3 = triton.compile(ASTSource(_fp8_dot, sig, {"DTYPE": tl.float8e4nv}), target=GPUTarget("cuda", arch, 32))
    assert f"max_num_imprecise_acc = {2**30 if arch == 90 else 0}" in e4m3.asm["ttir"]
    triton.compile(ASTSource(_fp8_dot, sig, {"DTYPE": tl.float8e4b15}), target=GPUTarget("cuda", arch, 32))
    deprecated = [w for w in recwarn if "fp8e4b15 is deprecated on Hopper" in str(w.message)]
    assert len(deprecated) == (1 if arch == 90 else 0)
    # a kernel's own value is kept
    explicit = triton.compile(ASTSource(_fp8_dot, sig, {"DTYPE": tl.float8e4nv}), target=GPUTarget("cuda", arch, 32),
                              options={"max_num_imprecise_acc_default": 0})
    assert "max_num_imprecise_acc = 0" in explicit.asm["ttir"]


@pytest.mark.parametrize("arch", [75, 80, 90])
def test_parse_options_as_inductor_reads_them(arch):
    options = make_backend(GPUTarget("cuda", arch, 32)).parse_options({})
    values = options.__dict__
    assert CUDA_OPTION_NAMES <= set(values)
    assert values["arch"] == f"sm{arch}" and values["num_warps"] == 4 and values["warp_size"] == 32
    assert values["max_num_imprecise_acc_default"] == (2**30 if arch == 90 else 0)
    assert values["deprecated_fp8_dot_operand_dtypes"] == (("fp8e4b15",) if arch >= 90 else ())
    assert set(values["supported_fp8_dtypes"]) == {"fp8e4b15", "fp8e4nv", "fp8e5"}
    assert "bf16x3" in values["allowed_dot_input_precisions"]
    assert isinstance(options.hash(), str) and options.hash() == make_backend(
        GPUTarget("cuda", arch, 32)).parse_options({}).hash()


def test_parse_options_agrees_with_upstream_where_tritone_means_the_same():
    upstream = pytest.importorskip("triton.compiler.compiler")
    upstream_target = pytest.importorskip("triton.backends.compiler").GPUTarget
    shared = ("num_warps", "num_ctas", "num_stages", "warp_size", "maxnreg", "enable_fp_fusion", "launch_pdl",
              "launch_cooperative_grid", "deprecated_fp8_dot_operand_dtypes", "default_dot_input_precision",
              "allowed_dot_input_precisions", "max_num_imprecise_acc_default", "debug", "backend_name",
              "sanitize_overflow", "arch", "instrumentation_mode")
    for arch in (80, 90):
        given = {"num_warps": 8, "num_stages": 2, "debug": False, "launch_pdl": True, "maxnreg": 128}
        ours = make_backend(GPUTarget("cuda", arch, 32)).parse_options(dict(given)).__dict__
        theirs = upstream.make_backend(upstream_target("cuda", arch, 32)).parse_options(dict(given)).__dict__
        assert {k: ours[k] for k in shared} == {k: theirs[k] for k in shared}


def test_parse_options_keeps_every_option_and_ignores_unknown_names():
    backend = make_backend(GPUTarget("cuda", 80, 32))
    options = backend.parse_options({
        "num_warps": 8, "ptx_version": 83, "ptx_options": "-v", "ir_override": "k.ttgir", "enable_reflect_ftz": False,
        "extern_libs": {"libdevice": "/x/libdevice.10.bc"}, "instrumentation_mode": "consan", "arch": "sm86",
        "not_an_option": 1, "maxnreg": None})
    assert options.num_warps == 8 and options.ptx_version == 83 and options.ptx_options == "-v"
    assert options.ir_override == "k.ttgir" and options.enable_reflect_ftz is False and options.arch == "sm86"
    assert options.extern_libs == (("libdevice", "/x/libdevice.10.bc"),) and options.maxnreg is None
    assert options.hash() != backend.parse_options({}).hash()
    assert hash(options) == hash(dataclasses.replace(options))
    with pytest.raises(ValueError, match="warp_size"):
        backend.parse_options({"warp_size": 64})
    # Triton asserts on num_warps: the error is both a ValueError and an AssertionError.
    for error in (ValueError, AssertionError):
        with pytest.raises(error, match="power of 2"):
            backend.parse_options({"num_warps": 3})


@pytest.mark.parametrize("arch, target", [("sm80", 90), (None, 80), (86, 90)])
def test_num_ctas_above_one_needs_sm90(arch, target, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    options = {"num_ctas": 2, "arch": arch}
    with pytest.raises(ValueError, match=r"num_ctas > 1 requires NVIDIA SM90\+ \(Hopper\)"):
        make_backend(GPUTarget("cuda", target, 32)).parse_options(options)
    source = ASTSource(scaled_add, SIGNATURE, {"BLOCK": 64})
    with pytest.raises(ValueError, match="num_ctas > 1 requires"):
        triton.compile(source, target=GPUTarget("cuda", target, 32), options=options)
    # On sm90 (named or the target's) a cluster of two is fine.
    make_backend(GPUTarget("cuda", 90, 32)).parse_options({"num_ctas": 2})
    make_backend(GPUTarget("cuda", 80, 32)).parse_options({"num_ctas": 2, "arch": "sm_90a"})


def test_inert_options_are_accepted_at_launch():
    x, y, out = (RNG.standard_normal(40).astype(np.float32) for _ in range(3))
    scaled_add[(1,)](x, y, out, 40, 2.0, BLOCK=64, ptx_version=83, enable_reflect_ftz=False, instrumentation_mode="",
                     extern_libs=(("libdevice", "x.bc"),), backend_name="cuda", supported_fp8_dtypes=("fp8e5",))
    np.testing.assert_array_equal(out, x + y * np.float32(2.0))


def test_interpreter_backend_and_unknown_targets():
    backend = make_backend(INTERPRETER_TARGET)
    assert backend.parse_options({"num_warps": 2}).num_warps == 2
    assert "fp8e4b15" in backend.parse_options({}).supported_fp8_dtypes
    with pytest.raises(RuntimeError, match="no tritone backend"):
        make_backend(GPUTarget("hip", "gfx942", 64))


def test_backends_registry_and_its_driver():
    from tritone.backends.cuda.driver import NvidiaDriver

    nvidia = triton.backends.backends["nvidia"]
    assert nvidia.driver is NvidiaDriver and isinstance(nvidia.driver.is_active(), bool)
    assert nvidia.compiler(GPUTarget("cuda", 80, 32)).binary_ext == "cubin"
    assert "cpu" not in triton.backends.backends


def test_get_cache_key_changes_with_each_part():
    from tritone.runtime.cache import triton_key

    src = ASTSource(scaled_add, SIGNATURE, {"BLOCK": 64})
    backend = make_backend(GPUTarget("cuda", 80, 32))
    options = backend.parse_options({})
    key = get_cache_key(src, backend, options, {"TRITON_DEBUG": "0"})
    assert key.startswith(triton_key()) and src.hash() in key and options.hash() in key
    others = [get_cache_key(ASTSource(scaled_add, SIGNATURE, {"BLOCK": 128}), backend, options, {"TRITON_DEBUG": "0"}),
              get_cache_key(src, make_backend(GPUTarget("cuda", 90, 32)), options, {"TRITON_DEBUG": "0"}),
              get_cache_key(src, backend, backend.parse_options({"num_warps": 8}), {"TRITON_DEBUG": "0"}),
              get_cache_key(src, backend, options, {"TRITON_DEBUG": "1"})]
    assert len({key, *others}) == 5


def test_lazy_dict_computes_added_entries_once_when_read():
    calls = []

    def extra(a, b):
        calls.append((a, b))
        return {"flops": a * b}

    metadata = LazyDict({"name": "k"})
    metadata.add(extra, (3, 4))
    assert not calls and metadata.data == {"name": "k"}
    assert metadata.get() == {"name": "k", "flops": 12} and metadata["flops"] == 12
    assert metadata.get("missing", 0) == 0 and dict(metadata) == {"name": "k", "flops": 12} and len(metadata) == 2
    assert calls == [(3, 4)]


def test_launch_hooks_get_lazy_metadata(interpreter_target):
    seen, hook_calls = [], []

    def flops(grid, metadata, args):
        hook_calls.append(args["n"])
        return {"flops": 2 * args["n"]}

    kernel = triton.jit(launch_metadata=flops)(scaled_add.fn)
    compiled = triton.compile(ASTSource(kernel, SIGNATURE, {"BLOCK": 64}), target=interpreter_target)
    x, y, out = (np.ones(8, np.float32) for _ in range(3))
    with knobs.runtime.scope():
        knobs.runtime.launch_enter_hook.add(seen.append)
        compiled[(1, 1, 1)](x, y, out, 8, 1.0, 64)
    (metadata,) = seen
    assert isinstance(metadata, LazyDict) and not hook_calls
    assert metadata.get()["flops"] == 16 and metadata["name"] == "scaled_add" and hook_calls == [8]


@pytest.fixture
def interpreter_target():
    return GPUTarget("interpreter", 0, 32)


def _ir_file(tmp_path, options=None):
    compiled = triton.compile(ASTSource(scaled_add, SIGNATURE, {"BLOCK": 64}), target=INTERPRETER_TARGET,
                              options=options)
    path = tmp_path / "scaled_add.ttir"
    path.write_text(compiled.asm["ttir"])
    return compiled, path


def test_an_ir_file_compiles_and_runs_in_the_interpreter(tmp_path, monkeypatch):
    original, path = _ir_file(tmp_path, {"num_warps": 2})
    monkeypatch.setattr(compiler_module, "make_ir", lambda *args: pytest.fail("an IR file ran the frontend"))
    src = IRSource(path)
    assert src.name == "scaled_add" and src.ext == "ttir"
    assert src.signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "scale": "fp32"}
    assert src.parse_options()["num_warps"] == 2
    for source in (src, str(path), path):
        kernel = triton.compile(source, target=INTERPRETER_TARGET)
        assert kernel.metadata.num_warps == 2 and kernel.asm["ttir"] == original.asm["ttir"]
        n = int(RNG.integers(65, 200))
        x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        kernel[(triton.cdiv(n, 64), 1, 1)](x, y, out, n, 0.5)
        np.testing.assert_array_equal(out, x + y * np.float32(0.5))


def test_an_ir_file_compiles_for_a_cuda_target(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    _, path = _ir_file(tmp_path)
    kernel = triton.compile(str(path), target=GPUTarget("cuda", 80, 32))
    assert kernel.name == "scaled_add" and ".entry scaled_add" in kernel.asm["ptx"]
    assert [p[1:] for p in kernel.metadata.params] == [["float*", 8]] * 3 + [["int", 4], ["float", 4]]


def test_a_bad_ir_file_is_reported(tmp_path):
    from tritone.ir.parser import IRParseError

    path = tmp_path / "bad.ttir"
    path.write_text("module @k {\n  tt.func @k(%x: *fp32) {\n    %y = bogus(%z) : (fp32) -> fp32\n  }\n}\n")
    with pytest.raises(IRParseError, match="line 3"):
        IRSource(path)


def test_set_allocator_is_kept_and_launches_do_not_need_it():
    from tritone.runtime import _allocation

    calls = []

    def allocate(size, alignment, stream):
        calls.append(size)
        return np.empty(size, np.int8)

    assert triton.set_allocator(allocate) is None and _allocation.allocator.get() is allocate
    x, y, out = (np.ones(8, np.float32) for _ in range(3))
    scaled_add[(1,)](x, y, out, 8, 1.0, BLOCK=64)
    assert not calls
    triton.set_allocator(None)
    assert _allocation.allocator.get() is None
    with pytest.raises(TypeError, match="callable"):
        triton.set_allocator(42)


def test_the_compilation_listener_hears_each_compilation_with_its_times(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    heard = []
    target = GPUTarget("cuda", 90, 32)
    src = ASTSource(scaled_add, SIGNATURE, {"BLOCK": 128})
    with knobs.compilation.scope():
        knobs.compilation.listener = lambda **event: heard.append(event)
        compiled = triton.compile(src, target=target)
        again = triton.compile(src, target=target)
    triton.compile(src, target=target)  # listener gone with the scope
    (miss, hit) = heard
    assert not miss["cache_hit"] and hit["cache_hit"] and miss["src"] is src
    assert miss["metadata"]["hash"] == compiled.hash == again.hash and miss["metadata"]["target"] == target
    times = miss["times"]
    assert [stage for stage, _ in times.lowering_stages] == ["ttir", "cuda", "cubin"]
    assert times.ir_initialization > 0 and all(duration > 0 for _, duration in times.lowering_stages)
    assert times.store_results > 0 and times.total == (
        times.ir_initialization + sum(duration for _, duration in times.lowering_stages) + times.store_results)
    assert hit["times"].ir_initialization > 0 and hit["times"].lowering_stages == []
    assert hit["times"].store_results == 0


def test_the_compilation_listener_hears_interpreter_compilations():
    heard = []
    with knobs.compilation.scope():
        knobs.compilation.listener = lambda **event: heard.append(event)
        compiled = triton.compile(ASTSource(scaled_add, SIGNATURE, {"BLOCK": 64}), target=INTERPRETER_TARGET)
    (event,) = heard
    assert not event["cache_hit"] and event["metadata"]["name"] == "scaled_add" == compiled.name
    assert [stage for stage, _ in event["times"].lowering_stages] == ["ttir"]
    assert event["times"].total_lowering > 0


def test_inductors_cpu_target_compiles_for_the_interpreter():
    # TorchInductor's CPU Triton backend (cpu_backend="triton") compiles for GPUTarget("cpu", "", 32).
    kernel = triton.compile(ASTSource(scaled_add, SIGNATURE, {"BLOCK": 64}), target=GPUTarget("cpu", "", 32))
    assert kernel.metadata.target == INTERPRETER_TARGET
    n = int(RNG.integers(65, 200))
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    kernel[(triton.cdiv(n, 64), 1, 1)](x, y, out, n, 1.5, 64)
    np.testing.assert_array_equal(out, x + y * np.float32(1.5))
    with pytest.raises(triton.TritonError, match="not for GPUTarget"):
        triton.compile(ASTSource(scaled_add, SIGNATURE, {"BLOCK": 64}), target=GPUTarget("hip", "gfx942", 64))
