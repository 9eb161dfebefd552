"""Triton's public module paths under tritone: `runtime.jit` is the module with
Triton's names, `runtime.errors`, `runtime.interpreter`, `_utils`,
`language.standard._log2`, `testing.nvsmi`, `backends.BaseBackend` and
`_internal_testing` exist and behave. Triton's specialization functions are
compared with upstream Triton's own (installed beside tritone on Linux) in the
same run."""

from __future__ import annotations

import collections
import importlib
import inspect
import math
import pkgutil
import subprocess
import types

import numpy as np
import pytest

import tritone
import tritone.language as tl
from tritone import _internal_testing, _utils, testing
from tritone.backends import BaseBackend
from tritone.backends.compiler import GPUTarget
from tritone.compiler import make_backend
from tritone.runtime import jit as runtime_jit
from tritone.runtime.specialize import make_binder

torch = pytest.importorskip("torch")

Pair = collections.namedtuple("Pair", "first second")


class DerivedFloat(float):
    pass


class DerivedInt(int):
    pass


def upstream_triton():
    """Upstream Triton's package when it is installed and answers `import triton`
    (not tritone under that name)."""
    triton = pytest.importorskip("triton")
    if hasattr(triton, "__tritone_version__"):
        pytest.skip("`import triton` is tritone here; upstream Triton is not installed")
    pytest.importorskip("triton.runtime.jit")
    return triton


# -- runtime.jit is the module ---------------------------------------------------------------

JIT_NAMES = ["JITFunction", "KernelInterface", "ConstexprFunction", "TensorWrapper", "MockTensor", "reinterpret",
             "mangle_type", "specialize_impl", "create_specialize_impl", "native_specialize_impl", "jit",
             "constexpr_function"]


def test_runtime_jit_is_the_module_with_tritons_names():
    import tritone.runtime

    assert isinstance(tritone.runtime.jit, types.ModuleType)
    assert tritone.runtime.jit is importlib.import_module("tritone.runtime.jit")
    for name in JIT_NAMES:
        assert callable(getattr(tritone.runtime.jit, name)), name
    assert tritone.runtime.jit.jit is tritone.jit and tritone.runtime.jit.JITFunction is tritone.JITFunction
    assert tritone.runtime.jit.ConstexprFunction is type(tritone.cdiv)


def test_runtime_exports_tritons_list():
    from tritone.runtime import (
        Autotuner,
        Config,
        Heuristics,
        InterpreterError,
        JITFunction,
        KernelInterface,
        MockTensor,
        OutOfResources,
        TensorWrapper,
        autotune,
        autotuner,
        driver,
        errors,
        heuristics,
        reinterpret,
    )

    assert (Autotuner, Heuristics, Config, autotune, heuristics) == (
        autotuner.Autotuner, autotuner.Heuristics, tritone.Config, tritone.autotune, tritone.heuristics)
    assert (JITFunction, KernelInterface, MockTensor, TensorWrapper, reinterpret) == (
        runtime_jit.JITFunction, runtime_jit.KernelInterface, runtime_jit.MockTensor, runtime_jit.TensorWrapper,
        runtime_jit.reinterpret)
    assert InterpreterError is errors.InterpreterError is tritone.InterpreterError
    assert OutOfResources is errors.OutOfResources is tritone.OutOfResources
    assert type(driver).__name__ == "DriverConfig"


def test_runtime_all_is_upstreams_but_the_remote_caches():
    triton = upstream_triton()
    import tritone.runtime

    missing = set(triton.runtime.__all__) - set(tritone.runtime.__all__)
    assert missing == {"RemoteCacheBackend", "RedisRemoteCacheBackend"}


# Packages whose submodules must not be hidden by a function or class of the same
# name; `runtime.driver` is the driver object in Triton too.
PACKAGES = ["tritone", "tritone.runtime", "tritone.compiler", "tritone.language", "tritone.backends",
            "tritone.language.extra", "tritone.language.extra.cuda", "tritone.tools"]
UPSTREAM_NON_MODULES = {("tritone.runtime", "driver")}


@pytest.mark.parametrize("package_name", PACKAGES)
def test_package_attributes_are_their_submodules(package_name):
    package = importlib.import_module(package_name)
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package_name}.{info.name}")
        if (package_name, info.name) in UPSTREAM_NON_MODULES:
            continue
        assert getattr(package, info.name) is module, f"{package_name}.{info.name} is not the submodule"


# -- Triton's specialization functions ------------------------------------------------------

