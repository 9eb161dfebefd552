"""Hopper's wgmma dot path without a GPU: the shared tile layout is the hardware's
swizzle, the C++ tile addresses agree with the layout, the dot implementation is
chosen per target, dtype and warp count, and a pipelined K loop leaves its dots in
flight (a third stage, a `dot_wait` after the loop) only where that is safe."""

from __future__ import annotations

import itertools
import re

import pytest
from test_dot_compile import (
    ATTENTION_SIG,
    MATMUL_SIG,
    attention_kernel,
    dot_kernel,
    ir_module,
    matmul_constexprs,
    matmul_kernel,
)

import tritone.language as tl
from tritone.backends.cuda.dot.shared import ThreadPart, TileGeometry, split_offset
from tritone.backends.cuda.dot.wgmma import nvmma_layout
from tritone.backends.cuda.lowering import generate_cuda
from tritone.ir.layouts import NvmmaSharedLayout, SwizzledSharedLayout, parse_layout


def hardware_swizzle(byte: int, span: int) -> int:
    """The address the tensor cores read for a canonical row-major tile with rows of
    `span` bytes: 16-byte chunk bits [4, 4 + log2(span/16)) XOR the address bits from 7 up
    (PTX_FACTS 4)."""
    mask = span // 16 - 1
    return byte ^ (((byte >> 7) & mask) << 4)


@pytest.mark.parametrize("elem_bytes", [2, 4, 1])
@pytest.mark.parametrize("span", [128, 64, 32])
def test_tile_layout_is_the_hardware_swizzle(span, elem_bytes):
    width = span // elem_bytes
    layout = nvmma_layout((32, width), elem_bytes, 1)
    for r, c in itertools.product(range(32), range(width)):
        byte = r * span + c * elem_bytes
        assert layout.offset((32, width), (r, c)) * elem_bytes == hardware_swizzle(byte, span)


