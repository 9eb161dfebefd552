"""fp8e4b15 on the CUDA backend: the prelude's software conversions give, bit for
bit, what the interpreter's reference gives (interpreter/floats.py, which follows
upstream Triton on the GPU); whole conversion kernels run in the CPU emulator agree
with the interpreter over every byte; AMD's fp8e4b8 and fp8e5b16 are refused at
compile time as upstream refuses them on NVIDIA GPUs."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import cuda_emulator
import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import prelude
from tritone.compiler.compiler import ASTSource
from tritone.interpreter.floats import decode_table, encode_fp8, round_to_dtype
from tritone.ir.target import INTERPRETER_TARGET

COMPILER = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")

_SHIM = r"""
#include <cmath>
#include <cstring>
#define TT_DEVICE static inline
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
"""

_EXPORTS = r"""
extern "C" void narrow(const float* x, int n, unsigned char* rn, unsigned char* rz) {
  for (int i = 0; i < n; ++i) {
    rn[i] = tt_f32_to_fp8e4b15(x[i]).bits;
    rz[i] = tt_f32_to_fp8e4b15_rz(x[i]).bits;
  }
}
extern "C" void widen(float* out) {
  for (int c = 0; c < 256; ++c) out[c] = tt_fp8e4b15_to_f32(tt_fp8e4b15{(unsigned char)c});
}
"""


@pytest.fixture(scope="module")
def host_library(tmp_path_factory):
    if COMPILER is None:
        pytest.skip("no host C++ compiler")
    folder = tmp_path_factory.mktemp("fp8e4b15")
    (folder / "conv.cpp").write_text(_SHIM + prelude._FP8_E4B15 + _EXPORTS)
    library = folder / "libconv.so"
    subprocess.run([COMPILER, "-O1", "-shared", "-fPIC", "-o", str(library), str(folder / "conv.cpp")], check=True,
                   capture_output=True)
    return ctypes.CDLL(str(library))


def _inputs(rng) -> np.ndarray:
    bits = rng.integers(0, 2**32, size=100_000, dtype=np.uint64).astype(np.uint32)
    grid = decode_table("fp8e4b15").astype(np.float64)
    midpoints = (np.sort(np.unique(np.abs(grid)))[:-1] + np.sort(np.unique(np.abs(grid)))[1:]) / 2
    special = np.array([0.0, -0.0, 1.75, 1.8, 1.8125, 1.875, 1.9, 1.9375, 1.94, 2.0, 3.0, 1e30, 2.0**-14, 2.0**-17,
                        2.0**-18, 1.5 * 2.0**-18, 2.0**-19, 1e-40, np.inf, -np.inf, np.nan, -np.nan], np.float64)
    ties = np.concatenate([midpoints, np.nextafter(midpoints, 0), np.nextafter(midpoints, 4)])
    small = rng.standard_normal(50_000) * rng.choice([2.0**-16, 2.0**-10, 2.0**-4, 1.0, 4.0], 50_000)
    values = np.concatenate([special, ties, small]).astype(np.float32)
    return np.concatenate([bits.view(np.float32), values, -values])


def _reference(x: np.ndarray, mode: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # NaN inputs: numpy warns while rounding them
        return encode_fp8(round_to_dtype(x.astype(np.float64), "fp8e4b15", mode), "fp8e4b15")


def test_narrowing_matches_the_interpreter_bit_for_bit(host_library):
    x = _inputs(np.random.default_rng())
    rn, rz = np.zeros(x.size, np.uint8), np.zeros(x.size, np.uint8)
    pointer = np.ctypeslib.ndpointer
    host_library.narrow.argtypes = [pointer(np.float32), ctypes.c_int, pointer(np.uint8), pointer(np.uint8)]
    host_library.narrow(x, x.size, rn, rz)
    for mine, mode in ((rn, "rn"), (rz, "rz")):
        expected = _reference(x, mode)
        wrong = np.flatnonzero(mine != expected)
        assert wrong.size == 0, (mode, x[wrong[:5]], mine[wrong[:5]], expected[wrong[:5]])
    # spot checks of the rules themselves: saturation to 1.75 above 1.875, signed NaN and inf
    assert rn[x == np.float32(1.9375)].tolist()[0] == 0x7E and rz[x == np.float32(1.9375)].tolist()[0] == 0x7F


def test_widening_is_exact_for_every_code(host_library):
    out = np.zeros(256, np.float32)
    host_library.widen.argtypes = [np.ctypeslib.ndpointer(np.float32)]
    host_library.widen(out)
    assert (out.view(np.uint32) == decode_table("fp8e4b15").view(np.uint32)).all()  # signed zeros included
    assert out[0x7F] == 1.875 and out[0x01] == 2.0**-17 and out[0x80] == 0 and np.signbit(out[0x80])


@triton.jit
def convert_kernel(src, dst, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offsets, tl.load(src + offsets).to(dst.dtype.element_ty, fp_downcast_rounding=ROUNDING))


_STORAGE = {"fp8e4b15": np.uint8, "fp16": np.float16, "bf16": np.uint16, "fp32": np.float32}
BLOCK = 256


def _run_both(src_type: str, dst_type: str, source: np.ndarray, rounding: str | None) -> tuple:
    signature = {"src": f"*{src_type}", "dst": f"*{dst_type}"}
    constants = {"ROUNDING": rounding, "BLOCK": BLOCK}
    grid = (source.size // BLOCK, 1, 1)
    results = []
    for target in (GPUTarget("cuda", 90, 32), INTERPRETER_TARGET):
        compiled = triton.compile(ASTSource(convert_kernel, signature, constants), target=target)
        out = np.zeros(source.size, _STORAGE[dst_type])
        if target.backend == "cuda":
            kernel = cuda_emulator.Emulator(compiled.asm["cuda"], compiled.metadata.num_warps,
                                            compiled.metadata.shared)
            kernel.launch(grid[:1], source, out)
        else:
            compiled[grid](source, out, rounding, BLOCK)
        results.append(out)
    return results


needs_gxx = pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")


@needs_gxx
@pytest.mark.parametrize("dst_type", ["fp16", "bf16", "fp32"])
def test_every_byte_widens_as_in_the_interpreter(dst_type, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    codes = np.random.default_rng().permutation(256).astype(np.uint8)
    gpu, interpreted = _run_both("fp8e4b15", dst_type, codes, None)
    assert gpu.tobytes() == interpreted.tobytes()
    widened = gpu.view(np.uint16) if dst_type == "bf16" else gpu
    assert widened.any()


@needs_gxx
@pytest.mark.parametrize("src_type", ["fp32", "fp16"])
@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
def test_narrowing_kernels_agree_with_the_interpreter(src_type, rounding, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng()
    values = rng.standard_normal(4 * BLOCK) * rng.choice([2.0**-15, 2.0**-6, 0.5, 1.0, 4.0], 4 * BLOCK)
    values[:8] = [np.inf, -np.inf, np.nan, 1.875, 1.9375, -2.0, 0.0, -0.0]
    gpu, interpreted = _run_both(src_type, "fp8e4b15", values.astype(_STORAGE[src_type]), rounding)
    assert gpu.tobytes() == interpreted.tobytes()
    assert len(set(gpu.tolist())) > 50


@pytest.mark.parametrize("fp8", ["fp8e4b8", "fp8e5b16"])
def test_amd_fp8_formats_are_refused_for_nvidia_gpus(fp8, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    source = ASTSource(convert_kernel, {"src": "*fp32", "dst": f"*{fp8}"}, {"ROUNDING": "rtne", "BLOCK": BLOCK})
    with pytest.raises(triton.CompilationError, match=rf"type {fp8} not supported in this architecture\. The "
                                                      r"supported fp8 dtypes are \('fp8e4b15', 'fp8e4nv', 'fp8e5'\)"):
        triton.compile(source, target=GPUTarget("cuda", 90, 32))
    triton.compile(source, target=INTERPRETER_TARGET)  # the interpreter holds every fp8 format
