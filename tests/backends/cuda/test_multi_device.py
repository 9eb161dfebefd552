"""Several GPUs in one process. Against a simulated driver with two devices
(each thread has its own current context, a module belongs to the context it
was loaded in, and launching a function on another device's context fails as
CUDA's does), kernels really compiled by NVRTC: launches follow the current
device, modules and plans are per device, mixed architectures get one binary
each, autotuning choices are per device, `driver.active` gets and sets the
current device, pointers of another GPU are refused naming the kernel and the
argument, and two threads launch on two devices at once. On a machine with two
GPUs or more (`multi_gpu` marker) the same with torch tensors and results
checked."""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone import knobs
from tritone.backends import sites
from tritone.backends.cuda import build
from tritone.backends.cuda import driver as cuda_driver
from tritone.backends.cuda.bindings import driver_api
from tritone.backends.cuda.bindings.driver_api import (
    CudaDriver,
    DeviceAttribute,
    FunctionAttribute,
    MemoryType,
    PointerAttribute,
)
from tritone.compiler import compiler as compiler_module
from tritone.ir.target import GPUTarget
from tritone.platform import SimulatedLibrary
from tritone.runtime.driver import driver

_target = SimulatedLibrary.target
_INVALID_VALUE = 1
_INVALID_CONTEXT = 201
_INVALID_HANDLE = 400


@triton.jit
def scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * alpha + y, mask=mask)


class TwoGPUs:
    """A CUDA driver seeing `len(archs)` GPUs, device i of compute capability
    `archs[i]`. The current context is per thread, as the driver's is; modules
    belong to the device whose context was current when they were loaded; a
    launch of a function of another device's module returns
    CUDA_ERROR_INVALID_HANDLE and one without a current context
    CUDA_ERROR_INVALID_CONTEXT. `memory` maps device addresses to the device
    owning them, for cuPointerGetAttribute (`managed` holds those of managed
    memory). `loads` records (device, image) and `launches` one dict per
    successful launch (device, thread, grid, argument bytes); `refused` counts
    launches that failed."""

    def __init__(self, archs: tuple[int, ...] = (90, 80)):
        self.archs = archs
        self.local = threading.local()
        self.lock = threading.Lock()
        self.loads: list[tuple[int, bytes]] = []
        self.launches: list[dict] = []
        self.refused = 0
        self.memory: dict[int, int] = {}
        self.managed: set[int] = set()
        self._function_device: dict[int, int] = {}
        self.library = SimulatedLibrary({
            "cuInit": lambda flags: 0,
            "cuDriverGetVersion": lambda out: self._store(out, 13000),
            "cuDeviceGetCount": lambda out: self._store(out, len(archs)),
            "cuDeviceGet": lambda out, ordinal: (self._store(out, ordinal) if 0 <= ordinal < len(archs)
                                                 else _INVALID_VALUE),
            "cuDeviceGetAttribute": self._device_attribute,
            "cuDevicePrimaryCtxRetain": lambda out, device: self._store(out, 0xC0 + device),
            "cuCtxGetCurrent": lambda out: self._store(out, self._context()),
            "cuCtxSetCurrent": self._set_current,
            "cuCtxGetDevice": self._context_device,
            "cuModuleLoadDataEx": self._load,
            "cuModuleGetFunction": self._get_function,
            "cuFuncGetAttribute": lambda out, attribute, function: self._store(out, {
                FunctionAttribute.NUM_REGS: 32, FunctionAttribute.MAX_THREADS_PER_BLOCK: 1024}.get(attribute, 0)),
            "cuFuncSetAttribute": lambda *arguments: 0,
            "cuPointerGetAttribute": self._pointer_attribute,
            "cuLaunchKernel": self._launch,
            "cuGetErrorName": lambda code, out: 1,
            "cuGetErrorString": lambda code, out: 1,
        })
        self.driver = CudaDriver(self.library, "/simulated/libcuda.so.1")

    @staticmethod
    def _store(out, value) -> int:
        _target(out).value = value
        return 0

    def _context(self) -> int | None:
        return getattr(self.local, "context", None)

    def _set_current(self, context) -> int:
        self.local.context = getattr(context, "value", context)
        return 0

    def _context_device(self, out) -> int:
        context = self._context()
        return self._store(out, context - 0xC0) if context else _INVALID_CONTEXT

    def _device_attribute(self, out, attribute, device) -> int:
        answers = {DeviceAttribute.COMPUTE_CAPABILITY_MAJOR: self.archs[device] // 10,
                   DeviceAttribute.COMPUTE_CAPABILITY_MINOR: self.archs[device] % 10,
                   DeviceAttribute.MAX_REGISTERS_PER_BLOCK: 65536,
                   DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 166912}
        return self._store(out, answers.get(attribute, 0))

    def _load(self, out, image, count, keys, values) -> int:
        context = self._context()
        if not context:
            return _INVALID_CONTEXT
        with self.lock:
            self.loads.append((context - 0xC0, bytes(image)))
            return self._store(out, 0x1000 * len(self.loads) + (context - 0xC0))

    def _get_function(self, out, module, name) -> int:
        module = getattr(module, "value", module)
        with self.lock:
            self._function_device[module + 1] = module % 0x1000
        return self._store(out, module + 1)

    def _pointer_attribute(self, out, attribute, pointer) -> int:
        if pointer not in self.memory:
            return _INVALID_VALUE
        answers = {PointerAttribute.DEVICE_POINTER: pointer, PointerAttribute.MEMORY_TYPE: MemoryType.DEVICE,
                   PointerAttribute.IS_MANAGED: int(pointer in self.managed),
                   PointerAttribute.DEVICE_ORDINAL: self.memory[pointer]}
        return self._store(out, answers[attribute])

    def _launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, parameters, extra) -> int:
        context = self._context()
        device = self._function_device[getattr(function, "value", function)]
        with self.lock:
            if not context:
                self.refused += 1
                return _INVALID_CONTEXT
            if context - 0xC0 != device:
                self.refused += 1
                return _INVALID_HANDLE
            self.launches.append({
                "device": device, "thread": threading.get_ident(), "grid": (gx, gy, gz),
                "stream": getattr(stream, "value", stream) or 0,
                "arguments": [ctypes.string_at(parameters[i], 8) for i in range(5)]})
        return 0

    def allocate(self, device: int, count: int = 3) -> list[int]:
        """`count` fresh 256-byte aligned addresses in the memory of `device`."""
        rng = np.random.default_rng()
        addresses = [int(a) * 256 + (device + 1) * 2**40 for a in rng.choice(2**30, size=count, replace=False)]
        self.memory.update(dict.fromkeys(addresses, device))
        return addresses


