"""`tl.make_tensor_descriptor` and the descriptor value in the frontend
(language/descriptor.py): the IR it makes (and its text round trip),
what kernels read of a descriptor at compile time, Triton's spellings, and
the errors Triton raises for bad descriptors, reported at the kernel's line."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tritone.language as tl
from tritone.errors import CompilationError
from tritone.frontend import ast_to_ir
from tritone.interpreter import run_kernel
from tritone.ir import verify
from tritone.ir.parser import parse_module
from tritone.ir.printer import print_module
from tritone.ir.target import INTERPRETER_TARGET, GPUTarget
from tritone.ir.types import block_type, parse_type, tensordesc_type, type_text
from tritone.ir.verifier import IRVerificationError
from tritone.language.core import constexpr
from tritone.runtime.jit import jit

OPTIONS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "debug": False}
SIG = {"X": "*fp16", "Y": "*fp16", "M": "i32", "N": "i32"}
RNG = np.random.default_rng()


def compile_error(kernel, signature: dict, constexprs: dict, target=None) -> str:
    with pytest.raises(CompilationError) as info:
        ast_to_ir(kernel, signature, constexprs, {**OPTIONS, "target": target})
    return str(info.value)


@jit
def copy_kernel(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    source = tl.make_tensor_descriptor(X, shape=[M, N], strides=[N, 1], block_shape=[BM, BN], padding_option="nan")
    target = tl.make_tensor_descriptor(Y, [M, N], [N, 1], [BM, BN])
    tl.static_assert(source.dtype == tl.float16)
    tl.static_assert(source.block_shape == [BM, BN])
    tl.static_assert(isinstance(source, tl.tensor_descriptor))
    target.store([0, BN], source.load([1, 2]))


def test_descriptor_ops_and_types_in_the_ir():
    module = ast_to_ir(copy_kernel, SIG, {"BM": 8, "BN": 16}, OPTIONS)
    verify(module)
    ops = {op.name: op for op in module.walk()}
    make = ops["make_tensor_descriptor"]
    assert type_text(make.results[0].type) == "tensordesc<fp16[8, 16]>"
    assert make.attrs["padding"] in ("nan", "zero")
    assert [type_text(v.type) for v in make.operands] == ["*fp16", "i32", "i32", "i64", "i64"]
    load = ops["descriptor_load"]
    assert type_text(load.results[0].type) == "<8x16xfp16>"
    assert [type_text(v.type) for v in load.operands[5:]] == ["i1", "i32", "i32"]
    assert "descriptor_store" in ops


def test_ir_text_round_trips():
    text = print_module(ast_to_ir(copy_kernel, SIG, {"BM": 8, "BN": 16}, OPTIONS))
    assert "tensordesc<fp16[8, 16]>" in text
    again = parse_module(text)
    verify(again)
    assert print_module(again) == text


def test_the_type_reads_triton_signature_spellings():
    ty = parse_type("tensordesc<bf16[1, 64, 32]>")
    assert ty == tensordesc_type(block_type(tl.bfloat16, [1, 64, 32]))
    assert parse_type("tensordesc<fp32[16,16]>") == tensordesc_type(block_type(tl.float32, [16, 16]))
    assert ty.rank == 3 and ty.base_ty == tl.pointer_type(tl.bfloat16)
    assert [type_text(t) for t in ty.argument_types()] == ["tensordesc<bf16[1, 64, 32]>", "i32", "i32", "i32",
                                                           "i64", "i64", "i64", "i1"]


def test_the_verifier_checks_operand_counts_and_types():
    module = ast_to_ir(copy_kernel, SIG, {"BM": 8, "BN": 16}, OPTIONS)
    load = next(op for op in module.walk() if op.name == "descriptor_load")
    load.operands.pop()
    with pytest.raises(IRVerificationError, match="rank-2 descriptor takes 8 operands"):
        verify(module)


@jit
def attributes_kernel(X, Y, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(X, [M, N], [stride, 1], [BM, BN])
    # join(join(a, c), join(b, d)) is [[a, b], [c, d]]
    tl.store(Y + tl.arange(0, 4), tl.join(tl.join(desc.shape[0], desc.strides[0].to(tl.int32)),
                                          tl.join(desc.shape[1], desc.strides[1].to(tl.int32))).reshape(4))
    ROWS: tl.constexpr = desc.block_shape[0]
    tl.static_assert(ROWS == BM)
    tl.static_assert(desc.block_type.element_ty == tl.float32)


def test_shape_and_strides_are_run_time_values():
    y = np.zeros(4, np.int32)
    m, n, stride = (int(v) for v in RNG.integers(1, 100, 3))
    stride *= 4
    module = ast_to_ir(attributes_kernel, {"X": "*fp32", "Y": "*i32", "M": "i32", "N": "i32", "stride": "i32"},
                       {"BM": 8, "BN": 16}, OPTIONS)
    run_kernel(module, (1,), [np.zeros(16, np.float32), y, m, n, stride])
    np.testing.assert_array_equal(y, [m, n, stride, 1])


@jit
def spellings_kernel(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    source = tl._experimental_make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN])
    target = tl.make_tensor_descriptor(Y, [M, N], [N, 1], [BM, BN])
    block = tl.load_tensor_descriptor(source, [0, 0])
    tl.store_tensor_descriptor(target, [0, 0], block + 1)
    tl._experimental_descriptor_store(target, tl._experimental_descriptor_load(source, [BM, 0], [BM, BN],
                                                                               tl.float16), [BM, 0])


def test_functional_and_experimental_spellings():
    x = RNG.uniform(-5, 5, (16, 16)).astype(np.float16)
    y = np.zeros((16, 16), np.float16)
    run_kernel(ast_to_ir(spellings_kernel, SIG, {"BM": 8, "BN": 16}, OPTIONS), (1,), [x, y, 16, 16])
    np.testing.assert_array_equal(y, np.concatenate([x[:8] + np.float16(1), x[8:]]))


# -- errors ------------------------------------------------------------------------------

@jit
def make_kernel(X, shape, strides, BLOCK: tl.constexpr, PADDING: tl.constexpr):
    desc = tl.make_tensor_descriptor(X, shape, strides, BLOCK, padding_option=PADDING)
    desc.load([0] * len(BLOCK))


def _ints(*entries):
    """A tuple signature: "i32"/"i64" entries are run-time, ints are constexprs."""
    return tuple(constexpr(e) if isinstance(e, int) else e for e in entries)


@pytest.mark.parametrize("block, strides, rank, padding, pattern", [
    ((8, 4), _ints("i64", 1), 2, "zero", r"at least 16 bytes in the last dimension, but got 4 \* 2 = 8 bytes"),
    ((8, 24), _ints("i64", 1), 2, "zero", r"Shape element 1 must be a power of 2"),
    ((8, 16), _ints("i64", 2), 2, "zero", r"Tensor descriptor last dim must be 1 but got 2"),
    ((8, 16), _ints("i64", "i64"), 2, "zero", r"the last stride must be the constant 1"),
    ((8, 16), _ints(1), 2, "zero", r"Expected 2 strides but got 1"),
    ((16,), _ints("i64", 1), 2, "zero", r"Expected block_shape to have 2 dimensions but got 1"),
    ((1,) * 5 + (16,), _ints(*["i64"] * 5, 1), 6, "zero", r"Expected 1 <= ndim <= 5 but got 6 dimensions"),
    ((8, 16), _ints("i64", 1), 2, "ones", r"Padding option 'ones' not supported"),
])
def test_bad_descriptors_are_refused_at_the_line(block, strides, rank, padding, pattern):
    message = compile_error(make_kernel, {"X": "*fp16", "shape": ("i32",) * rank, "strides": strides},
                            {"BLOCK": block, "PADDING": padding})
    assert re.search(pattern, message), message
    assert "tl.make_tensor_descriptor(X, shape" in message  # the source line is shown


def test_nan_padding_of_integers_is_refused():
    message = compile_error(copy_kernel, {"X": "*i16", "Y": "*i16", "M": "i32", "N": "i32"}, {"BM": 8, "BN": 16})
    assert "Padding option `nan` is not supported for integer blocks" in message


@jit
def access_kernel(X, Y, M, N, WHAT: tl.constexpr):
    desc = tl.make_tensor_descriptor(X, [M, N], [N, 1], [8, 16])
    if WHAT == "offsets":
        desc.load([0])
    elif WHAT == "store-shape":
        desc.store([0, 0], tl.zeros((8, 32), tl.float32))
    elif WHAT == "atomic-dtype":
        desc.atomic_min([0, 0], tl.zeros((8, 16), tl.float32))
    elif WHAT == "atomic-int8":
        desc.atomic_add([0, 0], tl.zeros((8, 16), tl.float16))
    elif WHAT == "gather-rank":
        desc.gather(tl.arange(0, 8), 0)
    elif WHAT == "wide-offsets":
        desc.load([0, N.to(tl.int64)])
    else:
        desc.gather(tl.arange(0, 8))


@pytest.mark.parametrize("what, type_name, pattern", [
    ("offsets", "fp16", r"expected 2 offsets, but got 1"),
    ("store-shape", "fp16", r"value of shape \[8, 32\] through a descriptor of block shape \[8, 16\]"),
    ("atomic-dtype", "fp32", r"Unsupported dtype: descriptor atomic_min takes .*int64, fp16, bf16, not fp32"),
    ("atomic-int8", "i8", r"Unsupported dtype: descriptor atomic_add takes .*not int8"),
    ("gather-rank", "fp16", r"descriptor block must have 1 row, but got \[8, 16\]"),
    ("wide-offsets", "fp16", r"offsets are 32-bit"),
    ("gather-args", "fp16", r"descriptor gather only supports 2D indexing, but got 1"),
])
def test_bad_accesses_are_refused(what, type_name, pattern):
    message = compile_error(access_kernel, {"X": f"*{type_name}", "Y": f"*{type_name}", "M": "i32", "N": "i32"},
                            {"WHAT": what})
    assert re.search(pattern, message), message


@jit
def min_max_kernel(X, M, N, KIND: tl.constexpr):
    desc = tl.make_tensor_descriptor(X, [M, N], [N, 1], [8, 16])
    value = desc.load([0, 0])
    if KIND == "min":
        desc.atomic_min([0, 0], value)
    else:
        desc.atomic_max([0, 0], value)


@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("type_name", ["fp16", "bf16"])
@pytest.mark.parametrize("target", [GPUTarget("cuda", 75, 32), GPUTarget("cuda", 80, 32), "sm_89",
                                    GPUTarget("hip", 942, 64)])
def test_16_bit_float_min_max_needs_tma(kind, type_name, target):
    """Upstream takes descriptor min/max of fp16 and bf16 only where descriptors are TMA's (CUDA sm_90+)."""
    message = compile_error(min_max_kernel, {"X": f"*{type_name}", "M": "i32", "N": "i32"}, {"KIND": kind},
                            target)
    assert f"descriptor atomic_{kind} of {tl.dtype(type_name)} needs a target with TMA" in message, message
    assert f"desc.atomic_{kind}([0, 0], value)" in message  # the kernel's line
    assert "min_max_kernel" in message


