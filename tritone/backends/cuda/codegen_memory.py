"""Code generation for pointer arithmetic, loads, stores and atomics
(TRITON_SEMANTICS 4, PTX_FACTS 6 and 7).

Loads: the destination registers start as `other` (or zero), then a
predicated `ld.global` overwrites them where the mask is set, so masked-off
lanes read `other` and touch no memory. Runs of registers that hold
consecutive elements are moved by one access of up to 16 bytes when axis
analysis proves the addresses aligned and the mask constant over the run.
Cache operators and eviction priorities become PTX qualifiers where the
target has them (hints: dropped where it does not).

Stores and atomics act once per element: duplicate registers and threads
that only replicate an element are masked off; a scalar store or atomic is
done by thread 0 (an atomic's old value then reaches every thread through
shared memory).
"""

from __future__ import annotations

from typing import Callable

from tritone.ir.core import Operation, Value
from tritone.ir.types import type_text

from ...ir.layouts import LinearLayout
from .axis_info import max_vector_elements
from .codegen_base import CodegenError, Emitter, emits, needs_scratch, register_index, row_major_strides
from .codegen_elementwise import elementwise
from .codegen_layout import _broadcast_map, _unique_registers, register_sources
from .codegen_types import ctype, is_narrow_float, narrow, widen
from .int_ranges import constant_int, int_range

# bytes moved by one access -> (PTX type with vector prefix, asm constraint, C word type, words)
_ACCESS = {1: ("u8", "h", "unsigned short", 1), 2: ("b16", "h", "unsigned short", 1), 4: ("b32", "r", "unsigned", 1),
           8: ("v2.b32", "r", "unsigned", 2), 16: ("v4.b32", "r", "unsigned", 4)}
# 64-bit elements move as 64-bit words (`ld.global.v2.b64`), as Triton emits them.
_ACCESS_64 = {8: ("b64", "l", "unsigned long long", 1), 16: ("v2.b64", "l", "unsigned long long", 2)}


def _access(nbytes: int, elem_bytes: int) -> tuple[str, str, str, int]:
    """(PTX type, asm constraint, C word type, words) of one access of `nbytes`
    bytes of elements of `elem_bytes` bytes."""
    return _ACCESS_64[nbytes] if elem_bytes == 8 else _ACCESS[nbytes]


@emits("addptr")
def emit_addptr(em: Emitter, op: Operation) -> None:
    add = _plus
    if _feeds_async_copy(em, op):
        em.declare_once(_SHIFT_ADD)
        add = _shift_add
    folded = _offset_terms(em, op)
    if folded is None:
        if add is _plus and _never_negative(em, op.operands[1]):
            add = _plus_unsigned
        elementwise(em, op, lambda xs: f"({add(xs[0], xs[1])})")
        if op.attrs.get("opaque"):
            pin_registers(em, op.results[0])
        return
    base, terms = folded
    em.declare_once(_OPAQUE)
    opaque = em.fresh("tt_base")
    em.line(f"{ctype(op.results[0].type.scalar)} {opaque} = tt_opaque({base});")
    name = em.define_block(op.results[0])
    nregs = em.nregs(op.results[0])
    # Copy sources a constant apart from another register's are that register's address
    # plus the constant (one 64-bit add), not an offset computed and widened each.
    steps = _constant_register_steps(em, op.results[0]) if add is _shift_add else {}
    mask = sum(1 << bit for bit in steps)
    indices = [register_index(sources) for _, sources in terms]
    if all(index is not None for index in indices):
        # one unrolled loop: NVRTC optimises it in less time than the same statements
        # written out (FlexAttention's template: a tenth), to the same machine code
        total = " + ".join(f"(unsigned){em.reg(value, index)}" for (value, _), index in zip(terms, indices))
        address = add(opaque, f"(int)({total})")
        if steps:
            step = " + ".join(f"((i >> {bit}) & 1) * {delta}" for bit, delta in steps.items())
            address = f"(i & {mask}) ? {name}[i & {(nregs - 1) & ~mask}] + ({step}) : {address}"
        em.for_registers(nregs, f"{name}[i] = {address};")
        return
    for reg in range(nregs):
        if reg & mask:
            step = sum(delta for bit, delta in steps.items() if reg >> bit & 1)
            em.line(f"{name}[{reg}] = {name}[{reg & ~mask}] + ({step});")
            continue
        total = " + ".join(f"(unsigned){em.reg(value, sources[reg])}" for value, sources in terms)
        em.line(f"{name}[{reg}] = {add(opaque, f'(int)({total})')};")


# The addresses of a pipeline's cp.async copies are computed every trip beside the tensor
# cores' work: as `mad.wide.s32` (which ptxas makes a shift and add, LEA and LEA.HI.X,
# on the integer pipe, as in upstream's kernels) rather than C++'s pointer addition
# (a widening multiply, IMAD.WIDE, where tutorial 09's persistent kernel stalled).
_SHIFT_ADD = ("template <class T> static __device__ __forceinline__ T* tt_shift_add(T* p, int x) "
              "{ T* r; asm(\"mad.wide.s32 %0, %1, %2, %3;\" : \"=l\"(r) : \"r\"(x), \"n\"((int)sizeof(T)), "
              "\"l\"(p)); return r; }")


