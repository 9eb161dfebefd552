"""Conformance runner: upstream Triton's own tests and tutorials, run once with
upstream Triton answering `import triton` and once with tritone answering, side
by side, on the same machine in the same session.

    python tools/conformance.py --tests /path/to/triton/python/test \\
        --tutorials /path/to/triton/python/tutorials --device cuda --out conformance-out

Each side of each test file runs in its own `python -m pytest` subprocess from
the tests folder (upstream's conftest.py must be there: it adds `--device`), with
`TRITONE_AS_TRITON=1` for the tritone column and `TRITONE_AS_TRITON=0` for the
upstream column (the switch of tritone's `import triton` startup hook). Results
are collected per test id by the `conformance_log` plugin beside this file.
`--device cpu` also sets `TRITON_INTERPRET=1` on both sides, so the upstream
column is Triton's own interpreter.

A test that passes upstream but not under tritone is a regression, unless a
pattern of docs/CONFORMANCE.md (section "Known differences") names it: then it
counts as an expected difference. Tutorials run as `python <file>` with
`MPLBACKEND=Agg` and count pass or fail with their wall time.

Exit status: 0 when there is no regression, 1 when there is one, 2 when a side
cannot run at all (for instance `import triton` answers with the wrong package).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

TOOLS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TOOLS_DIR.parent
SIDES = ("upstream", "tritone")
STATUSES = ("passed", "failed", "skipped", "error")
DEFAULT_FILE_GLOBS = ("unit/language/test_*.py", "unit/runtime/test_*.py")
DEFAULT_TUTORIAL_GLOB = "0[1-8]-*.py"
KNOWN_SECTION = "known differences"
_KNOWN_ENTRY = re.compile(
    r"^[-*]\s+`(?P<pattern>[^`]+)`\s*(?:\((?P<device>cpu|cuda)\))?\s*(?::|\u2014|-)\s*(?P<reason>.+?)\s*$"
)


class SetupError(SystemExit):
    """A column cannot run at all; exits with status 2 and says why."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message

    def __str__(self) -> str:
        return self.message


@dataclass
class TestResult:
    """The outcome of one test id on one side: a status of STATUSES and the
    first line of the failure or skip reason."""

    status: str
    message: str = ""


@dataclass
class FileRun:
    """One side's run of one test file or tutorial."""

    side: str
    path: str
    tests: dict[str, TestResult] = field(default_factory=dict)
    wall_s: float = 0.0
    returncode: int | None = None
    timed_out: bool = False
    note: str = ""

    def counts(self) -> Counter:
        return Counter(result.status for result in self.tests.values())


@dataclass(frozen=True)
class KnownDifference:
    """Tests (a shell pattern of test ids) expected to differ, and why; `device`
    limits the entry to runs with that --device (None: every run)."""

    pattern: str
    reason: str
    device: str | None = None


@dataclass
class Comparison:
    """Both sides of one file and what differs between them."""

    path: str
    runs: dict[str, FileRun]
    regressions: dict[str, str]
    expected: dict[str, str]
    # tests that pass under tritone and not upstream: worth a look, a test that
    # expects an error passes wherever the error does not come
    tritone_only: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- known differences


def load_known_differences(path: Path | None, device: str | None = None) -> list[KnownDifference]:
    """The entries of the "Known differences" section (and its subsections) of a markdown file: bullets
    that start with a test id pattern in backticks (shell wildcards, relative to
    the tests folder, `tutorials/<name>` for a tutorial), optionally `(cpu)` or
    `(cuda)` to hold for that device only, then a colon and the reason (indented
    lines below continue it). With `device`, the entries for other devices are left out."""
    if path is None or not path.exists():
        return []
    entries: list[KnownDifference] = []
    section_level = 0  # heading level of the section while inside it (its subsections count), else 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            if line.lstrip("#").strip().lower() == KNOWN_SECTION:
                section_level = level
            elif level <= section_level:
                section_level = 0
            continue
        if not section_level:
            continue
        match = _KNOWN_ENTRY.match(line)
        if match:
            entries.append(KnownDifference(match["pattern"], match["reason"], match["device"]))
        elif line[:1].isspace() and line.strip() and entries:
            last = entries[-1]
            entries[-1] = KnownDifference(last.pattern, f"{last.reason} {line.strip()}", last.device)
    return [entry for entry in entries if device is None or entry.device in (None, device)]


