"""Literal typing, promotion and the scalar rules (TRITON_SEMANTICS 1.2-1.11),
checked against upstream Triton's own rules and the verified tables of the sheet."""

from __future__ import annotations

import functools
import itertools
import random

import numpy as np
import pytest

import tritone.language as tl
from tritone.language.semantic import IncompatibleTypeErrorImpl, literal_dtype

from ._helpers import SCALAR_TYPES, Kernel, upstream_dtype


@functools.cache
def upstream_semantic():
    """Upstream Triton's typing rules; skips the test where upstream triton is not
    installed (Windows)."""
    return pytest.importorskip("triton.language.semantic").TritonSemantic(None)

INT_TYPES = [t for t in SCALAR_TYPES if t.is_int()]


def _upstream_result(fn, *args):
    try:
        return tl.dtype(fn(*args).name)
    except TypeError:
        return TypeError


def _ours(fn, *args):
    try:
        return fn(*args)
    except TypeError:
        return TypeError


@pytest.mark.parametrize("a, b", list(itertools.product(INT_TYPES, INT_TYPES)))
def test_integer_promotion_matches_upstream(a, b):
    expected = _upstream_result(upstream_semantic().integer_promote_impl, upstream_dtype(a), upstream_dtype(b))
    assert Kernel().sem.integer_promote_impl(a, b) == expected


@pytest.mark.parametrize("div_or_mod", [False, True])
@pytest.mark.parametrize("a_is_scalar, b_is_scalar", [(False, False), (True, False), (False, True)])
def test_computation_type_all_pairs_match_upstream(div_or_mod, a_is_scalar, b_is_scalar):
    sem = Kernel().sem
    for a, b in itertools.product(SCALAR_TYPES, SCALAR_TYPES):
        expected = _upstream_result(upstream_semantic().computation_type_impl, upstream_dtype(a), a_is_scalar,
                                    upstream_dtype(b), b_is_scalar, div_or_mod)
        got = _ours(sem.computation_type_impl, a, a_is_scalar, b, b_is_scalar, div_or_mod)
        assert got == expected, (a, b)


def _binary(kernel, op, x, y):
    return getattr(x, op)(y, _semantic=kernel.sem)


@pytest.mark.parametrize("op, div_or_mod", [("__add__", False), ("__mul__", False), ("__truediv__", True)])
def test_tensor_operators_follow_the_promotion_table(op, div_or_mod):
    for a, b in itertools.product(SCALAR_TYPES, SCALAR_TYPES):
        k = Kernel()
        x, y = k.arg(a, [16]), k.arg(b, [16])
        expected = _upstream_result(upstream_semantic().computation_type_impl, upstream_dtype(a), False,
                                    upstream_dtype(b), False, div_or_mod)
        if expected is TypeError:
            with pytest.raises(TypeError):
                _binary(k, op, x, y)
            continue
        result = _binary(k, op, x, y)
        if op == "__truediv__" and expected.is_int():
            expected = tl.float32
        assert result.type == tl.block_type(expected, [16]), (a, b)
        k.verify()


def test_fp16_with_bf16_is_fp16_and_maximum_of_bf16_is_fp32():
    k = Kernel()
    h, b = k.arg("fp16", [8]), k.arg("bf16", [8])
    assert h.__add__(b, _semantic=k.sem).dtype == tl.float16
    assert b.__add__(b, _semantic=k.sem).dtype == tl.bfloat16
    assert tl.maximum(b, b, _semantic=k.sem).dtype == tl.float32
    assert tl.clamp(b, 0.0, 1.0, _semantic=k.sem).dtype == tl.float32


