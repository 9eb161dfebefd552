"""Code generation for structured control flow: `for` and `while` become C++
loops (a `for` with a `loop_unroll_factor` under `#pragma unroll n`, a short
`for` of constant bounds under `#pragma unroll`, whole or by a power of two)
and `if` a branch, with
carried values as variables declared before them (arrays for blocks). A
region's `yield` assigns the carried variables through temporaries, since it
may permute them. Scalar conditions are the
same in every thread of a CTA, so barriers inside these regions are safe.
"""

from __future__ import annotations

from tritone.ir.core import Operation, Value
from tritone.ir.layouts import DistributedLayout
from tritone.ir.ops import is_zero_constant
from tritone.ir.types import type_text

from .codegen_base import CodegenError, Emitter, emits
from .codegen_memory import async_copies, pin_registers, vector_width
from .codegen_types import ctype
from .dot.shared import is_shared_tile, tile_range
from .dot.wgmma import zeros_if_no_trips
from .int_ranges import constant_trips


def _zeroed_accumulators(op: Operation) -> dict[int, Operation]:
    """The values `op`, a `for` inside another loop, carries from zeros into a wgmma
    dot's accumulator, by index, each with its dot: the carried value's only reader, at
    the body's top level, whose result is yielded back in its place. The dot's first
    trip ignores the accumulator (scale-d 0) instead of adding the zeros to its
    products, as upstream Triton's accumulator-initialisation pass has it, so that the
    zeros need not be written into the registers each time the loop starts: a
    persistent kernel's K loop starts once a tile (64 CS2R a thread, waiting for the
    epilogue's reads of those registers, in tutorial 09's kernels). A loop run once
    a program zeroes its accumulator once either way."""
    body = op.regions[0]
    found = {}
    if not _inside_a_loop(op):
        return found
    for index, (arg, init) in enumerate(zip(body.args[1:], op.operands[3:])):
        if not arg.type.is_block() or not is_zero_constant(init) or type_text(arg.type.scalar) not in ("fp32", "i32"):
            continue
        readers = [inner for inner in body.walk() if any(v is arg for v in inner.operands)]
        if len(readers) != 1:
            continue
        dot = readers[0]
        if (dot.name == "dot" and dot.attrs.get("implementation") == "wgmma" and dot.parent is body
                and dot.operands[2] is arg and dot.operands[:2].count(arg) == 0
                and body.terminator.operands[index] is dot.results[0]):
            found[index] = dot
    return found


def _declare_copy(em: Emitter, value: Value, source: Value) -> str:
    """A new variable (of `value`'s type) holding a copy of `source`."""
    name = em.define(value, "c")
    em.copy(name, em.name(source), source)
    return name


def _assign_all(em: Emitter, targets: list[str], values: list[str], types: list[Value]) -> None:
    """`targets = values` as a parallel assignment (a value may name another target)."""
    temps = []
    for target, value, typed in zip(targets, values, types):
        if target == value:
            temps.append(None)
            continue
        temp = em.fresh("tt_next")
        if typed.type.is_block():
            em.line(f"{ctype(typed.type)} {temp}[{em.nregs(typed)}];")
        else:
            em.line(f"{ctype(typed.type)} {temp};")
        em.copy(temp, value, typed)
        temps.append(temp)
    for target, temp, typed in zip(targets, temps, types):
        if temp is not None:
            em.copy(target, temp, typed)


# A `for` of constant bounds is unrolled whole when it runs at most this many
# trips and its unrolled body stays under this many per-thread element operations
# (the sum, over the body's operations, of the registers each result takes), else,
# where its loads read fewer than 16 bytes an access, by the largest power of two
# that stays under it (Inductor's bf16 layer norm backward: 8 trips of 146 and 187,
# unrolled by 4, 169 to 160 us on an H100; its fp32 kernel, 16-byte loads, took
# 407 us unrolled by 2 and takes 377 rolled, upstream 347). Upstream
# Triton gets the same from LLVM's full unrolling, which NVVM does not always do on
# its own (NVRTC 13.0 kept Inductor's 4-trip bf16 reduction loops rolled, so each
# thread had one 8-byte load in flight instead of four).
FULL_UNROLL_TRIPS = 16
_FULL_UNROLL_BUDGET = 1024

# Operations that make a loop's body a pipelined dot or TMA loop, or another loop:
# their code size and scheduling are the pipelining pass's business, not unrolling's.
NOT_UNROLLED_PREFIXES = ("for", "while", "dot", "async_", "tma_", "descriptor_", "local_", "barrier")


