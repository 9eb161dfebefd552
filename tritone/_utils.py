"""Triton's `triton._utils`: paths into nested tuples of kernel arguments, and
the canonical spellings of type names. TorchInductor reads `find_paths_if` and
`get_iterable_path` to turn specialization attributes into compile attributes.

A path is a tuple of indices: `(2,)` is the third argument, `(2, 0)` the first
element of that (tuple) argument.
"""

from __future__ import annotations

from functools import reduce
from typing import Any, Callable

from .language.core import TRITON_MAX_TENSOR_NUMEL, validate_block_shape
from .runtime.jit import type_canonicalisation_dict

__all__ = ["BITWIDTH_DICT", "TRITON_MAX_TENSOR_NUMEL", "canonicalize_dtype", "canonicalize_ptr_dtype",
           "find_paths_if", "get_iterable_path", "get_primitive_bitwidth", "is_namedtuple", "is_power_of_two",
           "set_iterable_path", "type_canonicalisation_dict", "validate_block_shape"]

ObjPath = tuple[int, ...]

# `type_canonicalisation_dict` (runtime.jit's, which tritone's signatures use)
# maps type names as people write them (`float32`, `bool`, `uint8`) to the
# signatures' spelling (`fp32`, `u1`, `u8`); every canonical name maps to itself.

BITWIDTH_DICT: dict[str, int] = {
    **{f"u{bits}": bits for bits in (1, 8, 16, 32, 64)},
    **{f"i{bits}": bits for bits in (1, 8, 16, 32, 64)},
    **{f"fp{bits}": bits for bits in (16, 32, 64)},
    **{f"fp8{suffix}": 8 for suffix in ("e4nv", "e4b15", "e4b8", "e5", "e5b16")},
    "bf16": 16,
    "void": 0,
}
BITWIDTH_DICT.update({name: BITWIDTH_DICT[canonical] for name, canonical in type_canonicalisation_dict.items()})


def _elements(value: Any) -> list[Any] | None:
    """The elements of a list, tuple, `tl.tuple` or `tl.tuple_type` (its types);
    None for anything else, which is a leaf."""
    from .language import core

    if isinstance(value, (list, tuple, core.tuple)):
        return list(value)
    if isinstance(value, core.tuple_type):
        return list(value.types)
    return None


def get_iterable_path(iterable: Any, path: ObjPath) -> Any:
    """The element of nested tuples/lists at `path` (`iterable` itself for `()`)."""
    return reduce(lambda value, index: value[index], path, iterable)


def set_iterable_path(iterable: Any, path: ObjPath, value: Any) -> None:
    """Replace the element at `path` (not empty) of nested lists or `tl.tuple`s."""
    from .language import core

    if not path:
        raise ValueError("set_iterable_path needs a non-empty path")
    parent = get_iterable_path(iterable, path[:-1])
    if isinstance(parent, core.tuple):
        parent.values[path[-1]] = value
    elif isinstance(parent, list):
        parent[path[-1]] = value
    else:
        raise TypeError(f"set_iterable_path: the element at {path[:-1]} is a {type(parent).__name__}, "
                        f"not a tl.tuple or list")


def find_paths_if(iterable: Any, pred: Callable[[ObjPath, Any], bool]) -> list[ObjPath]:
    """The paths of the leaves of `iterable` (nested lists, tuples, `tl.tuple`s)
    for which `pred(path, leaf)` holds, depth first in order. A value that is
    not a sequence is the one leaf at path `()`."""
    found: list[ObjPath] = []

    def visit(path: ObjPath, value: Any) -> None:
        elements = _elements(value)
        if elements is None:
            if pred(path, value):
                found.append(path)
            return
        for index, element in enumerate(elements):
            visit((*path, index), element)

    visit((), iterable)
    return found


def is_power_of_two(x: int) -> bool:
    """Whether `x & (x - 1)` is 0 (true for 0, as in Triton)."""
    return (x & (x - 1)) == 0


def canonicalize_dtype(dtype: Any) -> str:
    """The signature name of a torch, numpy or tl dtype, or of a name
    (`torch.float16` -> `fp16`, `"bool"` -> `u1`)."""
    name = str(dtype).split(".")[-1]
    if name not in type_canonicalisation_dict:
        raise KeyError(f"no Triton type for dtype {dtype!r}")
    return type_canonicalisation_dict[name]


def canonicalize_ptr_dtype(dtype: Any, is_const: bool) -> str:
    """The signature type of a pointer to `dtype` (`*fp16`, `*kfp16` when const)."""
    return ("*k" if is_const else "*") + canonicalize_dtype(dtype)


def get_primitive_bitwidth(dtype: str) -> int:
    """Bits of one element of the type named `dtype` (`"fp16"` or `"float16"`: 16)."""
    return BITWIDTH_DICT[dtype]


def is_namedtuple(value: Any) -> bool:
    """Whether `value` is a namedtuple class (not an instance)."""
    return isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields")
