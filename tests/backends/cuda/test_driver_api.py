"""The CUDA driver binding: against a simulated driver library here (checking
marshalling, error messages, the Device record), and against the real driver
where a GPU is present (`gpu` marker)."""

from __future__ import annotations

import ctypes
import pickle
import re
import struct
from pathlib import Path

import numpy as np
import pytest

import tritone
from tritone.backends.cuda.bindings import driver_api, libs
from tritone.backends.cuda.bindings.driver_api import CudaDriver, CudaError, DeviceAttribute, JitOption, MemoryType
from tritone.errors import TritonError
from tritone.platform import SimulatedLibrary

target = SimulatedLibrary.target

ERRORS = {
    1: ("CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    100: ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
    218: ("CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"),
    500: ("CUDA_ERROR_NOT_FOUND", "named symbol not found"),
    700: ("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"),
}
H200 = {
    DeviceAttribute.COMPUTE_CAPABILITY_MAJOR: 9, DeviceAttribute.COMPUTE_CAPABILITY_MINOR: 0,
    DeviceAttribute.MULTIPROCESSOR_COUNT: 132, DeviceAttribute.WARP_SIZE: 32,
    DeviceAttribute.MAX_THREADS_PER_BLOCK: 1024, DeviceAttribute.MAX_REGISTERS_PER_BLOCK: 65536,
    DeviceAttribute.MAX_REGISTERS_PER_MULTIPROCESSOR: 65536, DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK: 49152,
    DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 232448,
    DeviceAttribute.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: 233472, DeviceAttribute.L2_CACHE_SIZE: 62914560,
}


class SimulatedDriver:
    """A driver library whose device memory is host bytearrays: enough to check
    that every argument crosses ctypes the way the C API expects."""

    def __init__(self, *, init_code: int = 0):
        self.init_code = init_code
        self.memory: dict[int, bytearray] = {}
        self.next_address = 0x7F00_0000_0000
        self.load_code = 0
        self.jit_log = b""
        self.library = SimulatedLibrary({
            "cuInit": lambda flags: self.init_code,
            "cuDriverGetVersion": self.write(12080),
            "cuDeviceGetCount": self.write(1),
            "cuDeviceGet": lambda out, ordinal: self.store(out, 0) if ordinal == 0 else 101,
            "cuDeviceGetName": self.device_name,
            "cuDeviceGetAttribute": lambda out, attribute, device: self.store(out, H200[attribute]),
            "cuDeviceTotalMem_v2": lambda out, device: self.store(out, 150_000_000_000),
            "cuMemAlloc_v2": self.alloc,
            "cuMemFree_v2": lambda pointer: 0 if self.memory.pop(pointer, None) is not None else 1,
            "cuMemcpyHtoD_v2": self.host_to_device,
            "cuMemcpyDtoH_v2": self.device_to_host,
            "cuMemsetD8_v2": self.memset,
            "cuPointerGetAttribute": self.pointer_attribute,
            "cuModuleLoadDataEx": self.load_module,
            "cuModuleGetFunction": lambda out, module, name: self.store(out, 0xF0) if name == b"present" else 500,
            "cuLaunchKernel": lambda *arguments: 0,
            "cuStreamCreate": lambda out, flags: self.store(out, 0x5EA),
            "cuEventCreate": lambda out, flags: self.store(out, 0xE0 + flags),
            "cuEventElapsedTime": lambda out, start, end: self.store(out, 1.25),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor": lambda out, function, block, shared: self.store(out, 8),
            "cuGetErrorName": lambda code, out: self.error_text(code, out, 0),
            "cuGetErrorString": lambda code, out: self.error_text(code, out, 1),
        })

    @staticmethod
    def store(out, value) -> int:
        target(out).value = value
        return 0

    def write(self, value):
        return lambda out: self.store(out, value)

    @staticmethod
    def device_name(buffer, length, device) -> int:
        name = b"NVIDIA H200"
        assert length >= len(name) + 1 and device == 0
        buffer.value = name
        return 0

    @staticmethod
    def error_text(code, out, which) -> int:
        if code not in ERRORS:
            return 1
        target(out).value = ERRORS[code][which].encode()
        return 0

    def alloc(self, out, nbytes) -> int:
        address = self.next_address
        self.next_address += (nbytes + 255) // 256 * 256
        self.memory[address] = bytearray(nbytes)
        return self.store(out, address)

    def host_to_device(self, destination, source, nbytes) -> int:
        self.memory[destination][:nbytes] = ctypes.string_at(source, nbytes)
        return 0

    def device_to_host(self, destination, source, nbytes) -> int:
        ctypes.memmove(destination, bytes(self.memory[source][:nbytes]), nbytes)
        return 0

    def memset(self, pointer, value, nbytes) -> int:
        self.memory[pointer][:nbytes] = bytes([value]) * nbytes
        return 0

    def pointer_attribute(self, out, attribute, pointer) -> int:
        if attribute != 2 or pointer not in self.memory:
            return 1
        # CU_POINTER_ATTRIBUTE_MEMORY_TYPE writes a 32-bit enum.
        ctypes.memmove(out, struct.pack("<I", MemoryType.DEVICE), 4)
        return 0

    def load_module(self, out, image, count, keys, values) -> int:
        options = {keys[index]: values[index] for index in range(count)}
        if self.load_code:
            size = options[JitOption.ERROR_LOG_BUFFER_SIZE_BYTES]
            ctypes.memmove(options[JitOption.ERROR_LOG_BUFFER], self.jit_log[: size - 1] + b"\0",
                           min(len(self.jit_log) + 1, size))
            return self.load_code
        return self.store(out, 0xAB)


@pytest.fixture
def simulated() -> SimulatedDriver:
    return SimulatedDriver()


@pytest.fixture
def driver(simulated) -> CudaDriver:
    return CudaDriver(simulated.library, "/simulated/libcuda.so.1")


def test_no_device_names_the_call_and_suggests_checking_the_driver():
    driver = CudaDriver(SimulatedDriver(init_code=100).library)
    with pytest.raises(CudaError) as caught:
        driver.init()
    error = caught.value
    assert str(error).startswith("cuInit failed: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected")
    assert "NVIDIA driver" in str(error) and "nvidia-smi" in str(error)
    assert (error.call, error.code, error.name) == ("cuInit", 100, "CUDA_ERROR_NO_DEVICE")
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error) and copy.call == "cuInit"


