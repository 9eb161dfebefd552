"""TMA tensor maps of host tensor descriptors: which descriptors TMA can copy,
and the 128 bytes the driver encodes for one (`cuTensorMapEncodeTiled`).

A host `TensorDescriptor` argument of a kernel compiled for sm_90+ is read and
written with TMA (`backends/cuda/tma.py`) when its block meets the copy
engine's rules, which depend only on the kernel's signature type
(`tensordesc<fp16[64, 64]>`), so the choice is made once per specialization:

- rank 1 to 5 (a box holds at most 256 elements per dim: a bigger block is
  copied as several boxes, `box_shape`);
- the block's innermost dim a multiple of 16 bytes;
- an element type the copy engine moves (every 1-, 2-, 4- and 8-byte type the
  CUDA backend has; fp8e4b15, which has no NaN, stays on pointer code);
- the block at most `MAX_TILE_BYTES`, as it is staged in shared memory.

The rest of TMA's rules, a 16-byte aligned base and strides (but the
innermost) that are multiples of 16 bytes, are what `TensorDescriptor` itself
requires of every descriptor. Nothing here imports the code generator: the
launch plan of a kernel from the disk cache uses `TensorMapEncoder` alone.
"""

from __future__ import annotations

from typing import Any

from ...ir.types import tensordesc_type, type_text
from .bindings.driver_api import (
    TENSOR_MAP_BYTES,
    CudaDriver,
    TensorMapDataType,
    TensorMapEncoding,
    TensorMapL2Promotion,
    TensorMapOOBFill,
    TensorMapSwizzle,
)

TMA_MIN_ARCH = 90
MAX_RANK = 5
MAX_BOX_DIM = 256
INNER_BOX_BYTES_MULTIPLE = 16
# A box's innermost coordinate, in bytes, must be a multiple of this: else the copy
# engine faults with an illegal instruction (seen on an H100).
TMA_COORDINATE_ALIGN_BYTES = 16
# A block staged in shared memory: a quarter of Hopper's 227 KiB leaves room for
# the kernel's other tiles; larger blocks keep pointer code.
MAX_TILE_BYTES = 64 * 1024

# The copy engine moves bits: each element type as a data type of its width,
# floats as themselves so that NaN padding can be requested.
DATA_TYPES: dict[str, TensorMapDataType] = {
    "i1": TensorMapDataType.UINT8, "i8": TensorMapDataType.UINT8, "u8": TensorMapDataType.UINT8,
    "fp8e4nv": TensorMapDataType.UINT8, "fp8e5": TensorMapDataType.UINT8,
    "i16": TensorMapDataType.UINT16, "u16": TensorMapDataType.UINT16,
    "i32": TensorMapDataType.INT32, "u32": TensorMapDataType.UINT32,
    "i64": TensorMapDataType.INT64, "u64": TensorMapDataType.UINT64,
    "fp16": TensorMapDataType.FLOAT16, "bf16": TensorMapDataType.BFLOAT16,
    "fp32": TensorMapDataType.FLOAT32, "fp64": TensorMapDataType.FLOAT64,
}
# Floats the copy engine cannot fill with NaN (it encodes them as UINT8): their
# NaN padding is applied by the kernel after the copy.
SOFTWARE_NAN_FILL = frozenset({"fp8e4nv", "fp8e5"})


# swizzle bytes -> the map's swizzle mode (the same codes as `tensormap.replace`'s)
SWIZZLES = {0: TensorMapSwizzle.NONE, 32: TensorMapSwizzle.B32, 64: TensorMapSwizzle.B64,
             128: TensorMapSwizzle.B128}


def element_key(desc_type: tensordesc_type) -> str:
    return type_text(desc_type.element_ty)


