"""Generated CUDA for hand-built kernels compiles with NVRTC into cubins for every
target (sm_61 ... sm_120), and the PTX holds the instructions Triton's GPU
semantics call for. (Running them is the GPU tests' job.)"""

import re

import pytest
from cuda_ir_builder import KernelBuilder, reduce

from tritone.ir import types as T

F32, F16, BF16, I32 = T.float32, T.float16, T.bfloat16, T.int32
SPEC4 = {i: {"divisibility": 16} for i in range(8)}


def ptr(elem):
    return T.pointer_type(elem)


def blocks(elem, *shape):
    return T.block_type(elem, list(shape))


def _offsets(kb, block):
    return kb.add(kb.splat(kb.mul(kb.pid(), kb.const(block, I32)), [block]), kb.arange(0, block))


def _ptx_lines(result, pattern):
    return [line for line in result.ptx.splitlines() if re.search(pattern, line)]


# -- vector add and masked loads --------------------------------------------------------------

def build_vector_add():
    kb = KernelBuilder("add_kernel", [("x", ptr(F32)), ("y", ptr(F32)), ("out", ptr(F32)), ("n", I32)],
                       arg_attrs=SPEC4)
    offs = _offsets(kb, 1024)
    mask = kb.cmp("lt", offs, kb.splat(kb.args[3], [1024]))
    x = kb.load(kb.ptr_block(kb.args[0], offs), mask)
    y = kb.load(kb.ptr_block(kb.args[1], offs), mask)
    kb.store(kb.ptr_block(kb.args[2], offs), kb.add(x, y), mask)
    kb.ret()
    return kb


def test_vector_add_uses_16_byte_accesses(cuda_compile):
    results = cuda_compile(build_vector_add)
    for arch, (source, metadata, result) in results.items():
        assert metadata["threads"] == 128 and metadata["shared"] == 0
        assert [p[1] for p in metadata["params"]] == ["float*", "float*", "float*", "int"]
        assert "__launch_bounds__(128) add_kernel(" in source
        assert '#line 11 "/tmp/kernel.py"' in source
        assert len(_ptx_lines(result, r"@p ld\.global\.v4\.b32")) == 4
        assert len(_ptx_lines(result, r"@p st\.global\.v4\.b32")) == 2
        assert ".local" not in result.ptx, f"sm_{arch}: registers spilled to local memory"


def build_fp64_scale():
    kb = KernelBuilder("scale64", [("x", ptr(T.float64)), ("out", ptr(T.float64)), ("n", I32)], arg_attrs=SPEC4)
    offs = _offsets(kb, 256)
    mask = kb.cmp("lt", offs, kb.splat(kb.args[2], [256]))
    x = kb.load(kb.ptr_block(kb.args[0], offs), mask)
    kb.store(kb.ptr_block(kb.args[1], offs), kb.add(x, x), mask)
    kb.ret()
    return kb


def test_fp64_moves_as_64_bit_words(cuda_compile):
    # As Triton: two fp64 per 16-byte access are `v2.b64`, not four b32 words.
    for arch, (_, _, result) in cuda_compile(build_fp64_scale).items():
        assert _ptx_lines(result, r"@p ld\.global\.v2\.b64") and _ptx_lines(result, r"@p st\.global\.v2\.b64"), arch
        assert not _ptx_lines(result, r"\.global\.v4\.b32"), arch


def build_masked_load_with_other():
    kb = KernelBuilder("masked", [("x", ptr(F16)), ("out", ptr(F32)), ("n", I32)])
    offs = _offsets(kb, 512)
    mask = kb.cmp("lt", offs, kb.splat(kb.args[2], [512]))
    other = kb.splat(kb.const(float("-inf"), F16), [512])
    x = kb.load(kb.ptr_block(kb.args[0], offs), mask, other, cache=".cg", evict="evict_last")
    doubled = kb.mul(x, kb.splat(kb.const(2.0, F16), [512]))
    kb.store(kb.ptr_block(kb.args[1], offs), kb.cast(doubled, F32), mask, evict="evict_first")
    kb.ret()
    return kb