def test_unknown_error_code_still_names_the_call(driver):
    with pytest.raises(CudaError, match=r"cuCtxSynchronize failed: CUDA error 4242 \(4242\)"):
        driver.check("cuCtxSynchronize", 4242)


def test_device_record(driver, simulated):
    device = driver.device(0)
    assert device.name == "NVIDIA H200"
    assert device.capability == (9, 0) and device.arch == 90
    assert device.multiprocessor_count == 132
    assert device.max_shared_memory_per_block_optin == 232448
    assert device.max_registers_per_block == 65536
    assert device.total_memory == 150_000_000_000
    asked = {call[1] for call in simulated.library.cuDeviceGetAttribute.calls}
    assert asked == set(H200)
    assert all(call[2] == 0 for call in simulated.library.cuDeviceGetAttribute.calls)
    assert driver.driver_version() == 12080 and driver.device_count() == 1
    with pytest.raises(CudaError, match="cuDeviceGet failed: CUDA error 101"):
        driver.device(3)


def test_memory_round_trip_through_bytes_bytearray_numpy_and_addresses(driver, simulated):
    rng = np.random.default_rng()
    data = rng.integers(0, 256, size=1000, dtype=np.uint8)
    pointer = driver.memory_alloc(data.nbytes)
    driver.copy_host_to_device(pointer, data.tobytes(), data.nbytes)
    assert bytes(simulated.memory[pointer]) == data.tobytes()
    driver.memset_d8(pointer, 0xA5, 10)
    expected = bytearray(data.tobytes())
    expected[:10] = b"\xa5" * 10
    into_bytearray = bytearray(data.nbytes)
    driver.copy_device_to_host(into_bytearray, pointer, data.nbytes)
    assert into_bytearray == expected
    into_numpy = np.zeros_like(data)
    driver.copy_device_to_host(into_numpy, pointer, data.nbytes)
    assert into_numpy.tobytes() == bytes(expected)
    floats = rng.standard_normal(64).astype(np.float32)
    driver.copy_host_to_device(pointer, floats.ctypes.data, floats.nbytes)
    back = np.empty_like(floats)
    driver.copy_device_to_host(back.ctypes.data, pointer, floats.nbytes)
    np.testing.assert_array_equal(back, floats)
    assert driver.pointer_attribute(2, pointer) == MemoryType.DEVICE
    driver.memory_free(pointer)
    with pytest.raises(CudaError, match="cuMemFree_v2 failed: CUDA_ERROR_INVALID_VALUE"):
        driver.memory_free(pointer)