def argument_values():
    x = torch.randn(64)
    return [
        None, True, False, 1, 0, 16, 17, -16, 48, 2**31 - 1, 2**31, 2**40, 2**63, 2**64 - 1, -(2**63), 1.5, -0.0,
        x, x[1:], x[4:], torch.zeros(8, dtype=torch.bool), torch.randn(8).to(torch.bfloat16),
        torch.randint(-5, 5, (8,), dtype=torch.int8), torch.randn(8).half(), torch.randint(0, 9, (8,)),
        (1, 16, x), Pair(3, 2.5), (), ((1, 2), 3), tl.constexpr(5),
        DerivedFloat(1.5), DerivedInt(1), DerivedInt(48), np.float64(2.0),
    ]


FLAGS = [(False, True, True), (False, False, True), (False, True, False), (True, True, True)]


def test_native_specialize_impl_answers_as_upstreams():
    upstream_triton()
    from triton.backends import BaseBackend as UpstreamBackend
    from triton.runtime.jit import native_specialize_impl as upstream

    compared = 0
    for value in argument_values():
        for is_const, specialize, align in FLAGS:
            if isinstance(value, tuple) and (is_const, specialize, align) != FLAGS[0]:
                # Upstream types tuple elements with the default flags whatever the
                # parameter's; tritone's launcher applies the parameter's.
                continue
            if isinstance(value, tl.constexpr):
                ours = runtime_jit.native_specialize_impl(BaseBackend, value, is_const, specialize, align)
                assert ours == ("constexpr", value)
                continue
            theirs = upstream(UpstreamBackend, value, is_const, specialize, align)
            ours = runtime_jit.native_specialize_impl(BaseBackend, value, is_const, specialize, align)
            assert ours == theirs and type(ours[0]) is type(theirs[0]), (value, is_const, specialize, align)
            compared += 1
    assert compared > 100


def test_mangle_type_answers_as_upstreams():
    upstream_triton()
    from triton.runtime.jit import mangle_type as upstream

    for value in argument_values():
        if isinstance(value, tl.constexpr):
            continue
        assert runtime_jit.mangle_type(value, True) == upstream(value, True), value
        holds_one = isinstance(value, tuple) and _utils.find_paths_if(value, lambda _, item: type(item) is int
                                                                      and item == 1)
        if not holds_one:
            # Upstream specialises tuple elements equal to 1 even when told not to.
            assert runtime_jit.mangle_type(value) == upstream(value), value
    assert runtime_jit.mangle_type(torch.randn(4)) == "*fp32" and runtime_jit.mangle_type(7) == "i32"
    assert runtime_jit.mangle_type(1) == "i32" and runtime_jit.mangle_type(1, specialize=True) == "constexpr"


def test_specialization_answers_agree_with_the_launchers_binder():
    @tritone.jit
    def kernel(x_ptr, n, flag, scale, t):
        pass

    binder = make_binder(kernel)
    rng = np.random.default_rng()
    for _ in range(20):
        x = torch.randn(int(rng.integers(4, 64)))[int(rng.integers(0, 3)):]
        n = int(rng.integers(-(2**40), 2**40))
        # The tuple's integer avoids 1, which both sides make a constexpr element, each
        # in its own representation (mangle_type's test covers that case).
        args = (x, n, bool(rng.integers(0, 2)), float(rng.standard_normal()), (int(rng.integers(2, 64)), x))
        _, specialization, _ = binder(*args)
        for value, (type_name, attribute) in zip(args, specialization):
            ours_type, ours_attribute = runtime_jit.native_specialize_impl(None, value)
            if isinstance(value, tuple):
                assert ours_type == type_name.signature()
                assert ours_attribute == tuple(item_attribute for _, item_attribute in type_name.items)
            else:
                assert (ours_type, ours_attribute) == (type_name, attribute)


def test_native_specialize_impl_asks_a_backend_that_types_tensors_itself():
    class AskingBackend(BaseBackend):
        supports_native_tensor_specialization = False

        @staticmethod
        def get_tensor_specialization(arg, **kwargs):
            return f"tensor(align={kwargs['align']})"

        @staticmethod
        def get_int_specialization(arg, **kwargs):
            raise AssertionError("ints are typed by the native rule")

    x = torch.randn(16)
    assert runtime_jit.native_specialize_impl(AskingBackend, x, False, True, False) == ("*fp32", "tensor(align=False)")
    assert runtime_jit.native_specialize_impl(AskingBackend, x, False, False, True) == ("*fp32", None)
    assert runtime_jit.native_specialize_impl(AskingBackend, 32, False, True, True) == ("i32", "D")
    assert runtime_jit.native_specialize_impl(AskingBackend, 33, False, True, True) == ("i32", "")


