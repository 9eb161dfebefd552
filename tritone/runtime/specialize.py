"""Typing kernel arguments from their values, and the per-kernel binder.

`specialize_value` gives one argument's signature type and specialization
attribute as Triton does (TRITON_CONTRACT section 2, TRITON_SEMANTICS 11):

| value | type | attribute |
|---|---|---|
| None | constexpr | |
| bool | u1 | |
| int == 1 | constexpr 1 (i32 under do_not_specialize) | |
| int in [-2^31, 2^31) | i32 | "D" when divisible by 16 |
| int in [2^63, 2^64) | u64 | "D" |
| other int in [-2^63, 2^63) | i64 | "D" |
| float | fp32 | |
| tensor / array | `*dtype` (`*k...` for const params) | "D" when the address is 16-byte aligned |
| `@jit` function, `tl.constexpr` | constexpr | |

The attribute is `"D"`, `""` (looked at, not divisible) or None (not looked
at: do_not_specialize, or a type that is never specialised).

`make_binder(fn)` generates, once per kernel, a Python function with the
kernel's own parameter list that binds `*args, **kwargs` (defaults applied)
and computes every argument's specialization without `inspect`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..language.core import constexpr
from .jit import _CANONICAL_TYPE_NAMES, JITFunction

CONSTEXPR = "constexpr"
DIVISIBLE = "D"

_I32_MIN, _I32_END = -(1 << 31), 1 << 31
_I64_MIN, _I64_END = -(1 << 63), 1 << 63
_U64_END = 1 << 64


class UnknownKeywordError(KeyError, TypeError):
    """A launch keyword that is neither a parameter of the kernel nor a launch
    option. A KeyError as in Triton, and a TypeError as for any Python call."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _int_type(value: int) -> str:
    if _I32_MIN <= value < _I32_END:
        return "i32"
    if _I64_MIN <= value < _I64_END:
        return "i64"
    if _I64_END <= value < _U64_END:
        return "u64"
    raise OverflowError(f"integer argument {value} does not fit in 64 bits")


_element_type_names: dict[Any, str] = {}


def element_type_name(dtype: Any) -> str:
    """Signature name (`fp32`, `u1`, `fp8e4nv`...) of a torch or numpy dtype."""
    name = _element_type_names.get(dtype)
    if name is None:
        name = _element_type_names[dtype] = _element_type_name(dtype)
    return name


def _element_type_name(dtype: Any) -> str:
    text = str(dtype)
    if text.startswith("torch."):
        text = text[len("torch."):]
    else:
        text = getattr(dtype, "name", text)
    name = _CANONICAL_TYPE_NAMES.get(text)
    if name is None:
        raise TypeError(f"tensors of dtype {dtype} cannot be kernel arguments")
    return name


def data_address(value: Any) -> int:
    """The address of a tensor's or array's first element."""
    data_ptr = getattr(value, "data_ptr", None)
    if data_ptr is not None:
        return data_ptr()
    return value.__array_interface__["data"][0]


def is_pointer_like(value: Any) -> bool:
    return hasattr(value, "data_ptr") or (hasattr(value, "__array_interface__") and hasattr(value, "dtype"))


def constexpr_key(value: Any) -> Any:
    """A hashable stand-in for a constexpr value in cache keys. Keeps the type so
    that `1`, `True` and `1.0` do not share a compiled kernel."""
    if isinstance(value, JITFunction):
        return ("jit", value.cache_key)
    try:
        hash(value)
    except TypeError:
        return (type(value).__qualname__, repr(value))
    return (type(value).__qualname__, value)


