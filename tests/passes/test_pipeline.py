"""run_pipeline: the ordered pass list, per-pass verification and IR dumps."""

import types

import pytest

from tritone.ir import IRVerificationError, parse_module, print_module
from tritone.passes import FRONTEND_PASSES, cse, dce, fold, inline, pass_name, run_pipeline

KERNEL = """
module @k attributes {num_warps = 4} {
  tt.func @k(%p: *i32, %n: i32) {kernel = true} {
    %r = call(%n) {callee = "inc"} : (i32) -> i32
    %again = call(%n) {callee = "inc"} : (i32) -> i32
    %s = add(%r, %again) : (i32, i32) -> i32
    store(%p, %s) : (*i32, i32) -> ()
    return() : () -> ()
  }
  tt.func @inc(%x: i32) -> (i32) {
    %one = constant() {value = 1} : () -> i32
    %zero = constant() {value = 0} : () -> i32
    %x0 = add(%x, %zero) : (i32, i32) -> i32
    %y = add(%x0, %one) : (i32, i32) -> i32
    return(%y) : (i32) -> ()
  }
}
"""


def test_frontend_pipeline_end_to_end(capsys):
    assert [pass_name(p) for p in FRONTEND_PASSES] == ["inline", "map_elementwise", "fold", "cse", "dce"]
    module = run_pipeline(parse_module(KERNEL), {"num_warps": 4}, dump=True)
    assert print_module(module) == (
        "module @k attributes {num_warps = 4} {\n"
        "  tt.func @k(%p: *i32, %n: i32) {kernel = true} {\n"
        "    %one = constant() {value = 1} : () -> i32\n"
        "    %y = add(%n, %one) : (i32, i32) -> i32\n"
        "    %s = add(%y, %y) : (i32, i32) -> i32\n"
        "    store(%p, %s) : (*i32, i32) -> ()\n"
        "    return() : () -> ()\n"
        "  }\n"
        "}\n")
    err = capsys.readouterr().err
    headers = [line for line in err.splitlines() if line.startswith("// -----// IR Dump After")]
    assert headers == [f"// -----// IR Dump After {name} //----- //" for name in ("inline", "map_elementwise", "fold",
                                                                                     "cse", "dce")]
    assert err.endswith(print_module(module) + "\n")
    # Every dump parses back (the header is a comment).
    dumps = err.split("// -----// IR Dump After ")[1:]
    for dump in dumps:
        parse_module(dump.split("\n", 1)[1])


def test_no_dump_by_default(capsys):
    run_pipeline(parse_module(KERNEL))
    assert capsys.readouterr().err == ""


def _breaking_pass() -> types.ModuleType:
    def run(module, ctx):
        assert ctx.options["num_warps"] == 8
        module.kernel.body.ops.pop()  # drop the `return`

    broken = types.ModuleType("tritone.passes.breaker")
    broken.run = run
    return broken


def test_verification_names_the_pass():
    module = parse_module(KERNEL)
    with pytest.raises(IRVerificationError, match="after pass breaker: IR verification failed in function @k"):
        run_pipeline(module, {"num_warps": 8}, passes=[inline, _breaking_pass()])
    module = parse_module(KERNEL)
    run_pipeline(module, {"num_warps": 8}, passes=[_breaking_pass()], verify=False)


def test_broken_input_is_reported_before_any_pass():
    module = parse_module(KERNEL.replace('%again = call(%n) {callee = "inc"}', '%again = call(%n) {callee = "dec"}'))
    with pytest.raises(IRVerificationError, match="before the first pass: .*calls @dec"):
        run_pipeline(module)


def test_passes_run_in_the_given_order():
    module = run_pipeline(parse_module(KERNEL), passes=[inline, cse, fold, dce])
    assert "%s = add(%y, %y)" in print_module(module)


def test_dump_ir_environment_variable_dumps_every_pass_of_a_launch(monkeypatch, capfd):
    import numpy as np

    import tritone
    import tritone.language as tl

    @tritone.jit
    def double(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("TRITONE_DUMP_IR", "1")
    x = np.random.default_rng().standard_normal(10).astype(np.float32)
    expected = x * 2
    double[(1,)](x, 10, BLOCK=16)
    assert np.array_equal(x, expected)
    err = capfd.readouterr().err
    headers = [line for line in err.splitlines() if line.startswith("// -----// IR Dump After")]
    assert headers == [f"// -----// IR Dump After {pass_name(p)} //----- //" for p in FRONTEND_PASSES]
    for dump in err.split("// -----// IR Dump After ")[1:]:
        assert "tt.func @double" in dump
        parse_module(dump.split("\n", 1)[1])
    monkeypatch.delenv("TRITONE_DUMP_IR")
    double[(1,)](x, 10, BLOCK=16)
    assert "IR Dump" not in capfd.readouterr().err
