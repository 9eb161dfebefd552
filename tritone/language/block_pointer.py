"""Block pointers (`tl.make_block_ptr`, `tl.advance`; TRITON_SEMANTICS 4.3).

A block pointer exists only while the kernel compiles: a `block_pointer`
holds the base pointer and the shape, strides and offsets of the parent
tensor as scalar i64 tensors, and the block shape and order as Python
values. No IR op knows about it: `tl.load`/`tl.store` through one become
plain pointer arithmetic over the block,

    base + sum_d (offsets[d] + arange(0, block_shape[d])) * strides[d]

with a mask for the dimensions named in `boundary_check` (`0 <= index <
shape[d]`) and the padding as the load's `other`. This is what upstream
Triton does on NVIDIA GPUs (its RewriteTensorPointer pass): offsets are
given as 32-bit ints but kept and advanced in 64 bits, and dimensions not
checked are not masked at all.

The frontend moves a block pointer across regions (loops, `if`, calls) as
its tensors; the block shape, order and base pointer type are its static
part and must not change in a loop (frontend/values.py).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Sequence

from ..ir.types import block_type, dtype, pointer_type
from . import core as tl
from .core import _unwrap_if_constexpr, base_value, builtin, must_use_result, tensor

_INT32_RANGE = (-2**31, 2**31)
_INT64_RANGE = (-2**63, 2**63)
_PADDINGS = ("", "zero", "nan")


@dataclass(frozen=True)
class block_pointer_type:
    """The static part of a block pointer: the pointer type of its base (never
    `*i1`: such bases are read as `*i8`), the block shape and the order."""

    base_ty: pointer_type
    block_shape: tuple[int, ...]
    order: tuple[int, ...]

    @property
    def element_ty(self) -> dtype:
        return self.base_ty.element_ty

    @property
    def block(self) -> block_type:
        """The type of what a load through the block pointer gives."""
        return block_type(self.element_ty, list(self.block_shape))

    @property
    def rank(self) -> int:
        return len(self.block_shape)

    def leaf_types(self) -> list[dtype]:
        """The types of the tensors a block pointer is made of, in `block_pointer.leaves()` order."""
        return [self.base_ty] + [tl.int64] * (3 * self.rank)

    @property
    def key(self) -> str:
        """Its text in specialisation keys."""
        return f"block_ptr:{self.base_ty}:{self.block_shape}:{self.order}"

    def rebuild(self, leaves: Sequence[tensor]) -> "block_pointer":
        return block_pointer.from_leaves(self, leaves)

    def __str__(self) -> str:
        return f"pointer<{self.block}>"


# tl.advance returns a moved copy: a call whose result is dropped moves nothing.
ADVANCE_RESULT_UNUSED = ("tl.advance leaves its block pointer where it is and returns the moved one: "
                         "assign its result (ptr = tl.advance(ptr, offsets)).")


class block_pointer(base_value):
    """A pointer to a block of a parent tensor (what `tl.make_block_ptr` returns):
    `base` a scalar pointer tensor; `shape`, `strides`, `offsets` lists of i64
    scalar tensors, one per dimension; `type` the static part."""

    def __init__(self, base: tensor, shape: Sequence[tensor], strides: Sequence[tensor], offsets: Sequence[tensor],
                 type: block_pointer_type):
        self.base = base
        self.shape = list(shape)
        self.strides = list(strides)
        self.offsets = list(offsets)
        self.type = type

    @property
    def block_shape(self) -> tuple[int, ...]:
        return self.type.block_shape

    @property
    def order(self) -> tuple[int, ...]:
        return self.type.order

    def leaves(self) -> list[tensor]:
        """Its tensors: base, then shape, strides and offsets by dimension."""
        return [self.base, *self.shape, *self.strides, *self.offsets]

    @staticmethod
    def from_leaves(type: block_pointer_type, leaves: Sequence[tensor]) -> "block_pointer":
        """The block pointer of static part `type` made of `leaves` (as `leaves()` lists them)."""
        rank = type.rank
        if len(leaves) != 1 + 3 * rank:
            raise ValueError(f"a rank-{rank} block pointer is made of {1 + 3 * rank} tensors, got {len(leaves)}")
        return block_pointer(leaves[0], leaves[1:1 + rank], leaves[1 + rank:1 + 2 * rank], leaves[1 + 2 * rank:],
                             type)

    def __repr__(self) -> str:
        return f"block_pointer({self.type})"

    @must_use_result(ADVANCE_RESULT_UNUSED)
    @builtin
    def advance(self, offsets, _semantic=None) -> "block_pointer":
        """Alias of `tl.advance(self, offsets)`."""
        return _semantic.advance(self, offsets)


# ---------------------------------------------------------------------------
# Builtins
# ---------------------------------------------------------------------------

@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order, _semantic=None) -> block_pointer:
    """A pointer to the block of `block_shape` (constexpr ints, powers of two) at
    `offsets` (32-bit ints) of the parent tensor at `base` of `shape` and `strides`
    (64-bit ints); `order` (a permutation of the dims) is accepted as a hint."""
    return _semantic.make_block_ptr(base, shape, strides, offsets, block_shape, order)


@must_use_result(ADVANCE_RESULT_UNUSED)
@builtin
def advance(base, offsets, _semantic=None) -> block_pointer:
    """A new block pointer moved by `offsets` (32-bit ints, one per dimension)."""
    return _semantic.advance(base, offsets)


# ---------------------------------------------------------------------------
# Semantic
# ---------------------------------------------------------------------------

def _as_list(values) -> list:
    """The elements of a tuple/list argument, or the single value as a list."""
    values = _unwrap_if_constexpr(values)
    if isinstance(values, (builtins.tuple, list, tl.tuple)):
        return list(values)
    return [values]


def canonical_boundary_check(boundary_check, rank: int) -> list[int]:
    """The dimensions of `boundary_check` (an int or a sequence of them), sorted."""
    if boundary_check is None:
        return []
    dims = [_unwrap_if_constexpr(d) for d in _as_list(boundary_check)]
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool) or not 0 <= d < rank:
            raise AssertionError(f"boundary_check dimensions must be ints in [0, {rank}), got {d!r}")
    if len(set(dims)) != len(dims):
        raise AssertionError("Duplicate dimension in `boundary_check`")
    return sorted(dims)


class BlockPointerSemantic:
    """Block pointer construction and accesses, a mixin of `Semantic` (through
    `MemorySemantic`)."""

    def _block_ptr_scalar(self, value, what: str, bits: int) -> tensor:
        """One entry of `shape`/`strides` (bits=64) or `offsets` (bits=32) as an i64
        scalar tensor: Python ints range-checked, int tensors extended (offsets
        read as 32-bit signed, as the GPU reads them)."""
        value = _unwrap_if_constexpr(value)
        if isinstance(value, int):
            low, high = _INT64_RANGE if bits == 64 else _INT32_RANGE
            if not low <= value < high:
                raise AssertionError(f"Block pointers only support {bits} bit `{what}`, got a value {value} which "
                                     "is out of the range")
            return self.scalar_constant(value, tl.int64)
        if not isinstance(value, tensor):
            raise AssertionError(f"Unsupported element type in `{what}`: {type(value).__name__}")
        if value.type.is_block():
            if value.type.numel != 1:
                raise AssertionError(f"Expected a scalar in `{what}`, got a block of shape {list(value.type.shape)}")
            value = self.unsplat(value)
        if not value.dtype.is_int():
            raise AssertionError(f"Expected an integer scalar type in `{what}`, got {tl.dtype_name(value.dtype)}")
        if bits == 32:
            if value.dtype.int_bitwidth > 32:
                raise AssertionError("Block pointers only support 32 bit `offsets`, add a `.to(tl.int32)` or use "
                                     "regular indexing for 64 bit support")
            value = self.cast(value, tl.int32)
        return self.cast(value, tl.int64)

    def _block_ptr_scalars(self, values, what: str, bits: int) -> list[tensor]:
        return [self._block_ptr_scalar(v, what, bits) for v in _as_list(values)]

    def make_block_ptr(self, base, shape, strides, offsets, block_shape, order) -> block_pointer:
        base = _unwrap_if_constexpr(base)
        if not isinstance(base, tensor) or not base.type.is_ptr() or base.type.is_block():
            raise ValueError("Expected `base` to be a pointer type (but not a block pointer type or others)")
        shape = self._block_ptr_scalars(shape, "shape", 64)
        strides = self._block_ptr_scalars(strides, "strides", 64)
        offsets = self._block_ptr_scalars(offsets, "offsets", 32)
        block_shape = [_unwrap_if_constexpr(d) for d in _as_list(block_shape)]
        if not all(isinstance(d, int) and not isinstance(d, bool) and _INT32_RANGE[0] <= d < _INT32_RANGE[1]
                   for d in block_shape):
            raise AssertionError("Expected a list of constant integers (`int32_t` range) in `block_shape`, got "
                                 f"{block_shape}")
        if not block_shape:
            raise ValueError("a block pointer needs at least one dimension")
        tl.validate_block_shape(block_shape)
        order = [_unwrap_if_constexpr(d) for d in _as_list(order)]
        is_permutation = all(isinstance(d, int) and not isinstance(d, bool) for d in order) and \
            sorted(order) == list(builtins.range(len(order)))
        if not is_permutation:
            raise AssertionError(f"Expected a permutation of (0, 1, ..., len(order)-1) in order, got {order}")
        if not len(shape) == len(strides) == len(offsets) == len(order) == len(block_shape):
            raise AssertionError("Expected shape/strides/offsets/block_shape/order to have the same length, got "
                                 f"{len(shape)}/{len(strides)}/{len(offsets)}/{len(block_shape)}/{len(order)}")
        if base.type.element_ty.is_bool():
            base = self._byte_pointer(base)
        ty = block_pointer_type(base.type, builtins.tuple(block_shape), builtins.tuple(order))
        return block_pointer(base, shape, strides, offsets, ty)

    def advance(self, ptr, offsets) -> block_pointer:
        """`ptr` moved by `offsets` (one 32-bit int per dimension)."""
        ptr = _unwrap_if_constexpr(ptr)
        if not isinstance(ptr, block_pointer):
            raise ValueError(f"tl.advance needs a block pointer (from tl.make_block_ptr), got {ptr!r}")
        deltas = self._block_ptr_scalars(offsets, "offsets", 32)
        if len(deltas) != ptr.type.rank:
            raise ValueError(f"tl.advance of a rank-{ptr.type.rank} block pointer needs {ptr.type.rank} offsets, "
                             f"got {len(deltas)}")
        moved = [self.add(offset, delta, False) for offset, delta in zip(ptr.offsets, deltas)]
        return block_pointer(ptr.base, ptr.shape, ptr.strides, moved, ptr.type)

    def _block_addresses(self, ptr: block_pointer, checked: list[int]) -> tuple[tensor, tensor | None]:
        """The block of pointers `ptr` designates, and the in-bounds mask of the
        `checked` dimensions (None when no dimension is checked)."""
        rank = ptr.type.rank
        shape = list(ptr.type.block_shape)
        byte_offsets = None
        mask = None
        for d in builtins.range(rank):
            index = self.add(self.cast(self.arange(0, shape[d]), tl.int64), ptr.offsets[d], False)
            for axis in builtins.range(rank):
                if axis != d:
                    index = self.expand_dims(index, axis)
            term = self.mul(index, ptr.strides[d], False)
            byte_offsets = term if byte_offsets is None else self.add(byte_offsets, term, False)
            if d in checked:
                in_bounds = self.and_(self.greater_equal(index, self.scalar_constant(0, tl.int64)),
                                      self.less_than(index, ptr.shape[d]))
                mask = in_bounds if mask is None else self.and_(mask, in_bounds)
        pointers = self.add(self.splat(ptr.base, shape), self.broadcast_impl_shape(byte_offsets, shape), False)
        if mask is not None:
            mask = self.broadcast_impl_shape(mask, shape)
        return pointers, mask

    def load_block_pointer(self, ptr: block_pointer, mask, other, boundary_check, padding_option: str,
                           cache_modifier: str, eviction_policy: str, is_volatile: bool) -> tensor:
        """`tl.load` through a block pointer: out-of-bounds elements of the checked
        dimensions read as the padding (0 for "" and "zero", NaN for "nan")."""
        if mask is not None or other is not None:
            raise ValueError("`mask` and `other` arguments cannot be specified for loading block pointers")
        if padding_option not in _PADDINGS:
            raise ValueError(f"Padding option {padding_option} not supported")
        element_ty = ptr.type.element_ty
        if padding_option == "nan" and element_ty.is_int():
            raise ValueError("Padding option `nan` is not supported for integer block pointers")
        checked = canonical_boundary_check(boundary_check, ptr.type.rank)
        pointers, in_bounds = self._block_addresses(ptr, checked)
        padding = None
        if in_bounds is not None and padding_option:
            padding = self.full(list(ptr.type.block_shape), float("nan") if padding_option == "nan" else 0,
                                element_ty)
        return self.load(pointers, in_bounds, padding, (), "", cache_modifier, eviction_policy, is_volatile)

    def store_block_pointer(self, ptr: block_pointer, value, mask, boundary_check, cache_modifier: str,
                            eviction_policy: str) -> None:
        """`tl.store` through a block pointer: `value` (broadcast to the block shape,
        of the block's element type) written where the checked dimensions are in bounds."""
        if mask is not None:
            raise ValueError("`mask` cannot be specified for storing through block pointers")
        block_shape = list(ptr.type.block_shape)
        value = self.to_tensor(value)
        if not value.type.is_block():
            value = self.broadcast_impl_shape(value, block_shape)
        if list(value.type.shape) != block_shape:
            raise AssertionError(f"Block shape({block_shape}) and value shape({list(value.type.shape)}) mismatch")
        if value.dtype != ptr.type.element_ty:
            raise AssertionError(f"Block element type({tl.dtype_name(ptr.type.element_ty)}) and value element "
                                 f"type({tl.dtype_name(value.dtype)}) mismatch")
        checked = canonical_boundary_check(boundary_check, ptr.type.rank)
        pointers, in_bounds = self._block_addresses(ptr, checked)
        self.store(pointers, value, in_bounds, (), cache_modifier, eviction_policy)
