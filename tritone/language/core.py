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
import enum
import functools
import inspect
import numbers
import string
import warnings
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


def must_use_result(fn_or_words: Any, words: str | bool = True) -> Any:
    """Mark a function (a builtin or a `@jit` function) whose result a kernel
    must use: a call of it as a whole statement is a CompilationError. Used bare
    (`@must_use_result`) or with words the error adds
    (`@must_use_result("tl.advance moves nothing in place.")`)."""
    if isinstance(fn_or_words, str):
        return lambda fn: must_use_result(fn, fn_or_words)
    fn_or_words._must_use_result = words
    return fn_or_words


def is_builtin(fn: Any) -> bool:
    return getattr(fn, TRITON_BUILTIN, False) is True


def _unwrap_if_constexpr(value):
    return value.value if isinstance(value, constexpr) else value


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

    Operators and methods are builtins: the frontend calls them with
    `_semantic=`, and they build IR through `language/semantic.py`. Methods
    that Triton writes in Triton (`x.sum()`, `x.max()`...) are attached by
    `standard.py` and compiled through the codegen's `call_jit_function`.
    """

    # Identity hashing: `__eq__` builds IR, so it cannot define hashing.
    __hash__ = object.__hash__

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
        # As Triton prints it (static_print, messages): `int32[]`, `fp32[constexpr[128]]`.
        return f"{self.dtype}[{', '.join(str(s) for s in self.shape)}]"

    def __repr__(self) -> str:
        return f"tensor({self.type})"

    def __bool__(self):
        raise TypeError(
            "a tensor's truth value is only known when the kernel runs; "
            "use it in a run-time `if`/`while` condition or compare with tl.where")

    @property
    def T(self):
        """`x.T` needs the IR builder, which an attribute cannot receive: the codegen
        lowers it to `tl.permute(x, (1, 0))` (2-D tensors only)."""
        raise AttributeError("tensor.T is lowered by the codegen to tl.permute(x, (1, 0))")

    # -- arithmetic ------------------------------------------------------------
    @builtin
    def __add__(self, other, _semantic=None):
        return _semantic.add(self, other, True)

    @builtin
    def __radd__(self, other, _semantic=None):
        return _semantic.add(other, self, True)

    @builtin
    def __sub__(self, other, _semantic=None):
        return _semantic.sub(self, other, True)

    @builtin
    def __rsub__(self, other, _semantic=None):
        return _semantic.sub(other, self, True)

    @builtin
    def __mul__(self, other, _semantic=None):
        return _semantic.mul(self, other, True)

    @builtin
    def __rmul__(self, other, _semantic=None):
        return _semantic.mul(other, self, True)

    @builtin
    def __truediv__(self, other, _semantic=None):
        return _semantic.truediv(self, other)

    @builtin
    def __rtruediv__(self, other, _semantic=None):
        return _semantic.truediv(other, self)

    @builtin
    def __floordiv__(self, other, _semantic=None):
        return _semantic.floordiv(self, other)

    @builtin
    def __rfloordiv__(self, other, _semantic=None):
        return _semantic.floordiv(other, self)

    @builtin
    def __mod__(self, other, _semantic=None):
        return _semantic.mod(self, other)

    @builtin
    def __rmod__(self, other, _semantic=None):
        return _semantic.mod(other, self)

    @builtin
    def __neg__(self, _semantic=None):
        return _semantic.minus(self)

    @builtin
    def __pos__(self, _semantic=None):
        return _semantic.plus(self)

    @builtin
    def __invert__(self, _semantic=None):
        return _semantic.invert(self)

    # -- bitwise -------------------------------------------------------------------
    @builtin
    def __and__(self, other, _semantic=None):
        return _semantic.and_(self, other)

    @builtin
    def __rand__(self, other, _semantic=None):
        return _semantic.and_(other, self)

    @builtin
    def __or__(self, other, _semantic=None):
        return _semantic.or_(self, other)

    @builtin
    def __ror__(self, other, _semantic=None):
        return _semantic.or_(other, self)

    @builtin
    def __xor__(self, other, _semantic=None):
        return _semantic.xor_(self, other)

    @builtin
    def __rxor__(self, other, _semantic=None):
        return _semantic.xor_(other, self)

    @builtin
    def __lshift__(self, other, _semantic=None):
        _check_shift_width(self, other)
        return _semantic.shl(self, other)

    @builtin
    def __rlshift__(self, other, _semantic=None):
        return _semantic.shl(other, self)

    @builtin
    def __rshift__(self, other, _semantic=None):
        # arithmetic or logical by the left operand's dtype before promotion
        _check_shift_width(self, other)
        if self.dtype.is_int_signed():
            return _semantic.ashr(self, other)
        return _semantic.lshr(self, other)

    @builtin
    def __rrshift__(self, other, _semantic=None):
        # Triton decides by the shift amount's dtype here (`5 >> x`)
        if self.dtype.is_int_signed():
            return _semantic.ashr(other, self)
        return _semantic.lshr(other, self)

    # -- comparisons: literals become tensors first, so they join the promotion ------
    @builtin
    def __gt__(self, other, _semantic=None):
        return _semantic.greater_than(self, _semantic.to_tensor(other))

    @builtin
    def __rgt__(self, other, _semantic=None):
        return _semantic.greater_than(_semantic.to_tensor(other), self)

    @builtin
    def __ge__(self, other, _semantic=None):
        return _semantic.greater_equal(self, _semantic.to_tensor(other))

    @builtin
    def __rge__(self, other, _semantic=None):
        return _semantic.greater_equal(_semantic.to_tensor(other), self)

    @builtin
    def __lt__(self, other, _semantic=None):
        return _semantic.less_than(self, _semantic.to_tensor(other))

    @builtin
    def __rlt__(self, other, _semantic=None):
        return _semantic.less_than(_semantic.to_tensor(other), self)

    @builtin
    def __le__(self, other, _semantic=None):
        return _semantic.less_equal(self, _semantic.to_tensor(other))

    @builtin
    def __rle__(self, other, _semantic=None):
        return _semantic.less_equal(_semantic.to_tensor(other), self)

    @builtin
    def __eq__(self, other, _semantic=None):
        return _semantic.equal(self, _semantic.to_tensor(other))

    @builtin
    def __req__(self, other, _semantic=None):
        return _semantic.equal(_semantic.to_tensor(other), self)

    @builtin
    def __ne__(self, other, _semantic=None):
        return _semantic.not_equal(self, _semantic.to_tensor(other))

    @builtin
    def __rne__(self, other, _semantic=None):
        return _semantic.not_equal(_semantic.to_tensor(other), self)

    @builtin
    def logical_and(self, other, _semantic=None):
        return _semantic.logical_and(self, other)

    @builtin
    def logical_or(self, other, _semantic=None):
        return _semantic.logical_or(self, other)

    @builtin
    def __not__(self, _semantic=None):
        return _semantic.not_(self)

    # -- indexing and conversion -------------------------------------------------
    @builtin
    def __getitem__(self, slices, _semantic=None):
        """`x[None, :]`: only `None` (new axis) and bare `:` are accepted."""
        return _semantic.getitem(self, slices)

    @builtin
    def to(self, dtype: dtype, fp_downcast_rounding: str | None = None, bitcast: bool = False, _semantic=None):
        """Alias of `tl.cast(self, dtype, fp_downcast_rounding, bitcast)`."""
        return cast(self, dtype, fp_downcast_rounding, bitcast, _semantic=_semantic)


def _check_shift_width(x: tensor, shift) -> None:
    shift = _unwrap_if_constexpr(shift)
    if isinstance(shift, int) and not isinstance(shift, bool) and x.dtype.is_int():
        width = x.dtype.primitive_bitwidth
        if shift >= width:
            warnings.warn(f"Value {shift} exceeds the maximum bitwidth ({width}) for type "
                          f"'{dtype_name(x.dtype)}'. This may result in undefined behavior.", stacklevel=2)


class tuple(base_value):
    """A compile-time tuple of kernel values (`tl.tuple`)."""

    def __init__(self, values, type=None):
        self.values = [v for v in values]
        self.type = type

    def __getitem__(self, index):
        index = _unwrap_if_constexpr(index)
        if isinstance(index, slice):
            index = index.to_python()
        if isinstance(index, builtins.slice):
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

    def __mul__(self, count):
        """The values repeated `count` times (a compile-time int): `[2] * (RANK - 2)`."""
        times = _unwrap_if_constexpr(count)
        if not isinstance(times, int) or isinstance(times, bool):
            raise TypeError(f"a tuple can only be repeated a compile-time int number of times, got {count!r}")
        return tuple(self.values * times)

    def __str__(self):
        # Triton's form (static_print, messages): the list of the values' texts,
        # constexprs unwrapped: `['128', 'int32[]']`.
        return str([str(_unwrap_if_constexpr(v)) for v in self.values])

    def __repr__(self):
        return "(" + ", ".join(repr(v) for v in self.values) + ")"


class const:
    """Annotation marking a pointer parameter as read-only (`tl.const`)."""


class slice(base_value):
    """A slice written in kernel code (`x[:, None]`, `t[1:3]`): `start`, `stop`
    and `step`, each None when left out. Tensors accept only the full slice `:`;
    tuples take any compile-time slice."""

    def __init__(self, start, stop, step):
        self.start = start
        self.stop = stop
        self.step = step

    def to_python(self) -> builtins.slice:
        """The Python slice of the compile-time parts."""
        return builtins.slice(_unwrap_if_constexpr(self.start), _unwrap_if_constexpr(self.stop),
                              _unwrap_if_constexpr(self.step))

    def __repr__(self) -> str:
        return f"slice({self.start!r}, {self.stop!r}, {self.step!r})"


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

pi32_t = pointer_type(int32)


class tuple_type:
    """The type of a `tl.tuple`: the types of its values (and field names of a namedtuple)."""

    def __init__(self, types, fields=None):
        self.types = list(types)
        self.fields = list(fields) if fields is not None else None

    def __eq__(self, other):
        return isinstance(other, tuple_type) and other.types == self.types and other.fields == self.fields

    def __hash__(self):
        return hash(builtins.tuple(self.types))

    def __str__(self):
        return f"[{', '.join(str(t) for t in self.types)}]"

    def __repr__(self):
        return f"tuple_type({self.types!r})"


class PropagateNan(enum.IntEnum):
    """Whether `maximum`/`minimum`/`clamp` return NaN when an operand is NaN (ALL)
    or the other operand (NONE, IEEE maxNum)."""

    NONE = 0x0000
    ALL = 0xFFFF


def dtype_name(ty: dtype) -> str:
    """The name Triton prints for a dtype in messages: `int32`, `uint8`, `fp16`, `bf16`."""
    return str(ty)


class NotConstexprError(TypeError, ValueError):
    """A value known only at run time (`value`, a tensor) was used where the
    compiler needs a constant (a block shape, an `arange` bound). Both a
    TypeError and a ValueError, as Triton raises one or the other for these;
    the frontend adds a hint naming the kernel parameter to declare `tl.constexpr`."""

    def __init__(self, message: str, value: Any = None):
        super().__init__(message)
        self.value = value


def validate_block_shape(shape) -> int:
    """The number of elements of a block `shape`; every dim must be a power of two
    and the total at most TRITON_MAX_TENSOR_NUMEL."""
    numel = 1
    for i, d in enumerate(shape):
        if isinstance(d, tensor):
            raise NotConstexprError(f"Shape element {i} must have type `constexpr[int]`, got a run-time "
                                    f"{d.type} value: shapes must be known at compile time", d)
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"Shape element {i} must have type `constexpr[int]`, got `constexpr[{type(d)}]")
        if d <= 0 or d & (d - 1):
            raise ValueError(f"Shape element {i} must be a power of 2")
        numel *= d
    if numel > TRITON_MAX_TENSOR_NUMEL:
        raise ValueError(f"numel ({numel}) exceeds triton maximum tensor numel ({TRITON_MAX_TENSOR_NUMEL})")
    return numel


def _unwrap_iterable(values):
    """`values[0]` when `values` is a single sequence (`f(x, (1, 2))` vs `f(x, 1, 2)`)."""
    if len(values) == 1:
        only = _unwrap_if_constexpr(values[0])
        if isinstance(only, (builtins.tuple, list, tuple)):
            return list(only)
    return list(values)


def _shape_check_impl(shape) -> list[int]:
    # Integers of any kind (numpy's too) become ints; anything else (a run-time
    # tensor, a float) reaches validate_block_shape and is reported by index.
    shape = [_unwrap_if_constexpr(s) for s in _unwrap_if_constexpr(shape)]
    shape = [int(d) if isinstance(d, numbers.Integral) else d for d in shape]
    validate_block_shape(shape)
    return shape


def _wrap_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"invalid axis {axis}. Expected {-ndim} <= axis < {ndim}")
    return axis if axis >= 0 else axis + ndim


def _tensor_member(fn: T) -> T:
    """Also make the builtin `fn(x, ...)` available as the method `x.fn(...)`."""
    setattr(tensor, fn.__name__, fn)
    return fn


def jit_tensor_method(jit_fn, name: str | None = None) -> None:
    """Make the `@jit` function `jit_fn(x, ...)` available as the method `x.name(...)`:
    a builtin that binds the arguments by `jit_fn`'s signature (defaults filled in)
    and compiles the call through the codegen's `call_jit_function`."""
    python_fn = getattr(jit_fn, "fn", jit_fn)
    signature = inspect.signature(python_fn)

    def method(self, *args, _semantic=None, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        return _semantic.call_jit_function(jit_fn, list(bound.arguments.values()))

    method.__name__ = name or python_fn.__name__
    method.__doc__ = f"Calls `{python_fn.__name__}` on this tensor."
    setattr(tensor, method.__name__, builtin(method))


# ---------------------------------------------------------------------------
# Program model and construction
# ---------------------------------------------------------------------------

@builtin
def to_tensor(x, _semantic=None):
    """`x` as a tensor (Python literals typed as Triton types them)."""
    return _semantic.to_tensor(x)


@builtin
def program_id(axis, _semantic=None):
    """The id of this program along `axis` (0, 1 or 2), an i32 scalar."""
    return _semantic.program_id(_unwrap_if_constexpr(axis))


@builtin
def num_programs(axis, _semantic=None):
    """The number of programs launched along `axis` (0, 1 or 2), an i32 scalar."""
    return _semantic.num_programs(_unwrap_if_constexpr(axis))


@builtin
def arange(start, end, _semantic=None):
    """The i32 values `start, ..., end - 1`; `end - start` must be a power of two."""
    return _semantic.arange(_unwrap_if_constexpr(start), _unwrap_if_constexpr(end))


@builtin
def full(shape, value, dtype, _semantic=None):
    """A tensor of `shape` filled with `value` converted to `dtype` (a scalar for `()`)."""
    shape = _shape_check_impl(shape)
    return _semantic.full(shape, _unwrap_if_constexpr(value), _unwrap_if_constexpr(dtype))


@builtin
def broadcast(input, other, _semantic=None):
    """Both tensors broadcast to their common shape."""
    return _semantic.broadcast_impl_value(_semantic.to_tensor(input), _semantic.to_tensor(other))


@_tensor_member
@builtin
def broadcast_to(input, *shape, _semantic=None):
    """`input` broadcast to `shape` (`broadcast_to(x, (32, 32))` or `broadcast_to(x, 32, 32)`)."""
    shape = _shape_check_impl(_unwrap_iterable(shape))
    return _semantic.broadcast_impl_shape(_semantic.to_tensor(input), shape)


@_tensor_member
@builtin
def trans(input, *dims, _semantic=None):
    """Permute the dims; without `dims`, swap the last two."""
    dims = [_unwrap_if_constexpr(d) for d in _unwrap_iterable(dims)]
    if not dims:
        n = len(input.shape)
        if n < 2:
            raise ValueError("tl.trans invoked with a 0- or 1-dimensional tensor")
        dims = list(builtins.range(n - 2)) + [n - 1, n - 2]
    return _semantic.permute(input, dims)


@_tensor_member
@builtin
def permute(input, *dims, _semantic=None):
    """`result.shape[i] = input.shape[dims[i]]`; `dims` must be a full permutation."""
    dims = [_unwrap_if_constexpr(d) for d in _unwrap_iterable(dims)]
    return _semantic.permute(input, dims)


@builtin
def cat(input, other, can_reorder=False, _semantic=None):
    """Concatenate two 1-D tensors; `can_reorder=True` is required (element order unspecified)."""
    return _semantic.cat(input, other, _unwrap_if_constexpr(can_reorder))


@builtin
def join(a, b, _semantic=None):
    """Stack `a` and `b` (broadcast together) along a new last dim of size 2."""
    return _semantic.join(a, b)


@_tensor_member
@builtin
def split(a, _semantic=None):
    """Inverse of `join`: the halves of the last dim (of size 2)."""
    return _semantic.split(a)


@_tensor_member
@builtin
def view(input, *shape, _semantic=None):
    """Deprecated: `reshape(input, shape, can_reorder=True)`."""
    warnings.warn("view is deprecated, please use reshape with can_reorder being true.", stacklevel=2)
    shape = _shape_check_impl(_unwrap_iterable(shape))
    return _semantic.reshape(input, shape, can_reorder=True)


@_tensor_member
@builtin
def item(input, _semantic=None):
    """A one-element tensor as a scalar."""
    return _semantic.unsplat(input)


@_tensor_member
@builtin
def reshape(input, *shape, can_reorder=False, _semantic=None):
    """`input` with a new shape of the same number of elements (row-major order)."""
    shape = _shape_check_impl(_unwrap_iterable(shape))
    return _semantic.reshape(input, shape, _unwrap_if_constexpr(can_reorder))


@_tensor_member
@builtin
def expand_dims(input, axis, _semantic=None):
    """Insert dims of size 1 at `axis` (an int or a sequence; positions in the result)."""
    input = _semantic.to_tensor(input)
    axis = _unwrap_if_constexpr(axis)
    axes = list(axis) if isinstance(axis, (builtins.tuple, list, tuple)) else [axis]
    new_ndim = len(input.shape) + len(axes)
    axes = [_wrap_axis(_unwrap_if_constexpr(d), new_ndim) for d in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"expand_dims received duplicate axes, normalized axes = {axes}")
    result = input
    for a in sorted(axes):
        result = _semantic.expand_dims(result, a)
    return result


@_tensor_member
@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False, _semantic=None):
    """`input` converted to `dtype` (value conversion, or bit reinterpretation with
    `bitcast=True`); `fp_downcast_rounding` ('rtne', 'rtz') for float narrowing."""
    input = _semantic.to_tensor(input)
    dtype = _unwrap_if_constexpr(dtype)
    fp_downcast_rounding = _unwrap_if_constexpr(fp_downcast_rounding)
    if _unwrap_if_constexpr(bitcast):
        return _semantic.bitcast(input, dtype)
    return _semantic.cast(input, dtype, fp_downcast_rounding)


