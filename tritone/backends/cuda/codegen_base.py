"""The emitter every op's code generator writes through, and the registry of
those generators.

Each block value is a per-thread register array over the elements the thread
owns in the value's layout (`float v12[8];`, register i holding the element
the layout maps register i of this lane and warp to); scalars are plain
variables. Per-register work is written either as a loop with a constant bound
under `#pragma unroll` (register i to register i), or straight-line when each
register needs its own constant, so arrays always stay in registers.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from tritone.ir.core import Function, Location, Operation, Region, Value

from ...ir.layouts import DistributedLayout, LinearLayout
from .codegen_types import ctype

EMITTERS: dict[str, Callable[["Emitter", Operation], None]] = {}
# op name -> bytes of shared scratch memory one such op needs (smem.py plans them)
SCRATCH: dict[str, Callable[[Operation], int]] = {}
# op name -> the byte alignment its scratch starts on, where more than 16 (TMA's tiles: 128),
# or a function of the op giving it
SCRATCH_ALIGNMENT: dict[str, int | Callable[[Operation], int]] = {}


def emits(*names: str):
    """Register the decorated function as the code generator of the IR ops `names`."""

    def register(fn):
        for name in names:
            if name in EMITTERS:
                raise ValueError(f"two code generators for {name}")
            EMITTERS[name] = fn
        return fn

    return register


def needs_scratch(*names: str):
    """Register the decorated function as the shared scratch size (bytes) of the IR ops `names`."""

    def register(fn):
        for name in names:
            SCRATCH[name] = fn
        return fn

    return register


class CodegenError(Exception):
    """The CUDA backend cannot generate code for an op; names the op and its source line."""


@dataclass(frozen=True)
class CodegenOptions:
    """What code generation needs to know beyond the IR."""

    num_warps: int = 4
    enable_fp_fusion: bool = True
    # Whether fp32 exp2 may flush denormals (`ex2.approx.ftz`), as upstream's
    # enable_reflect_ftz asks.
    enable_reflect_ftz: bool = True
    debug: bool = False
    maxnreg: int | None = None


def _bits(bases, dim: int) -> int:
    """Every bit any of `bases` sets along `dim`: a XOR of some of them sets no other."""
    bits = 0
    for base in bases:
        bits |= base[dim]
    return bits


def bits_expr(bases: list[int], var: str) -> str:
    """The C expression XOR-combining `bases[i]` for every set bit i of `var`.

    Runs of consecutive bits whose bases double (a power-of-two basis times a
    bit field) become one shift-and-mask."""
    terms = []
    k = 0
    while k < len(bases):
        base = bases[k]
        if base == 0:
            k += 1
            continue
        end = k + 1
        if base & (base - 1) == 0:
            while end < len(bases) and bases[end] == bases[end - 1] * 2:
                end += 1
        width = end - k
        field = f"({var} >> {k})" if k else var
        field = f"({field} & {(1 << width) - 1})"
        terms.append(field if base == 1 else f"{field} * {base}")
        k = end
    if not terms:
        return "0"
    return " ^ ".join(f"({t})" for t in terms) if len(terms) > 1 else terms[0]


def register_index(sources: list[int], var: str = "i") -> str | None:
    """`sources` (per register, the register of another value it reads) as a C
    expression of the register index `var`, for one unrolled loop: `var` itself
    for the identity, else `bits_expr` of the registers read at the single-bit
    indices where the map is linear over the index bits (an XOR of those, as
    the maps between two linear layouts' registers are); None otherwise."""
    count = len(sources)
    if sources == list(range(count)):
        return var
    if count & (count - 1):
        return None
    bases = [sources[1 << bit] for bit in range(count.bit_length() - 1)]
    for reg, source in enumerate(sources):
        combined = 0
        for bit, base in enumerate(bases):
            if reg >> bit & 1:
                combined ^= base
        if combined != source:
            return None
    return bits_expr(bases, var)


def linear_index_expr(coords: list[str], strides: list[int], offset: int = 0) -> str:
    """`offset + sum(coords[d] * strides[d])` as C, dropping zero terms."""
    terms = [str(offset)] if offset else []
    for c, s in zip(coords, strides):
        if s == 0 or c == "0":
            continue
        terms.append(c if s == 1 else f"{c} * {s}")
    return " + ".join(terms) if terms else "0"


def row_major_strides(shape: tuple[int, ...]) -> list[int]:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


_IDENT = re.compile(r"[^A-Za-z0-9_]")
# Ops whose regions run as loop bodies or branches (not helper functions).
_CONTROL_FLOW = ("for", "while", "if")


class Emitter:
    """Writes one kernel's C++ body: names values, declares register arrays,
    derives per-thread coordinates from layouts, hands out shared scratch
    memory, and keeps `#line` directives pointing at the user's source."""

    def __init__(self, fn: Function, target: int, options: CodegenOptions, scratch_bytes: int = 0):
        from .axis_info import analyze

        self.fn = fn
        self.infos = analyze(fn)
        self._uses: dict[Value, int] = {}
        for op in fn.walk():
            for v in op.operands:
                self._uses[v] = self._uses.get(v, 0) + 1
        self.target = target
        self.options = options
        self.num_warps = options.num_warps
        self.scratch_limit = scratch_bytes
        self.lines: list[str] = []
        self.prologue: list[str] = []
        self.helpers: list[str] = []
        self.declarations: set[str] = set()
        self.names: dict[Value, str] = {}
        self._counter = 0
        self._indent = 1
        self._thread_coords: dict[tuple, str] = {}
        self._thread_bits: dict[str, int] = {}  # a thread coordinate's variable -> every bit it may set
        self._line: tuple[str, int] | None = None
        self.uses_scratch = False
        # byte offset of the scratch memory of the op being generated (smem.py plans it)
        self.scratch_base = 0
        # shared-memory accesses since the last barrier, (start, end, is_write) byte ranges;
        # None when unknown (a loop body may follow its own end, a branch either side)
        self.shared_accesses: list[tuple[int, int, bool]] | None = []
        # values computed once per kernel by code generators (per-thread addresses, ...), by key
        self.memo: dict = {}
        # what the `yield`/`condition` ending the region being generated does with its operands
        self.terminators: list[Callable[[list[str]], None]] = []
        # the threads running the code being generated: the first of their warps, the
        # barrier among them, and how many they are (a warp-specialized kernel's producer
        # warp and consumer warps differ from the block)
        self.first_warp = 0
        self.block_sync = "__syncthreads();"
        self.threads = 32 * options.num_warps

    @property
    def leader(self) -> str:
        """The condition picking the thread that issues for all those threads: the first."""
        return f"threadIdx.x == {32 * self.first_warp}"

    # -- text ----------------------------------------------------------------
    def line(self, text: str) -> None:
        self.lines.append("  " * self._indent + text)

    def open(self, head: str = "") -> None:
        """Start a C++ block (`head {`, or a bare `{` scope)."""
        self.line(f"{head} {{" if head else "{")
        self._indent += 1

    def close(self, tail: str = "") -> None:
        self._indent -= 1
        self.line("}" + tail)

    def fresh(self, prefix: str = "t") -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    @contextmanager
    def helper(self, signature: str, on_yield: Callable[[list[str]], None]) -> Iterator[None]:
        """Generate a top-level function `signature { ... }` (a reduce's combine
        function, say) from what is emitted inside the `with`; its region's
        `yield` calls `on_yield` with the yielded names."""
        saved = (self.lines, self._indent, self._line)
        self.lines, self._indent, self._line = [], 1, None
        self.terminators.append(on_yield)
        try:
            yield
        finally:
            self.terminators.pop()
            body, (self.lines, self._indent, self._line) = self.lines, saved
        self.helpers.append("\n".join([signature + " {", *body, "}"]))

    def declare_once(self, text: str) -> None:
        """A top-level declaration (an `extern "C"` prototype, say), emitted once."""
        if text not in self.declarations:
            self.declarations.add(text)
            self.helpers.append(text)

    def at(self, loc: Location) -> None:
        """Point what follows at `loc` with a `#line` directive (when it moved)."""
        if loc is None or loc.line <= 0 or loc.file in ("", "<unknown>"):
            return
        key = (loc.file, loc.line)
        if key == self._line:
            return
        if self._line is not None and self._line[0] == loc.file:
            # the file name carries over: a long path on every line would make
            # most of a big kernel's source
            self.lines.append(f"#line {loc.line}")
        else:
            path = loc.file.replace("\\", "\\\\").replace('"', '\\"')
            self.lines.append(f'#line {loc.line} "{path}"')
        self._line = key

    # -- values ----------------------------------------------------------------
    def name(self, value: Value) -> str:
        try:
            return self.names[value]
        except KeyError:
            raise CodegenError(f"value {value} used before it was generated") from None

    def bind(self, value: Value, name: str) -> None:
        self.names[value] = name

    def new_name(self, value: Value, prefix: str = "v") -> str:
        hint = _IDENT.sub("_", value.name_hint or "")[:24]
        name = self.fresh(prefix) + (f"_{hint}" if hint else "")
        self.names[value] = name
        return name

    def axis_info(self, value: Value):
        """Axis analysis facts (axis_info.AxisInfo) for `value`."""
        return self.infos.get(value)

    def is_used(self, value: Value) -> bool:
        return self._uses.get(value, 0) > 0

    def use_count(self, value: Value) -> int:
        """How many operands of the function's ops are `value`."""
        return self._uses.get(value, 0)

    def linear(self, value: Value) -> LinearLayout:
        layout = value.type.layout
        if not isinstance(layout, DistributedLayout):
            raise CodegenError(f"block value of type {value.type} has no distributed layout")
        return layout.linear(tuple(value.type.shape))

    def nregs(self, value: Value) -> int:
        return self.linear(value).num_registers if value.type.is_block() else 1

    def distinct_register_bits(self, value: Value) -> int:
        """The register-index bits that can change `value`'s element: register i
        holds the same element value as register `i & mask`. A bit is left out when
        its basis stays inside the aligned runs of equal elements axis analysis
        proves (`constancy`), so code computing the block can compute each run once
        and the C++ compiler sees the copies are equal (one mask predicate per
        16-byte vector instead of one per element, say)."""
        linear = self.linear(value)
        constancy = self.axis_info(value).constancy
        mask = 0
        for bit, basis in enumerate(linear.registers):
            if any(component >= run for component, run in zip(basis, constancy)):
                mask |= 1 << bit
        return mask

    def reg(self, value: Value, index) -> str:
        """Register `index` (an int or a C expression) of a block, or the scalar itself."""
        name = self.name(value)
        return f"{name}[{index}]" if value.type.is_block() else name

    def define_scalar(self, value: Value, expr: str, prefix: str = "v") -> str:
        name = self.new_name(value, prefix)
        self.line(f"{ctype(value.type)} {name} = {expr};")
        return name

    def define_block(self, value: Value, prefix: str = "v") -> str:
        name = self.new_name(value, prefix)
        self.line(f"{ctype(value.type)} {name}[{self.nregs(value)}];")
        return name

    def define(self, value: Value, prefix: str = "v") -> str:
        """Declare `value` uninitialised: an array for blocks, a variable for scalars."""
        if value.type.is_block():
            return self.define_block(value, prefix)
        name = self.new_name(value, prefix)
        self.line(f"{ctype(value.type)} {name};")
        return name

    def copy(self, dst: str, src: str, value: Value) -> None:
        """`dst = src` for a value of `value`'s type (element by element for blocks)."""
        if value.type.is_block():
            self.for_registers(self.nregs(value), f"{dst}[i] = {src}[i];")
        else:
            self.line(f"{dst} = {src};")

    def for_registers(self, count: int, body: str, var: str = "i") -> None:
        """`body` (using `var`) for every register index below `count`, unrolled."""
        if count == 1:
            self.line(body.replace(f"[{var}]", "[0]") if f"[{var}]" in body else body)
            return
        self.lines.append("#pragma unroll")
        self.line(f"for (int {var} = 0; {var} < {count}; ++{var}) {body}")

    # -- coordinates ----------------------------------------------------------------
    def thread_coord(self, linear: LinearLayout, dim: int) -> str:
        """A variable holding this thread's part of the coordinate along `dim`
        (lane and warp contributions), defined once at the top of the kernel."""
        lanes = [b[dim] for b in linear.lanes]
        warps = [b[dim] for b in linear.warps]
        if not any(lanes) and not any(warps):
            return "0"
        key = (tuple(lanes), tuple(warps))
        if key not in self._thread_coords:
            name = f"tt_tc{len(self._thread_coords)}"
            parts = [p for p in (bits_expr(lanes, "tt_lane"), bits_expr(warps, "tt_warp")) if p != "0"]
            self.prologue.append(f"const int {name} = {' ^ '.join(f'({p})' for p in parts)};")
            self._thread_coords[key] = name
            self._thread_bits[name] = _bits(linear.lanes + linear.warps, dim)
        return self._thread_coords[key]

    def coord(self, linear: LinearLayout, dim: int, reg: int) -> str:
        """The coordinate along `dim` of register `reg` of this thread."""
        thread = self.thread_coord(linear, dim)
        const = linear.register_coords(reg)[dim]
        if thread == "0":
            return str(const)
        if const == 0:
            return thread
        # disjoint bits: the XOR is an add, which NVVM can fold into sums a loop changes
        operator = "+" if self._thread_bits[thread] & const == 0 else "^"
        return f"({thread} {operator} {const})"

    def coord_in_loop(self, linear: LinearLayout, dim: int, var: str) -> str:
        """The coordinate along `dim` of register `var` (a loop variable)."""
        thread = self.thread_coord(linear, dim)
        regs = bits_expr([b[dim] for b in linear.registers], var)
        if regs == "0":
            return thread
        if thread == "0":
            return f"({regs})"
        if self._thread_bits[thread] & _bits(linear.registers, dim) == 0:
            return f"({thread} + ({regs}))"
        return f"({thread} ^ {regs})"

    # -- shared memory ------------------------------------------------------------
    def scratch(self, ctype_name: str, byte_offset: int, nbytes: int) -> str:
        """A `ctype_name*` into the shared scratch memory of the op being generated,
        `byte_offset` (a multiple of 16) into it, for `nbytes` bytes that `smem.py`
        planned for."""
        start = self.scratch_base + byte_offset
        if start + nbytes > self.scratch_limit:
            raise CodegenError(f"shared scratch of {start + nbytes} bytes exceeds the "
                               f"{self.scratch_limit} bytes planned")
        self.uses_scratch = True
        return f"reinterpret_cast<{ctype_name}*>(tt_smem + {start})"

    def barrier(self) -> None:
        self.line(self.block_sync)
        self.shared_accesses = []

    def shared_access(self, start: int, end: int, write: bool) -> None:
        """Note an access to shared bytes [start, end) by the code that follows,
        first emitting a barrier when an access since the last barrier may
        conflict with it (the same bytes, one of the two a write)."""
        seen = self.shared_accesses
        if seen is None or any(s < end and start < e and (w or write) for s, e, w in seen):
            self.barrier()
        self.shared_accesses.append((start, end, write))

    # -- regions ------------------------------------------------------------------
    def emit_region(self, region: Region, accesses: list[tuple[int, int, bool]] | None = None) -> None:
        """Generate `region`'s ops. A loop body or branch starts from `accesses` (the
        shared accesses that may precede it since the last barrier), by default unknown."""
        owner = region.parent
        if isinstance(owner, Operation) and owner.name in _CONTROL_FLOW:
            self.shared_accesses = None if accesses is None else list(accesses)
        for op in region.ops:
            self.emit_op(op)

    def emit_op(self, op: Operation) -> None:
        generator = EMITTERS.get(op.name)
        if generator is None:
            raise CodegenError(f"the CUDA backend cannot generate `{op.name}` yet (at {op.loc})")
        self.at(op.loc)
        saved = self.scratch_base
        self.scratch_base = int(op.attrs.get("scratch_offset", 0))
        try:
            generator(self, op)
        finally:
            self.scratch_base = saved
        if op.name in _CONTROL_FLOW or "scratch_offset" in op.attrs:
            # Which shared bytes a loop, a branch or a scratch user touched is not tracked.
            self.shared_accesses = None
