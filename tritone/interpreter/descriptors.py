"""The tensor descriptor ops (docs/IR.md "Tensor descriptors") with numpy.

A descriptor is its tensor's address (values.py); the ops take the shape,
strides and padding as operands. An access computes the address of every
element of the block and whether it lies inside the tensor (`0 <= index <
shape` in every dim); the memory then sees elements outside as masked off,
so a padded load or a dropped store never touches memory and is never an
out-of-bounds error, as with TMA on the GPU.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..ir.core import Operation
from . import values as V
from .memory import AccessError

_ALIGNMENT = 16  # bytes: of the base and of every stride but the last


def _element_type(op: Operation):
    return op.operands[0].type.element_ty


def _rank(op: Operation) -> int:
    return op.operands[0].type.rank


def _addresses(base, shape, strides, indices: list[np.ndarray], itemsize: int) -> tuple[np.ndarray, np.ndarray]:
    """(the byte address of each element, whether it is inside the tensor) for
    the elements at `indices` (one int64 array per dim, broadcast together)."""
    offset = np.zeros((), dtype=np.int64)
    inside = np.ones((), dtype=bool)
    for index, size, stride in zip(indices, shape, strides):
        offset = offset + index * np.int64(stride)
        inside = inside & (index >= 0) & (index < np.int64(size))
    offset, inside = np.broadcast_arrays(offset, inside)
    addresses = (np.uint64(base) + (offset * np.int64(itemsize)).astype(np.uint64)).astype(np.uint64)
    return addresses, inside


def _block_indices(offsets, block_shape) -> list[np.ndarray]:
    """For each dim, the indices `offset + arange(size)` shaped to broadcast over the block."""
    rank = len(block_shape)
    indices = []
    for dim, (offset, size) in enumerate(zip(offsets, block_shape)):
        shape = [1] * rank
        shape[dim] = size
        indices.append((np.int64(offset) + np.arange(size, dtype=np.int64)).reshape(shape))
    return indices


def _padding(ty, nan_padding, shape) -> np.ndarray:
    fill = np.nan if bool(nan_padding) and ty.is_floating() else 0
    return np.full(shape, fill, dtype=V.value_dtype(ty))


def _make_descriptor(launch, op: Operation) -> Callable:
    rank = op.results[0].type.rank
    itemsize = op.results[0].type.element_ty.itemsize

    def make(base, *parts):
        shape, strides = parts[:rank], parts[rank:]
        if int(base) % _ALIGNMENT:
            raise AccessError(f"tl.make_tensor_descriptor: the base address {int(base):#x} must be 16-byte aligned")
        if int(strides[-1]) != 1:
            raise AccessError(f"tl.make_tensor_descriptor: the last stride must be 1, got {int(strides[-1])}")
        for dim, stride in enumerate(strides[:-1]):
            if int(stride) * itemsize % _ALIGNMENT:
                raise AccessError(f"tl.make_tensor_descriptor: stride {dim} is {int(stride)} elements of "
                                  f"{itemsize} bytes, not a multiple of 16 bytes")
        if any(int(size) < 0 for size in shape):
            raise AccessError(f"tl.make_tensor_descriptor: the shape {[int(s) for s in shape]} has a negative dim")
        return base
    return make


def _split(op: Operation, args: tuple, extra: int) -> tuple:
    """(desc, shape, strides, the `extra` operands after them, the rest)."""
    rank = _rank(op)
    return (args[0], args[1:1 + rank], args[1 + rank:1 + 2 * rank], args[1 + 2 * rank:1 + 2 * rank + extra],
            args[1 + 2 * rank + extra:])


def _make_load(launch, op: Operation) -> Callable:
    ty = _element_type(op)
    block_shape = op.operands[0].type.block.shape
    memory = launch.memory

    def load(*args):
        base, shape, strides, (nan_padding,), offsets = _split(op, args, 1)
        addresses, inside = _addresses(base, shape, strides, _block_indices(offsets, block_shape), ty.itemsize)
        return memory.load(addresses, ty, inside, _padding(ty, nan_padding, block_shape))
    return load


def _make_store(launch, op: Operation) -> Callable:
    ty = _element_type(op)
    block_shape = op.operands[0].type.block.shape
    memory = launch.memory
    kind = op.attrs.get("kind")

    def store(*args):
        base, shape, strides, (value,), offsets = _split(op, args, 1)
        addresses, inside = _addresses(base, shape, strides, _block_indices(offsets, block_shape), ty.itemsize)
        if kind is None:
            memory.store(addresses, value, ty, inside)
        else:
            memory.atomic_rmw(kind, addresses, value, ty, inside)
    return store


def _row_indices(x_offsets, y_offset, columns: int) -> list[np.ndarray]:
    rows = np.asarray(x_offsets, dtype=np.int64).reshape(-1, 1)
    return [rows, (np.int64(y_offset) + np.arange(columns, dtype=np.int64)).reshape(1, -1)]


def _make_gather(launch, op: Operation) -> Callable:
    ty = _element_type(op)
    columns = op.operands[0].type.block.shape[1]
    memory = launch.memory

    def gather(*args):
        base, shape, strides, (nan_padding,), (x_offsets, y_offset) = _split(op, args, 1)
        addresses, inside = _addresses(base, shape, strides, _row_indices(x_offsets, y_offset, columns),
                                       ty.itemsize)
        return memory.load(addresses, ty, inside, _padding(ty, nan_padding, addresses.shape))
    return gather


def _make_scatter(launch, op: Operation) -> Callable:
    ty = _element_type(op)
    columns = op.operands[0].type.block.shape[1]
    memory = launch.memory

    def scatter(*args):
        base, shape, strides, (value,), (x_offsets, y_offset) = _split(op, args, 1)
        addresses, inside = _addresses(base, shape, strides, _row_indices(x_offsets, y_offset, columns),
                                       ty.itemsize)
        memory.store(addresses, value, ty, inside)
    return scatter


MAKERS: dict[str, Callable] = {
    "make_tensor_descriptor": _make_descriptor,
    "descriptor_load": _make_load,
    "descriptor_store": _make_store,
    "descriptor_atomic": _make_store,
    "descriptor_gather": _make_gather,
    "descriptor_scatter": _make_scatter,
}