# ---------------------------------------------------------------------------
# Linear algebra
# ---------------------------------------------------------------------------

@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=float32, _semantic=None):
    """`acc + input @ other` for blocks of rank >= 2 (rank >= 4 is folded into one batch dim).

    fp32 operands are multiplied in TF32 by default, as on the GPU, and the CPU
    interpreter does the same (operands truncated to 10 mantissa bits: errors near
    5e-2 against an fp32 matmul of unit-normal 32x512 @ 512x32). `input_precision="ieee"`, or
    TRITON_F32_DEFAULT=ieee for every dot, gives full fp32 products."""
    input_precision = _unwrap_if_constexpr(input_precision)
    allow_tf32 = _unwrap_if_constexpr(allow_tf32)
    input_precision = _semantic.dot_input_precision(input_precision, allow_tf32)
    out_dtype = _unwrap_if_constexpr(out_dtype)
    max_num_imprecise_acc = _unwrap_if_constexpr(max_num_imprecise_acc)
    acc = _unwrap_if_constexpr(acc)
    a_shape = [s.value for s in input.shape]
    b_shape = [s.value for s in other.shape]
    shapes = f"input is {a_shape}, other is {b_shape}"
    if not len(a_shape) == len(b_shape) >= 2:
        raise AssertionError(f"input and other must have equal ranks >= 2 ({shapes}); a vector takes part as a "
                             f"[1, K] or [K, 1] block, e.g. x[None, :] or x[:, None]")
    if a_shape[:-2] != b_shape[:-2]:
        raise AssertionError(f"input and other must have equal batch shapes ({shapes})")
    if a_shape[-1] != b_shape[-2]:
        raise AssertionError(f"input and other must have equal reduction dimensions ({shapes}): tl.dot multiplies "
                             f"[M, K] by [K, N], so input's last dimension must equal other's first "
                             f"(tl.trans swaps the dimensions of a 2-D block)")
    c_shape = a_shape[:-1] + [b_shape[-1]]
    if acc is not None and [s.value for s in acc.shape] != c_shape:
        raise AssertionError("accumulator shape is incompatible")
    rank = len(c_shape)
    if rank >= 4:
        batch = 1
        for d in c_shape[:-2]:
            batch *= d
        input = _semantic.reshape(input, [batch] + a_shape[-2:])
        other = _semantic.reshape(other, [batch] + b_shape[-2:])
        if acc is not None:
            acc = _semantic.reshape(acc, [batch] + c_shape[-2:])
    result = _semantic.dot(input, other, acc, input_precision, max_num_imprecise_acc, out_dtype)
    if rank >= 4:
        result = _semantic.reshape(result, c_shape)
    return result


