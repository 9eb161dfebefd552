"""`tritone.tools.tensor_descriptor.TensorDescriptor`: the host-side checks of upstream
Triton 3.6's, on torch and numpy tensors; kernels cannot take one yet."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone.tools.tensor_descriptor import TensorDescriptor


def _cases():
    base = torch.zeros(64, 64, dtype=torch.float16)
    ints = torch.zeros(32, 32, dtype=torch.int32)
    return {
        "2-d": lambda D: D.from_tensor(base, [16, 32]),
        "1-d": lambda D: D.from_tensor(torch.zeros(128), [64]),
        "5-d": lambda D: D.from_tensor(torch.zeros(2, 2, 2, 2, 8), [1, 1, 1, 2, 8]),
        "6-d": lambda D: D.from_tensor(torch.zeros(2, 2, 2, 2, 2, 8), [1, 1, 1, 1, 2, 8]),
        "transposed": lambda D: D.from_tensor(base.t(), [16, 16]),
        "strides of 12 bytes": lambda D: D.from_tensor(torch.zeros(4, 3), [4, 2]),
        "base off by 2 bytes": lambda D: D.from_tensor(base.view(-1)[1:65], [64]),
        "block of 3": lambda D: D.from_tensor(base, [16, 3]),
        "nan padding of ints": lambda D: D.from_tensor(ints, [8, 8], padding="nan"),
        "nan padding of floats": lambda D: D.from_tensor(base, [8, 8], padding="nan"),
        "bad padding": lambda D: D.from_tensor(base, [8, 8], padding="inf"),
        "rank mismatch": lambda D: D(base, [64, 64], [64, 1], [16]),
        "empty dim": lambda D: D(base, [0, 64], [64, 1], [16, 16]),
        "explicit": lambda D: D(base, [32, 64], [64, 1], [32, 16]),
        "negative stride": lambda D: D(base, [32, 64], [-64, 1], [32, 16]),
        "block over the element limit": lambda D: D(torch.zeros(4096, 512), [4096, 512], [512, 1], [2048, 1024]),
    }


def _accepts(make, descriptor_class) -> bool:
    try:
        make(descriptor_class)
    except (AssertionError, ValueError, TypeError):
        return False
    return True


@pytest.mark.parametrize("case", list(_cases()))
def test_same_checks_as_upstream(case):
    upstream = pytest.importorskip("triton.tools.tensor_descriptor")
    make = _cases()[case]
    assert _accepts(make, TensorDescriptor) == _accepts(make, upstream.TensorDescriptor)


def test_what_it_keeps_and_says():
    base = torch.zeros(64, 64, dtype=torch.float16)
    desc = TensorDescriptor.from_tensor(base[:, :32], [16, 32])
    assert desc.base.data_ptr() == base.data_ptr() and desc.shape == [64, 32] and desc.strides == [64, 1]
    assert desc.block_shape == [16, 32] and desc.padding == "zero"
    desc.block_shape = [32, 32]  # autotuning pre-hooks set each config's block
    assert desc.block_shape == [32, 32]
    with pytest.raises(ValueError, match="contiguous"):
        TensorDescriptor.from_tensor(base.t(), [16, 16])
    with pytest.raises(ValueError, match="16 bytes"):
        TensorDescriptor.from_tensor(torch.zeros(4, 3), [4, 2])


def test_numpy_integers_become_ints():
    base = torch.zeros(64, 64, dtype=torch.float16)
    desc = TensorDescriptor(base, np.array([32, 64]), (np.int64(64), 1), [np.int32(32), 16])
    assert [type(v) for v in (*desc.shape, *desc.strides, *desc.block_shape)] == [int] * 6
    assert desc.shape == [32, 64] and desc.strides == [64, 1] and desc.block_shape == [32, 16]


def test_numpy_arrays():
    array = np.zeros((16, 32), np.float32)
    desc = TensorDescriptor.from_tensor(array, [8, 16])
    assert desc.shape == [16, 32] and desc.strides == [32, 1]
    with pytest.raises(ValueError, match="contiguous"):
        TensorDescriptor.from_tensor(array.T, [8, 8])


@triton.jit
def _sum_through_a_descriptor(desc, out):
    tl.store(out, tl.sum(tl.sum(desc.load([0, 0]), 1), 0))


def test_a_kernel_reads_through_one():
    x = torch.randn(16, 16)
    out = torch.full((1,), float("nan"))
    _sum_through_a_descriptor[(1,)](TensorDescriptor.from_tensor(x, [16, 16]), out)
    torch.testing.assert_close(out[0], x.sum(), rtol=1e-5, atol=1e-5)
