"""The public paths on a GPU: where kernels run (`launch.active_target`: the
interpreter knob, no driver, no device, a forced target), `kernel[grid](...)`
and `compile` + `_init_handles` + `run` (TorchInductor's regular launcher)
against a simulated driver with kernels really compiled by NVRTC, launch
attributes (`cuLaunchKernelEx`), argtypes-free driver handles, NVRTC failures
as PTXASError; and on a real GPU (`gpu` marker) the same paths with results
checked against torch, plus the host time of a launch."""

from __future__ import annotations

import ctypes
import ctypes.util
import statistics
import struct
import sys
import time

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone import knobs
from tritone.backends import sites
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import build, devices
from tritone.backends.cuda.bindings import driver_api, libs
from tritone.backends.cuda.bindings.driver_api import (
    CudaDriver,
    CudaError,
    DeviceAttribute,
    FunctionAttribute,
    LaunchAttributeID,
    LaunchConfig,
)
from tritone.backends.cuda.bindings.nvrtc import NVRTCError
from tritone.backends.cuda.launch_plan import LaunchPlan, LaunchSpec, Parameter
from tritone.compiler import compiler as compiler_module
from tritone.compiler.compiler import ASTSource, CompiledKernel
from tritone.errors import PTXASError, TritonError
from tritone.ir.target import INTERPRETER_TARGET, KernelOptions
from tritone.platform import SimulatedLibrary
from tritone.runtime.autotuner import CONFIG_ERRORS
from tritone.runtime.cache import _base32

target = SimulatedLibrary.target
H200_TARGET = GPUTarget("cuda", 90, 32)
INDUCTOR_OPTIONS = {"num_warps": 4, "num_stages": 1, "debug": False, "sanitize_overflow": False,
                    "enable_fp_fusion": True, "launch_cooperative_grid": False, "launch_pdl": False}


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def scaled_add(in_ptr0, in_ptr1, out_ptr0, xnumel, scale, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    tl.store(out_ptr0 + xindex, tl.load(in_ptr0 + xindex, xmask) + tl.load(in_ptr1 + xindex, xmask) * scale, xmask)


def inductor_source() -> ASTSource:
    signature = {"in_ptr0": "*fp32", "in_ptr1": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "scale": "fp32",
                 "XBLOCK": "constexpr"}
    return ASTSource(scaled_add, signature, {"XBLOCK": 64}, {(0,): [["tt.divisibility", 16]]})


class SimulatedGPU:
    """A driver library with one GPU of compute capability 9.0: it loads any
    image and records each launch (cuLaunchKernel or cuLaunchKernelEx) with the
    bytes its parameters point at, since the launcher reuses its storage."""

    def __init__(self, *, device_count: int = 1, init_code: int = 0):
        self.device_count = device_count
        self.init_code = init_code
        self.launches: list[dict] = []
        self.images: list[bytes] = []
        self.function_settings: list[tuple] = []
        self.device_attributes = {
            DeviceAttribute.COMPUTE_CAPABILITY_MAJOR: 9, DeviceAttribute.COMPUTE_CAPABILITY_MINOR: 0,
            DeviceAttribute.MAX_REGISTERS_PER_BLOCK: 65536, DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 232448}
        self.function_attributes = {
            FunctionAttribute.NUM_REGS: 32, FunctionAttribute.LOCAL_SIZE_BYTES: 8,
            FunctionAttribute.MAX_THREADS_PER_BLOCK: 1024, FunctionAttribute.SHARED_SIZE_BYTES: 0}
        self.library = SimulatedLibrary({
            "cuInit": lambda flags: self.init_code,
            "cuDriverGetVersion": lambda out: self.store(out, 13000),
            "cuDeviceGetCount": lambda out: self.store(out, self.device_count),
            "cuDeviceGet": lambda out, ordinal: self.store(out, ordinal),
            "cuDeviceGetAttribute": lambda out, attribute, device: self.store(out, self.device_attributes[attribute]),
            "cuDevicePrimaryCtxRetain": lambda out, device: self.store(out, 0xC0 + device),
            "cuCtxGetCurrent": lambda out: self.store(out, None),
            "cuCtxSetCurrent": lambda context: 0,
            "cuCtxGetDevice": lambda out: self.store(out, 0),
            "cuModuleLoadDataEx": self.load,
            "cuModuleGetFunction": lambda out, module, name: self.store(out, 0xF0),
            "cuFuncGetAttribute": lambda out, attribute, function: self.store(
                out, self.function_attributes[attribute]),
            "cuFuncSetAttribute": lambda *arguments: self.function_settings.append(arguments) or 0,
            "cuLaunchKernel": self.launch,
            "cuLaunchKernelEx": self.launch_ex,
            "cuGetErrorName": lambda code, out: 1,
            "cuGetErrorString": lambda code, out: 1,
        })
        self.driver = CudaDriver(self.library, "/simulated/libcuda.so.1")

    @staticmethod
    def store(out, value) -> int:
        target(out).value = value
        return 0

    def load(self, out, image, count, keys, values) -> int:
        self.images.append(image)
        return self.store(out, 0xAB)

    @staticmethod
    def _arguments(parameters, count: int) -> list[bytes]:
        return [ctypes.string_at(parameters[i], 8) for i in range(min(count, len(parameters)))]

    def launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, parameters, extra) -> int:
        self.launches.append({
            "call": "cuLaunchKernel", "grid": (gx, gy, gz), "block": (bx.value, by.value, bz.value),
            "shared": shared.value, "stream": stream.value or 0, "arguments": self._arguments(parameters, 8)})
        return 0

    def launch_ex(self, config_address, function, parameters, extra) -> int:
        config = LaunchConfig.from_address(config_address.value)
        attributes = [config.attributes[i] for i in range(config.attribute_count)]
        self.launches.append({
            "call": "cuLaunchKernelEx", "grid": (config.grid_x, config.grid_y, config.grid_z),
            "block": (config.block_x, config.block_y, config.block_z), "shared": config.shared_bytes,
            "stream": config.stream or 0, "arguments": self._arguments(parameters, 8),
            "attributes": {LaunchAttributeID(a.id): (tuple(a.value.cluster_dim) if a.id == 4 else a.value.cooperative)
                           for a in attributes}})
        return 0


