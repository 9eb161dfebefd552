"""The CUDA driver API through ctypes: the calls tritone makes, checked.

`CudaDriver` wraps one loaded driver library (or any object with the same
functions, such as a simulated library in tests). Prototypes use fixed-width
types only, since C `long` is 32 bits on Windows. Every call's result code is
checked, and a failure raises `CudaError` naming the call, the error's name
and NVIDIA's description, with a hint where one helps. `driver()` is this
process's initialised driver.
"""

from __future__ import annotations

import ctypes
import enum
import threading
from collections.abc import Mapping, Sequence
from ctypes import POINTER, byref, c_char_p, c_float, c_int32, c_size_t, c_uint8, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any

from tritone.backends.cuda.bindings import libs
from tritone.errors import TritonError

CUDA_SUCCESS = 0

_CUdevice = c_int32
_CUdeviceptr = c_uint64
# CUresult and every other enum argument are C enums: 32 bits.
_CUenum = c_int32

_PROTOTYPES: dict[str, list[Any]] = {
    "cuInit": [c_uint32],
    "cuDriverGetVersion": [POINTER(c_int32)],
    "cuDeviceGet": [POINTER(_CUdevice), c_int32],
    "cuDeviceGetCount": [POINTER(c_int32)],
    "cuDeviceGetName": [c_char_p, c_int32, _CUdevice],
    "cuDeviceGetAttribute": [POINTER(c_int32), _CUenum, _CUdevice],
    "cuDeviceTotalMem_v2": [POINTER(c_size_t), _CUdevice],
    "cuDevicePrimaryCtxRetain": [POINTER(c_void_p), _CUdevice],
    "cuCtxSetCurrent": [c_void_p],
    "cuCtxGetCurrent": [POINTER(c_void_p)],
    "cuCtxGetDevice": [POINTER(_CUdevice)],
    "cuCtxSynchronize": [],
    "cuModuleLoadData": [POINTER(c_void_p), c_void_p],
    "cuModuleLoadDataEx": [POINTER(c_void_p), c_void_p, c_uint32, POINTER(_CUenum), POINTER(c_void_p)],
    "cuModuleGetFunction": [POINTER(c_void_p), c_void_p, c_char_p],
    "cuModuleUnload": [c_void_p],
    "cuFuncGetAttribute": [POINTER(c_int32), _CUenum, c_void_p],
    "cuFuncSetAttribute": [c_void_p, _CUenum, c_int32],
    "cuLaunchKernel": [c_void_p, c_uint32, c_uint32, c_uint32, c_uint32, c_uint32, c_uint32, c_uint32, c_void_p,
                       POINTER(c_void_p), POINTER(c_void_p)],
    "cuLaunchKernelEx": [c_void_p, c_void_p, POINTER(c_void_p), POINTER(c_void_p)],
    "cuMemAlloc_v2": [POINTER(_CUdeviceptr), c_size_t],
    "cuMemFree_v2": [_CUdeviceptr],
    "cuMemcpyHtoD_v2": [_CUdeviceptr, c_void_p, c_size_t],
    "cuMemcpyDtoH_v2": [c_void_p, _CUdeviceptr, c_size_t],
    "cuMemsetD8_v2": [_CUdeviceptr, c_uint8, c_size_t],
    "cuPointerGetAttribute": [c_void_p, _CUenum, _CUdeviceptr],
    "cuStreamCreate": [POINTER(c_void_p), c_uint32],
    "cuStreamSynchronize": [c_void_p],
    "cuStreamDestroy_v2": [c_void_p],
    "cuEventCreate": [POINTER(c_void_p), c_uint32],
    "cuEventRecord": [c_void_p, c_void_p],
    "cuEventSynchronize": [c_void_p],
    "cuEventElapsedTime": [POINTER(c_float), c_void_p, c_void_p],
    "cuEventDestroy_v2": [c_void_p],
    "cuGetErrorName": [_CUenum, POINTER(c_char_p)],
    "cuGetErrorString": [_CUenum, POINTER(c_char_p)],
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": [POINTER(c_int32), c_void_p, c_int32, c_size_t],
    # (tensor map, data type, rank, global address, dims, strides, box, element strides,
    #  interleave, swizzle, L2 promotion, out-of-bounds fill)
    "cuTensorMapEncodeTiled": [c_void_p, _CUenum, c_uint32, c_void_p, POINTER(c_uint64), POINTER(c_uint64),
                               POINTER(c_uint32), POINTER(c_uint32), _CUenum, _CUenum, _CUenum, _CUenum],
}

TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGNMENT = 64  # CUtensorMap is declared alignas(64)


class TensorMapDataType(enum.IntEnum):
    """CUtensorMapDataType values."""

    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    INT32 = 3
    UINT64 = 4
    INT64 = 5
    FLOAT16 = 6
    FLOAT32 = 7
    FLOAT64 = 8
    BFLOAT16 = 9


class TensorMapSwizzle(enum.IntEnum):
    """CUtensorMapSwizzle values (not the wgmma descriptor's swizzle codes)."""

    NONE = 0
    B32 = 1
    B64 = 2
    B128 = 3


class TensorMapL2Promotion(enum.IntEnum):
    """CUtensorMapL2promotion values."""

    NONE = 0
    L2_64B = 1
    L2_128B = 2
    L2_256B = 3


class TensorMapOOBFill(enum.IntEnum):
    """CUtensorMapFloatOOBfill values: what a TMA load reads outside the tensor."""

    NONE = 0  # zeros
    NAN_REQUEST_ZERO_FMA = 1  # NaNs (floating-point data types only)


TENSOR_MAP_INTERLEAVE_NONE = 0


@dataclass(frozen=True)
class TensorMapEncoding:
    """The arguments of one `cuTensorMapEncodeTiled` call, dims innermost first:
    `dims` the tensor's extent per dim, `strides` the byte strides of dims 1 and
    up (the innermost is contiguous), `box` the block copied per dim,
    `element_strides` the step inside the box per dim (1 for a dense box)."""

    data_type: TensorMapDataType
    address: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: TensorMapSwizzle = TensorMapSwizzle.NONE
    l2_promotion: TensorMapL2Promotion = TensorMapL2Promotion.L2_128B
    oob_fill: TensorMapOOBFill = TensorMapOOBFill.NONE
    interleave: int = TENSOR_MAP_INTERLEAVE_NONE

    @property
    def rank(self) -> int:
        return len(self.dims)


class DeviceAttribute(enum.IntEnum):
    """CUdevice_attribute values tritone reads."""

    MAX_THREADS_PER_BLOCK = 1
    MAX_SHARED_MEMORY_PER_BLOCK = 8
    WARP_SIZE = 10
    MAX_REGISTERS_PER_BLOCK = 12
    MULTIPROCESSOR_COUNT = 16
    L2_CACHE_SIZE = 38
    MAX_THREADS_PER_MULTIPROCESSOR = 39
    COMPUTE_CAPABILITY_MAJOR = 75
    COMPUTE_CAPABILITY_MINOR = 76
    MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81
    MAX_REGISTERS_PER_MULTIPROCESSOR = 82
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97


class FunctionAttribute(enum.IntEnum):
    """CUfunction_attribute values."""

    MAX_THREADS_PER_BLOCK = 0
    SHARED_SIZE_BYTES = 1
    CONST_SIZE_BYTES = 2
    LOCAL_SIZE_BYTES = 3
    NUM_REGS = 4
    PTX_VERSION = 5
    BINARY_VERSION = 6
    MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14


class PointerAttribute(enum.IntEnum):
    """CUpointer_attribute values."""

    CONTEXT = 1
    MEMORY_TYPE = 2
    DEVICE_POINTER = 3
    IS_MANAGED = 8
    DEVICE_ORDINAL = 9


class MemoryType(enum.IntEnum):
    """CUmemorytype: what `PointerAttribute.MEMORY_TYPE` answers."""

    HOST = 1
    DEVICE = 2
    ARRAY = 3
    UNIFIED = 4


class LaunchAttributeID(enum.IntEnum):
    """CUlaunchAttributeID values tritone sets on `cuLaunchKernelEx` launches."""

    COOPERATIVE = 2
    CLUSTER_DIMENSION = 4
    CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5
    PROGRAMMATIC_STREAM_SERIALIZATION = 6