def test_failed_module_load_carries_the_jit_log(driver, simulated):
    simulated.load_code = 218
    simulated.jit_log = b"ptxas application ptx input, line 12; error   : Unknown symbol 'oops'"
    with pytest.raises(CudaError) as caught:
        driver.module_load_data_ex(b".version 8.0\n.target sm_80\n\0", {JitOption.MAX_REGISTERS: 128})
    message = str(caught.value)
    assert message.startswith("cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (218)")
    assert "Unknown symbol 'oops'" in message
    (_, _, count, keys, values) = simulated.library.cuModuleLoadDataEx.calls[0]
    assert count == 3 and keys[0] == JitOption.MAX_REGISTERS and values[0] == 128
    simulated.load_code = 0
    assert driver.module_load_data_ex(b"\x7fELF") == 0xAB


def test_missing_kernel_is_named(driver):
    assert driver.module_get_function(0xAB, "present") == 0xF0
    with pytest.raises(CudaError, match=r"CUDA_ERROR_NOT_FOUND \(500\): named symbol not found\nkernel 'absent'"):
        driver.module_get_function(0xAB, "absent")


def test_launch_arguments_in_the_c_order(driver, simulated):
    pointer, count = ctypes.c_uint64(0x7F00_0000_1000), ctypes.c_int32(77)
    parameters = (ctypes.c_void_p * 2)(ctypes.addressof(pointer), ctypes.addressof(count))
    driver.launch_kernel(0xF0, (4, 2, 1), (128, 1, 1), 1024, 0x5EA, parameters)
    (call,) = simulated.library.cuLaunchKernel.calls
    assert call[:9] == (0xF0, 4, 2, 1, 128, 1, 1, 1024, 0x5EA)
    assert call[9] is parameters and call[10] is None


def test_streams_events_occupancy(driver):
    assert driver.stream_create() == 0x5EA
    assert driver.event_create(2) == 0xE2
    assert driver.event_elapsed_ms(0xE0, 0xE1) == pytest.approx(1.25)
    assert driver.occupancy_max_active_blocks(0xF0, 256, 0) == 8


def test_function_missing_from_an_old_driver(driver):
    with pytest.raises(TritonError, match="has no cuFuncSetAttribute: it is too old"):
        driver.set_function_attribute(0xF0, 8, 100_000)


def test_driver_initialises_once_and_not_after_a_failure(monkeypatch):
    simulated = SimulatedDriver(init_code=100)
    monkeypatch.setattr(libs, "load_driver", lambda: libs.DriverLibrary(simulated.library, "libcuda.so.1", "test"))
    monkeypatch.setattr(driver_api, "_driver", None)
    with pytest.raises(CudaError, match="CUDA_ERROR_NO_DEVICE"):
        driver_api.driver()
    simulated.init_code = 0
    first = driver_api.driver()
    assert driver_api.driver() is first and first.path == "libcuda.so.1"
    assert len(simulated.library.cuInit.calls) == 2


