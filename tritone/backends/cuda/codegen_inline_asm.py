"""Code generation for `inline_asm` (tl.inline_asm_elementwise): one CUDA
`asm` statement per group of `pack` registers of the thread's elements.

The op's contract (tritone/ir/inline_asm.py) is LLVM's, as upstream Triton
hands it to LLVM; CUDA's inline assembly differs in three ways handled here:

- operands are `%N`, not `$N` (and a literal `%`, as in `%tid.x`, is `%%`);
- an input tied to an output (constraint `"0"`) does not exist: the output
  becomes read-write (`"+r"`), starts with the input's value, and the input's
  `$N` names the output;
- an operand's C++ type must have the register's size: each register is a
  variable of the constraint's type (`h` 16-bit, `r` 32, `l` 64, `f` float,
  `d` double) holding the element's bits, narrow elements packed element 0
  lowest, and results are taken back out of such variables bit for bit.

A pure op is a plain `asm` the C++ compiler may merge or drop; any other is
`asm volatile` with a `memory` clobber, so it runs as written and memory
accesses do not move across it. A thread whose element count is not a
multiple of `pack` (a small block) fills its last group with copies of its
last element when the op is pure, and drops those results.
"""

from __future__ import annotations

from dataclasses import dataclass

from tritone.ir.core import Operation, Value
from tritone.ir.inline_asm import element_bits, elements_per_register, parse_constraints
from tritone.ir.types import dtype, type_text

from .codegen_base import CodegenError, Emitter, emits
from .codegen_types import NARROW_FLOATS, ctype

_EXACT_UNSIGNED = {8: "unsigned char", 16: "unsigned short", 32: "unsigned"}
# constraint code -> (C++ type of the register variable, bits)
_REGISTERS = {"h": ("unsigned short", 16), "r": ("unsigned", 32), "l": ("unsigned long long", 64),
              "f": ("float", 32), "d": ("double", 64)}


@dataclass
class _Register:
    """One asm operand: which elements of which value it carries."""

    code: str  # constraint code, without `=` / `&`
    value: Value  # the op's operand or result it carries elements of
    first: int  # index of its first element within the group
    count: int  # elements packed into it
    variable: str = ""


def _fail(op: Operation, message: str) -> CodegenError:
    return CodegenError(f"tl.inline_asm_elementwise at {op.loc}: {message}")


# -- bits of elements ---------------------------------------------------------------

def element_to_bits(expr: str, ty: dtype) -> str:
    """The bits of the element `expr` of type `ty`, as an unsigned integer
    expression (`unsigned`, or `unsigned long long` for 64-bit elements)."""
    scalar = ty.scalar
    name = type_text(scalar)
    if scalar.is_ptr():
        return f"(unsigned long long)({expr})"
    if name == "i1":
        return f"(unsigned)({expr})"
    if name in NARROW_FLOATS:
        return f"(unsigned)({expr}).bits"
    if name == "fp32":
        return f"__float_as_uint({expr})"
    if name == "fp64":
        return f"(unsigned long long)__double_as_longlong({expr})"
    bits = scalar.primitive_bitwidth
    if bits == 64:
        return f"(unsigned long long)({expr})"
    if bits == 32:
        return f"(unsigned)({expr})"
    return f"(unsigned)({_EXACT_UNSIGNED[bits]})({expr})"


def bits_to_element(bits: str, shift: int, ty: dtype) -> str:
    """The element of type `ty` held in `bits` (an unsigned expression) from bit `shift` up."""
    scalar = ty.scalar
    name = type_text(scalar)
    part = f"({bits} >> {shift})" if shift else f"({bits})"
    if scalar.is_ptr():
        return f"({ctype(scalar)}){part}"
    if name == "i1":
        return f"(({part} & 1u) != 0)"
    width = element_bits(scalar)
    if name in NARROW_FLOATS:
        return f"{ctype(scalar)}{{({_EXACT_UNSIGNED[width]}){part}}}"
    if name == "fp32":
        return f"__uint_as_float((unsigned){part})"
    if name == "fp64":
        return f"__longlong_as_double((long long){part})"
    if width == 64:
        return f"({ctype(scalar)}){part}"
    return f"({ctype(scalar)})({_EXACT_UNSIGNED[width]}){part}"


