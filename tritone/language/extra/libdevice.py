"""`tl.extra.libdevice`: the functions of NVIDIA's libdevice, as builtins that
create `extern` ops (docs/IR.md) named after the function.

`LIBDEVICE` is the table every part of tritone reads: function name -> the
accepted argument dtypes and the result dtype of each variant. Arguments must
match a variant exactly (no promotion; Python literals are typed as usual:
`pow(x_fp32, 2)` is the (fp32, i32) variant), and are broadcast together.
`LIBDEVICE_SYMBOLS` gives the `__nv_*` function of each variant.
"""

from __future__ import annotations

from ...ir.types import dtype
from ..core import builtin

__all__ = ["LIBDEVICE", "LIBDEVICE_SYMBOLS"]

# One function per line: `name args>result:symbol ...`, args comma-separated.
_TABLE = """
abs i32>i32:__nv_abs i64>i64:__nv_llabs fp32>fp32:__nv_fabsf fp64>fp64:__nv_fabs
acos fp32>fp32:__nv_acosf fp64>fp64:__nv_acos
acosh fp32>fp32:__nv_acoshf fp64>fp64:__nv_acosh
add_rd fp64,fp64>fp64:__nv_dadd_rd fp32,fp32>fp32:__nv_fadd_rd
add_rn fp64,fp64>fp64:__nv_dadd_rn fp32,fp32>fp32:__nv_fadd_rn
add_ru fp64,fp64>fp64:__nv_dadd_ru fp32,fp32>fp32:__nv_fadd_ru
add_rz fp64,fp64>fp64:__nv_dadd_rz fp32,fp32>fp32:__nv_fadd_rz
asin fp32>fp32:__nv_asinf fp64>fp64:__nv_asin
asinh fp32>fp32:__nv_asinhf fp64>fp64:__nv_asinh
atan fp32>fp32:__nv_atanf fp64>fp64:__nv_atan
atan2 fp32,fp32>fp32:__nv_atan2f fp64,fp64>fp64:__nv_atan2
atanh fp32>fp32:__nv_atanhf fp64>fp64:__nv_atanh
brev i32>i32:__nv_brev i64>i64:__nv_brevll
byte_perm i32,i32,i32>i32:__nv_byte_perm
cbrt fp32>fp32:__nv_cbrtf fp64>fp64:__nv_cbrt
ceil fp64>fp64:__nv_ceil fp32>fp32:__nv_ceilf
clz i32>i32:__nv_clz i64>i32:__nv_clzll
copysign fp32,fp32>fp32:__nv_copysignf fp64,fp64>fp64:__nv_copysign
cos fp32>fp32:__nv_cosf fp64>fp64:__nv_cos
cosh fp32>fp32:__nv_coshf fp64>fp64:__nv_cosh
cospi fp32>fp32:__nv_cospif fp64>fp64:__nv_cospi
cyl_bessel_i0 fp32>fp32:__nv_cyl_bessel_i0f fp64>fp64:__nv_cyl_bessel_i0
cyl_bessel_i1 fp32>fp32:__nv_cyl_bessel_i1f fp64>fp64:__nv_cyl_bessel_i1
div_rd fp32,fp32>fp32:__nv_fdiv_rd fp64,fp64>fp64:__nv_ddiv_rd
div_rn fp32,fp32>fp32:__nv_fdiv_rn fp64,fp64>fp64:__nv_ddiv_rn
div_ru fp32,fp32>fp32:__nv_fdiv_ru fp64,fp64>fp64:__nv_ddiv_ru
div_rz fp32,fp32>fp32:__nv_fdiv_rz fp64,fp64>fp64:__nv_ddiv_rz
double2float_rd fp64>fp32:__nv_double2float_rd
double2float_rn fp64>fp32:__nv_double2float_rn
double2float_ru fp64>fp32:__nv_double2float_ru
double2float_rz fp64>fp32:__nv_double2float_rz
double2hiint fp64>i32:__nv_double2hiint
double2int_rd fp64>i32:__nv_double2int_rd
double2int_rn fp64>i32:__nv_double2int_rn
double2int_ru fp64>i32:__nv_double2int_ru
double2int_rz fp64>i32:__nv_double2int_rz
double2ll_rd fp64>i64:__nv_double2ll_rd
double2ll_rn fp64>i64:__nv_double2ll_rn
double2ll_ru fp64>i64:__nv_double2ll_ru
double2ll_rz fp64>i64:__nv_double2ll_rz
double2loint fp64>i32:__nv_double2loint
double2uint_rd fp64>i32:__nv_double2uint_rd
double2uint_rn fp64>i32:__nv_double2uint_rn
double2uint_ru fp64>i32:__nv_double2uint_ru
double2uint_rz fp64>i32:__nv_double2uint_rz
double2ull_rd fp64>i64:__nv_double2ull_rd
double2ull_rn fp64>i64:__nv_double2ull_rn
double2ull_ru fp64>i64:__nv_double2ull_ru
double2ull_rz fp64>i64:__nv_double2ull_rz
double_as_longlong fp64>i64:__nv_double_as_longlong
erf fp32>fp32:__nv_erff fp64>fp64:__nv_erf
erfc fp32>fp32:__nv_erfcf fp64>fp64:__nv_erfc
erfcinv fp32>fp32:__nv_erfcinvf fp64>fp64:__nv_erfcinv
erfcx fp32>fp32:__nv_erfcxf fp64>fp64:__nv_erfcx
erfinv fp32>fp32:__nv_erfinvf fp64>fp64:__nv_erfinv
exp fp32>fp32:__nv_expf fp64>fp64:__nv_exp
exp10 fp32>fp32:__nv_exp10f fp64>fp64:__nv_exp10
exp2 fp32>fp32:__nv_exp2f fp64>fp64:__nv_exp2
expm1 fp32>fp32:__nv_expm1f fp64>fp64:__nv_expm1
fast_cosf fp32>fp32:__nv_fast_cosf
fast_dividef fp32,fp32>fp32:__nv_fast_fdividef
fast_exp10f fp32>fp32:__nv_fast_exp10f
fast_expf fp32>fp32:__nv_fast_expf
fast_log10f fp32>fp32:__nv_fast_log10f
fast_log2f fp32>fp32:__nv_fast_log2f
fast_logf fp32>fp32:__nv_fast_logf
fast_powf fp32,fp32>fp32:__nv_fast_powf
fast_sinf fp32>fp32:__nv_fast_sinf
fast_tanf fp32>fp32:__nv_fast_tanf
fdim fp32,fp32>fp32:__nv_fdimf fp64,fp64>fp64:__nv_fdim
ffs i32>i32:__nv_ffs i64>i32:__nv_ffsll
finitef fp32>i32:__nv_finitef
float2int_rd fp32>i32:__nv_float2int_rd
float2int_rn fp32>i32:__nv_float2int_rn
float2int_ru fp32>i32:__nv_float2int_ru
float2int_rz fp32>i32:__nv_float2int_rz
float2ll_rd fp32>i64:__nv_float2ll_rd
float2ll_rn fp32>i64:__nv_float2ll_rn
float2ll_ru fp32>i64:__nv_float2ll_ru
float2ll_rz fp32>i64:__nv_float2ll_rz
float2uint_rd fp32>i32:__nv_float2uint_rd
float2uint_rn fp32>i32:__nv_float2uint_rn
float2uint_ru fp32>i32:__nv_float2uint_ru
float2uint_rz fp32>i32:__nv_float2uint_rz
float2ull_rd fp32>i64:__nv_float2ull_rd
float2ull_rn fp32>i64:__nv_float2ull_rn
float2ull_ru fp32>i64:__nv_float2ull_ru
float2ull_rz fp32>i64:__nv_float2ull_rz
float_as_int fp32>i32:__nv_float_as_int
float_as_uint fp32>i32:__nv_float_as_uint
floor fp32>fp32:__nv_floorf fp64>fp64:__nv_floor
fma fp32,fp32,fp32>fp32:__nv_fmaf fp64,fp64,fp64>fp64:__nv_fma
fma_rd fp32,fp32,fp32>fp32:__nv_fmaf_rd fp64,fp64,fp64>fp64:__nv_fma_rd
fma_rn fp32,fp32,fp32>fp32:__nv_fmaf_rn fp64,fp64,fp64>fp64:__nv_fma_rn
fma_ru fp32,fp32,fp32>fp32:__nv_fmaf_ru fp64,fp64,fp64>fp64:__nv_fma_ru
fma_rz fp32,fp32,fp32>fp32:__nv_fmaf_rz fp64,fp64,fp64>fp64:__nv_fma_rz
fmod fp32,fp32>fp32:__nv_fmodf fp64,fp64>fp64:__nv_fmod
hadd i32,i32>i32:__nv_hadd u32,u32>u32:__nv_uhadd
hiloint2double i32,i32>fp64:__nv_hiloint2double
hypot fp32,fp32>fp32:__nv_hypotf fp64,fp64>fp64:__nv_hypot
ilogb fp32>i32:__nv_ilogbf fp64>i32:__nv_ilogb
int2double_rn i32>fp64:__nv_int2double_rn
int2float_rd i32>fp32:__nv_int2float_rd
int2float_rn i32>fp32:__nv_int2float_rn
int2float_ru i32>fp32:__nv_int2float_ru
int2float_rz i32>fp32:__nv_int2float_rz
int_as_float i32>fp32:__nv_int_as_float
isfinited fp64>i32:__nv_isfinited
isinf fp32>i32:__nv_isinff fp64>i32:__nv_isinfd
isnan fp32>i32:__nv_isnanf fp64>i32:__nv_isnand
j0 fp32>fp32:__nv_j0f fp64>fp64:__nv_j0
j1 fp32>fp32:__nv_j1f fp64>fp64:__nv_j1
jn i32,fp32>fp32:__nv_jnf i32,fp64>fp64:__nv_jn
ldexp fp32,i32>fp32:__nv_ldexpf fp64,i32>fp64:__nv_ldexp
lgamma fp32>fp32:__nv_lgammaf fp64>fp64:__nv_lgamma
ll2double_rd i64>fp64:__nv_ll2double_rd
ll2double_rn i64>fp64:__nv_ll2double_rn
ll2double_ru i64>fp64:__nv_ll2double_ru
ll2double_rz i64>fp64:__nv_ll2double_rz
ll2float_rd i64>fp32:__nv_ll2float_rd
ll2float_rn i64>fp32:__nv_ll2float_rn
ll2float_ru i64>fp32:__nv_ll2float_ru
ll2float_rz i64>fp32:__nv_ll2float_rz
llrint fp32>i64:__nv_llrintf fp64>i64:__nv_llrint
llround fp32>i64:__nv_llroundf fp64>i64:__nv_llround
log fp32>fp32:__nv_logf fp64>fp64:__nv_log
log10 fp32>fp32:__nv_log10f fp64>fp64:__nv_log10
log1p fp32>fp32:__nv_log1pf fp64>fp64:__nv_log1p
log2 fp32>fp32:__nv_log2f fp64>fp64:__nv_log2
logb fp32>fp32:__nv_logbf fp64>fp64:__nv_logb
longlong_as_double i64>fp64:__nv_longlong_as_double
mul24 i32,i32>i32:__nv_mul24 u32,u32>u32:__nv_umul24
mul_rd fp64,fp64>fp64:__nv_dmul_rd fp32,fp32>fp32:__nv_fmul_rd
mul_rn fp64,fp64>fp64:__nv_dmul_rn fp32,fp32>fp32:__nv_fmul_rn
mul_ru fp64,fp64>fp64:__nv_dmul_ru fp32,fp32>fp32:__nv_fmul_ru
mul_rz fp64,fp64>fp64:__nv_dmul_rz fp32,fp32>fp32:__nv_fmul_rz
mulhi i32,i32>i32:__nv_mulhi u32,u32>u32:__nv_umulhi i64,i64>i64:__nv_mul64hi u64,u64>u64:__nv_umul64hi
nearbyint fp32>fp32:__nv_nearbyintf fp64>fp64:__nv_nearbyint
nextafter fp32,fp32>fp32:__nv_nextafterf fp64,fp64>fp64:__nv_nextafter
norm3d fp32,fp32,fp32>fp32:__nv_norm3df fp64,fp64,fp64>fp64:__nv_norm3d
norm4d fp32,fp32,fp32,fp32>fp32:__nv_norm4df fp64,fp64,fp64,fp64>fp64:__nv_norm4d
normcdf fp32>fp32:__nv_normcdff fp64>fp64:__nv_normcdf
normcdfinv fp32>fp32:__nv_normcdfinvf fp64>fp64:__nv_normcdfinv
popc i32>i32:__nv_popc i64>i32:__nv_popcll
pow fp32,i32>fp32:__nv_powif fp64,i32>fp64:__nv_powi fp32,fp32>fp32:__nv_powf fp64,fp64>fp64:__nv_pow
rcbrt fp32>fp32:__nv_rcbrtf fp64>fp64:__nv_rcbrt
rcp64h fp64>fp64:__nv_rcp64h
rcp_rd fp32>fp32:__nv_frcp_rd fp64>fp64:__nv_drcp_rd
rcp_rn fp32>fp32:__nv_frcp_rn fp64>fp64:__nv_drcp_rn
rcp_ru fp32>fp32:__nv_frcp_ru fp64>fp64:__nv_drcp_ru
rcp_rz fp32>fp32:__nv_frcp_rz fp64>fp64:__nv_drcp_rz
remainder fp32,fp32>fp32:__nv_remainderf fp64,fp64>fp64:__nv_remainder
rhadd i32,i32>i32:__nv_rhadd u32,u32>u32:__nv_urhadd
rhypot fp32,fp32>fp32:__nv_rhypotf fp64,fp64>fp64:__nv_rhypot
rint fp32>fp32:__nv_rintf fp64>fp64:__nv_rint
rnorm3d fp32,fp32,fp32>fp32:__nv_rnorm3df fp64,fp64,fp64>fp64:__nv_rnorm3d
rnorm4d fp32,fp32,fp32,fp32>fp32:__nv_rnorm4df fp64,fp64,fp64,fp64>fp64:__nv_rnorm4d
round fp32>fp32:__nv_roundf fp64>fp64:__nv_round
rsqrt fp32>fp32:__nv_rsqrtf fp64>fp64:__nv_rsqrt
rsqrt_rn fp32>fp32:__nv_frsqrt_rn
sad i32,i32,u32>i32:__nv_sad u32,u32,u32>u32:__nv_usad
saturatef fp32>fp32:__nv_saturatef
scalbn fp32,i32>fp32:__nv_scalbnf fp64,i32>fp64:__nv_scalbn
signbit fp32>i32:__nv_signbitf fp64>i32:__nv_signbitd
sin fp32>fp32:__nv_sinf fp64>fp64:__nv_sin
sinh fp32>fp32:__nv_sinhf fp64>fp64:__nv_sinh
sinpi fp32>fp32:__nv_sinpif fp64>fp64:__nv_sinpi
sqrt fp32>fp32:__nv_sqrtf fp64>fp64:__nv_sqrt
sqrt_rd fp32>fp32:__nv_fsqrt_rd fp64>fp64:__nv_dsqrt_rd
sqrt_rn fp32>fp32:__nv_fsqrt_rn fp64>fp64:__nv_dsqrt_rn
sqrt_ru fp32>fp32:__nv_fsqrt_ru fp64>fp64:__nv_dsqrt_ru
sqrt_rz fp32>fp32:__nv_fsqrt_rz fp64>fp64:__nv_dsqrt_rz
sub_rd fp32,fp32>fp32:__nv_fsub_rd fp64,fp64>fp64:__nv_dsub_rd
sub_rn fp32,fp32>fp32:__nv_fsub_rn fp64,fp64>fp64:__nv_dsub_rn
sub_ru fp32,fp32>fp32:__nv_fsub_ru fp64,fp64>fp64:__nv_dsub_ru
sub_rz fp32,fp32>fp32:__nv_fsub_rz fp64,fp64>fp64:__nv_dsub_rz
tan fp32>fp32:__nv_tanf fp64>fp64:__nv_tan
tanh fp32>fp32:__nv_tanhf fp64>fp64:__nv_tanh
tgamma fp32>fp32:__nv_tgammaf fp64>fp64:__nv_tgamma
trunc fp64>fp64:__nv_trunc fp32>fp32:__nv_truncf
uint2double_rn u32>fp64:__nv_uint2double_rn
uint2float_rd u32>fp32:__nv_uint2float_rd
uint2float_rn u32>fp32:__nv_uint2float_rn
uint2float_ru u32>fp32:__nv_uint2float_ru
uint2float_rz u32>fp32:__nv_uint2float_rz
uint_as_float u32>fp32:__nv_uint_as_float
ull2double_rd u64>fp64:__nv_ull2double_rd
ull2double_rn u64>fp64:__nv_ull2double_rn
ull2double_ru u64>fp64:__nv_ull2double_ru
ull2double_rz u64>fp64:__nv_ull2double_rz
ull2float_rd u64>fp32:__nv_ull2float_rd
ull2float_rn u64>fp32:__nv_ull2float_rn
ull2float_ru u64>fp32:__nv_ull2float_ru
ull2float_rz u64>fp32:__nv_ull2float_rz
y0 fp32>fp32:__nv_y0f fp64>fp64:__nv_y0
y1 fp32>fp32:__nv_y1f fp64>fp64:__nv_y1
yn i32,fp32>fp32:__nv_ynf i32,fp64>fp64:__nv_yn
"""


