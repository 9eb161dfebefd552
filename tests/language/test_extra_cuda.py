"""`tl.extra.cuda` beyond libdevice (hardware registers, launch constants, PDL controls,
the fp8e4b15 converters), `tl.target_info` and `tl.slice`."""

from __future__ import annotations

import time

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource
from tritone.ir.ops import is_pure, is_removable_when_unused
from tritone.ir.target import INTERPRETER_TARGET
from tritone.language.extra import cuda

from ._helpers import Kernel


@triton.jit
def registers_kernel(T):
    cuda.gdc_wait()
    start = cuda.globaltimer()
    tl.store(T, start)
    tl.store(T + 1, cuda.smid().to(tl.int64))
    tl.store(T + 2, cuda.num_warps())
    tl.store(T + 3, cuda.num_threads())
    tl.store(T + 4, cuda.globaltimer() - start)
    cuda.gdc_launch_dependents()


@pytest.mark.parametrize("num_warps", [1, 8])
def test_registers_in_the_interpreter(num_warps):
    out = np.zeros(5, np.int64)
    before = time.time_ns()
    registers_kernel[(1,)](out, num_warps=num_warps)
    assert before <= out[0] <= time.time_ns() and out[4] >= 0
    assert out[1:4].tolist() == [0, num_warps, 32 * num_warps]


def test_special_ops_and_their_effects():
    k = Kernel()
    timer = k.sem.special("globaltimer")
    smid = k.sem.special("smid")
    assert k.sem.special("gdc_wait") is None and timer.type == tl.int64 and smid.type == tl.int32
    timer_op, smid_op, wait_op = k.ops("special")
    assert [op.attrs["name"] for op in (timer_op, smid_op, wait_op)] == ["globaltimer", "smid", "gdc_wait"]
    # a clock is never merged but may go when unused; the SM id is a value; the wait stays
    assert not is_pure(timer_op) and is_removable_when_unused(timer_op)
    assert is_pure(smid_op) and not is_removable_when_unused(wait_op)
    k.verify()


def _ptx(kernel, arch: int, signature: dict, constexprs: dict | None = None) -> str:
    compiled = triton.compile(ASTSource(kernel, signature, constexprs), target=GPUTarget("cuda", arch, 32))
    return compiled.asm["ptx"]