def tma_unsupported_reason(desc_type: tensordesc_type) -> str | None:
    """Why blocks of `desc_type` cannot be copied by TMA (the descriptor then
    keeps pointer code), or None when they can."""
    shape = desc_type.block.shape
    element = element_key(desc_type)
    itemsize = desc_type.element_ty.itemsize
    if element not in DATA_TYPES:
        return f"the copy engine has no data type for {element}"
    if not 1 <= len(shape) <= MAX_RANK:
        return f"rank {len(shape)} is outside 1..{MAX_RANK}"
    inner = shape[-1] * itemsize
    if inner % INNER_BOX_BYTES_MULTIPLE:
        return (f"the block's innermost dim is {inner} bytes, not a multiple of "
                f"{INNER_BOX_BYTES_MULTIPLE}")
    total = itemsize
    for dim in shape:
        total *= dim
    if total > MAX_TILE_BYTES:
        return f"the block is {total} bytes, more than the {MAX_TILE_BYTES} staged in shared memory"
    return None


def box_shape(desc_type: Any) -> tuple[int, ...]:
    """The box of a descriptor (or tensor map) type's copies: its block, each dim
    at most `MAX_BOX_DIM` (block dims are powers of two, so boxes tile it)."""
    return tuple(min(dim, MAX_BOX_DIM) for dim in desc_type.block.shape)


def tile_bytes(desc_type: Any) -> int:
    """Bytes of one block of a descriptor (or tensor map) type, densely packed."""
    total = desc_type.element_ty.itemsize
    for dim in desc_type.block.shape:
        total *= dim
    return total


def encoding(desc_type: tensordesc_type, address: int, shape: list[int], strides: list[int],
             nan_padding: bool, box: tuple[int, ...] | None = None, swizzle: int = 0) -> TensorMapEncoding:
    """The `cuTensorMapEncodeTiled` arguments of a descriptor of `desc_type` over
    the tensor at `address` of `shape` and `strides` (in elements, outermost
    first, as `TensorDescriptor` holds them): dims reversed (innermost first),
    strides in bytes, the box `box_shape` and no swizzle (the kernel reads the
    tile row-major, box by box) unless the kernel asked for a `box` (outermost
    first) and `swizzle` (bytes: 32, 64 or 128) of its own (a pipelined dot
    tile's swizzle column), 128-byte L2 promotion, and NaN filling where the
    copy engine does it."""
    element = element_key(desc_type)
    itemsize = desc_type.element_ty.itemsize
    rank = desc_type.rank
    fill = TensorMapOOBFill.NONE
    if nan_padding and element not in SOFTWARE_NAN_FILL:
        fill = TensorMapOOBFill.NAN_REQUEST_ZERO_FMA
    return TensorMapEncoding(
        data_type=DATA_TYPES[element], address=address,
        dims=tuple(int(shape[d]) for d in reversed(range(rank))),
        strides=tuple(int(strides[d]) * itemsize for d in reversed(range(rank - 1))),
        box=tuple(reversed(tuple(box) if box else box_shape(desc_type))),
        element_strides=(1,) * rank, swizzle=SWIZZLES[swizzle],
        l2_promotion=TensorMapL2Promotion.L2_128B, oob_fill=fill)


class TensorMapEncoder:
    """The tensor maps of one kernel parameter of `desc_type` (copied in `box`es
    with `swizzle` where the kernel asked for them), encoded by
    `driver` once per distinct (address, shape, strides, padding) and kept:
    a launch with a descriptor seen before copies 128 cached bytes."""

    # Bounds the memory a long run with ever new tensors keeps.
    MAX_ENTRIES = 1024

    def __init__(self, driver: CudaDriver, desc_type: tensordesc_type, box: tuple[int, ...] | None = None,
                 swizzle: int = 0):
        self.driver = driver
        self.desc_type = desc_type
        self.box, self.swizzle = box, swizzle
        self.maps: dict[tuple, bytes] = {}

    def __call__(self, address: int, shape: Any, strides: Any, padding: str) -> bytes:
        key = (address, tuple(shape), tuple(strides), padding)
        found = self.maps.get(key)
        if found is None:
            found = self.driver.tensor_map_encode_tiled(
                encoding(self.desc_type, address, list(shape), list(strides), padding == "nan", self.box,
                         self.swizzle))
            if len(self.maps) >= self.MAX_ENTRIES:
                self.maps.clear()
            self.maps[key] = found
        return found


__all__ = ["TENSOR_MAP_BYTES", "TMA_MIN_ARCH", "TensorMapEncoder", "box_shape", "encoding", "tma_unsupported_reason",
           "tile_bytes"]