@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("type_name", ["fp16", "bf16"])
@pytest.mark.parametrize("target", [GPUTarget("cuda", 90, 32), GPUTarget("cuda", 100, 32), "sm_90a",
                                    INTERPRETER_TARGET, None])
def test_16_bit_float_min_max_where_descriptors_are_tma(kind, type_name, target):
    module = ast_to_ir(min_max_kernel, {"X": f"*{type_name}", "M": "i32", "N": "i32"}, {"KIND": kind},
                       {**OPTIONS, "target": target})
    atomics = [op for op in module.walk() if op.name == "descriptor_atomic"]
    assert [op.attrs["kind"] for op in atomics] == [kind]
    assert type_text(atomics[0].operands[-3].type.scalar) == type_name


@jit
def gather_rules_kernel(X, Index, M, N, ROWS: tl.constexpr, COLS: tl.constexpr):
    desc = tl.make_tensor_descriptor(X, [M, N], [N, 1], [1, COLS])
    desc.gather(tl.load(Index + tl.arange(0, ROWS)), 0)


@pytest.mark.parametrize("type_name, rows, cols, pattern", [
    ("fp32", 4, 32, r"must have at least 8 rows, but got \[4\]"),
    ("fp16", 8, 8, r"descriptor gather of fp16 must have at least 16 columns, but got 8"),
    ("i8", 8, 16, r"descriptor gather of int8 must have at least 32 columns, but got 16"),
])
def test_gather_block_rules(type_name, rows, cols, pattern):
    message = compile_error(gather_rules_kernel, {"X": f"*{type_name}", "Index": "*i32", "M": "i32", "N": "i32"},
                            {"ROWS": rows, "COLS": cols})
    assert re.search(pattern, message), message


