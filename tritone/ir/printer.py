"""The IR's text form (docs/IR.md, "Text form"); `parser.py` reads it back.

    module @kernel attributes {num_warps = 4} {
      tt.func @kernel(%x: *fp32, %n: i32) -> (i32) {kernel = true} loc("k.py":3:0) {
        %0 = program_id() {axis = 0} : () -> i32 loc("k.py":4:10)
        %r = for(%lb, %ub, %step, %acc) ({
        ^(%i: i32, %a: fp32):
          yield(%a) : (fp32) -> ()
        }) {num_stages = 3} : (i32, i32, i32, fp32) -> fp32
        return(%0) : (i32) -> ()
      }
    }

Values print as `%hint` when the hint (sanitised) is unique in the function,
else as `%N` numbered in program order. Attribute values: ints, floats
(`repr`, `inf`, `-inf`, `nan`), `true`/`false`, double-quoted strings,
`none`, types `!fp32` (block types with their layout:
`!<64xfp32, BlockedLayout(...)>`), tuples `[a, b]`, and dicts written like
an attribute dictionary whose keys are names, quoted strings or ints:
`{0 = {divisibility = 16}}`.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .core import UNKNOWN_LOC, Function, Location, Module, Operation, Region, Value
from .types import dtype, type_text

INDENT = "  "
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*\Z")
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.$]")


class ValueNamer:
    """Gives every value of a function a stable printed name."""

    def __init__(self, fn: Function | None = None):
        self._names: dict[Value, str] = {}
        self._counter = 0
        if fn is not None:
            self._name_function(fn)

    def _name_function(self, fn: Function) -> None:
        values: list[Value] = []
        _collect_values(fn.body, values)
        hint_counts: dict[str, int] = {}
        for value in values:
            hint = _sanitise(value.name_hint)
            if hint is not None:
                hint_counts[hint] = hint_counts.get(hint, 0) + 1
        for value in values:
            hint = _sanitise(value.name_hint)
            if hint is not None and hint_counts[hint] == 1:
                self._names[value] = hint
        for value in values:
            if value not in self._names:
                self._names[value] = self._next_number()

    def _next_number(self) -> str:
        name = str(self._counter)
        self._counter += 1
        return name

    def name(self, value: Value) -> str:
        """`%name` of `value`; values outside the named function get fresh numbers
        (prefixed `undef`, so broken IR still prints unambiguously)."""
        name = self._names.get(value)
        if name is None:
            name = "undef" + self._next_number()
            self._names[value] = name
        return "%" + name


def _collect_values(region: Region, values: list[Value]) -> None:
    """The values defined in `region`, in text order."""
    values.extend(region.args)
    for op in region.ops:
        values.extend(op.results)
        for inner in op.regions:
            _collect_values(inner, values)


def _sanitise(hint: str | None) -> str | None:
    if not hint:
        return None
    name = _NAME_UNSAFE.sub("_", hint)
    # Pure numbers are reserved for unnamed values, `undef` for foreign ones.
    if name[0].isdigit() or name.startswith("undef"):
        name = "_" + name
    return name


def format_type(ty: dtype) -> str:
    """`ty` in the IR's compact spelling (`types.type_text`)."""
    return type_text(ty)


def format_symbol(name: str) -> str:
    """`@name`, quoted when `name` is not a plain identifier."""
    return "@" + (name if _IDENT.match(name) else json.dumps(name))


