"""Benchmarking and checking helpers with Triton's `triton.testing` API.

`do_bench` times a callable with the active driver's events (CUDA events on a
GPU, the host clock on the interpreter), writing a large buffer before each
timed run so that no input is left in the cache, and summarises the times.
`perf_report` / `Benchmark` sweep a benchmark over parameters, print the table,
save it as CSV and, where matplotlib is installed, as a PNG plot. pandas is
used for the returned table only where it is installed.
"""

from __future__ import annotations

import csv
import math
import os
import shutil
import statistics
import subprocess
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .runtime.driver import driver

RETURN_MODES = ("min", "max", "mean", "median", "all")


def _quantiles(times: Sequence[float], quantiles: Sequence[float]) -> list[float]:
    """Linearly interpolated quantiles of `times` (numpy's default method)."""
    ordered = sorted(times)
    last = len(ordered) - 1
    result = []
    for q in quantiles:
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantiles must lie in [0, 1], got {q}")
        position = q * last
        below = math.floor(position)
        above = math.ceil(position)
        fraction = position - below
        result.append(ordered[below] * (1.0 - fraction) + ordered[above] * fraction)
    return result


def _summarize(times: list[float], quantiles: Sequence[float] | None, return_mode: str) -> Any:
    if quantiles is not None:
        values = _quantiles(times, quantiles)
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return times
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return statistics.median(times)
    return statistics.mean(times)


def _check_return_mode(return_mode: str) -> None:
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(RETURN_MODES)}; got {return_mode!r}")


def _clear_grads(grad_to_none: Sequence[Any] | None) -> None:
    for tensor in grad_to_none or ():
        tensor.grad = None


