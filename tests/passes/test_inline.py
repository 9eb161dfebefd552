"""Inlining: calls replaced by callee bodies through several levels; recursion is an error."""

import pytest

from tritone.ir import parse_module
from tritone.passes import inline, run_pipeline
from tritone.passes.inline import InliningError


def test_call_inlined_through_two_levels(golden):
    golden(inline, """
        module @k {
          tt.func @k(%p: *i32, %n: i32) {kernel = true} {
            %r = call(%n) {callee = "outer"} : (i32) -> i32
            store(%p, %r) : (*i32, i32) -> ()
            return() : () -> ()
          }
          tt.func @outer(%x: i32) -> (i32) {
            %one = constant() {value = 1} : () -> i32
            %y = add(%x, %one) : (i32, i32) -> i32
            %z = call(%y, %x) {callee = "inner"} : (i32, i32) -> i32
            return(%z) : (i32) -> ()
          }
          tt.func @inner(%a: i32, %b: i32) -> (i32) {
            %m = mul(%a, %b) : (i32, i32) -> i32
            return(%m) : (i32) -> ()
          }
          tt.func @unused() {
            return() : () -> ()
          }
        }
        """, """
        module @k {
          tt.func @k(%p: *i32, %n: i32) {kernel = true} {
            %one = constant() {value = 1} : () -> i32
            %y = add(%n, %one) : (i32, i32) -> i32
            %m = mul(%y, %n) : (i32, i32) -> i32
            store(%p, %m) : (*i32, i32) -> ()
            return() : () -> ()
          }
        }
        """)


def test_calls_in_regions_and_repeated_calls(golden):
    # The callee is copied twice, so its value names are no longer unique and print as numbers;
    # a callee returning its argument inlines to nothing.
    golden(inline, """
        module @k {
          tt.func @k(%p: *i32, %n: i32) {kernel = true} {
            %lb = constant() {value = 0} : () -> i32
            %s = for(%lb, %n, %n, %n) ({
            ^(%i: i32, %acc: i32):
              %a = call(%acc) {callee = "twice"} : (i32) -> i32
              %b = call(%a) {callee = "twice"} : (i32) -> i32
              %c = call(%b) {callee = "same"} : (i32) -> i32
              yield(%c) : (i32) -> ()
            }) : (i32, i32, i32, i32) -> i32
            store(%p, %s) : (*i32, i32) -> ()
            return() : () -> ()
          }
          tt.func @twice(%x: i32) -> (i32) {
            %d = add(%x, %x) : (i32, i32) -> i32
            return(%d) : (i32) -> ()
          }
          tt.func @same(%x: i32) -> (i32) {
            return(%x) : (i32) -> ()
          }
        }
        """, """
        module @k {
          tt.func @k(%p: *i32, %n: i32) {kernel = true} {
            %lb = constant() {value = 0} : () -> i32
            %s = for(%lb, %n, %n, %n) ({
            ^(%i: i32, %acc: i32):
              %0 = add(%acc, %acc) : (i32, i32) -> i32
              %1 = add(%0, %0) : (i32, i32) -> i32
              yield(%1) : (i32) -> ()
            }) : (i32, i32, i32, i32) -> i32
            store(%p, %s) : (*i32, i32) -> ()
            return() : () -> ()
          }
        }
        """)


RECURSIVE = """
module @k {
  tt.func @k(%n: i32) {kernel = true} {
    %r = call(%n) {callee = "f"} : (i32) -> i32
    return() : () -> ()
  }
  tt.func @f(%x: i32) -> (i32) {
    %y = call(%x) {callee = "g"} : (i32) -> i32
    return(%y) : (i32) -> ()
  }
  tt.func @g(%x: i32) -> (i32) {
    %y = call(%x) {callee = "f"} : (i32) -> i32
    return(%y) : (i32) -> ()
  }
}
"""


def test_recursion_is_an_error_naming_the_functions():
    with pytest.raises(InliningError, match="recursive calls cannot be inlined: @f -> @g -> @f"):
        run_pipeline(parse_module(RECURSIVE), passes=[inline])


def test_unknown_callee():
    module = parse_module(RECURSIVE.replace('%y = call(%x) {callee = "f"}', '%y = call(%x) {callee = "h"}'))
    with pytest.raises(InliningError, match="call to @h, which the module does not define"):
        run_pipeline(module, passes=[inline], verify=False)
