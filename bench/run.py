"""tritone's benchmark suite: tritone's figure beside upstream Triton's and torch's,
from the same run, with ratios.

    python bench/run.py [--only NAME ...] [--quick] [--check] [--csv PATH] [--png PATH]
                        [--arch-compare sm80] [--matmul-configs]

The process started from the command line only orchestrates: it runs the
benchmarks in a worker process (and a fresh one after a worker dies, hangs or
loses its CUDA context, so one broken kernel never costs the whole table),
collects the rows the workers write, prints the table last and writes the CSV
and the PNG plot of the ratios (matplotlib).
It never imports torch itself. See bench/README.md for what each benchmark
measures and how to read the table.
"""

from __future__ import annotations

import argparse
import compileall
import csv
import importlib
import importlib.util
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    # Run as `python bench/run.py` from a checkout: import tritone and bench from it.
    sys.path.insert(0, str(REPO_ROOT))

from bench.kernels import Kernels, bind  # noqa: E402

IMPLS = ("torch", "triton", "tritone")
KERNEL_IMPLS = ("triton", "tritone")
BENCHMARKS = ("copy", "add", "softmax", "layernorm", "matmul", "attention", "bf16", "cross-entropy", "launch",
              "first-call")
ARCH_COMPARED = ("matmul", "attention")
TABLE_WIDTH = 100
# How a figure is made from (work, median ms): bytes / ms * 1e-6 = GB/s, flops / ms * 1e-9 = TFLOP/s.
UNIT_SCALE = {"GB/s": 1e-6, "TFLOP/s": 1e-9}
# Rounds in which the implementations' chosen variants are timed again in turn (Context.retime_in_turn).
IN_TURN_ROUNDS = 3
# Exit status of a worker whose CUDA context is unusable after a kernel fault.
EXIT_CONTEXT_LOST = 3


@dataclass(frozen=True)
class Sizes:
    """Problem sizes of one mode."""

    copy: int
    add: int
    softmax: tuple[int, int]
    layernorm: tuple[int, int]
    matmul: tuple[int, int, int]
    attention: tuple[int, int, int]  # batch, heads, tokens; head dims are ATTENTION_HEAD_DIMS
    bf16: tuple[int, int, int]  # pointwise elements; softmax rows, columns
    cross_entropy: tuple[int, int, int]  # rows, vocabulary, block
    launch: tuple[int, int]  # calls per host-timed batch, batches (see Timer.launch_overhead_us)
    first_call: tuple[int, int]  # softmax rows, columns


FULL_SIZES = Sizes(
    copy=2**28, add=2**28, softmax=(32768, 4096), layernorm=(8192, 8192), matmul=(8192, 8192, 8192),
    attention=(4, 32, 4096), bf16=(2**28, 32768, 4096), cross_entropy=(4096, 128256, 32768), launch=(200, 25),
    first_call=(4096, 1024),
)
# Tiny, with edges that are not multiples of the blocks, so masks are exercised.
CHECK_SIZES = Sizes(
    copy=4096, add=4099, softmax=(37, 100), layernorm=(48, 96), matmul=(80, 72, 96),
    attention=(1, 2, 128), bf16=(4099, 37, 100), cross_entropy=(3, 1000, 256), launch=(5, 3),
    first_call=(16, 100),
)
ATTENTION_HEAD_DIMS = (64, 128)


@dataclass(frozen=True)
class MatmulConfig:
    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_warps: int
    num_stages: int

    def __str__(self) -> str:
        return f"{self.block_m}x{self.block_n}x{self.block_k} g{self.group_m} w{self.num_warps} s{self.num_stages}"

    @property
    def meta(self) -> dict[str, int]:
        """The kernel's constexpr meta-parameters of this config."""
        return {"BLOCK_M": self.block_m, "BLOCK_N": self.block_n, "BLOCK_K": self.block_k, "GROUP_M": self.group_m}

    @classmethod
    def of(cls, config: Any) -> MatmulConfig:
        """The config an autotuner's `Config` (either implementation's) stands for."""
        meta = config.kwargs
        return cls(meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"], meta["GROUP_M"], config.num_warps,
                   config.num_stages)


MATMUL_CONFIGS = (
    MatmulConfig(128, 256, 64, 8, 8, 3),
    MatmulConfig(128, 128, 32, 8, 4, 4),
    MatmulConfig(256, 128, 64, 8, 8, 3),
    MatmulConfig(128, 128, 64, 8, 4, 4),
    MatmulConfig(64, 256, 32, 8, 4, 4),
)


@dataclass(frozen=True)
class AttentionConfig:
    block_m: int
    block_n: int
    num_warps: int
    num_stages: int

    def __str__(self) -> str:
        return f"{self.block_m}x{self.block_n} w{self.num_warps} s{self.num_stages}"


ATTENTION_CONFIGS = (
    AttentionConfig(128, 64, 4, 3),
    AttentionConfig(128, 64, 8, 3),
    AttentionConfig(64, 64, 4, 3),
    AttentionConfig(128, 128, 8, 3),
)


@dataclass(frozen=True)
class Row:
    """One measurement (or failure) of one implementation on one case.

    role "result" rows make the table (an implementation's best config, or its
    autotuned kernel); role "config" rows record every config measured, for the CSV."""

    group: str
    bench: str
    case: str
    impl: str
    unit: str
    value: float | None = None
    time_unit: str = "ms"
    median: float | None = None
    min: float | None = None
    p20: float | None = None
    p80: float | None = None
    reps: int | None = None
    rel_err: float | None = None
    detail: str = ""
    error: str = ""
    note: str = ""
    role: str = "result"


