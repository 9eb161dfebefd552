"""Axis information: per value and per dimension, what is provable about the
integers (and pointers) a block holds, for choosing vector widths.

For a value with shape S and each dim d (scalars count as one dim of size 1):

- `contiguity[d] = c`: along d the block splits into aligned runs of `c`
  elements (runs start at indices that are multiples of c) in which each element
  is the previous plus one (for pointers: plus one element).
- `divisibility[d] = v`: the first element of every such run is a multiple of v
  (for pointers: the address is a multiple of v bytes). With c = 1 this holds for
  every element.
- `constancy[d] = k`: along d the block splits into aligned runs of k equal elements.

All three are powers of two. The facts come from `arange`, constants,
`multiple_of`/`max_contiguous`/`max_constancy` hints and the kernel arguments'
specialisation, `Function.attrs["arg_attrs"] = {index: {"divisibility": 16}}`
(docs/IR.md), and flow through splat, broadcast, expand_dims, add, sub, mul,
floordiv, mod, shifts, comparisons, select, addptr and loop-carried values
(a fixed point over the loop), and integer widening casts. Every other
elementwise op (`OpSpec.elementwise`) keeps which elements are equal. Like
Triton, `//` and `%` are analysed as if their operands were non-negative.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from tritone.ir.core import Function, Operation, Region, Value
from tritone.ir.ops import OP_SPECS

MAX_DIVISIBILITY = 1 << 62
_MAX_FIXPOINT_ROUNDS = 64


def pow2_divisor(value: int) -> int:
    """The largest power of two dividing `value` (capped; 0 is divisible by everything)."""
    value = abs(int(value))
    if value == 0:
        return MAX_DIVISIBILITY
    return min(value & -value, MAX_DIVISIBILITY)


def _pow2_floor(value: int) -> int:
    return 1 << (max(1, int(value)).bit_length() - 1)


@dataclass(frozen=True)
class AxisInfo:
    """Facts about one value, one entry per dim (see the module docstring).
    `constant` is the value of every element when it is a known integer."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    constant: int | None = None

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    def divisibility_at(self, dim: int, run: int, step: int = 1) -> int:
        """What divides the elements at indices along `dim` that are multiples of
        `run`: the run starts when `run` covers whole contiguous runs, else only
        what the offset inside a run (a multiple of `run` steps) preserves.
        `step` is what one element adds (a pointer's element size in bytes)."""
        if self.contiguity[dim] <= run:
            return self.divisibility[dim]
        return min(self.divisibility[dim], run * step)

    def element_divisibility(self) -> int:
        """What divides every element."""
        return min(self.divisibility_at(d, 1) for d in range(self.rank))


def unknown(shape: tuple[int, ...]) -> AxisInfo:
    """Nothing known."""
    ones = (1,) * len(shape)
    return AxisInfo(ones, ones, ones)


def constant_info(shape: tuple[int, ...], value: int | None, divisibility: int | None = None) -> AxisInfo:
    """Every element equal (to `value` when known)."""
    div = pow2_divisor(value) if value is not None else (divisibility or 1)
    return AxisInfo((1,) * len(shape), (div,) * len(shape), tuple(shape), value)


