"""The IR text form: print -> parse -> print is the identity, for every op of docs/IR.md."""

import math

import pytest

from tritone.ir import parse_module, print_function, print_module, print_op, verify
from tritone.ir.core import Builder, Function, Location, Module, Region
from tritone.ir.layouts import BlockedLayout, SwizzledSharedLayout
from tritone.ir.ops import OP_SPECS
from tritone.ir.parser import IRParseError
from tritone.ir.types import (
    block_type,
    float16,
    float32,
    int1,
    int32,
    int64,
    pointer_type,
    tensordesc_type,
    tensormap_type,
    uint32,
)

V16F = block_type(float32, [16])
V16I = block_type(int32, [16])
V16B = block_type(int1, [16])


def _binary(b, names, x):
    return [b.create_value(name, [x, x], x.type) for name in names]


def build_kernel_module() -> Module:
    """A kernel that uses every op of docs/IR.md, with regions nested 3 deep."""
    module = Module(attrs={"num_warps": 4, "num_ctas": 1, "num_stages": 3, "debug": False})
    kernel = Function("kernel", [pointer_type(float32), pointer_type(int32), int32], ["x_ptr", "y_ptr", "n"],
                      attrs={"kernel": True}, loc=Location("/src/k.py", 10, 0))
    helper = Function("helper", [float32, int32], ["a", "b"], result_types=[float32], attrs={"noinline": False})
    module.add(kernel)
    module.add(helper)

    b = Builder(helper.body)
    b.create("return", [helper.args[0]])

    x_ptr, y_ptr, n = kernel.args
    b = Builder(kernel.body)
    b.loc = Location("/src/k.py", 12, 4)
    pid = b.create_value("program_id", [], int32, {"axis": 0})
    pid.name_hint = "pid"
    b.create_value("num_programs", [], int32, {"axis": 2})
    offs = b.create_value("arange", [], V16I, {"start": 0, "end": 16})
    offs.name_hint = "offsets"
    b.loc = Location('/src/dir with "quotes"\\k.py', 13, 8)
    n_block = b.create_value("splat", [n], V16I)
    mask = b.create_value("cmp", [offs, n_block], V16B, {"pred": "lt"})
    ptrs = b.create_value("addptr", [b.create_value("splat", [x_ptr], block_type(x_ptr.type, [16])), offs],
                          block_type(x_ptr.type, [16]))
    zero_f = b.create_value("constant", [], V16F, {"value": -0.0})
    x = b.create_value("load", [ptrs, mask, zero_f], V16F, {"cache": ".ca", "evict": "evict_last",
                                                            "volatile": False})
    x.name_hint = "x"
    b.create_value("load", [ptrs], V16F)
    floats = _binary(b, ["add", "sub", "mul", "div", "div_rn", "mod", "max", "min"], x)
    b.create_value("max", [x, floats[0]], V16F, {"propagate_nan": True})
    b.create_value("fma", [x, floats[1], floats[2]], V16F)
    for name in ["abs", "exp", "exp2", "log", "log2", "sin", "cos", "sqrt", "sqrt_rn", "rsqrt", "erf", "floor",
                 "ceil"]:
        b.create_value(name, [x], V16F)
    _binary(b, ["floordiv", "mod", "and", "or", "xor", "shl", "ashr", "lshr", "umulhi", "max", "min"], offs)
    b.create_value("select", [mask, x, floats[0]], V16F)
    b.create_value("cast", [offs], V16F)
    b.create_value("cast", [x], block_type(float16, [16]), {"rounding": "rtz"})
    b.create_value("bitcast", [x], V16I)
    b.create_value("extern", [x, x], V16F, {"name": "pow"})
    b.create_value("hint", [offs], V16I, {"kind": "multiple_of", "values": (16,)})
    b.create("assume", [b.create_value("cmp", [n, pid], int1, {"pred": "ge"})])
    row = b.create_value("expand_dims", [x], block_type(float32, [1, 16]), {"axis": 0})
    tile = b.create_value("broadcast", [row], block_type(float32, [4, 16]))
    b.create_value("reshape", [tile], block_type(float32, [64]), {"can_reorder": False})
    b.create_value("permute", [tile], block_type(float32, [16, 4]), {"order": (1, 0)})
    pair = b.create_value("join", [x, x], block_type(float32, [16, 2]))
    b.create("split", [pair], [V16F, V16F])
    b.create_value("cat", [x, x], block_type(float32, [32]))
    index = b.create_value("broadcast", [b.create_value("expand_dims", [offs], block_type(int32, [1, 16]),
                                                        {"axis": 0})], block_type(int32, [4, 16]))
    b.create_value("gather", [tile, index], block_type(float32, [4, 16]), {"axis": 1})
    b.create_value("histogram", [offs], block_type(int32, [8]), {"num_bins": 8})
    b.create_value("histogram", [offs, mask], block_type(int32, [8]), {"num_bins": 8})
    b.create("store", [ptrs, x, mask], [], {"cache": ".cg", "evict": ""})
    y_ptrs = b.create_value("addptr", [b.create_value("splat", [y_ptr], block_type(y_ptr.type, [16])), offs],
                            block_type(y_ptr.type, [16]))
    b.create_value("atomic_rmw", [y_ptrs, offs, mask], V16I, {"kind": "add", "sem": "acq_rel", "scope": "gpu"})
    b.create_value("atomic_cas", [y_ptrs, offs, offs], V16I, {"sem": "relaxed", "scope": "cta"})
    # Tensor descriptors: one of one-row blocks serves every access.
    one_row = block_type(float32, [1, 16])
    strides = [b.create_value("cast", [n], int64), b.create_value("constant", [], int64, {"value": 1})]
    desc = b.create_value("make_tensor_descriptor", [x_ptr, n, n, *strides], tensordesc_type(one_row),
                          {"padding": "nan"})
    parts = [desc, n, n, *strides]
    nan_padding = b.create_value("constant", [], int1, {"value": True})
    desc_row = b.create_value("descriptor_load", [*parts, nan_padding, pid, pid], one_row, {"cache": ".cg"})
    b.create("descriptor_store", [*parts, desc_row, pid, pid])
    b.create("descriptor_atomic", [*parts, desc_row, pid, pid], [], {"kind": "max"})
    gathered = b.create_value("descriptor_gather", [*parts, nan_padding, offs, pid], block_type(float32, [16, 16]))
    b.create("descriptor_scatter", [*parts, gathered, offs, pid])
    # TMA copies (the CUDA backend's tma pass): a tensor map argument appended to the kernel.
    tensormap = kernel.body.add_arg(tensormap_type(one_row), "x_tensormap")
    tma_row = b.create_value("tma_load", [tensormap, pid, pid], one_row)
    b.create_value("tma_load", [tensormap, pid, pid, n, n, nan_padding], one_row)
    b.create("tma_store", [tensormap, tma_row, pid, pid])
    # ... or one the kernel encodes for a made descriptor
    made = b.create_value("tensormap_create", [x_ptr, n, n, *strides], tensormap_type(one_row),
                          {"global_offset": 128, "padding": "zero", "box": (1, 16), "swizzle": 64})
    b.create_value("tensormap_at", [], tensormap_type(one_row), {"global_offset": 128})

    combine = Region([float32, float32], ["l", "r"])
    Builder(combine).create("yield", [Builder(combine).create_value("add", combine.args, float32)])
    total = b.create("reduce", [x], [float32], {"axis": 0}, [combine]).result
    scan_body = Region([float32, int32, float32, int32])
    sb = Builder(scan_body)
    sb.create("yield", [sb.create_value("mul", [scan_body.args[0], scan_body.args[2]], float32),
                        sb.create_value("max", [scan_body.args[1], scan_body.args[3]], int32)])
    b.create("scan", [x, offs], [V16F, V16I], {"axis": 0, "reverse": True}, [scan_body])
    a16 = b.create_value("constant", [], block_type(float16, [16, 16]), {"value": 1.5})
    acc = b.create_value("constant", [], block_type(float32, [16, 16]), {"value": 0.0})
    b.create_value("dot", [a16, a16, acc], block_type(float32, [16, 16]),
                   {"input_precision": "tf32", "max_num_imprecise_acc": None})

    # for (level 1) > if (level 2) > while (level 3) > ops
    lb = b.create_value("constant", [], int32, {"value": 0})
    step = b.create_value("constant", [], int32, {"value": 1})
    body = Region([int32, float32], ["i", "acc"])
    loop = b.create("for", [lb, n, step, total], [float32], {"num_stages": 2, "disable_licm": True}, [body])
    fb = Builder(body)
    fb.loc = Location("/src/k.py", 20, 8)
    cond = fb.create_value("cmp", [body.args[0], pid], int1, {"pred": "eq"})
    then_region, else_region = Region(), Region()
    branch = fb.create("if", [cond], [float32], {}, [then_region, else_region])
    tb = Builder(then_region)
    before = Region([float32], ["carried"])
    after = Region([float32], ["carried"])  # a duplicate hint: both print as numbers
    wb = Builder(before)
    keep_going = wb.create_value("cmp", [before.args[0], body.args[1]], int1, {"pred": "lt"})
    wb.create("condition", [keep_going, before.args[0]])
    ab = Builder(after)
    ab.create("yield", [ab.create_value("add", [after.args[0], after.args[0]], float32)])
    spin = tb.create("while", [body.args[1]], [float32], {}, [before, after])
    tb.create("yield", [spin.result])
    eb = Builder(else_region)
    called = eb.create("call", [body.args[1], body.args[0]], [float32], {"callee": "helper"})
    eb.create("yield", [called.result])
    fb.create("yield", [branch.result])

    # The GPU passes' op: the same block in a layout.
    b.create_value("convert_layout", [x], V16F.with_layout(BlockedLayout((1,), (32,), (4,), (0,))))
    # Shared-memory tiles and asynchronous copies of the dot operand and pipelining passes.
    shared = SwizzledSharedLayout(1, 1, 1, (0,))
    b.create_value("local_alloc", [x], V16F.with_layout(shared))
    buffer = b.create_value("local_buffer", [], block_type(float32, [2, 16], SwizzledSharedLayout(1, 1, 1, (1, 0))))
    b.create("async_copy", [buffer, pid, ptrs])
    b.create("async_copy", [buffer, pid, ptrs, mask])
    b.create("async_commit")
    b.create("async_wait", [buffer], [], {"pending": 0})
    b.create("dot_wait", [], [], {"pending": 0})
    # ... and the copy engine's, over mbarriers
    barriers = b.create_value("local_buffer", [], block_type(int64, [2], SwizzledSharedLayout(1, 1, 1, (0,))))
    b.create("mbarrier_init", [barriers])
    b.create("mbarrier_init", [barriers], [], {"count": 4})
    # a warp-specialized loop's producer warp, and the consumers' side of it
    producer = Region()
    Builder(producer).create("yield")
    b.create("warp_roles", [], [], {"num_warps": 4}, [producer])
    b.create("mbarrier_release", [barriers, pid])
    b.create("warp_join", [], [], {"num_warps": 4})
    b.create("mbarrier_arrive", [barriers, pid, nan_padding], [], {"bytes": 64})
    b.create("tma_copy", [buffer, pid, barriers, made, pid, pid, nan_padding], [], {"box": (1, 16)})
    b.create("mbarrier_wait", [barriers, pid, pid])
    b.create("mbarrier_inval", [barriers])
    b.create_value("local_index", [buffer, pid], V16F.with_layout(shared))
    b.create("print", [loop.result, x], [], {"prefix": " x: \"q\"\n", "hex": False})
    b.create("assert", [mask], [], {"msg": "x out of range"})
    b.create("barrier")
    # tl.extra.cuda's hardware registers and launch controls.
    b.create_value("special", [], int64, {"name": "globaltimer"})
    b.create_value("special", [], int32, {"name": "smid"})
    b.create("special", [], [], {"name": "gdc_wait"})
    # tl.map_elementwise before its pass: a scalar body over pairs of elements.
    mapped = Region([float32, float32])
    mb = Builder(mapped)
    mb.create("yield", [mapped.args[1], mapped.args[0]])
    b.create("map_elementwise", [x], [V16F], {"pack": 2}, [mapped])
    # tl.inline_asm_elementwise: asm text with newlines, quotes and `$` operands, two results.
    b.create("inline_asm", [x, offs], [V16I, V16F], {"asm": "mov.b32 $0, $3;\n\tmov.b32 $1, $2; // \"$$\"",
                                                    "constraints": "=r,=r,r,r", "pure": False, "pack": 1})
    b.create("return")
    return module


