"""`tritone.compile(ASTSource(...), target, options)`, called the way TorchInductor calls it."""

from __future__ import annotations

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler import compiler as compiler_module
from tritone.compiler.compiler import ASTSource, CompiledKernel
from tritone.errors import TritonError
from tritone.ir.printer import print_module
from tritone.runtime.cache import _base32

INDUCTOR_OPTIONS = {"num_warps": 4, "num_stages": 1, "debug": True, "sanitize_overflow": False,
                    "enable_fp_fusion": True, "launch_cooperative_grid": False, "launch_pdl": False}


@triton.jit
def scaled_add(in_ptr0, in_ptr1, out_ptr0, xnumel, scale, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    a = tl.load(in_ptr0 + xindex, xmask)
    b = tl.load(in_ptr1 + xindex, xmask)
    tl.store(out_ptr0 + xindex, a + b * scale, xmask)


def inductor_source(constants_key="XBLOCK") -> ASTSource:
    signature = {"in_ptr0": "*fp32", "in_ptr1": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "scale": "fp32",
                 "XBLOCK": "constexpr"}
    attrs = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]], (3,): [["tt.divisibility", 16]]}
    return ASTSource(scaled_add, signature, {constants_key: 64}, attrs)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRITON_ALWAYS_COMPILE", raising=False)
    monkeypatch.delenv("TRITON_DISABLE_LINE_INFO", raising=False)
    return tmp_path


def test_compile_for_a_cuda_target_needs_no_gpu(cache_dir):
    kernel = triton.compile(inductor_source(), target=GPUTarget("cuda", 80, 32), options=INDUCTOR_OPTIONS)
    assert isinstance(kernel, CompiledKernel) and kernel.name == "scaled_add"
    assert "tt.func @scaled_add" in kernel.asm["ttir"]
    assert 'extern "C" __global__' in kernel.asm["cuda"] and "scaled_add" in kernel.asm["cuda"]
    assert ".target sm_80" in kernel.asm["ptx"] and ".entry scaled_add" in kernel.asm["ptx"]
    assert kernel.kernel is kernel.asm["cubin"] and kernel.kernel.startswith(b"\x7fELF")
    metadata = kernel.metadata
    assert metadata.num_warps == 4 and metadata.num_stages == 1 and metadata.num_ctas == 1
    assert metadata.target == GPUTarget("cuda", 80, 32) and metadata.entry == "scaled_add"
    assert [p[1:] for p in metadata.params] == [["float*", 8]] * 3 + [["int", 4], ["float", 4]]
    assert metadata.global_scratch_size == 0 and metadata.profile_scratch_size == 0 and metadata.hash == kernel.hash
    assert kernel.packed_metadata == (4, 1, metadata.shared)
    # The static launcher of TorchInductor opens <cache>/<base32 of the hash>/<name>.cubin.
    assert (cache_dir / _base32(kernel.hash) / "scaled_add.cubin").read_bytes() == kernel.kernel
    # The IR is read back from the text: what the backend started from, before its own passes.
    assert kernel.ir.entry == "scaled_add" and "tt.func @scaled_add" in print_module(kernel.ir)


@triton.jit
def exp2(data):
    # Named like a function CUDA's headers declare with C linkage.
    offsets = tl.arange(0, 128)
    tl.store(data + offsets, tl.math.exp2(tl.load(data + offsets)))


@pytest.mark.parametrize("ftz", [True, False])
def test_a_kernel_named_like_a_cuda_function_compiles_and_exp2_follows_reflect_ftz(cache_dir, ftz):
    kernel = triton.compile(ASTSource(exp2, {"data": "*fp32"}), target=GPUTarget("cuda", 90, 32),
                            options={"enable_reflect_ftz": ftz})
    assert kernel.name == "exp2"
    entry = kernel.metadata.entry
    assert entry != "exp2" and f".entry {entry}(" in kernel.asm["ptx"]
    # Without ftz, 2**-127 (a denormal) must survive: no flushing ex2.
    assert ("ex2.approx.ftz.f32" in kernel.asm["ptx"]) == ftz
    assert ("ex2.approx.f32" in kernel.asm["ptx"]) != ftz


@triton.jit
def _roll(a1, b1_last, b1_cur, a2, b2_last, b2_cur):
    return a1 + a2, tl.where(a2 == 1, b1_cur, 0) + b2_last, b2_cur