def test_masked_load_with_other_and_cache_hints(cuda_compile):
    results = cuda_compile(build_masked_load_with_other)
    for arch, (source, _, result) in results.items():
        assert "tt_f16{0xfc00}" in source  # other = -inf, the registers' initial value
        loads = _ptx_lines(result, r"ld\.global")
        assert loads and all("@p" in line for line in loads)  # predicated: masked lanes keep `other`
        if arch >= 80:
            assert any("L1::evict_last.L2::cache_hint" in line for line in loads)
            assert _ptx_lines(result, r"createpolicy\.fractional\.L2::evict_first")
        elif arch >= 70:
            assert any("L1::evict_last" in line for line in loads)
        else:
            assert all("evict" not in line for line in loads)


# -- reductions and scans ---------------------------------------------------------------------

def _add(kb, a, b):
    return [kb.add(a[0], b[0])]


def build_widening_store():
    # fp16 loads give each thread 8 consecutive elements; the fp32 store gets a
    # coalesced layout of its own (4 a thread) through shared memory.
    kb = KernelBuilder("widen", [("x", ptr(F16)), ("out", ptr(F32)), ("n", I32)], arg_attrs=SPEC4)
    offs = _offsets(kb, 2048)
    mask = kb.cmp("lt", offs, kb.splat(kb.args[2], [2048]))
    x = kb.load(kb.ptr_block(kb.args[0], offs), mask)
    doubled = kb.mul(kb.cast(x, F32), kb.splat(kb.const(2.0, F32), [2048]))
    kb.store(kb.ptr_block(kb.args[1], offs), doubled, mask)
    kb.ret()
    return kb


def test_widening_store_moves_16_bytes_at_a_time_through_shared_memory(cuda_compile):
    for arch, (_, metadata, result) in cuda_compile(build_widening_store).items():
        assert metadata["shared"] == 2048 * 4
        assert len(_ptx_lines(result, r"st\.shared\.v4")) == 4, f"sm_{arch}"  # 16 fp32 a thread
        assert len(_ptx_lines(result, r"ld\.shared\.v4")) == 4, f"sm_{arch}"
        assert len(_ptx_lines(result, r"st\.global\.v4\.b32")) == 4, f"sm_{arch}"


def build_masked_select(n_divisibility):
    def build():
        kb = KernelBuilder("masked_select", [("x", ptr(F32)), ("out", ptr(F32)), ("n", I32)],
                           arg_attrs={i: {"divisibility": n_divisibility} for i in range(3)})
        offs = _offsets(kb, 1024)
        mask = kb.cmp("lt", offs, kb.splat(kb.args[2], [1024]))
        x = kb.load(kb.ptr_block(kb.args[0], offs), mask)
        zero = kb.splat(kb.const(0.0, F32), [1024])
        kb.store(kb.ptr_block(kb.args[1], offs), kb.op("select", [mask, x, zero], x.type))
        kb.ret()
        return kb

    return build


@pytest.mark.parametrize("n_divisibility, compares", [(1, 8), (16, 2)])
def test_a_mask_constant_over_a_vector_is_compared_once_per_vector(cuda_compile, n_divisibility, compares):
    # 1024 elements over 128 threads: 8 registers a thread, two 16-byte vectors. With
    # n a multiple of 16, `offs < n` cannot change inside a vector, so the generated
    # code compares once per vector (fewer live predicates, fewer registers).
    results = cuda_compile(build_masked_select(n_divisibility), archs=(80, 90))
    for arch, (_, _, result) in results.items():
        assert len(_ptx_lines(result, r"setp\.\w+\.s32")) == compares, f"sm_{arch}"


def _max(propagate_nan):
    return lambda kb, a, b: [kb.binary("max", a[0], b[0], propagate_nan=propagate_nan)]


def build_reduce_2d(rows=32, cols=128, num_warps=4):
    def build():
        kb = KernelBuilder("reduce2d", [("x", ptr(F32)), ("sum", ptr(F32)), ("colmax", ptr(F32)),
                                        ("nanmax", ptr(F32)), ("stride", I32)], num_warps=num_warps,
                           arg_attrs=SPEC4)
        r, c = kb.arange(0, rows), kb.arange(0, cols)
        offs = kb.add(kb.broadcast(kb.mul(kb.expand_dims(r, 1), kb.splat(kb.args[4], [rows, 1])), [rows, cols]),
                      kb.broadcast(kb.expand_dims(c, 0), [rows, cols]))
        x = kb.load(kb.ptr_block(kb.args[0], offs))
        (row_sum,) = reduce(kb, [x], 1, _add)
        (col_max,) = reduce(kb, [x], 0, _max(False))
        (row_nanmax,) = reduce(kb, [x], 1, _max(True))
        kb.store(kb.ptr_block(kb.args[1], r), row_sum)
        kb.store(kb.ptr_block(kb.args[2], c), col_max)
        kb.store(kb.ptr_block(kb.args[3], r), row_nanmax)
        kb.ret()
        return kb

    return build


