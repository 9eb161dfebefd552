"""Triton's `specialization_data`: one compilation of a kernel written as JSON
text (what `knobs.runtime.jit_cache_hook` receives as
`compile["specialization_data"]`), which `JITFunction.preload` compiles again
in another process or later.

The JSON object has Triton's fields: `name` (the kernel's module-qualified
name), `signature` (parameter -> type string, a tuple parameter as nested
lists), `constant_keys` / `constant_vals` (index paths of the constexpr
arguments and their values), `attrs_keys` / `attrs_vals` (index paths and
their attributes), `options` and `key`. Values that JSON has no type for are
tagged objects: a constexpr wrapper `{"constexpr": v}` (as Triton writes it),
a dtype `{"dtype": "fp32"}`, a tuple `{"tuple": [...]}`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..language.core import constexpr, dtype


def _encode(value: Any) -> Any:
    if isinstance(value, constexpr):
        return {"constexpr": _encode(value.value)}
    if isinstance(value, dtype):
        return {"dtype": str(value)}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"specialization data cannot hold {value!r} (a {type(value).__name__}): only constexpr "
                    f"numbers, strings, None, dtypes and tuples of them are written")


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if value.keys() == {"constexpr"}:
            return constexpr(_decode(value["constexpr"]))
        if value.keys() == {"dtype"}:
            return dtype(value["dtype"])
        if value.keys() == {"tuple"}:
            return tuple(_decode(v) for v in value["tuple"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _signature_type(value: Any) -> Any:
    """A signature type read back: JSON writes tuples (tuple parameters) as lists,
    and kernel signatures hold no lists."""
    return tuple(_signature_type(v) for v in value) if isinstance(value, list) else value


def _path(key: tuple | str) -> list | str:
    """An argument's key as JSON: an index path (a tuple) as a list; a parameter name as it is."""
    return list(key) if isinstance(key, tuple) else key


def _key(path: list | str) -> tuple | str:
    return tuple(path) if isinstance(path, list) else path


def serialize_specialization_data(name: str, signature: Mapping[str, Any], constants: Mapping[tuple, Any],
                                  attrs: Mapping[tuple, Any], options: Mapping[str, Any], key: Any) -> str:
    """The JSON text of one compilation of kernel `name` (see the module docstring)."""
    return json.dumps({
        "name": name,
        "signature": dict(signature),
        "constant_keys": [_path(path) for path in constants],
        "constant_vals": [_encode(value) for value in constants.values()],
        "attrs_keys": [_path(path) for path in attrs],
        "attrs_vals": [_encode(value) for value in attrs.values()],
        "options": _encode(dict(options)),
        "key": _encode(key),
    })


def deserialize_specialization_data(text: str) -> dict[str, Any]:
    """The fields of `serialize_specialization_data`'s text: `name`, `signature`,
    `constants` and `attrs` (index path tuple -> value), `options` (a dict with
    its lists as tuples) and `key`."""
    data = json.loads(text)
    return {
        "name": data["name"],
        "signature": {param: _signature_type(ty) for param, ty in data["signature"].items()},
        "constants": {_key(path): _decode(value) for path, value in zip(data["constant_keys"], data["constant_vals"])},
        "attrs": {_key(path): _decode(value) for path, value in zip(data["attrs_keys"], data["attrs_vals"])},
        "options": {name: tuple(v) if isinstance(v, list) else v for name, v in _decode(data["options"]).items()},
        "key": _decode(data["key"]),
    }
