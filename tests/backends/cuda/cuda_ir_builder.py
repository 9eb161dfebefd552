"""Hand-built IR for the CUDA backend's tests: a thin typed layer over ir.Builder."""

from __future__ import annotations

from tritone.ir import types as T
from tritone.ir.core import Builder, Function, Location, Module, Region, Value


class KernelBuilder:
    """Builds one kernel function op by op; each method returns the new value."""

    def __init__(self, name: str, args: list[tuple[str, T.dtype]], num_warps: int = 4,
                 arg_attrs: dict[int, dict] | None = None, file: str = "/tmp/kernel.py"):
        attrs = {"kernel": True}
        if arg_attrs:
            attrs["arg_attrs"] = arg_attrs
        self.fn = Function(name, [t for _, t in args], [n for n, _ in args], attrs=attrs)
        self.module = Module(name, {"num_warps": num_warps})
        self.module.add(self.fn)
        self.b = Builder(self.fn.body)
        self.file = file
        self.line = 10
        self.args = self.fn.args

    def _next_loc(self) -> Location:
        self.line += 1
        return Location(self.file, self.line, 4, self.fn.name)

    def op(self, op_name: str, operands, result_type=None, /, **attrs) -> Value | None:
        types = [result_type] if result_type is not None else []
        op = self.b.create(op_name, list(operands), types, attrs, loc=self._next_loc())
        return op.results[0] if op.results else None

    def op_multi(self, op_name: str, operands, result_types, regions=(), /, **attrs):
        op = self.b.create(op_name, list(operands), list(result_types), attrs, list(regions), loc=self._next_loc())
        return op

    # -- construction --------------------------------------------------------
    def const(self, value, ty: T.dtype) -> Value:
        return self.op("constant", [], ty, value=value)

    def pid(self, axis: int = 0) -> Value:
        return self.op("program_id", [], T.int32, axis=axis)

    def arange(self, start: int, end: int) -> Value:
        return self.op("arange", [], T.block_type(T.int32, [end - start]), start=start, end=end)

    def splat(self, x: Value, shape) -> Value:
        return self.op("splat", [x], T.block_type(x.type, shape))

    def broadcast(self, x: Value, shape) -> Value:
        return self.op("broadcast", [x], T.block_type(x.type.scalar, shape))

    def expand_dims(self, x: Value, axis: int) -> Value:
        shape = list(x.type.shape)
        shape.insert(axis, 1)
        return self.op("expand_dims", [x], T.block_type(x.type.scalar, shape), axis=axis)

    # -- arithmetic ----------------------------------------------------------
    def binary(self, name: str, a: Value, b: Value, **attrs) -> Value:
        return self.op(name, [a, b], a.type, **attrs)

    def add(self, a, b):
        return self.binary("add", a, b)

    def mul(self, a, b):
        return self.binary("mul", a, b)

    def cmp(self, pred: str, a: Value, b: Value) -> Value:
        ty = T.block_type(T.int1, a.type.shape) if a.type.is_block() else T.int1
        return self.op("cmp", [a, b], ty, pred=pred)

    def addptr(self, p: Value, off: Value) -> Value:
        return self.op("addptr", [p, off], p.type)

    def cast(self, x: Value, elem: T.dtype, **attrs) -> Value:
        ty = T.block_type(elem, x.type.shape) if x.type.is_block() else elem
        return self.op("cast", [x], ty, **attrs)

    def hint(self, x: Value, kind: str, values) -> Value:
        return self.op("hint", [x], x.type, kind=kind, values=tuple(values))

    # -- memory --------------------------------------------------------------
    def load(self, ptr: Value, mask: Value | None = None, other: Value | None = None, **attrs) -> Value:
        operands = [ptr] + ([mask] if mask is not None else []) + ([other] if other is not None else [])
        elem = ptr.type.scalar.element_ty
        ty = T.block_type(elem, ptr.type.shape) if ptr.type.is_block() else elem
        return self.op("load", operands, ty, **attrs)

    def store(self, ptr: Value, value: Value, mask: Value | None = None, **attrs) -> None:
        operands = [ptr, value] + ([mask] if mask is not None else [])
        self.op("store", operands, None, **attrs)

    def ptr_block(self, base: Value, offsets: Value) -> Value:
        """`base + offsets` as a block of pointers."""
        return self.addptr(self.splat(base, offsets.type.shape), offsets)

    # -- regions -------------------------------------------------------------
    def region(self, arg_types) -> tuple[Region, list[Value]]:
        region = Region(list(arg_types))
        return region, region.args

    def inside(self, region: Region) -> "_Inside":
        return _Inside(self, region)

    def ret(self) -> None:
        self.op("return", [], None)


class _Inside:
    def __init__(self, kb: KernelBuilder, region: Region):
        self.kb = kb
        self.region = region

    def __enter__(self):
        self.saved = self.kb.b.insertion_point()
        self.kb.b.set_insertion_point_to_end(self.region)
        return self.region

    def __exit__(self, *exc):
        self.kb.b.restore_insertion_point(self.saved)


def combine_region(kb: KernelBuilder, types: list[T.dtype], body) -> Region:
    """A reduce/scan combine region over `types`: `body(kb, lefts, rights)` returns the yielded values."""
    region, args = kb.region(list(types) * 2)
    with kb.inside(region):
        kb.op("yield", body(kb, args[: len(types)], args[len(types):]))
    return region


def reduce(kb: KernelBuilder, inputs: list[Value], axis: int, body, name: str = "reduce", **attrs) -> list[Value]:
    shape = list(inputs[0].type.shape)
    if name == "reduce":
        del shape[axis]
    types = [T.block_type(v.type.scalar, shape) if shape else v.type.scalar for v in inputs]
    region = combine_region(kb, [v.type.scalar for v in inputs], body)
    return kb.op_multi(name, inputs, types, [region], axis=axis, **attrs).results
