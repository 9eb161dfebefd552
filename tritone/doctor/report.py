"""What `doctor` reports: checks, each passed, warned or failed, with a
one-line summary, the details behind it and, where something can be done, the
fix; printed as text or JSON."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class Status(str, enum.Enum):
    """How a check came out. `WARN` means tritone works, possibly not as the
    user expects; only `FAIL` makes `doctor` exit with status 1."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class Check:
    """One finding. `section` groups checks ("Python", "GPU", ...), `name` labels
    this one within it, `summary` is one line, `details` the lines behind it,
    `fix` one or two lines saying what to do (None when nothing needs doing),
    and `data` the facts behind the summary as (key, value) pairs, for `--json`
    readers that should not parse the text."""

    section: str
    name: str
    status: Status
    summary: str
    details: tuple[str, ...] = ()
    fix: str | None = None
    data: tuple[tuple[str, str | int | None], ...] = ()

    def as_dict(self) -> dict:
        return {"section": self.section, "name": self.name, "status": self.status.value, "summary": self.summary,
                "details": list(self.details), "fix": self.fix, "data": dict(self.data)}


@dataclass(frozen=True)
class Report:
    """Every check `doctor` ran, in order, and who ran them."""

    checks: tuple[Check, ...]
    title: str

    def with_status(self, status: Status) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.status is status)

    def find(self, section: str, name: str | None = None) -> tuple[Check, ...]:
        """The checks of `section` (and of that `name`, when given)."""
        return tuple(check for check in self.checks
                     if check.section == section and (name is None or check.name == name))

    @property
    def exit_code(self) -> int:
        """0 when nothing failed, else 1."""
        return 1 if self.with_status(Status.FAIL) else 0

    def counts_text(self) -> str:
        passed, warned, failed = (len(self.with_status(status)) for status in Status)
        return f"{passed} passed, {warned} warning{'s' * (warned != 1)}, {failed} failed"

    def text(self) -> str:
        """The full report: each section, each check with its details and fix."""
        lines = [self.title]
        section = None
        for check in self.checks:
            if check.section != section:
                section = check.section
                lines += ["", section]
            lines.append(f"  {check.status.value}  {check.name}: {check.summary}")
            lines += [f"          {detail}" for detail in check.details]
            if check.fix:
                lines += _fix_lines(check.fix)
        lines += ["", self.counts_text()]
        return "\n".join(lines) + "\n"

    def summary_text(self) -> str:
        """A few lines: the counts, then each warning and failure in one line."""
        lines = [f"doctor: {self.counts_text()} (details: python -m tritone doctor)"]
        lines += [f"  {check.status.value}  {check.section} {check.name}: {check.summary}"
                  for check in self.checks if check.status is not Status.PASS]
        return "\n".join(lines) + "\n"

    def json(self) -> str:
        """The report as JSON: title, counts, exit code and every check."""
        counts = {status.value: len(self.with_status(status)) for status in Status}
        return json.dumps({"title": self.title, "counts": counts, "exit_code": self.exit_code,
                           "checks": [check.as_dict() for check in self.checks]}, indent=2) + "\n"


def _fix_lines(fix: str) -> list[str]:
    first, *rest = fix.splitlines()
    return [f"        fix: {first}", *(f"             {line}" for line in rest)]


def worst(statuses: Iterable[Status]) -> Status:
    """The most serious of `statuses` (PASS when there are none)."""
    order = (Status.PASS, Status.WARN, Status.FAIL)
    return max(statuses, key=order.index, default=Status.PASS)


def plural(count: int, noun: str, many: str | None = None) -> str:
    """"1 entry", "3 entries" (`many` defaults to `noun` + "s")."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def quoted(path: str) -> str:
    """A path as a person types it in a shell: in double quotes when it holds a space."""
    return f'"{path}"' if " " in path else path


def pip_install(executable: str, packages: Sequence[str]) -> str:
    """The command that installs `packages` into the Python at `executable`."""
    names = " ".join(packages)
    return f"{quoted(executable)} -m pip install {names}" if executable else f"pip install {names}"