class FakeCudaTensor:
    """Stands for a float32 torch tensor on cuda:0 (the launcher reads its address, the binder its dtype)."""

    def __init__(self, address: int, dtype=torch.float32):
        self.address = address
        self.dtype = dtype
        self.device = torch.device("cuda", 0)

    def data_ptr(self) -> int:
        return self.address


def addresses(count: int) -> list[int]:
    rng = np.random.default_rng()
    return [int(a) * 256 for a in rng.choice(2**30, size=count, replace=False) + 2**30]


@pytest.fixture
def fresh_site(monkeypatch, tmp_path):
    """No interpreter knob, an empty kernel cache folder, and the GPU decision made afresh."""
    # An override another test left behind (monkeypatch.setattr on a knob restores
    # by assigning the old value, which pins it) would hide the environment.
    for group, name in [(knobs.runtime, "interpret"), (knobs.compilation, "always_compile"),
                        (knobs.nvidia, "target"), (knobs.cache, "dir")]:
        delattr(group, name)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_TARGET", raising=False)
    monkeypatch.delenv("TRITON_ALWAYS_COMPILE", raising=False)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    sites.reset_active_target()
    build._driver_version.cache_clear()
    yield
    sites.reset_active_target()
    build._driver_version.cache_clear()


@pytest.fixture
def gpu(fresh_site, monkeypatch) -> SimulatedGPU:
    simulated = SimulatedGPU()
    monkeypatch.setattr(driver_api, "_driver", simulated.driver)
    for fn in (add_kernel, scaled_add):
        fn.device_caches.clear()
    return simulated


def decode(arguments: list[bytes], kinds: str) -> list:
    return [struct.unpack_from(kind, raw)[0] for raw, kind in zip(arguments, kinds)]


# ---------------------------------------------------------------- where kernels run


