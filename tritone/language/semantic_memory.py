"""Loads, stores and atomics (SEMANTICS 4).

A mixin of `Semantic` (semantic.py). Pointers to `i1` are never accessed:
loads and stores go through an `i8` pointer instead (`!= 0` after a load).
Accesses through block pointers are lowered by `block_pointer.py` to the
ordinary ones here; tensor descriptors are `descriptor.py`'s.
"""

from __future__ import annotations

from ..ir.types import pointer_type
from . import core as tl
from .block_pointer import BlockPointerSemantic, block_pointer
from .core import dtype_name, tensor
from .descriptor import TensorDescriptorSemantic

_LOAD_CACHE = ("", ".ca", ".cg", ".cv")
_STORE_CACHE = ("", ".wb", ".cg", ".cs", ".wt")
_EVICTION = ("", "evict_first", "evict_last", "evict_normal")
_SEMANTICS = ("relaxed", "acquire", "release", "acq_rel")
_SCOPES = ("gpu", "cta", "sys")


def _check_choice(value: str | None, allowed: tuple, what: str) -> str:
    """`value` if `allowed` holds it; None or "" is the default (""), as Triton
    takes `cache_modifier=None`."""
    value = value or ""
    if value not in allowed:
        raise ValueError(f"{what} {value} not supported")
    return value


