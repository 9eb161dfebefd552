"""Program ids, construction and shape manipulation (TRITON_SEMANTICS 9)."""

from __future__ import annotations

import pytest

import tritone.language as tl

from ._helpers import Kernel


def test_program_id_and_num_programs():
    k = Kernel()
    assert tl.program_id(1, _semantic=k.sem).type == tl.int32
    assert tl.num_programs(tl.constexpr(2), _semantic=k.sem).type == tl.int32
    assert k.fn.body.ops[0].attrs == {"axis": 1}
    with pytest.raises(ValueError, match="program_id axis must be 0, 1, or 2"):
        tl.program_id(3, _semantic=k.sem)
    k.verify()


def test_arange_rules():
    k = Kernel()
    r = tl.arange(3, 7, _semantic=k.sem)
    assert r.type == tl.block_type(tl.int32, [4]) and k.fn.body.ops[0].attrs == {"start": 3, "end": 7}
    with pytest.raises(ValueError, match="power of 2"):
        tl.arange(0, 1025, _semantic=k.sem)
    with pytest.raises(ValueError, match="arange must fit in int32"):
        tl.arange(-4, 4, _semantic=k.sem)
    with pytest.raises(ValueError, match="greater than the start"):
        tl.arange(4, 4, _semantic=k.sem)
    with pytest.raises(ValueError, match="numel"):
        tl.arange(0, 2**21, _semantic=k.sem)
    with pytest.raises(ValueError, match="tl.constexpr"):
        tl.arange(0, k.arg("i32"), _semantic=k.sem)
    k.verify()


def test_full_and_zeros():
    k = Kernel()
    f = tl.full((4, 8), 2.7, tl.int32, _semantic=k.sem)
    assert f.type == tl.block_type(tl.int32, [4, 8]) and k.fn.body.ops[-1].attrs == {"value": 2}
    assert tl.full((), 1.5, tl.float16, _semantic=k.sem).type == tl.float16
    assert tl.full([4], k.arg("i64"), tl.int32, _semantic=k.sem).type == tl.block_type(tl.int32, [4])
    with pytest.raises(ValueError, match="Shape element 0 must be a power of 2"):
        tl.full((3,), 0, tl.int32, _semantic=k.sem)
    with pytest.raises(ValueError, match="exceeds triton maximum tensor numel"):
        tl.full((1024, 2048), 0, tl.int32, _semantic=k.sem)
    k.verify()


def test_broadcasting_prepends_dimensions():
    k = Kernel()
    a, b = k.arg("fp32", [8]), k.arg("fp32", [4, 1])
    r = a.__add__(b, _semantic=k.sem)
    assert r.type == tl.block_type(tl.float32, [4, 8])
    assert "expand_dims" in k.op_names() and k.op_names().count("broadcast") == 2
    with pytest.raises(ValueError, match="incompatible dimensions at index 1: 8 and 4"):
        a.__add__(k.arg("fp32", [2, 4]), _semantic=k.sem)
    assert tl.broadcast_to(b, (4, 8), _semantic=k.sem).type == tl.block_type(tl.float32, [4, 8])
    with pytest.raises(ValueError, match="rank mismatch"):
        tl.broadcast_to(a, 4, 8, _semantic=k.sem)
    x, y = tl.broadcast(a, b, _semantic=k.sem)
    assert x.type == y.type == tl.block_type(tl.float32, [4, 8])
    k.verify()


def test_indexing_with_none_and_colon():
    k = Kernel()
    a = k.arg("i32", [8])
    assert a.__getitem__((None, slice(None)), _semantic=k.sem).type == tl.block_type(tl.int32, [1, 8])
    assert a.__getitem__((slice(None), None), _semantic=k.sem).type == tl.block_type(tl.int32, [8, 1])
    assert a.__getitem__(tl.tuple([tl.constexpr(None), slice(None)]), _semantic=k.sem).shape[0] == 1
    with pytest.raises(ValueError, match="unsupported tensor index"):
        a.__getitem__(0, _semantic=k.sem)
    with pytest.raises(ValueError, match="unsupported tensor index"):
        a.__getitem__(slice(0, 4), _semantic=k.sem)
    k.verify()