@pytest.mark.parametrize("rows, cols, num_warps", [(32, 128, 4), (4, 1024, 8)])
def test_two_d_reduce_sum_and_max(cuda_compile, rows, cols, num_warps):
    # every target for one shape; an old and a new one for the other
    results = cuda_compile(build_reduce_2d(rows, cols, num_warps), archs=None if num_warps == 4 else (61, 90))
    for arch, (_source, metadata, result) in results.items():
        assert "shfl.sync.bfly" in result.ptx  # warp butterflies
        assert "max.f32" in result.ptx  # NaN-ignoring maximum
        if arch >= 80:
            assert "max.NaN.f32" in result.ptx
        assert metadata["shared"] > 0 and "bar.sync" in result.ptx  # across warps through shared memory
        assert ".local" not in result.ptx


def build_argmax():
    kb = KernelBuilder("argmax", [("x", ptr(F32)), ("out", ptr(F32)), ("idx", ptr(I32))], arg_attrs=SPEC4)
    offs = kb.arange(0, 2048)
    x = kb.load(kb.ptr_block(kb.args[0], offs))

    def argmax(kb, a, b):
        bigger = kb.cmp("gt", a[0], b[0])
        tie = kb.op("and", [kb.cmp("eq", a[0], b[0]), kb.cmp("lt", a[1], b[1])], T.int1)
        take_a = kb.op("or", [bigger, tie], T.int1)
        return [kb.op("select", [take_a, a[0], b[0]], F32), kb.op("select", [take_a, a[1], b[1]], I32)]

    value, index = reduce(kb, [x, offs], 0, argmax)
    (total,) = reduce(kb, [x], 0, _add)
    kb.store(kb.args[1], kb.add(value, total))
    kb.store(kb.args[2], index)
    kb.ret()
    return kb


def test_reduce_to_a_scalar_and_a_two_operand_argmax(cuda_compile):
    for _, (source, _, _) in cuda_compile(build_argmax, archs=(61, 90)).items():
        assert source.count("tt_combine") >= 4


def build_scan(reverse, shape=(2048,), axis=0):
    def build():
        kb = KernelBuilder("cumsum", [("x", ptr(I32)), ("out", ptr(I32)), ("stride", I32)], arg_attrs=SPEC4)
        if len(shape) == 1:
            offs = kb.arange(0, shape[0])
        else:
            r, c = kb.arange(0, shape[0]), kb.arange(0, shape[1])
            offs = kb.add(kb.broadcast(kb.mul(kb.expand_dims(r, 1), kb.splat(kb.args[2], [shape[0], 1])),
                                       list(shape)), kb.broadcast(kb.expand_dims(c, 0), list(shape)))
        x = kb.load(kb.ptr_block(kb.args[0], offs))
        (scanned,) = reduce(kb, [x], axis, _add, name="scan", reverse=reverse)
        kb.store(kb.ptr_block(kb.args[1], offs), scanned)
        kb.ret()
        return kb

    return build


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_over_registers_lanes_warps_and_repeats(cuda_compile, reverse):
    results = cuda_compile(build_scan(reverse), archs=None if not reverse else (61, 90))
    for _, (_, metadata, result) in results.items():
        assert "shfl.sync.idx" in result.ptx
        assert metadata["shared"] > 0
        assert ".local" not in result.ptx


def test_scan_along_the_slow_dim_of_a_tile(cuda_compile):
    cuda_compile(build_scan(False, (64, 32), 0), archs=(75, 89))


# -- control flow ------------------------------------------------------------------------------

