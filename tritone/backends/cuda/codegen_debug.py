"""Code generation for `print` (device printf), `assert` (a message, then a
trap that fails the launch) and `barrier` (`__syncthreads`)."""

from __future__ import annotations

import json

from tritone.ir.core import Operation, Value
from tritone.ir.types import type_text

from .codegen_base import Emitter, emits
from .codegen_layout import _unique_registers
from .codegen_memory import owner_condition
from .codegen_types import widen


def _user_text(text: str) -> str:
    """User text inside a printf format: a literal % is doubled."""
    return text.replace("%", "%%")


def _c_format(fmt: str) -> str:
    """A printf format (already escaped for printf) as a C string literal ending in a newline."""
    return json.dumps(fmt + "\n", ensure_ascii=True)


def _format(value: Value, hex_: bool) -> tuple[str, str]:
    """(printf conversion, argument expression builder) for one element of `value`."""
    ty = value.type.scalar
    if ty.is_ptr():
        return "%p", "(const void*){}"
    if ty.is_floating():
        if hex_:
            bits = ty.primitive_bitwidth
            cast = "unsigned long long" if bits == 64 else "unsigned"
            spec = "0x%llx" if bits == 64 else "0x%x"
            if type_text(ty) in ("fp32", "fp64"):
                return spec, f"tt_bitcast<{cast}>({{}})"
            return spec, f"({cast}){{}}.bits"
        return "%f", "(double)" + widen("{}", ty)
    bits = ty.primitive_bitwidth
    if hex_:
        return ("0x%llx", "(unsigned long long){}") if bits == 64 else ("0x%x", "(unsigned){}")
    if bits == 64:
        return ("%lld", "{}") if ty.is_int_signed() else ("%llu", "{}")
    return ("%d", "(int){}") if ty.is_int_signed() or bits == 1 else ("%u", "(unsigned){}")


@emits("print")
def emit_print(em: Emitter, op: Operation) -> None:
    prefix = _user_text(op.attrs.get("prefix") or "")
    hex_ = bool(op.attrs.get("hex", False))
    pid = "blockIdx.x, blockIdx.y, blockIdx.z"
    if not op.operands:
        em.line(f"if (threadIdx.x == 0) printf({_c_format(f'pid (%d, %d, %d) {prefix}')}, {pid});")
        return
    for index, value in enumerate(op.operands):
        label = prefix + (f" (operand {index})" if len(op.operands) > 1 else "")
        spec, arg = _format(value, hex_)
        if not value.type.is_block():
            text = _c_format(f"pid (%d, %d, %d) {label}{spec}")
            em.line(f"if (threadIdx.x == 0) printf({text}, {pid}, {arg.format(em.name(value))});")
            continue
        linear = em.linear(value)
        idx = ", ".join(["%d"] * linear.rank)
        text = _c_format(f"pid (%d, %d, %d) idx ({idx}) {label}{spec}")
        owner = owner_condition(linear)
        if owner:
            em.open(f"if ({owner})")
        for reg in _unique_registers(linear):
            coords = ", ".join(em.coord(linear, d, reg) for d in range(linear.rank))
            em.line(f"printf({text}, {pid}, {coords}, {arg.format(em.reg(value, reg))});")
        if owner:
            em.close()


@emits("assert")
def emit_assert(em: Emitter, op: Operation) -> None:
    cond = op.operands[0]
    message = op.attrs.get("msg") or ""
    if cond.type.is_block():
        checks = " && ".join(em.reg(cond, r) for r in range(em.nregs(cond)))
    else:
        checks = em.name(cond)
    loc = op.loc
    where = _user_text(f"{loc.file}:{loc.line}: {loc.function or em.fn.name}")
    text = _c_format(f"{where}: block: [%d,%d,%d], thread: [%d,%d,%d] Assertion `{_user_text(message)}` failed.")
    em.open(f"if (!({checks}))")
    em.line(f"printf({text}, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);")
    em.line('asm volatile("trap;");')
    em.close()


@emits("barrier")
def emit_barrier(em: Emitter, op: Operation) -> None:
    em.barrier()
