"""The kernels this backend's speed work targets, run on the GPU against torch
(skipped without one): Inductor-style bf16 pointwise and softmax, the
Liger-style cross-entropy with its in-place gradient (bench/kernels.py), an
Inductor-style sort with positions whose reshapes keep their registers, and a
transposing copy whose store converts through shared memory. Outputs are
poisoned before each launch."""

from __future__ import annotations

import pytest
import test_codegen_size as sorts
import test_transpose_store as copies

import tritone
import tritone.language as tl
from bench.kernels import bind

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def kernels():
    return bind(tritone, tl)


def test_bf16_gelu_mul(kernels):
    n = 3 * 1024 + 5
    x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    out = torch.full_like(x, float("nan"))
    kernels.gelu_mul_bf16[(4,)](x, y, out, n, XBLOCK=1024, num_warps=4)
    expected = torch.nn.functional.gelu(x.double()) * y.double()
    torch.testing.assert_close(out.double(), expected, rtol=2 ** -7, atol=1e-6)


@pytest.mark.parametrize("rows, cols, xblock, r0_block, num_warps", [(37, 1000, 2, 1024, 4), (64, 4096, 1, 4096, 16)])
def test_bf16_softmax(kernels, rows, cols, xblock, r0_block, num_warps):
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16) * 3
    out = torch.full_like(x, float("nan"))
    kernels.softmax_bf16[((rows + xblock - 1) // xblock,)](x, out, rows, cols, XBLOCK=xblock, R0_BLOCK=r0_block,
                                                           num_warps=num_warps)
    torch.testing.assert_close(out.double(), torch.softmax(x.double(), -1), rtol=2 ** -7, atol=1e-6)


def test_cross_entropy_over_a_large_vocabulary(kernels):
    rows, vocab = 8, 128256
    logits = torch.randn(rows, vocab, device="cuda", dtype=torch.bfloat16) * 2
    labels = torch.randint(0, vocab, (rows,), device="cuda")
    work = logits.clone()
    loss = torch.full((rows,), float("nan"), device="cuda")
    kernels.cross_entropy[(rows,)](work, work.stride(0), labels, loss, vocab, BLOCK=32768, num_warps=32)
    wide = logits.double()
    expected_loss = torch.logsumexp(wide, -1) - wide.gather(1, labels[:, None])[:, 0]
    expected_grad = torch.softmax(wide, -1)
    expected_grad[torch.arange(rows, device="cuda"), labels] -= 1
    torch.testing.assert_close(loss.double(), expected_loss, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(work.double(), expected_grad, rtol=2 ** -7, atol=1e-7)


@pytest.mark.parametrize("log_n, num_warps", [(10, 8), (11, 16)])
def test_sort_with_index(log_n, num_warps):
    n = 2 ** log_n
    x = torch.randperm(n, device="cuda").float() - n / 2
    y = torch.full_like(x, float("nan"))
    positions = torch.full((n,), -1, device="cuda", dtype=torch.int32)
    sorts.sort_with_index_kernel[(1,)](x, y, positions, LOG_N=log_n, num_warps=num_warps)
    values, order = torch.sort(x)
    assert torch.equal(y, values)
    assert torch.equal(positions.long(), order)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_transposed_copy(dtype):
    ynumel, xnumel = 512, 256
    x = torch.randn(xnumel, ynumel, device="cuda").to(dtype)
    out = torch.full((ynumel, xnumel), float("nan"), device="cuda", dtype=dtype)
    copies.transpose_kernel[(xnumel // 64, ynumel // 64)](x, out, ynumel, xnumel, YBLOCK=64, XBLOCK=64)
    assert torch.equal(out, x.t())
