"""The types of tritone's IR, which are also the dtypes of `tritone.language`.

There is one type system: `tl.float32` is the IR scalar type `fp32`, a block of
pointers is a `block_type` whose element is a `pointer_type`. Types are
immutable values compared by their parameters.

Two spellings:

- the IR's compact text form, `type_text(t)`, used by the IR printer and
  parser and close to Triton's signature strings (`"*fp32"`): scalars `i1 i8
  i16 i32 i64 u8 u16 u32 u64 fp8e4nv fp8e5 fp8e4b15 fp8e4b8 fp8e5b16 fp16
  bf16 fp32 fp64 void`; pointers `*fp32`, const pointers `*kfp32`; blocks
  `<128x64xfp32>`, `<128x*fp16>`. `parse_type` reads it back, and Triton's
  signature strings (`u1`, `B`, `int32`) too. Code that needs the compact
  spelling calls `type_text`, never `str(t)` or `t.name`;
- the names user code and messages see, `t.name` and `str(t)`.
"""

from __future__ import annotations

from typing import Any, Sequence

# name -> (kind, bitwidth, signed, mantissa bits, exponent bias)
_SCALARS = {
    "void": ("void", 0, False, 0, 0),
    "i1": ("int", 1, False, 0, 0),
    "i8": ("int", 8, True, 0, 0),
    "i16": ("int", 16, True, 0, 0),
    "i32": ("int", 32, True, 0, 0),
    "i64": ("int", 64, True, 0, 0),
    "u8": ("int", 8, False, 0, 0),
    "u16": ("int", 16, False, 0, 0),
    "u32": ("int", 32, False, 0, 0),
    "u64": ("int", 64, False, 0, 0),
    "fp8e4nv": ("float", 8, True, 3, 7),
    "fp8e5": ("float", 8, True, 2, 15),
    "fp8e4b15": ("float", 8, True, 3, 15),
    "fp8e4b8": ("float", 8, True, 3, 8),
    "fp8e5b16": ("float", 8, True, 2, 16),
    "fp16": ("float", 16, True, 10, 15),
    "bf16": ("float", 16, True, 7, 127),
    "fp32": ("float", 32, True, 23, 127),
    "fp64": ("float", 64, True, 52, 1023),
}

# Triton's long names (`tl.float32.name == "fp32"`, but `str_to_ty("fp32")` and
# `tl.dtype("float32")` style spellings both appear in user code).
_ALIASES = {
    "int1": "i1", "u1": "i1", "B": "i1",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b15": "fp8e4b15",
    "float8e4b8": "fp8e4b8", "float8e5b16": "fp8e5b16",
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
}

SCALAR_NAMES = tuple(n for n in _SCALARS if n != "void")


