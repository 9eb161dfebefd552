"""The executor: runs a kernel's IR over its whole grid with numpy.

Each function and region is compiled once per launch into a list of steps
`(impl, operand slots, result slot(s), op)`; every IR value owns a slot of one
shared environment list. Programs run one after the other (x fastest, then y,
then z, as Triton does), each executing the steps with vectorised numpy over
whole blocks. Constants, `arange` and `num_programs` are computed at compile
time and never re-executed.
"""

from __future__ import annotations

import linecache
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import InterpreterError
from ..ir.core import Function, Module, Operation, Region, Value
from ..ir.types import tensordesc_type
from . import arith, descriptors, libdevice, reductions
from . import values as V
from .memory import AccessError, Memory

_TERMINATORS = ("yield", "condition", "return")


class _AssertionFailed(Exception):
    """A device_assert's condition was false somewhere."""


@dataclass
class _Compiled:
    steps: list
    args: list[int]
    results: list[int]


def run_kernel(module: Module, grid: tuple[int, int, int], args: list, *,
               source_lines: dict | None = None) -> None:
    """Run `module`'s entry function once per program of `grid` on the CPU.

    `args` holds one runtime value per parameter: Python int/float/bool for
    scalars; for pointers an object with `data_ptr()` (torch CPU tensors), a
    numpy array, a raw int address (0 = null) or None. Stores land in the
    callers' buffers. `source_lines` gives the text of source lines for error
    messages, either as {line number: text} or as {file name: source text or
    list of lines}; without it the files named by the ops' locations are read.

    Raises `InterpreterError` for out-of-bounds or misaligned accesses, failed
    device_asserts and invalid arguments, naming the kernel, the program id and
    the source line.
    """
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    if len(grid) != 3 or min(grid) < 0:
        raise InterpreterError(f"grid must have up to 3 non-negative sizes, got {grid}")
    launch = _Launch(module, grid, source_lines)
    launch.bind_arguments(args)
    if min(grid) == 0:
        return
    with np.errstate(all="ignore"):
        launch.run()


