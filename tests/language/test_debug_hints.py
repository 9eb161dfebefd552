"""Hints, `assume` and the debugging builtins."""

from __future__ import annotations

import pytest

import tritone.language as tl

from ._helpers import Kernel


def test_hints_are_identity_ops_with_one_value_per_dim():
    k = Kernel()
    x = k.arg("i32", [16, 8])
    y = tl.multiple_of(x, (16, 8), _semantic=k.sem)
    assert y.type == x.type and k.ops("hint")[0].attrs == {"kind": "multiple_of", "values": (16, 8)}
    tl.max_contiguous(x, [8, 1], _semantic=k.sem)
    tl.max_constancy(x, tl.constexpr((1, 8)), _semantic=k.sem)
    assert [op.attrs["kind"] for op in k.ops("hint")] == ["multiple_of", "max_contiguous", "max_constancy"]
    assert tl.multiple_of(k.arg("i32"), 16, _semantic=k.sem).type == tl.int32
    with pytest.raises(ValueError, match="does not match the length of values"):
        tl.max_contiguous(x, 8, _semantic=k.sem)
    tl.assume(k.arg("i32").__gt__(0, _semantic=k.sem), _semantic=k.sem)
    assert k.op_names()[-1] == "assume"
    tl.debug_barrier(_semantic=k.sem)
    assert k.op_names()[-1] == "barrier"
    k.verify()


def test_device_print_normalises_the_prefix():
    k = Kernel()
    x = k.arg("i32", [4])
    tl.device_print("x", x, _semantic=k.sem)
    tl.device_print("value: ", x, hex=True, _semantic=k.sem)
    tl.device_print("done", _semantic=k.sem)
    assert [op.attrs for op in k.ops("print")] == [
        {"prefix": " x: ", "hex": False}, {"prefix": " value: ", "hex": True}, {"prefix": " done", "hex": False}]
    with pytest.raises(AssertionError, match="not an ascii string"):
        tl.device_print("é", x, _semantic=k.sem)
    k.verify()


def test_device_assert_only_in_debug_mode():
    quiet = Kernel()
    tl.device_assert(quiet.arg("i1", [4]), "boom", _semantic=quiet.sem)
    assert not quiet.ops("assert")
    k = Kernel(debug=True)
    cond, mask = k.arg("i1", [4]), k.arg("i1", [4])
    tl.device_assert(cond, "boom", mask=mask, _semantic=k.sem)
    (op,) = k.ops("assert")
    assert op.attrs == {"msg": "boom"} and k.op_names()[-2] == "or"
    k.verify()


def test_static_assert_and_print(capsys):
    k = Kernel()
    tl.static_assert(tl.constexpr(True), _semantic=k.sem)
    with pytest.raises(AssertionError, match="Static assertion failed: too big"):
        tl.static_assert(tl.constexpr(False), "too big", _semantic=k.sem)
    tl.static_print("BLOCK", tl.constexpr(128), _semantic=k.sem)
    assert capsys.readouterr().out == "BLOCK 128\n"


def test_builtins_need_the_frontend():
    with pytest.raises(ValueError, match="Did you forget to add @triton.jit"):
        tl.arange(0, 16)


def test_loop_iterators_hold_their_arguments():
    r = tl.range(tl.constexpr(4), num_stages=2, disable_licm=True)
    assert (r.start.value, r.end.value, r.step.value, r.num_stages, r.disable_licm) == (0, 4, 1, 2, True)
    s = tl.static_range(tl.constexpr(1), tl.constexpr(9), tl.constexpr(2))
    assert (s.start.value, s.end.value, s.step.value) == (1, 9, 2)
    with pytest.raises(AssertionError, match="is not a constexpr"):
        tl.static_range(4)
    with pytest.raises(RuntimeError):
        iter(r)
    assert tl.condition(True, disable_licm=True).disable_licm
