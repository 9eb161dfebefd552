"""Errors where Triton is strict, raised as Triton raises them: the error text
(the `CompilationError`'s `__cause__`, which Triton's own tests compare) is
Triton's, and tritone's advice on the fix comes as the `Hint:` line."""

from __future__ import annotations

import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone.compiler import ASTSource
from tritone.errors import CompilationError


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _compile_error(kernel, constexprs=None) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        triton.compile(ASTSource(fn=kernel, signature={}, constexprs=constexprs or {}))
    return info.value


@triton.jit(do_not_specialize=["N"])
def constexpr_not_specialized(N: tl.constexpr):
    pass


def test_a_constexpr_cannot_be_left_unspecialized():
    error = _compile_error(constexpr_not_specialized, {"N": 5})
    assert error.error_message == "N marked as constexpr and listed in do_not_specialize"
    assert "def constexpr_not_specialized(N: tl.constexpr):" in str(error)


def test_a_constexpr_cannot_be_left_unspecialized_at_launch():
    with pytest.raises(CompilationError, match="N marked as constexpr and listed in do_not_specialize"):
        constexpr_not_specialized[(1,)](5)


@triton.jit(do_not_specialize=["N"])
def run_time_not_specialized(X, N):
    tl.store(X, N)


def test_do_not_specialize_of_a_run_time_parameter_still_runs():
    x = torch.full((1,), -7, dtype=torch.int32)
    run_time_not_specialized[(1,)](x, 1)
    assert x.item() == 1


@triton.jit
def not_of_a_tuple():
    not (0, 0)  # noqa: B018 - the expression is the error under test


def test_not_of_a_tuple_is_an_error_at_the_not():
    error = _compile_error(not_of_a_tuple)
    assert error.__cause__ is None
    assert "not (0, 0)" in str(error) and "tuple" in error.error_message
    assert error.col_offset == 4


@triton.jit
def arange_of_six():
    tl.arange(2, 8)


def test_arange_length_error_is_triton_text_with_a_hint():
    error = _compile_error(arange_of_six)
    assert str(error.__cause__) == "arange's range must be a power of 2"
    assert "Hint: got 6 (tl.arange(2, 8))" in str(error)
    assert "tl.arange(2, 10)" in str(error) and "mask=offs < 8" in str(error)


@triton.jit
def wrong_lhs_scale():
    a = tl.full((32, 64), 0, tl.uint8)
    b = tl.full((64, 32), 0, tl.uint8)
    lhs_scale = tl.full((32, 4), 0, tl.uint8)
    rhs_scale = tl.full((32, 2), 0, tl.uint8)
    tl.dot_scaled(a, lhs_scale, "e5m2", b, rhs_scale, "e5m2", tl.full((32, 32), 0.0, tl.float32))


def test_dot_scaled_scale_shape_error_is_triton_text():
    error = _compile_error(wrong_lhs_scale)
    assert str(error.__cause__) == "lhs_scale must be a tensor of shape [32, 2]. Got ['32', '4']"
    assert "Hint: tl.dot_scaled takes one lhs_scale per 32 elements of K = 64" in str(error)
