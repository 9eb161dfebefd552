"""Objects that cross processes: dtypes, kernels (`JITFunction`), `Autotuner`,
`Heuristics`, `Config` and `CompiledKernel` pickle and deep-copy, in this
process and through a `multiprocessing` spawn child that uses what it unpickles.

TorchInductor's compile workers and its FX-graph-cache bundler pickle kernels
after `prepare_for_pickle` (fn, __globals__, used_global_vals set to None,
`repr` replaced by a constant), and compiled kernels as a copy of their
`__dict__` with `run`, `module` and `function` set to None, then call
`_init_handles()` to get `run` back; those paths are reproduced here."""

from __future__ import annotations

import copy
import multiprocessing
import pickle
import threading

import numpy as np
import pytest

import tritone
import tritone.language as tl
from tests.backends.cuda.test_launch_plan import FakeGPU
from tests.runtime import _pickled_kernels as kernels
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.bindings import driver_api
from tritone.compiler import ASTSource, CompiledKernel
from tritone.ir.printer import print_module
from tritone.ir.target import INTERPRETER_TARGET
from tritone.runtime import Autotuner, Config, Heuristics, JITFunction

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "alpha": "fp32",
             "BLOCK": "constexpr"}


def round_trips(value):
    return [pickle.loads(pickle.dumps(value)), copy.deepcopy(value)]


def random_inputs(n: int) -> tuple[np.ndarray, np.ndarray, float]:
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    return x, y, float(rng.uniform(0.5, 2.0))


def assert_scaled_add(out: np.ndarray, x: np.ndarray, y: np.ndarray, alpha: float) -> None:
    np.testing.assert_allclose(out, np.float32(alpha) * x + y, rtol=1e-6, atol=1e-6)


class ConstRepr:
    """What TorchInductor's prepare_for_pickle puts in place of `fn.repr`."""

    def __init__(self, value: str):
        self.value = value

    def __call__(self, _=None) -> str:
        return self.value


def prepare_for_pickle(kernel: JITFunction) -> JITFunction:
    """A copy of `kernel` with the fields Inductor clears before pickling cleared."""
    cleared = copy.deepcopy(kernel)
    cleared.repr = ConstRepr(cleared.repr(cleared))
    cleared.fn = None
    cleared.__globals__ = None
    cleared.used_global_vals = None
    return cleared


# -- dtypes --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [
    tl.int1, tl.int8, tl.uint16, tl.int32, tl.uint64, tl.float16, tl.bfloat16, tl.float32, tl.float64,
    tl.float8e4nv, tl.float8e5, tl.float8e4b15, tl.void,
    tl.pointer_type(tl.float16), tl.pointer_type(tl.int8, const=True), tl.pointer_type(tl.pointer_type(tl.int32)),
    tl.block_type(tl.float32, [16, 32]), tl.block_type(tl.pointer_type(tl.bfloat16), [8]),
], ids=str)
def test_dtypes_come_back_equal(dtype):
    for copied in round_trips(dtype):
        assert copied == dtype and type(copied) is type(dtype)
        assert hash(copied) == hash(dtype) and repr(copied) == repr(dtype) and copied.name == dtype.name


def test_block_type_keeps_its_layout():
    from tritone.ir.layouts import BlockedLayout

    layout = BlockedLayout(size_per_thread=(1, 4), threads_per_warp=(8, 4), warps_per_cta=(4, 1), order=(1, 0))
    block = tl.block_type(tl.float16, [32, 16]).with_layout(layout)
    for copied in round_trips(block):
        assert copied == block and copied.layout == layout


# -- kernels ---------------------------------------------------------------------------------------

def test_a_kernel_its_module_names_pickles_as_that_name():
    assert pickle.loads(pickle.dumps(kernels.scaled_add)) is kernels.scaled_add
    assert pickle.loads(pickle.dumps(kernels.tuned_scale)) is kernels.tuned_scale
    assert pickle.loads(pickle.dumps(kernels.heuristic_scale)) is kernels.heuristic_scale