# ---------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------

def _optional_tensor(value, _semantic):
    value = _unwrap_if_constexpr(value)
    return None if value is None else _semantic.to_tensor(value)


@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False, _semantic=None):
    """Read memory through a pointer, a block of pointers or a block pointer; masked-off
    lanes give `other` (0 without it); out-of-bounds lanes of a block pointer's
    `boundary_check` dims give `padding_option`'s value."""
    mask = _optional_tensor(mask, _semantic)
    other = _optional_tensor(other, _semantic)
    # a block pointer (block_pointer.py) is not a tensor: Semantic.load tells them apart
    return _semantic.load(_unwrap_if_constexpr(pointer), mask, other, _unwrap_if_constexpr(boundary_check),
                          _unwrap_if_constexpr(padding_option), _unwrap_if_constexpr(cache_modifier),
                          _unwrap_if_constexpr(eviction_policy), _unwrap_if_constexpr(volatile))


@_tensor_member
@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy="", _semantic=None):
    """Write `value` (broadcast to the pointer's shape, cast to its element type) where `mask`."""
    mask = _optional_tensor(mask, _semantic)
    value = _semantic.to_tensor(value)
    return _semantic.store(_unwrap_if_constexpr(pointer), value, mask, _unwrap_if_constexpr(boundary_check),
                           _unwrap_if_constexpr(cache_modifier), _unwrap_if_constexpr(eviction_policy))