class FakeCudaTensor:
    """A float32 tensor of cuda:`device` at `address` as the launcher sees one."""

    def __init__(self, address: int, device: int):
        self.address = address
        self.dtype = torch.float32
        self.device = torch.device("cuda", device)

    def data_ptr(self) -> int:
        return self.address


class DriverPlacedArray:
    """A float32 array that does not say where it lives (no `device`): only the driver can place its memory."""

    def __init__(self, address: int):
        self.address = address
        self.dtype = torch.float32

    def data_ptr(self) -> int:
        return self.address


def decoded(launch: dict) -> tuple:
    """(x, y, out, n, alpha) as a launch of scale_add passed them."""
    raw = launch["arguments"]
    return (*(struct.unpack_from("<Q", raw[i])[0] for i in range(3)), struct.unpack_from("<i", raw[3])[0],
            struct.unpack_from("<f", raw[4])[0])


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One kernel cache for the module: each architecture compiles once."""
    return tmp_path_factory.mktemp("multi-device-cache")


def install(monkeypatch, cache_dir, archs: tuple[int, ...]) -> TwoGPUs:
    """`TwoGPUs(archs)` as this process's CUDA driver, the GPU decision made afresh."""
    for group, name in [(knobs.runtime, "interpret"), (knobs.compilation, "always_compile"),
                        (knobs.nvidia, "target"), (knobs.cache, "dir")]:
        delattr(group, name)
    for variable in ("TRITON_INTERPRET", "TRITONE_INTERPRET", "TRITONE_TARGET", "TRITON_ALWAYS_COMPILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache_dir))
    gpus = TwoGPUs(archs)
    monkeypatch.setattr(driver_api, "_driver", gpus.driver)
    monkeypatch.setattr(cuda_driver, "_devices", {})
    sites.reset_active_target()
    build._driver_version.cache_clear()
    scale_add.device_caches.clear()
    return gpus


@pytest.fixture
def two_gpus(monkeypatch, cache_dir):
    """Two GPUs of compute capability 9.0 and 8.0."""
    yield install(monkeypatch, cache_dir, (90, 80))
    sites.reset_active_target()
    build._driver_version.cache_clear()


@pytest.fixture
def twin_gpus(monkeypatch, cache_dir):
    """Two GPUs of compute capability 9.0."""
    yield install(monkeypatch, cache_dir, (90, 90))
    sites.reset_active_target()
    build._driver_version.cache_clear()


def launch_on(gpus: TwoGPUs, device: int, n: int, alpha: float) -> tuple:
    """Launch scale_add on fresh tensors of `device` (the current device); the arguments passed."""
    x, y, out = (FakeCudaTensor(a, device) for a in gpus.allocate(device))
    scale_add[(triton.cdiv(n, 128),)](x, y, out, n, alpha, BLOCK=128)
    return x.address, y.address, out.address, n, alpha


def test_alternating_launches_load_once_per_device_and_keep_plans_per_device(twin_gpus):
    rng = np.random.default_rng()
    expected = []
    for device in [0, 1, 0, 1, 1, 0]:
        driver.active.set_current_device(device)
        # Odd sizes: one specialization (n not divisible by 16), so one binary.
        n, alpha = int(rng.integers(500, 50_000)) * 2 + 1, float(np.float32(rng.uniform(0.5, 2.0)))
        expected.append((device, launch_on(twin_gpus, device, n, alpha)))
    # Every launch ran on the device current then, with its own arguments, and none was refused.
    assert [(launch["device"], decoded(launch)) for launch in twin_gpus.launches] == expected
    assert twin_gpus.refused == 0
    # One module per device, of the same binary; one kernel and one plan per device.
    assert [device for device, _ in twin_gpus.loads] == [0, 1]
    assert twin_gpus.loads[0][1] == twin_gpus.loads[1][1]
    h90 = GPUTarget("cuda", 90, 32)
    assert set(scale_add.device_caches) == {(h90, 0), (h90, 1)}
    kernels = [next(iter(scale_add.device_caches[(h90, device)].values())) for device in (0, 1)]
    assert [kernel._plan.device for kernel in kernels] == [0, 1] and kernels[0].hash == kernels[1].hash
    # The dispatcher's ready entry names its device: the last launch's.
    (entry,) = scale_add.device_caches.ready.values()
    assert entry[1] == 0 and entry[3] is kernels[0]


def test_a_ready_entry_of_device_0_is_not_used_on_device_1(twin_gpus, monkeypatch):
    driver.active.set_current_device(0)
    launch_on(twin_gpus, 0, 4096, 1.5)
    launch_on(twin_gpus, 0, 4096, 1.5)  # the second launch of the same key goes through the dispatcher
    (entry,) = scale_add.device_caches.ready.values()
    assert entry[1] == 0
    driver.active.set_current_device(1)
    arguments = launch_on(twin_gpus, 1, 4096, 1.5)
    assert twin_gpus.launches[-1]["device"] == 1 and decoded(twin_gpus.launches[-1]) == arguments
    assert twin_gpus.refused == 0 and [device for device, _ in twin_gpus.loads] == [0, 1]


def test_alternating_launches_stay_off_the_general_path(twin_gpus, monkeypatch):
    tensors = {device: [FakeCudaTensor(a, device) for a in twin_gpus.allocate(device)] for device in (0, 1)}
    # The general path, twice for device 0: compiling for device 1 forgot its entry.
    for device in (0, 1, 0):
        driver.active.set_current_device(device)
        scale_add[(3,)](*tensors[device], 333, 0.5, BLOCK=128)
    general = []
    key_binder = scale_add._key_binder

    def counted(*args, **kwargs):
        general.append(args)
        return key_binder(*args, **kwargs)

    monkeypatch.setattr(scale_add, "_key_binder", counted)
    order = [0, 1, 1, 0, 1, 0, 0, 1]
    for device in order:
        driver.active.set_current_device(device)
        scale_add[(3,)](*tensors[device], 333, 0.5, BLOCK=128)
    assert general == []  # the dispatcher found each device's own entry
    assert [launch["device"] for launch in twin_gpus.launches[3:]] == order
    assert [decoded(launch)[0] for launch in twin_gpus.launches[3:]] == [tensors[d][0].address for d in order]
    # A new GPU decision: the entries of the old one are not used.
    sites.reset_active_target()
    for device in (0, 1, 0):
        driver.active.set_current_device(device)
        scale_add[(3,)](*tensors[device], 333, 0.5, BLOCK=128)
    assert len(general) == 2 and [launch["device"] for launch in twin_gpus.launches[-3:]] == [0, 1, 0]
    assert twin_gpus.refused == 0


def test_mixed_architectures_get_one_binary_each(two_gpus):
    rng = np.random.default_rng()
    for device in [0, 1, 0, 1]:
        driver.active.set_current_device(device)
        assert driver.active.get_current_target() == GPUTarget("cuda", two_gpus.archs[device], 32)
        launch_on(two_gpus, device, int(rng.integers(500, 50_000)) * 2 + 1, 2.0)
    assert [launch["device"] for launch in two_gpus.launches] == [0, 1, 0, 1] and two_gpus.refused == 0
    by_device = {}
    for (target, device), kernels in scale_add.device_caches.items():
        (kernel,) = kernels.values()
        assert target == GPUTarget("cuda", two_gpus.archs[device], 32) == kernel.target
        assert f".target sm_{two_gpus.archs[device]}" in kernel.asm["ptx"]
        by_device[device] = kernel
    assert by_device[0].hash != by_device[1].hash
    # Each device loaded the binary compiled for its own architecture, once.
    assert two_gpus.loads == [(0, by_device[0].asm["cubin"]), (1, by_device[1].asm["cubin"])]
    assert by_device[0].asm["cubin"] != by_device[1].asm["cubin"]
    # Triton's per-device view, whichever device is current.
    for device in (0, 1):
        entry = scale_add.device_caches[device]
        assert entry.target == GPUTarget("cuda", two_gpus.archs[device], 32)
        assert list(entry.kernel_cache.values()) == [by_device[device]]


def test_the_disk_cache_keys_on_the_architecture(two_gpus, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "fresh"))
    compiled = []
    real_compile = build.compile_kernel

    def counting(*args, **kwargs):
        binary = real_compile(*args, **kwargs)
        compiled.append(binary.from_cache)
        return binary

    monkeypatch.setattr(build, "compile_kernel", counting)
    for device in [0, 1]:
        driver.active.set_current_device(device)
        launch_on(two_gpus, device, 1000, 1.0)
    # Two compilations, neither found in the cache the other wrote.
    assert compiled == [False, False]
    scale_add.device_caches.clear()
    for device in [0, 1]:
        driver.active.set_current_device(device)
        launch_on(two_gpus, device, 1000, 1.0)
    assert compiled == [False, False, True, True]


