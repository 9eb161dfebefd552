"""The self-contained CUDA C++ prelude every generated kernel starts with.

No toolkit header is included: the prelude defines the storage types of the
narrow floats (`tt_f16`, `tt_bf16`, `tt_fp8e4nv`, `tt_fp8e5`: structs holding
the bits, so they cannot be mixed up with integers), their conversions, and the
math the IR's ops mean on the GPU, as the PTX Triton emits (PTX_FACTS 8 and 9,
TRITON_SEMANTICS 3 and 7):

- conversions use the `cvt` instruction where the target has it and an exact
  software conversion where it does not (bf16 below sm_80, fp8 below sm_89):
  round to nearest even, saturate fp8 to its largest finite value, keep NaN;
- narrowing through fp32 from a wider source (fp64, 64-bit integers) first
  rounds to odd, which makes the second rounding exact;
- float -> int is `cvt.rzi` (truncate, saturate, NaN -> 0);
- fp32 `exp` is `ex2.approx` of `x * log2(e)`, `exp2`/`sqrt`/`rsqrt` the
  `.approx.ftz` instructions (`exp2` without `.ftz` when the kernel's
  `enable_reflect_ftz` is off), `/` is `div.full.f32`, `floor`/`ceil` are
  `cvt.rmi/rpi.ftz`; maximum/minimum ignore NaN (`max.f32`) or propagate it
  (`max.NaN.f32`, emulated below sm_80); float `%` is `x - trunc(x / y) * y`
  with one fma and `x` for infinite `y`.

`prelude(target)` returns the text for compute capability `target` (80 = 8.0).
"""

from __future__ import annotations

_COMMON = r"""
// Helpers a kernel does not use are expected: no "declared but never referenced".
#pragma nv_diag_suppress 177
#define TT_DEVICE static __device__ __forceinline__

struct tt_f16 { unsigned short bits; };
struct tt_bf16 { unsigned short bits; };
struct tt_fp8e4nv { unsigned char bits; };
struct tt_fp8e5 { unsigned char bits; };

template <class To, class From>
TT_DEVICE To tt_bitcast(From x) {
  static_assert(sizeof(To) == sizeof(From), "bitcast between types of different sizes");
  To y;
  memcpy(&y, &x, sizeof(To));
  return y;
}

// ---- fp16 -------------------------------------------------------------------
TT_DEVICE float tt_f16_to_f32(tt_f16 x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}
TT_DEVICE tt_f16 tt_f32_to_f16(float x) {
  tt_f16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(x));
  return h;
}
TT_DEVICE tt_f16 tt_f32_to_f16_rz(float x) {
  tt_f16 h;
  asm("cvt.rz.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(x));
  return h;
}
TT_DEVICE tt_f16 tt_f64_to_f16(double x) {
  tt_f16 h;
  asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h.bits) : "d"(x));
  return h;
}
TT_DEVICE tt_f16 tt_f64_to_f16_rz(double x) {
  tt_f16 h;
  asm("cvt.rz.f16.f64 %0, %1;" : "=h"(h.bits) : "d"(x));
  return h;
}
TT_DEVICE tt_f16 tt_fma_f16(tt_f16 a, tt_f16 b, tt_f16 c) {
  tt_f16 r; asm("fma.rn.f16 %0, %1, %2, %3;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits), "h"(c.bits)); return r;
}

// ---- round to odd: an exact intermediate for a second rounding ------------------
TT_DEVICE float tt_f64_to_f32_odd(double d) {
  float f; asm("cvt.rz.f32.f64 %0, %1;" : "=f"(f) : "d"(d));
  if ((double)f != d && d == d) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}
TT_DEVICE float tt_i64_to_f32_odd(long long x) {
  float f; asm("cvt.rz.f32.s64 %0, %1;" : "=f"(f) : "l"(x));
  if ((long long)f != x) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}
TT_DEVICE float tt_u64_to_f32_odd(unsigned long long x) {
  float f; asm("cvt.rz.f32.u64 %0, %1;" : "=f"(f) : "l"(x));
  if ((unsigned long long)f != x) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}

// ---- bf16 ---------------------------------------------------------------------
TT_DEVICE float tt_bf16_to_f32(tt_bf16 x) { return __uint_as_float((unsigned)x.bits << 16); }
"""

