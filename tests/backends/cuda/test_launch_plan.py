"""The GPU launcher (backends/cuda/launch_plan.py) against a simulated driver: argument
packing and its reused storage, grid limits, pointer checks, shared memory,
contexts; and on a real GPU (`gpu` marker) a launch with results checked."""

from __future__ import annotations

import ctypes
import struct
import threading
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import tritone
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import launch_plan as launcher_module
from tritone.backends.cuda.bindings.driver_api import (
    CudaDriver,
    CudaError,
    DeviceAttribute,
    FunctionAttribute,
    LaunchConfig,
    MemoryType,
    PointerAttribute,
)
from tritone.backends.cuda.launch_plan import LaunchPlan, LaunchSpec, Parameter, check_grid, plan_for
from tritone.compiler.compiler import ASTSource, make_ir
from tritone.errors import OutOfResources, TritonError
from tritone.ir.target import KernelOptions
from tritone.platform import SimulatedLibrary

target = SimulatedLibrary.target
ERRORS = {1: ("CUDA_ERROR_INVALID_VALUE", "invalid argument"),
          201: ("CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
          719: ("CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure")}


class FakeGPU:
    """A driver library that records loads, attributes and launches (through
    cuLaunchKernel or cuLaunchKernelEx, the record's "call"). Each launch
    snapshots the bytes its parameter pointers point at, since the launcher reuses
    the same storage for every call. `functions` adds or replaces entry points."""

    def __init__(self, *, static_shared: int = 0, max_threads: int = 1024, registers: int = 40,
                 functions: dict | None = None):
        self.current = 0
        self.function_attributes = {
            FunctionAttribute.NUM_REGS: registers, FunctionAttribute.LOCAL_SIZE_BYTES: 16,
            FunctionAttribute.MAX_THREADS_PER_BLOCK: max_threads, FunctionAttribute.SHARED_SIZE_BYTES: static_shared}
        self.device_attributes = {DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 232448,
                                  DeviceAttribute.MAX_REGISTERS_PER_BLOCK: 65536}
        self.device_memory = {0x7F00_0000_0000: 0, 0x7F10_0000_0000: 1}  # address -> device ordinal
        self.launch_codes: list[int] = []
        self.launches: list[dict] = []
        self.images: list[bytes] = []
        self.library = SimulatedLibrary({
            "cuDeviceGet": lambda out, ordinal: self.store(out, ordinal),
            "cuDevicePrimaryCtxRetain": lambda out, device: self.store(out, 0xC0 + device),
            "cuCtxGetCurrent": lambda out: self.store(out, self.current or None),
            "cuCtxSetCurrent": self.set_current,
            "cuModuleLoadDataEx": self.load,
            "cuModuleGetFunction": lambda out, module, name: self.store(out, 0xF0),
            "cuFuncGetAttribute": lambda out, attribute, function: self.store(
                out, self.function_attributes[attribute]),
            "cuFuncSetAttribute": lambda function, attribute, value: 0,
            "cuDeviceGetAttribute": lambda out, attribute, device: self.store(out, self.device_attributes[attribute]),
            "cuPointerGetAttribute": self.pointer_attribute,
            "cuLaunchKernel": self.launch,
            "cuLaunchKernelEx": self.launch_ex,
            "cuGetErrorName": lambda code, out: self.error_text(code, out, 0),
            "cuGetErrorString": lambda code, out: self.error_text(code, out, 1),
            **(functions or {}),
        })
        self.driver = CudaDriver(self.library, "/fake/libcuda.so.1")

    @staticmethod
    def store(out, value) -> int:
        target(out).value = value
        return 0

    def set_current(self, context) -> int:
        self.current = context
        return 0

    def load(self, out, image, count, keys, values) -> int:
        self.images.append(image)
        return self.store(out, 0xAB)

    @staticmethod
    def error_text(code, out, which) -> int:
        if code not in ERRORS:
            return 1
        target(out).value = ERRORS[code][which].encode()
        return 0

    def pointer_attribute(self, out, attribute, pointer) -> int:
        if pointer not in self.device_memory:
            return 1
        answers = {PointerAttribute.DEVICE_POINTER: pointer, PointerAttribute.MEMORY_TYPE: MemoryType.DEVICE,
                   PointerAttribute.IS_MANAGED: 0, PointerAttribute.DEVICE_ORDINAL: self.device_memory[pointer]}
        return self.store(out, answers[attribute])

    def launch(self, *arguments) -> int:
        # The launcher passes ctypes values (c_void_p, c_uint32) and Python ints.
        function, gx, gy, gz, bx, by, bz, shared, stream = (getattr(a, "value", a) for a in arguments[:9])
        parameters, extra = arguments[9:]
        if not all(type(g) is int for g in (gx, gy, gz)):
            # What ctypes says of a numpy integer passed to a function without argtypes.
            raise ctypes.ArgumentError("argument 2: TypeError: Don't know how to convert parameter 2")
        return self.record("cuLaunchKernel", function, (gx, gy, gz), (bx, by, bz), shared, stream, parameters)

    def launch_ex(self, config_address, function, parameters, extra) -> int:
        config = LaunchConfig.from_address(config_address.value)
        return self.record("cuLaunchKernelEx", function.value, (config.grid_x, config.grid_y, config.grid_z),
                           (config.block_x, config.block_y, config.block_z), config.shared_bytes, config.stream,
                           parameters)

    def record(self, call, function, grid, block, shared, stream, parameters) -> int:
        code = self.launch_codes.pop(0) if self.launch_codes else 0
        self.launches.append({
            "call": call, "function": function, "grid": grid, "block": block, "shared": shared,
            "stream": stream or 0,  # a NULL c_void_p reads as None
            "parameters": parameters, "context": self.current, "code": code,
            # The largest slot is 8 bytes; ctypes keeps small values in a 16-byte inline buffer.
            "bytes": [ctypes.string_at(parameters[i], 8) for i in range(len(parameters))],
        })
        return code


def spec_of(params: list[tuple[str, str]], *, shared: int = 0, num_warps: int = 4, name: str = "kernel",
            **fields) -> LaunchSpec:
    return LaunchSpec(name=name, entry=name, parameters=tuple(Parameter(i, n, t) for i, (n, t) in enumerate(params)),
                      image=b"\x7fELF fake cubin", is_ptx=False, num_warps=num_warps, shared=shared,
                      hash=f"{hash((tuple(params), shared, num_warps, name)) & 0xFFFFFFFF:08x}", **fields)


ALL_TYPES = [("x_ptr", "*fp32"), ("n", "i32"), ("big", "i64"), ("huge", "u64"), ("alpha", "fp32"),
             ("BLOCK", "constexpr"), ("flag", "u1"), ("small", "i8"), ("half_word", "u16"), ("h", "fp16"),
             ("b", "bf16"), ("d", "fp64"), ("out_ptr", "*kfp16")]
DECODE = {"*": "<Q", "i32": "<i", "u32": "<I", "i64": "<q", "u64": "<Q", "fp32": "<f", "u1": "<B", "i8": "<b",
          "u16": "<H", "fp16": "<H", "bf16": "<H", "fp64": "<d"}


def decode(snapshot: list[bytes], params) -> list:
    runtime = [p for p in params if p[1] != "constexpr"]
    values = []
    for raw, (_, kind) in zip(snapshot, runtime):
        fmt = DECODE["*" if kind.startswith("*") else kind]
        values.append(struct.unpack_from(fmt, raw)[0])
    return values


@pytest.fixture
def gpu() -> FakeGPU:
    return FakeGPU()


def test_values_are_written_with_the_width_of_their_type(gpu):
    rng = np.random.default_rng()
    plan = LaunchPlan(spec_of(ALL_TYPES), 0, gpu.driver)
    for _ in range(5):
        x_address = int(rng.integers(1, 2**47)) * 16
        values = {
            "x_ptr": x_address, "n": int(rng.integers(-(2**31), 2**31)), "big": int(rng.integers(-(2**63), 2**63)),
            "huge": int(rng.integers(2**63, 2**64, dtype=np.uint64)), "alpha": float(rng.standard_normal()),
            "BLOCK": 128, "flag": bool(rng.integers(0, 2)), "small": int(rng.integers(-128, 128)),
            "half_word": int(rng.integers(0, 2**16)), "h": float(rng.standard_normal() * 100),
            "b": float(rng.standard_normal() * 1e5), "d": float(rng.standard_normal()), "out_ptr": None,
        }
        grid = tuple(int(v) for v in rng.integers(1, 1000, size=3))
        plan.launch(*grid, 0x5EA, *values.values())
        record = gpu.launches[-1]
        assert record["grid"] == grid and record["block"] == (128, 1, 1) and record["stream"] == 0x5EA
        written = decode(record["bytes"], ALL_TYPES)
        expected = [x_address, values["n"], values["big"], values["huge"],
                    struct.unpack("<f", struct.pack("<f", values["alpha"]))[0], int(values["flag"]),
                    values["small"], values["half_word"],
                    int(np.float16(values["h"]).view(np.uint16)),
                    int(torch.tensor(values["b"], dtype=torch.float32).to(torch.bfloat16).view(torch.int16)) & 0xFFFF,
                    values["d"], 0]
        assert written == expected


def test_half_precision_edge_values(gpu):
    params = [("h", "fp16"), ("b", "bf16")]
    plan = LaunchPlan(spec_of(params), 0, gpu.driver)
    for value in [1e6, -1e6, float("inf"), 3.0e38, -0.0]:
        plan.launch(1, 1, 1, 0, value, value)
        h, b = decode(gpu.launches[-1]["bytes"], params)
        with np.errstate(over="ignore"):
            assert h == int(np.float16(value).view(np.uint16))
        assert b == int(torch.tensor(value).to(torch.bfloat16).view(torch.int16)) & 0xFFFF
    plan.launch(1, 1, 1, 0, float("nan"), float("nan"))
    h, b = decode(gpu.launches[-1]["bytes"], params)
    assert h & 0x7C00 == 0x7C00 and h & 0x3FF and b & 0x7F80 == 0x7F80 and b & 0x7F


def test_storage_is_allocated_once_and_reused(gpu):
    plan = LaunchPlan(spec_of([("x_ptr", "*fp32"), ("n", "i32"), ("alpha", "fp32"), ("y_ptr", "*fp32")]),
                      0, gpu.driver)
    addresses = [ctypes.addressof(value) for value in plan.storage]
    assert [plan.parameters[i] for i in range(4)] == addresses
    for n in range(3):
        plan.launch(4, 1, 1, 0, 0x1000, n, 0.5, 0x2000)
    assert all(record["parameters"] is plan.parameters for record in gpu.launches)
    assert [ctypes.addressof(value) for value in plan.storage] == addresses
    assert [plan.parameters[i] for i in range(4)] == addresses
    assert [struct.unpack_from("<i", record["bytes"][1])[0] for record in gpu.launches] == [0, 1, 2]
    assert "ctypes" not in plan.launch.__source__ and "c_void_p" not in plan.launch.__source__


def test_grid_limits(gpu):
    plan = LaunchPlan(spec_of([("n", "i32")], name="my_kernel"), 0, gpu.driver)
    plan.launch(2**31 - 1, 65535, 65535, 0, 5)
    assert gpu.launches[-1]["grid"] == (2**31 - 1, 65535, 65535)
    for empty in [(0, 1, 1), (5, 0, 3), (1, 1, 0)]:
        plan.launch(*empty, 0, 5)
    assert len(gpu.launches) == 1
    with pytest.raises(ValueError, match=r"kernel my_kernel: grid dimension x is 2147483648, more than CUDA's limit"):
        plan.launch(2**31, 1, 1, 0, 5)
    with pytest.raises(ValueError, match="grid dimension y is 65536"):
        plan.launch(1, 65536, 1, 0, 5)
    with pytest.raises(ValueError, match="grid dimension z is 100000"):
        plan.launch(1, 1, 100_000, 0, 5)
    with pytest.raises(ValueError, match="grid dimension x is negative"):
        plan.launch(-1, 1, 1, 0, 5)
    with pytest.raises(TypeError, match="grid dimension y must be an integer, got str"):
        check_grid("my_kernel", 1, "2", 1)
    assert len(gpu.launches) == 1


def test_numpy_grid_and_stream_types(gpu):
    plan = LaunchPlan(spec_of([("n", "i32")], name="my_kernel"), 0, gpu.driver)
    plan.launch(np.int64(3), np.int32(2), 1, 0, 5)
    assert gpu.launches[-1]["grid"] == (3, 2, 1)
    plan.launch(1, 1, 1, 2**63 + 16, 5)
    assert gpu.launches[-1]["stream"] == 2**63 + 16
    with pytest.raises(TypeError, match=r"kernel my_kernel: the stream must be a CUDA stream handle .*got str"):
        plan.launch(1, 1, 1, "stream", 5)
    assert len(gpu.launches) == 2


def test_cpu_tensor_is_refused_naming_the_parameter(gpu):
    plan = LaunchPlan(spec_of([("x_ptr", "*fp32"), ("y_ptr", "*fp32"), ("n", "i32")]), 0, gpu.driver)
    with pytest.raises(ValueError) as caught:
        plan.launch(1, 1, 1, 0, torch.rand(4), None, 4)
    assert str(caught.value) == "Pointer argument x_ptr (at 0) cannot be accessed from Triton (cpu tensor?)"
    assert caught.value.__suppress_context__
    with pytest.raises(ValueError, match=r"^Pointer argument y_ptr \(at 1\) cannot be accessed from Triton "
                                         r"\(cpu tensor\?\): it is a ndarray in host memory"):
        plan.launch(1, 1, 1, 0, None, np.zeros(4, np.float32), 4)
    with pytest.raises(ValueError, match=r"y_ptr \(at 1\) cannot be accessed from Triton \(cpu tensor\?\): "
                                         r"it is a meta tensor"):
        plan.launch(1, 1, 1, 0, None, torch.empty(4, device="meta"), 4)
    assert gpu.launches == []


class ForeignTensor:
    """A tensor of another library: `data_ptr()` and a `device`."""

    def __init__(self, address: int, device):
        self.address = address
        self.device = device

    def data_ptr(self) -> int:
        return self.address


class PinnedHostTensor(ForeignTensor):
    """A CPU tensor in page-locked memory, which the GPU reaches through its driver address."""

    def __init__(self, address: int, pinned: bool):
        super().__init__(address, torch.device("cpu"))
        self.pinned = pinned

    def is_pinned(self) -> bool:
        return self.pinned


def test_pinned_cpu_tensors_are_passed_by_their_device_address(gpu):
    plan = LaunchPlan(spec_of([("x_ptr", "*fp32")]), 0, gpu.driver)
    address = 0x7F00_0000_0400
    gpu.device_memory[address] = 0
    plan.launch(1, 1, 1, 0, PinnedHostTensor(address, pinned=True))
    assert decode(gpu.launches[-1]["bytes"], [("x_ptr", "*fp32")]) == [address]
    # Pageable CPU memory, and pinned memory the driver does not know, are refused.
    for tensor in (PinnedHostTensor(address, pinned=False), PinnedHostTensor(0x5555_0000, pinned=True)):
        with pytest.raises(ValueError, match=r"x_ptr \(at 0\) cannot be accessed from Triton \(cpu tensor\?\)$"):
            plan.launch(1, 1, 1, 0, tensor)
    assert len(gpu.launches) == 1


class CudaArray:
    """An array offering only `__cuda_array_interface__` (Numba's device arrays)."""

    def __init__(self, address: int):
        self.__cuda_array_interface__ = {"data": (address, False), "shape": (4,), "typestr": "<f4", "version": 3}


def test_pointer_sources(gpu):
    plan = LaunchPlan(spec_of([("x_ptr", "*fp32")]), 0, gpu.driver)
    sources = [
        (ForeignTensor(0x7F00_0000_0100, torch.device("cuda", 0)), 0x7F00_0000_0100),
        (ForeignTensor(0x7F00_0000_0200, SimpleNamespace(id=0)), 0x7F00_0000_0200),   # CuPy's Device
        (CudaArray(0x7F00_0000_0000), 0x7F00_0000_0000),                               # the driver knows it
        (0x1234_5670, 0x1234_5670), (None, 0),
    ]
    for value, address in sources:
        plan.launch(1, 1, 1, 0, value)
        assert decode(gpu.launches[-1]["bytes"], [("x_ptr", "*fp32")]) == [address]
    with pytest.raises(ValueError, match=r"^kernel kernel: Pointer argument x_ptr \(at 0\) is on cuda:1, but the "
                                         r"kernel launches on cuda:0"):
        plan.launch(1, 1, 1, 0, ForeignTensor(0x7F10_0000_0000, torch.device("cuda", 1)))
    # Memory that only the driver can place: asked once, and refused when it is another GPU's.
    with pytest.raises(ValueError, match=r"^kernel kernel: Pointer argument x_ptr \(at 0\) is on cuda:1"):
        plan.launch(1, 1, 1, 0, CudaArray(0x7F10_0000_0000))
    with pytest.raises(ValueError, match=r"x_ptr \(at 0\) cannot be accessed from Triton \(cpu tensor\?\)$"):
        plan.launch(1, 1, 1, 0, CudaArray(0x5555_0000))
    with pytest.raises(TypeError, match=r"x_ptr \(at 0\) must be a tensor.*got str"):
        plan.launch(1, 1, 1, 0, "x")
    with pytest.raises(ValueError, match=r"x_ptr \(at 0\) is the address -5"):
        plan.launch(1, 1, 1, 0, -5)
    with pytest.raises(TypeError, match=r"x_ptr \(at 0\) is a bool"):
        plan.launch(1, 1, 1, 0, True)


def test_scalar_errors_name_the_parameter(gpu):
    params = [("x_ptr", "*fp32"), ("BLOCK", "constexpr"), ("n", "i32"), ("scale", "fp32"), ("flag", "u1"),
              ("count", "u32")]
    plan = LaunchPlan(spec_of(params, name="scale_kernel"), 0, gpu.driver)
    plan.launch(1, 1, 1, 0, None, 64, np.int32(3), np.float32(0.5), np.bool_(True), np.uint32(7))
    assert decode(gpu.launches[-1]["bytes"], params) == [0, 3, 0.5, 1, 7]
    cases = [
        ((None, 64, 2.5, 1.0, True, 1), TypeError, r"argument n \(at 2\) of type i32 must be an integer, got float"),
        ((None, 64, 2**31, 1.0, True, 1), OverflowError, r"argument n \(at 2\) of type i32: 2147483648 is outside"),
        ((None, 64, 1, "fast", True, 1), TypeError, r"argument scale \(at 3\) of type fp32 must be a number"),
        ((None, 64, 1, 1.0, 2, 1), TypeError, r"argument flag \(at 4\) of type u1 must be a bool"),
        ((None, 64, 1, 1.0, True, -1), OverflowError, r"argument count \(at 5\) of type u32: -1 is outside"),
    ]
    for values, error, message in cases:
        with pytest.raises(error, match=message):
            plan.launch(1, 1, 1, 0, *values)
    with pytest.raises(TypeError, match=r"scale_kernel\(\) missing 1 required positional argument: 'count'"):
        plan.launch(1, 1, 1, 0, None, 64, 1, 1.0, True)
    assert len(gpu.launches) == 1


def test_parameter_names_cannot_shadow_the_launcher(gpu):
    params = [("_Lx", "i32"), ("__Lstream", "i32"), ("_Lv0", "*fp32"), ("_Llaunch", "fp32")]
    plan = LaunchPlan(spec_of(params, name="_Lkernel"), 0, gpu.driver)
    plan.launch(3, 1, 1, 0x5EA, 11, 22, 0x40, 1.5)
    record = gpu.launches[-1]
    assert record["grid"] == (3, 1, 1) and record["stream"] == 0x5EA
    assert decode(record["bytes"], params) == [11, 22, 0x40, 1.5]


def test_parameters_named_like_python_builtins_are_packed(gpu):
    # The generated launcher calls `type`; Triton lets a kernel parameter have that name.
    params = [("type", "*fp32"), ("len", "i32"), ("isinstance", "fp32")]
    plan = LaunchPlan(spec_of(params), 0, gpu.driver)
    plan.launch(2, 1, 1, 0x5EA, 0x7F00_0000_0000, 7, 0.25)
    assert decode(gpu.launches[-1]["bytes"], params) == [0x7F00_0000_0000, 7, 0.25]


def test_large_shared_memory_opts_in(gpu):
    plan = LaunchPlan(spec_of([("n", "i32")], shared=100_000), 0, gpu.driver)
    assert gpu.library.cuFuncSetAttribute.calls == [(0xF0, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 100_000)]
    plan.launch(1, 1, 1, 0, 1)
    assert gpu.launches[-1]["shared"] == 100_000
    LaunchPlan(spec_of([("n", "i32")], shared=48 * 1024), 0, gpu.driver)
    assert len(gpu.library.cuFuncSetAttribute.calls) == 1
    with_static = FakeGPU(static_shared=40_000)
    LaunchPlan(spec_of([("n", "i32")], shared=10_000), 0, with_static.driver)
    assert with_static.library.cuFuncSetAttribute.calls == [(0xF0, 8, 10_000)]
    with pytest.raises(OutOfResources, match="shared memory, Required: 240000, Hardware limit: 232448"):
        LaunchPlan(spec_of([("n", "i32")], shared=240_000), 0, gpu.driver)


def test_resource_limits_and_unsupported_types(gpu):
    with pytest.raises(OutOfResources, match="threads, Required: 1024, Hardware limit: 512"):
        LaunchPlan(spec_of([("n", "i32")], num_warps=32), 0, FakeGPU(max_threads=512).driver)
    with pytest.raises(OutOfResources, match="registers, Required: 262144"):
        LaunchPlan(spec_of([("n", "i32")], num_warps=32), 0, FakeGPU(registers=256).driver)
    with pytest.raises(TritonError, match="parameter x has type fp8e4nv"):
        LaunchPlan(spec_of([("x", "fp8e4nv")]), 0, gpu.driver)


class _DeviceHalves:
    """A GPU array of fp16 as the launcher sees one: an address the driver knows."""

    dtype = torch.float16

    def __init__(self, address: int):
        self.address = address

    def data_ptr(self) -> int:
        return self.address


def test_host_descriptors_are_passed_as_their_parts(gpu):
    from tritone.tools.tensor_descriptor import TensorDescriptor

    params = [("n", "i32"), ("desc", "tensordesc<fp16[16, 32]>")]
    plan = LaunchPlan(spec_of(params), 0, gpu.driver)
    desc = TensorDescriptor(_DeviceHalves(0x7F00_0000_0000), [70, 90], [96, 1], [16, 32], padding="nan")
    plan.launch(1, 1, 1, 0, 5, desc)
    parts = [("n", "i32"), ("base", "*fp16"), ("m", "i32"), ("k", "i32"), ("s0", "i64"), ("s1", "i64"),
             ("nan", "u1")]
    assert decode(gpu.launches[-1]["bytes"], parts) == [5, 0x7F00_0000_0000, 70, 90, 96, 1, 1]
    with pytest.raises(ValueError, match=r"desc\.kernel_arguments\(\)\[0\]"):
        plan.launch(1, 1, 1, 0, 5, TensorDescriptor(_DeviceHalves(0x1230), [70, 90], [96, 1], [16, 32]))


def test_plan_loads_in_the_device_primary_context_and_recovers_it(gpu):
    plan = LaunchPlan(spec_of([("n", "i32")]), 1, gpu.driver)
    assert plan.context == 0xC1 and gpu.current == 0xC1 and gpu.images == [b"\x7fELF fake cubin"]
    assert (plan.n_regs, plan.n_spills, plan.n_max_threads) == (40, 4, 1024)
    gpu.current = 0                       # a new thread has no current context
    gpu.launch_codes = [201]
    plan.launch(1, 1, 1, 0, 7)
    assert [r["code"] for r in gpu.launches] == [201, 0] and gpu.launches[-1]["context"] == 0xC1
    gpu.launch_codes = [719]
    with pytest.raises(CudaError, match=r"CUDA_ERROR_LAUNCH_FAILED.*\nkernel kernel: grid \(2, 1, 1\), 128 threads"):
        plan.launch(2, 1, 1, 0, 7)


def test_plans_are_shared_per_kernel_and_device(gpu):
    spec = spec_of([("n", "i32")])
    assert plan_for(spec, 0, gpu.driver) is plan_for(spec, 0, gpu.driver)
    other = plan_for(spec, 1, gpu.driver)
    assert other is not plan_for(spec, 0, gpu.driver) and other.context == 0xC1
    assert len(gpu.images) == 2


def test_default_stream_without_torch_cuda(gpu, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    plan = LaunchPlan(spec_of([("n", "i32")]), 0, gpu.driver)
    plan.launch(1, 1, 1, None, 3)
    assert gpu.launches[-1]["stream"] == 0
    assert launcher_module.current_stream(0) == 0 and launcher_module.current_device(None) == 0


def test_concurrent_launches_keep_each_call_s_values_together(gpu):
    params = [("a", "i32"), ("b", "i64"), ("c", "fp64")]
    plan = LaunchPlan(spec_of(params), 0, gpu.driver)

    def worker(first: int) -> None:
        for i in range(first, first + 300):
            plan.launch(1, 1, 1, 0, i, 3 * i, i / 2)

    threads = [threading.Thread(target=worker, args=(k * 1000,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    snapshots = [decode(record["bytes"], params) for record in gpu.launches]
    assert len(snapshots) == 1200 and all(b == 3 * a and c == a / 2 for a, b, c in snapshots)


@tritone.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


def test_spec_from_a_compiled_kernel():
    source = ASTSource(copy_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr"},
                       {"BLOCK": 64})
    Metadata = namedtuple("Metadata", "name entry num_warps num_ctas shared target launch_pdl launch_cooperative_grid")
    metadata = Metadata("copy_kernel", "copy_kernel", 8, 1, 2048, GPUTarget("cuda", 90, 32), False, False)
    kernel = SimpleNamespace(src=source, metadata=metadata, asm={"cubin": b"\x7fELF", "ptx": "// ptx"}, hash="ab" * 16,
                             name="copy_kernel")
    spec = LaunchSpec.from_kernel(kernel)
    assert spec.parameters == (Parameter(0, "x_ptr", "*fp32"), Parameter(1, "out_ptr", "*fp16"),
                               Parameter(2, "n", "i32"), Parameter(3, "BLOCK", "constexpr"))
    assert (spec.image, spec.is_ptx, spec.block_size, spec.shared, spec.hash) == (
        b"\x7fELF", False, 256, 2048, "ab" * 16)
    kernel.asm = {"ptx": "// ptx"}
    assert LaunchSpec.from_kernel(kernel).image == b"// ptx\0" and LaunchSpec.from_kernel(kernel).is_ptx


# ---------------------------------------------------------------- a real GPU

KERNEL = r"""
extern "C" __global__ void axpy_shared(const float* x, float* out, float alpha, int n, long long offset) {
    extern __shared__ float staged[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    staged[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = alpha * staged[blockDim.x - 1 - threadIdx.x] + (float)offset;
}
"""


@pytest.mark.gpu
def test_launch_on_the_gpu():
    from tritone.backends.cuda.bindings import driver_api
    from tritone.backends.cuda.bindings.nvrtc import compile_cuda

    driver = driver_api.driver()
    arch = driver.device(0).arch
    cubin = compile_cuda(KERNEL, "axpy.cu", arch, driver_version=driver.driver_version()).cubin
    params = [("x", "*fp32"), ("out", "*fp32"), ("alpha", "fp32"), ("n", "i32"), ("BLOCK", "constexpr"),
              ("offset", "i64")]
    # 64 KB of shared memory per block: only possible after the opt-in.
    spec = LaunchSpec("axpy_shared", "axpy_shared", tuple(Parameter(i, n, t) for i, (n, t) in enumerate(params)),
                      cubin, False, num_warps=32, shared=64 * 1024, hash="gpu-test")
    plan = plan_for(spec, 0, driver)
    rng = np.random.default_rng()
    n = 1024 * 7 + int(rng.integers(1, 1024))
    x_host = rng.standard_normal(n).astype(np.float32)
    if torch.cuda.is_available():
        x = torch.from_numpy(x_host).cuda()
        out = torch.full_like(x, float("nan"))
        plan.launch((n + 1023) // 1024, 1, 1, None, x, out, 1.5, n, 1024, -3)
        torch.cuda.synchronize()
        result = out.cpu().numpy()
        with pytest.raises(ValueError, match=r"Pointer argument x \(at 0\) cannot be accessed from Triton"):
            plan.launch(1, 1, 1, None, x.cpu(), out, 1.5, n, 1024, 0)
    else:
        x, out = driver.memory_alloc(4 * n), driver.memory_alloc(4 * n)
        driver.copy_host_to_device(x, x_host, 4 * n)
        driver.memset_d8(out, 0xFF, 4 * n)
        plan.launch((n + 1023) // 1024, 1, 1, None, x, out, 1.5, n, 1024, -3)
        driver.context_synchronize()
        result = np.empty(n, np.float32)
        driver.copy_device_to_host(result, out, 4 * n)
    padded = np.concatenate([x_host, np.zeros(-n % 1024, np.float32)]).reshape(-1, 1024)[:, ::-1].reshape(-1)[:n]
    np.testing.assert_allclose(result, 1.5 * padded - 3, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- with the real code generator


@tritone.jit
def scalars_kernel(x_ptr, out_ptr, n, scale, offset, big, flag, half, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    value = tl.load(x_ptr + offsets, mask=mask) * scale + offset + (big % 7).to(tl.float32)
    value = tl.where(flag, value, -value) + half.to(tl.float32)
    tl.store(out_ptr + offsets, value, mask=mask)


SCALARS = ASTSource(scalars_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "scale": "fp32",
                                     "offset": "i64", "big": "u64", "flag": "u1", "half": "fp16",
                                     "BLOCK": "constexpr"}, {"BLOCK": 256})


class NoCompiler:
    """Stands for NVRTC where there is none: the code generator's output is all the test needs."""

    version = (12, 9)

    def compile(self, source, name, arch, *, ptx_only=False, options=(), arch_suffix=""):
        from tritone.backends.cuda.bindings.nvrtc import CompileResult

        return CompileResult(cubin=b"\x7fELF", ptx="// ptx", log="", target=f"sm_{arch}", nvrtc_version=self.version)


def build_ir(source: ASTSource, target: GPUTarget):
    """The module IR of `source` after the frontend passes, as `compile` makes it for 8 warps."""
    return make_ir(source, target, {"num_warps": 8})


def generated_binary(source: ASTSource, compiler, cache=None):
    from tritone.backends.cuda import build

    target = GPUTarget("cuda", 86, 32)
    toolchain = build.Toolchain(compiler, 86, False) if compiler is not None else None
    return build.compile_kernel(source.name, source.hash(), lambda t: build_ir(source, t), target,
                                      KernelOptions(num_warps=8), toolchain=toolchain, cache=cache)


def test_the_code_generator_and_the_launcher_agree_on_argument_sizes(gpu):
    binary = generated_binary(SCALARS, NoCompiler())
    spec = LaunchSpec.from_compiled(SCALARS, binary.metadata, binary.asm, binary.hash)
    assert spec.argument_bytes == (8, 8, 4, 4, 8, 8, 1, 2) and spec.entry == "scalars_kernel"
    assert spec.block_size == 256
    plan = LaunchPlan(spec, 0, gpu.driver)
    assert tuple(ctypes.sizeof(value) for value in plan.storage) == spec.argument_bytes
    mismatched = LaunchSpec.from_compiled(
        SCALARS, {**binary.metadata, "params": [[*p[:2], 4] for p in binary.metadata["params"]]}, binary.asm, "x")
    with pytest.raises(TritonError, match="the code generator and the launcher disagree"):
        LaunchPlan(mismatched, 0, gpu.driver)


@pytest.mark.gpu
def test_generated_kernel_runs_on_the_gpu(tmp_path):
    from tritone.backends.cuda import build
    from tritone.backends.cuda.bindings import driver_api
    from tritone.runtime.cache import KernelCache

    driver = driver_api.driver()
    target = GPUTarget("cuda", driver.device(0).arch, 32)
    cache = KernelCache(str(tmp_path))
    binary = build.compile_kernel(SCALARS.name, SCALARS.hash(), lambda t: build_ir(SCALARS, t), target,
                                        KernelOptions(num_warps=8), cache=cache)
    assert "cubin" in binary.asm and not binary.from_cache
    again = build.compile_kernel(SCALARS.name, SCALARS.hash(), lambda t: pytest.fail("recompiled"),
                                       target, KernelOptions(num_warps=8), cache=cache)
    assert again.from_cache and again.asm["cubin"] == binary.asm["cubin"]
    plan = plan_for(LaunchSpec.from_compiled(SCALARS, again.metadata, again.asm, again.hash), 0, driver)
    rng = np.random.default_rng()
    n = 5000 + int(rng.integers(0, 1000))
    x = torch.randn(n, device="cuda")
    for flag in (True, False):
        out = torch.full_like(x, float("nan"))
        scale, offset, big, half = float(rng.uniform(-2, 2)), int(rng.integers(-1000, 1000)), 2**63 + 12345, 0.5
        plan.launch((n + 255) // 256, 1, 1, None, x, out, n, scale, offset, big, flag, half, 256)
        value = x * np.float32(scale) + offset + big % 7
        expected = (value if flag else -value) + half
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)
