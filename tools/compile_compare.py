"""Kernel compile time of tritone beside upstream Triton's, kernel by kernel, without a GPU:
the kernels TorchInductor writes for bench/inductor_workloads.py's workloads, each compiled
for one target by both sides on this machine's CPU.

    python tools/compile_compare.py OUT --workloads softmax layer_norm [--arch 90]

Three steps, each side in a process of its own:

1. record: the workloads run on the CPU at tiny sizes under torch.compile with Inductor's
   Triton CPU backend and tritone answering `import triton` (its interpreter runs the
   kernels), Inductor writing its kernel files into OUT/inductor; every kernel an autotuner
   kept is recorded (its file, name, signature, constants, attributes, warps and stages) in
   OUT/kernels.json, once per distinct compilation;
2. time: each side (`TRITONE_AS_TRITON=1`, then 0 where upstream Triton is installed) loads
   every recorded kernel from its file and compiles it with `triton.compile` for
   `GPUTarget("cuda", ARCH, 32)` into a fresh cache, timing each call (OUT/times_SIDE.json);
   tritone compiles with NVRTC, upstream with its bundled ptxas, neither needs a GPU;
3. the table: per kernel both times and their ratio, slowest ratios last, then the geomean
   and the sums.

The first compilation of each side also pays that side's start-up (modules, NVRTC or ptxas
loaded); it is in the figures, as in a process's first torch.compile. The CPU run's sizes
give smaller blocks than a GPU's, so the kernels are lighter than on the GPU machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SIDES = {"tritone": "1", "upstream": "0"}


def record(out: Path, workloads: list[str], dtypes: list[str]) -> list[dict[str, Any]]:
    """Step 1 (in this process, tritone answering `import triton`): the kernels, once each."""
    import torch._inductor.config as inductor_config

    from bench.inductor import launched_kernels, run_case

    inductor_config.cpu_backend = "triton"
    recorded: dict[str, dict[str, Any]] = {}
    for name in workloads:
        for dtype in dtypes:
            run_case(name, dtype, "cpu", "tiny", "tritone", True, None, None)
            for kernel in launched_kernels().values():
                entry = _entry(kernel, f"{name} {dtype}", out / "inductor")
                if entry is not None:
                    key = json.dumps({k: v for k, v in entry.items() if k != "case"}, sort_keys=True)
                    recorded.setdefault(key, entry)
    return list(recorded.values())


def _entry(kernel: Any, case: str, folder: Path) -> dict[str, Any] | None:
    """What compiling `kernel` (a `CompiledKernel` of the interpreter) again takes, or None
    where its constants are not plain values. Inductor clears a kernel's function before
    pickling it, so its file is found by the module's name, the file's stem."""
    src = kernel.src
    fn = src.fn
    stem = str(fn.__module__).rsplit(".", 1)[-1]
    files = list(folder.rglob(f"{stem}.py"))
    if not files:
        return None
    constants = {}
    for path, value in src.constants.items():
        if len(path) != 1 or not isinstance(value, (bool, int, float, str, type(None))):
            return None
        constants[fn.arg_names[path[0]]] = value
    attrs = {fn.arg_names[path[0]]: value for path, value in src.attrs.items() if len(path) == 1}
    return {"case": case, "file": str(files[0]), "name": fn.__name__, "signature": src.signature,
            "constexprs": constants, "attrs": attrs,
            "options": {"num_warps": kernel.options.num_warps, "num_stages": kernel.options.num_stages}}


def time_kernels(kernels: list[dict[str, Any]], arch: int) -> list[float | None]:
    """Step 2 (in this process, whichever Triton answers): each kernel's compile time in
    seconds, None where it failed; a fresh cache folder."""
    import importlib.util

    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="compile_compare_")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    modules: dict[str, Any] = {}
    times: list[float | None] = []
    for entry in kernels:
        if entry["file"] not in modules:
            spec = importlib.util.spec_from_file_location(f"compile_compare_{len(modules)}", entry["file"])
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            modules[entry["file"]] = module
        fn = getattr(modules[entry["file"]], entry["name"])
        fn = getattr(fn, "fn", fn)  # Inductor's autotuner wraps the @jit function
        attrs = {(fn.arg_names.index(name),): value for name, value in entry["attrs"].items()}
        src = ASTSource(fn=fn, signature=entry["signature"], constexprs=entry["constexprs"], attrs=attrs)
        start = time.perf_counter()
        try:
            triton.compile(src, target=GPUTarget("cuda", arch, 32), options=entry["options"])
            times.append(time.perf_counter() - start)
        except Exception as error:  # reported in the table, the other kernels still timed
            print(f"{entry['name']}: {type(error).__name__}: {str(error).splitlines()[0][:200]}", file=sys.stderr)
            times.append(None)
    return times


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fmt(value: float | None, scale: float = 1e3, digits: int = 1) -> str:
    return "-" if value is None else f"{value * scale:.{digits}f}"


def format_table(kernels: list[dict[str, Any]], times: dict[str, list[float | None]]) -> str:
    """Per kernel tritone's and upstream's compile times (ms) and their ratio, the slowest
    ratios last; then the geomean of the ratios and the sums over the kernels both compiled."""
    rows = []
    for index, entry in enumerate(kernels):
        ours, theirs = times["tritone"][index], times.get("upstream", [None] * len(kernels))[index]
        ratio = ours / theirs if ours and theirs else None
        rows.append((ratio if ratio is not None else math.inf, ours, theirs, entry))
    rows.sort(key=lambda row: row[0])
    lines = [f"{'tritone ms':>10} {'upstream ms':>11} {'tt/up':>6}  kernel (case)"]
    for ratio, ours, theirs, entry in rows:
        shown = None if ratio == math.inf else ratio
        lines.append(f"{fmt(ours):>10} {fmt(theirs):>11} {fmt(shown, 1, 2):>6}  {entry['name']} ({entry['case']})")
    both = [(ours, theirs) for ratio, ours, theirs, _ in rows if ratio != math.inf]
    mean = geomean([ours / theirs for ours, theirs in both])
    lines.append(f"{len(both)} kernels compiled by both: geomean tt/up {fmt(mean, 1, 3)}, sums "
                 f"{sum(o for o, _ in both):.2f} s against {sum(t for _, t in both):.2f} s")
    return "\n".join(lines)


def _child_env(**settings: str) -> dict[str, str]:
    """This environment with `settings`, and this checkout first on the path (the child
    imports `bench` and, where tritone answers, this tree's tritone)."""
    path = [str(ROOT)] + [part for part in os.environ.get("PYTHONPATH", "").split(os.pathsep) if part]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path), **settings)