def _runs_for(budget_ms: float, estimate_ms: float) -> int:
    """How many runs of `estimate_ms` fit in `budget_ms`, at least one."""
    if estimate_ms <= 0.0:
        return 1000
    return max(1, int(budget_ms / estimate_ms))


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100, grad_to_none: Sequence[Any] | None = None,
             quantiles: Sequence[float] | None = None, return_mode: str = "mean") -> Any:
    """Time `fn()` in milliseconds.

    `fn` runs once, then five times to estimate its duration; then for about
    `warmup` ms untimed and for about `rep` ms timed, each timed run preceded by
    a write of the benchmark flush buffer (256 MB on a GPU) so that its inputs
    are not cached, and by clearing `.grad` of the tensors in `grad_to_none`.
    Returns the `quantiles` of the run times when given (a single float for one
    quantile), else their `return_mode`: "min", "max", "mean", "median" or
    "all" (the list)."""
    _check_return_mode(return_mode)
    active = driver.active
    device = active.get_device_interface()
    fn()
    device.synchronize()
    flush = active.get_empty_cache_for_benchmark()

    start, end = device.Event(enable_timing=True), device.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        active.clear_cache(flush)
        fn()
    end.record()
    device.synchronize()
    estimate_ms = start.elapsed_time(end) / 5

    n_warmup = _runs_for(warmup, estimate_ms)
    n_repeat = _runs_for(rep, estimate_ms)
    starts = [device.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [device.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for start, end in zip(starts, ends):
        _clear_grads(grad_to_none)
        active.clear_cache(flush)
        start.record()
        fn()
        end.record()
    device.synchronize()
    times = [start.elapsed_time(end) for start, end in zip(starts, ends)]
    return _summarize(times, quantiles, return_mode)


def do_bench_cudagraph(fn: Callable[[], Any], rep: float = 20, grad_to_none: Sequence[Any] | None = None,
                       quantiles: Sequence[float] | None = None, return_mode: str = "mean") -> Any:
    """Time `fn()` in milliseconds with the host's launch overhead taken out: as
    many calls as fit in about `rep` ms are captured in one CUDA graph (on a
    side stream, through `torch.cuda`), the graph is replayed ten times, and each
    replay's time per call is one sample. No cache flush. On the interpreter,
    where there are no graphs, the same calls run back to back instead.
    Returns what `do_bench` returns for `quantiles` / `return_mode`."""
    _check_return_mode(return_mode)
    active = driver.active
    if active.get_current_target().backend == "interpreter":
        return _bench_back_to_back(fn, rep, grad_to_none, quantiles, return_mode, active.get_device_interface())
    try:
        import torch
    except ImportError:
        raise RuntimeError("do_bench_cudagraph captures CUDA graphs through torch.cuda; install torch, "
                           "or use do_bench") from None
    with torch.cuda.stream(torch.cuda.Stream()):
        fn()
        for tensor in grad_to_none or ():
            tensor.detach_()
            tensor.requires_grad_(True)
            tensor.grad = None
        # Estimated without a graph: building one costs hundreds of milliseconds.
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        n_repeat = _runs_for(rep, start.elapsed_time(end) / 5)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(n_repeat):
                _clear_grads(grad_to_none)
                fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / n_repeat)
    return _summarize(times, quantiles, return_mode)


def _bench_back_to_back(fn: Callable[[], Any], rep: float, grad_to_none: Sequence[Any] | None,
                        quantiles: Sequence[float] | None, return_mode: str, device: Any) -> Any:
    fn()
    start, end = device.Event(enable_timing=True), device.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    n_repeat = _runs_for(rep, start.elapsed_time(end) / 5)
    times = []
    for _ in range(10):
        start.record()
        for _ in range(n_repeat):
            _clear_grads(grad_to_none)
            fn()
        end.record()
        device.synchronize()
        times.append(start.elapsed_time(end) / n_repeat)
    return _summarize(times, quantiles, return_mode)


# ---------------------------------------------------------------- comparing results


def _as_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        # torch: bfloat16 has no numpy dtype, so it is compared as float32.
        tensor = value.detach().cpu()
        if str(tensor.dtype) == "torch.bfloat16":
            tensor = tensor.float()
        return tensor.numpy()
    return np.asarray(value)


def assert_close(x: Any, y: Any, atol: float | Callable[[Any], float] | None = None,
                 rtol: float | Callable[[Any], float] | None = None, err_msg: str = "") -> None:
    """Raise AssertionError unless `x` and `y` (scalars, lists, numpy arrays or
    torch tensors, on any device) agree within `atol` (default 1e-2) plus `rtol`
    (default 0) times `|y|`, NaNs matching NaNs. A callable tolerance is called
    with `x`'s dtype."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        dtype = np.asarray(x).dtype
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    atol = atol(dtype) if callable(atol) else atol
    rtol = rtol(dtype) if callable(rtol) else rtol
    x_array, y_array = _as_numpy(x), _as_numpy(y)
    if x_array.size > 1 or y_array.size > 1:
        np.testing.assert_allclose(x_array, y_array, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
        return
    if not np.allclose(x_array, y_array, atol=atol, rtol=rtol, equal_nan=True):
        raise AssertionError(f"{err_msg} {x_array} is not close to {y_array} (atol={atol}, rtol={rtol})".strip())


# ---------------------------------------------------------------- benchmark reports


class Benchmark:
    """One benchmark sweep for `perf_report`: the function is called for every
    value of `x_vals` (bound to the `x_names`) and of `line_vals` (bound to
    `line_arg`), with `args` fixed. It returns a time (or any figure) or a
    `(value, min, max)` triple. `x_vals` holds scalars (every x name gets the
    value) or tuples (one value per x name). `plot_name` names the table's
    CSV and PNG files; `styles` are `(color, linestyle)` pairs per line."""

    def __init__(self, x_names: list[str], x_vals: list[Any], line_arg: str, line_vals: list[Any],
                 line_names: list[str], plot_name: str, args: dict[str, Any], xlabel: str = "", ylabel: str = "",
                 x_log: bool = False, y_log: bool = False, styles: list[tuple[str, str]] | None = None):
        self.x_names = x_names
        self.x_vals = x_vals
        self.x_log = x_log
        self.line_arg = line_arg
        self.line_vals = line_vals
        self.line_names = line_names
        self.y_log = y_log
        self.styles = styles
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.plot_name = plot_name
        self.args = args


@dataclass(frozen=True)
class BenchmarkTable:
    """The results of one `Benchmark`: one row per x value, the x names then one
    column per line. What `run(return_df=True)` returns where pandas is not
    installed (with pandas: a DataFrame of the same columns)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def __getitem__(self, column: str) -> list[Any]:
        index = self.columns.index(column)
        return [row[index] for row in self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    def to_string(self) -> str:
        """The table aligned in columns, rows numbered from 0."""
        cells = [["", *self.columns]]
        cells += [[str(number), *(_format_cell(value) for value in row)] for number, row in enumerate(self.rows)]
        widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
        return "\n".join("  ".join(cell.rjust(width) for cell, width in zip(line, widths)) for line in cells)

    def to_csv(self, path: str, precision: int = 6) -> None:
        """Write the table with a header row, floats with `precision` decimals."""
        with open(path, "w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(self.columns)
            for row in self.rows:
                writer.writerow([f"{value:.{precision}f}" if isinstance(value, float) else
                                 ("" if value is None else value) for value in row])

    def to_pandas(self) -> Any:
        import pandas

        return pandas.DataFrame(list(self.rows), columns=list(self.columns))


def _format_cell(value: Any) -> str:
    if value is None:
        return "NaN"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _as_float(value: Any) -> float | None:
    if value is None:
        return None
    return float(value.item() if hasattr(value, "item") else value)


_warned_no_matplotlib = False


def _matplotlib_missing() -> None:
    global _warned_no_matplotlib
    if not _warned_no_matplotlib:
        _warned_no_matplotlib = True
        warnings.warn("matplotlib is not installed: benchmark tables are printed and saved as CSV, without plots "
                      "(pip install matplotlib)", stacklevel=4)


class Mark:
    """A function marked by `perf_report`: `run()` sweeps its benchmarks."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Benchmark | list[Benchmark]):
        self.fn = fn
        self.benchmarks = benchmarks

    def _measure(self, bench: Benchmark, **kwargs: Any) -> tuple[list[tuple], list[list], list[list], list[list]]:
        """Run the sweep: the x values of each row and, per line, the values,
        minima and maxima of each row (None where the function gave none)."""
        x_rows: list[tuple] = []
        means: list[list] = [[] for _ in bench.line_vals]
        minima: list[list] = [[] for _ in bench.line_vals]
        maxima: list[list] = [[] for _ in bench.line_vals]
        for x in bench.x_vals:
            values = tuple(x) if isinstance(x, (list, tuple)) else tuple(x for _ in bench.x_names)
            if len(values) != len(bench.x_names):
                raise ValueError(f"benchmark {bench.plot_name!r}: x value {x!r} does not give one value for each of "
                                 f"{bench.x_names}")
            x_rows.append(values)
            for line, y in enumerate(bench.line_vals):
                result = self.fn(**dict(zip(bench.x_names, values)), **{bench.line_arg: y}, **bench.args, **kwargs)
                if isinstance(result, (tuple, list)) and len(result) == 3:
                    mean, low, high = result
                else:
                    mean, low, high = result, None, None
                means[line].append(_as_float(mean))
                minima[line].append(_as_float(low))
                maxima[line].append(_as_float(high))
        return x_rows, means, minima, maxima

    def _run(self, bench: Benchmark, save_path: str, show_plots: bool, print_data: bool, diff_col: bool = False,
             save_precision: int = 6, **kwargs: Any) -> Any:
        x_rows, means, minima, maxima = self._measure(bench, **kwargs)
        labels = [f"{name} ({bench.ylabel})" for name in bench.line_names]
        rows = [tuple(x) + tuple(column[i] for column in means) for i, x in enumerate(x_rows)]
        columns = (*bench.x_names, *labels)
        if diff_col and len(columns) == 2:
            columns += ("Diff",)
            rows = [(*row, None if None in row else row[1] - row[0]) for row in rows]
        table = BenchmarkTable(columns, tuple(rows))

        if bench.plot_name and (show_plots or save_path):
            self._plot(bench, x_rows, labels, means, minima, maxima, save_path, show_plots)
        if print_data:
            print(f"{bench.plot_name}:")
            print(table.to_string())
        if save_path:
            table.to_csv(os.path.join(save_path, f"{bench.plot_name}.csv"), save_precision)
        return table

    @staticmethod
    def _plot(bench: Benchmark, x_rows: list[tuple], labels: list[str], means: list[list], minima: list[list],
              maxima: list[list], save_path: str, show_plots: bool) -> None:
        """Plot each line against the first x name, shading min..max where given."""
        try:
            from matplotlib.figure import Figure
        except ImportError:
            _matplotlib_missing()
            return
        if show_plots:
            import matplotlib.pyplot as plt

            figure = plt.figure()
        else:
            # A bare Figure needs no GUI backend and leaves pyplot's state alone.
            figure = Figure()
        axes = figure.add_subplot()
        xs = [row[0] for row in x_rows]
        for line, label in enumerate(labels):
            color, style = bench.styles[line] if bench.styles else (None, None)
            axes.plot(xs, means[line], label=label, color=color, ls=style)
            if all(value is not None for value in minima[line] + maxima[line]):
                axes.fill_between(xs, minima[line], maxima[line], alpha=0.15, color=color)
        axes.legend()
        axes.set_xlabel(bench.xlabel or bench.x_names[0])
        axes.set_ylabel(bench.ylabel)
        axes.set_xscale("log" if bench.x_log else "linear")
        axes.set_yscale("log" if bench.y_log else "linear")
        if save_path:
            figure.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
        if show_plots:
            plt.show()
            plt.close(figure)

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "", return_df: bool = False,
            **kwargs: Any) -> Any:
        """Run every benchmark; print each table (`print_data`), show the plots
        (`show_plots`), save `<plot_name>.csv`, `<plot_name>.png` and an
        index `results.html` under `save_path`. With `return_df`, return the
        table (a list of tables for a list of benchmarks): a pandas DataFrame
        where pandas is installed, else a `BenchmarkTable`. Extra keywords are
        passed to the benchmarked function."""
        single = isinstance(self.benchmarks, Benchmark)
        benchmarks = [self.benchmarks] if single else list(self.benchmarks)
        if save_path:
            os.makedirs(save_path, exist_ok=True)
        tables = []
        try:
            for bench in benchmarks:
                tables.append(self._run(bench, save_path, show_plots, print_data, **kwargs))
        finally:
            if save_path:
                with open(os.path.join(save_path, "results.html"), "w") as page:
                    images = "".join(f'<img src="{bench.plot_name}.png"/>\n' for bench in benchmarks[:len(tables)])
                    page.write(f"<html><body>\n{images}</body></html>\n")
        if not return_df:
            return None
        try:
            tables = [table.to_pandas() for table in tables]
        except ImportError:
            pass  # without pandas the tables are returned as they are
        return tables[0] if single else tables


def perf_report(benchmarks: Benchmark | list[Benchmark]) -> Callable[[Callable[..., Any]], Mark]:
    """Mark a function for benchmarking: `perf_report(Benchmark(...))(fn).run(...)`."""

    def mark(fn: Callable[..., Any]) -> Mark:
        return Mark(fn, benchmarks)

    return mark


# ---------------------------------------------------------------- peak figures of the GPU


def _device_index(device: Any) -> int:
    if device is None:
        return driver.active.get_current_device()
    index = getattr(device, "index", device)
    return 0 if index is None else int(index)


def get_dram_gbps(device: Any = None) -> float:
    """Peak DRAM bandwidth of the device in GB/s (double data rate times bus
    width); 0.0 where the clock is unknown (the interpreter)."""
    properties = driver.active.utils.get_device_properties(_device_index(device))
    return properties["mem_clock_rate"] * properties["mem_bus_width"] * 2 / 1e6 / 8


def _ops_per_subcore(dtype: Any, capability: tuple[int, int], table: dict[str, int], old_table: dict[str, int],
                     what: str) -> int:
    from .runtime.specialize import element_type_name

    name = element_type_name(dtype)
    chosen = table if capability[0] >= 8 else old_table
    if name not in chosen:
        raise ValueError(f"{what}: no peak figure for {dtype} on compute capability "
                         f"{capability[0]}.{capability[1]}")
    return chosen[name]


# Operations per cycle of one SM sub-partition (four per SM), by element type.
_TENSORCORE_OPS = {"fp32": 256, "i32": 256, "fp16": 512, "bf16": 512, "i16": 512,
                   "i8": 1024, "fp8e4nv": 1024, "fp8e4b15": 1024, "fp8e5": 1024}
_TENSORCORE_OPS_BEFORE_AMPERE = {"fp16": 256}
_SIMD_OPS = {"fp32": 32, "fp16": 64, "bf16": 64}
_SIMD_OPS_BEFORE_AMPERE = {"fp32": 32, "fp16": 64}


def _peak_tflops(dtype: Any, clock_rate: float, device: Any, table: dict[str, int], old_table: dict[str, int],
                 what: str) -> float:
    active = driver.active
    if active.get_current_target().backend == "interpreter":
        # The interpreter's speed is not modelled: no peak to report.
        return 0.0
    index = _device_index(device)
    subcores = active.utils.get_device_properties(index)["multiprocessor_count"] * 4
    capability = tuple(active.get_device_interface().get_device_capability(index))
    return subcores * clock_rate * _ops_per_subcore(dtype, capability, table, old_table, what) * 1e-9


def get_max_tensorcore_tflops(dtype: Any, clock_rate: float, device: Any = None) -> float:
    """Peak tensor-core TFLOPS for `dtype` (a torch or tl dtype) at `clock_rate`
    kHz; 0.0 on the interpreter."""
    return _peak_tflops(dtype, clock_rate, device, _TENSORCORE_OPS, _TENSORCORE_OPS_BEFORE_AMPERE,
                        "get_max_tensorcore_tflops")


def get_max_simd_tflops(dtype: Any, clock_rate: float, device: Any = None) -> float:
    """Peak non-tensor-core TFLOPS for `dtype` at `clock_rate` kHz; 0.0 on the interpreter."""
    return _peak_tflops(dtype, clock_rate, device, _SIMD_OPS, _SIMD_OPS_BEFORE_AMPERE, "get_max_simd_tflops")


__all__ = [
    "Benchmark",
    "BenchmarkTable",
    "Mark",
    "assert_close",
    "do_bench",
    "do_bench_cudagraph",
    "get_dram_gbps",
    "get_max_simd_tflops",
    "get_max_tensorcore_tflops",
    "nvsmi",
    "perf_report",
]


def nvsmi(attrs: Sequence[str]) -> list[int]:
    """The integer values of `nvidia-smi --query-gpu` properties of GPU 0, in
    the order asked (`nvsmi(["clocks.max.sm", "clocks.max.mem"])` -> MHz).
    RuntimeError when nvidia-smi (installed with the NVIDIA driver) is missing
    or fails; ValueError naming the property when it has no integer value."""
    attrs = list(attrs)
    program = shutil.which("nvidia-smi")
    if program is None:
        raise RuntimeError("nvsmi: nvidia-smi was not found on PATH (it is installed with the NVIDIA driver)")
    result = subprocess.run([program, "-i", "0", f"--query-gpu={','.join(attrs)}", "--format=csv,noheader,nounits"],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"nvsmi: nvidia-smi failed (exit status {result.returncode}) querying {attrs}: "
                           f"{(result.stderr or result.stdout).strip()}")
    fields = [field.strip() for field in result.stdout.strip().splitlines()[0].split(",")] if result.stdout else []
    if len(fields) != len(attrs):
        raise RuntimeError(f"nvsmi: nvidia-smi answered {result.stdout.strip()!r} for {attrs}")
    values = []
    for name, field in zip(attrs, fields):
        try:
            values.append(int(field))
        except ValueError:
            raise ValueError(f"nvsmi: GPU 0 has no integer value for {name!r} (nvidia-smi says {field!r})") from None
    return values
