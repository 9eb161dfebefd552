"""More ops through the CUDA backend: moves between layouts (registers or
shared memory), shape ops, debugging ops, math and libdevice calls, integer
corner cases. Each kernel compiles with NVRTC for an old and a new target."""

from cuda_ir_builder import KernelBuilder, reduce

from tritone.backends.cuda import layout_pass, smem
from tritone.backends.cuda.lowering import generate_cuda
from tritone.ir import types as T
from tritone.ir.layouts import BlockedLayout

F32, F16, I32, I64, U32, I1 = T.float32, T.float16, T.int32, T.int64, T.uint32, T.int1
SPEC = {i: {"divisibility": 16} for i in range(8)}
ARCHS = (61, 90)


def ptr(elem):
    return T.pointer_type(elem)


def blocks(elem, *shape):
    return T.block_type(elem, list(shape))


def _tile(kb, rows, cols, stride, transpose=False):
    r, c = kb.arange(0, rows), kb.arange(0, cols)
    r2, c2 = kb.expand_dims(r, 1), kb.expand_dims(c, 0)
    if transpose:
        return kb.add(kb.broadcast(r2, [rows, cols]), kb.broadcast(kb.mul(c2, kb.splat(stride, [1, cols])),
                                                                   [rows, cols]))
    return kb.add(kb.broadcast(kb.mul(r2, kb.splat(stride, [rows, 1])), [rows, cols]), kb.broadcast(c2, [rows, cols]))


def test_transposed_copy_converts_through_shared_memory(cuda_compile):
    def build():
        kb = KernelBuilder("transpose", [("x", ptr(F32)), ("y", ptr(F32)), ("stride", I32)], arg_attrs=SPEC)
        x = kb.load(kb.ptr_block(kb.args[0], _tile(kb, 64, 64, kb.args[2])))
        kb.store(kb.ptr_block(kb.args[1], _tile(kb, 64, 64, kb.args[2], transpose=True)), x)
        kb.ret()
        return kb

    for _, (source, metadata, result) in cuda_compile(build, archs=ARCHS).items():
        assert metadata["shared"] == 64 * 64 * 4
        assert "tt_smem" in source and "bar.sync" in result.ptx
        assert "st.global.v4.b32" in result.ptx and "ld.global.v4.b32" in result.ptx


def test_permute_reshape_join_split_cat(cuda_compile):
    def build():
        kb = KernelBuilder("shapes", [("x", ptr(F32)), ("y", ptr(F32)), ("stride", I32)], arg_attrs=SPEC)
        offs = _tile(kb, 16, 32, kb.args[2])
        x = kb.load(kb.ptr_block(kb.args[0], offs))
        xt = kb.op("permute", [x], blocks(F32, 32, 16), order=(1, 0))
        flat = kb.op("reshape", [xt], blocks(F32, 512), can_reorder=False)
        pair = kb.op("join", [flat, flat], blocks(F32, 512, 2))
        a, b = kb.op_multi("split", [pair], [blocks(F32, 512), blocks(F32, 512)]).results
        both = kb.op("cat", [a, b], blocks(F32, 1024))
        kb.store(kb.ptr_block(kb.args[1], kb.arange(0, 1024)), both)
        one = kb.op("reshape", [kb.load(kb.ptr_block(kb.args[0], kb.arange(0, 1)))], F32)
        kb.store(kb.args[1], one)
        kb.ret()
        return kb

    for _, (_source, metadata, _) in cuda_compile(build, archs=ARCHS).items():
        assert metadata["shared"] >= 1024 * 4


def test_trans_in_registers_when_layouts_agree(cuda_compile):
    """A permute whose result layout is the permuted operand layout moves nothing."""

    def build():
        kb = KernelBuilder("trans", [("x", ptr(F32)), ("y", ptr(F32)), ("stride", I32)], arg_attrs=SPEC)
        x = kb.load(kb.ptr_block(kb.args[0], _tile(kb, 32, 32, kb.args[2])))
        xt = kb.op("permute", [x], blocks(F32, 32, 32), order=(1, 0))
        (total,) = reduce(kb, [xt], 0, lambda kb, a, b: [kb.add(a[0], b[0])])
        kb.store(kb.ptr_block(kb.args[1], kb.arange(0, 32)), total)
        kb.ret()
        return kb

    kb = build()
    generate_cuda(kb.module, 80)
    (permute,) = [op for op in kb.fn.walk() if op.name == "permute"]
    assert smem.scratch_bytes(permute) == 0
    assert permute.results[0].type.layout == layout_pass.permute_layout(permute.operands[0].type.layout, (1, 0))
    cuda_compile(build, archs=(80,))


