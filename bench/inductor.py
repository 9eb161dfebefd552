"""torch.compile on upstream Triton and on tritone, side by side: bench/inductor_workloads.py's
workloads, each compiled and run in a fresh process per side on the same GPU.

    python bench/inductor.py [--only NAME ...] [--dtypes fp32 bf16] [--quick] [--csv PATH]
                             [--timeout S] [--budget S] [--repeat N] [--check]

The process started from the command line only orchestrates (it reads the workload list,
which imports torch, but never touches the GPU): for each workload it starts a worker with
upstream Triton answering `import triton` (`TRITONE_AS_TRITON=0`) and one with tritone
answering (`TRITONE_AS_TRITON=1`). On the GPU the two are alive at once and take turns
(`run_pair`): one runs while the other waits, blocked on its stdin, and the turn passes after
every timing window, so timings never share the GPU or the host, and a slow spell of the
host falls on both sides' windows alike rather than on one side's whole worker.
`--sequential` runs one side's worker to its end, then the other's. Each worker gets empty
`TORCHINDUCTOR_CACHE_DIR` and `TRITON_CACHE_DIR` folders, so its first call compiles cold.
In each worker, per case (workload x dtype):

- the outputs (and gradients, for workloads with a backward) of the compiled callable are
  compared with eager's: both are measured against a float64 eager reference, and the
  compiled result matches when its relative error (||out - ref|| / ||ref||) is within the
  dtype's tolerance or within twice eager's own error;
- cold compile: the first call, synchronized (Dynamo, Inductor, Triton compilation,
  autotuning and the run), and the part of it spent in Triton's compiler (the
  compilation listener's times; upstream Triton 3.6 and tritone both report them). Inductor
  compiles with `--compile-threads` (default 1, Windows' setting, where torch always
  compiles in the process itself, one kernel after another). With torch's own choice
  (`--compile-threads 0`) Inductor compiles in the process until its pool of compile
  processes answers a readiness probe, then in the pool: a race whose outcome depends on how
  long the cases before took, and whose compilations the listener does not see;
- before any worker starts, tritone's modules are byte-compiled (`byte_compile_tritone`), so
  neither side compiles Python sources inside a timed call;
- steady state: median of CUDA-event-timed calls (bench/timing.py), with CUDA graphs off
  (`triton.cudagraphs=False`) and on (`triton.cudagraphs=True`, reduce-overhead's setting);
  on the GPU each is measured in `STEADY_WINDOWS` windows and the window with the lowest
  median is kept (`best_window`): a host-bound step (graphs off) slowed for a while by
  something outside the process (another worker compiling on the same host) shows in one
  window, not in all;
- kernels: the kernels Inductor generated (`torch._inductor.metrics`) and the cubins
  compiled into the fresh `TRITON_CACHE_DIR` (Inductor's compile workers included);
- in the tritone worker, the proof that every kernel went through tritone: no module of
  upstream Triton (a file under site-packages/triton) in `sys.modules`, `triton` is
  `tritone`, every launcher's binary is a tritone `CompiledKernel` (or torch's static
  launcher loading a cubin from tritone's cache), tritone's compilation listener counted
  the in-process compilations, and every cache entry is in tritone's layout.

With `--repeat N` every group of cases runs in N workers per side, the sides starting in
turn (upstream first in odd rounds, tritone first in even ones), and each time in the table
is the median over a side's workers (`merge_rounds`). With CUDA graphs off, a small case's
step is the host's launching, torch's Python on both sides, and one worker after the other
on a busy host differed by up to a third: the paired workers' turns are there so that such a
spell slows both sides.

The table prints, per case, tritone's time over upstream's with graphs off and on (below
1: tritone is faster), the cold compile ratio, the kernel counts and whether both matched
eager; then the geomeans. `--check` runs the same code on the CPU at tiny sizes with
Inductor's Triton CPU backend (`cpu_backend="triton"`), tritone's interpreter running the
kernels: upstream Triton has no CPU backend for Inductor, so only tritone's side runs.
tests/inductor runs it.
"""

from __future__ import annotations

import argparse
import compileall
import csv
import json
import math
import os
import queue
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
SIDES = ("triton", "tritone")
DTYPE_NAMES = ("fp32", "bf16")
RESULT_PREFIX = "INDUCTOR_RESULT "
# A paired worker's line ending its turn (`Turns`, `run_pair`).
TURN_MARK = "INDUCTOR_TURN_DONE"
TABLE_WIDTH = 112
# Relative error (||out - ref|| / ||ref||, against float64 eager) a compiled result may have.
TOLERANCE = {"fp32": 1e-4, "bf16": 2e-2}
HOOK_PTH = "_tritone_triton_hook.pth"
# --quick's default budget: the GPU machine's commands stop after 10 minutes; the table
# must be printed before that, with whatever did not fit marked "not run".
QUICK_BUDGET_S = 470.0
# torch's own launcher of cached cubins: static_cuda_launcher in earlier releases,
# static_triton_launcher in torch 2.13.
STATIC_LAUNCHER_MODULES = "torch._inductor.runtime.static_"


