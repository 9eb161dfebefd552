"""Launching a compiled kernel on a GPU through the driver API.

A `LaunchSpec` says what a kernel binary needs at launch: its parameters and
their types, the block size, the dynamic shared memory, the cubin (or PTX).
A `LaunchPlan` is that spec loaded on one device: the `CUfunction`, one ctypes
value per run-time parameter allocated once, the array of their addresses that
`cuLaunchKernel` reads, and a launch function generated once with `exec` for
this parameter list. A launch writes each argument into its slot and calls
`cuLaunchKernel`; nothing is allocated per call. Kernels launched as thread
block clusters (`num_ctas` > 1), as cooperative grids or with programmatic
stream serialization (`launch_pdl`) go through `cuLaunchKernelEx` with those
launch attributes.

Arguments: pointers are a tensor (`data_ptr()`), an object with
`__cuda_array_interface__` (CuPy, Numba), an int address or None (null); a tensor
on the CPU or on another GPU is refused with an error naming the parameter.
Scalars are written with the width of their signature type after a range check.
A host tensor descriptor the kernel reads with TMA also gets its tensor map,
appended after the other arguments (`LaunchSpec.tensormaps`), encoded by the
driver once per distinct base, shape, strides and padding (`tensormap.py`).
The stream is the caller's, else torch's current stream on the device once torch
has initialised CUDA, else the default stream 0.

A kernel that needs global scratch memory (`LaunchSpec.global_scratch_size`
bytes per block: tensor maps it builds on the device) takes its address as one
more argument, after all others. Each launch asks the allocator set with
`triton.set_allocator` for grid size * num_ctas * that many bytes on the launch's
stream, as Triton's launcher does; kernels without scratch launch as before.
"""

from __future__ import annotations

import ctypes
import functools
import operator
import struct
import sys
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import OutOfResources, TritonError
from ...ir.types import descriptor_leaf_types, is_descriptor_type, parse_type
from ...runtime import _allocation
from ...tensors import TensorWrapper
from ...tools.tensor_descriptor import TensorDescriptor
from .bindings.driver_api import (
    TENSOR_MAP_BYTES,
    CudaDriver,
    CudaError,
    DeviceAttribute,
    FunctionAttribute,
    LaunchConfig,
    MemoryType,
    PointerAttribute,
    launch_attributes,
    launch_config,
)
from .tensormap import TensorMapEncoder

MAX_GRID = (2**31 - 1, 65535, 65535)
# Shared memory above this needs the MAX_DYNAMIC_SHARED_SIZE_BYTES opt-in.
DEFAULT_SHARED_LIMIT = 48 * 1024

# Launch failures that mean "the context current on this thread is not the
# module's": no context yet on a new thread, or another one made current.
_CUDA_ERROR_INVALID_CONTEXT = 201
_CUDA_ERROR_INVALID_HANDLE = 400
_CONTEXT_ERRORS = frozenset({_CUDA_ERROR_INVALID_CONTEXT, _CUDA_ERROR_INVALID_HANDLE})

_INT_TYPES: dict[str, tuple[type, int, int]] = {
    "i8": (ctypes.c_int8, -(2**7), 2**7 - 1),
    "i16": (ctypes.c_int16, -(2**15), 2**15 - 1),
    "i32": (ctypes.c_int32, -(2**31), 2**31 - 1),
    "i64": (ctypes.c_int64, -(2**63), 2**63 - 1),
    "u8": (ctypes.c_uint8, 0, 2**8 - 1),
    "u16": (ctypes.c_uint16, 0, 2**16 - 1),
    "u32": (ctypes.c_uint32, 0, 2**32 - 1),
    "u64": (ctypes.c_uint64, 0, 2**64 - 1),
}
_BOOL_TYPES = frozenset({"i1", "u1"})
_FLOAT_TYPES: dict[str, type] = {"fp32": ctypes.c_float, "f32": ctypes.c_float, "fp64": ctypes.c_double}
_HALF_TYPES = frozenset({"fp16", "bf16"})
_BIT = {False: 0, True: 1}
_HALF = struct.Struct("<e")


@dataclass(frozen=True)
class Parameter:
    """One kernel parameter, or one element of a tuple parameter: the parameter's
    position among all parameters and its name, the signature type (`*fp32`,
    `i32`, `fp16`, ... or `constexpr`, which is not passed; for a tuple
    parameter, a tuple of such types, nested as the argument is) and, for an
    element, its index path in the argument."""

    num: int
    name: str
    type: Any
    path: tuple[int, ...] = ()
    in_descriptor: bool = False
    """Whether this is a part of a host tensor descriptor: the last index of
    `path` is then the part's in `TensorDescriptor.kernel_arguments()`."""

    @property
    def is_constexpr(self) -> bool:
        return self.type == "constexpr"

    @property
    def is_tensormap(self) -> bool:
        """Whether this is the TMA tensor map of a host descriptor (`tensormap<fp16[64, 64]>`),
        which the launcher encodes from the whole descriptor."""
        return isinstance(self.type, str) and self.type.startswith("tensormap<")

    @property
    def is_pointer(self) -> bool:
        # A host descriptor itself is passed as its tensor's address.
        return isinstance(self.type, str) and (self.type.startswith("*") or is_descriptor_type(self.type))

    @property
    def label(self) -> str:
        """How messages name it, and how generated code reads it: `x_ptr`, `t[1][0]`,
        `desc.kernel_arguments()[2]` for a part of a descriptor."""
        if self.in_descriptor:
            owner = self.name + "".join(f"[{index}]" for index in self.path[:-1])
            return f"{owner}.kernel_arguments()[{self.path[-1]}]"
        return self.name + "".join(f"[{index}]" for index in self.path)

    def runtime_leaves(self) -> tuple[Parameter, ...]:
        """The values passed for this parameter, in order: itself, none for a
        constexpr, the elements that are not constexprs for a tuple (depth first),
        the parts of a host tensor descriptor (`descriptor_leaf_types`)."""
        if isinstance(self.type, tuple):
            return tuple(leaf for index, item in enumerate(self.type)
                         for leaf in Parameter(self.num, self.name, item, (*self.path, index)).runtime_leaves())
        if is_descriptor_type(self.type) and not self.in_descriptor:
            return tuple(Parameter(self.num, self.name, part_type, (*self.path, part), in_descriptor=True)
                         for part, part_type in enumerate(descriptor_leaf_types(self.type)))
        return () if self.is_constexpr else (self,)