_BF16_NATIVE = r"""
TT_DEVICE tt_bf16 tt_f32_to_bf16(float x) {
  tt_bf16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(x));
  return h;
}
TT_DEVICE tt_bf16 tt_f32_to_bf16_rz(float x) {
  tt_bf16 h;
  asm("cvt.rz.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(x));
  return h;
}
TT_DEVICE tt_bf16 tt_fma_bf16(tt_bf16 a, tt_bf16 b, tt_bf16 c) {
  tt_bf16 r; asm("fma.rn.bf16 %0, %1, %2, %3;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits), "h"(c.bits)); return r;
}
"""

# Bit-exact with cvt.rn.bf16.f32 (PTX_FACTS 8): NaN -> 0x7fff, ties to even.
_BF16_SOFTWARE = r"""
TT_DEVICE tt_bf16 tt_f32_to_bf16(float x) {
  unsigned u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return tt_bf16{0x7fff};
  unsigned hi = u >> 16, rem = u & 0xffffu;
  if (rem > 0x8000u || (rem == 0x8000u && (hi & 1u))) hi += 1;
  return tt_bf16{(unsigned short)hi};
}
TT_DEVICE tt_bf16 tt_f32_to_bf16_rz(float x) {
  unsigned u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return tt_bf16{0x7fff};
  return tt_bf16{(unsigned short)(u >> 16)};
}
TT_DEVICE tt_bf16 tt_fma_bf16(tt_bf16 a, tt_bf16 b, tt_bf16 c) {
  return tt_f32_to_bf16(fmaf(tt_bf16_to_f32(a), tt_bf16_to_f32(b), tt_bf16_to_f32(c)));
}
"""

_FP8_NATIVE = r"""
TT_DEVICE tt_fp8e4nv tt_f32_to_fp8e4nv(float x) {
  unsigned short r; asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  return tt_fp8e4nv{(unsigned char)(r & 0xff)};
}
TT_DEVICE tt_fp8e5 tt_f32_to_fp8e5(float x) {
  unsigned short r; asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  return tt_fp8e5{(unsigned char)(r & 0xff)};
}
// two at a time into out[0], out[1], one instruction for both (the low byte is the first)
TT_DEVICE void tt_f32x2_to_fp8e4nv(float x, float y, tt_fp8e4nv* out) {
  unsigned short r; asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(y), "f"(x));
  memcpy(out, &r, 2);
}
TT_DEVICE void tt_f32x2_to_fp8e5(float x, float y, tt_fp8e5* out) {
  unsigned short r; asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(y), "f"(x));
  memcpy(out, &r, 2);
}
TT_DEVICE float tt_fp8e4nv_to_f32(tt_fp8e4nv x) {
  unsigned w; asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(w) : "h"((unsigned short)x.bits));
  return tt_f16_to_f32(tt_f16{(unsigned short)(w & 0xffffu)});
}
TT_DEVICE float tt_fp8e5_to_f32(tt_fp8e5 x) {
  unsigned w; asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(w) : "h"((unsigned short)x.bits));
  return tt_f16_to_f32(tt_f16{(unsigned short)(w & 0xffffu)});
}
"""

