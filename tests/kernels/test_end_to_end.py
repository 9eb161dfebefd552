"""End-to-end kernels (vector add, softmax, layer norm, dropout, matmul, scans,
argmax, run-time loops, atomic histogram, nested helpers) against numpy/torch.

Each case draws fresh random inputs from its own seed, runs on the device of
the implementation under test (tests/kernels/_loader.py), and compares with a
numpy reference at a tolerance that fits the dtype and the GPU's arithmetic.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.kernels._cases import KERNEL_CASES, KernelCase, run_case
from tests.kernels._data import assert_equal, seed_for, tensor
from tests.kernels._loader import implementation_under_test


@pytest.fixture(scope="module")
def impl():
    return implementation_under_test()


@pytest.fixture(scope="module")
def kernels(impl):
    return impl.load()


@pytest.mark.parametrize("case", KERNEL_CASES, ids=[c.name for c in KERNEL_CASES])
def test_kernel_case(case: KernelCase, impl, kernels) -> None:
    inputs = case.make_inputs(np.random.default_rng(seed_for(case.name)))
    outputs = run_case(kernels, case, inputs, impl.device)
    case.check(inputs, outputs)


def test_windows_users_add_kernel(impl, kernels) -> None:
    # Verbatim usage from the Windows users' report: BLOCK_SIZE=1024 over torch.rand(3).
    torch.manual_seed(0)
    x = torch.rand(3, device=impl.device)
    y = torch.rand(3, device=impl.device)
    output = torch.empty_like(x)
    kernels.add_kernel[(1,)](x, y, output, x.numel(), BLOCK_SIZE=1024)
    assert_equal(output, (x + y).cpu())


def test_dropout_is_deterministic_per_seed(impl, kernels) -> None:
    rng = np.random.default_rng(seed_for("dropout determinism"))
    x = tensor(rng, (2048,), "float32", low=0.5, high=2.0).to(impl.device)
    first = kernels.run_dropout(x, 0.4, 2024)["out"].cpu()
    again = kernels.run_dropout(x, 0.4, 2024)["out"].cpu()
    other = kernels.run_dropout(x, 0.4, 2025)["out"].cpu()
    assert_equal(again, first, "same seed")
    assert ((first == 0) != (other == 0)).float().mean() > 0.2, "a different seed must drop different lanes"