def element_at(kernel: str, name: str, path: Sequence[int], value: Any) -> Any:
    """Element `path` of the value of argument `name`. Raises TypeError naming
    the argument when it does not have the tuple structure the kernel was
    compiled for."""
    for depth, index in enumerate(path):
        if isinstance(value, TensorDescriptor):
            value = value.kernel_arguments()
        if not isinstance(value, tuple) or index >= len(value):
            where = name + "".join(f"[{i}]" for i in path[:depth])
            raise TypeError(f"kernel {kernel}: argument {where} must be a tuple of at least {index + 1} "
                            f"elements, as the kernel was compiled for, got {value!r}")
        value = value[index]
    return value


def _mark_constexprs(entry: Any, path: tuple[int, ...], constants: Mapping[tuple[int, ...], Any]) -> Any:
    """A signature entry with the elements that `constants` holds (by index path) typed constexpr."""
    if path in constants:
        return "constexpr"
    if isinstance(entry, tuple):
        return tuple(_mark_constexprs(item, (*path, index), constants) for index, item in enumerate(entry))
    return entry


@dataclass(frozen=True)
class LaunchSpec:
    """What launching one compiled kernel takes. `name` is the kernel's Python
    name (for messages), `entry` its symbol in the binary, `image` the cubin, or
    the PTX text when `is_ptx` (the driver compiles it at load), `shared` the
    dynamic shared memory in bytes, `hash` the compiled kernel's hash.
    `num_ctas` is the number of blocks one program runs on: above 1 each program
    is a thread block cluster of that many blocks along x, and a grid of X
    programs launches X * num_ctas blocks."""

    name: str
    entry: str
    parameters: tuple[Parameter, ...]
    image: bytes
    is_ptx: bool
    num_warps: int
    shared: int
    hash: str
    num_ctas: int = 1
    warp_size: int = 32
    launch_pdl: bool = False
    launch_cooperative_grid: bool = False
    argument_bytes: tuple[int, ...] | None = None
    """The size of each run-time parameter in the kernel's C signature, when the
    code generator reported it: checked against what the launcher writes."""
    tensormaps: tuple[int, ...] = ()
    """Host descriptors the kernel reads or writes with TMA: for each tensor map
    the kernel takes after all other arguments, in order, the index among the
    other run-time parameters of its descriptor (its base address)."""
    tensormap_boxes: tuple[tuple, ...] = ()
    """Per tensor map in `tensormaps`, () or the (box, swizzle bytes) its copies
    need in place of the block and no swizzle (a pipelined dot tile's)."""
    global_scratch_size: int = 0
    """Bytes of global scratch memory each block uses; above 0 the kernel takes
    the address of the whole launch's scratch buffer as its last argument, after
    the tensor maps (block b of the grid, counted x fastest, uses bytes
    [b * size, (b + 1) * size))."""
    global_scratch_align: int = 1
    """The alignment in bytes the kernel needs of its scratch buffer."""

    @property
    def block_size(self) -> int:
        return self.num_warps * self.warp_size

    @functools.cached_property
    def runtime_parameters(self) -> tuple[Parameter, ...]:
        """The values written at launch from the arguments, one per argument of the
        compiled kernel: the run-time parameters, tuple parameters as their
        run-time elements, then one tensor map per host descriptor in
        `tensormaps`. A kernel with global scratch memory takes its address after
        these, which the launcher writes itself."""
        leaves = tuple(leaf for param in self.parameters for leaf in param.runtime_leaves())
        maps = []
        for index in self.tensormaps:
            base = leaves[index]
            if not (base.in_descriptor and is_descriptor_type(base.type)):
                raise TritonError(f"kernel {self.name}: the compiled kernel takes a tensor map for its argument "
                                  f"{index} ({base.label}), which is not a host tensor descriptor")
            maps.append(Parameter(base.num, base.name, "tensormap<" + base.type[len("tensordesc<"):],
                                  base.path[:-1]))
        return leaves + tuple(maps)

    @classmethod
    def from_compiled(cls, src: Any, metadata: Any, asm: Mapping[str, Any], kernel_hash: str) -> LaunchSpec:
        """The spec of a GPU compilation of `src` (an `ASTSource`): `metadata` as a
        mapping or an object with attributes (name, entry, num_warps, num_ctas, shared,
        target, params, launch_pdl, launch_cooperative_grid, tensormaps,
        global_scratch_size, global_scratch_align), `asm` holding "cubin", or
        "ptx" alone when NVRTC compiled PTX for the driver."""

        def field(name: str, default: Any = None) -> Any:
            if isinstance(metadata, Mapping):
                return metadata.get(name, default)
            return getattr(metadata, name, default)

        runtime = set(src.runtime_parameters())
        constants = getattr(src, "constants", {})
        parameters = tuple(
            Parameter(num, name, _mark_constexprs(src.signature[name], (num,), constants)
                      if name in runtime else "constexpr")
            for num, name in enumerate(src.fn.arg_names))
        if "cubin" in asm:
            image, is_ptx = bytes(asm["cubin"]), False
        elif "ptx" in asm:
            image, is_ptx = asm["ptx"].encode("utf-8") + b"\0", True
        else:
            raise TritonError(f"kernel {field('name')} has no GPU binary (compiled for {field('target')})")
        described = field("params")
        return cls(name=field("name"), entry=field("entry") or field("name"), parameters=parameters, image=image,
                   is_ptx=is_ptx, num_warps=field("num_warps"), shared=field("shared", 0), hash=kernel_hash,
                   num_ctas=field("num_ctas", 1), warp_size=getattr(field("target"), "warp_size", 32),
                   launch_pdl=bool(field("launch_pdl", False)),
                   launch_cooperative_grid=bool(field("launch_cooperative_grid", False)),
                   argument_bytes=None if described is None else tuple(int(p[2]) for p in described),
                   tensormaps=tuple(int(i) for i in field("tensormaps", None) or ()),
                   tensormap_boxes=tuple((tuple(entry[0]), int(entry[1])) if entry else ()
                                         for entry in field("tensormap_boxes", None) or ()),
                   global_scratch_size=int(field("global_scratch_size", 0) or 0),
                   global_scratch_align=int(field("global_scratch_align", 1) or 1))

    @classmethod
    def from_kernel(cls, kernel: Any) -> LaunchSpec:
        """The spec of a `CompiledKernel` that holds a GPU binary."""
        return cls.from_compiled(kernel.src, kernel.metadata, kernel.asm, kernel.hash)


