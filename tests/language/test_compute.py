"""Reductions and scans, dot, math functions and libdevice (TRITON_SEMANTICS 5-7)."""

from __future__ import annotations

import pytest

import tritone.language as tl
from tritone.language import standard
from tritone.language.extra import cuda, libdevice

from ._helpers import Kernel


@tl.core.builtin
def _add(a, b, _semantic=None):
    return a.__add__(b, _semantic=_semantic)


@tl.core.builtin
def _argmax_pair(v1, i1, v2, i2, _semantic=None):
    take = v1.__gt__(v2, _semantic=_semantic)
    return tl.where(take, v1, v2, _semantic=_semantic), tl.where(take, i1, i2, _semantic=_semantic)


# -- reduce / scan -------------------------------------------------------------------

def test_reduce_builds_a_combine_region():
    k = Kernel()
    x = k.arg("fp32", [4, 8])
    r = tl.reduce(x, 1, _add, _semantic=k.sem)
    assert r.type == tl.block_type(tl.float32, [4])
    (op,) = k.ops("reduce")
    assert op.attrs == {"axis": 1}
    region = op.regions[0]
    assert [a.type for a in region.args] == [tl.float32, tl.float32]
    assert [o.name for o in region.ops] == ["add", "yield"]
    # the builder is back after the reduce op
    assert k.builder.region is k.fn.body
    k.verify()


def test_reduce_axis_none_keep_dims_and_negative_axes():
    k = Kernel()
    x = k.arg("i32", [4, 8])
    assert tl.reduce(x, None, _add, _semantic=k.sem).type == tl.int32
    assert "reshape" in k.op_names()
    assert tl.reduce(x, None, _add, keep_dims=True, _semantic=k.sem).type == tl.block_type(tl.int32, [1, 1])
    assert tl.reduce(x, -1, _add, keep_dims=True, _semantic=k.sem).type == tl.block_type(tl.int32, [4, 1])
    assert x.reduce(0, _add, _semantic=k.sem).type == tl.block_type(tl.int32, [8])
    with pytest.raises(ValueError, match="invalid axis"):
        tl.reduce(x, 2, _add, _semantic=k.sem)
    k.verify()


def test_reduce_of_a_tuple_and_with_indices():
    k = Kernel()
    x = k.arg("fp16", [16])
    values, indices = tl.core._reduce_with_indices(x, 0, _argmax_pair, _semantic=k.sem)
    assert values.type == tl.float16 and indices.type == tl.int32
    y = k.arg("fp32", [4, 16])
    v2, i2 = tl.core._reduce_with_indices(y, 1, _argmax_pair, keep_dims=True, _semantic=k.sem)
    assert v2.type == tl.block_type(tl.float32, [4, 1]) and i2.type == tl.block_type(tl.int32, [4, 1])
    k.verify()


def test_combine_results_must_keep_the_element_types():
    @tl.core.builtin
    def widen(a, b, _semantic=None):
        return a.__add__(b, _semantic=_semantic).to(tl.float32, _semantic=_semantic)

    k = Kernel()
    with pytest.raises(TypeError, match="combine function returned"):
        tl.reduce(k.arg("fp16", [8]), 0, widen, _semantic=k.sem)


def test_scan():
    k = Kernel()
    x = k.arg("i32", [4, 8])
    r = tl.associative_scan(x, -1, _add, reverse=True, _semantic=k.sem)
    assert r.type == x.type
    assert k.ops("scan")[0].attrs == {"axis": 1, "reverse": True}
    with pytest.raises(ValueError, match="needs an axis"):
        tl.associative_scan(x, None, _add, _semantic=k.sem)
    k.verify()


def test_without_the_codegen_hook_combine_functions_fail_clearly():
    k = Kernel()
    k.sem.call_jit_function = None
    with pytest.raises(RuntimeError, match="call_jit_function"):
        tl.reduce(k.arg("i32", [8]), 0, _add, _semantic=k.sem)