def bits_to_register(bits: str, code: str) -> str:
    """An unsigned expression as the C++ type of a `code` register."""
    if code == "f":
        return f"__uint_as_float((unsigned)({bits}))"
    if code == "d":
        return f"__longlong_as_double((long long)({bits}))"
    return f"({_REGISTERS[code][0]})({bits})"


def register_to_bits(variable: str, code: str) -> str:
    """The bits of the `code` register `variable`, as an unsigned expression."""
    if code == "f":
        return f"__float_as_uint({variable})"
    if code == "d":
        return f"(unsigned long long)__double_as_longlong({variable})"
    if code in "rl":
        return variable
    return f"(unsigned){variable}"


# -- the asm text -------------------------------------------------------------------

def cuda_asm_text(op: Operation, asm: str, operand_index: list[int]) -> str:
    """LLVM-style `asm` with CUDA's operand syntax: `$N` and `${N}` become
    `%<operand_index[N]>`, `$$` a `$`, `%` a `%%`; other `$` stay (PTX names
    may contain them)."""
    out: list[str] = []
    i = 0
    while i < len(asm):
        char = asm[i]
        if char == "%":
            out.append("%%")
            i += 1
            continue
        if char != "$":
            out.append(char)
            i += 1
            continue
        following = asm[i + 1:i + 2]
        if following == "$":
            out.append("$")
            i += 2
            continue
        if following == "{":
            end = asm.find("}", i)
            digits, i = asm[i + 2:end] if end > 0 else "", end + 1
            if not digits.isdigit():
                raise _fail(op, f"operand reference ${{{digits}}}: only ${{N}} without a modifier is supported")
        elif following.isdigit():
            end = i + 1
            while end < len(asm) and asm[end].isdigit():
                end += 1
            digits, i = asm[i + 1:end], end
        else:
            out.append("$")
            i += 1
            continue
        number = int(digits)
        if number >= len(operand_index):
            raise _fail(op, f"the asm names ${number}, but its constraints give {len(operand_index)} operands")
        out.append(f"%{operand_index[number]}")
    return "".join(out)


def c_string(text: str) -> str:
    """`text` as a C string literal (one literal per line of the text)."""
    pieces = []
    for line in text.splitlines(keepends=True):
        escaped = []
        for char in line:
            if char == "\\":
                escaped.append("\\\\")
            elif char == '"':
                escaped.append('\\"')
            elif char == "\n":
                escaped.append("\\n")
            elif char == "\t":
                escaped.append("\\t")
            elif " " <= char <= "~":
                escaped.append(char)
            else:
                escaped.extend(f"\\{byte:03o}" for byte in char.encode("utf-8"))
        pieces.append('"' + "".join(escaped) + '"')
    return " ".join(pieces) if pieces else '""'


# -- the op ---------------------------------------------------------------------------

def _registers(op: Operation, values: list[Value], codes: tuple[str, ...], pack: int) -> list[_Register]:
    registers = []
    for value in values:
        per_register = elements_per_register(value.type, pack)
        for first in range(0, pack, per_register):
            registers.append(_Register("", value, first, per_register))
    if len(registers) != len(codes):
        raise _fail(op, f"the constraints give {len(codes)} registers where the values take {len(registers)}")
    for register, code in zip(registers, codes):
        register.code = code
    return registers


def _check_fits(op: Operation, register: _Register, code: str, what: str) -> None:
    if code not in _REGISTERS:
        raise _fail(op, f"constraint {code!r} of {what} is not one CUDA supports (h, r, l, f, d)")
    bits = register.count * element_bits(register.value.type)
    size = _REGISTERS[code][1]
    if bits > size or (code in "fd" and bits != size):
        raise _fail(op, f"{what} carries {bits} bits ({register.count} x {type_text(register.value.type.scalar)}), "
                        f"which a {code!r} register ({size} bits) cannot hold")


