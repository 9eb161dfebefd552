"""Timing for the benchmark suite, the same for torch, upstream Triton and tritone.

On a CUDA device every repetition is bracketed by CUDA events on torch's
current stream, the last-level cache is flushed (a 256 MB buffer is zeroed)
before each repetition, outside the events, and the median is reported. On the
CPU (`--check`) a host clock stands in, with a handful of repetitions: those
numbers only show that the harness runs, they measure nothing.

This module depends on torch only, never on `triton.testing` or
`tritone.testing`, so neither implementation times itself.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

# Larger than the last-level cache of any GPU we time on (H200: 60 MB of L2),
# as Triton's do_bench uses.
FLUSH_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Timing:
    """Per-repetition times in `unit` ("ms" or "us"): median, minimum, 20th and 80th
    percentiles, over `reps` repetitions."""

    median: float
    min: float
    p20: float
    p80: float
    reps: int
    unit: str = "ms"


@dataclass(frozen=True)
class TimingPlan:
    """How long to warm up and repeat, in milliseconds of device time, with bounds on the count."""

    warmup_ms: float = 25.0
    rep_ms: float = 100.0  # 0: no estimate and no warm-up beyond the first call, min_reps repetitions
    min_reps: int = 10
    max_reps: int = 1000


def input_sets_needed(working_set_bytes: int, cache_bytes: int = FLUSH_BYTES, most: int = 8) -> int:
    """How many copies of the inputs to rotate among so that consecutive repetitions do
    not find the previous one's data in the cache: enough to cover twice the cache."""
    if working_set_bytes <= 0:
        return 1
    return max(1, min(most, math.ceil(2 * cache_bytes / working_set_bytes)))


def _quantile(sorted_values: list[float], q: float) -> float:
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def summarise(times: list[float], unit: str = "ms") -> Timing:
    """The Timing of per-repetition `times`."""
    ordered = sorted(times)
    return Timing(
        median=statistics.median(ordered),
        min=ordered[0],
        p20=_quantile(ordered, 0.2),
        p80=_quantile(ordered, 0.8),
        reps=len(ordered),
        unit=unit,
    )