class MemorySemantic(BlockPointerSemantic, TensorDescriptorSemantic):
    """Memory ops of `Semantic`."""

    def _byte_pointer(self, ptr: tensor) -> tensor:
        """`ptr` retyped from `*i1` to `*i8` (same addresses)."""
        ptr_ty = ptr.type.scalar
        return self.cast(ptr, pointer_type(tl.int8, ptr_ty.address_space, ptr_ty.const))

    def load(self, ptr: tensor | block_pointer, mask: tensor | None, other: tensor | None, boundary_check=(),
             padding_option: str = "", cache_modifier: str = "", eviction_policy: str = "",
             is_volatile: bool = False) -> tensor:
        """`tl.load` through a pointer, a block of pointers or a block pointer.
        `mask`/`other` broadcast to the pointer's shape; `other` is cast to the
        element type."""
        cache = _check_choice(cache_modifier, _LOAD_CACHE, "Cache modifier")
        evict = _check_choice(eviction_policy, _EVICTION, "Eviction policy")
        if padding_option not in ("", "zero", "nan"):
            raise ValueError(f"Padding option {padding_option} not supported")
        if isinstance(ptr, block_pointer):
            return self.load_block_pointer(ptr, mask, other, boundary_check, padding_option, cache, evict,
                                           is_volatile)
        ptr = self.to_tensor(ptr)
        if not ptr.type.scalar.is_ptr():
            raise ValueError(f"Unsupported ptr type {ptr.type!r} in `tl.load`: it takes a pointer, such as a "
                             f"tensor argument plus offsets (x_ptr + offs), but got {_kind(ptr)}")
        if mask is None and other is not None:
            raise ValueError("`other` cannot be provided without `mask`")
        if padding_option or boundary_check:
            raise ValueError("`padding_option` or `boundary_check` argument is not supported for loading a tensor of"
                             "pointers or loading a scalar. Because the compiler does not know the boundary; please "
                             "use block pointers (defined by `make_block_ptr`) instead")
        if not ptr.type.is_block():
            if mask is not None and mask.type.is_block():
                raise ValueError("Mask argument cannot be block type if pointer argument is not a block")
            if other is not None and other.type.is_block():
                raise ValueError("Other argument cannot be block type if pointer argument is not a block")
        if ptr.type.is_block():
            if mask is not None:
                ptr, mask = self.broadcast_impl_value(ptr, mask)
            if other is not None:
                ptr, other = self.broadcast_impl_value(ptr, other)
                if mask is not None:
                    ptr, mask = self.broadcast_impl_value(ptr, mask)
        if mask is not None and not mask.type.scalar.is_bool():
            raise ValueError("Mask must have boolean scalar type")

        elem_ty = ptr.type.scalar.element_ty
        is_bool = elem_ty.is_bool()
        if is_bool:
            ptr = self._byte_pointer(ptr)
            elem_ty = tl.int8
        if other is not None:
            other = self.cast(other, elem_ty)
        result_ty = ptr.type.with_element_ty(elem_ty) if ptr.type.is_block() else elem_ty
        operands = [t for t in (ptr, mask, other) if t is not None]
        result = self.create("load", operands, result_ty, cache=cache, evict=evict, volatile=bool(is_volatile))
        if is_bool:
            result = self.cast(result, tl.int1)
        return result

    def store(self, ptr: tensor | block_pointer, val, mask: tensor | None, boundary_check=(),
              cache_modifier: str = "", eviction_policy: str = "") -> None:
        """`tl.store`: `val` broadcast with `ptr` and `mask` (the pointer may not grow),
        then cast to the element type; through a block pointer, see `store_block_pointer`."""
        cache = _check_choice(cache_modifier, _STORE_CACHE, "Cache modifier")
        evict = _check_choice(eviction_policy, _EVICTION, "Eviction policy")
        if isinstance(ptr, block_pointer):
            if ptr.type.base_ty.is_const():
                raise ValueError("Cannot store to a constant pointer")
            return self.store_block_pointer(ptr, val, mask, boundary_check, cache, evict)
        ptr = self.to_tensor(ptr)
        if ptr.type.scalar.is_ptr() and ptr.type.scalar.is_const():
            raise ValueError("Cannot store to a constant pointer")
        if not ptr.type.scalar.is_ptr():
            raise ValueError(f"Unsupported ptr type {ptr.type!r} in `tl.store`: it takes a pointer, such as a "
                             f"tensor argument plus offsets (x_ptr + offs), but got {_kind(ptr)}")
        if boundary_check:
            raise ValueError("`boundary_check` argument is not supported for storing a tensor of pointers or storing a "
                             "scalar. Because the compiler does not know the boundary; please use block pointers "
                             "(defined by `make_block_ptr`) instead")
        val = self.to_tensor(val)
        if not ptr.type.is_block():
            if val.type.is_block():
                raise ValueError("Value argument cannot be block type if pointer argument is not a block")
            if mask is not None and mask.type.is_block():
                raise ValueError("Mask argument cannot be block type if pointer argument is not a block")
        else:
            ptr_shape = list(ptr.type.shape)
            if mask is None:
                ptr, val = self.broadcast_tensors(ptr, val)
            else:
                ptr, val, mask = self.broadcast_tensors(ptr, val, mask)
            if list(ptr.type.shape) != ptr_shape:
                raise ValueError(f"Expected pointer argument to have shape {ptr_shape} but got "
                                 f"{list(ptr.type.shape)}")
        elem_ty = ptr.type.scalar.element_ty
        if elem_ty.is_bool():
            ptr = self._byte_pointer(ptr)
            elem_ty = tl.int8
        try:
            val = self.cast(val, elem_ty)
        except AssertionError as error:
            raise AssertionError(f"tl.store of a {dtype_name(val.type.scalar)} value through a pointer to "
                                 f"{dtype_name(elem_ty)}: {error}") from None
        if mask is None:
            self.create_void("store", [ptr, val], cache=cache, evict=evict)
            return
        if not mask.type.scalar.is_bool():
            raise ValueError("Mask must have boolean scalar type")
        self.create_void("store", [ptr, val, mask], cache=cache, evict=evict)

    # -- atomics ------------------------------------------------------------------------
    def _atomic_checks(self, ptr: tensor, val, mask, op: str) -> tuple[tensor, tensor, tensor | None]:
        if not ptr.type.scalar.is_ptr():
            raise ValueError(f"Pointer argument of store instruction is {ptr.type!r}")
        if ptr.type.scalar.is_const():
            raise ValueError("Cannot store to a constant pointer")
        elem_ty = ptr.type.scalar.element_ty
        if (elem_ty.is_fp16() or elem_ty.is_bf16()) and op != "add":
            raise ValueError(f"atomic_{op} does not support {dtype_name(elem_ty)}")
        if elem_ty.primitive_bitwidth < 16 or (elem_ty.is_int() and elem_ty.primitive_bitwidth == 16):
            raise ValueError(f"atomic_{op} does not support {dtype_name(elem_ty)}")
        val = self.to_tensor(val)
        if mask is not None:
            mask = self.to_tensor(mask)
        if ptr.type.is_block():
            if mask is not None:
                mask = self.broadcast_impl_shape(mask, ptr.type.shape)
            val = self.broadcast_impl_shape(val, ptr.type.shape)
        elif val.type.is_block() or (mask is not None and mask.type.is_block()):
            raise ValueError("Value and mask cannot be blocks if the pointer argument is not a block")
        if mask is not None and not mask.type.scalar.is_bool():
            raise ValueError("Mask must have boolean scalar type")
        return ptr, self.cast(val, elem_ty), mask

    def atomic_rmw(self, kind: str, ptr: tensor, val, mask, sem: str | None, scope: str | None) -> tensor:
        """`atomic_<kind>` (add max min and or xor xchg); returns the old values."""
        ptr, val, mask = self._atomic_checks(ptr, val, mask, kind)
        sem = _check_choice(sem or "acq_rel", _SEMANTICS, "Memory semantic")
        scope = _check_choice(scope or "gpu", _SCOPES, "Memory semantic")
        elem_ty = val.type.scalar
        if kind in ("max", "min") and elem_ty.is_floating() and not (elem_ty.is_fp32() or elem_ty.is_fp64()):
            raise TypeError(f"atomic_{kind} not supported for dtype {dtype_name(elem_ty)}")
        if kind in ("and", "or", "xor") and not elem_ty.is_int():
            raise TypeError(f"atomic_{kind} not supported for dtype {dtype_name(elem_ty)}")
        operands = [ptr, val] if mask is None else [ptr, val, mask]
        return self.create("atomic_rmw", operands, val.type, kind=kind, sem=sem, scope=scope)

    def atomic_cas(self, ptr: tensor, cmp, val, sem: str | None, scope: str | None) -> tensor:
        sem = _check_choice(sem or "acq_rel", _SEMANTICS, "Memory semantic")
        scope = _check_choice(scope or "gpu", _SCOPES, "Memory semantic")
        if not ptr.type.scalar.is_ptr():
            raise ValueError(f"Pointer argument of store instruction is {ptr.type!r}")
        elem_ty = ptr.type.scalar.element_ty
        if elem_ty.primitive_bitwidth not in (16, 32, 64):
            raise ValueError("atomic_cas only supports elements with width {16, 32, 64}")
        cmp = self.to_tensor(cmp)
        val = self.to_tensor(val)
        if ptr.type.is_block():
            cmp = self.broadcast_impl_shape(cmp, ptr.type.shape)
            val = self.broadcast_impl_shape(val, ptr.type.shape)
        cmp = self.cast(cmp, elem_ty)
        val = self.cast(val, elem_ty)
        return self.create("atomic_cas", [ptr, cmp, val], val.type, sem=sem, scope=scope)


def _kind(value: tensor) -> str:
    """How a message names a kernel value's type: `an int32 block of shape [16]`, `an fp32 scalar`."""
    name = dtype_name(value.type.scalar)
    article = "an" if name.startswith(("int", "fp")) else "a"
    if value.type.is_block():
        return f"{article} {name} block of shape {list(value.type.shape)}"
    return f"{article} {name} scalar"