class _Launch:
    """State of one kernel launch: memory, environment, program id, compiled code."""

    def __init__(self, module: Module, grid: tuple[int, int, int], source_lines: dict | None):
        self.module = module
        self.kernel = module.kernel
        self.grid = grid
        self.source_lines = source_lines or {}
        self.memory = Memory()
        self.pid = [0, 0, 0]
        self.env: list = []
        self.slots: dict[Value, int] = {}
        self.functions: dict[str, _Compiled] = {}
        self.compiling: set[str] = set()
        self.entry: _Compiled | None = None

    # -- arguments ------------------------------------------------------------
    def bind_arguments(self, args: list) -> None:
        params = self.kernel.args
        if len(args) != len(params):
            raise InterpreterError(f"kernel {self.kernel.name} takes {len(params)} arguments, got {len(args)}")
        compiled = self.compile_function(self.kernel)
        for param, slot, arg in zip(params, compiled.args, args):
            name = param.name_hint or f"#{param.index}"
            self.env[slot] = self._argument_value(param.type, arg, name)
        self.entry = compiled

    def _argument_value(self, ty, arg, name: str):
        if ty.is_ptr() or isinstance(ty, tensordesc_type):  # a host descriptor is its tensor's address
            try:
                return np.uint64(self.memory.pointer_argument(arg, name))
            except TypeError as error:
                raise InterpreterError(f"kernel {self.kernel.name}: {error}") from None
        if isinstance(arg, (bool, int, float, np.generic)) and not isinstance(arg, np.ndarray):
            if ty.is_int() and isinstance(arg, (float, np.floating)):
                raise InterpreterError(f"kernel {self.kernel.name}: argument {name!r} of type {ty} got float {arg}")
            return V.from_python(arg.item() if isinstance(arg, np.generic) else arg, ty)
        raise InterpreterError(f"kernel {self.kernel.name}: argument {name!r} of type {ty} "
                               f"expects a Python number, got {type(arg).__name__}")

    # -- running --------------------------------------------------------------
    def run(self) -> None:
        steps = self.entry.steps
        pid = self.pid
        gx, gy, gz = self.grid
        for z in range(gz):
            pid[2] = z
            for y in range(gy):
                pid[1] = y
                for x in range(gx):
                    pid[0] = x
                    self.execute(steps)

    def execute(self, steps: list) -> None:
        env = self.env
        op = None
        try:
            for impl, ins, out, op in steps:  # noqa: B007 (the handlers name the failing op)
                result = impl(*[env[i] for i in ins])
                if out is None:
                    continue
                if out.__class__ is int:
                    env[out] = result
                else:
                    for slot, value in zip(out, result):
                        env[slot] = value
        except InterpreterError:
            raise
        except (AccessError, _AssertionFailed) as error:
            raise self.error(op, str(error)) from None
        except Exception as error:
            raise self.error(op, f"internal error while executing {op.name}: {type(error).__name__}: {error}") \
                from error

    def error(self, op: Operation | None, message: str) -> InterpreterError:
        """An InterpreterError naming the kernel, the program id and the op's source line."""
        x, y, z = self.pid
        where = f"in kernel {self.kernel.name}, program ({x}, {y}, {z})"
        text = ""
        if op is not None:
            loc = op.loc
            where += f", at {loc.file}:{loc.line}"
            text = self._source_line(loc.file, loc.line)
        lines = [message, f"  {where}"]
        if text:
            lines.append("    " + text.strip())
        return InterpreterError("\n".join(lines))

    def _source_line(self, file: str, line: int) -> str:
        if line in self.source_lines:
            return str(self.source_lines[line])
        source = self.source_lines.get(file)
        if source is not None:
            lines = source.splitlines() if isinstance(source, str) else list(source)
            return lines[line - 1] if 0 < line <= len(lines) else ""
        return linecache.getline(file, line) if line > 0 else ""

    # -- compilation ------------------------------------------------------------
    def slot(self, value: Value) -> int:
        index = self.slots.get(value)
        if index is None:
            index = len(self.env)
            self.slots[value] = index
            self.env.append(None)
        return index

    def compile_function(self, fn: Function) -> _Compiled:
        compiled = self.functions.get(fn.name)
        if compiled is None:
            if fn.name in self.compiling:
                raise InterpreterError(f"function {fn.name} calls itself; recursion is not supported")
            self.compiling.add(fn.name)
            compiled = self.compile_region(fn.body)
            self.compiling.discard(fn.name)
            self.functions[fn.name] = compiled
        return compiled

    def compile_region(self, region: Region) -> _Compiled:
        args = [self.slot(a) for a in region.args]
        steps = []
        results: list[int] = []
        for op in region.ops:
            if op.name in _TERMINATORS:
                results = [self.slot(v) for v in op.operands]
                continue
            step = self.compile_op(op)
            if step is not None:
                steps.append(step)
        return _Compiled(steps, args, results)

    def compile_op(self, op: Operation):
        """The step executing `op`, or None when its result was computed now."""
        outs = [self.slot(r) for r in op.results]
        ins = tuple(self.slot(v) for v in op.operands)
        constant = _CONSTANTS.get(op.name)
        if constant is not None:
            self.env[outs[0]] = constant(self, op)
            return None
        structured = _STRUCTURED.get(op.name)
        if structured is not None:
            return structured(self, op), ins, tuple(outs) if outs else None, op
        maker = _MAKERS.get(op.name)
        if maker is None:
            raise InterpreterError(f"the interpreter does not implement op {op.name!r} ({op.loc})")
        impl = maker(self, op)
        if not outs:
            return impl, ins, None, op
        return impl, ins, outs[0] if len(outs) == 1 else tuple(outs), op

    def region_runner(self, region: Region) -> tuple[_Compiled, Callable[[list], list]]:
        """Compile `region`; return it and a function running it on argument values."""
        compiled = self.compile_region(region)
        env = self.env

        def run(values) -> list:
            for slot, value in zip(compiled.args, values):
                env[slot] = value
            self.execute(compiled.steps)
            return [env[s] for s in compiled.results]
        return compiled, run


# ---------------------------------------------------------------------------
# Ops computed at compile time


def _constant(launch: _Launch, op: Operation):
    return V.full(op.results[0].type, op.attrs["value"])


def _arange(launch: _Launch, op: Operation):
    return np.arange(op.attrs["start"], op.attrs["end"], dtype=np.int32)


def _num_programs(launch: _Launch, op: Operation):
    return np.int32(launch.grid[op.attrs["axis"]])


_CONSTANTS = {"constant": _constant, "arange": _arange, "num_programs": _num_programs}


# ---------------------------------------------------------------------------
# Control flow and regions