def build_for_loop():
    kb = KernelBuilder("accumulate", [("x", ptr(F32)), ("out", ptr(F32)), ("k", I32)], arg_attrs=SPEC4)
    offs = kb.arange(0, 256)
    zero = kb.const(0.0, blocks(F32, 256))
    start = kb.ptr_block(kb.args[0], offs)
    body, (iv, acc, p) = kb.region([I32, zero.type, start.type])
    with kb.inside(body):
        scaled = kb.mul(kb.load(p), kb.splat(kb.cast(iv, F32), [256]))
        kb.op("yield", [kb.add(acc, scaled), kb.addptr(p, kb.splat(kb.const(256, I32), [256]))])
    loop = kb.op_multi("for", [kb.const(0, I32), kb.args[2], kb.const(1, I32), zero, start],
                       [zero.type, start.type], [body])
    kb.store(kb.ptr_block(kb.args[1], offs), loop.results[0])
    kb.ret()
    return kb


def test_for_loop_with_carried_block_and_pointer(cuda_compile):
    for _, (source, _, result) in cuda_compile(build_for_loop).items():
        assert re.search(r"for \(int iv\d+ = ", source)
        assert _ptx_lines(result, r"ld\.global\.v2\.b32")  # 256 elements over 128 threads: 2 per thread


def build_while_loop():
    kb = KernelBuilder("grow", [("out", ptr(I32)), ("n", I32)])
    offs = kb.arange(0, 128)
    before, (i, acc) = kb.region([I32, blocks(I32, 128)])
    with kb.inside(before):
        kb.op("condition", [kb.cmp("lt", i, kb.args[1]), i, acc], None)
    after, (j, acc2) = kb.region([I32, blocks(I32, 128)])
    with kb.inside(after):
        nxt = kb.add(kb.mul(j, kb.const(2, I32)), kb.const(1, I32))
        kb.op("yield", [nxt, kb.add(acc2, kb.splat(j, [128]))])
    loop = kb.op_multi("while", [kb.const(0, I32), offs], [I32, blocks(I32, 128)], [before, after])
    kb.store(kb.ptr_block(kb.args[0], offs), loop.results[1])
    kb.store(kb.args[0], loop.results[0])
    kb.ret()
    return kb


def test_while_loop(cuda_compile):
    for _, (source, _, _) in cuda_compile(build_while_loop).items():
        assert "while (true)" in source and "break;" in source


def test_if_with_results_and_a_barrier(cuda_compile):
    def build():
        kb = KernelBuilder("branch", [("out", ptr(F32)), ("flag", I32)])
        offs = kb.arange(0, 64)
        then, _ = kb.region([])
        with kb.inside(then):
            kb.op("barrier", [], None)
            kb.op("yield", [kb.const(1.5, blocks(F32, 64))])
        other, _ = kb.region([])
        with kb.inside(other):
            kb.op("yield", [kb.cast(offs, F32)])
        cond = kb.cmp("ne", kb.args[1], kb.const(0, I32))
        branch = kb.op_multi("if", [cond], [blocks(F32, 64)], [then, other])
        kb.store(kb.ptr_block(kb.args[0], offs), branch.results[0])
        kb.ret()
        return kb

    cuda_compile(build, archs=(61, 90))


# -- atomics -----------------------------------------------------------------------------------

def build_histogram():
    kb = KernelBuilder("histogram", [("x", ptr(I32)), ("hist", ptr(I32)), ("count", ptr(I32)), ("fmax", ptr(F32)),
                                     ("half", ptr(BF16)), ("n", I32)], arg_attrs=SPEC4)
    offs = _offsets(kb, 1024)
    mask = kb.cmp("lt", offs, kb.splat(kb.args[5], [1024]))
    x = kb.load(kb.ptr_block(kb.args[0], offs), mask)
    bins = kb.binary("mod", x, kb.splat(kb.const(64, I32), [1024]))
    ones = kb.splat(kb.const(1, I32), [1024])
    kb.op("atomic_rmw", [kb.ptr_block(kb.args[1], bins), ones, mask], blocks(I32, 1024), kind="add",
          sem="relaxed", scope="gpu")
    old = kb.op("atomic_rmw", [kb.args[2], kb.const(1, I32)], I32, kind="add", sem="acq_rel", scope="gpu")
    kb.store(kb.args[2], old)
    as_float = kb.cast(x, F32)
    kb.op("atomic_rmw", [kb.ptr_block(kb.args[3], bins), as_float, mask], blocks(F32, 1024), kind="max")
    kb.op("atomic_rmw", [kb.ptr_block(kb.args[4], bins), kb.cast(as_float, BF16), mask], blocks(BF16, 1024),
          kind="add", scope="cta")
    swapped = kb.op("atomic_cas", [kb.args[2], kb.const(5, I32), kb.const(7, I32)], I32)
    kb.store(kb.args[2], swapped)
    kb.ret()
    return kb