def test_create_specialize_impl_with_a_backends_answers_as_inductor_calls_it():
    backend = make_backend(GPUTarget("cuda", 90, 32))
    specialize = runtime_jit.create_specialize_impl(specialize_extra=backend.get_arg_specialization)
    x = torch.randn(32)
    args = [x, x[1:], 64, 63, 1, 2.0, (16, x)]
    attributes = [specialize(arg, is_const=False, specialize_value=True, align=True)[1] for arg in args]
    assert attributes == ["D", "", "D", "", 1, None, ("D", "D")]
    # TorchInductor's _get_specialization: attribute paths -> compile attributes.
    paths = _utils.find_paths_if(attributes, lambda _, value: isinstance(value, str))
    attrs = {path: backend.parse_attr(_utils.get_iterable_path(attributes, path)) for path in paths}
    assert attrs == {(0,): [["tt.divisibility", 16]], (1,): [], (2,): [["tt.divisibility", 16]], (3,): [],
                     (6, 0): [["tt.divisibility", 16]], (6, 1): [["tt.divisibility", 16]]}
    assert specialize(32, specialize_value=False) == ("i32", None)
    assert runtime_jit.specialize_impl(48, backend.get_arg_specialization, align=False) == ("i32", "")


def test_unsupported_arguments_are_refused_naming_the_type():
    with pytest.raises(TypeError, match="str"):
        runtime_jit.native_specialize_impl(None, "not an argument")
    with pytest.raises(ValueError, match="kind"):
        make_backend(GPUTarget("cuda", 80, 32)).get_arg_specialization(3, "float")
    with pytest.raises(TypeError, match="specialization attribute"):
        BaseBackend.parse_attr(None)


# -- other modules -----------------------------------------------------------------------------

def test_runtime_errors_are_tritons_classes():
    from tritone.runtime import errors

    error = errors.OutOfResources(200_000, 101_376, "shared memory")
    assert "shared memory" in str(error) and "200000" in str(error)
    assert issubclass(errors.PTXASError, tritone.TritonError) and issubclass(errors.AutotunerError,
                                                                           tritone.TritonError)


def test_jit_never_returns_an_interpreted_function(monkeypatch):
    from tritone.runtime.interpreter import InterpretedFunction, InterpreterError

    monkeypatch.setenv("TRITON_INTERPRET", "1")

    @tritone.jit
    def kernel(x_ptr):
        tl.store(x_ptr, 1.0)

    assert not isinstance(kernel, InterpretedFunction) and issubclass(InterpretedFunction, tritone.JITFunction)
    assert InterpreterError is tritone.InterpreterError
    out = np.zeros(1, dtype=np.float32)
    kernel[(1,)](out)
    assert out[0] == 1.0


def test_utils_paths():
    values = [1, "D", (2, "D", ("", "D")), tl.tuple(["D", 3])]
    paths = _utils.find_paths_if(values, lambda _, value: isinstance(value, str))
    assert paths == [(1,), (2, 1), (2, 2, 0), (2, 2, 1), (3, 0)]
    assert [_utils.get_iterable_path(values, path) for path in paths] == ["D", "D", "", "D", "D"]
    assert _utils.find_paths_if(7, lambda _, value: True) == [()]
    nested = tl.tuple([1, tl.tuple([2, 3])])
    _utils.set_iterable_path(nested, (1, 0), 20)
    assert _utils.get_iterable_path(nested, (1, 0)) == 20
    with pytest.raises(TypeError, match="tl.tuple"):
        _utils.set_iterable_path((1, 2), (0,), 5)
    assert _utils.canonicalize_dtype(torch.bfloat16) == "bf16" and _utils.canonicalize_dtype(torch.bool) == "u1"
    assert _utils.canonicalize_ptr_dtype(torch.float16, True) == "*kfp16"
    assert _utils.get_primitive_bitwidth("float8e5") == 8
    assert _utils.is_namedtuple(Pair) and not _utils.is_namedtuple(Pair(1, 2))