@triton.jit
def roll_rows(X, Z, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    # The combine's constants 0 and 1 equal constants of the kernel body.
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(X + offs)
    _, z, _ = tl.associative_scan((1 + 0 * x, 0 * x, x), axis=AXIS, combine_fn=_roll)
    tl.store(Z + offs, z)


@pytest.mark.parametrize("axis", [0, 1])
def test_a_scan_whose_combine_shares_constants_with_the_kernel_compiles(cache_dir, axis):
    kernel = triton.compile(ASTSource(roll_rows, {"X": "*i32", "Z": "*i32"}, {"M": 16, "N": 32, "AXIS": axis}),
                            target=GPUTarget("cuda", 90, 32))
    assert ".entry roll_rows(" in kernel.asm["ptx"]


def test_a_second_compile_comes_from_the_disk_cache(cache_dir, monkeypatch):
    first = triton.compile(inductor_source(), target=GPUTarget("cuda", 86, 32), options=INDUCTOR_OPTIONS)
    monkeypatch.setattr(compiler_module, "make_ir", lambda *args: pytest.fail("the frontend ran on a cache hit"))
    again = triton.compile(inductor_source(), target=GPUTarget("cuda", 86, 32), options=INDUCTOR_OPTIONS)
    assert again.hash == first.hash and again.asm == first.asm and again.metadata == first.metadata
    assert print_module(again.ir) == print_module(first.ir)


def test_line_information_follows_the_knob(cache_dir, monkeypatch):
    source_file = scaled_add.file_name
    with_lines = triton.compile(inductor_source(), target=GPUTarget("cuda", 80, 32), options=INDUCTOR_OPTIONS)
    assert f'#line {scaled_add.starting_line_number + 1} "{source_file}"' in with_lines.asm["cuda"]
    assert ".loc" in with_lines.asm["ptx"]
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")
    without = triton.compile(inductor_source(), target=GPUTarget("cuda", 80, 32), options=INDUCTOR_OPTIONS)
    assert without.hash != with_lines.hash
    assert "#line" not in without.asm["cuda"] and source_file not in without.asm["ptx"]


def test_other_backends_are_refused():
    with pytest.raises(TritonError, match="not for GPUTarget\\(backend='hip'"):
        triton.compile(inductor_source(), target=GPUTarget("hip", "gfx942", 64))


@pytest.fixture
def interpreter(monkeypatch):
    """Kernels compiled without a target run in the interpreter, even where a GPU is present."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def test_constexpr_keys_by_name_or_index_give_the_same_kernel(interpreter):
    by_name = triton.compile(inductor_source("XBLOCK"), options=INDUCTOR_OPTIONS)
    by_index = triton.compile(inductor_source((5,)), options=INDUCTOR_OPTIONS)
    assert by_name.hash == by_index.hash
    other = triton.compile(ASTSource(scaled_add, inductor_source().signature, {"XBLOCK": 128}),
                           options=INDUCTOR_OPTIONS)
    assert other.hash != by_name.hash


def test_regular_launcher_call_runs_on_the_interpreter(interpreter):
    binary = triton.compile(inductor_source(), options=INDUCTOR_OPTIONS)
    binary._init_handles()
    assert binary.n_spills == 0 and isinstance(binary.n_regs, int)
    rng = np.random.default_rng()
    n = 150
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    # Inductor: run(grid_0, grid_1, grid_2, stream, function, packed_metadata, launch_metadata,
    # enter_hook, exit_hook, *every parameter, constexprs included).
    binary.run(triton.cdiv(n, 64), 1, 1, None, binary.function, binary.packed_metadata, None, None, None,
               a, b, out, n, 0.5, 64)
    np.testing.assert_array_equal(out, a + b * np.float32(0.5))
    out[:] = np.nan
    binary[(triton.cdiv(n, 64),)](a, b, out, n, 2.0, 64)
    np.testing.assert_array_equal(out, a + b * np.float32(2.0))


def test_source_errors(interpreter):
    with pytest.raises(TypeError, match="no parameter 'nope'"):
        ASTSource(scaled_add, {"nope": "i32"})
    partial = ASTSource(scaled_add, {"in_ptr0": "*fp32"}, {"XBLOCK": 64})
    with pytest.raises(TypeError, match="'in_ptr1' is missing from the signature"):
        triton.compile(partial)
    with pytest.raises(TypeError, match="ASTSource"):
        triton.compile(42)
    with pytest.raises(FileNotFoundError):
        triton.compile("no such kernel.ttir")


def _specialization_name(specialization):
    ones = "_".join(k for k, v in specialization.constants.items() if v == 1)
    return f"copy_{specialization.signature['src']}_{ones}"


def _copy_one(src, dst, step):
    tl.store(dst + step, tl.load(src))


copy_named = triton.jit(repr=_specialization_name)(_copy_one)


@pytest.mark.parametrize("target", [None, GPUTarget("cuda", 80, 32)])
def test_jit_repr_names_the_compiled_kernel(interpreter, cache_dir, target):
    # An int argument equal to 1 is specialised as a constexpr, which the repr sees by name.
    kernel = copy_named.warmup(np.zeros(1, np.float32), np.zeros(2, np.float32), 1, grid=(1,)) if target is None \
        else triton.compile(ASTSource(copy_named, {"src": "*fp32", "dst": "*fp32", "step": "constexpr"},
                                      {"step": 1}), target=target)
    assert kernel.name == kernel.metadata.name == "copy_*fp32_step"
    if target is not None:
        # The entry and the cache files keep the function's name.
        assert kernel.metadata.entry == "_copy_one" and ".entry _copy_one(" in kernel.asm["ptx"]
        assert (cache_dir / _base32(kernel.hash) / "_copy_one.cubin").is_file()


class _ObservingBackend:
    """Stands in for a registered backend: records whether the cyclic collector ran
    during `compile`, then defers to the real one (or raises, or waits)."""

    def __init__(self, real, fail=False, entered=None, release=None):
        self.real, self.fail, self.entered, self.release = real, fail, entered, release
        self.collector_enabled = []

    def __getattr__(self, name):
        return getattr(self.real, name)

    def compile(self, *args, **kwargs):
        import gc

        self.collector_enabled.append(gc.isenabled())
        if self.entered is not None:
            self.entered.set()
            self.release.wait(10)
        if self.fail:
            raise TritonError("the backend refused the kernel")
        return self.real.compile(*args, **kwargs)


def _with_backend(monkeypatch, backend):
    real = compiler_module.registry.target_backend
    monkeypatch.setattr(compiler_module.registry, "target_backend", lambda name: backend)
    return real


def test_the_collector_pauses_while_a_kernel_compiles_and_comes_back(monkeypatch, cache_dir):
    import gc

    backend = _ObservingBackend(compiler_module.registry.target_backend("interpreter"))
    _with_backend(monkeypatch, backend)
    assert gc.isenabled()
    compiler_module.compile(inductor_source(), target=compiler_module.INTERPRETER_TARGET)
    assert backend.collector_enabled == [False] and gc.isenabled()
    # a program that turned it off keeps it off
    gc.disable()
    try:
        compiler_module.compile(inductor_source(), target=compiler_module.INTERPRETER_TARGET)
        assert not gc.isenabled()
    finally:
        gc.enable()
    # a compile that fails gives it back too
    backend.fail = True
    with pytest.raises(TritonError, match="refused"):
        compiler_module.compile(inductor_source(), target=compiler_module.INTERPRETER_TARGET)
    assert gc.isenabled()


def test_overlapping_compiles_in_threads_leave_the_collector_on(monkeypatch, cache_dir):
    import gc
    import threading

    entered, release = threading.Event(), threading.Event()
    slow = _ObservingBackend(compiler_module.registry.target_backend("interpreter"), entered=entered,
                             release=release)
    _with_backend(monkeypatch, slow)
    thread = threading.Thread(target=compiler_module.compile, args=(inductor_source(),),
                              kwargs={"target": compiler_module.INTERPRETER_TARGET})
    thread.start()
    assert entered.wait(10)
    # a second compile starts and ends while the first is still running
    quick = _ObservingBackend(slow.real)
    monkeypatch.setattr(compiler_module.registry, "target_backend", lambda name: quick)
    compiler_module.compile(inductor_source("XBLOCK"), target=compiler_module.INTERPRETER_TARGET)
    assert quick.collector_enabled == [False]
    assert not gc.isenabled()  # the first compile still holds it
    release.set()
    thread.join(10)
    assert slow.collector_enabled == [False] and gc.isenabled()
