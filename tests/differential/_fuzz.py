"""A generator of small random kernels for the differential tests.

Each case is one `@triton.jit` kernel built from a random expression over
loaded inputs: elementwise (+ - * / // % & | ^ << >> min/max/where/casts/math
with int and float dtypes), masked loads with `other`, masked stores,
reductions (sum/max/min/argmax/argmin/xor_sum over an axis of a 2-D block) and
loops (`for` over a run-time or constexpr range, `while` on a run-time bound),
over random power-of-two shapes. `write_module` puts all kernels of a run in
one file that both implementations load.

Upstream's interpreter and its GPU disagree in places (TRITON_SEMANTICS
section 12). The generator keeps out of them by construction; EXCLUSIONS names
each thing it avoids with the row it comes from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.kernels._cases import Agreement
from tests.kernels._data import bit_width, from_numpy, is_float, is_signed, random_array, round_to
from tests.kernels._gpu_numpy import computation_type, integer_promote

# What the generator never produces, and the TRITON_SEMANTICS section 12 row
# (or other section) that makes upstream's interpreter differ from its GPU there.
EXCLUSIONS: list[tuple[str, str]] = [
    ("bf16 values anywhere", "12: fp32 → bf16; bf16 `tl.sum`; `x_bf16 + 1.0`, bf16 `full/clamp`"),
    ("fp8 dtypes", "12: fp8 conversions"),
    ("`fp_downcast_rounding='rtz'`", "12: `rtz` downcasts"),
    ("float -> int casts of values that may be out of range, NaN, or negative into an unsigned type "
     "(only signed targets, from bounded NaN-free expressions)",
     "12: float → i32/u32 out of range, NaN; float → i8/u8 out of range"),
    ("NaN and infinities: every float subexpression has a bound below its dtype's overflow; divisions are by "
     "|y| + 1, sqrt and log take |x| (+ 1), exp only small arguments",
     "12: `maximum/minimum/clamp` with NaN; argmax with NaN"),
    ("float `%`", "12: `x % y` (float)"),
    ("subnormal inputs to floor/ceil/exp2/sqrt/rsqrt (inputs and bounds keep away from them)",
     "12: `floor/ceil/exp2/sqrt/rsqrt` subnormal input"),
    ("fp16 and bf16 sums, cumsum", "12: fp16 `tl.sum`; bf16 `tl.sum`"),
    ("argmax/argmin with tie_break_left=False", "12: argmax `tie_break_left=False`"),
    ("fp32 `tl.dot` (no dots at all)", "12: fp32 `tl.dot` default; dot min sizes"),
    ("`umulhi`", "12: `umulhi` with negative signed inputs"),
    ("`~` on unsigned ints", "12: `~` on unsigned"),
    ("i1 arithmetic (comparisons only feed `where` or a cast)", "12: bool arithmetic `i1 + i1`"),
    ("kernel int arguments equal to 1, float and bool kernel arguments",
     "12: int arg == 1; float args; bool kernel args"),
    ("`tl.fma`; float compare, floor/ceil, argmax and float -> int casts of anything computed with an "
     "approximate op (/, exp, log, sqrt, sin, cos, sigmoid) or with a product feeding an add (the GPU fuses "
     "it into one fma): those would turn ulp differences into different branches",
     "12: `a*b + c`; `exp, sqrt, rsqrt, /, fdiv, sigmoid` (floats are compared with a tolerance)"),
    ("`device_assert`, debug mode", "12: `device_assert`, overflow checks"),
    ("constructs the compiler rejects (break, continue, type-changing loop variables ...)",
     "12: control-flow restrictions"),
    ("integer division by zero and INT_MIN // -1 (divisors are (y & 7) + 2 or its negation)",
     "14: integer division by zero not pinned down"),
    ("shift amounts >= the bit width (amounts are masked with width - 1)", "14: shift amounts >= width"),
    ("`>>` of a signed value whose promoted type is unsigned (the amount is cast to the value's type)",
     "1.8, not in 12: upstream's interpreter keeps that arithmetic shift's result as signed data"),
]

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_DTYPES = ("float16", "float32", "float64")
SIGNED_INTS = ("int8", "int16", "int32", "int64")
FLOAT_LIMIT = {"float16": 1e4, "float32": 1e30, "float64": 1e200}
INPUT_FLOAT_BOUND = 4.0


@dataclass(frozen=True)
class Expr:
    code: str
    dtype: str
    bound: float  # largest |value| it can take
    exact: bool = True  # computed without an approximate float op or a possible fma contraction
    peak: float = 0.0  # largest bound of any float subexpression (sets the tolerance)
    eps: float = 0.0  # coarsest float precision used inside
    product: bool = False  # a float product (possibly negated or converted): an add of it may become an fma


@dataclass
class FuzzCase:
    index: int
    name: str
    source: str
    inputs: dict
    agreement: Agreement
    description: str = ""


def _int_range(dtype: str) -> float:
    width = bit_width(dtype)
    return float(2 ** (width - 1)) if is_signed(dtype) else float(2**width - 1)


def _eps(dtype: str) -> float:
    return {"float16": 2.0**-10, "float32": 2.0**-23, "float64": 2.0**-52}.get(dtype, 0.0)


def _merge(code: str, dtype: str, bound: float, *parts: Expr, exact: bool = True, product: bool = False) -> Expr:
    """A node over `parts`: exact if they all are, peak and eps over the tree."""
    peak = max([p.peak for p in parts] + [bound if is_float(dtype) else 0.0])
    eps = max([p.eps for p in parts] + [_eps(dtype)])
    return Expr(code, dtype, bound, exact and all(p.exact for p in parts), peak, eps, product)


def _sum_of(*parts: Expr) -> bool:
    """Whether an add/sub of `parts` is still exact: the GPU contracts a product
    feeding an add into one fma (section 12, `a*b + c`), the interpreter does not."""
    return not any(p.product for p in parts)


class ExprGen:
    """Random typed expressions over the given leaves."""

    def __init__(self, rng: np.random.Generator, leaves: list[Expr]):
        self.rng = rng
        self.leaves = leaves

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def leaf(self, kind: str | None) -> Expr:
        matching = [x for x in self.leaves if kind is None or is_float(x.dtype) == (kind == "float")]
        if not matching:
            other = self.pick(self.leaves)
            return self.convert(other, "float32" if kind == "float" else "int32")
        return self.pick(matching)

    def expr(self, depth: int, kind: str | None = None) -> Expr:
        if kind is None:
            kind = self.pick(["int", "float"])
        if depth <= 0 or self.chance(0.25):
            return self.leaf(kind)
        for _ in range(8):
            made = (self.int_op if kind == "int" else self.float_op)(depth)
            if made is not None:
                return made
        return self.leaf(kind)

    # --- conversions ------------------------------------------------------------------------

    def convert(self, x: Expr, target: str) -> Expr:
        """`x.to(target)` if it is safe, else a safe stand-in of that dtype."""
        if x.dtype == target:
            return x
        code = f"{x.code}.to(tl.{target})"
        if is_float(target):
            bound = x.bound if is_float(x.dtype) else _int_range(x.dtype)
            if bound > FLOAT_LIMIT[target] * 0.5:
                return self.leaf_of(target)
            # LLVM may fold fadd(fpext(fmul)) into an fma too.
            return _merge(code, target, bound, x, product=x.product)
        if is_float(x.dtype):
            if not (is_signed(target) and x.exact and x.bound < 2 ** (bit_width(target) - 1) - 1):
                return self.leaf_of(target)
            return _merge(code, target, _int_range(target), x)
        return _merge(code, target, _int_range(target), x)

    def leaf_of(self, dtype: str) -> Expr:
        """An input of `dtype`, or an input converted to it without risk."""
        same = [x for x in self.leaves if x.dtype == dtype]
        if same:
            return self.pick(same)
        floats = [x for x in self.leaves if is_float(x.dtype)]
        ints = [x for x in self.leaves if not is_float(x.dtype)]
        if is_float(dtype):
            if floats:
                base = self.pick(floats)
                return _merge(f"{base.code}.to(tl.{dtype})", dtype, base.bound, base)
            base = self.pick(ints)
            low_bits = 127 if base.dtype == "int8" else 255
            return _merge(f"({base.code} & {low_bits}).to(tl.{dtype})", dtype, float(low_bits), base)
        if ints:
            base = self.pick(ints)
            return _merge(f"{base.code}.to(tl.{dtype})", dtype, _int_range(dtype), base)
        # Float inputs are within +-4: exact through int32 (signed, in range).
        base = self.pick(floats)
        return _merge(f"{base.code}.to(tl.int32).to(tl.{dtype})", dtype, _int_range(dtype), base)

    def comparison(self, depth: int) -> str:
        """A boolean block from an exact comparison."""
        for _ in range(6):
            a = self.expr(depth - 1)
            b = self.expr(depth - 1, "float" if is_float(a.dtype) else "int")
            if a.exact and b.exact:
                op = self.pick(["<", "<=", ">", ">=", "==", "!="])
                return f"({a.code} {op} {b.code})"
        x = self.leaf("int")
        return f"(({x.code} & 1) == 0)"

    # --- integer expressions ----------------------------------------------------------------

    def int_op(self, depth: int) -> Expr | None:
        choice = self.pick(["arith", "arith", "bitwise", "literal", "divmod", "shift", "minmax", "where", "unary",
                            "cast_int", "cast_float", "compare"])
        if choice in ("arith", "bitwise"):
            a, b = self.expr(depth - 1, "int"), self.expr(depth - 1, "int")
            op = self.pick(["+", "-", "*"] if choice == "arith" else ["&", "|", "^"])
            dtype = integer_promote(a.dtype, b.dtype)
            return _merge(f"({a.code} {op} {b.code})", dtype, _int_range(dtype), a, b)
        if choice == "literal":
            a = self.expr(depth - 1, "int")
            value = int(self.rng.integers(0, 100))
            value = min(value, int(_int_range(a.dtype)))
            op = self.pick(["+", "-", "*", "&", "|", "^"])
            left = self.chance(0.3) and op in ("+", "*", "-")
            code = f"({value} {op} {a.code})" if left else f"({a.code} {op} {value})"
            return _merge(code, a.dtype, _int_range(a.dtype), a)
        if choice == "divmod":
            a, b = self.expr(depth - 1, "int"), self.expr(depth - 1, "int")
            if is_signed(a.dtype) != is_signed(b.dtype):
                b = self.convert(b, "int32" if is_signed(a.dtype) else "uint32")
            divisor = f"(({b.code} & 7) + 2)"
            if is_signed(b.dtype) and self.chance(0.5):
                divisor = f"(-{divisor})"
            dtype = integer_promote(a.dtype, b.dtype)
            op = self.pick(["//", "%"])
            return _merge(f"({a.code} {op} {divisor})", dtype, _int_range(dtype), a, b)
        if choice == "shift":
            a, b = self.expr(depth - 1, "int"), self.expr(depth - 1, "int")
            dtype = integer_promote(a.dtype, b.dtype)
            op = self.pick(["<<", ">>"])
            amount = f"({b.code} & {bit_width(dtype) - 1})"
            if op == ">>" and is_signed(a.dtype) and not is_signed(dtype):
                # See EXCLUSIONS: keep the shift in a's own type.
                dtype = a.dtype
                amount = f"({b.code} & {bit_width(dtype) - 1}).to(tl.{dtype})"
            return _merge(f"({a.code} {op} {amount})", dtype, _int_range(dtype), a, b)
        if choice == "minmax":
            a, b = self.expr(depth - 1, "int"), self.expr(depth - 1, "int")
            dtype = integer_promote(a.dtype, b.dtype)
            fn = self.pick(["tl.maximum", "tl.minimum"])
            return _merge(f"{fn}({a.code}, {b.code})", dtype, _int_range(dtype), a, b)
        if choice == "where":
            cond = self.comparison(depth)
            a, b = self.expr(depth - 1, "int"), self.expr(depth - 1, "int")
            dtype = integer_promote(a.dtype, b.dtype)
            return _merge(f"tl.where({cond}, {a.code}, {b.code})", dtype, _int_range(dtype), a, b)
        if choice == "unary":
            a = self.expr(depth - 1, "int")
            options = ["-", "tl.abs"] + (["~"] if is_signed(a.dtype) else [])
            op = self.pick(options)
            code = f"tl.abs({a.code})" if op == "tl.abs" else f"({op}{a.code})"
            return _merge(code, a.dtype, _int_range(a.dtype), a)
        if choice == "cast_int":
            return self.convert(self.expr(depth - 1, "int"), self.pick(INT_DTYPES))
        if choice == "cast_float":
            x = self.expr(depth - 1, "float")
            return self.convert(x, self.pick(SIGNED_INTS)) if x.exact else None
        cond = self.comparison(depth)
        return Expr(f"{cond}.to(tl.int32)", "int32", 1.0)

    # --- float expressions ------------------------------------------------------------------

    def float_op(self, depth: int) -> Expr | None:
        choice = self.pick(["addsub", "addsub", "mul", "literal", "div", "minmax", "where", "unary", "math",
                            "cast_float", "cast_int"])
        if choice in ("addsub", "mul", "minmax"):
            a, b = self.expr(depth - 1, "float"), self.expr(depth - 1, "float")
            dtype = computation_type(a.dtype, b.dtype)
            if choice == "mul":
                bound, code = a.bound * b.bound, f"({a.code} * {b.code})"
            elif choice == "addsub":
                bound, code = a.bound + b.bound, f"({a.code} {self.pick(['+', '-'])} {b.code})"
            else:
                bound, code = max(a.bound, b.bound), f"{self.pick(['tl.maximum', 'tl.minimum'])}({a.code}, {b.code})"
            if bound > FLOAT_LIMIT[dtype]:
                return None
            exact = _sum_of(a, b) if choice == "addsub" else True
            return _merge(code, dtype, bound, a, b, exact=exact, product=choice == "mul")
        if choice == "literal":
            a = self.expr(depth - 1, "float")
            value = self.pick([0.5, 1.5, 2.0, 0.25, 3.0])
            op = self.pick(["+", "-", "*"])
            bound = a.bound * value if op == "*" else a.bound + value
            if bound > FLOAT_LIMIT[a.dtype]:
                return None
            code = f"({value} {op} {a.code})" if self.chance(0.3) else f"({a.code} {op} {value})"
            if op == "*":
                return _merge(code, a.dtype, bound, a, product=True)
            return _merge(code, a.dtype, bound, a, exact=_sum_of(a))
        if choice == "div":
            a, b = self.expr(depth - 1, "float"), self.expr(depth - 1, "float")
            dtype = computation_type(a.dtype, b.dtype, div_or_mod=True)
            return _merge(f"({a.code} / (tl.abs({b.code}) + 1.0))", dtype, a.bound, a, b, exact=False)
        if choice == "where":
            cond = self.comparison(depth)
            a, b = self.expr(depth - 1, "float"), self.expr(depth - 1, "float")
            dtype = computation_type(a.dtype, b.dtype)
            return _merge(f"tl.where({cond}, {a.code}, {b.code})", dtype, max(a.bound, b.bound), a, b)
        if choice == "unary":
            a = self.expr(depth - 1, "float")
            if self.chance(0.5):
                return _merge(f"(-{a.code})", a.dtype, a.bound, a, product=a.product)
            return _merge(f"tl.abs({a.code})", a.dtype, a.bound, a)
        if choice == "math":
            return self.math(depth)
        if choice == "cast_float":
            a = self.expr(depth - 1, "float")
            return self.convert(a, self.pick(FLOAT_DTYPES))
        a = self.expr(depth - 1, "int")
        return self.convert(a, self.pick(["float32", "float64"]))

    def math(self, depth: int) -> Expr | None:
        a = self.expr(depth - 1, "float")
        if a.dtype == "float16":
            a = self.convert(a, "float32")
        fn = self.pick(["exp", "sqrt", "log", "sin", "cos", "floor", "ceil", "sigmoid", "exp2"])
        if fn in ("exp", "exp2"):
            if a.bound > 10:
                return None
            bound = math.exp(a.bound) if fn == "exp" else 2.0**a.bound
            return _merge(f"tl.{fn}({a.code})", a.dtype, bound, a, exact=False)
        if fn == "sqrt":
            return _merge(f"tl.sqrt(tl.abs({a.code}) + 1.0)", a.dtype, math.sqrt(a.bound + 1), a, exact=False)
        if fn == "log":
            return _merge(f"tl.log(tl.abs({a.code}) + 1.0)", a.dtype, math.log1p(a.bound), a, exact=False)
        if fn in ("sin", "cos"):
            if a.bound > 1e4:
                return None
            return _merge(f"tl.{fn}({a.code})", a.dtype, 1.0, a, exact=False)
        if fn == "sigmoid":
            return _merge(f"tl.sigmoid({a.code})", a.dtype, 1.0, a, exact=False)
        if not a.exact:
            return None
        return _merge(f"tl.{fn}({a.code})", a.dtype, a.bound + 1, a)


# --- whole kernels ----------------------------------------------------------------------------


def _agreement(result: Expr) -> Agreement:
    """Exact for ints and exact float trees; else a tolerance scaled by the
    largest intermediate magnitude and the coarsest precision in the tree."""
    if not is_float(result.dtype):
        return Agreement()
    if result.exact:
        # Only correctly rounded ops: both sides must give the same bits, up to
        # the order of float sums in reductions (handled by the caller).
        return Agreement()
    eps = max(result.eps, 2.0**-23)
    return Agreement(rtol=eps * 64, atol=result.peak * eps * 64)


def _dtypes(rng: np.random.Generator, count: int) -> list[str]:
    # int32 and float32, the common kernel dtypes, three times as likely as the others.
    pool = INT_DTYPES + FLOAT_DTYPES + ("int32", "float32", "int32", "float32")
    return [pool[int(rng.integers(len(pool)))] for _ in range(count)]


def _input_values(rng: np.random.Generator, dtype: str, shape) -> np.ndarray:
    if is_float(dtype):
        return round_to(rng.uniform(-INPUT_FLOAT_BOUND, INPUT_FLOAT_BOUND, size=shape), dtype)
    return random_array(rng, shape, dtype)


def _other_literal(rng: np.random.Generator, dtype: str) -> str:
    if is_float(dtype):
        return repr(float(rng.choice([0.0, 1.0, -2.5, 0.5])))
    return str(int(rng.integers(0, 6)))


def generate_case(seed: int, index: int) -> FuzzCase:
    """Case `index` of the run with `seed` (the same pair always gives the same case)."""
    rng = np.random.default_rng([seed, index])
    kind = ["elementwise", "elementwise", "reduction", "loop", "while"][int(rng.integers(5))]
    two_d = kind == "reduction" or bool(rng.random() < 0.4)
    if two_d:
        shape = (int(2 ** rng.integers(1, 5)), int(2 ** rng.integers(2, 6)))
    else:
        shape = (int(2 ** rng.integers(4, 8)),)
    numel = int(np.prod(shape))
    n_inputs = int(rng.integers(1, 4))
    dtypes = _dtypes(rng, n_inputs)
    # `n` masks the tail of the block; never 1 (an argument equal to 1 is a
    # constexpr on the GPU, section 12 "int arg == 1").
    n = int(rng.integers(2, numel + 1))
    leaves = []
    body: list[str] = []
    if two_d:
        body.append(f"offs = tl.arange(0, {shape[0]})[:, None] * {shape[1]} + tl.arange(0, {shape[1]})[None, :]")
    else:
        body.append(f"offs = tl.arange(0, {shape[0]})")
    body.append("mask = offs < n")
    for i, dtype in enumerate(dtypes):
        if rng.random() < 0.5:
            body.append(f"x{i} = tl.load(x{i}_ptr + offs, mask=mask, other={_other_literal(rng, dtype)})")
        else:
            body.append(f"x{i} = tl.load(x{i}_ptr + offs, mask=mask)")
        bound = INPUT_FLOAT_BOUND if is_float(dtype) else _int_range(dtype)
        leaves.append(Expr(f"x{i}", dtype, bound, True, bound if is_float(dtype) else 0.0, _eps(dtype)))
    gen = ExprGen(rng, leaves)
    depth = int(rng.integers(1, 5))
    store_mask = "mask"
    n_iter = int(rng.choice([0, 2, 3, 4, 5]))
    if kind == "elementwise":
        result = gen.expr(depth)
        body.append(f"r = {result.code}")
        out_shape = shape
        agreement = _agreement(result)
    elif kind == "reduction":
        result, agreement, out_shape = _reduction(rng, gen, depth, shape, body)
        store_mask = None
    else:
        result, agreement = _loop(rng, gen, depth, kind, body)
        out_shape = shape
    out_dtype = result.dtype
    if out_shape == shape:
        body.append(f"tl.store(out_ptr + offs, r, mask={store_mask})")
    else:
        size = out_shape[0]
        body.append(f"tl.store(out_ptr + tl.arange(0, {size}), r)")
    name = f"fuzz_{index:04d}"
    params = ", ".join([f"x{i}_ptr" for i in range(n_inputs)] + ["out_ptr", "n", "n_iter"])
    source = "\n".join(["@triton.jit", f"def {name}({params}):"] + [f"    {line}" for line in body])
    inputs = {f"x{i}": from_numpy(_input_values(rng, d, shape), d) for i, d in enumerate(dtypes)}
    launch = {"kernel": name, "inputs": [inputs[f"x{i}"] for i in range(n_inputs)], "n": n, "n_iter": n_iter,
              "out_dtype": out_dtype, "out_shape": tuple(out_shape)}
    description = f"{kind}, shape {shape}, inputs {dtypes}, n={n}, n_iter={n_iter} -> {out_dtype}{list(out_shape)}"
    return FuzzCase(index, name, source, launch, agreement, description)


def _reduction(rng, gen: ExprGen, depth: int, shape, body: list[str]):
    axis = int(rng.integers(2))
    for _ in range(20):
        value = gen.expr(depth)
        reducer = gen.pick(["sum", "max", "min", "argmax", "argmin", "xor_sum"])
        if reducer == "xor_sum" and is_float(value.dtype):
            continue
        if reducer == "sum" and value.dtype == "float16":
            continue
        if reducer.startswith("arg") and is_float(value.dtype) and not value.exact:
            continue
        break
    else:
        value, reducer = gen.leaf("int"), "max"
    # Sums leave masked-off lanes out; max/min/arg* see them (they hold `other` or 0 on both sides).
    neutral = {"sum": "0", "xor_sum": "0"}.get(reducer)
    if neutral is None:
        body.append(f"v = {value.code}")
    else:
        body.append(f"v = tl.where(mask, {value.code}, {neutral})")
    body.append(f"r = tl.{reducer}(v, axis={axis})")
    out_shape = (shape[1 - axis],)
    if reducer in ("argmax", "argmin"):
        dtype = "int32"
    elif reducer == "sum":
        dtype = {"int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32"}.get(value.dtype,
                                                                                            value.dtype)
    elif reducer in ("max", "min") and bit_width(value.dtype) < 32:
        dtype = "float32" if is_float(value.dtype) else "int32"
    else:
        dtype = value.dtype
    result = Expr("r", dtype, value.bound * (shape[axis] if reducer == "sum" else 1), value.exact,
                  value.peak * (shape[axis] if reducer == "sum" else 1), value.eps)
    agreement = _agreement(result)
    if reducer == "sum" and is_float(dtype):
        # Sums associate differently (tree vs sequential): allow rounding of the partial sums.
        agreement = Agreement(rtol=max(agreement.rtol, 1e-5), atol=max(agreement.atol, result.peak * 2.0**-20))
    elif reducer in ("max", "min") and is_float(dtype):
        # -0.0 and +0.0 tie: Triton's max/min (LLVM's maxnum/minnum) may keep either, and the
        # two interpreters meet them in different orders; zeros of either sign agree
        agreement = Agreement(rtol=agreement.rtol, atol=max(agreement.atol, 2.0**-149))
    return result, agreement, out_shape


def _loop(rng, gen: ExprGen, depth: int, kind: str, body: list[str]):
    init = gen.expr(max(depth - 1, 0))
    dtype = init.dtype
    body.append(f"acc = {init.code}")
    # In upstream's interpreter a `for` variable is a Python int (literal typing
    # rules); tl.cast makes it the i32 tensor it is on the GPU.
    counter = Expr("iv", "int32", 8.0)
    inner = ExprGen(rng, gen.leaves + [counter])
    step = inner.expr(max(depth - 1, 1), "float" if is_float(dtype) else "int")
    if is_float(dtype):
        update = f"(acc * 0.5 + {step.code}).to(tl.{dtype})"
        if step.product:
            step = Expr(step.code, step.dtype, step.bound, False, step.peak, step.eps)
        bound = 2 * (init.bound + step.bound + 1)
        if bound > FLOAT_LIMIT[dtype] or (dtype == "float16" and not step.exact):
            update = f"(acc * 0.5 + 1.0).to(tl.{dtype})"
            bound = init.bound + 2
            step = Expr("1.0", dtype, 1.0)
    else:
        update = f"(acc * 3 + {step.code}).to(tl.{dtype})"
        bound = _int_range(dtype)
    if kind == "loop":
        if rng.random() < 0.5:
            body.append("for i in range(0, n_iter):")
        else:
            trips = int(rng.integers(1, 5))
            body.append(f"for i in range(0, {trips}):")
        body.append("    iv = tl.cast(i, tl.int32)")
        body.append(f"    acc = {update}")
    else:
        body.append("i = 0")
        body.append("while i < n_iter:")
        body.append("    iv = tl.cast(i, tl.int32)")
        body.append(f"    acc = {update}")
        body.append("    i += 1")
    body.append("r = acc")
    result = _merge("r", dtype, bound, init, step)
    result = Expr("r", dtype, bound, result.exact, max(result.peak, bound if is_float(dtype) else 0.0), result.eps)
    return result, _agreement(result)


MODULE_HEADER = '''"""Random kernels of one differential fuzz run (generated by tests/differential/_fuzz.py)."""

from tests.kernels._data import TORCH_DTYPES, poisoned

triton = globals()["triton"]
tl = globals()["tl"]


def run_fuzz(kernel, inputs, n, n_iter, out_dtype, out_shape):
    out = poisoned(out_shape, TORCH_DTYPES[out_dtype], inputs[0].device)
    globals()[kernel][(1,)](*inputs, out, n, n_iter)
    return {"out": out}

'''


def write_module(cases: list[FuzzCase], path: Path) -> Path:
    """One Python file holding every case's kernel and the launcher `run_fuzz`."""
    path.write_text(MODULE_HEADER + "\n\n".join(c.source for c in cases) + "\n")
    return path


def describe(case: FuzzCase, seed: int) -> str:
    """What a failing case prints: how to reproduce it, and its source."""
    return (f"fuzz case {case.index} of seed {seed} ({case.description})\n"
            f"reproduce: TRITONE_FUZZ_SEED={seed} python -m pytest tests/differential/test_fuzz.py "
            f"-k 'case{case.index:04d}'\n{case.source}")


def to_device(inputs: dict, device: str) -> dict:
    """The launch arguments of a case with its input tensors on `device`."""
    return {k: ([t.to(device) for t in v] if k == "inputs" else v) for k, v in inputs.items()}