def test_every_op_round_trips():
    module = build_kernel_module()
    verify(module)
    names = {op.name for op in module.walk()}
    assert names == set(OP_SPECS), set(OP_SPECS) ^ names
    text = print_module(module)
    again = parse_module(text)
    verify(again)
    assert print_module(again) == text
    assert print_module(again, locations=False) == print_module(module, locations=False)
    assert again.entry == "kernel" and list(again.functions) == ["kernel", "helper"]
    assert again.attrs == module.attrs
    kernel_ops = list(again.kernel.walk())
    assert kernel_ops[0].loc == Location("/src/k.py", 12, 4)
    assert any(op.loc.file == '/src/dir with "quotes"\\k.py' for op in kernel_ops)


def test_text_shape():
    text = print_module(build_kernel_module())
    lines = text.splitlines()
    assert lines[0] == "module @kernel attributes {num_warps = 4, num_ctas = 1, num_stages = 3, debug = false} {"
    assert lines[1] == ('  tt.func @kernel(%x_ptr: *fp32, %y_ptr: *i32, %n: i32, %x_tensormap: tensormap<fp32[1, 16]>) '
                        '{kernel = true} loc("/src/k.py":10:0) {')
    assert lines[2] == '    %pid = program_id() {axis = 0} : () -> i32 loc("/src/k.py":12:4)'
    assert '    %0 = num_programs() {axis = 2} : () -> i32 loc("/src/k.py":12:4)' in lines
    assert "  tt.func @helper(%a: fp32, %b: i32) -> (fp32) {noinline = false} {" in lines
    # The two values hinted `carried` are not unique, so they are numbered.
    assert not any("%carried" in line for line in lines)
    for_line = next(line for line in lines if " = for(" in line)
    assert for_line.endswith(" ({")
    assert "^(%i: i32, %acc: fp32):" in text
    no_locs = print_module(build_kernel_module(), locations=False)
    assert " loc(" not in no_locs