# Bit-exact with the sm_89 instructions (PTX_FACTS 8.1): RNE with subnormals,
# saturation to the largest finite value (infinities included), NaN -> 0x7f;
# NaN codes widen to the f16 NaN 0x7fff.
_FP8_SOFTWARE = r"""
TT_DEVICE tt_fp8e4nv tt_f32_to_fp8e4nv(float x) {
  unsigned u = __float_as_uint(x), s = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return tt_fp8e4nv{0x7f};
  if (a >= 0x43e00000u) return tt_fp8e4nv{(unsigned char)(s | 0x7eu)};
  if (a < 0x3c800000u) return tt_fp8e4nv{(unsigned char)(s | (unsigned)rintf(__uint_as_float(a) * 512.0f))};
  a += 0x7ffffu + ((a >> 20) & 1u);
  unsigned code = (a >> 20) - (120u << 3);
  return tt_fp8e4nv{(unsigned char)(s | (code < 0x7eu ? code : 0x7eu))};
}
TT_DEVICE tt_fp8e5 tt_f32_to_fp8e5(float x) {
  unsigned u = __float_as_uint(x), s = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return tt_fp8e5{0x7f};
  if (a >= 0x47600000u) return tt_fp8e5{(unsigned char)(s | 0x7bu)};
  if (a < 0x38800000u) return tt_fp8e5{(unsigned char)(s | (unsigned)rintf(__uint_as_float(a) * 65536.0f))};
  a += 0xfffffu + ((a >> 21) & 1u);
  unsigned code = (a >> 21) - (112u << 2);
  return tt_fp8e5{(unsigned char)(s | (code < 0x7bu ? code : 0x7bu))};
}
TT_DEVICE void tt_f32x2_to_fp8e4nv(float x, float y, tt_fp8e4nv* out) {
  out[0] = tt_f32_to_fp8e4nv(x); out[1] = tt_f32_to_fp8e4nv(y);
}
TT_DEVICE void tt_f32x2_to_fp8e5(float x, float y, tt_fp8e5* out) {
  out[0] = tt_f32_to_fp8e5(x); out[1] = tt_f32_to_fp8e5(y);
}
TT_DEVICE float tt_fp8e4nv_to_f32(tt_fp8e4nv x) {
  unsigned b = x.bits, s = (b & 0x80u) << 24, e = (b >> 3) & 0xfu, m = b & 7u;
  if ((b & 0x7fu) == 0x7fu) return __uint_as_float(0x7fffe000u);
  if (e == 0) { float v = (float)m * 0.001953125f; return s ? -v : v; }
  return __uint_as_float(s | ((e + 120u) << 23) | (m << 20));
}
TT_DEVICE float tt_fp8e5_to_f32(tt_fp8e5 x) {
  if ((x.bits & 0x7fu) > 0x7cu) return __uint_as_float(0x7fffe000u);
  return tt_f16_to_f32(tt_f16{(unsigned short)(x.bits << 8)});
}
"""

_FP8_COMMON = r"""
// Rounding toward zero: e5m2 is the high byte of an fp16 rounded toward zero
// (what Triton does); e4m3 truncates and saturates like the RNE conversion.
TT_DEVICE tt_fp8e5 tt_f32_to_fp8e5_rz(float x) {
  return tt_fp8e5{(unsigned char)(tt_f32_to_f16_rz(x).bits >> 8)};
}
TT_DEVICE tt_fp8e4nv tt_f32_to_fp8e4nv_rz(float x) {
  unsigned u = __float_as_uint(x), s = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return tt_fp8e4nv{0x7f};
  if (a >= 0x43e00000u) return tt_fp8e4nv{(unsigned char)(s | 0x7eu)};
  if (a < 0x3c800000u) return tt_fp8e4nv{(unsigned char)(s | (unsigned)truncf(__uint_as_float(a) * 512.0f))};
  unsigned code = (a >> 20) - (120u << 3);
  return tt_fp8e4nv{(unsigned char)(s | (code < 0x7eu ? code : 0x7eu))};
}
"""

# Triton's fp8e4b15 (e4m3 with exponent bias 15, every code a number) in
# software on every target, as the interpreter's reference (interpreter/floats.py):
# widening is exact (0x7f is 1.875); narrowing rounds to nearest even (or toward
# zero) with subnormals, and a result above 1.875, an infinity or a NaN becomes
# +-1.75 with the input's sign.
_FP8_E4B15 = r"""
struct tt_fp8e4b15 { unsigned char bits; };
TT_DEVICE float tt_fp8e4b15_to_f32(tt_fp8e4b15 x) {
  unsigned b = x.bits, s = (b & 0x80u) << 24, e = (b >> 3) & 0xfu, m = b & 7u;
  if (e == 0) { float v = (float)m * 7.62939453125e-06f; return s ? -v : v; }  // m * 2^-17
  return __uint_as_float(s | ((e + 112u) << 23) | (m << 20));
}
TT_DEVICE tt_fp8e4b15 tt_fp8e4b15_from_magnitude(unsigned s, unsigned code) {
  return tt_fp8e4b15{(unsigned char)(s | (code > 0x7fu ? 0x7eu : code))};
}
TT_DEVICE tt_fp8e4b15 tt_f32_to_fp8e4b15(float x) {
  unsigned u = __float_as_uint(x), s = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return tt_fp8e4b15{(unsigned char)(s | 0x7eu)};
  if (a < 0x38800000u) return tt_fp8e4b15_from_magnitude(s, (unsigned)rintf(__uint_as_float(a) * 131072.0f));
  a += 0x7ffffu + ((a >> 20) & 1u);
  return tt_fp8e4b15_from_magnitude(s, (a >> 20) - (112u << 3));
}
TT_DEVICE tt_fp8e4b15 tt_f32_to_fp8e4b15_rz(float x) {
  unsigned u = __float_as_uint(x), s = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return tt_fp8e4b15{(unsigned char)(s | 0x7eu)};
  if (a < 0x38800000u) return tt_fp8e4b15_from_magnitude(s, (unsigned)truncf(__uint_as_float(a) * 131072.0f));
  return tt_fp8e4b15_from_magnitude(s, (a >> 20) - (112u << 3));
}
"""

