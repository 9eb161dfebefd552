"""`JITFunction._unsafe_update_src`: Triton's tests make variants of a template
kernel by editing its source (`patch_kernel` of upstream's test_core); the next
launch must run the new source, not a cached compile of the old one."""

from __future__ import annotations

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl


@triton.jit
def _template(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, x + 1.0)


@pytest.fixture
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _variant(expression: str):
    kernel = triton.JITFunction(_template.fn)
    kernel._unsafe_update_src(kernel.src.replace("x + 1.0", expression))
    return kernel


def test_each_variant_runs_its_own_source(interpreter):
    x = np.random.default_rng().uniform(1, 2, 32).astype(np.float32)
    out = np.full_like(x, np.nan)
    kernel = _variant("x * 3.0")
    kernel[(1,)](x, out, BLOCK=32)
    np.testing.assert_allclose(out, x * 3, rtol=1e-6)
    before = kernel.cache_key
    kernel._unsafe_update_src(kernel.src.replace("x * 3.0", "x - 5.0"))
    assert kernel.cache_key != before
    out[:] = np.nan
    kernel[(1,)](x, out, BLOCK=32)
    np.testing.assert_allclose(out, x - 5, rtol=1e-6)
    _template[(1,)](x, out, BLOCK=32)
    np.testing.assert_allclose(out, x + 1, rtol=1e-6)


def test_new_source_must_be_a_def():
    kernel = triton.JITFunction(_template.fn)
    with pytest.raises(ValueError, match="_template: the new source must start with `def`"):
        kernel._unsafe_update_src("x = 1\n")
