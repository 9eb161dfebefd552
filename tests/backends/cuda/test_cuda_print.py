"""`print` / `tl.device_print` on the GPU: the printf formats the CUDA backend
builds, and whole kernels run on the CPU emulator (host printf stands in for
the device's) printing Triton's lines: `pid (x, y, z) idx (i, j)<prefix><value>`,
one per element a thread holds, scalars in every thread."""

from __future__ import annotations

import ctypes
import re
from collections import Counter

import cuda_emulator
import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.codegen_debug import element_conversion, element_format, index_widths, message_format
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir

needs_gxx = pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")


def c_printf(fmt: str, *args) -> str:
    """`fmt` applied as C's printf would for the conversions print lines use
    (Python's % has them all but the `ll` length modifier, which changes nothing here)."""
    return fmt.replace("%%", "\0").replace("ll", "").replace("\0", "%%") % args


# -- formats -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, widths", [((128,), [3]), ((64, 128), [2, 3]), ((4, 32), [1, 2]),
                                           ((1, 10, 11), [0, 1, 2]), ((100,), [2]), ((101,), [3]), ((), [])])
def test_index_widths_are_the_digits_of_the_largest_index(shape, widths):
    assert index_widths(shape) == widths


def test_element_lines_of_a_tensor_pad_indices_and_keep_the_prefix():
    rng = np.random.default_rng()
    i, j = int(rng.integers(0, 64)), int(rng.integers(0, 128))
    value = int(rng.integers(-2**31, 2**31))
    conversion, _ = element_conversion(tl.int32, hex_=False)
    fmt = element_format(" x: ", (64, 128), conversion)
    assert c_printf(fmt, 0, 1, 0, i, j, value) == f"pid (0, 1, 0) idx ({i:2}, {j:3}) x: {value}"
    fmt = element_format(": ", (64, 128), conversion, operand=1)
    assert c_printf(fmt, 2, 0, 0, i, j, value) == f"pid (2, 0, 0) idx ({i:2}, {j:3}): (operand 1) {value}"


def test_scalar_and_operandless_lines():
    conversion, _ = element_conversion(tl.float16, hex_=False)
    value = float(np.random.default_rng().uniform(-100, 100))
    assert c_printf(element_format(" x: ", (), conversion), 0, 0, 3, value) == f"pid (0, 0, 3) idx () x: {value:f}"
    assert c_printf(message_format(" no arg"), 4, 0, 0) == "pid (4, 0, 0) no arg"
    assert c_printf(message_format(" 100% done"), 0, 0, 0) == "pid (0, 0, 0) 100% done"


@pytest.mark.parametrize("ty, hex_, conversion, argument", [
    (tl.int8, False, "%i", "(int)v"), (tl.uint8, False, "%u", "(unsigned)v"), (tl.int1, False, "%u", "(unsigned)v"),
    (tl.int64, False, "%lli", "v"), (tl.uint64, False, "%llu", "v"), (tl.uint32, False, "%u", "(unsigned)v"),
    (tl.int16, True, "0x%04x", "(unsigned)v"), (tl.int32, True, "0x%08x", "(unsigned)v"),
    (tl.int64, True, "0x%016llx", "(unsigned long long)v"), (tl.float32, True, "0x%08x", "tt_bitcast<unsigned>(v)"),
    (tl.float16, True, "0x%04x", "(unsigned)v.bits"), (tl.float64, False, "%f", "(double)v"),
    (tl.pointer_type(tl.int32), False, "%p", "(const void*)v"),
])
def test_element_conversions_follow_the_type(ty, hex_, conversion, argument):
    spec, template = element_conversion(ty, hex_)
    assert (spec, template.format("v")) == (conversion, argument)


# -- kernels on the emulator ----------------------------------------------------------------

N = 128
NUM_WARPS = 4


