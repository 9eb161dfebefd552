"""tl.dot on the GPU against torch: every dtype and input precision, shapes from
16x16x16 up, transposed operands, batched dots, the tiled matmul with masked
edges, the software pipeline and a fused activation, and flash attention
(causal or not) against torch's scaled_dot_product_attention.

Kernels run through the public API (`kernel[grid](...)`). Run them on each dot
path of one GPU with TRITONE_TARGET=sm_61 (FMA), sm_75 (Turing mma), sm_80
(Ampere mma, cp.async) or unset (the GPU's own architecture)."""

from __future__ import annotations

import math

import pytest
from test_dot_compile import (
    attention_block_ptr_kernel,
    attention_kernel,
    batched_kernel,
    block_sparse_kernel,
    dot_kernel,
    matmul_kernel,
    subblock_sparse_kernel,
)

import tritone as triton
import tritone.language as tl

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def on_the_gpu(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    from tritone.backends.sites import active_target

    if active_target().backend != "cuda":
        pytest.skip("kernels do not run on a GPU here")
    torch.backends.cuda.matmul.allow_tf32 = False


def launch(kernel, grid, *args, **kwargs):
    """`kernel[grid](*args, **kwargs)`; on targets below 8.0 a block too big for their
    shared memory (48 KB on Pascal, 64 KB on Turing) skips the test instead."""
    from tritone.backends.sites import active_target
    from tritone.errors import OutOfResources

    try:
        kernel[grid](*args, **kwargs)
    except OutOfResources as error:
        if int(active_target().arch) >= 80:
            raise
        pytest.skip(f"does not fit sm_{active_target().arch}: {error}")


_TORCH = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "i8": "int8", "fp8e4nv": "float8_e4m3fn",
          "fp8e5": "float8_e5m2", "i32": "int32"}
_TL = {"fp32": tl.float32, "fp16": tl.float16, "i32": tl.int32}


def _torch_dtype(name):
    return getattr(torch, _TORCH[name])


def random_operand(shape, dtype: str, seed: int):
    """Fresh random values exactly representable in `dtype` (never all zeros)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    if dtype == "i8":
        return torch.randint(-128, 128, shape, device="cuda", dtype=torch.int8, generator=gen)
    x = torch.randn(shape, device="cuda", generator=gen)
    if dtype.startswith("fp8"):
        x = x * 4
    return x.to(_torch_dtype(dtype))


def poisoned(shape, dtype: str):
    out = torch.empty(shape, device="cuda", dtype=_torch_dtype(dtype))
    if out.is_floating_point():
        out.fill_(float("nan"))
    else:
        out.fill_(-12345)
    return out


def tf32(x):
    """fp32 with the low 13 mantissa bits dropped (what the interpreter's tf32 dot reads)."""
    return (x.float().view(torch.int32) & -8192).view(torch.float32)


def reference(a, b, dtype: str, precision: str):
    a64, b64 = (tf32(a), tf32(b)) if dtype == "fp32" and precision == "tf32" else (a, b)
    if dtype == "i8":
        return torch.matmul(a.long().cpu(), b.long().cpu()).cuda()
    return torch.matmul(a64.double(), b64.double())


def check(out, ref, dtype: str, acc: str, precision: str, k: int):
    """`out` against the exact `ref` within what the dot's arithmetic allows: exact for
    int8; one fp16 rounding per step for an fp16 accumulator; tf32 inputs (the
    reference already truncated them; rounding instead of truncating moves each
    product by at most 2^-11); fp32 sums otherwise (products of fp16, bf16, fp8
    values are exact, tf32x3 and ieee nearly)."""
    if acc == "i32":
        assert torch.equal(out.long(), ref.long())
        return
    largest = ref.abs().max().item()
    if acc == "fp16":
        atol, rtol = 1e-2 * largest, 1e-2
    elif dtype == "fp32" and precision == "tf32":
        atol, rtol = 2e-3 * k ** 0.5, 1e-3
    elif dtype.startswith("fp8"):
        # Hopper's fp8 tensor cores (wgmma) add the products with fewer mantissa bits than fp32
        atol, rtol = 2e-5 * k * largest + 1e-6, 1e-4
    else:
        atol, rtol = 4e-6 * k * largest + 1e-6, 1e-5
    torch.testing.assert_close(out.double(), ref.double(), atol=atol, rtol=rtol)


# (operand dtype, accumulator/result dtype, input precision)
FLAVOURS = [("fp16", "fp32", "tf32"), ("fp16", "fp16", "tf32"), ("bf16", "fp32", "tf32"), ("fp32", "fp32", "tf32"),
            ("fp32", "fp32", "tf32x3"), ("fp32", "fp32", "ieee"), ("i8", "i32", "tf32"), ("fp8e4nv", "fp32", "tf32"),
            ("fp8e5", "fp32", "tf32")]
SHAPES = [(16, 16, 16), (32, 64, 32), (64, 32, 64), (128, 128, 64)]


def _block_dot(dtype, acc, precision, m, n, k, trans_a, trans_b, num_warps=4, seed=0):
    if dtype in ("i8", "fp8e4nv", "fp8e5"):
        k = max(k, 32)
    a = random_operand((k, m) if trans_a else (m, k), dtype, seed)
    b = random_operand((n, k) if trans_b else (k, n), dtype, seed + 1)
    a_view, b_view = (a.T if trans_a else a), (b.T if trans_b else b)
    c = poisoned((m, n), acc)
    launch(dot_kernel, (1,), a, b, c, a_view.stride(0), a_view.stride(1), b_view.stride(0), b_view.stride(1),
           M=m, N=n, K=k, TRANS_A=trans_a, TRANS_B=trans_b, ACC=_TL[acc], PRECISION=precision, num_warps=num_warps)
    check(c, reference(a_view, b_view, dtype, precision), dtype, acc, precision, k)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype, acc, precision", FLAVOURS, ids=lambda v: str(v))
def test_block_dot(dtype, acc, precision, shape):
    _block_dot(dtype, acc, precision, *shape, trans_a=False, trans_b=False)


@pytest.mark.parametrize("trans_a, trans_b", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype, acc, precision", [("fp16", "fp32", "tf32"), ("bf16", "fp32", "tf32"),
                                                   ("fp32", "fp32", "tf32"), ("i8", "i32", "tf32"),
                                                   ("fp8e4nv", "fp32", "tf32")], ids=lambda v: str(v))
