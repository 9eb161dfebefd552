"""pytest plugin of the conformance runner (`tools/conformance.py`): with
`-p conformance_log --conformance-log PATH`, every test report and every
failed or skipped collection is appended to PATH as one JSON line, flushed at
once, so the results up to a hang survive when the runner kills the process.

Under pytest-xdist only the controller writes: workers' reports reach its hooks.
"""

from __future__ import annotations

import json
import re

import pytest

_MESSAGE_LIMIT = 300
_LOCATION = re.compile(r"\bat \d+:\d+")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--conformance-log", default=None, help="append one JSON line per test report to this file")


def _first_line(longrepr: object) -> str:
    """The first non-empty line of a report's failure or skip text, shortened; with
    its last line when the first is only a source location."""
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (file, line, reason)
        text = str(longrepr[2])
    else:
        crash = getattr(longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(longrepr)
        # a collection error's text is a traceback: its "E   " lines name the exception
        raised = [line[1:] for line in text.splitlines() if line.startswith("E ")]
        if crash is None and raised:
            text = raised[-1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    # errors that open with a location (a CompilationError's "at 3:8 in kernel k")
    # say what went wrong on their last line
    summary = f"{lines[0]} ... {lines[-1]}" if len(lines) > 1 and _LOCATION.search(lines[0]) else lines[0]
    return summary[:_MESSAGE_LIMIT]


class _ReportLog:
    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")

    def write(self, record: dict) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.write(
            {
                "nodeid": report.nodeid,
                "when": report.when,
                "outcome": report.outcome,
                "xfail": hasattr(report, "wasxfail"),
                "message": _first_line(report.longrepr) if report.outcome != "passed" else "",
                "duration": round(report.duration, 4),
            }
        )

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.outcome == "passed":
            return
        self.write({"nodeid": report.nodeid, "when": "collect", "outcome": report.outcome,
                    "xfail": False, "message": _first_line(report.longrepr), "duration": 0.0})

    def close(self) -> None:
        self._file.close()


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--conformance-log")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_ReportLog(path), "conformance-report-log")


def pytest_unconfigure(config: pytest.Config) -> None:
    log = config.pluginmanager.get_plugin("conformance-report-log")
    if log is not None:
        log.close()
