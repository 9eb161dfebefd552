"""Read a profile (`.hatchet`, tritone's or Proton's), derive metrics, print the tree.

    tree, metrics = parse(["tflop16/s", "time/ms"], "matmul.hatchet")
    print_tree(tree, metrics)

    python -m triton.profiler.viewer -m tflop16/s,time/ms matmul.hatchet

Proton's viewer does this with the `hatchet` library (and pandas); this one
reads the same files with the standard library. The metrics the file's root
lists are inclusive: a frame's value is the sum over its subtree (named
"<metric> (inc)"); the others are exclusive, the frame's own. A frame with no
value in its whole subtree has NaN. Derived metrics, from inclusive sums:

- time/s, time/ms, time/us, time/ns: time; avg_time/<unit>: time / count;
  cpu_time/<unit>, avg_cpu_time/<unit> likewise from "cpu_time (ns)";
- flop/s, gflop/s, tflop/s (from "flops") and flop<w>/s, gflop<w>/s,
  tflop<w>/s for w in 8, 16, 32, 64 (from "flops<w>"): flops / time;
- byte/s, gbyte/s, tbyte/s: bytes / time;
- <metric>/%: a frame's share of the root's value (inclusive metrics) or of
  the sum over frames (exclusive ones);
- any metric of the file by its name, with or without its unit ("time").

`util` (Proton's fraction of peak) is not offered: it needs per-architecture
peak figures that tritone does not carry.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._recorder import LAUNCH_METADATA_STATE

TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
FLOP_WIDTHS = (8, 16, 32, 64)
RATE_PREFIXES = {"": 1.0, "g": 1e9, "t": 1e12}
FORMATS = ("full", "file_function_line", "function_line", "file_function")

_TIME_METRIC = re.compile(r"(avg_)?(cpu_)?time/(s|ms|us|ns)")
_RATE_METRIC = re.compile(r"(g|t)?(flop(8|16|32|64)?|byte)/s")


def derived_metric_names() -> list[str]:
    """Every derived metric name `parse` knows, besides "<metric>/%" and the file's own."""
    names = [f"{avg}{cpu}time/{unit}" for avg in ("", "avg_") for cpu in ("", "cpu_") for unit in TIME_UNITS]
    for prefix in RATE_PREFIXES:
        names += [f"{prefix}flop/s"] + [f"{prefix}flop{width}/s" for width in FLOP_WIDTHS] + [f"{prefix}byte/s"]
    return names


@dataclass
class Frame:
    """One node of a profile: its name, its metrics as the file has them, its
    children, and `values`, the columns computed by `read` and `derive_metrics`
    (metric name -> float, NaN where the frame has none)."""

    name: str
    metrics: dict[str, Any]
    children: list[Frame] = field(default_factory=list)
    values: dict[str, float] = field(default_factory=dict)

    def walk(self, depth: int = 0) -> Iterator[tuple[Frame, int]]:
        """`(frame, depth)` of this frame and its descendants, parents first."""
        yield self, depth
        for child in self.children:
            yield from child.walk(depth + 1)


@dataclass
class Profile:
    """What `read` and `parse` return: the tree (its root first), the metric
    names of the file (inclusive: those the root lists; exclusive: the others)
    and the devices record (the file's second element)."""

    root: Frame
    inclusive_metrics: list[str]
    exclusive_metrics: list[str]
    device_info: dict[str, Any]

    def frames(self) -> Iterator[Frame]:
        """Every frame, parents first."""
        return (frame for frame, _ in self.root.walk())

    def find(self, *path: str) -> Frame:
        """The frame at `path` below the root (names of frames, outermost first)."""
        frame = self.root
        for name in path:
            matches = [child for child in frame.children if child.name == name]
            if not matches:
                raise KeyError(f"no frame {name!r} under {frame.name!r}; its children: "
                               f"{[child.name for child in frame.children]}")
            frame = matches[0]
        return frame


# ---------------------------------------------------------------- reading


def _frame(literal: dict[str, Any], where: str) -> Frame | None:
    """A frame of the file and its children, without Proton's launch-metadata
    frames and without frames left with neither metrics nor children."""
    if not isinstance(literal, dict) or "frame" not in literal:
        raise ValueError(f"{where}: a node must be an object with a 'frame', got {str(literal)[:80]!r}")
    name = str(literal["frame"].get("name", ""))
    if name == LAUNCH_METADATA_STATE:  # kernels launched by launch_metadata functions: never shown
        return None
    children = [child for child in (_frame(node, where) for node in literal.get("children", [])) if child]
    metrics = dict(literal.get("metrics") or {})
    if not metrics and not children:
        return None
    return Frame(name, metrics, children)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