def test_block_dot_transposed_operands(dtype, acc, precision, trans_a, trans_b):
    _block_dot(dtype, acc, precision, 64, 32, 64, trans_a, trans_b, seed=7)


@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_block_dot_warps(num_warps):
    _block_dot("fp16", "fp32", "tf32", 64, 64, 32, False, True, num_warps=num_warps, seed=3)


@pytest.mark.parametrize("default", ["ieee", "tf32x3", "tf32"])
def test_fp32_default(monkeypatch, default):
    """A dot without input_precision follows TRITON_F32_DEFAULT."""
    monkeypatch.setenv("TRITON_F32_DEFAULT", default)
    a, b = random_operand((64, 64), "fp32", 21), random_operand((64, 64), "fp32", 22)
    c = poisoned((64, 64), "fp32")
    launch(dot_kernel, (1,), a, b, c, 64, 1, 64, 1, M=64, N=64, K=64, TRANS_A=False, TRANS_B=False, ACC=tl.float32,
           PRECISION=None)
    check(c, reference(a, b, "fp32", default), "fp32", "fp32", default, 64)


@pytest.mark.parametrize("batch, m, n, k, dtype", [(2, 32, 32, 32, "fp16"), (4, 16, 64, 32, "bf16"),
                                                   (2, 16, 16, 16, "fp32")])
def test_batched_dot(batch, m, n, k, dtype):
    a = random_operand((batch, m, k), dtype, 11)
    b = random_operand((batch, k, n), dtype, 12)
    c = poisoned((batch, m, n), "fp32")
    launch(batched_kernel, (1,), a, b, c, B=batch, M=m, N=n, K=k)
    check(c, reference(a, b, dtype, "tf32"), dtype, "fp32", "tf32", k)


