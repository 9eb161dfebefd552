"""Pointer arithmetic, loads, stores and atomics (TRITON_SEMANTICS 4)."""

from __future__ import annotations

import pytest

import tritone.language as tl

from ._helpers import Kernel


def test_pointer_plus_offsets_in_elements():
    k = Kernel()
    p = k.arg("*fp16")
    offsets = tl.arange(0, 16, _semantic=k.sem)
    ptrs = p.__add__(offsets, _semantic=k.sem)
    assert ptrs.type == tl.block_type(tl.pointer_type(tl.float16), [16])
    assert k.op_names()[-2:] == ["splat", "addptr"]
    # offset + pointer swaps the operands
    again = offsets.__add__(p, _semantic=k.sem)
    assert again.type == ptrs.type and k.fn.body.ops[-1].operands[0].type.scalar.is_ptr()
    k.verify()


def test_unsigned_offsets_are_zero_extended_to_i64():
    k = Kernel()
    p, u = k.arg("*fp32"), k.arg("u32", [8])
    p.__add__(u, _semantic=k.sem)
    cast, addptr = k.fn.body.ops[-2:]
    assert cast.name == "cast" and cast.results[0].type == tl.block_type(tl.int64, [8])
    assert addptr.name == "addptr"
    k.verify()


def test_pointer_minus_int_and_errors():
    k = Kernel()
    p, i = k.arg("*fp32"), k.arg("i32")
    assert p.__sub__(i, _semantic=k.sem).type == tl.pointer_type(tl.float32)
    assert k.op_names()[-2:] == ["sub", "addptr"]
    with pytest.raises(TypeError):
        p.__sub__(p, _semantic=k.sem)
    with pytest.raises(TypeError):
        p.__add__(p, _semantic=k.sem)
    with pytest.raises(TypeError):
        p.__add__(1.5, _semantic=k.sem)
    with pytest.raises(TypeError):
        i.__sub__(p, _semantic=k.sem)
    k.verify()


def test_load_broadcasts_mask_and_casts_other():
    k = Kernel()
    p = k.arg("*i32")
    ptrs = p.__add__(tl.arange(0, 16, _semantic=k.sem), _semantic=k.sem)
    mask = k.arg("i1")
    value = tl.load(ptrs, mask=mask, other=1.5, _semantic=k.sem)
    assert value.type == tl.block_type(tl.int32, [16])
    load = k.ops("load")[0]
    assert [o.type for o in load.operands] == [ptrs.type, tl.block_type(tl.int1, [16]), value.type]
    assert load.attrs == {"cache": "", "evict": "", "volatile": False}
    k.verify()


def test_load_of_scalar_pointer_is_scalar():
    k = Kernel()
    p = k.arg("*fp32")
    assert tl.load(p, _semantic=k.sem).type == tl.float32
    with pytest.raises(ValueError, match="Mask argument cannot be block type"):
        tl.load(p, mask=k.arg("i1", [4]), _semantic=k.sem)
    with pytest.raises(ValueError, match="`other` cannot be provided without `mask`"):
        tl.load(p, other=0.0, _semantic=k.sem)
    with pytest.raises(ValueError, match="Cache modifier"):
        tl.load(p, cache_modifier=".xx", _semantic=k.sem)
    with pytest.raises(ValueError, match="block pointers"):
        tl.load(p, boundary_check=(0,), _semantic=k.sem)
    assert tl.load(p, eviction_policy="evict_last", cache_modifier=".cg", volatile=True,
                   _semantic=k.sem).type == tl.float32
    assert k.ops("load")[-1].attrs == {"cache": ".cg", "evict": "evict_last", "volatile": True}
    k.verify()


def test_bool_pointers_load_and_store_bytes():
    k = Kernel()
    p = k.arg("*i1")
    ptrs = p.__add__(tl.arange(0, 8, _semantic=k.sem), _semantic=k.sem)
    flags = tl.load(ptrs, _semantic=k.sem)
    assert flags.type == tl.block_type(tl.int1, [8])
    load = k.ops("load")[0]
    assert load.results[0].type == tl.block_type(tl.int8, [8])
    assert k.op_names()[-1] == "cmp"
    tl.store(ptrs, k.arg("i32", [8]), _semantic=k.sem)
    store = k.ops("store")[0]
    assert store.operands[0].type.scalar == tl.pointer_type(tl.int8)
    assert store.operands[1].type == tl.block_type(tl.int8, [8])
    k.verify()


