"""`TensorDescriptor`: the host-side description of a tensor that Triton kernels
read and write by blocks (`desc.load([i, j])`), which Triton passes to the GPU
as a TMA descriptor.

A kernel argument of this type is specialised on its element type and block
shape (`tensordesc<fp16[64, 64]>`, as Triton's signatures write it); its base,
shape, strides and padding are run-time values, passed as the parts
`kernel_arguments` lists (the kernel sees a `tl.tensor_descriptor`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..language.core import TRITON_MAX_TENSOR_NUMEL, validate_block_shape

PADDINGS = ("zero", "nan")
MAX_RANK = 5
ALIGNMENT = 16  # bytes: of the base address and of every stride but the last


def _address(tensor: Any) -> int:
    if hasattr(tensor, "data_ptr"):
        return int(tensor.data_ptr())
    return int(tensor.__array_interface__["data"][0])


def _itemsize(tensor: Any) -> int:
    dtype = tensor.dtype
    return int(dtype.itemsize)


def _is_floating(tensor: Any) -> bool:
    dtype = tensor.dtype
    if hasattr(dtype, "is_floating_point"):  # torch
        return bool(dtype.is_floating_point)
    return getattr(dtype, "kind", "") == "f"  # numpy


def _has_storage(tensor: Any) -> bool:
    """False for the tensors torch.compile traces with, which have no memory."""
    return type(tensor).__name__ not in ("FakeTensor", "FunctionalTensor")


def _element_strides(tensor: Any) -> Sequence[int]:
    stride = getattr(tensor, "stride", None)
    if callable(stride):  # torch: strides in elements (ints, which __post_init__ checks)
        return stride()
    itemsize = _itemsize(tensor)  # numpy: strides in bytes
    return [int(s) // itemsize for s in tensor.strides]


# Not frozen: Triton's autotuning pre-hooks set `desc.block_shape` to each config's block.
@dataclass(eq=False)
class TensorDescriptor:
    """A tensor (`base`, a torch tensor or numpy array on the kernel's device) seen
    as `shape` with `strides` (in elements), read and written by blocks of
    `block_shape`; out-of-bounds elements read as `padding` ("zero" or "nan").

    Checked as Triton checks it: rank 1 to 5, one stride and one block dim per
    dim, positive shape, the last stride 1, the base address and the other
    strides multiples of 16 bytes, block dims powers of two, "nan" padding only
    for floats. ValueError names what is wrong."""

    base: Any
    shape: Sequence[int]
    strides: Sequence[int]
    block_shape: Sequence[int]
    padding: str = "zero"

    def __post_init__(self):
        # Checked on every launch of tutorial-style code (a descriptor per call): the
        # usual descriptor passes one combined test; `_check` names what is wrong.
        shape, strides, block = list(self.shape), list(self.strides), list(self.block_shape)
        for value in (*shape, *strides, *block):
            if type(value) is not int:  # numpy integers and the like
                shape, strides, block = ([int(v) for v in values] for values in (shape, strides, block))
                break
        self.shape, self.strides, self.block_shape = shape, strides, block
        base = self.base
        rank = len(shape)
        numel = 1
        powers_of_two = True
        for dim in block:
            numel *= dim
            powers_of_two = powers_of_two and dim > 0 and not dim & (dim - 1)
        misaligned = 0  # the OR of every stride but the last, in bytes: a multiple of 16 when each is
        if rank > 1:
            itemsize = base.dtype.itemsize
            for stride in strides[:-1]:
                misaligned |= stride * itemsize
        if not (powers_of_two and 0 < rank <= MAX_RANK and len(strides) == rank and len(block) == rank
                and min(shape) > 0 and strides[-1] == 1 and numel <= TRITON_MAX_TENSOR_NUMEL
                and self.padding == "zero" and not misaligned % ALIGNMENT
                and not (_has_storage(base) and _address(base) % ALIGNMENT)):
            self._check()

    def _check(self) -> None:
        """Raise the ValueError (or TypeError) that names what is wrong with this
        descriptor; return when it is valid."""
        shape, strides, block, base = self.shape, self.strides, self.block_shape, self.base
        rank = len(shape)
        if not 1 <= rank <= MAX_RANK:
            raise ValueError(f"a tensor descriptor has 1 to {MAX_RANK} dims, got {rank}")
        if len(strides) != rank or len(block) != rank:
            raise ValueError(f"shape {shape}, strides {strides} and block_shape {block} "
                             "must have one entry per dim")
        if min(shape) <= 0:
            raise ValueError(f"every dim of the shape must be positive, got {shape}")
        if strides[-1] != 1:
            raise ValueError(f"the last dim must be contiguous (stride 1), got strides {strides}")
        itemsize = _itemsize(base)
        for stride in strides[:-1]:
            if (stride * itemsize) % ALIGNMENT:
                raise ValueError(f"strides {strides} of {itemsize}-byte elements: every stride but the last must "
                                 f"be a multiple of {ALIGNMENT} bytes")
        if _has_storage(base) and _address(base) % ALIGNMENT:
            raise ValueError(f"the base address 0x{_address(base):x} must be a multiple of {ALIGNMENT} bytes")
        validate_block_shape(block)
        if self.padding != "zero":
            if self.padding not in PADDINGS:
                raise ValueError(f"padding must be one of {PADDINGS}, got {self.padding!r}")
            if not _is_floating(base):
                raise ValueError("padding='nan' needs a floating-point tensor")

    def signature_type(self) -> str:
        """The kernel signature type of this descriptor: `tensordesc<fp16[64, 64]>`."""
        from ..runtime.specialize import element_type_name

        return f"tensordesc<{element_type_name(self.base.dtype)}[{', '.join(map(str, self.block_shape))}]>"

    def kernel_arguments(self) -> tuple:
        """What a kernel receives for this descriptor, in the order of
        `tensordesc_type.argument_types`: the base tensor, the shape, the strides
        and whether out-of-bounds elements read as NaN."""
        return (self.base, *self.shape, *self.strides, self.padding == "nan")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: Sequence[int], padding: str = "zero") -> TensorDescriptor:
        """The descriptor of the whole of `tensor`: its own shape and strides."""
        # __post_init__ makes lists of the shape and strides.
        return TensorDescriptor(tensor, tensor.shape, _element_strides(tensor), block_shape, padding)
