"""tl.inline_asm_elementwise through the CUDA backend: each form (upstream
Triton's test kernels and more) compiles to a cubin for sm_80 and sm_90 with
the asm in the PTX on the right registers; what CUDA cannot express is refused
naming the source line; on a GPU the results match numpy."""

import re

import numpy as np
import pytest

import tritone
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler.compiler import ASTSource
from tritone.errors import CompilationError
from tritone.passes.map_elementwise import MapElementwiseError

ARCHS = (80, 90)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))


def compile_for(fn, signature, constexprs, arch, num_warps=4):
    return tritone.compile(ASTSource(fn, signature=signature, constexprs=constexprs),
                           target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps})


def kernel_body(kernel) -> str:
    source = kernel.asm["cuda"]
    return source[source.index('extern "C" __global__'):]


# -- the kernels ----------------------------------------------------------------------

@tritone.jit
def funnel_shift(X, Y, Z, n: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    s = tl.full([BLOCK], n, tl.int32)
    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", [x, y, s], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(Z + tl.arange(0, BLOCK), z)


@tritone.jit
def shift_bytes_packed(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F;\nshl.b32 $0, $0, 3;", "=r,r", [x],
                                  dtype=tl.int8, is_pure=True, pack=4)
    tl.store(Y + tl.arange(0, BLOCK), y)


@tritone.jit
def shift_through_pointers(X, Y, BLOCK: tl.constexpr):
    tl.inline_asm_elementwise("ld.global.b8 $0, [$1];\nshl.b32 $0, $0, 3;\nst.global.b8 [$2], $0;", "=r,l,l",
                              [X + tl.arange(0, BLOCK), Y + tl.arange(0, BLOCK)], dtype=tl.int8, is_pure=False,
                              pack=1)


@tritone.jit
def differences(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    c, d = tl.inline_asm_elementwise(asm="sub.u32 $0, $2, $3;  // C = A - B\n sub.u32 $1, $3, $2;",
                                     constraints="=r,=r,r,r", args=[a, b], dtype=(tl.uint32, tl.uint32),
                                     is_pure=True, pack=1)
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@tritone.jit
def widen_and_max_packed(A, B, C, D, BLOCK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    c, d = tl.inline_asm_elementwise(
        asm="""
        {
            .reg .b8 tmp<4>;
            mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
            cvt.u32.u8 $0, tmp0;
            cvt.u32.u8 $1, tmp1;
            cvt.u32.u8 $2, tmp2;
            cvt.u32.u8 $3, tmp3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """,
        constraints="=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r", args=[a, b], dtype=(tl.int32, tl.float32),
        is_pure=True, pack=4)
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@tritone.jit
def add_seven_tied(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("add.u32 $0, $1, 7;", "=r,0", [x], dtype=tl.uint32, is_pure=True, pack=1)
    tl.store(Y + tl.arange(0, BLOCK), y)


@tritone.jit
def half_pairs(X, Y, Z, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    z = tl.inline_asm_elementwise("add.rn.f16x2 $0, $1, $2;", "=r,r,r", [x, y], dtype=tl.float16, is_pure=True,
                                  pack=2)
    tl.store(Z + tl.arange(0, BLOCK), z)


@tritone.jit
def typed_registers(F, D, L, H, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    f = tl.inline_asm_elementwise("mul.rn.f32 $0, $1, $1;", "=f,f", [tl.load(F + offs)], dtype=tl.float32,
                                  is_pure=True, pack=1)
    d = tl.inline_asm_elementwise("add.rn.f64 $0, $1, $1;", "=d,d", [tl.load(D + offs)], dtype=tl.float64,
                                  is_pure=True, pack=1)
    q = tl.inline_asm_elementwise("add.s64 $0, $1, -1;", "=l,l", [tl.load(L + offs)], dtype=tl.int64,
                                  is_pure=True, pack=1)
    h = tl.inline_asm_elementwise("xor.b16 $0, $1, 0x8000;", "=h,h", [tl.load(H + offs)], dtype=tl.float16,
                                  is_pure=True, pack=1)
    tl.store(F + offs, f)
    tl.store(D + offs, d)
    tl.store(L + offs, q)
    tl.store(H + offs, h)


@tritone.jit
def thread_ids(Y, BLOCK: tl.constexpr):
    tid = tl.inline_asm_elementwise("mov.u32 $0, %tid.x;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
    tl.store(Y + tl.arange(0, BLOCK), tid)


@tritone.jit
def small_block(X, Y, PURE: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("add.u32 $0, $2, 1;\nadd.u32 $1, $3, 1;", "=r,=r,r,r", [x], dtype=tl.uint32,
                                  is_pure=PURE, pack=2)
    tl.store(Y + tl.arange(0, BLOCK), y)


U32_3 = {"X": "*u32", "Y": "*u32", "Z": "*u32"}


# -- compiled without a GPU ----------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
def test_upstream_forms_compile_with_the_asm_on_registers(arch):
    shf = compile_for(funnel_shift, {**U32_3, "n": "constexpr", "BLOCK": "constexpr"}, {"n": 17, "BLOCK": 128}, arch)
    assert "asm volatile(\"shf" not in kernel_body(shf)
    assert len(re.findall(r"shf\.l\.wrap\.b32 %r\d+, %r\d+, %r\d+, %r\d+;", shf.asm["ptx"])) == 1
    assert shf.asm["cubin"][:4] == b"\x7fELF"

    packed = compile_for(shift_bytes_packed, {"X": "*u8", "Y": "*u8", "BLOCK": "constexpr"}, {"BLOCK": 512}, arch)
    # 512 bytes over 128 threads: each thread's 4 bytes in one register, one asm
    assert len(re.findall(r"and\.b32 %r\d+, %r\d+, 0x1F1F1F1F;", packed.asm["ptx"])) == 1
    assert "<< 24" in kernel_body(packed)

    pointers = compile_for(shift_through_pointers, {"X": "*u8", "Y": "*u8", "BLOCK": "constexpr"}, {"BLOCK": 512},
                           arch)
    body = kernel_body(pointers)
    assert "asm volatile(" in body and '"=r"(' in body and '"l"(' in body and ': "memory")' in body
    # the result is unused, but the asm has effects: all 4 of each thread stay
    assert len(re.findall(r"st\.global\.b8 \[%rd\d+\], %r\d+;", pointers.asm["ptx"])) == 4

    diffs = compile_for(differences, {"A": "*u32", "B": "*u32", "C": "*u32", "D": "*u32", "BLOCK": "constexpr"},
                        {"BLOCK": 512}, arch)
    subs = re.findall(r"sub\.u32 (%r\d+), (%r\d+), (%r\d+);", diffs.asm["ptx"])
    assert len(subs) == 8
    assert all(first[1:] == second[:0:-1] for first, second in zip(subs[::2], subs[1::2]))

    widen = compile_for(widen_and_max_packed, {"A": "*u8", "B": "*fp32", "C": "*i32", "D": "*fp32",
                                               "BLOCK": "constexpr"}, {"BLOCK": 512}, arch)
    assert len(re.findall(r"mov\.b32 \{tmp0, tmp1, tmp2, tmp3\}, %r\d+;", widen.asm["ptx"])) == 1
    assert len(re.findall(r"max\.f32 %r\d+, %r\d+, %r\d+;", widen.asm["ptx"])) == 4


@pytest.mark.parametrize("arch", ARCHS)
def test_a_tied_input_shares_its_output_register(arch):
    kernel = compile_for(add_seven_tied, {"X": "*u32", "Y": "*u32", "BLOCK": "constexpr"}, {"BLOCK": 128}, arch)
    assert '"+r"(' in kernel_body(kernel)
    adds = re.findall(r"add\.u32 (%r\d+), (%r\d+), 7;", kernel.asm["ptx"])
    assert adds and all(out == source for out, source in adds)


@pytest.mark.parametrize("arch", ARCHS)
def test_register_kinds_follow_the_constraints(arch):
    halves = compile_for(half_pairs, U32_3 | {"X": "*fp16", "Y": "*fp16", "Z": "*fp16", "BLOCK": "constexpr"},
                         {"BLOCK": 256}, arch)
    assert len(re.findall(r"add\.rn\.f16x2 %r\d+, %r\d+, %r\d+;", halves.asm["ptx"])) == 1
    typed = compile_for(typed_registers, {"F": "*fp32", "D": "*fp64", "L": "*i64", "H": "*fp16",
                                          "BLOCK": "constexpr"}, {"BLOCK": 128}, arch)
    ptx = typed.asm["ptx"]
    assert re.search(r"mul\.rn\.f32 %f\d+, %f\d+, %f\d+;", ptx)
    assert re.search(r"add\.rn\.f64 %fd\d+, %fd\d+, %fd\d+;", ptx)
    assert re.search(r"add\.s64 %rd\d+, %rd\d+, -1;", ptx)
    assert re.search(r"xor\.b16 %rs\d+, %rs\d+, 0x8000;", ptx)


def test_percent_signs_reach_the_ptx_and_no_arguments_give_a_scalar():
    kernel = compile_for(thread_ids, {"Y": "*i32", "BLOCK": "constexpr"}, {"BLOCK": 128}, 90)
    assert "%%tid.x" in kernel_body(kernel)
    assert re.search(r"mov\.u32 %r\d+, %tid\.x;", kernel.asm["ptx"])
    assert "-> i32" in [line for line in kernel.asm["ttir"].splitlines() if " = inline_asm(" in line][0]


def test_a_pure_asm_pads_a_thread_short_of_a_pack():
    # 64 elements over 128 threads: one element each, so the pack of 2 is padded
    kernel = compile_for(small_block, {"X": "*u32", "Y": "*u32", "PURE": "constexpr", "BLOCK": "constexpr"},
                         {"PURE": True, "BLOCK": 64}, 90)
    lines = kernel_body(kernel).splitlines()
    asm_lines = [i for i, line in enumerate(lines) if 'asm("add.u32' in line]
    assert len(asm_lines) == 1
    after = lines[asm_lines[0] + 1:lines.index("  }", asm_lines[0])]
    # the thread's element from output $0; output $1 came from the padding copy and is dropped
    assert len(after) == 1 and "tt_asm_out0" in after[0]
    with pytest.raises(Exception, match="a non-pure asm cannot be given padding"):
        compile_for(small_block, {"X": "*u32", "Y": "*u32", "PURE": "constexpr", "BLOCK": "constexpr"},
                    {"PURE": False, "BLOCK": 64}, 90)


@tritone.jit
def bad_constraints(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(X + tl.arange(0, BLOCK), tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r", [x], dtype=tl.int32,
                                                                is_pure=True, pack=1))


@tritone.jit
def wide_value_in_narrow_register(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(X + tl.arange(0, BLOCK), tl.inline_asm_elementwise("mov.b64 $0, $1;", "=l,r", [x], dtype=tl.int64,
                                                                is_pure=True, pack=1))


@tritone.jit
def operand_out_of_range(X, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(X + tl.arange(0, BLOCK), tl.inline_asm_elementwise("mov.b32 $0, $2;", "=r,r", [x], dtype=tl.int32,
                                                                is_pure=True, pack=1))


def test_mistakes_are_named():
    with pytest.raises(CompilationError, match=r"(?s)inline_asm_elementwise.*name 1 output and 2 input registers"):
        compile_for(bad_constraints, {"X": "*i32", "BLOCK": "constexpr"}, {"BLOCK": 128}, 90)
    with pytest.raises(Exception, match=r"operand \$1 carries 64 bits .* a 'r' register \(32 bits\)"):
        compile_for(wide_value_in_narrow_register, {"X": "*i64", "BLOCK": "constexpr"}, {"BLOCK": 128}, 90)
    with pytest.raises(Exception, match=r"names \$2, but its constraints give 2 operands"):
        compile_for(operand_out_of_range, {"X": "*i32", "BLOCK": "constexpr"}, {"BLOCK": 128}, 90)


def test_the_interpreter_refuses_naming_the_kernel_and_line(monkeypatch):
    from tritone.errors import InterpreterError

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = np.arange(1, 129, dtype=np.uint32)
    y = np.zeros(128, dtype=np.uint32)
    with pytest.raises(InterpreterError, match=r"(?s)kernel add_seven_tied .*GPU.*test_cuda_inline_asm\.py:\d+"
                                               r".*tl\.inline_asm_elementwise\(\"add\.u32"):
        add_seven_tied[(1,)](x, y, BLOCK=128)
    assert not y.any()


@tritone.jit
def byte_swap_positive(x):
    if x > 0:
        x = tl.inline_asm_elementwise("prmt.b32 $0, $1, 0, 0x0123;", "=r,r", [x], dtype=tl.int32, is_pure=True,
                                      pack=1)
    return x


@tritone.jit
def byte_swap_positive_with_effects(x):
    if x > 0:
        x = tl.inline_asm_elementwise("prmt.b32 $0, $1, 0, 0x0123;", "=r,r", [x], dtype=tl.int32, is_pure=False,
                                      pack=1)
    return x


@tritone.jit
def swap_mapped(X, Y, PURE: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    if PURE:
        y = tl.map_elementwise(byte_swap_positive, x)
    else:
        y = tl.map_elementwise(byte_swap_positive_with_effects, x)
    tl.store(Y + tl.arange(0, BLOCK), y)


def test_map_elementwise_functions_may_use_pure_asm():
    signature = {"X": "*i32", "Y": "*i32", "PURE": "constexpr", "BLOCK": "constexpr"}
    kernel = compile_for(swap_mapped, signature, {"PURE": True, "BLOCK": 128}, 90)
    assert re.search(r"prmt\.b32 %r\d+, %r\d+, 0, 0x0123;", kernel.asm["ptx"])
    assert re.search(r"= inline_asm\(%\w+\) .* : \(<128xi32.*\) -> <128xi32", kernel.asm["ttir"])
    # an asm with effects cannot run only for the elements that take the branch
    with pytest.raises(MapElementwiseError, match="`inline_asm` under a condition that differs between elements"):
        compile_for(swap_mapped, signature, {"PURE": False, "BLOCK": 128}, 90)


# -- on a GPU ------------------------------------------------------------------------------

def _cuda(array):
    torch = pytest.importorskip("torch")
    return torch.from_numpy(np.ascontiguousarray(array)).cuda()


@pytest.mark.gpu
def test_results_on_the_gpu_match_numpy():
    rng = np.random.default_rng(17)
    x = rng.integers(1, 2**32, 128, dtype=np.uint32)
    y = rng.integers(1, 2**32, 128, dtype=np.uint32)
    z = _cuda(rng.integers(1, 2**32, 128, dtype=np.uint32))
    funnel_shift[(1,)](_cuda(x), _cuda(y), z, 17, BLOCK=128)
    np.testing.assert_equal(z.cpu().numpy(), (y << 17) | (x >> 15))

    bytes_in = rng.integers(1, 256, 512, dtype=np.uint8)
    out = _cuda(rng.integers(1, 256, 512, dtype=np.uint8))
    shift_bytes_packed[(1,)](_cuda(bytes_in), out, BLOCK=512)
    np.testing.assert_equal(out.cpu().numpy(), bytes_in << 3)
    out = _cuda(rng.integers(1, 256, 512, dtype=np.uint8))
    shift_through_pointers[(1,)](_cuda(bytes_in), out, BLOCK=512)
    np.testing.assert_equal(out.cpu().numpy(), bytes_in << 3)

    a = rng.integers(1, 2**32, 512, dtype=np.uint32)
    b = rng.integers(1, 2**32, 512, dtype=np.uint32)
    c, d = _cuda(rng.integers(1, 2**32, 512, dtype=np.uint32)), _cuda(rng.integers(1, 2**32, 512, dtype=np.uint32))
    differences[(1,)](_cuda(a), _cuda(b), c, d, BLOCK=512)
    np.testing.assert_equal(c.cpu().numpy(), a - b)
    np.testing.assert_equal(d.cpu().numpy(), b - a)

    floats = rng.standard_normal(512).astype(np.float32) * 200
    c, d = _cuda(rng.integers(1, 99, 512, dtype=np.int32)), _cuda(rng.standard_normal(512).astype(np.float32))
    widen_and_max_packed[(1,)](_cuda(bytes_in), _cuda(floats), c, d, BLOCK=512)
    np.testing.assert_equal(c.cpu().numpy(), bytes_in.astype(np.int32))
    np.testing.assert_equal(d.cpu().numpy(), np.maximum(bytes_in.astype(np.float32), floats))

    out = _cuda(rng.integers(1, 2**32, 128, dtype=np.uint32))
    add_seven_tied[(1,)](_cuda(a[:128]), out, BLOCK=128)
    np.testing.assert_equal(out.cpu().numpy(), a[:128] + np.uint32(7))

    h1, h2 = rng.standard_normal(256).astype(np.float16), rng.standard_normal(256).astype(np.float16)
    out = _cuda(rng.standard_normal(256).astype(np.float16))
    half_pairs[(1,)](_cuda(h1), _cuda(h2), out, BLOCK=256)
    # the sum of two fp16 values is exact in fp64: rounding it once is what add.rn.f16x2 does
    np.testing.assert_equal(out.cpu().numpy(), (h1.astype(np.float64) + h2).astype(np.float16))

    out = _cuda(rng.integers(1, 2**32, 64, dtype=np.uint32))
    small_block[(1,)](_cuda(a[:64]), out, PURE=True, BLOCK=64)
    np.testing.assert_equal(out.cpu().numpy(), a[:64] + np.uint32(1))

    signed = rng.integers(-2**31, 2**31, 128, dtype=np.int32)
    out = _cuda(rng.integers(1, 99, 128, dtype=np.int32))
    swap_mapped[(1,)](_cuda(signed), out, PURE=True, BLOCK=128)
    np.testing.assert_equal(out.cpu().numpy(), np.where(signed > 0, signed.byteswap(), signed))

    tids = _cuda(np.full(128, -1, dtype=np.int32))
    thread_ids[(1,)](tids, BLOCK=128)
    # every element holds the id of a thread that owns it (thread i owns element i here)
    np.testing.assert_equal(tids.cpu().numpy(), np.arange(128, dtype=np.int32))