def unroll_pragma(em: Emitter, op: Operation) -> str | None:
    """The `#pragma unroll` for `op`, a `for` (None: leave it to NVVM): the whole loop
    where it has constant bounds, 2 to `FULL_UNROLL_TRIPS` trips, no nested
    loop, dot or asynchronous copy in its body, and the unrolled body stays under
    `_FULL_UNROLL_BUDGET` element operations per thread (the sum, over the body's
    operations, of the registers each result takes); where the whole loop is over that
    budget, the most trips, a power of two dividing the trip count, that stay under it.
    Unrolled, the loads of several trips can be issued before the arithmetic that
    consumes them, which is what a memory-bound loop (a reduction over a row in chunks)
    needs; unrolled in part only where some load of the body reads fewer than 16 bytes
    an access (a thread's loads of one trip already keep 16 bytes each in flight).

    A TMA-pipelined loop inside another loop (a persistent kernel's K loop, run once a
    tile) is kept rolled: NVVM unrolls it by two, and the remainder trip it adds costs
    every tile about 180 instructions, a second zeroing of the accumulator among them
    (tutorial 09's fp8 TMA persistent kernel at K=512 on an H100: 78.4 us rolled
    against 82.4 unrolled; at K=8192, 64 trips a tile, the unrolled loop is 1% the
    faster). `_rolled_tma_loop` says which loops."""
    if _rolled_tma_loop(op):
        return "#pragma unroll 1"
    bounds = constant_trips(op)
    if bounds is None:
        return None
    trips = bounds[2]
    if not 2 <= trips <= FULL_UNROLL_TRIPS:
        return None
    cost = 0
    for inner in op.regions[0].walk():
        if inner.name.startswith(NOT_UNROLLED_PREFIXES):
            return None
        for result in inner.results:
            # a block held in shared memory (no per-thread registers) is left to its own passes
            if result.type.is_block() and not isinstance(result.type.layout, DistributedLayout):
                return None
        cost += max(1, sum(em.nregs(result) for result in inner.results))
    if trips * cost <= _FULL_UNROLL_BUDGET:
        return "#pragma unroll"
    if not _has_narrow_load(em, op):
        return None
    factor = 1
    while trips % (2 * factor) == 0 and 2 * factor * cost <= _FULL_UNROLL_BUDGET:
        factor *= 2
    return f"#pragma unroll {factor}" if factor > 1 else None


def _rolled_tma_loop(op: Operation) -> bool:
    """Whether `op`, a `for`, waits on a TMA pipeline's mbarriers in its body and runs
    inside another loop (see `unroll_pragma`)."""
    return any(inner.name == "mbarrier_wait" for inner in op.regions[0].ops) and _inside_a_loop(op)


def _inside_a_loop(op: Operation) -> bool:
    """Whether `op` runs inside a `for` or `while`."""
    region = op.parent
    while region is not None and isinstance(region.parent, Operation):
        if region.parent.name in ("for", "while"):
            return True
        region = region.parent.parent
    return False


def _has_narrow_load(em: Emitter, op: Operation) -> bool:
    """Whether a block load in `op`'s body reads fewer than 16 bytes an access."""
    for inner in op.regions[0].walk():
        if inner.name != "load" or not inner.results[0].type.is_block():
            continue
        ptr = inner.operands[0]
        mask = inner.operands[1] if len(inner.operands) > 1 else None
        if vector_width(em, ptr, mask) * inner.results[0].type.scalar.itemsize < 16:
            return True
    return False


def _copy_offsets(em: Emitter, op: Operation) -> list[Value]:
    """The integer blocks defined before the loop `op` from which the addresses of its
    asynchronous copies (`async_copy`, the pipeline's) are computed inside it: a
    persistent matmul's row offsets times their stride, say."""
    if not async_copies(em):
        return []
    inside = {id(inner) for inner in op.walk()}
    stack = [copy.operands[2] for copy in async_copies(em) if id(copy) in inside]
    seen: set[int] = set()
    found: list[Value] = []
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        made = value.defining_op
        if made is None:
            continue
        if id(made) in inside:
            stack.extend(made.operands)
        elif value.type.is_block() and value.type.scalar.is_int() and value.type.scalar.int_bitwidth in (32, 64) \
                and made.name not in ("constant", "splat"):
            found.append(value)
    return found


def _read_only_accesses(loop: Operation) -> list[tuple[int, int, bool]] | None:
    """The shared bytes `loop`'s body reads, where it only reads (tiles its dots
    read, none written by its ops: no `local_alloc`, no scratch user): what a
    trip may have accessed since the last barrier when the next begins. None
    where the body writes shared memory (a write meets itself across trips) or
    begins its trips with a barrier of its own (a `cp.async` pipeline's wait)."""
    reads = []
    for op in loop.regions[0].walk():
        if "scratch_offset" in op.attrs or op.name in ("local_alloc", "local_buffer", "async_wait"):
            return None
        for value in op.operands:
            if is_shared_tile(value):
                try:
                    start, end = tile_range(value)
                except ValueError:
                    return None
                reads.append((start, end, False))
    return reads


