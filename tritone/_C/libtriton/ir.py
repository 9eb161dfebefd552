"""`triton._C.libtriton.ir`: the part of Triton's MLIR bindings that code outside
Triton walks, served from tritone's own IR.

TorchInductor (`torch._higher_order_ops.triton_kernel_wrap`) learns which
arguments a user kernel reads and writes by building the kernel's TTIR
(`ASTSource.make_ir(target, options, codegen_fns, module_map, context)`) and
walking it bottom up: every operation's name, operand and result ids, regions,
the block holding it and that block's arguments, `sym_name` of functions and
`callee` of calls. When that fails it assumes every tensor argument is written
and copies them. `ASTSource.make_ir` returns a `module` of this file over the
frontend's IR (before any pass, as Triton's TTIR is), so that analysis runs on
tritone kernels too.

The view is read-only. Operation names are upstream's spelling
(`tt.store`, `tt.atomic_rmw`, `tt.call`, `scf.for`, `arith.addi`, ...; see
`upstream_name`); an op with no upstream counterpart is `tritone.<name>`.
Ids are small integers, stable for the life of the `module` and distinct
between every value, block and region. tritone's regions hold one block each,
so `region` and `block` come in pairs.
"""

from __future__ import annotations

from typing import Any, Callable

from ...ir.core import Function, Module, Operation, Region, Value
from ...ir.types import dtype, pointer_type

__all__ = ["block", "context", "load_dialects", "module", "operation", "region", "upstream_name", "value"]


class context:
    """What Triton's compiler keeps its dialects in. tritone's IR needs none:
    `make_ir` takes one because Triton's does, and `load_dialects` marks it."""

    def __init__(self) -> None:
        self.dialects_loaded = False


def load_dialects(ctx: context) -> None:
    """Mark `ctx` as ready for `make_ir` (Triton loads its MLIR dialects here)."""
    if not isinstance(ctx, context):
        raise TypeError(f"load_dialects takes a triton._C.libtriton.ir.context, got {type(ctx).__name__}")
    ctx.dialects_loaded = True


# -- operation names ------------------------------------------------------------------------------

_FIXED_NAMES = {
    "constant": "arith.constant", "program_id": "tt.get_program_id", "num_programs": "tt.get_num_programs",
    "arange": "tt.make_range", "splat": "tt.splat", "broadcast": "tt.broadcast", "expand_dims": "tt.expand_dims",
    "reshape": "tt.reshape", "permute": "tt.trans", "join": "tt.join", "split": "tt.split", "cat": "tt.cat",
    "gather": "tt.gather", "histogram": "tt.histogram", "addptr": "tt.addptr", "extern": "tt.extern_elementwise",
    "select": "arith.select", "fma": "math.fma", "div": "arith.divf", "div_rn": "tt.precise_divf",
    "umulhi": "tt.mulhiui", "sqrt_rn": "tt.precise_sqrt", "assume": "llvm.intr.assume", "bitcast": "tt.bitcast",
    "load": "tt.load", "store": "tt.store", "atomic_rmw": "tt.atomic_rmw", "atomic_cas": "tt.atomic_cas",
    "map_elementwise": "tt.map_elementwise", "inline_asm": "tt.elementwise_inline_asm", "reduce": "tt.reduce",
    "scan": "tt.scan", "dot": "tt.dot", "for": "scf.for", "while": "scf.while", "if": "scf.if",
    "condition": "scf.condition", "return": "tt.return", "call": "tt.call", "print": "tt.print",
    "assert": "tt.assert", "barrier": "gpu.barrier", "convert_layout": "ttg.convert_layout",
    "local_alloc": "ttg.local_alloc",
}
_MATH_NAMES = {name: f"math.{name}" for name in ("exp", "exp2", "log", "log2", "sin", "cos", "sqrt", "rsqrt", "erf",
                                                 "floor", "ceil")}
# Binary ops: (float name, signed int name, unsigned int name).
_BINARY_NAMES = {
    "add": ("arith.addf", "arith.addi", "arith.addi"),
    "sub": ("arith.subf", "arith.subi", "arith.subi"),
    "mul": ("arith.mulf", "arith.muli", "arith.muli"),
    "floordiv": (None, "arith.divsi", "arith.divui"),
    "mod": ("arith.remf", "arith.remsi", "arith.remui"),
    "and": (None, "arith.andi", "arith.andi"),
    "or": (None, "arith.ori", "arith.ori"),
    "xor": (None, "arith.xori", "arith.xori"),
    "shl": (None, "arith.shli", "arith.shli"),
    "ashr": (None, "arith.shrsi", "arith.shrsi"),
    "lshr": (None, "arith.shrui", "arith.shrui"),
    "max": ("arith.maxnumf", "arith.maxsi", "arith.maxui"),
    "min": ("arith.minnumf", "arith.minsi", "arith.minui"),
}
# The terminator `yield` of a region, by the op owning the region.
_YIELD_NAMES = {"reduce": "tt.reduce.return", "scan": "tt.scan.return",
                "map_elementwise": "tt.map_elementwise.return"}


