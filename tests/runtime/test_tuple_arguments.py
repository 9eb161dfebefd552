"""Tuple and namedtuple kernel arguments, as Triton 3.6 takes them: typed element
by element (constexpr elements included), passed to the kernel as a tl.tuple,
flattened into the kernel function's arguments, cached by structure; in the
interpreter, through `compile` for CUDA, and packed by the launcher on a
simulated GPU."""

from __future__ import annotations

import re
from collections import namedtuple

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tests.runtime.test_gpu_path import FakeCudaTensor, SimulatedGPU, addresses, decode
from tritone import knobs
from tritone.backends import sites
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import build
from tritone.backends.cuda.bindings import driver_api
from tritone.backends.cuda.launch_plan import LaunchSpec, Parameter
from tritone.backends.sites import launch_site
from tritone.compiler import compiler as compiler_module
from tritone.compiler.compiler import ASTSource
from tritone.runtime.specialize import TupleSpecialization, constexpr_key, specialize_value

H200 = GPUTarget("cuda", 90, 32)
Pair = namedtuple("Pair", ["x", "y"])
Swapped = namedtuple("Swapped", ["y", "x"])


@triton.jit
def scaled_sum(inputs, out_ptr, n, BLOCK: tl.constexpr):
    """out = a * ka + b * kb for inputs ((a, ka), (b, kb)) of any nesting of this shape."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a_ptr, ka = inputs[0]
    second = inputs[1]
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(second[0] + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * ka + b * second[1] + (len(inputs) - 2) + (len(second) - 2), mask=mask)


@triton.jit
def _axpy_of(p):
    return tl.load(p.x + tl.arange(0, 16)) * p.y


@triton.jit
def named_kernel(p, out_ptr):
    # Fields read directly and through a helper (which gets the namedtuple).
    tl.store(out_ptr + tl.arange(0, 16), _axpy_of(p) + p.y)


@triton.jit
def named_by_index(p, out_ptr):
    tl.store(out_ptr + tl.arange(0, 16), _axpy_of(p) + p[1])


@triton.jit
def rebuilt_pair(p, out_ptr):
    # A namedtuple built in kernel code from run-time values is passed on as an argument one is.
    q = Pair(p.x + 16, p.y + 1)
    tl.store(out_ptr + tl.arange(0, 16), _axpy_of(q) + q.y)


@triton.jit
def add_element(t, out_ptr):
    tl.store(out_ptr + tl.arange(0, 16), tl.load(t[0] + tl.arange(0, 16)) + t[1])


@triton.jit
def add_unpacked(t, out_ptr):
    x_ptr, k = t
    tl.store(out_ptr + tl.arange(0, 16), tl.load(x_ptr + tl.arange(0, 16)) + k)


@triton.jit(do_not_specialize=["t"])
def add_element_unspecialized(t, out_ptr):
    tl.store(out_ptr + tl.arange(0, 16), tl.load(t[0] + tl.arange(0, 16)) + t[1])


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def cached(kernel) -> int:
    return len(kernel.device_caches.get(launch_site(), {}))


# ---------------------------------------------------------------- specialization


def test_tuples_are_typed_element_by_element():
    x = torch.empty(16)
    assert specialize_value((x, 3)) == (TupleSpecialization(tuple, (("*fp32", "D"), ("i32", ""))), None)
    nested, attribute = specialize_value(((x, 16), 2.0, None, (1,)))
    assert attribute is None and nested.items == (
        (TupleSpecialization(tuple, (("*fp32", "D"), ("i32", "D"))), None), ("fp32", None),
        ("constexpr", constexpr_key(None)), (TupleSpecialization(tuple, (("constexpr", constexpr_key(1)),)), None))
    # The form Triton's ASTSource signatures take, namedtuples kept (upstream's native_specialize_impl).
    assert nested.signature() == (("*fp32", "i32"), "fp32", "constexpr", ("constexpr",))
    named = specialize_value(Pair(x, 5))[0]
    assert named.signature() == Pair("*fp32", "i32") and type(named.signature()) is Pair
    assert specialize_value((x, 1), specialize=False)[0].items == (("*fp32", None), ("i32", None))
    assert specialize_value((), True)[0] == TupleSpecialization(tuple, ())
    # Keys tell structures apart: a namedtuple from a tuple, and fields from other fields.
    assert len({specialize_value(v) for v in [(x, 5), Pair(x, 5), Swapped(x, 5), (x, 6)]}) == 3


def test_elements_that_cannot_be_arguments_are_named_by_parameter_and_index(interpret):
    with pytest.raises(TypeError, match=r"kernel add_element, argument 't': element \[1\]: .* type str"):
        add_element[(1,)]((torch.zeros(16), "two"), torch.zeros(16))
    with pytest.raises(TypeError, match=r"argument 'inputs': element \[1\]\[0\]: .* type list"):
        scaled_sum[(1,)](((torch.zeros(16), 2), ([1], 3)), torch.zeros(16), 16, BLOCK=16)
    with pytest.raises(OverflowError, match=r"argument 't': element \[1\]: integer argument 18446744073709551616"):
        add_element[(1,)]((torch.zeros(16), 2**64), torch.zeros(16))
    with pytest.raises(TypeError, match=r"argument 't': failed to specialize argument of type list"):
        add_element[(1,)]([torch.zeros(16), 2], torch.zeros(16))


# ---------------------------------------------------------------- the interpreter


def test_tuples_of_pointers_and_ints(interpret):
    rng = np.random.default_rng()
    n = int(rng.integers(20, 300))
    ka, kb = (int(k) for k in rng.integers(2, 50, size=2))
    a, b = torch.rand(n), torch.rand(n)
    out = torch.full((n,), float("nan"))
    scaled_sum[(triton.cdiv(n, 64),)](((a, ka), (b, kb)), out, n, BLOCK=64)
    torch.testing.assert_close(out, a * ka + b * kb)
    # numpy arrays as the pointers, a float as a factor.
    a_np, b_np = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out_np = np.full(n, np.nan, np.float32)
    kf = float(rng.standard_normal())
    scaled_sum[(triton.cdiv(n, 64),)](((a_np, ka), (b_np, kf)), out_np, n, BLOCK=64)
    np.testing.assert_allclose(out_np, a_np * ka + b_np * np.float32(kf), rtol=1e-6)


def test_nested_tuples_of_other_shapes_compile_anew(interpret):
    ka, kb = (int(k) for k in np.random.default_rng().integers(2, 50, size=2))
    a, b = torch.rand(40), torch.rand(40)
    out = torch.empty(40)
    scaled_sum.device_caches.clear()
    scaled_sum[(1,)](((a, ka), (b, kb)), out, 40, BLOCK=64)
    # Three elements at each level: len() sees them.
    scaled_sum[(1,)](((a, ka), (b, kb, None), None), out, 40, BLOCK=64)
    torch.testing.assert_close(out, a * ka + b * kb + 2)
    assert cached(scaled_sum) == 2


def test_namedtuple_fields_read_as_attributes(interpret):
    rng = np.random.default_rng()
    w = torch.rand(16)
    k = int(rng.integers(2, 100))
    out = torch.empty(16)
    named_kernel[(1,)](Pair(w, k), out)
    torch.testing.assert_close(out, w * k + k)
    named_by_index[(1,)](Pair(w, k + 1), out)
    torch.testing.assert_close(out, w * (k + 1) + k + 1)
    with pytest.raises(triton.CompilationError, match=r"tuple has no attribute 'x' \(it has no field names\)"):
        named_kernel[(1,)]((w, k), out)
    with pytest.raises(triton.CompilationError, match=r"tuple has no attribute 'x' \(its fields are a, b\)"):
        named_kernel[(1,)](namedtuple("AB", "a b")(w, k), out)


def test_a_namedtuple_built_in_the_kernel_reaches_helpers(interpret):
    w = torch.rand(32)
    k = int(np.random.default_rng().integers(2, 100))
    out = torch.empty(16)
    rebuilt_pair[(1,)](Pair(w, k), out)
    torch.testing.assert_close(out, w[16:] * (k + 1) + k + 1)


def test_fields_decide_which_element_an_attribute_reads(interpret):
    w = torch.rand(16)
    k = int(np.random.default_rng().integers(2, 100))
    out = torch.empty(16)
    Other = namedtuple("Other", ["y", "x"])
    named_kernel.device_caches.clear()
    named_kernel[(1,)](Pair(w, k), out)
    out.fill_(float("nan"))
    named_kernel[(1,)](Other(k + 1, w), out)  # the same fields, in the other order
    torch.testing.assert_close(out, w * (k + 1) + k + 1)
    out.fill_(float("nan"))
    named_kernel[(1,)](Swapped(k + 2, w), out)
    torch.testing.assert_close(out, w * (k + 2) + k + 2)
    assert cached(named_kernel) == 3


def test_an_element_equal_to_one_is_a_constexpr(interpret):
    x = torch.full((16,), 127, dtype=torch.int8)
    out = torch.empty(16, dtype=torch.int32)
    # 1 is a literal that does not widen int8 (TRITON_SEMANTICS 11): 127 + 1 wraps.
    kernel = add_element[(1,)]((x, 1), out)
    assert (out == -128).all()
    assert kernel.src.signature["t"] == ("*i8", "constexpr") and kernel.src.constants[(0, 1)] == 1
    add_element[(1,)]((x, 2), out)
    assert (out == 129).all()
    add_element_unspecialized[(1,)]((x, 1), out)
    assert (out == 128).all()
    # As upstream: unpacking assigns, and an assigned 1 is an int32 tensor (TRITON_SEMANTICS 1.5).
    add_unpacked[(1,)]((x, 1), out)
    assert (out == 128).all()


def test_cache_hits_and_misses_follow_the_structure(interpret, monkeypatch):
    compiles = []
    real = compiler_module.compile
    monkeypatch.setattr(compiler_module, "compile", lambda *a, **k: compiles.append(a[0].signature) or real(*a, **k))
    x = torch.rand(16)
    out = torch.empty(16)
    rng = np.random.default_rng()
    for _ in range(3):  # values change, the structure does not: one kernel
        add_element[(1,)]((torch.rand(16), int(rng.integers(2, 1000)) * 16 + 3), out)
    assert compiles == [{"t": ("*fp32", "i32"), "out_ptr": "*fp32"}]
    add_element[(1,)]((x, 1), out)
    add_element[(1,)]((x, 32), out)  # divisible by 16: another specialization
    add_element[(1,)]((x, 2.5), out)
    add_element[(1,)](Pair(x, 7), out)
    torch.testing.assert_close(out, x + 7)
    assert compiles[1:] == [{"t": ("*fp32", "constexpr"), "out_ptr": "*fp32"},
                            {"t": ("*fp32", "i32"), "out_ptr": "*fp32"}, {"t": ("*fp32", "fp32"), "out_ptr": "*fp32"},
                            {"t": Pair("*fp32", "i32"), "out_ptr": "*fp32"}]
    assert type(compiles[-1]["t"]) is Pair
    add_element[(1,)](Pair(x, 9), out)
    assert len(compiles) == 5


def test_a_tuple_of_the_wrong_shape_given_to_a_compiled_kernel_is_named(interpret):
    x, out = torch.rand(16), torch.empty(16)
    kernel = add_element[(1,)]((x, 3), out)
    with pytest.raises(TypeError, match=r"kernel add_element: argument t must be a tuple of at least 2 elements"):
        kernel[(1,)]((x,), out)


# ---------------------------------------------------------------- compile for CUDA


def test_compile_for_cuda_flattens_the_tuples():
    signature = {"inputs": (("*fp32", "i32"), Pair("*fp16", "fp32")), "out_ptr": "*fp32", "n": "i32",
                 "BLOCK": "constexpr"}
    source = ASTSource(scaled_sum, signature, {"BLOCK": 128}, {(0, 0, 0): [["tt.divisibility", 16]]})
    kernel = triton.compile(source, target=H200)
    entry = re.search(r"__global__ void __launch_bounds__\([^)]*\) scaled_sum\(([^)]*)\)", kernel.asm["cuda"]).group(1)
    assert [p.strip().rsplit(" ", 1) for p in entry.split(",")] == [
        ["float*", "arg0_inputs_0_0"], ["int", "arg1_inputs_0_1"], ["tt_f16*", "arg2_inputs_1_0"],
        ["float", "arg3_inputs_1_1"], ["float*", "arg4_out_ptr"], ["int", "arg5_n"]]
    assert "tt.func @scaled_sum(%inputs.0.0: *fp32, %inputs.0.1: i32, %inputs.1.0: *fp16" in kernel.asm["ttir"]
    assert "arg_attrs = {0 = {divisibility = 16}}" in kernel.asm["ttir"]
    spec = LaunchSpec.from_kernel(kernel)
    assert [(p.label, p.type) for p in spec.runtime_parameters] == [
        ("inputs[0][0]", "*fp32"), ("inputs[0][1]", "i32"), ("inputs[1][0]", "*fp16"), ("inputs[1][1]", "fp32"),
        ("out_ptr", "*fp32"), ("n", "i32")]
    # The namedtuple's fields are part of what was compiled.
    other = ASTSource(scaled_sum, {**signature, "inputs": (("*fp32", "i32"), Swapped("*fp16", "fp32"))},
                      {"BLOCK": 128})
    assert other.hash() != ASTSource(scaled_sum, signature, {"BLOCK": 128}).hash()


def test_compile_takes_constexpr_elements_by_path():
    source = ASTSource(add_element, {"t": ("*i8", "constexpr"), "out_ptr": "*i32"}, {(0, 1): 1})
    kernel = triton.compile(source, target=H200)
    assert "tt.func @add_element(%t.0: *i8, %out_ptr: *i32)" in kernel.asm["ttir"]
    assert [p.label for p in LaunchSpec.from_kernel(kernel).runtime_parameters] == ["t[0]", "out_ptr"]
    with pytest.raises(TypeError, match=r"constexpr element t\[1\] has no value"):
        compiler_module.make_ir(ASTSource(add_element, {"t": ("*i8", "constexpr"), "out_ptr": "*i32"}), H200)


def test_the_c_launcher_spelling_of_a_tuple_is_refused():
    # Upstream 3.6 fails on it too (KeyError in str_to_ty); tritone says what to write.
    with pytest.raises(TypeError, match=r"'\[\*fp32,i32\]' of 't' is the C launcher's spelling.*\('\*fp32', 'i32'\)"):
        ASTSource(add_element, {"t": "[*fp32,i32]", "out_ptr": "*fp32"})
    with pytest.raises(TypeError, match="must be a string or a tuple of them"):
        ASTSource(add_element, {"t": ["*fp32", "i32"], "out_ptr": "*fp32"})


# ---------------------------------------------------------------- the launcher


def test_plan_writes_the_leaves_in_order():
    from tests.backends.cuda.test_launch_plan import FakeGPU
    from tritone.backends.cuda.launch_plan import LaunchPlan

    gpu = FakeGPU()
    params = (Parameter(0, "t", ("*fp32", ("i64", "constexpr"), "fp32")), Parameter(1, "n", "i32"),
              Parameter(2, "BLOCK", "constexpr"))
    spec = LaunchSpec("tuples", "tuples", params, b"\x7fELF", False, num_warps=4, shared=0, hash="tuples")
    plan = LaunchPlan(spec, 0, gpu.driver)
    rng = np.random.default_rng()
    address, big, n = int(rng.integers(1, 2**40)) * 16, int(rng.integers(2**40, 2**62)), int(rng.integers(0, 99))
    plan.launch(2, 1, 1, 0, (address, (big, 1), 0.5), n, 64)
    assert decode(gpu.launches[-1]["bytes"], ["<Q", "<q", "<f", "<i"]) == [address, big, 0.5, n]
    with pytest.raises(OverflowError, match=r"argument t\[1\]\[0\] \(at 0\) of type i64"):
        plan.launch(1, 1, 1, 0, (address, (2**63, 1), 0.5), n, 64)
    with pytest.raises(TypeError, match=r"Pointer argument t\[0\] \(at 0\) is a bool"):
        plan.launch(1, 1, 1, 0, (True, (big, 1), 0.5), n, 64)
    with pytest.raises(TypeError, match=r"argument t\[1\] must be a tuple of at least 1 elements"):
        plan.launch(1, 1, 1, 0, (address, 3, 0.5), n, 64)


@pytest.fixture
def simulated_gpu(monkeypatch, tmp_path):
    for group, name in [(knobs.runtime, "interpret"), (knobs.compilation, "always_compile"),
                        (knobs.nvidia, "target"), (knobs.cache, "dir")]:
        delattr(group, name)
    for variable in ("TRITON_INTERPRET", "TRITONE_INTERPRET", "TRITONE_TARGET", "TRITON_ALWAYS_COMPILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    simulated = SimulatedGPU()
    monkeypatch.setattr(driver_api, "_driver", simulated.driver)
    sites.reset_active_target()
    build._driver_version.cache_clear()
    scaled_sum.device_caches.clear()
    yield simulated
    sites.reset_active_target()
    build._driver_version.cache_clear()
    scaled_sum.device_caches.clear()


def test_kernel_grid_with_tuples_on_a_simulated_gpu(simulated_gpu, monkeypatch):
    a, b, out = (FakeCudaTensor(address) for address in addresses(3))
    rng = np.random.default_rng()
    # Neither divisible by 16, nor one more than them: the relaunch below has the same specialization.
    n, ka = (int(value) * 16 + 3 for value in rng.integers(10, 2**16, size=2))
    kernel = scaled_sum[(triton.cdiv(n, 128),)](((a, ka), Pair(b, 0.25)), out, n, BLOCK=128)
    assert kernel.src.signature["inputs"] == (("*fp32", "i32"), Pair("*fp32", "fp32"))
    record = simulated_gpu.launches[-1]
    assert decode(record["arguments"], "QiQfQi") == [a.address, ka, b.address, 0.25, out.address, n]
    # Cached by structure: other values launch the same kernel.
    monkeypatch.setattr(compiler_module, "compile", lambda *args, **kwargs: pytest.fail("compiled again"))
    for _ in range(2):
        again = scaled_sum[(3,)](((b, ka + 1), Pair(a, -1.5)), out, n + 1, BLOCK=128)
        assert again is kernel
        assert decode(simulated_gpu.launches[-1]["arguments"], "QiQfQi") == [
            b.address, ka + 1, a.address, -1.5, out.address, n + 1]
    with pytest.raises(ValueError, match=r"Pointer argument inputs\[1\]\[0\] \(at 0\) cannot be accessed"):
        scaled_sum[(3,)](((b, ka), Pair(torch.zeros(4), 1.5)), out, n, BLOCK=128)
