"""The facts on the ops' specs (ir/ops.py: `elementwise`, the layout rule,
`cheap`, `commutative`) drive the passes: the layout pass, axis analysis,
map_elementwise, the verifier and the reduction's code read them, so an op
declared only by its spec is handled like the ops it resembles."""

from __future__ import annotations

import dataclasses

import pytest
from cuda_ir_builder import KernelBuilder

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import layout_pass
from tritone.backends.cuda.axis_info import analyze
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir
from tritone.ir import IRVerificationError, parse_module, print_module, verify
from tritone.ir import types as T
from tritone.ir.ops import OP_SPECS, SAME_LAYOUT, AttrSpec, OpSpec
from tritone.passes import map_elementwise, run_pipeline

SHAPE = (32, 32)
I32_PTR = T.pointer_type(T.int32)


def _some_value(attr: AttrSpec):
    """A value `attr` accepts."""
    if attr.allowed is not None:
        return attr.allowed[0]
    return {int: 1, bool: False, str: "x", tuple: (), float: 1.0}[attr.kinds[0]]


def _two_loads_then(name: str) -> tuple[KernelBuilder, object]:
    """A kernel that loads two int32 blocks, one row-major and one column-major (so
    their coalesced layouts differ), applies the op `name` to them and stores
    the result; (builder, the op)."""
    kb = KernelBuilder("k", [("a", I32_PTR), ("b", I32_PTR), ("c", I32_PTR)],
                       arg_attrs={i: {"divisibility": 16} for i in range(3)})
    rows = kb.expand_dims(kb.arange(0, SHAPE[0]), 1)
    cols = kb.expand_dims(kb.arange(0, SHAPE[1]), 0)
    stride = kb.splat(kb.const(SHAPE[1], T.int32), [SHAPE[0], 1])
    row_major = kb.add(kb.broadcast(kb.mul(rows, stride), SHAPE), kb.broadcast(cols, SHAPE))
    col_major = kb.add(kb.broadcast(rows, SHAPE), kb.broadcast(kb.mul(cols, kb.splat(kb.const(SHAPE[0], T.int32),
                                                                                      [1, SHAPE[1]])), SHAPE))
    a = kb.load(kb.ptr_block(kb.args[0], row_major))
    b = kb.load(kb.ptr_block(kb.args[1], col_major))
    spec = OP_SPECS[name]
    operands = [a, b, a][:spec.min_operands or 2]
    if name == "addptr":  # a pointer block and its offsets
        operands = [kb.ptr_block(kb.args[0], a), b]
    attrs = {key: _some_value(attr) for key, attr in spec.attrs.items() if attr.required}
    result = kb.op(name, operands, operands[0].type, **attrs)
    op = result.defining_op
    if result.type.scalar.is_ptr():
        result = kb.load(result)
    kb.store(kb.ptr_block(kb.args[2], row_major), result)
    kb.ret()
    return kb, op


@pytest.mark.parametrize("name", sorted(name for name, spec in OP_SPECS.items() if spec.elementwise))
def test_every_elementwise_op_gets_its_operands_in_its_layout(name):
    kb, op = _two_loads_then(name)
    loads = [o for o in kb.fn.walk() if o.name == "load"]
    layout_pass.run(kb.module)
    layout_pass.verify_layouts(kb.fn)
    # the two loads were coalesced differently ...
    assert loads[0].operands[0].type.layout != loads[1].operands[0].type.layout
    # ... and the op takes its operands in its result's layout (for two, one converted)
    blocks = [v for v in op.operands + op.results if v.type.is_block()]
    assert {v.type.layout for v in blocks} == {op.results[0].type.layout}
    assert layout_pass.required_operand_layouts(op) == [op.results[0].type.layout] * len(op.operands)
    if len(op.operands) > 1:
        assert layout_pass.conversions(kb.fn)


@pytest.fixture
def twice_add(monkeypatch):
    """An op known only by its spec: elementwise, two operands."""
    spec = OpSpec("twice_add", 2, 2, 1, elementwise=True)
    monkeypatch.setitem(OP_SPECS, "twice_add", spec)
    return spec


def test_an_elementwise_spec_is_the_same_layout_rule(twice_add):
    assert twice_add.layout == SAME_LAYOUT
    with pytest.raises(ValueError, match="elementwise op bad with the layout rule 'reduce'"):
        OpSpec("bad", 1, 1, 1, elementwise=True, layout="reduce")


def test_a_new_elementwise_op_is_laid_out_like_add(twice_add):
    kb, op = _two_loads_then("twice_add")
    layout_pass.run(kb.module)
    layout_pass.verify_layouts(kb.fn)
    assert {v.type.layout for v in op.operands + op.results} == {op.results[0].type.layout}
    reference, add = _two_loads_then("add")
    layout_pass.run(reference.module)
    assert print_module(kb.module).replace("twice_add(", "add(") == print_module(reference.module)


def test_a_new_elementwise_op_keeps_constancy(twice_add, monkeypatch):
    def constancy(spec: OpSpec) -> tuple[int, ...]:
        monkeypatch.setitem(OP_SPECS, "twice_add", spec)
        kb = KernelBuilder("k", [("n", T.int32)])
        n = kb.splat(kb.args[0], [64])
        op = kb.op("twice_add", [n, kb.splat(kb.const(3, T.int32), [64])], n.type).defining_op
        kb.ret()
        return analyze(kb.fn).get(op.results[0]).constancy

    assert constancy(twice_add) == (64,)
    assert constancy(OpSpec("twice_add", 2, 2, 1)) == (1,), "an op not known to be elementwise keeps nothing"


