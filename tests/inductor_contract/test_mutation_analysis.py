"""TorchInductor's mutation analysis of user kernels, served from tritone's IR.

torch builds a kernel's TTIR through `triton._C.libtriton.ir` and
`ASTSource.make_ir`, walks it, and learns which arguments the kernel reads and
writes; where that fails it assumes every tensor is written and copies it. The
view itself is checked here in-process; torch's own analysis runs in a child
process where tritone answers `import triton` (`_torch_side.py`, the
`torch_side` fixture)."""

from __future__ import annotations

import pytest

import tritone
from tests.inductor_contract import _kernels
from tritone._C.libtriton import ir
from tritone.backends.compiler import make_backend
from tritone.compiler import ASTSource
from tritone.ir.target import INTERPRETER_TARGET, GPUTarget


def walked(kernel, signature: dict, constexprs: dict, target: GPUTarget = INTERPRETER_TARGET) -> tuple:
    """(the module, every operation the walk visits, in order)."""
    backend = make_backend(target)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    options = backend.parse_options({})
    module = ASTSource(kernel, signature, constexprs).make_ir(
        target, options, backend.get_codegen_implementation(options), backend.get_module_map(), context)
    ops: list[ir.operation] = []
    module.walk(ops.append)
    return module, ops


ADD_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}


def test_triton_C_is_an_attribute_of_the_package():
    # TorchInductor writes `triton._C.libtriton.ir.context()` after `import triton` alone.
    assert tritone._C.libtriton.ir is ir


def test_walk_visits_nested_operations_before_their_holder():
    module, ops = walked(_kernels.pointer_walk_in_loop, {"x_ptr": "*fp32", "out_ptr": "*fp32", "rows": "i32",
                                                         "cols": "i32", "BLOCK": "constexpr"}, {"BLOCK": 16})
    names = [op.get_name() for op in ops]
    assert names[-1] == "builtin.module" and names[-2] == "tt.func" and names.count("tt.func") == 1
    loop = names.index("scf.for")
    assert names.index("tt.store") < loop and names.index("scf.yield") < loop
    assert names[loop + 1:-2] == ["tt.return"]
    assert module.verify() and module.get_entry_func_name() == "pointer_walk_in_loop"


def test_ids_are_stable_and_name_one_thing_each():
    _, ops = walked(_kernels.add, ADD_SIGNATURE, {"BLOCK": 16})
    results = {op.get_result(i).id() for op in ops for i in range(op.get_num_results())}
    blocks = {op.get_block().id() for op in ops if op.get_block() is not None}
    regions = {op.get_region(i).id() for op in ops for i in range(op.get_num_regions())}
    assert len(blocks) == 2 and len(regions) == 2  # the function's body and the module's
    assert not (results & blocks) and not (results & regions) and not (blocks & regions)
    store = next(op for op in ops if op.get_name() == "tt.store")
    assert store.get_operand(0).id() == store.get_operand(0).id()
    assert store.get_operand(0).id() in results  # the address comes from an op seen earlier in the walk


def test_function_arguments_are_the_run_time_parameters_in_order():
    _, ops = walked(_kernels.add, ADD_SIGNATURE, {"BLOCK": 16})
    function = next(op for op in ops if op.get_name() == "tt.func")
    assert function.get_str_attr("sym_name") == "add" and function.get_num_operands() == 0
    body = function.get_region(0)
    block = next(op.get_block() for op in ops
                 if op.get_block() is not None and op.get_block().get_parent().id() == body.id())
    assert block.get_num_arguments() == 4  # x_ptr, y_ptr, out_ptr, n: the constexpr BLOCK is no argument
    assert len({block.get_argument(i).id() for i in range(4)}) == 4
    assert function.get_block().get_num_arguments() == 0  # the module's body
    with pytest.raises(IndexError, match="block argument index 5"):
        block.get_argument(5)


def test_loads_and_stores_reach_their_pointer_arguments():
    _, ops = walked(_kernels.add, ADD_SIGNATURE, {"BLOCK": 16})
    inner = [op for op in ops if op.get_block() is not None and op.get_name() not in ("tt.func", "builtin.module")]
    block = inner[0].get_block()
    arguments = [block.get_argument(i).id() for i in range(block.get_num_arguments())]
    producers = {op.get_result(i).id(): op for op in inner for i in range(op.get_num_results())}

    def roots(value_id: int) -> set[int]:
        if value_id in arguments:
            return {arguments.index(value_id)}
        op = producers[value_id]
        return set().union(*[roots(op.get_operand(i).id()) for i in range(op.get_num_operands())])

    loads = [op for op in inner if op.get_name() == "tt.load"]
    store = next(op for op in inner if op.get_name() == "tt.store")
    assert [roots(op.get_operand(0).id()) & {0, 1, 2} for op in loads] == [{0}, {1}]
    assert roots(store.get_operand(0).id()) & {0, 1, 2} == {2}


