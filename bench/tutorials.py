"""Upstream Triton's tutorials 06 (fused attention) and 09 (persistent matmul), their
own files unmodified, under upstream Triton and under tritone in one process, timed
in turn beside torch.

    python bench/tutorials.py --tutorials PATH [--only attention matmul] [--quick] [--fp8] [-K K] [--forms ...]
                              [--timing tutorial|back-to-back|flushed] [--sweep]

PATH is the `python/tutorials` folder of a Triton checkout (release/3.6.x holds the
forms measured in docs; nothing of it is copied here). Each tutorial file is executed
twice as a module: once as it is, once with its `import triton...` statements answered
by tritone (an `__import__` of the module's own, so both packages live side by side
and the kernels' text is the tutorial's). Its `__main__` part does not run.

Cases are those the tutorials' own benchmarks time on the GPU at hand. Tutorial 09:
M = N = 8192 and K = 8192 (`-K` for another; the tutorial's default is 512), fp16 (or
fp8 e4m3 with `--fp8`), the naive, persistent, TMA, TMA persistent
and device-descriptor persistent kernels, the last with `warp_specialize` too
(`--forms` for some of them); on
sm_90 the tutorial skips host-descriptor kernels with warp specialization, and so
does this. Tutorial 06: forward attention, batch 4, 32 heads, 4096 tokens (1024 with
`--quick`), head dim 64 and 128, causal and not, fp16, with `warp_specialize` off and
(where the tutorial benchmarks it: non-causal on Hopper, every case on Blackwell) on.

Each side's autotuner picks its own config on the first call (not timed); the output
is then checked against torch (each call allocates its output afresh), and the
three (torch, upstream, tritone) are timed in turn, rounds in alternating order
(`bench.timing.time_in_turn`), so that a GPU slowing as it heats slows all three
alike. A side that fails or computes a wrong result is named, not timed. Each
tutorial is timed as its own benchmark times it (`--timing tutorial`): tutorial 06
through `triton.testing.do_bench`, the cache flushed before every call; tutorial 09
in a loop of back-to-back calls under its profiler. `--timing` picks one way for all.

On a GPU at its power limit (an H100 at 700 W runs these kernels so), which config an
autotuner picks among a few within 5% of each other changes from run to run, and so
does a ratio of two autotuned figures. `--sweep` takes the autotuners out: every config
of the autotuner a case goes through is timed with both sides pinned to it, in turn
(torch left out), then a row gives each side's best config.
"""

from __future__ import annotations

import argparse
import builtins
import sys
import types
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

ATTENTION = "06-fused-attention.py"
MATMUL = "09-persistent-matmul.py"
SIDES = ("triton", "tritone")