def join(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """What holds for a value that is either `a` or `b`."""
    return AxisInfo(tuple(map(min, a.contiguity, b.contiguity)), tuple(map(min, a.divisibility, b.divisibility)),
                     tuple(map(min, a.constancy, b.constancy)), a.constant if a.constant == b.constant else None)


def max_vector_elements(ptr: AxisInfo, dim: int, elem_bytes: int, limit_bytes: int = 16) -> int:
    """The largest power-of-two count of elements, up to `limit_bytes`, that a
    pointer block with these facts lets one access move along `dim`: contiguous,
    and each vector's first address aligned to the whole vector."""
    vec = max(1, limit_bytes // elem_bytes)
    vec = min(vec, ptr.contiguity[dim])
    while vec > 1 and ptr.divisibility_at(dim, vec, elem_bytes) % (vec * elem_bytes) != 0:
        vec //= 2
    return vec


def value_shape(value: Value) -> tuple[int, ...]:
    ty = value.type
    return tuple(ty.shape) if ty.is_block() else (1,)


class AxisInfoMap:
    """The facts for every value of one function; `get` answers "nothing known"
    for values the analysis did not reach."""

    def __init__(self, infos: dict[Value, AxisInfo]):
        self._infos = infos

    def get(self, value: Value) -> AxisInfo:
        info = self._infos.get(value)
        return info if info is not None else unknown(value_shape(value))

    def __contains__(self, value: Value) -> bool:
        return value in self._infos


def analyze(fn: Function) -> AxisInfoMap:
    """Axis information for every value of `fn`."""
    analyzer = _Analyzer()
    arg_attrs = fn.attrs.get("arg_attrs") or {}
    for index, arg in enumerate(fn.args):
        attrs = arg_attrs.get(index) or arg_attrs.get(str(index)) or {}
        div = int(attrs.get("divisibility", 1))
        if not arg.type.is_block():
            analyzer.infos[arg] = AxisInfo((1,), (_pow2_floor(div),), (1,))
    analyzer.region(fn.body)
    return AxisInfoMap(analyzer.infos)


# -- per-op rules ---------------------------------------------------------------

def _add(a: AxisInfo, b: AxisInfo, subtract: bool = False, b_scale: int = 1) -> AxisInfo:
    contig, div, const = [], [], []
    for d in range(a.rank):
        k = min(a.constancy[d], b.constancy[d])
        c = min(a.contiguity[d], b.constancy[d])
        if not subtract:
            c = max(c, min(b.contiguity[d], a.constancy[d]))
        contig.append(c)
        const.append(k)
        div.append(min(a.divisibility_at(d, c, b_scale), min(b.divisibility_at(d, c) * b_scale, MAX_DIVISIBILITY)))
    value = None
    if a.constant is not None and b.constant is not None:
        value = a.constant - b.constant * b_scale if subtract else a.constant + b.constant * b_scale
        div = [pow2_divisor(value)] * a.rank
    return AxisInfo(tuple(contig), tuple(div), tuple(const), value)


def _mul(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    if b.constant == 1:
        return a
    if a.constant == 1:
        return b
    const = tuple(map(min, a.constancy, b.constancy))
    div = tuple(min(a.divisibility_at(d, 1) * b.divisibility_at(d, 1), MAX_DIVISIBILITY) for d in range(a.rank))
    value = a.constant * b.constant if a.constant is not None and b.constant is not None else None
    if value is not None:
        div = (pow2_divisor(value),) * a.rank
    return AxisInfo((1,) * a.rank, div, const, value)


def _aligned_run(a: AxisInfo, b: AxisInfo, d: int) -> int:
    """Length of the aligned runs of `a` along `d` inside which `a` counts up and
    `b` is one constant multiple of the run length: no multiple of `b` splits them."""
    return min(a.contiguity[d], a.divisibility[d], b.constancy[d], b.divisibility_at(d, 1))


def _floordiv(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    if b.constant == 1:
        return a
    const = tuple(max(min(a.constancy[d], b.constancy[d]), _aligned_run(a, b, d)) for d in range(a.rank))
    value = None
    if a.constant is not None and b.constant:
        value = abs(a.constant) // abs(b.constant) * (1 if (a.constant >= 0) == (b.constant > 0) else -1)
    div = (pow2_divisor(value),) * a.rank if value is not None else (1,) * a.rank
    return AxisInfo((1,) * a.rank, div, const, value)


def _mod(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    if b.constant == 1:
        return constant_info((1,) * a.rank, 0)
    const = tuple(map(min, a.constancy, b.constancy))
    contig, div = [], []
    for d in range(a.rank):
        run = _aligned_run(a, b, d)
        contig.append(run)
        div.append(min(a.divisibility_at(d, run), b.divisibility_at(d, 1)))
    value = None
    if a.constant is not None and b.constant:
        value = abs(a.constant) % abs(b.constant) * (1 if a.constant >= 0 else -1)
    return AxisInfo(tuple(contig), tuple(div), const, value)


def _shift(a: AxisInfo, b: AxisInfo, left: bool) -> AxisInfo:
    const = tuple(map(min, a.constancy, b.constancy))
    if b.constant is None or not 0 <= b.constant < 64:
        return AxisInfo((1,) * a.rank, (1,) * a.rank, const)
    shift = b.constant
    if left:
        div = tuple(min(a.divisibility_at(d, 1) << shift, MAX_DIVISIBILITY) for d in range(a.rank))
    else:
        div = tuple(max(1, a.divisibility_at(d, 1) >> shift) for d in range(a.rank))
    value = None
    if a.constant is not None:
        value = a.constant << shift if left else a.constant >> shift
    return AxisInfo((1,) * a.rank, div, const, value)


def _cmp(pred: str, a: AxisInfo, b: AxisInfo) -> AxisInfo:
    const = list(map(min, a.constancy, b.constancy))
    # `x < n` (or `n > x`) with x counting up from aligned starts and n a constant
    # multiple of the run length: the comparison cannot change inside a run.
    if pred in ("lt", "ge"):
        counting, bound = a, b
    elif pred in ("gt", "le"):
        counting, bound = b, a
    else:
        counting = bound = None
    if counting is not None:
        for d in range(a.rank):
            run = min(counting.contiguity[d], counting.divisibility[d], bound.constancy[d],
                      bound.divisibility_at(d, 1))
            const[d] = max(const[d], run)
    return AxisInfo((1,) * a.rank, (1,) * a.rank, tuple(const))


def _select(c: AxisInfo, a: AxisInfo, b: AxisInfo) -> AxisInfo:
    contig, div = [], []
    for d in range(a.rank):
        run = min(c.constancy[d], a.contiguity[d], b.contiguity[d])
        contig.append(run)
        div.append(min(a.divisibility_at(d, run), b.divisibility_at(d, run)))
    const = tuple(min(x, y, z) for x, y, z in zip(c.constancy, a.constancy, b.constancy))
    value = a.constant if a.constant is not None and a.constant == b.constant else None
    return AxisInfo(tuple(contig), tuple(div), const, value)


def _splat(x: AxisInfo, shape: tuple[int, ...]) -> AxisInfo:
    return AxisInfo((1,) * len(shape), (x.divisibility[0],) * len(shape), tuple(shape), x.constant)


def _broadcast(x: AxisInfo, in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> AxisInfo:
    contig, div, const = list(x.contiguity), list(x.divisibility), list(x.constancy)
    for d, (i, o) in enumerate(zip(in_shape, out_shape)):
        if i == 1 and o != 1:
            contig[d], div[d], const[d] = 1, x.divisibility_at(d, 1), o
    return AxisInfo(tuple(contig), tuple(div), tuple(const), x.constant)


def _expand_dims(x: AxisInfo, axis: int) -> AxisInfo:
    def insert(t: tuple[int, ...], v: int) -> tuple[int, ...]:
        return t[:axis] + (v,) + t[axis:]

    return AxisInfo(insert(x.contiguity, 1), insert(x.divisibility, x.element_divisibility()),
                    insert(x.constancy, 1), x.constant)


def _hint(x: AxisInfo, kind: str, values: tuple[int, ...]) -> AxisInfo:
    values = tuple(_pow2_floor(v) for v in values)
    if len(values) != x.rank:
        return x
    if kind == "multiple_of":
        return replace(x, divisibility=values)
    if kind == "max_contiguous":
        return replace(x, contiguity=values)
    return replace(x, constancy=values)


def _keep_constancy(x: AxisInfo) -> AxisInfo:
    ones = (1,) * x.rank
    return AxisInfo(ones, ones, x.constancy, None)


_BINARY: dict[str, Callable[[AxisInfo, AxisInfo], AxisInfo]] = {
    "add": _add,
    "sub": lambda a, b: _add(a, b, subtract=True),
    "mul": _mul,
    "floordiv": _floordiv,
    "mod": _mod,
    "shl": lambda a, b: _shift(a, b, True),
    "ashr": lambda a, b: _shift(a, b, False),
    "lshr": lambda a, b: _shift(a, b, False),
}



class _Analyzer:
    def __init__(self):
        self.infos: dict[Value, AxisInfo] = {}

    def get(self, value: Value) -> AxisInfo:
        info = self.infos.get(value)
        return info if info is not None else unknown(value_shape(value))

    def region(self, region: Region) -> None:
        for op in region.ops:
            self.op(op)

    def set(self, value: Value, info: AxisInfo) -> None:
        shape = value_shape(value)
        if info.rank != len(shape):
            info = unknown(shape)
        self.infos[value] = info

    def op(self, op: Operation) -> None:
        handler = getattr(self, "op_" + op.name, None)
        if handler is not None:
            handler(op)
            return
        ins = [self.get(v) for v in op.operands]
        spec = OP_SPECS.get(op.name)
        if op.name in _BINARY:
            self.set(op.result, _BINARY[op.name](ins[0], ins[1]))
        elif spec is not None and spec.elementwise and ins and all(i.rank == ins[0].rank for i in ins):
            # equal operand elements give equal results
            constancy = ins[0]
            for other in ins[1:]:
                constancy = join(constancy, other)
            self.set(op.result, _keep_constancy(constancy))
        else:
            for region in op.regions:
                self.region(region)
            for result in op.results:
                self.set(result, unknown(value_shape(result)))

    # -- producers ---------------------------------------------------------
    def op_convert_layout(self, op: Operation) -> None:
        self.set(op.result, self.get(op.operands[0]))

    def op_constant(self, op: Operation) -> None:
        value = op.attrs["value"]
        known = int(value) if isinstance(value, (int, bool)) else None
        self.set(op.result, constant_info(value_shape(op.result), known))

    def op_cast(self, op: Operation) -> None:
        # Widening an integer (or turning a pointer into the 64-bit integer of its
        # address and back) keeps every value, hence every fact; other casts keep
        # only which elements are equal.
        src, dst = op.operands[0].type.scalar, op.results[0].type.scalar
        info = self.get(op.operands[0])
        keeps_value = ((src.is_ptr() or (src.is_int() and src.primitive_bitwidth > 1))
                       and (dst.is_ptr() or dst.is_int())
                       and (8 * dst.itemsize if dst.is_ptr() else dst.primitive_bitwidth)
                       >= (8 * src.itemsize if src.is_ptr() else src.primitive_bitwidth))
        self.set(op.result, info if keeps_value else _keep_constancy(info))

    def op_arange(self, op: Operation) -> None:
        n = op.attrs["end"] - op.attrs["start"]
        self.set(op.result, AxisInfo((n,), (pow2_divisor(op.attrs["start"]),), (1,)))

    def op_splat(self, op: Operation) -> None:
        self.set(op.result, _splat(self.get(op.operands[0]), value_shape(op.result)))

    def op_broadcast(self, op: Operation) -> None:
        src = op.operands[0]
        self.set(op.result, _broadcast(self.get(src), value_shape(src), value_shape(op.result)))

    def op_expand_dims(self, op: Operation) -> None:
        self.set(op.result, _expand_dims(self.get(op.operands[0]), op.attrs["axis"]))

    def op_permute(self, op: Operation) -> None:
        src = self.get(op.operands[0])
        order = op.attrs["order"]
        self.set(op.result, AxisInfo(tuple(src.contiguity[i] for i in order), tuple(src.divisibility[i] for i in order),
                                     tuple(src.constancy[i] for i in order), src.constant))

    def op_reshape(self, op: Operation) -> None:
        src = self.get(op.operands[0])
        shape = value_shape(op.result)
        numel_src = 1
        for s in value_shape(op.operands[0]):
            numel_src *= s
        if src.constancy == value_shape(op.operands[0]) and numel_src > 0:
            self.set(op.result, constant_info(shape, src.constant, src.element_divisibility()))
        else:
            self.set(op.result, unknown(shape))

    def op_hint(self, op: Operation) -> None:
        self.set(op.result, _hint(self.get(op.operands[0]), op.attrs["kind"], tuple(op.attrs["values"])))

    def op_cmp(self, op: Operation) -> None:
        a, b = (self.get(v) for v in op.operands)
        self.set(op.result, _cmp(op.attrs["pred"], a, b))

    def op_select(self, op: Operation) -> None:
        self.set(op.result, _select(*(self.get(v) for v in op.operands)))

    def op_addptr(self, op: Operation) -> None:
        ptr, offset = op.operands
        elem_bytes = ptr.type.scalar.element_ty.itemsize
        self.set(op.result, _add(self.get(ptr), self.get(offset), b_scale=elem_bytes))

    def op_load(self, op: Operation) -> None:
        self.set(op.result, _keep_constancy(self.get(op.operands[0])))

    # -- regions -----------------------------------------------------------
    def op_for(self, op: Operation) -> None:
        lb, _ub, step = (self.get(v) for v in op.operands[:3])
        body = op.regions[0]
        iv = body.args[0]
        self.set(iv, AxisInfo((1,), (min(lb.divisibility[0], step.divisibility[0]),), (1,)))
        carried = [self.get(v) for v in op.operands[3:]]
        carried = self._fixpoint(body, body.args[1:], carried, lambda: body.terminator.operands)
        for result, info in zip(op.results, carried):
            self.set(result, info)

    def op_while(self, op: Operation) -> None:
        before, after = op.regions
        carried = [self.get(v) for v in op.operands]

        def yielded() -> list[Value]:
            condition = before.terminator
            for arg, value in zip(after.args, condition.operands[1:]):
                self.set(arg, self.get(value))
            self.region(after)
            return after.terminator.operands

        carried = self._fixpoint(before, before.args, carried, yielded)
        self._bind(before.args, carried)
        self.region(before)
        exits = before.terminator.operands[1:]
        for arg, value in zip(after.args, exits):
            self.set(arg, self.get(value))
        self.region(after)
        for result, value in zip(op.results, exits):
            self.set(result, self.get(value))

    def op_if(self, op: Operation) -> None:
        then, other = op.regions
        self.region(then)
        self.region(other)
        for i, result in enumerate(op.results):
            self.set(result, join(self.get(then.terminator.operands[i]), self.get(other.terminator.operands[i])))

    def _bind(self, args: list[Value], infos: list[AxisInfo]) -> None:
        for arg, info in zip(args, infos):
            self.set(arg, info)

    def _fixpoint(self, region: Region, args: list[Value], carried: list[AxisInfo],
                  yielded: Callable[[], list[Value]]) -> list[AxisInfo]:
        """Facts for loop-carried values: start from the initial values, join
        what each trip yields until nothing changes (the facts only shrink)."""
        for _ in range(_MAX_FIXPOINT_ROUNDS):
            self._bind(args, carried)
            self.region(region)
            values = yielded()
            joined = [join(c, self.get(v)) for c, v in zip(carried, values)]
            if joined == carried:
                return carried
            carried = joined
        carried = [unknown(value_shape(a)) for a in args]
        self._bind(args, carried)
        self.region(region)
        yielded()
        return carried
