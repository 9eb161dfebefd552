"""Control flow in the frontend: the IR shape of if/for/while/ternary, constexpr
branches, static_range unrolling, loop-carried values and scoping."""

from __future__ import annotations

import tritone.language as tl
from tests.frontend._helpers import compile_ir, ops_named, top_level_ops
from tritone.ir import print_module
from tritone.ir.types import block_type, float32, int32, int64, type_text
from tritone.runtime.jit import jit

PTR_N = {"X": "*fp32", "n": "i32"}


@jit
def loop_two_carried(X, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.full([BLOCK], 0.0, tl.float32)
    count = 0
    unused = 5
    for i in range(0, n):
        acc += tl.load(X + i * BLOCK + offs)
        count += 1
        temp = count * 2  # noqa: F841 - defined in the loop only: not carried
    tl.store(X + offs, acc + count + unused)


def test_for_carries_exactly_the_reassigned_names():
    module = compile_ir(loop_two_carried, PTR_N, {"BLOCK": 16})
    (loop,) = ops_named(module, "for")
    assert [r.type for r in loop.results] == [block_type(float32, [16]), int32]
    body = loop.regions[0]
    assert [a.type for a in body.args] == [int32, block_type(float32, [16]), int32]
    assert body.terminator.name == "yield" and len(body.terminator.operands) == 2
    # the carried values leave the loop as its results
    text = print_module(module, locations=False)
    assert "^(%i: i32, %acc: <16xfp32>, %count: i32)" in text


@jit
def loop_nothing_carried(X, n):
    for i in range(n):
        tl.store(X + i, 1.0)


def test_for_without_carried_values():
    module = compile_ir(loop_nothing_carried, PTR_N)
    (loop,) = ops_named(module, "for")
    assert loop.results == []
    assert len(loop.operands) == 3
    assert [op.name for op in loop.regions[0].ops][-1] == "yield"
    assert loop.regions[0].terminator.operands == []


@jit
def loop_negative_step(X, START: tl.constexpr):
    for i in range(START, 0, -3):
        tl.store(X + i, 1.0)


def test_negative_constexpr_step_swaps_bounds_and_mirrors_the_variable():
    module = compile_ir(loop_negative_step, {"X": "*fp32"}, {"START": 10})
    (loop,) = ops_named(module, "for")
    lb, ub, step = (operand.defining_op.attrs["value"] for operand in loop.operands[:3])
    assert (lb, ub, step) == (0, 10, 3)
    first_ops = [op.name for op in loop.regions[0].ops[:2]]
    assert first_ops == ["sub", "add"]  # i = ub - iv + lb


@jit
def loop_i64_bound(X, n):
    for i in range(0, n, 2):
        tl.store(X + i, 1.0)


def test_induction_variable_type_is_the_promotion_of_the_bounds():
    module = compile_ir(loop_i64_bound, {"X": "*fp32", "n": "i64"})
    (loop,) = ops_named(module, "for")
    assert [v.type for v in loop.operands[:3]] == [int64] * 3
    assert loop.regions[0].args[0].type == int64


@jit
def loop_tl_range(X, n):
    for i in tl.range(0, n, 1, num_stages=2, loop_unroll_factor=4, flatten=True):
        tl.store(X + i, 1.0)


def test_tl_range_options_become_for_attributes():
    module = compile_ir(loop_tl_range, PTR_N)
    (loop,) = ops_named(module, "for")
    assert loop.attrs == {"num_stages": 2, "loop_unroll_factor": 4, "flatten": True}


@jit
def loop_static(X, N: tl.constexpr):
    acc = 0.0
    for i in tl.static_range(N):
        if i % 2 == 0:  # i is a constexpr: the branch is decided at compile time
            acc += i
    tl.store(X, acc)


def test_static_range_unrolls_with_a_constexpr_variable():
    module = compile_ir(loop_static, {"X": "*fp32"}, {"N": 5})
    assert ops_named(module, "for") == [] and ops_named(module, "if") == []
    assert len(ops_named(module, "add")) == 3  # i = 0, 2, 4


@jit
def loop_while(X, n):
    i = 0
    total = 0.0
    while i < n:
        total += 0.5
        i += 1
    tl.store(X, total)


def test_while_has_a_condition_region_and_a_body_region():
    module = compile_ir(loop_while, PTR_N)
    (loop,) = ops_named(module, "while")
    before, after = loop.regions
    assert [a.type for a in before.args] == [int32, float32]  # i, total: in order of definition
    assert before.terminator.name == "condition"
    assert len(before.terminator.operands) == 3  # the i1 condition, then the carried values
    assert after.terminator.name == "yield" and len(after.terminator.operands) == 2
    assert [r.type for r in loop.results] == [int32, float32]


@jit
def nested_loops(X, n, m):
    acc = 0
    for i in range(n):
        for j in range(m):
            acc += i * j
        k = 0
        while k < 3:
            k += 1
            acc += k
    tl.store(X, acc)


def test_nested_loops_carry_through_every_level():
    module = compile_ir(nested_loops, {"X": "*i32", "n": "i32", "m": "i32"})
    outer, inner = ops_named(module, "for")
    (loop,) = ops_named(module, "while")
    assert len(outer.results) == 1 and len(inner.results) == 1
    assert len(loop.results) == 2  # acc and k


@jit
def if_runtime(X, n):
    pid = tl.program_id(0)
    y = 1.0
    if pid < n:
        y = 2.0
        only_then = 3  # noqa: F841 - not visible after the if
        both = 1
    else:
        both = 2
    tl.store(X + pid, y + both)


def test_runtime_if_returns_reassigned_and_both_defined_names():
    module = compile_ir(if_runtime, PTR_N)
    (op,) = ops_named(module, "if")
    assert [r.type for r in op.results] == [float32, int32]  # y, then `both`
    assert [r.terminator.name for r in op.regions] == ["yield", "yield"]
    assert [len(r.terminator.operands) for r in op.regions] == [2, 2]


@jit
def if_constexpr(X, FLAG: tl.constexpr):
    if FLAG:
        v = 1.0
    else:
        v = undefined_name  # noqa: F821 - never visited when FLAG is true
    tl.store(X, v)


def test_constexpr_if_does_not_visit_the_dead_branch():
    module = compile_ir(if_constexpr, {"X": "*fp32"}, {"FLAG": True})
    assert ops_named(module, "if") == []


@jit
def ternaries(X, n, C: tl.constexpr):
    pid = tl.program_id(0)
    a = 1.0 if pid < n else 2.0
    b = 3 if C > 0 else pid
    tl.store(X + pid, a + b)


def test_ternary_with_runtime_condition_is_an_if_with_one_result():
    module = compile_ir(ternaries, PTR_N, {"C": 1})
    (op,) = ops_named(module, "if")
    assert [r.type for r in op.results] == [float32]


@jit
def bool_ops(X, n):
    pid = tl.program_id(0)
    ok = (pid < n) and (pid > 0) or (pid == 7)
    if ok and True:
        tl.store(X + pid, 1.0)


def test_and_or_on_tensors_build_i1_values():
    module = compile_ir(bool_ops, PTR_N)
    (op,) = ops_named(module, "if")
    assert type_text(op.operands[0].type) == "i1"


@jit
def tuple_carried(X, n):
    pair = (0, 1.0)
    for i in range(n):
        pair = (pair[0] + i, pair[1] * 2.0)
    a, b = pair
    tl.store(X, a + b)


def test_tuples_are_carried_leaf_by_leaf():
    module = compile_ir(tuple_carried, PTR_N)
    (loop,) = ops_named(module, "for")
    assert [r.type for r in loop.results] == [int32, float32]


@jit
def early_return(X, n):
    pid = tl.program_id(0)
    if pid >= n:
        return
    tl.store(X + pid, 1.0)


def test_early_return_in_a_runtime_if_becomes_the_other_branch():
    module = compile_ir(early_return, PTR_N)
    kernel = module.kernel
    assert top_level_ops(kernel)[-2:] == ["if", "return"]
    (op,) = ops_named(kernel, "if")
    then_ops = [o.name for o in op.regions[0].ops]
    else_ops = [o.name for o in op.regions[1].ops]
    assert then_ops == ["yield"]
    assert "store" in else_ops
    assert kernel.body.terminator.operands == []


@jit
def static_var_reused(X, n):
    acc = 0
    for j in tl.static_range(2):
        acc += j
    for _k in range(n):
        for j in tl.static_range(3):  # rebinds the constexpr j inside a run-time loop
            acc += j
    if tl.program_id(0) == 0:
        for j in tl.static_range(2):
            acc += j
    tl.store(X, acc + j)


def test_static_range_variable_may_be_rebound_inside_runtime_regions():
    module = compile_ir(static_var_reused, {"X": "*i32", "n": "i32"})
    (loop,) = ops_named(module, "for")
    assert len(loop.results) == 1  # acc only
    (op,) = ops_named(module, "if")
    assert len(op.results) == 1