class dtype:
    """A scalar element type (`tl.float32`, `tl.int8`, ...)."""

    # `_key` is the compact spelling (`type_text`), which every check below reads.
    __slots__ = ("name", "_key")

    SINT_TYPES = ("int8", "int16", "int32", "int64")
    UINT_TYPES = ("int1", "uint8", "uint16", "uint32", "uint64")
    FP_TYPES = ("fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64")
    STANDARD_FP_TYPES = ("fp16", "bf16", "fp32", "fp64")

    def __init__(self, name: str):
        key = _ALIASES.get(name, name)
        if key not in _SCALARS:
            raise ValueError(f"unknown dtype {name!r}")
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "name", _TRITON_NAMES.get(key, key))

    def __setattr__(self, key, value):
        raise AttributeError("dtypes are immutable")

    # Immutable values: a copy may be the value itself, and pickling rebuilds the
    # value from its parameters (the slots cannot be set the usual way).
    def __reduce__(self):
        return (dtype, (self._key,))

    def __copy__(self) -> "dtype":
        return self

    def __deepcopy__(self, memo) -> "dtype":
        return self

    # -- classification -------------------------------------------------
    @property
    def _info(self):
        return _SCALARS[self._key]

    @property
    def primitive_bitwidth(self) -> int:
        return self._info[1]

    @property
    def itemsize(self) -> int:
        """Bytes one element occupies in memory (i1 is stored as a byte)."""
        return max(1, self.primitive_bitwidth // 8)

    @property
    def int_bitwidth(self) -> int:
        return self._info[1] if self.is_int() else 0

    @property
    def int_signedness(self):
        return "signed" if self.is_int_signed() else "unsigned"

    @property
    def fp_mantissa_width(self) -> int:
        return self._info[3]

    @property
    def exponent_bias(self) -> int:
        return self._info[4]

    @property
    def scalar(self) -> "dtype":
        return self

    @property
    def element_ty(self) -> "dtype":
        return self

    def is_void(self) -> bool:
        return self._key == "void"

    def is_int(self) -> bool:
        return self._info[0] == "int"

    def is_bool(self) -> bool:
        return self._key == "i1"

    def is_int1(self) -> bool:
        return self._key == "i1"

    def is_int_signed(self) -> bool:
        return self.is_int() and self._info[2]

    def is_int_unsigned(self) -> bool:
        return self.is_int() and not self._info[2]

    def is_floating(self) -> bool:
        return self._info[0] == "float"

    def is_standard_floating(self) -> bool:
        return self._key in self.STANDARD_FP_TYPES

    def is_fp8(self) -> bool:
        return self._key.startswith("fp8")

    def is_fp16(self) -> bool:
        return self._key == "fp16"

    def is_bf16(self) -> bool:
        return self._key == "bf16"

    def is_fp32(self) -> bool:
        return self._key == "fp32"

    def is_fp64(self) -> bool:
        return self._key == "fp64"

    def is_fp8e4nv(self) -> bool:
        return self._key == "fp8e4nv"

    def is_fp8e5(self) -> bool:
        return self._key == "fp8e5"

    def is_fp8e4b15(self) -> bool:
        return self._key == "fp8e4b15"

    def is_int8(self) -> bool:
        return self._key == "i8"

    def is_int16(self) -> bool:
        return self._key == "i16"

    def is_int32(self) -> bool:
        return self._key == "i32"

    def is_int64(self) -> bool:
        return self._key == "i64"

    def is_uint8(self) -> bool:
        return self._key == "u8"

    def is_uint16(self) -> bool:
        return self._key == "u16"

    def is_uint32(self) -> bool:
        return self._key == "u32"

    def is_uint64(self) -> bool:
        return self._key == "u64"

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    def is_const(self) -> bool:
        return False

    def kind(self) -> int:
        """Promotion kind: 0 boolean < 1 integral < 2 floating (Triton's KIND)."""
        if self.is_bool():
            return 0
        if self.is_int():
            return 1
        return 2

    # -- value ranges ----------------------------------------------------
    def int_range(self) -> tuple[int, int]:
        bits = self.int_bitwidth
        if self.is_int_signed():
            return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return 0, (1 << bits) - 1

    def with_element_ty(self, element_ty: "dtype") -> "dtype":
        return element_ty

    def get_block_shapes(self) -> tuple:
        return ()

    @property
    def shape(self) -> tuple:
        return ()

    @property
    def numel(self) -> int:
        return 1

    # -- identity ---------------------------------------------------------
    def __eq__(self, other) -> bool:
        return type(other) is dtype and other._key == self._key

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(("dtype", self._key))

    def __str__(self) -> str:
        return self.name

    @property
    def cache_key_part(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"triton.language.{self.codegen_name()}"

    def codegen_name(self) -> str:
        """The dtype's name in `tl` (`float32`, `bfloat16`, `int32`)."""
        return _LONG_NAMES.get(self._key, self._key)

    def mangle(self) -> str:
        """The dtype's part of a specialised function's name, as Triton spells it
        (`i32`, `u8`, `u1` for int1, `fp16`)."""
        return "u1" if self._key == "i1" else self._key


class pointer_type(dtype):
    """A pointer to `element_ty` in global memory; `const` pointers cannot be stored to."""

    __slots__ = ("element_ty_", "address_space", "const")

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        if not isinstance(element_ty, dtype):
            raise TypeError(f"pointer_type element type must be a dtype, got {element_ty!r}")
        object.__setattr__(self, "element_ty_", element_ty)
        object.__setattr__(self, "address_space", address_space)
        object.__setattr__(self, "const", const)
        object.__setattr__(self, "_key", ("*k" if const else "*") + element_ty._key)
        object.__setattr__(self, "name", f"{'const_pointer' if const else 'pointer'}<{element_ty}>")

    def __reduce__(self):
        return (pointer_type, (self.element_ty_, self.address_space, self.const))

    @property
    def _info(self):
        return ("ptr", 64, False, 0, 0)

    @property
    def element_ty(self) -> dtype:
        return self.element_ty_

    @property
    def scalar(self) -> "pointer_type":
        return self

    @property
    def itemsize(self) -> int:
        return 8

    def is_ptr(self) -> bool:
        return True

    def is_const(self) -> bool:
        return self.const

    def is_int(self) -> bool:
        return False

    def is_floating(self) -> bool:
        return False

    def kind(self) -> int:
        raise TypeError("pointers have no arithmetic promotion kind")

    def __eq__(self, other) -> bool:
        return (type(other) is pointer_type and other.element_ty_ == self.element_ty_
                and other.address_space == self.address_space and other.const == self.const)

    def __hash__(self) -> int:
        return hash(("ptr", self.element_ty_, self.address_space, self.const))

    def __str__(self) -> str:
        return self.name

    @property
    def cache_key_part(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    def mangle(self) -> str:
        return "P" + self.element_ty_.mangle()


class block_type(dtype):
    """A block (tile) of `shape` elements of `element_ty`, with an optional layout
    attribute that the GPU passes fill in (None before layout assignment)."""

    __slots__ = ("element_ty_", "shape_", "layout")

    def __init__(self, element_ty: dtype, shape: Sequence[int], layout=None):
        if isinstance(element_ty, block_type):
            raise TypeError("a block's element type cannot be a block")
        shape = tuple(int(s) for s in shape)
        if not shape:
            raise TypeError("0-d block types do not exist; use the scalar type")
        object.__setattr__(self, "element_ty_", element_ty)
        object.__setattr__(self, "shape_", shape)
        object.__setattr__(self, "layout", layout)
        dims = "x".join(str(s) for s in shape)
        object.__setattr__(self, "_key", f"<{dims}x{element_ty._key}>")
        # Triton writes the shape as the list of its dims' strings: `<['4', '8'], fp32>`.
        object.__setattr__(self, "name", f"<{[str(s) for s in shape]}, {element_ty}>")

    def __reduce__(self):
        return (block_type, (self.element_ty_, self.shape_, self.layout))

    @property
    def _info(self):
        return self.element_ty_._info

    @property
    def element_ty(self) -> dtype:
        return self.element_ty_

    @property
    def scalar(self) -> dtype:
        return self.element_ty_

    @property
    def shape(self) -> tuple:
        return self.shape_

    def get_block_shapes(self) -> tuple:
        return self.shape_

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape_:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * self.element_ty_.itemsize

    def is_block(self) -> bool:
        return True

    def is_ptr(self) -> bool:
        return False

    def with_element_ty(self, element_ty: dtype) -> "block_type":
        return block_type(element_ty, self.shape_, self.layout)

    def with_layout(self, layout) -> "block_type":
        return block_type(self.element_ty_, self.shape_, layout)

    def __eq__(self, other) -> bool:
        return (type(other) is block_type and other.element_ty_ == self.element_ty_
                and other.shape_ == self.shape_ and other.layout == self.layout)

    def __hash__(self) -> int:
        return hash(("block", self.element_ty_, self.shape_, self.layout))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    def mangle(self) -> str:
        return self.element_ty_.mangle() + "S" + "_".join(map(str, self.shape_)) + "S"


class tensordesc_type(dtype):
    """A tensor descriptor (`tl.make_tensor_descriptor`, a host `TensorDescriptor`
    argument): where a tensor of `block.element_ty` lies in global memory and
    how it is read and written in blocks of `block.shape`. Its IR spelling is
    Triton's signature spelling, `tensordesc<fp16[64, 64]>`. The tensor's
    shape and strides, and its padding, are separate values (docs/IR.md)."""

    __slots__ = ("block",)

    def __init__(self, block: block_type):
        if not isinstance(block, block_type):
            raise TypeError(f"a tensor descriptor describes blocks, got {block!r}")
        block = block_type(block.element_ty, block.shape)  # descriptors have no layout
        object.__setattr__(self, "block", block)
        dims = ", ".join(str(s) for s in block.shape)
        object.__setattr__(self, "_key", f"tensordesc<{block.element_ty._key}[{dims}]>")
        object.__setattr__(self, "name", f"tensor_descriptor<{block}>")

    def __reduce__(self):
        return (tensordesc_type, (self.block,))

    @property
    def _info(self):
        return ("tensordesc", 64, False, 0, 0)

    @property
    def element_ty(self) -> dtype:
        return self.block.element_ty

    @property
    def scalar(self) -> "tensordesc_type":
        return self

    @property
    def rank(self) -> int:
        return len(self.block.shape)

    @property
    def base_ty(self) -> pointer_type:
        """The type of the tensor's base pointer."""
        return pointer_type(self.block.element_ty)

    def is_int(self) -> bool:
        return False

    def is_floating(self) -> bool:
        return False

    def kind(self) -> int:
        raise TypeError("tensor descriptors have no arithmetic promotion kind")

    def argument_types(self) -> list[dtype]:
        """The IR types of the arguments a kernel takes for a descriptor parameter,
        in order: the descriptor, its shape (i32 each), its strides (i64 each)
        and whether out-of-bounds elements read as NaN (i1)."""
        return [self] + [int32] * self.rank + [int64] * self.rank + [int1]

    def __eq__(self, other) -> bool:
        return type(other) is tensordesc_type and other.block == self.block

    def __hash__(self) -> int:
        return hash(("tensordesc", self.block))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    def mangle(self) -> str:
        return "TD" + self.block.mangle()


class tensormap_type(dtype):
    """A TMA tensor map of a host descriptor whose blocks are `block`: the
    128 opaque bytes the CUDA driver encodes on the host
    (`cuTensorMapEncodeTiled`) and the kernel receives by value. The CUDA
    backend adds a kernel argument of this type for each host descriptor it
    reads or writes with TMA (`backends/cuda/tma.py`); spelled
    `tensormap<fp16[64, 64]>`."""

    __slots__ = ("block",)

    def __init__(self, block: block_type):
        block = block_type(block.element_ty, block.shape)
        object.__setattr__(self, "block", block)
        dims = ", ".join(str(s) for s in block.shape)
        object.__setattr__(self, "_key", f"tensormap<{block.element_ty._key}[{dims}]>")
        object.__setattr__(self, "name", f"tensormap<{block}>")

    def __reduce__(self):
        return (tensormap_type, (self.block,))

    @property
    def _info(self):
        return ("tensormap", 1024, False, 0, 0)

    @property
    def element_ty(self) -> dtype:
        return self.block.element_ty

    @property
    def scalar(self) -> "tensormap_type":
        return self

    @property
    def rank(self) -> int:
        return len(self.block.shape)

    def is_int(self) -> bool:
        return False

    def is_floating(self) -> bool:
        return False

    def kind(self) -> int:
        raise TypeError("tensor maps have no arithmetic promotion kind")

    def __eq__(self, other) -> bool:
        return type(other) is tensormap_type and other.block == self.block

    def __hash__(self) -> int:
        return hash(("tensormap", self.block))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    def mangle(self) -> str:
        return "TM" + self.block.mangle()


def type_text(ty: dtype) -> str:
    """The IR's compact spelling of `ty`, which `parse_type` (and the IR parser,
    for layouts) reads back: `i32`, `fp16`, `*fp32`, `*kfp32`, `<16x32xfp32>`,
    a block with a layout `<16x32xfp32, BlockedLayout(...)>`."""
    if type(ty) is block_type and ty.layout is not None:
        return f"{ty._key[:-1]}, {ty.layout}>"
    return ty._key


_LONG_NAMES = {v: k for k, v in _ALIASES.items() if k not in ("u1", "B")}
# Triton's `dtype.name`: the integers' long names, the floats' short ones.
_TRITON_NAMES = {key: long for key, long in _LONG_NAMES.items() if _SCALARS[key][0] == "int"}

void = dtype("void")
int1 = dtype("i1")
int8 = dtype("i8")
int16 = dtype("i16")
int32 = dtype("i32")
int64 = dtype("i64")
uint8 = dtype("u8")
uint16 = dtype("u16")
uint32 = dtype("u32")
uint64 = dtype("u64")
float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float8e4b15 = dtype("fp8e4b15")
float8e4b8 = dtype("fp8e4b8")
float8e5b16 = dtype("fp8e5b16")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")


def get_int_dtype(bitwidth: int, signed: bool) -> dtype:
    if bitwidth == 1:
        return int1
    return dtype(("i" if signed else "u") + str(bitwidth))


def parse_type(text: str) -> dtype:
    """Parse a type's compact text form (`type_text`): `fp32`, `*fp16`, `*kfp32`,
    `<16x32xfp32>`, `<8x*i32>`; scalar names may also be Triton's signature and
    dtype names (`u1`, `B`, `int32`, `float16`).

    Layout attributes inside block types are not parsed here (the IR parser
    handles them)."""
    text = text.strip()
    for prefix, kind in (("tensordesc<", tensordesc_type), ("tensormap<", tensormap_type)):
        if text.startswith(prefix) and text.endswith(">"):
            element, _, dims = text[len(prefix):-1].partition("[")
            try:
                shape = [int(d) for d in dims.rstrip("]").split(",")]
            except ValueError:
                raise ValueError(f"cannot parse tensor descriptor type {text!r}") from None
            return kind(block_type(parse_type(element), shape))
    if text.startswith("<") and text.endswith(">"):
        parts = text[1:-1].split("x")
        dims: list[int] = []
        i = 0
        while i < len(parts) and parts[i].isdigit():
            dims.append(int(parts[i]))
            i += 1
        if not dims or i >= len(parts):
            raise ValueError(f"cannot parse block type {text!r}")
        return block_type(parse_type("x".join(parts[i:])), dims)
    if text.startswith("*k"):
        return pointer_type(parse_type(text[2:]), const=True)
    if text.startswith("*"):
        return pointer_type(parse_type(text[1:]))
    return dtype(text)


def is_descriptor_type(type_name: Any) -> bool:
    """Whether a signature type names a host tensor descriptor (`tensordesc<fp16[64, 64]>`)."""
    return isinstance(type_name, str) and type_name.startswith("tensordesc<")


def descriptor_leaf_types(type_name: str) -> list[str]:
    """The signature types of the values passed for a host descriptor of
    signature type `type_name`: the descriptor itself (`type_name`, passed as
    its tensor's address), the shape (i32 each), the strides (i64 each) and
    the NaN-padding flag (u1)."""
    rank = parse_type(type_name).rank
    return [type_name] + ["i32"] * rank + ["i64"] * rank + ["u1"]
