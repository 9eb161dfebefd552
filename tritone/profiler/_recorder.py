"""What profiling sessions record, and how: the sessions and their trees, the
scope stack of each thread, the launch hooks and the intervals waiting to be
timed. `profile.py`, `scope.py`, `state.py` and `context.py` are the public
face of the one `recorder` defined here.

A session's tree has a node per distinct path: with the "shadow" context a
path is the names of the scopes open on the thread (then the state, if one is
set), with the "python" context it is the Python frames of the caller
(`file:line@function`, tritone's own frames left out). A kernel launched by
tritone adds its name to the path of the moment.

Timing. Each launch of a tritone kernel while a session is active is an
interval: a mark before and a mark after the launch (`_timers`). So is each
scope inside which no tritone kernel launched (a cuBLAS or torch call, say):
its GPU time is the time between its enter and exit on the current stream,
less that of the scopes measured inside it. Marks are not read when taken:
intervals wait in `pending` until a session is deactivated or finalized, or
until `PENDING_LIMIT` of them wait, when the older half is read.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import knobs
from ..backends import sites
from ..compiler.compiler import LazyDict
from ..knobs import HookChain
from ._timers import CudaEventTimer, HostTimer

# The state kernels launched by a kernel's `launch_metadata` function are recorded
# under (Proton's name for it, which its viewer leaves out).
LAUNCH_METADATA_STATE = "__proton_launch_metadata"
# The entries of a kernel's launch metadata that become metrics of its node.
LAUNCH_METRICS = ("flops8", "flops16", "flops32", "flops64", "flops", "bytes")
# Metric names of the measured intervals.
TIME_METRIC = "time (ns)"
COUNT_METRIC = "count"
# How many intervals may wait to be read before the older half is read.
PENDING_LIMIT = 8192

_PACKAGE_FOLDER = str(Path(__file__).parent.parent) + os.sep
# The file names of the code tritone generates per kernel (dispatch.py, specialize.py,
# launch_plan.py): its frames are tritone's own, like those of the package's files.
_GENERATED_CODE = re.compile(r"<(dispatcher|binder|key binder|launcher) of ")


class Node:
    """One frame of a session's tree and the metrics recorded on it."""

    __slots__ = ("name", "children", "metrics")

    def __init__(self, name: str):
        self.name = name
        self.children: dict[str, Node] = {}
        self.metrics: dict[str, Any] = {}

    def child(self, name: str) -> Node:
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = Node(name)
        return node

    def add(self, name: str, value: Any, replace: bool = False) -> None:
        """Sum `value` into the metric `name`; strings and properties replace it."""
        current = self.metrics.get(name)
        if current is None or replace or isinstance(value, str) or isinstance(current, str):
            self.metrics[name] = value
        else:
            self.metrics[name] = current + value

    def literal(self) -> dict[str, Any]:
        """The node in hatchet's literal format, children in name order as Proton writes them."""
        return {"frame": {"name": self.name, "type": "function"}, "metrics": dict(self.metrics),
                "children": [self.children[name].literal() for name in sorted(self.children)]}


def metric_kind(raw: str) -> tuple[str, str]:
    """`(name, kind)` of a user metric name: "a (exc)" is exclusive (summed on
    its node, not into its parents), "a (pty)" a property (replaced, not summed),
    anything else inclusive."""
    name = raw.strip()
    for suffix, kind in (("(exc)", "exclusive"), ("(pty)", "property")):
        if name.endswith(suffix):
            return name[:-len(suffix)].strip(), kind
    return name, "inclusive"


