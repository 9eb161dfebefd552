"""Program ids, block construction and shape manipulation (SEMANTICS 9).

A mixin of `Semantic` (semantic.py): methods use `self.create`,
`self.cast`, `self.to_tensor` from there.
"""

from __future__ import annotations

from typing import Sequence

from ..errors import with_hint
from ..ir.types import block_type, dtype
from . import core as tl
from .core import _unwrap_if_constexpr, dtype_name, tensor


class ShapeSemantic:
    """Construction and shape ops of `Semantic`."""

    # -- program model --------------------------------------------------------
    def program_id(self, axis: int) -> tensor:
        if axis not in (0, 1, 2):
            raise ValueError(f"program_id axis must be 0, 1, or 2 but got {axis}")
        return self.create("program_id", [], tl.int32, axis=axis)

    def num_programs(self, axis: int) -> tensor:
        if axis not in (0, 1, 2):
            raise ValueError(f"num_programs axis must be 0, 1, or 2 but got {axis}")
        return self.create("num_programs", [], tl.int32, axis=axis)

    # -- construction -------------------------------------------------------------
    def arange(self, start: int, end: int) -> tensor:
        """`[start, end)` as an i32 block; the length must be a power of two."""
        if isinstance(start, tensor) or isinstance(end, tensor):
            raise tl.NotConstexprError("arange's arguments must be of type tl.constexpr: its bounds must be known "
                                       "at compile time, but one is a run-time value",
                                       start if isinstance(start, tensor) else end)
        if not isinstance(start, int) or not isinstance(end, int):
            raise ValueError("arange's arguments must be of type tl.constexpr")
        # Triton tests `x >> 32`, which also rejects every negative start.
        if start >> 32 or end >> 32:
            raise ValueError("arange must fit in int32")
        if end <= start:
            raise ValueError("arange's end argument must be greater than the start argument")
        length = end - start
        if length & (length - 1):
            padded = 1 << (length - 1).bit_length()
            raise with_hint(ValueError("arange's range must be a power of 2"), (
                f"got {length} (tl.arange({start}, {end})). Use the next power of 2 and mask the extra lanes: "
                f"offs = tl.arange({start}, {start + padded}) (in Python, triton.next_power_of_2({length}) == "
                f"{padded}), then pass mask=offs < {end} to tl.load and tl.store"))
        return self.create("arange", [], self.create_block(tl.int32, [length]), start=start, end=end)

    def make_scalar(self, value, ty: dtype) -> tensor:
        """`value` (a Python value or a one-element tensor) as a scalar of `ty`."""
        if isinstance(value, tensor):
            if value.type.numel != 1:
                raise AssertionError("only accepts size-1 tensor")
            if value.type.is_block():
                value = self.unsplat(value)
            return self.cast(value, ty)
        return self.scalar_constant(value, ty)

    def full(self, shape: Sequence[int], value, ty: dtype) -> tensor:
        """A block of `shape` (a scalar for `()`) filled with `value` converted to `ty`."""
        shape = list(shape)
        if ty is None:
            raise ValueError("dtype must be specified when value is not a tensor")
        if isinstance(value, tensor):
            return self.splat(self.make_scalar(value, ty), shape)
        if not shape:
            return self.scalar_constant(value, ty)
        return self.block_constant(value, self.create_block(ty, shape))

    def splat(self, value: tensor, shape: Sequence[int]) -> tensor:
        if value.type.is_block():
            raise AssertionError("Cannot splat a block tensor")
        if len(shape) == 0:
            return value
        return self.create("splat", [value], self.create_block(value.dtype, shape))

    def unsplat(self, value: tensor) -> tensor:
        """A one-element block as a scalar (a `reshape` to the scalar type)."""
        if not value.type.is_block():
            return value
        if value.type.numel != 1:
            raise AssertionError("can only unsplat single-element tensors")
        return self.create("reshape", [value], value.dtype, can_reorder=False)

    # -- shapes ---------------------------------------------------------------------
    def reshape(self, input: tensor, dst_shape: Sequence[int], can_reorder: bool = False) -> tensor:
        dst_shape = [int(_unwrap_if_constexpr(s)) for s in dst_shape]
        numel = 1
        for s in dst_shape:
            numel *= s
        if input.type.numel != numel:
            raise ValueError("reshape() cannot change total number of elements in tensor")
        if not dst_shape:
            return self.unsplat(input)
        if not input.type.is_block():
            return self.splat(input, dst_shape)
        ret_ty = self.create_block(input.dtype, dst_shape)
        if ret_ty == input.type:
            return input
        return self.create("reshape", [input], ret_ty, can_reorder=bool(can_reorder))

    def expand_dims(self, input: tensor, axis: int) -> tensor:
        """Insert a dimension of size 1 at `axis` of the result (a scalar becomes `[1]`)."""
        dst_shape = list(input.type.shape)
        dst_shape.insert(axis, 1)
        if not input.type.is_block():
            return self.splat(input, dst_shape)
        return self.create("expand_dims", [input], block_type(input.dtype, dst_shape), axis=axis)

    def permute(self, input: tensor, dims: Sequence[int]) -> tensor:
        dims = tuple(int(_unwrap_if_constexpr(d)) for d in dims)
        shape = input.type.shape
        if len(shape) != len(dims):
            raise ValueError("permute dims must have the same length as input shape")
        if sorted(dims) != list(range(len(dims))):
            raise ValueError(f"permute dims must be a permutation of 0, 1, ..., n-1, but were {dims}")
        if dims == tuple(range(len(dims))):
            return input
        return self.create("permute", [input], block_type(input.dtype, [shape[d] for d in dims]), order=dims)

    def cat(self, lhs: tensor, rhs: tensor, can_reorder: bool) -> tensor:
        if not can_reorder:
            raise AssertionError("current implementation of `cat` always may reorder elements")
        if len(lhs.type.shape) != 1 or len(rhs.type.shape) != 1:
            raise AssertionError("cat only supports 1-D tensors")
        if lhs.dtype != rhs.dtype:
            raise TypeError(f"cat operands must have the same dtype, got {dtype_name(lhs.dtype)} "
                            f"and {dtype_name(rhs.dtype)}")
        length = lhs.type.shape[0] + rhs.type.shape[0]
        return self.create("cat", [lhs, rhs], self.create_block(lhs.dtype, [length]))

    def join(self, a: tensor, b: tensor) -> tensor:
        """Broadcast `a` and `b` together and stack them along a new last axis of size 2."""
        a, b = self.broadcast_impl_value(a, b)
        if a.type != b.type:
            raise TypeError(f"join operands must have the same dtype, got {dtype_name(a.dtype)} "
                            f"and {dtype_name(b.dtype)}")
        return self.create("join", [a, b], self.create_block(a.dtype, list(a.type.shape) + [2]))

    def split(self, a: tensor) -> tuple[tensor, tensor]:
        """Inverse of `join`; a `[2]` input gives two scalars."""
        shape = a.type.shape
        if len(shape) == 0 or shape[-1] != 2:
            raise AssertionError(f"split requires the last dimension to have size 2, got shape {list(shape)}")
        result_ty = self.shaped(a.dtype, shape[:-1])
        op = self.builder.create("split", [a.handle], [result_ty, result_ty])
        return tensor(op.results[0], result_ty), tensor(op.results[1], result_ty)

    # -- broadcasting -------------------------------------------------------------------
    def broadcast_impl_shape(self, input: tensor, shape: Sequence[int]) -> tensor:
        """`input` broadcast to `shape` without adding dimensions (scalars are splat)."""
        shape = [int(_unwrap_if_constexpr(s)) for s in shape]
        if not input.type.is_block():
            return self.splat(input, shape)
        src_shape = list(input.type.shape)
        if len(src_shape) != len(shape):
            raise ValueError(f"Cannot broadcast, rank mismatch: {src_shape}, {shape}")
        if shape == src_shape:
            return input
        for i, item in enumerate(src_shape):
            if shape[i] != item and item != 1:
                raise ValueError(f"Cannot broadcast, the expanded size of the tensor ({shape[i]}) must match the "
                                 f"existing size ({item}) at non-singleton dimension {i}: {src_shape}, {shape}")
        return self.create("broadcast", [input], self.create_block(input.dtype, shape))

    def broadcast_impl_value(self, lhs: tensor, rhs: tensor) -> tuple[tensor, tensor]:
        """Make two operands the same shape: scalars splat, shorter ranks get leading
        1-dims, then dims of size 1 repeat (SEMANTICS 9)."""
        lhs_ty, rhs_ty = lhs.type, rhs.type
        if lhs_ty.is_block() and not rhs_ty.is_block():
            return lhs, self.splat(rhs, lhs_ty.shape)
        if rhs_ty.is_block() and not lhs_ty.is_block():
            return self.splat(lhs, rhs_ty.shape), rhs
        if not lhs_ty.is_block():
            return lhs, rhs
        while len(lhs.type.shape) < len(rhs.type.shape):
            lhs = self.expand_dims(lhs, 0)
        while len(rhs.type.shape) < len(lhs.type.shape):
            rhs = self.expand_dims(rhs, 0)
        lhs_shape, rhs_shape = lhs.type.shape, rhs.type.shape
        ret_shape = []
        for i, (left, right) in enumerate(zip(lhs_shape, rhs_shape)):
            if left == 1:
                ret_shape.append(right)
            elif right == 1 or right == left:
                ret_shape.append(left)
            else:
                raise ValueError(f"Cannot make_shape_compatible: incompatible dimensions at index {i}: "
                                 f"{left} and {right} (shapes {list(lhs_shape)} and {list(rhs_shape)}): blocks "
                                 f"combine when each dimension is equal or 1; x[:, None] and x[None, :] add a "
                                 f"dimension of size 1")
        if list(lhs_shape) != ret_shape:
            lhs = self.create("broadcast", [lhs], block_type(lhs.dtype, ret_shape))
        if list(rhs_shape) != ret_shape:
            rhs = self.create("broadcast", [rhs], block_type(rhs.dtype, ret_shape))
        return lhs, rhs

    def broadcast_tensors(self, *inputs: tensor) -> tuple[tensor, ...]:
        """All of `inputs` broadcast to their common shape."""
        if not inputs:
            return ()
        head, *tail = inputs
        for i in range(len(tail)):
            head, tail[i] = self.broadcast_impl_value(head, tail[i])
        for i in range(len(tail)):
            head, tail[i] = self.broadcast_impl_value(head, tail[i])
        return (head, *tail)

    # -- indexing-like ops -------------------------------------------------------------
    def gather(self, src: tensor, index: tensor, axis: int) -> tensor:
        if not index.dtype.is_int():
            raise AssertionError("index must be an integer tensor")
        rank = len(src.type.shape)
        if len(index.type.shape) != rank:
            raise AssertionError("source and index tensors must have the same rank")
        if not -rank <= axis < rank:
            raise AssertionError(f"gather axis {axis} must be < source rank ({rank})")
        if axis < 0:
            axis += rank
        for d in range(rank):
            if d != axis and index.type.shape[d] != src.type.shape[d]:
                raise AssertionError(f"index dim {d} must match the corresponding source dim")
        return self.create("gather", [src, index], block_type(src.dtype, index.type.shape), axis=axis)

    def histogram(self, input: tensor, num_bins: int, mask: tensor | None) -> tensor:
        if len(input.type.shape) != 1:
            raise AssertionError("histogram only supports 1D input")
        if not input.dtype.is_int():
            raise AssertionError("histogram only supports integer input")
        result_ty = self.create_block(tl.int32, [num_bins])
        if mask is None:
            return self.create("histogram", [input], result_ty, num_bins=num_bins)
        mask = self.broadcast_impl_shape(mask, input.type.shape)
        if not mask.type.scalar.is_bool():
            raise ValueError("Mask must have boolean scalar type")
        return self.create("histogram", [input, mask], result_ty, num_bins=num_bins)

    def getitem(self, input: tensor, slices) -> tensor:
        """`x[...]` with only `None` (new axis) and bare `:` accepted."""
        if isinstance(slices, tl.tuple):
            slices = slices.values
        elif not isinstance(slices, (list, tuple)):
            slices = [slices]
        result = input
        for dim, item in enumerate(slices):
            item = _unwrap_if_constexpr(item)
            if item is None:
                result = self.expand_dims(result, dim)
            elif isinstance(item, (slice, tl.slice)) and all(_unwrap_if_constexpr(part) is None
                                                 for part in (item.start, item.stop, item.step)):
                continue
            elif isinstance(item, tensor) and input.type.scalar.is_ptr():
                raise ValueError(f"unsupported tensor index: {item}. A pointer is not indexed: read memory at "
                                 f"offsets with tl.load(ptr + offsets) and write it with tl.store(ptr + offsets, "
                                 f"value)")
            else:
                raise ValueError(f"unsupported tensor index: {item}. Blocks take only None (a new dimension of "
                                 f"size 1) and `:` as indices, as in x[:, None]")
        return result