_INT_CONVERSIONS = r"""
// ---- float -> int: truncate toward zero, saturate, NaN -> 0 (cvt.rzi) ---------------
#define TT_CVT_RZI(NAME, DST, SRC, INSN, DC, SC) \
  TT_DEVICE DST NAME(SRC x) { DST r; asm("cvt.rzi." INSN " %0, %1;" : "=" DC(r) : SC(x)); return r; }
TT_CVT_RZI(tt_f32_to_s16, short, float, "s16.f32", "h", "f")
TT_CVT_RZI(tt_f32_to_u16, unsigned short, float, "u16.f32", "h", "f")
TT_CVT_RZI(tt_f32_to_s32, int, float, "s32.f32", "r", "f")
TT_CVT_RZI(tt_f32_to_u32, unsigned, float, "u32.f32", "r", "f")
TT_CVT_RZI(tt_f32_to_s64, long long, float, "s64.f32", "l", "f")
TT_CVT_RZI(tt_f32_to_u64, unsigned long long, float, "u64.f32", "l", "f")
TT_CVT_RZI(tt_f64_to_s16, short, double, "s16.f64", "h", "d")
TT_CVT_RZI(tt_f64_to_u16, unsigned short, double, "u16.f64", "h", "d")
TT_CVT_RZI(tt_f64_to_s32, int, double, "s32.f64", "r", "d")
TT_CVT_RZI(tt_f64_to_u32, unsigned, double, "u32.f64", "r", "d")
TT_CVT_RZI(tt_f64_to_s64, long long, double, "s64.f64", "l", "d")
TT_CVT_RZI(tt_f64_to_u64, unsigned long long, double, "u64.f64", "l", "d")
#undef TT_CVT_RZI

// ---- int -> fp16: one rounding straight from the integer --------------------------
TT_DEVICE tt_f16 tt_s32_to_f16(int x) {
  tt_f16 h;
  asm("cvt.rn.f16.s32 %0, %1;" : "=h"(h.bits) : "r"(x));
  return h;
}
TT_DEVICE tt_f16 tt_u32_to_f16(unsigned x) {
  tt_f16 h;
  asm("cvt.rn.f16.u32 %0, %1;" : "=h"(h.bits) : "r"(x));
  return h;
}
TT_DEVICE tt_f16 tt_s64_to_f16(long long x) {
  tt_f16 h;
  asm("cvt.rn.f16.s64 %0, %1;" : "=h"(h.bits) : "l"(x));
  return h;
}
TT_DEVICE tt_f16 tt_u64_to_f16(unsigned long long x) {
  tt_f16 h; asm("cvt.rn.f16.u64 %0, %1;" : "=h"(h.bits) : "l"(x)); return h;
}
"""