def test_tensor_methods_written_in_triton_go_through_the_hook():
    k = Kernel()
    calls = []
    k.sem.call_jit_function = lambda fn, args: calls.append((fn, args)) or args[0]
    x = k.arg("fp32", [8])
    assert x.sum(0, dtype=tl.float64, _semantic=k.sem) is x
    assert calls[-1] == (standard.sum, [x, 0, False, tl.float64])
    x.max(_semantic=k.sem)
    assert calls[-1] == (standard.max, [x, None, False, True, False])
    x.cdiv(4, _semantic=k.sem)
    assert calls[-1] == (standard.cdiv, [x, 4])


@pytest.mark.parametrize("name, expected", [
    ("i8", "i32"), ("i16", "i32"), ("i1", "u32"), ("u8", "u32"), ("u16", "u32"), ("i32", "i32"), ("u32", "u32"),
    ("i64", "i64"), ("fp16", "fp16"), ("bf16", "bf16"), ("fp32", "fp32"),
])
def test_sum_accumulation_dtypes(name, expected):
    assert standard._sum_dtype(tl.dtype(name), None) == tl.dtype(expected)
    assert standard._sum_dtype(tl.dtype(name), tl.float64) == tl.float64


@pytest.mark.parametrize("name, expected", [
    ("fp16", "fp32"), ("fp8e5", "fp32"), ("u8", "i32"), ("i1", "i32"), ("i16", "i32"), ("u16", "i32"),
    ("fp32", "fp32"), ("u32", "u32"), ("i64", "i64"), ("fp64", "fp64"),
])
def test_max_min_reduction_dtypes(name, expected):
    assert standard._min_max_dtype(tl.dtype(name)) == tl.dtype(expected)


# -- dot ------------------------------------------------------------------------------

@pytest.mark.parametrize("operand, out_dtype, expected", [
    ("fp16", tl.float32, "fp32"), ("fp16", tl.float16, "fp16"), ("bf16", tl.float32, "fp32"),
    ("fp32", tl.float16, "fp32"), ("fp64", tl.float32, "fp64"), ("i8", tl.float32, "i32"),
    ("fp8e5", tl.float32, "fp32"), ("fp8e4nv", tl.float16, "fp16"),
])
def test_dot_result_dtypes(operand, out_dtype, expected):
    k = Kernel()
    a, b = k.arg(operand, [16, 32]), k.arg(operand, [32, 8])
    c = tl.dot(a, b, out_dtype=out_dtype, _semantic=k.sem)
    assert c.type == tl.block_type(tl.dtype(expected), [16, 8])
    assert k.ops("dot")[0].attrs["input_precision"] == "tf32"
    k.verify()


def test_dot_batched_accumulator_and_precision():
    k = Kernel(fp32_default="ieee")
    a, b = k.arg("fp32", [2, 16, 16]), k.arg("fp32", [2, 16, 32])
    acc = k.arg("fp32", [2, 16, 32])
    assert tl.dot(a, b, acc, _semantic=k.sem).type == acc.type
    assert k.ops("dot")[0].attrs["input_precision"] == "ieee"
    tl.dot(a, b, input_precision="tf32x3", _semantic=k.sem)
    assert k.ops("dot")[1].attrs["input_precision"] == "tf32x3"
    plain = Kernel()
    x, y = plain.arg("fp32", [16, 16]), plain.arg("fp32", [16, 16])
    tl.dot(x, y, allow_tf32=False, _semantic=plain.sem)
    assert plain.ops("dot")[0].attrs["input_precision"] == "ieee"
    four = plain.arg("fp16", [2, 2, 16, 16])
    assert tl.dot(four, four, _semantic=plain.sem).type == tl.block_type(tl.float32, [2, 2, 16, 16])
    k.verify()
    plain.verify()


@pytest.mark.parametrize("a, b, message", [
    ("fp16", "bf16", "Both operands must be same dtype"),
    ("fp32", "fp16", "Both operands must be same dtype"),
    ("u8", "u8", "only int8 supported"),
    ("i32", "i32", "Unsupported lhs dtype int32"),
])
def test_dot_operand_errors(a, b, message):
    k = Kernel()
    with pytest.raises(AssertionError, match=message):
        tl.dot(k.arg(a, [16, 16]), k.arg(b, [16, 16]), _semantic=k.sem)


