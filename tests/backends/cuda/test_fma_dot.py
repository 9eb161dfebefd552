"""The FMA dot path (`dot/fma.py`, `dot/accumulate.py`) on the kernel shape of
Inductor's mm template with `allow_tf32=False`: `acc += tl.dot(a, b)` over a
pipelined K loop of fp32 tiles, which runs on FMAs on every target.

Checked without a GPU: the dot accumulates straight into `acc` (upstream's
combine), so each result element is one chain of fused multiply-adds in k
order, bit for bit (the generated C++ run by the CPU emulator), for every
orientation of the operands; the interpreter keeps computing
`acc + dot(a, b)`; operands are read from shared memory in 16-byte vectors,
and ptxas gives the 64x128x32 config of the H100 table no more registers than
upstream's 168 (three CTAs of 128 threads per SM)."""

from __future__ import annotations

import re
import subprocess

import cuda_emulator
import numpy as np
import pytest
from test_dot_compile import _cuobjdump, dot_kernel, ir_module, sass_loops

import tritone as triton
import tritone.language as tl
from tritone.backends.cuda.lowering import generate_cuda
from tritone.errors import OutOfResources

needs_gxx = pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")


@triton.jit
def accumulating_matmul(a_ptr, b_ptr, c_ptr, K, M: tl.constexpr, N: tl.constexpr, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ALSO_STORE_DOT: tl.constexpr):
    """c = a @ b (row-major, contiguous) as Inductor's template computes it; with
    ALSO_STORE_DOT the last trip's `tl.dot(a, b)` is stored after the sum, c[M:]."""
    pid_m = tl.program_id(0) // (N // BLOCK_N)
    pid_n = tl.program_id(0) % (N // BLOCK_N)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    last = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        product = tl.dot(a, b, input_precision="ieee")
        acc += product
        if ALSO_STORE_DOT:
            last = product
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
    if ALSO_STORE_DOT:
        tl.store(c_ptr + (M + rm[:, None]) * N + rn[None, :], last)


_SIG = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "K": "i32"}


def _module(arch, m, n, block, also_store_dot=False, num_warps=4, num_stages=3):
    consts = {"M": m, "N": n, "BLOCK_M": block[0], "BLOCK_N": block[1], "BLOCK_K": block[2],
              "ALSO_STORE_DOT": also_store_dot}
    return ir_module(accumulating_matmul, _SIG, consts, arch, num_warps, num_stages)


def _dots(module):
    return [op for op in module.kernel.walk() if op.name == "dot"]


@pytest.mark.parametrize("arch", [61, 80, 90])
def test_fma_dot_accumulates_into_the_loop_sum(arch):
    module = _module(arch, 64, 64, (32, 32, 16))
    generate_cuda(module, arch)
    (dot,) = _dots(module)
    loop = next(op for op in module.kernel.walk() if op.name == "for")
    assert dot.attrs["implementation"] == "fma"
    # the accumulator is the loop-carried sum itself, and the dot's result is what the loop yields
    assert dot.operands[2] in loop.regions[0].args
    assert dot.results[0] in loop.regions[0].terminator.operands
    assert not any(op.name == "add" and dot.results[0] in op.operands for op in module.kernel.walk())


def test_a_dot_read_elsewhere_keeps_its_own_sum():
    module = _module(90, 64, 64, (32, 32, 16), also_store_dot=True)
    generate_cuda(module, 90)
    (dot,) = _dots(module)
    zero = dot.operands[2].defining_op
    assert zero is not None and zero.name == "constant" and zero.attrs["value"] == 0.0


@triton.jit
def two_products(a_ptr, b_ptr, c_ptr):
    """c = c + a0 @ b0 + a1 @ b1 (16x16 blocks, each operand two blocks one after the other)."""
    r = tl.arange(0, 16)
    offsets = r[:, None] * 16 + r[None, :]
    acc = tl.load(c_ptr + offsets)
    acc += tl.dot(tl.load(a_ptr + offsets), tl.load(b_ptr + offsets), input_precision="ieee")
    acc = tl.dot(tl.load(a_ptr + 256 + offsets), tl.load(b_ptr + 256 + offsets), input_precision="ieee") + acc
    tl.store(c_ptr + offsets, acc)


def test_chained_products_accumulate_one_into_the_next():
    module = ir_module(two_products, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}, {}, 90)
    generate_cuda(module, 90)
    first, second = _dots(module)
    assert first.operands[2].defining_op.name == "load"
    assert second.operands[2] is first.results[0]
    assert not any(op.name == "add" and op.results[0].type.scalar.is_floating() for op in module.kernel.walk())


@pytest.mark.parametrize("block, stages, required", [((64, 128, 128), 4, 294912), ((128, 128, 64), 5, 262144),
                                                     ((64, 64, 128), 5, 262144), ((128, 128, 128), 4, 393216)])