@dataclass
class CaseResult:
    """What one worker measured for one (workload, dtype) on one side. Times in ms, compile in s."""

    workload: str
    dtype: str
    side: str
    error: str = ""
    skipped: str = ""
    match: bool | None = None
    rel_err: float | None = None
    eager_rel_err: float | None = None
    graphs_match: bool | None = None
    cold_s: float | None = None
    compile_s: float | None = None
    steady_ms: float | None = None
    steady_p20_ms: float | None = None
    steady_p80_ms: float | None = None
    graphs_ms: float | None = None
    graphs_error: str = ""
    nvrtc: int | None = None
    nvrtc_failures: list[str] = field(default_factory=list)
    inductor_kernels: int | None = None
    cubins: int | None = None
    compilations: int | None = None
    proof: str = ""
    notes: list[str] = field(default_factory=list)


# Windows of repetitions per steady-state time on the GPU; the lowest median is kept.
STEADY_WINDOWS = 3

# The times `merge_rounds` takes the median of, over a side's workers.
ROUND_MEDIANS = ("cold_s", "compile_s", "steady_ms", "steady_p20_ms", "steady_p80_ms", "graphs_ms")


def merge_rounds(rounds: list[CaseResult]) -> CaseResult:
    """One case's result on one side from the workers that ran it (`--repeat`): the first
    successful worker's result, with each of `ROUND_MEDIANS` the median over the successful
    workers, `match` and `graphs_match` true only where every worker's was, the largest
    relative error, and the failed workers' errors in the notes. Where every worker failed,
    the first one's result."""
    good = [result for result in rounds if not result.error and not result.skipped]
    if not good:
        return rounds[0]
    merged = replace(good[0], notes=list(good[0].notes))
    for name in ROUND_MEDIANS:
        values = [getattr(result, name) for result in good if getattr(result, name) is not None]
        setattr(merged, name, statistics.median(values) if values else None)
    for name in ("match", "graphs_match"):
        values = [getattr(result, name) for result in good if getattr(result, name) is not None]
        setattr(merged, name, all(values) if values else None)
    errors = [result.rel_err for result in good if result.rel_err is not None]
    merged.rel_err = max(errors) if errors else None
    merged.proof = next((result.proof for result in good if result.proof), "")
    if len(rounds) > 1:
        merged.notes.append(f"times: median of {len(good)} workers")
        merged.notes += [f"a worker failed: {result.error}" for result in rounds if result.error]
    return merged


# ---------------------------------------------------------------- the worker (one side, one process)


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _leaves(fn: Any, inputs: tuple[Any, ...]) -> list[Any]:
    """The tensors whose gradients a backward workload compares: inputs requiring grad,
    then the module's parameters."""
    import torch

    found = [value for value in inputs if isinstance(value, torch.Tensor) and value.requires_grad]
    if isinstance(fn, torch.nn.Module):
        found += [param for param in fn.parameters() if param.requires_grad]
    return found


def _make_step(fn: Any, inputs: tuple[Any, ...], backward: bool, grad_outputs: list[Any] | None,
               graphs: bool = False) -> Any:
    """A call of `fn` on `inputs` returning its outputs and, for a backward workload, the
    gradients of its leaves (cleared first, so they never accumulate)."""
    import torch

    leaves = _leaves(fn, inputs) if backward else []

    def step() -> tuple[Any, ...]:
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        for leaf in leaves:
            leaf.grad = None
        outputs = _as_tuple(fn(*inputs))
        if not backward:
            return outputs
        differentiable = [out for out in outputs if out.requires_grad]
        torch.autograd.backward(differentiable, grad_outputs)
        return outputs + tuple(leaf.grad for leaf in leaves)

    return step


def _grad_outputs(outputs: tuple[Any, ...], rounded_to: list[Any] | None = None) -> list[Any]:
    """Random gradients for the differentiable `outputs`, in their dtypes; each first rounded
    to `rounded_to[i]` where given (the case's output dtypes, for its float64 reference), so
    the case and its reference get the same numbers."""
    import torch

    gen = torch.Generator().manual_seed(1234)
    differentiable = [out for out in outputs if out.requires_grad]
    rounding = rounded_to or [out.dtype for out in differentiable]
    return [torch.randn(out.shape, generator=gen).to(dtype).to(device=out.device, dtype=out.dtype)
            for out, dtype in zip(differentiable, rounding)]


def _rel_err(values: tuple[Any, ...], reference: tuple[Any, ...]) -> float:
    """The largest ||v - r|| / ||r|| over the outputs, in float64; inf on a shape mismatch or
    a NaN/inf where the reference has none."""
    import torch

    if len(values) != len(reference):
        return math.inf
    worst = 0.0
    for value, ref in zip(values, reference):
        if value is None or ref is None:
            if value is not ref:
                return math.inf
            continue
        value, ref = value.detach().double().cpu(), ref.detach().double().cpu()
        if value.shape != ref.shape or not torch.isfinite(value).all():
            return math.inf
        scale = max(float(torch.linalg.vector_norm(ref)), 1e-30)
        worst = max(worst, float(torch.linalg.vector_norm(value - ref)) / scale)
    return worst


