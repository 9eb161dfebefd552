"""tl.inline_asm_elementwise builds one `inline_asm` op: arguments broadcast
without type promotion, one result per dtype, and clear errors for bad input."""

import pytest

from tritone.ir.types import block_type, float32, int8, int16, int32, uint8

from ._helpers import Kernel, tl


def _asm(k: Kernel, *args, dtype=tl.int32, constraints="=r,r", pack=1, is_pure=True):
    return tl.inline_asm_elementwise("mov.b32 $0, $1;", constraints, list(args), dtype, is_pure, pack,
                                     _semantic=k.sem)


def test_arguments_broadcast_and_keep_their_types():
    k = Kernel()
    row, column, scalar = k.arg("i16", [1, 8]), k.arg("u8", [4, 1]), k.arg("fp32")
    result = _asm(k, row, column, scalar, dtype=tl.int8, constraints="=r,r,r,r")
    assert result.type == block_type(int8, [4, 8])
    (op,) = k.ops("inline_asm")
    assert [v.type for v in op.operands] == [block_type(int16, [4, 8]), block_type(uint8, [4, 8]),
                                             block_type(float32, [4, 8])]
    assert op.attrs == {"asm": "mov.b32 $0, $1;", "constraints": "=r,r,r,r", "pure": True, "pack": 1}
    assert "cast" not in k.op_names()
    k.verify()


def test_a_tuple_of_dtypes_gives_a_tuple_and_no_arguments_a_scalar():
    k = Kernel()
    x = k.arg("u8", [256])
    c, d = _asm(k, x, dtype=(tl.int32, tl.float32), constraints="=r,=r,=r,=r,=r,=r,=r,=r,r", pack=4)
    assert (c.type, d.type) == (block_type(int32, [256]), block_type(float32, [256]))
    tid = tl.inline_asm_elementwise("mov.u32 $0, %tid.x;", "=r", [], tl.int32, False, 1, _semantic=k.sem)
    assert tid.type == int32
    assert [op.attrs["pure"] for op in k.ops("inline_asm")] == [True, False]
    k.verify()


@pytest.mark.parametrize("kwargs, error, words", [
    ({"pack": 0}, ValueError, "pack must be a positive int, got 0"),
    ({"is_pure": "yes"}, TypeError, "is_pure must be a bool"),
    ({"dtype": ()}, ValueError, "at least one result dtype"),
    ({"dtype": "int32"}, TypeError, "dtype must be a triton dtype"),
    ({"constraints": "=r,r,r"}, ValueError, "name 1 output and 2 input registers"),
    ({"constraints": "=r,r", "pack": 3, "dtype": tl.int8}, ValueError, "take 1 and of the arguments \\(i32\\) "
                                                                         "take 3"),
])
def test_bad_input_is_named(kwargs, error, words):
    k = Kernel()
    x = k.arg("i32", [64])
    with pytest.raises(error, match=words):
        _asm(k, x, **kwargs)