def test_print_assert_barrier_extern_and_math(cuda_compile):
    def build():
        kb = KernelBuilder("debug", [("x", ptr(F32)), ("y", ptr(F32)), ("n", I32)], arg_attrs=SPEC)
        offs = kb.arange(0, 128)
        x = kb.load(kb.ptr_block(kb.args[0], offs))
        kb.op("print", [x, offs], None, prefix="x % done: ", hex=False)
        kb.op("print", [kb.args[2]], None, prefix="n=", hex=True)
        kb.op("assert", [kb.cmp("lt", offs, kb.splat(kb.args[2], [128]))], None, msg='offs < n "quoted"')
        kb.op("barrier", [], None)
        t = kb.op("extern", [x], x.type, name="tanh")
        p = kb.op("extern", [t, kb.splat(kb.const(3, I32), [128])], x.type, name="pow")
        value = p
        for name in ("exp", "exp2", "log", "log2", "sin", "cos", "sqrt", "sqrt_rn", "rsqrt", "erf", "floor", "ceil",
                     "abs"):
            value = kb.op(name, [value], x.type)
        value = kb.op("fma", [value, x, x], x.type)
        value = kb.binary("div", value, x)
        value = kb.binary("div_rn", value, x)
        value = kb.binary("mod", value, x)
        value = kb.binary("min", value, x, propagate_nan=True)
        kb.store(kb.ptr_block(kb.args[1], offs), value)
        kb.ret()
        return kb

    for arch, (source, _, result) in cuda_compile(build, archs=ARCHS).items():
        assert '"pid (%u, %u, %u) idx (%3u)x %% done: (operand 0) %f\\n"' in source
        assert "Assertion `offs < n \\\"quoted\\\"` failed." in source
        assert "trap;" in result.ptx and "vprintf" in result.ptx
        for insn in ("ex2.approx.f32", "ex2.approx.ftz.f32", "sqrt.approx.ftz.f32", "sqrt.rn.f32",
                     "rsqrt.approx.ftz.f32", "cvt.rmi.ftz.f32.f32", "cvt.rpi.ftz.f32.f32", "div.full.f32",
                     "div.rn.f32", "fma.rn.f32"):
            assert insn in result.ptx, f"sm_{arch}: no {insn}"
        assert "__nv_tanhf" in source and "__nv_powif" in source


def test_integer_corner_cases_and_unfused_floats(cuda_compile):
    def build():
        kb = KernelBuilder("ints", [("x", ptr(I32)), ("y", ptr(I64)), ("f", ptr(F16)), ("b", ptr(T.int8))],
                           arg_attrs=SPEC)
        offs = kb.arange(0, 256)
        x = kb.load(kb.ptr_block(kb.args[0], offs))
        big = kb.cast(x, I64)
        shifted = kb.binary("shl", big, kb.splat(kb.const(40, I64), [256]))
        ashr = kb.binary("ashr", kb.cast(x, U32), kb.splat(kb.const(3, U32), [256]))
        hi = kb.binary("umulhi", x, x)
        out = kb.add(kb.add(shifted, kb.cast(ashr, I64)), kb.cast(hi, I64))
        out = kb.add(out, kb.cast(kb.binary("floordiv", x, kb.splat(kb.const(-7, I32), [256])), I64))
        kb.store(kb.ptr_block(kb.args[1], offs), out)
        h = kb.load(kb.ptr_block(kb.args[2], offs))
        h = kb.add(kb.mul(h, h), h)
        kb.store(kb.ptr_block(kb.args[2], offs), kb.op("fma", [h, h, h], h.type))
        flags = kb.cmp("ne", kb.load(kb.ptr_block(kb.args[3], offs)), kb.splat(kb.const(0, T.int8), [256]))
        both = kb.add(flags, kb.cmp("gt", x, kb.splat(kb.const(0, I32), [256])))
        kb.store(kb.ptr_block(kb.args[3], offs), kb.cast(both, T.int8))
        kb.ret()
        return kb

    results = cuda_compile(build, archs=ARCHS, options={"enable_fp_fusion": False})
    for _, (_source, _, result) in results.items():
        assert "mul.hi.u32" in result.ptx and "fma.rn.f16" in result.ptx
        assert "shr.s32" in result.ptx  # ashr on u32 is arithmetic on the bits