def _constant_register_steps(em: Emitter, pointers: Value) -> dict[int, int]:
    """Register-index bits of the block `pointers` that move its element by a distance
    known when compiling: {bit: distance in elements}. Each register's element is then
    its base register's (the register with those bits clear) plus the distances of its
    set bits. A bit qualifies when the pointers are affine in the element coordinates
    (`_affine_strides`) with compile-time strides along the dimensions its basis moves,
    and its basis shares no coordinate bit with another basis (the coordinates of a
    register and of a thread then add instead of combining by xor). Like upstream's
    vectorised accesses, this takes the i32 offsets not to wrap between the two
    registers' elements."""
    strides = _affine_strides(pointers, {})
    if strides is None:
        return {}
    linear = em.linear(pointers)
    bases = linear.registers + linear.lanes + linear.warps
    steps = {}
    for bit, basis in enumerate(linear.registers):
        if not any(basis):
            continue
        others = [other for i, other in enumerate(bases) if i != bit]
        if any(basis[d] & other[d] for other in others for d in range(linear.rank)):
            continue
        if any(basis[d] and strides[d] is None for d in range(linear.rank)):
            continue
        steps[bit] = sum(basis[d] * strides[d] for d in range(linear.rank) if basis[d])
    return steps


def _affine_strides(value: Value, memo: dict) -> tuple[int | None, ...] | None:
    """For a block of i32 offsets or of pointers that is affine in its element
    coordinates (`u + sum(stride[d] * c[d])`, `u` the same for every element): the
    strides, in elements, an int where known when compiling and None where a
    run-time scalar; None for any other block. Built from aranges, splats, broadcasts,
    adds and subs, products and shifts by uniform values, and pointer additions."""
    if not value.type.is_block():
        return ()
    if value in memo:
        return memo[value]
    op = value.defining_op
    name = op.name if op is not None else None
    result: tuple[int | None, ...] | None = None
    if name == "arange":
        result = (1,)
    elif name in ("splat", "constant"):
        result = (0,) * len(value.type.shape)
    elif name in _AFFINE_OPS:
        operands = [_affine_strides(v, memo) for v in op.operands]
        if None not in operands:
            result = _combined_strides(op, [s or (0,) * len(value.type.shape) for s in operands])
    memo[value] = result
    return result


# The ops whose result is affine in the element coordinates when their operands are.
_AFFINE_OPS = ("hint", "convert_layout", "expand_dims", "broadcast", "add", "sub", "addptr", "mul", "shl")


def _combined_strides(op: Operation, operands: list[tuple[int | None, ...]]) -> tuple[int | None, ...] | None:
    """The strides of `op`'s result (one of `_AFFINE_OPS`) from its operands' strides."""
    name = op.name
    if name in ("hint", "convert_layout"):
        return operands[0]
    if name == "expand_dims":
        axis = op.attrs["axis"]
        return operands[0][:axis] + (0,) + operands[0][axis:]
    if name == "broadcast":
        return tuple(0 if size == 1 else s for s, size in zip(operands[0], op.operands[0].type.shape))
    a, b = operands
    if name in ("add", "sub", "addptr"):
        return tuple(None if x is None or y is None else (x - y if name == "sub" else x + y) for x, y in zip(a, b))
    # mul, shl: affine only by a uniform factor, known when compiling for a known stride
    if name == "mul" and _is_uniform(a) and not _is_uniform(b):
        a, b, factor = b, a, constant_int(op.operands[0])
    else:
        factor = constant_int(op.operands[1])
    if not _is_uniform(b):
        return None
    if name == "shl" and factor is not None:
        factor = 1 << factor if 0 <= factor < 32 else None
    return tuple(0 if x == 0 else (None if x is None or factor is None else x * factor) for x in a)


def _is_uniform(strides: tuple[int | None, ...]) -> bool:
    return all(x == 0 for x in strides)


def _shift_add(pointer: str, offset: str) -> str:
    return f"tt_shift_add({pointer}, {offset})"


def _plus(pointer: str, offset: str) -> str:
    return f"{pointer} + {offset}"


def _plus_unsigned(pointer: str, offset: str) -> str:
    return f"{pointer} + (unsigned){offset}"


def _never_negative(em: Emitter, offsets: Value) -> bool:
    """Whether the i32 `offsets` are proven never negative (int_ranges): added to the
    pointer zero-extended rather than sign-extended (the same address), the C++
    compiler can move their constant part into the access's immediate offset, which
    it does not do through a sign extension."""
    if type_text(offsets.type.scalar) != "i32":
        return False
    bounds = int_range(offsets, em.memo.setdefault("int_ranges", {}))
    return bounds is not None and bounds[0] >= 0