class Session:
    """One profiling session: its tree, whether it records now, and where it is written."""

    def __init__(self, session_id: int, name: str, context: str, launch_metadata: bool):
        self.id = session_id
        self.name = name
        self.context = context
        # hook="triton": a launch's node is named by its launch metadata and gets
        # its flops and bytes; without it, by the kernel's name alone.
        self.launch_metadata = launch_metadata
        self.active = True
        self.root = Node("ROOT")
        # Names the root lists: those the viewer sums over subtrees.
        self.inclusive = {COUNT_METRIC, TIME_METRIC}
        self.devices: dict[tuple[str, int], Any] = {}  # (device type, ordinal) -> its timer
        self._nodes: dict[tuple[str, ...], Node] = {(): self.root}

    @property
    def path(self) -> str:
        """The file finalize writes (Proton appends the format to the name)."""
        return f"{self.name}.hatchet"

    def node(self, path: tuple[str, ...]) -> Node:
        node = self._nodes.get(path)
        if node is None:
            node = self._nodes[path] = self.node(path[:-1]).child(path[-1])
        return node

    def add_metrics(self, node: Node, metrics: Mapping[str, Any]) -> None:
        for raw, value in metrics.items():
            name, kind = metric_kind(raw)
            if kind == "inclusive":
                self.inclusive.add(name)
            node.add(name, value, replace=kind == "property")

    def add_time(self, node: Node, elapsed_ns: int, timer: Any, device: int) -> None:
        node.add(TIME_METRIC, elapsed_ns)
        node.add(COUNT_METRIC, 1)
        node.add("device_id", str(device), replace=True)
        node.add("device_type", timer.device_type, replace=True)
        self.devices[(timer.device_type, device)] = timer

    def hatchet(self) -> list[dict[str, Any]]:
        """The tree as Proton writes it: the root node, whose metrics name every
        inclusive metric (value 0), then the devices the times were measured on."""
        root = self.root.literal()
        root["metrics"] = dict.fromkeys(sorted(self.inclusive), 0)
        devices: dict[str, dict[str, Any]] = {}
        for (device_type, ordinal), timer in sorted(self.devices.items(), key=lambda item: item[0]):
            devices.setdefault(device_type, {})[str(ordinal)] = timer.describe(ordinal)
        return [root, devices]

    def write(self) -> None:
        text = json.dumps(self.hatchet(), indent=4)
        if self.name in ("", "-"):
            print(text)
        else:
            Path(self.path).write_text(text + "\n", encoding="utf-8")


class Interval:
    """A span to time on one stream: a kernel's launch or a scope without tritone
    kernels. `targets` are the (session, node) pairs its time goes to; `nested`
    the intervals of scopes measured directly inside it, whose time is its
    children's, not its own."""

    __slots__ = ("timer", "device", "stream", "start", "end", "targets", "nested", "elapsed_ns")

    def __init__(self, timer: Any, device: int, stream: Any, targets: list[tuple[Session, Node]]):
        self.timer = timer
        self.device = device
        self.stream = stream
        self.start = timer.mark(stream)
        self.end: Any = None
        self.targets = targets
        self.nested: list[Interval] = []
        self.elapsed_ns = 0


class OpenScope:
    """A scope entered on this thread and not yet exited."""

    __slots__ = ("name", "targets", "interval", "launched", "cpu_start")

    def __init__(self, name: str):
        self.name = name
        self.targets: list[tuple[Session, Node]] = []
        self.interval: Interval | None = None
        self.launched = False  # a tritone kernel launched inside (then its kernels are timed, not the scope)
        self.cpu_start: int | None = None


class _ThreadState(threading.local):
    def __init__(self):
        self.scopes: list[OpenScope] = []
        self.state: str | None = None
        self.launch: Interval | None = None