def test_attribute_values_round_trip():
    weird = {"ints": (0, -5, 2**63), "floats": (0.1, -0.0, 1e300, 5e-324, math.inf, -math.inf, math.nan),
             "flags": (True, False, None), "text": "tab\t \"quoted\" \\ é \x01", "types": (float32,
             block_type(pointer_type(uint32, const=True), [2, 8])), "nested": ((1, (2.5,)), ()), "n": -7}
    module = Module()
    fn = module.add(Function("f", []))
    b = Builder(fn.body)
    b.create("barrier", [], [], weird)
    b.create("return")
    text = print_module(module)
    assert "[0.1, -0.0, 1e+300, 5e-324, inf, -inf, nan]" in text
    assert "[!fp32, !<2x8x*ku32>]" in text
    parsed = parse_module(text).kernel.body.ops[0].attrs
    assert parsed["ints"] == weird["ints"] and parsed["text"] == weird["text"]
    assert parsed["types"] == weird["types"] and parsed["nested"] == weird["nested"]
    assert parsed["flags"] == (True, False, None) and parsed["n"] == -7
    floats = parsed["floats"]
    assert floats[:6] == weird["floats"][:6] and math.isnan(floats[6])
    assert math.copysign(1.0, floats[1]) == -1.0
    assert type(parsed["ints"][0]) is int and type(floats[0]) is float
    assert print_module(parse_module(text)) == text