def test_store_casts_and_broadcasts_the_value():
    k = Kernel()
    p = k.arg("*fp16")
    ptrs = p.__add__(tl.arange(0, 8, _semantic=k.sem), _semantic=k.sem)
    tl.store(ptrs, 1, mask=k.arg("i1", [8]), _semantic=k.sem)
    store = k.ops("store")[0]
    assert store.operands[1].type == tl.block_type(tl.float16, [8])
    assert len(store.operands) == 3
    ptrs.store(k.arg("fp32", [8]), _semantic=k.sem)
    assert k.ops("cast")[-1].attrs == {"rounding": "rtne"}
    k.verify()


def test_store_errors():
    k = Kernel()
    p = k.arg("*fp32")
    ptrs = p.__add__(tl.arange(0, 8, _semantic=k.sem), _semantic=k.sem)
    with pytest.raises(ValueError, match="Expected pointer argument to have shape"):
        tl.store(ptrs, k.arg("fp32", [4, 8]), _semantic=k.sem)
    with pytest.raises(ValueError, match="Value argument cannot be block type"):
        tl.store(p, k.arg("fp32", [8]), _semantic=k.sem)
    with pytest.raises(ValueError, match="Mask must have boolean scalar type"):
        tl.store(ptrs, 1.0, mask=k.arg("i32", [8]), _semantic=k.sem)
    const_ptr = k.arg(tl.pointer_type(tl.float32, const=True))
    with pytest.raises(ValueError, match="Cannot store to a constant pointer"):
        tl.store(const_ptr, 1.0, _semantic=k.sem)


def test_atomics_typing():
    k = Kernel()
    p = k.arg("*fp32")
    ptrs = p.__add__(tl.arange(0, 8, _semantic=k.sem), _semantic=k.sem)
    old = tl.atomic_add(ptrs, 1, _semantic=k.sem)
    assert old.type == tl.block_type(tl.float32, [8])
    rmw = k.ops("atomic_rmw")[0]
    assert rmw.attrs == {"kind": "add", "sem": "acq_rel", "scope": "gpu"}
    tl.atomic_max(ptrs, k.arg("fp32", [8]), mask=k.arg("i1", [8]), sem="relaxed", scope="cta", _semantic=k.sem)
    assert k.ops("atomic_rmw")[1].attrs == {"kind": "max", "sem": "relaxed", "scope": "cta"}
    ptrs.atomic_xchg(2.0, _semantic=k.sem)
    q = k.arg("*i32")
    assert tl.atomic_cas(q, 0, 1, _semantic=k.sem).type == tl.int32
    with pytest.raises(TypeError, match="atomic_and not supported"):
        tl.atomic_and(ptrs, 1, _semantic=k.sem)
    with pytest.raises(ValueError, match="Memory semantic"):
        tl.atomic_add(ptrs, 1, sem="seq_cst", _semantic=k.sem)
    k.verify()
    h = Kernel()
    ph, p8 = h.arg("*fp16"), h.arg("*i8")
    tl.atomic_add(ph, 1.0, _semantic=h.sem)
    with pytest.raises(ValueError, match="atomic_max does not support fp16"):
        tl.atomic_max(ph, 1.0, _semantic=h.sem)
    with pytest.raises(ValueError, match="does not support int8"):
        tl.atomic_add(p8, 1, _semantic=h.sem)


def test_cache_modifier_none_is_the_default():
    # Triton takes cache_modifier=None (and eviction_policy=None) as "no modifier".
    k = Kernel()
    p = k.arg("*fp32")
    tl.load(p, cache_modifier=None, eviction_policy=None, _semantic=k.sem)
    tl.store(p, 1.0, cache_modifier=None, _semantic=k.sem)
    assert k.ops("load")[-1].attrs["cache"] == "" and k.ops("load")[-1].attrs["evict"] == ""
    assert k.ops("store")[-1].attrs["cache"] == ""
    k.verify()
