"""IR types as CUDA C++ types, and IR constants as C++ literals."""

from __future__ import annotations

import math
import struct

import numpy as np

from tritone.ir.types import dtype, type_text

_SCALAR_CTYPES = {
    "i1": "bool",
    "i8": "signed char",
    "i16": "short",
    "i32": "int",
    "i64": "long long",
    "u8": "unsigned char",
    "u16": "unsigned short",
    "u32": "unsigned",
    "u64": "unsigned long long",
    "fp16": "tt_f16",
    "bf16": "tt_bf16",
    "fp8e4nv": "tt_fp8e4nv",
    "fp8e5": "tt_fp8e5",
    "fp8e4b15": "tt_fp8e4b15",
    "fp32": "float",
    "fp64": "double",
}

# Unsigned types of the same width, for arithmetic that must wrap.
_UNSIGNED = {1: "unsigned", 8: "unsigned", 16: "unsigned", 32: "unsigned", 64: "unsigned long long"}

# Narrow floats: stored as bits, computed in fp32.
NARROW_FLOATS = ("fp16", "bf16", "fp8e4nv", "fp8e5", "fp8e4b15")


class UnsupportedType(TypeError):
    """An IR type the CUDA backend cannot represent."""


def ctype(ty: dtype) -> str:
    """The C++ type of one element of `ty` (blocks: of their element)."""
    ty = ty.scalar
    if ty.is_ptr():
        return ctype(ty.element_ty) + "*"
    try:
        return _SCALAR_CTYPES[type_text(ty)]
    except KeyError:
        raise UnsupportedType(f"the CUDA backend has no representation for {ty}") from None


def unsigned_ctype(ty: dtype) -> str:
    """The unsigned C++ type integer arithmetic on `ty` wraps in (at least 32 bits)."""
    return _UNSIGNED[ty.scalar.primitive_bitwidth]


def is_narrow_float(ty: dtype) -> bool:
    return type_text(ty.scalar) in NARROW_FLOATS


def compute_ctype(ty: dtype) -> str:
    """The C++ type arithmetic on `ty` is done in (fp32 for the narrow floats)."""
    return "float" if is_narrow_float(ty) else ctype(ty)


def widen(expr: str, ty: dtype) -> str:
    """`expr` of IR type `ty` as its compute type (exact)."""
    name = type_text(ty.scalar)
    if name in NARROW_FLOATS:
        return f"tt_{_SHORT[name]}_to_f32({expr})"
    return expr


def narrow(expr: str, ty: dtype, rounding: str = "rtne") -> str:
    """An fp32 `expr` rounded to the narrow float `ty` (RNE, or toward zero)."""
    name = type_text(ty.scalar)
    if name not in NARROW_FLOATS:
        return expr
    suffix = "_rz" if rounding == "rtz" else ""
    return f"tt_f32_to_{_SHORT[name]}{suffix}({expr})"


_SHORT = {"fp16": "f16", "bf16": "bf16", "fp8e4nv": "fp8e4nv", "fp8e5": "fp8e5", "fp8e4b15": "fp8e4b15"}


def _fp8_bits(value: float, exponent_bits: int, mantissa_bits: int, bias: int | None = None) -> int:
    """The code of `value`, which must be representable in the fp8 format
    (exponent `bias` by default the IEEE one, 2**(exponent_bits - 1) - 1)."""
    bias = (1 << (exponent_bits - 1)) - 1 if bias is None else bias
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        e = (code >> mantissa_bits) & ((1 << exponent_bits) - 1)
        m = code & ((1 << mantissa_bits) - 1)
        if e == 0:
            decoded = sign * m * 2.0 ** (1 - bias - mantissa_bits)
        else:
            decoded = sign * (1 + m / (1 << mantissa_bits)) * 2.0 ** (e - bias)
        if decoded == value and math.copysign(1.0, decoded) == math.copysign(1.0, value):
            return code
    raise ValueError(f"{value!r} is not representable in this fp8 format")


def literal(value, ty: dtype) -> str:
    """`value` (an IR constant already representable in `ty`) as a C++ expression of type `ty`."""
    ty = ty.scalar
    name = type_text(ty)
    if ty.is_ptr():
        return f"(({ctype(ty)})0x{int(value) & (2**64 - 1):x}ull)"
    if name == "i1":
        return "true" if value else "false"
    if ty.is_int():
        bits = ty.primitive_bitwidth
        raw = int(value) & ((1 << bits) - 1)
        suffix = "ull" if bits == 64 else "u"
        return f"(({ctype(ty)})0x{raw:x}{suffix})"
    value = float(value)
    if name == "fp32":
        if math.isfinite(value):
            return f"{float(np.float32(value)).hex()}f"
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        return f"__uint_as_float(0x{bits:08x}u)"
    if name == "fp64":
        if math.isfinite(value):
            return value.hex()
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        return f"__longlong_as_double(0x{bits:016x}ll)"
    if name == "fp16":
        bits = int(np.array(value, dtype=np.float16).view(np.uint16))
    elif name == "bf16":
        bits = struct.unpack("<I", struct.pack("<f", value))[0] >> 16
        if math.isnan(value):
            bits = 0x7FFF
    elif name == "fp8e4nv":
        bits = 0x7F if math.isnan(value) else _fp8_bits(value, 4, 3)
    elif name == "fp8e5" and math.isinf(value):
        bits = 0x7C if value > 0 else 0xFC
    elif name == "fp8e5":
        bits = 0x7F if math.isnan(value) else _fp8_bits(value, 5, 2)
    elif name == "fp8e4b15":  # every code is a number: no NaN or inf constant reaches here
        bits = _fp8_bits(value, 4, 3, bias=15)
    else:
        raise UnsupportedType(f"the CUDA backend has no representation for {ty}")
    return f"{ctype(ty)}{{0x{bits:x}}}"