# ---------------------------------------------------------------- device and stream


def current_device(driver: CudaDriver | None = None) -> int:
    """The ordinal of the GPU kernels launch on now: torch's current device once
    torch has initialised CUDA, else the device of this thread's current context
    (CuPy and Numba make one current), else 0."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return torch.cuda.current_device()
    if driver is not None and driver.context_get_current():
        return driver.context_get_device()
    return 0


def current_stream(device: int) -> int:
    """The stream to launch on when the caller names none: torch's current stream
    on `device` once torch has initialised CUDA, else the default stream 0."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return torch.cuda.current_stream(device).cuda_stream
    return 0


def _raw_stream_getter(settle: Callable[[Callable[[int], int]], None]) -> Callable[[int], int]:
    """`current_stream`, through torch's raw-handle accessor when it has one, which
    spares building a Stream object on every launch. From the first call that
    finds CUDA initialised by torch (it stays so for the process),
    `settle(raw accessor)` is called so that the caller can use it alone."""
    torch = sys.modules.get("torch")
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    if raw is None:
        return current_stream
    is_initialized = torch.cuda.is_initialized

    def stream(device: int) -> int:
        if is_initialized():
            settle(raw)
            return raw(device)
        return 0

    return stream


# ---------------------------------------------------------------- argument checks


def check_grid(kernel: str, grid_x: Any, grid_y: Any, grid_z: Any) -> bool:
    """Whether the grid has blocks to run: False when a dimension is 0 (nothing to
    launch). Raises for negative, non-integer or too large dimensions
    (x <= 2**31-1, y and z <= 65535)."""
    dims = (grid_x, grid_y, grid_z)
    for axis, value, limit in zip("xyz", dims, MAX_GRID):
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"kernel {kernel}: grid dimension {axis} must be an integer, "
                            f"got {type(value).__name__} in grid {dims}") from None
        if value < 0:
            raise ValueError(f"kernel {kernel}: grid dimension {axis} is negative: grid {dims}")
        if value > limit:
            raise ValueError(f"kernel {kernel}: grid dimension {axis} is {value}, more than CUDA's limit of "
                             f"{limit} blocks (x <= 2**31-1, y and z <= 65535) in grid {dims}; "
                             "put the largest dimension first, or loop inside the kernel")
    return 0 not in dims


def _device_of(value: Any) -> tuple[str, int | None] | None:
    """`(kind, ordinal)` of where an array lives, from its `device` attribute
    (torch: `.type`/`.index`, CuPy: `.id`); None when it does not say."""
    device = getattr(value, "device", None)
    if device is None:
        return None
    kind = getattr(device, "type", None)
    if isinstance(kind, str):
        return kind, getattr(device, "index", None)
    ident = getattr(device, "id", None)
    if isinstance(ident, int):
        return "cuda", ident
    if isinstance(device, str):
        kind, _, index = device.partition(":")
        return kind, int(index) if index.isdigit() else None
    return None