class Recorder:
    """Every session of the process and what they are recording."""

    def __init__(self):
        self.sessions: dict[int, Session] = {}
        self.active: tuple[Session, ...] = ()
        self.pending: list[Interval] = []
        self.next_id = 0
        self.thread = _ThreadState()
        self._lock = threading.RLock()
        self._hooks_installed = False
        self._host_timer = HostTimer()
        self._cuda_timer: CudaEventTimer | None = None
        self._timers_used: set[Any] = set()  # whose free events go when the last session does

    # ---------------------------------------------------------------- sessions

    def start(self, name: str, context: str, launch_metadata: bool) -> int:
        with self._lock:
            session = Session(self.next_id, name, context, launch_metadata)
            self.next_id += 1
            self.sessions[session.id] = session
            self._update_active()
            return session.id

    def _chosen(self, session: int | None) -> list[Session]:
        if session is None:
            return list(self.sessions.values())
        found = self.sessions.get(session)
        if found is None:
            raise ValueError(f"Session has not been initialized: {session} (sessions now: "
                             f"{sorted(self.sessions) or 'none'})")
        return [found]

    def activate(self, session: int | None) -> None:
        with self._lock:
            for chosen in self._chosen(session):
                chosen.active = True
            self._update_active()

    def deactivate(self, session: int | None) -> None:
        with self._lock:
            for chosen in self._chosen(session):
                chosen.active = False
            self._update_active()
        self.resolve()

    def finalize(self, session: int | None) -> None:
        if session is not None and session not in self.sessions:
            return  # as Proton: finalizing a session twice, or one never started, does nothing
        with self._lock:
            chosen = self._chosen(session)
            for finished in chosen:
                finished.active = False
            self._update_active()
        self.resolve()
        with self._lock:
            for finished in chosen:
                self.sessions.pop(finished.id, None)
            if not self.sessions:
                for timer in self._timers_used:
                    timer.close()
                self._timers_used.clear()
        for finished in chosen:
            finished.write()

    def _update_active(self) -> None:
        """Recompute the active sessions; the launch hooks are installed exactly
        while one is, so that launches outside sessions take the fast path."""
        self.active = tuple(session for session in self.sessions.values() if session.active)
        if self.active and not self._hooks_installed:
            _hook_chain("launch_enter_hook", reversed=False).add(self.launch_enter)
            _hook_chain("launch_exit_hook", reversed=True).add(self.launch_exit)
            self._hooks_installed = True
        elif not self.active and self._hooks_installed:
            for attribute, hook in (("launch_enter_hook", self.launch_enter), ("launch_exit_hook", self.launch_exit)):
                chain = getattr(knobs.runtime, attribute)
                if isinstance(chain, HookChain):
                    chain.remove(hook)
            self._hooks_installed = False

    # ---------------------------------------------------------------- timers and paths

    def timer(self) -> Any:
        """The timer of where kernels run now: CUDA events on a GPU, else the host clock."""
        if sites.active_target().backend != "cuda":
            return self._host_timer
        if self._cuda_timer is None:
            self._cuda_timer = CudaEventTimer()
        return self._cuda_timer

    def _path(self, session: Session, leaf: str | None) -> tuple[str, ...]:
        """The path of a node made now: the open scopes' names (or the caller's
        Python frames), the state, then `leaf` (a kernel's name)."""
        thread = self.thread
        if session.context == "python":
            path = python_frames()
        else:
            path = tuple(scope.name for scope in thread.scopes)
        if thread.state is not None:
            path += (thread.state,)
        return path + (leaf,) if leaf is not None else path

    def depth(self, session: int) -> int:
        found = self._chosen(session)[0]
        return len(python_frames()) if found.context == "python" else len(self.thread.scopes)

    # ---------------------------------------------------------------- launches

    def launch_enter(self, metadata: Any) -> None:
        """Launch hook: note the kernel's node in every active session and mark
        the stream before the launch."""
        sessions = self.active
        if not sessions:
            return
        thread = self.thread
        base = metadata.data if isinstance(metadata, LazyDict) else metadata
        kernel = str(base.get("name", "kernel"))  # read before the launch metadata may rename it
        stream = base.get("stream")
        if any(session.launch_metadata for session in sessions):
            # Kernels the launch_metadata function launches go under Proton's state for them.
            outer, thread.state = thread.state, LAUNCH_METADATA_STATE
            try:
                fields = metadata.get() if isinstance(metadata, LazyDict) else metadata
            finally:
                thread.state = outer
        else:
            fields = base
        name = str(fields.get("name", kernel))
        launch_metrics = {key: fields[key] for key in LAUNCH_METRICS if key in fields}
        with self._lock:
            targets = []
            for session in sessions:
                node = session.node(self._path(session, name if session.launch_metadata else kernel))
                if session.launch_metadata and launch_metrics:
                    session.add_metrics(node, launch_metrics)
                targets.append((session, node))
        if thread.scopes:
            thread.scopes[-1].launched = True
        if thread.launch is not None:
            # The last launch on this thread raised before its exit hook: its mark is free again.
            thread.launch.timer.recycle(thread.launch.start)
        timer = self.timer()
        device, current = timer.where()
        thread.launch = Interval(timer, device, current if stream is None else stream, targets)

    def launch_exit(self, metadata: Any) -> None:
        """Launch hook: mark the stream after the launch; the interval waits to be read."""
        interval, self.thread.launch = self.thread.launch, None
        if interval is None:
            return
        interval.end = interval.timer.mark(interval.stream)
        self._add_pending(interval)

    # ---------------------------------------------------------------- scopes and states

    def enter_scope(self, name: str, metrics: Mapping[str, Any] | None, cpu_timed: bool = False) -> OpenScope | None:
        """Open a scope on this thread (None when no session exists: nothing to record)."""
        if not self.sessions:
            return None
        scope = OpenScope(name)
        thread = self.thread
        thread.scopes.append(scope)
        sessions = self.active
        if not sessions:
            return scope
        with self._lock:
            for session in sessions:
                node = session.node(self._path(session, None))
                if metrics:
                    session.add_metrics(node, metrics)
                scope.targets.append((session, node))
        timer = self.timer()
        device, stream = timer.where()
        scope.interval = Interval(timer, device, stream, scope.targets)
        if cpu_timed:
            scope.cpu_start = HostTimer.mark()
        return scope

    def exit_scope(self, scope: OpenScope, metrics: Mapping[str, Any] | None = None) -> None:
        scopes = self.thread.scopes
        if not scopes or scopes[-1] is not scope:
            open_names = [open_scope.name for open_scope in scopes]
            raise RuntimeError(f"proton scope {scope.name!r} exited out of order: the scopes open on this thread "
                               f"are {open_names}, innermost last")
        scopes.pop()
        parent = scopes[-1] if scopes else None
        if scope.launched and parent is not None:
            parent.launched = True
        if scope.targets and (metrics or scope.cpu_start is not None):
            with self._lock:
                for session, node in scope.targets:
                    if metrics:
                        session.add_metrics(node, metrics)
                    if scope.cpu_start is not None:
                        session.add_metrics(node, {"cpu_time (ns)(exc)": HostTimer.mark() - scope.cpu_start})
        interval = scope.interval
        if interval is None:
            return
        if scope.launched:
            # Its tritone kernels have their own times; the span would count the gaps between them.
            interval.timer.recycle(interval.start)
            return
        interval.end = interval.timer.mark(interval.stream)
        if parent is not None and parent.interval is not None:
            parent.interval.nested.append(interval)
        self._add_pending(interval)

    def set_state(self, name: str | None) -> None:
        self.thread.state = name

    # ---------------------------------------------------------------- reading the intervals

    def _add_pending(self, interval: Interval) -> None:
        with self._lock:
            self.pending.append(interval)
            full = len(self.pending) >= PENDING_LIMIT
        if full:
            self.resolve(PENDING_LIMIT // 2)

    def resolve(self, count: int | None = None) -> None:
        """Read the first `count` pending intervals (all when None) and add their
        times to their nodes. An interval ends after those nested in it, so they
        were read first."""
        with self._lock:
            batch = self.pending[:count] if count is not None else self.pending
            self.pending = self.pending[len(batch):]
        for interval in batch:
            timer = interval.timer
            self._timers_used.add(timer)
            interval.elapsed_ns = timer.elapsed_ns(interval.start, interval.end)
            timer.recycle(interval.start)
            timer.recycle(interval.end)
        with self._lock:
            for interval in batch:
                own = max(0, interval.elapsed_ns - sum(inner.elapsed_ns for inner in interval.nested))
                interval.nested = []
                for session, node in interval.targets:
                    session.add_time(node, own, interval.timer, interval.device)


def _hook_chain(attribute: str, reversed: bool) -> HookChain:
    """`knobs.runtime.<attribute>` as a HookChain (a single callable assigned there
    becomes the first hook of a new chain)."""
    current = getattr(knobs.runtime, attribute)
    if isinstance(current, HookChain):
        return current
    chain = HookChain(reversed=reversed)
    if current is not None:
        chain.add(current)
    setattr(knobs.runtime, attribute, chain)
    return chain


def python_frames() -> tuple[str, ...]:
    """The caller's Python frames, outermost first, as Proton names them
    (`file:line@function`), tritone's own frames left out."""
    frames = []
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if not filename.startswith(_PACKAGE_FOLDER) and not _GENERATED_CODE.match(filename):
            frames.append(f"{filename}:{frame.f_lineno}@{code.co_name}")
        frame = frame.f_back
    return tuple(reversed(frames))


recorder = Recorder()