def _subtree_sum(frame: Frame, metric: str) -> float:
    """The sum of `metric` over the frame's subtree (NaN when no frame has it);
    stores it in each frame's values as "<metric> (inc)"."""
    own = _number(frame.metrics.get(metric))
    total = own
    for child in frame.children:
        part = _subtree_sum(child, metric)
        if not math.isnan(part):
            total = part if math.isnan(total) else total + part
    frame.values[f"{metric} (inc)"] = total
    return total


def read(filename: str) -> Profile:
    """The profile in `filename`, with the inclusive sums ("<metric> (inc)") and
    exclusive values ("<metric>") of every frame computed."""
    with open(filename, encoding="utf-8") as file:
        try:
            database = json.load(file)
        except json.JSONDecodeError as error:
            raise ValueError(f"{filename} is not a hatchet profile (JSON): {error}") from None
    if not isinstance(database, list) or not database:
        raise ValueError(f"{filename} is not a hatchet profile: expected a list whose first element is the root")
    root = _frame(database[0], filename)
    if root is None or not root.metrics and not root.children:
        raise ValueError(f"{filename} holds no metrics")
    device_info = database[1] if len(database) > 1 and isinstance(database[1], dict) else {}
    inclusive = list(database[0].get("metrics") or {})
    exclusive: dict[str, None] = {}
    for frame, _ in root.walk():
        exclusive.update((name, None) for name in frame.metrics if name not in inclusive)
    profile = Profile(root, inclusive, list(exclusive), device_info)
    for metric in inclusive:
        _subtree_sum(root, metric)
    for metric in exclusive:
        for frame in profile.frames():
            value = frame.metrics.get(metric)
            frame.values[metric] = value if isinstance(value, str) else _number(value)
    return profile


# ---------------------------------------------------------------- deriving


def _without_unit(metric: str) -> str:
    return metric.split("(")[0].strip().lower()


def match_metric(profile: Profile, metric: str) -> str:
    """The column of a metric of the file named with or without its unit, case
    ignored: "<name> (inc)" for an inclusive metric, the name for an exclusive one."""
    wanted = metric.strip().lower()
    for raw in profile.inclusive_metrics:
        if wanted in (raw.lower(), _without_unit(raw)):
            return f"{raw} (inc)"
    for raw in profile.exclusive_metrics:
        if wanted in (raw.lower(), _without_unit(raw)):
            return raw
    raise _unknown(profile, metric)


def _unknown(profile: Profile, metric: str, needs: str | None = None) -> ValueError:
    offered = ", ".join(derived_metric_names() + ["<metric>/%"])
    present = ", ".join(profile.inclusive_metrics + profile.exclusive_metrics) or "none"
    reason = f"it needs the metric {needs!r}, which the profile has not" if needs else "unknown metric"
    return ValueError(f"metric {metric!r}: {reason}. Derived metrics: {offered}; metrics of the profile: {present}")


def _seconds(profile: Profile, metric: str, source: str) -> Callable[[Frame], float]:
    """A frame's `source` time (e.g. "time" for "time (ns)") in seconds."""
    try:
        column = match_metric(profile, source)
    except ValueError:
        raise _unknown(profile, metric, needs=source) from None
    unit = column.split("(")[1].split(")")[0].strip() if "(" in column else ""
    if unit not in TIME_UNITS:
        raise ValueError(f"metric {metric!r}: the profile's {column!r} has no time unit (s, ms, us, ns)")
    scale = TIME_UNITS[unit]
    return lambda frame: _number(frame.values.get(column)) * scale


def _ratio(numerator: float, denominator: float) -> float:
    if math.isnan(numerator) or math.isnan(denominator) or denominator == 0:
        return math.nan
    return numerator / denominator


