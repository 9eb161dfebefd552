"""The two clocks a profiling session measures with.

A timer hands out marks, points in time on one device: `mark(stream)` takes
one, `elapsed_ns(start, end)` is the time between two marks of the same
stream, and `recycle(mark)` gives a mark's resources back once it has been
read. `where()` says which device and stream a mark taken now belongs to,
and `describe(device)` what the hatchet file says of that device.

- `CudaEventTimer`: a mark is a CUDA event recorded on the stream. Recording
  costs a driver call and never waits; reading the time between two events
  waits for the later one, which the recorder does only when it resolves its
  pending intervals (on deactivate, finalize, or when many are pending), so
  launches are not serialized. Events are reused, one free list per context.
- `HostTimer`: a mark is a reading of `time.perf_counter_ns`. Kernels in the
  CPU interpreter run to completion inside their launch, so the host clock
  around a launch is the kernel's time.
"""

from __future__ import annotations

import os
import platform
import time
from typing import Any

HOST_TIMING = ("host clock (time.perf_counter_ns) around each launch and each scope: kernels ran in the "
               "CPU interpreter, which finishes a kernel before its launch returns")
CUDA_TIMING = ("CUDA events recorded on the launch stream before and after each tritone kernel; GPU work "
               "not launched by tritone is timed per scope, by events on the current stream at the scope's "
               "enter and exit (so its kernels are not told apart)")


class HostTimer:
    """Marks are host clock readings, in nanoseconds."""

    device_type = "CPU"

    @staticmethod
    def where() -> tuple[int, None]:
        return 0, None

    @staticmethod
    def mark(stream: Any = None) -> int:
        return time.perf_counter_ns()

    @staticmethod
    def elapsed_ns(start: int, end: int) -> int:
        return end - start

    @staticmethod
    def recycle(mark: int) -> None:
        """Host marks hold nothing."""

    @staticmethod
    def close() -> None:
        """Host marks hold nothing."""

    @staticmethod
    def describe(device: int) -> dict[str, Any]:
        return {"arch": platform.machine() or "cpu", "num_sms": os.cpu_count() or 1, "clock_rate": 0,
                "memory_clock_rate": 0, "bus_width": 0, "timing": HOST_TIMING}


class CudaEventTimer:
    """Marks are `(context, event)`: a CUDA event recorded on a stream of the
    GPU whose context was current. `api` is the driver (`driver_api.driver()`
    unless a test passes a simulated one)."""

    device_type = "CUDA"

    def __init__(self, api: Any = None):
        from ..backends.cuda.bindings import driver_api

        self._api = api if api is not None else driver_api.driver()
        self._free: dict[int, list[int]] = {}

    def where(self) -> tuple[int, int]:
        """The current device and the stream tritone launches on there when
        the caller names none (torch's current stream, else the default one)."""
        from ..backends.cuda.launch_plan import current_device, current_stream

        device = current_device(self._api)
        return device, current_stream(device)

    def mark(self, stream: int | None) -> tuple[int, int]:
        api = self._api
        context = api.context_get_current()
        if not context:
            # Nothing made a context current on this thread yet (no torch, no launch):
            # events belong to the current device's primary context, which launches use.
            from ..backends.cuda.launch_plan import current_device

            context = api.primary_context_retain(api.device_get(current_device(api)))
            api.context_set_current(context)
        free = self._free.get(context)
        event = free.pop() if free else api.event_create(0)
        api.event_record(event, stream or 0)
        return context, event

    def elapsed_ns(self, start: tuple[int, int], end: tuple[int, int]) -> int:
        """Nanoseconds between two events of one stream; waits for `end`."""
        self._api.event_synchronize(end[1])
        return round(self._api.event_elapsed_ms(start[1], end[1]) * 1e6)

    def recycle(self, mark: tuple[int, int]) -> None:
        # Recording a free event again is allowed even while its last recording
        # is still pending on the GPU: the new recording replaces it.
        self._free.setdefault(mark[0], []).append(mark[1])

    def close(self) -> None:
        """Destroy the free events (the recorder calls this when no session is left)."""
        free, self._free = self._free, {}
        for events in free.values():
            for event in events:
                self._api.event_destroy(event)

    def describe(self, device: int) -> dict[str, Any]:
        """The device's record in Proton's form (`arch` "90" for sm_90, clocks in kHz)."""
        from ..backends.cuda.driver import NvidiaUtils

        major, minor = self._api.device(device).capability
        properties = NvidiaUtils.get_device_properties(device)
        return {"arch": f"{major}{minor}", "num_sms": properties["multiprocessor_count"],
                "clock_rate": properties["sm_clock_rate"], "memory_clock_rate": properties["mem_clock_rate"],
                "bus_width": properties["mem_bus_width"], "timing": CUDA_TIMING}