def test_launches_follow_torch_s_current_device_and_stream(two_gpus, monkeypatch):
    # torch with CUDA initialised, simulated: its current device is per thread and
    # set_device makes that device's primary context current, as cudaSetDevice does.
    local = threading.local()

    def set_device(device: int) -> None:
        local.device = device
        two_gpus.driver.context_set_current(0xC0 + device)

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: getattr(local, "device", 0))
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: getattr(local, "device", 0), raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0x5000 + device, raising=False)
    sites.reset_active_target()
    for device in [1, 0, 0, 1, 0]:
        set_device(device)
        assert sites.launch_site()[1] == device
        launch_on(two_gpus, device, 777, 1.0)
    assert [(launch["device"], launch["stream"]) for launch in two_gpus.launches] == [
        (device, 0x5000 + device) for device in [1, 0, 0, 1, 0]]
    assert two_gpus.refused == 0 and sorted(device for device, _ in two_gpus.loads) == [0, 1]


def test_a_pointer_on_another_gpu_names_the_kernel_and_the_argument(two_gpus):
    driver.active.set_current_device(0)
    x, out = (FakeCudaTensor(a, 0) for a in two_gpus.allocate(0, 2))
    (elsewhere,) = two_gpus.allocate(1, 1)
    with pytest.raises(ValueError) as caught:
        scale_add[(1,)](x, FakeCudaTensor(elsewhere, 1), out, 100, 1.0, BLOCK=128)
    assert str(caught.value).startswith(
        "kernel scale_add: Pointer argument y_ptr (at 1) is on cuda:1, but the kernel launches on cuda:0")
    assert "torch.cuda.device(1)" in str(caught.value)
    # Memory that only the driver can place is asked about (its device ordinal).
    with pytest.raises(ValueError, match=r"^kernel scale_add: Pointer argument out_ptr \(at 2\) is on cuda:1"):
        scale_add[(1,)](x, x, DriverPlacedArray(elsewhere), 100, 1.0, BLOCK=128)
    assert two_gpus.launches == []
    # Managed memory allocated against device 1 is readable on device 0.
    (managed,) = two_gpus.allocate(1, 1)
    two_gpus.managed.add(managed)
    scale_add[(1,)](x, x, DriverPlacedArray(managed), 100, 1.0, BLOCK=128)
    assert [launch["device"] for launch in two_gpus.launches] == [0]
    assert decoded(two_gpus.launches[0])[2] == managed
    two_gpus.launches.clear()
    # Under device 1 the same arrays launch there.
    driver.active.set_current_device(1)
    y1, out1 = (FakeCudaTensor(a, 1) for a in two_gpus.allocate(1, 2))
    scale_add[(1,)](FakeCudaTensor(elsewhere, 1), y1, DriverPlacedArray(out1.address), 100, 1.0, BLOCK=128)
    assert [launch["device"] for launch in two_gpus.launches] == [1]
    assert decoded(two_gpus.launches[0])[:3] == (elsewhere, y1.address, out1.address)


