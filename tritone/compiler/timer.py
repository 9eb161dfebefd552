"""Timing one compilation for `knobs.compilation.listener`."""

from __future__ import annotations

import time

from ..knobs import CompileTimes


def _microseconds(start: float, end: float) -> int:
    return int((end - start) * 1_000_000)


class CompileTimer:
    """Marks the phases of one compilation as they end and answers them as a
    `CompileTimes`: created when the compilation starts, `lowering_started()`
    once the cache missed (never on a hit), `stage_finished(name)` after each
    lowering stage, `end()` when the results are stored (or read from the cache)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.lowering_start: float | None = None
        self.stage_ends: list[tuple[str, float]] = []

    def lowering_started(self) -> None:
        self.lowering_start = time.perf_counter()

    def stage_finished(self, stage: str) -> None:
        self.stage_ends.append((stage, time.perf_counter()))

    def end(self) -> CompileTimes:
        now = time.perf_counter()
        if self.lowering_start is None:  # a cache hit: all of it was looking the kernel up
            return CompileTimes(ir_initialization=_microseconds(self.start, now), lowering_stages=[],
                                store_results=0)
        stages = []
        stage_start = self.lowering_start
        for stage, stage_end in self.stage_ends:
            stages.append((stage, _microseconds(stage_start, stage_end)))
            stage_start = stage_end
        return CompileTimes(ir_initialization=_microseconds(self.start, self.lowering_start),
                            lowering_stages=stages, store_results=_microseconds(stage_start, now))