def test_utils_tables_are_upstreams():
    upstream_triton()
    from triton import _utils as upstream

    assert _utils.type_canonicalisation_dict == upstream.type_canonicalisation_dict
    assert _utils.BITWIDTH_DICT == upstream.BITWIDTH_DICT
    for dtype in (torch.float16, torch.float32, torch.int8, torch.uint8, torch.bool, torch.float8_e4m3fn):
        assert _utils.canonicalize_dtype(dtype) == upstream.canonicalize_dtype(dtype)


def test_standard_log2_is_the_floor_of_log2():
    from tritone.language.standard import _log2

    rng = np.random.default_rng()
    for n in [int(v) for v in rng.integers(2, 2**40, 50)] + [2, 3, 4, 1024, 1025]:
        assert _log2(n) == math.floor(math.log2(n)) == n.bit_length() - 1
    assert _log2(1) == 0 and _log2(0) == 0


def test_standard_log2_in_a_kernel(monkeypatch):
    from tritone.language.standard import _log2

    monkeypatch.setenv("TRITON_INTERPRET", "1")

    @tritone.jit
    def kernel(out_ptr, N: tl.constexpr):
        tl.store(out_ptr, _log2(N))

    out = np.full(1, -1, dtype=np.int32)
    kernel[(1,)](out, N=96)
    assert out[0] == 6


def fake_nvidia_smi(monkeypatch, stdout: str, returncode: int = 0, found: bool = True) -> list:
    calls = []

    def run(command, **kwargs):
        calls.append(command)
        stderr = "no devices" if returncode else ""
        return subprocess.CompletedProcess(command, returncode, stdout=stdout, stderr=stderr)

    monkeypatch.setattr(testing.shutil, "which", lambda name: "/usr/bin/nvidia-smi" if found else None)
    monkeypatch.setattr(testing.subprocess, "run", run)
    return calls


def test_nvsmi_reads_the_queried_values(monkeypatch):
    calls = fake_nvidia_smi(monkeypatch, "1980, 2619\n")
    assert testing.nvsmi(["clocks.max.sm", "clocks.max.mem"]) == [1980, 2619]
    assert "--query-gpu=clocks.max.sm,clocks.max.mem" in calls[0] and "-i" in calls[0]


def test_nvsmi_errors_say_what_went_wrong(monkeypatch):
    fake_nvidia_smi(monkeypatch, "", found=False)
    with pytest.raises(RuntimeError, match="nvidia-smi was not found"):
        testing.nvsmi(["clocks.max.sm"])
    fake_nvidia_smi(monkeypatch, "", returncode=9)
    with pytest.raises(RuntimeError, match="exit status 9.*no devices"):
        testing.nvsmi(["clocks.max.sm"])
    fake_nvidia_smi(monkeypatch, "[N/A]\n")
    with pytest.raises(ValueError, match="clocks.max.sm"):
        testing.nvsmi(["clocks.max.sm"])


def test_backends_base_backend():
    import tritone.backends
    from tritone.backends import compiler

    assert tritone.backends.BaseBackend is compiler.BaseBackend
    assert all(issubclass(entry.compiler, BaseBackend) for entry in tritone.backends.backends.values())
    assert BaseBackend.parse_attr("D") == [["tt.divisibility", 16]] and BaseBackend.parse_attr("") == []


# -- _internal_testing -------------------------------------------------------------------------

# What upstream Triton 3.6's test/unit/language, test/unit/runtime and conftest import from it.
UPSTREAM_TEST_IMPORTS = [
    "_fresh_knobs_impl", "default_alloc_fn", "dtypes", "dtypes_with_bfloat16", "float_dtypes",
    "float_dtypes_with_bfloat16", "get_arch", "int_dtypes", "integral_dtypes", "is_blackwell", "is_cuda", "is_hip",
    "is_hip_cdna", "is_hip_cdna2", "is_hip_cdna3", "is_hip_cdna4", "is_hip_gfx11", "is_hip_gfx12", "is_hopper",
    "is_hopper_or_newer", "is_interpreter", "is_sm12x", "is_xpu", "numpy_random", "str_to_triton_dtype",
    "tma_dtypes", "to_numpy", "to_triton", "torch_dtype_name", "torch_dtypes", "torch_float8_dtypes",
    "uint_dtypes", "unwrap_tensor",
]


def test_internal_testing_has_what_upstreams_tests_import():
    for name in UPSTREAM_TEST_IMPORTS:
        assert hasattr(_internal_testing, name), name