class Timer:
    """Times callables `fn(i)`, where `i` picks one of `n_sets` input sets, on `device`
    ("cuda" or "cpu")."""

    def __init__(self, device: str, plan: TimingPlan):
        self.device = device
        self.plan = plan
        self._flush_buffer: torch.Tensor | None = None

    @property
    def on_gpu(self) -> bool:
        return self.device == "cuda"

    def synchronize(self) -> None:
        """Wait for all work queued on the device; raises if a kernel failed."""
        if self.on_gpu:
            torch.cuda.synchronize()

    def flush_cache(self) -> None:
        """Evict the inputs of the previous repetition from the last-level cache."""
        if not self.on_gpu:
            return
        if self._flush_buffer is None:
            self._flush_buffer = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=self.device)
        self._flush_buffer.zero_()

    def measure(self, fn: Callable[[int], object], n_sets: int = 1) -> Timing:
        """Median time of one call of `fn`, after a warm-up, with the cache flushed before
        every repetition and the input set rotating. The first call (which may compile)
        and the few that estimate the time are never timed."""
        return summarise(self.measure_times(fn, n_sets))

    def measure_times(self, fn: Callable[[int], object], n_sets: int = 1) -> list[float]:
        """The milliseconds of each timed repetition of what `measure` times."""
        fn(0)
        self.synchronize()
        plan = self.plan
        if plan.rep_ms > 0:
            estimate = self._estimate_ms(fn, n_sets)
            warmups = int(plan.warmup_ms / estimate)
            reps = max(plan.min_reps, min(plan.max_reps, int(plan.rep_ms / estimate)))
        else:
            warmups, reps = 0, plan.min_reps
        for i in range(warmups):
            fn(i % n_sets)
        if self.on_gpu:
            return self._device_times(fn, n_sets, reps)
        return self._host_times(fn, n_sets, reps)

    def _estimate_ms(self, fn: Callable[[int], object], n_sets: int) -> float:
        times = self._device_times(fn, n_sets, 5) if self.on_gpu else self._host_times(fn, n_sets, 1)
        return max(statistics.median(times), 1e-3)

    def _device_times(self, fn: Callable[[int], object], n_sets: int, reps: int) -> list[float]:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            self.flush_cache()
            starts[i].record()
            fn(i % n_sets)
            ends[i].record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) for start, end in zip(starts, ends)]

    def _host_times(self, fn: Callable[[int], object], n_sets: int, reps: int) -> list[float]:
        times = []
        for i in range(reps):
            begin = time.perf_counter()
            fn(i % n_sets)
            times.append((time.perf_counter() - begin) * 1e3)
        return times

    def launch_overhead_us(self, launch: Callable[[], object], calls: int, batches: int) -> Timing:
        """Host time per call of `launch` issued back to back in a Python loop, in
        microseconds: the median over `batches` batches of `calls` calls. Each batch
        starts from an empty launch queue (a synchronize before it, not timed) and
        its end is not waited for, so the figure is the host's time per launch, not
        how fast the GPU gets through a queue of tiny kernels (at the low clocks of
        a nearly idle GPU, slower than the launches come) -- unless the launches
        outrun the GPU by so much that the queue fills and the host waits. No cache flush."""
        for _ in range(max(1, calls // 10)):
            launch()
        per_call = []
        for _ in range(batches):
            self.synchronize()
            begin = time.perf_counter()
            for _ in range(calls):
                launch()
            per_call.append((time.perf_counter() - begin) * 1e6 / calls)
        self.synchronize()
        return summarise(per_call, "us")


def turns(names: Sequence[str], rounds: int) -> list[str]:
    """`names` in `rounds` rounds, each in the opposite order to the round before: the
    order in which things timed in turn are measured, so that a GPU's drift falls on
    all of them alike."""
    order, measured = list(names), []
    for _ in range(rounds):
        measured += order
        order = order[::-1]
    return measured


def time_in_turn(calls: dict[str, Callable[[], object]], rounds: int, per_round: int,
                 flush: bool = False) -> dict[str, float]:
    """Median milliseconds per call of each callable on the GPU, the callables timed in
    turn: each round runs every callable `per_round` times, in the opposite order to
    the round before, so that clock and power drift (a GPU slows as it heats) fall on
    all of them alike.

    Without `flush` a round's calls run back to back between two CUDA events. A call
    queued before the first event keeps the GPU busy while the host queues the timed
    ones: without it, the time the host takes to queue the first call (a launch's
    Python, tens of microseconds) counted as GPU time, a few percent of a round of
    100-microsecond kernels. A callable whose host side is slower than its kernel is
    still timed at the host's pace, as back-to-back calls run. This is how a kernel
    runs in a loop of its own, as tutorial 09's benchmark runs its kernels.

    With `flush`, as `triton.testing.do_bench` times (and tutorial 06's benchmark
    with it), every call is timed alone between two events, after the last-level
    cache is flushed (a `FLUSH_BYTES` buffer zeroed, outside the events). The GPU
    then spends part of the time on the flush, at other clocks and power than a
    kernel run back to back: the two ways can rank kernels differently."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():
        call()
    torch.cuda.synchronize()
    flusher = Timer("cuda", TimingPlan()) if flush else None
    for name in turns(calls, rounds):
        if flusher is None:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            calls[name]()  # the lead-in, not timed
            start.record()
            for _ in range(per_round):
                calls[name]()
            end.record()
            torch.cuda.synchronize()
            times[name].append(start.elapsed_time(end) / per_round)
        else:
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(per_round)]
            for start, end in events:
                flusher.flush_cache()
                start.record()
                calls[name]()
                end.record()
            torch.cuda.synchronize()
            times[name].append(statistics.fmean(start.elapsed_time(end) for start, end in events))
    return {name: statistics.median(values) for name, values in times.items()}
