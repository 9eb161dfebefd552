"""`tl.dot` on Hopper (sm_90a) with `wgmma.mma_async` (PTX_FACTS 10): fp16 and
bf16 (k16), tf32 (k8; where both operands load along K, `layout_pass`), fp8
(k32, e4m3/e5m2, fp32 accumulators) and int8 (k32, int32).

A warpgroup (4 consecutive warps) multiplies a 64-row slab of `a` by `b`, both
read by the tensor cores straight from shared memory through 64-bit matrix
descriptors; the accumulator stays in registers. Its register layout per warp is
the `mma.sync` m16n8 accumulator layout with warp `w` of the group on rows
`16w .. 16w + 15`, so the result is an `NvidiaMmaLayout` with every warp along
M (`warps_per_cta = (num_warps, 1)`): the code after the dot is that of an
`mma.sync` dot.

`a` may also come from registers, in the m16n8k16 fragments of each warp's
rows (attention's `p`, computed in the previous dot's accumulator layout).
Operand tiles are `NvmmaSharedLayout`s: the hardware's 128/64/32-byte swizzle,
the contiguous dim cut into swizzle-wide column blocks. A tile contiguous along
K is "K-major" for the instruction, one contiguous along M (a) or N (b) is
"MN-major" (fp16 and bf16 allow both). Descriptor fields: the start address,
the leading byte offset (LBO: between column blocks along M/N of an MN-major
tile; unused for K-major) and the stride byte offset (SBO: between groups of 8
rows), and the swizzle mode.

Each dot issues all its instructions as one group and waits for it before the
result is read, so the operand tiles may be overwritten right after the dot, as
with `mma.sync`; except a dot the software pipeline marks `in_flight` (one
accumulating over a loop into a carried value only it reads, from pipelined
tiles): it accumulates in place and waits only for the group of the trip
before, and a `dot_wait` after the loop waits for the last one. A wait that an
earlier one in its block already made true is left out (`groups_before`):
attention's `p @ v` follows `q @ k`, which waited for every group.

The tiles were written by `cp.async`, TMA or ordinary stores. The tensor cores
read them through the async proxy: tiles written by ordinary stores get
`fence.proxy.async.shared::cta` in every thread before the barrier that
precedes the dot, a `local_alloc`'s right after its stores (as Triton fences a
tile written from registers: once, where it is written, so a loop's dots
reading a tile written before the loop fence nothing); `cp.async` stages, as
in Triton (whose fence insertion fences only tiles written from registers),
only the pipeline's `cp.async.wait_group` and barrier; TMA stages their
mbarrier wait. An `a` operand in registers needs no fence.
"""

from __future__ import annotations

from tritone.ir.core import Operation
from tritone.ir.ops import is_zero_constant
from tritone.ir.types import type_text

from ....ir.layouts import DistributedLayout, DotOperandLayout, NvidiaMmaLayout, NvmmaSharedLayout
from ..codegen_base import CodegenError, emits
from . import DotImplementation, register
from .mma import OperandSource
from .shared import TileGeometry, fenced_where_written, is_shared_tile, prologue_value, smem_address, tile_range

_INPUTS = {"fp16": "f16", "bf16": "bf16", "fp8e4nv": "e4m3", "fp8e5": "e5m2", "i8": "s8", "fp32": "tf32"}
# accumulator type by input: PTX type and inline asm constraint
_ACCUMULATORS = {"i8": ("satfinite.s32", "r")}  # int32 sums saturate, as mma.sync's .satfinite
_FLOAT_ACCUMULATOR = ("f32", "f")
# descriptor swizzle codes by swizzle span in bytes (not CUtensorMapSwizzle's)
_SWIZZLE_CODE = {128: 1, 64: 2, 32: 3}
_MAX_N = 256


def _k_step(op: Operation) -> int:
    """K of one instruction: 32 bytes of each operand row."""
    return 32 // op.operands[0].type.scalar.itemsize


def _instruction_n(n: int) -> int | None:
    """N of the instructions covering a result `n` columns wide."""
    if n <= _MAX_N:
        return n if n % 16 == 0 else None
    return _MAX_N if n % _MAX_N == 0 else None


def swizzle_span(width_bytes: int) -> int:
    """The widest hardware swizzle span (bytes) a tile row of `width_bytes` fills."""
    for span in (128, 64, 32):
        if width_bytes >= span:
            return span
    raise ValueError(f"a wgmma operand tile row of {width_bytes} bytes is narrower than 32 bytes")


