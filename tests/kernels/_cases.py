"""The end-to-end kernel cases: inputs, the launcher that runs them, the check
against numpy/torch, and how closely two implementations must agree.

Each `KernelCase` is run by tests/kernels/test_end_to_end.py (against the
reference) and by tests/differential/test_kernels_vs_upstream.py (tritone
against upstream's interpreter on the same inputs). A case whose numbers
differ between upstream's interpreter and upstream's GPU names the
TRITON_SEMANTICS section 12 row in `excluded_from_differential`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from tests.kernels import _philox
from tests.kernels._data import assert_close, assert_equal, from_numpy, random_array, tensor, to_numpy
from tests.kernels._loader import KERNELS_PATH

Inputs = dict[str, Any]
Outputs = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Agreement:
    """How closely an output of two implementations must agree: exactly, or
    within `ulps` of the output dtype plus `rtol`/`atol`."""

    ulps: float = 0.0
    rtol: float = 0.0
    atol: float = 0.0

    @property
    def exact(self) -> bool:
        return not (self.ulps or self.rtol or self.atol)

    def check(self, actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
        if self.exact:
            assert_equal(actual, expected, what)
        else:
            assert_close(actual, expected, ulps=self.ulps, rtol=self.rtol, atol=self.atol, what=what)


EXACT = Agreement()


@dataclass(frozen=True)
class KernelCase:
    name: str
    launcher: str
    make_inputs: Callable[[np.random.Generator], Inputs]
    check: Callable[[Inputs, Outputs], None]
    agreement: dict[str, Agreement] = field(default_factory=dict)  # per output; EXACT where absent
    excluded_from_differential: str | None = None  # the section 12 row that makes upstream's interpreter differ
    source: Path = KERNELS_PATH


def to_device(inputs: Inputs, device: str) -> Inputs:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def run_case(module, case: KernelCase, inputs: Inputs, device: str) -> Outputs:
    """Launch `case` with `inputs` on `device` through the kernels `module`;
    the outputs come back on the CPU."""
    outputs = getattr(module, case.launcher)(**to_device(inputs, device))
    return {k: v.cpu() for k, v in outputs.items()}


def _f64(t: torch.Tensor) -> np.ndarray:
    return to_numpy(t).astype(np.float64)


# --- vector add ------------------------------------------------------------------------------


def _add_inputs(n: int, block_size: int, dtype: str = "float32"):
    def make(rng: np.random.Generator) -> Inputs:
        if dtype == "float32":
            # torch.rand's range, as in the tutorial and the Windows users' report.
            x = tensor(rng, (n,), dtype, low=0.0, high=1.0)
            y = tensor(rng, (n,), dtype, low=0.0, high=1.0)
        else:
            x, y = tensor(rng, (n,), dtype), tensor(rng, (n,), dtype)
        return {"x": x, "y": y, "block_size": block_size}
    return make


def _check_add(inputs: Inputs, outputs: Outputs) -> None:
    x, y = to_numpy(inputs["x"]), to_numpy(inputs["y"])
    assert_equal(outputs["out"], x + y)


# --- softmax ---------------------------------------------------------------------------------


def _softmax_inputs(rows: int, cols: int, dtype: str, **launch):
    def make(rng: np.random.Generator) -> Inputs:
        return {"x": tensor(rng, (rows, cols), dtype, low=-4.0, high=4.0), **launch}
    return make


def _check_softmax(inputs: Inputs, outputs: Outputs) -> None:
    x = _f64(inputs["x"])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    out = outputs["out"]
    # GPU exp is ex2.approx after a multiply, and / is div.full: a few fp32 ulps.
    ulps = 1.0 if out.dtype == torch.float16 else 0.0
    assert_close(out, expected, name="float16" if ulps else "float32", ulps=ulps, rtol=2e-6, atol=1e-9)


# --- layer norm ------------------------------------------------------------------------------


def _layer_norm_reference(x, w, b, eps):
    mean = x.mean(axis=1)
    var = ((x - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1.0 / np.sqrt(var + eps)
    return (x - mean[:, None]) * rstd[:, None] * w + b, mean, rstd


def _layer_norm_fwd_inputs(rows: int, cols: int, block_size: int):
    def make(rng: np.random.Generator) -> Inputs:
        return {
            "x": tensor(rng, (rows, cols), "float32", low=-3.0, high=5.0),
            "weight": tensor(rng, (cols,), "float32"),
            "bias": tensor(rng, (cols,), "float32"),
            "eps": 1e-5,
            "block_size": block_size,
        }
    return make


def _check_layer_norm_fwd(inputs: Inputs, outputs: Outputs) -> None:
    y, mean, rstd = _layer_norm_reference(_f64(inputs["x"]), _f64(inputs["weight"]), _f64(inputs["bias"]),
                                          inputs["eps"])
    assert_close(outputs["mean"], mean, rtol=1e-5, atol=1e-6, what="mean")
    assert_close(outputs["rstd"], rstd, rtol=1e-5, what="rstd")
    assert_close(outputs["y"], y, rtol=1e-4, atol=1e-5, what="y")


def _layer_norm_bwd_inputs(rows: int, cols: int, group_size_m: int, block_size_n: int):
    def make(rng: np.random.Generator) -> Inputs:
        x = random_array(rng, (rows, cols), "float32", low=-2.0, high=3.0).astype(np.float64)
        mean = x.mean(axis=1)
        rstd = 1.0 / np.sqrt(((x - mean[:, None]) ** 2).mean(axis=1) + 1e-5)
        return {
            "x": from_numpy(x.astype(np.float32), "float32"),
            "dy": tensor(rng, (rows, cols), "float32"),
            "weight": tensor(rng, (cols,), "float32"),
            "mean": from_numpy(mean.astype(np.float32), "float32"),
            "rstd": from_numpy(rstd.astype(np.float32), "float32"),
            "group_size_m": group_size_m,
            "block_size_n": block_size_n,
        }
    return make


def _check_layer_norm_bwd(inputs: Inputs, outputs: Outputs) -> None:
    x, dy, w = _f64(inputs["x"]), _f64(inputs["dy"]), _f64(inputs["weight"])
    mean, rstd = _f64(inputs["mean"]), _f64(inputs["rstd"])
    n = x.shape[1]
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    c1 = (xhat * wdy).sum(axis=1, keepdims=True) / n
    c2 = wdy.sum(axis=1, keepdims=True) / n
    dx = (wdy - (xhat * c1 + c2)) * rstd[:, None]
    assert_close(outputs["dx"], dx, rtol=1e-4, atol=1e-5, what="dx")
    assert_close(outputs["dw"], (dy * xhat).sum(axis=0), rtol=1e-4, atol=1e-4, what="dw")
    assert_close(outputs["db"], dy.sum(axis=0), rtol=1e-4, atol=1e-4, what="db")


# --- dropout ---------------------------------------------------------------------------------


def _dropout_inputs(n: int, p: float, seed: int):
    def make(rng: np.random.Generator) -> Inputs:
        # Inputs away from 0 so a kept lane never reads as dropped.
        x = random_array(rng, (n,), "float32", low=0.5, high=2.0) * rng.choice([-1.0, 1.0], size=n)
        return {"x": from_numpy(x.astype(np.float32), "float32"), "p": p, "seed": seed}
    return make


def _check_dropout(inputs: Inputs, outputs: Outputs) -> None:
    x = to_numpy(inputs["x"])
    out = to_numpy(outputs["out"])
    p = inputs["p"]
    kept = out != 0
    expected_kept = _philox.rand(inputs["seed"], np.arange(x.size, dtype=np.int32)) > np.float32(p)
    assert_equal(kept, expected_kept, "kept lanes")
    ratio = kept.mean()
    assert abs(ratio - (1 - p)) < 4 * np.sqrt(p * (1 - p) / x.size) + 1e-3, f"keep ratio {ratio} for p={p}"
    # Kept values are scaled by 1/(1-p); the division is approximate on the GPU.
    assert_close(out[kept], (x[kept].astype(np.float64) / (1 - p)), name="float32", ulps=3, what="kept values")


# --- matmul ----------------------------------------------------------------------------------


def _matmul_inputs(m: int, n: int, k: int, dtype: str, out_dtype: str, **launch):
    def make(rng: np.random.Generator) -> Inputs:
        return {
            "a": tensor(rng, (m, k), dtype, low=-1.0, high=1.0),
            "b": tensor(rng, (k, n), dtype, low=-1.0, high=1.0),
            "out_dtype": getattr(torch, out_dtype),
            **launch,
        }
    return make


def _check_matmul(inputs: Inputs, outputs: Outputs) -> None:
    a, b = _f64(inputs["a"]), _f64(inputs["b"])
    expected = a @ b
    scale = np.abs(a) @ np.abs(b)
    if inputs["a"].dtype == torch.float32 and inputs.get("input_precision") != "ieee":
        # Default fp32 dots use tf32 tensor cores on the GPU (10-bit mantissas).
        rel = 2.0**-9
    else:
        rel = inputs["a"].shape[1] * 2.0**-23
    c = outputs["c"]
    actual = _f64(c)
    allowed = rel * scale + (2.0**-10 * np.abs(expected) if c.dtype == torch.float16 else 0.0) + 1e-6
    bad = np.abs(actual - expected) > allowed
    assert not bad.any(), f"matmul: {bad.sum()} elements off, max error {np.abs(actual - expected).max()}"


# --- scans -----------------------------------------------------------------------------------


def _cumsum_inputs(m: int, n: int, dtype: str, axis: int, reverse: bool, out_dtype: str):
    def make(rng: np.random.Generator) -> Inputs:
        if dtype.startswith("float"):
            x = tensor(rng, (m, n), dtype)
        else:
            x = tensor(rng, (m, n), dtype, low=-100, high=100)
        return {"x": x, "axis": axis, "reverse": reverse, "out_dtype": getattr(torch, out_dtype)}
    return make


def _check_cumsum(inputs: Inputs, outputs: Outputs) -> None:
    out = outputs["out"]
    x = to_numpy(inputs["x"]).astype(to_numpy(out[:0]).dtype)
    axis = inputs["axis"]
    if inputs["reverse"]:
        expected = np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
    else:
        expected = np.cumsum(x, axis=axis)
    if out.dtype.is_floating_point:
        assert_close(out, expected, rtol=1e-5, atol=1e-5)
    else:
        assert_equal(out, expected)


def _scan_inputs(n: int, reverse: bool):
    def make(rng: np.random.Generator) -> Inputs:
        return {"a": tensor(rng, (n,), "int32"), "b": tensor(rng, (n,), "int32"), "reverse": reverse}
    return make


def _wrap32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _check_scan(inputs: Inputs, outputs: Outputs) -> None:
    a = [int(v) for v in to_numpy(inputs["a"])]
    b = [int(v) for v in to_numpy(inputs["b"])]
    order = range(len(a) - 1, -1, -1) if inputs["reverse"] else range(len(a))
    h = [0] * len(a)
    state_a, state_b, running = None, None, None
    for i in order:
        if state_a is None:
            state_a, state_b, running = a[i], b[i], b[i]
        else:
            # The accumulated prefix (or suffix) is the left argument of the combine.
            state_a, state_b = _wrap32(state_a * a[i]), _wrap32(state_b * a[i] + b[i])
            running = max(running, b[i])
        h[i] = state_b
        b[i] = running
    assert_equal(outputs["h"], np.array(h, dtype=np.int32), "affine scan")
    assert_equal(outputs["runmax"], np.array(b, dtype=np.int32), "running max")


# --- argmax ----------------------------------------------------------------------------------


def _argmax_inputs(m: int, n: int, dtype: str):
    def make(rng: np.random.Generator) -> Inputs:
        # Few distinct values, so rows hold ties: the first index must win.
        values = rng.integers(-6, 7, size=(m, n)).astype(np.float64)
        if dtype.startswith("float"):
            values = values / 4
        return {"x": from_numpy(values.astype(np.dtype(dtype)), dtype)}
    return make


def _check_argmax(inputs: Inputs, outputs: Outputs) -> None:
    x = to_numpy(inputs["x"])
    assert_equal(outputs["argmax"], np.argmax(x, axis=1).astype(np.int32), "argmax")
    assert_equal(outputs["argmin"], np.argmin(x, axis=1).astype(np.int32), "argmin")
    assert_equal(outputs["max"], x.max(axis=1), "max values")
    assert_equal(outputs["max_index"], np.argmax(x, axis=1).astype(np.int32), "max indices")


# --- run-time loops --------------------------------------------------------------------------


def _collatz_inputs(count: int):
    def make(rng: np.random.Generator) -> Inputs:
        return {"n": tensor(rng, (count,), "int32", low=1, high=1000)}
    return make


def _collatz_steps(n: int) -> int:
    steps = 0
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def _check_collatz(inputs: Inputs, outputs: Outputs) -> None:
    expected = np.array([_collatz_steps(int(v)) for v in to_numpy(inputs["n"])], dtype=np.int32)
    assert_equal(outputs["steps"], expected)


def _loops_inputs(programs: int, block: int):
    def make(rng: np.random.Generator) -> Inputs:
        return {"x": tensor(rng, (programs * block,), "int32", low=-100, high=100),
                "reps": tensor(rng, (programs,), "int32", low=0, high=6)}
    return make


def _check_loops(inputs: Inputs, outputs: Outputs) -> None:
    x = to_numpy(inputs["x"]).astype(np.int64)
    reps = to_numpy(inputs["reps"])
    block = x.size // reps.size
    while_out = x.copy()
    for_out = x.copy()
    for pid, r in enumerate(reps):
        part = slice(pid * block, (pid + 1) * block)
        for i in range(int(r)):
            while_out[part] = while_out[part] * 3 + i
        for j in range(1, int(r), 2):
            for_out[part] = (for_out[part] ^ j) + pid
    wrap = np.int32
    assert_equal(outputs["while_out"], while_out.astype(wrap), "while loop")
    assert_equal(outputs["for_out"], for_out.astype(wrap), "for loop")


# --- atomic histogram ------------------------------------------------------------------------


def _histogram_inputs(n: int, num_bins: int):
    def make(rng: np.random.Generator) -> Inputs:
        return {"x": tensor(rng, (n,), "int32", low=0, high=10_000), "w": tensor(rng, (n,), "float32"),
                "num_bins": num_bins}
    return make


def _check_histogram(inputs: Inputs, outputs: Outputs) -> None:
    bins = to_numpy(inputs["x"]) % inputs["num_bins"]
    counts = np.bincount(bins, minlength=inputs["num_bins"]).astype(np.int32)
    weights = np.bincount(bins, weights=_f64(inputs["w"]), minlength=inputs["num_bins"])
    assert_equal(outputs["counts"], counts, "counts")
    assert_close(outputs["weights"], weights, rtol=1e-5, atol=1e-5, what="weights")


# --- nested helpers --------------------------------------------------------------------------


def _nested_inputs(programs: int, block: int):
    def make(rng: np.random.Generator) -> Inputs:
        return {"x": tensor(rng, (programs * block,), "float32"), "y": tensor(rng, (programs * block,), "float32"),
                "block": block}
    return make


def _check_nested(inputs: Inputs, outputs: Outputs) -> None:
    x, y = _f64(inputs["x"]), _f64(inputs["y"])
    scaled = (x * 3.0 + y).reshape(-1, inputs["block"])
    # x*3 + y is one fma on the GPU and two roundings elsewhere: allow an ulp of
    # the product besides one of the result.
    product_ulp = float(np.abs(3.0 * x).max()) * 2.0**-23
    assert_close(outputs["out"], scaled.reshape(-1), name="float32", ulps=1, atol=product_ulp, what="scaled")
    assert_close(outputs["sum"], scaled.sum(axis=1), rtol=1e-5, atol=1e-5, what="sum")
    assert_close(outputs["max"], scaled.max(axis=1), name="float32", ulps=1, atol=product_ulp, what="max")


FLOAT_AGREEMENT = Agreement(ulps=4, rtol=1e-6, atol=1e-7)

KERNEL_CASES: list[KernelCase] = [
    # The Windows users' report: BLOCK_SIZE 1024 over torch.rand(3).
    KernelCase("vector_add_rand3_block1024", "run_add", _add_inputs(3, 1024), _check_add),
    KernelCase("vector_add_98432_block1024", "run_add", _add_inputs(98432, 1024), _check_add),
    KernelCase("vector_add_int32_1000_block128", "run_add", _add_inputs(1000, 128, "int32"), _check_add),
    KernelCase("vector_add_float16_777_block256", "run_add", _add_inputs(777, 256, "float16"), _check_add),
    KernelCase("softmax_rows_shorter_than_block", "run_softmax",
               _softmax_inputs(37, 100, "float32", block_size=128, num_programs=4), _check_softmax,
               {"out": FLOAT_AGREEMENT}),
    KernelCase("softmax_float16_rows_equal_block", "run_softmax",
               _softmax_inputs(8, 64, "float16", block_size=64, num_programs=8), _check_softmax,
               {"out": Agreement(ulps=1)}),
    KernelCase("softmax_rows_longer_than_block", "run_softmax_looped",
               _softmax_inputs(5, 300, "float32", block_size=64), _check_softmax, {"out": FLOAT_AGREEMENT}),
    KernelCase("layer_norm_fwd_one_block", "run_layer_norm_fwd", _layer_norm_fwd_inputs(16, 96, 128),
               _check_layer_norm_fwd, {k: Agreement(rtol=1e-5, atol=1e-6) for k in ("y", "mean", "rstd")}),
    KernelCase("layer_norm_fwd_looped", "run_layer_norm_fwd", _layer_norm_fwd_inputs(6, 200, 32),
               _check_layer_norm_fwd, {k: Agreement(rtol=1e-5, atol=1e-6) for k in ("y", "mean", "rstd")}),
    KernelCase("layer_norm_bwd", "run_layer_norm_bwd", _layer_norm_bwd_inputs(24, 50, 4, 64),
               _check_layer_norm_bwd, {k: Agreement(rtol=1e-5, atol=1e-5) for k in ("dx", "dw", "db")}),
    # p is a float argument: fp32 on the GPU, a Python float in upstream's
    # interpreter (section 12, "float args"), so x/(1-p) may differ by an ulp.
    KernelCase("dropout_p0.5_seed123", "run_dropout", _dropout_inputs(4096, 0.5, 123), _check_dropout,
               {"out": Agreement(ulps=2)}),
    KernelCase("dropout_p0.2_seed-7", "run_dropout", _dropout_inputs(1500, 0.2, -7), _check_dropout,
               {"out": Agreement(ulps=2)}),
    KernelCase("matmul_float16_masked_edges", "run_matmul", _matmul_inputs(70, 45, 50, "float16", "float32"),
               _check_matmul, {"c": Agreement(rtol=1e-5, atol=1e-5)}),
    KernelCase("matmul_float16_out_float16", "run_matmul",
               _matmul_inputs(64, 64, 64, "float16", "float16", block_m=64, block_n=32, block_k=32),
               _check_matmul, {"c": Agreement(ulps=1, atol=1e-3)}),
    KernelCase("matmul_float32_ieee", "run_matmul",
               _matmul_inputs(40, 33, 48, "float32", "float32", input_precision="ieee"), _check_matmul,
               {"c": Agreement(rtol=1e-5, atol=1e-5)}),
    KernelCase("matmul_float32_default_tf32", "run_matmul", _matmul_inputs(40, 33, 48, "float32", "float32"),
               _check_matmul, {"c": Agreement(rtol=1e-5, atol=1e-5)},
               excluded_from_differential="fp32 `tl.dot` default"),
    KernelCase("cumsum_int32_axis1", "run_cumsum", _cumsum_inputs(4, 32, "int32", 1, False, "int32"),
               _check_cumsum),
    KernelCase("cumsum_int8_axis0_reverse", "run_cumsum", _cumsum_inputs(16, 8, "int8", 0, True, "int32"),
               _check_cumsum),
    KernelCase("cumsum_float32_axis1", "run_cumsum", _cumsum_inputs(8, 64, "float32", 1, False, "float32"),
               _check_cumsum, {"out": Agreement(rtol=1e-5, atol=1e-5)}),
    KernelCase("associative_scan_affine", "run_scan", _scan_inputs(128, False), _check_scan),
    KernelCase("associative_scan_affine_reverse", "run_scan", _scan_inputs(64, True), _check_scan),
    KernelCase("argmax_float32_ties", "run_argmax", _argmax_inputs(8, 64, "float32"), _check_argmax),
    KernelCase("argmax_int32_ties", "run_argmax", _argmax_inputs(16, 32, "int32"), _check_argmax),
    KernelCase("argmax_float16_ties", "run_argmax", _argmax_inputs(4, 128, "float16"), _check_argmax),
    KernelCase("while_loop_collatz", "run_collatz", _collatz_inputs(200), _check_collatz),
    KernelCase("data_dependent_while_and_for", "run_data_dependent_loops", _loops_inputs(6, 16), _check_loops),
    KernelCase("atomic_histogram_collisions", "run_atomic_histogram", _histogram_inputs(3000, 16),
               _check_histogram, {"weights": Agreement(rtol=1e-5, atol=1e-5)}),
    KernelCase("nested_jit_helpers_tuple", "run_nested_helpers", _nested_inputs(4, 32), _check_nested,
               {k: Agreement(ulps=1, rtol=1e-6, atol=1e-5) for k in ("out", "sum", "max")}),
]