def one_line(exc: BaseException) -> str:
    """An exception as one line: the most specific line of its message first (the last,
    for multi-line compiler messages), then the first (where it happened)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    name = type(exc).__name__
    if not lines:
        return name
    if len(lines) == 1:
        return f"{name}: {lines[0]}"
    return f"{name}: {lines[-1]} [{lines[0]}]"


def power_text(n: int) -> str:
    """2^k for powers of two, the number otherwise."""
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


# --------------------------------------------------------------------------- worker


class WrongResult(Exception):
    """An output differs from the reference by more than the tolerance, or was not written."""


@dataclass(frozen=True)
class Variant:
    """One way to compute a case: an implementation, and for tuned kernels one config.

    `run(i)` computes on input set `i` and returns the outputs; `poison` holds the
    preallocated outputs of input set 0, filled with NaN before the correctness check
    so that an element the kernel fails to write shows up. A variant that tunes itself
    (an autotuned kernel) has `tuning`, which after its first run gives the row's
    detail and note: the config it chose and what the tuning left to report."""

    impl: str
    run: Callable[[int], Sequence[Any]]
    poison: Sequence[Any] = ()
    detail: str = ""
    tuning: Callable[[], tuple[str, str]] | None = None


@dataclass(frozen=True)
class Case:
    """A benchmark case: what is timed, the work it does (bytes or flops, per `unit`),
    the reference outputs (higher precision) and the largest relative error allowed."""

    bench: str
    case: str
    unit: str
    work: float
    references: Sequence[Any]
    tolerance: float
    n_sets: int = 1


@dataclass
class Context:
    """What the benchmarks of one worker share."""

    sizes: Sizes
    quick: bool
    check: bool
    matmul_configs: bool
    group: str
    timer: Any
    events: Any
    implementations: dict[str, Kernels | str]
    show_tracebacks: bool
    lost: str = ""

    @property
    def device(self) -> str:
        return self.timer.device

    def kernels(self, impl: str) -> Kernels:
        """The bound kernels of `impl`; raises with the reason when it could not be loaded."""
        bound = self.implementations[impl]
        if isinstance(bound, str):
            raise RuntimeError(bound)
        return bound

    def emit(self, row: Row, progress: bool = True) -> None:
        self.events.write(json.dumps({"event": "row", "row": asdict(row)}) + "\n")
        self.events.flush()
        if progress:
            print_progress(row)

    def evaluate(self, case: Case, variant: Variant) -> tuple[Any, float]:
        """Check `variant` against the references (outputs poisoned first), then time it."""
        if self.lost:
            raise RuntimeError(f"not run: the CUDA context was lost earlier ({self.lost})")
        import torch

        try:
            for output in variant.poison:
                output.fill_(math.nan)
            outputs = variant.run(0)
            self.timer.synchronize()
            error = check_outputs(torch, outputs, case.references, case.tolerance)
            return self.timer.measure(variant.run, case.n_sets), error
        except Exception as exc:
            if self.show_tracebacks:
                traceback.print_exc()
            if self.timer.on_gpu and not device_healthy(torch):
                self.lost = one_line(exc)
            raise

    def run_case(self, case: Case, variants: Callable[[str], list[Variant]], impls: Sequence[str] = IMPLS,
                 configs_only: bool = False) -> None:
        """Measure every implementation of `case`; each reports its fastest correct variant,
        timed again beside the others' in turn (`retime_in_turn`). With `configs_only`,
        every variant is only recorded as a config row (for the CSV), and the table gets
        nothing from this call."""
        chosen: dict[str, tuple[Row, Variant, int]] = {}  # impl -> its best row, variant, variant count
        for impl in impls:
            base = Row(group=self.group, bench=case.bench, case=case.case, impl=impl, unit=case.unit)
            try:
                candidates = variants(impl)
            except Exception as exc:
                self.emit(replace(base, error=one_line(exc), role="config" if configs_only else "result"))
                continue
            measured: list[tuple[Row, Variant]] = []
            failed: list[str] = []
            as_configs = configs_only or len(candidates) > 1
            for variant in candidates:
                try:
                    timing, error = self.evaluate(case, variant)
                except Exception as exc:
                    failed.append(f"{variant.detail}: {one_line(exc)}" if variant.detail else one_line(exc))
                    if as_configs:
                        self.emit(replace(base, detail=variant.detail, error=one_line(exc), role="config"))
                    continue
                detail, note = variant.tuning() if variant.tuning else (variant.detail, "")
                row = replace(base, **timing_fields(case, timing), rel_err=error, detail=detail, note=note)
                measured.append((row, variant))
                if as_configs:
                    self.emit(replace(row, role="config"))
            if configs_only:
                continue
            if not measured:
                reason = failed[0] if len(failed) == 1 else f"all {len(failed)} configs failed; first: {failed[0]}"
                self.emit(replace(base, error=reason))
                continue
            best, variant = max(measured, key=lambda pair: pair[0].value)
            if failed:
                best = replace(best, note=f"{len(failed)} of {len(candidates)} configs failed; first: {failed[0]}")
            chosen[impl] = (best, variant, len(candidates))
        if len(chosen) > 1:
            self.retime_in_turn(case, chosen)
        for impl, (best, _, count) in chosen.items():
            self.emit(best, progress=count == 1)
            if count > 1:
                print(f"  [{case.bench}] {case.case} | {impl}: best {best.detail}", flush=True)

    def retime_in_turn(self, case: Case, chosen: dict[str, tuple[Row, Variant, int]]) -> None:
        """Time each implementation's chosen variant again, in `IN_TURN_ROUNDS` rounds,
        each in the opposite order to the round before, and give its row the
        repetitions of all rounds: the implementations measured one after the other
        meet a GPU that drifts (a card at its power limit settles on another clock
        from one measurement to the next, see bench/README.md), and one measurement
        each would hand that drift to the ratios. A variant that fails now keeps its
        first figure."""
        from bench.timing import summarise, turns

        times: dict[str, list[float] | None] = {impl: [] for impl in chosen}
        for impl in turns(chosen, IN_TURN_ROUNDS):
            if self.lost or times[impl] is None:
                continue
            try:
                times[impl] += self.timer.measure_times(chosen[impl][1].run, case.n_sets)
            except Exception as exc:
                if self.show_tracebacks:
                    traceback.print_exc()
                if self.timer.on_gpu and not device_healthy(sys.modules["torch"]):
                    self.lost = one_line(exc)
                times[impl] = None  # keeps the figure of its first measurement
        for impl, found in times.items():
            if found:
                best, variant, count = chosen[impl]
                chosen[impl] = (replace(best, **timing_fields(case, summarise(found))), variant, count)


def timing_fields(case: Case, timing: Any) -> dict[str, Any]:
    """A row's figure and timing statistics from a `Timing` of one call of `case`."""
    return dict(value=case.work / timing.median * UNIT_SCALE[case.unit], median=timing.median, min=timing.min,
                p20=timing.p20, p80=timing.p80, reps=timing.reps)


def check_outputs(torch: Any, outputs: Sequence[Any], references: Sequence[Any], tolerance: float) -> float:
    """The largest ‖out − ref‖ / ‖ref‖ (float64) over the outputs; raises WrongResult when
    it passes `tolerance` or an output holds NaN or infinity (an element left poisoned)."""
    if len(outputs) != len(references):
        raise WrongResult(f"{len(outputs)} outputs, expected {len(references)}")
    worst = 0.0
    for index, (out, ref) in enumerate(zip(outputs, references)):
        out64 = out.detach().to(torch.float64)
        ref64 = ref.detach().to(device=out64.device, dtype=torch.float64)
        if out64.shape != ref64.shape:
            raise WrongResult(f"output {index} has shape {tuple(out64.shape)}, expected {tuple(ref64.shape)}")
        bad = int((~torch.isfinite(out64)).sum())
        if bad:
            raise WrongResult(f"output {index}: {bad} of {out64.numel()} elements NaN or infinite (never written?)")
        scale = float(ref64.norm())
        difference = float((out64 - ref64).norm())
        error = difference / scale if scale > 0 else difference
        if not error <= tolerance:
            raise WrongResult(f"output {index}: relative error {error:.2e} > {tolerance:.0e}")
        worst = max(worst, error)
    return worst


def device_healthy(torch: Any) -> bool:
    """Whether the CUDA context still works (a kernel fault leaves every later call failing)."""
    try:
        torch.cuda.synchronize()
        return float(torch.ones(4, device="cuda").sum()) == 4.0
    except Exception:
        return False


def print_progress(row: Row) -> None:
    name = f"{row.bench} {row.group}".strip()
    head = f"  [{name}] {row.case} | {row.impl}"
    if row.detail:
        head += f" [{row.detail}]"
    if row.error:
        print(f"{head}: failed: {row.error}", flush=True)
        return
    line = f"{head}: {format_figure(row.value)} {row.unit}  (median {row.median:.4g} {row.time_unit}"
    if row.rel_err is not None:
        line += f", rel err {row.rel_err:.1e}"
    print(line + ")" + (f"  note: {row.note}" if row.note else ""), flush=True)


def random_tensor(torch: Any, shape: Sequence[int], dtype: Any, device: str, scale: float = 1.0,
                  shift: float = 0.0) -> Any:
    """Fresh normal random values (never zeros, which hide unwritten outputs)."""
    return (torch.randn(*shape, device=device, dtype=torch.float32) * scale + shift).to(dtype)


def bench_copy(ctx: Context) -> None:
    """Device-to-device copy through torch: the memory-bandwidth ceiling."""
    import torch

    n = ctx.sizes.copy
    x = random_tensor(torch, (n,), torch.float32, ctx.device)
    y = torch.empty_like(x)
    case = Case("copy", f"{power_text(n)} fp32", "GB/s", 2 * n * 4, [x], 0.0)

    def variants(impl: str) -> list[Variant]:
        return [Variant(impl, lambda i: (y.copy_(x),), [y])]

    ctx.run_case(case, variants, impls=("torch",))


