"""`tritone.testing`: do_bench's schedule and statistics against a scripted
device clock, real timings on the interpreter, assert_close, perf_report's
table, CSV and PNG, the peak-figure helpers; on a GPU (`gpu` marker), do_bench
against upstream Triton's."""

from __future__ import annotations

import csv
import inspect
import time

import numpy as np
import pytest
import torch

import tritone.language as tl
from tritone import testing
from tritone.backends.compiler import GPUTarget
from tritone.runtime import driver


class Clock:
    """A device clock that only `fn` advances."""

    def __init__(self):
        self.now = 0.0


class ScriptedDevice:
    def __init__(self, clock):
        self.clock = clock
        self.synchronized = 0
        device = self

        class Event:
            def __init__(self, enable_timing=True):
                self.at = None

            def record(self, stream=None):
                self.at = device.clock.now

            def elapsed_time(self, end):
                return end.at - self.at

        self.Event = Event

    def synchronize(self, device=None):
        self.synchronized += 1

    @staticmethod
    def get_device_capability(device=None):
        return (9, 0)


class Flush:
    def __init__(self):
        self.cleared = 0


class ScriptedDriver:
    """A GPU as do_bench and the peak helpers see it: H100-like properties."""

    def __init__(self):
        self.clock = Clock()
        self.device = ScriptedDevice(self.clock)
        self.flush = Flush()
        self.calls_at_clear: list[int] = []
        self.utils = self

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)

    def get_current_device(self):
        return 0

    def get_device_interface(self):
        return self.device

    def get_empty_cache_for_benchmark(self):
        return self.flush

    def clear_cache(self, cache):
        cache.cleared += 1

    @staticmethod
    def get_device_properties(device):
        return {"max_shared_mem": 232448, "max_num_regs": 65536, "multiprocessor_count": 132, "warpSize": 32,
                "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120}


@pytest.fixture
def scripted():
    fake = ScriptedDriver()
    driver.set_active(fake)
    yield fake
    driver.reset_active()


def test_do_bench_schedule_and_statistics(scripted):
    durations = iter(np.random.default_rng().uniform(1.5, 2.5, size=200))
    timed = []
    calls = []

    class Grad:
        grad = "stale"

    grad_holder = Grad()

    def fn():
        calls.append(scripted.flush.cleared)
        step = float(next(durations))
        timed.append(step)
        scripted.clock.now += step
        assert grad_holder.grad is None or len(calls) <= 11  # cleared before each timed run

    result = testing.do_bench(fn, warmup=10, rep=40, grad_to_none=[grad_holder], return_mode="all")
    estimate = sum(timed[1:6]) / 5
    n_warmup, n_repeat = max(1, int(10 / estimate)), max(1, int(40 / estimate))
    assert len(calls) == 1 + 5 + n_warmup + n_repeat
    assert scripted.flush.cleared == 5 + n_repeat
    # each timed run follows its own flush
    assert calls[-n_repeat:] == list(range(6, 6 + n_repeat))
    np.testing.assert_allclose(result, timed[-n_repeat:], rtol=1e-12)


@pytest.mark.parametrize("mode", ["min", "max", "mean", "median"])
def test_do_bench_return_modes_and_quantiles(scripted, mode):
    steps = [2.0] * 6 + [1.0] * 20 + list(np.random.default_rng().uniform(1, 3, size=200))
    position = iter(range(len(steps)))

    def fn():
        scripted.clock.now += steps[next(position)]

    times = testing.do_bench(fn, warmup=2, rep=20, return_mode="all")
    scripted.clock.now = 0.0
    position = iter(range(len(steps)))
    expected = {"min": np.min, "max": np.max, "mean": np.mean, "median": np.median}[mode](times)
    assert testing.do_bench(fn, warmup=2, rep=20, return_mode=mode) == pytest.approx(expected)
    position = iter(range(len(steps)))
    quantiles = testing.do_bench(fn, warmup=2, rep=20, quantiles=[0.5, 0.2, 0.8])
    np.testing.assert_allclose(quantiles, np.quantile(times, [0.5, 0.2, 0.8]))
    position = iter(range(len(steps)))
    assert testing.do_bench(fn, warmup=2, rep=20, quantiles=[0.5]) == pytest.approx(np.median(times))


def test_quantiles_match_numpy():
    values = list(np.random.default_rng().exponential(size=37))
    qs = [0.0, 0.1, 0.25, 0.5, 0.77, 1.0]
    np.testing.assert_allclose(testing._quantiles(values, qs), np.quantile(values, qs))
    with pytest.raises(ValueError, match="quantiles"):
        testing._quantiles(values, [1.5])


def test_do_bench_signature_as_inductor_reads_it():
    parameters = inspect.signature(testing.do_bench).parameters
    assert list(parameters) == ["fn", "warmup", "rep", "grad_to_none", "quantiles", "return_mode"]
    assert parameters["return_mode"].default == "mean"
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench(lambda: None, return_mode="p99")


def test_do_bench_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert driver.active.get_current_target().backend == "interpreter"
    median, low, high = testing.do_bench(lambda: time.sleep(0.002), warmup=2, rep=20, quantiles=[0.5, 0.2, 0.8])
    assert 2.0 <= low <= median <= high < 100.0
    graph_time = testing.do_bench_cudagraph(lambda: time.sleep(0.001), rep=5)
    assert 1.0 <= graph_time < 100.0


# ---------------------------------------------------------------- assert_close


def test_assert_close():
    rng = np.random.default_rng()
    x = rng.standard_normal((4, 5)).astype(np.float32)
    testing.assert_close(x, x + 0.005)
    testing.assert_close(torch.from_numpy(x).bfloat16(), torch.from_numpy(x).bfloat16())
    testing.assert_close(x, (x * 1.1).tolist(), atol=0, rtol=0.11)
    testing.assert_close(np.array([np.nan, 1.0]), [np.nan, 1.0])
    with pytest.raises(AssertionError):
        testing.assert_close(x, x + 0.02)
    with pytest.raises(AssertionError, match="tolerance hook"):
        testing.assert_close(x, x + 0.005, atol=lambda dtype: 0.001, err_msg="tolerance hook")
    testing.assert_close(1.0, 1.004)
    with pytest.raises(AssertionError, match=r"scalar 1.0 is not close to 1.5 \(atol=0.01, rtol=0.0\)"):
        testing.assert_close(1.0, 1.5, err_msg="scalar")


# ---------------------------------------------------------------- perf_report


def test_perf_report_prints_saves_csv_and_png(tmp_path, capsys):
    rng = np.random.default_rng()
    base = {size: float(rng.uniform(1, 2)) for size in (128, 256, 512)}

    @testing.perf_report(testing.Benchmark(
        x_names=["size"], x_vals=[128, 256, 512], line_arg="provider", line_vals=["ours", "theirs"],
        line_names=["Ours", "Theirs"], plot_name="vector-add", args={"scale": 2.0}, xlabel="elements",
        ylabel="GB/s", x_log=True, styles=[("blue", "-"), ("green", "--")]))
    def bench(size, provider, scale):
        value = base[size] * scale * (1 if provider == "ours" else 3)
        return value, value - 0.5, value + 0.5

    table = bench.run(print_data=True, save_path=str(tmp_path), return_df=True)
    printed = capsys.readouterr().out
    assert printed.startswith("vector-add:\n") and "Ours (GB/s)" in printed and "Theirs (GB/s)" in printed
    with open(tmp_path / "vector-add.csv", newline="") as file:
        rows = list(csv.reader(file))
    assert rows[0] == ["size", "Ours (GB/s)", "Theirs (GB/s)"]
    for row, size in zip(rows[1:], (128, 256, 512)):
        assert row == [str(size), f"{base[size] * 2:.6f}", f"{base[size] * 6:.6f}"]
    assert list(table["Ours (GB/s)"]) == pytest.approx([base[s] * 2 for s in (128, 256, 512)])
    assert '<img src="vector-add.png"/>' in (tmp_path / "results.html").read_text()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert (tmp_path / "vector-add.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_perf_report_tuples_of_x_values_and_single_values(tmp_path):
    @testing.perf_report([
        testing.Benchmark(x_names=["M", "N"], x_vals=[(1, 2), (3, 4)], line_arg="p", line_vals=[1],
                          line_names=["one"], plot_name="pairs", args={}),
        testing.Benchmark(x_names=["M", "N"], x_vals=[5], line_arg="p", line_vals=[1, 2], line_names=["a", "b"],
                          plot_name="", args={}),
    ])
    def bench(M, N, p):
        return float(M * 10 + N + p)

    pairs, same = bench.run(return_df=True)
    assert list(pairs["one ()"]) == [13.0, 35.0] and list(pairs["M"]) == [1, 3]
    assert list(same["a ()"]) == [56.0] and list(same["b ()"]) == [57.0]
    assert bench.run() is None and not list(tmp_path.iterdir())

    bad = testing.perf_report(testing.Benchmark(x_names=["M", "N"], x_vals=[(1, 2, 3)], line_arg="p", line_vals=[1],
                                                line_names=["one"], plot_name="bad", args={}))(bench.fn)
    with pytest.raises(ValueError, match="one value for each of"):
        bad.run()


# ---------------------------------------------------------------- peak figures


def test_peak_figures_from_device_properties(scripted):
    assert testing.get_dram_gbps() == pytest.approx(2619000 * 5120 * 2 / 1e6 / 8)
    subcores = 132 * 4
    for dtype in (torch.float16, tl.float16, "fp16", torch.bfloat16):
        assert testing.get_max_tensorcore_tflops(dtype, 1980000) == pytest.approx(subcores * 1980000 * 512 * 1e-9)
    assert testing.get_max_tensorcore_tflops(torch.float32, 1980000) == pytest.approx(subcores * 1980000 * 256e-9)
    assert testing.get_max_tensorcore_tflops(torch.int8, 1000, device=0) == pytest.approx(subcores * 1000 * 1024e-9)
    assert testing.get_max_simd_tflops(torch.float32, 1980000) == pytest.approx(subcores * 1980000 * 32e-9)
    with pytest.raises(ValueError, match="no peak figure"):
        testing.get_max_simd_tflops(torch.int8, 1000)


def test_peak_figures_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert testing.get_dram_gbps() == 0.0
    assert testing.get_max_tensorcore_tflops(torch.float16, 1980000) == 0.0
    assert testing.get_max_simd_tflops(torch.float32, 1980000) == 0.0


# ---------------------------------------------------------------- on a GPU


@pytest.mark.gpu
def test_gpu_do_bench_agrees_with_upstream():
    upstream_testing = pytest.importorskip("triton.testing")
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)

    def matmul():
        torch.matmul(a, b)

    ours, theirs = [], []
    for _ in range(3):  # interleaved, so clock drift affects both alike
        ours.append(testing.do_bench(matmul, return_mode="median"))
        theirs.append(upstream_testing.do_bench(matmul, return_mode="median"))
    # Other GPU tests may run beside this one (pytest-xdist): the check is that both
    # measure the same thing in the same unit, not a precise agreement.
    assert abs(np.median(ours) / np.median(theirs) - 1) < 0.25
