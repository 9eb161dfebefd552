"""Code generation for `print` (device printf), `assert` (a message, then a
trap that fails the launch) and `barrier` (`__syncthreads`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from tritone.ir.core import Operation
from tritone.ir.types import dtype, type_text

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


# Triton's device_print lines: `pid (x, y, z) idx (i, j)<prefix>(operand n) <element>`,
# indices padded to the digits of their dimension, printed by every thread that
# holds the element; a scalar prints in every thread with `idx ()`, and a print
# without operands as `pid (x, y, z)<prefix>`.
PID_FORMAT = "pid (%u, %u, %u)"


def index_widths(shape: Sequence[int]) -> list[int]:
    """The width each index of a tensor of `shape` is padded to in a print line:
    the digits of the dimension's largest index (0, no padding, for a dimension of 1)."""
    return [len(str(size - 1)) if size > 1 else 0 for size in shape]


def element_format(prefix: str, shape: Sequence[int], conversion: str, operand: int | None = None) -> str:
    """The printf format of one element's line of a print: `conversion` formats the
    element, `shape` is () for a scalar, `operand` is the operand's number when
    the print has several. `prefix` is the op's (normalised) prefix, user text."""
    index = ", ".join(f"%{width}u" if width else "%u" for width in index_widths(shape))
    label = f"(operand {operand}) " if operand is not None else ""
    return f"{PID_FORMAT} idx ({index}){_user_text(prefix)}{label}{conversion}"


def message_format(prefix: str) -> str:
    """The printf format of a print without operands."""
    return f"{PID_FORMAT}{_user_text(prefix)}"


def element_conversion(ty: dtype, hex_: bool) -> tuple[str, str]:
    """(printf conversion, C argument template with `{}` for the element) of one
    element of scalar type `ty`, as Triton formats it: integers narrower than 32
    bits widened by their signedness, floats as doubles with `%f`, pointers
    `%p`, and with `hex_` the bits zero-padded to the type's hex digits."""
    if ty.is_ptr():
        return "%p", "(const void*){}"
    bits = ty.primitive_bitwidth
    if hex_:
        digits = max(1, bits // 4)
        cast = "unsigned long long" if bits > 32 else "unsigned"
        conversion = f"0x%0{digits}{'ll' if bits > 32 else ''}x"
        if not ty.is_floating():
            return conversion, f"({cast}){{}}"
        if type_text(ty) in ("fp32", "fp64"):
            return conversion, f"tt_bitcast<{cast}>({{}})"
        return conversion, f"({cast}){{}}.bits"
    if ty.is_floating():
        return "%f", "(double)" + widen("{}", ty)
    signed = ty.is_int_signed()
    if bits > 32:
        return ("%lli", "{}") if signed else ("%llu", "{}")
    return ("%i", "(int){}") if signed else ("%u", "(unsigned){}")


@emits("print")
def emit_print(em: Emitter, op: Operation) -> None:
    prefix = op.attrs.get("prefix") or ""
    hex_ = bool(op.attrs.get("hex", False))
    pid = "blockIdx.x, blockIdx.y, blockIdx.z"
    if not op.operands:
        em.line(f"printf({_c_format(message_format(prefix))}, {pid});")
        return
    for index, value in enumerate(op.operands):
        operand = index if len(op.operands) > 1 else None
        conversion, arg = element_conversion(value.type.scalar, hex_)
        if not value.type.is_block():
            text = _c_format(element_format(prefix, (), conversion, operand))
            em.line(f"printf({text}, {pid}, {arg.format(em.name(value))});")
            continue
        linear = em.linear(value)
        text = _c_format(element_format(prefix, value.type.shape, conversion, operand))
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