def pin_registers(em: Emitter, value: Value) -> None:
    """Make the distinct registers of the block `value` (integers or pointers) opaque
    to the compiler, an empty `asm` that may change them, so that it keeps them as
    computed instead of folding their computation into every use: a loop's address
    base (pointer_steps' `_LoopBases`), and a pipeline's copy offsets, which NVVM
    otherwise computed again every trip from what they were made of (codegen_control;
    tutorial 09's persistent matmul on sm_90: 244 SASS instructions a K trip, 192
    pinned, 2 more registers)."""
    name = em.name(value)
    mask = em.distinct_register_bits(value)
    scalar = value.type.scalar
    constraint = "l" if scalar.is_ptr() or scalar.int_bitwidth == 64 else "r"
    for reg in sorted({reg & mask for reg in range(em.nregs(value))}):
        em.line(f'asm volatile("" : "+{constraint}"({name}[{reg}]));')
    if mask != em.nregs(value) - 1:
        em.for_registers(em.nregs(value), f"{name}[i] = {name}[i & {mask}];")


def async_copies(em: Emitter) -> list[Operation]:
    """The kernel's `async_copy` ops (the pipeline's cp.async copies), found once."""
    copies = em.memo.get("async_copies")
    if copies is None:
        copies = em.memo["async_copies"] = [op for op in em.fn.walk() if op.name == "async_copy"]
    return copies


def _feeds_async_copy(em: Emitter, op: Operation) -> bool:
    """Whether `op` (an addptr of i32 offsets) makes the source addresses of an `async_copy`."""
    if type_text(op.operands[1].type.scalar) != "i32" or not op.results[0].type.is_block():
        return False
    return any(copy.operands[2] is op.results[0] for copy in async_copies(em))


# The compiler would otherwise split a base pointer computed as `p + x` and add x's
# 64-bit extension to every address (three 64-bit operations each) instead of one
# widening multiply-add of the 32-bit offset onto the base.
_OPAQUE = ("template <class T> static __device__ __forceinline__ T* tt_opaque(T* p) "
           "{ asm(\"\" : \"+l\"(p)); return p; }")


def _offset_terms(em: Emitter, op: Operation) -> tuple[str, list[tuple[Value, list[int]]]] | None:
    """For a block addptr of i32 offsets whose pointer is, through broadcasts,
    addptrs of i32 offsets on a splat scalar pointer (`p + rows[:, None] * s +
    cols[None, :]`): the scalar pointer and each offset with, per result
    register, the register of the offset holding its element. The offsets are
    then added in 32 bits (wrapping) before one pointer addition, as Triton's
    canonicalisation combines them: one widening multiply-add per address
    instead of a 64-bit addition per level. None for any other chain."""
    result = op.results[0]
    if not result.type.is_block() or type_text(op.operands[1].type.scalar) != "i32":
        return None
    dst = em.linear(result)
    terms = [(op.operands[1], list(range(dst.num_registers)))]
    ptr = op.operands[0]
    to_src = lambda c: c  # noqa: E731  (result coordinates -> `ptr`'s)
    while True:
        producer = ptr.defining_op
        if producer is None:
            return None
        if producer.name == "broadcast":
            to_src = (lambda inner, outer: lambda c: outer(inner(c)))(to_src, _broadcast_map(producer))
        elif producer.name == "addptr" and type_text(producer.operands[1].type.scalar) == "i32" \
                and not producer.attrs.get("opaque"):
            offset = producer.operands[1]
            if not offset.type.is_block():
                return None
            sources = register_sources(em.linear(offset), dst, to_src)
            if sources is None:
                return None
            terms.append((offset, sources))
        elif producer.name == "splat" and len(terms) > 1:
            return em.name(producer.operands[0]), terms
        else:
            return None
        ptr = producer.operands[0]


def zero_value(value: Value) -> str:
    """The all-zero-bits value of `value`'s element type, as C++."""
    ty = value.type.scalar
    if ty.is_ptr():
        return "nullptr"
    if is_narrow_float(ty):
        return f"{ctype(ty)}{{}}"
    return f"(({ctype(ty)})0)"


def owner_condition(linear: LinearLayout) -> str | None:
    """True in exactly one of the threads holding each element (None: every thread owns its elements)."""
    parts = []
    if linear.replicated_lane_mask():
        parts.append(f"(tt_lane & {linear.replicated_lane_mask()}) == 0")
    if linear.replicated_warp_mask():
        parts.append(f"(tt_warp & {linear.replicated_warp_mask()}) == 0")
    return " && ".join(parts) if parts else None


def _vector_dim(linear: LinearLayout) -> int:
    return max(range(linear.rank), key=lambda d: linear.contiguous_registers(d))


def vector_width(em: Emitter, ptr: Value, mask: Value | None, max_bytes: int = 16) -> int:
    """Elements per access for a block memory op on `ptr` in its layout."""
    linear = em.linear(ptr)
    dim = _vector_dim(linear)
    elem_bytes = ptr.type.scalar.element_ty.itemsize
    vec = min(linear.contiguous_registers(dim), max_vector_elements(em.axis_info(ptr), dim, elem_bytes, max_bytes))
    if mask is not None:
        constancy = em.axis_info(mask).constancy[dim]
        while vec > constancy:
            vec //= 2
    return max(1, vec)