def specialize_value(value: Any, is_const: bool = False, specialize: bool = True,
                     align: bool = True) -> tuple[str, Any]:
    """`(type, attribute)` of one argument; for constexprs `("constexpr", key)`
    where key is `constexpr_key(value)`. Raises TypeError for values that cannot
    be kernel arguments."""
    if value is None:
        return CONSTEXPR, constexpr_key(None)
    if isinstance(value, bool):
        return "u1", None
    if isinstance(value, int):
        if value == 1 and specialize:
            return CONSTEXPR, constexpr_key(1)
        type_name = _int_type(value)
        if not specialize:
            return type_name, None
        return type_name, DIVISIBLE if align and value % 16 == 0 else ""
    if isinstance(value, float):
        return "fp32", None
    if isinstance(value, (JITFunction, constexpr)):
        return CONSTEXPR, constexpr_key(value.value if isinstance(value, constexpr) else value)
    if isinstance(value, np.generic):
        # A numpy scalar (np.int32(3), np.bool_(True)) is the Python value it holds.
        return specialize_value(value.item(), is_const, specialize, align)
    if is_pointer_like(value):
        type_name = ("*k" if is_const else "*") + element_type_name(value.dtype)
        if not specialize:
            return type_name, None
        return type_name, DIVISIBLE if align and data_address(value) % 16 == 0 else ""
    if isinstance(value, tuple):
        raise TypeError("tuple arguments are not supported yet; annotate the parameter `tl.constexpr` "
                        "to pass a compile-time tuple")
    raise TypeError(f"failed to specialize argument of type {type(value).__qualname__}")


def specialize_annotated(value: Any, annotation_type: str, specialize: bool, align: bool) -> tuple[str, Any]:
    """Specialization of a parameter annotated with a concrete type (`n: tl.int64`,
    `x: "*fp16"`): the type is the annotation; ints and pointers still get their
    divisibility attribute. Floats and bools are never specialised."""
    if annotation_type == "u1" or annotation_type.startswith(("fp", "bf")) or not specialize:
        return annotation_type, None
    if isinstance(value, bool):
        return annotation_type, None
    if isinstance(value, int):
        return annotation_type, DIVISIBLE if align and value % 16 == 0 else ""
    if is_pointer_like(value):
        return annotation_type, DIVISIBLE if align and data_address(value) % 16 == 0 else ""
    return annotation_type, None


def _checked(fn_name: str, param: str, specialize_fn: Callable, *args) -> tuple[str, Any]:
    try:
        return specialize_fn(*args)
    except (TypeError, OverflowError) as error:
        raise type(error)(f"kernel {fn_name}, argument {param!r}: {error}") from None


Binder = Callable[..., "tuple[dict[str, Any], tuple[tuple[str, Any], ...], dict[str, Any]]"]


def make_binder(fn: JITFunction) -> Binder:
    """A function with `fn`'s parameter list returning `(bound, specialization,
    options)`: every parameter's value by name (defaults applied), one
    `(type, attribute)` per parameter, and the remaining keywords (launch
    options). Python's own TypeError names the kernel on a wrong argument count."""
    namespace: dict[str, Any] = {
        "_specialize": specialize_value, "_annotated": specialize_annotated,
        "_checked": _checked, "_constexpr_key": constexpr_key, "_CONSTEXPR": CONSTEXPR,
        "_fn_name": fn.__name__,
    }
    parameters = []
    specializations = []
    for param in fn.params:
        name = param.name
        if param.has_default:
            namespace[f"_default_{name}"] = param.default
            parameters.append(f"{name}=_default_{name}")
        else:
            parameters.append(name)
        specialize = not param.do_not_specialize
        align = not param.do_not_specialize_on_alignment
        if param.is_constexpr:
            specializations.append(f"(_CONSTEXPR, _constexpr_key({name}))")
        elif param.annotation_type:
            specializations.append(
                f"_checked(_fn_name, {name!r}, _annotated, {name}, {param.annotation_type!r}, {specialize}, {align})")
        else:
            specializations.append(
                f"_checked(_fn_name, {name!r}, _specialize, {name}, {param.is_const}, {specialize}, {align})")
    bound = ", ".join(f"{p.name!r}: {p.name}" for p in fn.params)
    # The generated function carries the kernel's name so that Python's
    # "missing 1 required positional argument" errors name the kernel.
    source = (f"def {fn.__name__}({', '.join([*parameters, '**_launch_options'])}):\n"
              f"    return {{{bound}}}, ({', '.join(specializations)}{',' if specializations else ''}), "
              f"_launch_options\n")
    exec(compile(source, f"<binder of {fn.__name__}>", "exec"), namespace)
    return namespace[fn.__name__]