def pointer_address(value: Any, param: Parameter, device: int, driver: CudaDriver | None,
                    kernel: str | None = None) -> int:
    """The device address to pass for pointer parameter `param` (of kernel
    `kernel`, named in the messages when given), after checking that the GPU
    `device` can use it: an array that says where it lives (torch, CuPy) must
    live there; one that does not (`__cuda_array_interface__` alone, say) must
    not be another GPU's device memory, as the driver tells. Raises ValueError
    or TypeError naming the parameter."""
    where = f"Pointer argument {param.label} (at {param.num})"
    if value is None:
        return 0
    if isinstance(value, bool):
        raise TypeError(f"{where} is a bool; pass a tensor, an int address or None")
    if isinstance(value, int):
        if not 0 <= value < 2**64:
            raise ValueError(f"{where} is the address {value}, outside 0..2**64-1")
        return value
    if isinstance(value, TensorWrapper):
        value = value.base
    if hasattr(value, "data_ptr"):
        address = value.data_ptr()
    elif hasattr(value, "__cuda_array_interface__"):
        address = value.__cuda_array_interface__["data"][0]
    elif hasattr(value, "__array_interface__"):
        raise ValueError(f"{where} cannot be accessed from Triton (cpu tensor?): it is a "
                         f"{type(value).__name__} in host memory; copy it to the GPU first")
    else:
        raise TypeError(f"{where} must be a tensor, an array with __cuda_array_interface__, an int address "
                        f"or None; got {type(value).__name__}")
    location = _device_of(value)
    if location is not None:
        kind, ordinal = location
        if kind == "cpu":
            return _pinned_address(value, address, where, driver)
        if kind != "cuda":
            raise ValueError(f"{where} cannot be accessed from Triton (cpu tensor?): it is a {kind} tensor")
        if ordinal is not None and ordinal != device:
            raise _other_device(where, kernel, ordinal, device)
    elif address and driver is not None:
        # Nothing says where the memory is: ask the driver, as Triton's launcher
        # does. The device ordinal answers that it is the driver's memory, and
        # whose: one query, as Triton's DEVICE_POINTER query is.
        try:
            ordinal = driver.pointer_attribute(PointerAttribute.DEVICE_ORDINAL, address)
            # Pinned host memory and managed memory name the device they were
            # allocated against, yet other GPUs may read them.
            if (ordinal != device
                    and driver.pointer_attribute(PointerAttribute.MEMORY_TYPE, address) == MemoryType.DEVICE
                    and not driver.pointer_attribute(PointerAttribute.IS_MANAGED, address)):
                raise _other_device(where, kernel, ordinal, device)
        except CudaError:
            raise ValueError(f"{where} cannot be accessed from Triton (cpu tensor?)") from None
    return address


def _other_device(where: str, kernel: str | None, ordinal: int, device: int) -> ValueError:
    """The error for a pointer argument in the memory of GPU `ordinal` given to a
    launch on GPU `device`: without peer access the kernel would fault there."""
    owner = f"kernel {kernel}: " if kernel else ""
    return ValueError(f"{owner}{where} is on cuda:{ordinal}, but the kernel launches on cuda:{device}; move it "
                      f"with .to('cuda:{device}') or launch under torch.cuda.device({ordinal})")


def _pinned_address(value: Any, address: int, where: str, driver: CudaDriver | None) -> int:
    """The device address of a CPU tensor in pinned (page-locked) memory, which
    the GPU reads through unified addressing as Triton allows; ValueError for
    any other CPU tensor."""
    is_pinned = getattr(value, "is_pinned", None)
    if driver is not None and address and callable(is_pinned) and is_pinned():
        try:
            return driver.pointer_attribute(PointerAttribute.DEVICE_POINTER, address)
        except CudaError:
            pass
    raise ValueError(f"{where} cannot be accessed from Triton (cpu tensor?)") from None


def _scalar_problem(param: Parameter, value: Any) -> Exception | None:
    """Why `value` cannot be passed for scalar parameter `param`, or None."""
    where = f"argument {param.label} (at {param.num}) of type {param.type}"
    kind = param.type
    if kind in _BOOL_TYPES:
        if type(value) is bool or getattr(value, "dtype", None) is not None and str(value.dtype) == "bool":
            return None
        return TypeError(f"{where} must be a bool, got {value!r}")
    if kind in _INT_TYPES:
        try:
            number = operator.index(value)
        except TypeError:
            return TypeError(f"{where} must be an integer, got {type(value).__name__}")
        _, low, high = _INT_TYPES[kind]
        if not low <= number <= high:
            return OverflowError(f"{where}: {number} is outside [{low}, {high}]")
        return None
    try:
        float(value)
    except (TypeError, ValueError):
        return TypeError(f"{where} must be a number, got {type(value).__name__}")
    return None


def _fp16_bits(value: float) -> int:
    try:
        return int.from_bytes(_HALF.pack(value), "little")
    except OverflowError:
        # Beyond fp16's range: infinity of the same sign, as a C conversion gives.
        return 0xFC00 if value < 0 else 0x7C00


def _bf16_bits(value: float) -> int:
    bits = ctypes.c_uint32.from_buffer(ctypes.c_float(value)).value
    if bits & 0x7FFFFFFF > 0x7F800000:
        return (bits >> 16) | 0x40  # NaN stays a (quiet) NaN
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


# ---------------------------------------------------------------- plans


class _NoTensorType:
    """Stands for torch.Tensor when torch is not loaded: no argument has this type."""


