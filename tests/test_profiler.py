"""`tritone.profiler` (Proton's API): sessions, scopes, states and launch hooks
recording real kernels run by the interpreter (host clock), the CUDA event
timer against a simulated driver (no synchronization per launch, events
reused), the hatchet file it writes, and the viewer's arithmetic on
hand-written profiles. On a GPU (`gpu` marker), real CUDA events."""

from __future__ import annotations

import ctypes
import json
import math
import re

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
import tritone.profiler as proton
import tritone.profiler.viewer as viewer
from tritone import knobs
from tritone.backends import sites
from tritone.backends.cuda import driver as cuda_driver
from tritone.backends.cuda.bindings import driver_api
from tritone.backends.cuda.bindings.driver_api import CudaDriver, DeviceAttribute
from tritone.platform import SimulatedLibrary
from tritone.profiler import _recorder
from tritone.profiler._recorder import recorder
from tritone.profiler._timers import CudaEventTimer, HostTimer

N = 256


def _scale_metadata(grid, metadata, args):
    n = args["n"]
    return {"name": f"scale [n={n}]", "flops32": 2.0 * n, "bytes": 8 * n}


@triton.jit(launch_metadata=_scale_metadata)
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def _launching_metadata(grid, metadata, args):
    # A launch_metadata function that itself launches a tritone kernel.
    copy_kernel[(1,)](args["x_ptr"], args["out_ptr"], N, BLOCK=N)
    return {"name": "outer", "bytes": 1}


@triton.jit(launch_metadata=_launching_metadata)
def metadata_launching_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))