def test_every_prototype_is_fixed_width():
    allowed = (ctypes.c_int32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint8, ctypes.c_size_t, ctypes.c_void_p,
               ctypes.c_char_p, ctypes.c_float)
    for name, argtypes in driver_api._PROTOTYPES.items():
        for argtype in argtypes:
            base = getattr(argtype, "_type_", None) if issubclass(argtype, ctypes._Pointer) else argtype
            assert base in allowed, f"{name}: {argtype}"


def test_no_platform_dependent_c_integer_types_in_runtime_sources():
    """C long is 32 bits on Windows and 64 on Linux, and c_int/c_uint hide the
    width: the runtime's ctypes code spells every width out."""
    package = Path(tritone.__file__).parent
    sources = [package / "platform.py", *sorted((package / "runtime").glob("*.py"))]
    forbidden = re.compile(r"\bc_(?:u?long(?:long)?|u?int|u?short)\b")
    offenders = [f"{path.name}:{number}: {line.strip()}" for path in sources
                 for number, line in enumerate(path.read_text().splitlines(), 1) if forbidden.search(line)]
    assert not offenders, "\n".join(offenders)


# ---------------------------------------------------------------- the real driver


ADD_SOURCE = """extern "C" __global__ void add_scaled(const float* x, const float* y, float* out, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + alpha * y[i];
}
"""


@pytest.mark.gpu
def test_compile_load_and_launch_on_the_gpu():
    from tritone.backends.cuda.bindings.nvrtc import compile_cuda

    try:
        driver = driver_api.driver()
    except (libs.LibraryNotFound, CudaError) as error:
        pytest.skip(f"no usable GPU: {error}")
    device = driver.device(0)
    context = driver.primary_context_retain(driver.device_get(0))
    driver.context_set_current(context)
    version = driver.driver_version()
    rng = np.random.default_rng()
    n = 10_000 + int(rng.integers(0, 1000))
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    alpha = np.float32(rng.uniform(-2, 2))
    images = {
        "cubin": compile_cuda(ADD_SOURCE, "add.cu", device.arch, driver_version=version).cubin,
        # PTX for an older architecture, JIT-compiled by the driver (how forced targets run).
        "ptx": compile_cuda(ADD_SOURCE, "add.cu", 75, ptx_only=True, driver_version=version).ptx.encode() + b"\0",
    }
    for kind, image in images.items():
        module = driver.module_load_data_ex(image)
        function = driver.module_get_function(module, "add_scaled")
        assert driver.function_attribute(driver_api.FunctionAttribute.NUM_REGS, function) > 0
        pointers = [driver.memory_alloc(4 * n) for _ in range(3)]
        driver.copy_host_to_device(pointers[0], x, 4 * n)
        driver.copy_host_to_device(pointers[1], y, 4 * n)
        driver.memset_d8(pointers[2], 0xFF, 4 * n)  # NaN poison
        assert driver.pointer_attribute(driver_api.PointerAttribute.MEMORY_TYPE, pointers[0]) == MemoryType.DEVICE
        values = [ctypes.c_uint64(pointer) for pointer in pointers] + [ctypes.c_float(alpha), ctypes.c_int32(n)]
        parameters = (ctypes.c_void_p * len(values))(*(ctypes.addressof(value) for value in values))
        stream = driver.stream_create()
        start, end = driver.event_create(), driver.event_create()
        driver.event_record(start, stream)
        driver.launch_kernel(function, ((n + 255) // 256, 1, 1), (256, 1, 1), 0, stream, parameters)
        driver.event_record(end, stream)
        driver.stream_synchronize(stream)
        assert driver.event_elapsed_ms(start, end) >= 0
        out = np.empty_like(x)
        driver.copy_device_to_host(out, pointers[2], 4 * n)
        np.testing.assert_allclose(out, x + alpha * y, rtol=1e-6, atol=1e-6, err_msg=kind)
        assert driver.occupancy_max_active_blocks(function, 256) >= 1
        for pointer in pointers:
            driver.memory_free(pointer)
        driver.event_destroy(start)
        driver.event_destroy(end)
        driver.stream_destroy(stream)
        driver.module_unload(module)
