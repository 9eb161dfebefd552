"""The `inline_asm` op: its register contract (ir/inline_asm.py), its verifier
rules, its text form, and what CSE and DCE may do with it (its `pure` attribute)."""

import textwrap

import pytest

from tritone.ir import parse_module, print_module, verify
from tritone.ir.inline_asm import check_constraints, elements_per_register, parse_constraints, registers_for
from tritone.ir.ops import effect_of, is_pure
from tritone.ir.types import block_type, float16, float32, float64, int8, int16, int32, int64, pointer_type, uint8
from tritone.ir.verifier import IRVerificationError
from tritone.passes import cse, dce, run_pipeline


def test_constraints_split_into_outputs_inputs_and_clobbers():
    parsed = parse_constraints("=r, =&l,r, l ,0,~{memory}")
    assert parsed.outputs == ("r", "l")
    assert parsed.early_clobber == (False, True)
    assert parsed.inputs == ("r", "l", "0")
    assert parsed.clobbers == ("memory",)


@pytest.mark.parametrize("text, words", [
    ("=r,,r", "empty constraint"),
    ("r,=r", "comes after an input"),
    ("=r,~{memory},r", "comes after a clobber"),
    ("=r,~memory", "~{name}"),
])
def test_malformed_constraints_are_named(text, words):
    with pytest.raises(ValueError, match=words):
        parse_constraints(text)


@pytest.mark.parametrize("ty, pack, per_register, registers", [
    (int8, 4, 4, 1), (uint8, 8, 4, 2), (int8, 2, 2, 1), (int8, 1, 1, 1), (float16, 4, 2, 2), (int16, 1, 1, 1),
    (int32, 4, 1, 4), (float32, 2, 1, 2), (int64, 2, 1, 2), (float64, 1, 1, 1), (pointer_type(int8), 2, 1, 2),
    (int8, 3, 3, 1),
])
def test_narrow_elements_share_32_bit_registers(ty, pack, per_register, registers):
    assert elements_per_register(ty, pack) == per_register
    assert registers_for(block_type(ty, [64]), pack) == registers


def test_a_pack_that_splits_a_register_is_refused():
    with pytest.raises(ValueError, match="pack=6 elements of i8 do not fill whole registers of 4"):
        registers_for(int8, 6)


def test_constraint_count_must_match_the_registers():
    # upstream's packed multiple-outputs form: 4 x i32 and 4 x fp32 out, 4 x u8 (one register) and 4 x fp32 in
    check_constraints("=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r", [uint8, float32], [int32, float32], 4)
    with pytest.raises(ValueError, match=r"name 1 output and 1 input registers, but pack=4 .* take 1 and .* take 4"):
        check_constraints("=r,r", [float32], [int8], 4)
    with pytest.raises(ValueError, match="ties to output \\$1, but there are 1 outputs"):
        check_constraints("=r,1", [int32], [int32], 1)


_MODULE = """
module @k {
  tt.func @k(%p: *i32, %x: i32) {kernel = true} {
    %a = inline_asm(%x) {asm = "add.s32 $0, $1, 1;", constraints = "=r,r", pure = true, pack = 1} : (i32) -> i32
    %b = inline_asm(%x) {asm = "add.s32 $0, $1, 1;", constraints = "=r,r", pure = true, pack = 1} : (i32) -> i32
    %unused = inline_asm(%x) {asm = "mov.b32 $0, $1;", constraints = "=r,r", pure = true, pack = 1} : (i32) -> i32
    %side = inline_asm(%x) {asm = "st.global.b32 [a], $1;", constraints = "=r,r", pure = false, pack = 1} : (i32) -> i32
    %c = add(%a, %b) : (i32, i32) -> i32
    store(%p, %c) : (*i32, i32) -> ()
    return() : () -> ()
  }
}
"""


def test_text_round_trips():
    module = parse_module(textwrap.dedent(_MODULE))
    verify(module)
    text = print_module(module)
    assert print_module(parse_module(text)) == text


def test_pure_asm_merges_and_goes_when_unused_other_asm_stays():
    module = parse_module(textwrap.dedent(_MODULE))
    ops = {op.results[0].name_hint: op for op in module.kernel.walk() if op.name == "inline_asm"}
    assert is_pure(ops["a"]) and effect_of(ops["side"]) == "write"
    run_pipeline(module, passes=[cse, dce], verify=True)
    left = [op for op in module.kernel.walk() if op.name == "inline_asm"]
    assert [op.attrs["asm"] for op in left] == ["add.s32 $0, $1, 1;", "st.global.b32 [a], $1;"]
    add = next(op for op in module.kernel.walk() if op.name == "add")
    assert add.operands[0] is add.operands[1] is left[0].results[0]


@pytest.mark.parametrize("line, words", [
    ('%r = inline_asm(%v, %s) {asm = "", constraints = "=r,r,r", pure = true, pack = 1} '
     ': (<16xi32>, <8xi32>) -> <16xi32>',
     "different shapes"),
    ('%r = inline_asm(%v) {asm = "", constraints = "=r,r", pure = true, pack = 0} : (<16xi32>) -> <16xi32>',
     "pack must be at least 1"),
    ('%r = inline_asm(%v) {asm = "", constraints = "=r,r,r", pure = true, pack = 1} : (<16xi32>) -> <16xi32>',
     "name 1 output and 2 input registers"),
    ('inline_asm(%v) {asm = "", constraints = "r", pure = true, pack = 1} : (<16xi32>) -> ()',
     "at least one result"),
    ('%r = inline_asm(%v) {asm = "", constraints = "=r,r", pure = 1, pack = 1} : (<16xi32>) -> <16xi32>',
     "attribute `pure` has a bad value"),
])
def test_verifier_names_what_is_wrong(line, words):
    text = f"""
    module @k {{
      tt.func @k(%v: <16xi32>, %s: <8xi32>) {{kernel = true}} {{
        {line}
        return() : () -> ()
      }}
    }}
    """
    with pytest.raises(IRVerificationError, match=words):
        verify(parse_module(textwrap.dedent(text)))