@pytest.fixture(autouse=True)
def profiling(monkeypatch, tmp_path):
    """Kernels in the interpreter, files written in a fresh folder, and no session left behind."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.chdir(tmp_path)
    yield
    proton.finalize()
    assert not recorder.sessions and not recorder.pending
    assert recorder.launch_enter not in (knobs.runtime.launch_enter_hook or [])


def _scale(times: int = 1) -> None:
    x, out = torch.rand(N), torch.empty(N)
    for _ in range(times):
        scale_kernel[(1,)](x, out, N, BLOCK=N)
    torch.testing.assert_close(out, 2 * x)


def _load(path) -> list:
    with open(path, encoding="utf-8") as file:
        return json.load(file)


def _child(node: dict, *names: str) -> dict:
    for name in names:
        matches = [child for child in node["children"] if child["frame"]["name"] == name]
        assert matches, f"no {name!r} under {node['frame']['name']!r}: {[c['frame']['name'] for c in node['children']]}"
        node = matches[0]
    return node


# ---------------------------------------------------------------- sessions and the file


def test_sessions_are_numbered_and_finalize_writes_the_hatchet_file(tmp_path):
    first = proton.start("one")
    second = proton.start(str(tmp_path / "two"))
    assert second == first + 1
    proton.finalize(first)
    assert (tmp_path / "one.hatchet").exists() and not (tmp_path / "two.hatchet").exists()
    proton.finalize(first)  # finalizing twice does nothing, as in Proton
    proton.finalize()
    root, devices = _load(tmp_path / "two.hatchet")
    assert root["frame"] == {"name": "ROOT", "type": "function"} and root["children"] == []
    assert root["metrics"] == {"count": 0, "time (ns)": 0} and devices == {}
    third = proton.start()
    proton.finalize(third)
    assert (tmp_path / f"{proton.DEFAULT_PROFILE_NAME}.hatchet").exists()


def test_kernels_are_nodes_under_scopes_with_their_launch_metadata(tmp_path):
    proton.start("matmul", hook="triton")
    _scale(3)
    with proton.scope("outer"):
        with proton.scope("inner"):
            _scale(2)
    proton.finalize()
    root, devices = _load(tmp_path / "matmul.hatchet")
    # The root names every inclusive metric with 0: the viewer sums those over subtrees.
    assert root["metrics"] == {"bytes": 0, "count": 0, "flops32": 0, "time (ns)": 0}
    assert [child["frame"]["name"] for child in root["children"]] == ["outer", f"scale [n={N}]"]
    top = _child(root, f"scale [n={N}]")["metrics"]
    assert top["count"] == 3 and top["flops32"] == 3 * 2.0 * N and top["bytes"] == 3 * 8 * N
    assert top["time (ns)"] > 0 and top["device_type"] == "CPU" and top["device_id"] == "0"
    outer = _child(root, "outer")
    assert outer["metrics"] == {}  # a tritone kernel launched inside: its kernels are timed, not the scope
    nested = _child(outer, "inner", f"scale [n={N}]")["metrics"]
    assert nested["count"] == 2 and nested["flops32"] == 2 * 2.0 * N
    assert set(devices) == {"CPU"} and "perf_counter_ns" in devices["CPU"]["0"]["timing"]


def test_without_the_triton_hook_kernels_keep_their_own_name_and_no_metadata(tmp_path):
    proton.start("plain")
    _scale(2)
    proton.finalize()
    root, _ = _load(tmp_path / "plain.hatchet")
    node = _child(root, "scale_kernel")["metrics"]
    assert node["count"] == 2 and "flops32" not in node and "bytes" not in root["metrics"]


def test_hooks_are_installed_only_while_a_session_is_active(tmp_path):
    assert not knobs.runtime.launch_enter_hook and not knobs.runtime.launch_exit_hook
    session = proton.start("hooks", hook="triton")
    assert recorder.launch_enter in knobs.runtime.launch_enter_hook
    assert recorder.launch_exit in knobs.runtime.launch_exit_hook
    proton.deactivate(session)
    # An empty chain is false: launches take the dispatcher's fast path again.
    assert not knobs.runtime.launch_enter_hook and not knobs.runtime.launch_exit_hook
    _scale(4)  # not recorded
    proton.activate(session)
    _scale(1)
    proton.deactivate()
    proton.activate()
    proton.finalize()
    assert not knobs.runtime.launch_enter_hook and not knobs.runtime.launch_exit_hook
    root, _ = _load(tmp_path / "hooks.hatchet")
    assert _child(root, f"scale [n={N}]")["metrics"]["count"] == 1


def test_a_hook_assigned_in_place_of_the_chain_keeps_running(tmp_path):
    seen = []
    with knobs.runtime.scope():
        knobs.runtime.launch_enter_hook = lambda metadata: seen.append(metadata["name"])
        proton.start("mixed", hook="triton")
        _scale(1)
        proton.finalize()
        assert seen == [f"scale [n={N}]"]
    assert _child(_load(tmp_path / "mixed.hatchet")[0], f"scale [n={N}]")["metrics"]["count"] == 1


def test_kernels_launched_by_launch_metadata_go_under_protons_metadata_frame(tmp_path):
    proton.start("nested", hook="triton")
    x, out = torch.rand(N), torch.empty(N)
    metadata_launching_kernel[(1,)](x, out, N, BLOCK=N)
    proton.finalize()
    root, _ = _load(tmp_path / "nested.hatchet")
    assert _child(root, "outer")["metrics"]["count"] == 1
    assert _child(root, _recorder.LAUNCH_METADATA_STATE, "copy_kernel")["metrics"]["count"] == 1
    tree, _ = viewer.parse(["count"], str(tmp_path / "nested.hatchet"))
    assert [frame.name for frame in tree.root.children] == ["outer"]  # the viewer leaves that frame out


# ---------------------------------------------------------------- scopes and states


def test_a_scope_without_tritone_kernels_is_timed_and_keeps_its_metrics(tmp_path):
    proton.start("torch")
    x = torch.rand(64, 64)
    for _ in range(2):
        with proton.scope("torch [64]", {"flops32": 2.0 * 64**3, "bytes": 3 * 4 * 64 * 64}):
            x @ x
    proton.finalize()
    root, devices = _load(tmp_path / "torch.hatchet")
    node = _child(root, "torch [64]")["metrics"]
    assert node["count"] == 2 and node["time (ns)"] > 0 and node["flops32"] == 4.0 * 64**3
    assert root["metrics"] == {"bytes": 0, "count": 0, "flops32": 0, "time (ns)": 0} and "CPU" in devices


class SteppingTimer(HostTimer):
    """A clock that advances `step` ns per mark, so that times are exact."""

    def __init__(self, step: int = 1000):
        self.now = 0
        self.step = step

    def mark(self, stream=None) -> int:
        self.now += self.step
        return self.now


def test_a_scope_timed_around_others_keeps_only_its_own_time(monkeypatch, tmp_path):
    monkeypatch.setattr(recorder, "timer", lambda: timer)
    timer = SteppingTimer()
    proton.start("split")
    with proton.scope("outer"):  # marks 1 and 6: 5 steps, of which 1 + 1 inside
        with proton.scope("first"):  # marks 2, 3
            pass
        with proton.scope("second"):  # marks 4, 5
            pass
    with proton.scope("busy"):  # a tritone kernel inside: only the kernel is timed
        _scale(1)
    proton.finalize()
    root, _ = _load(tmp_path / "split.hatchet")
    outer = _child(root, "outer")
    assert outer["metrics"]["time (ns)"] == 3000 and outer["metrics"]["count"] == 1
    assert _child(outer, "first")["metrics"]["time (ns)"] == 1000
    assert _child(outer, "second")["metrics"]["time (ns)"] == 1000
    busy = _child(root, "busy")
    assert "time (ns)" not in busy["metrics"] and _child(busy, "scale_kernel")["metrics"]["time (ns)"] == 1000
    tree, columns = viewer.parse(["time/us"], str(tmp_path / "split.hatchet"))
    assert columns == ["time/us (inc)"] and tree.find("outer").values["time/us (inc)"] == pytest.approx(5.0)
    assert tree.root.values["time/us (inc)"] == pytest.approx(6.0)


def test_scope_metrics_as_proton_records_them(tmp_path):
    session = proton.start("metrics")
    with proton.scope("test0", {"a": 1.0}):
        pass

    @proton.scope("test1", {"a": 1.0})
    def decorated():
        return "result"

    assert decorated() == "result"
    proton.deactivate(session)
    proton.enter_scope("test2", metrics={"a": 1.0})  # inactive: nothing recorded
    proton.exit_scope()
    proton.activate(session)
    for _ in range(2):
        proton.enter_scope("test3", metrics={"a": 1.0})
        proton.exit_scope("test3")
    proton.enter_scope("test4")
    proton.exit_scope(metrics={"b": 1.0})
    with proton.scope("test5", {"e (exc)": 2, "p (pty)": "first"}):
        pass
    with proton.scope("test5", {"e (exc)": 3, "p (pty)": "second"}):
        pass
    proton.finalize()
    root, _ = _load(tmp_path / "metrics.hatchet")
    assert [child["frame"]["name"] for child in root["children"]] == ["test0", "test1", "test3", "test4", "test5"]
    assert _child(root, "test3")["metrics"]["a"] == 2.0 and _child(root, "test4")["metrics"]["b"] == 1.0
    fifth = _child(root, "test5")["metrics"]
    assert fifth["e"] == 5 and fifth["p"] == "second"
    # Exclusive metrics and properties are not summed into parents: the root does not list them.
    assert set(root["metrics"]) == {"a", "b", "count", "time (ns)"}


def test_scopes_entered_outside_sessions_cost_nothing_and_record_nothing(tmp_path):
    with proton.scope("before"):
        pass
    assert proton.enter_scope("before") is None
    proton.exit_scope("before")
    assert proton.context.depth() is None
    session = proton.start("depth")
    assert proton.context.depth(session) == 0
    proton.enter_scope("a")
    with proton.scope("b"):
        assert proton.context.depth(session) == 2
    proton.exit_scope("a")
    assert proton.context.depth(session) == 0


def test_exit_scope_names_the_scope_it_expected():
    proton.start("names")
    proton.enter_scope("a")
    with pytest.raises(ValueError, match=r"exit_scope\('b'\): the scope entered last is 'a'"):
        proton.exit_scope("b")
    proton.exit_scope("a")
    with pytest.raises(ValueError, match="no scope entered with enter_scope is open"):
        proton.exit_scope()


def test_cpu_timed_scope_records_host_time_as_an_exclusive_metric(tmp_path):
    proton.start("cpu")
    with proton.cpu_timed_scope("outer"):
        with proton.cpu_timed_scope("inner"):
            _scale(1)
    proton.finalize()
    root, _ = _load(tmp_path / "cpu.hatchet")
    outer = _child(root, "outer")
    inner = _child(outer, "inner")
    assert outer["metrics"]["cpu_time (ns)"] >= inner["metrics"]["cpu_time (ns)"] > 0
    assert "cpu_time (ns)" not in root["metrics"]
    with pytest.raises(ValueError, match="'cpu_time' is reserved"):
        proton.cpu_timed_scope("x", {"cpu_time": 1})


def test_a_state_is_the_last_frame_of_what_is_recorded_while_it_is_set(tmp_path):
    proton.start("state", hook="triton")
    with proton.scope("test0"):
        with proton.state("warm"):
            _scale(1)
            proton.enter_scope("test1", metrics={"a": 1.0})
            proton.exit_scope()
    proton.finalize()
    root, _ = _load(tmp_path / "state.hatchet")
    assert _child(root, "test0", "warm", f"scale [n={N}]")["metrics"]["count"] == 1
    assert _child(root, "test0", "test1", "warm")["metrics"]["a"] == 1.0


def test_the_python_context_records_the_callers_frames(tmp_path):
    proton.start("python", context="python", hook="triton")
    _scale(1)
    proton.finalize()
    root, _ = _load(tmp_path / "python.hatchet")
    path, node = [], root
    while node["children"]:
        node = node["children"][0]
        path.append(node["frame"]["name"])
    assert path[-1] == f"scale [n={N}]" and node["metrics"]["count"] == 1
    frames = path[:-1]
    assert frames and all(re.fullmatch(r".+:\d+@.+", frame) for frame in frames)
    assert frames[-1].endswith("@_scale") and any("@test_the_python_context" in frame for frame in frames)
    assert not any("/tritone/" in frame for frame in frames)


def test_profile_decorator_starts_a_session_per_call(tmp_path):
    @proton.profile(name=str(tmp_path / "decorated"), hook="triton")
    def work():
        _scale(2)
        return 7

    assert work() == 7
    assert recorder.sessions and not recorder.active  # deactivated after the call, written by finalize
    proton.finalize()
    assert _child(_load(tmp_path / "decorated.hatchet")[0], f"scale [n={N}]")["metrics"]["count"] == 2

    @proton.profile
    def bare():
        return 1

    assert bare() == 1
    proton.finalize()
    assert (tmp_path / "proton.hatchet").exists()


@pytest.mark.parametrize("arguments, message", [
    ({"backend": "roctracer"}, "backend='roctracer' is not supported"),
    ({"backend": "instrumentation"}, "backend='instrumentation' is not supported"),
    ({"data": "trace"}, "data='trace' is not supported"),
    ({"mode": "pcsampling"}, "mode='pcsampling' is not supported"),
    ({"context": "thread"}, "context='thread' is not supported"),
    ({"hook": "launch"}, "hook='launch' is not supported"),
])
def test_unsupported_start_arguments_are_refused_by_name(arguments, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        proton.start("refused", **arguments)
    with pytest.raises(ValueError, match=re.escape(message)):
        proton.profile(**arguments)
    assert not recorder.sessions


def test_unknown_sessions_and_formats_are_refused():
    session = proton.start("known")
    with pytest.raises(ValueError, match=f"Session has not been initialized: {session + 1}"):
        proton.activate(session + 1)
    with pytest.raises(ValueError, match=f"Session has not been initialized: {session + 1}"):
        proton.deactivate(session + 1)
    with pytest.raises(ValueError, match="output_format='chrome_trace' is not supported"):
        proton.finalize(output_format="chrome_trace")
    proton.finalize(session, output_format="hatchet")


# ---------------------------------------------------------------- CUDA events, on a simulated driver

_INVALID_HANDLE = 400


class SimulatedEvents:
    """A CUDA driver whose events read a GPU clock that advances `step` ns per
    recording; counts creations and synchronizations."""

    def __init__(self, step: int = 2500):
        self.step = step
        self.clock = 0
        self.events: dict[int, int | None] = {}  # handle -> recorded time (ns)
        self.next_event = 0x100
        self.context: int | None = None
        self.synchronized: list[int] = []
        self.destroyed: list[int] = []
        target = SimulatedLibrary.target
        attributes = {DeviceAttribute.COMPUTE_CAPABILITY_MAJOR: 9, DeviceAttribute.MULTIPROCESSOR_COUNT: 132}

        def store(out, value) -> int:
            target(out).value = value
            return 0

        def name(buffer, size, device) -> int:
            buffer.value = b"Simulated GPU"
            return 0

        self.library = SimulatedLibrary({
            "cuInit": lambda flags: 0,
            "cuDeviceGet": lambda out, ordinal: store(out, ordinal),
            "cuDeviceGetName": name,
            "cuDeviceGetAttribute": lambda out, attribute, device: store(out, attributes.get(attribute, 0)),
            "cuDeviceTotalMem_v2": lambda out, device: store(out, 1 << 34),
            "cuDevicePrimaryCtxRetain": lambda out, device: store(out, 0xC0 + device),
            "cuCtxGetCurrent": lambda out: store(out, self.context),
            "cuCtxSetCurrent": self._set_current,
            "cuCtxGetDevice": lambda out: store(out, 0),
            "cuEventCreate": self._create,
            "cuEventRecord": self._record,
            "cuEventSynchronize": self._synchronize,
            "cuEventElapsedTime": self._elapsed,
            "cuEventDestroy_v2": lambda event: self.destroyed.append(event) or 0,
            "cuGetErrorName": lambda code, out: 1,
            "cuGetErrorString": lambda code, out: 1,
        })
        self.driver = CudaDriver(self.library, "/simulated/libcuda.so.1")

    def _set_current(self, context) -> int:
        self.context = context
        return 0

    def _create(self, out, flags) -> int:
        if not self.context:
            return _INVALID_HANDLE
        self.next_event += 1
        self.events[self.next_event] = None
        SimulatedLibrary.target(out).value = self.next_event
        return 0

    def _record(self, event, stream) -> int:
        self.clock += self.step
        self.events[event] = self.clock
        return 0

    def _synchronize(self, event) -> int:
        self.synchronized.append(event)
        return 0

    def _elapsed(self, out, start, end) -> int:
        ctypes.cast(out, ctypes.POINTER(ctypes.c_float))[0] = (self.events[end] - self.events[start]) / 1e6
        return 0

    @property
    def created(self) -> int:
        return len(self.events)


@pytest.fixture
def simulated_events(monkeypatch):
    simulated = SimulatedEvents()
    monkeypatch.setattr(driver_api, "_driver", simulated.driver)
    monkeypatch.setattr(cuda_driver, "_devices", {})
    timer = CudaEventTimer(simulated.driver)
    monkeypatch.setattr(recorder, "timer", lambda: timer)
    return simulated


def test_cuda_events_are_read_only_when_the_session_stops(simulated_events, tmp_path):
    session = proton.start("events", hook="triton")
    _scale(3)
    with proton.scope("library call", {"flops16": 10.0}):
        pass
    assert simulated_events.synchronized == []  # launches and scopes never wait for the GPU
    assert len(recorder.pending) == 4 and simulated_events.created == 8
    proton.deactivate(session)
    assert len(simulated_events.synchronized) == 4 and not recorder.pending
    proton.activate(session)
    _scale(3)
    assert simulated_events.created == 8  # the events were given back and are recorded again
    proton.finalize()
    root, devices = _load(tmp_path / "events.hatchet")
    kernel = _child(root, f"scale [n={N}]")["metrics"]
    assert kernel["time (ns)"] == 6 * 2500 and kernel["count"] == 6 and kernel["device_type"] == "CUDA"
    library = _child(root, "library call")["metrics"]
    assert library["time (ns)"] == 2500 and library["count"] == 1 and library["flops16"] == 10.0
    record = devices["CUDA"]["0"]
    assert record["arch"] == "90" and record["num_sms"] == 132 and "CUDA events" in record["timing"]
    assert simulated_events.destroyed  # no session left: the free events are destroyed


def test_many_pending_intervals_read_the_older_half(simulated_events, monkeypatch, tmp_path):
    monkeypatch.setattr(_recorder, "PENDING_LIMIT", 8)
    proton.start("many")
    _scale(7)
    assert len(recorder.pending) == 7 and not simulated_events.synchronized
    _scale(1)
    assert len(recorder.pending) == 4 and len(simulated_events.synchronized) == 4
    proton.finalize()
    assert _child(_load(tmp_path / "many.hatchet")[0], "scale_kernel")["metrics"]["count"] == 8


# ---------------------------------------------------------------- the viewer


def _node(name: str, metrics: dict, children: list | None = None) -> dict:
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": children or []}


def _write_profile(tmp_path) -> str:
    """A profile in Proton's form: two kernels under a scope, one beside it, a
    frame of Proton's launch metadata and an empty frame (both left out)."""
    kernels = [
        _node("gemm", {"count": 4, "time (ns)": 2_000_000, "flops16": 8e12, "bytes": 4e9, "device_id": "0",
                       "device_type": "CUDA"}),
        _node("epilogue", {"count": 4, "time (ns)": 500_000, "bytes": 1e9, "device_id": "0", "device_type": "CUDA"}),
    ]
    root = _node("ROOT", {"bytes": 0, "count": 0, "flops16": 0, "time (ns)": 0}, [
        _node("layer", {"flops16": 2e12, "cpu_time (ns)": 123}, kernels),
        _node("softmax", {"count": 1, "time (ns)": 1_500_000, "bytes": 6e9, "device_id": "0", "device_type": "CUDA"}),
        _node(_recorder.LAUNCH_METADATA_STATE, {}, [_node("helper", {"count": 1, "time (ns)": 10})]),
        _node("empty", {}),
    ])
    device = {"CUDA": {"0": {"arch": "90", "num_sms": 132, "clock_rate": 1980000, "memory_clock_rate": 2619000,
                             "bus_width": 5120}}}
    path = tmp_path / "hand.hatchet"
    path.write_text(json.dumps([root, device]), encoding="utf-8")
    return str(path)


