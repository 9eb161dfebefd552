"""Do README.md's two set-up commands resolve from the package index alone?

    python .ci/check_resolution.py

Asks pip (`install --dry-run --ignore-installed --report`), with every pip
configuration file and PIP_* variable hidden so that no local wheel folder
helps, to resolve:

- on this machine, each README command in full: `.` (the first) and
  `"torch==<pin>" ".[test]"` (the second), every dependency included;
- for Linux x86_64, Linux aarch64 and Windows (pip's `--platform`), torch at
  README's pin and upstream triton as the test extra asks for it there,
  without their dependencies: pip evaluates environment markers for the
  machine it runs on, so the check of torch's triton pin against the test
  extra is made here, by `judge`, with each platform's markers.

Exit status 0 when everything resolves (or the index cannot be reached: then it
says so), 1 otherwise, with pip's message.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO_ROOT = Path(__file__).resolve().parent.parent
INDEX = "https://pypi.org/simple/"
PYTHON = "3.12"
# pip's platform tag and the environment markers of each platform the README promises.
PLATFORMS = {
    "Linux x86_64": ("manylinux_2_28_x86_64", {"sys_platform": "linux", "platform_system": "Linux",
                                               "platform_machine": "x86_64", "os_name": "posix"}),
    "Linux aarch64": ("manylinux_2_28_aarch64", {"sys_platform": "linux", "platform_system": "Linux",
                                                 "platform_machine": "aarch64", "os_name": "posix"}),
    "Windows": ("win_amd64", {"sys_platform": "win32", "platform_system": "Windows",
                              "platform_machine": "AMD64", "os_name": "nt"}),
}
PIP_TIMEOUT = 600


def readme_commands(readme: str) -> tuple[str, str]:
    """The first and the second set-up command of README.md, as written there."""
    section = readme[readme.index("## Set up"):]
    commands = re.findall(r"```\n(pip install [^\n]*)\n```", section)
    if len(commands) < 2:
        raise ValueError("README.md's set-up section does not hold two `pip install` commands")
    return commands[0], commands[1]


def torch_pin(test_command: str) -> str:
    """The torch version the test command pins ("2.13.0")."""
    found = re.search(r'"torch==([^"]+)"', test_command)
    if found is None:
        raise ValueError(f"the test command pins no torch version: {test_command}")
    return found.group(1)


def test_extra() -> list[Requirement]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [Requirement(text) for text in project["optional-dependencies"]["test"]]


def marker_environment(platform_markers: dict[str, str]) -> dict[str, str]:
    return {"implementation_name": "cpython", "platform_python_implementation": "CPython",
            "python_version": PYTHON, "python_full_version": f"{PYTHON}.0", **platform_markers}


def applies(requirement: Requirement, environment: dict[str, str]) -> bool:
    return requirement.marker is None or requirement.marker.evaluate({**environment, "extra": ""})


def judge(report: dict, environment: dict[str, str], torch_version: str, extra: Sequence[Requirement]) -> list[str]:
    """What is wrong with a `--no-deps` resolution of torch and triton for one
    platform: torch must be README's pin; where torch requires a triton there, the
    test extra's triton range must allow that same release, and pip must have found
    a triton wheel in that range; where the extra asks for no triton, torch must not
    either. Empty when all is well."""
    chosen = {canonicalize_name(item["metadata"]["name"]): item["metadata"] for item in report["install"]}
    torch = chosen.get("torch")
    if torch is None or torch["version"] != torch_version:
        return [f"torch {torch_version} was not found (pip chose {torch and torch['version']})"]
    ours = [r for r in extra if canonicalize_name(r.name) == "triton" and applies(r, environment)]
    theirs = [Requirement(text) for text in torch.get("requires_dist", [])]
    theirs = [r for r in theirs if canonicalize_name(r.name) == "triton" and applies(r, environment)]
    problems = []
    if theirs and not ours:
        problems.append(f"torch {torch_version} requires {theirs[0]} here, but the test extra asks for no triton")
    if ours:
        triton = chosen.get("triton")
        if triton is None:
            problems.append(f"no triton wheel matches the test extra's {ours[0].specifier}")
        else:
            for requirement in theirs:
                exact = [spec.version for spec in requirement.specifier if spec.operator == "=="]
                needed = exact[0] if exact else triton["version"]
                if not ours[0].specifier.contains(needed, prereleases=True):
                    problems.append(f"torch {torch_version} requires triton{requirement.specifier} here; the test "
                                    f"extra's triton{ours[0].specifier} excludes {needed}, so pip cannot resolve both")
                elif not requirement.specifier.contains(triton["version"], prereleases=True):
                    problems.append(f"pip chose triton {triton['version']}, which torch's "
                                    f"triton{requirement.specifier} excludes")
    return problems


def chosen_versions(report: dict, names: Sequence[str]) -> str:
    """"torch 2.13.0, triton 3.7.1": the versions pip chose of `names`."""
    chosen = {canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"] for item in report["install"]}
    return ", ".join(f"{name} {chosen[name]}" for name in names if name in chosen)


def _hidden_configuration() -> dict[str, str]:
    """os.environ without PIP_* and with no pip configuration file."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("PIP_")}
    environment["PIP_CONFIG_FILE"] = os.devnull
    return environment


def pip_report(arguments: Sequence[str], cwd: Path) -> tuple[dict | None, str]:
    """pip's installation report of a dry run (None when pip failed) and its messages."""
    command = [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed",
               "--disable-pip-version-check", "--quiet", "--report", "-", *arguments]
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=_hidden_configuration(),
                          timeout=PIP_TIMEOUT)
    if done.returncode != 0:
        return None, done.stderr + done.stdout
    return json.loads(done.stdout), done.stderr


def index_reachable() -> bool:
    try:
        with urllib.request.urlopen(INDEX, timeout=20):
            return True
    except OSError:
        return False


def main() -> int:
    if not index_reachable():
        print(f"skipped: the package index {INDEX} cannot be reached")
        return 0
    first, second = readme_commands((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    version = torch_pin(second)
    extra = test_extra()
    failures = []
    for command, arguments in ((first, ["."]), (second, [f"torch=={version}", ".[test]"])):
        report, messages = pip_report(arguments, REPO_ROOT)
        if report is None:
            failures.append(f"{command}: does not resolve on this machine:\n{messages[-3000:]}")
            continue
        print(f"this machine, {command}: resolves ({chosen_versions(report, ('numpy', 'torch', 'triton'))})")
    for label, (tag, markers) in PLATFORMS.items():
        environment = marker_environment(markers)
        wanted = [f"torch=={version}"] + [str(Requirement(f"{r.name}{r.specifier}")) for r in extra
                                          if canonicalize_name(r.name) == "triton" and applies(r, environment)]
        with tempfile.TemporaryDirectory() as target:
            report, messages = pip_report(["--no-deps", "--only-binary=:all:", "--target", target, "--platform", tag,
                                           "--python-version", PYTHON, "--implementation", "cp", *wanted], REPO_ROOT)
        if report is None:
            failures.append(f"{label}: {' '.join(wanted)} does not resolve:\n{messages[-3000:]}")
            continue
        problems = judge(report, environment, version, extra)
        failures += [f"{label}: {problem}" for problem in problems]
        if not problems:
            print(f"{label}, CPython {PYTHON}: {chosen_versions(report, ('torch', 'triton'))}")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