def _atomic(kind: str):
    def atomic(pointer, val, mask=None, sem=None, scope=None, _semantic=None):
        return _semantic.atomic_rmw(kind, _semantic.to_tensor(pointer), _semantic.to_tensor(val),
                                    _optional_tensor(mask, _semantic), _unwrap_if_constexpr(sem),
                                    _unwrap_if_constexpr(scope))

    atomic.__name__ = atomic.__qualname__ = f"atomic_{kind}"
    atomic.__doc__ = (f"Atomically `*pointer = {kind}(*pointer, val)` where `mask`; returns the old values. "
                      "`sem`: relaxed, acquire, release, acq_rel (default); `scope`: gpu (default), cta, sys.")
    return _tensor_member(builtin(atomic))


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")
atomic_xchg = _atomic("xchg")


@_tensor_member
@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None, _semantic=None):
    """Atomically `old = *pointer; if old == cmp: *pointer = val`; returns `old`."""
    return _semantic.atomic_cas(_semantic.to_tensor(pointer), cmp, val, _unwrap_if_constexpr(sem),
                                _unwrap_if_constexpr(scope))


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------

@builtin
def where(condition, x, y, _semantic=None):
    """`x` where `condition` else `y` (both always evaluated), promoted and broadcast together."""
    return _semantic.where(condition, x, y)