@emits("for")
def emit_for(em: Emitter, op: Operation) -> None:
    lb, ub, step = (em.name(v) for v in op.operands[:3])
    body = op.regions[0]
    for value in _copy_offsets(em, op):
        pin_registers(em, value)
    ignored = _zeroed_accumulators(op)
    carried = []
    for index, (result, init) in enumerate(zip(op.results, op.operands[3:])):
        if index in ignored:
            # Zeroed once, at the kernel's start, then left as the last run of the loop left
            # it: the first trip's dot ignores it, and after a loop of no trips the zeros are
            # written (`zeros_if_no_trips`). Left undefined instead, or written in a branch
            # before the loop, ptxas ran the loop's wgmma groups one at a time.
            name = em.new_name(result, "c")
            em.prologue += [f"{ctype(result.type)} {name}[{em.nregs(result)}];", "#pragma unroll",
                            f"for (int i = 0; i < {em.nregs(result)}; ++i) {name}[i] = 0;"]
            em.memo.setdefault("zeros_if_no_trips", {})[id(result)] = (name, init, lb, ub)
            carried.append(name)
        else:
            carried.append(_declare_copy(em, result, init))
    for arg, result, name in zip(body.args[1:], op.results, carried):
        em.bind(arg, name)
        em.bind(result, name)
    # a body that only reads shared tiles needs no barrier between trips: one before the
    # loop (where what came before it may have written them) stands for all
    reads = _read_only_accesses(op)
    if reads and (em.shared_accesses is None or any(
            s < e2 and s2 < e and w for s, e, w in em.shared_accesses for s2, e2, _ in reads)):
        em.barrier()
    iv = em.new_name(body.args[0], "iv")
    for dot in ignored.values():
        em.memo.setdefault("accumulates_after", {})[id(dot)] = f"{iv} != {lb}"
    unroll = op.attrs.get("loop_unroll_factor")
    if isinstance(unroll, int) and unroll >= 1:
        # tl.range(..., loop_unroll_factor=n): n copies of the body per trip (1: not unrolled)
        em.lines.append(f"#pragma unroll {unroll}")
    elif unroll is None and (pragma := unroll_pragma(em, op)) is not None:
        em.lines.append(pragma)
    em.open(f"for ({ctype(body.args[0].type)} {iv} = {lb}; {iv} < {ub}; {iv} += {step})")
    em.terminators.append(lambda values: _assign_all(em, carried, values, list(op.results)))
    try:
        em.emit_region(body, (em.shared_accesses or []) + reads if reads else None)
    finally:
        em.terminators.pop()
    em.close()
    for index, dot in ignored.items():
        if not dot.attrs.get("in_flight"):  # else after the dot_wait that drains it
            zeros_if_no_trips(em, op.results[index])


@emits("while")
def emit_while(em: Emitter, op: Operation) -> None:
    before, after = op.regions
    carried = [_declare_copy(em, arg, init) for arg, init in zip(before.args, op.operands)]
    for arg, name in zip(before.args, carried):
        em.bind(arg, name)
    results = [em.define(r, "r") for r in op.results]

    def leave_or_continue(values: list[str]) -> None:
        condition, *passed = values
        em.open(f"if (!({condition}))")
        for result, value, typed in zip(results, passed, op.results):
            em.copy(result, value, typed)
        em.line("break;")
        em.close()
        for arg, value in zip(after.args, passed):
            em.bind(arg, value)

    em.open("while (true)")
    em.terminators.append(leave_or_continue)
    try:
        em.emit_region(before)
    finally:
        em.terminators.pop()
    em.terminators.append(lambda values: _assign_all(em, carried, values, list(before.args)))
    try:
        em.emit_region(after)
    finally:
        em.terminators.pop()
    em.close()


@emits("if")
def emit_if(em: Emitter, op: Operation) -> None:
    results = [em.define(r, "r") for r in op.results]

    def assign(values: list[str]) -> None:
        for result, value, typed in zip(results, values, op.results):
            em.copy(result, value, typed)

    em.terminators.append(assign)
    try:
        em.open(f"if ({em.name(op.operands[0])})")
        em.emit_region(op.regions[0])
        em.close()
        if op.regions[1].ops and (len(op.regions[1].ops) > 1 or op.results):
            em.open("else")
            em.emit_region(op.regions[1])
            em.close()
    finally:
        em.terminators.pop()


@emits("yield", "condition")
def emit_terminator(em: Emitter, op: Operation) -> None:
    if not em.terminators:
        raise CodegenError(f"`{op.name}` outside a region that takes its values (at {op.loc})")
    em.terminators[-1]([em.name(v) for v in op.operands])


@emits("return")
def emit_return(em: Emitter, op: Operation) -> None:
    if op.operands:
        raise CodegenError(f"a kernel returns no values (at {op.loc})")
    from .codegen_tma import wait_for_staged_stores  # codegen_tma builds on this module

    wait_for_staged_stores(em)
