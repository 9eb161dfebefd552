"""The kernel's `arg_attrs` (docs/IR.md): the runtime's divisible-by-16
specialisation reaches the IR, and through it the CUDA backend's vector loads."""

import re

import pytest

import tritone
import tritone.language as tl
from tests.frontend._helpers import DEFAULT_OPTIONS, compile_ir
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, compile
from tritone.ir import parse_module, print_module
from tritone.ir.target import INTERPRETER_TARGET
from tritone.passes import run_pipeline

SIGNATURE = {"x_ptr": "*fp32", "n": "i32", "scale": "fp32", "out_ptr": "*fp32"}


@tritone.jit
def scale_kernel(x_ptr, n, scale, BLOCK: tl.constexpr, out_ptr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


def test_indices_count_kernel_arguments_and_skip_constexprs():
    module = compile_ir(scale_kernel, SIGNATURE, {"BLOCK": 256}, divisible_by_16=("out_ptr", "n", "x_ptr"))
    # out_ptr is the fourth parameter but the third argument: BLOCK is no argument.
    assert module.kernel.attrs["arg_attrs"] == {0: {"divisibility": 16}, 1: {"divisibility": 16},
                                                3: {"divisibility": 16}}
    assert list(module.kernel.attrs["arg_attrs"]) == [0, 1, 3]
    assert module.kernel.attrs["kernel"] is True


def test_floats_get_no_divisibility_and_nothing_divisible_adds_no_attribute():
    module = compile_ir(scale_kernel, SIGNATURE, {"BLOCK": 256}, divisible_by_16=("scale",))
    assert "arg_attrs" not in module.kernel.attrs
    module = compile_ir(scale_kernel, SIGNATURE, {"BLOCK": 256})
    assert "arg_attrs" not in module.kernel.attrs


def test_unknown_parameter_names_are_refused():
    with pytest.raises(TypeError, match="has no parameter 'm'"):
        compile_ir(scale_kernel, SIGNATURE, {"BLOCK": 256}, divisible_by_16=("m",))


def test_the_runtime_specialisation_reaches_the_ir_text():
    src = ASTSource(scale_kernel, SIGNATURE, {"BLOCK": 256},
                    attrs={(0,): [["tt.divisibility", 16]], (4,): [["tt.divisibility", 16]]})
    text = compile(src, target=INTERPRETER_TARGET).asm["ttir"]
    assert "{kernel = true, arg_attrs = {0 = {divisibility = 16}, 3 = {divisibility = 16}}}" in text
    assert print_module(parse_module(text)) == text


@tritone.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def _global_loads(divisible: tuple[str, ...]) -> list[str]:
    """The `ld.global` instructions of add_kernel's CUDA for sm_90."""
    options = {**DEFAULT_OPTIONS, "divisible_by_16": divisible}
    module = compile_ir(add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                        {"BLOCK": 1024}, **options)
    source, _, _ = generate_cuda(run_pipeline(module, options), 90, options)
    return re.findall(r"ld\.global[.\w]*", source)


def test_aligned_pointers_and_divisible_n_give_16_byte_vector_loads():
    loads = _global_loads(("x_ptr", "y_ptr", "out_ptr", "n"))
    # 1024 fp32 over 128 threads: 8 per thread, two 16-byte loads of each input.
    assert loads == ["ld.global.v4.b32"] * 4


@pytest.mark.parametrize("divisible", [(), ("x_ptr", "y_ptr", "out_ptr")], ids=["nothing known", "n unknown"])
def test_without_the_facts_loads_are_scalar(divisible):
    # Unaligned pointers, or a mask that may change inside any 4-element run
    # (n not a multiple of 16): one 4-byte load per element.
    assert _global_loads(divisible) == ["ld.global.b32"] * 16