@pytest.mark.parametrize("value, expected", [
    (True, "i1"), (0, "i32"), (-2**31, "i32"), (2**31 - 1, "i32"), (2**31, "u32"), (2**32 - 1, "u32"),
    (2**32, "i64"), (-2**31 - 1, "i64"), (-2**63, "i64"), (2**63, "u64"), (2**64 - 1, "u64"),
    (0.5, "fp32"), (0.0, "fp32"), (float("inf"), "fp32"), (float("nan"), "fp32"), (3.4e38, "fp32"),
    (1e-40, "fp64"), (1e39, "fp64"), (-1e300, "fp64"),
])
def test_literal_typing(value, expected):
    k = Kernel()
    t = k.sem.to_tensor(value)
    assert t.type == tl.dtype(expected) == literal_dtype(value)
    stored = k.ops("constant")[0].attrs["value"]
    if expected == "fp32":
        assert np.float32(stored) == np.float32(value) or (np.isnan(stored) and np.isnan(value))
    else:
        assert stored == value


def test_nonrepresentable_integer_literal():
    with pytest.raises(ValueError, match="Nonrepresentable integer"):
        Kernel().sem.to_tensor(2**64)
    with pytest.raises(TypeError, match="cannot convert"):
        Kernel().sem.to_tensor("text")


# expr -> {tensor dtype: result dtype or exception}, TRITON_SEMANTICS 1.5 (verified on upstream)
SCALAR_TABLE = [
    ("__add__", 1, dict(i1="i32", i8="i8", u8="u8", i32="i32", u32="u32", i64="i64", fp16="fp16", fp32="fp32",
                        fp64="fp64", bf16="bf16")),
    ("__add__", True, dict(i1="i1", i8="i8", u8="u8", i32="i32", u32="u32", i64="i64", fp16="fp16",
                           fp32="fp32", fp64="fp64")),
    ("__add__", 1.5, dict(i1="fp32", i8="fp32", u8="fp32", i32="fp32", u32="fp32", i64="fp32", fp16="fp16",
                          fp32="fp32", fp64="fp64")),
    ("__truediv__", 2, dict(i1=TypeError, i8="fp32", u8="fp32", i32="fp32", u32="fp32", i64="fp32",
                            fp16="fp32", fp32="fp32", fp64="fp64", bf16="fp32")),
    ("__mod__", 3, dict(i1=TypeError, i8="i8", u8="u8", i32="i32", u32="u32", i64="i64", fp16="fp32",
                        fp32="fp32", fp64="fp64")),
    ("__floordiv__", 2, dict(i1=TypeError, i8="i8", u8="u8", i32="i32", u32="u32", i64="i64", fp16=TypeError,
                             fp32=TypeError, fp64=TypeError)),
    ("__add__", 2**31, dict(i1="u32", i8=ValueError, u8=ValueError, i32=ValueError, u32="u32", i64="i64",
                            fp16="fp16", fp32="fp32", fp64="fp64")),
]


@pytest.mark.parametrize("op, literal, table", SCALAR_TABLE)
def test_scalar_operand_table(op, literal, table):
    for name, expected in table.items():
        k = Kernel()
        x = k.arg(name, [4])
        if isinstance(expected, type):
            with pytest.raises(expected):
                getattr(x, op)(literal, _semantic=k.sem)
            continue
        result = getattr(x, op)(literal, _semantic=k.sem)
        assert result.type == tl.block_type(tl.dtype(expected), [4]), (name, expected)
        k.verify()


def test_scalar_on_the_left_and_constexpr_scalars():
    k = Kernel()
    x = k.arg("i8", [4])
    assert x.__radd__(1, _semantic=k.sem).dtype == tl.int8
    assert x.__rsub__(tl.constexpr(3), _semantic=k.sem).dtype == tl.int8
    # a 0-d tensor (an assigned literal) joins the promotion, a literal does not
    five = k.sem.to_tensor(5)
    assert x.__add__(five, _semantic=k.sem).dtype == tl.int32