def test_atomic_histogram_and_friends(cuda_compile):
    for arch, (_source, metadata, result) in cuda_compile(build_histogram).items():
        adds = _ptx_lines(result, r"atom\.")
        reds = _ptx_lines(result, r"red\.")
        assert any(".add.u32" in line for line in adds)
        if arch >= 70:
            # The histogram's old values are unused and relaxed: `red`, as Triton emits.
            assert any("red.global.gpu.relaxed.add.u32" in line for line in reds)
            assert not any(".relaxed." in line for line in adds)
            assert any("atom.global.gpu.acq_rel.add.u32" in line for line in adds)
            assert any("atom.global.acq_rel.gpu.cas.b32" in line for line in adds)
        else:
            assert "membar.gl" in result.ptx
        assert any(".max.s32" in line for line in adds) and any(".min.u32" in line for line in adds)
        if arch >= 90:
            assert any("add.noftz.bf16" in line for line in adds)
        else:
            assert any("cas.b32" in line for line in adds)  # bf16 add as a CAS loop
        if 70 <= arch < 90:
            assert any("atom.acq_rel.cta.global.cas.b32" in line for line in adds)
        assert metadata["shared"] >= 4  # the scalar atomics' old values reach every thread


# -- casts --------------------------------------------------------------------------------------

def build_casts():
    fp8e4, fp8e5 = T.float8e4nv, T.float8e5
    kb = KernelBuilder("casts", [("x", ptr(F32)), ("d", ptr(T.float64)), ("i", ptr(T.int64)), ("bf", ptr(BF16)),
                                 ("e4", ptr(fp8e4)), ("e5", ptr(fp8e5)), ("h", ptr(F16)), ("back", ptr(F32)),
                                 ("ints", ptr(T.int8)), ("u", ptr(T.uint32))], arg_attrs=SPEC4)
    offs = kb.arange(0, 256)

    def at(index, value):
        kb.store(kb.ptr_block(kb.args[index], offs), value)

    x = kb.load(kb.ptr_block(kb.args[0], offs))
    d = kb.load(kb.ptr_block(kb.args[1], offs))
    i = kb.load(kb.ptr_block(kb.args[2], offs))
    bf = kb.cast(x, BF16)
    e4 = kb.cast(x, fp8e4)
    e5 = kb.cast(x, fp8e5, rounding="rtz")
    at(3, bf)
    at(4, e4)
    at(5, e5)
    at(5, kb.cast(d, fp8e5))
    at(3, kb.cast(d, BF16))
    at(3, kb.cast(i, BF16))
    at(6, kb.cast(i, F16))
    at(6, kb.cast(x, F16, rounding="rtz"))
    at(6, kb.cast(bf, F16))
    back = kb.add(kb.add(kb.cast(bf, F32), kb.cast(e4, F32)), kb.cast(e5, F32))
    at(7, back)
    at(8, kb.cast(x, T.int8))
    at(9, kb.cast(x, T.uint32))
    at(4, kb.cast(kb.cast(x, F16), fp8e4))
    kb.ret()
    return kb


def test_casts_to_bf16_and_fp8(cuda_compile):
    for arch, (_, _, result) in cuda_compile(build_casts).items():
        ptx = result.ptx
        assert ("cvt.rn.bf16.f32" in ptx) == (arch >= 80)
        assert ("cvt.rn.satfinite.e4m3x2.f32" in ptx) == (arch >= 89)
        assert ("cvt.rn.f16x2.e4m3x2" in ptx) == (arch >= 89)
        assert "cvt.rzi.s16.f32" in ptx and "cvt.rzi.u32.f32" in ptx
        assert "cvt.rz.f16.f32" in ptx  # fp8e5 rtz and fp16 rtz
        assert "cvt.rn.f16.s64" in ptx
        assert "cvt.rz.f32.f64" in ptx  # f64 -> bf16/fp8 round to odd first