def test_get_and_set_current_device_without_torch_cuda(two_gpus):
    assert not torch.cuda.is_available()  # this module's simulated tests run where torch has no GPU
    active = driver.active
    assert type(active).__name__ == "NvidiaDriver"
    assert active.get_current_device() == 0  # no context current yet: device 0, as the driver's API says
    active.set_current_device(1)
    assert active.get_current_device() == 1 and two_gpus.driver.context_get_current() == 0xC1
    assert sites.launch_site() == (GPUTarget("cuda", 80, 32), 1)
    active.set_current_device("cuda:0")
    assert active.get_current_device() == 0 and sites.launch_site() == (GPUTarget("cuda", 90, 32), 0)
    active.set_current_device(torch.device("cuda", 1))
    assert active.get_current_device() == 1
    # The current device is the thread's: a new thread starts on device 0.
    seen = []
    thread = threading.Thread(target=lambda: seen.append(driver.active.get_current_device()))
    thread.start()
    thread.join()
    assert seen == [0] and active.get_current_device() == 1


def test_get_and_set_current_device_follow_torch_when_it_has_a_gpu(two_gpus, monkeypatch):
    calls = []
    fake_cuda = SimpleNamespace(current_device=lambda: 1, set_device=lambda device: calls.append(device))
    monkeypatch.setattr(cuda_driver, "_torch_cuda", lambda: fake_cuda)
    assert driver.active.get_current_device() == 1
    driver.active.set_current_device(0)
    assert calls == [0] and two_gpus.driver.context_get_current() == 0  # torch's business, not the driver's