def _synchronize(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def _cubins(cache_dir: Path) -> int:
    return sum(1 for _ in cache_dir.rglob("*.cubin"))


def _upstream_dirs() -> list[str]:
    """Where upstream Triton's package would live: site-packages/triton of every site folder."""
    folders = list(site.getsitepackages()) + [site.getusersitepackages()]
    return [os.path.normcase(os.path.join(folder, "triton")) + os.sep for folder in folders]


def upstream_modules_loaded() -> list[str]:
    """Names of loaded modules whose file lies in upstream Triton's package folder."""
    roots = _upstream_dirs()
    found = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and any(os.path.normcase(os.path.abspath(path)).startswith(root) for root in roots):
            found.append(name)
    return sorted(found)


def _autotuners() -> list[Any]:
    """Every Inductor autotuner (one per generated kernel) alive in the process."""
    import gc

    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    # type(), not isinstance: gc also holds weak proxies, whose isinstance raises once dead.
    return [obj for obj in gc.get_objects() if issubclass(type(obj), CachingAutotuner)]


def _kernel_modules(autotuners: list[Any]) -> tuple[int, list[str]]:
    """(compiled kernels Inductor holds, the modules of their classes) over `autotuners`
    (every one alive): Triton's `CompiledKernel` (tritone's or upstream's), or torch's
    static launcher (a cubin loaded by torch from the Triton cache)."""
    count = 0
    modules: set[str] = set()
    for autotuner in autotuners:
        for result in autotuner.compile_results:
            count += 1
            modules.add(type(result.kernel).__module__)
    return count, sorted(modules)


def launched_configs(autotuners: list[Any]) -> list[str]:
    """Per launcher of `autotuners` (after autotuning, the config each kernel runs): the
    kernel's name, the config, and the registers and spills its binary reports. A looped
    reduction over 32 registers makes Inductor compile one more config, its R0_BLOCK halved
    (`CachingAutotuner._dynamic_scale_rblock`), so these say why a side compiled more."""
    rows = []
    for autotuner in autotuners:
        name = getattr(autotuner.fn, "__name__", type(autotuner.fn).__name__)
        for launcher in autotuner.launchers:
            config = getattr(launcher, "config", None)
            kwargs = ",".join(f"{key}={value}" for key, value in sorted(getattr(config, "kwargs", {}).items()))
            rows.append(f"{name}[{kwargs} w{getattr(config, 'num_warps', '?')} s{getattr(config, 'num_stages', '?')}]"
                        f" regs {getattr(launcher, 'n_regs', None)} spills {getattr(launcher, 'n_spills', None)}")
    return rows


def launched_kernels(autotuners: list[Any] | None = None) -> dict[str, Any]:
    """The Triton `CompiledKernel`s that `autotuners` (default: every one alive) keep (after
    autotuning, the configs they launch), by hash."""
    found: dict[str, Any] = {}
    for autotuner in _autotuners() if autotuners is None else autotuners:
        for result in autotuner.compile_results:
            if hasattr(result.kernel, "src"):
                found.setdefault(result.kernel.hash, result.kernel)
    return found


# The options of an interpreter compilation that a CUDA compilation of the same kernel keeps.
GPU_OPTION_NAMES = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "debug",
                    "launch_pdl", "launch_cooperative_grid", "sanitize_overflow")


def compile_for_gpus(kernels: list[Any], archs: list[int]) -> tuple[int, list[str]]:
    """Compile each of `kernels` (tritone interpreter kernels) with NVRTC for every
    compute capability in `archs`; (compilations done, one line per failure)."""
    import tritone
    from tritone.backends.compiler import GPUTarget

    done, failures = 0, []
    for kernel in kernels:
        options = {name: getattr(kernel.options, name) for name in GPU_OPTION_NAMES}
        for arch in archs:
            try:
                tritone.compile(kernel.src, target=GPUTarget("cuda", arch, 32), options=options)
                done += 1
            except Exception as error:
                failures.append(f"{kernel.name} sm_{arch}: {_one_line(error)}")
    return done, failures