def test_wide_tiles_are_column_blocks_of_one_span():
    layout = nvmma_layout((16, 256), 2, 1)  # 512-byte rows: four 128-byte column blocks
    assert layout == NvmmaSharedLayout(8, 1, 8, (1, 0))
    narrow = SwizzledSharedLayout(8, 1, 8, (1, 0))
    offsets = set()
    for r, c in itertools.product(range(16), range(256)):
        off = layout.offset((16, 256), (r, c))
        assert off == (c // 64) * 16 * 64 + narrow.offset((16, 64), (r, c % 64))
        offsets.add(off)
    assert offsets == set(range(16 * 256))
    assert parse_layout(str(layout)) == layout


def _eval(expr: str, names: dict) -> int:
    return eval(expr, {}, names)  # the C++ offset expressions use Python's integer operators


@pytest.mark.parametrize("shape, contiguous", [((64, 256), 1), ((128, 64), 0), ((32, 16), 1), ((16, 512), 1)])
def test_cpp_tile_addresses_agree_with_the_layout(shape, contiguous):
    geom = TileGeometry(nvmma_layout(shape, 2, contiguous), shape, 2)
    names = ("r", "c") if contiguous == 1 else ("c", "r")
    general = geom.general_offset(list(names))
    for coords in itertools.product(*(range(0, s, 3) for s in shape)):
        assert _eval(general, dict(zip(names, coords))) == geom.byte_offset(coords)

    class Prologue:  # what split_offset needs of an emitter
        memo: dict = {}
        prologue: list = []

    em = Prologue()
    inner = geom.inner
    thread = [ThreadPart("0", 0), ThreadPart("0", 0)]
    thread[inner] = ThreadPart("t", 7)  # a thread's first 8 elements of a chunk start
    thread[1 - inner] = ThreadPart("u", 3)
    for const in [(0, 0), (8, 64), (16, 128), (8, 8)]:
        const = tuple(min(c, s - 8) // 8 * 8 for c, s in zip(const, shape))
        split = split_offset(em, geom, thread, const)
        if split is None:
            continue
        values = {}
        for line in em.prologue:
            name, expr = line.removeprefix("const unsigned ").rstrip(";").split(" = ", 1)
            values[name] = _eval(expr, {**values, "t": 0, "u": 1})
        coords = [c for c in const]
        coords[1 - inner] += 1
        assert _eval(split, {**values, "t": 0, "u": 1}) == geom.byte_offset(tuple(coords))


def _values(bits: int) -> list[int]:
    """Every value made of some of `bits`."""
    out = [0]
    for b in range(bits.bit_length()):
        if bits >> b & 1:
            out += [v | 1 << b for v in out]
    return out


@pytest.mark.parametrize("shape, contiguous, elem_bytes, col_bits, row_bits", [
    ((64, 256), 1, 2, 0b11111000, 0b111),    # B of a 128x256x64 matmul: a thread's columns reach 4 blocks
    ((128, 64), 0, 2, 0b1111000, 0b111),     # attention's K^T tile at head dim 128 (dim 0 contiguous)
    ((64, 128), 1, 2, 0b1111000, 0b1111),    # its V tile
    ((128, 128), 1, 1, 0b1110000, 0b111),    # fp8, 128-byte rows
    ((32, 64), 1, 2, 0b111000, 0b11),        # one block: the split form as before
    ((16, 512), 1, 2, 0b111111000, 0b1),
])
def test_split_tile_addresses_are_a_thread_value_plus_a_constant(shape, contiguous, elem_bytes, col_bits, row_bits):
    """The copies of one thread differ by constants (one address register a tile in
    the loop) also where its columns reach past one column block; every thread's
    every element lands where the layout says."""
    geom = TileGeometry(nvmma_layout(shape, elem_bytes, contiguous), shape, elem_bytes)
    inner = geom.inner
    thread = [ThreadPart("0", 0), ThreadPart("0", 0)]
    thread[inner] = ThreadPart("t", col_bits)
    thread[1 - inner] = ThreadPart("u", row_bits)

    class Prologue:  # what split_offset needs of an emitter
        memo: dict = {}
        prologue: list = []

    em = Prologue()
    row_step = max(row_bits + 1, geom.layout.per_phase * geom.layout.max_phase)  # whole swizzle periods
    consts = []
    for row in range(0, shape[1 - inner], row_step):
        const = [0, 0]
        const[1 - inner] = row
        consts.append(tuple(const))
    splits = [split_offset(em, geom, thread, const) for const in consts]
    assert None not in splits
    assert len({s.split(" + ")[0] for s in splits}) == 1  # one per-thread value, constants added
    for t, u in itertools.product(_values(col_bits), _values(row_bits)):
        values = {"t": t, "u": u}
        for line in em.prologue:
            name, expr = line.removeprefix("const unsigned ").rstrip(";").split(" = ", 1)
            values[name] = _eval(expr, values)
        for const, split in zip(consts, splits):
            coords = list(const)
            coords[inner] += t
            coords[1 - inner] += u
            assert _eval(split, values) == geom.byte_offset(tuple(coords)), (t, u, const)


def test_a_constant_column_sharing_a_thread_bit_is_not_split():
    """A carry from the constant column into the thread's could cross a column block."""
    geom = TileGeometry(nvmma_layout((64, 256), 2, 1), (64, 256), 2)

    class Prologue:
        memo: dict = {}
        prologue: list = []

    thread = [ThreadPart("u", 0b111), ThreadPart("t", 0b11111000)]
    assert split_offset(Prologue(), geom, thread, (0, 64)) is None
    assert split_offset(Prologue(), geom, [ThreadPart("u", 0b111), ThreadPart("t", 0b111000)], (0, 64)) is not None


def _dot_implementations(module) -> list[str]:
    return [op.attrs.get("implementation") for op in module.walk() if op.name == "dot"]


DOT_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "stride_am": "i32", "stride_ak": "i32",
           "stride_bk": "i32", "stride_bn": "i32"}


@pytest.mark.parametrize("arch, m, n, k, num_warps, dtype, expected", [
    (90, 128, 128, 64, 4, "fp16", "wgmma"),
    (90, 64, 32, 16, 4, "bf16", "wgmma"),
    (90, 128, 64, 64, 4, "fp8e4nv", "wgmma"),
    (90, 128, 64, 32, 4, "fp8e5", "wgmma"),
    (90, 128, 128, 64, 8, "i8", "wgmma"),
    (90, 64, 64, 32, 8, "fp16", "mma_v2"),   # 8 warps need 128 rows
    (90, 64, 8, 32, 4, "fp16", "mma_v2"),    # N below one 16-element swizzle row
    (90, 32, 64, 32, 4, "fp16", "mma_v2"),   # M below a warpgroup's 64 rows
    (90, 64, 64, 32, 4, "fp32", "mma_v2"),   # tf32 with b contiguous along N (below)
    (80, 128, 128, 64, 4, "fp16", "mma_v2"),
    (120, 128, 128, 64, 4, "fp16", "mma_v2"),
])
def test_the_dot_implementation_per_target(arch, m, n, k, num_warps, dtype, expected):
    sig = {**DOT_SIG, "a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*i32" if dtype == "i8" else "*fp32"}
    acc = tl.int32 if dtype == "i8" else tl.float32
    consts = {"M": m, "N": n, "K": k, "TRANS_A": False, "TRANS_B": False, "ACC": acc, "PRECISION": "tf32"}
    module = ir_module(dot_kernel, sig, consts, arch, num_warps=num_warps)
    source, _, metadata = generate_cuda(module, arch, {"num_warps": num_warps})
    assert _dot_implementations(module) == [expected]
    assert ("wgmma.mma_async" in source) == (expected == "wgmma")
    assert metadata.get("arch_suffix", "") == ("a" if expected == "wgmma" else "")


@pytest.mark.parametrize("trans_a, trans_b, precision, expected", [
    (False, True, "tf32", "wgmma"),     # a's rows and b's columns contiguous along K: both tiles K-major
    (False, False, "tf32", "mma_v2"),   # b contiguous along N: wgmma's K-major tile would take 4-byte copies
    (True, True, "tf32", "mma_v2"),     # a contiguous along M
    (False, True, "tf32x3", "mma_v2"),  # three products a dot: mma.sync's
    (False, True, "ieee", "fma"),
])
def test_tf32_dots_take_wgmma_where_both_operands_load_along_k(trans_a, trans_b, precision, expected):
    sig = {**DOT_SIG, "a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
    consts = {"M": 64, "N": 64, "K": 32, "TRANS_A": trans_a, "TRANS_B": trans_b, "ACC": tl.float32,
              "PRECISION": precision}
    module = ir_module(dot_kernel, sig, consts, 90, num_warps=4)
    source, _, metadata = generate_cuda(module, 90, {"num_warps": 4})
    assert _dot_implementations(module) == [expected]
    assert ("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32" in source) == (expected == "wgmma")
    if expected == "wgmma":
        # k8 steps with scale flags but no transpose flags (tf32 tiles are K-major)
        assert re.search(r"m64n64k8\.f32\.tf32\.tf32 \{[^}]*\}, %\d+, %\d+, p[01], 1, 1;", source)
        assert metadata.get("arch_suffix") == "a"


def _loop(module):
    return next(op for op in module.walk() if op.name == "for")


def test_a_pipelined_accumulation_stays_in_flight():
    consts = matmul_constexprs(128, 128, 64, loop_stages=3)
    module = ir_module(matmul_kernel, MATMUL_SIG, consts, 90, num_warps=4)
    source, _, _ = generate_cuda(module, 90, {"num_warps": 4})
    loop = _loop(module)
    dots = [op for op in loop.regions[0].ops if op.name == "dot"]
    assert [d.attrs.get("in_flight") for d in dots] == [1]
    after = loop.parent.ops[loop.parent.ops.index(loop) + 1:]
    assert [op.name for op in after[:2]] == ["dot_wait", "async_wait"]
    buffers = [op.results[0].type.shape[0] for op in module.walk() if op.name == "local_buffer"]
    assert buffers == [3, 3]
    assert source.count("wgmma.wait_group.sync.aligned 1;") == 1
    assert source.count("wgmma.wait_group.sync.aligned 0;") == 1


def test_attention_keeps_p_at_v_in_flight_into_the_next_trip():
    # q @ k waits for its result (the softmax reads it); p @ v, whose accumulator is
    # rescaled each trip, runs on into the next trip (as Triton's): the rescaling waits
    # for it first and writes the carried registers in place, so nothing copies them at
    # the loop's end while the tensor cores still write them; one more stage of k and
    # v, so the trip's copies go where the trip before read
    consts = {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False}
    module = ir_module(attention_kernel, ATTENTION_SIG, consts, 90, num_warps=8)
    source, _, _ = generate_cuda(module, 90, {"num_warps": 8})
    assert _dot_implementations(module) == ["wgmma", "wgmma"]
    dots = [op for op in module.walk() if op.name == "dot"]
    assert [bool(op.attrs.get("in_flight")) for op in dots] == [False, True]
    (scale,) = [op for op in module.walk() if "in_place" in op.attrs]
    assert scale.results[0] is dots[1].operands[2] and scale.name == "mul"
    body = dots[1].parent
    waits = [op for op in body.ops if op.name == "dot_wait"]
    assert len(waits) == 1 and body.ops.index(waits[0]) == body.ops.index(scale) - 1
    buffers = [op.results[0].type.shape[0] for op in module.walk() if op.name == "local_buffer"]
    assert buffers == [3, 3]
    # q @ k's wait (for every group: the trip before's p @ v too) is the trip's only one:
    # the rescaling's and p @ v's own would wait for nothing more (as in Triton's loop,
    # where a wait left before the barrier of the next copies cost that barrier time);
    # the loop's last p @ v is waited for after it
    assert source.count("wgmma.wait_group.sync.aligned 1;") == 0
    assert source.count("wgmma.wait_group.sync.aligned 0;") == 2
    loop = source[source.index("for (int iv"):]
    commits = [m.start() for m in re.finditer(r"wgmma\.commit_group", loop)]
    waits = [m.start() for m in re.finditer(r"wgmma\.wait_group", loop)]
    assert len(commits) == 2 and commits[0] < waits[0] < commits[1] < waits[1]
    assert loop[commits[1]:waits[1]].count("\n  }\n") == 1  # the loop's end between
    # p @ v takes p from registers: four fragment registers, no descriptor for a
    # (v is contiguous along N: MN-major, transposed)
    assert re.search(r"m64n64k16\.f32\.f16\.f16 \{%0[^}]*\}, \{%32, %33, %34, %35\}, %36, p[01], 1, 1, 1;", source)


def _wgmma_statements(source: str) -> list[tuple[str, list[str], list[str]]]:
    """(asm text, output operands, input operands) of each asm statement issuing wgmma."""
    found = []
    for line in source.splitlines():
        if "wgmma.mma_async" in line:
            text, rest = line.split('" : ', 1)
            assert rest.endswith(");")
            outputs, inputs = rest[:-2].split(" : ")
            found.append((text, outputs.split(", "), inputs.split(", ")))
    return found


def _check_chained_steps(text: str, outputs: list[str], inputs: list[str], steps: int) -> set[str]:
    """The steps of one statement each read their own a and b descriptors, after the
    outputs; their scale-d predicates are set from inputs holding 0 or 1. The predicates."""
    found = re.findall(r"wgmma\.mma_async[^;]*\}, %(\d+), %(\d+), (p[01])[,;]", text)
    assert len(found) == steps
    first = len(outputs)
    assert [(int(a), int(b)) for a, b, _ in found] == [(first + 2 * i, first + 2 * i + 1) for i in range(steps)]
    for predicate in {p for _, _, p in found}:
        index = int(re.search(rf"setp\.ne\.b32 {predicate}, %(\d+), 0;", text)[1])
        assert inputs[index - first] == f'"r"({predicate[1]})'
    return {p for _, _, p in found}


def test_the_k_steps_of_an_accumulator_block_are_one_asm_statement():
    # BK=64: four m64n128k16 steps chained on one block of 64 registers, whose operand
    # list is written once; a pipelined accumulator: every step adds (p1)
    consts = matmul_constexprs(128, 128, 64, loop_stages=3)
    module = ir_module(matmul_kernel, MATMUL_SIG, consts, 90, num_warps=4)
    source, _, _ = generate_cuda(module, 90, {"num_warps": 4})
    statements = _wgmma_statements(source)
    assert statements
    for text, outputs, inputs in statements:
        assert len(outputs) == 64 and all(o.startswith('"+f"') for o in outputs)
        assert _check_chained_steps(text, outputs, inputs, 4) == {"p1"}
    # q @ k into a zeroed accumulator: its first step ignores the accumulator (p0)
    module = ir_module(attention_kernel, ATTENTION_SIG, {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64,
                                                         "CAUSAL": False}, 90, num_warps=8)
    source, _, _ = generate_cuda(module, 90, {"num_warps": 8})
    qk = [s for s in _wgmma_statements(source) if not any("tt_afrag" in i for i in s[2])]  # a from shared
    assert qk and all(_check_chained_steps(*statement, 4) == {"p0", "p1"} for statement in qk)


def test_a_tile_written_from_registers_is_fenced_once_where_it_is_written():
    # attention's q tile is written before the K loop: the async-proxy fence follows its
    # stores there, and neither dot in the loop fences (k and v come by cp.async; p @ v
    # takes p from registers), as upstream's SASS has one fence, before the loop
    consts = {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False}
    module = ir_module(attention_kernel, ATTENTION_SIG, consts, 90, num_warps=8)
    source, _, _ = generate_cuda(module, 90, {"num_warps": 8})
    fence = 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");'
    loop_start = source.index("for (int iv")
    assert source.count(fence) == 1 and source.index(fence) < loop_start
    before = source[:source.index(fence)]
    assert before.rindex("st.shared") > before.rfind("__syncthreads()"), "right after q's stores"
    # a tile written inside the loop (not pipelined: one stage) is fenced in every trip,
    # after its stores and before the barrier ahead of its dot
    consts = matmul_constexprs(128, 128, 64, loop_stages=1)
    module = ir_module(matmul_kernel, MATMUL_SIG, consts, 90, num_warps=4)
    source, _, _ = generate_cuda(module, 90, {"num_warps": 4})
    body = source[source.index("for (int iv"):]
    body = body[:body.index("wgmma.mma_async")]
    assert body.count(fence) == 2  # a and b
    last_store = body.rindex("st.shared")
    assert last_store < body.rindex(fence) < body.rindex("__syncthreads()")


@pytest.mark.parametrize("b_contiguous", [0, 1])
def test_fp8_tiles_are_k_major_and_pipelined(b_contiguous):
    """fp8 wgmma has no transposed operands: both tiles are K-major whatever the
    loads' order. A K-major b is pipelined (the loads' `other=0.0`, converted to fp8,
    is still a zero); an N-major one goes through registers."""
    sig = {**MATMUL_SIG, "a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv"}
    consts = matmul_constexprs(128, 256, 64, loop_stages=3)
    if b_contiguous == 0:
        consts.pop("stride_bn")
        consts["stride_bk"] = 1
        sig.pop("stride_bk")
        sig["stride_bn"] = "i32"
    module = ir_module(matmul_kernel, sig, consts, 90, num_warps=8)
    source, _, metadata = generate_cuda(module, 90, {"num_warps": 8})
    dot = next(op for op in module.walk() if op.name == "dot")
    assert dot.attrs["implementation"] == "wgmma"
    assert [v.type.layout.order for v in dot.operands[:2]] == [(1, 0), (0, 1)]
    assert "m64n256k32.f32.e4m3.e4m3" in source
    pipelined = metadata["shared"] == 3 * (128 * 64 + 64 * 256)
    assert pipelined == (b_contiguous == 0)


@pytest.mark.parametrize("arch, stmatrix", [(90, 8), (80, 0)])
def test_an_fp8_result_reaches_its_stores_through_stmatrix_on_sm90(arch, stmatrix):
    # An fp8 result holds two bytes side by side and two more 8 columns on in each
    # 16-byte chunk of a row: one 4-byte word a lane of an 8x8 matrix of 16-bit
    # elements, written by stmatrix (8 a thread for 128x256 over 8 warps, where 64
    # 2-byte stores went), the chunk's columns in the order codegen_layout._PAIRED_CHUNK;
    # the stores' threads read whole chunks and put the columns back in order.
    module = ir_module(matmul_kernel, {**MATMUL_SIG, "c_ptr": "*fp8e4nv"}, matmul_constexprs(128, 256, 64), arch,
                       num_warps=8)
    source, _, _ = generate_cuda(module, arch, {"num_warps": 8})
    assert len(re.findall(r"tt_stmatrix_x4\(tt_shared_address", source)) == stmatrix
    unpermuted = re.findall(r"reinterpret_cast<const char\*>\(&tt_q\) \+ (\d+), 2\);", source)
    if stmatrix:
        assert [int(at) for at in unpermuted[:8]] == [0, 4, 8, 12, 2, 6, 10, 14]
    else:
        assert not unpermuted


@pytest.mark.parametrize("arch, stmatrix", [(90, 16), (80, 0)])
def test_the_result_reaches_its_stores_through_stmatrix_on_sm90(arch, stmatrix):
    # The fp16 result of a 128x256 matmul tile is stored by pointers in a blocked layout:
    # on sm_90 the wgmma fragments go to shared memory four 8x8 matrices per stmatrix
    # (16 a thread), and the rows, 512 bytes long, permute their 16-byte chunks by their
    # own row number (the index's bits from 8 up), so the eight rows of a matrix spread
    # over the banks; sm_80 keeps its 4-byte stores.
    module = ir_module(matmul_kernel, MATMUL_SIG, matmul_constexprs(128, 256, 64), arch, num_warps=8)
    source, _, _ = generate_cuda(module, arch, {"num_warps": 8})
    calls = re.findall(r"tt_stmatrix_x4\(tt_shared_address\(&tt_buf\[(.*)\]\), ", source)
    assert len(calls) == stmatrix
    assert all(">> 8) & 7) << 3)" in index for index in calls)
    assert ">> 8) & 7) << 3)" in source, "rows of 256 fp16 are swizzled by row"