def _element(ty: dtype) -> dtype:
    return ty.scalar


def _is_unsigned(ty: dtype) -> bool:
    return ty.is_int_unsigned() or ty.is_int1()


def _cast_name(source: dtype, target: dtype) -> str:
    """Upstream's op for a `cast` from `source` to `target` element types."""
    if isinstance(source, pointer_type) or isinstance(target, pointer_type):
        if isinstance(source, pointer_type) and isinstance(target, pointer_type):
            return "tt.bitcast"
        return "tt.ptr_to_int" if isinstance(source, pointer_type) else "tt.int_to_ptr"
    if source.is_floating() and target.is_floating():
        if source.is_fp8() or target.is_fp8() or source.primitive_bitwidth == target.primitive_bitwidth:
            return "tt.fp_to_fp"
        return "arith.extf" if target.primitive_bitwidth > source.primitive_bitwidth else "arith.truncf"
    if source.is_floating():
        return "arith.fptoui" if _is_unsigned(target) else "arith.fptosi"
    if target.is_floating():
        return "arith.uitofp" if _is_unsigned(source) else "arith.sitofp"
    if target.primitive_bitwidth > source.primitive_bitwidth:
        return "arith.extui" if _is_unsigned(source) else "arith.extsi"
    if target.primitive_bitwidth < source.primitive_bitwidth:
        return "arith.trunci"
    return "arith.bitcast"


def upstream_name(op: Operation) -> str:
    """The name Triton's TTIR gives the operation `op` stands for: `store` is
    `tt.store`, `for` is `scf.for`, an integer `add` is `arith.addi`, the
    `yield` ending a `reduce` region is `tt.reduce.return`. An op with no
    counterpart in Triton's TTIR is `tritone.<name>` (`tritone.hint`)."""
    name = op.name
    if name in _FIXED_NAMES:
        return _FIXED_NAMES[name]
    if name in _MATH_NAMES:
        return _MATH_NAMES[name]
    if name == "yield":
        region = op.parent
        owner = region.parent if region is not None else None
        owner_name = owner.name if isinstance(owner, Operation) else ""
        return _YIELD_NAMES.get(owner_name, "scf.yield")
    element = _element(op.operands[0].type) if op.operands else None
    if name in _BINARY_NAMES and element is not None:
        float_name, signed_name, unsigned_name = _BINARY_NAMES[name]
        if element.is_floating():
            if name in ("max", "min") and op.attrs.get("propagate_nan"):
                return f"arith.{name}imumf"
            if float_name is not None:
                return float_name
        elif not isinstance(element, pointer_type):
            return unsigned_name if _is_unsigned(element) else signed_name
    if name == "cmp" and element is not None:
        return "arith.cmpf" if element.is_floating() else "arith.cmpi"
    if name == "abs" and element is not None:
        return "math.absf" if element.is_floating() else "math.absi"
    if name == "cast" and element is not None:
        return _cast_name(element, _element(op.results[0].type))
    if name == "special":
        return f"tritone.{op.attrs.get('name', 'special')}"
    return f"tritone.{name}"


# -- the view -----------------------------------------------------------------------------------