def test_a_gpu_is_used_unless_the_interpreter_is_asked_for(gpu, monkeypatch):
    assert sites.active_target() == H200_TARGET and sites.launch_site() == (H200_TARGET, 0)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert sites.active_target() == INTERPRETER_TARGET and sites.launch_site() == sites.INTERPRETER_SITE
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert sites.active_target() == H200_TARGET
    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setenv("TRITONE_INTERPRET", "yes")
    assert sites.active_target() == INTERPRETER_TARGET
    monkeypatch.delenv("TRITONE_INTERPRET")
    assert sites.active_target() == H200_TARGET
    # The GPU was looked for once; the knob is read on every call.
    assert len(gpu.library.cuDeviceGetCount.calls) == 1 and sites.gpu_unavailable_reason() is None


def test_without_a_driver_kernels_run_in_the_interpreter(fresh_site, monkeypatch):
    def missing():
        raise libs.LibraryNotFound("The NVIDIA CUDA driver library was not found, so no GPU can be used. Tried:\n"
                                   "  - libcuda.so.1: does not load")

    monkeypatch.setattr(driver_api, "driver", missing)
    assert sites.active_target() == INTERPRETER_TARGET
    assert "driver library was not found" in sites.gpu_unavailable_reason()
    meta = torch.empty(16, device="meta")
    with pytest.raises(ValueError) as caught:
        add_kernel[(1,)](meta, torch.zeros(16), torch.zeros(16), 16, BLOCK_SIZE=16)
    message = str(caught.value)
    assert "argument 'x_ptr'" in message and "no usable NVIDIA GPU" in message
    assert "(The NVIDIA CUDA driver library was not found, so no GPU can be used)" in message
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(ValueError, match=r"argument 'y_ptr'.*TRITON_INTERPRET is set"):
        add_kernel[(1,)](torch.zeros(16), meta, torch.zeros(16), 16, BLOCK_SIZE=16)


@pytest.mark.parametrize("simulated", [SimulatedGPU(device_count=0), SimulatedGPU(init_code=100)],
                         ids=["no device", "cuInit fails"])
def test_a_driver_without_a_usable_device_means_the_interpreter(fresh_site, monkeypatch, simulated):
    monkeypatch.setattr(driver_api, "_driver", None)
    monkeypatch.setattr(libs, "load_driver", lambda: libs.DriverLibrary(simulated.library, "/sim/libcuda.so.1",
                                                                       "simulated"))
    assert sites.active_target() == INTERPRETER_TARGET
    reason = sites.gpu_unavailable_reason()
    assert "sees no GPU" in reason if simulated.device_count == 0 else "cuInit failed" in reason


def test_a_forced_target_replaces_the_device_s_capability(gpu, monkeypatch):
    monkeypatch.setenv("TRITONE_TARGET", "sm_80")
    sites.reset_active_target()
    assert sites.active_target() == GPUTarget("cuda", 80, 32)
    assert [devices.parse_target(text) for text in ["compute_75", "86", "SM_90a", " sm_100f ", "", None]] == [
        75, 86, 90, 100, None, None]
    monkeypatch.setenv("TRITONE_TARGET", "ampere")
    sites.reset_active_target()
    with pytest.raises(ValueError, match="TRITONE_TARGET must name a compute capability.*'ampere'"):
        sites.active_target()
    with pytest.raises(ValueError, match="'ampere'"):  # still undecided: not the interpreter by accident
        sites.active_target()


# ---------------------------------------------------------------- kernel[grid] on a simulated GPU