def test_autotuning_choices_are_per_device(two_gpus):
    # Device 0 finds BLOCK=256 fastest, device 1 BLOCK=64: the timings are the current device's.
    timings = {0: {64: 3.0, 256: 1.0}, 1: {64: 1.0, 256: 3.0}}
    blocks_of_grid = {16: 64, 4: 256}  # 1000 elements
    timed = []

    def do_bench(kernel_call, quantiles=None):
        kernel_call()
        launch = two_gpus.launches[-1]
        block = blocks_of_grid[launch["grid"][0]]
        timed.append((launch["device"], block))
        return [timings[driver.active.get_current_device()][block]] * len(quantiles or [0])

    tuned = triton.autotune([triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 256})], key=["n"],
                            do_bench=do_bench)(triton.jit(scale_add.fn))

    def run(device):
        driver.active.set_current_device(device)
        x, y, out = (FakeCudaTensor(a, device) for a in two_gpus.allocate(device))
        tuned[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, y, out, 1000, 1.0)
        return tuned.best_config.kwargs["BLOCK"], two_gpus.launches[-1]

    best, launch = run(0)
    assert best == 256 and launch["device"] == 0 and launch["grid"] == (4, 1, 1)
    assert sorted(timed) == [(0, 64), (0, 256)]
    best, launch = run(1)  # not device 0's choice: tuned again, on device 1
    assert best == 64 and launch["device"] == 1 and launch["grid"] == (16, 1, 1)
    assert sorted(timed) == [(0, 64), (0, 256), (1, 64), (1, 256)]
    best, launch = run(0)  # device 0's choice is kept
    assert best == 256 and launch["device"] == 0 and len(timed) == 4
    assert list(tuned.cache) == [(1000, "torch.float32", "torch.float32", "torch.float32")]
    tuned.cache = {}
    driver.active.set_current_device(1)
    assert tuned.cache == {}