class CompilationCounter:
    """Counts the compilations `triton.knobs.compilation.listener` reports in this process
    (upstream Triton 3.6 and tritone both call it), cache hits left out, and adds up the
    time they took by the `times` both report (from the call of `compile` to the stored
    result, in microseconds)."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0

    def __call__(self, **kwargs: Any) -> None:
        if kwargs.get("cache_hit"):
            return
        self.count += 1
        times = kwargs.get("times")
        if times is not None:
            lowering = sum(duration for _, duration in times.lowering_stages)
            self.seconds += (times.ir_initialization + lowering + times.store_results) / 1e6

    def install(self) -> bool:
        import triton

        knobs = getattr(triton, "knobs", None)
        if knobs is None or not hasattr(knobs.compilation, "listener"):
            return False
        knobs.compilation.listener = self
        return True


def _compile(fn: Any, options: dict[str, Any]) -> Any:
    import torch

    return torch.compile(fn, options=options, dynamic=False)


def run_case(name: str, dtype_name: str, device: str, scale: str, side: str, quick: bool,
             counter: CompilationCounter | None, cache_dir: Path | None, turns: Turns | None = None,
             ) -> CaseResult:
    """Compile, check and time one case in this process (see the module docstring); a
    paired worker's turn (`turns`) ends after each timing window."""
    turns = turns or Turns(False)
    import torch
    import torch._dynamo
    from torch._inductor import metrics

    from bench.inductor_workloads import DTYPES, WORKLOADS, values_of
    from bench.timing import Timer, TimingPlan

    workload = WORKLOADS[name]
    dtype = DTYPES[dtype_name]
    result = CaseResult(name, dtype_name, side)
    torch._dynamo.reset()

    fn, inputs = workload.build(device, dtype, scale)
    eager_out = _as_tuple(fn(*inputs))
    grads = _grad_outputs(eager_out) if workload.backward else None
    eager = _make_step(fn, inputs, workload.backward, grads)
    eager_values = tuple(value.detach().clone() for value in eager())
    try:
        with values_of(dtype):
            ref_fn, ref_inputs = workload.build(device, torch.float64, scale)
        ref_grads = None
        if workload.backward:
            ref_outs = _as_tuple(ref_fn(*ref_inputs))
            ref_grads = _grad_outputs(ref_outs, [grad.dtype for grad in grads])
        reference = _make_step(ref_fn, ref_inputs, workload.backward, ref_grads)()
        result.eager_rel_err = _rel_err(eager_values, reference)
    except Exception as error:  # A workload whose float64 eager fails is compared with eager itself.
        result.notes.append(f"no float64 reference ({type(error).__name__}); compared with eager")
        reference, result.eager_rel_err = eager_values, 0.0
    bound = max(TOLERANCE[dtype_name], 2 * result.eager_rel_err)

    metrics.reset()
    cubins_before = _cubins(cache_dir) if cache_dir else 0
    counted_before = counter.count if counter else 0
    compile_seconds_before = counter.seconds if counter else 0.0
    compiled = _compile(fn, {**workload.compile_options(device), "triton.cudagraphs": False})
    step = _make_step(compiled, inputs, workload.backward, grads)
    start = time.perf_counter()
    values = step()
    _synchronize(device)
    result.cold_s = time.perf_counter() - start
    if counter:
        result.compile_s = counter.seconds - compile_seconds_before
    result.inductor_kernels = metrics.generated_kernel_count
    result.rel_err = _rel_err(values, reference)
    result.match = result.rel_err <= bound

    plan = TimingPlan(warmup_ms=10.0, rep_ms=40.0) if quick else TimingPlan()
    if device != "cuda":
        plan = TimingPlan(rep_ms=0.0, min_reps=1)  # the check validates; it measures nothing
    timer = Timer(device, plan)
    windows = STEADY_WINDOWS if device == "cuda" else 1
    timing = best_window(lambda: timer.measure(lambda i: step()), windows, turns.pass_on)
    result.steady_ms, result.steady_p20_ms, result.steady_p80_ms = timing.median, timing.p20, timing.p80

    if device == "cuda":
        try:
            graphed = _compile(fn, {**workload.compile_options(device), "triton.cudagraphs": True})
            graph_step = _make_step(graphed, inputs, workload.backward, grads, graphs=True)
            graph_values = tuple(value.detach().clone() for value in graph_step())
            result.graphs_match = _rel_err(graph_values, reference) <= bound
            result.graphs_ms = best_window(lambda: timer.measure(lambda i: graph_step()), windows,
                                           turns.pass_on).median
        except Exception as error:
            result.graphs_error = _one_line(error)
    if cache_dir:
        result.cubins = _cubins(cache_dir) - cubins_before
    if counter:
        result.compilations = counter.count - counted_before
    return result


def best_window(measure: Any, windows: int, after_each: Any = None) -> Any:
    """The `Timing` with the lowest median of `windows` calls of `measure`: the time a
    step takes when nothing outside it slows it, as timeit's best of several runs.
    `after_each` (when given) is called after every window: a paired worker's turn ends there."""
    timings = []
    for _ in range(max(1, windows)):
        timings.append(measure())
        if after_each is not None:
            after_each()
    return min(timings, key=lambda timing: timing.median)