def _cache_qualifiers(em: Emitter, op: Operation) -> tuple[str, str]:
    """(qualifiers after `ld.global`/`st.global`, policy setup) for the op's hints:
    the cache operator as given (the language admits .ca/.cg/.cv on loads and
    .wb/.cg/.cs/.wt on stores, all PTX 2.0), or, where an eviction priority is
    asked for on sm_70+, that instead (PTX has no form with both)."""
    evict = op.attrs.get("evict") or ""
    cache = op.attrs.get("cache") or ""
    if evict and em.target >= 70:
        qualifiers = f".L1::{evict}"
        if evict in ("evict_first", "evict_last") and em.target >= 80:
            return qualifiers + ".L2::cache_hint", f"createpolicy.fractional.L2::{evict}.b64 tt_pol, 1.0; "
        return qualifiers, ""
    return cache, ""


def _predicate(mask: str | None) -> tuple[str, str, list[str]]:
    """(asm prefix defining predicate p, instruction guard, extra input operands)."""
    if mask is None:
        return "", "", []
    return "setp.ne.b32 p, %{}, 0; ", "@p ", [f'"r"((int)({mask}))']


def _asm_memory(em: Emitter, ptx: str, outputs: list[str], inputs: list[str], mask: str | None,
                policy: str) -> None:
    """One inline-asm memory instruction, predicated on `mask` when given (the
    predicate operand comes last), with an L2 policy register when `policy` sets one."""
    setp, guard, extra = _predicate(mask)
    operands = outputs + inputs + extra
    regs = "{ .reg .pred p; " if mask is not None else "{ "
    if policy:
        regs += ".reg .b64 tt_pol; " + policy
    body = regs + (setp.format(len(operands) - 1) if setp else "") + guard + ptx + "; }"
    ins = ", ".join(inputs + extra)
    if outputs:
        em.line(f'asm volatile("{body}" : {", ".join(outputs)} : {ins} : "memory");')
    else:
        em.line(f'asm volatile("{body}" :: {ins} : "memory");')


def _load_access(em: Emitter, op: Operation, dst: str, first: int, nbytes: int, addr: str, mask: str | None,
                 qualifiers: str, policy: str) -> None:
    ptx_type, constraint, word, words = _access(nbytes, op.results[0].type.scalar.itemsize)
    em.open()
    em.line(f"{word} tt_w[{words}] = {{}};")
    em.line(f"memcpy(tt_w, &{dst}[{first}], {nbytes});" if first is not None else f"memcpy(tt_w, &{dst}, {nbytes});")
    volatile = ".volatile" if op.attrs.get("volatile") else ""
    targets = ", ".join(f"%{i}" for i in range(words))
    targets = f"{{{targets}}}" if words > 1 else targets
    ptx = f"ld{volatile}.global{'' if volatile else qualifiers}.{ptx_type} {targets}, [%{words}]"
    if policy and not volatile:
        ptx += ", tt_pol"
    outputs = [f'"+{constraint}"(tt_w[{i}])' for i in range(words)]
    _asm_memory(em, ptx, outputs, [f'"l"({addr})'], mask, policy if not volatile else "")
    em.line(f"memcpy(&{dst}[{first}], tt_w, {nbytes});" if first is not None else f"memcpy(&{dst}, tt_w, {nbytes});")
    em.close()


@emits("load")
def emit_load(em: Emitter, op: Operation) -> None:
    ptr = op.operands[0]
    mask = op.operands[1] if len(op.operands) > 1 else None
    other = op.operands[2] if len(op.operands) > 2 else None
    result = op.results[0]
    elem_bytes = result.type.scalar.itemsize
    qualifiers, policy = _cache_qualifiers(em, op)
    initial = (lambda i: em.reg(other, i)) if other is not None else (lambda i: zero_value(result))
    if not result.type.is_block():
        name = em.define_scalar(result, initial(0))
        _load_access(em, op, name, None, elem_bytes, em.name(ptr), em.name(mask) if mask else None,
                     qualifiers, policy)
        return
    name = em.define_block(result)
    count = em.nregs(result)
    em.for_registers(count, f"{name}[i] = {initial('i')};")
    vec = vector_width(em, ptr, mask)
    for first in range(0, count, vec):
        guard = em.reg(mask, first) if mask is not None else None
        _load_access(em, op, name, first, vec * elem_bytes, em.reg(ptr, first), guard, qualifiers, policy)


def _store_access(em: Emitter, src: str, first: int | None, nbytes: int, addr: str, mask: str | None,
                  qualifiers: str, policy: str, elem_bytes: int) -> None:
    ptx_type, constraint, word, words = _access(nbytes, elem_bytes)
    em.open()
    em.line(f"{word} tt_w[{words}] = {{}};")
    em.line(f"memcpy(tt_w, &{src}[{first}], {nbytes});" if first is not None else f"memcpy(tt_w, &{src}, {nbytes});")
    values = ", ".join(f"%{i + 1}" for i in range(words))
    values = f"{{{values}}}" if words > 1 else values
    ptx = f"st.global{qualifiers}.{ptx_type} [%0], {values}{', tt_pol' if policy else ''}"
    inputs = [f'"l"({addr})'] + [f'"{constraint}"(tt_w[{i}])' for i in range(words)]
    _asm_memory(em, ptx, [], inputs, mask, policy)
    em.close()