def test_dot_other_errors():
    k = Kernel(target="sm_90")
    a = k.arg("fp16", [16, 16])
    with pytest.raises(ValueError, match="out_dtype=bfloat16 is unsupported"):
        tl.dot(a, a, out_dtype=tl.bfloat16, _semantic=k.sem)
    with pytest.raises(AssertionError, match="equal reduction dimensions"):
        tl.dot(a, k.arg("fp16", [32, 16]), _semantic=k.sem)
    with pytest.raises(AssertionError, match="K >= 16"):
        tl.dot(k.arg("fp16", [16, 8]), k.arg("fp16", [8, 16]), _semantic=k.sem)
    with pytest.raises(AssertionError, match="K >= 32"):
        tl.dot(k.arg("i8", [16, 16]), k.arg("i8", [16, 16]), out_dtype=tl.int32, _semantic=k.sem)
    with pytest.raises(AssertionError, match="accumulator"):
        tl.dot(a, a, k.arg("fp16", [16, 16]), _semantic=k.sem)
    with pytest.raises(AssertionError, match="Only one of input_precision and allow_tf32"):
        tl.dot(a, a, input_precision="ieee", allow_tf32=True, _semantic=k.sem)
    with pytest.raises(AssertionError, match="input_precision must be one of"):
        tl.dot(a, a, input_precision="bf16x9", _semantic=k.sem)
    f8 = k.arg("fp8e5", [16, 32])
    with pytest.raises(ValueError, match="max_num_imprecise_acc"):
        tl.dot(f8, k.arg("fp8e5", [32, 16]), max_num_imprecise_acc=64, _semantic=k.sem)
    # without a GPU target there is no minimum size (the interpreter has none)
    small = Kernel()
    assert tl.dot(small.arg("fp16", [4, 4]), small.arg("fp16", [4, 4]), _semantic=small.sem).shape[0] == 4


# -- math -------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [tl.exp, tl.exp2, tl.log, tl.log2, tl.sin, tl.cos, tl.sqrt, tl.rsqrt, tl.erf,
                                tl.floor, tl.ceil])
def test_math_accepts_only_fp32_and_fp64(fn):
    k = Kernel()
    for name in ("fp32", "fp64"):
        x = k.arg(name, [8])
        assert fn(x, _semantic=k.sem).type == x.type
    for name, shown in (("fp16", "fp16"), ("bf16", "bf16"), ("i32", "int32")):
        with pytest.raises(ValueError, match=rf"Expected dtype \['fp32', 'fp64'\] but got {shown}"):
            fn(k.arg(name, [8]), _semantic=k.sem)
    assert fn(1.0, _semantic=k.sem).type == tl.float32
    k.verify()


def test_math_details():
    k = Kernel()
    x, d, i8, u32 = k.arg("fp32", [8]), k.arg("fp64", [8]), k.arg("i8", [8]), k.arg("u32", [8])
    assert tl.sqrt_rn(x, _semantic=k.sem).dtype == tl.float32
    with pytest.raises(ValueError, match=r"Expected dtype \['fp32'\] but got fp64"):
        tl.sqrt_rn(d, _semantic=k.sem)
    assert tl.div_rn(x, 2, _semantic=k.sem).dtype == tl.float32
    assert tl.umulhi(u32, 0xCD9E8D57, _semantic=k.sem).dtype == tl.uint32
    with pytest.raises(ValueError, match="but got int8"):
        tl.umulhi(i8, i8, _semantic=k.sem)
    assert tl.abs(i8, _semantic=k.sem).dtype == tl.int8
    assert tl.abs(u32, _semantic=k.sem) is u32
    assert x.exp(_semantic=k.sem).dtype == tl.float32
    h = k.arg("fp16", [8])
    assert tl.fdiv(h, h, _semantic=k.sem).dtype == tl.float16
    with pytest.raises(TypeError, match="floating scalar type"):
        tl.fdiv(i8, h, _semantic=k.sem)
    assert tl.fma(h, h, h, _semantic=k.sem).dtype == tl.float16
    c = tl.clamp(x, 0.0, 1.0, propagate_nan=tl.PropagateNan.ALL, _semantic=k.sem)
    assert c.dtype == tl.float32 and k.op_names()[-1] == "select"
    with pytest.raises(TypeError, match="Only floating point clamp"):
        tl.clamp(i8, 0, 1, _semantic=k.sem)
    k.verify()