def _make_for(launch: _Launch, op: Operation):
    body, run_body = launch.region_runner(op.regions[0])
    iv_type = V.value_dtype(op.operands[0].type).type

    def run_for(lb, ub, step, *init):
        carried = list(init)
        lower, upper, stride = int(lb), int(ub), int(step)
        if stride <= 0 and lower < upper:
            raise AccessError(f"for loop with step {stride} never ends (lower bound {lower}, upper bound {upper})")
        for i in range(lower, upper, stride):
            carried = run_body([iv_type(i), *carried])
        return carried
    return run_for


def _make_while(launch: _Launch, op: Operation):
    _, run_before = launch.region_runner(op.regions[0])
    _, run_after = launch.region_runner(op.regions[1])

    def run_while(*init):
        carried = list(init)
        while True:
            cond, *forwarded = run_before(carried)
            if not bool(cond):
                return forwarded
            carried = run_after(forwarded)
    return run_while


def _make_if(launch: _Launch, op: Operation):
    _, run_then = launch.region_runner(op.regions[0])
    if len(op.regions) > 1:
        _, run_else = launch.region_runner(op.regions[1])
    else:
        def run_else(values):
            return []

    def run_if(cond):
        if np.ndim(cond) == 0:
            return run_then([]) if bool(cond) else run_else([])
        # Inside a reduce/scan combine region the condition is a block of lanes:
        # both sides run and each lane takes its own.
        return [np.where(cond, t, e) for t, e in zip(run_then([]), run_else([]))]
    return run_if


def _make_reduce(launch: _Launch, op: Operation):
    _, run_region = launch.region_runner(op.regions[0])
    axis = op.attrs["axis"]
    return lambda *xs: reductions.reduce_tree(xs, axis, lambda left, right: run_region(left + right))


def _make_scan(launch: _Launch, op: Operation):
    _, run_region = launch.region_runner(op.regions[0])
    axis = op.attrs["axis"]
    reverse = bool(op.attrs.get("reverse", False))
    return lambda *xs: reductions.scan(xs, axis, reverse, lambda left, right: run_region(left + right))


def _make_call(launch: _Launch, op: Operation):
    callee = launch.module.functions.get(op.attrs["callee"])
    if callee is None:
        raise InterpreterError(f"call to unknown function {op.attrs['callee']!r} ({op.loc})")
    compiled = launch.compile_function(callee)
    env = launch.env

    def run_call(*args):
        for slot, value in zip(compiled.args, args):
            env[slot] = value
        launch.execute(compiled.steps)
        return [env[s] for s in compiled.results]
    return run_call


_STRUCTURED = {"for": _make_for, "while": _make_while, "if": _make_if, "reduce": _make_reduce,
               "scan": _make_scan, "call": _make_call}


# ---------------------------------------------------------------------------
# Ops that need the launch (program ids, memory, output)


def _make_program_id(launch: _Launch, op: Operation):
    pid = launch.pid
    axis = op.attrs["axis"]
    return lambda: np.int32(pid[axis])


def _make_load(launch: _Launch, op: Operation):
    ty = V.scalar_of(op.results[0].type)
    memory = launch.memory
    return lambda ptr, mask=None, other=None: memory.load(ptr, ty, mask, other)


def _make_store(launch: _Launch, op: Operation):
    ty = V.scalar_of(op.operands[0].type).element_ty
    memory = launch.memory
    return lambda ptr, value, mask=None: memory.store(ptr, value, ty, mask)


def _make_atomic_rmw(launch: _Launch, op: Operation):
    ty = V.scalar_of(op.operands[0].type).element_ty
    kind = op.attrs["kind"]
    memory = launch.memory
    return lambda ptr, value, mask=None: memory.atomic_rmw(kind, ptr, value, ty, mask)


def _make_atomic_cas(launch: _Launch, op: Operation):
    ty = V.scalar_of(op.operands[0].type).element_ty
    memory = launch.memory
    return lambda ptr, compare, value: memory.atomic_cas(ptr, compare, value, ty)


