"""IR with layouts (after the GPU passes) and dict-valued attributes: the text
form round-trips them, and the verifier checks layouts exactly where docs/IR.md
says values share one or derive one from another."""

import subprocess
import sys
import textwrap

import pytest

from tritone.ir import parse_module, print_module, verify
from tritone.ir.core import Builder, Function, Module, Region
from tritone.ir.layouts import BlockedLayout, DotOperandLayout, NvidiaMmaLayout, SliceLayout, SwizzledSharedLayout
from tritone.ir.parser import IRParseError
from tritone.ir.types import block_type, float16, float32, pointer_type
from tritone.ir.verifier import IRVerificationError

B1 = BlockedLayout((1,), (32,), (4,), (0,))
B1_VEC = BlockedLayout((4,), (32,), (4,), (0,))
B2 = BlockedLayout((1, 4), (4, 8), (4, 1), (1, 0))
B2_T = BlockedLayout((4, 1), (8, 4), (1, 4), (0, 1))
ROWS = SliceLayout(1, B2)
MMA = NvidiaMmaLayout((2, 0), (2, 2), (16, 8))
DOT_A = DotOperandLayout(0, MMA, 2)
SHARED = SwizzledSharedLayout(8, 1, 8, (1, 0))


def _t(shape_elem: str, layout=None) -> str:
    """A block type's text: `<128xfp32, BlockedLayout(...)>`."""
    return f"<{shape_elem}, {layout}>" if layout is not None else f"<{shape_elem}>"


# -- text form -------------------------------------------------------------------------------

def test_block_types_with_every_layout_round_trip():
    module = Module(attrs={"num_warps": 4, "shared": 1024})
    v1 = block_type(float32, [128], B1)
    fn = module.add(Function("k", [v1, pointer_type(float16)], ["v", "p"],
                             attrs={"kernel": True, "arg_attrs": {1: {"divisibility": 16}}}))
    b = Builder(fn.body)
    vec = b.create_value("convert_layout", [fn.args[0]], v1.with_layout(B1_VEC))
    tile = b.create_value("reshape", [vec], block_type(float32, [4, 32], B2))
    rows = b.create("reduce", [tile], [block_type(float32, [4], ROWS)], {"axis": 1}, [_add_region(b)]).result
    b.create_value("expand_dims", [rows], block_type(float32, [4, 1], B2), {"axis": 1})
    b.create_value("permute", [tile], block_type(float32, [32, 4], B2_T), {"order": (1, 0)})
    a = b.create_value("constant", [], block_type(float16, [32, 16], DOT_A), {"value": 1.0})
    bop = b.create_value("constant", [], block_type(float16, [16, 32], DotOperandLayout(1, MMA, 2)), {"value": 2.0})
    acc = b.create_value("constant", [], block_type(float32, [32, 32], MMA), {"value": 0.0})
    b.create_value("dot", [a, bop, acc], acc.type, {"input_precision": "ieee"})
    b.create("barrier", [], [], {"staging": block_type(float16, [32, 16], SHARED)})
    b.create("return")
    verify(module)

    text = print_module(module)
    assert f"%v: <128xfp32, {B1}>" in text
    assert f"-> <4xfp32, SliceLayout(dim=1, parent={B2})>" in text
    assert "NvidiaMmaLayout(version=[2, 0], warps_per_cta=[2, 2], instr_shape=[16, 8])" in text
    assert f"{{staging = !<32x16xfp16, {SHARED}>}}" in text
    again = parse_module(text)
    verify(again)
    assert print_module(again) == text
    assert again.kernel.arg_types == module.kernel.arg_types
    assert [r.type for op in again.walk() for r in op.results] == [r.type for op in module.walk() for r in op.results]
    assert again.kernel.body.ops[2].results[0].type.layout == ROWS


def _add_region(b: Builder) -> Region:
    """A reduce's combine region: `a + b` on fp32."""
    region = Region([float32, float32])
    inner = Builder(region)
    inner.create("yield", [inner.create_value("add", region.args, float32)])
    return region


