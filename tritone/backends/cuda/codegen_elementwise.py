"""Code generation for constants, program ids and elementwise arithmetic, with
Triton's GPU semantics (TRITON_SEMANTICS 1, 2, 7):

- integers wrap (computed in unsigned arithmetic, so C++ has no overflow to
  assume away); `//` and `%` are C's (truncation, sign of the dividend);
  shifts by the bit width or more give what PTX's clamping shifts give;
- floats: `max`/`min` ignore NaN unless `propagate_nan`; comparisons are
  ordered except `ne`; fp32 `/` is `div.full.f32`; narrow floats are computed in
  fp32 and rounded back; `a*b + c` may contract to an fma unless the kernel was
  compiled with `enable_fp_fusion=False`, when every add/sub/mul is rounded alone.
"""

from __future__ import annotations

from tritone.ir.core import Operation
from tritone.ir.types import dtype, type_text

from .codegen_base import CodegenError, Emitter, emits
from .codegen_types import compute_ctype, ctype, literal, narrow, unsigned_ctype, widen

_EXACT_UNSIGNED = {8: "unsigned char", 16: "unsigned short", 32: "unsigned", 64: "unsigned long long"}
_EXACT_SIGNED = {8: "signed char", 16: "short", 32: "int", 64: "long long"}
_C_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "xor": "^", "floordiv": "/", "mod": "%"}
_CMP_OPERATORS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def elementwise(em: Emitter, op: Operation, make_expr) -> None:
    """Define the op's one result from `make_expr(operand expressions)`, register
    by register (all operands share the result's layout). Registers that axis
    analysis proves equal to an earlier one (see `Emitter.distinct_register_bits`)
    are computed from that register's operands, so the C++ compiler folds them."""
    result = op.results[0]
    if result.type.is_block():
        name = em.define_block(result)
        count = em.nregs(result)
        mask = em.distinct_register_bits(result)
        index = "i" if mask == count - 1 else f"i & {mask}"
        operands = [em.reg(v, index) for v in op.operands]
        em.for_registers(count, f"{name}[i] = {make_expr(operands)};")
        place = op.attrs.get("in_place")
        if place is not None:
            # written into its operand's registers (a wgmma accumulator carried through a
            # loop, which the dot then updates in flight: pipeline._scaled_in_flight)
            target = em.name(op.operands[place])
            em.copy(target, name, result)
            em.bind(result, target)
    else:
        em.define_scalar(result, make_expr([em.name(v) for v in op.operands]))


# -- constants and program ids --------------------------------------------------------

@emits("constant")
def emit_constant(em: Emitter, op: Operation) -> None:
    result = op.results[0]
    value = literal(op.attrs["value"], result.type)
    if result.type.is_block():
        name = em.define_block(result)
        em.for_registers(em.nregs(result), f"{name}[i] = {value};")
    else:
        em.define_scalar(result, value)


@emits("program_id")
def emit_program_id(em: Emitter, op: Operation) -> None:
    em.define_scalar(op.results[0], f"(int)blockIdx.{'xyz'[op.attrs['axis']]}", "pid")


@emits("num_programs")
def emit_num_programs(em: Emitter, op: Operation) -> None:
    em.define_scalar(op.results[0], f"(int)gridDim.{'xyz'[op.attrs['axis']]}", "npid")


@emits("hint")
def emit_hint(em: Emitter, op: Operation) -> None:
    em.bind(op.results[0], em.name(op.operands[0]))


@emits("assume")
def emit_assume(em: Emitter, op: Operation) -> None:
    """A promise for the optimiser; the generated code does not need it."""


# Programmatic dependent launch (griddepcontrol) exists from sm_90 on; before, the
# controls have nothing to wait for or to signal.
_PDL_MIN_TARGET = 90