def test_layout_pass_layouts_show_in_generated_code(cuda_compile):
    def build():
        kb = KernelBuilder("copy", [("x", ptr(F16)), ("y", ptr(F16))], arg_attrs=SPEC, num_warps=2)
        offs = kb.arange(0, 4096)
        kb.store(kb.ptr_block(kb.args[1], offs), kb.load(kb.ptr_block(kb.args[0], offs)))
        kb.ret()
        return kb

    kb = build()
    _, _, metadata = generate_cuda(kb.module, 80)
    layouts = {op.results[0].type.layout for op in kb.fn.walk() if op.results and op.results[0].type.is_block()}
    assert layouts == {BlockedLayout((8,), (32,), (2,), (0,))}
    assert metadata["threads"] == 64
    for _, (_, _, result) in cuda_compile(build, archs=(75,)).items():
        assert result.ptx.count("ld.global.v4.b32") == 8  # 4096 halves / 64 threads / 8 per access


def test_gather_and_histogram(cuda_compile):
    def build():
        kb = KernelBuilder("indexed", [("x", ptr(F32)), ("idx", ptr(I32)), ("out", ptr(F32)), ("hist", ptr(I32))],
                           arg_attrs=SPEC)
        offs = kb.arange(0, 256)
        x = kb.load(kb.ptr_block(kb.args[0], offs))
        index = kb.load(kb.ptr_block(kb.args[1], offs))
        picked = kb.op("gather", [x, index], x.type, axis=0)
        kb.store(kb.ptr_block(kb.args[2], offs), picked)
        mask = kb.cmp("lt", offs, kb.splat(kb.const(200, I32), [256]))
        counts = kb.op("histogram", [index, mask], blocks(I32, 64), num_bins=64)
        kb.store(kb.ptr_block(kb.args[3], kb.arange(0, 64)), counts)
        kb.ret()
        return kb

    for _, (_, metadata, result) in cuda_compile(build, archs=ARCHS).items():
        assert metadata["shared"] == 256 * 4
        assert "atom.shared.add" in result.ptx or "red.shared.add" in result.ptx


def test_softmax_rows_stay_in_registers(cuda_compile):
    """max and sum over rows, broadcast back with expand_dims: slices of one layout, no conversion."""

    def build():
        kb = KernelBuilder("softmax", [("x", ptr(F32)), ("y", ptr(F32)), ("stride", I32)], arg_attrs=SPEC)
        offs = _tile(kb, 8, 256, kb.args[2])
        x = kb.load(kb.ptr_block(kb.args[0], offs))
        (row_max,) = reduce(kb, [x], 1, lambda kb, a, b: [kb.binary("max", a[0], b[0])])
        shifted = kb.op("sub", [x, kb.broadcast(kb.expand_dims(row_max, 1), [8, 256])], x.type)
        e = kb.op("exp", [shifted], x.type)
        (total,) = reduce(kb, [e], 1, lambda kb, a, b: [kb.add(a[0], b[0])])
        y = kb.binary("div", e, kb.broadcast(kb.expand_dims(total, 1), [8, 256]))
        kb.store(kb.ptr_block(kb.args[1], offs), y)
        kb.ret()
        return kb

    kb = build()
    generate_cuda(kb.module, 80)
    assert layout_pass.conversions(kb.fn) == []
    for _, (_, metadata, result) in cuda_compile(build, archs=ARCHS).items():
        assert metadata["shared"] > 0  # a 256-wide row spans two warps: combined through shared memory
        assert ".local" not in result.ptx