def test_autotuning_choices_on_disk_are_per_architecture(two_gpus, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "fresh"))
    timed = []

    def do_bench(kernel_call, quantiles=None):
        kernel_call()
        timed.append(two_gpus.launches[-1]["device"])
        return [float(two_gpus.launches[-1]["grid"][0])] * len(quantiles or [0])

    def tuned_kernel():
        return triton.autotune([triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 256})], key=["n"],
                               do_bench=do_bench, cache_results=True)(triton.jit(scale_add.fn))

    def run(tuned, device):
        driver.active.set_current_device(device)
        x, y, out = (FakeCudaTensor(a, device) for a in two_gpus.allocate(device))
        tuned[lambda meta: (triton.cdiv(999, meta["BLOCK"]),)](x, y, out, 999, 1.0)

    run(tuned_kernel(), 0)
    assert timed == [0, 0]
    run(tuned_kernel(), 0)  # another autotuner (another process, say) reads device 0's choice
    assert timed == [0, 0]
    run(tuned_kernel(), 1)  # an sm_80 device does not take the sm_90 choice from the disk
    assert timed == [0, 0, 1, 1]


def in_two_threads(work: Callable[[int, threading.Barrier], None]) -> list[BaseException]:
    """Run `work(device, start)` for devices 0 and 1 in a thread each (each waits on `start`
    before its launches, so that they overlap); the errors they raised, for the main thread."""
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(device: int) -> None:
        try:
            work(device, start)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(device,)) for device in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_two_threads_launch_on_two_devices_at_once(two_gpus):
    rng = np.random.default_rng()
    sent: dict[int, list] = {0: [], 1: []}

    def work(device: int, start: threading.Barrier) -> None:
        driver.active.set_current_device(device)
        start.wait()
        for _ in range(40):
            sent[device].append(launch_on(two_gpus, device, int(rng.integers(1, 5_000)) * 2 + 1, 0.5))
        sent[device].append(threading.get_ident())

    assert in_two_threads(work) == []
    assert two_gpus.refused == 0
    for device in (0, 1):
        ident = sent[device].pop()
        mine = [launch for launch in two_gpus.launches if launch["thread"] == ident]
        assert all(launch["device"] == device for launch in mine)
        assert [decoded(launch) for launch in mine] == sent[device]
    assert sorted(device for device, _ in two_gpus.loads) == [0, 1]
    assert {site[1] for site in scale_add.device_caches} == {0, 1}