def test_expand_dims_reshape_trans_permute():
    k = Kernel()
    a = k.arg("fp32", [4, 8])
    assert tl.expand_dims(a, (0, -1), _semantic=k.sem).type == tl.block_type(tl.float32, [1, 4, 8, 1])
    with pytest.raises(ValueError, match="duplicate axes"):
        tl.expand_dims(a, (0, 0), _semantic=k.sem)
    assert tl.expand_dims(k.arg("fp32"), 0, _semantic=k.sem).type == tl.block_type(tl.float32, [1])
    assert a.reshape(32, _semantic=k.sem).type == tl.block_type(tl.float32, [32])
    assert tl.reshape(a, (2, 16), can_reorder=True, _semantic=k.sem).type == tl.block_type(tl.float32, [2, 16])
    with pytest.raises(ValueError, match="cannot change total number of elements"):
        tl.reshape(a, (64,), _semantic=k.sem)
    one = k.arg("fp32", [1, 1])
    assert tl.reshape(one, (), _semantic=k.sem).type == tl.float32
    assert one.item(_semantic=k.sem).type == tl.float32
    assert tl.trans(a, _semantic=k.sem).type == tl.block_type(tl.float32, [8, 4])
    c = k.arg("fp32", [2, 4, 8])
    assert tl.trans(c, _semantic=k.sem).type == tl.block_type(tl.float32, [2, 8, 4])
    assert tl.permute(c, (2, 0, 1), _semantic=k.sem).type == tl.block_type(tl.float32, [8, 2, 4])
    assert k.ops("permute")[-1].attrs == {"order": (2, 0, 1)}
    with pytest.raises(ValueError, match="permutation"):
        tl.permute(c, (0, 0, 1), _semantic=k.sem)
    with pytest.raises(ValueError, match="0- or 1-dimensional"):
        tl.trans(k.arg("fp32", [4]), _semantic=k.sem)
    with pytest.warns(UserWarning, match="view is deprecated"):
        assert tl.view(a, (32,), _semantic=k.sem).shape[0] == 32
    k.verify()


def test_join_split_cat():
    k = Kernel()
    a, b = k.arg("fp32", [4]), k.arg("fp32", [2, 4])
    j = tl.join(a, b, _semantic=k.sem)
    assert j.type == tl.block_type(tl.float32, [2, 4, 2])
    x, y = tl.split(j, _semantic=k.sem)
    assert x.type == y.type == tl.block_type(tl.float32, [2, 4])
    s = tl.join(k.arg("i32"), k.arg("i32"), _semantic=k.sem)
    assert s.type == tl.block_type(tl.int32, [2])
    lo, hi = s.split(_semantic=k.sem)
    assert lo.type == tl.int32 and hi.type == tl.int32
    with pytest.raises(AssertionError, match="last dimension to have size 2"):
        tl.split(a, _semantic=k.sem)
    assert tl.cat(a, a, can_reorder=True, _semantic=k.sem).type == tl.block_type(tl.float32, [8])
    with pytest.raises(AssertionError, match="may reorder"):
        tl.cat(a, a, _semantic=k.sem)
    k.verify()


def test_gather_and_histogram():
    k = Kernel()
    src, index = k.arg("fp16", [4, 8]), k.arg("i64", [4, 2])
    assert tl.gather(src, index, 1, _semantic=k.sem).type == tl.block_type(tl.float16, [4, 2])
    with pytest.raises(AssertionError, match="must match"):
        tl.gather(src, k.arg("i32", [2, 8]), -1, _semantic=k.sem)
    h = tl.histogram(k.arg("i32", [16]), 8, mask=True, _semantic=k.sem)
    assert h.type == tl.block_type(tl.int32, [8])
    with pytest.raises(AssertionError, match="integer input"):
        tl.histogram(k.arg("fp32", [16]), 8, _semantic=k.sem)
    k.verify()


def test_scalar_block_operands_are_splat():
    k = Kernel()
    s, b = k.arg("fp32"), k.arg("fp32", [4, 4])
    assert s.__mul__(s, _semantic=k.sem).type == tl.float32
    assert s.__mul__(b, _semantic=k.sem).type == b.type
    assert k.op_names()[-2:] == ["splat", "mul"]
    k.verify()


def test_to_cond():
    k = Kernel()
    assert k.sem.to_cond(k.arg("i32")).type == tl.int1
    with pytest.warns(UserWarning):
        assert k.sem.to_cond(k.arg("i1", [1])).type == tl.int1
    with pytest.raises(ValueError, match="more than one value is ambiguous"):
        k.sem.to_cond(k.arg("i1", [2]))
    k.verify()