def format_attr_value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    # int()/float() first: numpy scalars subclassing them print differently.
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(float(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dtype):
        return "!" + format_type(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_attr_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_format_key(k)} = {format_attr_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"attribute value {value!r} of type {type(value).__name__} has no text form")


def _format_key(key: Any) -> str:
    """A dictionary key: a bare name, a quoted string, or (in dict values) an int."""
    if isinstance(key, str):
        return key if _IDENT.match(key) else json.dumps(key)
    if isinstance(key, int) and not isinstance(key, bool):
        return str(int(key))
    raise TypeError(f"attribute dictionary key {key!r} of type {type(key).__name__} has no text form")


def format_attrs(attrs: dict[str, Any]) -> str:
    """`{k = v, ...}`, or "" for no attributes."""
    if not attrs:
        return ""
    return format_attr_value(attrs)


def format_loc(loc: Location) -> str:
    """`loc("file":line:col)`, or "" when the location is unknown."""
    if loc.file == UNKNOWN_LOC.file and loc.line == UNKNOWN_LOC.line and loc.col == UNKNOWN_LOC.col:
        return ""
    return f"loc({json.dumps(loc.file)}:{loc.line}:{loc.col})"


def _type_list(values: list[Value]) -> str:
    return "(" + ", ".join(format_type(v.type) for v in values) + ")"


def _result_types(values: list[Value]) -> str:
    if len(values) == 1:
        return format_type(values[0].type)
    return _type_list(values)


class _Printer:
    def __init__(self, namer: ValueNamer, locations: bool):
        self.namer = namer
        self.locations = locations
        self.lines: list[str] = []

    def region_header(self, region: Region, indent: str) -> None:
        if region.args:
            args = ", ".join(f"{self.namer.name(a)}: {format_type(a.type)}" for a in region.args)
            self.lines.append(f"{indent}^({args}):")

    def op(self, op: Operation, indent: str, with_regions: bool = True) -> None:
        head = indent
        if op.results:
            head += ", ".join(self.namer.name(r) for r in op.results) + " = "
        head += op.name + "(" + ", ".join(self.namer.name(v) for v in op.operands) + ")"
        tail = self._op_tail(op)
        if not op.regions:
            self.lines.append(head + tail)
            return
        if not with_regions:
            self.lines.append(head + " ({...})" + tail)
            return
        self.lines.append(head + " ({")
        for i, region in enumerate(op.regions):
            if i:
                self.lines.append(indent + "}, {")
            self.region_body(region, indent)
        self.lines.append(indent + "})" + tail)

    def _op_tail(self, op: Operation) -> str:
        tail = ""
        attrs = format_attrs(op.attrs)
        if attrs:
            tail += " " + attrs
        tail += f" : {_type_list(op.operands)} -> {_result_types(op.results)}"
        loc = format_loc(op.loc) if self.locations else ""
        if loc:
            tail += " " + loc
        return tail

    def region_body(self, region: Region, indent: str) -> None:
        self.region_header(region, indent)
        for inner in region.ops:
            self.op(inner, indent + INDENT)

    def function(self, fn: Function, indent: str) -> None:
        args = ", ".join(f"{self.namer.name(a)}: {format_type(a.type)}" for a in fn.args)
        head = f"{indent}tt.func {format_symbol(fn.name)}({args})"
        if fn.result_types:
            head += " -> (" + ", ".join(format_type(t) for t in fn.result_types) + ")"
        attrs = format_attrs(fn.attrs)
        if attrs:
            head += " " + attrs
        loc = format_loc(fn.loc) if self.locations else ""
        if loc:
            head += " " + loc
        self.lines.append(head + " {")
        for op in fn.body.ops:
            self.op(op, indent + INDENT)
        self.lines.append(indent + "}")


def print_function(fn: Function, locations: bool = True) -> str:
    """The text of `fn` (`tt.func @name(...) { ... }`), ending with a newline."""
    printer = _Printer(ValueNamer(fn), locations)
    printer.function(fn, "")
    return "\n".join(printer.lines) + "\n"


def print_module(module: Module, locations: bool = True) -> str:
    """The text of `module`: `module @entry attributes {...} { functions }`."""
    head = "module"
    if module.entry:
        head += " " + format_symbol(module.entry)
    attrs = format_attrs(module.attrs)
    if attrs:
        head += " attributes " + attrs
    lines = [head + " {"]
    for fn in module.functions.values():
        printer = _Printer(ValueNamer(fn), locations)
        printer.function(fn, INDENT)
        lines.extend(printer.lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def enclosing_function(op: Operation) -> Function | None:
    """The function `op` is nested in, or None for a detached op."""
    node: Any = op
    while node is not None:
        parent = node.parent
        if isinstance(parent, Function):
            return parent
        node = parent
    return None


def print_op(op: Operation, locations: bool = True, regions: bool = True, namer: ValueNamer | None = None) -> str:
    """The text of one op (with its regions unless `regions` is False, then
    `({...})` stands for them), names as in its function's printout."""
    if namer is None:
        namer = ValueNamer(enclosing_function(op))
    printer = _Printer(namer, locations)
    printer.op(op, "", with_regions=regions)
    return "\n".join(printer.lines)
