"""Code generation for structured control flow: `for` and `while` become C++
loops (a `for` with a `loop_unroll_factor` under `#pragma unroll n`) and `if`
a branch, with carried values as variables declared before them (arrays for
blocks). A region's `yield` assigns the carried variables
through temporaries, since it may permute them. Scalar conditions are the
same in every thread of a CTA, so barriers inside these regions are safe.
"""

from __future__ import annotations

from tritone.ir.core import Operation, Value

from .codegen_base import CodegenError, Emitter, emits
from .codegen_types import ctype


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


@emits("for")
def emit_for(em: Emitter, op: Operation) -> None:
    lb, ub, step = (em.name(v) for v in op.operands[:3])
    body = op.regions[0]
    carried = [_declare_copy(em, result, init) for result, init in zip(op.results, op.operands[3:])]
    for arg, result, name in zip(body.args[1:], op.results, carried):
        em.bind(arg, name)
        em.bind(result, name)
    iv = em.new_name(body.args[0], "iv")
    unroll = op.attrs.get("loop_unroll_factor")
    if isinstance(unroll, int) and unroll >= 1:
        # tl.range(..., loop_unroll_factor=n): n copies of the body per trip (1: not unrolled)
        em.lines.append(f"#pragma unroll {unroll}")
    em.open(f"for ({ctype(body.args[0].type)} {iv} = {lb}; {iv} < {ub}; {iv} += {step})")
    em.terminators.append(lambda values: _assign_all(em, carried, values, list(op.results)))
    try:
        em.emit_region(body)
    finally:
        em.terminators.pop()
    em.close()


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