class LaunchPlan:
    """A kernel loaded on one device and ready to launch: `launch(grid_x, grid_y,
    grid_z, stream, *args)` with every parameter's value in order, constexprs
    included (they are skipped). `stream=None` means the current stream.

    `module`, `function`, `n_regs`, `n_spills` (in 4-byte words) and
    `n_max_threads` describe what was loaded; `storage` holds one ctypes value per
    run-time parameter and `parameters` their addresses, both reused by every launch."""

    def __init__(self, spec: LaunchSpec, device: int, driver: CudaDriver):
        self.spec = spec
        self.device = device
        self.driver = driver
        if not isinstance(spec.num_ctas, int) or spec.num_ctas < 1:
            raise TritonError(f"kernel {spec.name}: num_ctas must be a positive integer, got {spec.num_ctas!r}")
        if spec.global_scratch_size < 0 or spec.global_scratch_align < 1:
            raise TritonError(f"kernel {spec.name}: global scratch memory of {spec.global_scratch_size} bytes "
                              f"aligned to {spec.global_scratch_align}")
        self.storage, converters = _allocate_storage(spec)
        # one per descriptor type and box: descriptors of one type share their encoded maps
        self._encoders: dict[tuple, TensorMapEncoder] = {}
        for slot, param in enumerate(spec.runtime_parameters):
            if param.is_tensormap:
                converters[f"v{slot}"] = self._tensormap_writer(slot, param)
        written = tuple(ctypes.sizeof(value) for value in self.storage)
        if spec.argument_bytes is not None and spec.argument_bytes != written:
            scratch = " and a global scratch pointer" if spec.global_scratch_size else ""
            raise TritonError(f"kernel {spec.name}: the compiled kernel takes arguments of {spec.argument_bytes} "
                              f"bytes, but its signature {[p.type for p in spec.runtime_parameters]}{scratch} gives "
                              f"{written}; the code generator and the launcher disagree")
        self.parameters = (ctypes.c_void_p * max(1, len(self.storage)))(
            *(ctypes.addressof(value) for value in self.storage))
        self.context = _make_context_current(driver, device)
        self.module, self.function = self._load()
        self.n_regs = driver.function_attribute(FunctionAttribute.NUM_REGS, self.function)
        self.n_spills = driver.function_attribute(FunctionAttribute.LOCAL_SIZE_BYTES, self.function) // 4
        self.n_max_threads = driver.function_attribute(FunctionAttribute.MAX_THREADS_PER_BLOCK, self.function)
        self._check_resources()
        # The constant arguments of cuLaunchKernel, converted to their C types once.
        self._call_arguments = (ctypes.c_void_p(self.function), ctypes.c_uint32(spec.block_size),
                                ctypes.c_uint32(1), ctypes.c_uint32(spec.shared))
        self._stream_slot = ctypes.c_void_p()
        # Held while the storage is written and the launch reads it (launches from several threads).
        self.lock = threading.Lock()
        self._inline_config: tuple[LaunchConfig, ctypes.c_void_p, Any] | None = None
        self._launch_call = driver.raw_function("cuLaunchKernel")
        self._config = self._extended_launch_config()
        self._config_address = None if self._config is None else ctypes.c_void_p(ctypes.addressof(self._config))
        self.launch = self._generate_launch(converters)

    @property
    def uses_launch_attributes(self) -> bool:
        """Whether launches go through `cuLaunchKernelEx` with attributes (clusters,
        cooperative grid, programmatic stream serialization)."""
        spec = self.spec
        return spec.num_ctas != 1 or spec.launch_pdl or spec.launch_cooperative_grid

    def _extended_launch_config(self) -> LaunchConfig | None:
        """The `cuLaunchKernelEx` configuration, allocated once (grid and stream are
        written per launch), or None where plain `cuLaunchKernel` does."""
        spec = self.spec
        if not self.uses_launch_attributes:
            return None
        if spec.num_ctas > 8:
            # Clusters of more than 8 blocks are "non-portable": the kernel must opt in.
            self.driver.set_function_attribute(self.function, FunctionAttribute.NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
        self._attributes = launch_attributes(cooperative=spec.launch_cooperative_grid,
                                             programmatic_stream_serialization=spec.launch_pdl,
                                             cluster_size=spec.num_ctas)
        self._launch_ex_call = self.driver.raw_function("cuLaunchKernelEx")
        return launch_config((1, 1, 1), (spec.block_size, 1, 1), spec.shared, 0, self._attributes)

    def _launch_with_attributes(self, grid_x: Any, grid_y: Any, grid_z: Any) -> int:
        """One `cuLaunchKernelEx` launch over the grid (x counts programs: with
        clusters, each is `num_ctas` blocks) on the stream in the stream slot."""
        spec, config = self.spec, self._config
        if not check_grid(spec.name, grid_x, grid_y, grid_z):
            return 0
        blocks_x = operator.index(grid_x) * spec.num_ctas
        if blocks_x > MAX_GRID[0]:
            check_grid(spec.name, blocks_x, grid_y, grid_z)  # raises, naming the limit
        config.grid_x = blocks_x
        config.grid_y = operator.index(grid_y)
        config.grid_z = operator.index(grid_z)
        config.stream = self._stream_slot.value
        return self._launch_ex_call(self._config_address, self._call_arguments[0], self.parameters, None)

    def _load(self) -> tuple[int, int]:
        module = self.driver.module_load_data_ex(self.spec.image)
        return module, self.driver.module_get_function(module, self.spec.entry)

    def _check_resources(self) -> None:
        spec, driver = self.spec, self.driver
        if spec.block_size > self.n_max_threads:
            raise OutOfResources(spec.block_size, self.n_max_threads, "threads")
        handle = driver.device_get(self.device)
        registers = driver.device_attribute(DeviceAttribute.MAX_REGISTERS_PER_BLOCK, handle)
        if self.n_regs * spec.block_size > registers:
            raise OutOfResources(self.n_regs * spec.block_size, registers, "registers")
        static = driver.function_attribute(FunctionAttribute.SHARED_SIZE_BYTES, self.function)
        if static + spec.shared > DEFAULT_SHARED_LIMIT:
            limit = driver.device_attribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, handle)
            if static + spec.shared > limit:
                raise OutOfResources(static + spec.shared, limit, "shared memory")
            driver.set_function_attribute(self.function, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          spec.shared)

    def _generate_launch(self, converters: dict[str, Any]) -> Callable[..., None]:
        spec = self.spec
        names = [p.name for p in spec.parameters]
        values = f"({', '.join(names)}{',' if len(names) == 1 else ''})"
        # Every name the generated code owns starts with more underscores than any
        # parameter name, so a kernel parameter can never shadow one of them.
        underscores = 1 + max((len(n) - len(n.lstrip("_")) for n in [*names, spec.name]), default=0)
        prefix = "_" * underscores + "L"
        grid = f"{prefix}x, {prefix}y, {prefix}z"
        namespace: dict[str, Any] = {}
        namespace.update({
            f"{prefix}acquire": self.lock.acquire,
            f"{prefix}release": self.lock.release,
            f"{prefix}launch": self._launch_call,
            f"{prefix}function": self._call_arguments[0],
            f"{prefix}block": self._call_arguments[1],
            f"{prefix}one": self._call_arguments[2],
            f"{prefix}shared": self._call_arguments[3],
            f"{prefix}stream_slot": self._stream_slot,
            f"{prefix}params": self.parameters,
            f"{prefix}device": self.device,
            f"{prefix}stream_of": _raw_stream_getter(functools.partial(namespace.__setitem__, f"{prefix}stream_of")),
            f"{prefix}grid_ok": lambda x, y, z: check_grid(spec.name, x, y, z),
            f"{prefix}Tensor": getattr(sys.modules.get("torch"), "Tensor", _NoTensorType),
            f"{prefix}pointer": self._pointer,
            f"{prefix}argument_error": self._argument_error,
            f"{prefix}launch_converted": self._launch_converted,
            f"{prefix}launch_ex": self._launch_with_attributes,
            f"{prefix}global_scratch": self._global_scratch,
            f"{prefix}failed": self._launch_failed,
            f"{prefix}ArgumentError": ctypes.ArgumentError,
            # a kernel parameter may be called `type`, as Triton allows
            f"{prefix}type": type,
        })
        for name, value in converters.items():
            namespace[prefix + name] = value
        body = []
        parts: dict[str, str] = {}  # a host descriptor -> the variable holding its kernel_arguments()
        for slot, param in enumerate(spec.runtime_parameters):
            source = None
            if param.in_descriptor:
                owner = param.name + "".join(f"[{index}]" for index in param.path[:-1])
                if owner not in parts:
                    parts[owner] = f"{prefix}parts{len(parts)}"
                    body.append(f"{parts[owner]} = {owner}.kernel_arguments()")
                source = f"{parts[owner]}[{param.path[-1]}]"
            body.extend(_pack_lines(prefix, slot, param, source))
        scratch = []
        if spec.global_scratch_size:
            # Allocated before the lock is taken (an allocator may launch kernels
            # itself) and held until the launch is queued.
            scratch = [f"    {prefix}scratch, {prefix}scratch_address = {prefix}global_scratch({grid}, {prefix}stream)"]
            body.append(f"{prefix}v{len(spec.runtime_parameters)}.value = {prefix}scratch_address")
        body.append(f"{prefix}stream_slot.value = {prefix}stream")
        if self._config is None:
            call = [
                "        try:",
                f"            {prefix}code = {prefix}launch({prefix}function, {grid}, {prefix}block, {prefix}one, "
                f"{prefix}one, {prefix}shared, {prefix}stream_slot, {prefix}params, None)",
                f"        except {prefix}ArgumentError:",
                f"            {prefix}code = {prefix}launch_converted({grid})",
            ]
        else:
            call = [f"        {prefix}code = {prefix}launch_ex({grid})"]
        lines = [
            f"def {_identifier(spec.name)}({grid}, {prefix}stream, {', '.join(names)}):",
            f"    if not (0 < {prefix}x <= {MAX_GRID[0]} and 0 < {prefix}y <= {MAX_GRID[1]} "
            f"and 0 < {prefix}z <= {MAX_GRID[2]}):",
            f"        if not {prefix}grid_ok({grid}):",
            "            return",
            f"    if {prefix}stream is None:",
            f"        {prefix}stream = {prefix}stream_of({prefix}device)",
            *scratch,
            # acquire/release in a try costs half of a with statement.
            f"    {prefix}acquire()",
            "    try:",
            "        try:",
            *(f"            {line}" for line in body),
            f"        except Exception as {prefix}error:",
            f"            {prefix}argument_error({prefix}error, {values}, {prefix}stream)",
            *call,
            f"        if {prefix}code:",
            f"            {prefix}failed({prefix}code, {grid})",
            "    finally:",
            f"        {prefix}release()",
        ]
        source = "\n".join(lines) + "\n"
        exec(compile(source, f"<launcher of {spec.name}>", "exec"), namespace)
        launch = namespace[_identifier(spec.name)]
        launch.__source__ = source
        return launch

    def inline_parts(self) -> dict[str, Any] | None:
        """What code that launches this plan itself, without `launch`, uses (for the
        dispatcher of `runtime.dispatch`): `acquire`/`release` (the plan's lock, held
        while the storage is written and launched from), `storage` (one ctypes value
        per run-time parameter), `params` (their addresses), `config` (a
        `LaunchConfig` whose `grid_x` and `stream` the caller sets) at
        `config_address`, `call_ex` (cuLaunchKernelEx without argument types: four
        arguments convert faster than cuLaunchKernel's eleven), `function`, and
        `failed(code, grid_x, stream)`, which raises for a launch that returned
        `code`. None when the plan launches with attributes (clusters and the like),
        passes some parameter as a converted value (fp16/bf16 scalars), takes
        global scratch memory, or the driver has no cuLaunchKernelEx."""
        if self._config is not None or self.spec.global_scratch_size or any(p.type in _HALF_TYPES or p.is_tensormap
                                           for p in self.spec.runtime_parameters):
            return None
        if self._inline_config is None:
            try:
                call_ex = self.driver.raw_function("cuLaunchKernelEx")
            except TritonError:  # a driver without it
                return None
            config = launch_config((1, 1, 1), (self.spec.block_size, 1, 1), self.spec.shared, 0)
            self._inline_config = (config, ctypes.c_void_p(ctypes.addressof(config)), call_ex)
        config, address, call_ex = self._inline_config
        return {"acquire": self.lock.acquire, "release": self.lock.release, "storage": self.storage,
                "params": self.parameters, "config": config, "config_address": address, "call_ex": call_ex,
                "function": self._call_arguments[0], "failed": self._inline_failed}

    def _inline_failed(self, code: int, grid_x: int, stream: int) -> None:
        """An inline launch (see `inline_parts`) over (grid_x, 1, 1) on `stream`
        returned `code`: retried or reported as the plan's own launches are."""
        self._stream_slot.value = stream
        self._launch_failed(code, grid_x, 1, 1, "cuLaunchKernelEx")

    def _global_scratch(self, grid_x: Any, grid_y: Any, grid_z: Any, stream: Any) -> tuple[Any, int]:
        """The global scratch memory of one launch over the grid on `stream`: grid
        size * num_ctas * `global_scratch_size` bytes from this context's allocator
        (`triton.set_allocator`), called as Triton's launcher calls it. Returns the
        buffer, which the caller keeps until the launch is queued, and its
        address. Raises RuntimeError when no allocator is set, TritonError when
        the allocator's answer cannot be used, both naming the kernel."""
        spec = self.spec
        try:
            programs = operator.index(grid_x) * operator.index(grid_y) * operator.index(grid_z)
        except TypeError:
            check_grid(spec.name, grid_x, grid_y, grid_z)  # raises, naming the dimension
            raise
        size = programs * spec.num_ctas * spec.global_scratch_size
        allocate = _allocation.allocator.get()
        if allocate is None or isinstance(allocate, _allocation.NullAllocator):
            raise _allocation.no_allocator_error(size, spec.name)
        buffer = allocate(size, spec.global_scratch_align, stream)
        return buffer, self._scratch_address(buffer, size)

    def _scratch_address(self, buffer: Any, size: int) -> int:
        """The address of `buffer`, which the allocator returned for `size` bytes of
        scratch memory: a tensor (`data_ptr()`) on this plan's GPU of at least that
        many bytes, or an int address. Raises TritonError naming the kernel."""
        returned = (f"kernel {self.spec.name}: the allocator set with triton.set_allocator, asked for {size} bytes "
                    "of global scratch memory, returned")
        if isinstance(buffer, int) and not isinstance(buffer, bool):
            address = buffer
        elif callable(getattr(buffer, "data_ptr", None)):
            location = _device_of(buffer)
            if location is not None and (location[0] != "cuda" or location[1] not in (None, self.device)):
                kind, ordinal = location
                raise TritonError(f"{returned} a tensor on {kind if ordinal is None else f'{kind}:{ordinal}'}; "
                                  f"allocate it on cuda:{self.device}")
            numel, element_size = getattr(buffer, "numel", None), getattr(buffer, "element_size", None)
            if callable(numel) and callable(element_size) and numel() * element_size() < size:
                raise TritonError(f"{returned} a tensor of {numel() * element_size()} bytes")
            address = buffer.data_ptr()
        else:
            raise TritonError(f"{returned} a {type(buffer).__name__}, which has no data_ptr(); return a tensor "
                              "of at least that many bytes")
        if not isinstance(address, int) or not 0 < address < 2**64:
            raise TritonError(f"{returned} a buffer at address {address!r}")
        return address

    def _tensormap_writer(self, slot: int, param: Parameter) -> Callable[[TensorDescriptor], None]:
        """What writes the tensor map of host descriptor `param` into its slot:
        encoded from the descriptor's base address (as written into its own slot
        just before), shape, strides and padding, once per distinct such tuple."""
        spec = self.spec
        number = slot - (len(spec.runtime_parameters) - len(spec.tensormaps))
        base = self.storage[spec.tensormaps[number]]
        box, swizzle = spec.tensormap_boxes[number] if number < len(spec.tensormap_boxes) and \
            spec.tensormap_boxes[number] else (None, 0)
        key = (param.type, box, swizzle)
        encoder = self._encoders.get(key)
        if encoder is None:
            desc_type = parse_type("tensordesc<" + param.type[len("tensormap<"):])
            encoder = self._encoders[key] = TensorMapEncoder(self.driver, desc_type, box, swizzle)
        address = ctypes.addressof(self.storage[slot])
        memmove = ctypes.memmove
        written = [None]  # the encoded map in the slot: a launch with the same tensor copies nothing

        def write(desc: TensorDescriptor) -> None:
            try:
                encoded = encoder(base.value, desc.shape, desc.strides, desc.padding)
            except CudaError as error:
                raise ValueError(f"kernel {spec.name}: tensor descriptor {param.label} (at {param.num}) cannot be "
                                 f"read with TMA: {error}") from None
            if encoded is not written[0]:
                memmove(address, encoded, TENSOR_MAP_BYTES)
                written[0] = encoded

        return write

    def _pointer(self, value: Any, slot: int) -> int:
        return pointer_address(value, self.spec.runtime_parameters[slot], self.device, self.driver, self.spec.name)

    def _argument_error(self, error: Exception, values: Sequence[Any], stream: Any) -> None:
        """Raise an error naming the first argument (or the stream) that cannot be
        passed; `error` is what the fast path met."""
        spec = self.spec
        for param in spec.runtime_parameters:
            value = element_at(spec.name, param.name, param.path, values[param.num])
            if param.is_tensormap:
                continue  # its writer names the descriptor in what it raises
            if param.is_pointer:
                try:
                    pointer_address(value, param, self.device, self.driver, spec.name)
                except (TypeError, ValueError) as named:
                    raise named.with_traceback(None) from None
                continue
            problem = _scalar_problem(param, value)
            if problem is not None:
                raise problem.with_traceback(None) from None
        if not isinstance(stream, int):
            raise TypeError(f"kernel {spec.name}: the stream must be a CUDA stream handle (an int, such as "
                            f"torch.cuda.current_stream().cuda_stream), got {type(stream).__name__}") from None
        raise error

    def _launch_converted(self, grid_x: Any, grid_y: Any, grid_z: Any) -> int:
        """Launch with grid dimensions that are integers of another type (numpy's)."""
        if self._config is not None:
            return self._launch_with_attributes(grid_x, grid_y, grid_z)
        check_grid(self.spec.name, grid_x, grid_y, grid_z)
        function, block, one, shared = self._call_arguments
        return self._launch_call(function, operator.index(grid_x), operator.index(grid_y), operator.index(grid_z),
                                 block, one, one, shared, self._stream_slot, self.parameters, None)

    def _launch_failed(self, code: int, grid_x: int, grid_y: int, grid_z: int, call: str | None = None) -> None:
        """A launch (through `call`; by default the one this plan makes) returned
        `code`: retry once with the device's context made current when no context or
        another one was current on this thread; else raise."""
        spec = self.spec
        if code in _CONTEXT_ERRORS:
            self.driver.context_set_current(self.context)
            code = self._launch_converted(grid_x, grid_y, grid_z)
        call = call or ("cuLaunchKernel" if self._config is None else "cuLaunchKernelEx")
        self.driver.check(call, code,
                          f"kernel {spec.name}: grid ({grid_x}, {grid_y}, {grid_z}), {spec.block_size} threads "
                          f"per block, {spec.shared} bytes of shared memory, on cuda:{self.device}")


