"""Code generation for `cast` and `bitcast` (TRITON_SEMANTICS 3):

- int -> int truncates or extends by the source's signedness; -> i1 is `!= 0`;
- float -> int truncates toward zero and saturates (`cvt.rzi`; i8/u8 through
  the 16-bit conversion, as Triton does); -> i1 is `!= 0.0` (NaN is true);
- int -> float rounds to nearest even, in one rounding from the integer;
- float -> float rounds to nearest even or toward zero (`rounding = "rtz"`),
  fp8 saturating; narrow floats go through fp32 (exact); a wider source that
  must pass through fp32 is first rounded to odd so the result is rounded once.
"""

from __future__ import annotations

from tritone.ir.core import Operation
from tritone.ir.types import dtype, type_text

from .codegen_base import CodegenError, Emitter, emits
from .codegen_elementwise import elementwise
from .codegen_types import NARROW_FLOATS, ctype, narrow, widen

# cvt.rzi destination per integer type (8-bit results come from the 16-bit conversion).
_RZI = {"i8": "s16", "u8": "u16", "i16": "s16", "u16": "u16", "i32": "s32", "u32": "u32", "i64": "s64", "u64": "u64"}


def _float_to_int(x: str, src: dtype, dst: dtype) -> str:
    width = "f64" if type_text(src) == "fp64" else "f32"
    value = x if type_text(src) in ("fp32", "fp64") else widen(x, src)
    conversion = _RZI[type_text(dst)]
    return f"(({ctype(dst)})tt_{width}_to_{conversion}({value}))"


def _int_to_float(x: str, src: dtype, dst: dtype) -> str:
    if type_text(dst) == "fp32":
        return f"((float){x})"
    if type_text(dst) == "fp64":
        return f"((double){x})"
    if type_text(dst) == "fp16":
        if src.primitive_bitwidth == 64:
            return f"tt_{'s' if src.is_int_signed() else 'u'}64_to_f16({x})"
        return f"tt_{'s' if src.is_int_signed() else 'u'}32_to_f16({x})"
    # bf16 and fp8: rounded to odd in fp32 first, then rounded once to the target
    if src.primitive_bitwidth == 64:
        odd = f"tt_{'i' if src.is_int_signed() else 'u'}64_to_f32_odd({x})"
    else:
        odd = f"tt_f64_to_f32_odd((double){x})"
    return narrow(odd, dst)


def _float_to_float(x: str, src: dtype, dst: dtype, rounding: str) -> str:
    if type_text(dst) == "fp64":
        return f"((double){widen(x, src)})"
    if type_text(src) == "fp64":
        if type_text(dst) == "fp32":
            return f"__double2float_rz({x})" if rounding == "rtz" else f"((float){x})"
        if type_text(dst) == "fp16":
            return f"tt_f64_to_f16{'_rz' if rounding == 'rtz' else ''}({x})"
        through = f"__double2float_rz({x})" if rounding == "rtz" else f"tt_f64_to_f32_odd({x})"
        return narrow(through, dst, rounding)
    as_f32 = widen(x, src)
    if type_text(dst) == "fp32":
        return as_f32
    return narrow(as_f32, dst, rounding)


def cast_expr(x: str, src: dtype, dst: dtype, rounding: str = "rtne") -> str:
    """The C++ expression converting `x` of scalar type `src` to `dst`."""
    if src == dst:
        return x
    if dst.is_bool():
        if src.is_floating():
            zero = "0.0" if type_text(src) == "fp64" else "0.0f"
            return f"({widen(x, src)} != {zero})"
        return f"({x} != 0)"
    if src.is_ptr() or dst.is_ptr():
        return f"(({ctype(dst)}){x})"
    if src.is_int() and dst.is_int():
        return f"(({ctype(dst)}){x})"
    if src.is_floating() and dst.is_int():
        return _float_to_int(x, src, dst)
    if src.is_int() and dst.is_floating():
        return _int_to_float(x, src, dst)
    if src.is_floating() and dst.is_floating():
        return _float_to_float(x, src, dst, rounding)
    raise CodegenError(f"no conversion from {src} to {dst}")


# fp32 -> fp8 two registers at a time: one instruction converts both (sm_89's
# `cvt.rn.satfinite.e4m3x2.f32`), where converting one at a time wastes half of
# each and costs byte shuffles to put the pairs back together (a matmul's epilogue)
_PAIRED = ("fp8e4nv", "fp8e5")


@emits("cast")
def emit_cast(em: Emitter, op: Operation) -> None:
    src = op.operands[0].type.scalar
    dst = op.results[0].type.scalar
    rounding = op.attrs.get("rounding") or "rtne"
    for ty in (src, dst):
        if ty.is_floating() and type_text(ty) not in NARROW_FLOATS + ("fp32", "fp64"):
            raise CodegenError(f"cast involving {ty} at {op.loc}: the CUDA backend has no {ty}")
    result = op.results[0]
    if type_text(src) == "fp32" and type_text(dst) in _PAIRED and rounding == "rtne" and result.type.is_block():
        count = em.nregs(result)
        if count % 2 == 0 and em.distinct_register_bits(result) == count - 1:
            name = em.define_block(result)
            x = em.name(op.operands[0])
            em.lines.append("#pragma unroll")
            em.line(f"for (int i = 0; i < {count}; i += 2) "
                    f"tt_f32x2_to_{type_text(dst)}({x}[i], {x}[i + 1], &{name}[i]);")
            return
    elementwise(em, op, lambda xs: cast_expr(xs[0], src, dst, rounding))


@emits("bitcast")
def emit_bitcast(em: Emitter, op: Operation) -> None:
    dst = ctype(op.results[0].type)
    elementwise(em, op, lambda xs: f"tt_bitcast<{dst}>({xs[0]})")