def test_dict_attributes_round_trip():
    attrs = {"arg_attrs": {0: {"divisibility": 16}, 3: {"divisibility": 16}},
             "mixed": {"name": 1, "not an identifier": (1, 2), "0": "a string key", -2: {}, 7: None},
             "empty": {}}
    module = Module(attrs={"nested": {1: {2: {3: True}}}})
    fn = module.add(Function("f", [], attrs=attrs))
    Builder(fn.body).create("return")
    text = print_module(module)
    assert "module @f attributes {nested = {1 = {2 = {3 = true}}}} {" in text
    assert "arg_attrs = {0 = {divisibility = 16}, 3 = {divisibility = 16}}" in text
    assert 'mixed = {name = 1, "not an identifier" = [1, 2], "0" = "a string key", -2 = {}, 7 = none}' in text
    again = parse_module(text)
    assert again.kernel.attrs == attrs
    assert set(again.kernel.attrs["mixed"]) == {"name", "not an identifier", "0", -2, 7}
    assert again.attrs == {"nested": {1: {2: {3: True}}}}
    assert print_module(again) == text


def test_attribute_keys_without_a_text_form_are_refused():
    module = Module()
    fn = module.add(Function("f", [], attrs={"bad": {(1, 2): 3}}))
    Builder(fn.body).create("return")
    with pytest.raises(TypeError, match="attribute dictionary key"):
        print_module(module)


@pytest.mark.parametrize("text, message", [
    ("tt.func @f(%v: <16xfp32, BlockedLayout(size_per_thread=[1]>) {\n  return() : () -> ()\n}",
     "line 1, column 16: bad layout in type"),
    ("tt.func @f(%v: <16xfp32, NoSuchLayout(dim=1)>) {\n  return() : () -> ()\n}", "bad layout in type"),
    ("tt.func @f() {a = {0 = 1, 0 = 2}} {\n  return() : () -> ()\n}", "attribute 0 given twice"),
    ("tt.func @f() {a = {x 1}} {\n  return() : () -> ()\n}", "expected '='"),
])
def test_parse_errors_for_layouts_and_dicts(text, message):
    with pytest.raises(IRParseError, match=message):
        parse_module(text)


