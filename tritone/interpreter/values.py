"""How the interpreter represents values of each IR type, in registers and in memory.

In the interpreter (see docs/IR.md for the types):

- i1 -> numpy bool; iN/uN -> the numpy int of that width and signedness;
- fp16/fp32/fp64 -> float16/float32/float64;
- bf16 and every fp8 type -> float32 holding exactly representable values;
- pointers -> uint64 byte addresses; tensor descriptors -> the uint64 address
  of the tensor (their shape, strides and padding are values of their own).

In memory, bf16 is its uint16 bit pattern, fp8 its uint8 code, i1 a byte.
"""

from __future__ import annotations

import numpy as np

from ..ir.types import block_type, dtype, tensordesc_type, type_text
from . import floats

_INT_DTYPES = {
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64),
}
_FLOAT_DTYPES = {"fp16": np.dtype(np.float16), "fp32": np.dtype(np.float32), "fp64": np.dtype(np.float64)}
_UNSIGNED_OF_WIDTH = {1: np.dtype(np.uint8), 8: np.dtype(np.uint8), 16: np.dtype(np.uint16),
                      32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}
_SIGNED_OF_WIDTH = {8: np.dtype(np.int8), 16: np.dtype(np.int16), 32: np.dtype(np.int32), 64: np.dtype(np.int64)}


def scalar_of(ty: dtype) -> dtype:
    """The element type of a block type, or the type itself."""
    return ty.element_ty if isinstance(ty, block_type) else ty


def shape_of(ty: dtype) -> tuple[int, ...]:
    return ty.shape if isinstance(ty, block_type) else ()


def is_emulated_float(ty: dtype) -> bool:
    """bf16 and fp8 values are float32 arrays that must be rounded after every op."""
    name = type_text(scalar_of(ty))
    return name == "bf16" or name.startswith("fp8")


def value_dtype(ty: dtype) -> np.dtype:
    """numpy dtype of values of `ty` (a scalar or block type) in the interpreter."""
    sc = scalar_of(ty)
    if sc.is_ptr() or isinstance(sc, tensordesc_type):
        return np.dtype(np.uint64)
    name = type_text(sc)
    if name in _INT_DTYPES:
        return _INT_DTYPES[name]
    if name in _FLOAT_DTYPES:
        return _FLOAT_DTYPES[name]
    if is_emulated_float(sc):
        return np.dtype(np.float32)
    raise TypeError(f"the interpreter has no representation for type {ty}")


def storage_dtype(ty: dtype) -> np.dtype:
    """numpy dtype of elements of `ty` in memory (same width as the IR type)."""
    sc = scalar_of(ty)
    if sc.is_ptr():
        return np.dtype(np.uint64)
    if type_text(sc) == "i1":
        return np.dtype(np.uint8)
    if type_text(sc) == "bf16":
        return np.dtype(np.uint16)
    if type_text(sc).startswith("fp8"):
        return np.dtype(np.uint8)
    return value_dtype(sc)


def bits_dtype(ty: dtype) -> np.dtype:
    """Unsigned numpy dtype of the type's bit width (bitcasts go through it)."""
    sc = scalar_of(ty)
    return _UNSIGNED_OF_WIDTH[sc.primitive_bitwidth]


def signed_dtype(bits: int) -> np.dtype:
    return _SIGNED_OF_WIDTH[bits]


def unsigned_dtype(bits: int) -> np.dtype:
    return _UNSIGNED_OF_WIDTH[bits]


def encode(values, ty: dtype) -> np.ndarray:
    """Values of `ty` in the interpreter's representation -> their memory representation."""
    sc = scalar_of(ty)
    name = type_text(sc)
    if name == "i1":
        return np.asarray(values).astype(np.uint8)
    if name == "bf16":
        return floats.encode_bf16(values)
    if name.startswith("fp8"):
        return floats.encode_fp8(values, name)
    return np.asarray(values, dtype=storage_dtype(sc))


def decode(raw, ty: dtype) -> np.ndarray:
    """Memory representation -> values of `ty` (i1 bytes read as `!= 0`)."""
    sc = scalar_of(ty)
    name = type_text(sc)
    if name == "i1":
        return np.asarray(raw) != 0
    if name == "bf16":
        return floats.decode_bf16(raw)
    if name.startswith("fp8"):
        return floats.decode_fp8(raw, name)
    return np.asarray(raw)


def to_bits(values, ty: dtype) -> np.ndarray:
    """The bit patterns of values of `ty`, as unsigned ints of the type's width."""
    sc = scalar_of(ty)
    raw = np.asarray(encode(values, sc))
    return raw.reshape(raw.shape or (1,)).view(bits_dtype(sc)).reshape(raw.shape)


def from_bits(bits, ty: dtype) -> np.ndarray:
    """Values of `ty` whose bit patterns are `bits` (unsigned ints of the type's width)."""
    sc = scalar_of(ty)
    if type_text(sc) == "i1":
        return np.asarray(bits) != 0
    raw = np.asarray(bits).reshape(np.shape(bits) or (1,)).view(storage_dtype(sc))
    return decode(raw, sc).reshape(np.shape(bits))


def round_value(values, ty: dtype, mode: str = "rn") -> np.ndarray:
    """Round float values (any numpy float dtype) to `ty`'s float format, giving
    the interpreter's representation of `ty`."""
    return floats.round_to_dtype(values, type_text(scalar_of(ty)), mode)


def wrap_int(value: int, ty: dtype) -> int:
    """A Python int reduced modulo 2^width into `ty`'s range (i1: value & 1)."""
    sc = scalar_of(ty)
    bits = sc.primitive_bitwidth
    value &= (1 << bits) - 1
    if sc.is_int_signed() and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def from_python(value, ty: dtype):
    """A Python bool/int/float as a numpy scalar of `ty` (ints wrap, floats round)."""
    sc = scalar_of(ty)
    np_type = value_dtype(sc).type
    if sc.is_ptr():
        return np.uint64(int(value) & 0xFFFF_FFFF_FFFF_FFFF)
    if sc.is_int():
        if type_text(sc) == "i1":
            return np.bool_(bool(value))
        return np_type(wrap_int(int(value), sc))
    if is_emulated_float(sc):
        return np.float32(floats.round_to_dtype(np.float64(value), type_text(sc))[()])
    return np_type(value)


def full(ty: dtype, value):
    """A constant of `ty`: a numpy scalar, or a block of the type's shape."""
    scalar = from_python(value, ty)
    shape = shape_of(ty)
    if not shape:
        return scalar
    return np.full(shape, scalar, dtype=value_dtype(ty))
