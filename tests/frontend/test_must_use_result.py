"""`triton.must_use_result`: a call of a marked function whose result is
dropped (a whole statement) is a CompilationError at the call; using the
result in any way compiles."""

from __future__ import annotations

import tritone
import tritone.language as tl
from tests.frontend._helpers import assert_error_at, compile_error, compile_ir, ops_named
from tritone.runtime.jit import jit

WORDS = "Squares are pure; keep what they give."


@tritone.must_use_result(WORDS)
@jit
def square(x):
    return x * x


@tritone.must_use_result
@jit
def negate(x):
    return -x


@jit
def drops_square(X):
    x = tl.load(X)
    square(x)


@jit
def drops_negate(X):
    negate(tl.load(X))


@jit
def uses_results(X):
    x = tl.load(X)
    y = square(x)
    tl.store(X, negate(y) + square(y))


@jit
def drops_advance(X):
    p = tl.make_block_ptr(X, (64,), (1,), (0,), (16,), (0,))
    tl.advance(p, (16,))
    tl.store(p, tl.load(p))


@jit
def drops_advance_method(X):
    p = tl.make_block_ptr(X, (64,), (1,), (0,), (16,), (0,))
    p.advance((16,))
    tl.store(p, tl.load(p))


@jit
def keeps_advance(X):
    p = tl.make_block_ptr(X, (64,), (1,), (0,), (16,), (0,))
    p = tl.advance(p, (16,))
    tl.store(p, tl.load(p) + 1.0)


def test_marker_keeps_the_function_and_records_the_words():
    assert square._must_use_result == WORDS
    assert negate._must_use_result is True

    def helper(x):
        return x

    assert tritone.must_use_result("w")(helper) is helper and helper._must_use_result == "w"


def test_a_dropped_result_is_an_error_at_the_call_with_the_words():
    error = compile_error(drops_square, {"X": "*fp32"})
    assert_error_at(error, drops_square, 2, 4, f"The result of square is not being used. {WORDS}")
    assert str(error).splitlines()[-1] == f"The result of square is not being used. {WORDS}"
    error = compile_error(drops_negate, {"X": "*fp32"})
    assert_error_at(error, drops_negate, 1, 4, "The result of negate is not being used.")


def test_used_results_compile():
    module = compile_ir(uses_results, {"X": "*fp32"})
    assert len(ops_named(module, "store")) == 1


def test_advance_must_be_assigned():
    error = compile_error(drops_advance, {"X": "*fp32"})
    assert error.error_message.startswith("The result of tl.advance is not being used. tl.advance leaves")
    error = compile_error(drops_advance_method, {"X": "*fp32"})
    assert error.error_message.startswith("The result of p.advance is not being used.")
    compile_ir(keeps_advance, {"X": "*fp32"})