def test_stages_that_do_not_fit_are_refused_with_upstreams_byte_count(block, stages, required):
    """Upstream's sm_90 FMA dots stage as many tiles (num_stages - 1 buffers of each
    unswizzled operand tile): its `metadata.shared` for these Inductor configs is
    the same, and it raises the same OutOfResources when it loads them on an H100."""
    module = _module(90, 4096, 4096, block, num_stages=stages)
    with pytest.raises(OutOfResources, match=f"shared memory, Required: {required}, Hardware limit: 232448"):
        generate_cuda(module, 90)


def _fma32(a, b, c):
    """fp32 fused multiply-add, exactly rounded, elementwise: the float64 product of
    two fp32 values is exact; the float64 sum with its exact error (TwoSum) decides
    the one case where rounding it again to fp32 could go wrong (a tie)."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = c.astype(np.float64)
    s = p + c64
    back = s - p
    err = (p - (s - back)) + (c64 - back)
    r = s.astype(np.float32)
    up, down = np.nextafter(r, np.float32(np.inf)), np.nextafter(r, np.float32(-np.inf))
    r64 = r.astype(np.float64)
    tie_up = s == (r64 + up.astype(np.float64)) / 2
    tie_down = s == (r64 + down.astype(np.float64)) / 2
    r = np.where(tie_up & (err > 0), up, r)
    return np.where(tie_down & (err < 0), down, r)


def _fma_chain(a, b, k_block=None):
    """a @ b summed as chains of fp32 FMAs in k order; with `k_block`, each block of
    k summed from zero first and added to the running sum (the unfolded order)."""
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    partial = acc.copy()
    for k in range(a.shape[1]):
        if k_block is None:
            acc = _fma32(a[:, k:k + 1], b[k:k + 1, :], acc)
            continue
        partial = _fma32(a[:, k:k + 1], b[k:k + 1, :], partial)
        if (k + 1) % k_block == 0:
            acc, partial = acc + partial, np.zeros_like(partial)
    return acc


def test_the_exact_fma_reference():
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(4096).astype(np.float32) for _ in range(3))
    wide = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
    got = _fma32(a, b, c)
    assert np.all(np.abs(got.astype(np.float64) - wide) <= np.spacing(np.abs(got)) / 2)
    # a tie of the float64 sum broken by the product's low bits: 1 + 2^-24 + 2^-60 rounds up
    x = np.float32(1 + 2.0 ** -12)
    y = np.float32(1 + 2.0 ** -12 - 2.0 ** -23)
    exact_tie = _fma32(np.array([x]), np.array([y]), np.array([np.float32(0)]))
    assert exact_tie[0] == np.float32(x.astype(np.float64) * y.astype(np.float64))


@needs_gxx
@pytest.mark.parametrize("arch, block, stages", [(90, (32, 32, 16), 3), (80, (16, 32, 32), 2), (61, (32, 16, 16), 3)])
def test_emulated_fma_matmul_is_one_fma_chain_per_element(arch, block, stages):
    """Every element of c is fma(a[m, K-1], b[K-1, n], ... fma(a[m, 0], b[0, n], 0)):
    what upstream's FMA dot gives, not the sum of per-tile partial sums."""
    m, n, k = 64, 64, 96
    source, _, metadata = generate_cuda(_module(arch, m, n, block, num_stages=stages), arch, {"num_warps": 4})
    kernel = cuda_emulator.Emulator(source, 4, metadata["shared"])
    rng = np.random.default_rng(arch)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, dtype=np.float32)
    kernel.launch(((m // block[0]) * (n // block[1]),), a, b, c, k)
    unfolded = _fma_chain(a, b, block[2])
    folded = _fma_chain(a, b)
    assert not np.array_equal(unfolded, folded)  # the data tells the two orders apart
    np.testing.assert_array_equal(c, folded)


def test_the_interpreter_still_adds_the_dot_to_the_sum(monkeypatch):
    """The fold is the GPU pipeline's: the interpreter rounds each `tl.dot(a, b)`
    (its float64 sum) to fp32 and adds it to the fp32 sum, trip by trip."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    m, n, k, (bm, bn, bk) = 32, 32, 64, (16, 16, 16)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = torch.full((m, n), float("nan"))
    accumulating_matmul[((m // bm) * (n // bn),)](torch.from_numpy(a), torch.from_numpy(b), c, k, M=m, N=n,
                                                   BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, ALSO_STORE_DOT=False)
    expected = np.zeros((m, n), dtype=np.float32)
    for i in range(0, m, bm):
        for j in range(0, n, bn):
            for kk in range(0, k, bk):
                a_tile, b_tile = a[i:i + bm, kk:kk + bk], b[kk:kk + bk, j:j + bn]
                block = np.matmul(a_tile.astype(np.float64), b_tile.astype(np.float64))
                expected[i:i + bm, j:j + bn] += block.astype(np.float32)
    np.testing.assert_array_equal(c.numpy(), expected)


def _dot_module(arch, dtype, m, n, k, trans_a, trans_b):
    acc = {"fp32": tl.float32, "fp64": tl.float64}[dtype]
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{dtype}", "stride_am": "i32", "stride_ak": "i32",
           "stride_bk": "i32", "stride_bn": "i32"}
    consts = {"M": m, "N": n, "K": k, "TRANS_A": trans_a, "TRANS_B": trans_b, "ACC": acc, "PRECISION": "ieee",
              "stride_am" if trans_a else "stride_ak": 1, "stride_bk" if trans_b else "stride_bn": 1}
    sig = {name: t for name, t in sig.items() if name not in consts}
    return ir_module(dot_kernel, sig, consts, arch)


def _dot_loop(source: str) -> str:
    start = source.index("for (int tt_k")
    return source[start:source.index("\n  }", start)]


def test_the_mm_template_reads_fp32_operands_in_vectors():
    """64x128x32, 4 warps (the H100 table's first config): each thread reads four
    k of each of its 16 rows of a, and four consecutive columns of b per k, in
    float4s; 256 FMAs per trip of four k, no element read alone."""
    source, _, _ = generate_cuda(_module(90, 4096, 4096, (64, 128, 32)), 90)
    loop = _dot_loop(source)
    assert loop.startswith("for (int tt_k = 0; tt_k < 32; tt_k += 4) {")
    assert len(re.findall(r"const float4 tt_op\d+ = \*reinterpret_cast<const float4\*>", loop)) == 16 + 4
    assert "const float tt_op" not in loop
    assert loop.count("fmaf(") == 256


@pytest.mark.parametrize("dtype, trans_a, trans_b, vectors", [
    ("fp32", False, False, "float4"),
    ("fp32", True, False, "float4"),   # a contiguous along m: four rows per read
    ("fp32", True, True, "float4"),
    ("fp64", False, True, "double2"),
])
def test_operand_orientations_are_read_in_vectors(dtype, trans_a, trans_b, vectors):
    source, _, _ = generate_cuda(_dot_module(90, dtype, 64, 32, 32, trans_a, trans_b), 90)
    loop = _dot_loop(source)
    assert f"const {vectors} tt_op" in loop
    assert not re.search(r"const (float|double) tt_op", loop)


def _exact_fma_dot(a, b):
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    for k in range(a.shape[1]):
        acc = _fma32(a[:, k:k + 1], b[k:k + 1, :], acc)
    return acc


@needs_gxx
@pytest.mark.parametrize("arch", [90, 61])
@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_emulated_fp32_dot_of_every_orientation_is_the_fma_chain(arch, trans_a, trans_b):
    m, n, k = 64, 32, 32
    source, _, metadata = generate_cuda(_dot_module(arch, "fp32", m, n, k, trans_a, trans_b), arch)
    rng = np.random.default_rng(17 + 2 * trans_a + trans_b)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, dtype=np.float32)
    stored_a = np.ascontiguousarray(a.T) if trans_a else a
    stored_b = np.ascontiguousarray(b.T) if trans_b else b
    # the strides left to the kernel: a's row (or k) stride, b's k (or column) stride
    cuda_emulator.Emulator(source, 4, metadata["shared"]).launch((1,), stored_a, stored_b, c, m if trans_a else k,
                                                                 k if trans_b else n)
    np.testing.assert_array_equal(c, _exact_fma_dot(a, b))


@needs_gxx
def test_emulated_fp64_dot_reads_double_pairs():
    m, n, k = 64, 32, 32
    source, _, metadata = generate_cuda(_dot_module(90, "fp64", m, n, k, False, True), 90)
    assert "const double2 tt_op" in source
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    c = np.full((m, n), np.nan)
    cuda_emulator.Emulator(source, 4, metadata["shared"]).launch((1,), a, np.ascontiguousarray(b.T), c, k, k)
    np.testing.assert_allclose(c, a @ b, rtol=1e-12, atol=1e-12)


def test_mm_template_registers_allow_three_ctas_per_sm(tmp_path):
    """ptxas's registers for the 64x128x32, 3-stage, 4-warp fp32 config on sm_90:
    at most upstream's 168 (before the fold, 221: two CTAs per SM instead of
    three), nothing in local memory, and the dot's loop is FFMAs and 128-bit
    shared loads only: 256 and 20 per trip of four k."""
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("no cuobjdump")
    from tritone.backends.cuda.bindings import libs

    source, name, metadata = generate_cuda(_module(90, 4096, 4096, (64, 128, 32)), 90)
    assert metadata["shared"] == 2 * (64 * 32 + 32 * 128) * 4
    cubin = libs.nvrtc_for(90).nvrtc.compile(source, f"{name}.cu", 90, options=["-w"]).cubin
    path = tmp_path / "mm.cubin"
    path.write_bytes(cubin)
    usage = subprocess.run([tool, "-res-usage", str(path)], capture_output=True, text=True, check=True).stdout
    sass = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    assert "LOCAL:0" in usage
    assert int(re.search(r"REG:(\d+)", usage).group(1)) <= 168
    inner = min(sass_loops(sass), key=len)
    ops = [t.split()[0] for t in inner]
    assert ops.count("FFMA") == 256 and ops.count("LDS.128") == 20 and "LDS" not in ops and "FADD" not in ops