def test_read_sums_inclusive_metrics_and_keeps_exclusive_ones(tmp_path):
    profile = viewer.read(_write_profile(tmp_path))
    assert [frame.name for frame in profile.root.children] == ["layer", "softmax"]
    assert profile.inclusive_metrics == ["bytes", "count", "flops16", "time (ns)"]
    assert set(profile.exclusive_metrics) == {"cpu_time (ns)", "device_id", "device_type"}
    layer = profile.find("layer")
    assert layer.values["time (ns) (inc)"] == 2_500_000 and layer.values["flops16 (inc)"] == 10e12
    assert layer.values["count (inc)"] == 8 and layer.values["cpu_time (ns)"] == 123
    assert profile.root.values["time (ns) (inc)"] == 4_000_000 and profile.root.values["bytes (inc)"] == 11e9
    assert math.isnan(profile.find("layer", "epilogue").values["flops16 (inc)"])
    assert profile.device_info["CUDA"]["0"]["arch"] == "90"


def test_derived_metrics_from_known_counts(tmp_path):
    tree, columns = viewer.parse(["tflop16/s", "time/ms", "avg_time/us", "gbyte/s", "time/%", "count"],
                                 _write_profile(tmp_path))
    assert columns == ["tflop16/s (inc)", "time/ms (inc)", "avg_time/us (inc)", "gbyte/s (inc)", "time/% (inc)",
                       "count (inc)"]
    layer, gemm, softmax = tree.find("layer"), tree.find("layer", "gemm"), tree.find("softmax")
    # gemm: 8e12 flops in 2 ms is 4000 TFLOP/s; the layer adds its own 2e12 over 2.5 ms.
    assert gemm.values["tflop16/s (inc)"] == pytest.approx(4000.0)
    assert layer.values["tflop16/s (inc)"] == pytest.approx(10e12 / 2.5e-3 / 1e12)
    assert math.isnan(softmax.values["tflop16/s (inc)"])
    assert layer.values["time/ms (inc)"] == pytest.approx(2.5) and tree.root.values["time/ms (inc)"] == 4.0
    assert gemm.values["avg_time/us (inc)"] == pytest.approx(500.0)
    assert softmax.values["gbyte/s (inc)"] == pytest.approx(6e9 / 1.5e-3 / 1e9)
    assert softmax.values["time/% (inc)"] == pytest.approx(37.5) and tree.root.values["time/% (inc)"] == 100.0
    assert tree.root.values["count (inc)"] == 9