def _and(*conditions: str | None) -> str | None:
    parts = [c for c in conditions if c]
    if not parts:
        return None
    return " && ".join(f"({p})" for p in parts) if len(parts) > 1 else parts[0]


@emits("store")
def emit_store(em: Emitter, op: Operation) -> None:
    ptr, value = op.operands[:2]
    mask = op.operands[2] if len(op.operands) > 2 else None
    elem_bytes = value.type.scalar.itemsize
    qualifiers, policy = _cache_qualifiers(em, op)
    if not ptr.type.is_block():
        guard = _and(em.name(mask) if mask else None, "threadIdx.x == 0")
        _store_access(em, em.name(value), None, elem_bytes, em.name(ptr), guard, qualifiers, policy, elem_bytes)
        return
    linear = em.linear(ptr)
    owner = owner_condition(linear)
    vec = vector_width(em, ptr, mask)
    unique = set(_unique_registers(linear))
    for first in range(0, linear.num_registers, vec):
        if first not in unique:
            continue
        guard = _and(em.reg(mask, first) if mask is not None else None, owner)
        _store_access(em, em.name(value), first, vec * elem_bytes, em.reg(ptr, first), guard, qualifiers, policy,
                      elem_bytes)


# -- atomics -----------------------------------------------------------------------------

def _sem_scope(em: Emitter, op: Operation) -> tuple[str, str, str, str]:
    """(`.sem`, `.scope`, fence before, fence after) of an atomic: the ordering
    qualifier from sm_70 (PTX 6.0), fences in its place on Pascal."""
    sem = op.attrs.get("sem") or "acq_rel"
    scope = op.attrs.get("scope") or "gpu"
    if em.target >= 70:
        return f".{sem}", f".{scope}", "", ""
    fence = {"cta": "membar.cta;", "gpu": "membar.gl;", "sys": "membar.sys;"}[scope]
    before = f'asm volatile("{fence}" ::: "memory");' if sem in ("release", "acq_rel") else ""
    after = f'asm volatile("{fence}" ::: "memory");' if sem in ("acquire", "acq_rel") else ""
    return "", f".{scope}", before, after


# ptxas takes these three orders of atom's qualifiers (the tests assemble each), the
# ones Triton's PTX shows (and tools grep for): `atom.global.gpu.acq_rel.add.f32` for a
# read-modify-write, `atom.global.acq_rel.gpu.cas.b32` for compare-and-swap,
# and the manual's `atom.acq_rel.gpu.global.cas.b32` for the CAS loop that
# stands in for a missing 16-bit float add (LLVM's spelling of that loop).
def _rmw_prefix(sem: str, scope: str) -> str:
    return f"atom.global{scope}{sem}"


def _cas_prefix(sem: str, scope: str) -> str:
    return f"atom.global{sem}{scope}"


def _cas_loop_prefix(sem: str, scope: str) -> str:
    return f"atom{sem}{scope}.global"


_BITS_TYPE = {8: "unsigned char", 16: "unsigned short", 32: "unsigned", 64: "unsigned long long"}
_CONSTRAINT = {16: "h", 32: "r", 64: "l"}


def _atomic_instruction(em: Emitter, kind: str, ty, prefix: str) -> tuple[str, int] | None:
    """(PTX of one native atom after `prefix`, operand bits) for `kind` on `ty`,
    or None when it needs a CAS loop."""
    bits = ty.primitive_bitwidth
    name = type_text(ty)
    if ty.is_floating():
        if kind == "add":
            if name in ("fp32", "fp64"):
                return f"{prefix}.add.f{bits}", bits
            if name == "fp16" and em.target >= 70:
                return f"{prefix}.add.noftz.f16", 16
            if name == "bf16" and em.target >= 90:
                return f"{prefix}.add.noftz.bf16", 16
            return None
        if kind == "xchg":
            return f"{prefix}.exch.b{bits}", bits
        return None
    if kind in ("and", "or", "xor"):
        return f"{prefix}.{kind}.b{bits}", bits
    if kind == "xchg":
        return f"{prefix}.exch.b{bits}", bits
    if kind == "add":
        return f"{prefix}.add.u{bits}", bits
    sign = "s" if ty.is_int_signed() else "u"
    return f"{prefix}.{kind}.{sign}{bits}", bits