@triton.jit
def print_loaded(X, BLOCK: tl.constexpr, HEX: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.device_print("x: ", x, hex=HEX)


@triton.jit
def print_builtin(X, BLOCK: tl.constexpr):
    print("x:", tl.load(X + tl.arange(0, BLOCK)))


@triton.jit
def print_scalar(X):
    print("x:", tl.load(X))


@triton.jit
def print_two(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.device_print("", x, tl.full((BLOCK, ), 1, tl.int32))


@triton.jit
def print_2d(X, M: tl.constexpr, K: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    tl.device_print("", x)


@triton.jit
def print_full(M: tl.constexpr, K: tl.constexpr):
    tl.device_print("x ", tl.full([M, K], 1, tl.int32))


@triton.jit
def print_program_id():
    print("", tl.program_id(1))


@triton.jit
def print_message():
    print("no arg")


@triton.jit
def print_pointers(X, BLOCK: tl.constexpr):
    tl.device_print("ptr ", X + tl.arange(0, BLOCK))


def run_printing(capfd, fn, signature, constexprs, grid, *args) -> Counter:
    """The lines kernel `fn` prints on the emulator, counted."""
    sig = {**signature, **{name: "constexpr" for name in constexprs}}
    module = make_ir(ASTSource(fn, sig, constexprs), GPUTarget("cuda", 90, 32), {"num_warps": NUM_WARPS})
    source, _, metadata = generate_cuda(module, 90, {"num_warps": NUM_WARPS})
    kernel = cuda_emulator.Emulator(source, NUM_WARPS, metadata["shared"])
    capfd.readouterr()
    kernel.launch(grid, *args)
    ctypes.CDLL(None).fflush(None)
    return Counter(line for line in capfd.readouterr().out.splitlines() if line)


def random_values(dtype, low, high):
    return np.random.default_rng().integers(low, high, N).astype(dtype)


@needs_gxx
@pytest.mark.parametrize("dtype, text", [
    ("int8", str), ("uint8", str), ("int16", str), ("int64", str), ("uint32", str),
    ("float16", lambda v: f"{float(v):f}"), ("float32", lambda v: f"{float(v):f}"), ("float64", lambda v: f"{v:f}"),
])
def test_tensor_prints_one_line_per_element(capfd, dtype, text):
    info = np.iinfo(dtype) if dtype[0] in "iu" else None
    x = random_values(dtype, info.min, info.max) if info else np.random.default_rng().standard_normal(N).astype(dtype)
    pointer = {"int8": "*i8", "uint8": "*u8", "int16": "*i16", "int64": "*i64", "uint32": "*u32", "float16": "*fp16",
               "float32": "*fp32", "float64": "*fp64"}[dtype]
    lines = run_printing(capfd, print_loaded, {"X": pointer}, {"BLOCK": N, "HEX": False}, (1,), x)
    assert lines == Counter(f"pid (0, 0, 0) idx ({i:3}) x: {text(x[i].item())}" for i in range(N))


@needs_gxx
def test_print_builtin_takes_the_prefix_as_device_print(capfd):
    x = random_values(np.int32, -1000, 1000)
    lines = run_printing(capfd, print_builtin, {"X": "*i32"}, {"BLOCK": N}, (1,), x)
    assert lines == Counter(f"pid (0, 0, 0) idx ({i:3}) x: {x[i]}" for i in range(N))


@needs_gxx
@pytest.mark.parametrize("dtype, pointer, digits",
                         [(np.int16, "*i16", 4), (np.int32, "*i32", 8), (np.int64, "*i64", 16)])
def test_hex_pads_to_the_type(capfd, dtype, pointer, digits):
    x = random_values(dtype, 0, 2**14)
    lines = run_printing(capfd, print_loaded, {"X": pointer}, {"BLOCK": N, "HEX": True}, (1,), x)
    assert lines == Counter(f"pid (0, 0, 0) idx ({i:3}) x: 0x{int(x[i]):0{digits}x}" for i in range(N))


@needs_gxx
def test_scalar_prints_in_every_thread(capfd):
    x = np.array([np.random.default_rng().integers(-50, 50)], dtype=np.int32)
    lines = run_printing(capfd, print_scalar, {"X": "*i32"}, {}, (1,), x)
    assert lines == Counter({f"pid (0, 0, 0) idx () x: {x[0]}": 32 * NUM_WARPS})


@needs_gxx
def test_operands_are_numbered(capfd):
    x = random_values(np.int32, -1000, 1000)
    lines = run_printing(capfd, print_two, {"X": "*i32"}, {"BLOCK": N}, (1,), x)
    expected = Counter(f"pid (0, 0, 0) idx ({i:3}): (operand 0) {x[i]}" for i in range(N))
    expected.update(f"pid (0, 0, 0) idx ({i:3}): (operand 1) 1" for i in range(N))
    assert lines == expected


@needs_gxx
def test_2d_tensors_pad_each_index(capfd):
    x = random_values(np.int32, -1000, 1000)
    lines = run_printing(capfd, print_2d, {"X": "*i32"}, {"M": 4, "K": 32}, (1,), x)
    assert lines == Counter(f"pid (0, 0, 0) idx ({i}, {j:2}): {x[i * 32 + j]}" for i in range(4) for j in range(32))


@needs_gxx
def test_large_tensor_on_a_2d_grid(capfd):
    lines = run_printing(capfd, print_full, {}, {"M": 64, "K": N}, (1, 2))
    assert lines == Counter(f"pid (0, {p}, 0) idx ({i:2}, {j:3}) x: 1" for p in range(2) for i in range(64)
                            for j in range(N))


@needs_gxx
def test_program_id_and_message_print_in_every_thread(capfd):
    lines = run_printing(capfd, print_program_id, {}, {}, (1, 3))
    assert lines == Counter({f"pid (0, {p}, 0) idx (): {p}": 32 * NUM_WARPS for p in range(3)})
    lines = run_printing(capfd, print_message, {}, {}, (2,))
    assert lines == Counter({f"pid ({p}, 0, 0) no arg": 32 * NUM_WARPS for p in range(2)})


@needs_gxx
def test_pointers_print_as_addresses(capfd):
    x = random_values(np.int32, -1000, 1000)
    lines = run_printing(capfd, print_pointers, {"X": "*i32"}, {"BLOCK": N}, (1,), x)
    pattern = re.compile(r"pid \(0, 0, 0\) idx \(([ \d]{3})\) ptr: (0x[0-9a-f]+)")
    seen = {}
    for line in lines.elements():
        match = pattern.fullmatch(line)
        assert match, line
        seen[int(match.group(1))] = int(match.group(2), 16)
    assert seen == {i: x.ctypes.data + 4 * i for i in range(N)}


@triton.jit
def print_narrow(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK)).to(tl.int8)
    tl.device_print("x", x, hex=True)
    tl.device_print("y", x, x.to(tl.uint8) + 1)


@needs_gxx
@pytest.mark.parametrize("kernel, constexprs, grid", [
    (print_narrow, {"BLOCK": N}, (1,)), (print_2d, {"M": 4, "K": 32}, (2, 1, 2)),
    (print_loaded, {"BLOCK": N, "HEX": True}, (1,)),
])
def test_the_interpreter_prints_the_gpus_lines(capfd, monkeypatch, kernel, constexprs, grid):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = random_values(np.int32, -300, 300)
    gpu_lines = run_printing(capfd, kernel, {"X": "*i32"}, constexprs, grid, x)
    kernel[grid](torch.from_numpy(x), **constexprs)
    ctypes.CDLL(None).fflush(None)
    assert Counter(line for line in capfd.readouterr().out.splitlines() if line) == gpu_lines