def test_rates_for_every_width_prefix_and_unit(tmp_path):
    path = tmp_path / "rates.hatchet"
    metrics = {"count": 2, "time (ns)": 1e9, "flops": 3e12, "bytes": 5e9,
               **{f"flops{width}": width * 1e12 for width in (8, 16, 32, 64)}}
    path.write_text(json.dumps([_node("ROOT", dict.fromkeys(metrics, 0), [_node("k", metrics)]), {}]))
    names = ["flop/s", "gflop/s", "tflop/s", "byte/s", "gbyte/s", "tbyte/s", "time/s", "time/us", "time/ns",
             "avg_time/ms", "avg_time/s"] + [f"{p}flop{w}/s" for p in ("", "g", "t") for w in (8, 16, 32, 64)]
    tree, columns = viewer.parse(names, str(path))
    values = dict(zip(names, (tree.find("k").values[column] for column in columns)))
    expected = {"flop/s": 3e12, "gflop/s": 3e3, "tflop/s": 3.0, "byte/s": 5e9, "gbyte/s": 5.0, "tbyte/s": 5e-3,
                "time/s": 1.0, "time/us": 1e6, "time/ns": 1e9, "avg_time/ms": 500.0, "avg_time/s": 0.5}
    for prefix, scale in (("", 1.0), ("g", 1e9), ("t", 1e12)):
        expected.update({f"{prefix}flop{width}/s": width * 1e12 / scale for width in (8, 16, 32, 64)})
    assert values == pytest.approx(expected)


