"""Code generation for the indexed ops, both through shared memory:
`gather` (the source block is written out, then each thread reads the
elements its indices name) and `histogram` (counters in shared memory,
incremented atomically once per element, then read in the result's layout)."""

from __future__ import annotations

from tritone.ir.core import Operation

from .codegen_base import Emitter, emits, linear_index_expr, needs_scratch, row_major_strides
from .codegen_layout import _unique_registers
from .codegen_memory import owner_condition
from .codegen_types import ctype


@needs_scratch("gather")
def gather_scratch_bytes(op: Operation) -> int:
    src = op.operands[0]
    numel = 1
    for s in src.type.shape:
        numel *= s
    return numel * src.type.scalar.itemsize


@emits("gather")
def emit_gather(em: Emitter, op: Operation) -> None:
    src, index = op.operands
    result = op.results[0]
    axis = op.attrs["axis"]
    elem = ctype(src.type)
    strides = row_major_strides(tuple(src.type.shape))
    name = em.define_block(result)
    src_linear, out_linear = em.linear(src), em.linear(result)
    em.barrier()
    em.open()
    em.line(f"{elem}* tt_buf = {em.scratch(elem, 0, gather_scratch_bytes(op))};")
    for reg in _unique_registers(src_linear):
        coords = [em.coord(src_linear, d, reg) for d in range(src_linear.rank)]
        em.line(f"tt_buf[{linear_index_expr(coords, strides)}] = {em.reg(src, reg)};")
    em.barrier()
    for reg in range(out_linear.num_registers):
        coords = [em.coord(out_linear, d, reg) for d in range(out_linear.rank)]
        coords[axis] = f"(int){em.reg(index, reg)}"
        em.line(f"{name}[{reg}] = tt_buf[{linear_index_expr(coords, strides)}];")
    em.close()


@needs_scratch("histogram")
def histogram_scratch_bytes(op: Operation) -> int:
    return op.attrs["num_bins"] * 4


@emits("histogram")
def emit_histogram(em: Emitter, op: Operation) -> None:
    x = op.operands[0]
    mask = op.operands[1] if len(op.operands) > 1 else None
    result = op.results[0]
    bins = op.attrs["num_bins"]
    threads = 32 * em.num_warps
    name = em.define_block(result)
    linear, out_linear = em.linear(x), em.linear(result)
    em.barrier()
    em.open()
    em.line(f"int* tt_bins = {em.scratch('int', 0, histogram_scratch_bytes(op))};")
    em.line(f"for (int b = threadIdx.x; b < {bins}; b += {threads}) tt_bins[b] = 0;")
    em.barrier()
    owner = owner_condition(linear)
    for reg in _unique_registers(linear):
        value = em.reg(x, reg)
        conditions = [f"{value} >= 0" if x.type.scalar.is_int_signed() else None, f"{value} < {bins}",
                      em.reg(mask, reg) if mask is not None else None, owner]
        guard = " && ".join(f"({c})" for c in conditions if c)
        em.line(f"if ({guard}) atomicAdd(&tt_bins[(int){value}], 1);")
    em.barrier()
    for reg in range(out_linear.num_registers):
        em.line(f"{name}[{reg}] = tt_bins[{em.coord(out_linear, 0, reg)}];")
    em.close()
