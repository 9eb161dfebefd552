"""The objects a kernel manipulates while the frontend compiles it: `constexpr`
(a compile-time Python value), `tensor` (an IR value with its type), `tuple`,
and the `builtin` marker for functions that build IR.

A builtin is any callable with `__triton_builtin__ = True`; the frontend calls
it with the keyword `_semantic=` set to the `Semantic` object that owns the IR
builder (TorchInductor defines builtins of its own the same way). Called
outside a kernel, a builtin raises the error Triton raises.
"""

from __future__ import annotations

import builtins
import functools
from typing import Any, Callable, TypeVar

from ..ir import types as _types
from ..ir.types import (  # noqa: F401  (re-exported: the dtypes are tl's)
    block_type,
    dtype,
    get_int_dtype,
    pointer_type,
)

T = TypeVar("T")

TRITON_BUILTIN = "__triton_builtin__"
TRITON_MAX_TENSOR_NUMEL = 1048576


def builtin(fn: T) -> T:
    """Mark `fn` as a builtin: it is called with `_semantic=` by the frontend."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if kwargs.get("_semantic") is None:
            raise ValueError(
                "Did you forget to add @triton.jit ? "
                "(`_semantic` argument must be provided outside of JIT functions.)")
        return fn(*args, **kwargs)

    setattr(wrapper, TRITON_BUILTIN, True)
    return wrapper


def is_builtin(fn: Any) -> bool:
    return getattr(fn, TRITON_BUILTIN, False) is True


def _unwrap_if_constexpr(value):
    return value.value if isinstance(value, constexpr) else value


def _unwrap_shape(shape):
    shape = _unwrap_if_constexpr(shape)
    return [_unwrap_if_constexpr(s) for s in shape]


class base_value:
    """Anything a kernel variable can hold at compile time."""


class constexpr_type:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, constexpr_type) and other.value == self.value

    def __hash__(self):
        return hash(("constexpr", repr(self.value)))

    def __repr__(self):
        return f"constexpr_type[{self.value!r}]"


class constexpr(base_value):
    """A value known at compile time. Arithmetic on constexprs is Python's and
    gives constexprs; `tl.constexpr` is also the annotation of such parameters."""

    def __init__(self, value):
        while isinstance(value, constexpr):
            value = value.value
        self.value = value
        self.type = constexpr_type(value)

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __hash__(self):
        return hash(("constexpr", self.value))

    def __index__(self):
        return operator_index(self.value)

    def __bool__(self):
        return bool(self.value)

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    def __getattr__(self, name):
        # Attribute reads on a wrapped object (a namedtuple, a module) see through.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.value, name)


def operator_index(value) -> int:
    import operator
    return operator.index(value)


def _constexpr_binary(py_op: Callable[[Any, Any], Any], reflected: bool = False):
    def method(self, other):
        other = _unwrap_if_constexpr(other)
        if reflected:
            return constexpr(py_op(other, self.value))
        return constexpr(py_op(self.value, other))
    return method


def _constexpr_unary(py_op: Callable[[Any], Any]):
    def method(self):
        return constexpr(py_op(self.value))
    return method


def _install_constexpr_operators() -> None:
    import operator as op
    binary = {
        "add": op.add, "sub": op.sub, "mul": op.mul, "truediv": op.truediv,
        "floordiv": op.floordiv, "mod": op.mod, "pow": op.pow, "and": op.and_,
        "or": op.or_, "xor": op.xor, "lshift": op.lshift, "rshift": op.rshift,
    }
    for name, fn in binary.items():
        setattr(constexpr, f"__{name}__", _constexpr_binary(fn))
        setattr(constexpr, f"__r{name}__", _constexpr_binary(fn, reflected=True))
    for name, fn in {"lt": op.lt, "le": op.le, "gt": op.gt, "ge": op.ge, "eq": op.eq, "ne": op.ne}.items():
        setattr(constexpr, f"__{name}__", _constexpr_binary(fn))
    for name, fn in {"neg": op.neg, "pos": op.pos, "invert": op.invert, "abs": builtins.abs}.items():
        setattr(constexpr, f"__{name}__", _constexpr_unary(fn))
    constexpr.__hash__ = lambda self: hash(("constexpr", self.value))


_install_constexpr_operators()


class tensor(base_value):
    """An IR value seen from kernel code: `handle` is the `ir.core.Value`,
    `type` its IR type (a scalar dtype, pointer type or block type).

    Operators and methods are builtins implemented in `language/semantic.py`
    (the language module attaches them); the frontend calls them with
    `_semantic=`.
    """

    def __init__(self, handle, type: dtype):
        self.handle = handle
        self.type = type
        self.dtype = type.scalar
        self.shape = [constexpr(s) for s in type.shape] if type.is_block() else []

    @property
    def numel(self) -> constexpr:
        n = 1
        for s in self.shape:
            n *= s.value
        return constexpr(n)

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(str(s.value) for s in self.shape)}]"

    def __repr__(self) -> str:
        return f"tensor({self.type})"

    def __bool__(self):
        raise TypeError(
            "a tensor's truth value is only known when the kernel runs; "
            "use it in a run-time `if`/`while` condition or compare with tl.where")


class tuple(base_value):
    """A compile-time tuple of kernel values (`tl.tuple`)."""

    def __init__(self, values, type=None):
        self.values = [v for v in values]
        self.type = type

    def __getitem__(self, index):
        index = _unwrap_if_constexpr(index)
        if isinstance(index, slice):
            return tuple(self.values[index])
        return self.values[index]

    def __len__(self):
        return len(self.values)

    def __iter__(self):
        return iter(self.values)

    def __eq__(self, other):
        other = other.values if isinstance(other, tuple) else list(other)
        return constexpr(self.values == other)

    def __hash__(self):
        return hash(builtins.tuple(self.values))

    def __add__(self, other):
        other = other.values if isinstance(other, tuple) else list(other)
        return tuple(self.values + other)

    def __repr__(self):
        return f"tl.tuple({self.values!r})"


class const:
    """Annotation marking a pointer parameter as read-only (`tl.const`)."""


# Re-export the dtype singletons under Triton's names.
void = _types.void
int1 = _types.int1
int8 = _types.int8
int16 = _types.int16
int32 = _types.int32
int64 = _types.int64
uint8 = _types.uint8
uint16 = _types.uint16
uint32 = _types.uint32
uint64 = _types.uint64
float8e4nv = _types.float8e4nv
float8e5 = _types.float8e5
float8e4b15 = _types.float8e4b15
float8e4b8 = _types.float8e4b8
float8e5b16 = _types.float8e5b16
float16 = _types.float16
bfloat16 = _types.bfloat16
float32 = _types.float32
float64 = _types.float64