def test_kernel_grid_compiles_for_the_gpu_and_launches(gpu, monkeypatch):
    x, y, out = (FakeCudaTensor(a) for a in addresses(3))
    n = int(np.random.default_rng().integers(1000, 100_000))
    kernel = add_kernel[lambda meta: (triton.cdiv(meta["n_elements"], meta["BLOCK_SIZE"]),)](
        x, y, out, n, BLOCK_SIZE=1024)
    assert isinstance(kernel, CompiledKernel) and kernel.target == H200_TARGET
    assert kernel.asm["cubin"].startswith(b"\x7fELF") and ".target sm_90" in kernel.asm["ptx"]
    assert gpu.images == [kernel.asm["cubin"]]
    record = gpu.launches[-1]
    assert record["call"] == "cuLaunchKernel" and record["grid"] == (triton.cdiv(n, 1024), 1, 1)
    assert record["block"] == (128, 1, 1) and record["stream"] == 0
    assert decode(record["arguments"], "QQQi") == [x.address, y.address, out.address, n]
    assert list(add_kernel.device_caches) == [(H200_TARGET, 0)]
    assert len(add_kernel.device_caches[(H200_TARGET, 0)]) == 1

    # Cached: no compilation, the same plan; a stream given is used.
    monkeypatch.setattr(compiler_module, "compile", lambda *args, **kwargs: pytest.fail("compiled again"))
    again = add_kernel[(3, 2)](x, y, out, n, BLOCK_SIZE=1024, stream=0x5EA)
    assert again is kernel and gpu.launches[-1]["grid"] == (3, 2, 1) and gpu.launches[-1]["stream"] == 0x5EA
    add_kernel[(0,)](x, y, out, n, BLOCK_SIZE=1024)
    assert len(gpu.launches) == 2 and len(gpu.images) == 1
    with pytest.raises(ValueError, match="grid dimension x is negative"):
        add_kernel[(-1,)](x, y, out, n, BLOCK_SIZE=1024)
    with pytest.raises(ValueError, match=r"Pointer argument output_ptr \(at 2\) cannot be accessed from Triton"):
        add_kernel[(1,)](x, y, torch.zeros(4), n, BLOCK_SIZE=1024)


def test_launch_hooks_on_the_gpu_path(gpu):
    seen = []
    with knobs.runtime.scope():
        knobs.runtime.launch_enter_hook.add(lambda metadata: seen.append(("enter", metadata["name"], metadata["grid"])))
        knobs.runtime.launch_exit_hook.add(lambda metadata: seen.append(("exit", metadata["name"])))
        add_kernel[(5,)](*(FakeCudaTensor(a) for a in addresses(3)), 77, BLOCK_SIZE=128)
    assert seen == [("enter", "add_kernel", (5, 1, 1)), ("exit", "add_kernel")]
    assert gpu.launches[-1]["grid"] == (5, 1, 1) and decode(gpu.launches[-1]["arguments"][3:], "i") == [77]


def test_inductor_regular_launcher_on_a_simulated_gpu(gpu):
    binary = triton.compile(inductor_source(), target=H200_TARGET, options=INDUCTOR_OPTIONS)
    assert binary.function is None
    binary._init_handles()
    assert binary.function == 0xF0 and binary.module == 0xAB
    assert (binary.n_regs, binary.n_spills, binary.n_max_threads) == (32, 2, 1024)
    assert type(binary.n_spills) is int
    a, b, out = (FakeCudaTensor(address) for address in addresses(3))
    entered = []
    binary.run(7, 1, 1, 0x5EA, binary.function, binary.packed_metadata, {"name": "scaled_add"},
               entered.append, None, a, b, out, 400, 0.25, 64)
    record = gpu.launches[-1]
    assert entered == [{"name": "scaled_add"}] and record["grid"] == (7, 1, 1) and record["stream"] == 0x5EA
    assert decode(record["arguments"], "QQQif") == [a.address, b.address, out.address, 400, 0.25]
    binary[(2,)](a, b, out, 100, 1.5, 64)
    assert gpu.launches[-1]["grid"] == (2, 1, 1) and len(gpu.images) == 1