def test_two_threads_launch_one_autotuned_kernel_on_two_devices(two_gpus):
    # Device 0 prefers BLOCK=256 and device 1 BLOCK=64; each thread has its own size.
    prefers = {0: 256, 1: 64}

    def do_bench(kernel_call, quantiles=None):
        kernel_call()
        launch = two_gpus.launches[-1]
        sizes = {launch["grid"][0] * block: block for block in (64, 256)}
        block = next(block for size, block in sizes.items() if size - block < decoded(launch)[3] <= size)
        return [1.0 if block == prefers[launch["device"]] else 2.0] * len(quantiles or [0])

    tuned = triton.autotune([triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 256})], key=["n"],
                            do_bench=do_bench)(triton.jit(scale_add.fn))
    sizes = {0: 3001, 1: 5003}

    def work(device: int, start: threading.Barrier) -> None:
        driver.active.set_current_device(device)
        x, y, out = (FakeCudaTensor(a, device) for a in two_gpus.allocate(device))
        start.wait()
        for _ in range(30):
            tuned[lambda meta: (triton.cdiv(sizes[device], meta["BLOCK"]),)](x, y, out, sizes[device], 1.0)

    assert in_two_threads(work) == [] and two_gpus.refused == 0
    for device in (0, 1):
        mine = [launch for launch in two_gpus.launches if launch["device"] == device]
        assert {decoded(launch)[3] for launch in mine} == {sizes[device]}
        # After tuning, every launch used the device's own choice.
        assert mine[-30:] == [launch for launch in mine[-30:]
                              if launch["grid"][0] == triton.cdiv(sizes[device], prefers[device])]


def test_forgetting_the_hot_entry_never_empties_the_list_a_dispatcher_reads(twin_gpus):
    # A dispatcher checks `hot and hot[0] is its entry`; another thread compiling
    # (which forgets the launchers) between the two checks must not make hot[0] fail.
    caches = scale_add.device_caches
    launch_on(twin_gpus, 0, 999, 1.0)
    entry = next(iter(caches.ready.values()))
    caches.hot[:] = [entry]
    caches.for_site((GPUTarget("cuda", 90, 32), 7))[("another", "kernel")] = None
    assert caches.ready == {} and caches.hot == [None]


def test_compile_is_not_repeated_per_launch_on_either_device(twin_gpus, monkeypatch):
    for device in (0, 1):
        driver.active.set_current_device(device)
        launch_on(twin_gpus, device, 5000, 1.0)
    monkeypatch.setattr(compiler_module, "compile", lambda *args, **kwargs: pytest.fail("compiled again"))
    for device in (1, 0, 1):
        driver.active.set_current_device(device)
        launch_on(twin_gpus, device, 5000, 1.0)
    assert [launch["device"] for launch in twin_gpus.launches] == [0, 1, 1, 0, 1]


# ---------------------------------------------------------------- two real GPUs


def reference(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * alpha + y


def run_scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.full_like(x, float("nan"))
    scale_add[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), alpha, BLOCK=256)
    return out


@pytest.fixture
def real_gpus(monkeypatch):
    """The real driver with the GPU decision made afresh and no interpreter knob, two GPUs or more."""
    for variable in ("TRITON_INTERPRET", "TRITONE_INTERPRET", "TRITONE_TARGET"):
        monkeypatch.delenv(variable, raising=False)
    for group, name in [(knobs.runtime, "interpret"), (knobs.nvidia, "target")]:
        delattr(group, name)
    sites.reset_active_target()
    scale_add.device_caches.clear()
    yield torch.cuda.device_count()
    sites.reset_active_target()


@pytest.mark.multi_gpu
def test_alternating_devices_from_one_thread(real_gpus):
    for device in [0, 1, 0, 1]:
        with torch.cuda.device(device):
            x, y = torch.rand(10_000, device="cuda"), torch.rand(10_000, device="cuda")
            out = run_scale_add(x, y, 1.5)
            assert out.device == torch.device("cuda", device)
            torch.testing.assert_close(out, reference(x, y, 1.5))
    assert {site[1] for site in scale_add.device_caches} == {0, 1}


