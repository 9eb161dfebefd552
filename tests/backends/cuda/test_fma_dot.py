"""The FMA dot path (`dot/fma.py`, `dot/accumulate.py`) on the kernel shape of
Inductor's mm template with `allow_tf32=False`: `acc += tl.dot(a, b)` over a
pipelined K loop of fp32 tiles, which runs on FMAs on every target.

Checked without a GPU: the dot accumulates straight into `acc` (upstream's
combine), so each result element is one chain of fused multiply-adds in k
order, bit for bit (the generated C++ run by the CPU emulator); the
interpreter keeps computing `acc + dot(a, b)`."""

from __future__ import annotations

import cuda_emulator
import numpy as np
import pytest
from test_dot_compile import ir_module

import tritone as triton
import tritone.language as tl
from tritone.backends.cuda.lowering import generate_cuda

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