def test_launch_attributes_go_through_cuLaunchKernelEx(gpu):
    x, y, out = (FakeCudaTensor(a) for a in addresses(3))
    kernel = add_kernel[(6,)](x, y, out, 5000, BLOCK_SIZE=1024, launch_pdl=True, launch_cooperative_grid=True,
                              stream=0x5EA)
    record = gpu.launches[-1]
    assert record["call"] == "cuLaunchKernelEx" and record["grid"] == (6, 1, 1) and record["block"] == (128, 1, 1)
    assert record["stream"] == 0x5EA and decode(record["arguments"], "QQQi") == [x.address, y.address, out.address,
                                                                                 5000]
    assert record["attributes"] == {LaunchAttributeID.PROGRAMMATIC_STREAM_SERIALIZATION: 1,
                                    LaunchAttributeID.COOPERATIVE: 1}
    assert kernel.metadata.launch_pdl and kernel.metadata.launch_cooperative_grid
    # num_ctas asks for clusters; the code generator runs each program on one block,
    # so the kernel says num_ctas=1 and launches as such.
    clustered = add_kernel[(6,)](x, y, out, 5000, BLOCK_SIZE=1024, num_ctas=2)
    assert clustered.metadata.num_ctas == 1 and clustered.packed_metadata[1] == 1
    assert gpu.launches[-1]["call"] == "cuLaunchKernel"


def test_cluster_launches(gpu):
    params = (Parameter(0, "n", "i32"),)
    spec = LaunchSpec("clustered", "clustered", params, b"\x7fELF", False, num_warps=4, shared=1024, hash="c2",
                      num_ctas=2)
    plan = LaunchPlan(spec, 0, gpu.driver)
    plan.launch(5, 3, 1, None, 11)
    record = gpu.launches[-1]
    assert record["call"] == "cuLaunchKernelEx" and record["grid"] == (10, 3, 1) and record["shared"] == 1024
    assert record["attributes"] == {LaunchAttributeID.CLUSTER_DIMENSION: (2, 1, 1),
                                    LaunchAttributeID.CLUSTER_SCHEDULING_POLICY_PREFERENCE: 1}
    assert decode(record["arguments"], "i") == [11] and gpu.function_settings == []
    plan.launch(np.int64(2), 1, 1, 0, 3)  # numpy grid dimensions are converted
    assert gpu.launches[-1]["grid"] == (4, 1, 1)
    with pytest.raises(ValueError, match="grid dimension x is 4294967294, more than CUDA's limit"):
        plan.launch(2**31 - 1, 1, 1, 0, 3)
    wide = LaunchSpec("wide", "wide", params, b"\x7fELF", False, num_warps=4, shared=0, hash="c16", num_ctas=16)
    LaunchPlan(wide, 0, gpu.driver)
    assert gpu.function_settings == [(0xF0, FunctionAttribute.NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)]


def test_a_failing_launch_names_cuLaunchKernelEx(gpu):
    gpu.library.functions["cuLaunchKernelEx"].implementation = lambda *arguments: 720
    plan = LaunchPlan(LaunchSpec("coop", "coop", (), b"\x7fELF", False, num_warps=4, shared=0, hash="f",
                                 launch_cooperative_grid=True), 0, gpu.driver)
    with pytest.raises(CudaError, match=r"cuLaunchKernelEx failed.*\nkernel coop: grid \(9, 1, 1\)"):
        plan.launch(9, 1, 1, 0)


# ---------------------------------------------------------------- driver handles and errors


class _RenamedLibc(ctypes.CDLL):
    """The C library with two of its functions under CUDA names, to check
    `raw_function` on real ctypes functions."""

    _NAMES = {"cuInit": "abs", "cuCtxSynchronize": "getpid"}

    def __getitem__(self, name):
        return super().__getitem__(self._NAMES.get(name, name))


@pytest.mark.skipif(sys.platform == "win32", reason="uses the C library of a POSIX system")
def test_raw_function_is_a_separate_handle_without_argtypes():
    driver = CudaDriver(_RenamedLibc(ctypes.util.find_library("c")), "libc")
    prototyped = driver.function("cuInit")
    raw = driver.raw_function("cuInit")
    assert raw is not prototyped and raw.argtypes is None and raw.restype is ctypes.c_int32
    assert prototyped.argtypes == [ctypes.c_uint32] and raw(-5) == 5
    assert driver.raw_function("cuInit") is raw
    with pytest.raises(TritonError, match="has no cuLaunchKernelEx: it is too old"):
        driver.raw_function("cuLaunchKernelEx")
    simulated = SimulatedGPU()
    assert simulated.driver.raw_function("cuLaunchKernel") is simulated.library.cuLaunchKernel


