"""A thin layer over tritone.ir.core.Builder for writing interpreter tests."""

from __future__ import annotations

from tritone.ir.core import Builder, Function, Location, Module, Region, Value
from tritone.ir.types import block_type, dtype, parse_type


def T(text: str) -> dtype:
    return parse_type(text)


class KernelBuilder:
    """Builds a one-function module; `op` creates an op at the insertion point."""

    def __init__(self, name: str, params: list[tuple[str, str]], file: str = "kernel.py"):
        self.module = Module(name)
        self.fn = Function(name, [T(t) for _, t in params], [n for n, _ in params], attrs={"kernel": True})
        self.module.add(self.fn)
        self.b = Builder(self.fn.body)
        self.file = file
        self.line = 1
        self.b.loc = Location(file, 1, 0, name)
        self.args = {n: a for (n, _), a in zip(params, self.fn.args)}

    def at(self, line: int) -> "KernelBuilder":
        """Stamp the following ops with source line `line`."""
        self.b.loc = Location(self.file, line, 0, self.fn.name)
        return self

    def op(self, opname: str, operands=(), result=None, /, *, regions=(), **attrs):
        results = [] if result is None else ([result] if isinstance(result, (str, dtype)) else list(result))
        types = [T(r) if isinstance(r, str) else r for r in results]
        op = self.b.create(opname, list(operands), types, attrs, list(regions))
        if len(op.results) == 1:
            return op.results[0]
        return op.results

    def const(self, value, ty) -> Value:
        return self.op("constant", (), ty, value=value)

    def pid(self, axis: int = 0) -> Value:
        return self.op("program_id", (), "i32", axis=axis)

    def arange(self, n: int, start: int = 0) -> Value:
        return self.op("arange", (), f"<{n}xi32>", start=start, end=start + n)

    def splat(self, v: Value, shape) -> Value:
        return self.op("splat", [v], block_type(v.type, shape))

    def region(self, arg_types, build) -> Region:
        """A region whose ops `build(*args)` creates; it must create the terminator."""
        region = Region([T(t) if isinstance(t, str) else t for t in arg_types])
        saved = self.b.insertion_point()
        self.b.set_insertion_point_to_end(region)
        build(*region.args)
        self.b.restore_insertion_point(saved)
        return region

    def finish(self) -> Module:
        self.op("return")
        return self.module


def elementwise(op_name: str, inputs, in_types, out_type: str, /, **attrs):
    """Run one program that loads each input block, applies `op_name`, and stores
    the result; returns the output in its memory representation.

    `inputs` are numpy arrays in memory representation (bf16 as uint16 bits, fp8
    as uint8 codes), all of the same power-of-two length."""
    import numpy as np

    from tritone.interpreter import run_kernel
    from tritone.interpreter import values as V

    n = len(inputs[0])
    params = [(f"in{i}", "*" + t) for i, t in enumerate(in_types)] + [("out", "*" + out_type)]
    k = KernelBuilder(f"elementwise_{op_name}", params)
    offsets = k.arange(n)
    loaded = []
    for i, t in enumerate(in_types):
        ptr = k.op("addptr", [k.splat(k.args[f"in{i}"], [n]), offsets], f"<{n}x*{t}>")
        loaded.append(k.op("load", [ptr], f"<{n}x{t}>"))
    result = k.op(op_name, loaded, f"<{n}x{out_type}>", **attrs)
    out_ptr = k.op("addptr", [k.splat(k.args["out"], [n]), offsets], f"<{n}x*{out_type}>")
    k.op("store", [out_ptr, result])
    out = np.zeros(n, dtype=V.storage_dtype(T(out_type)))
    run_kernel(k.finish(), (1, 1, 1), [np.ascontiguousarray(a) for a in inputs] + [out])
    return out