# -- libdevice ------------------------------------------------------------------------------

def _upstream_names():
    upstream_libdevice = pytest.importorskip("triton.language.extra.cuda.libdevice")
    return sorted(n for n in dir(upstream_libdevice) if not n.startswith("_") and callable(
        getattr(upstream_libdevice, n)) and n != "core")


def test_libdevice_has_every_upstream_function():
    names = _upstream_names()
    assert len(names) == 197
    assert sorted(libdevice.LIBDEVICE) == names
    for name in names:
        assert getattr(libdevice, name) is getattr(cuda.libdevice, name)
        assert tl.core.is_builtin(getattr(libdevice, name))


@pytest.mark.parametrize("name, args, expected", [
    ("isnan", ("fp32",), "i32"), ("isinf", ("fp64",), "i32"), ("signbit", ("fp64",), "i32"),
    ("ilogb", ("fp32",), "i32"), ("llrint", ("fp64",), "i64"), ("ldexp", ("fp32", "i32"), "fp32"),
    ("pow", ("fp64", "i32"), "fp64"), ("pow", ("fp32", "fp32"), "fp32"), ("tanh", ("fp32",), "fp32"),
    ("fma", ("fp64", "fp64", "fp64"), "fp64"), ("popc", ("i64",), "i32"), ("mulhi", ("u32", "u32"), "u32"),
])
def test_libdevice_signatures(name, args, expected):
    k = Kernel()
    tensors = [k.arg(a, [4]) for a in args]
    result = getattr(libdevice, name)(*tensors, _semantic=k.sem)
    assert result.type == tl.block_type(tl.dtype(expected), [4])
    (op,) = k.ops("extern")
    assert op.attrs == {"name": name}
    k.verify()


def test_libdevice_typing_rules():
    k = Kernel()
    x, h = k.arg("fp32", [4]), k.arg("fp16", [4])
    assert libdevice.pow(x, 2, _semantic=k.sem).dtype == tl.float32
    assert libdevice.pow(x, 2.0, _semantic=k.sem).dtype == tl.float32
    assert libdevice.atan2(k.arg("fp32"), x, _semantic=k.sem).type == x.type
    with pytest.raises(ValueError, match="input arg type does not match"):
        libdevice.exp(h, _semantic=k.sem)
    with pytest.raises(TypeError, match="takes 1 arguments"):
        libdevice.exp(x, x, _semantic=k.sem)
    assert libdevice.LIBDEVICE_SYMBOLS[("tanh", (tl.float32,))] == "__nv_tanhf"
    k.verify()


def test_options_from_the_runtime():
    from tritone.backends.compiler import GPUTarget
    from tritone.ir.target import INTERPRETER_TARGET

    assert Kernel(target=GPUTarget("cuda", 90, 32)).sem.target_capability == 90
    assert Kernel(target="sm_90a").sem.target_capability == 90
    assert Kernel(target=INTERPRETER_TARGET).sem.target_capability is None
    k = Kernel(default_dot_input_precision="tf32x3")
    a = k.arg("fp32", [16, 16])
    tl.dot(a, a, _semantic=k.sem)
    assert k.ops("dot")[0].attrs["input_precision"] == "tf32x3"
    fp8 = Kernel(target=GPUTarget("cuda", 90, 32))
    e5 = fp8.arg("fp8e5", [16, 32])
    tl.dot(e5, fp8.arg("fp8e5", [32, 16]), _semantic=fp8.sem)
    assert fp8.ops("dot")[0].attrs["max_num_imprecise_acc"] == 2**30