class _Ids:
    """Small integer ids for the objects of one module, given on first request."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, int], int] = {}

    def of(self, kind: str, obj: object) -> int:
        # The module view keeps every object alive, so id(obj) stays unique.
        return self._ids.setdefault((kind, id(obj)), len(self._ids))


class value:
    """An SSA value: an operation's result or a block's argument."""

    def __init__(self, view: module, handle: Value):
        self._view = view
        self._handle = handle

    def id(self) -> int:
        """A number naming this value (and nothing else) in its module."""
        return self._view._ids.of("value", self._handle)


class region:
    """A region of an operation (or the module's body)."""

    def __init__(self, view: module, handle: Region | Module):
        self._view = view
        self._handle = handle

    def id(self) -> int:
        return self._view._ids.of("region", self._handle)


class block:
    """The one block of a region: its arguments and its operations."""

    def __init__(self, view: module, handle: Region | Module):
        self._view = view
        self._handle = handle

    def id(self) -> int:
        return self._view._ids.of("block", self._handle)

    def _arguments(self) -> list[Value]:
        return self._handle.args if isinstance(self._handle, Region) else []

    def get_num_arguments(self) -> int:
        return len(self._arguments())

    def get_argument(self, index: int) -> value:
        return value(self._view, _item(self._arguments(), index, "block argument"))

    def get_parent(self) -> region:
        """The region this block makes up."""
        return region(self._view, self._handle)


class operation:
    """An operation: a tritone IR op, a function (`tt.func`) or the module
    (`builtin.module`)."""

    def __init__(self, view: module, handle: Operation | Function | Module):
        self._view = view
        self._handle = handle

    def get_name(self) -> str:
        if isinstance(self._handle, Module):
            return "builtin.module"
        if isinstance(self._handle, Function):
            return "tt.func"
        return upstream_name(self._handle)

    def _operands(self) -> list[Value]:
        return self._handle.operands if isinstance(self._handle, Operation) else []

    def _results(self) -> list[Value]:
        return self._handle.results if isinstance(self._handle, Operation) else []

    def _regions(self) -> list[Region | Module]:
        if isinstance(self._handle, Operation):
            return list(self._handle.regions)
        if isinstance(self._handle, Function):
            return [self._handle.body]
        return [self._handle]

    def get_num_operands(self) -> int:
        return len(self._operands())

    def get_operand(self, index: int) -> value:
        return value(self._view, _item(self._operands(), index, "operand"))

    def get_num_results(self) -> int:
        return len(self._results())

    def get_result(self, index: int) -> value:
        return value(self._view, _item(self._results(), index, "result"))

    def get_num_regions(self) -> int:
        return len(self._regions())

    def get_region(self, index: int) -> region:
        return region(self._view, _item(self._regions(), index, "region"))

    def get_block(self) -> block | None:
        """The block holding this operation; None for the module."""
        if isinstance(self._handle, Module):
            return None
        if isinstance(self._handle, Function):
            return block(self._view, self._view._module)
        parent = self._handle.parent
        return None if parent is None else block(self._view, parent)

    def _attrs(self) -> dict[str, Any]:
        if isinstance(self._handle, Function):
            return {**self._handle.attrs, "sym_name": self._handle.name}
        return self._handle.attrs

    def get_str_attr(self, name: str) -> str | None:
        """The string attribute `name` (a function's `sym_name`), or None."""
        attr = self._attrs().get(name)
        return attr if isinstance(attr, str) else None

    def get_bool_attr(self, name: str) -> bool | None:
        """The boolean attribute `name` (`pure` of inline assembly), or None."""
        attr = self._attrs().get(name)
        return attr if isinstance(attr, bool) else None

    def get_flat_symbol_ref_attr(self, name: str) -> str | None:
        """The function a call names (`callee`), or None."""
        if not isinstance(self._handle, Operation) or self._handle.name != "call":
            return None
        attr = self._handle.attrs.get(name)
        return attr if isinstance(attr, str) else None

    def __repr__(self) -> str:
        return f"<operation {self.get_name()}>"


class module:
    """A kernel's IR as Triton's `make_ir` returns it: the kernel function first,
    then the `@jit` functions it calls."""

    def __init__(self, handle: Module):
        self._module = handle
        self._ids = _Ids()

    @property
    def tritone_module(self) -> Module:
        """The tritone IR this module shows."""
        return self._module

    def _functions(self) -> list[Function]:
        functions = list(self._module.functions.values())
        entry = self._module.functions.get(self._module.entry)
        return ([entry] + [f for f in functions if f is not entry]) if entry is not None else functions

    def walk(self, fn: Callable[[operation], Any]) -> None:
        """Call `fn` on every operation, nested ones before the one holding them
        (MLIR's post-order walk): each function's operations, then the function,
        and the module last."""
        def visit(op: Operation) -> None:
            for inner_region in op.regions:
                for inner in list(inner_region.ops):
                    visit(inner)
            fn(operation(self, op))

        for function in self._functions():
            for op in list(function.body.ops):
                visit(op)
            fn(operation(self, function))
        fn(operation(self, self._module))

    def verify(self) -> bool:
        """Whether the IR is well formed (tritone's verifier accepts it)."""
        from ...ir.verifier import IRVerificationError, verify

        try:
            verify(self._module)
        except IRVerificationError:
            return False
        return True

    def get_entry_func_name(self) -> str:
        return self._module.entry

    def __str__(self) -> str:
        from ...ir.printer import print_module

        return print_module(self._module)


def _item(items: list, index: int, what: str) -> Any:
    if not 0 <= index < len(items):
        raise IndexError(f"{what} index {index} out of range: there are {len(items)}")
    return items[index]
