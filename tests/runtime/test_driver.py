"""`tritone.runtime.driver`: the interpreter driver, the choice of the active
driver, the NVIDIA driver against a simulated CUDA library, and against the
real GPU (`gpu` marker)."""

from __future__ import annotations

import importlib
import sys
import time
import types

import pytest

from tritone import testing
from tritone.backends import sites
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import driver as cuda_driver
from tritone.backends.cuda.bindings import driver_api
from tritone.backends.cuda.bindings.driver_api import CudaDriver, DeviceAttribute, FunctionAttribute
from tritone.backends.interpreter import driver as interpreter_driver
from tritone.backends.sites import active_target
from tritone.errors import OutOfResources
from tritone.platform import SimulatedLibrary
from tritone.runtime import driver

# `tritone.runtime.driver` is the DriverConfig object (as in Triton), which hides the module of that name.
driver_module = importlib.import_module("tritone.runtime.driver")
target = SimulatedLibrary.target


@pytest.fixture(autouse=True)
def fresh_driver_state(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    yield
    driver.reset_active()


def test_runtime_driver_is_the_driver_config():
    assert driver is driver_module.driver and isinstance(driver, driver_module.DriverConfig)


# ---------------------------------------------------------------- the interpreter


def test_interpreter_driver(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    active = driver.active
    assert isinstance(active, interpreter_driver.InterpreterDriver)
    assert active.get_current_target() == GPUTarget("interpreter", 0, 32) == active_target()
    assert active.get_current_device() == 0 and active.get_current_stream() == 0
    assert str(active.get_active_torch_device()) == "cpu"
    assert active.get_benchmarker() is testing.do_bench
    properties = active.utils.get_device_properties(0)
    assert set(properties) == {"max_shared_mem", "max_num_regs", "multiprocessor_count", "warpSize",
                               "sm_clock_rate", "mem_clock_rate", "mem_bus_width"}
    assert all(isinstance(value, int) for value in properties.values())
    assert properties["warpSize"] == 32 and properties["multiprocessor_count"] >= 1
    assert properties["max_shared_mem"] > 0 and properties["max_num_regs"] > 0
    active.set_current_device("cpu")
    with pytest.raises(ValueError, match="one device"):
        active.set_current_device(1)


def test_interpreter_device_interface_times_with_the_host_clock(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    device = driver.active.get_device_interface()
    start, end = device.Event(enable_timing=True), device.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="recorded"):
        start.elapsed_time(end)
    start.record()
    time.sleep(0.01)
    end.record()
    device.synchronize()
    assert 10.0 <= start.elapsed_time(end) < 1000.0
    assert device.current_device() == 0 and device.device_count() == 1 and device.get_device_capability() == (0, 0)
    flush = driver.active.get_empty_cache_for_benchmark()
    flush.data[:4] = b"\x01\x02\x03\x04"
    driver.active.clear_cache(flush)
    assert len(flush.data) == interpreter_driver.CPU_BENCHMARK_FLUSH_BYTES and not any(flush.data[:4096])


# ---------------------------------------------------------------- choosing the active driver


def test_the_driver_follows_where_the_launcher_runs_kernels(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    interpreter = interpreter_driver.InterpreterDriver
    assert isinstance(driver.active, interpreter) and interpreter.is_active()
    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setattr(sites, "active_target", lambda: GPUTarget("cuda", 86, 32))
    assert isinstance(driver.active, cuda_driver.NvidiaDriver) and not interpreter_driver.InterpreterDriver.is_active()
    assert driver.active.get_current_target() == GPUTarget("cuda", 86, 32)
    monkeypatch.setattr(sites, "active_target", lambda: GPUTarget("interpreter", 0, 32))
    assert isinstance(driver.active, interpreter_driver.InterpreterDriver)


def test_a_fresh_driver_config_probes_nothing_until_asked(monkeypatch):
    from tritone.backends.driver import DriverBase

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    config = driver_module.DriverConfig()
    assert config._active is None and config._default is None
    interpreter = config.active
    assert isinstance(interpreter, DriverBase) and config._default is interpreter and config.default is interpreter
    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setattr(sites, "active_target", lambda: GPUTarget("cuda", 90, 32))
    gpu = config.default
    assert isinstance(gpu, cuda_driver.NvidiaDriver) and isinstance(gpu, DriverBase) and config._default is gpu
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(sites, "active_target", lambda: GPUTarget("interpreter", 0, 32))
    assert config.default is interpreter  # each kind is made once


def test_driver_base_asks_subclasses_for_the_whole_interface():
    from tritone.backends.driver import DriverBase

    class Partial(DriverBase):
        @classmethod
        def is_active(cls):
            return True

    with pytest.raises(TypeError, match="get_current_target"):
        Partial()


def test_set_active_and_reset_active():
    class Fake:
        pass

    fake = Fake()
    driver.set_active(fake)
    assert driver.active is fake
    driver.reset_active()
    assert driver.active is driver.default


def test_gpu_probe_failure_means_no_gpu(monkeypatch):
    def missing():
        raise driver_api.TritonError("no driver library")

    monkeypatch.setattr(cuda_driver, "_gpu_usable", None)
    monkeypatch.setattr(driver_api, "driver", missing)
    assert cuda_driver.NvidiaDriver.is_active() is False


def _failing_init(name: str, code: int):
    def driver():
        raise driver_api.CudaError("cuInit", code, name, "simulated")
    return driver


def test_a_process_forked_after_cuda_init_still_has_an_active_gpu(monkeypatch):
    # Inductor's compile workers fork after their parent initialised CUDA: cuInit answers
    # CUDA_ERROR_NOT_INITIALIZED there, and torch's set_driver_to_gpu needs is_active().
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(cuda_driver, "_gpu_usable", None)
    monkeypatch.setattr(driver_api, "driver", _failing_init("CUDA_ERROR_NOT_INITIALIZED", 3))
    assert cuda_driver.NvidiaDriver.is_active() is True
    monkeypatch.setattr(cuda_driver, "_gpu_usable", None)
    monkeypatch.setattr(driver_api, "driver", _failing_init("CUDA_ERROR_NO_DEVICE", 100))
    assert cuda_driver.NvidiaDriver.is_active() is False


def test_a_failed_cuinit_defers_to_torch_when_torch_is_imported(monkeypatch):
    seen = {"available": True}
    fake_torch = types.SimpleNamespace(version=types.SimpleNamespace(hip=None),
                                       cuda=types.SimpleNamespace(is_available=lambda: seen["available"]))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setattr(driver_api, "driver", _failing_init("CUDA_ERROR_UNKNOWN", 999))
    monkeypatch.setattr(cuda_driver, "_gpu_usable", None)
    assert cuda_driver.NvidiaDriver.is_active() is True
    seen["available"] = False
    monkeypatch.setattr(cuda_driver, "_gpu_usable", None)
    assert cuda_driver.NvidiaDriver.is_active() is False


# ---------------------------------------------------------------- NVIDIA, simulated

H100 = {
    DeviceAttribute.COMPUTE_CAPABILITY_MAJOR: 9, DeviceAttribute.COMPUTE_CAPABILITY_MINOR: 0,
    DeviceAttribute.MULTIPROCESSOR_COUNT: 132, DeviceAttribute.WARP_SIZE: 32,
    DeviceAttribute.MAX_THREADS_PER_BLOCK: 1024, DeviceAttribute.MAX_REGISTERS_PER_BLOCK: 65536,
    DeviceAttribute.MAX_REGISTERS_PER_MULTIPROCESSOR: 65536, DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK: 49152,
    DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 232448,
    DeviceAttribute.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: 233472, DeviceAttribute.L2_CACHE_SIZE: 52428800,
    13: 1980000, 36: 2619000, 37: 5120,
}
FUNCTION = {FunctionAttribute.NUM_REGS: 96, FunctionAttribute.LOCAL_SIZE_BYTES: 32,
            FunctionAttribute.MAX_THREADS_PER_BLOCK: 512, FunctionAttribute.SHARED_SIZE_BYTES: 1024}


class SimulatedGpu:
    """One H100 behind the driver API calls the NVIDIA driver makes."""

    def __init__(self):
        self.context = 0
        self.events: dict[int, float] = {}
        self.next_event = 0x100
        self.memory: dict[int, int] = {}
        self.memsets: list[tuple] = []
        self.function_settings: list[tuple] = []

        def store(out, value):
            target(out).value = value
            return 0

        def set_current(context):
            self.context = context
            return 0

        def event_create(out, flags):
            self.next_event += 1
            self.events[self.next_event] = 0.0
            return store(out, self.next_event)

        def event_record(event, stream):
            self.events[event] = time.perf_counter()
            return 0

        def alloc(out, nbytes):
            address = 0x7000_0000 + len(self.memory) * 0x1000_0000
            self.memory[address] = nbytes
            return store(out, address)

        self.library = SimulatedLibrary({
            "cuDeviceGetCount": lambda out: store(out, 1),
            "cuDeviceGet": lambda out, ordinal: store(out, ordinal) if ordinal == 0 else 101,
            "cuDeviceGetName": lambda buffer, length, device: setattr(buffer, "value", b"NVIDIA H100") or 0,
            "cuDeviceGetAttribute": lambda out, attribute, device: store(out, H100[attribute]),
            "cuDeviceTotalMem_v2": lambda out, device: store(out, 80 << 30),
            "cuCtxGetCurrent": lambda out: store(out, self.context),
            "cuCtxGetDevice": lambda out: store(out, 0),
            "cuDevicePrimaryCtxRetain": lambda out, device: store(out, 0xC0),
            "cuCtxSetCurrent": set_current,
            "cuCtxSynchronize": lambda: 0,
            "cuEventCreate": event_create,
            "cuEventRecord": event_record,
            "cuEventSynchronize": lambda event: 0,
            "cuEventElapsedTime": lambda out, start, end: store(out, (self.events[end] - self.events[start]) * 1e3),
            "cuEventDestroy_v2": lambda event: 0 if self.events.pop(event, None) is not None else 400,
            "cuMemAlloc_v2": alloc,
            "cuMemsetD8_v2": lambda pointer, value, nbytes: self.memsets.append((pointer, value, nbytes)) or 0,
            "cuMemFree_v2": lambda pointer: 0 if self.memory.pop(pointer, None) is not None else 1,
            "cuModuleLoadData": lambda out, image: store(out, 0xAB),
            "cuModuleGetFunction": lambda out, module, name: store(out, 0xF0) if name == b"kernel" else 500,
            "cuFuncGetAttribute": lambda out, attribute, function: store(out, FUNCTION[attribute]),
            "cuFuncSetAttribute": lambda *args: self.function_settings.append(args) or 0,
            "cuGetErrorName": lambda code, out: 1,
            "cuGetErrorString": lambda code, out: 1,
        })


@pytest.fixture
def gpu(monkeypatch):
    simulated = SimulatedGpu()
    api = CudaDriver(simulated.library, "/simulated/libcuda.so.1")
    monkeypatch.setattr(driver_api, "driver", lambda: api)
    monkeypatch.setattr(cuda_driver, "_gpu_usable", None)
    monkeypatch.setattr(cuda_driver, "_devices", {})
    monkeypatch.setattr(cuda_driver, "_torch_cuda", lambda: None)
    # Where the launcher runs kernels: on this (simulated) GPU, or, as happens
    # while tritone runs kernels in the interpreter, not.
    monkeypatch.setattr(sites, "active_target", lambda: GPUTarget("cuda", 90, 32))
    return simulated


def test_nvidia_driver_on_a_simulated_gpu(gpu, monkeypatch):
    active = driver.active
    assert isinstance(active, cuda_driver.NvidiaDriver)
    assert active.get_current_target() == GPUTarget("cuda", 90, 32)
    assert active.get_current_stream() == 0 and active.get_current_device() == 0
    assert active.utils.get_device_properties(0) == {
        "max_shared_mem": 232448, "max_num_regs": 65536, "multiprocessor_count": 132, "warpSize": 32,
        "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120}
    assert active.utils.get_device_properties("cuda:0") == active.utils.get_device_properties(0)
    assert testing.get_dram_gbps() == pytest.approx(2619000 * 5120 * 2 / 1e6 / 8)
    assert testing.get_max_tensorcore_tflops("fp16", 1980000) == pytest.approx(132 * 4 * 1980000 * 512e-9)
    monkeypatch.setattr(sites, "active_target", lambda: GPUTarget("interpreter", 0, 32))
    assert active.get_current_target() == GPUTarget("cuda", 90, 32)  # the device's own capability


def test_nvidia_device_interface_without_torch(gpu):
    device = driver.active.get_device_interface()
    assert isinstance(device, cuda_driver.CudaDeviceInterface)
    start, end = device.Event(enable_timing=True), device.Event(enable_timing=True)
    assert gpu.context == 0xC0  # the primary context was made current
    start.record()
    time.sleep(0.005)
    end.record()
    device.synchronize()
    assert 5.0 <= start.elapsed_time(end) < 1000.0
    assert device.get_device_capability() == (9, 0) and device.device_count() == 1
    del start, end
    assert gpu.events == {}

    flush = driver.active.get_empty_cache_for_benchmark()
    driver.active.clear_cache(flush)
    assert gpu.memsets == [(flush.pointer, 0, 256 * 1024 * 1024)]
    del flush
    assert gpu.memory == {}


def test_do_bench_through_the_simulated_gpu(gpu):
    median = testing.do_bench(lambda: time.sleep(0.001), warmup=1, rep=5, quantiles=[0.5])
    assert 1.0 <= median < 100.0
    assert gpu.memsets and all(size == 256 * 1024 * 1024 for _, _, size in gpu.memsets)


def test_load_binary(gpu):
    utils = driver.active.utils
    module, function, n_regs, n_spills, n_max_threads = utils.load_binary("kernel", b"cubin", 1024, 0)
    assert (module, function, n_regs, n_spills, n_max_threads) == (0xAB, 0xF0, 96, 8, 512)
    assert gpu.function_settings == []
    utils.load_binary("kernel", b"cubin", 100 * 1024, 0)
    assert gpu.function_settings == [(0xF0, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 232448 - 1024)]
    with pytest.raises(OutOfResources, match="shared memory, Required: 300000, Hardware limit: 232448"):
        utils.load_binary("kernel", b"cubin", 300000, 0)


# ---------------------------------------------------------------- on a GPU


@pytest.mark.gpu
def test_gpu_driver_matches_torch():
    torch = pytest.importorskip("torch")
    active = driver.active
    assert isinstance(active, cuda_driver.NvidiaDriver)
    major, minor = torch.cuda.get_device_capability()
    assert active.get_current_target() == GPUTarget("cuda", major * 10 + minor, 32)
    properties = active.utils.get_device_properties(0)
    torch_properties = torch.cuda.get_device_properties(0)
    assert properties["multiprocessor_count"] == torch_properties.multi_processor_count
    assert properties["warpSize"] == 32 and properties["max_shared_mem"] >= 48 * 1024
    assert properties["mem_bus_width"] > 0 and properties["mem_clock_rate"] > 0
    assert active.get_current_stream() == torch.cuda.current_stream().cuda_stream
    assert active.get_device_interface() is torch.cuda
    assert str(active.get_active_torch_device()) == "cuda:0"