@pytest.mark.multi_gpu
def test_tensors_on_cuda_1_under_torch_cuda_device_1(real_gpus):
    x, y = torch.rand(4097, device="cuda:1"), torch.rand(4097, device="cuda:1")
    with torch.cuda.device(1):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            out = run_scale_add(x, y, -0.5)
        stream.synchronize()
    torch.testing.assert_close(out, reference(x, y, -0.5))
    with pytest.raises(ValueError, match=r"^kernel scale_add: Pointer argument x_ptr \(at 0\) is on cuda:1, but "
                                         r"the kernel launches on cuda:0"):
        with torch.cuda.device(0):
            run_scale_add(x, y, 1.0)


@pytest.mark.multi_gpu
def test_two_threads_on_two_devices(real_gpus):
    results = {}

    def work(device: int, start: threading.Barrier) -> None:
        torch.cuda.set_device(device)
        x, y = torch.rand(100_000, device="cuda"), torch.rand(100_000, device="cuda")
        start.wait()
        outs = [run_scale_add(x, y, float(i)) for i in range(50)]
        torch.cuda.synchronize()
        results[device] = (x, y, outs)

    assert in_two_threads(work) == []
    for device, (x, y, outs) in results.items():
        for i, out in enumerate(outs):
            assert out.device == torch.device("cuda", device)
            torch.testing.assert_close(out, reference(x, y, float(i)))


@pytest.mark.multi_gpu
def test_an_autotuned_kernel_is_tuned_per_device(real_gpus):
    tuned_on = []

    def do_bench(kernel_call, quantiles=None):
        kernel_call()
        tuned_on.append(torch.cuda.current_device())
        return [1.0] * len(quantiles or [0])

    tuned = triton.autotune([triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 512})], key=["n"],
                            do_bench=do_bench)(triton.jit(scale_add.fn))
    for device in [0, 1, 0]:
        with torch.cuda.device(device):
            x, y = torch.rand(3000, device="cuda"), torch.rand(3000, device="cuda")
            out = torch.empty_like(x)
            tuned[lambda meta: (triton.cdiv(3000, meta["BLOCK"]),)](x, y, out, 3000, 2.0)
            torch.testing.assert_close(out, reference(x, y, 2.0))
    assert tuned_on == [0, 0, 1, 1]


SPLIT_MODEL_SCRIPT = r"""
import sys
import torch
import triton

assert triton.__name__ == "tritone", triton.__file__
launches = []
triton.knobs.compilation.listener = lambda *args, **kwargs: launches.append(torch.cuda.current_device())
torch._inductor.config.compile_threads = 1  # compile in this process, where the listener sees it


class Split(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.first = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.LayerNorm(512)).to("cuda:0")
        self.second = nn.Sequential(nn.Linear(512, 128), nn.SiLU(), nn.Softmax(dim=-1)).to("cuda:1")

    def forward(self, x):
        return self.second(self.first(x).to("cuda:1"))


torch.manual_seed(0)
model = Split()
x = torch.randn(64, 256, device="cuda:0")
eager = model(x)
compiled = torch.compile(model)
out = compiled(x)
torch.cuda.synchronize(0)
torch.cuda.synchronize(1)
assert out.device == torch.device("cuda", 1), out.device
torch.testing.assert_close(out, eager, rtol=1e-4, atol=1e-5)
print("compilations:", len(launches), "current devices:", sorted(set(launches)))
assert len(launches) >= 2, launches  # at least one kernel for each half
upstream = [name for name, module in sys.modules.items()
            if name == "triton" and getattr(module, "__name__", "") != "tritone"]
assert not upstream, upstream
print("SPLIT MODEL OK")
"""


@pytest.mark.multi_gpu
def test_torch_compile_of_a_model_split_over_two_gpus(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from bench.inductor import worker_env

    env = worker_env("tritone", tmp_path, "cuda")
    done = subprocess.run([sys.executable, "-c", SPLIT_MODEL_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=600, cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0 and "SPLIT MODEL OK" in done.stdout, done.stdout[-3000:] + done.stderr[-5000:]