def _matmul(m, n, k, dtype="fp16", out="fp16", block=(64, 64, 32), num_warps=4, num_stages=3, loop_stages=None,
            activation="", precision="tf32", seed=0):
    a = random_operand((m, k), dtype, seed)
    b = random_operand((k, n), dtype, seed + 1)
    c = poisoned((m, n), out)
    bm, bn, bk = block
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    launch(matmul_kernel, grid, a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
           c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, ACTIVATION=activation, PRECISION=precision,
           LOOP_STAGES=loop_stages, num_warps=num_warps, num_stages=num_stages)
    ref = reference(a, b, dtype, precision)
    if activation == "leaky_relu":
        ref = torch.where(ref >= 0, ref, 0.01 * ref)
    return c, ref


@pytest.mark.parametrize("m, n, k", [(256, 256, 128), (100, 77, 65), (129, 255, 96), (16, 16, 16)])
def test_matmul_sizes(m, n, k):
    c, ref = _matmul(m, n, k)
    torch.testing.assert_close(c.double(), ref.to(torch.float16).double(), atol=2e-2, rtol=2e-3)


@pytest.mark.parametrize("num_stages, loop_stages", [(1, None), (2, None), (3, None), (4, None), (4, 2), (3, 1)])
def test_matmul_pipeline_stages(num_stages, loop_stages):
    c, ref = _matmul(192, 320, 512, num_stages=num_stages, loop_stages=loop_stages, seed=5)
    torch.testing.assert_close(c.double(), ref.to(torch.float16).double(), atol=5e-2, rtol=2e-3)


def test_matmul_large_tiles_fused_activation():
    c, ref = _matmul(512, 512, 256, block=(128, 256, 64), num_warps=8, activation="leaky_relu", seed=9)
    torch.testing.assert_close(c.double(), ref.to(torch.float16).double(), atol=5e-2, rtol=2e-3)


@pytest.mark.parametrize("dtype, precision", [("bf16", "tf32"), ("fp32", "tf32"), ("fp32", "ieee"),
                                              ("fp32", "tf32x3")])
def test_matmul_dtypes(dtype, precision):
    c, ref = _matmul(192, 128, 160, dtype=dtype, out="fp32", precision=precision, seed=13)
    check(c, ref, dtype, "fp32", precision, 160)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("z, h, n_ctx, head_dim, block_m, block_n, num_warps",
                         [(2, 3, 256, 64, 64, 32, 4), (1, 2, 512, 128, 128, 64, 8), (1, 2, 512, 64, 128, 64, 4)])
def test_attention_forward(z, h, n_ctx, head_dim, block_m, block_n, num_warps, causal):
    gen = torch.Generator(device="cuda").manual_seed(17)
    q, k, v = (torch.randn((z, h, n_ctx, head_dim), device="cuda", generator=gen).half() for _ in range(3))
    sm_scale = 1.0 / math.sqrt(head_dim)
    out = torch.full_like(q, float("nan"))
    grid = (n_ctx // block_m, z * h)
    launch(attention_kernel, grid, q, k, v, sm_scale, out, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3],
           *out.stride()[:3], h, n_ctx, HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
           num_warps=num_warps, num_stages=3)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal,
                                                           scale=sm_scale)
    torch.testing.assert_close(out.float(), ref, atol=1e-2, rtol=1e-2)


def test_attention_with_block_pointers():
    gen = torch.Generator(device="cuda").manual_seed(19)
    n_ctx, head_dim = 256, 64
    q, k, v = (torch.randn((n_ctx, head_dim), device="cuda", generator=gen).half() for _ in range(3))
    out = torch.full_like(q, float("nan"))
    sm_scale = 0.125
    launch(attention_block_ptr_kernel, (n_ctx // 64,), q, k, v, sm_scale, out, q.stride(0), k.stride(0), v.stride(0),
           out.stride(0), n_ctx, HEAD_DIM=head_dim, BLOCK_M=64, BLOCK_N=32, num_warps=4, num_stages=3)
    ref = torch.nn.functional.scaled_dot_product_attention(q[None].float(), k[None].float(), v[None].float(),
                                                           scale=sm_scale)[0]
    torch.testing.assert_close(out.float(), ref, atol=1e-2, rtol=1e-2)



# Hopper's wgmma path: warpgroup tiles, K- and MN-major operands of every swizzle
# width (32, 64, 128 bytes; column blocks past 128), accumulators left in flight
# over a pipelined K loop with a masked last block. On other GPUs these run the
# mma.sync path and must give the same results.
@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m, n, k, num_warps", [(64, 64, 16, 4), (64, 32, 32, 4), (128, 128, 64, 4),
                                                (128, 256, 64, 8), (128, 64, 128, 8)])
