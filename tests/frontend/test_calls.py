"""Calls in the frontend: @jit callees specialised per argument types and
constexpr values, tuples in and out, compile-time Python calls, builtins."""

from __future__ import annotations

import math

import pytest

import tritone.language as tl
from tests.frontend._helpers import assert_error_at, compile_error, compile_ir, ops_named
from tritone.errors import CompilationError, CompileTimeAssertionFailure
from tritone.ir.types import block_type, float32, int32
from tritone.runtime.jit import jit

LIMIT = tl.constexpr(7)


@jit
def scale(x, factor):
    return x * factor


@jit
def specialise_kernel(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    a = scale(x, 2)  # same types and constexprs twice: one function
    b = scale(y, 2)
    c = scale(x, 3)  # another constexpr value: another function
    d = scale(x, y)  # a tensor factor: an argument instead of a constexpr
    tl.store(X + offs, a + b + c + d)


def test_callees_are_specialised_per_types_and_constexprs():
    module = compile_ir(specialise_kernel, {"X": "*fp32", "Y": "*fp32"}, {"BLOCK": 32})
    calls = ops_named(module.kernel, "call")
    callees = [c.attrs["callee"] for c in calls]
    assert callees[0] == callees[1]
    assert len(set(callees)) == 3
    assert set(module.functions) == {"specialise_kernel", *callees}
    block = block_type(float32, [32])
    assert [len(module.functions[name].args) for name in callees] == [1, 1, 1, 2]
    for name in callees:
        fn = module.functions[name]
        assert fn.result_types == [block]
        assert fn.attrs == {"noinline": False}
        assert name.startswith("scale__")
    # the constexpr factor is baked into the callee as a constant
    constants = [op.attrs["value"] for op in ops_named(module.functions[callees[2]], "constant")]
    assert constants == [3.0]


@jit(noinline=True)
def min_max(a, b):
    return tl.minimum(a, b), tl.maximum(a, b)


@jit
def literal():
    return 5


@jit
def tuple_kernel(X, n):
    lo, hi = min_max(tl.load(X), tl.load(X + 1))
    pair = (lo, hi)
    both = min_max(*pair)
    tl.store(X, both[0] + both[1] + literal() + n)


def test_tuples_in_and_out_and_returned_literals():
    module = compile_ir(tuple_kernel, {"X": "*fp32", "n": "i32"})
    calls = ops_named(module.kernel, "call")
    assert [len(c.results) for c in calls] == [2, 2, 1]
    callee = module.functions[calls[0].attrs["callee"]]
    assert callee.attrs == {"noinline": True}
    assert callee.result_types == [float32, float32]
    # `return 5` gives an i32 tensor (TRITON_SEMANTICS 1.5)
    assert module.functions[calls[2].attrs["callee"]].result_types == [int32]


@jit
def first_positive(a, b):
    if a > 0:
        return a
    if b > 0:
        return b
    return 0


@jit
def early_return_helper_kernel(X):
    tl.store(X, first_positive(tl.load(X), tl.load(X + 1)))


def test_early_returns_in_a_helper_merge_into_if_results():
    module = compile_ir(early_return_helper_kernel, {"X": "*i32"})
    (call,) = ops_named(module.kernel, "call")
    helper = module.functions[call.attrs["callee"]]
    outer = helper.body.ops[-2]
    assert outer.name == "if" and [r.type for r in outer.results] == [int32]
    assert helper.body.terminator.operands == [outer.results[0]]
    assert len(ops_named(helper, "if")) == 2


@jit
def combine_add(a, b):
    return a + b


@jit
def reduce_kernel(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(X, tl.reduce(x, 0, combine_add))


def test_reduce_combine_function_is_called_inside_the_region():
    module = compile_ir(reduce_kernel, {"X": "*fp32"}, {"BLOCK": 8})
    (reduce,) = ops_named(module, "reduce")
    region_ops = [op.name for op in reduce.regions[0].ops]
    assert region_ops == ["call", "yield"]
    callee = module.functions[reduce.regions[0].ops[0].attrs["callee"]]
    assert callee.arg_types == [float32, float32]


@jit
def compile_time_kernel(X, N: tl.constexpr):
    BLOCK: tl.constexpr = max(N, 4) * 2
    count: tl.constexpr = len((1, 2, 3)) + int(math.floor(2.5)) + min(N, LIMIT)
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.full([BLOCK], count, tl.int32))
    tl.static_assert(BLOCK == 16, f"BLOCK is {BLOCK}")


def test_python_calls_run_at_compile_time():
    module = compile_ir(compile_time_kernel, {"X": "*i32"}, {"N": 8})
    (arange,) = ops_named(module, "arange")
    assert arange.attrs == {"start": 0, "end": 16}
    values = [op.attrs["value"] for op in ops_named(module, "constant")]
    assert 3 + 2 + 7 in values


def test_static_assert_failure_is_a_compile_time_assertion_at_the_call():
    error = compile_error(compile_time_kernel, {"X": "*i32"}, {"N": 4}, cls=CompileTimeAssertionFailure)
    assert_error_at(error, compile_time_kernel, 5, 4, "BLOCK is 8")


@jit
def tensor_max_kernel(X):
    a = tl.load(X)
    tl.store(X, max(a, 0.5) + min(a, tl.load(X + 1), 2.0))


def test_builtin_min_max_on_tensors_use_minimum_maximum():
    module = compile_ir(tensor_max_kernel, {"X": "*fp32"})
    assert len(ops_named(module, "max")) == 1
    assert len(ops_named(module, "min")) == 2


@jit
def broken_helper(x):
    y = x + 1
    return y + undefined_in_helper  # noqa: F821


@jit
def calls_broken_helper(X):
    v = tl.load(X)
    tl.store(X, broken_helper(v))


def test_error_in_a_callee_is_raised_at_the_call_with_the_callee_error_as_cause():
    error = compile_error(calls_broken_helper, {"X": "*fp32"})
    assert (error.lineno, error.col_offset) == (calls_broken_helper.starting_line_number + 2, 16)
    cause = error.__cause__
    assert isinstance(cause, CompilationError)
    assert_error_at(cause, broken_helper, 2, 15, "undefined_in_helper is not defined")
    assert "undefined_in_helper is not defined" in str(error)


@jit
def recursive(x):
    return recursive(x)


@jit
def calls_recursive(X):
    tl.store(X, recursive(tl.load(X)))


def test_recursion_is_rejected():
    error = compile_error(calls_recursive, {"X": "*fp32"})
    assert "recursive calls of @jit function recursive are not supported" in str(error)


@jit
def builtin_error_kernel(X):
    offs = tl.arange(0, 10)
    tl.store(X + offs, 1.0)


def test_builtin_errors_become_compilation_errors_with_the_cause():
    error = compile_error(builtin_error_kernel, {"X": "*fp32"})
    assert (error.lineno, error.col_offset) == (builtin_error_kernel.starting_line_number + 1, 11)
    assert isinstance(error.__cause__, ValueError)
    assert error.error_message == str(error.__cause__)


def test_ops_carry_the_users_file_line():
    module = compile_ir(specialise_kernel, {"X": "*fp32", "Y": "*fp32"}, {"BLOCK": 32})
    (arange,) = ops_named(module.kernel, "arange")
    assert arange.loc.file == specialise_kernel.file_name
    assert arange.loc.line == specialise_kernel.starting_line_number + 1
    assert arange.loc.col == 11


@pytest.mark.parametrize("allowed", [False, True])
def test_plain_global_ints_need_the_option(allowed):
    options = {"allow_non_constexpr_globals": allowed}
    if allowed:
        module = compile_ir(global_kernel, {"X": "*i32"}, **options)
        assert [op.attrs["value"] for op in ops_named(module, "constant")] == [PLAIN_GLOBAL + 7]
    else:
        error = compile_error(global_kernel, {"X": "*i32"}, **options)
        assert error.error_message.startswith("Cannot access global variable PLAIN_GLOBAL from within @jit'ed")
        assert (error.lineno, error.col_offset) == (global_kernel.starting_line_number + 1, 16)


PLAIN_GLOBAL = 12345


@jit
def global_kernel(X):
    tl.store(X, PLAIN_GLOBAL + LIMIT)


def _make_op(scale_by):
    @jit
    def op(x):
        return x * scale_by

    return op


DOUBLE = _make_op(tl.constexpr(2.0))
TRIPLE = _make_op(tl.constexpr(3.0))


@jit
def apply(x, fn):
    return fn(x)


@jit
def two_closures_kernel(X):
    x = tl.load(X)
    tl.store(X, apply(x, DOUBLE) + apply(x, TRIPLE))


def test_functions_of_one_name_passed_as_constexprs_get_their_own_specialisations():
    module = compile_ir(two_closures_kernel, {"X": "*fp32"})
    first, second = (c.attrs["callee"] for c in ops_named(module.kernel, "call"))
    assert first != second
    values = sorted(op.attrs["value"] for op in module.walk() if op.name == "constant")
    assert values == [2.0, 3.0]