@builtin
def add(x, y, sanitize_overflow=True, _semantic=None):
    """`x + y`; `sanitize_overflow=False` skips the debug-mode overflow check."""
    return _semantic.add(x, y, _unwrap_if_constexpr(sanitize_overflow))


@builtin
def sub(x, y, sanitize_overflow=True, _semantic=None):
    """`x - y`; `sanitize_overflow=False` skips the debug-mode overflow check."""
    return _semantic.sub(x, y, _unwrap_if_constexpr(sanitize_overflow))


@builtin
def mul(x, y, sanitize_overflow=True, _semantic=None):
    """`x * y`; `sanitize_overflow=False` skips the debug-mode overflow check."""
    return _semantic.mul(x, y, _unwrap_if_constexpr(sanitize_overflow))


@builtin
def _promote_bfloat16_to_float32(t, _semantic=None):
    """bf16 tensors as fp32 (GPUs lack bf16 max/min/compare); others unchanged."""
    if t.type.scalar.is_bf16():
        return _semantic.cast(t, float32)
    return t


@builtin
def minimum(x, y, propagate_nan=PropagateNan.NONE, _semantic=None):
    """Elementwise minimum; literals join the promotion and bf16 computes in fp32."""
    x = _promote_bfloat16_to_float32(_semantic.to_tensor(x), _semantic=_semantic)
    y = _promote_bfloat16_to_float32(_semantic.to_tensor(y), _semantic=_semantic)
    return _semantic.minimum(x, y, _unwrap_if_constexpr(propagate_nan))


