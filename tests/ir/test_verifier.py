"""The verifier accepts well-formed IR and names the problem in broken IR."""

import pytest
from test_ir_text import build_kernel_module  # tests/ir is on sys.path (pytest prepend import mode)

from tritone.errors import TritonError
from tritone.ir import parse_module, verify
from tritone.ir.core import Builder, Function, Module, Region
from tritone.ir.ops import has_side_effects, is_pure, op_spec
from tritone.ir.types import int1, int32
from tritone.ir.verifier import IRVerificationError


def _module(body: str, args: str = "%x: i32, %p: *fp32, %v: <16xfp32>, %m: <16xi1>, %b: i1",
            extra: str = "") -> str:
    return f"tt.func @f({args}) {{\n{body}\n  return() : () -> ()\n}}\n{extra}"


def test_well_formed_ir_passes():
    verify(build_kernel_module())


# Each case: the body of a function (or a whole module), and what the message must say.
BROKEN = [
    ("%a = add(%x, %v) : (i32, <16xfp32>) -> i32", "operands have different types i32 and <16xfp32>"),
    ("%a = cmp(%x, %x) {pred = \"lt\"} : (i32, i32) -> i32", "the result has type i32, expected i1"),
    ("%a = cmp(%x, %x) {pred = \"less\"} : (i32, i32) -> i1", "attribute `pred` has a bad value 'less'"),
    ("%a = program_id() : () -> i32", "missing attribute `axis`"),
    ("%a = add(%x, %x, %x) : (i32, i32, i32) -> i32", "has 3 operands, expected 2"),
    ("%a, %c = add(%x, %x) : (i32, i32) -> (i32, i32)", "has 2 results, expected 1"),
    ("%a = frobnicate(%x) : (i32) -> i32", "unknown op `frobnicate`"),
    ("%a = select(%x, %v, %v) : (i32, <16xfp32>, <16xfp32>) -> <16xfp32>", "the condition has type i32, expected "
     "<16xi1>"),
    ("%a = broadcast(%v) : (<16xfp32>) -> <4x8xfp32>", "broadcast needs blocks of one element type and rank"),
    ("%r = expand_dims(%v) {axis = 0} : (<16xfp32>) -> <1x16xfp32>\n"
     "  %a = broadcast(%r) : (<1x16xfp32>) -> <4x8xfp32>", "cannot broadcast shape [1, 16] to [4, 8]"),
    ("%a = reshape(%v) : (<16xfp32>) -> <4x8xfp32>", "reshape keeps the element type and the number of elements"),
    ("%a = permute(%v) {order = [1, 0]} : (<16xfp32>) -> <16xfp32>", "order [1, 0] is not a permutation"),
    ("%a = load(%p, %m) : (*fp32, <16xi1>) -> fp32", "the mask has type <16xi1>, expected i1"),
    ("%a = load(%p) : (*fp32) -> i32", "the result has type i32, expected fp32"),
    ("store(%p, %x) : (*fp32, i32) -> ()", "the value has type i32, expected fp32"),
    ("%a = constant() {value = 300} : () -> i32\n  %c = cast(%a) : (i32) -> <2xi8>", "casts keep the shape"),
    ("%a = constant() {value = 300} : () -> i8", "value 300 is out of the range [-128, 127] of i8"),
    ("%a = constant() {value = 0.1} : () -> fp32", "value 0.1 is not representable in fp32"),
    ("%a = if(%b) ({\n    yield(%x) : (i32) -> ()\n  }, {\n    yield(%b) : (i1) -> ()\n  }) : (i1) -> i32",
     "the `else` region's yielded types (i1) do not match (i32)"),
    ("if(%x) ({\n    yield() : () -> ()\n  }, {\n    yield() : () -> ()\n  }) : (i32) -> ()",
     "the condition has type i32, expected i1"),
    ("%a = for(%x, %x, %x, %x) ({\n  ^(%i: i32, %c: i32):\n    barrier() : () -> ()\n  }) : (i32, i32, i32, i32)"
     " -> i32", "a region must end with `yield`"),
    ("%a = for(%x, %x, %x, %x) ({\n  ^(%i: i32, %c: i32):\n    yield(%b) : (i1) -> ()\n  }) : (i32, i32, i32, i32)"
     " -> i32", "the body's yielded types (i1) do not match (i32)"),
    ("for(%x, %x, %x) ({\n  ^(%i: i32):\n    yield() : () -> ()\n    barrier() : () -> ()\n"
     "  }) : (i32, i32, i32) -> ()", "`yield` must be the last op of its region"),
    ("for(%x, %x, %x) ({\n  ^(%i: i32):\n    return() : () -> ()\n  }) : (i32, i32, i32) -> ()",
     "`return` cannot end this region, which must end with `yield`"),
    ("for(%x, %x, %x) ({\n  ^(%i: i32):\n    yield() : () -> ()\n  }) : (i32, i32, i32) -> ()\n"
     "  %c = add(%i, %i) : (i32, i32) -> i32", "operand 0 is not defined before this op"),
    ("for(%x, %x, %x) ({\n  ^(%i: i32):\n    %d = add(%i, %i) : (i32, i32) -> i32\n    yield() : () -> ()\n"
     "  }) : (i32, i32, i32) -> ()\n  %c = add(%d, %d) : (i32, i32) -> i32", "operand 0 is not defined before"),
    ("%a = while(%x) ({\n  ^(%c: i32):\n    condition(%c, %c) : (i32, i32) -> ()\n  }, {\n  ^(%d: i32):\n"
     "    yield(%d) : (i32) -> ()\n  }) : (i32) -> i32", "the condition has type i32, expected i1"),
    ("%a = call(%x) {callee = \"g\"} : (i32) -> i32",
     "the argument types (i32) do not match (i32, i32)", "tt.func @g(%a: i32, %b: i32) -> (i32) {\n"
     "  return(%a) : (i32) -> ()\n}"),
    ("%a = call(%x) {callee = \"nowhere\"} : (i32) -> i32", "calls @nowhere, which the module does not define"),
    ("%a = dot(%v, %v, %v) {input_precision = \"ieee\"} : (<16xfp32>, <16xfp32>, <16xfp32>) -> <16xfp32>",
     "dot needs 2-D or 3-D blocks"),
    ("%a = reduce(%v) ({\n  ^(%l: fp32, %r: fp32):\n    yield(%l) : (fp32) -> ()\n  }) {axis = 1} : (<16xfp32>) "
     "-> fp32", "axis 1 out of range for shape [16]"),
]