def _atomic_one(em: Emitter, op: Operation, out: str, addr: str, val: str, cmp: str | None, guard: str | None) -> None:
    """`out = atomic(addr, val)` for one element, where `guard` holds."""
    ty = op.results[0].type.scalar
    sem, scope, before, after = _sem_scope(em, op)
    bits = ty.primitive_bitwidth
    if bits not in _CONSTRAINT:
        raise CodegenError(f"{op.name} on {ty} (at {op.loc}): atomics need 16-, 32- or 64-bit elements")
    word = _BITS_TYPE[bits]
    em.open(f"if ({guard or 'true'})")
    if before:
        em.line(before)
    if op.name == "atomic_cas":
        if bits == 16 and em.target < 70:
            raise CodegenError(f"16-bit atomic_cas needs sm_70 (at {op.loc})")
        c = _CONSTRAINT[bits]
        em.line(f"{word} tt_old;")
        em.line(f'asm volatile("{_cas_prefix(sem, scope)}.cas.b{bits} %0, [%1], %2, %3;" : "={c}"(tt_old) : '
                f'"l"({addr}), "{c}"(tt_bitcast<{word}>({cmp})), "{c}"(tt_bitcast<{word}>({val})) : "memory");')
        em.line(f"{out} = tt_bitcast<{ctype(ty)}>(tt_old);")
    else:
        _atomic_rmw_one(em, op, ty, out, addr, val, sem, scope)
    if after:
        em.line(after)
    em.close()


def _atomic_rmw_one(em: Emitter, op: Operation, ty, out: str, addr: str, val: str, sem: str, scope: str) -> None:
    prefix = _rmw_prefix(sem, scope)
    kind = op.attrs["kind"]
    bits = ty.primitive_bitwidth
    word = _BITS_TYPE[bits]
    if ty.is_floating() and kind in ("max", "min"):
        if bits == 16:
            # No scalar 16-bit float atom.min/max exists in PTX (only sm_90's vector forms).
            _atomic16_cas_loop(em, ty, kind, out, addr, val, _cas_loop_prefix(sem, scope))
            return
        if bits not in (32, 64):
            raise CodegenError(f"atomic {kind} on {ty} (at {op.loc}): only 16-, 32- and 64-bit floats")
        # IEEE order from integer order: non-negative floats order as signed
        # integers, negative ones reversed as unsigned integers.
        signed, c = ("int", "r") if bits == 32 else ("long long", "l")
        first, second = ("max.s", "min.u") if kind == "max" else ("min.s", "max.u")
        em.line(f"{word} tt_bits = tt_bitcast<{word}>({val}), tt_old;")
        em.line(f"if (({signed})tt_bits >= 0) "
                f'asm volatile("{prefix}.{first}{bits} %0, [%1], %2;" : "={c}"(tt_old) : '
                f'"l"({addr}), "{c}"(tt_bits) : "memory");')
        em.line(f"else "
                f'asm volatile("{prefix}.{second}{bits} %0, [%1], %2;" : "={c}"(tt_old) : '
                f'"l"({addr}), "{c}"(tt_bits) : "memory");')
        em.line(f"{out} = tt_bitcast<{ctype(ty)}>(tt_old);")
        return
    native = _atomic_instruction(em, kind, ty, prefix)
    if native is None:
        if kind != "add" or bits != 16:
            raise CodegenError(f"atomic {kind} on {ty} (at {op.loc})")
        _atomic16_cas_loop(em, ty, kind, out, addr, val, _cas_loop_prefix(sem, scope))
        return
    ptx, bits = native
    c = _CONSTRAINT[bits]
    em.line(f"{word} tt_old;")
    em.line(f'asm volatile("{ptx} %0, [%1], %2;" : "={c}"(tt_old) : "l"({addr}), '
            f'"{c}"(tt_bitcast<{word}>({val})) : "memory");')
    em.line(f"{out} = tt_bitcast<{ctype(ty)}>(tt_old);")


def _atomic16_cas_loop(em: Emitter, ty, kind: str, out: str, addr: str, val: str, prefix: str) -> None:
    """A 16-bit float atomic add, min or max as a compare-and-swap loop on the
    aligned 32-bit word (what Triton does where the GPU has no such atomic).

    min and max are IEEE 754-2019 minimumNumber and maximumNumber, as the GPU's
    `min.f16` / `max.f16`: a NaN operand loses to a number (NaN only when both
    are), and -0.0 orders below +0.0. When memory already holds the result the
    loop ends without writing."""
    em.line(f"unsigned* tt_word = (unsigned*)((unsigned long long)({addr}) & ~3ull);")
    em.line(f"unsigned tt_shift = ((unsigned)(unsigned long long)({addr}) & 2u) * 8u;")
    em.line("unsigned tt_seen = *(volatile unsigned*)tt_word, tt_expected;")
    em.open("do")
    em.line("tt_expected = tt_seen;")
    em.line(f"{ctype(ty)} tt_cur = {{(unsigned short)(tt_expected >> tt_shift)}};")
    current, operand = widen("tt_cur", ty), widen(val, ty)
    if kind == "add":
        result = narrow(f"({current} + {operand})", ty) + ".bits"
    else:
        beats, zero_sign = ("tt_b < tt_a", "") if kind == "min" else ("tt_b > tt_a", "!")
        em.line(f"float tt_a = {current}, tt_b = {operand};")
        em.line(f"bool tt_take = tt_a != tt_a || {beats} || (tt_b == tt_a && {zero_sign}({val}.bits & 0x8000u));")
        em.line(f"if (!tt_take || tt_cur.bits == {val}.bits) break;")
        result = f"{val}.bits"
    em.line(f"unsigned tt_new = (tt_expected & ~(0xffffu << tt_shift)) | ((unsigned){result} << tt_shift);")
    em.line(f'asm volatile("{prefix}.cas.b32 %0, [%1], %2, %3;" : "=r"(tt_seen) : '
            f'"l"(tt_word), "r"(tt_expected), "r"(tt_new) : "memory");')
    em.close(" while (tt_seen != tt_expected);")
    em.line(f"{out} = {ctype(ty)}{{(unsigned short)(tt_expected >> tt_shift)}};")