def test_unknown_and_underivable_metrics_name_what_is_known(tmp_path):
    path = _write_profile(tmp_path)
    with pytest.raises(ValueError, match=r"metric 'tflops/s': unknown metric\. Derived metrics: time/s, .*tflop16/s"):
        viewer.parse(["tflops/s"], path)
    with pytest.raises(ValueError, match=r"'tflop8/s': it needs the metric 'flops8'.*metrics of the profile: bytes"):
        viewer.parse(["tflop8/s"], path)
    with pytest.raises(ValueError, match="'util' is not offered"):
        viewer.parse(["util"], path)
    with pytest.raises(ValueError, match="unknown metric"):
        viewer.parse(["nothing"], path)


def test_print_tree_orders_children_by_the_first_metric(tmp_path, capsys):
    tree, columns = viewer.parse(["time/ms", "tflop16/s"], _write_profile(tmp_path))
    viewer.print_tree(tree, columns)
    assert capsys.readouterr().out.splitlines() == [
        "4.000 2500.000 ROOT",
        "├─ 2.500 4000.000 layer",
        "│  ├─ 2.000 4000.000 gemm",
        "│  └─ 0.500 nan epilogue",
        "└─ 1.500 nan softmax",
    ]
    viewer.print_tree(tree, columns, depth=2, print_sorted=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["4.000 2500.000 ROOT", "├─ 2.500 4000.000 layer", "└─ 1.500 nan softmax"]
    assert lines[3] == "Sorted kernels by metric time/ms (inc)"
    assert [line.split()[0] for line in lines[4:]] == ["layer", "gemm", "softmax", "epilogue"]


def test_filters_keep_matching_paths(tmp_path):
    path = _write_profile(tmp_path)
    tree, _ = viewer.parse(["time/ms"], path, include="gemm")
    assert [(frame.name, depth) for frame, depth in tree.root.walk()] == [("ROOT", 0), ("layer", 1), ("gemm", 2)]
    tree, _ = viewer.parse(["time/ms"], path, exclude="lay.*")
    assert [frame.name for frame in tree.frames()] == ["ROOT", "softmax"]
    tree, _ = viewer.parse(["time/ms"], path, threshold=1.0)
    assert [frame.name for frame in tree.frames()] == ["ROOT", "layer", "gemm", "softmax"]
    assert viewer.format_name("/home/u/test.py:12@foo", "file_function_line") == "test.py:12@foo"
    assert viewer.format_name("/home/u/test.py:12@foo", "function_line") == "12@foo"
    assert viewer.format_name("/home/u/test.py:12@foo", "file_function") == "test.py@foo"


def test_the_command_line_viewer(tmp_path, capsys):
    path = _write_profile(tmp_path)
    assert viewer.main(["-m", "time/ms", "-d", "2", path]) == 0
    assert capsys.readouterr().out.splitlines() == ["4.000 ROOT", "├─ 2.500 layer", "└─ 1.500 softmax"]
    assert viewer.main(["-l", path]) == 0
    assert "- flops16" in capsys.readouterr().out
    assert viewer.main(["-m", "bogus/s", path]) == 1
    assert "unknown metric" in capsys.readouterr().err


def test_the_session_file_reads_back_in_the_viewer(tmp_path):
    proton.start("roundtrip", hook="triton")
    with proton.scope("layer", {"flops32": 1.0}):
        _scale(2)
    proton.finalize()
    tree, columns = viewer.parse(["gflop32/s", "avg_time/ns", "count"], str(tmp_path / "roundtrip.hatchet"))
    kernel = tree.find("layer", f"scale [n={N}]")
    expected = 2 * 2.0 * N / (kernel.metrics["time (ns)"] * 1e-9) / 1e9
    assert kernel.values[columns[0]] == pytest.approx(expected)
    assert kernel.values[columns[1]] == pytest.approx(kernel.metrics["time (ns)"] / 2)
    assert tree.find("layer").values[columns[2]] == 2


# ---------------------------------------------------------------- on a GPU


@pytest.mark.gpu
def test_cuda_events_time_kernels_on_the_gpu(monkeypatch, tmp_path):
    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    delattr(knobs.runtime, "interpret")
    sites.reset_active_target()
    assert sites.active_target().backend == "cuda", sites.gpu_unavailable_reason()
    from tritone.backends.cuda.device_array import KernelMemory

    n = 1 << 22
    source = np.random.default_rng().random(n, dtype=np.float32)
    with KernelMemory() as memory:
        x, out = memory.put(source), memory.put(np.full(n, np.nan, dtype=np.float32))
        scale_kernel[(n // 1024,)](x, out, n, BLOCK=1024)  # compiled outside the session
        proton.start("gpu", hook="triton")
        with proton.scope("triton"):
            for _ in range(20):
                scale_kernel[(n // 1024,)](x, out, n, BLOCK=1024)
        assert len(recorder.pending) == 20  # no event was read yet: launches did not wait
        if torch.cuda.is_available():
            a = torch.randn(2048, 2048, device="cuda")
            with proton.scope("torch", {"flops32": 2.0 * 2048**3}):
                a @ a
        proton.finalize()
        np.testing.assert_array_equal(memory.get(out), 2 * source)
    root, devices = _load(tmp_path / "gpu.hatchet")
    kernel = _child(root, "triton", f"scale [n={n}]")["metrics"]
    assert kernel["count"] == 20 and kernel["time (ns)"] > 0 and kernel["device_type"] == "CUDA"
    assert kernel["flops32"] == 20 * 2.0 * n
    major, minor = driver_api.driver().device(0).capability
    assert devices["CUDA"]["0"]["arch"] == f"{major}{minor}"
    if torch.cuda.is_available():
        library = _child(root, "torch")["metrics"]
        assert library["count"] == 1 and library["time (ns)"] > 0
    assert not knobs.runtime.launch_enter_hook