@pytest.mark.parametrize("case", BROKEN, ids=[case[1][:40] for case in BROKEN])
def test_broken_ir_is_rejected(case):
    body, message, *extra = case
    module = parse_module(_module("  " + body, extra=extra[0] if extra else ""))
    with pytest.raises(IRVerificationError) as info:
        verify(module)
    text = str(info.value)
    assert text.startswith("IR verification failed in function @f: ")
    assert message in text
    # The op is shown as it prints (without its regions), so the reader can find it in a dump.
    assert " : (" in text.splitlines()[1]


def test_return_types_and_function_end():
    module = parse_module("tt.func @f(%x: i32) -> (fp32) {\n  return(%x) : (i32) -> ()\n}")
    with pytest.raises(IRVerificationError, match=r"the returned types \(i32\) do not match \(fp32\)"):
        verify(module)
    module = parse_module("tt.func @f(%x: i32) {\n  barrier() : () -> ()\n}")
    with pytest.raises(IRVerificationError, match="the function body must end with `return`"):
        verify(module)


def test_structural_breakage_built_in_python():
    fn = Function("f", [int32])
    b = Builder(fn.body)
    inner = Region([int32], ["i"])
    Builder(inner).create("yield")
    b.create("for", [fn.args[0]] * 3, [], {}, [inner])
    b.create("add", [inner.args[0], inner.args[0]], [int32])  # a region arg used outside its region
    b.create("return")
    module = Module()
    module.add(fn)
    with pytest.raises(IRVerificationError, match="operand 0 is not defined before this op"):
        verify(module)

    fn2 = Function("g", [int1])
    b = Builder(fn2.body)
    op = b.create("assume", [fn2.args[0]])
    fn2.body.append(op)  # the same op twice
    b.create("return")
    module = Module()
    module.add(fn2)
    with pytest.raises(IRVerificationError, match="the op appears twice in the IR"):
        verify(module)
    assert issubclass(IRVerificationError, TritonError)


def test_op_catalogue():
    assert op_spec("load").max_operands == 3 and op_spec("for").regions[0].terminator == "yield"
    with pytest.raises(KeyError, match="frobnicate"):
        op_spec("frobnicate")
    module = parse_module(_module(
        "  %a = add(%x, %x) : (i32, i32) -> i32\n"
        "  %l = load(%p) : (*fp32) -> fp32\n"
        "  %w = load(%p) {volatile = true} : (*fp32) -> fp32\n"
        "  %c = if(%b) ({\n    yield(%x) : (i32) -> ()\n  }, {\n    store(%p, %l) : (*fp32, fp32) -> ()\n"
        "    yield(%x) : (i32) -> ()\n  }) : (i1) -> i32\n"
        "  %d = if(%b) ({\n    yield(%x) : (i32) -> ()\n  }, {\n    yield(%a) : (i32) -> ()\n  }) : (i1) -> i32"))
    ops = {op.results[0].name_hint: op for op in module.kernel.body.ops if op.results}
    assert is_pure(ops["a"]) and not has_side_effects(ops["a"])
    assert not is_pure(ops["l"]) and not has_side_effects(ops["l"])
    assert has_side_effects(ops["w"])
    assert has_side_effects(ops["c"]) and not is_pure(ops["c"])
    assert is_pure(ops["d"])
