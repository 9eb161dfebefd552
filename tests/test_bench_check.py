"""The benchmark suite (bench/run.py) validated on the CPU: `--check` runs every
benchmark at tiny sizes with the kernels interpreted, checks every output against
torch, and prints the table; the table itself stays within 100 columns."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.run import (
    CHECK_SIZES,
    IMPLS,
    IN_TURN_ROUNDS,
    Case,
    Context,
    Row,
    Variant,
    arch_settings,
    format_table,
    speedups,
    write_png,
)
from bench.timing import summarise

REPO_ROOT = Path(__file__).resolve().parent.parent
KERNEL_BENCHES = {"vector add", "softmax", "layernorm fwd", "layernorm bwd", "matmul", "attention", "bf16 pointwise",
                  "bf16 softmax", "cross-entropy"}


def test_check_runs_every_benchmark(tmp_path: Path) -> None:
    csv_path = tmp_path / "bench.csv"
    png_path = tmp_path / "bench.png"
    plot = ["--png", str(png_path)] if _has_matplotlib() else []
    done = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "run.py"), "--check", "--csv", str(csv_path), *plot],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]

    with open(csv_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    results = [row for row in rows if row["role"] == "result"]
    assert {row["bench"] for row in results} == KERNEL_BENCHES | {"copy", "launch", "first call"}
    assert len({row["case"] for row in results if row["bench"] == "attention"}) == 4
    assert {row["case"] for row in results if row["bench"] == "launch"} == {
        "4 args, grid 1", "autotuned, 48 configs", "3 host descriptors"}
    for row in results:
        if row["impl"] in ("torch", "tritone"):
            # Checked against torch in float64 before being timed, then timed.
            assert row["error"] == "", row
            assert float(row["value"]) > 0, row
    for bench in KERNEL_BENCHES:
        cases = {row["case"] for row in results if row["bench"] == bench}
        for case in cases:
            impls = {row["impl"] for row in results if row["bench"] == bench and row["case"] == case}
            # Upstream Triton has a row too: a figure, or the one-line reason it has none.
            assert impls == {"torch", "triton", "tritone"}, (bench, case)
            tritone = next(row for row in results if (row["bench"], row["case"], row["impl"]) == (bench, case,
                                                                                                  "tritone"))
            assert float(tritone["rel_err"]) < 1e-2
    configs = [row for row in rows if row["role"] == "config" and row["bench"] == "matmul"]
    assert {row["impl"] for row in configs} == {"triton", "tritone"}

    lines = done.stdout.rstrip().splitlines()
    if plot:
        assert lines.pop() == f"speed-ups plotted: {png_path}"
        assert png_path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert lines[-1].startswith("every row"), lines[-3:]
    header = next(index for index, line in enumerate(lines) if line.startswith("benchmark "))
    # the table, title to footer; the last line names the CSV, whose path is pytest's
    assert all(len(line) <= 100 for line in lines[header - 1:-1])


class _ScriptedTimer:
    """A CPU timer whose measurements of a variant's `run` hand out the next of the
    scripted milliseconds of its impl (`impl_of[run]`), and that records the order
    of the measurements."""

    on_gpu = False

    def __init__(self, scripts: dict[str, list[float | None]]):
        self.scripts = scripts
        self.impl_of: dict = {}
        self.order: list[str] = []

    def synchronize(self) -> None:
        pass

    def measure(self, fn, n_sets: int = 1):
        return summarise(self.measure_times(fn, n_sets))

    def measure_times(self, fn, n_sets: int = 1) -> list[float]:
        fn(0)
        impl = self.impl_of[fn]
        self.order.append(impl)
        value = self.scripts[impl].pop(0)
        if value is None:
            raise RuntimeError(f"{impl} failed")
        return [value, value]


def test_chosen_variants_are_timed_again_in_turn() -> None:
    import io

    import torch

    reference = torch.randn(8, dtype=torch.float64)
    rng = np.random.default_rng()
    first = {impl: float(rng.uniform(1.0, 2.0)) for impl in IMPLS}
    rounds = {impl: [float(v) for v in rng.uniform(3.0, 9.0, size=IN_TURN_ROUNDS)] for impl in IMPLS}
    rounds["triton"][1] = None  # its second in-turn measurement fails: it keeps its first figure
    timer = _ScriptedTimer({impl: [first[impl], *rounds[impl]] for impl in IMPLS})
    ctx = Context(sizes=CHECK_SIZES, quick=True, check=True, matmul_configs=False, group="", timer=timer,
                  events=io.StringIO(), implementations={}, show_tracebacks=False)
    case = Case("demo", "n=8", "GB/s", 1e6, [reference], 1e-9)

    def variants(impl: str) -> list[Variant]:
        def run(i: int) -> tuple:
            return (reference.clone(),)

        timer.impl_of[run] = impl
        return [Variant(impl, run)]

    ctx.run_case(case, variants)
    forward, backward = list(IMPLS), list(reversed(IMPLS))
    # Each impl's first measurement, then the rounds in alternating order; triton's failure
    # (in the second round) leaves it out of the later ones.
    later = [impl for r in range(2, IN_TURN_ROUNDS) for impl in (forward, backward)[r % 2] if impl != "triton"]
    assert timer.order == forward + forward + backward + later
    rows = {row["impl"]: row for row in map(_row_of, ctx.events.getvalue().splitlines())}
    for impl in ("torch", "tritone"):
        median = float(np.median(np.repeat(rounds[impl], 2)))
        assert rows[impl]["median"] == pytest.approx(median) and rows[impl]["reps"] == 2 * IN_TURN_ROUNDS
        assert rows[impl]["value"] == pytest.approx(1e6 / median * 1e-6)
    assert rows["triton"]["median"] == pytest.approx(first["triton"]) and rows["triton"]["reps"] == 2


def _row_of(line: str) -> dict:
    import json

    event = json.loads(line)
    assert event["event"] == "row"
    return event["row"]


def test_table_ratios_and_failures() -> None:
    rows = [
        Row("", "softmax", "32768x4096 fp32", "torch", "GB/s", value=2000.0),
        Row("", "softmax", "32768x4096 fp32", "triton", "GB/s", value=1600.0),
        Row("", "softmax", "32768x4096 fp32", "tritone", "GB/s", value=800.0),
        Row("", "launch", "4 args, grid 1", "triton", "us/call", value=20.0),
        Row("", "launch", "4 args, grid 1", "tritone", "us/call", error="RuntimeError: " + "x" * 200),
    ]
    table = format_table(rows, "NVIDIA H200", "full").splitlines()
    softmax = next(line for line in table if line.startswith("softmax"))
    assert softmax.split()[-5:] == ["2000", "1600", "800.0", "0.50", "0.40"]
    launch = table.index(next(line for line in table if line.startswith("launch")))
    assert table[launch].split()[-4:] == ["20.0", "error", "-", "-"]
    assert table[launch + 1].startswith("    tritone: RuntimeError: xxx")
    assert all(len(line) <= 100 for line in table)


def test_arch_compare_settings() -> None:
    # An sm_80 cubin loads on 8.x devices only: on a 9.0 device upstream keeps its target
    # and is held to mma.sync instead; tritone always compiles PTX for the older target.
    assert arch_settings("sm80", (8, 6)) == {"TRITONE_TARGET": "sm_80", "TRITON_OVERRIDE_ARCH": "sm80"}
    assert arch_settings("sm80", None) == {"TRITONE_TARGET": "sm_80", "TRITON_OVERRIDE_ARCH": "sm80"}
    assert arch_settings("sm80", (9, 0)) == {"TRITONE_TARGET": "sm_80", "DISABLE_MMA_V3": "1", "DISABLE_MMA_V5": "1"}


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_speedups_are_above_one_where_tritone_is_faster_in_every_unit() -> None:
    rng = np.random.default_rng()
    bandwidth, seconds = (float(value) for value in rng.uniform(100.0, 1000.0, size=2))
    rows = [
        Row("", "softmax", "a", "torch", "GB/s", value=bandwidth),
        Row("", "softmax", "a", "triton", "GB/s", value=bandwidth / 2),
        Row("", "softmax", "a", "tritone", "GB/s", value=bandwidth),
        Row("", "launch", "b", "triton", "us/call", value=seconds),
        Row("", "launch", "b", "tritone", "us/call", value=seconds / 4),
        Row("", "launch", "b", "torch", "us/call", error="RuntimeError: no figure"),
        Row("", "first call", "c", "triton", "s", value=seconds),
        Row("", "first call", "c", "tritone", "s", error="WrongResult: off"),
        Row("", "matmul", "d", "tritone", "TFLOP/s", value=seconds, role="config"),
    ]
    cases = speedups(rows)
    assert [case[0] for case in cases] == ["softmax: a", "launch: b"]
    assert cases[0][1] == pytest.approx(2.0) and cases[0][2] == pytest.approx(1.0)
    assert cases[1][1] == pytest.approx(4.0) and cases[1][2] is None


def test_png_of_the_comparison(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    rows = [Row("", "vector add", f"n={n}", impl, "GB/s", value=float(value))
            for n, values in ((1024, (50.0, 60.0, 70.0)), (4096, (80.0, 90.0, 85.0)))
            for impl, value in zip(("torch", "triton", "tritone"), values)]
    write_png(rows, tmp_path / "ratios.png", "a title")
    assert (tmp_path / "ratios.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