@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp8e4nv", "fp8e5", "i8"])
def test_warpgroup_block_dot(dtype, m, n, k, num_warps, trans_a, trans_b):
    _block_dot(dtype, "i32" if dtype == "i8" else "fp32", "tf32", m, n, k, trans_a, trans_b, num_warps=num_warps,
               seed=23)


@pytest.mark.parametrize("block, num_warps, num_stages", [((128, 256, 64), 8, 3), ((128, 128, 32), 4, 4),
                                                          ((64, 128, 64), 4, 2), ((128, 128, 64), 8, 5)])
def test_warpgroup_matmul_pipeline(block, num_warps, num_stages):
    c, ref = _matmul(384, 512, 1040, block=block, num_warps=num_warps, num_stages=num_stages, seed=29)
    torch.testing.assert_close(c.double(), ref.to(torch.float16).double(), atol=5e-2, rtol=2e-3)


@pytest.mark.parametrize("k_major_b", [True, False])
def test_warpgroup_fp8_matmul(k_major_b):
    """fp8 wgmma reads K-major tiles only: b stored [N, K] goes straight in (pipelined),
    b stored [K, N] is transposed on its way into shared memory."""
    m, n, k = 256, 256, 512
    a = random_operand((m, k), "fp8e4nv", 31)
    b = random_operand((n, k), "fp8e4nv", 32).T if k_major_b else random_operand((k, n), "fp8e4nv", 32)
    c = poisoned((m, n), "fp16")
    bm, bn, bk = 128, 256, 64
    launch(matmul_kernel, (triton.cdiv(m, bm) * triton.cdiv(n, bn),), a, b, c, m, n, k, a.stride(0), a.stride(1),
           b.stride(0), b.stride(1), c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
           ACTIVATION="", PRECISION="tf32", LOOP_STAGES=None, num_warps=8, num_stages=3)
    ref = reference(a, b, "fp8e4nv", "tf32")
    # sums up to ~1500 rounded to fp16 (a unit in the last place up to 1), added with
    # fewer mantissa bits than fp32 by Hopper's fp8 tensor cores
    torch.testing.assert_close(c.double(), ref.to(torch.float16).double(), atol=2e-3 * ref.abs().max().item(),
                               rtol=2e-3)


@pytest.mark.parametrize("block, num_warps", [((128, 256, 32), 8), ((64, 64, 32), 4), ((128, 128, 32), 8)])
def test_fp8_results_of_tiled_matmuls_are_stored_exactly(block, num_warps):
    """`test_a_dot_result_stored_as_fp8_moves_through_shared_memory_in_pairs` over tiles
    of other shapes and warps, several programs and a masked store: fp16 operands of
    small integers, so that the sums are exact, give torch's fp8 conversion bit for bit."""
    m, n, k = 256, 256, 32
    gen = torch.Generator(device="cuda").manual_seed(41)
    a = torch.randint(-3, 4, (m, k), device="cuda", generator=gen).to(torch.float16)
    b = torch.randint(-3, 4, (k, n), device="cuda", generator=gen).to(torch.float16)
    c = poisoned((m, n), "fp8e4nv")
    bm, bn, bk = block
    launch(matmul_kernel, (triton.cdiv(m, bm) * triton.cdiv(n, bn),), a, b, c, m, n, k, a.stride(0), a.stride(1),
           b.stride(0), b.stride(1), c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
           ACTIVATION="", PRECISION="tf32", LOOP_STAGES=None, num_warps=num_warps, num_stages=3)
    expected = (a.float() @ b.float()).to(torch.float8_e4m3fn)
    wrong = (c.view(torch.uint8) != expected.view(torch.uint8)).sum().item()
    assert wrong == 0, f"{wrong} of {m * n} fp8 results differ"