def test_internal_testing_has_every_public_name_of_upstreams(monkeypatch):
    upstream_triton()
    # Upstream's module asks its driver for a GPU as it is imported, unless interpreting.
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    upstream = importlib.import_module("triton._internal_testing")
    public = {name for name, value in vars(upstream).items()
              if not name.startswith("__") and not inspect.ismodule(value)
              and getattr(value, "__module__", upstream.__name__) == upstream.__name__}
    assert {name for name in public if not hasattr(_internal_testing, name)} == set()
    for name in ("dtypes", "dtypes_with_bfloat16", "torch_dtypes", "tma_dtypes", "torch_float8_dtypes"):
        assert getattr(_internal_testing, name) == getattr(upstream, name)


def test_interpreter_and_target_checks(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert _internal_testing.is_interpreter() and _internal_testing.get_current_target() is None
    assert not _internal_testing.is_cuda() and not _internal_testing.is_hip() and _internal_testing.get_arch() == ""
    assert _internal_testing.supports_tma() and not _internal_testing.is_hopper()


def test_gpu_checks_read_the_target_tritone_compiles_for(monkeypatch):
    class HopperDriver:
        @staticmethod
        def get_current_target():
            return GPUTarget("cuda", 90, 32)

    tritone.runtime.driver.set_active(HopperDriver())
    try:
        assert _internal_testing.is_cuda() and not _internal_testing.is_interpreter()
        assert _internal_testing.is_hopper() and _internal_testing.is_hopper_or_newer()
        assert not _internal_testing.is_blackwell() and _internal_testing.get_arch() == "90"
        assert _internal_testing.supports_tma() and not _internal_testing.is_hip_cdna()
    finally:
        tritone.runtime.driver.reset_active()


@pytest.mark.parametrize("dtype_str", _internal_testing.integral_dtypes + _internal_testing.float_dtypes
                         + ["bfloat16", "bool", "float8_e5m2"])
def test_numpy_random_values(dtype_str):
    values = _internal_testing.numpy_random((7, 5), dtype_str, rs=np.random.RandomState(np.random.randint(2**31)))
    assert values.shape == (7, 5)
    if dtype_str in _internal_testing.integral_dtypes:
        assert values.dtype == np.dtype(dtype_str) and (values != 0).all()
    elif dtype_str == "bfloat16":
        assert values.dtype == np.float32 and (values.view(np.uint32) & 0xFFFF == 0).all()
    elif dtype_str == "bool":
        assert values.dtype == np.bool_
    elif "float8" in dtype_str:
        assert values.dtype == np.int8 and ((values >= 20) & (values < 40)).all()
    else:
        assert values.dtype == np.dtype(dtype_str) and np.isfinite(values).all() and values.std() > 0.1
    again = _internal_testing.numpy_random(4, "float32")
    assert np.array_equal(again, _internal_testing.numpy_random(4, "float32")), "seeded with 17 by default"
    with pytest.raises(RuntimeError, match="complex64"):
        _internal_testing.numpy_random(4, "complex64")


@pytest.mark.parametrize("dtype_str", ["uint8", "uint32", "int16", "float16", "float64"])
def test_to_triton_and_back(dtype_str):
    values = _internal_testing.numpy_random(16, dtype_str, rs=np.random.RandomState(np.random.randint(2**31)))
    tensor = _internal_testing.to_triton(values, device="cpu")
    if dtype_str.startswith("uint"):
        assert isinstance(tensor, tritone.TensorWrapper) and tensor.dtype == getattr(tl, dtype_str)
        assert _internal_testing.unwrap_tensor(tensor) is tensor.base
    back = _internal_testing.to_numpy(tensor)
    assert back.dtype == values.dtype and np.array_equal(back, values)
    bf16 = _internal_testing.to_triton(_internal_testing.numpy_random(8, "bfloat16"), "cpu", dst_type="bfloat16")
    assert bf16.dtype == torch.bfloat16
    assert _internal_testing.str_to_triton_dtype("float32") == tl.float32
    assert _internal_testing.torch_dtype_name(torch.int64) == "int64"


def test_fresh_knobs_and_reset(monkeypatch):
    from tritone import knobs

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    knobs.compilation.debug = True
    fresh, reset = _internal_testing._fresh_knobs_impl(skipped_attr={"cache"})
    try:
        fresh_knobs = fresh()
        assert fresh_knobs is knobs and not knobs.runtime.interpret and not knobs.compilation.debug
    finally:
        reset()
    assert knobs.runtime.interpret and knobs.compilation.debug
    del knobs.compilation.debug
