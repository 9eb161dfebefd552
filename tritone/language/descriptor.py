"""Tensor descriptors (`tl.make_tensor_descriptor`, host `TensorDescriptor`
arguments): a tensor in global memory read and written by whole blocks.

A `tensor_descriptor` exists while the kernel compiles as its IR values: the
descriptor itself (an IR value of type `tensordesc<fp16[64, 64]>`, made by a
`make_tensor_descriptor` op or passed as a kernel argument), the tensor's
shape (i32 scalars) and strides (i64 scalars) and whether out-of-bounds
elements read as NaN (an i1 scalar: a constant for descriptors made in the
kernel, a run-time value for host descriptors, whose padding is not part of
the kernel's signature). Its accesses are IR ops of their own
(`descriptor_load`, `_store`, `_atomic`, `_gather`, `_scatter`, docs/IR.md)
that also take the shape, strides and padding, so that a target without TMA
rewrites each of them as pointer code on its own
(`passes/lower_descriptors.py`) and the interpreter runs them as they are.

Semantics are upstream Triton's on the GPU: a load gives the block at
`offsets` (any offsets, negative ones too), elements outside the tensor read
as the padding (0, or NaN for padding "nan"); stores and atomics outside the
tensor are dropped.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Sequence

from ..ir.types import block_type as _block_type
from ..ir.types import dtype, pointer_type, tensordesc_type, type_text
from . import core as tl
from .core import _unwrap_if_constexpr, base_value, builtin, dtype_name, tensor

MAX_RANK = 5
PADDINGS = ("zero", "nan")
_INT32_RANGE = (-2**31, 2**31)
# The element types each descriptor atomic takes without TMA (upstream Triton's fallback).
ATOMIC_DTYPES = {
    "add": ("u32", "i32", "u64", "fp32", "fp16", "bf16"),
    "min": ("u32", "i32", "u64", "i64"),
    "max": ("u32", "i32", "u64", "i64"),
    "and": ("u32", "i32", "u64", "i64"),
    "or": ("u32", "i32", "u64", "i64"),
    "xor": ("u32", "i32", "u64", "i64"),
}
# The element types each descriptor atomic takes only where descriptors are TMA's
# (upstream: CUDA sm_90+; elsewhere its assertion "16-bit float types require native
# tma support").
TMA_ATOMIC_DTYPES = {"min": ("fp16", "bf16"), "max": ("fp16", "bf16")}


@dataclass(frozen=True)
class tensor_descriptor_type:
    """The static part of a tensor descriptor: the block it loads and stores
    (element type and block shape)."""

    block_type: _block_type

    @property
    def ir_type(self) -> tensordesc_type:
        return tensordesc_type(self.block_type)

    @property
    def rank(self) -> int:
        return len(self.block_type.shape)

    @property
    def element_ty(self) -> dtype:
        return self.block_type.element_ty

    @property
    def shape_type(self) -> tl.tuple_type:
        return tl.tuple_type([tl.int32] * self.rank)

    @property
    def strides_type(self) -> tl.tuple_type:
        return tl.tuple_type([tl.int64] * self.rank)

    @property
    def key(self) -> str:
        """Its text in specialisation keys."""
        return type_text(self.ir_type)

    def leaf_types(self) -> list[dtype]:
        """The types of the tensors a descriptor is made of, in `tensor_descriptor.leaves()` order."""
        return self.ir_type.argument_types()

    def rebuild(self, leaves: Sequence[tensor]) -> tensor_descriptor:
        return tensor_descriptor.from_leaves(self, leaves)

    def mangle(self) -> str:
        return self.ir_type.mangle()

    def __str__(self) -> str:
        return f"tensor_descriptor<{self.block_type}>"


class tensor_descriptor(base_value):
    """A tensor in global memory seen in blocks (what `tl.make_tensor_descriptor`
    returns, and what a kernel sees for a host `TensorDescriptor`): `handle` the
    descriptor value, `shape` (i32) and `strides` (i64) one scalar per dim,
    `nan_padding` an i1 scalar."""

    def __init__(self, handle: tensor, shape: Sequence[tensor], strides: Sequence[tensor], nan_padding: tensor,
                 type: tensor_descriptor_type):
        self.handle = handle
        self.shape = builtins.tuple(shape)
        self.strides = builtins.tuple(strides)
        self.nan_padding = nan_padding
        self.type = type

    @property
    def block_type(self) -> _block_type:
        return self.type.block_type

    @property
    def block_shape(self) -> list[int]:
        return list(self.type.block_type.shape)

    @property
    def dtype(self) -> dtype:
        return self.type.element_ty

    def leaves(self) -> list[tensor]:
        """Its tensors: the descriptor, the shape, the strides, the NaN-padding flag."""
        return [self.handle, *self.shape, *self.strides, self.nan_padding]

    @staticmethod
    def from_leaves(type: tensor_descriptor_type, leaves: Sequence[tensor]) -> tensor_descriptor:
        """The descriptor of static part `type` made of `leaves` (as `leaves()` lists them)."""
        rank = type.rank
        if len(leaves) != 2 + 2 * rank:
            raise ValueError(f"a rank-{rank} tensor descriptor is made of {2 + 2 * rank} tensors, got {len(leaves)}")
        return tensor_descriptor(leaves[0], leaves[1:1 + rank], leaves[1 + rank:1 + 2 * rank], leaves[-1], type)

    def __str__(self) -> str:
        return str(self.type)

    def __repr__(self) -> str:
        return f"tensor_descriptor({self.type.block_type})"

    @builtin
    def load(self, offsets, _semantic=None) -> tensor:
        """The block at `offsets` (one int per dim); elements outside the tensor
        read as the padding (0, or NaN for padding "nan")."""
        return _semantic.descriptor_load(self, offsets)

    @builtin
    def store(self, offsets, value, _semantic=None) -> None:
        """Write `value` (of the block shape, cast to the descriptor's dtype) at
        `offsets`; elements outside the tensor are dropped."""
        return _semantic.descriptor_store(self, value, offsets)

    @builtin
    def atomic_add(self, offsets, value, _semantic=None) -> None:
        return _semantic.descriptor_atomic("add", self, value, offsets)

    @builtin
    def atomic_min(self, offsets, value, _semantic=None) -> None:
        return _semantic.descriptor_atomic("min", self, value, offsets)

    @builtin
    def atomic_max(self, offsets, value, _semantic=None) -> None:
        return _semantic.descriptor_atomic("max", self, value, offsets)

    @builtin
    def atomic_and(self, offsets, value, _semantic=None) -> None:
        return _semantic.descriptor_atomic("and", self, value, offsets)

    @builtin
    def atomic_or(self, offsets, value, _semantic=None) -> None:
        return _semantic.descriptor_atomic("or", self, value, offsets)

    @builtin
    def atomic_xor(self, offsets, value, _semantic=None) -> None:
        return _semantic.descriptor_atomic("xor", self, value, offsets)

    @builtin
    def gather(self, *args, _semantic=None) -> tensor:
        """Rows `x_offsets` (a 1-D int block) of the 2-D tensor, each the
        `block_shape[1]` elements from column `y_offset`: `desc.gather(x_offsets, y_offset)`."""
        if len(args) != 2:
            raise AssertionError(f"descriptor gather only supports 2D indexing, but got {len(args)}")
        return _semantic.descriptor_gather(self, args[0], args[1])

    @builtin
    def scatter(self, value, *args, _semantic=None) -> None:
        """Write the rows of `value` to rows `x_offsets` from column `y_offset`:
        `desc.scatter(value, x_offsets, y_offset)`."""
        if len(args) != 2:
            raise AssertionError(f"descriptor scatter only supports 2D indexing, but got {len(args)}")
        return _semantic.descriptor_scatter(self, value, args[0], args[1])


# Upstream Triton's base class of descriptors (those without shape and strides): here one class.
tensor_descriptor_base = tensor_descriptor


# ---------------------------------------------------------------------------
# Builtins
# ---------------------------------------------------------------------------

@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero", _semantic=None
                           ) -> tensor_descriptor:
    """A descriptor of the tensor at `base` (a pointer, 16-byte aligned) of `shape`
    (ints) and `strides` (ints, in elements: every one but the last a multiple of
    16 bytes, the last the constant 1), read and written in blocks of
    `block_shape` (constexpr powers of two, the last at least 16 bytes wide).
    Elements outside the tensor read as `padding_option`: "zero" or "nan"."""
    return _semantic.make_tensor_descriptor(base, shape, strides, block_shape, _unwrap_if_constexpr(padding_option))


@builtin
def load_tensor_descriptor(desc, offsets, _semantic=None) -> tensor:
    """`desc.load(offsets)`."""
    return _semantic.descriptor_load(desc, offsets)


@builtin
def store_tensor_descriptor(desc, offsets, value, _semantic=None) -> None:
    """`desc.store(offsets, value)`."""
    return _semantic.descriptor_store(desc, value, offsets)


@builtin
def _experimental_descriptor_load(desc, offsets, shape, dtype, _semantic=None) -> tensor:
    """Triton 3.2's spelling: the block of `shape` and `dtype` at `offsets` of `desc`."""
    desc = _semantic.checked_descriptor(desc, "_experimental_descriptor_load")
    if list(desc.block_shape) != [int(_unwrap_if_constexpr(s)) for s in _as_list(shape)] or \
            desc.dtype != _unwrap_if_constexpr(dtype):
        raise ValueError(f"_experimental_descriptor_load of a {_unwrap_if_constexpr(dtype)} block of shape "
                         f"{list(_as_list(shape))} from a descriptor of {desc.block_type}")
    return _semantic.descriptor_load(desc, offsets)


@builtin
def _experimental_descriptor_store(desc, value, offsets, _semantic=None) -> None:
    """Triton 3.2's spelling of `desc.store(offsets, value)`."""
    return _semantic.descriptor_store(_semantic.checked_descriptor(desc, "_experimental_descriptor_store"), value,
                                      offsets)


_experimental_make_tensor_descriptor = make_tensor_descriptor


# ---------------------------------------------------------------------------
# Semantic
# ---------------------------------------------------------------------------

def _as_list(values) -> list:
    values = _unwrap_if_constexpr(values)
    if isinstance(values, (builtins.tuple, list, tl.tuple)):
        return list(values)
    return [values]


class TensorDescriptorSemantic:
    """Tensor descriptor construction and accesses, a mixin of `Semantic` (through
    `MemorySemantic`). Checks and messages follow upstream Triton's."""

    def checked_descriptor(self, desc, what: str) -> tensor_descriptor:
        """`desc` when it is a tensor descriptor; a clear error otherwise."""
        desc = _unwrap_if_constexpr(desc)
        if isinstance(desc, tensor_descriptor):
            return desc
        if isinstance(desc, tensor) and desc.type.is_ptr():
            raise TypeError(f"{what} needs a tensor descriptor (tl.make_tensor_descriptor, or a host "
                            "TensorDescriptor argument); a pointer to a TMA descriptor built on the host is not "
                            "supported by tritone")
        raise TypeError(f"{what} needs a tensor descriptor, got {desc!r}")

    def _descriptor_scalar(self, value, ty: dtype, what: str) -> tensor:
        """One shape, stride or offset entry as a scalar of `ty` (i32 or i64)."""
        value = _unwrap_if_constexpr(value)
        if isinstance(value, builtins.bool) or not isinstance(value, (builtins.int, tensor)):
            raise TypeError(f"Unsupported element type in `{what}`: {type(value).__name__} (ints are expected)")
        if isinstance(value, tensor):
            if value.type.is_block():
                if value.type.numel != 1:
                    raise AssertionError(f"Expected a scalar in `{what}`, got a block of shape "
                                         f"{list(value.type.shape)}")
                value = self.unsplat(value)
            if not value.dtype.is_int():
                raise TypeError(f"Expected an integer scalar type in `{what}`, got {dtype_name(value.dtype)}")
            if what == "offsets" and value.dtype.int_bitwidth > 32:
                raise AssertionError("tensor descriptor offsets are 32-bit: add a `.to(tl.int32)`")
            return self.cast(value, ty)
        if what == "offsets" and not _INT32_RANGE[0] <= value < _INT32_RANGE[1]:
            raise AssertionError(f"tensor descriptor offsets are 32-bit, got {value}")
        return self.scalar_constant(value, ty)

    def make_tensor_descriptor(self, base, shape, strides, block_shape, padding_option: str = "zero"
                               ) -> tensor_descriptor:
        base = _unwrap_if_constexpr(base)
        if not isinstance(base, tensor) or not base.type.is_ptr():
            raise ValueError(f"tl.make_tensor_descriptor needs a pointer as its base, got {base!r}")
        shape, strides, block_shape = _as_list(shape), _as_list(strides), _as_list(block_shape)
        ndim = len(shape)
        if not 1 <= ndim <= MAX_RANK:
            raise ValueError(f"Expected 1 <= ndim <= {MAX_RANK} but got {ndim} dimensions")
        if len(strides) != ndim:
            raise ValueError(f"Expected {ndim} strides but got {len(strides)}")
        if len(block_shape) != ndim:
            raise ValueError(f"Expected block_shape to have {ndim} dimensions but got {len(block_shape)}")
        block_shape = [_unwrap_if_constexpr(d) for d in block_shape]
        tl.validate_block_shape(block_shape)
        element_ty = base.type.element_ty
        if base.type.is_const():
            # Descriptors read and write through one pointer type (a store through it is the user's call).
            base = self.cast(base, pointer_type(element_ty, base.type.address_space))
        row_bytes = block_shape[-1] * element_ty.primitive_bitwidth // 8
        if row_bytes < 16:
            raise ValueError("Descriptor block shape must have at least 16 bytes in the last dimension, but got "
                             f"{block_shape[-1]} * {element_ty.primitive_bitwidth // 8} = {row_bytes} bytes")
        last_stride = _unwrap_if_constexpr(strides[-1])
        if isinstance(last_stride, tensor):
            raise ValueError("Tensor descriptor last dim must be 1: the last stride must be the constant 1, got a "
                             "run-time value (pass 1, or a parameter specialised to 1)")
        if last_stride != 1:
            raise ValueError(f"Tensor descriptor last dim must be 1 but got {last_stride}")
        if padding_option not in PADDINGS:
            raise ValueError(f"Padding option {padding_option!r} not supported: use one of {PADDINGS}")
        if padding_option == "nan" and element_ty.is_int():
            raise ValueError("Padding option `nan` is not supported for integer blocks")
        shape = [self._descriptor_scalar(s, tl.int32, "shape") for s in shape]
        strides = [self._descriptor_scalar(s, tl.int64, "strides") for s in strides]
        ty = tensor_descriptor_type(_block_type(element_ty, block_shape))
        handle = self.create("make_tensor_descriptor", [base, *shape, *strides], ty.ir_type, padding=padding_option)
        nan_padding = self.scalar_constant(padding_option == "nan", tl.int1)
        return tensor_descriptor(handle, shape, strides, nan_padding, ty)

    def _descriptor_offsets(self, desc: tensor_descriptor, offsets) -> list[tensor]:
        offsets = _as_list(offsets)
        if len(offsets) != desc.type.rank:
            raise AssertionError(f"expected {desc.type.rank} offsets, but got {len(offsets)}")
        return [self._descriptor_scalar(o, tl.int32, "offsets") for o in offsets]

    def _descriptor_operands(self, desc: tensor_descriptor) -> list[tensor]:
        return [desc.handle, *desc.shape, *desc.strides]

    def descriptor_load(self, desc, offsets) -> tensor:
        desc = self.checked_descriptor(desc, "descriptor load")
        offsets = self._descriptor_offsets(desc, offsets)
        return self.create("descriptor_load", [*self._descriptor_operands(desc), desc.nan_padding, *offsets],
                           desc.block_type)

    def _descriptor_value(self, desc: tensor_descriptor, value, what: str) -> tensor:
        """`value` checked to have the block shape, cast to the descriptor's dtype."""
        value = self.to_tensor(value)
        shape = list(value.type.shape) if value.type.is_block() else []
        if shape != desc.block_shape:
            raise AssertionError(f"descriptor {what} of a value of shape {shape} through a descriptor of block "
                                 f"shape {desc.block_shape}")
        return self.cast(value, desc.dtype)

    def descriptor_store(self, desc, value, offsets) -> None:
        desc = self.checked_descriptor(desc, "descriptor store")
        value = self._descriptor_value(desc, value, "store")
        offsets = self._descriptor_offsets(desc, offsets)
        self.create_void("descriptor_store", [*self._descriptor_operands(desc), value, *offsets])

    def descriptor_atomic(self, kind: str, desc, value, offsets) -> None:
        desc = self.checked_descriptor(desc, f"descriptor atomic_{kind}")
        name = type_text(desc.dtype)
        tma_only = TMA_ATOMIC_DTYPES.get(kind, ())
        if name in tma_only and not self._descriptors_have_tma():
            raise AssertionError(f"descriptor atomic_{kind} of {dtype_name(desc.dtype)} needs a target with TMA "
                                 f"(CUDA sm_90 or newer), not {self._target_name()}")
        allowed = ATOMIC_DTYPES[kind] + (tma_only if self._descriptors_have_tma() else ())
        if name not in allowed:
            raise AssertionError(f"Unsupported dtype: descriptor atomic_{kind} takes "
                                 f"{', '.join(dtype_name(dtype(t)) for t in allowed)}, not {dtype_name(desc.dtype)}")
        value = self._descriptor_value(desc, value, f"atomic_{kind}")
        offsets = self._descriptor_offsets(desc, offsets)
        self.create_void("descriptor_atomic", [*self._descriptor_operands(desc), value, *offsets], kind=kind)

    def _descriptors_have_tma(self) -> bool:
        """Whether the target takes what upstream allows only on TMA descriptors:
        CUDA sm_90 and newer, and the interpreter (which computes every descriptor
        op itself) or no fixed target."""
        target = self.options.get("target")
        if target is None or getattr(target, "backend", None) == "interpreter":
            return True
        capability = self.target_capability
        return capability is not None and capability >= 90

    def _target_name(self) -> str:
        target = self.options.get("target")
        capability = self.target_capability
        return f"sm_{capability}" if capability is not None else repr(target)

    def _check_rows(self, desc: tensor_descriptor, x_offsets, what: str) -> tensor:
        """Upstream's rules of gather and scatter; the row offsets as an i32 block."""
        if desc.type.rank != 2:
            raise AssertionError(f"descriptor must be 2D, but got {desc.block_shape}")
        if desc.block_shape[0] != 1:
            raise AssertionError(f"descriptor block must have 1 row, but got {desc.block_shape}")
        x_offsets = self.to_tensor(x_offsets)
        if not x_offsets.type.is_block() or len(x_offsets.type.shape) != 1:
            raise AssertionError(f"x offsets must be 1D, but got {list(x_offsets.type.shape)}")
        if not x_offsets.dtype.is_int():
            raise TypeError(f"x offsets must be integers, got {dtype_name(x_offsets.dtype)}")
        rows = x_offsets.type.shape[0]
        if rows < 8:
            raise AssertionError(f"descriptor {what} must have at least 8 rows, but got {[rows]}")
        min_cols = 32 // desc.dtype.primitive_bitwidth * 8
        if desc.block_shape[1] < min_cols:
            raise AssertionError(f"descriptor {what} of {desc.dtype} must have at least {min_cols} columns, but got "
                                 f"{desc.block_shape[1]}")
        return self.cast(x_offsets, tl.int32)

    def descriptor_gather(self, desc, x_offsets, y_offset) -> tensor:
        desc = self.checked_descriptor(desc, "descriptor gather")
        x_offsets = self._check_rows(desc, x_offsets, "gather")
        y_offset = self._descriptor_scalar(y_offset, tl.int32, "offsets")
        result = _block_type(desc.dtype, [x_offsets.type.shape[0], desc.block_shape[1]])
        return self.create("descriptor_gather",
                           [*self._descriptor_operands(desc), desc.nan_padding, x_offsets, y_offset], result)

    def descriptor_scatter(self, desc, value, x_offsets, y_offset) -> None:
        desc = self.checked_descriptor(desc, "descriptor scatter")
        x_offsets = self._check_rows(desc, x_offsets, "scatter")
        y_offset = self._descriptor_scalar(y_offset, tl.int32, "offsets")
        value = self.to_tensor(value)
        rows = [x_offsets.type.shape[0], desc.block_shape[1]]
        if not value.type.is_block() or list(value.type.shape) != rows:
            shape = list(value.type.shape) if value.type.is_block() else []
            raise AssertionError(f"descriptor scatter of {rows[0]} rows of {rows[1]} elements needs a value of shape "
                                 f"{rows}, got {shape}")
        value = self.cast(value, desc.dtype)
        self.create_void("descriptor_scatter", [*self._descriptor_operands(desc), value, x_offsets, y_offset])