def test_calls_name_their_callee_and_regions_end_in_upstream_terminators():
    _, ops = walked(_kernels.through_helpers, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                                               "BLOCK": "constexpr"}, {"BLOCK": 16})
    functions = [op.get_str_attr("sym_name") for op in ops if op.get_name() == "tt.func"]
    callees = [op.get_flat_symbol_ref_attr("callee") for op in ops if op.get_name() == "tt.call"]
    assert functions[0] == "through_helpers" and sorted(callees) == sorted(functions[1:])
    assert all(op.get_flat_symbol_ref_attr("callee") is None for op in ops if op.get_name() != "tt.call")

    _, ops = walked(_kernels.row_softmax, {"x_ptr": "*fp32", "out_ptr": "*fp32", "cols": "i32",
                                           "BLOCK": "constexpr"}, {"BLOCK": 16})
    names = [op.get_name() for op in ops]
    assert names.count("tt.reduce") == 2 and names.count("tt.reduce.return") == 2
    for op in ops:
        if op.get_name() == "tt.reduce":
            region_block_args = [inner.get_block().get_num_arguments() for inner in ops
                                 if inner.get_block() is not None
                                 and inner.get_block().get_parent().id() == op.get_region(0).id()]
            assert set(region_block_args) == {2 * op.get_num_operands()}


def test_while_loops_and_atomics_keep_upstream_names():
    _, ops = walked(_kernels.locked_count, {"lock_ptr": "*i32", "count_ptr": "*i32", "unused_ptr": "*fp32",
                                            "BLOCK": "constexpr"}, {"BLOCK": 1})
    names = [op.get_name() for op in ops]
    for name in ("scf.while", "scf.condition", "tt.atomic_cas", "tt.atomic_rmw", "arith.cmpi", "tt.store"):
        assert name in names, name
    asm = walked(_kernels.pure_asm, {"x_ptr": "*fp32", "out_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 16})[1]
    inline = next(op for op in asm if op.get_name() == "tt.elementwise_inline_asm")
    assert inline.get_bool_attr("pure") is True and inline.get_str_attr("pure") is None


def test_make_ir_takes_a_context_and_works_for_a_gpu_target_without_a_gpu():
    backend = make_backend(GPUTarget("cuda", 90, 32))
    source = ASTSource(_kernels.add, ADD_SIGNATURE, {"BLOCK": 16})
    with pytest.raises(TypeError, match="kernel add: make_ir takes a triton._C.libtriton.ir.context"):
        source.make_ir(backend.target, backend.parse_options({}), {}, {}, object())
    module, ops = walked(_kernels.add, ADD_SIGNATURE, {"BLOCK": 16}, GPUTarget("cuda", 90, 32))
    assert module.verify() and "tt.store" in [op.get_name() for op in ops]
    assert "add" in str(module)


def test_verify_reports_a_broken_module():
    module, ops = walked(_kernels.add, ADD_SIGNATURE, {"BLOCK": 16})
    store = next(op for op in module.tritone_module.walk() if op.name == "store")
    store.operands = store.operands[1:2]  # drop the address
    assert module.verify() is False


@pytest.mark.parametrize(("source", "target", "name"), [
    ("fp32", "fp16", "arith.truncf"), ("fp16", "fp32", "arith.extf"), ("fp32", "fp8e4nv", "tt.fp_to_fp"),
    ("fp16", "bf16", "tt.fp_to_fp"), ("i32", "fp32", "arith.sitofp"), ("u32", "fp32", "arith.uitofp"),
    ("fp32", "i32", "arith.fptosi"), ("i8", "i32", "arith.extsi"), ("i1", "i32", "arith.extui"),
    ("i64", "i32", "arith.trunci"), ("i32", "u32", "arith.bitcast"),
])
def test_casts_take_upstream_names(source, target, name):
    from tritone.ir.core import Operation, Value
    from tritone.ir.types import parse_type

    op = Operation("cast", [Value(parse_type(source))], [parse_type(target)])
    assert ir.upstream_name(op) == name


def test_load_dialects_refuses_what_is_not_a_context():
    with pytest.raises(TypeError, match="context"):
        ir.load_dialects("context")


# -- torch's own analysis ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel", sorted(_kernels.ACCESSES))
def test_torch_finds_exactly_what_each_kernel_reads_and_writes(torch_side, kernel):
    _, _, reads, writes = _kernels.ACCESSES[kernel]
    found = torch_side["analysis"][kernel]
    assert not found["gave_up"]
    assert found["writes"] == sorted(writes)
    if found["reads"] is not None or torch_side["torch"] >= [2, 13]:  # older releases find writes only
        assert found["reads"] == sorted(reads)


def test_impure_inline_asm_makes_torch_assume_every_argument_written_as_upstream(torch_side):
    found = torch_side["analysis"]["impure_asm"]
    assert found["gave_up"] and found["writes"] == ["out_ptr", "x_ptr"]


def test_a_read_only_input_gets_no_copy(torch_side):
    functionalized = torch_side["functionalized"]
    assert functionalized["wrappers"] == ["triton_kernel_wrapper_functional"]
    assert functionalized["tensors_to_clone"] == [["out_ptr"]]
    assert functionalized["matches"]


def test_an_autotuned_kernel_traces_with_one_grid_per_config_and_no_input_copy(torch_side):
    traced = torch_side["functionalized_autotuned"]
    assert traced["tensors_to_clone"] == [["out_ptr"]] and traced["grids"] == [2] and traced["matches"]


def test_torch_probes_answer_for_this_machine(torch_side):
    probes = torch_side["probes"]
    answers = probes["answers"]
    assert probes["triton"] == "tritone" and answers["has_triton_package"]
    if not probes["cuda"]:
        # No CUDA device: no TMA of any kind, whatever triton provides.
        assert not any(answers[name] for name in answers if "tma" in name)
    # tritone has device-side tensor descriptors (`tl.make_tensor_descriptor`, through TMA on sm_90+):
    # Inductor may pick its TMA templates on Hopper and newer, as with upstream
    hopper = probes["cuda"] and tuple(probes["capability"]) >= (9, 0)
    assert answers["has_triton_tma_device"] == hopper