def _run_side(side: str, out: Path, arch: int) -> list[float | None] | None:
    env = _child_env(TRITONE_AS_TRITON=SIDES[side])
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), str(out), "--time", side,
                           "--arch", str(arch)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"{side}: exit status {done.returncode}: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads((out / f"times_{side}.json").read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder for the kernel files, the record and the times")
    parser.add_argument("--workloads", nargs="+", default=["softmax"], help="bench/inductor_workloads.py names")
    parser.add_argument("--dtypes", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--arch", type=int, default=90, help="compute capability compiled for (default 90)")
    parser.add_argument("--record", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--time", choices=sorted(SIDES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    out = args.out.resolve()
    if args.record:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(out / "inductor")
        kernels = record(out, args.workloads, args.dtypes)
        (out / "kernels.json").write_text(json.dumps(kernels, indent=1), encoding="utf-8")
        return 0
    if args.time:
        kernels = json.loads((out / "kernels.json").read_text(encoding="utf-8"))
        times = time_kernels(kernels, args.arch)
        (out / f"times_{args.time}.json").write_text(json.dumps(times), encoding="utf-8")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    env = _child_env(TRITONE_AS_TRITON="1", TRITON_CACHE_DIR=str(out / "record_cache"))
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), str(out), "--record", "--workloads",
                           *args.workloads, "--dtypes", *args.dtypes], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return 1
    kernels = json.loads((out / "kernels.json").read_text(encoding="utf-8"))
    print(f"{len(kernels)} kernels recorded from {', '.join(args.workloads)}", flush=True)
    times: dict[str, list[float | None]] = {}
    for side in SIDES:
        got = _run_side(side, out, args.arch)
        if got is not None:
            times[side] = got
    if "tritone" not in times:
        return 1
    print(format_table(kernels, times))
    return 0


if __name__ == "__main__":
    sys.exit(main())