_MATH = r"""
// ---- fp32 math as Triton emits it ------------------------------------------------
TT_DEVICE float tt_exp_f32(float x) {
  float y = x * 1.4426950408889634f, r; asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(y)); return r;
}
TT_DEVICE float tt_exp2_f32(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
// exp2 of a kernel compiled with enable_reflect_ftz=False (libdevice's non-FTZ flavour)
TT_DEVICE float tt_exp2_noftz_f32(float x) {
  float r;
  asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
TT_DEVICE float tt_sqrt_f32(float x) {
  float r;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
TT_DEVICE float tt_sqrt_rn_f32(float x) { float r; asm("sqrt.rn.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
TT_DEVICE float tt_rsqrt_f32(float x) {
  float r;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
TT_DEVICE float tt_floor_f32(float x) {
  float r;
  asm("cvt.rmi.ftz.f32.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
TT_DEVICE float tt_ceil_f32(float x) {
  float r;
  asm("cvt.rpi.ftz.f32.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
TT_DEVICE float tt_div_full_f32(float a, float b) {
  float r; asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
}
TT_DEVICE float tt_div_rn_f32(float a, float b) {
  float r;
  asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
TT_DEVICE double tt_sqrt_f64(double x) { double r; asm("sqrt.rn.f64 %0, %1;" : "=d"(r) : "d"(x)); return r; }
TT_DEVICE double tt_div_rn_f64(double a, double b) {
  double r; asm("div.rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b)); return r;
}
// x - trunc(x / y) * y with one fma; x itself when y is infinite.
TT_DEVICE float tt_mod_f32(float a, float b) {
  if (isinf(b)) return a;
  return fmaf(-truncf(tt_div_rn_f32(a, b)), b, a);
}
TT_DEVICE double tt_mod_f64(double a, double b) {
  if (isinf(b)) return a;
  return fma(-trunc(tt_div_rn_f64(a, b)), b, a);
}
TT_DEVICE double tt_max_nan_f64(double a, double b) {
  return (a != a || b != b) ? __longlong_as_double(0x7ff8000000000000ll) : fmax(a, b);
}
TT_DEVICE double tt_min_nan_f64(double a, double b) {
  return (a != a || b != b) ? __longlong_as_double(0x7ff8000000000000ll) : fmin(a, b);
}
TT_DEVICE unsigned tt_umulhi32(unsigned a, unsigned b) {
  unsigned r;
  asm("mul.hi.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
TT_DEVICE unsigned long long tt_umulhi64(unsigned long long a, unsigned long long b) {
  unsigned long long r; asm("mul.hi.u64 %0, %1, %2;" : "=l"(r) : "l"(a), "l"(b)); return r;
}

// ---- warp shuffles of any value up to 8 bytes --------------------------------------
template <class T>
TT_DEVICE T tt_shfl_xor(T v, int mask) {
  static_assert(sizeof(T) <= 8, "shuffled values are at most 8 bytes");
  unsigned w[2] = {0u, 0u};
  memcpy(w, &v, sizeof(T));
  w[0] = __shfl_xor_sync(0xffffffffu, w[0], mask);
  if (sizeof(T) > 4) w[1] = __shfl_xor_sync(0xffffffffu, w[1], mask);
  memcpy(&v, w, sizeof(T));
  return v;
}
template <class T>
TT_DEVICE T tt_shfl_idx(T v, int lane) {
  static_assert(sizeof(T) <= 8, "shuffled values are at most 8 bytes");
  unsigned w[2] = {0u, 0u};
  memcpy(w, &v, sizeof(T));
  w[0] = __shfl_sync(0xffffffffu, w[0], lane);
  if (sizeof(T) > 4) w[1] = __shfl_sync(0xffffffffu, w[1], lane);
  memcpy(&v, w, sizeof(T));
  return v;
}
"""

_MAX_NAN_NATIVE = r"""
TT_DEVICE float tt_max_nan_f32(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
TT_DEVICE float tt_min_nan_f32(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
"""

_MAX_NAN_SOFTWARE = r"""
TT_DEVICE float tt_max_nan_f32(float a, float b) {
  return (a != a || b != b) ? __uint_as_float(0x7fffffffu) : fmaxf(a, b);
}
TT_DEVICE float tt_min_nan_f32(float a, float b) {
  return (a != a || b != b) ? __uint_as_float(0x7fffffffu) : fminf(a, b);
}
"""


def prelude(target: int) -> str:
    """The prelude text for compute capability `target` (61, 75, 80, 86, 89, 90, 120, ...)."""
    parts = [f"// tritone prelude (sm_{target})", _COMMON]
    parts.append(_BF16_NATIVE if target >= 80 else _BF16_SOFTWARE)
    parts.append(_FP8_NATIVE if target >= 89 else _FP8_SOFTWARE)
    parts.append(_FP8_COMMON)
    parts.append(_FP8_E4B15)
    parts.append(_INT_CONVERSIONS)
    parts.append(_MATH)
    parts.append(_MAX_NAN_NATIVE if target >= 80 else _MAX_NAN_SOFTWARE)
    return "\n".join(p.strip("\n") + "\n" for p in parts)
