"""`tl.cast` / `.to`: Triton's dispatch order and checks (TRITON_SEMANTICS 3)."""

from __future__ import annotations

import numpy as np
import pytest

import tritone.language as tl
from tritone.ir.types import type_text
from tritone.language.semantic import constant_value

from ._helpers import Kernel


def _cast(src: str, dst, shape=(8,), **kwargs):
    k = Kernel()
    x = k.arg(src, list(shape))
    result = x.to(dst, _semantic=k.sem, **kwargs)
    return k, x, result


def _body(k):
    return [(op.name, dict(op.attrs), type_text(op.results[0].type) if op.results else None) for op in k.fn.body.ops]


def test_same_dtype_is_the_input():
    k, x, r = _cast("fp32", tl.float32)
    assert r is x and not k.fn.body.ops


def test_float_narrowing_rounds_to_nearest_even_by_default():
    k, _, r = _cast("fp32", tl.float16)
    assert _body(k) == [("cast", {"rounding": "rtne"}, "<8xfp16>")]
    k, _, r = _cast("fp32", tl.bfloat16, fp_downcast_rounding="rtz")
    assert _body(k) == [("cast", {"rounding": "rtz"}, "<8xbf16>")]
    k.verify()


def test_fp16_and_bf16_go_through_fp32_except_to_fp32():
    k, _, r = _cast("fp16", tl.bfloat16)
    assert _body(k) == [("cast", {}, "<8xfp32>"), ("cast", {"rounding": "rtne"}, "<8xbf16>")]
    k, _, r = _cast("bf16", tl.int32)
    assert _body(k) == [("cast", {}, "<8xfp32>"), ("cast", {}, "<8xi32>")]
    k, _, r = _cast("fp16", tl.float32)
    assert _body(k) == [("cast", {}, "<8xfp32>")]
    k, _, r = _cast("fp16", tl.float8e5)
    assert _body(k) == [("cast", {"rounding": "rtne"}, "<8xfp8e5>")]
    k.verify()


def test_fp8_conversions_are_direct():
    k, _, r = _cast("fp8e4nv", tl.bfloat16)
    assert _body(k) == [("cast", {}, "<8xbf16>")]
    k.verify()


def test_rounding_mode_validation():
    with pytest.raises(ValueError, match="only for truncating fp conversions"):
        _cast("fp16", tl.float32, fp_downcast_rounding="rtz")
    with pytest.raises(ValueError, match="only for truncating fp conversions"):
        _cast("i32", tl.float16, fp_downcast_rounding="rtne")
    with pytest.raises(ValueError, match="Invalid rounding mode"):
        _cast("fp32", tl.float16, fp_downcast_rounding="rtn")


def test_to_bool_compares_with_zero():
    k, _, r = _cast("i32", tl.int1)
    assert [n for n, _, _ in _body(k)] == ["constant", "splat", "cmp"]
    assert k.fn.body.ops[-1].attrs["pred"] == "ne" and r.type == tl.block_type(tl.int1, [8])
    k, _, r = _cast("fp32", tl.int1)
    assert k.fn.body.ops[-1].attrs["pred"] == "ne" and k.ops("constant")[0].attrs["value"] == 0.0
    k.verify()


def test_int_and_float_conversions_are_single_casts():
    for src, dst in [("i8", tl.int64), ("u8", tl.int32), ("i1", tl.int32), ("i64", tl.int8),
                     ("fp32", tl.int8), ("fp64", tl.uint32), ("i32", tl.float32), ("u64", tl.float64),
                     ("i1", tl.float32)]:
        k, _, r = _cast(src, dst)
        assert [n for n, _, _ in _body(k)] == ["cast"], (src, dst)
        assert r.dtype == dst
        k.verify()


def test_pointer_casts():
    k = Kernel()
    p = k.arg("*fp32", [8])
    assert p.to(tl.int64, _semantic=k.sem).dtype == tl.int64
    assert p.to(tl.int1, _semantic=k.sem).dtype == tl.int1
    assert p.to(tl.pointer_type(tl.int8), _semantic=k.sem).dtype == tl.pointer_type(tl.int8)
    with pytest.raises(AssertionError, match="cannot cast"):
        p.to(tl.int32, _semantic=k.sem)
    address = k.arg("i64", [8])
    assert address.to(tl.pointer_type(tl.float16), _semantic=k.sem).dtype == tl.pointer_type(tl.float16)
    with pytest.raises(AssertionError, match="cannot cast"):
        k.arg("i32", [8]).to(tl.pointer_type(tl.float16), _semantic=k.sem)
    k.verify()


def test_fp8_and_int_do_not_convert_directly():
    with pytest.raises(AssertionError, match="cannot cast"):
        _cast("i32", tl.float8e5)
    with pytest.raises(AssertionError, match="cannot cast"):
        _cast("fp8e4nv", tl.int32)


def test_bitcast_needs_equal_sizes():
    k, _, r = _cast("fp32", tl.int32, bitcast=True)
    assert _body(k) == [("bitcast", {}, "<8xi32>")]
    with pytest.raises(ValueError, match="Cannot bitcast data-type of size 8 to data-type of size 32"):
        _cast("i8", tl.float32, bitcast=True)
    with pytest.raises(ValueError, match="size 1 to data-type of size 8"):
        _cast("i1", tl.int8, bitcast=True)
    k = Kernel()
    p = k.arg("*fp32")
    assert tl.cast(p, tl.pointer_type(tl.int32), bitcast=True, _semantic=k.sem).dtype == tl.pointer_type(tl.int32)
    assert k.fn.body.ops[-1].name == "cast"
    k.verify()


def test_scalars_stay_scalars():
    k, _, r = _cast("fp32", tl.float16, shape=())
    assert r.type == tl.float16
    k.verify()


@pytest.mark.parametrize("name, np_type", [("fp16", np.float16), ("fp32", np.float32)])
def test_constant_values_round_like_numpy(name, np_type):
    rng = np.random.default_rng()
    values = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-8, 8, 200),
                             [65519.0, 65520.0, 1e-7, 6e-8, 3e-8, 3.4028235e38, 3.5e38, -1e39]])
    for value in values:
        with np.errstate(over="ignore"):
            expected = float(np_type(value))
        assert constant_value(float(value), tl.dtype(name)) == expected, value


def test_constant_values_bf16_fp8_and_ints():
    assert constant_value(1.005859375, tl.bfloat16) == 1.0078125
    assert constant_value(1.9999, tl.bfloat16) == 2.0
    assert constant_value(3.4e38, tl.bfloat16) == float("inf")
    assert constant_value(500.0, tl.float8e4nv) == 448.0
    assert constant_value(float("inf"), tl.float8e5) == 57344.0
    assert constant_value(1.9999, tl.float8e5) == 2.0
    assert constant_value(300, tl.int8) == 44
    assert constant_value(-1, tl.uint32) == 2**32 - 1
    assert constant_value(2.7, tl.int32) == 2
    assert constant_value(5, tl.int1) is True
