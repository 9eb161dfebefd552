"""torch.compile on the CPU with tritone answering `import triton`: every workload of
bench/inductor_workloads.py at tiny size, compiled by Inductor's Triton CPU backend
(`cpu_backend="triton"`), its kernels run by tritone's interpreter through Inductor's own
launchers, compared with eager (float64 reference), and every kernel Inductor kept also
compiled by NVRTC for sm_75, sm_80 and sm_90.

The workloads run in `bench/inductor.py --check` workers (a subprocess with
TRITONE_AS_TRITON=1, fresh Inductor and Triton caches), several workloads per worker so
torch is imported a few times, not once per workload. The slowest workloads are marked
`slow`: `-m "not slow"` leaves them out."""

from __future__ import annotations

import csv
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.inductor import (
    CaseResult,
    Comparison,
    best_window,
    cache_folders,
    format_table,
    geomean,
    merge_rounds,
    worker_env,
)

pytest.importorskip("torch")

from bench.inductor_workloads import WORKLOADS  # noqa: E402  (needs torch)

REPO_ROOT = Path(__file__).resolve().parents[2]
GPU_ARCHS = (75, 80, 90)
SLOW = ("transformer_bwd", "mlp_train", "matmul")
ON_CPU = [name for name, workload in WORKLOADS.items() if not workload.not_on_cpu]
# One worker per group: the fast workloads share one, each slow one has its own.
GROUPS = [tuple(name for name in ON_CPU if name not in SLOW)] + [(name,) for name in SLOW]
_finished: dict[tuple[str, ...], dict[tuple[str, str], dict[str, str]]] = {}


def _results(name: str, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, str]]:
    """The CSV rows of `name`'s group, by (workload, dtype): the group's worker runs once."""
    group = next(group for group in GROUPS if name in group)
    if group not in _finished:
        folder = tmp_path_factory.mktemp("inductor")
        csv_path = folder / "results.csv"
        command = [sys.executable, str(REPO_ROOT / "bench" / "inductor.py"), "--check", "--only", *group,
                   "--nvrtc", *map(str, GPU_ARCHS), "--csv", str(csv_path), "--timeout", "600"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=folder)
        assert csv_path.exists(), done.stdout[-4000:] + done.stderr[-4000:]
        with open(csv_path, newline="", encoding="utf-8") as handle:
            _finished[group] = {(row["workload"], row["dtype"]): row for row in csv.DictReader(handle)}
    return _finished[group]


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name
                                  for name in ON_CPU])