@builtin
def maximum(x, y, propagate_nan=PropagateNan.NONE, _semantic=None):
    """Elementwise maximum; literals join the promotion and bf16 computes in fp32."""
    x = _promote_bfloat16_to_float32(_semantic.to_tensor(x), _semantic=_semantic)
    y = _promote_bfloat16_to_float32(_semantic.to_tensor(y), _semantic=_semantic)
    return _semantic.maximum(x, y, _unwrap_if_constexpr(propagate_nan))


@builtin
def clamp(x, min, max, propagate_nan=PropagateNan.NONE, _semantic=None):
    """`minimum(maximum(x, min), max)` on floats; `propagate_nan` applies to `x`."""
    x = _promote_bfloat16_to_float32(_semantic.to_tensor(x), _semantic=_semantic)
    low = _promote_bfloat16_to_float32(_semantic.to_tensor(min), _semantic=_semantic)
    high = _promote_bfloat16_to_float32(_semantic.to_tensor(max), _semantic=_semantic)
    return _semantic.clamp(x, low, high, _unwrap_if_constexpr(propagate_nan))


@builtin
def logical_not(x, _semantic=None):
    """`not x` on a tensor (x is bitcast to i1)."""
    return _semantic.not_(x)


@builtin
def logical_and(x, y, _semantic=None):
    """`x and y` on tensors (operands bitcast to i1, no short-circuit)."""
    return _semantic.logical_and(x, y)


@builtin
def logical_or(x, y, _semantic=None):
    """`x or y` on tensors (operands bitcast to i1, no short-circuit)."""
    return _semantic.logical_or(x, y)


@builtin
def map_elementwise(scalar_fn, *args, pack=1, _semantic=None):
    """Apply the `@jit` function `scalar_fn` to each element of `args` (tensors,
    broadcast together) on its own, so it may branch and loop per element
    (`if x > 0: ...` runs only where true). It returns one scalar or a tuple of
    scalars; the result is a tensor or a tuple of tensors of the inputs' shape.
    With `pack=n`, each call takes n consecutive elements (along the last dim)
    of each input, as `n` arguments per input in a row, and returns `n` values per
    result in a row."""
    return _semantic.map_elementwise(_unwrap_if_constexpr(scalar_fn), [_unwrap_if_constexpr(a) for a in args],
                                     _unwrap_if_constexpr(pack))


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack, _semantic=None):
    """Run the target assembly `asm` (PTX on NVIDIA GPUs) on the elements of `args`
    (tensors, broadcast together without type promotion), `pack` elements per
    invocation. `constraints` is an LLVM constraint string, outputs first
    (`"=r,=r,r,l"`); the asm names its operands `$0, $1, ...` in that order.
    Elements narrower than 32 bits share 32-bit registers (`min(32 // bits, pack)`
    per register, the first in the lowest bits). `dtype` is one dtype (one
    result tensor) or a tuple of them (a tuple of tensors). With `is_pure` the
    compiler may merge or drop the asm like arithmetic; otherwise it runs as
    written, once per invocation. The CPU interpreter cannot run it."""
    dtypes = _unwrap_if_constexpr(dtype)
    single = not isinstance(dtypes, (tuple, builtins.tuple, list))
    dtypes = [dtypes] if single else [_unwrap_if_constexpr(d) for d in dtypes]
    if isinstance(args, (tuple, builtins.tuple, list)):
        args = [_unwrap_if_constexpr(a) for a in args]
    else:
        raise TypeError(f"args must be a list of tensors, got {type(args).__name__}")
    results = _semantic.inline_asm(_unwrap_if_constexpr(asm), _unwrap_if_constexpr(constraints), args, dtypes,
                                   _unwrap_if_constexpr(is_pure), _unwrap_if_constexpr(pack))
    return results[0] if single else tuple(results)


