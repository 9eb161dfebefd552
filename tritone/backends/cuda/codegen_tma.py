"""CUDA for `tma_load` and `tma_store` (sm_90+, `tma.py`): one block of a host
tensor descriptor copied by the copy engine between global memory and a
row-major tile in the op's shared scratch memory, and between that tile and
the registers of the value's layout.

A load: after a barrier (earlier users of the scratch bytes are done), thread
0 initialises an mbarrier beside the tile, announces the tile's bytes
(`mbarrier.arrive.expect_tx`) and issues `cp.async.bulk.tensor`; every
thread waits on the mbarrier's phase 0 (`mbarrier.try_wait.parity`), reads
its elements from the tile, and after a second barrier thread 0 invalidates
the mbarrier so that the bytes may serve other uses. Elements outside the
tensor arrive as zeros, or NaNs where the tensor map asks for them; fp8
types, which the copy engine moves as bytes, get their NaN padding here.

A store: every thread writes its elements into the tile and makes them
visible to the copy engine (`fence.proxy.async.shared::cta`); after a
barrier thread 0 issues the copy to global memory, commits it as a bulk
group and waits for it to complete. Elements outside the tensor are dropped
by the copy engine.

The tensor map is the kernel parameter `const __grid_constant__
tt_tensormap` (128 bytes, 64-byte aligned), addressed in place.
"""

from __future__ import annotations

from tritone.ir.core import Operation

from ...ir.types import tensormap_type
from .codegen_base import (
    SCRATCH_ALIGNMENT,
    CodegenError,
    Emitter,
    emits,
    linear_index_expr,
    needs_scratch,
    row_major_strides,
)
from .codegen_layout import _copy, _unique_registers, _vector_width
from .codegen_types import ctype, literal
from .tensormap import SOFTWARE_NAN_FILL, element_key, tile_bytes

# the copy engine writes and reads tiles at 128-byte aligned shared addresses
TILE_ALIGNMENT = 128
_MBARRIER_BYTES = 16  # 8 used, the scratch granularity kept

_TENSORMAP_STRUCT = "struct __align__(64) tt_tensormap { unsigned long long opaque[16]; };"

_MBARRIER_HELPERS = r"""__device__ __forceinline__ unsigned tt_shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void tt_mbarrier_init(unsigned bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n\t"
               "fence.mbarrier_init.release.cluster;\n\t"
               "fence.proxy.async.shared::cta;" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void tt_mbarrier_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tt_mbarrier_wait(unsigned bar, unsigned phase) {
  asm volatile("{\n\t.reg .pred tt_done;\n\t"
               "TT_WAIT:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 tt_done, [%0], %1;\n\t"
               "@!tt_done bra.uni TT_WAIT;\n\t}" :: "r"(bar), "r"(phase) : "memory");
}
__device__ __forceinline__ void tt_mbarrier_inval(unsigned bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void tt_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}"""


def tensormap_parameter(em: Emitter) -> str:
    """The C type of a tensor map kernel parameter (declaring its struct)."""
    em.declare_once(_TENSORMAP_STRUCT)
    return "const __grid_constant__ tt_tensormap"


def _coordinate_list(rank: int, first: int) -> str:
    """`{%first+rank-1, ..., %first}`: the PTX operands of the coordinates,
    innermost dim first, for C arguments given outermost first."""
    return "{" + ", ".join(f"%{first + rank - 1 - d}" for d in range(rank)) + "}"


def _declare_copies(em: Emitter, rank: int) -> None:
    """The PTX wrappers of rank-`rank` tensor copies, each declared once."""
    em.declare_once(_MBARRIER_HELPERS)
    coords = ", ".join(f"int c{d}" for d in range(rank))
    inputs = ", ".join(f'"r"(c{d})' for d in range(rank))
    em.declare_once(
        f"__device__ __forceinline__ void tt_tma_load_{rank}d(unsigned dst, const tt_tensormap* map, "
        f"unsigned bar, {coords}) {{\n"
        f'  asm volatile("cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes '
        f'[%0], [%1, {_coordinate_list(rank, 3)}], [%2];"\n'
        f'               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), {inputs} '
        f': "memory");\n}}')
    em.declare_once(
        f"__device__ __forceinline__ void tt_tma_store_{rank}d(const tt_tensormap* map, unsigned src, "
        f"{coords}) {{\n"
        f'  asm volatile("cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group '
        f'[%0, {_coordinate_list(rank, 2)}], [%1];\\n\\t"\n'
        f'               "cp.async.bulk.commit_group;\\n\\t"\n'
        f'               "cp.async.bulk.wait_group 0;"\n'
        f'               :: "l"(reinterpret_cast<unsigned long long>(map)), "r"(src), {inputs} : "memory");\n}}')