def test_nvrtc_rejecting_the_generated_code_is_a_ptxas_error(fresh_site, monkeypatch):
    def broken(module, arch, options, dump_ir=False):
        return 'extern "C" __global__ void scaled_add() { undeclared_name = 1; }\n', "scaled_add", {}

    monkeypatch.setattr(build, "_cuda_generator", lambda: broken)
    with pytest.raises(PTXASError) as caught:
        triton.compile(inductor_source(), target=GPUTarget("cuda", 80, 32), options=INDUCTOR_OPTIONS)
    error = caught.value
    assert isinstance(error, NVRTCError) and isinstance(error, build.NVRTCCompileError)
    assert "undeclared_name" in error.log and str(error).startswith("kernel scaled_add: NVRTC")
    assert PTXASError in CONFIG_ERRORS


def test_line_directives_are_removed_whole():
    source = '#line 3 "k.py"\nint a;\n  #line 4 "k.py"\nconst char* s = "#line 9";\n'
    assert build.without_line_directives(source) == 'int a;\nconst char* s = "#line 9";\n'
    assert "--generate-line-info" in build.nvrtc_options(KernelOptions(), {})
    assert "--generate-line-info" not in build.nvrtc_options(KernelOptions(), {}, line_info=False)


def test_minimal_is_asked_of_the_nvrtc_versions_that_take_it():
    assert "--minimal" in build.nvrtc_options(KernelOptions(), {}, nvrtc_version=(12, 4))
    assert "--minimal" in build.nvrtc_options(KernelOptions(), {}, nvrtc_version=(13, 0))
    assert "--minimal" not in build.nvrtc_options(KernelOptions(), {}, nvrtc_version=(12, 3))


# ---------------------------------------------------------------- a real GPU


@pytest.fixture
def on_gpu(fresh_site):
    """The real driver, with the GPU decision made afresh and no interpreter knob."""
    assert sites.active_target().backend == "cuda", sites.gpu_unavailable_reason()
    for fn in (add_kernel, scaled_add):
        fn.device_caches.clear()


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Triton's tutorial wrapper, as Windows users run it to check an install."""
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


@pytest.mark.gpu
def test_vector_add_on_the_gpu(on_gpu):
    rng = np.random.default_rng()
    for n in [1, 1024, int(rng.integers(2, 200_000))]:
        x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        out = torch.full_like(x, float("nan"))
        kernel = add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    assert "cubin" in kernel.asm and kernel.target == sites.active_target()
    assert list(add_kernel.device_caches) == [(kernel.target, torch.cuda.current_device())]


@pytest.mark.gpu
def test_the_windows_check_script_prints_zeros(on_gpu, capsys):
    a = torch.rand(3, device="cuda")
    b = a + a
    b_compiled = add(a, a)
    print(b_compiled - b)
    assert capsys.readouterr().out == "tensor([0., 0., 0.], device='cuda:0')\n"
    assert torch.equal(b_compiled, b) and bool((b_compiled != 0).all())


@pytest.mark.gpu
def test_inductor_regular_launcher_on_the_gpu(on_gpu, tmp_path):
    capability = torch.cuda.get_device_capability()
    gpu_target = GPUTarget("cuda", capability[0] * 10 + capability[1], 32)
    binary = triton.compile(inductor_source(), target=gpu_target, options=INDUCTOR_OPTIONS)
    assert (tmp_path / "cache" / _base32(binary.hash) / "scaled_add.cubin").read_bytes() == binary.asm["cubin"]
    binary._init_handles()
    assert isinstance(binary.function, int) and binary.function and type(binary.n_spills) is int
    assert binary.n_regs > 0 and binary.n_max_threads >= 128
    n = 1000 + int(np.random.default_rng().integers(0, 5000))
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full_like(a, float("nan"))
    stream = torch.cuda.current_stream().cuda_stream
    seen = []
    binary.run(triton.cdiv(n, 64), 1, 1, stream, binary.function, binary.packed_metadata, {"name": "scaled_add"},
               seen.append, seen.append, a, b, out, n, 0.5, 64)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a + b * 0.5)
    assert len(seen) == 2
    out.fill_(float("nan"))
    binary[(triton.cdiv(n, 64),)](a, b, out, n, 2.0, 64)
    torch.testing.assert_close(out, a + b * 2.0)


