"""The prelude's software conversions (bf16 below sm_80, fp8 below sm_89) are
plain C++: compiled for the host with a few stand-ins for CUDA intrinsics, they
must give the hardware instructions' bits (PTX_FACTS 8) for every input tried:
torch's round-to-nearest-even where the formats agree, the fact sheet's
saturation and NaN rules where they do not. Skipped without a host C++ compiler."""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest
import torch

from tritone.backends.cuda import prelude

COMPILER = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")

_SHIM = r"""
#include <cmath>
#include <cstring>
#define __device__
#define __forceinline__ inline
#define TT_DEVICE static inline
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
struct tt_f16 { unsigned short bits; };
struct tt_bf16 { unsigned short bits; };
struct tt_fp8e4nv { unsigned char bits; };
struct tt_fp8e5 { unsigned char bits; };
// fp16 -> fp32, exact (stands in for cvt.f32.f16)
static inline float tt_f16_to_f32(tt_f16 h) {
  unsigned s = (h.bits & 0x8000u) << 16, e = (h.bits >> 10) & 0x1fu, m = h.bits & 0x3ffu;
  if (e == 0x1f) return __uint_as_float(s | 0x7f800000u | (m << 13));
  if (e == 0) { float v = std::ldexp((float)m, -24); return s ? -v : v; }
  return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));
}
"""

_EXPORTS = r"""
extern "C" void convert(const float* x, int n, unsigned short* bf, unsigned short* bfz, unsigned char* e4,
                        unsigned char* e5, unsigned char* e4z) {
  for (int i = 0; i < n; ++i) {
    bf[i] = tt_f32_to_bf16(x[i]).bits;
    bfz[i] = tt_f32_to_bf16_rz(x[i]).bits;
    e4[i] = tt_f32_to_fp8e4nv(x[i]).bits;
    e5[i] = tt_f32_to_fp8e5(x[i]).bits;
    e4z[i] = tt_f32_to_fp8e4nv_rz(x[i]).bits;
  }
}
extern "C" void widen(float* e4, float* e5) {
  for (int c = 0; c < 256; ++c) {
    e4[c] = tt_fp8e4nv_to_f32(tt_fp8e4nv{(unsigned char)c});
    e5[c] = tt_fp8e5_to_f32(tt_fp8e5{(unsigned char)c});
  }
}
"""


@pytest.fixture(scope="module")
def host_library(tmp_path_factory):
    if COMPILER is None:
        pytest.skip("no host C++ compiler")
    fp8_rz_e4 = prelude._FP8_COMMON[prelude._FP8_COMMON.index("TT_DEVICE tt_fp8e4nv tt_f32_to_fp8e4nv_rz"):]
    source = _SHIM + prelude._BF16_SOFTWARE.split("TT_DEVICE tt_bf16 tt_fma_bf16")[0] + prelude._FP8_SOFTWARE
    source += fp8_rz_e4 + _EXPORTS
    folder = tmp_path_factory.mktemp("prelude")
    (folder / "conv.cpp").write_text(source)
    library = folder / "libconv.so"
    subprocess.run([COMPILER, "-O1", "-shared", "-fPIC", "-o", str(library), str(folder / "conv.cpp")], check=True,
                   capture_output=True)
    return ctypes.CDLL(str(library))


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(20250101)
    bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    special = np.array([0.0, -0.0, 448.0, 464.0, 465.0, 480.0, 500.0, 57344.0, 61440.0, 61439.0, 65504.0, 1e6, 3.4e38,
                        2.0 ** -6, 2.0 ** -9, 1.5 * 2.0 ** -9, 2.0 ** -10, -(2.0 ** -10), 2.0 ** -14, 2.0 ** -16,
                        2.0 ** -17, -1.5 * 2.0 ** -16, 1.9999, 1.005859375, 65520.0, -1e-40, np.inf, -np.inf, np.nan,
                        -np.nan], dtype=np.float32)
    small = (rng.standard_normal(100_000) * rng.choice([1e-4, 1e-2, 1.0, 1e2, 3e4], 100_000)).astype(np.float32)
    return np.concatenate([bits.view(np.float32), special, small, -small])


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.view(torch.uint8 if t.element_size() == 1 else torch.int16).numpy().astype(np.int64) & (
        0xFF if t.element_size() == 1 else 0xFFFF)


def test_software_conversions_match_the_hardware_rules(host_library):
    x = _inputs()
    n = x.size
    out = {name: np.zeros(n, dtype) for name, dtype in
           (("bf", np.uint16), ("bfz", np.uint16), ("e4", np.uint8), ("e5", np.uint8), ("e4z", np.uint8))}
    pointer = np.ctypeslib.ndpointer
    host_library.convert.argtypes = [pointer(np.float32), ctypes.c_int, pointer(np.uint16), pointer(np.uint16),
                                     pointer(np.uint8), pointer(np.uint8), pointer(np.uint8)]
    host_library.convert(x, n, out["bf"], out["bfz"], out["e4"], out["e5"], out["e4z"])
    nan = np.isnan(x)
    xt = torch.from_numpy(x)
    magnitude = np.abs(x)
    sign8 = np.where(np.signbit(x), 0x80, 0)

    # bf16: torch rounds to nearest even; NaN -> 0x7fff (PTX_FACTS 8)
    assert (out["bf"][~nan] == _bits(xt.to(torch.bfloat16))[~nan]).all()
    assert (out["bf"][nan] == 0x7FFF).all()
    # bf16 toward zero: the high half of the bits
    assert (out["bfz"][~nan] == (x[~nan].view(np.uint32) >> 16)).all()

    # e4m3: torch saturates like the hardware; NaN -> 0x7f whatever its sign
    assert (out["e4"][~nan] == _bits(xt.to(torch.float8_e4m3fn))[~nan]).all()
    assert (out["e4"][nan] == 0x7F).all()

    # e5m2: torch rounds to nearest even but overflows to inf; the hardware saturates
    torch_e5 = _bits(xt.to(torch.float8_e5m2))
    finite = ~nan & ((torch_e5 & 0x7F) <= 0x7B)
    assert (out["e5"][finite] == torch_e5[finite]).all()
    saturated = ~nan & ~finite
    assert (out["e5"][saturated] == (sign8[saturated] | 0x7B)).all()
    assert (out["e5"][nan] == 0x7F).all()

    # e4m3 toward zero: the largest code whose magnitude is <= |x|, saturating at 448
    codes = np.arange(0x7F)
    values = _widen(host_library)[0][:0x7F]
    expected = np.searchsorted(values, np.minimum(magnitude, 448.0), side="right") - 1
    assert (out["e4z"][~nan] == (sign8[~nan] | codes[expected[~nan]])).all()


def _widen(host_library):
    e4 = np.zeros(256, np.float32)
    e5 = np.zeros(256, np.float32)
    host_library.widen.argtypes = [np.ctypeslib.ndpointer(np.float32)] * 2
    host_library.widen(e4, e5)
    return e4, e5


def test_software_fp8_widening_is_exact(host_library):
    e4, e5 = _widen(host_library)
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    ref4 = codes.view(torch.float8_e4m3fn).to(torch.float32).numpy()
    ref5 = codes.view(torch.float8_e5m2).to(torch.float32).numpy()
    for mine, ref in ((e4, ref4), (e5, ref5)):
        nan = np.isnan(ref)
        assert (mine[~nan].view(np.uint32) == ref[~nan].view(np.uint32)).all()  # exact, signed zeros included
        assert (mine[nan].view(np.uint32) == 0x7FFFE000).all()  # the f16 NaN 0x7fff, widened
