"""The register contract of `inline_asm` (tl.inline_asm_elementwise), shared by
the frontend, the verifier and the backends.

One invocation of the assembly handles `pack` elements of every argument and
result. Elements narrower than 32 bits travel packed: `min(32 // bits, pack)`
of them share one register, element 0 in the lowest bits. Pointers and 64-bit
values take a register each. The constraint string is LLVM's: comma-separated
codes, outputs first (`=r`, `=&r`), then inputs (`r`, `l`, `h`, `f`, `d`, or a
digit tying the input to that output), then clobbers (`~{memory}`). The asm
text names operands `$0, $1, ...` in that order, outputs first.
"""

from __future__ import annotations

from dataclasses import dataclass

from .types import dtype, type_text


@dataclass(frozen=True)
class Constraints:
    """A parsed constraint string: the code of each output register (without its
    `=` and `&`), which outputs are early-clobber (`=&r`), the code of each input
    register, and the clobbers (`memory`, ...)."""

    outputs: tuple[str, ...]
    early_clobber: tuple[bool, ...]
    inputs: tuple[str, ...]
    clobbers: tuple[str, ...]


def parse_constraints(text: str) -> Constraints:
    """`text` split into outputs, inputs and clobbers; ValueError naming the
    code that is out of place or empty."""
    outputs: list[str] = []
    early: list[bool] = []
    inputs: list[str] = []
    clobbers: list[str] = []
    for raw in text.split(","):
        code = raw.strip()
        if not code:
            raise ValueError(f"constraint string {text!r} has an empty constraint")
        if code.startswith("~"):
            if not (code.startswith("~{") and code.endswith("}")):
                raise ValueError(f"clobber {code!r} in {text!r} must be written ~{{name}}")
            clobbers.append(code[2:-1])
        elif code.startswith("="):
            if inputs or clobbers:
                raise ValueError(f"output constraint {code!r} in {text!r} comes after an input or clobber")
            body = code[1:]
            early.append(body.startswith("&"))
            outputs.append(body.lstrip("&"))
        else:
            if clobbers:
                raise ValueError(f"input constraint {code!r} in {text!r} comes after a clobber")
            inputs.append(code)
    return Constraints(tuple(outputs), tuple(early), tuple(inputs), tuple(clobbers))


def element_bits(ty: dtype) -> int:
    """Bits one element of `ty` takes in a register (pointers: 64)."""
    scalar = ty.scalar
    return 64 if scalar.is_ptr() else scalar.primitive_bitwidth


def elements_per_register(ty: dtype, pack: int) -> int:
    """How many elements of `ty` share one register when `pack` are handled at once."""
    return min(max(32 // element_bits(ty), 1), pack)


def registers_for(ty: dtype, pack: int) -> int:
    """The registers `pack` elements of `ty` take; ValueError when `pack` does not
    split into whole registers."""
    per_register = elements_per_register(ty, pack)
    if pack % per_register:
        raise ValueError(f"pack={pack} elements of {type_text(ty.scalar)} do not fill whole registers of "
                         f"{per_register} elements each")
    return pack // per_register


def expected_registers(arg_types: list[dtype], result_types: list[dtype], pack: int) -> tuple[int, int]:
    """(output registers, input registers) one invocation takes."""
    outputs = sum(registers_for(t, pack) for t in result_types)
    inputs = sum(registers_for(t, pack) for t in arg_types)
    return outputs, inputs


def check_constraints(constraints: str, arg_types: list[dtype], result_types: list[dtype], pack: int) -> None:
    """ValueError unless `constraints` names exactly the registers that `pack`
    elements of the arguments and results take."""
    parsed = parse_constraints(constraints)
    outputs, inputs = expected_registers(arg_types, result_types, pack)
    if len(parsed.outputs) != outputs or len(parsed.inputs) != inputs:
        raise ValueError(
            f"constraints {constraints!r} name {len(parsed.outputs)} output and {len(parsed.inputs)} input "
            f"registers, but pack={pack} elements of the results "
            f"({', '.join(type_text(t.scalar) for t in result_types)}) take {outputs} and of the arguments "
            f"({', '.join(type_text(t.scalar) for t in arg_types) or 'none'}) take {inputs} "
            f"(elements narrower than 32 bits share a register)")
    for code in parsed.inputs:
        if code.isdigit() and int(code) >= outputs:
            raise ValueError(f"input constraint {code!r} in {constraints!r} ties to output ${code}, "
                             f"but there are {outputs} outputs")