# ---------------------------------------------------------------------------
# Reductions and scans
# ---------------------------------------------------------------------------

def _as_tensor_list(input, _semantic) -> list:
    return [_semantic.to_tensor(t) for t in input]


@_tensor_member
@builtin
def reduce(input, axis, combine_fn, keep_dims=False, _semantic=None):
    """Combine the elements of `input` (a tensor or a tuple of same-shape tensors) along
    `axis` (all axes when None) with the `@jit` function `combine_fn`, which takes
    `2n` scalars `(a0.., b0..)` and returns `n`."""
    axis = _unwrap_if_constexpr(axis)
    keep_dims = _unwrap_if_constexpr(keep_dims)
    combine_fn = _unwrap_if_constexpr(combine_fn)
    if isinstance(input, tensor):
        return reduce((input,), axis, combine_fn, keep_dims, _semantic=_semantic)[0]
    inputs = _as_tensor_list(input, _semantic)
    rank = len(inputs[0].shape)
    if axis is not None:
        axis = _wrap_axis(axis, rank)
    results = _semantic.reduction(inputs, axis, combine_fn)
    if keep_dims:
        if axis is not None:
            results = [_semantic.expand_dims(t, axis) for t in results]
        else:
            expanded = []
            for t in results:
                for _ in builtins.range(rank):
                    t = _semantic.expand_dims(t, 0)
                expanded.append(t)
            results = expanded
    return tuple(list(results))


@builtin
def _reduce_with_indices(input, axis, combine_fn, keep_dims=False, _semantic=None):
    """Reduce `(input, index along axis)` pairs with `combine_fn`; returns (values, indices)."""
    axis = _unwrap_if_constexpr(axis)
    n = input.shape[axis].value
    index = _semantic.arange(0, n)
    if len(input.shape) > 1:
        other_axes = [d for d in builtins.range(len(input.shape)) if d != axis]
        index = expand_dims(index, other_axes, _semantic=_semantic)
        index = _semantic.broadcast_impl_shape(index, [s.value for s in input.shape])
    values, indices = reduce((input, index), axis, combine_fn, keep_dims, _semantic=_semantic)
    return values, indices


@_tensor_member
@builtin
def associative_scan(input, axis, combine_fn, reverse=False, _semantic=None):
    """Inclusive scan of `input` (a tensor or tuple of tensors) along `axis` with the
    `@jit` function `combine_fn`; `reverse=True` scans from the end."""
    axis = _unwrap_if_constexpr(axis)
    combine_fn = _unwrap_if_constexpr(combine_fn)
    reverse = _unwrap_if_constexpr(reverse)
    if isinstance(input, tensor):
        return associative_scan((input,), axis, combine_fn, reverse, _semantic=_semantic)[0]
    inputs = _as_tensor_list(input, _semantic)
    if axis is None:
        raise ValueError("associative_scan needs an axis")
    axis = _wrap_axis(axis, len(inputs[0].shape))
    return tuple(list(_semantic.associative_scan(inputs, axis, combine_fn, reverse)))


@_tensor_member
@builtin
def histogram(input, num_bins, mask=None, _semantic=None):
    """Counts of the values `0 <= x < num_bins` of a 1-D int tensor (i32 `[num_bins]`)."""
    num_bins = _unwrap_if_constexpr(num_bins)
    return _semantic.histogram(_semantic.to_tensor(input), num_bins, _optional_tensor(mask, _semantic))


@_tensor_member
@builtin
def gather(src, index, axis, _semantic=None):
    """`result[i..] = src[i.. with axis replaced by index[i..]]`."""
    return _semantic.gather(src, index, _unwrap_if_constexpr(axis))


# ---------------------------------------------------------------------------
# Compiler hints
# ---------------------------------------------------------------------------