# CUclusterSchedulingPolicy: spread a cluster's blocks over the multiprocessors of its GPC.
CLUSTER_SCHEDULING_POLICY_SPREAD = 1


class LaunchAttributeValue(ctypes.Union):
    """CUlaunchAttributeValue: a 64-byte union (8-byte aligned, as its pointer members make it)."""

    _fields_ = [("pad", ctypes.c_char * 64), ("align", c_uint64), ("cooperative", c_int32),
                ("cluster_dim", c_uint32 * 3), ("cluster_scheduling_policy", c_int32),
                ("programmatic_stream_serialization", c_int32)]


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, padding to 8 bytes, then the value."""

    _fields_ = [("id", c_int32), ("pad", ctypes.c_char * 4), ("value", LaunchAttributeValue)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig, what `cuLaunchKernelEx` reads: grid, block, shared memory,
    stream and the launch attributes."""

    _fields_ = [("grid_x", c_uint32), ("grid_y", c_uint32), ("grid_z", c_uint32),
                ("block_x", c_uint32), ("block_y", c_uint32), ("block_z", c_uint32),
                ("shared_bytes", c_uint32), ("stream", c_void_p), ("attributes", POINTER(LaunchAttribute)),
                ("attribute_count", c_uint32)]


def launch_attributes(*, cooperative: bool = False, programmatic_stream_serialization: bool = False,
                      cluster_size: int = 1) -> ctypes.Array:
    """The attributes of a `cuLaunchKernelEx` launch: a cooperative grid (all blocks
    resident at once), programmatic stream serialization (`launch_pdl`: the kernel
    may start before the previous one on its stream ends), and for `cluster_size`
    > 1 thread-block clusters of that many blocks along x, spread over the GPU."""
    wanted: list[tuple[LaunchAttributeID, Any]] = []
    if programmatic_stream_serialization:
        wanted.append((LaunchAttributeID.PROGRAMMATIC_STREAM_SERIALIZATION, 1))
    if cooperative:
        wanted.append((LaunchAttributeID.COOPERATIVE, 1))
    if cluster_size != 1:
        wanted.append((LaunchAttributeID.CLUSTER_DIMENSION, (cluster_size, 1, 1)))
        wanted.append((LaunchAttributeID.CLUSTER_SCHEDULING_POLICY_PREFERENCE, CLUSTER_SCHEDULING_POLICY_SPREAD))
    attributes = (LaunchAttribute * len(wanted))()
    for attribute, (which, value) in zip(attributes, wanted):
        attribute.id = which
        if which == LaunchAttributeID.CLUSTER_DIMENSION:
            attribute.value.cluster_dim[:] = value
        else:
            # Every other attribute set here is one 32-bit int at the start of the union.
            attribute.value.cooperative = value
    return attributes


def launch_config(grid: Sequence[int], block: Sequence[int], shared_bytes: int, stream: int,
                  attributes: ctypes.Array | None = None) -> LaunchConfig:
    """A `LaunchConfig`; it points at `attributes`, which must outlive it."""
    config = LaunchConfig(grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, stream)
    if attributes is not None and len(attributes):
        config.attributes = ctypes.cast(attributes, POINTER(LaunchAttribute))
        config.attribute_count = len(attributes)
    return config


class JitOption(enum.IntEnum):
    """CUjit_option values for `module_load_data_ex`."""

    MAX_REGISTERS = 0
    INFO_LOG_BUFFER = 3
    INFO_LOG_BUFFER_SIZE_BYTES = 4
    ERROR_LOG_BUFFER = 5
    ERROR_LOG_BUFFER_SIZE_BYTES = 6
    LOG_VERBOSE = 12