def has_vector_atomic(op: Operation, target: int, result_used: bool = True) -> bool:
    """Whether the target does atomic `op` on runs of consecutive elements, so that its
    access side is coalesced into vectors as a store's is. On sm_90+ (PTX 8.1): fp16/bf16
    min and max (`atom.global.v8.f16.min.noftz`), and float adds whose old value nobody
    reads, in an order `red` takes (`red.global.gpu.relaxed.add.v4.f32`)."""
    if target < 90 or op.name != "atomic_rmw" or not op.results[0].type.scalar.is_floating():
        return False
    bits = op.results[0].type.scalar.primitive_bitwidth
    kind = op.attrs.get("kind")
    if kind in ("min", "max"):
        return bits == 16
    return kind == "add" and bits < 64 and not result_used and op.attrs.get("sem") in ("relaxed", "release")


def _vector16_width(em: Emitter, op: Operation) -> int:
    """Elements per native vector atom of a 16-bit float min/max on sm_90+
    (`atom.global.v2/v4/v8.f16/bf16.min/max.noftz`: runs of contiguous, aligned
    elements under one mask), or 1 where each element takes the CAS loop."""
    ptr = op.operands[0]
    if not has_vector_atomic(op, em.target) or not ptr.type.is_block():
        return 1
    vec = vector_width(em, ptr, op.operands[2] if len(op.operands) > 2 else None)
    return vec if vec >= 2 else 1


def _atomic_vector16(em: Emitter, op: Operation, out: str, first: int, vec: int, addr: str,
                     value: Callable[[int], str], guard: str | None) -> None:
    """`out[first:first + vec]` = the old values of one native vector min/max
    of `vec` 16-bit floats at `addr` (atomic per element, as the manual says)."""
    ty = op.results[0].type.scalar
    sem, scope, _, _ = _sem_scope(em, op)  # sm_90+: no fences
    ptx_type = "f16" if type_text(ty) == "fp16" else "bf16"
    olds = ", ".join(f"%{i}" for i in range(vec))
    values = ", ".join(f"%{vec + 1 + i}" for i in range(vec))
    ptx = f"{_rmw_prefix(sem, scope)}.v{vec}.{ptx_type}.{op.attrs['kind']}.noftz {{{olds}}}, [%{vec}], {{{values}}};"
    outputs = ", ".join(f'"=h"(tt_old[{i}])' for i in range(vec))
    inputs = ", ".join([f'"l"({addr})'] + [f'"h"({value(first + i)}.bits)' for i in range(vec)])
    em.open(f"if ({guard or 'true'})")
    em.line(f"unsigned short tt_old[{vec}];")
    em.line(f'asm volatile("{ptx}" : {outputs} : {inputs} : "memory");')
    for i in range(vec):
        em.line(f"{out}[{first + i}] = {ctype(ty)}{{tt_old[{i}]}};")
    em.close()


def _needs_broadcast(op: Operation) -> bool:
    ptr = op.operands[0]
    if not ptr.type.is_block():
        return True
    linear = ptr.type.layout.linear(tuple(ptr.type.shape))
    return owner_condition(linear) is not None


@emits("atomic_rmw", "atomic_cas")
def emit_atomic(em: Emitter, op: Operation) -> None:
    ptr = op.operands[0]
    if op.name == "atomic_cas":
        cmp, val, mask = op.operands[1], op.operands[2], None
    else:
        val = op.operands[1]
        mask = op.operands[2] if len(op.operands) > 2 else None
        cmp = None
    result = op.results[0]
    if not ptr.type.is_block():
        name = em.define_scalar(result, zero_value(result))
        guard = _and(em.name(mask) if mask is not None else None, "threadIdx.x == 0")
        _atomic_one(em, op, name, em.name(ptr), em.name(val), em.name(cmp) if cmp is not None else None, guard)
        if em.is_used(result):
            _share_from_owners(em, op, name)
        return
    linear = em.linear(ptr)
    name = em.define_block(result)
    em.for_registers(linear.num_registers, f"{name}[i] = {zero_value(result)};")
    owner = owner_condition(linear)
    unique = _unique_registers(linear)
    if not em.is_used(result) and _emit_reductions(em, op, linear, owner, unique):
        return
    vec = _vector16_width(em, op)
    for reg in unique:
        if vec > 1 and reg % vec:
            continue  # done by the vector atom of its run
        guard = _and(em.reg(mask, reg) if mask is not None else None, owner)
        if vec > 1:
            _atomic_vector16(em, op, name, reg, vec, em.reg(ptr, reg), lambda r: em.reg(val, r), guard)
        else:
            _atomic_one(em, op, f"{name}[{reg}]", em.reg(ptr, reg), em.reg(val, reg),
                        em.reg(cmp, reg) if cmp is not None else None, guard)
    if em.is_used(result) and (owner is not None or len(unique) < linear.num_registers):
        _share_from_owners(em, op, name)