def derive_metrics(profile: Profile, metrics: Sequence[str]) -> list[str]:
    """Compute each metric's column on every frame; returns the column names
    ("tflop16/s (inc)", "time/ms (inc)", ...), in order."""
    columns = []
    for metric in metrics:
        wanted = metric.strip().lower()
        time_match = _TIME_METRIC.fullmatch(wanted)
        rate_match = _RATE_METRIC.fullmatch(wanted)
        if wanted == "util":
            raise ValueError("metric 'util' is not offered by tritone's viewer: it needs per-architecture peak "
                             "FLOP and bandwidth figures, which tritone does not carry")
        if time_match:
            average, cpu, unit = time_match.groups()
            seconds = _seconds(profile, metric, "cpu_time" if cpu else "time")
            count = match_metric(profile, "count") if average else None
            column = f"{wanted} (inc)"
            for frame in profile.frames():
                value = seconds(frame) / TIME_UNITS[unit]
                frame.values[column] = _ratio(value, frame.values.get(count, math.nan)) if count else value
        elif rate_match:
            prefix, quantity, width = rate_match.groups()
            source = "bytes" if quantity == "byte" else f"flops{width or ''}"
            seconds = _seconds(profile, metric, "time")
            try:
                source_column = match_metric(profile, source)
            except ValueError:
                raise _unknown(profile, metric, needs=source) from None
            column = f"{wanted} (inc)"
            for frame in profile.frames():
                amount = _number(frame.values.get(source_column))
                frame.values[column] = _ratio(amount, seconds(frame)) / RATE_PREFIXES[prefix or ""]
        elif wanted.endswith("/%"):
            source_column = match_metric(profile, wanted[:-2])
            inclusive = source_column.endswith("(inc)")
            if inclusive:
                total = _number(profile.root.values.get(source_column))
            else:
                present = [_number(frame.values.get(source_column)) for frame in profile.frames()]
                total = math.fsum(value for value in present if not math.isnan(value))
            column = f"{wanted} (inc)" if inclusive else wanted
            for frame in profile.frames():
                frame.values[column] = _ratio(_number(frame.values.get(source_column)), total) * 100.0
        elif "/" in wanted:
            raise _unknown(profile, metric)
        else:
            column = match_metric(profile, wanted)
        columns.append(column)
    return columns


# ---------------------------------------------------------------- filtering and formatting


def _squash(frame: Frame, keep: Callable[[Frame], bool]) -> list[Frame]:
    """The frames of `frame`'s subtree that `keep` accepts, each with its kept
    descendants as children (a dropped frame's kept descendants move up)."""
    children = [kept for child in frame.children for kept in _squash(child, keep)]
    if keep(frame):
        return [Frame(frame.name, frame.metrics, children, frame.values)]
    return children


def filter_frames(profile: Profile, include: str | None = None, exclude: str | None = None,
                  threshold: float | None = None, metric: str | None = None) -> Profile:
    """The profile with only the frames on paths through a frame whose name
    matches `include` (a regular expression, matched in full), without the
    frames matching `exclude` and their subtrees, and without the frames whose
    `metric` is below `threshold`. The root stays; values are not recomputed."""
    root = profile.root
    if include:
        pattern = re.compile(include)
        on_path: set[int] = set()

        def mark(frame: Frame, above: bool) -> bool:
            matched = above or bool(pattern.fullmatch(frame.name))
            below = [mark(child, matched) for child in frame.children]
            if matched or any(below):
                on_path.add(id(frame))
                return True
            return False

        mark(root, False)
        root = _squash(root, lambda frame: frame is profile.root or id(frame) in on_path)[0]
    if exclude:
        pattern = re.compile(exclude)

        def without(frame: Frame) -> Frame:
            kept = [without(child) for child in frame.children if not pattern.fullmatch(child.name)]
            return Frame(frame.name, frame.metrics, kept, frame.values)

        root = without(root)
    if threshold is not None and metric is not None:
        top = root
        root = _squash(root, lambda frame: frame is top or frame.values.get(metric, math.nan) >= threshold)[0]
    return Profile(root, profile.inclusive_metrics, profile.exclusive_metrics, profile.device_info)


def format_name(name: str, format: str | None) -> str:
    """A frame name (`/path/file.py:12@function` for Python frames) in one of
    FORMATS: "full" (as is), "file_function_line" (`file.py:12@function`),
    "function_line" (`12@function`), "file_function" (`file.py@function`)."""
    if format in (None, "full"):
        return name
    if format not in FORMATS:
        raise ValueError(f"format {format!r} is not one of {', '.join(FORMATS)}")
    if format == "file_function_line":
        return name.split("/")[-1]
    if format == "function_line":
        return name.split(":")[-1]
    file = name.split("/")[-1].split(":")[0]
    return f"{file}@{name.split('@')[-1].split(':')[0]}"