def nvmma_layout(shape: tuple[int, ...], elem_bytes: int, contiguous_dim: int) -> NvmmaSharedLayout:
    """The wgmma tile layout of a rank-2 `shape` stored contiguous along `contiguous_dim`."""
    span = swizzle_span(shape[contiguous_dim] * elem_bytes)
    order = (contiguous_dim, 1 - contiguous_dim)
    return NvmmaSharedLayout(16 // elem_bytes, 128 // span, span // 16, order)


class Wgmma(DotImplementation):
    name = "wgmma"

    def supports(self, op: Operation, target: int) -> bool:
        if target != 90:
            return False
        a, b, acc = op.operands
        ta, tb = type_text(a.type.scalar), type_text(b.type.scalar)
        if len(acc.type.shape) != 2 or ta not in _INPUTS or tb not in _INPUTS:
            return False
        fp8 = a.type.scalar.is_fp8() and b.type.scalar.is_fp8()
        if ta != tb and not fp8:
            return False
        if type_text(acc.type.scalar) != ("i32" if ta == "i8" else "fp32"):
            return False
        if ta == "fp32" and op.attrs.get("input_precision", "tf32") != "tf32":
            return False  # tf32x3 (three products a dot) stays with mma.sync, ieee with the FMA path
        m, n = acc.type.shape
        k = a.type.shape[-1]
        limit = op.attrs.get("max_num_imprecise_acc") or 0
        if fp8 and 0 < limit <= k:
            return False  # partial sums every `limit` products: the mma.sync path has them
        return m % 64 == 0 and k % _k_step(op) == 0 and _instruction_n(n) is not None

    def fits(self, op: Operation, num_warps: int) -> bool:
        m = op.results[0].type.shape[0]
        return num_warps % 4 == 0 and m % (16 * num_warps) == 0

    def infer_layout(self, op: Operation, target: int, num_warps: int, chained: bool) -> DistributedLayout:
        return NvidiaMmaLayout((2, 0), (num_warps, 1), (16, 8))

    def register_operand_layout(self, op: Operation, index: int,
                                result_layout: DistributedLayout) -> DotOperandLayout | None:
        # a may come from registers, in the m16n8k16 fragments of each warp's rows
        if index != 0 or not isinstance(result_layout, NvidiaMmaLayout) or result_layout.warps_per_cta[1] != 1:
            return None
        if op.operands[0].type.scalar.itemsize != 2:
            return None
        return DotOperandLayout(0, result_layout, 2)

    def shared_operand_layout(self, op: Operation, index: int, contiguous_dim: int) -> NvmmaSharedLayout:
        value = op.operands[index]
        if value.type.scalar.itemsize != 2:
            # only 16-bit tiles may be MN-major: others are stored K-major whatever their source
            contiguous_dim = 1 if index == 0 else 0
        return nvmma_layout(tuple(value.type.shape), value.type.scalar.itemsize, contiguous_dim)

    def lower(self, op: Operation, em) -> None:
        _Lowering(em, op).run()


class _Operand:
    """One operand tile: its descriptor's fixed fields and where an instruction's slab starts."""

    def __init__(self, em, value, index: int):
        if not is_shared_tile(value) or not isinstance(value.type.layout, NvmmaSharedLayout):
            raise CodegenError(f"wgmma operand {index} of type {value.type} is not a wgmma shared tile")
        self.value = value
        self.geom = TileGeometry(value.type.layout, tuple(value.type.shape), value.type.scalar.itemsize)
        k_dim = 1 if index == 0 else 0
        self.k_major = self.geom.inner == k_dim
        self.swizzle = _SWIZZLE_CODE[self.geom.row_bytes]
        self.sbo = 8 * self.geom.row_bytes
        self.lbo = 16 if self.k_major else self.geom.column_bytes

    @property
    def transposed(self) -> int:
        return 0 if self.k_major else 1

    def offset(self, mn0: int, k0: int) -> int:
        """Byte offset in the tile of the slab whose first row (M or N) is `mn0` and first K is `k0`."""
        geom = self.geom
        eb = geom.elem_bytes
        if self.k_major:
            return (k0 // geom.width) * geom.column_bytes + mn0 * geom.row_bytes + (k0 % geom.width) * eb
        return (mn0 // geom.width) * geom.column_bytes + k0 * geom.row_bytes


def _descriptor_helper(em) -> str:
    name = "tt_wgmma_desc"
    em.declare_once(
        f"static __device__ __forceinline__ unsigned long long {name}(unsigned addr, unsigned lbo, unsigned sbo,\n"
        "                                                              unsigned long long swizzle) {\n"
        "  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16)\n"
        "       | ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32) | (swizzle << 62);\n"
        "}")
    return name


class _Lowering:
    def __init__(self, em, op: Operation):
        self.em = em
        self.op = op
        self.result = op.results[0]
        layout = self.result.type.layout
        if not isinstance(layout, NvidiaMmaLayout) or layout.warps_per_cta[1] != 1:
            raise CodegenError(f"wgmma dot at {op.loc}: result layout {layout} is not a warpgroup layout")
        self.num_warps = layout.warps_per_cta[0]
        self.linear = em.linear(self.result)

    def _register_of(self) -> dict[tuple[int, ...], int]:
        return {self.linear.register_coords(j): j for j in range(self.linear.num_registers)}

    def run(self) -> None:
        em, op = self.em, self.op
        a, b, acc = op.operands
        acc_type, self.constraint = _ACCUMULATORS.get(type_text(a.type.scalar), _FLOAT_ACCUMULATOR)
        ptx_types = f"{acc_type}.{_INPUTS[type_text(a.type.scalar)]}.{_INPUTS[type_text(b.type.scalar)]}"
        a_registers = None if is_shared_tile(a) else OperandSource(em, a, 0, self.linear, 2)
        ops = (None if a_registers else _Operand(em, a, 0), _Operand(em, b, 1))
        in_flight = bool(op.attrs.get("in_flight"))
        zero = is_zero_constant(acc)
        # whether the first instruction adds the accumulator: not for zeros; for a loop's
        # zeroed accumulator (`codegen_control._zeroed_accumulators`), from the second trip on
        first_accumulates = em.memo.get("accumulates_after", {}).get(id(op), not zero)
        if zero:
            # the first instruction of each tile ignores the accumulator (scale-d 0)
            name = em.define_block(self.result)
        elif in_flight or (acc.defining_op is not None and acc.defining_op.parent is op.parent
                         and em.use_count(acc) == 1):
            # accumulates in place into a value only this dot reads, made afresh each
            # time the dot runs (in flight: the carried value of a pipelined loop,
            # pipeline.py)
            name = em.name(acc)
            em.bind(self.result, name)
        else:
            name = em.define_block(self.result)
            em.copy(name, em.name(acc), acc)
        count = em.nregs(self.result)
        em.memo["arch_suffix"] = "a"
        # ordinary writes of the tiles, before the tensor cores read them: a proxy fence and
        # (where the accesses since the last barrier call for one) a barrier. TMA stages need
        # neither; cp.async stages were made everyone's by the pipeline's wait and barrier; a
        # tile its `local_alloc` wrote was fenced there, once, not at every dot reading it (a
        # loop's dots reading a tile written before the loop); an `a` from registers is no
        # tile at all.
        writers = [(operand, stage_writer(em, operand.value)) for operand in ops if operand is not None]
        if any(writer is None for _, writer in writers):
            em.line('asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')
        for operand, writer in writers:
            if writer != "tma_copy":
                start, end = tile_range(operand.value)
                em.shared_access(start, end, False)
        m, n = self.result.type.shape
        depth = a.type.shape[-1]
        n_step = _instruction_n(n)
        slab_rows = 16 * self.num_warps  # rows one m step of all warpgroups covers
        base = smem_address(em)
        desc = _descriptor_helper(em)
        if self.num_warps == 4:
            # one warpgroup: its slab starts at row 0 (a constant, so the descriptors stay uniform)
            group_row = "0u"
        else:
            # the warpgroup's number through a shuffle from lane 0, once at the kernel's start:
            # warp-uniform to ptxas, so the descriptors built from it stay in uniform registers
            # (inside a K loop the shuffle sat on every trip's way to its first wgmma)
            group_row = prologue_value(em, ("warpgroup_row",),
                                       "(unsigned)__shfl_sync(0xffffffffu, tt_warp >> 2, 0) * 64u")
        descriptors = []
        for operand in ops:
            if operand is None:
                descriptors.append(None)
                continue
            var = em.fresh("tt_desc")
            start = f"{base} + {em.name(operand.value)}"
            if operand is ops[0]:
                # each warpgroup's slab of a starts at its own row
                row = (f"{group_row} * {operand.geom.row_bytes}u" if operand.k_major
                       else f"({group_row} / {operand.geom.width}u) * {operand.geom.column_bytes}u")
                start += f" + {row}"
            em.line(f"const unsigned long long {var} = {desc}({start}, {operand.lbo}u, {operand.sbo}u, "
                    f"{operand.swizzle}ull);")
            descriptors.append(var)
        register_of = self._register_of()
        k_step = _k_step(op)
        a_fragments = {}
        if a_registers is not None:
            # packed before the fence: registers a wgmma reads must be ready when the group starts
            for k0 in range(0, depth, k_step):
                for m0 in range(0, m, slab_rows):
                    packed = []
                    for expr in a_registers.load((), m0, k0)[0]:
                        var = em.fresh("tt_afrag")
                        em.line(f"const unsigned {var} = {expr};")
                        packed.append(var)
                    a_fragments[k0, m0] = packed
        em.for_registers(count, f'asm volatile("" : "+{self.constraint}"({name}[i]) :: "memory");')
        em.line('asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')
        # each accumulator block's K steps one after the other (as Triton orders them): the
        # tensor cores chain the instructions of one accumulator; the sums per element are
        # the same in any order of the blocks
        for m0 in range(0, m, slab_rows):
            for n0 in range(0, n, n_step):
                regs = []
                for i in range(n_step // 2):
                    coord = (m0 + 8 * ((i >> 1) & 1), n0 + 8 * (i >> 2) + (i & 1))
                    regs.append(f"{name}[{register_of[coord]}]")
                steps = []
                for k0 in range(0, depth, k_step):
                    if a_registers is not None:
                        a_operand = a_fragments[k0, m0]
                    else:
                        a_operand = f"{descriptors[0]} + {ops[0].offset(m0, k0) >> 4}ull"
                    b_off = ops[1].offset(n0, k0) >> 4
                    steps.append((a_operand, f"{descriptors[1]} + {b_off}ull", first_accumulates if k0 == 0 else True))
                self._issue(ptx_types, k_step, n_step, regs, steps,
                            None if a_registers is not None else ops[0].transposed, ops[1].transposed)
        em.line('asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");')
        # in flight: wait for the trip before's group, unless a wait since drained it
        # (attention's `p @ v` after `q @ k`, which waited for every group)
        wait_for_dots(em, [(name, self.constraint)], count, 1 if in_flight else 0,
                      drained=in_flight and groups_before(op) == 0)

    def _issue(self, ptx_types: str, k: int, n: int, regs: list[str],
               steps: list[tuple[str | list[str], str, bool | str]], trans_a: int | None, trans_b: int) -> None:
        """The K steps of one accumulator block, m64nNkK instructions one after the other
        (`ptx_types`: the accumulator's, a's and b's, "f32.f16.f16"), in one asm
        statement: the accumulator's registers are its operands once, not once a step
        (NVRTC's front end and NVVM take milliseconds over each operand list of a
        hundred registers). Each step is (a, b's descriptor, accumulate): `a` a
        descriptor, or four fragment registers (then `trans_a` is None: registers are
        K-major); without `accumulate` the step's result is its product alone (a C
        condition: where it holds at run time). Only
        16-bit inputs have transpose flags (the others are always K-major), integer ones
        no negation flags either."""
        nd = len(regs)
        inputs: list[str] = []
        texts = []
        if ptx_types.startswith("satfinite.s32"):
            flags = ""  # integer dots have no negation or transposition
        elif k != 16:
            flags = "1, 1"
        elif trans_a is None:
            flags = f"1, 1, {trans_b}"
        else:
            flags = f"1, 1, {trans_a}, {trans_b}"
        outs = ", ".join(f"%{i}" for i in range(nd))
        # one predicate per scale-d value the steps use (the first step of a zeroed
        # accumulator ignores it; a C condition for a loop's first trip), set from an input operand
        predicates = {accumulate: "pc" if isinstance(accumulate, str) else f"p{int(accumulate)}"
                      for _, _, accumulate in steps}
        for a, desc_b, accumulate in steps:
            if isinstance(a, list):
                a_text = "{" + ", ".join(f"%{nd + len(inputs) + i}" for i in range(4)) + "}"
                inputs += [f'"r"({r})' for r in a]
            else:
                a_text = f"%{nd + len(inputs)}"
                inputs.append(f'"l"({a})')
            inputs.append(f'"l"({desc_b})')
            texts.append(f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{ptx_types} "
                         f"{{{outs}}}, {a_text}, %{nd + len(inputs) - 1}, {predicates[accumulate]}"
                         f"{', ' + flags if flags else ''};")
        setup = []
        for accumulate, predicate in sorted(predicates.items(), key=lambda item: item[1]):
            setup.append(f".reg .pred {predicate}; setp.ne.b32 {predicate}, %{nd + len(inputs)}, 0;")
            inputs.append(f'"r"((unsigned)({accumulate}))' if isinstance(accumulate, str)
                          else f'"r"({int(accumulate)})')
        text = "{ " + " ".join(setup + texts) + " }"
        operands = ", ".join(f'"+{self.constraint}"({r})' for r in regs)
        self.em.line(f'asm volatile("{text}" : {operands} : {", ".join(inputs)});')


def stage_writer(em, tile) -> str | None:
    """The one kind of op that writes the pipeline stages shared tile `tile` is one
    of (pipeline.py): "tma_copy" (the async proxy, its writes complete and visible
    once the reader's mbarrier wait returned) or "async_copy" (cp.async, made
    everyone's by the pipeline's `async_wait`); "local_alloc" for a tile a
    `local_alloc` wrote from registers (which fences its writes for the async
    proxy itself on sm_90+, `codegen_dot.emit_local_alloc`); None for any other
    tile."""
    op = tile.defining_op
    while op is not None and op.name in ("permute", "local_index", "memdesc_trans"):
        op = op.operands[0].defining_op
    if op is not None and op.name == "local_alloc" and fenced_where_written(em, op.results[0]):
        return "local_alloc"
    if op is None or op.name != "local_buffer":
        return None
    buffer = op.results[0]
    cache = em.memo.setdefault("stage_writers", {})
    if buffer not in cache:
        writers = {user.name for user in em.fn.walk() if buffer in user.operands} - {"local_index", "async_wait"}
        cache[buffer] = writers.pop() if writers in ({"tma_copy"}, {"async_copy"}) else None
    return cache[buffer]


def wait_for_dots(em, accumulators: list[tuple[str, str]], count: int, pending: int, drained: bool = False) -> None:
    """Wait until at most `pending` wgmma groups are in flight (no instruction where
    that already holds, `drained`); the register fences keep the compiler from moving
    accesses of the accumulators (name, asm constraint) across the wait."""
    if not drained:
        em.line(f'asm volatile("wgmma.wait_group.sync.aligned {pending};" ::: "memory");')
    for name, constraint in accumulators:
        em.for_registers(count, f'asm volatile("" : "+{constraint}"({name}[i]) :: "memory");')


def groups_before(op: Operation) -> int | None:
    """At most how many wgmma groups are in flight right before `op`, as the ops before
    it in its block tell: none after a dot that waited for its own group or a `dot_wait`
    of none, one after an in-flight dot (which waits for the group before its own);
    None where they do not tell (from the block's start, past an op holding dots)."""
    count = None
    for prior in op.parent.ops:
        if prior is op:
            return count
        if prior.name == "dot" and prior.attrs.get("implementation") == "wgmma":
            count = 1 if prior.attrs.get("in_flight") else 0
        elif prior.name == "dot_wait":
            pending = int(prior.attrs["pending"])
            count = pending if count is None else min(count, pending)
        elif any(inner is not prior and inner.name in ("dot", "dot_wait") for inner in prior.walk()):
            count = None
    return count


def zeros_if_no_trips(em, result) -> None:
    """The zeros of loop result `result` where the loop ran no trips, if it is one of
    `codegen_control._zeroed_accumulators` (nothing otherwise); written once the loop's
    wgmma groups are done (written in a branch while they could run, ptxas ran them one
    at a time). The empty asm keeps the branch a branch (NVVM made it a select a
    register, on every run of the loop)."""
    pending = em.memo.get("zeros_if_no_trips", {}).pop(id(result), None)
    if pending is None:
        return
    name, init, lb, ub = pending
    em.open(f"if (!({lb} < {ub}))")
    em.line('asm volatile("" ::: "memory");')
    em.copy(name, em.name(init), init)
    em.close()


@emits("dot_wait")
def emit_dot_wait(em, op: Operation) -> None:
    """The wait of a pipelined loop's wgmma dots left in flight (pipeline.py): after the
    loop, and before an in-flight accumulator is rescaled."""
    pending = int(op.attrs["pending"])
    before = groups_before(op)
    drained = before is not None and before <= pending
    for value in op.operands:
        constraint = "r" if value.type.scalar.is_int() else "f"
        wait_for_dots(em, [(em.name(value), constraint)], em.nregs(value), pending, drained)
        zeros_if_no_trips(em, value)


register(Wgmma())