@emits("special")
def emit_special(em: Emitter, op: Operation) -> None:
    name = op.attrs["name"]
    if name == "globaltimer":
        result = em.new_name(op.results[0], "tt_time")
        em.line(f"long long {result};")
        em.line(f'asm volatile("mov.u64 %0, %%globaltimer;" : "=l"({result}));')
    elif name == "smid":
        result = em.new_name(op.results[0], "tt_smid")
        em.line(f"int {result};")
        em.line(f'asm("mov.u32 %0, %%smid;" : "=r"({result}));')
    elif em.target >= _PDL_MIN_TARGET:
        instruction = {"gdc_wait": "griddepcontrol.wait", "gdc_launch_dependents": "griddepcontrol.launch_dependents"}
        em.line(f'asm volatile("{instruction[name]};" ::: "memory");')


# -- integer arithmetic ------------------------------------------------------------------

def int_binary(name: str, ty: dtype, a: str, b: str) -> str:
    """`a <name> b` for integers of type `ty`, wrapping like two's complement hardware."""
    t = ctype(ty)
    bits = ty.primitive_bitwidth
    u = unsigned_ctype(ty)
    if bits == 1:
        if name in ("floordiv", "mod"):
            return f"(bool)({a} {_C_OPERATORS[name]} {b})"
        if name == "max":
            return f"({a} || {b})"
        if name == "min":
            return f"({a} && {b})"
        if name in ("shl", "lshr"):
            return f"({b} ? false : {a})"
        if name == "ashr":
            return f"({a})"
        if name == "umulhi":
            raise CodegenError("umulhi of i1")
        return f"(bool)((((unsigned){a}) {_C_OPERATORS[name]} ((unsigned){b})) & 1u)"
    if name in ("add", "sub", "mul"):
        return f"(({t})(({u}){a} {_C_OPERATORS[name]} ({u}){b}))"
    if name in ("and", "or", "xor", "floordiv", "mod"):
        return f"(({t})({a} {_C_OPERATORS[name]} {b}))"
    if name in ("max", "min"):
        return f"({a} {'>' if name == 'max' else '<'} {b} ? {a} : {b})"
    amount = f"(({u}){b})"
    if name == "shl":
        return f"({amount} >= {bits}u ? ({t})0 : ({t})(({u}){a} << {amount}))"
    if name == "lshr":
        return f"({amount} >= {bits}u ? ({t})0 : ({t})(({_EXACT_UNSIGNED[bits]}){a} >> {amount}))"
    if name == "ashr":
        signed = f"(({_EXACT_SIGNED[bits]}){a})"
        return f"({amount} >= {bits}u ? ({t})({signed} < 0 ? -1 : 0) : ({t})({signed} >> {amount}))"
    if name == "umulhi":
        if bits == 32:
            return f"(({t})tt_umulhi32((unsigned){a}, (unsigned){b}))"
        if bits == 64:
            return f"(({t})tt_umulhi64((unsigned long long){a}, (unsigned long long){b}))"
        raise CodegenError(f"umulhi of {ty}: only 32- and 64-bit integers")
    raise CodegenError(f"no integer meaning for {name}")


# -- float arithmetic -------------------------------------------------------------------

_UNFUSED = {("add", "float"): "__fadd_rn", ("sub", "float"): "__fsub_rn", ("mul", "float"): "__fmul_rn",
            ("add", "double"): "__dadd_rn", ("sub", "double"): "__dsub_rn", ("mul", "double"): "__dmul_rn"}


def float_binary(em: Emitter, name: str, ty: dtype, a: str, b: str, propagate_nan: bool = False) -> str:
    """`a <name> b` for floats of type `ty`; `a`, `b` are already in the compute type."""
    c = compute_ctype(ty)
    native = type_text(ty.scalar) in ("fp32", "fp64")
    if name in ("add", "sub", "mul"):
        if em.options.enable_fp_fusion or not native:
            return f"({a} {_C_OPERATORS[name]} {b})"
        return f"{_UNFUSED[(name, c)]}({a}, {b})"
    if name == "div":
        if type_text(ty.scalar) == "fp32":
            return f"tt_div_full_f32({a}, {b})"
        return f"tt_div_rn_{'f64' if c == 'double' else 'f32'}({a}, {b})"
    if name == "div_rn":
        return f"tt_div_rn_{'f64' if c == 'double' else 'f32'}({a}, {b})"
    if name == "mod":
        return f"tt_mod_{'f64' if c == 'double' else 'f32'}({a}, {b})"
    if name in ("max", "min"):
        if propagate_nan:
            return f"tt_{name}_nan_{'f64' if c == 'double' else 'f32'}({a}, {b})"
        return f"f{name}{'f' if c == 'float' else ''}({a}, {b})"
    raise CodegenError(f"no float meaning for {name}")