@pytest.mark.parametrize("ty, literal, message", [
    ("u8", -1, "unsigned tensor and a negative scalar"),
    ("u32", -1, "unsigned tensor and a negative scalar"),
    ("i8", 300, "Scalar 300 is out of range for type int8"),
    ("i8", 0xFF, "Scalar 255 is out of range for type int8"),
    ("i32", 2**32, "out of range for type int32"),
])
def test_scalar_range_errors(ty, literal, message):
    k = Kernel()
    x = k.arg(ty, [4])
    with pytest.raises(ValueError, match=message):
        x.__add__(literal, _semantic=k.sem) if literal != 0xFF else x.__and__(literal, _semantic=k.sem)


def test_where_applies_scalar_rules():
    k = Kernel()
    c = k.arg("i1", [4])
    x8, x16 = k.arg("i8", [4]), k.arg("fp16", [4])
    assert tl.where(c, x16, 0.0, _semantic=k.sem).dtype == tl.float16
    assert tl.where(c, 1, 0.5, _semantic=k.sem).type == tl.block_type(tl.float32, [4])
    with pytest.raises(ValueError, match="out of range"):
        tl.where(c, x8, 1000, _semantic=k.sem)
    k.verify()


def test_maximum_and_fma_literals_join_the_promotion():
    k = Kernel()
    x8, x16 = k.arg("i8", [4]), k.arg("fp16", [4])
    assert tl.maximum(x16, 0.0, _semantic=k.sem).dtype == tl.float32
    assert tl.maximum(x8, 0, _semantic=k.sem).dtype == tl.int32
    assert tl.fma(x16, 2.0, x16, _semantic=k.sem).dtype == tl.float32
    assert tl.add(x8, 1, _semantic=k.sem).dtype == tl.int8
    k.verify()


def test_division_errors():
    k = Kernel()
    f, i, u = k.arg("fp32", [4]), k.arg("i32", [4]), k.arg("u32", [4])
    with pytest.raises(TypeError, match="unexpected type fp32"):
        f.__floordiv__(f, _semantic=k.sem)
    with pytest.raises(TypeError, match="different signedness"):
        i.__truediv__(u, _semantic=k.sem)
    with pytest.raises(TypeError, match="different signedness"):
        i.__mod__(u, _semantic=k.sem)
    assert i.__truediv__(i, _semantic=k.sem).dtype == tl.float32
    assert [op.name for op in k.fn.body.ops][-3:] == ["cast", "cast", "div"]


def test_fp8_with_int_is_a_type_error():
    k = Kernel()
    x = k.arg("fp8e5", [4])
    with pytest.raises(TypeError, match="unexpected type"):
        x.__add__(k.arg("i32", [4]), _semantic=k.sem)
    with pytest.raises(TypeError):
        x.__gt__(0, _semantic=k.sem)
    assert x.__add__(k.arg("fp8e4nv", [4]), _semantic=k.sem).dtype == tl.float16


def test_shift_kind_is_chosen_by_the_left_operand_before_promotion():
    k = Kernel()
    x8, yu32 = k.arg("i8", [4]), k.arg("u32", [4])
    r = x8.__rshift__(yu32, _semantic=k.sem)
    assert r.dtype == tl.uint32 and k.fn.body.ops[-1].name == "ashr"
    u = k.arg("u16", [4])
    u.__rshift__(1, _semantic=k.sem)
    assert k.fn.body.ops[-1].name == "lshr"
    x8.__lshift__(2, _semantic=k.sem)
    assert k.fn.body.ops[-1].name == "shl"
    with pytest.warns(UserWarning, match="exceeds the maximum bitwidth"):
        x8.__lshift__(tl.constexpr(8), _semantic=k.sem)
    with pytest.raises(IncompatibleTypeErrorImpl):
        k.arg("fp32", [4]).__and__(1, _semantic=k.sem)
    k.verify()