def bench_add(ctx: Context) -> None:
    """out = x + y over fp32 vectors: 3 × 4 bytes per element."""
    import torch

    from bench.timing import input_sets_needed

    n = ctx.sizes.add
    n_sets = input_sets_needed(3 * n * 4)
    xs = [random_tensor(torch, (n,), torch.float32, ctx.device) for _ in range(n_sets)]
    ys = [random_tensor(torch, (n,), torch.float32, ctx.device) for _ in range(n_sets)]
    outs = [torch.empty_like(x) for x in xs]
    reference = xs[0].double() + ys[0].double()
    case = Case("vector add", f"{power_text(n)} fp32", "GB/s", 3 * n * 4, [reference], 1e-6, n_sets)
    block = 1024

    def variants(impl: str) -> list[Variant]:
        if impl == "torch":
            return [Variant(impl, lambda i: (torch.add(xs[i], ys[i], out=outs[i]),), [outs[0]])]
        kernel = ctx.kernels(impl).add

        def run(i: int) -> tuple[Any, ...]:
            kernel[(cdiv(n, block),)](xs[i], ys[i], outs[i], n, BLOCK=block)
            return (outs[i],)

        return [Variant(impl, run, [outs[0]])]

    ctx.run_case(case, variants)


def softmax_num_warps(block: int) -> int:
    """More warps for longer rows, so each thread keeps a bounded number of elements."""
    if block >= 4096:
        return 16
    if block >= 2048:
        return 8
    return 4


def bench_softmax(ctx: Context) -> None:
    """Row softmax, one program per row: reads and writes each fp32 element once."""
    import torch

    rows, cols = ctx.sizes.softmax
    x = random_tensor(torch, (rows, cols), torch.float32, ctx.device)
    out = torch.empty_like(x)
    reference = torch.softmax(x.double(), dim=-1)
    case = Case("softmax", f"{rows}x{cols} fp32", "GB/s", 2 * rows * cols * 4, [reference], 1e-5)
    block = next_power_of_2(cols)

    def variants(impl: str) -> list[Variant]:
        if impl == "torch":
            return [Variant(impl, lambda i: (torch.softmax(x, dim=-1),))]
        kernel = ctx.kernels(impl).softmax

        def run(i: int) -> tuple[Any, ...]:
            kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=block, num_warps=softmax_num_warps(block))
            return (out,)

        return [Variant(impl, run, [out])]

    ctx.run_case(case, variants)


def bench_bf16(ctx: Context) -> None:
    """Inductor-style bf16 kernels: loads upcast to fp32, math in fp32, stores rounded
    to bf16. A pointwise gelu(x) * y (3 x 2 bytes per element) and a persistent row
    softmax (2 x 2 bytes per element)."""
    import torch

    from bench.timing import input_sets_needed

    n, rows, cols = ctx.sizes.bf16
    n_sets = input_sets_needed(3 * n * 2)
    xs = [random_tensor(torch, (n,), torch.bfloat16, ctx.device) for _ in range(n_sets)]
    ys = [random_tensor(torch, (n,), torch.bfloat16, ctx.device) for _ in range(n_sets)]
    outs = [torch.empty_like(x) for x in xs]
    reference = torch.nn.functional.gelu(xs[0].double()) * ys[0].double()
    case = Case("bf16 pointwise", f"{power_text(n)} gelu*y", "GB/s", 3 * n * 2, [reference], 1e-2, n_sets)
    xblock = 1024

    def pointwise(impl: str) -> list[Variant]:
        if impl == "torch":
            return [Variant(impl, lambda i: (torch.mul(torch.nn.functional.gelu(xs[i]), ys[i], out=outs[i]),),
                            [outs[0]])]
        kernel = ctx.kernels(impl).gelu_mul_bf16

        def run(i: int) -> tuple[Any, ...]:
            kernel[(cdiv(n, xblock),)](xs[i], ys[i], outs[i], n, XBLOCK=xblock, num_warps=4)
            return (outs[i],)

        return [Variant(impl, run, [outs[0]])]

    ctx.run_case(case, pointwise)

    x = random_tensor(torch, (rows, cols), torch.bfloat16, ctx.device, scale=3.0)
    out = torch.empty_like(x)
    reference = torch.softmax(x.double(), dim=-1)
    case = Case("bf16 softmax", f"{rows}x{cols}", "GB/s", 2 * rows * cols * 2, [reference], 1e-2)
    r0_block = next_power_of_2(cols)
    xblock = 1 if r0_block >= 1024 else 2

    def softmax(impl: str) -> list[Variant]:
        if impl == "torch":
            return [Variant(impl, lambda i: (torch.softmax(x, dim=-1),))]
        kernel = ctx.kernels(impl).softmax_bf16

        def run(i: int) -> tuple[Any, ...]:
            kernel[(cdiv(rows, xblock),)](x, out, rows, cols, XBLOCK=xblock, R0_BLOCK=r0_block,
                                         num_warps=softmax_num_warps(r0_block))
            return (out,)

        return [Variant(impl, run, [out])]

    ctx.run_case(case, softmax)


def bench_cross_entropy(ctx: Context) -> None:
    """Row-wise cross-entropy over a large bf16 vocabulary, block by block in a run-time
    loop (online softmax), the gradient written over the logits in place (Liger-Kernel's
    style): the logits are read twice and written once. The first call of each
    implementation starts from the original logits and is checked (loss and
    gradient); the timed calls then run on the gradient left in place, the same work."""
    import torch

    rows, vocab, block = ctx.sizes.cross_entropy
    logits = random_tensor(torch, (rows, vocab), torch.bfloat16, ctx.device, scale=2.0)
    labels = torch.randint(0, vocab, (rows,), device=ctx.device, dtype=torch.int64)
    wide = logits.double()
    log_sum = torch.logsumexp(wide, dim=-1)
    loss_reference = log_sum - wide.gather(1, labels[:, None])[:, 0]
    grad_reference = torch.softmax(wide, dim=-1)
    grad_reference[torch.arange(rows, device=ctx.device), labels] -= 1.0
    case = Case("cross-entropy", f"{rows}x{vocab} bf16", "GB/s", 3 * rows * vocab * 2,
                [loss_reference, grad_reference], 1e-2)
    work = torch.empty_like(logits)
    loss = torch.empty(rows, device=ctx.device, dtype=torch.float32)
    num_warps = 32 if block >= 32768 else 4

    def variants(impl: str) -> list[Variant]:
        fresh = [True]
        if impl == "torch":
            def run_torch(i: int) -> tuple[Any, ...]:
                if fresh[0]:
                    work.copy_(logits)
                    fresh[0] = False
                wide_rows = work.float()
                loss.copy_(torch.nn.functional.cross_entropy(wide_rows, labels, reduction="none"))
                grad = torch.softmax(wide_rows, dim=-1)
                grad[torch.arange(rows, device=work.device), labels] -= 1.0
                work.copy_(grad)
                return (loss, work)

            return [Variant(impl, run_torch, [loss])]
        kernel = ctx.kernels(impl).cross_entropy

        def run(i: int) -> tuple[Any, ...]:
            if fresh[0]:
                work.copy_(logits)
                fresh[0] = False
            kernel[(rows,)](work, work.stride(0), labels, loss, vocab, BLOCK=block, num_warps=num_warps)
            return (loss, work)

        return [Variant(impl, run, [loss])]

    ctx.run_case(case, variants)