@emits("add", "sub", "mul", "div", "div_rn", "floordiv", "mod", "and", "or", "xor", "shl", "ashr", "lshr",
       "max", "min", "umulhi")
def emit_binary(em: Emitter, op: Operation) -> None:
    ty = op.results[0].type.scalar
    if ty.is_int():
        elementwise(em, op, lambda xs: int_binary(op.name, ty, xs[0], xs[1]))
    elif ty.is_floating():
        nan = bool(op.attrs.get("propagate_nan", False))
        elementwise(em, op, lambda xs: narrow(
            float_binary(em, op.name, ty, widen(xs[0], ty), widen(xs[1], ty), nan), ty))
    else:
        raise CodegenError(f"{op.name} on {ty} at {op.loc}")


@emits("fma")
def emit_fma(em: Emitter, op: Operation) -> None:
    ty = op.results[0].type.scalar
    function = {"fp32": "fmaf", "fp64": "fma", "fp16": "tt_fma_f16", "bf16": "tt_fma_bf16"}.get(type_text(ty))
    if function is None:
        raise CodegenError(f"fma on {ty} at {op.loc}")
    elementwise(em, op, lambda xs: f"{function}({xs[0]}, {xs[1]}, {xs[2]})")


@emits("cmp")
def emit_cmp(em: Emitter, op: Operation) -> None:
    ty = op.operands[0].type.scalar
    operator = _CMP_OPERATORS[op.attrs["pred"]]
    if ty.is_ptr():
        elementwise(em, op, lambda xs: f"((unsigned long long){xs[0]} {operator} (unsigned long long){xs[1]})")
        return
    narrow_side = _widened_32_bit_side(op) if operator in ("==", "!=") else None
    if narrow_side is None:
        elementwise(em, op, lambda xs: f"({widen(xs[0], ty)} {operator} {widen(xs[1], ty)})")
        return
    # `ext(a) == b` with a 32-bit `a`: b must fit 32 bits and equal a there. The
    # compare stays 32-bit per element (b is often one scalar, its check done
    # once), where a 64-bit compare of every widened element costs two
    # instructions and lets the compiler keep 64-bit differences live across loops.
    narrow = op.operands[narrow_side].defining_op.operands[0]
    word = ctype(narrow.type.scalar)
    wide = ctype(ty)

    def equal(xs: list[str]) -> str:
        a, b = xs[narrow_side], xs[1 - narrow_side]
        return f"(({wide})({word}){b} == {b} && {a} == ({word}){b})"

    extended = [v if i != narrow_side else narrow for i, v in enumerate(op.operands)]
    result = op.results[0]
    if result.type.is_block():
        name = em.define_block(result)
        mask = em.distinct_register_bits(result)
        index = "i" if mask == em.nregs(result) - 1 else f"i & {mask}"
        test = equal([em.reg(v, index) for v in extended])
        em.for_registers(em.nregs(result), f"{name}[i] = {test if operator == '==' else f'!{test}'};")
    else:
        test = equal([em.name(v) for v in extended])
        em.define_scalar(result, test if operator == "==" else f"!{test}")


def _widened_32_bit_side(op: Operation) -> int | None:
    """Which operand of a 64-bit integer compare is a 32-bit integer widened by a
    `cast` (sign-extended when signed, zero-extended when not) in the same layout."""
    ty = op.operands[0].type.scalar
    if not ty.is_int() or ty.primitive_bitwidth != 64:
        return None
    for side, value in enumerate(op.operands):
        producer = value.defining_op
        if producer is None or producer.name != "cast":
            continue
        source = producer.operands[0]
        if (source.type.scalar.is_int() and source.type.scalar.primitive_bitwidth == 32
                and source.type.is_block() == value.type.is_block()
                and (not value.type.is_block() or source.type.layout == value.type.layout)):
            return side
    return None


@emits("select")
def emit_select(em: Emitter, op: Operation) -> None:
    elementwise(em, op, lambda xs: f"({xs[0]} ? {xs[1]} : {xs[2]})")