def test_comparisons_turn_literals_into_tensors_first():
    k = Kernel()
    x8, h, u = k.arg("i8", [4]), k.arg("fp16", [4]), k.arg("u32", [4])
    r = x8.__lt__(1000, _semantic=k.sem)
    assert r.type == tl.block_type(tl.int1, [4])
    assert k.fn.body.ops[-1].operands[0].type.scalar == tl.int32
    h.__gt__(0.5, _semantic=k.sem)
    assert k.fn.body.ops[-1].operands[0].type.scalar == tl.float32
    u.__lt__(-1, _semantic=k.sem)
    cmp = k.fn.body.ops[-1]
    assert cmp.attrs["pred"] == "lt" and cmp.operands[0].type.scalar == tl.uint32
    with pytest.raises(TypeError):
        k.arg("*fp32").__lt__(k.arg("*fp32"), _semantic=k.sem)
    k.verify()


def test_logical_ops_bitcast_to_i1():
    k = Kernel()
    b, i = k.arg("i1", [4]), k.arg("i32", [4])
    assert b.logical_and(b, _semantic=k.sem).dtype == tl.int1
    assert tl.core.logical_not(b, _semantic=k.sem).dtype == tl.int1
    with pytest.raises(ValueError, match="Cannot bitcast data-type of size 32 to data-type of size 1"):
        i.logical_or(i, _semantic=k.sem)
    k.verify()


def test_unary_minus_is_sub_from_zero_and_invert_is_xor_all_ones():
    k = Kernel()
    x, u = k.arg("fp32", [4]), k.arg("u8", [4])
    assert x.__neg__(_semantic=k.sem).dtype == tl.float32
    names = k.op_names()
    assert names[-3:] == ["constant", "splat", "sub"]
    assert k.ops("constant")[-1].attrs["value"] == 0.0
    u.__invert__(_semantic=k.sem)
    assert k.op_names()[-1] == "xor" and k.ops("constant")[-1].attrs["value"] == 255
    assert x.__pos__(_semantic=k.sem) is x
    with pytest.raises(ValueError, match="unary invert"):
        x.__invert__(_semantic=k.sem)
    with pytest.raises(ValueError, match="unary minus"):
        k.arg("*fp32").__neg__(_semantic=k.sem)
    k.verify()


def test_debug_mode_checks_integer_overflow_below_64_bits():
    k = Kernel(debug=True)
    x, y = k.arg("i32", [4]), k.arg("i64", [4])
    x.__add__(x, _semantic=k.sem)
    asserts = k.ops("assert")
    assert len(asserts) == 1 and asserts[0].attrs["msg"] == "int32 overflow detected for operation add"
    y.__mul__(y, _semantic=k.sem)
    tl.add(x, x, sanitize_overflow=False, _semantic=k.sem)
    assert len(k.ops("assert")) == 1
    k.verify()
    quiet = Kernel()
    a = quiet.arg("i32", [4])
    a.__add__(a, _semantic=quiet.sem)
    assert not quiet.ops("assert")


def test_constants_are_materialised_in_the_result_dtype():
    k = Kernel()
    h, b, i8 = k.arg("fp16", [4]), k.arg("bf16", [4]), k.arg("i8", [4])
    h.__add__(1e10, _semantic=k.sem)
    assert k.ops("constant")[-1].attrs["value"] == float("inf")
    b.__add__(1e10, _semantic=k.sem)
    assert k.ops("constant")[-1].attrs["value"] == 9999220736.0
    h.__add__(0.1, _semantic=k.sem)
    assert k.ops("constant")[-1].attrs["value"] == float(np.float16(0.1))
    i8.__add__(-5, _semantic=k.sem)
    assert k.ops("constant")[-1].attrs["value"] == -5
    k.verify()


def test_random_binary_expressions_verify():
    rng = random.Random(1234)
    for _ in range(60):
        k = Kernel()
        a, b = rng.sample(SCALAR_TYPES, 2)
        x, y = k.arg(a, [2, 4]), k.arg(b, [4])
        op = rng.choice(["__add__", "__sub__", "__mul__", "__lt__", "__ne__"])
        try:
            getattr(x, op)(y, _semantic=k.sem)
        except TypeError:
            continue
        k.verify()
