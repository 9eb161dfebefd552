"""Host `TensorDescriptor` kernel arguments: specialised on their element type
and block shape as Triton writes it (`tensordesc<fp16[64, 64]>`), passed as
their parts (base, shape, strides, NaN-padding flag) so that one compiled
kernel serves descriptors of any tensor, shape, strides and padding; run in
the interpreter on fresh random tensors against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone.backends import sites
from tritone.backends.cuda.launch_plan import LaunchSpec, Parameter, element_at
from tritone.compiler import ASTSource
from tritone.runtime.specialize import specialize_value
from tritone.tools.tensor_descriptor import TensorDescriptor


@pytest.fixture(autouse=True)
def interpret(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@triton.jit
def window_kernel(out_ptr, desc, m, n, BM: tl.constexpr, BN: tl.constexpr):
    block = desc.load([m, n])
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], block)


def test_signature_type_is_the_element_type_and_block_shape():
    x = torch.randn(48, 40, dtype=torch.float16)
    # tritone's own additions: a shape of multiples of 16 ("D": bounds checks of whole vectors) and
    # zero padding ("Z": loads that pipelined copies can do) are specialised on
    assert specialize_value(TensorDescriptor.from_tensor(x, [16, 32])) == ("tensordesc<fp16[16, 32]>", "Z")
    assert specialize_value(TensorDescriptor.from_tensor(x, [16, 32], padding="nan")) == (
        "tensordesc<fp16[16, 32]>", "")
    assert specialize_value(TensorDescriptor(x, [48, 32], [40, 1], [16, 32])) == ("tensordesc<fp16[16, 32]>", "DZ")
    assert specialize_value(TensorDescriptor(x, [48, 32], [40, 1], [16, 32], padding="nan")) == (
        "tensordesc<fp16[16, 32]>", "D")
    assert specialize_value(TensorDescriptor(x, [48, 32], [40, 1], [16, 32]), specialize=False)[1] is None
    # what Triton's API answers is Triton's
    assert triton.runtime.jit.mangle_type(TensorDescriptor.from_tensor(x, [16, 32])) == "tensordesc<fp16[16, 32]>"
    assert triton.runtime.jit.native_specialize_impl(None, TensorDescriptor(x, [48, 32], [40, 1], [16, 32])) == (
        "tensordesc<fp16[16, 32]>", None)
    wrapped = triton.reinterpret(torch.zeros(64, 64, dtype=torch.uint8), tl.float8e5)
    assert specialize_value(TensorDescriptor.from_tensor(wrapped, [8, 16]))[0] == "tensordesc<fp8e5[8, 16]>"
    pair = specialize_value((TensorDescriptor.from_tensor(x, [16, 16]), 7))[0]
    assert pair.signature() == ("tensordesc<fp16[16, 16]>", "i32")


def test_descriptor_parts_are_the_kernel_arguments():
    x = torch.randn(48, 40, dtype=torch.float32)
    desc = TensorDescriptor(x, [40, 33], [40, 1], [16, 16], padding="nan")
    source = ASTSource(window_kernel, {"out_ptr": "*fp32", "desc": "tensordesc<fp32[16, 16]>", "m": "i32",
                                      "n": "i32"}, {"BM": 16, "BN": 16})
    leaves = source.runtime_leaves()
    assert [(leaf.path, leaf.type) for leaf in leaves if leaf.name == "desc"] == [
        ((0,), "tensordesc<fp32[16, 16]>"), ((1,), "i32"), ((2,), "i32"), ((3,), "i64"), ((4,), "i64"),
        ((5,), "u1")]
    parts = [element_at("window_kernel", "desc", leaf.path, desc) for leaf in leaves if leaf.name == "desc"]
    assert parts[0] is x and parts[1:] == [40, 33, 40, 1, True]
    launcher_leaves = Parameter(1, "desc", "tensordesc<fp32[16, 16]>").runtime_leaves()
    assert [p.label for p in launcher_leaves][:2] == ["desc.kernel_arguments()[0]", "desc.kernel_arguments()[1]"]
    assert launcher_leaves[0].is_pointer and not launcher_leaves[1].is_pointer
    assert LaunchSpec.runtime_parameters  # the GPU launcher flattens its parameters the same way


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.int16,
                                   torch.int32, torch.uint8])
def test_load_through_a_host_descriptor(dtype):
    m, n, bm, bn = 37, 45, 8, 32
    base = (torch.randn(m, 64) * 50).to(dtype)
    x = base[:, :n]  # rows of 64 elements: 16-byte multiples for every dtype here
    out = torch.empty(bm, bn, dtype=dtype)
    row, col = int(np.random.randint(-bm, m)), int(np.random.randint(-bn, n))
    window_kernel[(1,)](out, TensorDescriptor.from_tensor(x, [bm, bn]), row, col, bm, bn)
    expected = torch.zeros(bm, bn, dtype=dtype)
    rows = slice(max(row, 0), min(row + bm, m))
    cols = slice(max(col, 0), min(col + bn, n))
    expected[rows.start - row:rows.stop - row, cols.start - col:cols.stop - col] = x[rows, cols]
    assert torch.equal(out, expected)


def test_the_padding_is_specialised_on_and_the_shape_is_a_run_time_value():
    # Zero padding is known when compiling (a constant, which pipelined copies can give); NaN
    # padding is the flag argument, as in Triton. A shape not of multiples of 16 is a run-time value.
    x = torch.randn(20, 24)
    out_zero, out_zero2, out_nan = torch.empty(16, 16), torch.empty(16, 16), torch.empty(16, 16)
    zero = TensorDescriptor(x, [20, 24], [24, 1], [16, 16])
    zero2 = TensorDescriptor(x, [13, 24], [24, 1], [16, 16])
    nan = TensorDescriptor(x, [10, 24], [24, 1], [16, 16], padding="nan")
    kernels = window_kernel.device_caches.for_site(sites.launch_site())
    window_kernel[(1,)](out_zero, zero, 8, 8, 16, 16)
    compiled = len(kernels)
    window_kernel[(1,)](out_zero2, zero2, 8, 8, 16, 16)
    assert len(kernels) == compiled
    window_kernel[(1,)](out_nan, nan, 8, 8, 16, 16)
    assert len(kernels) == compiled + 1
    assert torch.equal(out_zero[:12, :16], x[8:20, 8:24]) and (out_zero[12:] == 0).all()
    assert torch.equal(out_zero2[:5, :16], x[8:13, 8:24]) and (out_zero2[5:] == 0).all()
    assert torch.equal(out_nan[:2, :16], x[8:10, 8:24]) and out_nan[2:].isnan().all()


@triton.jit
def store_kernel(desc, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    cols = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    desc.store([tl.program_id(0) * BM, tl.program_id(1) * BN], (rows * N + cols).to(tl.float32) / 3.0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_store_downcasts_to_the_descriptor_dtype(dtype):
    m, n = 24, 40
    out = torch.zeros(m, 48, dtype=dtype)
    store_kernel[(3, 2)](TensorDescriptor(out, [m, n], [48, 1], [8, 32]), m, n, 8, 32)
    expected = (torch.arange(m * n, dtype=torch.float32).reshape(m, n) / 3.0).to(dtype)
    assert torch.equal(out[:, :n], expected)
    assert (out[:, n:] == 0).all()


@triton.jit
def matmul_kernel(a_desc, b_desc, c_desc):
    K = a_desc.shape[1]
    BM: tl.constexpr = a_desc.block_shape[0]
    BK: tl.constexpr = a_desc.block_shape[1]
    BN: tl.constexpr = b_desc.block_shape[1]
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([m, k]), b_desc.load([k, n]), acc)
    c_desc.store([m, n], acc.to(c_desc.dtype))


def test_matmul_of_host_descriptors():
    a = torch.randn(48, 40, dtype=torch.float16)
    b = torch.randn(40, 32, dtype=torch.float16)
    c = torch.empty(48, 32, dtype=torch.float16)
    matmul_kernel[(3, 2)](TensorDescriptor.from_tensor(a, [16, 16]), TensorDescriptor.from_tensor(b, [16, 16]),
                          TensorDescriptor.from_tensor(c, [16, 16]))
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2)


@triton.jit
def tuple_kernel(descs, BM: tl.constexpr, BN: tl.constexpr):
    source, target = descs
    target.store([0, 0], source.load([0, 0]) * 2)


def test_descriptors_in_tuples():
    x = torch.randn(8, 16)
    y = torch.zeros(8, 16)
    tuple_kernel[(1,)]((TensorDescriptor.from_tensor(x, [8, 16]), TensorDescriptor.from_tensor(y, [8, 16])), 8, 16)
    assert torch.equal(y, x * 2)


def test_a_mistyped_descriptor_is_refused_naming_the_parameter():
    with pytest.raises(TypeError, match="argument 'desc'"):
        window_kernel[(1,)](torch.empty(4), [1, 2], 0, 0, 16, 16)


def test_reinterpreted_tensors_make_copies_of_their_kind():
    # upstream's tests build descriptors over `to_triton` wrappers of unsigned tensors
    base = torch.randint(0, 2**15, (16, 32), dtype=torch.int16)
    wrapped = triton.reinterpret(base, tl.uint16)
    out = wrapped.new_empty((8, 32))
    assert isinstance(out, type(wrapped)) and out.dtype == tl.uint16 and tuple(out.shape) == (8, 32)
    window_kernel[(1,)](out, TensorDescriptor.from_tensor(wrapped, [8, 32]), 4, 0, 8, 32)
    assert torch.equal(out.base, base[4:12])
    copy = wrapped.clone()
    copy.copy_(triton.reinterpret(torch.zeros_like(base), tl.uint16))
    assert (copy.base == 0).all() and torch.equal(wrapped.cpu().base, base)


def test_a_kernel_compiled_from_its_ir_takes_the_parts_one_by_one(tmp_path):
    from tritone.compiler import IRSource

    x = torch.randn(24, 40)
    desc = TensorDescriptor(x, [20, 36], [40, 1], [16, 32], padding="nan")
    out = torch.empty(16, 32)
    compiled = window_kernel.warmup(out, desc, 0, 0, 16, 32, grid=(1,))
    path = tmp_path / "window.ttir"
    path.write_text(compiled.asm["ttir"], encoding="utf-8")
    source = IRSource(path)
    assert list(source.signature.values())[1:7] == ["*fp32", "i32", "i32", "i64", "i64", "i1"]
    kernel = triton.compile(source)
    kernel[(1,)](out, *desc.kernel_arguments(), 8, 8)
    expected = torch.full((16, 32), float("nan"))
    expected[:12, :28] = x[8:20, 8:36]
    torch.testing.assert_close(out, expected, equal_nan=True)


@pytest.mark.parametrize("padding", ["zero", "nan"])
def test_pointer_code_of_a_host_descriptor_pads_as_specialised(padding):
    from tritone.interpreter import run_kernel
    from tritone.ir.parser import parse_module
    from tritone.ir.printer import print_module
    from tritone.passes import PassContext, lower_descriptors

    x = torch.randn(24, 40)
    out = torch.empty(16, 32)
    desc = TensorDescriptor(x, [20, 36], [40, 1], [16, 32], padding=padding)
    module = parse_module(window_kernel.warmup(out, desc, 0, 0, 16, 32, grid=(1,)).asm["ttir"])
    lower_descriptors.run(module, PassContext())
    # NaN padding is chosen by the flag argument; zero padding, specialised on, is a constant
    assert ("select(" in print_module(module)) == (padding == "nan")
    run_kernel(module, (1,), [out, *desc.kernel_arguments(), 8, 8])
    expected = torch.full((16, 32), float("nan") if padding == "nan" else 0.0)
    expected[:12, :28] = x[8:20, 8:36]
    torch.testing.assert_close(out, expected, equal_nan=True)
