"""README.md's set-up commands against pyproject.toml, without the network:
.ci/run runs README's test command; the test extra asks for upstream triton
on Linux only, in a range holding the Triton API tritone implements; and
`judge` of .ci/check_resolution.py (which CI runs against the package index)
accepts what resolves and names what does not."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import tritone

# The checker reads pyproject.toml with tomllib (Python 3.11+) or tomli.
pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
REPO_ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_resolution", REPO_ROOT / ".ci" / "check_resolution.py")
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


def environment(platform: str) -> dict[str, str]:
    return check.marker_environment(check.PLATFORMS[platform][1])


def report(torch_version: str, torch_requires: list[str], triton_version: str | None = None) -> dict:
    """A pip installation report of torch (and triton) as `pip --report` writes it."""
    install = [{"metadata": {"name": "torch", "version": torch_version, "requires_dist": torch_requires}}]
    if triton_version is not None:
        install.append({"metadata": {"name": "triton", "version": triton_version}})
    return {"install": install}


TORCH_PIN = 'triton==3.7.1; platform_system == "Linux" and python_version < "3.15"'


def test_ci_runs_the_readme_test_command():
    first, second = check.readme_commands((REPO_ROOT / "README.md").read_text(encoding="utf-8"))
    assert first.startswith("pip install -e .") and "selftest" in first
    install = second.split("&&")[0].strip()
    assert install.startswith("pip install ") and check.torch_pin(second)
    assert f"python -m {install}" in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "check_resolution.py" in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("platform", list(check.PLATFORMS))
def test_upstream_triton_only_on_linux_and_with_the_api_tritone_implements(platform):
    tritons = [r for r in check.test_extra() if r.name == "triton" and check.applies(r, environment(platform))]
    if platform == "Windows":
        assert not tritons
        return
    assert len(tritons) == 1
    api = Version(tritone.__version__)
    assert tritons[0].specifier.contains(api), f"the test extra's triton{tritons[0].specifier} excludes {api}"


def test_a_torch_pin_inside_the_range_resolves():
    extra = [Requirement("triton>=3.6,<3.8; sys_platform == 'linux'")]
    for platform in ("Linux x86_64", "Linux aarch64"):
        assert check.judge(report("2.13.0", [TORCH_PIN, "numpy"], "3.7.1"), environment(platform), "2.13.0",
                           extra) == []


def test_a_torch_pin_outside_the_range_is_named():
    extra = [Requirement("triton==3.6.0; sys_platform == 'linux'")]
    problems = check.judge(report("2.13.0", [TORCH_PIN], "3.6.0"), environment("Linux aarch64"), "2.13.0", extra)
    assert problems == ["torch 2.13.0 requires triton==3.7.1 here; the test extra's triton==3.6.0 excludes 3.7.1, "
                        "so pip cannot resolve both"]


def test_windows_needs_no_triton():
    extra = [Requirement("triton>=3.6,<3.8; sys_platform == 'linux'")]
    assert check.judge(report("2.13.0", [TORCH_PIN]), environment("Windows"), "2.13.0", extra) == []
    # Were torch to require a triton on Windows, an extra without one would not do.
    everywhere = ["triton==3.7.1"]
    assert check.judge(report("2.13.0", everywhere), environment("Windows"), "2.13.0", extra) == [
        "torch 2.13.0 requires triton==3.7.1 here, but the test extra asks for no triton"]


def test_a_missing_wheel_or_a_wrong_torch_is_named():
    extra = [Requirement("triton>=3.6,<3.8; sys_platform == 'linux'")]
    linux = environment("Linux x86_64")
    assert check.judge(report("2.13.0", [TORCH_PIN]), linux, "2.13.0", extra) == [
        "no triton wheel matches the test extra's <3.8,>=3.6"]
    assert check.judge(report("2.14.0", [TORCH_PIN], "3.7.1"), linux, "2.13.0", extra) == [
        "torch 2.13.0 was not found (pip chose 2.14.0)"]
    ranged = ['triton>=3.7; platform_system == "Linux"']
    assert check.judge(report("2.13.0", ranged, "3.6.0"), linux, "2.13.0", extra) == [
        "pip chose triton 3.6.0, which torch's triton>=3.7 excludes"]
