"""Inlining: every `call` is replaced by a copy of its callee's body, then only
the entry function is kept.

A callee's body ends with its one `return`; the copies of its ops go where
the call was (arguments mapped to the call's operands) and the `return`'s
operands take the place of the call's results. Callees are inlined into
first, so calls through several levels disappear in one run. `noinline` is
not honoured: every function ends up in the kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import TritonError
from ..ir.core import Function, Module, Region, Value, clone_operation

if TYPE_CHECKING:
    from . import PassContext


class InliningError(TritonError):
    """A call cannot be inlined: recursion, or an unknown or malformed callee."""


class _Inliner:
    def __init__(self, module: Module):
        self.module = module
        self.done: set[str] = set()
        self.stack: list[str] = []

    def function(self, fn: Function) -> None:
        """Inlines every call in `fn` (and in its callees first)."""
        if fn.name in self.done:
            return
        self.stack.append(fn.name)
        self.region(fn.body, {})
        self.stack.pop()
        self.done.add(fn.name)

    def region(self, region: Region, replaced: dict[Value, Value]) -> None:
        # One forward walk: operands are rewritten through `replaced` before an
        # op is looked at, so a call's operands are final when it is inlined.
        index = 0
        while index < len(region.ops):
            op = region.ops[index]
            op.operands = [replaced.get(v, v) for v in op.operands]
            for inner in op.regions:
                self.region(inner, replaced)
            if op.name != "call":
                index += 1
                continue
            callee = self.callee(op.attrs.get("callee"))
            value_map: dict[Value, Value] = dict(zip(callee.args, op.operands))
            body = callee.body.ops
            del region.ops[index]
            for offset, callee_op in enumerate(body[:-1]):
                region.insert(index + offset, clone_operation(callee_op, value_map))
            index += len(body) - 1
            for result, returned in zip(op.results, body[-1].operands):
                replaced[result] = value_map.get(returned, returned)

    def callee(self, name: str | None) -> Function:
        fn = self.module.functions.get(name) if isinstance(name, str) else None
        if fn is None:
            raise InliningError(f"call to @{name}, which the module does not define")
        if name in self.stack:
            chain = self.stack[self.stack.index(name):] + [name]
            raise InliningError("recursive calls cannot be inlined: " + " -> ".join("@" + n for n in chain))
        ops = fn.body.ops
        if not ops or ops[-1].name != "return" or any(op.name == "return" for op in ops[:-1]):
            raise InliningError(f"function @{name} must end with exactly one `return`")
        self.function(fn)
        return fn


def run(module: Module, ctx: PassContext) -> None:
    """Inlines all calls into the entry function and drops every other function."""
    entry = module.kernel
    _Inliner(module).function(entry)
    module.functions.clear()
    module.functions[entry.name] = entry