@emits("abs")
def emit_abs(em: Emitter, op: Operation) -> None:
    ty = op.results[0].type.scalar
    t = ctype(ty)
    if ty.is_int():
        if ty.is_int_unsigned():
            elementwise(em, op, lambda xs: xs[0])
        else:
            u = unsigned_ctype(ty)
            elementwise(em, op, lambda xs: f"({xs[0]} < 0 ? ({t})(({u})0 - ({u}){xs[0]}) : {xs[0]})")
    elif type_text(ty) == "fp32":
        elementwise(em, op, lambda xs: f"__uint_as_float(__float_as_uint({xs[0]}) & 0x7fffffffu)")
    elif type_text(ty) == "fp64":
        elementwise(em, op, lambda xs: f"__longlong_as_double(__double_as_longlong({xs[0]}) & 0x7fffffffffffffffll)")
    else:
        bits = "unsigned char" if ty.primitive_bitwidth == 8 else "unsigned short"
        mask = "0x7f" if ty.primitive_bitwidth == 8 else "0x7fff"
        elementwise(em, op, lambda xs: f"{t}{{({bits})({xs[0]}.bits & {mask})}}")


# -- math ------------------------------------------------------------------------------

_MATH_F32 = {"exp": "tt_exp_f32", "exp2": "tt_exp2_f32", "sqrt": "tt_sqrt_f32", "sqrt_rn": "tt_sqrt_rn_f32",
             "rsqrt": "tt_rsqrt_f32", "floor": "tt_floor_f32", "ceil": "tt_ceil_f32", "log": "__nv_logf",
             "log2": "__nv_log2f", "sin": "__nv_sinf", "cos": "__nv_cosf", "erf": "__nv_erff"}
_MATH_F64 = {"exp": "__nv_exp", "exp2": "__nv_exp2", "sqrt": "tt_sqrt_f64", "sqrt_rn": "tt_sqrt_f64",
             "rsqrt": "__nv_rsqrt", "floor": "__nv_floor", "ceil": "__nv_ceil", "log": "__nv_log",
             "log2": "__nv_log2", "sin": "__nv_sin", "cos": "__nv_cos", "erf": "__nv_erf"}


def libdevice_call(em: Emitter, symbol: str, result: dtype, args: list[dtype]) -> str:
    """Declare libdevice's `symbol` (NVRTC links libdevice) and return its name."""
    if symbol.startswith("__nv_"):
        params = ", ".join(ctype(a) for a in args)
        em.declare_once(f'extern "C" __device__ {ctype(result)} {symbol}({params});')
    return symbol


@emits("exp", "exp2", "log", "log2", "sin", "cos", "sqrt", "sqrt_rn", "rsqrt", "erf", "floor", "ceil")
def emit_math(em: Emitter, op: Operation) -> None:
    ty = op.results[0].type.scalar
    table = {"fp32": _MATH_F32, "fp64": _MATH_F64}.get(type_text(ty))
    if table is None:
        raise CodegenError(f"{op.name} on {ty} at {op.loc}: only fp32 and fp64")
    symbol = table[op.name]
    if symbol == "tt_exp2_f32" and not em.options.enable_reflect_ftz:
        symbol = "tt_exp2_noftz_f32"  # the option picks libdevice's flavour in Triton
    function = libdevice_call(em, symbol, ty, [ty])
    elementwise(em, op, lambda xs: f"{function}({xs[0]})")


@emits("extern")
def emit_extern(em: Emitter, op: Operation) -> None:
    from tritone.language.extra.libdevice import LIBDEVICE_SYMBOLS

    arg_types = tuple(v.type.scalar for v in op.operands)
    symbol = LIBDEVICE_SYMBOLS.get((op.attrs["name"], arg_types))
    if symbol is None:
        names = ", ".join(str(t) for t in arg_types)
        raise CodegenError(f"libdevice has no {op.attrs['name']}({names}) (at {op.loc})")
    function = libdevice_call(em, symbol, op.results[0].type.scalar, list(arg_types))
    elementwise(em, op, lambda xs: f"{function}({', '.join(xs)})")