# What a person can do about the errors users meet; keyed by the driver's error name.
_HINTS = {
    "CUDA_ERROR_NO_DEVICE": "No CUDA GPU is visible to this process: check that the NVIDIA driver is installed "
                            "and working (`nvidia-smi` lists the GPU) and that CUDA_VISIBLE_DEVICES does not hide it.",
    "CUDA_ERROR_INVALID_DEVICE": "No GPU has that ordinal; CUDA_VISIBLE_DEVICES renumbers the visible ones from 0.",
    "CUDA_ERROR_STUB_LIBRARY": "The library loaded is the CUDA toolkit's link stub, not the driver: point "
                               "TRITONE_LIBCUDA_PATH at the driver's libcuda.so.1 or remove the stubs folder "
                               "from LD_LIBRARY_PATH.",
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH": "The driver library and the kernel driver differ in version; "
                                         "a reboot after a driver update usually fixes it.",
    "CUDA_ERROR_NOT_INITIALIZED": "cuInit has not been called; use tritone.backends.cuda.bindings.driver_api.driver().",
    "CUDA_ERROR_INVALID_CONTEXT": "No CUDA context is current on this thread.",
    "CUDA_ERROR_OUT_OF_MEMORY": "The GPU is out of memory.",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": "The PTX is newer than this driver can compile: update the NVIDIA driver, "
                                          "or use an older NVRTC (TRITONE_NVRTC_PATH).",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "The code was compiled for another GPU architecture.",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "A kernel accessed memory outside its buffers; the CUDA context cannot be used "
                                  "any more. Run with TRITON_INTERPRET=1 to find the access.",
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": "The launch needs more registers or threads than a multiprocessor has: "
                                          "reduce num_warps or the block sizes.",
}


class CudaError(TritonError):
    """A CUDA driver call failed. Names the call, the error's name and description."""

    def __init__(self, call: str, code: int, name: str, description: str, detail: str = ""):
        self.call = call
        self.code = code
        self.name = name
        self.description = description
        self.detail = detail
        message = f"{call} failed: {name} ({code}): {description}"
        if detail:
            message += f"\n{detail}"
        if name in _HINTS:
            message += f"\n{_HINTS[name]}"
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.call, self.code, self.name, self.description, self.detail))


@dataclass(frozen=True)
class Device:
    """One GPU as the compiler and launcher see it."""

    ordinal: int
    name: str
    capability: tuple[int, int]
    total_memory: int
    multiprocessor_count: int
    warp_size: int
    max_threads_per_block: int
    max_registers_per_block: int
    max_registers_per_multiprocessor: int
    max_shared_memory_per_block: int
    max_shared_memory_per_block_optin: int
    max_shared_memory_per_multiprocessor: int
    l2_cache_size: int

    @property
    def arch(self) -> int:
        """The compute capability as one number: 86 for 8.6, 120 for 12.0."""
        return self.capability[0] * 10 + self.capability[1]


def _host_address(buffer: Any) -> tuple[int, Any]:
    """The address of a host buffer (an int address, or a bytes-like object) and
    the object that keeps its memory alive while the call runs."""
    if isinstance(buffer, int):
        return buffer, None
    if isinstance(buffer, bytes):
        keep = ctypes.c_char_p(buffer)
        return ctypes.cast(keep, c_void_p).value or 0, keep
    view = memoryview(buffer).cast("B")
    keep = (ctypes.c_char * view.nbytes).from_buffer(view)
    return ctypes.addressof(keep), keep