def _reduction_prefix(em: Emitter, op: Operation) -> str | None:
    """The `red` instruction's prefix for an atomic whose old value nobody reads, where its
    ordering allows one (`red` takes .relaxed and .release only); None: keep `atom`."""
    if op.name != "atomic_rmw" or op.attrs["kind"] == "xchg":
        return None
    sem, scope, before, _ = _sem_scope(em, op)
    if sem not in ("", ".relaxed", ".release"):
        return None
    return f"red.global{scope}{sem}"


def _emit_reductions(em: Emitter, op: Operation, linear: LinearLayout, owner: str | None,
                     unique: list[int]) -> bool:
    """Emit an atomic whose result is unused as `red` instructions, as Triton does: on
    sm_90 float adds on contiguous registers go `.v2/.v4/.v8` at once (each element still
    atomic on its own). False, emitting nothing, where the op needs `atom` or a CAS loop."""
    ty = op.results[0].type.scalar
    prefix = _reduction_prefix(em, op)
    if prefix is None:  # atomic_cas among them: `red` has no compare-and-swap
        return False
    kind = op.attrs["kind"]
    if ty.is_floating() and kind != "add":
        return False
    native = _atomic_instruction(em, kind, ty, prefix)
    if native is None:
        return False
    ptr, val = op.operands[0], op.operands[1]
    mask = op.operands[2] if len(op.operands) > 2 else None
    bits = native[1]
    vec = vector_width(em, ptr, mask) if has_vector_atomic(op, em.target, result_used=False) else 1
    constraint, word = _CONSTRAINT[bits], _BITS_TYPE[bits]
    sem, scope, before, after = _sem_scope(em, op)
    kept = set(unique)
    for first in range(0, linear.num_registers, vec):
        if first not in kept:
            continue
        guard = _and(em.reg(mask, first) if mask is not None else None, owner)
        em.open(f"if ({guard or 'true'})")
        if before:
            em.line(before)
        values = [f'"{constraint}"(tt_bitcast<{word}>({em.reg(val, first + i)}))' for i in range(vec)]
        if vec == 1:
            ptx = f"{native[0]} [%0], %1;"
        else:
            # `.add.f32` -> `.add.v4.f32`; `.add.noftz.f16` -> `.add.noftz.v8.f16`
            head, _, tail = native[0].rpartition(".")
            operands = ", ".join(f"%{i + 1}" for i in range(vec))
            ptx = f"{head}.v{vec}.{tail} [%0], {{{operands}}};"
        em.line(f'asm volatile("{ptx}" :: "l"({em.reg(ptr, first)}), {", ".join(values)} : "memory");')
        if after:
            em.line(after)
        em.close()
    return True


def _share_from_owners(em: Emitter, op: Operation, name: str) -> None:
    """Give every thread holding an element the old value its owner got."""
    result = op.results[0]
    elem = ctype(result.type)
    nbytes = atomic_scratch_bytes(op)
    em.barrier()
    em.open()
    em.line(f"{elem}* tt_buf = {em.scratch(elem, 0, nbytes)};")
    if not result.type.is_block():
        em.line(f"if (threadIdx.x == 0) tt_buf[0] = {name};")
        em.barrier()
        em.line(f"{name} = tt_buf[0];")
        em.close()
        return
    linear = em.linear(result)
    strides = row_major_strides(tuple(result.type.shape))
    owner = owner_condition(linear)
    indices = {}
    for reg in range(linear.num_registers):
        coords = [em.coord(linear, d, reg) for d in range(linear.rank)]
        indices[reg] = " + ".join(f"{c} * {s}" for c, s in zip(coords, strides))
    for reg in _unique_registers(linear):
        em.line(f"if ({owner or 'true'}) tt_buf[{indices[reg]}] = {name}[{reg}];")
    em.barrier()
    for reg in range(linear.num_registers):
        em.line(f"{name}[{reg}] = tt_buf[{indices[reg]}];")
    em.close()


@needs_scratch("atomic_rmw", "atomic_cas")
def atomic_scratch_bytes(op: Operation) -> int:
    if not _needs_broadcast(op):
        return 0
    result = op.results[0]
    numel = 1
    for s in (result.type.shape if result.type.is_block() else ()):
        numel *= s
    return numel * result.type.scalar.itemsize