def _hint_values(values) -> list[int]:
    values = _unwrap_if_constexpr(values)
    if isinstance(values, (builtins.tuple, list, tuple)):
        values = [_unwrap_if_constexpr(v) for v in values]
    else:
        values = [values]
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"values element {v!r} must have type `constexpr[int]`")
    return values


@builtin
def multiple_of(input, values, _semantic=None):
    """Assert to the compiler that each dim of `input` holds multiples of `values`."""
    return _semantic.hint("multiple_of", input, _hint_values(values))


@builtin
def max_contiguous(input, values, _semantic=None):
    """Assert to the compiler that runs of `values` elements of `input` are contiguous."""
    return _semantic.hint("max_contiguous", input, _hint_values(values))


@builtin
def max_constancy(input, values, _semantic=None):
    """Assert to the compiler that runs of `values` elements of `input` are equal."""
    return _semantic.hint("max_constancy", input, _hint_values(values))


@builtin
def assume(cond, _semantic=None):
    """Let the compiler assume the scalar condition `cond` holds."""
    return _semantic.assume(_semantic.to_tensor(cond))


# ---------------------------------------------------------------------------
# Debugging
# ---------------------------------------------------------------------------

@builtin
def static_print(*values, sep: str = " ", end: str = "\n", file=None, flush=False, _semantic=None):
    """Print `values` while the kernel compiles (Python's `print` arguments)."""
    builtins.print(*[_unwrap_if_constexpr(v) for v in values], sep=sep, end=end, file=file, flush=flush)


@builtin
def static_assert(cond, msg="", _semantic=None):
    """Fail compilation unless the compile-time `cond` is true."""
    cond = _unwrap_if_constexpr(cond)
    if isinstance(cond, tensor):
        raise ValueError("static_assert needs a compile-time condition, got a tensor")
    if not cond:
        raise AssertionError(f"Static assertion failed: {_unwrap_if_constexpr(msg)}")


@builtin
def device_print(prefix, *args, hex=False, _semantic=None):
    """Print `args` from every program when the kernel runs, after the ASCII `prefix`."""
    prefix = _unwrap_if_constexpr(prefix)
    if not isinstance(prefix, str):
        raise AssertionError(f"{prefix} is not string")
    if not all(ch in string.printable for ch in prefix):
        raise AssertionError(f"{prefix} is not an ascii string")
    args = [_semantic.to_tensor(arg) for arg in args]
    return _semantic.device_print(prefix, args, _unwrap_if_constexpr(hex))


@builtin
def device_assert(cond, msg="", mask=None, _semantic=None):
    """Fail the launch where `cond` is false (only when compiled with debug)."""
    msg = _unwrap_if_constexpr(msg)
    return _semantic.device_assert(_semantic.to_tensor(cond), msg, _optional_tensor(mask, _semantic))


@builtin
def debug_barrier(_semantic=None):
    """Synchronise all threads of the program."""
    return _semantic.debug_barrier()


# ---------------------------------------------------------------------------
# Iterators (the codegen lowers loops over them)
# ---------------------------------------------------------------------------

class static_range(base_value):
    """`for i in tl.static_range(start, end, step)`: constexpr bounds, fully unrolled,
    `i` is a constexpr."""

    def __init__(self, arg1, arg2=None, step=None):
        for value, what in ((arg1, "start"), (arg2, "end"), (step, "step")):
            if value is not None and not isinstance(value, constexpr):
                raise AssertionError(f"{value} used as tl.static_range {what} value is not a constexpr")
        self.step = constexpr(1) if step is None else step
        if arg2 is None:
            self.start, self.end = constexpr(0), arg1
        else:
            self.start, self.end = arg1, arg2

    def __iter__(self):
        raise RuntimeError("static_range can only be used in @triton.jit'd functions")


class range(base_value):
    """`for i in tl.range(start, end, step, num_stages=...)`: a run-time loop whose
    options become attributes of the `for` op."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False, disable_licm=False):
        self.step = constexpr(1) if step is None else step
        if arg2 is None:
            self.start, self.end = constexpr(0), arg1
        else:
            self.start, self.end = arg1, arg2
        self.num_stages = num_stages
        self.loop_unroll_factor = loop_unroll_factor
        self.disallow_acc_multi_buffer = disallow_acc_multi_buffer
        self.flatten = flatten
        self.warp_specialize = warp_specialize
        self.disable_licm = disable_licm

    def __iter__(self):
        raise RuntimeError("tl.range can only be used in @triton.jit'd functions")


class condition(base_value):
    """`while tl.condition(c, disable_licm=True):` a while-loop condition with options."""

    def __init__(self, arg1, disable_licm=False):
        self.condition = arg1
        self.disable_licm = disable_licm


# Triton's decorator for aggregate classes (`tl.core._aggregate`); it builds on base_value.
from .aggregate import _aggregate  # noqa: E402,F401