def test_deepcopy_of_a_kernel_is_a_separate_kernel_that_runs(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x, y, alpha = random_inputs(100)
    kernels.scaled_add[(4,)](x, y, np.empty_like(x), 100, alpha, BLOCK=32)
    compiled_before = {site: dict(kernels_) for site, kernels_ in kernels.scaled_add.device_caches.items()}

    clone = copy.deepcopy(kernels.scaled_add)
    assert clone is not kernels.scaled_add and clone.fn is kernels.scaled_add.fn
    assert not clone.device_caches, "compiled kernels belong to the original"
    assert clone.cache_key == kernels.scaled_add.cache_key and clone.arg_names == kernels.scaled_add.arg_names
    out = np.full_like(x, np.nan)
    clone[(4,)](x, y, out, 100, alpha, BLOCK=32)
    assert_scaled_add(out, x, y, alpha)
    assert {site: dict(k) for site, k in kernels.scaled_add.device_caches.items()} == compiled_before

    # Clearing fields on the copy, as Inductor does, leaves the original whole.
    prepare_for_pickle(kernels.scaled_add)
    assert kernels.scaled_add.fn is not None and kernels.scaled_add.__globals__ is kernels.__dict__


def test_constexpr_functions_pickle_by_name():
    n = int(np.random.default_rng().integers(3, 10_000))
    for function, arguments in ((tritone.cdiv, (n, 16)), (tritone.next_power_of_2, (n,)),
                                (tl.standard._log2, (n,))):
        assert pickle.loads(pickle.dumps(function)) is function
        assert copy.deepcopy(function)(*arguments) == function(*arguments)
    assert tritone.cdiv(n, 16) == -(-n // 16)


def test_jit_repr_argument_names_the_kernel():
    assert kernels.scaled_add.repr(None) == "scaled_add"

    def named(specialization):
        return f"scaled[{specialization}]"

    kernel = tritone.jit(repr=named)(kernels.scaled_add.fn)
    assert kernel.repr("fp32") == "scaled[fp32]"


def test_a_kernel_prepared_as_inductor_does_pickles_by_value():
    cache_key = kernels.scaled_add.cache_key
    cleared = prepare_for_pickle(kernels.scaled_add)
    # restore_after_unpickle gives kernels a lock; the next pickle must not trip on it.
    cleared._hash_lock = threading.RLock()
    for copied in round_trips(cleared):
        assert copied is not kernels.scaled_add and copied.fn is None and copied.__globals__ is None
        assert copied.repr(copied) == "scaled_add" and copied.src == kernels.scaled_add.src
        assert copied.arg_names == kernels.scaled_add.arg_names and copied.cache_key == cache_key
        assert [p.is_constexpr for p in copied.params] == [False] * 5 + [True]


def test_a_kernel_defined_inside_a_function_says_why_it_does_not_pickle():
    def make():
        @tritone.jit
        def local_kernel(x_ptr):
            tl.store(x_ptr, 1.0)

        return local_kernel

    with pytest.raises(pickle.PicklingError, match="local_kernel.*module level"):
        pickle.dumps(make())
    assert copy.deepcopy(make()).fn.__name__ == "local_kernel"


# -- autotuner, heuristics, configs -----------------------------------------------------------------

def test_config_round_trips_equal():
    config = Config({"BLOCK": 64, "SPLIT": 2}, num_warps=8, num_stages=2, maxnreg=128, pre_hook=kernels.block_of)
    for copied in round_trips(config):
        assert copied == config and hash(copied) == hash(config)
        assert copied.all_kwargs() == config.all_kwargs() and copied.pre_hook is kernels.block_of


def test_autotuner_copies_are_separate_and_keep_choices(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x, _, alpha = random_inputs(200)
    kernels.tuned_scale[kernels.grid_for(200)](x, np.empty_like(x), 200, alpha)
    assert kernels.tuned_scale.cache, "the launch above chose a config"

    clone = copy.deepcopy(kernels.tuned_scale)
    assert clone is not kernels.tuned_scale and clone.fn is not kernels.tuned_scale.fn
    assert clone.configs == kernels.tuned_scale.configs and clone.cache == kernels.tuned_scale.cache
    clone.cache.clear()
    assert kernels.tuned_scale.cache
    out = np.full_like(x, np.nan)
    clone[kernels.grid_for(200)](x, out, 200, alpha)
    np.testing.assert_allclose(out, np.float32(alpha) * x, rtol=1e-6)


def test_an_autotuner_its_module_does_not_name_pickles_by_value():
    tuner = Autotuner(kernels.scaled_add, kernels.scaled_add.arg_names,
                      [Config({"BLOCK": 16}), Config({"BLOCK": 128}, num_warps=8)], key=["n"],
                      reset_to_zero=["out_ptr"], restore_value=None)
    tuner.cache[(100,)] = tuner.configs[1]
    copied = pickle.loads(pickle.dumps(tuner))
    assert copied is not tuner and copied.fn is kernels.scaled_add
    assert copied.configs == tuner.configs and copied.cache == {(100,): tuner.configs[1]}
    assert copied.reset_to_zero == ["out_ptr"] and copied.pre_hook.__self__ is copied


def test_heuristics_deepcopy_runs(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    clone = copy.deepcopy(kernels.heuristic_scale)
    assert isinstance(clone, Heuristics) and clone is not kernels.heuristic_scale
    x, _, alpha = random_inputs(150)
    out = np.full_like(x, np.nan)
    clone[kernels.grid_for(150)](x, out, 150, alpha)
    np.testing.assert_allclose(out, np.float32(alpha) * x, rtol=1e-6)


# -- compiled kernels -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cuda_kernel() -> CompiledKernel:
    """A kernel compiled for Hopper by NVRTC, no GPU needed."""
    return tritone.compile(ASTSource(kernels.scaled_add, SIGNATURE, {"BLOCK": 64}, {(0,): [["tt.divisibility", 16]]}),
                           target=GPUTarget("cuda", 90, 32))


def interpreter_kernel() -> CompiledKernel:
    return tritone.compile(ASTSource(kernels.scaled_add, SIGNATURE, {"BLOCK": kernels.BLOCK}),
                           target=INTERPRETER_TARGET)


def test_compiled_kernel_round_trips_without_what_was_loaded(cuda_kernel):
    cuda_kernel.run = None
    try:
        for copied in round_trips(cuda_kernel):
            assert copied.hash == cuda_kernel.hash and copied.asm == cuda_kernel.asm
            assert copied.kernel == cuda_kernel.asm["cubin"] and copied.name == "scaled_add"
            assert copied.metadata == cuda_kernel.metadata and copied.metadata._fields == cuda_kernel.metadata._fields
            assert copied.packed_metadata == cuda_kernel.packed_metadata
            assert copied.src.fn.cache_key == kernels.scaled_add.cache_key
            assert copied.function is None and copied.module is None
            assert print_module(copied.ir) == print_module(cuda_kernel.ir)
    finally:
        del cuda_kernel.run


def launch_with_fake_gpu(kernel: CompiledKernel, gpu: FakeGPU, monkeypatch) -> None:
    monkeypatch.setattr(driver_api, "driver", lambda: gpu.driver)
    kernel._init_handles()
    assert callable(kernel.run) and kernel.function is not None and isinstance(kernel.n_spills, int)
    x_address, out_address = 0x7F00_0000_0000, 0x7F00_0000_1000
    kernel.run(3, 1, 1, 0, kernel.function, kernel.packed_metadata, None, None, None,
               x_address, x_address + 512, out_address, 150, 1.5, 64)


def test_init_handles_gives_run_back_after_pickling(cuda_kernel, monkeypatch):
    cuda_kernel.run = None
    try:
        copied = pickle.loads(pickle.dumps(cuda_kernel))
    finally:
        del cuda_kernel.run
    gpu = FakeGPU()
    launch_with_fake_gpu(copied, gpu, monkeypatch)
    assert gpu.images == [cuda_kernel.asm["cubin"]]
    (launch,) = gpu.launches
    assert launch["grid"] == (3, 1, 1) and launch["block"] == (32 * copied.metadata.num_warps, 1, 1)


def test_a_copy_of_the_kernels_dict_as_inductor_pickles_it_loads_again(cuda_kernel, monkeypatch):
    loaded = pickle.loads(pickle.dumps(cuda_kernel))
    launch_with_fake_gpu(loaded, FakeGPU(), monkeypatch)
    # TritonCompileResult.__getstate__ / __setstate__ in torch/_inductor/runtime/triton_heuristics.py.
    state = {**loaded.__dict__, "metadata": loaded.metadata._asdict(), "run": None, "module": None,
             "function": None}
    state = pickle.loads(pickle.dumps(state))
    rebuilt = CompiledKernel.__new__(CompiledKernel)
    rebuilt.__dict__.update({**state, "metadata": kernels_metadata(state["metadata"])})
    assert rebuilt.run is None
    gpu = FakeGPU()
    launch_with_fake_gpu(rebuilt, gpu, monkeypatch)
    assert len(gpu.images) == 1 and len(gpu.launches) == 1, "the copy loaded its own plan"


def kernels_metadata(fields: dict):
    from collections import namedtuple

    return namedtuple("KernelMetadata", tuple(fields))(**fields)


def test_interpreter_kernel_runs_after_a_round_trip():
    kernel = interpreter_kernel()
    kernel._init_handles()
    kernel.run = None
    x, y, alpha = random_inputs(90)
    for copied in round_trips(kernel):
        copied._init_handles()
        out = np.full_like(x, np.nan)
        copied.run(3, 1, 1, None, copied.function, copied.packed_metadata, None, None, None,
                   x, y, out, 90, alpha, kernels.BLOCK)
        assert_scaled_add(out, x, y, alpha)


# -- across processes -------------------------------------------------------------------------------

def test_a_spawn_child_unpickles_and_uses_every_object():
    x, y, alpha = random_inputs(130)
    dtypes = [tl.float32, tl.bfloat16, tl.pointer_type(tl.float8e5, const=True), tl.block_type(tl.int16, [4, 8])]
    compiled = interpreter_kernel()
    compiled._init_handles()
    payload = pickle.dumps({
        "kernel": kernels.scaled_add, "autotuner": kernels.tuned_scale, "heuristics": kernels.heuristic_scale,
        "compiled": compiled, "cleared_kernel": prepare_for_pickle(kernels.scaled_add), "dtypes": dtypes,
    })
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        results = pool.apply(kernels.use_in_child, (payload, x, y, alpha))

    assert results["is_module_kernel"]
    assert_scaled_add(results["kernel"], x, y, alpha)
    assert_scaled_add(results["compiled"], x, y, alpha)
    np.testing.assert_allclose(results["autotuner"], np.float32(alpha) * x, rtol=1e-6)
    np.testing.assert_allclose(results["heuristics"], np.float32(alpha) * x, rtol=1e-6)
    assert results["autotuner_configs"] == kernels.tuned_scale.configs
    fn, name, src, arg_names, cache_key = results["cleared"]
    assert fn is None and name == "scaled_add" and src == kernels.scaled_add.src
    assert arg_names == kernels.scaled_add.arg_names and cache_key == kernels.scaled_add.cache_key
    assert results["dtypes"] == dtypes
