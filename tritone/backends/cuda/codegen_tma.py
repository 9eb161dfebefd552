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
tt_tensormap` (128 bytes, 64-byte aligned), addressed in place, or one the
kernel encodes (`tensormap_create`, for `tl.make_tensor_descriptor`): warp 0
zero-fills 128 bytes of shared scratch, lane 0 writes the fields
(`tensormap.replace`), the warp copies the map to the block's global scratch
memory with `tensormap.cp_fenceproxy` (a release to the tensor-map proxy) and
acquires it there (`fence.proxy.tensormap::generic.acquire`, then an empty bulk
group committed and awaited, which ptxas needs to order the two); after a
barrier, the copies (all issued by thread 0, of warp 0) read that map. The
value of a tensor map in the C++ is its address, `const tt_tensormap*`.
"""

from __future__ import annotations

import itertools
import math

from tritone.ir.core import Operation

from ...ir.layouts import NvmmaSharedLayout
from ...ir.types import tensormap_type
from .codegen_base import (
    SCRATCH,
    SCRATCH_ALIGNMENT,
    CodegenError,
    Emitter,
    emits,
    linear_index_expr,
    needs_scratch,
    row_major_strides,
)
from .codegen_layout import (
    SHARED_ADDRESS,
    _copy,
    _unique_registers,
    _vector_width,
    stmatrix_fits,
    write_by_stmatrix,
)
from .codegen_types import ctype, literal
from .dot.shared import TileGeometry, smem_address
from .dot.shared import tile_bytes as block_bytes
from .tensormap import SOFTWARE_NAN_FILL, SWIZZLES, TENSOR_MAP_BYTES, box_shape, element_key, tile_bytes

# the copy engine writes and reads tiles at 128-byte aligned shared addresses
TILE_ALIGNMENT = 128
# and the 128-byte swizzle repeats every 1024 bytes from a multiple of 1024 (PTX_FACTS 4)
SWIZZLE_ALIGNMENT = 1024
_MBARRIER_BYTES = 16  # 8 used, the scratch granularity kept

_TENSORMAP_STRUCT = "struct __align__(64) tt_tensormap { unsigned long long opaque[16]; };"

# An initialisation is fenced once after the last of a group (`tt_mbarrier_init_fence`): a fence
# after each cost a MEMBAR.ALL.CTA apiece in every block's prologue.
_MBARRIER_HELPERS = r"""__device__ __forceinline__ void tt_mbarrier_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void tt_mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n\t"
               "fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void tt_mbarrier_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void tt_mbarrier_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tt_mbarrier_expect_tx_if(unsigned issue, unsigned bar, unsigned bytes) {
  asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %0, 0;\n\t"
               "@p mbarrier.arrive.expect_tx.shared::cta.b64 _, [%1], %2;\n\t}"
               :: "r"(issue), "r"(bar), "r"(bytes) : "memory");
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


# the kernel parameter of global scratch memory, and the alignment asked of the allocator
GLOBAL_SCRATCH = "tt_global_scratch"
GLOBAL_SCRATCH_ALIGN = 128

# `tensormap.replace`'s element types (the PTX ISA's table; Triton's TMAUtilities.cpp)
_ELEMENT_TYPES = {"fp16": 6, "bf16": 10, "fp32": 7, "fp64": 9}
_INTEGER_TYPES = {(1, True): 0, (1, False): 0, (2, True): 1, (2, False): 1, (4, True): 3, (4, False): 2,
                  (8, True): 5, (8, False): 4}
_FILL_ZERO, _FILL_NAN = 0, 1


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
    em.declare_once(SHARED_ADDRESS)
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
    # one elected thread of each warp whose `issue` holds: ptxas sees a single thread
    # issue the copy, so it moves the operands to uniform registers without a loop
    em.declare_once(
        f"__device__ __forceinline__ void tt_tma_load_{rank}d_elect(unsigned issue, unsigned dst, "
        f"const tt_tensormap* map, unsigned bar, {coords}) {{\n"
        f'  asm volatile("{{\\n\\t.reg .pred p, q;\\n\\t.reg .b32 l;\\n\\tsetp.ne.b32 q, %3, 0;\\n\\t"\n'
        f'               "elect.sync l|p, 0xffffffff;\\n\\tand.pred p, p, q;\\n\\t"\n'
        f'               "@p cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes '
        f'[%0], [%1, {_coordinate_list(rank, 4)}], [%2];\\n\\t}}"\n'
        f'               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(issue), '
        f'{inputs} : "memory");\n}}')
    em.declare_once(
        f"__device__ __forceinline__ void tt_tma_store_{rank}d(const tt_tensormap* map, unsigned src, "
        f"{coords}) {{\n"
        f'  asm volatile("cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group '
        f'[%0, {_coordinate_list(rank, 2)}], [%1];\\n\\t"\n'
        f'               "cp.async.bulk.commit_group;"\n'
        f'               :: "l"(reinterpret_cast<unsigned long long>(map)), "r"(src), {inputs} : "memory");\n}}')


def _tile_bytes(op: Operation) -> int:
    return -(-tile_bytes(op.operands[0].type) // 16) * 16


@needs_scratch("tma_load")
def tma_load_scratch_bytes(op: Operation) -> int:
    return _tile_bytes(op) + _MBARRIER_BYTES


@needs_scratch("tma_store")
def tma_store_scratch_bytes(op: Operation) -> int:
    return _tile_bytes(op)


def _tile_alignment(op: Operation) -> int:
    """A staged tile's alignment: a swizzled one starts where the swizzle pattern does."""
    return SWIZZLE_ALIGNMENT if op.attrs.get("swizzle") else TILE_ALIGNMENT


SCRATCH_ALIGNMENT.update({"tma_load": TILE_ALIGNMENT, "tma_store": _tile_alignment})


def _check_alignment(em: Emitter, op: Operation) -> None:
    if em.scratch_base % _tile_alignment(op):
        raise CodegenError(f"{op.name} at {op.loc}: its tile at shared offset {em.scratch_base} is not "
                             f"{_tile_alignment(op)}-byte aligned")


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
    em.line("tt_mbarrier_init(tt_bar, 1);")
    em.line("tt_mbarrier_init_fence();")
    em.line(f"tt_mbarrier_expect_tx(tt_bar, {nbytes}u);")
    for at, coords in _boxes(tensormap, offsets):
        em.line(f"tt_tma_load_{rank}d(tt_shared_address(tt_buf) + {at}u, {em.name(op.operands[0])}, tt_bar, "
                f"{', '.join(coords)});")
    em.close()
    em.barrier()  # the mbarrier is initialised before anyone waits on it
    em.line("tt_mbarrier_wait(tt_bar, 0);")
    _read_tile(em, result, name, box_shape(tensormap))
    if len(op.operands) > 1 + rank:
        _nan_outside(em, op, name)
    em.barrier()
    em.line("if (threadIdx.x == 0) tt_mbarrier_inval(tt_bar);")
    em.close()


def _boxes(tensormap: tensormap_type, offsets: list[str]) -> list[tuple[int, list[str]]]:
    """(byte offset in the staged tile, coordinates) of each box of a block: one
    box where every dim fits in one, else the grid of boxes, each stored whole
    (row-major) one after the other (`_staging_index`)."""
    shape, box = tuple(tensormap.block.shape), box_shape(tensormap)
    counts = [s // b for s, b in zip(shape, box)]
    box_bytes = math.prod(box) * tensormap.element_ty.itemsize
    copies = []
    for number, index in enumerate(itertools.product(*(range(c) for c in counts))):
        coords = [offset if i == 0 else f"{offset} + {i * b}" for offset, i, b in zip(offsets, index, box)]
        copies.append((number * box_bytes, coords))
    return copies


def _staging_index(coords: list[str], shape: tuple[int, ...], box: tuple[int, ...]) -> str:
    """The element index of `coords` in a block staged as its boxes, each
    row-major, the boxes in row-major order (row-major when one box holds it)."""
    within, which = [], []
    for c, size, b in zip(coords, shape, box):
        if size == b:
            within.append(c)
            which.append("0")
        else:
            within.append(f"(({c}) & {b - 1})")
            which.append(f"(({c}) >> {b.bit_length() - 1})")
    counts = tuple(size // b for size, b in zip(shape, box))
    box_elements = math.prod(box)
    inner = linear_index_expr(within, row_major_strides(box))
    outer = linear_index_expr(which, [stride * box_elements for stride in row_major_strides(counts)])
    return inner if outer == "0" else f"{inner} + {outer}"


def _read_tile(em: Emitter, value, name: str, box: tuple[int, ...]) -> None:
    """Each register of `value` (named `name`) from the staged tile `tt_buf`."""
    linear = em.linear(value)
    shape = tuple(value.type.shape)
    eb = value.type.scalar.itemsize
    width = _vector_width(linear, row_major_strides(box), 0, eb)
    for reg in range(0, em.nregs(value), width):
        coords = [em.coord(linear, d, reg) for d in range(linear.rank)]
        _copy(em, f"{name}[{reg}]", f"tt_buf[{_staging_index(coords, shape, box)}]", width * eb, width == 1)


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
    # the copy engine is done reading what an earlier store staged, and earlier users of
    # these bytes are done with them
    em.line(_WAIT_STAGED_READ)
    em.barrier()
    em.open()
    em.line(f"{element}* tt_buf = {em.scratch(element, 0, tile_bytes(tensormap))};")
    linear = em.linear(value)
    staging = _Staging(op)
    eb = value.type.scalar.itemsize
    if stmatrix_fits(linear, eb, staging.box[-1]):
        write_by_stmatrix(em, linear, em.name(value), staging.index)
    else:
        # byte elements (fp8) in pairs at least: an mma result's thread holds column pairs
        width = _vector_width(linear, row_major_strides(staging.box), 0, eb, least_bytes=2)
        for reg in _unique_registers(linear):
            if reg % width == 0:
                coords = [em.coord(linear, d, reg) for d in range(linear.rank)]
                _copy(em, f"tt_buf[{staging.index(coords)}]", f"{em.name(value)}[{reg}]", width * eb, width == 1)
    em.line("tt_fence_proxy_async();")  # the copy engine reads what these threads wrote
    em.barrier()
    checked = len(op.operands) > 2 + rank
    if checked:
        em.open(f"if ({em.name(op.operands[2 + rank])})")
    em.open("if (threadIdx.x == 0)")
    for at, coords in staging.boxes(offsets):
        em.line(f"tt_tma_store_{rank}d({em.name(op.operands[0])}, tt_shared_address(tt_buf) + {at}u, "
                f"{', '.join(coords)});")
    kept = _staging_kept(em, op)
    if not kept:
        em.line('asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");')
    em.close()
    if checked:
        em.close()
        em.open("else")
        _store_staged_by_threads(em, op, element, staging, offsets)
        em.close()
        if not kept:
            em.barrier()  # the staged bytes are read before other ops reuse them
    em.close()


class _Staging:
    """Where a TMA store stages its block: as the map's boxes, each row-major, one
    after the other (`_boxes`); or, where the store has a `swizzle` (`tma.py`'s
    `_swizzle_stores`), as columns of 128-byte rows, one column after another,
    each row's 16-byte pieces permuted by the copy engine's 128-byte swizzle
    (piece p of row r at p ^ (r % 8)), the box one column of at most 256 rows."""

    def __init__(self, store: Operation):
        tensormap = store.operands[0].type
        self.shape = tuple(tensormap.block.shape)
        self.itemsize = tensormap.element_ty.itemsize
        self.swizzle = int(store.attrs.get("swizzle", 0))
        self.tensormap = tensormap
        self.box = tuple(store.attrs["box"]) if self.swizzle else box_shape(tensormap)
        if self.swizzle:
            # wgmma's 128-byte swizzled tile layout is the copy engine's; counted in elements
            layout = NvmmaSharedLayout(16 // self.itemsize, 1, 8, (1, 0))
            self.tile = TileGeometry(layout, self.shape, 1)

    def index(self, coords: list[str]) -> str:
        """The element index in the staged tile of the element at `coords`."""
        if not self.swizzle:
            return _staging_index(coords, self.shape, self.box)
        return self.tile.general_offset(coords)

    def boxes(self, offsets: list[str]) -> list[tuple[int, list[str]]]:
        """(byte offset in the staged tile, coordinates) of each box the store copies."""
        if not self.swizzle:
            return _boxes(self.tensormap, offsets)
        (rows, width), (box_rows, span) = self.shape, self.box
        copies = []
        for column in range(0, width, span):
            for row in range(0, rows, box_rows):
                coords = [f"{offsets[0]} + {row}" if row else offsets[0],
                          f"{offsets[1]} + {column}" if column else offsets[1]]
                copies.append(((column * rows + row * span) * self.itemsize, coords))
        return copies

# Every thread waits (a no-op in those that issued no store): a branch around thread
# 0's wait would split the block where the converted accumulator is packed for its
# stmatrix, and ptxas then serializes the kernel's wgmmas (info C7514, "non wgmma
# instructions reading accumulator registers"): tutorial 09's 128x128x128 TMA
# matmul lost a fifth of its speed.
_WAIT_STAGED_READ = 'asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");'


def _staging_kept(em: Emitter, store: Operation) -> bool:
    """Whether no other op of the kernel uses the shared bytes `store` stages its
    tile in, other TMA stores aside (each waits for the copy engine's reads before it
    writes them: tutorial 09's two halves of a subtiled epilogue): the copy engine's
    read of them is then waited for only when they are written again (the next store,
    as Triton defers its store wait) or the kernel returns (`wait_for_staged_stores`),
    not right after the copy is issued, and no barrier follows it."""
    kept = em.memo.setdefault("tma_staging_kept", {})
    if id(store) not in kept:
        start = int(store.attrs.get("scratch_offset", 0))
        end = start + tma_store_scratch_bytes(store)
        alone = True
        for op in em.fn.walk():
            if op.name == "tma_store":
                continue
            if "scratch_offset" in op.attrs and op.name in SCRATCH:
                first = int(op.attrs["scratch_offset"])
                last = first + SCRATCH[op.name](op)
            elif "offset" in op.attrs and op.results and op.results[0].type.is_block():
                first = int(op.attrs["offset"])
                last = first + block_bytes(op.results[0].type)
            else:
                continue
            if first < end and start < last:
                alone = False
                break
        kept[id(store)] = alone
    return kept[id(store)]


def wait_for_staged_stores(em: Emitter) -> None:
    """Before the kernel returns: the copy engine is done reading the tiles that TMA
    stores staged and did not wait for (`_staging_kept`)."""
    if any(op.name == "tma_store" and _staging_kept(em, op) for op in em.fn.walk()):
        em.line(_WAIT_STAGED_READ)


def _store_staged_by_threads(em: Emitter, op: Operation, element: str, staging: _Staging,
                             offsets: list[str]) -> None:
    """The staged tile written to the tensor by the threads, one element each at a
    time, those outside the tensor dropped (where the copy engine would fault)."""
    shape = staging.shape
    rank = len(shape)
    base = em.name(op.operands[3 + rank])
    sizes = [em.name(v) for v in op.operands[4 + rank:4 + 2 * rank]]
    strides = [em.name(v) for v in op.operands[4 + 2 * rank:4 + 3 * rank]]
    em.open(f"for (int tt_e = threadIdx.x; tt_e < {math.prod(shape)}; tt_e += {em.threads})")
    coords, inside, address = [], [], []
    for d in range(rank):
        below = math.prod(shape[d + 1:])
        coord = f"((tt_e / {below}) % {shape[d]})" if d else f"(tt_e / {below})"
        coords.append(coord)
        em.line(f"const long long tt_g{d} = (long long)({offsets[d]}) + {coord};")
        inside.append(f"tt_g{d} >= 0 && tt_g{d} < (long long)({sizes[d]})")
        address.append(f"tt_g{d} * (long long)({strides[d]})")
    em.line(f"if ({' && '.join(inside)}) reinterpret_cast<{element}*>({base})[{' + '.join(address)}] = "
            f"tt_buf[{staging.index(coords)}];")
    em.close()


@needs_scratch("tensormap_create")
def tensormap_create_scratch_bytes(op: Operation) -> int:
    return TENSOR_MAP_BYTES


SCRATCH_ALIGNMENT["tensormap_create"] = TENSOR_MAP_BYTES


def _define_scratch_map(em: Emitter, op: Operation) -> str:
    """`const tt_tensormap*` to the map at the op's `global_offset` in this block's global scratch."""
    em.declare_once(_TENSORMAP_STRUCT)
    name = em.new_name(op.results[0], "map")
    size = int(em.fn.attrs["global_scratch_size"])
    block_index = "(unsigned long long)(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z))"
    em.line(f"const tt_tensormap* {name} = reinterpret_cast<const tt_tensormap*>({GLOBAL_SCRATCH} + "
            f"{block_index} * {size}u + {int(op.attrs['global_offset'])}u);")
    return name


@emits("tensormap_at")
def emit_tensormap_at(em: Emitter, op: Operation) -> None:
    _define_scratch_map(em, op)


def _element_type_code(tensormap: tensormap_type) -> int:
    key = element_key(tensormap)
    if key in _ELEMENT_TYPES:
        return _ELEMENT_TYPES[key]
    element = tensormap.element_ty
    return _INTEGER_TYPES[(element.itemsize, element.is_int_signed())]


def _replace(field: str, width: int, operands: str, inputs: str = "") -> str:
    """One `tensormap.replace` of the map in shared memory at `tt_map_s`."""
    return (f'asm volatile("tensormap.replace.tile.{field}.shared::cta.b1024.b{width} [%0], {operands};" '
            f':: "r"(tt_map_s){inputs} : "memory");')


@emits("tensormap_create")
def emit_tensormap_create(em: Emitter, op: Operation) -> None:
    tensormap: tensormap_type = op.results[0].type
    rank = tensormap.rank
    base = em.name(op.operands[0])
    shape = [em.name(v) for v in op.operands[1:1 + rank]]
    strides = [em.name(v) for v in op.operands[1 + rank:]]
    block = tuple(op.attrs.get("box") or box_shape(tensormap))
    itemsize = tensormap.element_ty.itemsize
    fill = _FILL_NAN if op.attrs["padding"] == "nan" and element_key(tensormap) not in SOFTWARE_NAN_FILL \
        else _FILL_ZERO
    if em.scratch_base % TENSOR_MAP_BYTES:
        raise CodegenError(f"tensormap_create at {op.loc}: its shared bytes at offset {em.scratch_base} are not "
                           f"{TENSOR_MAP_BYTES}-byte aligned")
    em.declare_once(_TENSORMAP_STRUCT)
    em.declare_once(SHARED_ADDRESS)
    em.declare_once(_MBARRIER_HELPERS)
    em.memo["arch_suffix"] = "a"  # tensormap.replace is an sm_90a instruction
    name = _define_scratch_map(em, op)
    em.barrier()  # earlier users of the shared bytes are done with them
    em.open()
    em.line(f"unsigned* tt_map = {em.scratch('unsigned', 0, TENSOR_MAP_BYTES)};")
    em.line("const unsigned tt_map_s = tt_shared_address(tt_map);")
    em.open("if (tt_warp == 0)")
    em.line("tt_map[tt_lane] = 0u;")
    em.line("__syncwarp();")
    em.open("if (tt_lane == 0)")
    em.line(_replace("global_address", 64, "%1", f', "l"(reinterpret_cast<unsigned long long>({base}))'))
    em.line(_replace("rank", 32, str(rank - 1)))
    # ordinals count dims innermost first
    for d in range(rank):
        em.line(_replace("box_dim", 32, f"{d}, %1", f', "r"({block[rank - 1 - d]})'))
    for d in range(rank):
        em.line(_replace("global_dim", 32, f"{d}, %1", f', "r"({shape[rank - 1 - d]})'))
    for d in range(rank - 1):
        stride = f"(unsigned long long)({strides[rank - 2 - d]}) * {itemsize}ull"
        em.line(f"unsigned long long tt_stride{d} = {stride};")
        # PTX ISA 8.5 and older (CUDA 12.6 and older) read the stride in 16-byte units
        em.lines.append("#if __CUDACC_VER_MAJOR__ < 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ <= 6)")
        em.line(f"tt_stride{d} >>= 4;")
        em.lines.append("#endif")
        em.line(_replace("global_stride", 64, f"{d}, %1", f', "l"(tt_stride{d})'))
    for d in range(rank):
        em.line(_replace("element_stride", 32, f"{d}, %1", ', "r"(1)'))
    em.line(_replace("elemtype", 32, str(_element_type_code(tensormap))))
    em.line(_replace("interleave_layout", 32, "0"))
    em.line(_replace("swizzle_mode", 32, str(int(SWIZZLES[int(op.attrs.get("swizzle", 0))]))))
    em.line(_replace("fill_mode", 32, str(fill)))
    em.close()
    em.line("__syncwarp();")
    em.line('asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned '
            f'[%0], [%1], {TENSOR_MAP_BYTES};" :: "l"(reinterpret_cast<unsigned long long>({name})), '
            '"r"(tt_map_s) : "memory");')
    em.line(f'asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], {TENSOR_MAP_BYTES};\\n\\t"')
    em.line('             "cp.async.bulk.commit_group;\\n\\tcp.async.bulk.wait_group.read 0;" '
            f':: "l"(reinterpret_cast<unsigned long long>({name})) : "memory");')
    em.close()
    em.close()
    em.barrier()  # the map is in place before thread 0 copies with it, and the shared bytes free


# -- the software pipeline's copies (`pipeline.py`) ------------------------------------------------

def _mbarrier(em: Emitter, barriers, slot: str) -> str:
    return f"{smem_address(em)} + {em.name(barriers)} + (unsigned)({slot}) * 8u"


@emits("mbarrier_init")
def emit_mbarrier_init(em: Emitter, op: Operation) -> None:
    barriers = op.operands[0]
    em.declare_once(SHARED_ADDRESS)
    em.declare_once(_MBARRIER_HELPERS)
    count = int(op.attrs.get("count", 1))
    em.open(f"if ({em.leader})")
    for stage in range(barriers.type.shape[0]):
        em.line(f"tt_mbarrier_init({_mbarrier(em, barriers, str(stage))}, {count});")
    em.line("tt_mbarrier_init_fence();")
    em.close()
    em.barrier()  # initialised before any thread waits on them


@emits("mbarrier_arrive")
def emit_mbarrier_arrive(em: Emitter, op: Operation) -> None:
    barriers, slot, in_range = op.operands
    em.declare_once(SHARED_ADDRESS)
    em.declare_once(_MBARRIER_HELPERS)
    em.line(f"tt_mbarrier_expect_tx_if({em.leader} && {em.name(in_range)}, "
            f"{_mbarrier(em, barriers, em.name(slot))}, {int(op.attrs['bytes'])}u);")


@emits("mbarrier_wait")
def emit_mbarrier_wait(em: Emitter, op: Operation) -> None:
    barriers, slot, phase = op.operands
    em.declare_once(SHARED_ADDRESS)
    em.declare_once(_MBARRIER_HELPERS)
    em.line(f"tt_mbarrier_wait({_mbarrier(em, barriers, em.name(slot))}, {em.name(phase)});")


@emits("mbarrier_inval")
def emit_mbarrier_inval(em: Emitter, op: Operation) -> None:
    barriers = op.operands[0]
    em.barrier()  # every thread is past its last wait
    em.open(f"if ({em.leader})")
    for stage in range(barriers.type.shape[0]):
        em.line(f"tt_mbarrier_inval({_mbarrier(em, barriers, str(stage))});")
    em.close()
    em.barrier()  # the bytes may serve other uses


@emits("tma_copy")
def emit_tma_copy(em: Emitter, op: Operation) -> None:
    """The copies of one tile of stage `slot` of `buffer` (an `NvmmaSharedLayout`):
    one box per swizzle column and 256 rows, at the column's place in the tile."""
    buffer, slot, barriers, tensormap = op.operands[:4]
    rank = tensormap.type.rank
    offsets = [em.name(v) for v in op.operands[4:4 + rank]]
    in_range = em.name(op.operands[4 + rank])
    box_rows, box_columns = op.attrs["box"]
    rows, width = buffer.type.shape[1:]
    eb = buffer.type.scalar.itemsize
    stage_bytes = rows * width * eb
    _declare_copies(em, rank)
    # predicated, not branched around: every thread runs the copy instruction's
    # operands through uniform registers, as it needs them, and thread 0 issues it
    em.open()
    em.line(f"const unsigned tt_stage = {smem_address(em)} + {em.name(buffer)} + (unsigned)({em.name(slot)}) * "
            f"{stage_bytes}u;")
    em.line(f"const unsigned tt_bar = {_mbarrier(em, barriers, em.name(slot))};")
    # box b (column-major: b // row_boxes is its column) from warp b of the threads, one
    # elected lane each: one copy instruction serves every warp, as many at once as there
    # are warps; a tile of more boxes takes more rounds
    row_boxes = -(-rows // box_rows)
    boxes = row_boxes * -(-width // box_columns)
    warps = em.threads // 32
    if boxes == 1:
        em.line(f"tt_tma_load_{rank}d_elect(tt_warp == {em.first_warp} && {in_range}, tt_stage, "
                f"{em.name(tensormap)}, tt_bar, {offsets[0]}, {offsets[1]});")
        em.close()
        return
    for first in range(0, boxes, warps):
        # warps before the first wrap around to large unsigned boxes and issue nothing
        shift = em.first_warp - first
        box = ("(unsigned)tt_warp" if shift == 0 else f"(unsigned)(tt_warp - {shift})" if shift > 0
               else f"(unsigned)(tt_warp + {-shift})")
        issue = f"{box} < {min(boxes, first + warps)}u"
        if row_boxes == 1:
            row, column = "0", f"{box} * {box_columns}"
            at = f"{box} * {rows * box_columns * eb}u"
        else:
            row, column = f"{box} % {row_boxes}u * {box_rows}", f"{box} / {row_boxes}u * {box_columns}"
            at = (f"({box} / {row_boxes}u * {rows * box_columns * eb}u + "
                  f"{box} % {row_boxes}u * {box_rows * box_columns * eb}u)")
        em.line(f"tt_tma_load_{rank}d_elect({issue} && {in_range}, tt_stage + {at}, {em.name(tensormap)}, tt_bar, "
                f"{offsets[0]}{'' if row == '0' else f' + (int)({row})'}, {offsets[1]} + (int)({column}));")
    em.close()


# -- a warp-specialized loop (`warp_specialize.py`) ------------------------------------------------

# the named barriers of a specialized kernel: 0 is the whole block's (__syncthreads)
_CONSUMER_BARRIER, _JOIN_BARRIER = 1, 2


@emits("warp_roles")
def emit_warp_roles(em: Emitter, op: Operation) -> None:
    """The producer warp (warp `num_warps`) runs the region and returns, telling
    the consumers at the join barrier; the code after it is the consumer warps'."""
    consumers = 32 * int(op.attrs["num_warps"])
    em.open(f"if (tt_warp == {consumers // 32})")
    em.first_warp, em.block_sync, em.threads = consumers // 32, "__syncwarp();", 32
    em.shared_accesses = None
    em.terminators.append(lambda names: None)
    try:
        em.emit_region(op.regions[0])
    finally:
        em.terminators.pop()
    em.line(f'asm volatile("bar.arrive {_JOIN_BARRIER}, {consumers + 32};" ::: "memory");')
    em.line("return;")
    em.close()
    em.first_warp, em.threads = 0, consumers
    em.block_sync = f'asm volatile("bar.sync {_CONSUMER_BARRIER}, {consumers};" ::: "memory");'
    em.shared_accesses = None


@emits("warp_join")
def emit_warp_join(em: Emitter, op: Operation) -> None:
    consumers = 32 * int(op.attrs["num_warps"])
    em.line(f'asm volatile("bar.sync {_JOIN_BARRIER}, {consumers + 32};" ::: "memory");')


@emits("mbarrier_release")
def emit_mbarrier_release(em: Emitter, op: Operation) -> None:
    """Each warp, all its threads done with the slot, arrives on its mbarrier once."""
    barriers, slot = op.operands
    em.declare_once(SHARED_ADDRESS)
    em.declare_once(_MBARRIER_HELPERS)
    em.line("__syncwarp();")
    em.line(f"if (tt_lane == 0) tt_mbarrier_arrive({_mbarrier(em, barriers, em.name(slot))});")