def parse(metrics: Sequence[str] | str, filename: str, include: str | None = None, exclude: str | None = None,
          threshold: float | None = None) -> tuple[Profile, list[str]]:
    """Read `filename`, derive `metrics` and filter its frames (`filter_frames`,
    the threshold applying to the first metric): returns `(tree, columns)` for
    `print_tree`."""
    if isinstance(metrics, str):
        metrics = [metrics]
    if not metrics:
        raise ValueError("parse needs at least one metric name")
    profile = read(filename)
    columns = derive_metrics(profile, metrics)
    return filter_frames(profile, include, exclude, threshold, columns[0]), columns


def _sort_key(metric: str) -> Callable[[Frame], tuple]:
    def key(frame: Frame) -> tuple:
        value = frame.values.get(metric, math.nan)
        number = value if isinstance(value, (int, float)) else math.nan
        return (math.isnan(number), -number if not math.isnan(number) else 0.0, frame.name)

    return key


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return f"{value:.3f}"


def tree_lines(tree: Profile, metrics: Sequence[str], depth: int = 100, format: str | None = None) -> list[str]:
    """The lines `print_tree` prints: each frame's metric values then its name,
    children below their parent ordered by the first metric, largest first."""
    lines = []
    key = _sort_key(metrics[0])

    def visit(frame: Frame, level: int, indent: str, child_indent: str) -> None:
        if level >= depth:
            return
        values = " ".join(_text(frame.values.get(metric, math.nan)) for metric in metrics)
        lines.append(f"{indent}{values} {format_name(frame.name, format)}")
        children = sorted(frame.children, key=key)
        for index, child in enumerate(children):
            last = index == len(children) - 1
            visit(child, level + 1, child_indent + ("└─ " if last else "├─ "),
                  child_indent + ("   " if last else "│  "))

    visit(tree.root, 0, "", "")
    return lines


def print_tree(tree: Profile, metrics: Sequence[str], depth: int = 100, format: str | None = None,
               print_sorted: bool = False) -> None:
    """Print the tree `parse` returned with the columns it returned; with
    `print_sorted`, then every frame but the root by the first metric, largest first."""
    print("\n".join(tree_lines(tree, metrics, depth, format)))
    if print_sorted:
        print(f"Sorted kernels by metric {metrics[0]}")
        for frame in sorted((frame for frame in tree.frames() if frame is not tree.root), key=_sort_key(metrics[0])):
            name = format_name(frame.name, format)
            shown = name[:100] + "..." if len(name) > 100 else name
            print(f"{shown:105} {_text(frame.values.get(metrics[0], math.nan))}")


def show_metrics(filename: str) -> None:
    """Print the metrics of a profile, without their units."""
    profile = read(filename)
    print("Available inclusive metrics:")
    for metric in profile.inclusive_metrics:
        print(f"- {_without_unit(metric)}")
    print("Available exclusive metrics:")
    for metric in profile.exclusive_metrics:
        print(f"- {_without_unit(metric)}")


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m triton.profiler.viewer [-m METRICS] [-l] ... FILE`."""
    parser = argparse.ArgumentParser(description="Print a profile (.hatchet) written by triton.profiler.",
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("file", help="the .hatchet file")
    parser.add_argument("-l", "--list", action="store_true", help="list the metrics of the file")
    parser.add_argument("-m", "--metrics", default="time/s",
                        help="metrics to show, separated by commas (default time/s); derived ones:\n"
                             + ", ".join(derived_metric_names()) + ", <metric>/%%")
    parser.add_argument("-i", "--include", help="show only paths through frames matching this regular expression")
    parser.add_argument("-e", "--exclude", help="leave out frames matching this regular expression, and below")
    parser.add_argument("-t", "--threshold", type=float, help="leave out frames whose first metric is below this")
    parser.add_argument("-d", "--depth", type=int, default=100, help="how many levels to show")
    parser.add_argument("-f", "--format", choices=FORMATS, default="full", help="how to show Python frame names")
    parser.add_argument("--print-sorted", action="store_true", help="also list the frames by the first metric")
    arguments = parser.parse_args(argv)
    if arguments.include and arguments.exclude:
        parser.error("give --include or --exclude, not both")
    try:
        if arguments.list:
            show_metrics(arguments.file)
            return 0
        tree, columns = parse(arguments.metrics.split(","), arguments.file, arguments.include, arguments.exclude,
                              arguments.threshold)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print_tree(tree, columns, arguments.depth, arguments.format, arguments.print_sorted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
