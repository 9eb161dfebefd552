"""Bad kernels: each error is a CompilationError (or subclass) at the exact file
line and column of the offending construct, with Triton's wording where Triton
has one (TRITON_SEMANTICS 10)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import tritone.language as tl
from tests.frontend._helpers import assert_error_at, compile_error
from tritone.errors import CompilationError, UnsupportedLanguageConstruct
from tritone.runtime.jit import jit

PLAIN_GLOBAL = 3


@jit
def uses_break(X, n):
    for _i in range(n):
        break


@jit
def uses_continue(X, n):
    for i in range(n):
        tl.store(X + i, 1.0)
        continue


@jit
def uses_try(X):
    try:
        tl.store(X, 1.0)
    except Exception:
        pass


@jit
def uses_lambda(X):
    f = lambda v: v + 1  # noqa: E731
    tl.store(X, f(1.0))


@jit
def uses_nested_def(X):
    def inner(v):
        return v
    tl.store(X, inner(1.0))


@jit
def uses_with(X):
    with X:
        tl.store(X, 1.0)


@jit
def uses_for_else(X, n):
    for i in range(n):
        tl.store(X + i, 1.0)
    else:
        tl.store(X, 2.0)


@jit
def uses_while_else(X, n):
    i = 0
    while i < n:
        i += 1
    else:
        tl.store(X, 2.0)


@jit
def uses_setitem(X):
    v = tl.load(X)
    v[0] = 1.0


@jit
def uses_attribute_assignment(X):
    X.foo = 1


@jit
def uses_chained_assignment(X):
    a = b = 1.0
    tl.store(X, a + b)


@jit
def uses_chained_comparison(X, n):
    pid = tl.program_id(0)
    if 0 < pid < n:
        tl.store(X, 1.0)


@jit
def uses_plain_global(X):
    tl.store(X + PLAIN_GLOBAL, 1.0)


@jit
def uses_return_in_loop(X, n):
    for i in range(n):
        if i > 2:
            return
        tl.store(X + i, 1.0)


@jit
def uses_bare_return_in_while(X, n):
    i = 0
    while i < n:
        return


@jit
def changes_carried_type(X, n):
    acc = 0
    for _i in range(n):
        acc = acc + 1.5
    tl.store(X, acc)


@jit
def changes_carried_shape(X, n):
    acc = 0.0
    for _i in range(n):
        acc = acc + tl.full([4], 1.0, tl.float32)
    tl.store(X, acc)


@jit
def reassigns_constexpr_in_loop(X, n, C: tl.constexpr):
    for _i in range(n):
        C = C + 1
    tl.store(X, C)


@jit
def mismatched_branches(X, n):
    if tl.program_id(0) < n:
        y = 1
    else:
        y = 1.0
    tl.store(X, y)


@jit
def redefines_in_branch(X, n):
    acc = 0
    if tl.program_id(0) < n:
        acc = 1.5
    tl.store(X, acc)


@jit
def uses_name_from_one_branch(X, n):
    if tl.program_id(0) < n:
        only_here = 1.0
    tl.store(X, only_here)


@jit
def iterates_a_tuple(X):
    for v in (1, 2):
        tl.store(X, v)


@jit
def block_condition(X, n):
    offs = tl.arange(0, 16)
    if offs < n:
        tl.store(X, 1.0)


@jit
def mismatched_ternary(X, n):
    v = 1 if tl.program_id(0) < n else 2.0
    tl.store(X, v)


@jit
def kernel_returns_value(X):
    return tl.load(X)


@jit
def uses_global_statement(X):
    global PLAIN_GLOBAL
    tl.store(X, 1.0)


@jit
def tensor_in_fstring(X):
    v = tl.load(X)
    tl.static_print(f"v = {v}")


@jit
def constexpr_while(X):
    while True:
        tl.store(X, 1.0)


@jit
def redefines_constexpr(X):
    C: tl.constexpr = 1
    C: tl.constexpr = 2
    tl.store(X, C)


@jit
def uses_undefined_name(X):
    tl.store(X, not_defined_anywhere)  # noqa: F821


@jit
def float_loop_bound(X):
    for _i in range(0, 2.5):
        tl.store(X, 1.0)


@dataclass(frozen=True)
class Case:
    kernel: object
    line_after_def: int
    col: int
    message: str
    cls: type = UnsupportedLanguageConstruct
    signature: dict = field(default_factory=lambda: {"X": "*fp32", "n": "i32"})
    constexprs: dict = field(default_factory=dict)



CASES = [
    Case(uses_break, 2, 8, "unsupported AST node type: Break"),
    Case(uses_continue, 3, 8, "unsupported AST node type: Continue"),
    Case(uses_try, 1, 4, "unsupported AST node type: Try", signature={"X": "*fp32"}),
    Case(uses_lambda, 1, 8, "unsupported AST node type: Lambda", signature={"X": "*fp32"}),
    Case(uses_nested_def, 1, 4, "nested function definition is not supported.", signature={"X": "*fp32"}),
    Case(uses_with, 1, 4, "unsupported AST node type: With", signature={"X": "*fp32"}),
    Case(uses_for_else, 1, 4, "`for ... else` is not supported"),
    Case(uses_while_else, 2, 4, "`while ... else` is not supported"),
    Case(uses_setitem, 2, 4, "__setitem__ is not supported in triton", signature={"X": "*fp32"}),
    Case(uses_attribute_assignment, 1, 4, "Attribute assignment is not supported in triton",
         signature={"X": "*fp32"}),
    Case(uses_chained_assignment, 1, 4, "simultaneous multiple assignment is not supported.",
         signature={"X": "*fp32"}),
    Case(uses_chained_comparison, 2, 7, "simultaneous multiple comparison is not supported"),
    Case(uses_plain_global, 1, 17,
         "Cannot access global variable PLAIN_GLOBAL from within @jit'ed function: a kernel reads only globals "
         "that are compile-time constants. Wrap the value as `PLAIN_GLOBAL = tl.constexpr(...)` where it is defined, "
         "pass it to the kernel as a `tl.constexpr` parameter, or set TRITON_ALLOW_NON_CONSTEXPR_GLOBALS=1 to bake "
         "its current value into the kernel.", CompilationError, {"X": "*fp32"}),
    Case(uses_return_in_loop, 2, 8,
         "Cannot have `return` statements inside `while` or `for` statements in triton."),
    Case(uses_bare_return_in_while, 3, 8,
         "Cannot have `return` statements inside `while` or `for` statements in triton."),
    Case(changes_carried_type, 2, 4,
         "Loop-carried variable acc has initial type int32 but is re-assigned to fp32 in loop! "
         "Please make sure that the type stays consistent.", CompilationError),
    Case(changes_carried_shape, 2, 4,
         "Loop-carried variable acc has initial type fp32 but is re-assigned to <['4'], fp32> in loop! "
         "Please make sure that the type stays consistent.", CompilationError),
    Case(reassigns_constexpr_in_loop, 1, 4, "cannot reassign constexpr C in the loop", CompilationError,
         constexprs={"C": 1}),
    Case(mismatched_branches, 1, 4, "Mismatched type for y between then block (int32) and else block (fp32)",
         CompilationError),
    Case(redefines_in_branch, 2, 4,
         "initial value for `acc` is of type int32[], but the then block redefines it as fp32[]", CompilationError),
    Case(uses_name_from_one_branch, 3, 16, "only_here is not defined", CompilationError),
    Case(iterates_a_tuple, 1, 13, "Only `range`, `tl.range` and `tl.static_range` iterators are supported in "
                                  "`for` loops", signature={"X": "*fp32"}),
    Case(block_condition, 2, 4, "Boolean value of Tensor with more than one value is ambiguous"),
    Case(mismatched_ternary, 1, 8, "Ternary expression with dynamic condition has inconsistent types int32 and fp32",
         CompilationError),
    Case(kernel_returns_value, 1, 4, "a kernel cannot return a value", CompilationError, {"X": "*fp32"}),
    Case(uses_global_statement, 1, 4, "`global` statements are not supported in kernels",
         signature={"X": "*fp32"}),
    Case(tensor_in_fstring, 2, 20, "Cannot evaluate f-string containing non-constexpr conversion values, found "
                                   "conversion of type tensor", signature={"X": "*fp32"}),
    Case(constexpr_while, 1, 10, "the condition of a `while` loop must be a tensor (a run-time value), got "
                                 "constexpr[True]", CompilationError, {"X": "*fp32"}),
    Case(redefines_constexpr, 2, 4, "C is already defined. constexpr cannot be reassigned.", CompilationError,
         {"X": "*fp32"}),
    Case(uses_undefined_name, 1, 16, "not_defined_anywhere is not defined", CompilationError, {"X": "*fp32"}),
    Case(float_loop_bound, 1, 14, "For loop bounds and step must all be ints, are (int32, fp32, int32)",
         CompilationError, {"X": "*fp32"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.kernel.__name__ for c in CASES])
def test_bad_kernel_is_reported_at_its_line_and_column(case: Case):
    error = compile_error(case.kernel, case.signature, case.constexprs, cls=case.cls)
    assert_error_at(error, case.kernel, case.line_after_def, case.col, case.message)


def test_a_pickled_error_keeps_its_file_kernel_and_line():
    import pickle

    error = compile_error(uses_undefined_name, {"X": "*fp32"}, {}, cls=CompilationError)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert (copy.filename, copy.function, copy.lineno, copy.col_offset) == (
        error.filename, error.function, error.lineno, error.col_offset)
    unsupported = compile_error(uses_break, {"X": "*fp32", "n": "i32"}, {}, cls=UnsupportedLanguageConstruct)
    assert str(pickle.loads(pickle.dumps(unsupported))) == str(unsupported)