def _parse_table(text: str) -> tuple[dict, dict]:
    signatures: dict[str, list[tuple[tuple[dtype, ...], dtype]]] = {}
    symbols: dict[tuple[str, tuple[dtype, ...]], str] = {}
    for line in text.strip().splitlines():
        name, *variants = line.split()
        for variant in variants:
            types, symbol = variant.split(":")
            args_text, result_text = types.split(">")
            args = tuple(dtype(t) for t in args_text.split(","))
            signatures.setdefault(name, []).append((args, dtype(result_text)))
            symbols[(name, args)] = symbol
    return signatures, symbols


LIBDEVICE, LIBDEVICE_SYMBOLS = _parse_table(_TABLE)


def _make_function(name: str, signatures: list[tuple[tuple[dtype, ...], dtype]]):
    arity = len(signatures[0][0])
    variants = ", ".join(f"({', '.join(t.name for t in args)}) -> {result.name}" for args, result in signatures)

    def function(*args, _semantic=None):
        if len(args) != arity:
            raise TypeError(f"libdevice.{name} takes {arity} arguments, got {len(args)}")
        return _semantic.extern(name, args, signatures)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"libdevice `{name}`: {variants}."
    return builtin(function)


for _name, _signatures in LIBDEVICE.items():
    globals()[_name] = _make_function(_name, _signatures)
    __all__.append(_name)
del _name, _signatures