MAPPED = """
module @k attributes {num_warps = 4} {
  tt.func @k(%X: *i32, %Y: *i32) {kernel = true} {
    %0 = arange() {start = 0, end = 16} : () -> <16xi32>
    %1 = splat(%X) : (*i32) -> <16x*i32>
    %2 = addptr(%1, %0) : (<16x*i32>, <16xi32>) -> <16x*i32>
    %3 = load(%2) : (<16x*i32>) -> <16xi32>
    %4 = map_elementwise(%3, %0) ({
    ^(%5: i32, %6: i32):
      %7 = twice_add(%5, %6) : (i32, i32) -> i32
      yield(%7) : (i32) -> ()
    }) {pack = 1} : (<16xi32>, <16xi32>) -> <16xi32>
    %8 = splat(%Y) : (*i32) -> <16x*i32>
    %9 = addptr(%8, %0) : (<16x*i32>, <16xi32>) -> <16x*i32>
    store(%9, %4) : (<16x*i32>, <16xi32>) -> ()
    return() : () -> ()
  }
}
"""


def test_map_elementwise_writes_a_new_elementwise_op_on_blocks(twice_add):
    module = run_pipeline(parse_module(MAPPED), passes=[map_elementwise])
    text = print_module(module, locations=False)
    assert "map_elementwise" not in text
    assert "= twice_add(%3, %0) : (<16xi32>, <16xi32>) -> <16xi32>" in text


def test_map_elementwise_refuses_an_op_not_known_to_be_elementwise(monkeypatch):
    monkeypatch.setitem(OP_SPECS, "twice_add", OpSpec("twice_add", 2, 2, 1))
    with pytest.raises(map_elementwise.MapElementwiseError, match="`twice_add` is not supported"):
        run_pipeline(parse_module(MAPPED), passes=[map_elementwise])


def test_the_verifier_holds_a_new_elementwise_op_to_one_layout(twice_add):
    kb, op = _two_loads_then("twice_add")
    layout_pass.run(kb.module)
    verify(kb.module)
    result = op.results[0]
    other = next(o.operands[0].type.layout for o in kb.fn.walk() if o.name == "load"
                 and o.operands[0].type.layout != result.type.layout)
    result.type = result.type.with_layout(other)
    with pytest.raises(IRVerificationError, match="block operands and results .* must share one layout"):
        verify(kb.module)


def _one_value_two_stores() -> KernelBuilder:
    """`rows + cols` (from aranges) stored row-major and column-major."""
    kb = KernelBuilder("k", [("a", I32_PTR), ("b", I32_PTR)], arg_attrs={0: {"divisibility": 16},
                                                                         1: {"divisibility": 16}})
    rows = kb.expand_dims(kb.arange(0, SHAPE[0]), 1)
    cols = kb.expand_dims(kb.arange(0, SHAPE[1]), 0)
    row_major = kb.add(kb.broadcast(kb.mul(rows, kb.splat(kb.const(SHAPE[1], T.int32), [SHAPE[0], 1])), SHAPE),
                       kb.broadcast(cols, SHAPE))
    col_major = kb.add(kb.broadcast(rows, SHAPE),
                       kb.broadcast(kb.mul(cols, kb.splat(kb.const(SHAPE[0], T.int32), [1, SHAPE[1]])), SHAPE))
    value = kb.add(kb.broadcast(rows, SHAPE), kb.broadcast(cols, SHAPE))
    kb.store(kb.ptr_block(kb.args[0], row_major), value)
    kb.store(kb.ptr_block(kb.args[1], col_major), value)
    kb.ret()
    return kb


def test_cheap_ops_are_computed_again_instead_of_converted(monkeypatch):
    """A value computed from aranges feeding two differently coalesced stores is
    computed in each layout (`OpSpec.cheap`), not converted between them."""
    kb = _one_value_two_stores()
    layout_pass.run(kb.module)
    layout_pass.verify_layouts(kb.fn)
    stores = [op for op in kb.fn.walk() if op.name == "store"]
    assert stores[0].operands[1].type.layout != stores[1].operands[1].type.layout
    assert layout_pass.conversions(kb.fn) == []
    # with aranges not cheap, values have to be converted
    monkeypatch.setitem(OP_SPECS, "arange", dataclasses.replace(OP_SPECS["arange"], cheap=False))
    kb = _one_value_two_stores()
    layout_pass.run(kb.module)
    layout_pass.verify_layouts(kb.fn)
    assert layout_pass.conversions(kb.fn)


@triton.jit
def row_max(x_ptr, out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr, tl.max(tl.load(x_ptr + tl.arange(0, BLOCK)), 0))


def test_a_reduce_by_a_commutative_op_skips_the_lane_order(monkeypatch):
    """Lanes of a pair combine in either order when the op's spec says it is
    commutative; otherwise the lane holding the higher indices goes right."""
    def source() -> str:
        src = ASTSource(row_max, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 256})
        return generate_cuda(make_ir(src, GPUTarget("cuda", 80, 32), {"num_warps": 4}), 80)[0]

    assert OP_SPECS["max"].commutative and "tt_shfl_xor" in source() and "tt_upper" not in source()
    monkeypatch.setitem(OP_SPECS, "max", dataclasses.replace(OP_SPECS["max"], commutative=False))
    assert "tt_upper" in source()
