"""Reads the IR's text form (see printer.py) back into a `Module`.

`parse_module(print_module(m))` rebuilds `m`: same functions, ops, types,
attributes, locations and value names, so that printing it again gives the
same text. `//` starts a comment that runs to the end of the line (so IR
dumps with their header lines parse).

Block types with a layout, `<64xfp32, BlockedLayout(...)>`, read their layout
with the CUDA backend's `layouts.parse_layout`, imported when the first such
type is met (tritone.ir does not import the backend otherwise).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import TritonError
from .core import UNKNOWN_LOC, Function, Location, Module, Operation, Region, Value
from .types import dtype, parse_type, type_text


class IRParseError(TritonError):
    """The text is not valid IR; the message names the line and column."""


_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*")
_VALUE_NAME = re.compile(r"[A-Za-z0-9_.$]+")
_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_SCALAR_TYPE = re.compile(r"(\*k?)*[A-Za-z_][A-Za-z0-9_]*")
_FLOAT = re.compile(r"-?(\d+\.\d*([eE][-+]?\d+)?|\d+[eE][-+]?\d+)")
_INT = re.compile(r"-?\d+")
_KEYWORD_VALUES = {"true": True, "false": False, "none": None, "inf": float("inf"), "nan": float("nan")}


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        # Names of the function being parsed: unique per function.
        self.values: dict[str, Value] = {}

    # -- low-level scanning ------------------------------------------------
    def error(self, message: str, pos: int | None = None) -> IRParseError:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        line_text = self.text.splitlines()[line - 1] if self.text.splitlines()[line - 1:line] else ""
        return IRParseError(f"IR parse error at line {line}, column {col}: {message}\n  {line_text}")

    def skip_space(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t\r\n":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end + 1
            else:
                break

    def peek(self, token: str) -> bool:
        self.skip_space()
        return self.text.startswith(token, self.pos)

    def accept(self, token: str) -> bool:
        if self.peek(token):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str) -> None:
        if not self.accept(token):
            found = self.text[self.pos:self.pos + 12].split("\n")[0] or "end of text"
            raise self.error(f"expected {token!r}, found {found!r}")

    def match(self, pattern: re.Pattern, what: str) -> str:
        self.skip_space()
        m = pattern.match(self.text, self.pos)
        if m is None:
            raise self.error(f"expected {what}")
        self.pos = m.end()
        return m.group(0)

    def at_end(self) -> bool:
        self.skip_space()
        return self.pos >= len(self.text)

    def string(self) -> str:
        self.skip_space()
        start = self.pos
        if not self.text.startswith('"', start):
            raise self.error("expected a string")
        i = start + 1
        while i < len(self.text) and self.text[i] != '"':
            i += 2 if self.text[i] == "\\" else 1
        if i >= len(self.text):
            raise self.error("unterminated string", start)
        self.pos = i + 1
        try:
            return json.loads(self.text[start:self.pos])
        except json.JSONDecodeError as exc:
            raise self.error(f"bad string literal: {exc.msg}", start) from None

    def symbol(self) -> str:
        self.expect("@")
        if self.peek('"'):
            return self.string()
        return self.match(_SYMBOL, "a symbol name")

    # -- types, attributes, locations ---------------------------------------
    def type(self) -> dtype:
        self.skip_space()
        start = self.pos
        if self.text.startswith(("tensordesc<", "tensormap<"), start):
            end = self.text.find(">", start)
            if end < 0:
                raise self.error("unterminated tensor descriptor type")
            self.pos = end + 1
            try:
                return parse_type(self.text[start:self.pos])
            except (ValueError, TypeError) as exc:
                raise self.error(f"bad type {self.text[start:self.pos]!r}: {exc}", start) from None
        if not self.text.startswith("<", start):
            text = self.match(_SCALAR_TYPE, "a type")
            try:
                return parse_type(text)
            except (ValueError, TypeError) as exc:
                raise self.error(f"bad type {text!r}: {exc}", start) from None
        depth, i = 0, start
        while i < len(self.text):
            depth += {"<": 1, ">": -1}.get(self.text[i], 0)
            i += 1
            if depth == 0:
                break
        text = self.text[start:i]
        self.pos = i
        # `<shape x element, layout>`: the shape and element hold no comma.
        block_text, comma, layout_text = text[1:-1].partition(",")
        try:
            block = parse_type(f"<{block_text}>")
        except (ValueError, TypeError) as exc:
            raise self.error(f"bad type {text!r}: {exc}", start) from None
        if not comma:
            return block
        try:
            return block.with_layout(_parse_layout(layout_text))
        except (ValueError, TypeError) as exc:
            raise self.error(f"bad layout in type {text!r}: {exc}", start) from None

    def type_list(self) -> list[dtype]:
        self.expect("(")
        types: list[dtype] = []
        if not self.accept(")"):
            types.append(self.type())
            while self.accept(","):
                types.append(self.type())
            self.expect(")")
        return types

    def attr_value(self) -> Any:
        self.skip_space()
        if self.peek('"'):
            return self.string()
        if self.accept("!"):
            return self.type()
        if self.accept("["):
            items = []
            if not self.accept("]"):
                items.append(self.attr_value())
                while self.accept(","):
                    items.append(self.attr_value())
                self.expect("]")
            return tuple(items)
        if self.peek("{"):
            return self.attr_dict(int_keys=True)
        if self.accept("-inf"):
            return float("-inf")
        m = _FLOAT.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return float(m.group(0))
        m = _INT.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return int(m.group(0))
        m = _SYMBOL.match(self.text, self.pos)
        if m and m.group(0) in _KEYWORD_VALUES:
            self.pos = m.end()
            return _KEYWORD_VALUES[m.group(0)]
        raise self.error("expected an attribute value")

    def starts_attr_dict(self) -> bool:
        """`{` followed by `key =` (or `}`): an attribute dict rather than a body."""
        self.skip_space()
        if not self.text.startswith("{", self.pos):
            return False
        saved = self.pos
        self.pos += 1
        try:
            if self.peek("}"):
                return True
            if self.peek('"'):
                self.string()
            else:
                self.match(_SYMBOL, "")
            return self.peek("=")
        except IRParseError:
            return False
        finally:
            self.pos = saved

    def attr_dict(self, int_keys: bool = False) -> dict[Any, Any]:
        """`{key = value, ...}`; keys are names or quoted strings, and also ints
        with `int_keys` (dict-valued attributes)."""
        self.expect("{")
        attrs: dict[Any, Any] = {}
        if self.accept("}"):
            return attrs
        while True:
            self.skip_space()
            key_pos = self.pos
            key: Any
            if self.peek('"'):
                key = self.string()
            elif int_keys and _INT.match(self.text, self.pos):
                key = int(self.match(_INT, "an integer key"))
            else:
                key = self.match(_SYMBOL, "an attribute name")
            if key in attrs:
                raise self.error(f"attribute {key!r} given twice", key_pos)
            self.expect("=")
            attrs[key] = self.attr_value()
            if self.accept("}"):
                return attrs
            self.expect(",")

    def optional_loc(self) -> Location:
        if not self.accept("loc("):
            return UNKNOWN_LOC
        file = self.string()
        self.expect(":")
        line = int(self.match(_INT, "a line number"))
        self.expect(":")
        col = int(self.match(_INT, "a column number"))
        self.expect(")")
        return Location(file, line, col)

    # -- values ---------------------------------------------------------------
    def value_name(self) -> tuple[str, int]:
        """The name after `%`, and the position of the `%`."""
        self.expect("%")
        pos = self.pos - 1
        return self.match(_VALUE_NAME, "a value name"), pos

    def block_end(self) -> bool:
        """Whether the `}` closing a body comes next (and skip it)."""
        if self.at_end():
            raise self.error("unexpected end of text: a `}` is missing")
        return self.accept("}")

    def define(self, name: str, value: Value, pos: int) -> None:
        if name in self.values:
            raise self.error(f"value %{name} defined twice", pos)
        self.values[name] = value
        value.name_hint = None if name.isdigit() else name

    def use(self) -> Value:
        name, pos = self.value_name()
        value = self.values.get(name)
        if value is None:
            raise self.error(f"use of undefined value %{name}", pos)
        return value

    def typed_args(self) -> tuple[list[tuple[str, int]], list[dtype]]:
        """`(%a: T, %b: U)` as names (with positions) and types."""
        self.expect("(")
        names: list[tuple[str, int]] = []
        types: list[dtype] = []
        if not self.accept(")"):
            while True:
                names.append(self.value_name())
                self.expect(":")
                types.append(self.type())
                if self.accept(")"):
                    break
                self.expect(",")
        return names, types

    # -- structure ---------------------------------------------------------------
    def region(self) -> Region:
        self.expect("{")
        if self.accept("^"):
            names, types = self.typed_args()
            self.expect(":")
        else:
            names, types = [], []
        region = Region(types)
        for (name, pos), arg in zip(names, region.args):
            self.define(name, arg, pos)
        while not self.block_end():
            region.append(self.op())
        return region

    def op(self) -> Operation:
        self.skip_space()
        start = self.pos
        result_names: list[tuple[str, int]] = []
        if self.peek("%"):
            result_names.append(self.value_name())
            while self.accept(","):
                result_names.append(self.value_name())
            self.expect("=")
        name = self.match(_OP_NAME, "an op name")
        self.expect("(")
        operands: list[Value] = []
        if not self.accept(")"):
            operands.append(self.use())
            while self.accept(","):
                operands.append(self.use())
            self.expect(")")
        regions: list[Region] = []
        if self.accept("("):
            regions.append(self.region())
            while self.accept(","):
                regions.append(self.region())
            self.expect(")")
        attrs = self.attr_dict() if self.starts_attr_dict() else {}
        self.expect(":")
        types_pos = self.pos
        operand_types = self.type_list()
        self.expect("->")
        result_types = self.type_list() if self.peek("(") else [self.type()]
        loc = self.optional_loc()
        if len(operand_types) != len(operands):
            raise self.error(f"{name} has {len(operands)} operands but {len(operand_types)} operand types",
                             types_pos)
        for i, (value, ty) in enumerate(zip(operands, operand_types)):
            if value.type != ty:
                raise self.error(f"{name} operand {i} has type {type_text(value.type)}, but the op lists "
                                 f"{type_text(ty)}", types_pos)
        if len(result_types) != len(result_names):
            raise self.error(f"{name} names {len(result_names)} results but lists {len(result_types)} result types",
                             start)
        op = Operation(name, operands, result_types, attrs, regions, loc)
        for (result_name, pos), value in zip(result_names, op.results):
            self.define(result_name, value, pos)
        return op

    def function(self) -> Function:
        self.expect("tt.func")
        name = self.symbol()
        self.values = {}
        names, types = self.typed_args()
        result_types = []
        if self.accept("->"):
            result_types = self.type_list()
        attrs = self.attr_dict() if self.starts_attr_dict() else {}
        loc = self.optional_loc()
        fn = Function(name, types, result_types=result_types, attrs=attrs, loc=loc)
        for (arg_name, pos), arg in zip(names, fn.args):
            self.define(arg_name, arg, pos)
        self.expect("{")
        while not self.block_end():
            fn.body.append(self.op())
        return fn

    def add_function(self, module: Module) -> None:
        pos = self.pos
        fn = self.function()
        if fn.name in module.functions:
            raise self.error(f"function @{fn.name} defined twice", pos)
        module.add(fn)

    def module(self) -> Module:
        if not self.accept("module"):
            # Bare functions: the first is the entry.
            module = Module()
            while not self.at_end():
                self.add_function(module)
            return module
        entry = self.symbol() if self.peek("@") else ""
        attrs = self.attr_dict() if self.accept("attributes") else {}
        module = Module(entry, attrs)
        self.expect("{")
        while not self.block_end():
            self.add_function(module)
        if not self.at_end():
            raise self.error("text after the end of the module")
        if module.entry and module.entry not in module.functions:
            raise self.error(f"entry function @{module.entry} is not defined")
        return module


def _parse_layout(text: str) -> Any:
    """The layout object written as `text` (a CUDA backend layout)."""
    from tritone.ir.layouts import parse_layout

    return parse_layout(text)


def parse_module(text: str) -> Module:
    """The module written in `text` (the printer's form); IRParseError naming
    the line and column of the first problem."""
    return _Parser(text).module()


def parse_function(text: str) -> Function:
    """One function written as `tt.func @name(...) { ... }`."""
    parser = _Parser(text)
    fn = parser.function()
    if not parser.at_end():
        raise parser.error("text after the end of the function")
    return fn