@jit
def changing_kernel(X, M, N, n):
    desc = tl.make_tensor_descriptor(X, [M, N], [N, 1], [8, 16])
    for _ in range(n):
        desc = tl.make_tensor_descriptor(X, [M, N], [N, 1], [16, 16])
    desc.load([0, 0])


def test_a_descriptor_whose_block_changes_in_a_loop_is_refused():
    message = compile_error(changing_kernel, {"X": "*fp16", "M": "i32", "N": "i32", "n": "i32"}, {})
    assert "desc" in message and "tensor_descriptor" in message


@jit
def const_base_kernel(X: tl.const, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    source = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN])
    target = tl.make_tensor_descriptor(Y, [M, N], [N, 1], [BM, BN])
    for i in range(2):
        target.store([i * BM, 0], source.load([i * BM, 0]))


def test_a_const_pointer_makes_a_descriptor():
    x = RNG.uniform(-5, 5, (16, 16)).astype(np.float16)
    y = np.zeros((16, 16), np.float16)
    module = ast_to_ir(const_base_kernel, {"X": "*kfp16", "Y": "*fp16", "M": "i32", "N": "i32"}, {"BM": 8, "BN": 16},
                       OPTIONS)
    verify(module)
    run_kernel(module, (1,), [x, y, 16, 16])
    np.testing.assert_array_equal(y, x)