def test_the_cuda_backend_reads_the_registers(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    hopper = _ptx(registers_kernel, 90, {"T": "*i64"})
    assert "%globaltimer" in hopper and "%smid" in hopper
    assert "griddepcontrol.wait" in hopper and "griddepcontrol.launch_dependents" in hopper
    ampere = _ptx(registers_kernel, 80, {"T": "*i64"})
    assert "%globaltimer" in ampere and "griddepcontrol" not in ampere  # no PDL before sm_90


# -- fp8e4b15 (references from the bit operations of Triton's PTX for these converters) ------------

def _fp8e4b15_to_fp16_bits(code: np.ndarray) -> np.ndarray:
    code = code.astype(np.uint32)
    return (((code & 0x80) << 8) | ((code & 0x7F) << 7)).astype(np.uint16)


def _fp16_bits_to_fp8e4b15(bits: np.ndarray) -> np.ndarray:
    bits = bits.astype(np.uint32)
    magnitude = np.minimum(bits & 0x7FFF, 0x3F00)
    return ((((magnitude * 2 + 0x80) >> 8) | ((bits >> 8) & 0x80)) & 0xFF).astype(np.uint8)


@triton.jit
def upcast_kernel(CODES, OUT16, OUT32, N: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(CODES + offsets).to(tl.float8e4b15, bitcast=True)
    tl.store(OUT16 + offsets, cuda.convert_custom_float8_sm80(x, tl.float16))
    tl.store(OUT32 + offsets, cuda.convert_custom_float8_sm70(x, tl.float32))


@triton.jit
def downcast_kernel(X, OUT, N: tl.constexpr, SM80: tl.constexpr):
    offsets = tl.arange(0, N)
    x = tl.load(X + offsets)
    if SM80:
        y = cuda.convert_custom_float8_sm80(x, tl.float8e4b15)
    else:
        y = cuda.convert_custom_float8_sm70(x, tl.float8e4b15, fp_downcast_rounding="rtne")
    tl.store(OUT + offsets, y.to(tl.uint8, bitcast=True))


def test_fp8e4b15_codes_become_fp16_exactly():
    codes = np.arange(256, dtype=np.uint8)
    out16, out32 = np.zeros(256, np.float16), np.zeros(256, np.float32)
    upcast_kernel[(1,)](codes, out16, out32, 256)
    expected = _fp8e4b15_to_fp16_bits(codes)
    assert np.array_equal(out16.view(np.uint16), expected)
    assert np.array_equal(out32, expected.view(np.float16).astype(np.float32))
    # the format: bias 15, 3 mantissa bits, subnormals below 2**-14
    assert out32[0x78] == 1.0 and out32[0x01] == 2.0**-17 and out32[0xF8] == -1.0 and out32[0x7E] == 1.75


@pytest.mark.parametrize("sm80", [True, False])
def test_every_fp16_becomes_the_fp8e4b15_of_the_ptx(sm80):
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    out = np.zeros(65536, np.uint8)
    downcast_kernel[(1,)](bits.view(np.float16), out, 65536, sm80)
    assert np.array_equal(out, _fp16_bits_to_fp8e4b15(bits))
    values = bits.view(np.float16)
    assert out[values == np.float16(1.0)].tolist() == [0x78] and set(out[np.isnan(values)]) == {0x7E, 0xFE}


def test_fp32_is_truncated_to_fp16_first():
    x = np.random.default_rng().standard_normal(1024).astype(np.float32)
    out = np.zeros(1024, np.uint8)
    downcast_kernel[(1,)](x, out, 1024, True)
    toward_zero = x.view(np.uint32) & 0xFFFFE000  # fp16 keeps 10 mantissa bits; these are normal
    normal = np.abs(x) >= 2.0**-14
    truncated = toward_zero.view(np.float32).astype(np.float16).view(np.uint16)
    assert np.array_equal(out[normal], _fp16_bits_to_fp8e4b15(truncated)[normal])


# -- tl.target_info ----------------------------------------------------------------------------

@triton.jit
def target_kernel(OUT):
    flags: tl.constexpr = (tl.target_info.is_cuda() + tl.target_info.cuda_capability_geq(9, 0) * 2
                           + tl.target_info.cuda_capability_geq(8, minor=6) * 4 + tl.target_info.is_hip() * 8)
    tl.store(OUT, flags)


@pytest.mark.parametrize("target, expected", [
    (INTERPRETER_TARGET, 0), (GPUTarget("cuda", 90, 32), 1 + 2 + 4), (GPUTarget("cuda", 80, 32), 1),
    (GPUTarget("cuda", 86, 32), 1 + 4)])
def test_target_info_answers_for_the_compilation_target(target, expected):
    from tritone.compiler.compiler import make_ir

    module = make_ir(ASTSource(target_kernel, {"OUT": "*i32"}), target)
    (store,) = [op for op in module.walk() if op.name == "store"]
    assert store.operands[1].defining_op.attrs["value"] == expected


def test_target_info_on_the_host_follows_the_driver():
    from tritone.runtime.driver import driver

    assert tl.target_info.current_target() == driver.active.get_current_target()
    assert tl.target_info.is_cuda() == (driver.active.get_current_target().backend == "cuda")
    assert tl.target_info.is_hip() is False


def test_target_info_in_a_running_kernel():
    out = np.full(1, -1, np.int32)
    target_kernel[(1,)](out)
    assert out.tolist() == [0]


# -- tl.slice ---------------------------------------------------------------------------------

@triton.jit
def slice_kernel(X, OUT, N: tl.constexpr):
    t = (1, 2, 3, 4, 5)
    middle = t[1:4]
    every_other = t[::2]
    x = tl.load(X + tl.arange(0, N))
    row = x[None, :]
    tl.store(OUT + tl.arange(0, N)[None, :], row + middle[0] + len(middle) * 10 + every_other[2] * 100)


def test_slices_in_kernels():
    x = np.arange(8, dtype=np.int32)
    out = np.zeros(8, np.int32)
    slice_kernel[(1,)](x, out, 8)
    assert out.tolist() == (x + 2 + 30 + 500).tolist()
    s = tl.slice(1, None, 2)
    assert (s.start, s.stop, s.step) == (1, None, 2) and s.to_python() == slice(1, None, 2)
    upstream = pytest.importorskip("triton.language")
    theirs = upstream.slice(1, None, 2)
    assert (theirs.start, theirs.stop, theirs.step) == (s.start, s.stop, s.step)