def test_workload_compiles_runs_and_matches_eager(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    rows = _results(name, tmp_path_factory)
    gpu_compiles = 0
    for dtype in ("fp32", "bf16"):
        row = rows[(name, dtype)]
        assert row["error"] == "", row["error"]
        # Compiled and eager each measured against float64 eager; within the dtype's bound.
        assert row["match"] == "True", (dtype, row["rel_err"], row["eager_rel_err"])
        assert math.isfinite(float(row["rel_err"]))
        # Inductor generated Triton kernels, tritone compiled them, and nothing else did.
        assert int(row["inductor_kernels"]) >= 1 and int(row["compilations"]) >= 1, row
        assert row["proof"] == "", row["proof"]
        assert "tritone.compiler.compiler" in row["notes"], row["notes"]
        # the config each of the case's kernels runs, named
        assert "launched: triton_" in row["notes"], row["notes"]
        # Each kept kernel compiled once per GPU target (kernels an earlier case compiled are not repeated).
        assert row["nvrtc_failures"] in ("", "[]"), row["nvrtc_failures"]
        assert int(row["nvrtc"]) % len(GPU_ARCHS) == 0
        gpu_compiles += int(row["nvrtc"])
    assert gpu_compiles >= len(GPU_ARCHS)


def test_check_reports_what_the_cpu_cannot_run(tmp_path: Path) -> None:
    # flex_attention: Inductor has only a C++ template for it on the CPU. The table says so.
    unsupported = [name for name, workload in WORKLOADS.items() if workload.not_on_cpu]
    assert unsupported == ["flex_causal", "flex_sliding"]
    csv_path = tmp_path / "flex.csv"
    done = subprocess.run([sys.executable, str(REPO_ROOT / "bench" / "inductor.py"), "--check", "--only",
                           *unsupported, "--csv", str(csv_path)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("not run: Inductor lowers flex_attention on the CPU") == 2 * len(unsupported)
    with open(csv_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {(row["workload"], row["dtype"]) for row in rows} == {(name, dtype) for name in unsupported
                                                                 for dtype in ("fp32", "bf16")}
    assert all(row["skipped"] and not row["match"] for row in rows)


def _result(side: str, steady: float, graphs: float | None, cold: float, **extra) -> CaseResult:
    return CaseResult("softmax", "bf16", side, match=True, graphs_match=True if graphs else None, steady_ms=steady,
                      graphs_ms=graphs, cold_s=cold, compile_s=cold / 4, inductor_kernels=2, cubins=6, **extra)


def test_table_ratios_geomeans_and_problems() -> None:
    rows = [
        Comparison("softmax", "bf16", _result("triton", 2.0, 1.0, 10.0), _result("tritone", 1.0, 1.0, 5.0)),
        Comparison("cumsum", "fp32", _result("triton", 1.0, None, 4.0), _result("tritone", 2.0, None, 1.0)),
        Comparison("argmax", "fp32", _result("triton", 1.0, 1.0, 1.0),
                   CaseResult("argmax", "fp32", "tritone", error="RuntimeError: " + "x" * 300)),
    ]
    assert rows[0].steady_ratio == pytest.approx(0.5) and rows[1].steady_ratio == pytest.approx(2.0)
    assert rows[2].steady_ratio is None and rows[1].graphs_ratio is None
    table = format_table(rows, "title").splitlines()
    assert all(len(line) <= 112 for line in table)
    softmax = next(line for line in table if line.startswith("softmax"))
    assert softmax.split()[2:] == ["2.000", "0.50", "1.00", "10.0", "0.50", "2.50", "0.50", "2/6", "2/6", "yes/yes"]
    argmax = table.index(next(line for line in table if line.startswith("argmax")))
    assert table[argmax].split()[-1] == "yes/error"
    assert table[argmax + 1].startswith("    tritone: RuntimeError: xxx") and table[argmax + 1].endswith("...")
    means = next(line for line in table if line.startswith("geomean")).split()
    # Steady: geomean(0.5, 2.0) = 1; graphs: only softmax has both; cold and compile: geomean(0.5, 0.25).
    assert means[1:] == ["1.00", "1.00", f"{math.sqrt(0.5 * 0.25):.2f}", f"{math.sqrt(0.5 * 0.25):.2f}"]
    assert "slowest relative to upstream: cumsum fp32 (2.00x)" in table


def test_the_compilation_counter_adds_up_the_listeners_times() -> None:
    from bench.inductor import CompilationCounter
    from tritone.knobs import CompileTimes

    counter = CompilationCounter()
    counter(cache_hit=False, times=CompileTimes(1000, [("ttir", 20000), ("cubin", 300000)], 4000))
    counter(cache_hit=True, times=CompileTimes(500, [], 0))  # a hit compiles nothing
    counter(cache_hit=False, times=CompileTimes(2000, [("cubin", 100000)], 0))
    assert counter.count == 2
    assert counter.seconds == pytest.approx(0.427)


def test_geomean_ignores_missing_figures() -> None:
    assert geomean([4.0, None, 1.0, math.inf]) == pytest.approx(2.0)
    assert geomean([]) is None


def test_worker_environment_chooses_the_side_and_fresh_caches(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "shared"))
    for side, answer in (("triton", "0"), ("tritone", "1")):
        env = worker_env(side, tmp_path / side, "cuda")
        assert env["TRITONE_AS_TRITON"] == answer and "TRITON_INTERPRET" not in env
        caches = [Path(env[name]) for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")]
        assert all(path.is_dir() and not any(path.iterdir()) for path in caches)
        assert all(tmp_path / side in path.parents for path in caches)
        assert str(REPO_ROOT) in env["PYTHONPATH"].split(os.pathsep)
        # Windows' setting unless told otherwise: Inductor compiles in the worker, one kernel at a time.
        assert env["TORCHINDUCTOR_COMPILE_THREADS"] == "1"
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "8")
    assert worker_env("triton", tmp_path / "pool", "cuda", compile_threads=4)["TORCHINDUCTOR_COMPILE_THREADS"] == "4"
    assert "TORCHINDUCTOR_COMPILE_THREADS" not in worker_env("triton", tmp_path / "own", "cuda", compile_threads=0)


def test_cubins_outside_tritones_cache_entries_are_found(tmp_path: Path) -> None:
    from tritone.runtime.cache import KernelCache

    cache = KernelCache(str(tmp_path))
    for key in ("ab" * 16, "cd" * 16):
        assert cache.put(key, "triton_poi_fused_0", {"cubin": os.urandom(64), "ptx": b"//"}, {"num_warps": 4})
    # Upstream Triton's layout: a 52-character folder holding the cubin and its JSON.
    upstream = tmp_path / ("A" * 52)
    upstream.mkdir()
    (upstream / "triton_poi_fused_0.cubin").write_bytes(os.urandom(64))
    (tmp_path / "unrelated").mkdir()
    assert cache_folders(tmp_path) == (2, ["A" * 52])


def test_a_checkout_without_the_hook_gets_it_through_sitecustomize(tmp_path: Path, monkeypatch) -> None:
    import bench.inductor as inductor

    monkeypatch.setattr(inductor, "_hook_installed", lambda: False)
    env = worker_env("tritone", tmp_path, "cpu")
    boot = env["PYTHONPATH"].split(os.pathsep)[0]
    assert Path(boot).parent == tmp_path
    assert "_tritone_triton_hook.install()" in (Path(boot) / "sitecustomize.py").read_text(encoding="utf-8")
    # Upstream's side never gets it.
    assert "boot" not in worker_env("triton", tmp_path / "up", "cpu")["PYTHONPATH"]
    done = subprocess.run([sys.executable, "-c", "import triton; print(triton.__name__, triton.__file__)"],
                          env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.stdout.split()[0] == "tritone", done.stderr[-2000:]
    assert Path(done.stdout.split()[1]).parent.parent == REPO_ROOT


def test_orchestration_sides_in_order_one_at_a_time(monkeypatch, capsys) -> None:
    import bench.inductor as inductor

    calls = []

    def fake_worker(side, cases, args, timeout):
        calls.append((side, tuple(cases)))
        if cases[0][0] == "cumsum" and side == "tritone":
            return [], "worker exit status 1"  # a crashed worker: its cases get its reason
        steady = 2.0 if side == "triton" else 1.0
        return [CaseResult(name, dtype, side, match=True, steady_ms=steady, cold_s=1.0) for name, dtype in cases], ""

    monkeypatch.setattr(inductor, "run_worker", fake_worker)
    monkeypatch.setattr(inductor, "_device_title", lambda check: "a GPU")
    assert inductor.main(["--only", "softmax", "cumsum", "--sequential"]) == 1  # the crashed worker: a harness failure
    # Full mode: one case per worker, upstream first, never two at once (sequential calls).
    assert calls == [(side, ((name, dtype),)) for name in ("softmax", "cumsum") for dtype in ("fp32", "bf16")
                     for side in ("triton", "tritone")]
    table = capsys.readouterr().out
    assert "tritone: worker exit status 1" in table
    assert next(line for line in table.splitlines() if line.startswith("softmax")).split()[3] == "0.50"

    calls.clear()
    assert inductor.main(["--quick", "--only", "softmax", "--sequential"]) == 0
    assert calls == [(side, (("softmax", "fp32"), ("softmax", "bf16"))) for side in ("triton", "tritone")]

    calls.clear()
    assert inductor.main(["--only", "softmax", "--budget", "0", "--sequential"]) == 0
    assert calls == [] and capsys.readouterr().out.count("not run: --budget spent") == 4


def test_repeated_workers_give_median_times_and_every_workers_verdict() -> None:
    rounds = [CaseResult("softmax", "bf16", "tritone", match=True, rel_err=1e-3, steady_ms=0.9, cold_s=2.0,
                         graphs_ms=0.5, compilations=2),
              CaseResult("softmax", "bf16", "tritone", error="worker exit status 1"),
              CaseResult("softmax", "bf16", "tritone", match=False, rel_err=5e-2, steady_ms=0.4, cold_s=1.0,
                         graphs_ms=None, compilations=2),
              CaseResult("softmax", "bf16", "tritone", match=True, rel_err=2e-3, steady_ms=0.5, cold_s=3.0,
                         graphs_ms=0.7, compilations=2)]
    merged = merge_rounds(rounds)
    assert (merged.steady_ms, merged.cold_s, merged.graphs_ms) == (0.5, 2.0, 0.6)
    assert merged.match is False and merged.rel_err == 5e-2 and not merged.error
    assert "times: median of 3 workers" in merged.notes
    assert "a worker failed: worker exit status 1" in merged.notes
    assert rounds[0].notes == []  # the first worker's result is left as it was
    failed = [CaseResult("softmax", "bf16", "tritone", error="timed out"), CaseResult("softmax", "bf16", "tritone")]
    failed[1].error = "worker exit status 1"
    assert merge_rounds(failed) is failed[0]
    single = CaseResult("softmax", "bf16", "tritone", match=True, steady_ms=1.0)
    assert merge_rounds([single]).notes == []


def test_launched_configs_name_each_kernels_config_and_registers() -> None:
    from types import SimpleNamespace

    from bench.inductor import launched_configs

    def launcher(regs, **kwargs):
        return SimpleNamespace(config=SimpleNamespace(kwargs=kwargs, num_warps=8, num_stages=1), n_regs=regs,
                               n_spills=0)

    tuners = [SimpleNamespace(fn=SimpleNamespace(__name__="triton_red_fused_0"),
                              launchers=[launcher(40, XBLOCK=1, R0_BLOCK=2048)]),
              SimpleNamespace(fn=SimpleNamespace(__name__="triton_poi_fused_1"),
                              launchers=[launcher(None, XBLOCK=1024), launcher(18, XBLOCK=512)])]
    assert launched_configs(tuners) == [
        "triton_red_fused_0[R0_BLOCK=2048,XBLOCK=1 w8 s1] regs 40 spills 0",
        "triton_poi_fused_1[XBLOCK=1024 w8 s1] regs None spills 0",
        "triton_poi_fused_1[XBLOCK=512 w8 s1] regs 18 spills 0"]


def test_the_best_window_is_the_one_with_the_lowest_median() -> None:
    from bench.timing import Timing

    windows = iter([Timing(median=0.9, min=0.1, p20=0.2, p80=1.0, reps=9),
                    Timing(median=0.4, min=0.3, p20=0.35, p80=0.5, reps=9),
                    Timing(median=0.6, min=0.05, p20=0.5, p80=0.7, reps=9)])
    calls = []

    def measure() -> Timing:
        calls.append(1)
        return next(windows)

    best = best_window(measure, 3)
    assert (best.median, best.p20, best.p80) == (0.4, 0.35, 0.5) and len(calls) == 3
    assert best_window(lambda: Timing(median=2.0, min=2.0, p20=2.0, p80=2.0, reps=1), 0).median == 2.0


def test_repeat_alternates_the_sides_and_tables_the_medians(monkeypatch, capsys) -> None:
    import bench.inductor as inductor

    calls = []
    steady = {"triton": iter([1.0, 3.0, 2.0]), "tritone": iter([9.0, 1.0, 1.2])}

    def fake_worker(side, cases, args, timeout):
        calls.append(side)
        return [CaseResult(name, dtype, side, match=True, steady_ms=next(steady[side]), cold_s=1.0)
                for name, dtype in cases], ""

    monkeypatch.setattr(inductor, "run_worker", fake_worker)
    monkeypatch.setattr(inductor, "_device_title", lambda check: "a GPU")
    assert inductor.main(["--only", "softmax", "--dtypes", "fp32", "--repeat", "3", "--sequential"]) == 0
    assert calls == ["triton", "tritone", "tritone", "triton", "triton", "tritone"]
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("softmax"))
    assert row.split()[2:4] == ["2.000", "0.60"]  # medians 2.0 and 1.2: one slow tritone worker does not count
    with pytest.raises(SystemExit):
        inductor.main(["--repeat", "0"])


# A stand-in worker for run_pair: it waits for its first turn, works TURNS turns of 50 ms
# (ending each with the turn mark), and reports when each turn ran; the worker for the side
# named in DIES exits with status 3 in its second turn.
_FAKE_WORKER = """
import json, sys, time
from bench.inductor import RESULT_PREFIX, TURN_MARK
side, turns, dies = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def wait():
    if not sys.stdin.readline():
        sys.exit(0)
wait()
spans = []
for turn in range(turns):
    start = time.monotonic()
    time.sleep(0.05)
    spans.append((start, time.monotonic()))
    if side == dies and turn == 1:
        sys.exit(3)
    print(TURN_MARK, flush=True)
    wait()
print(RESULT_PREFIX + json.dumps({"workload": "softmax", "dtype": "fp32", "side": side,
                                  "notes": [json.dumps(spans)]}), flush=True)
"""


@pytest.mark.parametrize("dies", ["", "triton"])
def test_paired_workers_take_turns_and_never_run_at_once(dies: str, tmp_path: Path, monkeypatch) -> None:
    import argparse
    import json

    import bench.inductor as inductor

    script = tmp_path / "fake_worker.py"
    script.write_text(_FAKE_WORKER, encoding="utf-8")
    turns = 4
    monkeypatch.setattr(inductor, "_worker_command",
                        lambda side, cases, args, paired=False: [sys.executable, str(script), side, str(turns), dies])
    args = argparse.Namespace(check=False, compile_threads=1, traceback=False, sequential=False, timeout=60.0)
    done = inductor.run_round(("tritone", "triton"), [("softmax", "fp32")], args, time.monotonic() + 120)
    assert set(done) == {"tritone", "triton"}
    results, failure = done["tritone"]
    assert failure == "" and len(results) == 1
    spans = [("tritone", tuple(span)) for span in json.loads(results[0].notes[0])]
    if dies:
        # the upstream worker died in its second turn: tritone's went on alone to its end
        assert done["triton"] == ([], "worker exit status 3")
        assert len(spans) == turns
    else:
        assert done["triton"][1] == ""
        spans += [("triton", tuple(span)) for span in json.loads(done["triton"][0][0].notes[0])]
        spans.sort(key=lambda item: item[1])
        # tritone first (the order given), then turn about, one window each, never overlapping
        assert [side for side, _ in spans] == ["tritone", "triton"] * turns
        assert all(earlier[1][1] <= later[1][0] for earlier, later in zip(spans, spans[1:]))


def test_a_paired_worker_past_its_time_is_stopped(tmp_path: Path, monkeypatch) -> None:
    import argparse

    import bench.inductor as inductor

    script = tmp_path / "stuck_worker.py"
    script.write_text("import sys, time\nsys.stdin.readline()\ntime.sleep(60)\n", encoding="utf-8")
    monkeypatch.setattr(inductor, "_worker_command",
                        lambda side, cases, args, paired=False: [sys.executable, str(script)])
    args = argparse.Namespace(check=False, compile_threads=1, traceback=False, sequential=False, timeout=1.0)
    started = time.monotonic()
    done = inductor.run_round(("triton", "tritone"), [("softmax", "fp32")], args, time.monotonic() + 120)
    assert time.monotonic() - started < 30
    assert done == {side: ([], "timed out after 2 s") for side in ("triton", "tritone")}


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_the_float64_reference_sees_the_cases_numbers(dtype: str) -> None:
    import torch

    from bench.inductor_workloads import DTYPES, values_of

    for name, workload in WORKLOADS.items():
        fn, inputs = workload.build("cpu", DTYPES[dtype], "tiny")
        with values_of(DTYPES[dtype]):
            reference_fn, reference_inputs = workload.build("cpu", torch.float64, "tiny")
        pairs = list(zip(inputs, reference_inputs))
        if isinstance(fn, torch.nn.Module):
            pairs += list(zip(fn.parameters(), reference_fn.parameters()))
        assert len(pairs) >= len(inputs) >= 1
        for value, reference in pairs:
            if value.is_floating_point():
                assert value.dtype == DTYPES[dtype] and reference.dtype == torch.float64, name
                assert torch.equal(value.double(), reference), name
                assert value.numel() == 1 or float(value.detach().double().std()) > 0, name  # drawn, not a constant
            else:
                assert torch.equal(value, reference), name


def test_tritones_modules_are_byte_compiled_before_the_workers(tmp_path: Path) -> None:
    # The workers must find bytecode for every tritone module even where PYTHONDONTWRITEBYTECODE
    # is set, as upstream Triton's installed package has it.
    import importlib.util

    import tritone
    from bench.inductor import byte_compile_tritone

    module = Path(tritone.__file__).parent / "errors.py"
    cached = Path(importlib.util.cache_from_source(str(module)))
    cached.unlink(missing_ok=True)
    assert byte_compile_tritone()
    assert cached.is_file() and cached.stat().st_mtime >= module.stat().st_mtime