class Turns:
    """A paired worker's share of the machine (`run_pair`): it runs only between a "go" line
    on its stdin and its next `TURN_MARK` line on stdout, while its partner waits in `wait`."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def wait(self) -> None:
        if self.enabled and not sys.stdin.readline():
            sys.exit(0)  # the orchestrator is gone

    def pass_on(self) -> None:
        if self.enabled:
            print(TURN_MARK, flush=True)
            self.wait()


def _one_line(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".replace("\n", " ")
    return text if len(text) <= 300 else text[:297] + "..."


def cache_folders(cache_dir: Path) -> tuple[int, list[str]]:
    """(tritone's committed entries in `cache_dir`, the names of other folders holding a
    cubin: upstream Triton's, say)."""
    from tritone.runtime.cache import KernelCache

    ours = {os.path.basename(entry.folder) for entry in KernelCache(str(cache_dir)).entries().committed}
    others = sorted(path.name for path in cache_dir.iterdir()
                    if path.is_dir() and path.name not in ours and any(path.rglob("*.cubin")))
    return len(ours), others


def _proof(side: str, cache_dir: Path | None, autotuners: list[Any]) -> tuple[str, list[str]]:
    """('' or why the tritone side is not proven to have used only tritone, details), from
    `autotuners` (every one alive)."""
    import triton

    count, modules = _kernel_modules(autotuners)
    details = [f"kernels Inductor holds in this process: {count} ({', '.join(modules) or 'none'})"]
    problems = []
    is_tritone = getattr(triton, "__name__", "") == "tritone"
    if side == "tritone":
        if not is_tritone:
            problems.append(f"`import triton` gave {triton.__file__}, not tritone")
        loaded = upstream_modules_loaded()
        if loaded:
            problems.append(f"upstream Triton modules loaded: {', '.join(loaded[:5])}")
        foreign = [module for module in modules if not module.startswith(("tritone.", STATIC_LAUNCHER_MODULES))]
        if foreign:
            problems.append(f"binaries of {', '.join(foreign)}")
        if cache_dir is not None:
            entries, others = cache_folders(cache_dir)
            details.append(f"tritone cache entries: {entries}")
            if others:
                problems.append(f"cubins outside tritone's cache entries: {', '.join(others[:3])}")
    elif is_tritone:
        problems.append("tritone answered `import triton` on upstream's side")
    return "; ".join(problems), details


def worker_main(spec: dict[str, Any]) -> int:
    """Run `spec`'s cases on one side and print one result line per case."""
    device, scale, side, quick = spec["device"], spec["scale"], spec["side"], spec["quick"]
    turns = Turns(spec.get("paired", False))
    turns.wait()  # a paired worker starts (imports torch, compiles) in its first turn
    cache_dir = Path(os.environ["TRITON_CACHE_DIR"]) if device == "cuda" else None
    import torch
    import torch._inductor.config as inductor_config

    if device == "cpu":
        import warnings

        # torch warns that no Triton "cpu" backend is registered; tritone runs the kernels anyway.
        warnings.filterwarnings("ignore", message="Could not find an active CPU backend")
        inductor_config.cpu_backend = "triton"
        # Two cores at most in CI: compile in this process (this also lets the listener see every kernel).
        inductor_config.compile_threads = 1
    counter = CompilationCounter()
    if not counter.install():
        counter = None
    gpu_compiled: set[str] = set()  # kernels already compiled with NVRTC (by an earlier case)
    seen: dict[int, Any] = {}  # the autotuners of earlier cases (held, so their ids stay theirs)
    for name, dtype_name in spec["cases"]:
        try:
            result = run_case(name, dtype_name, device, scale, side, quick, counter, cache_dir, turns)
            autotuners = _autotuners()  # one scan of the heap for all that follows
            result.proof, details = _proof(side, cache_dir, autotuners)
            result.notes += details
            new = [autotuner for autotuner in autotuners if id(autotuner) not in seen]
            seen.update((id(autotuner), autotuner) for autotuner in new)
            result.notes.append("launched: " + "; ".join(launched_configs(new)))
            if spec.get("nvrtc"):
                kernels = {key: kernel for key, kernel in launched_kernels(autotuners).items()
                           if key not in gpu_compiled}
                gpu_compiled.update(kernels)
                result.nvrtc, result.nvrtc_failures = compile_for_gpus(list(kernels.values()), spec["nvrtc"])
        except Exception as error:
            result = CaseResult(name, dtype_name, side, error=_one_line(error))
            if spec.get("traceback"):
                import traceback

                traceback.print_exc()
        print(RESULT_PREFIX + json.dumps(asdict(result)), flush=True)
        if device == "cuda":
            torch.cuda.empty_cache()
    return 0


# ---------------------------------------------------------------- the orchestrator


def byte_compile_tritone() -> bool:
    """Write the bytecode of tritone's modules, as pip does when it installs a package.

    Upstream Triton comes installed with its bytecode; a checkout of tritone may have none,
    and where `PYTHONDONTWRITEBYTECODE` is set (the GPU machine sets it) every worker would
    compile tritone's sources again inside the timed first call (0.2-0.3 s measured on the
    GPU machine). compileall writes the files whatever that variable says."""
    import tritone

    return compileall.compile_dir(os.path.dirname(tritone.__file__), quiet=2)


def _hook_installed() -> bool:
    """Whether the .pth that makes `TRITONE_AS_TRITON` work is in this environment."""
    folders = list(site.getsitepackages()) + [site.getusersitepackages()]
    return any(os.path.isfile(os.path.join(folder, HOOK_PTH)) for folder in folders)


def worker_env(side: str, root: Path, device: str, compile_threads: int = 1) -> dict[str, str]:
    """The environment of a worker for `side` with fresh cache folders under `root`, its
    Inductor compiling with `compile_threads` (0: torch's own choice)."""
    env = dict(os.environ)
    env["TRITONE_AS_TRITON"] = "1" if side == "tritone" else "0"
    if compile_threads > 0:
        env["TORCHINDUCTOR_COMPILE_THREADS"] = str(compile_threads)
    else:
        env.pop("TORCHINDUCTOR_COMPILE_THREADS", None)
    # Both implementations read these; on the CPU tritone runs compiled kernels in its
    # interpreter anyway, and Inductor's interpret mode would skip its own launchers.
    for variable in ("TRITON_INTERPRET", "TRITONE_INTERPRET"):
        env.pop(variable, None)
    paths = [str(REPO_ROOT)]
    if side == "tritone" and not _hook_installed():
        # A checkout that was never `pip install`ed has no .pth hook: a sitecustomize puts the
        # checkout's hook in every process of the worker (Inductor's compile workers included).
        boot = root / "boot"
        boot.mkdir(exist_ok=True)
        (boot / "sitecustomize.py").write_text("import _tritone_triton_hook\n_tritone_triton_hook.install()\n",
                                               encoding="utf-8")
        paths.insert(0, str(boot))
    env["PYTHONPATH"] = os.pathsep.join(paths + [env["PYTHONPATH"]] if env.get("PYTHONPATH") else paths)
    for variable, folder in (("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
        path = root / folder
        path.mkdir(parents=True, exist_ok=True)
        env[variable] = str(path)
    return env


def _worker_command(side: str, cases: list[tuple[str, str]], args: argparse.Namespace,
                    paired: bool = False) -> list[str]:
    device = "cpu" if args.check else "cuda"
    spec = {"side": side, "cases": cases, "device": device, "scale": "tiny" if args.check else "full",
            "quick": args.quick, "traceback": args.traceback, "nvrtc": args.nvrtc if args.check else [],
            "paired": paired}
    return [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]


def _parse_results(output: str) -> list[CaseResult]:
    return [CaseResult(**json.loads(line[len(RESULT_PREFIX):]))
            for line in output.splitlines() if line.startswith(RESULT_PREFIX)]


def run_worker(side: str, cases: list[tuple[str, str]], args: argparse.Namespace, timeout: float,
               ) -> tuple[list[CaseResult], str]:
    """Run one worker to completion (or `timeout`); its results and, when it failed, why."""
    device = "cpu" if args.check else "cuda"
    root = Path(tempfile.mkdtemp(prefix=f"inductor-{side}-"))
    try:
        env = worker_env(side, root, device, args.compile_threads)
        command = _worker_command(side, cases, args)
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout,
                                  cwd=str(root))
            output, failure = done.stdout, "" if done.returncode == 0 else f"worker exit status {done.returncode}"
            if args.traceback or done.returncode != 0:
                sys.stderr.write(done.stderr[-6000:])
        except subprocess.TimeoutExpired as expired:
            output = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout or ""
            failure = f"timed out after {timeout:.0f} s"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return _parse_results(output), failure


def run_pair(order: tuple[str, ...], cases: list[tuple[str, str]], args: argparse.Namespace, timeout: float,
             ) -> dict[str, tuple[list[CaseResult], str]]:
    """Both sides' workers for `cases` alive at once, taking turns (`Turns`): `order[0]`
    starts; each runs until it ends its turn (after a timing window) or exits, then the other
    runs, so the two are never on the machine together, and a slow spell of the host (the
    time of day of a four-GPU host, say) falls on both sides' windows alike instead of on one
    side's whole worker. Each side's results and, when its worker failed, why; a worker still
    running after `timeout` seconds in all is killed."""
    device = "cpu" if args.check else "cuda"
    deadline = time.monotonic() + timeout
    roots = {side: Path(tempfile.mkdtemp(prefix=f"inductor-{side}-")) for side in order}
    procs: dict[str, subprocess.Popen] = {}
    lines: dict[str, queue.Queue] = {side: queue.Queue() for side in order}
    output: dict[str, list[str]] = {side: [] for side in order}
    failures = dict.fromkeys(order, "")
    try:
        for side in order:
            env = worker_env(side, roots[side], device, args.compile_threads)
            with open(roots[side] / "stderr.txt", "w", encoding="utf-8") as errors:
                procs[side] = subprocess.Popen(_worker_command(side, cases, args, paired=True), env=env,
                                               cwd=str(roots[side]), stdin=subprocess.PIPE,
                                               stdout=subprocess.PIPE, stderr=errors, text=True)
            reader = threading.Thread(target=_read_lines, args=(procs[side].stdout, lines[side]), daemon=True)
            reader.start()
        alive = list(order)
        active = order[0]
        _go(procs[active])
        while alive:
            try:
                line = lines[active].get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                for side in alive:
                    procs[side].kill()
                    failures[side] = f"timed out after {timeout:.0f} s"
                break
            if line is not None and line.strip() != TURN_MARK:
                output[active].append(line)
                continue
            if line is None:  # the worker exited
                code = procs[active].wait()
                if code != 0:
                    failures[active] = f"worker exit status {code}"
                alive.remove(active)
                if not alive:
                    break
            others = [side for side in alive if side != active]
            active = others[0] if others else active
            _go(procs[active])
    finally:
        for side, proc in procs.items():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            errors = (roots[side] / "stderr.txt").read_text(encoding="utf-8", errors="replace")
            if args.traceback or failures[side]:
                sys.stderr.write(errors[-6000:])
        for root in roots.values():
            shutil.rmtree(root, ignore_errors=True)
    return {side: (_parse_results("".join(output[side])), failures[side]) for side in order}


def _read_lines(stream: Any, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def _go(proc: subprocess.Popen) -> None:
    """Start `proc`'s turn (a worker that has exited meanwhile shows as its end of output)."""
    try:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    except (BrokenPipeError, OSError):
        pass


def run_round(order: tuple[str, ...], cases: list[tuple[str, str]], args: argparse.Namespace, deadline: float,
              ) -> dict[str, tuple[list[CaseResult], str]]:
    """One worker per side for `cases`: paired (`run_pair`) on the GPU, one after the
    other in `order` with `--sequential` or one side; each side's results and failure.
    A worker may take `--timeout` seconds (a pair, twice that), none past `deadline`
    (`time.monotonic()`'s)."""
    if len(order) > 1 and not args.sequential and not args.check:
        return run_pair(order, cases, args, min(len(order) * args.timeout, deadline - time.monotonic()))
    done = {}
    for side in order:
        left = deadline - time.monotonic()
        done[side] = run_worker(side, cases, args, min(args.timeout, left)) if left > 5 else \
            ([], "not run: --budget spent")
    return done


def geomean(values: list[float]) -> float | None:
    values = [value for value in values if value and value > 0 and math.isfinite(value)]
    return math.exp(sum(math.log(value) for value in values) / len(values)) if values else None


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


@dataclass(frozen=True)
class Comparison:
    """One table row: a case's two sides."""

    workload: str
    dtype: str
    upstream: CaseResult | None
    tritone: CaseResult | None

    @property
    def steady_ratio(self) -> float | None:
        return _ratio(_field(self.tritone, "steady_ms"), _field(self.upstream, "steady_ms"))

    @property
    def graphs_ratio(self) -> float | None:
        return _ratio(_field(self.tritone, "graphs_ms"), _field(self.upstream, "graphs_ms"))

    @property
    def cold_ratio(self) -> float | None:
        return _ratio(_field(self.tritone, "cold_s"), _field(self.upstream, "cold_s"))

    @property
    def compile_ratio(self) -> float | None:
        return _ratio(_field(self.tritone, "compile_s"), _field(self.upstream, "compile_s"))


def _field(result: CaseResult | None, name: str) -> Any:
    return None if result is None or result.error else getattr(result, name)


def _match_text(result: CaseResult | None) -> str:
    if result is None or result.skipped:
        return "-"
    if result.error:
        return "error"
    ok = result.match and result.graphs_match is not False
    return "yes" if ok else "NO"


def _kernels_text(result: CaseResult | None) -> str:
    if result is None or result.error or result.skipped:
        return "-"
    compiled = result.cubins if result.cubins is not None else result.compilations
    return f"{result.inductor_kernels}/{'-' if compiled is None else compiled}"


def format_table(comparisons: list[Comparison], title: str) -> str:
    """The table: per case the upstream figures, tritone's ratios, kernel counts, matches."""
    header = (f"{'workload':<16}{'dtype':<6}{'up ms':>9}{'tt/up':>7}{'graphs':>8}{'up cold s':>10}"
              f"{'tt/up':>7}{'up comp s':>10}{'tt/up':>7}{'kernels up':>11}{'kernels tt':>11}{'match':>10}")
    lines = [_clip(title), header, "-" * len(header)]
    for row in comparisons:
        up, tt = row.upstream, row.tritone
        lines.append(f"{row.workload:<16}{row.dtype:<6}{_fmt(_field(up, 'steady_ms'), 3):>9}"
                     f"{_fmt(row.steady_ratio):>7}{_fmt(row.graphs_ratio):>8}{_fmt(_field(up, 'cold_s'), 1):>10}"
                     f"{_fmt(row.cold_ratio):>7}{_fmt(_field(up, 'compile_s'), 2):>10}{_fmt(row.compile_ratio):>7}"
                     f"{_kernels_text(up):>11}{_kernels_text(tt):>11}"
                     f"{_match_text(up) + '/' + _match_text(tt):>10}")
        for label, result in (("triton", up), ("tritone", tt)):
            if result is None:
                continue
            problems = (result.skipped and f"not run: {result.skipped}", result.error,
                        result.graphs_error and f"graphs: {result.graphs_error}",
                        result.proof and f"NOT PROVEN: {result.proof}")
            for problem in problems:
                if problem:
                    lines.append(_clip(f"    {label}: {problem}"))
            if result.match is False:
                lines.append(_clip(f"    {label}: relative error {result.rel_err:.2e} "
                                   f"(eager's {result.eager_rel_err:.2e})"))
    lines.append("-" * len(header))
    steady = geomean([row.steady_ratio for row in comparisons])
    graphs = geomean([row.graphs_ratio for row in comparisons])
    cold = geomean([row.cold_ratio for row in comparisons])
    compiling = geomean([row.compile_ratio for row in comparisons])
    lines.append(f"{'geomean':<22}{'':>9}{_fmt(steady):>7}{_fmt(graphs):>8}{'':>10}{_fmt(cold):>7}"
                 f"{'':>10}{_fmt(compiling):>7}")
    worst = max((row for row in comparisons if row.steady_ratio), key=lambda row: row.steady_ratio, default=None)
    if worst is not None:
        lines.append(f"slowest relative to upstream: {worst.workload} {worst.dtype} ({worst.steady_ratio:.2f}x)")
    lines.append("tt/up: tritone's time (or cold compile) over upstream Triton's, below 1: tritone faster;")
    lines.append("graphs: tt/up of the steady time with CUDA graphs (triton.cudagraphs=True)")
    lines.append("cold: the first call (Dynamo, Inductor, Triton compiles, autotuning, the run); comp: the")
    lines.append("time of that call spent in Triton's compile (the compilation listener's times, in-process")
    lines.append("compilations only: with --compile-threads 1 all of them)")
    lines.append("kernels: generated by Inductor / compilations (cubins; on the CPU the compilation")
    lines.append("listener's count); each autotuning config is a compilation")
    return "\n".join(lines)


def _clip(line: str) -> str:
    return line if len(line) <= TABLE_WIDTH else line[:TABLE_WIDTH - 3] + "..."


def write_csv(path: Path, results: list[CaseResult]) -> None:
    names = [item.name for item in fields(CaseResult)]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        for result in results:
            row = asdict(result)
            row["notes"] = "; ".join(result.notes)
            writer.writerow(row)


def _device_title(check: bool) -> str:
    if check:
        return "CPU (Inductor's Triton CPU backend, tritone's interpreter)"
    code = ("import torch\nprint(torch.cuda.get_device_name(), 'torch', torch.__version__, end='')\n"
            "try:\n    import triton\n    print(', triton', triton.__version__)\n"
            "except ImportError:\n    print(', no upstream triton')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRITONE_AS_TRITON": "0"})
    return done.stdout.strip() or f"unknown device ({done.stderr.strip().splitlines()[-1:]})"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        # before anything imports torch: a paired worker waits for its turn first
        return worker_main(json.loads(argv[1]))
    from bench.inductor_workloads import WORKLOADS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(WORKLOADS), help="run these workloads")
    parser.add_argument("--dtypes", nargs="+", choices=DTYPE_NAMES, default=list(DTYPE_NAMES))
    parser.add_argument("--quick", action="store_true",
                        help="both dtypes of a workload in one worker per side, shorter timing")
    parser.add_argument("--check", action="store_true", help="CPU, tiny sizes, tritone only: validate the suite")
    parser.add_argument("--csv", type=Path, help="write every result here")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one worker may take")
    parser.add_argument("--budget", type=float,
                        help=f"seconds the whole run may take (default: {QUICK_BUDGET_S:.0f} with --quick, else none)")
    parser.add_argument("--nvrtc", nargs="*", type=int, default=[], metavar="ARCH",
                        help="with --check: also compile every kernel with NVRTC for these compute "
                             "capabilities (75 80 90)")
    parser.add_argument("--compile-threads", type=int, default=1, metavar="N",
                        help="Inductor's compile_threads in the workers (default 1, Windows' setting: every "
                             "kernel compiles in the worker itself, one after another; 0: torch's choice, "
                             "a pool of processes once it is ready)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="N workers per side for every group of cases, the sides starting in turn; the "
                             "table shows each time's median over them")
    parser.add_argument("--sequential", action="store_true",
                        help="one side's worker after the other's instead of both alive, taking turns window "
                             "by window")
    parser.add_argument("--traceback", action="store_true", help="print workers' tracebacks")
    args = parser.parse_args(argv)

    if args.repeat < 1:
        parser.error("--repeat must be 1 or more")
    if args.budget is None:
        args.budget = QUICK_BUDGET_S if args.quick else math.inf
    started = time.monotonic()
    if not byte_compile_tritone():
        print("warning: some of tritone's modules did not byte-compile; its workers compile them", flush=True)
    mode = "check" if args.check else ("quick" if args.quick else "full")
    title = f"torch.compile, upstream Triton vs tritone ({mode}): {_device_title(args.check)}"
    names = args.only or list(WORKLOADS)
    sides = ("tritone",) if args.check else SIDES
    groups = ([[(name, dtype) for dtype in args.dtypes] for name in names] if args.quick or args.check
              else [[(name, dtype)] for name in names for dtype in args.dtypes])
    results: list[CaseResult] = []
    harness_failed = False
    if args.check:
        for name in names:
            reason = WORKLOADS[name].not_on_cpu
            if reason:
                results += [CaseResult(name, dtype, "tritone", skipped=reason) for dtype in args.dtypes]
        groups = [cases for cases in groups if not WORKLOADS[cases[0][0]].not_on_cpu]
    for cases in groups:
        rounds: dict[tuple[str, str, str], list[CaseResult]] = {}
        for round_index in range(args.repeat):
            order = sides if round_index % 2 == 0 else sides[::-1]
            left = args.budget - (time.monotonic() - started)
            if left <= 5:
                if round_index == 0:
                    results += [CaseResult(name, dtype, side, error="not run: --budget spent")
                                for side in order for name, dtype in cases]
                continue
            print(f"{' then '.join(order)}: {', '.join(f'{name} {dtype}' for name, dtype in cases)}", flush=True)
            for side, (got, failure) in run_round(order, cases, args, started + args.budget).items():
                seen = {(result.workload, result.dtype) for result in got}
                for name, dtype in cases:
                    if (name, dtype) not in seen:
                        harness_failed = harness_failed or not failure.startswith("not run")
                        got.append(CaseResult(name, dtype, side, error=failure or "worker wrote no result"))
                for result in got:
                    summary = result.error or (f"match={result.match} steady={_fmt(result.steady_ms, 3)} ms "
                                               f"cold={_fmt(result.cold_s, 1)} s")
                    print(f"    {side} {result.workload} {result.dtype}: {summary}", flush=True)
                    rounds.setdefault((result.workload, result.dtype, result.side), []).append(result)
        results += [merge_rounds(got) for got in rounds.values()]

    by_key = {(result.workload, result.dtype, result.side): result for result in results}
    comparisons = [Comparison(name, dtype, by_key.get((name, dtype, "triton")), by_key.get((name, dtype, "tritone")))
                   for name in names for dtype in args.dtypes]
    print()
    print(format_table(comparisons, title))
    if args.csv:
        write_csv(args.csv, results)
        print(f"every result written to {args.csv}")
    failed = [result for result in results if result.side == "tritone"
              and (result.error or result.match is False or result.proof)]
    if args.check and failed:
        return 1
    return 1 if harness_failed else 0


if __name__ == "__main__":
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main())