def known_reason(test_id: str, known: list[KnownDifference]) -> str | None:
    """The reason of the first known difference whose pattern matches test_id,
    or test_id without its parameters (`file::test_x` covers `file::test_x[...]`)."""
    bare = test_id.split("[", 1)[0]
    for entry in known:
        if fnmatch.fnmatchcase(test_id, entry.pattern) or fnmatch.fnmatchcase(bare, entry.pattern):
            return entry.reason
    return None


# ---------------------------------------------------------------- reading results


def _phase_status(record: dict) -> str | None:
    outcome = record["outcome"]
    if outcome == "failed":
        return "failed" if record["when"] == "call" else "error"
    if outcome == "skipped":
        return "skipped"
    return None


def read_report_log(log_path: Path, rel_file: str) -> dict[str, TestResult]:
    """Folds the JSON lines of the conformance_log plugin into one result per test
    id. Test ids are `rel_file::name`, whatever rootdir pytest chose; a failed
    collection of the file becomes one error under the id `rel_file`."""
    results: dict[str, TestResult] = {}
    if not log_path.exists():
        return results
    severity = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
    for line in log_path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        nodeid = record["nodeid"]
        test_id = f"{rel_file}::{nodeid.split('::', 1)[1]}" if "::" in nodeid else rel_file
        status = _phase_status(record)
        if record["when"] == "collect":
            status = "skipped" if record["outcome"] == "skipped" else "error"
        if status is None:
            if record["when"] == "call" and test_id not in results:
                results[test_id] = TestResult("passed")
            continue
        previous = results.get(test_id)
        # a teardown error after a failure keeps the failure: its message says more
        if previous is None or severity[status] > severity[previous.status] and previous.status != "failed":
            results[test_id] = TestResult(status, record["message"])
    return results


# ---------------------------------------------------------------- running


def side_environment(side: str, device: str, alias_dir: Path | None, base: dict[str, str] | None = None) -> dict:
    """The environment of one column: TRITONE_AS_TRITON=1 for tritone (with this
    checkout first on the path and the optional alias folder), TRITONE_AS_TRITON=0
    for upstream (which overrides a `python -m tritone use tritone` recorded for
    the environment); TRITON_INTERPRET=1 on both sides for --device cpu."""
    env = dict(os.environ if base is None else base)
    env.pop("TRITON_INTERPRET", None)
    env["TRITONE_AS_TRITON"] = "1" if side == "tritone" else "0"
    path = [str(TOOLS_DIR)]
    if side == "tritone":
        if alias_dir is not None:
            path.append(str(alias_dir))
        path.append(str(REPO_ROOT))
    inherited = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    if alias_dir is not None:
        inherited = [entry for entry in inherited if Path(entry).resolve() != alias_dir.resolve()]
    env["PYTHONPATH"] = os.pathsep.join(path + inherited)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    env["MPLBACKEND"] = "Agg"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


_PROBE = (
    "import importlib.util, json, triton; "
    "print(json.dumps({'file': triton.__file__, 'version': getattr(triton, '__version__', None), "
    "'tritone': getattr(triton, '__tritone_version__', None), "
    "'xdist': importlib.util.find_spec('xdist') is not None}))"
)