@emits("inline_asm")
def emit_inline_asm(em: Emitter, op: Operation) -> None:
    pack = int(op.attrs["pack"])
    pure = op.attrs["pure"] is True
    try:
        constraints = parse_constraints(op.attrs["constraints"])
    except ValueError as error:
        raise _fail(op, str(error)) from None
    outputs = _registers(op, op.results, constraints.outputs, pack)
    inputs = _registers(op, op.operands, constraints.inputs, pack)
    # CUDA operand numbers: outputs keep theirs, a tied input is its output's,
    # the other inputs follow the outputs in order.
    operand_index = list(range(len(outputs)))
    tied: dict[int, _Register] = {}
    untied: list[_Register] = []
    for position, register in enumerate(inputs):
        if register.code.isdigit():
            target = int(register.code)
            if target >= len(outputs) or target in tied:
                raise _fail(op, f"input {len(outputs) + position} ties to output {target}, which does not exist "
                                "or is tied already")
            _check_fits(op, register, outputs[target].code, f"operand ${len(outputs) + position}")
            tied[target] = register
            operand_index.append(target)
        else:
            _check_fits(op, register, register.code, f"operand ${len(outputs) + position}")
            operand_index.append(len(outputs) + len(untied))
            untied.append(register)
    for position, register in enumerate(outputs):
        _check_fits(op, register, register.code, f"output ${position}")
    clobbers = ['"memory"'] if not pure or "memory" in constraints.clobbers else []
    for clobber in constraints.clobbers:
        if clobber != "memory":
            raise _fail(op, f"clobber ~{{{clobber}}}: CUDA inline assembly only knows ~{{memory}}")
    text = c_string(cuda_asm_text(op, op.attrs["asm"], operand_index))

    count = em.nregs(op.results[0])
    groups = -(-count // pack)
    if groups * pack != count and not pure:
        raise _fail(op, f"pack={pack}, but each thread holds {count} element(s) of the "
                        f"{type_text(op.results[0].type)} result; a non-pure asm cannot be given padding elements "
                        "(use a larger block, fewer warps, or a smaller pack)")
    for value in op.results:
        em.define(value)

    def element(group, j: int):
        """The register index of element j of `group` (an int, or the loop variable's name)."""
        if isinstance(group, int):
            return min(group * pack + j, count - 1)
        return f"{group} * {pack} + {j}" if pack > 1 else group

    def emit_group(group) -> None:
        for index, register in enumerate(outputs):
            register.variable = f"tt_asm_out{index}"
            em.line(f"{_REGISTERS[register.code][0]} {register.variable};")
        for index, register in enumerate(inputs):
            parts = []
            for k in range(register.count):
                bits = element_to_bits(em.reg(register.value, element(group, register.first + k)),
                                       register.value.type)
                shift = k * element_bits(register.value.type)
                parts.append(f"({bits} << {shift})" if shift else bits)
            packed = " | ".join(parts)
            if register.code.isdigit():
                em.line(f"{outputs[int(register.code)].variable} = "
                        f"{bits_to_register(packed, outputs[int(register.code)].code)};")
            else:
                register.variable = f"tt_asm_in{index}"
                em.line(f"{_REGISTERS[register.code][0]} {register.variable} = "
                        f"{bits_to_register(packed, register.code)};")
        out_list = ", ".join(
            f'"{"+" if i in tied else "=" + ("&" if constraints.early_clobber[i] else "")}{r.code}"({r.variable})'
            for i, r in enumerate(outputs))
        sections = [out_list, ", ".join(f'"{r.code}"({r.variable})' for r in untied), ", ".join(clobbers)]
        while not sections[-1]:
            sections.pop()
        keyword = "asm" if pure else "asm volatile"
        em.line(f"{keyword}({' : '.join([text, *sections])});")
        for register in outputs:
            bits = register_to_bits(register.variable, register.code)
            width = element_bits(register.value.type)
            for k in range(register.count):
                index = element(group, register.first + k)
                if isinstance(group, int) and group * pack + register.first + k >= count:
                    continue  # a padding element
                em.line(f"{em.reg(register.value, index)} = {bits_to_element(bits, k * width, register.value.type)};")

    if groups > 1 and groups * pack == count:
        em.lines.append("#pragma unroll")
        em.open(f"for (int tt_g = 0; tt_g < {groups}; ++tt_g)")
        emit_group("tt_g")
        em.close()
    else:
        for group in range(groups):
            em.open()
            emit_group(group)
            em.close()