def _identifier(name: str) -> str:
    """`name` when it is a Python identifier (so that Python's own messages about a
    wrong argument count name the kernel), else a stand-in."""
    return name if name.isidentifier() else "kernel"


def _allocate_storage(spec: LaunchSpec) -> tuple[list[Any], dict[str, Any]]:
    """One ctypes value per run-time parameter, with the width of its type (and a
    last one for the global scratch address of a kernel that takes it), and the
    helpers the generated packer calls by name."""
    storage: list[Any] = []
    converters: dict[str, Any] = {}
    for slot, param in enumerate(spec.runtime_parameters):
        kind = param.type
        if param.is_pointer:
            value = ctypes.c_uint64()
        elif kind in _BOOL_TYPES:
            value = ctypes.c_uint8()
        elif kind in _INT_TYPES:
            value = _INT_TYPES[kind][0]()
        elif kind in _FLOAT_TYPES:
            value = _FLOAT_TYPES[kind]()
        elif kind in _HALF_TYPES:
            value = ctypes.c_uint16()
        elif param.is_tensormap:
            value = (ctypes.c_uint64 * (TENSOR_MAP_BYTES // 8))()  # written by the plan's tensor map writer
            storage.append(value)
            continue
        else:
            raise TritonError(f"kernel {spec.name}: parameter {param.label} has type {kind}, which tritone's "
                              "launcher cannot pass yet")
        storage.append(value)
        converters[f"v{slot}"] = value
    if spec.global_scratch_size:
        # The scratch buffer's address, the kernel's last argument.
        converters[f"v{len(storage)}"] = scratch = ctypes.c_uint64()
        storage.append(scratch)
    converters.update({"BIT": _BIT, "fp16": _fp16_bits, "bf16": _bf16_bits})
    return storage, converters


def _pack_lines(prefix: str, slot: int, param: Parameter, source: str | None = None) -> list[str]:
    """The generated statements writing argument `param` (a parameter or a tuple's
    element) into its slot, read from the expression `source` (`param.label` by default)."""
    name, kind, target = source or param.label, param.type, f"{prefix}v{slot}.value"
    if param.is_tensormap:
        return [f"{prefix}v{slot}({name})"]
    if param.is_pointer:
        return [
            f"if {prefix}type({name}) is {prefix}Tensor and {name}.get_device() == {prefix}device:",
            f"    {target} = {name}.data_ptr()",
            "else:",
            f"    {target} = {prefix}pointer({name}, {slot})",
        ]
    if kind in _BOOL_TYPES:
        return [f"{target} = {prefix}BIT[{name}]"]
    if kind in _INT_TYPES:
        _, low, high = _INT_TYPES[kind]
        return [f"if not {low} <= {name} <= {high}:", "    raise OverflowError", f"{target} = {name}"]
    if kind in _HALF_TYPES:
        return [f"{target} = {prefix}{kind}({name})"]
    return [f"{target} = {name}"]


def _make_context_current(driver: CudaDriver, device: int) -> int:
    """Make `device`'s primary context (the one torch and the CUDA runtime use)
    current on this thread; returns it."""
    context = _primary_context(driver, device)
    if driver.context_get_current() != context:
        driver.context_set_current(context)
    return context


_primary_contexts: weakref.WeakKeyDictionary[CudaDriver, dict[int, int]] = weakref.WeakKeyDictionary()
_plans: weakref.WeakKeyDictionary[CudaDriver, dict[tuple[str, str, int], LaunchPlan]] = weakref.WeakKeyDictionary()
_plans_lock = threading.RLock()


def _primary_context(driver: CudaDriver, device: int) -> int:
    with _plans_lock:
        contexts = _primary_contexts.setdefault(driver, {})
        if device not in contexts:
            # Retained once per process and device, and never released: plans live as long as the process.
            contexts[device] = driver.primary_context_retain(driver.device_get(device))
        return contexts[device]


def plan_for(spec: LaunchSpec, device: int, driver: CudaDriver) -> LaunchPlan:
    """The plan of `spec` on `device`, loaded on first use and shared by every
    caller with the same kernel hash and entry."""
    key = (spec.hash, spec.entry, device)
    with _plans_lock:
        plans = _plans.setdefault(driver, {})
        plan = plans.get(key)
        if plan is None:
            plan = plans[key] = LaunchPlan(spec, device, driver)
        return plan
