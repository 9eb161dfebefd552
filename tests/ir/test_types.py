"""The IR's compact type spelling (`type_text`) and what `parse_type` reads."""

import pytest

from tritone.ir import types as T
from tritone.ir.types import block_type, parse_type, pointer_type, type_text

SCALARS = [T.int1, T.int8, T.int16, T.int32, T.int64, T.uint8, T.uint16, T.uint32, T.uint64, T.float8e4nv,
           T.float8e5, T.float8e4b15, T.float8e4b8, T.float8e5b16, T.float16, T.bfloat16, T.float32, T.float64]


@pytest.mark.parametrize("ty", SCALARS, ids=type_text)
def test_every_type_text_parses_back(ty):
    for t in (ty, pointer_type(ty), pointer_type(ty, const=True), block_type(ty, [4, 8]),
              block_type(pointer_type(ty), [2])):
        assert parse_type(type_text(t)) == t


def test_compact_spellings():
    assert [type_text(t) for t in (T.int1, T.int32, T.uint8, T.float32, T.bfloat16, T.float8e4nv)] == [
        "i1", "i32", "u8", "fp32", "bf16", "fp8e4nv"]
    assert type_text(pointer_type(T.float16)) == "*fp16"
    assert type_text(pointer_type(T.float16, const=True)) == "*kfp16"
    assert type_text(block_type(T.float32, [128, 64])) == "<128x64xfp32>"
    assert type_text(block_type(pointer_type(T.int32), [8])) == "<8x*i32>"


@pytest.mark.parametrize("text, ty", [
    ("u1", T.int1), ("B", T.int1), ("i1", T.int1), ("int1", T.int1), ("int32", T.int32), ("uint8", T.uint8),
    ("float16", T.float16), ("bfloat16", T.bfloat16), ("fp8e5", T.float8e5),
    ("*kfp16", pointer_type(T.float16, const=True)), ("*u1", pointer_type(T.int1)), ("*i64", pointer_type(T.int64)),
])
def test_triton_signature_strings_parse(text, ty):
    assert parse_type(text) == ty


def test_mangle_is_tritons():
    assert [t.mangle() for t in (T.int1, T.int32, T.uint8, T.float16)] == ["u1", "i32", "u8", "fp16"]
    assert pointer_type(T.float32).mangle() == "Pfp32"
    assert block_type(pointer_type(T.float16), [4]).mangle() == "Pfp16S4S"