@pytest.mark.parametrize("num_stages", [2, 3, 4])
def test_block_sparse_loop_with_index_loads_run_ahead(num_stages):
    # The next block comes from a table read in the loop (pipelined ahead of its trip, guarded);
    # blocks repeat and jump back, and the table's end is the last element of its tensor.
    bm = bn = d = 64
    q = random_operand((bm, d), "fp16", 1)
    k = random_operand((12 * bn, d), "fp16", 2)
    v = random_operand((12 * bn, d), "fp16", 3)
    for blocks in ([3], [5, 0, 11, 5, 2], [7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3]):
        idx = torch.tensor(blocks, dtype=torch.int32, device="cuda")
        out = poisoned((bm, d), "fp32")
        launch(block_sparse_kernel, (1,), q, k, v, idx, out, len(blocks), idx, bm, bn, d, False,
               num_stages=num_stages)
        expected = torch.zeros(bm, d, dtype=torch.float32, device="cuda")
        for block in blocks:
            rows = slice(block * bn, (block + 1) * bn)
            expected += (q.float() @ k[rows].float().T).half().float() @ v[rows].float()
        torch.testing.assert_close(out, expected, rtol=2e-2, atol=2e-1)


@pytest.mark.parametrize("num_stages", [2, 3, 4])
def test_sub_block_walk_with_jumps_matches_torch(num_stages):
    # FlexAttention's sliding-window walk: sparse blocks of 128 rows in tiles of 32 rows,
    # jumping over blocks not listed, the step computed from the trip number
    bm, bn, d, sparse = 64, 32, 64, 128
    q = random_operand((bm, d), "fp16", 1)
    k = random_operand((8 * sparse, d), "fp16", 2)
    v = random_operand((8 * sparse, d), "fp16", 3)
    for blocks in ([3], [0, 2], [1, 2, 5, 7], [6, 2, 4]):
        idx = torch.tensor(blocks, dtype=torch.int32, device="cuda")
        out = poisoned((bm, d), "fp32")
        launch(subblock_sparse_kernel, (1,), q, k, v, idx, len(blocks), out, bm, bn, d, sparse,
               num_stages=num_stages)
        expected = torch.zeros(bm, d, dtype=torch.float32, device="cuda")
        for block in blocks:
            for tile in range(sparse // bn):
                rows = slice(block * sparse + tile * bn, block * sparse + (tile + 1) * bn)
                expected += (q.float() @ k[rows].float().T).half().float() @ v[rows].float()
        torch.testing.assert_close(out, expected, rtol=2e-2, atol=2e-1)


@triton.jit
def _dot_to_fp8(a_ptr, b_ptr, c_ptr, stride_cm, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    acc = tl.dot(tl.load(a_ptr + rm[:, None] * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * N + rn[None, :]))
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float8e4nv), mask=rm[:, None] < M)


@pytest.mark.parametrize("num_warps", [4, 8])
def test_a_dot_result_stored_as_fp8_moves_through_shared_memory_in_pairs(num_warps):
    # The tensor cores' fragments give each thread column pairs; cast to fp8 they reach the
    # store's layout through shared memory two bytes at a time, or on sm_90 four 8x8
    # matrices of byte pairs at a time by stmatrix (codegen_layout._PAIRED_CHUNK). Small
    # integers keep every sum exact, so the fp8 bits (saturating at 448) must be torch's.
    a = torch.randint(-3, 4, (128, 64), device="cuda").to(torch.float16)
    b = torch.randint(-3, 4, (64, 128), device="cuda").to(torch.float16)
    c = torch.full((128, 128), 0x55, dtype=torch.uint8, device="cuda").view(torch.float8_e4m3fn)
    from tritone.backends.sites import active_target

    compiled = _dot_to_fp8[(1,)](a, b, c, c.stride(0), M=128, N=128, K=64, num_warps=num_warps)
    arch = int(active_target().arch)
    if arch >= 90:
        assert "tt_stmatrix_x4(" in compiled.asm["cuda"], "byte pairs through shared memory by stmatrix"
    elif arch >= 80:  # an mma fragment (older targets' dots may store directly)
        assert "tt_w2" in compiled.asm["cuda"], "byte pairs through shared memory"
    expected = (a.float() @ b.float()).clamp(-448, 448).to(torch.float8_e4m3fn)
    assert torch.equal(c.view(torch.uint8), expected.view(torch.uint8))