@pytest.mark.gpu
def test_interpret_set_at_run_time_moves_kernels_to_the_cpu(on_gpu, monkeypatch):
    x = torch.rand(100, device="cuda")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    # Like upstream's interpreter, CUDA tensors are copied to the host, run on and copied back.
    r = add(x, x)
    assert r.device.type == "cuda"
    torch.testing.assert_close(r, 2 * x)
    cpu = x.cpu()
    torch.testing.assert_close(add(cpu, cpu), 2 * cpu)
    monkeypatch.delenv("TRITON_INTERPRET")
    torch.testing.assert_close(add(x, x), 2 * x)
    assert {site[0].backend for site in add_kernel.device_caches} == {"cuda", "interpreter"}


@pytest.mark.gpu
def test_launch_attributes_on_the_gpu(on_gpu):
    n = 50_000
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    for options in [{"launch_pdl": True}, {"launch_cooperative_grid": True}, {"num_ctas": 2}]:
        out = torch.full_like(x, float("nan"))
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024, **options)
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)


@triton.jit
def scale_add(x_ptr, y_ptr, n, alpha):
    offsets = tl.program_id(0) * 256 + tl.arange(0, 256)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(y_ptr + offsets, mask=mask) + alpha * tl.load(x_ptr + offsets, mask=mask),
             mask=mask)


@pytest.mark.gpu
def test_host_time_of_a_launch(on_gpu):
    """Prints the host time per `kernel[grid](...)` of a 4-argument kernel (run
    with -s to see it), beside the plan's own launch; fails only far above the
    8 us aimed at, so that a loaded machine does not fail it."""
    x, y = torch.rand(256, device="cuda"), torch.zeros(256, device="cuda")
    kernel = scale_add[(1,)](x, y, 256, 0.5)
    plan_launch = kernel._plan.launch

    def per_launch_us(launch_once, launches=5000, repeats=7):
        for _ in range(1000):
            launch_once()
        torch.cuda.synchronize()
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(launches):
                launch_once()
            samples.append((time.perf_counter() - start) / launches * 1e6)
            torch.cuda.synchronize()
        return statistics.median(samples)

    grid = (1,)
    full = per_launch_us(lambda: scale_add[grid](x, y, 256, 0.5))
    plan = per_launch_us(lambda: plan_launch(1, 1, 1, None, x, y, 256, 0.5))
    print(f"\nhost time per launch: kernel[grid](...) {full:.2f} us, plan.launch {plan:.2f} us "
          f"(binding, specialization and cache lookup {full - plan:.2f} us)")
    assert full < 20


def test_kernel_load_hooks_on_the_gpu_path(gpu):
    kernel = triton.jit(add_kernel.fn)
    seen = []
    with knobs.runtime.scope():
        knobs.runtime.kernel_load_start_hook.add(lambda *args: seen.append(("start", *args)))
        knobs.runtime.kernel_load_end_hook.add(lambda *args: seen.append(("end", *args)))
        compiled = kernel[(2,)](*(FakeCudaTensor(a) for a in addresses(3)), 50, BLOCK_SIZE=128)
        kernel[(2,)](*(FakeCudaTensor(a) for a in addresses(3)), 60, BLOCK_SIZE=128)
    (start, *start_rest), (end, module, function, name, group, digest) = seen
    assert start == "start" and start_rest == [None, None, "add_kernel", {}, compiled.hash]
    assert end == "end" and (module, function) == (compiled.module, compiled.function) and function is not None
    assert name == "add_kernel" and digest == compiled.hash