def _tile_bytes(op: Operation) -> int:
    return -(-tile_bytes(op.operands[0].type) // 16) * 16


@needs_scratch("tma_load")
def tma_load_scratch_bytes(op: Operation) -> int:
    return _tile_bytes(op) + _MBARRIER_BYTES


@needs_scratch("tma_store")
def tma_store_scratch_bytes(op: Operation) -> int:
    return _tile_bytes(op)


SCRATCH_ALIGNMENT.update({"tma_load": TILE_ALIGNMENT, "tma_store": TILE_ALIGNMENT})


def _check_alignment(em: Emitter, op: Operation) -> None:
    if em.scratch_base % TILE_ALIGNMENT:
        raise CodegenError(f"{op.name} at {op.loc}: its tile at shared offset {em.scratch_base} is not "
                             f"{TILE_ALIGNMENT}-byte aligned")


@emits("tma_load")
def emit_tma_load(em: Emitter, op: Operation) -> None:
    tensormap: tensormap_type = op.operands[0].type
    rank = tensormap.rank
    offsets = [em.name(v) for v in op.operands[1:1 + rank]]
    result = op.results[0]
    element = ctype(result.type)
    nbytes = tile_bytes(tensormap)
    tile_end = _tile_bytes(op)
    _check_alignment(em, op)
    _declare_copies(em, rank)
    name = em.define(result)
    em.barrier()  # earlier users of these bytes are done with them
    em.open()
    em.line(f"{element}* tt_buf = {em.scratch(element, 0, nbytes)};")
    em.line(f"const unsigned tt_bar = tt_shared_address({em.scratch('unsigned long long', tile_end, 8)});")
    em.open("if (threadIdx.x == 0)")
    em.line("tt_mbarrier_init(tt_bar);")
    em.line(f"tt_mbarrier_expect_tx(tt_bar, {nbytes}u);")
    em.line(f"tt_tma_load_{rank}d(tt_shared_address(tt_buf), &{em.name(op.operands[0])}, tt_bar, "
            f"{', '.join(offsets)});")
    em.close()
    em.barrier()  # the mbarrier is initialised before anyone waits on it
    em.line("tt_mbarrier_wait(tt_bar, 0);")
    _read_tile(em, result, name)
    if len(op.operands) > 1 + rank:
        _nan_outside(em, op, name)
    em.barrier()
    em.line("if (threadIdx.x == 0) tt_mbarrier_inval(tt_bar);")
    em.close()


def _read_tile(em: Emitter, value, name: str) -> None:
    """Each register of `value` (named `name`) from the row-major tile `tt_buf`."""
    linear = em.linear(value)
    strides = row_major_strides(tuple(value.type.shape))
    eb = value.type.scalar.itemsize
    width = _vector_width(linear, strides, 0, eb)
    for reg in range(0, em.nregs(value), width):
        coords = [em.coord(linear, d, reg) for d in range(linear.rank)]
        _copy(em, f"{name}[{reg}]", f"tt_buf[{linear_index_expr(coords, strides)}]", width * eb, width == 1)


def _nan_outside(em: Emitter, op: Operation, name: str) -> None:
    """NaN in every register of the loaded block `name` outside the tensor when
    the NaN-padding flag holds (for element types the copy engine cannot fill)."""
    rank = op.operands[0].type.rank
    offsets = op.operands[1:1 + rank]
    shape = op.operands[1 + rank:1 + 2 * rank]
    flag = op.operands[1 + 2 * rank]
    result = op.results[0]
    if element_key(op.operands[0].type) not in SOFTWARE_NAN_FILL:
        raise CodegenError(f"tma_load at {op.loc}: {result.type} needs no software NaN padding")
    linear = em.linear(result)
    inside = " && ".join(
        f"(unsigned)({em.name(offsets[d])} + {em.coord_in_loop(linear, d, 'i')}) < (unsigned){em.name(shape[d])}"
        for d in range(rank))
    em.open(f"if ({em.name(flag)})")
    em.for_registers(em.nregs(result),
                     f"if (!({inside})) {name}[i] = {literal(float('nan'), result.type)};")
    em.close()


@emits("tma_store")
def emit_tma_store(em: Emitter, op: Operation) -> None:
    tensormap: tensormap_type = op.operands[0].type
    rank = tensormap.rank
    value = op.operands[1]
    offsets = [em.name(v) for v in op.operands[2:2 + rank]]
    element = ctype(value.type)
    _check_alignment(em, op)
    _declare_copies(em, rank)
    em.barrier()  # earlier users of these bytes are done with them
    em.open()
    em.line(f"{element}* tt_buf = {em.scratch(element, 0, tile_bytes(tensormap))};")
    linear = em.linear(value)
    strides = row_major_strides(tuple(value.type.shape))
    eb = value.type.scalar.itemsize
    width = _vector_width(linear, strides, 0, eb)
    for reg in _unique_registers(linear):
        if reg % width == 0:
            coords = [em.coord(linear, d, reg) for d in range(linear.rank)]
            _copy(em, f"tt_buf[{linear_index_expr(coords, strides)}]", f"{em.name(value)}[{reg}]", width * eb,
                  width == 1)
    em.line("tt_fence_proxy_async();")  # the copy engine reads what these threads wrote
    em.barrier()
    em.open("if (threadIdx.x == 0)")
    em.line(f"tt_tma_store_{rank}d(&{em.name(op.operands[0])}, tt_shared_address(tt_buf), {', '.join(offsets)});")
    em.close()
    em.close()
