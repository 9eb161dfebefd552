"""Every runtime dependency in pyproject.toml resolves to a wheel that installs
on 64-bit Windows under CPython 3.10 to 3.14: `pip download --platform
win_amd64 --only-binary=:all:` against the package index, one pip run per
Python version. The first run downloads everything; the others then run at
once with its folder as an extra `--find-links`, so the wheels every version
shares (NVRTC's, 76 MB) are found there rather than downloaded again. Needs the
network to the package index; marked `slow` (a few seconds), and CI runs every
test, this one included.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14"]
PIP_TIMEOUT = 300


def windows_requirements(python: str) -> list[Requirement]:
    """The runtime dependencies that apply on 64-bit Windows under CPython `python`."""
    environment = {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt",
                   "platform_machine": "AMD64", "implementation_name": "cpython",
                   "platform_python_implementation": "CPython", "python_version": python,
                   "python_full_version": f"{python}.0"}
    dependencies = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    requirements = [Requirement(text) for text in dependencies]
    return [requirement for requirement in requirements
            if requirement.marker is None or requirement.marker.evaluate(environment)]


def _pip_download(python: str, requirements: list[Requirement], folder: Path,
                  shared: Path | None) -> subprocess.Popen:
    specifiers = [f"{requirement.name}{requirement.specifier}" for requirement in requirements]
    command = [sys.executable, "-m", "pip", "download", "--platform", "win_amd64", "--only-binary=:all:",
               "--python-version", python, "--implementation", "cp", "--no-deps", "--disable-pip-version-check",
               "--quiet", "-d", str(folder), *(["--find-links", str(shared)] if shared else []), *specifiers]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_the_dependency_list_is_read():
    names = [canonicalize_name(requirement.name) for requirement in windows_requirements("3.12")]
    assert "numpy" in names and "nvidia-cuda-nvrtc-cu12" in names


@pytest.mark.slow
def test_runtime_dependencies_have_win_amd64_wheels(tmp_path):
    runs = {}
    first = None
    for python in PYTHONS:
        requirements = windows_requirements(python)
        process = _pip_download(python, requirements, tmp_path / python, first)
        if first is None:
            process.wait(timeout=PIP_TIMEOUT)
            first = tmp_path / python
        runs[python] = (requirements, tmp_path / python, process)
    failures = []
    for label, (requirements, folder, process) in runs.items():
        output, _ = process.communicate(timeout=PIP_TIMEOUT)
        if process.returncode != 0:
            failures.append(f"CPython {label}: pip download failed:\n{output[-2000:]}")
            continue
        wheels = {}
        for wheel in folder.glob("*.whl"):
            name, _, _, tags = parse_wheel_filename(wheel.name)
            wheels[name] = tags
        for requirement in requirements:
            tags = wheels.get(canonicalize_name(requirement.name))
            if tags is None:
                failures.append(f"CPython {label}: no wheel of {requirement.name} downloaded")
            elif not any(tag.platform in ("win_amd64", "any") for tag in tags):
                failures.append(f"CPython {label}: {requirement.name}'s wheel is for {sorted(map(str, tags))}")
    assert not failures, "\n".join(failures)