def layer_norm_group_size(n: int) -> int:
    """How many partial dw/db rows the backward accumulates into: fewer for wider rows,
    whose lock contention matters less than the final reduction's size."""
    if n <= 1024:
        return 256
    if n <= 4096:
        return 128
    if n <= 8192:
        return 96
    return 64


def bench_layernorm(ctx: Context) -> None:
    """Layer norm over the last axis of an fp16 matrix: forward (y, mean, rstd), then
    backward (dx, and dw/db through locked partial sums and a final reduction)."""
    import torch
    import torch.nn.functional as F

    m, n = ctx.sizes.layernorm
    eps = 1e-5
    dtype = torch.float16
    x = random_tensor(torch, (m, n), dtype, ctx.device, scale=0.5, shift=-2.3)
    w = random_tensor(torch, (n,), dtype, ctx.device, shift=1.0)
    b = random_tensor(torch, (n,), dtype, ctx.device)
    dy = random_tensor(torch, (m, n), dtype, ctx.device, scale=0.1)
    shape = f"{m}x{n} fp16"

    # Forward: one program per row; rows longer than 64 KB are walked in blocks.
    y = torch.empty_like(x)
    mean = torch.empty(m, device=ctx.device, dtype=torch.float32)
    rstd = torch.empty(m, device=ctx.device, dtype=torch.float32)
    fwd_block = min(65536 // x.element_size(), next_power_of_2(n))
    fwd_warps = min(max(fwd_block // 256, 1), 8)
    reference_y = F.layer_norm(x.double(), (n,), w.double(), b.double(), eps)
    forward = Case("layernorm fwd", shape, "GB/s", 2 * m * n * x.element_size(), [reference_y], 5e-3)

    def forward_variants(impl: str) -> list[Variant]:
        if impl == "torch":
            return [Variant(impl, lambda i: (F.layer_norm(x, (n,), w, b, eps),))]
        kernel = ctx.kernels(impl).layer_norm_fwd

        def run(i: int) -> tuple[Any, ...]:
            kernel[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, eps, BLOCK=fwd_block, num_warps=fwd_warps)
            return (y,)

        return [Variant(impl, run, [y])]

    ctx.run_case(forward, forward_variants)

    # Backward from torch's saved statistics, so every implementation differentiates
    # the same forward.
    _, saved_mean, saved_rstd = torch.ops.aten.native_layer_norm(x, [n], w, b, eps)
    xhat = (x.double() - saved_mean.double()) * saved_rstd.double()
    wdy = w.double() * dy.double()
    reference_dx = (wdy - (xhat * (xhat * wdy).mean(1, keepdim=True) + wdy.mean(1, keepdim=True))) \
        * saved_rstd.double()
    reference_dw = (dy.double() * xhat).sum(0)
    reference_db = dy.double().sum(0)
    del xhat, wdy
    backward = Case("layernorm bwd", shape, "GB/s", 3 * m * n * x.element_size(),
                    [reference_dx, reference_dw, reference_db], 5e-3)
    group = min(layer_norm_group_size(n), m)
    bwd_block = next_power_of_2(n)
    bwd_warps = min(max(bwd_block // 256, 1), 8)
    final_block_m, final_block_n = 32, 128
    dx = torch.empty_like(x)
    partial_dw = torch.empty((group, n), device=ctx.device, dtype=torch.float32)
    partial_db = torch.empty((group, n), device=ctx.device, dtype=torch.float32)
    locks = torch.empty(2 * group, device=ctx.device, dtype=torch.int32)
    dw = torch.empty_like(w)
    db = torch.empty_like(b)

    def backward_variants(impl: str) -> list[Variant]:
        if impl == "torch":
            def run_torch(i: int) -> tuple[Any, ...]:
                return torch.ops.aten.native_layer_norm_backward(
                    dy, x, [n], saved_mean, saved_rstd, w, b, [True, True, True])

            return [Variant(impl, run_torch)]
        kernels = ctx.kernels(impl)

        def run(i: int) -> tuple[Any, ...]:
            locks.zero_()
            kernels.layer_norm_bwd_dx[(m,)](
                dx, dy, x, w, saved_mean, saved_rstd, partial_dw, partial_db, locks, x.stride(0), n,
                GROUP=group, BLOCK=bwd_block, num_warps=bwd_warps)
            kernels.layer_norm_bwd_dwdb[(cdiv(n, final_block_n),)](
                partial_dw, partial_db, dw, db, group, n, BLOCK_M=final_block_m, BLOCK_N=final_block_n)
            return dx, dw, db

        return [Variant(impl, run, [dx, dw, db])]

    ctx.run_case(backward, backward_variants)


def bench_matmul(ctx: Context) -> None:
    """C = A @ B with fp32 accumulation, grouped program order, in fp16, bf16 and fp8
    (e4m3, B stored K-major as Triton's tutorial does for fp8; C in fp16; torch's
    column is `torch._scaled_mm`). Each kernel implementation runs the kernel under its own `autotune` over
    the matmul configs, keyed on M, N and K, and reports the tuned kernel; the row's
    detail and note name the config it chose. With --matmul-configs (always in
    --check) every config is also timed on its own, as config rows for the CSV."""
    import torch

    dtypes = [("fp16", torch.float16), ("bf16", torch.bfloat16)]
    if hasattr(torch, "float8_e4m3fn") and not ctx.check:
        dtypes.append(("fp8", torch.float8_e4m3fn))
    for name, dtype in dtypes:
        _bench_matmul_dtype(ctx, name, dtype)


def _bench_matmul_dtype(ctx: Context, name: str, dtype: Any) -> None:
    import torch

    m, n, k = ctx.sizes.matmul
    fp8 = name == "fp8"
    a = random_tensor(torch, (m, k), dtype, ctx.device)
    b = random_tensor(torch, (n, k), dtype, ctx.device).T if fp8 else random_tensor(torch, (k, n), dtype, ctx.device)
    c = torch.empty((m, n), device=ctx.device, dtype=torch.float16 if fp8 else dtype)
    reference = a.double() @ b.double()
    shape = f"{m}^3 {name}" if m == n == k else f"{m}x{n}x{k} {name}"
    case = Case("matmul", shape, "TFLOP/s", 2.0 * m * n * k, [reference], 5e-3 if name == "fp16" else 1e-2)
    configs = MATMUL_CONFIGS[:2] if ctx.quick or ctx.check else MATMUL_CONFIGS

    def launch(kernel: Any, grid: Any, **options: int) -> None:
        kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                     **options)

    def tuned(impl: str) -> list[Variant]:
        if impl == "torch" and fp8:
            # cuBLAS's fp8 matmul through torch (b column-major, as here), unit scales
            one = torch.ones((), device=ctx.device, dtype=torch.float32)
            return [Variant(impl, lambda i: (torch._scaled_mm(a, b, one, one, out_dtype=torch.float16),))]
        if impl == "torch":
            return [Variant(impl, lambda i: (torch.mm(a, b, out=c),), [c])]
        kernels = ctx.kernels(impl)
        # On the GPU each package tunes with its own benchmarker. The interpreters have
        # none that times (upstream's has no driver at all), so --check times each config
        # once with the host clock: both tuners then run their timing path.
        kernel = kernels.autotune(kernels.matmul, [(config.meta, config.num_warps, config.num_stages)
                                                   for config in configs], key=("M", "N", "K"),
                                  do_bench=host_clock_bench if ctx.check else None)

        def grid(meta: dict[str, Any]) -> tuple[int]:
            return (cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"]),)

        def run(i: int) -> tuple[Any, ...]:
            launch(kernel, grid)
            return (c,)

        return [Variant(impl, run, [c], tuning=lambda: tuning_report(kernel))]

    def fixed(impl: str) -> list[Variant]:
        kernel = ctx.kernels(impl).matmul

        def runner(config: MatmulConfig) -> Callable[[int], tuple[Any, ...]]:
            grid = (cdiv(m, config.block_m) * cdiv(n, config.block_n),)

            def run(i: int) -> tuple[Any, ...]:
                launch(kernel, grid, **config.meta, num_warps=config.num_warps, num_stages=config.num_stages)
                return (c,)

            return run

        return [Variant(impl, runner(config), [c], str(config)) for config in configs]

    ctx.run_case(case, tuned)
    if ctx.matmul_configs or ctx.check:
        ctx.run_case(case, fixed, impls=KERNEL_IMPLS, configs_only=True)


def host_clock_bench(kernel_call: Callable[[], Any], quantiles: Sequence[float]) -> list[float]:
    """An autotuner's `do_bench` for the interpreters: one call's milliseconds by the host
    clock, as every quantile asked for."""
    begin = time.perf_counter()
    kernel_call()
    elapsed_ms = (time.perf_counter() - begin) * 1e3
    return [elapsed_ms] * len(quantiles)


def tuning_report(autotuner: Any) -> tuple[str, str]:
    """The config `autotuner` (either implementation's, after a launch) chose, and a note
    saying so, with the configs that failed while it tuned. Upstream records a failed
    config as an infinite timing; tritone also keeps the reason."""
    chosen = str(MatmulConfig.of(autotuner.best_config))
    timings = autotuner.configs_timings or {}
    note = f"autotuned: {chosen}"
    failed = [config for config, timing in timings.items()
              if not math.isfinite(timing[0] if isinstance(timing, (list, tuple)) else timing)]
    if failed:
        reason = getattr(autotuner, "config_failures", {}).get(failed[0], "")
        note += f"; {len(failed)} of {len(timings)} failed, first {MatmulConfig.of(failed[0])}"
        note += f": {reason}" if reason else ""
    return chosen, note


def bench_attention(ctx: Context) -> None:
    """Fused attention forward (online softmax, two dots per key block), fp16, against
    torch's scaled_dot_product_attention; causal cases count half the flops."""
    import torch

    batch, heads, tokens = ctx.sizes.attention
    for head_dim in ATTENTION_HEAD_DIMS:
        qkv = [random_tensor(torch, (batch, heads, tokens, head_dim), torch.float16, ctx.device, scale=0.5)
               for _ in range(3)]
        configs = [config for config in ATTENTION_CONFIGS
                   if tokens % config.block_m == 0 and config.block_m % config.block_n == 0]
        if ctx.quick or ctx.check:
            configs = [AttentionConfig(128, 64, 4 if head_dim <= 64 else 8, 3)]
        for causal in (False, True):
            attention_case(ctx, qkv, causal, configs)


def attention_case(ctx: Context, qkv: list[Any], causal: bool, configs: Sequence[AttentionConfig]) -> None:
    import torch
    import torch.nn.functional as F

    q, k, v = qkv
    batch, heads, tokens, head_dim = q.shape
    out = torch.empty_like(q)
    sm_scale = head_dim ** -0.5
    reference = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    flops = 4.0 * batch * heads * tokens * tokens * head_dim * (0.5 if causal else 1.0)
    label = f"{batch}x{heads}x{tokens} d{head_dim}" + (" causal" if causal else "")
    case = Case("attention", label, "TFLOP/s", flops, [reference], 1e-2)

    def variants(impl: str) -> list[Variant]:
        if impl == "torch":
            return [Variant(impl, lambda i: (F.scaled_dot_product_attention(q, k, v, is_causal=causal),))]
        kernel = ctx.kernels(impl).attention_fwd

        def runner(config: AttentionConfig) -> Callable[[int], tuple[Any, ...]]:
            grid = (tokens // config.block_m, batch * heads)

            def run(i: int) -> tuple[Any, ...]:
                kernel[grid](q, k, v, out, sm_scale, tokens, HEAD_DIM=head_dim, BLOCK_M=config.block_m,
                             BLOCK_N=config.block_n, CAUSAL=causal, num_warps=config.num_warps,
                             num_stages=config.num_stages)
                return (out,)

            return run

        return [Variant(impl, runner(config), [out], str(config)) for config in configs]

    ctx.run_case(case, variants)


# An autotuner of this many configs, as tutorial 09's persistent kernels have (48), of
# which `early_config_prune` keeps the first: one compile, and every launch goes
# through the autotuner's own per-call work over the whole list.
LAUNCH_PROBE_CONFIGS = 48


def launch_probes(kernels: Any, x: Any, y: Any, out: Any) -> dict[str, Callable[[], None]]:
    """The launches `bench_launch` times, by case, for one implementation's kernels:
    a plain kernel of 4 arguments; the same behind an autotuner of
    `LAUNCH_PROBE_CONFIGS` configs; and one of three host tensor descriptors made
    afresh on each call, as tutorials 06 and 09 make theirs."""
    package = kernels.package
    configs = [package.Config({"BLOCK": 16}, num_warps=1, num_stages=stages)
               for stages in range(1, LAUNCH_PROBE_CONFIGS + 1)]
    # upstream times even a lone pruned config: a do_bench that runs nothing (its own needs a GPU driver)
    tuned = package.autotune(configs=configs, key=["n"], do_bench=lambda call, quantiles: [1.0] * len(quantiles),
                             prune_configs_by={"early_config_prune": lambda configs, named, **kw: configs[:1]})(
        kernels.launch_probe_tuned)
    descriptor = importlib.import_module(f"{package.__name__}.tools.tensor_descriptor").TensorDescriptor
    plain, with_descriptors = kernels.launch_probe, kernels.launch_probe_descriptor
    return {
        "4 args, grid 1": lambda: plain[(1,)](x, y, out, 16),
        f"autotuned, {LAUNCH_PROBE_CONFIGS} configs": lambda: tuned[(1,)](x, y, out, 16),
        "3 host descriptors": lambda: with_descriptors[(1,)](
            descriptor.from_tensor(x, [16]), descriptor.from_tensor(y, [16]), descriptor.from_tensor(out, [16])),
    }


def bench_launch(ctx: Context) -> None:
    """Host time per launch of small kernels on 16 elements, issued in a Python loop
    (`launch_probes`: plain, autotuned, with host descriptors)."""
    import torch

    calls, batches = ctx.sizes.launch
    x = random_tensor(torch, (16,), torch.float32, ctx.device)
    y = random_tensor(torch, (16,), torch.float32, ctx.device)
    out = torch.empty_like(x)
    for case in ("4 args, grid 1", f"autotuned, {LAUNCH_PROBE_CONFIGS} configs", "3 host descriptors"):
        for impl in KERNEL_IMPLS:
            _time_launches(ctx, case, impl, x, y, out, calls, batches)


def _time_launches(ctx: Context, case: str, impl: str, x: Any, y: Any, out: Any, calls: int, batches: int) -> None:
    """One row of `bench_launch`: `impl`'s launches of `case`, checked, then timed."""
    import torch

    base = Row(group=ctx.group, bench="launch", case=case, impl=impl, unit="us/call", time_unit="us")
    try:
        if ctx.lost:
            raise RuntimeError(f"not run: the CUDA context was lost earlier ({ctx.lost})")
        launch = launch_probes(ctx.kernels(impl), x, y, out)[case]
        out.fill_(math.nan)
        launch()
        ctx.timer.synchronize()
        check_outputs(torch, [out], [x + y], 0.0)
        timing = ctx.timer.launch_overhead_us(launch, calls, batches)
    except Exception as exc:
        ctx.emit(replace(base, error=one_line(exc)))
        return
    ctx.emit(replace(base, value=timing.median, median=timing.median, min=timing.min, p20=timing.p20,
                     p80=timing.p80, reps=timing.reps))


def bench_first_call(ctx: Context) -> None:
    """Compile-and-run time of a kernel new to the process, in a fresh process, with an
    empty cache folder and then again with the folder the first run filled.

    On the GPU the children run one at a time. In --check, where the times mean
    nothing, the two implementations' children run side by side, and only once: the
    interpreters keep no disk cache, so a warm run would repeat the cold one."""
    cache_dirs = {impl: tempfile.mkdtemp(prefix=f"bench-{impl}-cache-") for impl in KERNEL_IMPLS}
    if not ctx.check:
        for impl in KERNEL_IMPLS:
            compile_bytecode(impl)
    try:
        for phase in ("cold cache",) if ctx.check else ("cold cache", "warm cache"):
            children: dict[str, subprocess.Popen] = {}
            for impl in KERNEL_IMPLS:
                children[impl] = start_first_call_child(impl, cache_dirs[impl], ctx.check)
                if not ctx.check:
                    children[impl].wait()
            for impl, child in children.items():
                base = Row(group=ctx.group, bench="first call", case=phase, impl=impl, unit="ms")
                try:
                    result = first_call_result(child)
                except Exception as exc:
                    ctx.emit(replace(base, error=one_line(exc)))
                    continue
                ctx.emit(replace(base, value=result["first_call_ms"], median=result["first_call_ms"], reps=1,
                                  rel_err=result["rel_err"], detail=f"import {result['import_ms']:.0f} ms"))
    finally:
        for cache_dir in cache_dirs.values():
            shutil.rmtree(cache_dir, ignore_errors=True)


def compile_bytecode(impl: str) -> None:
    """Byte-compile the package `impl`'s modules where they are not yet, as installing
    a package does, so that a first call measures the package rather than Python
    compiling the source of the modules it imports lazily (a checkout run with
    PYTHONDONTWRITEBYTECODE, say). A package folder that cannot be written is left as is."""
    module = sys.modules.get(impl)
    if module is None or getattr(module, "__file__", None) is None:
        return
    compileall.compile_dir(os.path.dirname(module.__file__), quiet=2)


def start_first_call_child(impl: str, cache_dir: str, check: bool) -> subprocess.Popen:
    env = dict(os.environ, TRITON_CACHE_DIR=cache_dir)
    command = [sys.executable, str(Path(__file__).resolve()), "--first-call-child", impl]
    if check:
        command.append("--check")
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def first_call_result(child: subprocess.Popen) -> dict[str, float]:
    """The JSON line a first-call child printed; raises with its last words when it failed."""
    try:
        stdout, stderr = child.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise RuntimeError("the child ran longer than 600 s") from None
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if child.returncode != 0 or not lines:
        tail = [line for line in (stderr + stdout).splitlines() if line.strip()]
        raise RuntimeError(f"child exited with code {child.returncode}: {tail[-1] if tail else 'no output'}")
    result = json.loads(lines[-1])
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


def first_call_child(impl: str, check: bool) -> int:
    """In a fresh process: import `impl`, then time the first launch of the softmax
    kernel (compile, load, run) to completion; print one JSON line."""
    import torch

    sizes = CHECK_SIZES if check else FULL_SIZES
    device = "cpu" if check else "cuda"
    rows, cols = sizes.first_call
    x = random_tensor(torch, (rows, cols), torch.float32, device)
    out = torch.full_like(x, math.nan)
    if device == "cuda":
        torch.cuda.synchronize()
    try:
        begin = time.perf_counter()
        module, language = import_implementation(impl)
        import_ms = (time.perf_counter() - begin) * 1e3
        kernel = bind(module, language).softmax
        block = next_power_of_2(cols)
        begin = time.perf_counter()
        kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=block, num_warps=softmax_num_warps(block))
        if device == "cuda":
            torch.cuda.synchronize()
        first_call_ms = (time.perf_counter() - begin) * 1e3
        error = check_outputs(torch, [out], [torch.softmax(x.double(), dim=-1)], 1e-5)
    except Exception as exc:
        print(json.dumps({"error": one_line(exc)}))
        return 0
    print(json.dumps({"import_ms": import_ms, "first_call_ms": first_call_ms, "rel_err": error}))
    return 0


BENCHMARK_FUNCTIONS: dict[str, Callable[[Context], None]] = {
    "copy": bench_copy,
    "add": bench_add,
    "softmax": bench_softmax,
    "layernorm": bench_layernorm,
    "matmul": bench_matmul,
    "attention": bench_attention,
    "bf16": bench_bf16,
    "cross-entropy": bench_cross_entropy,
    "launch": bench_launch,
    "first-call": bench_first_call,
}


def import_implementation(impl: str) -> tuple[Any, Any]:
    """The package `impl` ("triton" or "tritone") and its language module."""
    module = importlib.import_module(impl)
    if impl == "triton" and hasattr(module, "__tritone_version__"):
        # tritone's drop-in alias answers to `import triton` when switched on.
        raise ImportError("`import triton` gives tritone's drop-in alias here, not upstream Triton")
    return module, importlib.import_module(f"{impl}.language")


def load_implementations() -> dict[str, Kernels | str]:
    """The benchmark kernels bound to each importable implementation, or why not."""
    loaded: dict[str, Kernels | str] = {}
    for impl in KERNEL_IMPLS:
        try:
            loaded[impl] = bind(*import_implementation(impl))
        except Exception as exc:
            loaded[impl] = f"{impl} unavailable: {one_line(exc)}"
    return loaded


def environment_line(torch: Any, device: str) -> str:
    """The device and the versions of the three implementations."""
    parts = [torch.cuda.get_device_name() if device == "cuda" else "CPU, interpreters", f"torch {torch.__version__}"]
    for impl in KERNEL_IMPLS:
        module = sys.modules.get(impl)
        # tritone's __version__ is the Triton API level it implements; its own release is separate.
        version = getattr(module, "__tritone_version__", None) or getattr(module, "__version__", "unavailable")
        parts.append(f"{impl} {version}")
    return ", ".join(parts)


def worker_main(args: argparse.Namespace) -> int:
    """Run the named benchmarks in order, appending rows to the events file. Exits with
    EXIT_CONTEXT_LOST after a benchmark that left the CUDA context unusable."""
    import torch

    from bench.timing import Timer, TimingPlan

    names = args.worker.split(",")
    if args.check:
        plan = TimingPlan(warmup_ms=0.0, rep_ms=0.0, min_reps=1, max_reps=1)
    elif args.quick:
        plan = TimingPlan(warmup_ms=10.0, rep_ms=40.0, min_reps=5)
    else:
        plan = TimingPlan()
    device = "cpu" if args.check else "cuda"
    if args.arch:
        capability = None if args.check else torch.cuda.get_device_capability()
        settings = arch_settings(args.arch, capability)
        os.environ.update(settings)
        arch_line = f"{args.arch} rows: " + " ".join(f"{name}={value}" for name, value in settings.items())
        if "DISABLE_MMA_V3" in settings:
            arch_line += f" (an {args.arch} cubin cannot load)"
    with open(args.events, "a", encoding="utf-8") as events:
        if args.arch:
            events.write(json.dumps({"event": "note", "line": arch_line}) + "\n")
        ctx = Context(
            sizes=CHECK_SIZES if args.check else FULL_SIZES, quick=args.quick, check=args.check,
            matmul_configs=args.matmul_configs, group=args.arch,
            timer=Timer(device, plan), events=events, implementations=load_implementations(),
            show_tracebacks=args.traceback)
        events.write(json.dumps({"event": "environment", "line": environment_line(torch, device)}) + "\n")
        for name in names:
            events.write(json.dumps({"event": "start", "bench": name}) + "\n")
            events.flush()
            print(f"[{name}{' ' + args.arch if args.arch else ''}]", flush=True)
            try:
                BENCHMARK_FUNCTIONS[name](ctx)
            except Exception as exc:
                # A failure of the harness itself (not of an implementation, which each
                # benchmark records in its rows).
                traceback.print_exc()
                events.write(json.dumps({"event": "harness_error", "bench": name, "error": one_line(exc)}) + "\n")
            if device == "cuda":
                if device_healthy(torch):
                    torch.cuda.empty_cache()
                else:
                    ctx.lost = ctx.lost or "a CUDA call failed"
            events.write(json.dumps({"event": "done", "bench": name}) + "\n")
            events.flush()
            if ctx.lost:
                print(f"  the CUDA context is unusable ({ctx.lost}); a fresh worker takes the rest", flush=True)
                return EXIT_CONTEXT_LOST
    return 0


def arch_settings(arch: str, capability: tuple[int, int] | None) -> dict[str, str]:
    """Environment that makes both implementations compile for the older target `arch`
    ("sm80") on a device of `capability` (None: no device, interpreters only).

    tritone gets TRITONE_TARGET=sm_XY: it emits PTX for that target and the driver
    compiles it for the device. Upstream gets TRITON_OVERRIDE_ARCH=smXY where its sm_XY
    cubin can load, that is on a device of the same major version; a cubin never loads
    on a newer major version, so there upstream keeps the device's target and is held
    to its mma.sync dot path with DISABLE_MMA_V3/DISABLE_MMA_V5 (read by its compiler)."""
    target = int(arch[2:])
    settings = {"TRITONE_TARGET": f"sm_{target}"}
    if capability is None or capability[0] == target // 10:
        settings["TRITON_OVERRIDE_ARCH"] = arch
    else:
        settings["DISABLE_MMA_V3"] = "1"
        settings["DISABLE_MMA_V5"] = "1"
    return settings


# --------------------------------------------------------------------------- orchestrator


@dataclass
class WorkerOutcome:
    rows: list[Row] = field(default_factory=list)
    environment: str = ""
    notes: list[str] = field(default_factory=list)
    harness_errors: list[str] = field(default_factory=list)


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a worker that died while writing it
    return events


def run_workers(names: list[str], args: argparse.Namespace, end_by: float | None, arch: str = "") -> WorkerOutcome:
    """Run `names` in worker processes, starting a new worker after one dies, hangs past
    the timeout of a benchmark, or loses its CUDA context; stop at `end_by` (a
    time.monotonic() value), marking what did not run. With `arch`, the workers compile
    for that older target (see arch_settings) and label their rows with it."""
    outcome = WorkerOutcome()
    group = arch
    env = dict(os.environ)
    if args.check:
        env["TRITON_INTERPRET"] = "1"
    else:
        # Both implementations read this; on the GPU it would turn full-size runs into
        # hours in an interpreter.
        for variable in ("TRITON_INTERPRET", "TRITONE_INTERPRET"):
            if env.pop(variable, None) is not None:
                print(f"note: {variable} is ignored by the GPU benchmarks", flush=True)
    remaining = list(names)
    with tempfile.TemporaryDirectory(prefix="bench-events-") as folder:
        attempt = 0
        while remaining:
            if end_by is not None and time.monotonic() > end_by:
                outcome.rows.extend(Row(group=group, bench=name, case="", impl="", unit="",
                                        error="not run: --budget ran out") for name in remaining)
                break
            attempt += 1
            events_path = Path(folder) / f"worker{attempt}.jsonl"
            command = [sys.executable, str(Path(__file__).resolve()), "--worker", ",".join(remaining),
                       "--events", str(events_path), "--arch", arch]
            command += [flag for flag, on in (("--check", args.check), ("--quick", args.quick),
                                              ("--matmul-configs", args.matmul_configs),
                                              ("--traceback", args.traceback)) if on]
            # Its own process group, so that stopping it also stops the first-call children.
            process = subprocess.Popen(command, env=env, start_new_session=os.name == "posix")
            try:
                stopped = wait_for_worker(process, events_path, args.timeout, end_by)
            except KeyboardInterrupt:
                kill_worker(process)
                raise
            events = read_events(events_path)
            started = [event["bench"] for event in events if event["event"] == "start"]
            finished = {event["bench"] for event in events if event["event"] == "done"}
            for event in events:
                if event["event"] == "row":
                    outcome.rows.append(Row(**event["row"]))
                elif event["event"] == "environment":
                    outcome.environment = event["line"]
                elif event["event"] == "note" and event["line"] not in outcome.notes:
                    outcome.notes.append(event["line"])
                elif event["event"] == "harness_error":
                    error = f"the benchmark itself failed: {event['error']}"
                    outcome.rows.append(Row(group=group, bench=event["bench"], case="", impl="", unit="", error=error))
                    outcome.harness_errors.append(f"{event['bench']}: {event['error']}")
            unfinished = [name for name in started if name not in finished]
            if stopped == "budget":
                for name in [name for name in remaining if name not in finished]:
                    why = "stopped: --budget ran out" if name in unfinished else "not run: --budget ran out"
                    outcome.rows.append(Row(group=group, bench=name, case="", impl="", unit="", error=why))
                break
            if unfinished:
                name = unfinished[0]
                why = (f"worker timed out after {args.timeout:.0f} s" if stopped == "timeout"
                       else f"worker exited with code {process.returncode} (its output is above)")
                outcome.rows.append(Row(group=group, bench=name, case="", impl="", unit="", error=why))
                outcome.harness_errors.append(f"{name}: {why}")
            done_names = set(finished) | set(unfinished)
            if not done_names:
                outcome.harness_errors.append(f"a worker exited with code {process.returncode} before any benchmark")
                break
            remaining = [name for name in remaining if name not in done_names]
    return outcome


def wait_for_worker(process: subprocess.Popen, events_path: Path, timeout_s: float, end_by: float | None) -> str:
    """Wait for the worker; kill it when one benchmark has run longer than `timeout_s`
    or the run reaches `end_by`. Returns "timeout", "budget" or "" (it exited)."""
    seen_starts = 0
    deadline = time.monotonic() + timeout_s
    while process.poll() is None:
        starts = sum(1 for event in read_events(events_path) if event["event"] == "start")
        if starts != seen_starts:
            seen_starts = starts
            deadline = time.monotonic() + timeout_s
        now = time.monotonic()
        if now > deadline or (end_by is not None and now > end_by):
            kill_worker(process)
            return "timeout" if now > deadline else "budget"
        time.sleep(0.5)
    return ""


def kill_worker(process: subprocess.Popen) -> None:
    """Stop a worker started by run_workers, with its children where the platform allows."""
    if os.name == "posix":
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    else:
        process.kill()
    process.wait()


# --------------------------------------------------------------------------- table and CSV


def format_figure(value: float | None) -> str:
    """A figure in at most 6 characters with three or four significant digits; "-" for none."""
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}" if value >= 1 else f"{value:.3g}"


def format_table(rows: list[Row], environment: str, mode: str) -> str:
    """The compact table: one line per case with each implementation's figure and the
    ratios tritone/Triton and tritone/torch, then a line per failure under its case."""
    header = (f"{'benchmark':<15}{'case':<25}{'unit':<8}{'torch':>10}{'triton':>10}{'tritone':>10}"
              f"{'tt/triton':>11}{'tt/torch':>10}")
    lines = [f"tritone benchmarks, {mode} run: {environment}"[:TABLE_WIDTH], header, "-" * len(header)]
    cases: dict[tuple[str, str, str], dict[str, Row]] = {}
    for row in rows:
        if row.role == "result":
            bench = f"{row.bench} {row.group}".strip()
            cases.setdefault((bench, row.case, row.unit), {})[row.impl or "all"] = row
    for (bench, case, unit), by_impl in cases.items():
        cells = []
        for impl in IMPLS:
            row = by_impl.get(impl)
            if row is None:
                cells.append("-")
            elif row.error:
                cells.append("wrong" if row.error.startswith("WrongResult") else "error")
            else:
                cells.append(format_figure(row.value))
        ours = by_impl.get("tritone")
        ratios = []
        for other in ("triton", "torch"):
            theirs = by_impl.get(other)
            usable = ours is not None and theirs is not None and ours.value is not None and theirs.value
            ratios.append(f"{ours.value / theirs.value:.2f}" if usable else "-")
        lines.append(f"{bench:<15.15}{case:<25.25}{unit:<8.8}{cells[0]:>10}{cells[1]:>10}{cells[2]:>10}"
                     f"{ratios[0]:>11}{ratios[1]:>10}")
        for impl in (*IMPLS, "all"):
            row = by_impl.get(impl)
            if row is not None and (row.error or row.note):
                who = impl if impl != "all" else "benchmark"
                lines.append(f"    {who}: {row.error or row.note}"[:TABLE_WIDTH])
    lines.append("-" * len(header))
    lines.append("tt/x = tritone's figure / x's: GB/s, TFLOP/s higher is better; us/call, ms lower is better.")
    return "\n".join(lines)


# Units of time: a smaller figure is better, so tritone's speed-up over x is x's / tritone's.
TIME_UNITS = ("s", "ms", "us", "us/call")


def speedups(rows: list[Row]) -> list[tuple[str, float | None, float | None]]:
    """For every case with a tritone figure: its label and tritone's speed-up over
    upstream Triton and over torch (above 1: tritone is faster; None: no figure to
    compare), whatever the unit."""
    cases: dict[tuple[str, str], dict[str, Row]] = {}
    for row in rows:
        if row.role == "result" and row.value:
            cases.setdefault((f"{row.bench} {row.group}".strip(), row.case), {})[row.impl] = row
    result = []
    for (bench, case), by_impl in cases.items():
        ours = by_impl.get("tritone")
        if ours is None:
            continue
        ratios = []
        for other in ("triton", "torch"):
            theirs = by_impl.get(other)
            if theirs is None:
                ratios.append(None)
            elif ours.unit in TIME_UNITS:
                ratios.append(theirs.value / ours.value)
            else:
                ratios.append(ours.value / theirs.value)
        result.append((f"{bench}: {case}", ratios[0], ratios[1]))
    return result


def write_png(rows: list[Row], path: Path, title: str) -> None:
    """A bar chart of `speedups(rows)`, one pair of bars per case, saved as PNG."""
    from matplotlib.figure import Figure  # no pyplot: no window, no global state

    cases = speedups(rows)
    figure = Figure(figsize=(9, 1.2 + 0.35 * max(1, len(cases))), layout="constrained")
    axes = figure.add_subplot()
    positions = range(len(cases))
    for offset, (index, name) in zip((-0.2, 0.2), ((1, "vs upstream Triton"), (2, "vs torch"))):
        axes.barh([p + offset for p in positions], [case[index] or 0.0 for case in cases], height=0.4, label=name)
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_yticks(list(positions), [case[0] for case in cases], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("tritone's speed-up (above 1: tritone is faster)")
    axes.set_title(title, fontsize=9)
    axes.legend(loc="lower right", fontsize=8)
    figure.savefig(path)


def write_csv(rows: list[Row], path: Path) -> None:
    names = [f.name for f in fields(Row)]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        for row in rows:
            writer.writerow(asdict(row))


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="tritone beside upstream Triton and torch: bandwidth, throughput, launch and compile times.")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, metavar="NAME",
                        help=f"run only these benchmarks ({', '.join(BENCHMARKS)})")
    parser.add_argument("--quick", action="store_true", help="fewer configs and repetitions")
    parser.add_argument("--check", action="store_true",
                        help="validate the suite on the CPU: tiny sizes, both implementations interpreted")
    parser.add_argument("--csv", type=Path, help="write every row (each config too) to this CSV file")
    parser.add_argument("--png", type=Path,
                        help="plot tritone's speed-up over upstream Triton and torch per case to this PNG file "
                             "(needs matplotlib)")
    parser.add_argument("--arch-compare", metavar="smXY",
                        help="also run matmul and attention compiled for an older target (upstream with "
                             "TRITON_OVERRIDE_ARCH=smXY, tritone with TRITONE_TARGET=sm_XY)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds one benchmark may run before its worker is killed (default 300)")
    parser.add_argument("--budget", type=float,
                        help="seconds the whole run may take: then the running benchmark is stopped, the rest "
                             "are marked not run, and the table is printed")
    parser.add_argument("--matmul-configs", action="store_true",
                        help="also time each matmul config on its own (config rows in the CSV), to check the "
                             "autotuner's choice")
    parser.add_argument("--traceback", action="store_true", help="print the traceback of every failure")
    # Internal: the roles of the child processes.
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--events", help=argparse.SUPPRESS)
    parser.add_argument("--arch", default="", help=argparse.SUPPRESS)
    parser.add_argument("--first-call-child", choices=KERNEL_IMPLS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.arch_compare is not None and not (args.arch_compare.startswith("sm") and args.arch_compare[2:].isdigit()):
        parser.error(f"--arch-compare takes a target like sm80, got {args.arch_compare!r}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    if args.first_call_child:
        return first_call_child(args.first_call_child, args.check)
    if args.worker:
        return worker_main(args)
    if args.png and importlib.util.find_spec("matplotlib") is None:
        print("--png needs matplotlib: pip install matplotlib", file=sys.stderr)
        return 2
    if not args.check and not cuda_available():
        print("no CUDA device is usable here: run with --check to validate the suite on the CPU", file=sys.stderr)
        return 2
    names = [name for name in BENCHMARKS if args.only is None or name in args.only]
    end_by = time.monotonic() + args.budget if args.budget else None
    outcomes = [run_workers(names, args, end_by)]
    compared = [name for name in names if name in ARCH_COMPARED]
    if args.arch_compare and compared:
        outcomes.append(run_workers(compared, args, end_by, args.arch_compare))
    rows = [row for outcome in outcomes for row in outcome.rows]
    harness_errors = [error for outcome in outcomes for error in outcome.harness_errors]
    environment = next((outcome.environment for outcome in outcomes if outcome.environment), "")
    if args.csv:
        write_csv(rows, args.csv)
    mode = "check" if args.check else "quick" if args.quick else "full"
    if args.png:
        write_png(rows, args.png, f"tritone benchmarks, {mode} run: {environment}")
    print()
    print(format_table(rows, environment, mode))
    if args.csv:
        print(f"every row, each config too: {args.csv}")
    if args.png:
        print(f"speed-ups plotted: {args.png}")
    for note in (note for outcome in outcomes for note in outcome.notes):
        print(note[:TABLE_WIDTH])
    for error in harness_errors:
        print(f"harness failure: {error}"[:TABLE_WIDTH])
    return status(rows, harness_errors, args.check)


def status(rows: list[Row], harness_errors: list[str], check: bool) -> int:
    """1 when the harness failed; with --check also when torch or tritone failed a case
    (the interpreter runs every kernel, so any failure there is a real one)."""
    if harness_errors:
        return 1
    if check and any(row.error for row in rows if row.impl in ("torch", "tritone") and row.role == "result"):
        return 1
    return 0


def cuda_available() -> bool:
    """Whether torch sees a CUDA device, asked in a child so this process never loads torch."""
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True)
    return probe.stdout.strip() == "True"


if __name__ == "__main__":
    sys.exit(main())