def importer(package: str):
    """An `__import__` that answers `triton` and `triton.*` with `package`'s modules."""
    real = builtins.__import__

    def import_(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and (name == "triton" or name.startswith("triton.")):
            name = package + name[len("triton"):]
        return real(name, globals, locals, fromlist, level)

    return import_


def load_tutorial(path: Path, package: str) -> types.ModuleType:
    """Execute the tutorial file at `path` as a new module whose imports of `triton`
    resolve to `package` ("triton" or "tritone")."""
    module = types.ModuleType(f"{package}_tutorial_{path.stem.replace('-', '_')}")
    module.__file__ = str(path)
    module.__builtins__ = dict(vars(builtins), __import__=importer(package))
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


def _failure(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines() or [""]
    return f"fails: {type(exc).__name__}: {lines[0][:80]}"


class Table:
    """Rows of TFLOP/s per side; a cell is a float or the reason it is not one."""

    def __init__(self):
        self.rows: list[tuple[str, dict]] = []
        self.choices: list[str] = []

    def add(self, case: str, cells: dict) -> None:
        self.rows.append((case, cells))
        shown = ", ".join(f"{side} {_cell(value)}" for side, value in cells.items())
        print(f"  {case}: {shown}", file=sys.stderr, flush=True)

    def print(self) -> None:
        header = ("case", "torch", "triton", "tritone", "tt/triton", "tt/torch")
        rows = [header] + [(case, _cell(c.get("torch")), _cell(c.get("triton")), _cell(c.get("tritone")),
                            _ratio(c.get("tritone"), c.get("triton")), _ratio(c.get("tritone"), c.get("torch")))
                           for case, c in self.rows]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        for row in rows:
            print("  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                            for i, (cell, width) in enumerate(zip(row, widths))))
        notes = [f"  {case}, {side}: {value}" for case, cells in self.rows
                 for side, value in cells.items() if isinstance(value, str)]
        if notes:
            print("not timed:")
            print("\n".join(notes))
        if self.choices:
            print("configs the autotuners chose:")
            print("\n".join(self.choices))


def _cell(value) -> str:
    return f"{value:.1f}" if isinstance(value, float) else "-"


def _ratio(a, b) -> str:
    return f"{a / b:.3f}" if isinstance(a, float) and isinstance(b, float) else "-"


def _autotuners(module) -> dict:
    """{name: autotuner} of a tutorial module's autotuned kernels."""
    return {name: value for name, value in vars(module).items()
            if isinstance(getattr(value, "cache", None), dict) and isinstance(getattr(value, "configs", None), list)}


def _autotuner_choices(module) -> dict:
    """{(autotuner name, key): config} of every autotuned kernel of a tutorial module."""
    return {(name, key): config for name, tuner in _autotuners(module).items() for key, config in tuner.cache.items()}


def _config_label(config) -> str:
    values = ", ".join(f"{name} {value}" for name, value in config.kwargs.items())
    return f"[{values}, w{config.num_warps} s{config.num_stages}]"


def _pin(tuners: dict, index: int | None, originals: dict) -> None:
    """Give every autotuner of `tuners` its config `index` alone (its first where it has
    fewer), or its own list back with `index` None; forget what each chose."""
    for name, tuner in tuners.items():
        configs = originals[name]
        tuner.configs = list(configs) if index is None else [configs[min(index, len(configs) - 1)]]
        tuner.cache.clear()


def sweep(table: Table, case: str, flops: float, runs: dict, check, rounds: int, per_round: int,
          tutorials: dict, flush: bool) -> None:
    """Time the case at every config of the autotuner its call goes through, upstream
    and tritone both pinned to that config (the tutorial lists the same configs in the
    same order under either package), in turn; then a row of each side's best config.
    torch is left out."""
    tuners = {side: _autotuners(tutorials[side]) for side in SIDES}
    originals = {side: {name: list(tuner.configs) for name, tuner in tuners[side].items()} for side in SIDES}
    try:
        # the autotuner the call goes through: the one that launched a config (its best_config,
        # set on every launch by either package's) once all are pinned
        _pin(tuners["tritone"], 0, originals["tritone"])
        for tuner in tuners["tritone"].values():
            tuner.best_config = None
        try:
            runs["tritone"]()
        except Exception:  # a first config that fails still names its autotuner
            pass
        used = [name for name, tuner in tuners["tritone"].items() if tuner.best_config is not None]
        if len(used) != 1:
            table.add(case, {side: f"not swept: the call goes through {len(used)} autotuners" for side in SIDES})
            return
        name, = used
        if len(originals["triton"].get(name, ())) != len(originals["tritone"][name]):
            table.add(case, {side: f"not swept: the sides list different configs for {name}" for side in SIDES})
            return
        best: dict = {}
        for index, config in enumerate(originals["tritone"][name]):
            for side in SIDES:
                _pin(tuners[side], index, originals[side])
            row = f"{case} {_config_label(config)}"
            measure(table, row, flops, {side: runs[side] for side in SIDES}, check, rounds, per_round, None, flush)
            for side, value in table.rows[-1][1].items():
                if isinstance(value, float) and value > best.get(side, (0.0, ""))[0]:
                    best[side] = (value, _config_label(config))
        table.add(f"{case} best", {side: best[side][0] if side in best else "no config ran" for side in SIDES})
        table.choices += [f"  {case}, {side}: best {best[side][1]}" for side in SIDES if side in best]
    finally:
        for side in SIDES:
            _pin(tuners[side], None, originals[side])


def measure(table: Table, case: str, flops: float, runs: dict, check, rounds: int, per_round: int,
            tutorials: dict | None = None, flush: bool = False) -> None:
    """Run each side once (its autotuning and compile), `check(side)` its output (the
    error as a fraction of the tolerance), then time the sides that passed in turn
    (each call after a cache flush with `flush`)."""
    import torch

    from bench.timing import time_in_turn

    cells: dict = {}
    passed = {}
    for side, run in runs.items():
        module = (tutorials or {}).get(side)
        known = _autotuner_choices(module) if module else {}
        try:
            run()
            torch.cuda.synchronize()
            error = check(side)
        except Exception as exc:  # a side that fails to compile is a result, not the end of the run
            cells[side] = _failure(exc)
            continue
        finally:
            if module:
                table.choices += [f"  {case}, {side}: {name} {config}"
                                  for (name, key), config in _autotuner_choices(module).items()
                                  if (name, key) not in known]
        if error == error and error <= 1.0:
            passed[side] = run
        else:
            cells[side] = f"wrong (error {error:.3g} of the tolerance)"
    for side, ms in time_in_turn(passed, rounds, per_round, flush).items():
        cells[side] = round(flops / (ms * 1e-3) * 1e-12, 1)
    table.add(case, {side: cells.get(side, "not run") for side in runs})


MATMUL_FORMS = ("naive", "persistent", "tma persistent", "tma", "descriptor persistent", "descriptor persistent ws")


def matmul_cases(table: Table, tutorials: dict, fp8: bool, k: int, rounds: int, per_round: int,
                 forms: tuple[str, ...] = MATMUL_FORMS, flush: bool = False, swept: bool = False) -> None:
    """Tutorial 09's kernels (those of `forms` the tutorial benchmarks on this GPU) at
    M = N = 8192 and `k` against `torch.matmul` (fp16 only, as the tutorial)."""
    import torch

    size = 8192
    dtype = torch.float8_e4m3fn if fp8 else torch.float16
    torch.manual_seed(0)
    a = torch.randn((size, k), device="cuda", dtype=torch.float16).to(dtype)
    b = torch.randn((k, size), device="cuda", dtype=torch.float16).to(dtype).T.contiguous()  # N x K
    reference = a.float() @ b.float().T
    # relative to the largest |c|: an fp8 e4m3 output keeps 3 mantissa bits
    tolerance = reference.abs().max().item() * (0.07 if fp8 else 1e-2)
    for method, call in matmul_methods(next(iter(tutorials.values())), a, b, forms):
        calls = {} if fp8 else {"torch": lambda: torch.matmul(a, b.T)}
        calls.update({side: (lambda module=module, call=call: call(module)) for side, module in tutorials.items()})
        _timed_outputs(table, f"09 {method} {'fp8' if fp8 else 'fp16'} {size}x{size}x{k}", 2.0 * size * size * k, calls,
                       reference, tolerance, rounds, per_round, tutorials, flush, swept)


def matmul_methods(module, a, b, forms: tuple[str, ...] = MATMUL_FORMS) -> list[tuple[str, Callable]]:
    """(form, call(tutorial module)) for the kernels of `forms` that tutorial 09 (`module`,
    either side's) benchmarks on this GPU, on inputs `a` (M x K) and `b` (N x K): those
    with host descriptors not with `warp_specialize` on Hopper, as the tutorial."""
    methods = [("naive", lambda m: m.matmul(a, b.T)), ("persistent", lambda m: m.matmul_persistent(a, b.T))]
    for ws in (False, True) if module.HAS_WARP_SPECIALIZE else (False,):
        suffix = " ws" if ws else ""
        if module.HAS_HOST_TENSOR_DESC and not (module.is_hopper() and ws):
            methods += [(f"tma persistent{suffix}", lambda m, ws=ws: m.matmul_tma_persistent(a, b, ws)),
                        (f"tma{suffix}", lambda m, ws=ws: m.matmul_tma(a, b, ws))]
        if module.HAS_TENSOR_DESC:
            methods.append((f"descriptor persistent{suffix}",
                            lambda m, ws=ws: m.matmul_descriptor_persistent(a, b, ws)))
    return [(form, call) for form, call in methods if form in forms]


def attention_cases(table: Table, tutorials: dict, tokens: int, rounds: int, per_round: int,
                    flush: bool = True, swept: bool = False) -> None:
    """Tutorial 06's forward pass against torch's scaled_dot_product_attention."""
    import torch

    batch, heads, sm_scale = 4, 32, 1.3
    any_side = next(iter(tutorials.values()))
    for head_dim in (64, 128):
        for causal in (False, True):
            torch.manual_seed(0)
            q, k, v = (torch.randn((batch, heads, tokens, head_dim), device="cuda", dtype=torch.float16)
                       for _ in range(3))
            reference = torch.nn.functional.scaled_dot_product_attention(
                q.float(), k.float(), v.float(), is_causal=causal, scale=sm_scale)
            flops = 4.0 * batch * heads * tokens * tokens * head_dim * (0.5 if causal else 1.0)
            with_ws = any_side.is_blackwell() or (any_side.is_hopper() and not causal)
            for ws in (False, True) if with_ws else (False,):
                calls = {"torch": lambda q=q, k=k, v=v, causal=causal: torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, is_causal=causal, scale=sm_scale)}
                calls.update({side: (lambda module=module, q=q, k=k, v=v, causal=causal, ws=ws:
                                     module.attention(q, k, v, causal, sm_scale, ws))
                              for side, module in tutorials.items()})
                case = f"06 fwd d{head_dim}{' causal' if causal else ''}{' ws' if ws else ''} {tokens} tokens"
                _timed_outputs(table, case, flops, calls, reference, 1e-2, rounds, per_round,  # the tutorial's atol
                               tutorials, flush, swept)


def _timed_outputs(table: Table, case: str, flops: float, calls: dict, reference, tolerance: float, rounds: int,
                   per_round: int, tutorials: dict, flush: bool, swept: bool = False) -> None:
    """`measure` for calls that return their output: the check is the largest absolute
    difference from `reference` as a fraction of `tolerance`."""
    outputs: dict = {}
    runs = {side: (lambda side=side, call=call: outputs.__setitem__(side, call())) for side, call in calls.items()}

    def check(side):
        return (outputs.pop(side).float() - reference).abs().max().item() / tolerance

    if swept:
        runs.pop("torch", None)
        sweep(table, case, flops, runs, check, rounds, per_round, tutorials, flush)
    else:
        measure(table, case, flops, runs, check, rounds, per_round, tutorials, flush)


TIMINGS = ("tutorial", "back-to-back", "flushed")


def flushed(kind: str, timing: str) -> bool:
    """Whether `kind`'s cases ("attention" or "matmul") are timed with the cache flushed
    before every call under `timing` (one of TIMINGS): "tutorial" times each as its own
    benchmark does, tutorial 06 through `triton.testing.do_bench` (which flushes),
    tutorial 09 in a loop of back-to-back calls under its profiler."""
    if timing == "tutorial":
        return kind == "attention"
    return timing == "flushed"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tutorials", type=Path, required=True,
                        help="a Triton checkout's python/tutorials folder")
    parser.add_argument("--only", nargs="+", default=["attention", "matmul"], choices=["attention", "matmul"])
    parser.add_argument("--quick", action="store_true", help="fewer rounds; attention over 1024 tokens")
    parser.add_argument("--fp8", action="store_true", help="tutorial 09 in fp8 e4m3 instead of fp16")
    parser.add_argument("-K", type=int, default=8192, help="tutorial 09's K (M = N = 8192; the tutorial's own "
                        "default is 512)")
    parser.add_argument("--forms", nargs="+", default=list(MATMUL_FORMS), choices=MATMUL_FORMS, metavar="FORM",
                        help=f"tutorial 09's kernels to time (each side autotunes each): {', '.join(MATMUL_FORMS)}")
    parser.add_argument("--timing", default="tutorial", choices=TIMINGS,
                        help="tutorial: each tutorial's cases timed as its own benchmark times them (06 with "
                        "do_bench's cache flush before every call, 09 back to back); back-to-back or flushed: "
                        "all cases so")
    parser.add_argument("--sweep", action="store_true",
                        help="time every config of each case's autotuner, both sides pinned to it, instead of "
                        "each side's own choice; then each side's best")
    args = parser.parse_args(argv)
    names = {"attention": ATTENTION, "matmul": MATMUL}
    missing = [names[kind] for kind in args.only if not (args.tutorials / names[kind]).is_file()]
    if missing:
        print(f"{args.tutorials} lacks {', '.join(missing)}: give the python/tutorials folder of a Triton "
              f"checkout", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("bench/tutorials.py needs an NVIDIA GPU", file=sys.stderr)
        return 2
    rounds, per_round = (4, 5) if args.quick else (8, 10)
    table = Table()
    import triton

    import tritone

    print(f"tutorials from {args.tutorials}: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"triton {triton.__version__}, tritone {tritone.__version__}", file=sys.stderr, flush=True)
    for kind in args.only:
        tutorials = {side: load_tutorial(args.tutorials / names[kind], side) for side in SIDES}
        flush = flushed(kind, args.timing)
        print(f"{names[kind]}: timed in turn, {'each call after a cache flush' if flush else 'back to back'}",
              file=sys.stderr, flush=True)
        if kind == "attention":
            attention_cases(table, tutorials, 1024 if args.quick else 4096, rounds, per_round, flush, args.sweep)
        else:
            matmul_cases(table, tutorials, args.fp8, args.K, rounds, per_round, tuple(args.forms), flush,
                         args.sweep)
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
