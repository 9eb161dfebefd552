"""`tritone.heuristics`: meta-parameters computed from the arguments at each
launch, alone and combined with `autotune` in either order."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone.runtime import Heuristics, autotuner


@triton.jit
def scaled_copy_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets) * scale)
    else:
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


def grid(meta):
    return (triton.cdiv(meta["n"], meta["BLOCK"]),)


def random_input(n):
    return torch.from_numpy(np.random.default_rng().standard_normal(n).astype(np.float32))


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    """CPU tensors: kernels run in the interpreter, also where a GPU is present."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def test_values_are_computed_in_order_from_the_arguments():
    seen = []

    def block(args):
        seen.append(sorted(args))
        return min(64, triton.next_power_of_2(args["n"]))

    kernel = triton.heuristics({"BLOCK": block, "EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(
        scaled_copy_kernel)
    assert isinstance(kernel, Heuristics) and kernel.fn is scaled_copy_kernel
    assert kernel.arg_names == scaled_copy_kernel.arg_names and list(kernel.values) == ["BLOCK", "EVEN"]
    for n in (100, 128, 7):
        x, y = random_input(n), torch.full((n,), float("nan"))
        compiled = kernel[grid](x, y, n, 2.5)
        torch.testing.assert_close(y, x * 2.5, rtol=0, atol=0)
        constants = dict(zip(scaled_copy_kernel.arg_names, range(6)))
        assert compiled.src.constants[(constants["BLOCK"],)] == min(64, triton.next_power_of_2(n))
        assert compiled.src.constants[(constants["EVEN"],)] == (n % min(64, triton.next_power_of_2(n)) == 0)
    assert seen[0] == ["grid", "n", "scale", "warmup", "x_ptr", "y_ptr"]


def test_keyword_arguments_are_seen_too():
    kernel = triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(scaled_copy_kernel)
    x, y = random_input(96), torch.zeros(96)
    compiled = kernel[grid](x, y, n=96, scale=-1.0, BLOCK=32)
    assert compiled.src.constants[(5,)] is True
    torch.testing.assert_close(y, -x, rtol=0, atol=0)


class FirstIsFastest:
    def __init__(self):
        self.calls = 0

    def __call__(self, kernel_call, quantiles):
        kernel_call()
        self.calls += 1
        return [float(self.calls)] * 3


def test_autotune_over_heuristics_sees_each_config():
    # The heuristic reads BLOCK, which only the autotuner's configs provide.
    bench = FirstIsFastest()
    kernel = triton.autotune([triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"],
                             do_bench=bench)(
        triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(scaled_copy_kernel))
    assert kernel.base_fn is scaled_copy_kernel.fn
    x, y = random_input(96), torch.zeros(96)
    kernel[grid](x, y, 96, 3.0)
    assert bench.calls == 2 and kernel.best_config.kwargs == {"BLOCK": 32}
    torch.testing.assert_close(y, x * 3.0, rtol=0, atol=0)


def test_heuristics_over_autotune():
    bench = FirstIsFastest()
    tuned = triton.autotune([triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 128})], key=["n"],
                            do_bench=bench)(scaled_copy_kernel)
    kernel = triton.heuristics({"EVEN": lambda args: False})(tuned)
    x, y = random_input(50), torch.zeros(50)
    kernel[grid](x, y, 50, 0.5)
    assert bench.calls == 2 and tuned.best_config.kwargs == {"BLOCK": 16}
    torch.testing.assert_close(y, x * 0.5, rtol=0, atol=0)


def test_heuristics_and_autotune_without_do_bench_on_the_interpreter(monkeypatch):
    monkeypatch.setattr(autotuner, "_told_configs_untimed", False)
    tuned = triton.autotune([triton.Config({"BLOCK": 48}), triton.Config({"BLOCK": 64})], key=["n"])(
        triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(scaled_copy_kernel))
    x, y = random_input(128), torch.zeros(128)
    with pytest.warns(UserWarning, match="does not time configs: kernel scaled_copy_kernel"):
        tuned[grid](x, y, 128, 4.0)
    assert tuned.best_config.kwargs == {"BLOCK": 64}
    torch.testing.assert_close(y, x * 4.0, rtol=0, atol=0)