def test_value_names_are_sanitised_and_stable():
    fn = Function("f", [int32, int32], ["a b", "0lead"])
    b = Builder(fn.body)
    s = b.create_value("add", fn.args, int32)
    s.name_hint = "undefined"
    t = b.create_value("add", [s, s], int32)
    t.name_hint = "a b"  # same sanitised name as the first argument: both are numbered
    b.create("return")
    text = print_function(fn)
    assert text.splitlines()[0] == "tt.func @f(%0: i32, %_0lead: i32) {"
    assert "%_undefined = add(%0, %_0lead)" in text
    assert "%1 = add(%_undefined, %_undefined)" in text
    module = Module()
    module.add(fn)
    assert print_module(parse_module(print_module(module))) == print_module(module)
    assert print_op(t.defining_op) == "%1 = add(%_undefined, %_undefined) : (i32, i32) -> i32"


def test_bare_functions_and_comments_parse():
    text = """
    // -----// IR Dump After fold //----- //
    tt.func @"my kernel"(%x: i32) {  // a comment
      %y = add(%x, %x) : (i32, i32) -> i32
      return() : () -> ()
    }
    """
    module = parse_module(text)
    assert module.entry == "my kernel"
    assert print_module(module).splitlines()[1] == '  tt.func @"my kernel"(%x: i32) {'


@pytest.mark.parametrize("text, message", [
    ("tt.func @f() {\n  %a = add(%b, %b) : (i32, i32) -> i32\n}", "line 2, column 12: use of undefined value %b"),
    ("tt.func @f(%x: i32) {\n  %a = add(%x, %x) : (i32, fp32) -> i32\n}", "operand 1 has type i32, but the op"),
    ("tt.func @f(%x: i32) {\n  %a = add(%x, %x) : (i32, i32) -> (i32, i32)\n}", "names 1 results but lists 2"),
    ("tt.func @f(%x: i32) {\n  %x = add(%x, %x) : (i32, i32) -> i32\n}", "value %x defined twice"),
    ("tt.func @f(%x: <4xq32>) {\n}", "line 1, column 16: bad type '<4xq32>'"),
    ("tt.func @f() {\n  barrier() {a = @} : () -> ()\n}", "line 2, column 18: expected an attribute value"),
    ("tt.func @f() {\n  barrier() : () -> ()\n", "line 3, column 1: unexpected end of text: a `}` is missing"),
    ('tt.func @f() {\n  barrier() {s = "abc} : () -> ()\n}', "unterminated string"),
])
def test_parse_errors_name_the_line(text, message):
    with pytest.raises(IRParseError, match="IR parse error") as info:
        parse_module(text)
    assert message in str(info.value)