def _make_print(launch: _Launch, op: Operation):
    prefix = op.attrs.get("prefix", "")
    hex_format = bool(op.attrs.get("hex", False))
    types = [v.type for v in op.operands]
    pid = launch.pid

    def device_print(*values):
        head = f"pid ({pid[0]}, {pid[1]}, {pid[2]})"
        if not values:
            lines = [head + prefix]
        else:
            lines = []
            for n, (value, ty) in enumerate(zip(values, types)):
                operand = f"(operand {n}) " if len(values) > 1 else ""
                lines.extend(_print_lines(head, prefix + operand, value, ty, hex_format))
        sys.stdout.write("\n".join(lines) + "\n")
    return device_print


def _print_lines(head: str, prefix: str, value, ty, hex_format: bool) -> list[str]:
    """One `pid (x, y, z) idx (i, j)<prefix><value>` line per element, row-major."""
    shape = V.shape_of(ty)
    sc = V.scalar_of(ty)
    flat = np.asarray(value).reshape(-1)
    if hex_format:
        digits = max(1, sc.primitive_bitwidth // 4)
        if sc.is_int_signed() and sc.primitive_bitwidth < 32:
            # The GPU widens narrow integers to 32 bits by their sign before printing.
            texts = [f"0x{int(v) & 0xFFFFFFFF:0{digits}x}" for v in flat]
        else:
            texts = [f"0x{int(b):0{digits}x}" for b in V.to_bits(flat, sc)]
    elif sc.is_ptr():
        texts = [f"0x{int(v):x}" for v in flat]
    elif sc.is_floating():
        texts = [f"{float(v):f}" for v in flat]
    else:
        texts = [str(int(v)) for v in flat]
    # The GPU pads each index to the digit count of its dimension.
    widths = [int(np.ceil(np.log10(d))) if d > 0 else 0 for d in shape]
    if shape:
        coords = np.array(np.unravel_index(np.arange(flat.size), shape)).T
        indices = [", ".join(f"{int(i):{w}d}" if w else str(int(i)) for i, w in zip(c, widths)) for c in coords]
    else:
        indices = [""]
    return [f"{head} idx ({idx}){prefix}{text}" for idx, text in zip(indices, texts)]


def _make_assert(launch: _Launch, op: Operation):
    message = op.attrs.get("msg", "")

    def device_assert(cond):
        cond = np.asarray(cond)
        if not cond.all():
            where = ""
            if cond.ndim:
                where = f" at index {tuple(int(i) for i in np.argwhere(~cond.astype(bool))[0])}"
            raise _AssertionFailed(f"device_assert failed{where}: {message}")
    return device_assert


def _make_noop(launch: _Launch, op: Operation):
    return lambda *args: None


def _make_special(launch: _Launch, op: Operation):
    """Hardware registers as the CPU can give them: the clock in nanoseconds (as
    %globaltimer counts), SM 0; the grid-dependency controls have nothing to do."""
    name = op.attrs["name"]
    if name == "globaltimer":
        return lambda: np.int64(time.time_ns())
    if name == "smid":
        return lambda: np.int32(0)
    return lambda: None


def _make_inline_asm(launch: _Launch, op: Operation):
    """Inline assembly is the GPU's own code: refused when the kernel is prepared,
    before any program runs, naming the kernel and the source line."""
    loc = op.loc
    lines = [f"kernel {launch.kernel.name} calls tl.inline_asm_elementwise, whose inline assembly (PTX) runs "
             "only on the GPU: the CPU interpreter cannot execute it (neither can upstream Triton's). Run the "
             "kernel on an NVIDIA GPU, without TRITON_INTERPRET=1.",
             f"  at {loc.file}:{loc.line}"]
    text = launch._source_line(loc.file, loc.line)
    if text:
        lines.append("    " + text.strip())
    raise InterpreterError("\n".join(lines))


def _make_identity(launch: _Launch, op: Operation):
    return lambda x: x


def _pure(maker):
    return lambda launch, op: maker(op)


_MAKERS: dict[str, Callable] = {
    **{name: _pure(maker) for name, maker in arith.MAKERS.items()},
    **{name: _pure(maker) for name, maker in reductions.MAKERS.items()},
    "extern": _pure(libdevice.make_extern),
    "program_id": _make_program_id,
    "load": _make_load,
    "store": _make_store,
    "atomic_rmw": _make_atomic_rmw,
    "atomic_cas": _make_atomic_cas,
    "print": _make_print,
    "assert": _make_assert,
    "barrier": _make_noop,
    "special": _make_special,
    "assume": _make_noop,
    "hint": _make_identity,
    "inline_asm": _make_inline_asm,
    **descriptors.MAKERS,
}