def test_ir_does_not_import_the_backend():
    # Parsing and verifying layout-free IR must not pull in the CUDA backend.
    script = textwrap.dedent("""
        import sys
        from tritone.ir import parse_module, verify
        verify(parse_module('tt.func @f(%x: <4xi32>) {a = {0 = {divisibility = 16}}} {\\n'
                            '  %y = add(%x, %x) : (<4xi32>, <4xi32>) -> <4xi32>\\n'
                            '  return() : () -> ()\\n}'))
        print(sorted(m for m in sys.modules if m.startswith("tritone.backends.cuda")))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# -- verifier --------------------------------------------------------------------------------

V = _t("128xfp32", B1)
V_VEC = _t("128xfp32", B1_VEC)
IDX = _t("128xi32", B1)
M = _t("128xi1", B1)
M_VEC = _t("128xi1", B1_VEC)
P = _t("128x*fp32", B1)
TILE = _t("4x32xfp32", B2)
ROW = _t("4xfp32", ROWS)
COL = _t("4x1xfp32", B2)
ARGS = f"%v: {V}, %w: {V_VEC}, %i: {IDX}, %m: {M}, %p: {P}, %t: {TILE}, %r: {ROW}, %c: {COL}, %s: fp32, %n: i32"


def _function(body: str) -> str:
    return f"tt.func @f({ARGS}) {{\n  {body}\n  return() : () -> ()\n}}\n"


def _reduce(result_type: str) -> str:
    return (f"%a = reduce(%t) ({{\n  ^(%x: fp32, %y: fp32):\n    %z = add(%x, %y) : (fp32, fp32) -> fp32\n"
            f"    yield(%z) : (fp32) -> ()\n  }}) {{axis = 1}} : ({TILE}) -> {result_type}")


def _for(yielded: str, yielded_type: str) -> str:
    """A loop carrying %v, whose body yields `yielded` (of type `yielded_type`)."""
    return (f"%a = for(%n, %n, %n, %v) ({{\n  ^(%k: i32, %acc: {V}):\n"
            f"    yield({yielded}) : ({yielded_type}) -> ()\n"
            f"  }}) : (i32, i32, i32, {V}) -> {V}")


GOOD = [
    f"%a = add(%v, %v) : ({V}, {V}) -> {V}",
    f"%a = convert_layout(%v) : ({V}) -> {V_VEC}",
    f"%a = convert_layout(%t) : ({TILE}) -> {_t('4x32xfp32', B2_T)}",
    f"%a = load(%p, %m, %v) : ({P}, {M}, {V}) -> {V}",
    f"store(%p, %v, %m) : ({P}, {V}, {M}) -> ()",
    f"%a = cmp(%v, %v) {{pred = \"lt\"}} : ({V}, {V}) -> {M}",
    f"%a = cast(%i) : ({IDX}) -> {V}",
    f"%a = broadcast(%c) : ({COL}) -> {TILE}",
    f"%a = expand_dims(%r) {{axis = 1}} : ({ROW}) -> {COL}",
    _reduce(ROW),
    # Ops the layout contract leaves free: any layouts on either side.
    f"%a = reshape(%w) : ({V_VEC}) -> {TILE}",
    f"%a = permute(%t) {{order = [1, 0]}} : ({TILE}) -> {_t('32x4xfp32', B2)}",
    f"%a = splat(%s) : (fp32) -> {V_VEC}",
    f"%a = arange() {{start = 0, end = 128}} : () -> {_t('128xi32', B1_VEC)}",
    _for("%acc", V),
    f"%a = join(%v, %w) : ({V}, {V_VEC}) -> {_t('128x2xfp32', BlockedLayout((1, 2), (32, 1), (4, 1), (1, 0)))}",
]


@pytest.mark.parametrize("body", GOOD, ids=[b.split("(")[0].split("= ")[-1] + str(i) for i, b in enumerate(GOOD)])
def test_layouts_the_contract_allows_verify(body):
    verify(parse_module(_function(body)))


BROKEN = [
    (f"%a = add(%v, %w) : ({V}, {V_VEC}) -> {V}", "operands have different types"),
    (f"%a = add(%v, %v) : ({V}, {V}) -> {V_VEC}", "the result has type"),
    (f"%a = cmp(%v, %v) {{pred = \"lt\"}} : ({V}, {V}) -> {M_VEC}", f"the result has type {M_VEC}, expected {M}"),
    (f"%a = load(%p, %m, %w) : ({P}, {M}, {V_VEC}) -> {V}", "`other` has type"),
    (f"%a = load(%p) : ({P}) -> {V_VEC}", "the result has type"),
    (f"%a = cast(%i) : ({IDX}) -> {V_VEC}", "casts keep the shape and the layout"),
    (f"%a = broadcast(%c) : ({COL}) -> {_t('4x32xfp32', B2_T)}", "broadcast keeps the layout"),
    (f"%a = expand_dims(%v) {{axis = 1}} : ({V}) -> {_t('128x1xfp32', B2)}",
     f"expected the layout SliceLayout(dim=1, parent={B2})"),
    (_reduce(_t("4xfp32", SliceLayout(0, B2))), f"result 0 has type <4xfp32, SliceLayout(dim=0, parent={B2})>"),
    (f"%a = convert_layout(%v) : ({V}) -> {_t('64xfp32', B1)}", "(in any layout)"),
    (f"%a = convert_layout(%v) : ({V}) -> <128xfp32>", "convert_layout takes a block to a block with a layout"),
    (f"%a = convert_layout(%s) : (fp32) -> {V}", "convert_layout takes a block to a block with a layout"),
    (_for("%w", V_VEC), "the body's yielded types"),
]


@pytest.mark.parametrize("case", BROKEN, ids=[case[1][:40] for case in BROKEN])
def test_layouts_the_contract_forbids_are_rejected(case):
    body, message = case
    module = parse_module(_function(body))
    with pytest.raises(IRVerificationError) as info:
        verify(module)
    assert message in str(info.value)