class CudaDriver:
    """The driver API on one loaded library. `library` is what `ctypes.CDLL`
    returned (or a stand-in with the same functions); `path` names it in
    messages. Functions are bound on first use, so a stand-in needs only those
    a test calls. Handles (contexts, modules, functions, streams, events) are ints."""

    def __init__(self, library: Any, path: str = "CUDA driver"):
        self.path = path
        self._library = library
        self._functions: dict[str, Any] = {}
        self._raw_functions: dict[str, Any] = {}

    def function(self, name: str) -> Any:
        """The foreign function `name` with its prototype set; for hot paths such as
        launches, called directly and checked with `check`."""
        function = self._functions.get(name)
        if function is None:
            try:
                function = getattr(self._library, name)
            except AttributeError:
                raise TritonError(f"the CUDA driver at {self.path} has no {name}: it is too old for tritone; "
                                  "update the NVIDIA driver") from None
            function.argtypes = _PROTOTYPES[name]
            function.restype = c_int32
            self._functions[name] = function
        return function

    def raw_function(self, name: str) -> Any:
        """The C function `name` without argument types, for hot paths: a call skips
        ctypes' per-argument conversion. Callers pass only ctypes values of the exact
        C types, and Python ints only where the C type is a 32-bit int; the result is
        the CUresult, to check with `check`. A stand-in library without item access
        (a simulated driver) gives its function as is."""
        raw = self._raw_functions.get(name)
        if raw is None:
            prototyped = self.function(name)  # raises when the driver lacks the function
            try:
                # Item access on a ctypes library makes a new function object each time,
                # so clearing its argtypes leaves the prototyped one untouched.
                raw = self._library[name]
            except TypeError:
                raw = prototyped
            else:
                raw.restype = c_int32
            self._raw_functions[name] = raw
        return raw

    def check(self, call: str, code: int, detail: str = "") -> None:
        """Raise `CudaError` for `call` unless `code` is CUDA_SUCCESS."""
        if code != CUDA_SUCCESS:
            raise CudaError(call, code, self.error_name(code), self.error_string(code), detail)

    def _call(self, name: str, *arguments: Any) -> None:
        self.check(name, self.function(name)(*arguments))

    def _error_text(self, call: str, code: int) -> str | None:
        text = c_char_p()
        try:
            result = self.function(call)(code, byref(text))
        except TritonError:
            return None
        if result != CUDA_SUCCESS or not text.value:
            return None
        return text.value.decode("utf-8", "replace")

    def error_name(self, code: int) -> str:
        """The driver's name for an error code ("CUDA_ERROR_NO_DEVICE")."""
        return self._error_text("cuGetErrorName", code) or f"CUDA error {code}"

    def error_string(self, code: int) -> str:
        """The driver's description of an error code."""
        return self._error_text("cuGetErrorString", code) or "no description from the driver"

    # ---------------------------------------------------------------- initialisation and devices

    def init(self, flags: int = 0) -> None:
        self._call("cuInit", flags)

    def driver_version(self) -> int:
        """The CUDA version the driver supports, as 1000*major + 10*minor (12080 = 12.8)."""
        version = c_int32()
        self._call("cuDriverGetVersion", byref(version))
        return version.value

    def device_count(self) -> int:
        count = c_int32()
        self._call("cuDeviceGetCount", byref(count))
        return count.value

    def device_get(self, ordinal: int) -> int:
        device = _CUdevice()
        self._call("cuDeviceGet", byref(device), ordinal)
        return device.value

    def device_name(self, device: int) -> str:
        name = ctypes.create_string_buffer(256)
        self._call("cuDeviceGetName", name, len(name), device)
        return name.value.decode("utf-8", "replace")

    def device_attribute(self, attribute: int, device: int) -> int:
        value = c_int32()
        self._call("cuDeviceGetAttribute", byref(value), attribute, device)
        return value.value

    def device_total_memory(self, device: int) -> int:
        size = c_size_t()
        self._call("cuDeviceTotalMem_v2", byref(size), device)
        return size.value

    def device(self, ordinal: int = 0) -> Device:
        """Name, compute capability and limits of the GPU with this ordinal."""
        handle = self.device_get(ordinal)

        def attribute(which: DeviceAttribute) -> int:
            return self.device_attribute(which, handle)

        return Device(
            ordinal=ordinal,
            name=self.device_name(handle),
            capability=(attribute(DeviceAttribute.COMPUTE_CAPABILITY_MAJOR),
                        attribute(DeviceAttribute.COMPUTE_CAPABILITY_MINOR)),
            total_memory=self.device_total_memory(handle),
            multiprocessor_count=attribute(DeviceAttribute.MULTIPROCESSOR_COUNT),
            warp_size=attribute(DeviceAttribute.WARP_SIZE),
            max_threads_per_block=attribute(DeviceAttribute.MAX_THREADS_PER_BLOCK),
            max_registers_per_block=attribute(DeviceAttribute.MAX_REGISTERS_PER_BLOCK),
            max_registers_per_multiprocessor=attribute(DeviceAttribute.MAX_REGISTERS_PER_MULTIPROCESSOR),
            max_shared_memory_per_block=attribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK),
            max_shared_memory_per_block_optin=attribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            max_shared_memory_per_multiprocessor=attribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
            l2_cache_size=attribute(DeviceAttribute.L2_CACHE_SIZE),
        )

    # ---------------------------------------------------------------- contexts

    def primary_context_retain(self, device: int) -> int:
        context = c_void_p()
        self._call("cuDevicePrimaryCtxRetain", byref(context), device)
        return context.value or 0

    def context_set_current(self, context: int) -> None:
        self._call("cuCtxSetCurrent", context)

    def context_get_current(self) -> int:
        """The current context, 0 when none is current on this thread."""
        context = c_void_p()
        self._call("cuCtxGetCurrent", byref(context))
        return context.value or 0

    def context_get_device(self) -> int:
        device = _CUdevice()
        self._call("cuCtxGetDevice", byref(device))
        return device.value

    def context_synchronize(self) -> None:
        self._call("cuCtxSynchronize")

    # ---------------------------------------------------------------- modules and functions

    def module_load_data(self, image: bytes) -> int:
        """Load a cubin (or NUL-terminated PTX, which the driver JITs)."""
        module = c_void_p()
        self._call("cuModuleLoadData", byref(module), image)
        return module.value or 0

    def module_load_data_ex(self, image: bytes, options: Mapping[int, int] | None = None,
                            log_size: int = 16384) -> int:
        """Load a cubin or PTX with JIT `options` (JitOption -> integer value);
        on failure the error carries the JIT compiler's error log."""
        error_log = ctypes.create_string_buffer(log_size)
        settings = {**(options or {}), JitOption.ERROR_LOG_BUFFER: ctypes.addressof(error_log),
                    JitOption.ERROR_LOG_BUFFER_SIZE_BYTES: log_size}
        keys = (_CUenum * len(settings))(*settings)
        values = (c_void_p * len(settings))(*settings.values())
        module = c_void_p()
        code = self.function("cuModuleLoadDataEx")(byref(module), image, len(settings), keys, values)
        self.check("cuModuleLoadDataEx", code, error_log.value.decode("utf-8", "replace").strip())
        return module.value or 0

    def module_get_function(self, module: int, name: str) -> int:
        function = c_void_p()
        code = self.function("cuModuleGetFunction")(byref(function), module, name.encode("utf-8"))
        self.check("cuModuleGetFunction", code, f"kernel {name!r}")
        return function.value or 0

    def module_unload(self, module: int) -> None:
        self._call("cuModuleUnload", module)

    def function_attribute(self, attribute: int, function: int) -> int:
        value = c_int32()
        self._call("cuFuncGetAttribute", byref(value), attribute, function)
        return value.value

    def set_function_attribute(self, function: int, attribute: int, value: int) -> None:
        self._call("cuFuncSetAttribute", function, attribute, value)

    def launch_kernel(self, function: int, grid: Sequence[int], block: Sequence[int], shared_bytes: int,
                      stream: int, parameters: Any) -> None:
        """Launch on `grid` (x, y, z) blocks of `block` (x, y, z) threads.
        `parameters` is a ctypes array of `c_void_p`, each pointing at one argument's value."""
        self._call("cuLaunchKernel", function, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                   shared_bytes, stream, parameters, None)

    def launch_kernel_ex(self, function: int, grid: Sequence[int], block: Sequence[int], shared_bytes: int,
                         stream: int, parameters: Any, attributes: ctypes.Array | None = None) -> None:
        """Launch through `cuLaunchKernelEx` with launch `attributes` (from `launch_attributes`)."""
        config = launch_config(grid, block, shared_bytes, stream, attributes)
        self._call("cuLaunchKernelEx", byref(config), function, parameters, None)

    def occupancy_max_active_blocks(self, function: int, block_size: int, dynamic_shared_bytes: int = 0) -> int:
        """How many blocks of `block_size` threads fit on one multiprocessor at once."""
        blocks = c_int32()
        self._call("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), function, block_size,
                   dynamic_shared_bytes)
        return blocks.value

    # ---------------------------------------------------------------- tensor maps

    def tensor_map_encode_tiled(self, encoding: TensorMapEncoding) -> bytes:
        """The 128 bytes of the TMA tensor map `encoding` describes
        (`cuTensorMapEncodeTiled`), to pass to a kernel by value. Raises
        `CudaError` naming the encoding when the driver refuses it."""
        rank = encoding.rank
        # ctypes aligns to 8 at most: place the 64-byte aligned map inside a larger buffer.
        buffer = ctypes.create_string_buffer(TENSOR_MAP_BYTES + TENSOR_MAP_ALIGNMENT)
        address = -(-ctypes.addressof(buffer) // TENSOR_MAP_ALIGNMENT) * TENSOR_MAP_ALIGNMENT
        code = self.function("cuTensorMapEncodeTiled")(
            address, int(encoding.data_type), rank, encoding.address, (c_uint64 * rank)(*encoding.dims),
            (c_uint64 * max(1, rank - 1))(*encoding.strides), (c_uint32 * rank)(*encoding.box),
            (c_uint32 * rank)(*encoding.element_strides), encoding.interleave, int(encoding.swizzle),
            int(encoding.l2_promotion), int(encoding.oob_fill))
        self.check("cuTensorMapEncodeTiled", code,
                   f"data type {encoding.data_type.name}, address 0x{encoding.address:x}, dims {encoding.dims}, "
                   f"byte strides {encoding.strides}, box {encoding.box} (innermost dim first), "
                   f"swizzle {encoding.swizzle.name}, fill {encoding.oob_fill.name}")
        return ctypes.string_at(address, TENSOR_MAP_BYTES)

    # ---------------------------------------------------------------- memory

    def memory_alloc(self, nbytes: int) -> int:
        pointer = _CUdeviceptr()
        self._call("cuMemAlloc_v2", byref(pointer), nbytes)
        return pointer.value

    def memory_free(self, pointer: int) -> None:
        self._call("cuMemFree_v2", pointer)

    def copy_host_to_device(self, destination: int, source: Any, nbytes: int) -> None:
        """Copy `nbytes` from a host buffer (bytes-like, or an int address) to device memory."""
        address, _keep = _host_address(source)
        self._call("cuMemcpyHtoD_v2", destination, address, nbytes)

    def copy_device_to_host(self, destination: Any, source: int, nbytes: int) -> None:
        """Copy `nbytes` from device memory to a writable host buffer (or an int address)."""
        address, _keep = _host_address(destination)
        self._call("cuMemcpyDtoH_v2", address, source, nbytes)

    def memset_d8(self, pointer: int, value: int, nbytes: int) -> None:
        self._call("cuMemsetD8_v2", pointer, value, nbytes)

    def pointer_attribute(self, attribute: int, pointer: int) -> int:
        """A pointer attribute as an int (context handle, MemoryType, device ordinal, ...)."""
        # The widest answer is a 64-bit handle; narrower ones fill the low bytes
        # of the zeroed buffer, which reads correctly on little-endian hosts.
        value = c_uint64(0)
        self._call("cuPointerGetAttribute", byref(value), attribute, pointer)
        return value.value

    # ---------------------------------------------------------------- streams and events

    def stream_create(self, flags: int = 0) -> int:
        stream = c_void_p()
        self._call("cuStreamCreate", byref(stream), flags)
        return stream.value or 0

    def stream_synchronize(self, stream: int) -> None:
        self._call("cuStreamSynchronize", stream)

    def stream_destroy(self, stream: int) -> None:
        self._call("cuStreamDestroy_v2", stream)

    def event_create(self, flags: int = 0) -> int:
        event = c_void_p()
        self._call("cuEventCreate", byref(event), flags)
        return event.value or 0

    def event_record(self, event: int, stream: int = 0) -> None:
        self._call("cuEventRecord", event, stream)

    def event_synchronize(self, event: int) -> None:
        self._call("cuEventSynchronize", event)

    def event_elapsed_ms(self, start: int, end: int) -> float:
        milliseconds = c_float()
        self._call("cuEventElapsedTime", byref(milliseconds), start, end)
        return milliseconds.value

    def event_destroy(self, event: int) -> None:
        self._call("cuEventDestroy_v2", event)


_driver: CudaDriver | None = None
_driver_lock = threading.Lock()


def driver() -> CudaDriver:
    """This process's CUDA driver, found by `libs.load_driver` and initialised
    (cuInit) on first use. Raises `libs.LibraryNotFound` when there is no driver
    library and `CudaError` when it cannot initialise (no GPU, say)."""
    global _driver
    with _driver_lock:
        if _driver is None:
            found = libs.load_driver()
            candidate = CudaDriver(found.library, found.path)
            candidate.init(0)
            _driver = candidate
        return _driver