def probe_side(side: str, python: str, env: dict) -> dict:
    """Which package answers `import triton` in this column's environment; raises
    SetupError when it is the wrong one, since the column would then be a lie."""
    done = subprocess.run([python, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SetupError(f"conformance: `import triton` fails in the {side} column: {tail}")
    info = json.loads(done.stdout.strip().splitlines()[-1])
    is_tritone = info["tritone"] is not None
    if side == "tritone" and not is_tritone:
        raise SetupError(
            f"conformance: with TRITONE_AS_TRITON=1, `import triton` still answers from {info['file']}: "
            "install tritone's import hook, or pass --alias-dir with a folder whose sitecustomize.py aliases it"
        )
    if side == "upstream" and is_tritone:
        raise SetupError(
            f"conformance: with TRITONE_AS_TRITON=0, `import triton` answers with tritone ({info['file']}): "
            "install upstream Triton in this Python, or run only --sides tritone"
        )
    return info


def _kill_tree(process: subprocess.Popen) -> None:
    """Ends a timed-out run with the children it started (pytest-xdist workers)."""
    if os.name == "nt":
        subprocess.run(["taskkill", "/F", "/T", "/PID", str(process.pid)], capture_output=True)
    else:
        import signal

        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_command(
    command: list[str], cwd: Path, env: dict, timeout: float, output: Path
) -> tuple[int | None, bool, float]:
    """Runs command with stdout and stderr to `output`; returns (returncode, timed
    out, wall seconds). A timed-out command is killed with its children."""
    flags = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if os.name == "nt" else {"start_new_session": True}
    start = time.monotonic()
    with open(output, "w", encoding="utf-8", errors="replace") as sink:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT, **flags)
        try:
            returncode = process.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_tree(process)
            returncode, timed_out = None, True
    return returncode, timed_out, time.monotonic() - start


def _output_tail(output: Path, lines: int = 3) -> str:
    text = output.read_text(encoding="utf-8", errors="replace").strip().splitlines() if output.exists() else []
    return " | ".join(line.strip() for line in text[-lines:])


@dataclass(frozen=True)
class RunSettings:
    tests_dir: Path
    python: str
    device: str
    timeout: float
    keyword: str | None
    marker: str | None
    workers: int
    extra_pytest_args: tuple[str, ...]
    scratch: Path


def run_test_file(rel_file: str, side: str, env: dict, settings: RunSettings, xdist: bool) -> FileRun:
    """Runs one test file on one side and reads its per-test results."""
    stem = f"{side}-{rel_file.replace('/', '_')}"
    log = settings.scratch / f"{stem}.jsonl"
    ini = settings.scratch / "pytest.ini"
    # --tb=line: the log keeps only each failure's message, and formatting full
    # tracebacks through test_core.py's 7,000 lines costs more than the failing tests
    command = [
        settings.python, "-m", "pytest", rel_file,
        "-c", str(ini), "--rootdir", str(settings.tests_dir), "--confcutdir", str(settings.tests_dir),
        "-p", "no:cacheprovider", "-p", "conformance_log", "--conformance-log", str(log),
        "--device", settings.device, "-q", "--no-header", "-rN", "--tb=line",
    ]
    if settings.keyword:
        command += ["-k", settings.keyword]
    if settings.marker:
        command += ["-m", settings.marker]
    if xdist and settings.workers > 1:
        command += ["-n", str(settings.workers)]
    command += list(settings.extra_pytest_args)
    output = settings.scratch / f"{stem}.out"
    returncode, timed_out, wall = run_command(command, settings.tests_dir, env, settings.timeout, output)
    run = FileRun(side, rel_file, read_report_log(log, rel_file), round(wall, 2), returncode, timed_out)
    if timed_out:
        run.note = f"timed out after {settings.timeout:g} s"
    elif returncode not in (0, 1, 5) and not run.tests:
        # pytest's own failure (usage error, crash): say why in the table
        run.note = f"pytest exit {returncode}: {_output_tail(output)}"
        run.tests[rel_file] = TestResult("error", run.note)
    return run


def run_tutorial(script: Path, side: str, env: dict, settings: RunSettings) -> FileRun:
    """Runs one tutorial unmodified as `python <file>` in a scratch folder."""
    rel = f"tutorials/{script.name}"
    workdir = settings.scratch / f"{side}-{script.stem}"
    workdir.mkdir(exist_ok=True)
    output = settings.scratch / f"{side}-{script.stem}.out"
    returncode, timed_out, wall = run_command([settings.python, str(script)], workdir, env, settings.timeout, output)
    run = FileRun(side, rel, wall_s=round(wall, 2), returncode=returncode, timed_out=timed_out)
    if timed_out:
        run.note = f"timed out after {settings.timeout:g} s"
        run.tests[rel] = TestResult("error", run.note)
    elif returncode == 0:
        run.tests[rel] = TestResult("passed")
    else:
        run.tests[rel] = TestResult("failed", _output_tail(output, 1))
    return run


# ---------------------------------------------------------------- comparing and reporting


def compare(path: str, runs: dict[str, FileRun], known: list[KnownDifference]) -> Comparison:
    """Tests that pass upstream and do not pass under tritone (failed, error,
    skipped or not run), split into regressions and known differences; and the
    tests that pass under tritone only."""
    regressions: dict[str, str] = {}
    expected: dict[str, str] = {}
    tritone_only: list[str] = []
    upstream, tritone = runs.get("upstream"), runs.get("tritone")
    if upstream is not None and tritone is not None:
        tritone_only = sorted(
            test_id for test_id, result in tritone.tests.items()
            if result.status == "passed" and upstream.tests.get(test_id, TestResult("missing")).status != "passed"
        )
        for test_id, result in upstream.tests.items():
            if result.status != "passed":
                continue
            theirs = tritone.tests.get(test_id)
            if theirs is not None and theirs.status == "passed":
                continue
            if theirs is None:
                message = f"not run under tritone ({tritone.note or 'not collected'})"
                if tritone.tests.get(path) is not None:
                    message = f"not run under tritone: {tritone.tests[path].message}"
            else:
                message = f"{theirs.status}: {theirs.message}"
            reason = known_reason(test_id, known)
            if reason is None:
                regressions[test_id] = message
            else:
                expected[test_id] = f"{reason} ({message})"
    return Comparison(path, runs, regressions, expected, tritone_only)


def _cells(run: FileRun | None) -> list[str]:
    if run is None:
        return ["-"] * 5
    counts = run.counts()
    return [str(counts[status]) for status in STATUSES] + [f"{run.wall_s:.1f}"]


def markdown_table(comparisons: list[Comparison]) -> str:
    """One row per file: passed/failed/skipped/errors and wall seconds per side,
    then regressions, expected differences, tests passing under tritone only, notes."""
    header = ["file"]
    for side in SIDES:
        header += [f"{side} {status}" for status in STATUSES] + [f"{side} s"]
    header += ["regressions", "expected", "tritone only", "notes"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    totals = Counter()
    for comparison in comparisons:
        notes = "; ".join(f"{side}: {run.note}" for side, run in comparison.runs.items() if run.note)
        row = [comparison.path]
        for side in SIDES:
            row += _cells(comparison.runs.get(side))
            run = comparison.runs.get(side)
            if run is not None:
                for status, count in run.counts().items():
                    totals[side, status] += count
        row += [str(len(comparison.regressions)), str(len(comparison.expected)), str(len(comparison.tritone_only)),
                notes.replace("|", "/")]
        lines.append("| " + " | ".join(row) + " |")
    total_row = ["**total**"]
    for side in SIDES:
        total_row += [str(totals[side, status]) for status in STATUSES] + [""]
    for key in ("regressions", "expected", "tritone_only"):
        total_row.append(str(sum(len(getattr(c, key)) for c in comparisons)))
    total_row.append("")
    lines.append("| " + " | ".join(total_row) + " |")
    return "\n".join(lines)


_VOLATILE = re.compile(r"0x[0-9a-fA-F]+|\d+")


def failure_categories(comparisons: list[Comparison], limit: int = 40) -> list[tuple[int, str]]:
    """Regressions grouped by their message with numbers blanked out, most
    frequent first: the work queue."""
    counter = Counter()
    for comparison in comparisons:
        for message in comparison.regressions.values():
            if " ... " in message:  # "<status>: <Error>: at 3:8 in kernel k (file) ... what went wrong"
                head, _, tail = message.partition(" ... ")
                message = f"{head.split(' at ', 1)[0]} {tail}"
            counter[_VOLATILE.sub("N", message)[:200]] += 1
    return [(count, message) for message, count in counter.most_common(limit)]


def write_outputs(out: Path, comparisons: list[Comparison], meta: dict, list_regressions: bool) -> list[Path]:
    """Writes conformance.md (tables and failure categories), conformance.json
    (every test id on both sides) and, when asked, regressions.txt."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    md = ["# Conformance: upstream Triton vs tritone", "", "```", json.dumps(meta, indent=1), "```", ""]
    md += [markdown_table(comparisons), ""]
    categories = failure_categories(comparisons)
    if categories:
        md += ["## Regressions by message", "", "| count | message |", "|---|---|"]
        md += [f"| {count} | {message.replace('|', '/')} |" for count, message in categories]
    (out / "conformance.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    written.append(out / "conformance.md")
    payload = {
        "meta": meta,
        "files": [
            {
                "path": c.path,
                "runs": {side: asdict(run) for side, run in c.runs.items()},
                "regressions": c.regressions,
                "expected": c.expected,
                "tritone_only": c.tritone_only,
            }
            for c in comparisons
        ],
    }
    (out / "conformance.json").write_text(json.dumps(payload, indent=1), encoding="utf-8")
    written.append(out / "conformance.json")
    if list_regressions:
        (out / "regressions.txt").write_text(regression_lines(comparisons), encoding="utf-8")
        written.append(out / "regressions.txt")
    return written


def load_runs(report: Path, side: str) -> dict[str, FileRun]:
    """One side's runs, by file, from the conformance.json of an earlier run."""
    payload = json.loads(report.read_text(encoding="utf-8"))
    runs = {}
    for entry in payload["files"]:
        data = entry["runs"].get(side)
        if data is not None:
            tests = {test_id: TestResult(**result) for test_id, result in data.pop("tests").items()}
            runs[entry["path"]] = FileRun(**data, tests=tests)
    return runs


def regression_lines(comparisons: list[Comparison]) -> str:
    """One line per regression, sorted by test id: the id, a tab, the first line of its error."""
    every = sorted((test_id, message) for c in comparisons for test_id, message in c.regressions.items())
    return "".join(f"{test_id}\t{message}\n" for test_id, message in every)


# ---------------------------------------------------------------- command line


def select_files(tests_dir: Path, files: list[str] | None) -> list[str]:
    """Test files relative to tests_dir (forward slashes): the ones named (globs
    allowed), or by default every test file of unit/language and unit/runtime."""
    patterns = files or list(DEFAULT_FILE_GLOBS)
    chosen: list[str] = []
    for pattern in patterns:
        matches = sorted(tests_dir.glob(pattern))
        if not matches:
            raise SetupError(f"conformance: no test file matches {pattern!r} under {tests_dir}")
        chosen += [p.relative_to(tests_dir).as_posix() for p in matches if p.is_file()]
    return list(dict.fromkeys(chosen))


def select_tutorials(tutorials_dir: Path, names: list[str] | None) -> list[Path]:
    patterns = names or [DEFAULT_TUTORIAL_GLOB]
    chosen: list[Path] = []
    for pattern in patterns:
        matches = sorted(tutorials_dir.glob(pattern))
        if not matches:
            raise SetupError(f"conformance: no tutorial matches {pattern!r} under {tutorials_dir}")
        chosen += matches
    return list(dict.fromkeys(chosen))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--tests", type=Path, help="upstream's test folder (holding conftest.py)")
    parser.add_argument("--tutorials", type=Path, help="upstream's tutorials folder")
    parser.add_argument("--files", nargs="+",
                        help=f"test files or globs relative to --tests (default: {DEFAULT_FILE_GLOBS})")
    parser.add_argument("--tutorial-names", nargs="+",
                        help=f"tutorial files or globs (default: {DEFAULT_TUTORIAL_GLOB})")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="passed to upstream's conftest; cpu also sets TRITON_INTERPRET=1")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression, passed through")
    parser.add_argument("-m", dest="marker",
                        help="pytest -m expression, passed through; default with --device cpu: 'interpreter',\n"
                        "the mark upstream gives the tests its interpreter runs ('' for none)")
    parser.add_argument("--timeout", type=float, default=540.0, help="seconds per file and side (default 540)")
    parser.add_argument("--jobs", type=int, default=1, help="files run at the same time (default 1)")
    parser.add_argument("-n", dest="workers", type=int, default=0,
                        help="pytest-xdist workers per file, where xdist is installed")
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=None,
                        help="columns to run (default both, or tritone alone with --upstream-from)")
    parser.add_argument("--upstream-from", type=Path,
                        help="take the upstream column from this conformance.json of an earlier run (same\n"
                        "machine, files and -k) instead of running it again")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs both sides")
    parser.add_argument("--alias-dir", type=Path,
                        help="folder put first on PYTHONPATH of the tritone column only, e.g. one whose\n"
                        "sitecustomize.py makes `import triton` answer with tritone where .pth hooks are off")
    parser.add_argument("--known", type=Path, default=REPO_ROOT / "docs" / "CONFORMANCE.md",
                        help="markdown file whose 'Known differences' section lists expected differences")
    parser.add_argument("--out", type=Path, help="folder for conformance.md, conformance.json, regressions.txt")
    parser.add_argument("--list-regressions", action="store_true", help="also write/print regression ids and errors")
    parser.add_argument("--pytest-arg", dest="pytest_args", action="append", default=[],
                        help="one extra pytest argument (repeatable)")
    args = parser.parse_args(argv)
    if args.marker is None and args.device == "cpu":
        args.marker = "interpreter"
    if args.sides is None:
        args.sides = ["tritone"] if args.upstream_from else list(SIDES)
    if args.upstream_from and "upstream" in args.sides:
        parser.error("--upstream-from replaces the upstream column: do not also run it with --sides")
    if args.tests is None and args.tutorials is None:
        parser.error("give --tests, --tutorials or both")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    alias_dir = args.alias_dir.resolve() if args.alias_dir else None
    envs = {side: side_environment(side, args.device, alias_dir) for side in args.sides}
    probes = {side: probe_side(side, args.python, envs[side]) for side in args.sides}
    known = load_known_differences(args.known, args.device)
    files = select_files(args.tests.resolve(), args.files) if args.tests else []
    tutorials = select_tutorials(args.tutorials.resolve(), args.tutorial_names) if args.tutorials else []

    with tempfile.TemporaryDirectory(prefix="tritone-conformance-") as scratch_name:
        scratch = Path(scratch_name)
        (scratch / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        settings = RunSettings(
            tests_dir=(args.tests or args.tutorials).resolve(), python=args.python, device=args.device,
            timeout=args.timeout, keyword=args.keyword, marker=args.marker, workers=args.workers,
            extra_pytest_args=tuple(args.pytest_args), scratch=scratch,
        )
        jobs = [(rel, side) for rel in files for side in args.sides]
        jobs += [(script, side) for script in tutorials for side in args.sides]

        def run_job(job: tuple) -> FileRun:
            target, side = job
            if isinstance(target, Path):
                run = run_tutorial(target, side, envs[side], settings)
            else:
                run = run_test_file(target, side, envs[side], settings, probes[side]["xdist"])
            counts = run.counts()
            print(f"[{side:8}] {run.path}: " + " ".join(f"{s} {counts[s]}" for s in STATUSES)
                  + f" ({run.wall_s:.1f} s){' ' + run.note if run.note else ''}", flush=True)
            return run

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            runs = list(pool.map(run_job, jobs))

    by_path: dict[str, dict[str, FileRun]] = {}
    if args.upstream_from:
        earlier = load_runs(args.upstream_from, "upstream")
        for run in runs:
            if run.path in earlier:
                by_path.setdefault(run.path, {})["upstream"] = earlier[run.path]
    for run in runs:
        by_path.setdefault(run.path, {})[run.side] = run
    comparisons = [compare(path, sides, known) for path, sides in by_path.items()]

    meta = {
        "device": args.device, "keyword": args.keyword, "marker": args.marker, "python": args.python,
        "sides": {side: probes[side] for side in args.sides}, "known_differences": len(known),
        "upstream_from": str(args.upstream_from) if args.upstream_from else None,
    }
    if args.out:
        for path in write_outputs(args.out, comparisons, meta, args.list_regressions):
            print(f"wrote {path}")
    elif args.list_regressions:
        print()
        print(regression_lines(comparisons), end="")
    # the table and the summary come last: a device command returns the tail of its output
    print()
    print(markdown_table(comparisons))
    categories = failure_categories(comparisons, limit=15)
    if categories:
        print()
        print("regressions by message:")
        for count, message in categories:
            print(f"{count:6d}  {message}")
    return 1 if any(c.regressions for c in comparisons) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SetupError as error:
        print(error, file=sys.stderr)
        sys.exit(2)
