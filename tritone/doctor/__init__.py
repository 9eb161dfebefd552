"""`python -m tritone doctor`: what tritone finds on this machine and whether it
will work, each finding passed, warned or failed with the fix.

Sections: the Python (version, build, embedded distributions, other Pythons on
PATH, a shadowing `triton.py`), the GPU (driver, each GPU and its dot path),
NVRTC (every candidate, the choice and why, CUDA_PATH), torch (build, GPUs,
the Triton API its version expects), triton (a real install beside tritone,
which one answers `import triton` and why, tritone's startup hook), the kernel
cache, and a live vector add on each GPU.

Facts are gathered from the machine through `tritone.platform` (and the
driver, torch, the file system), then judged by functions that take the
facts, so tests can judge a simulated Windows machine on Linux.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from typing import TextIO

from .. import __tritone_version__, __version__
from ..backends.cuda.bindings.nvml import DisplayDriver
from ..platform import Platform, host
from .cache_report import cache_checks, cache_facts
from .gpu import GpuFacts, gpu_checks, gpu_facts, nvrtc_checks
from .live import live_checks
from .packages import TorchFacts, torch_checks, torch_facts, triton_checks, triton_facts
from .provider import provider_checks, provider_facts
from .python_env import python_checks, python_facts
from .report import Check, Report, Status

SECTIONS = ("python", "gpu", "nvrtc", "torch", "triton", "cache", "live")
_SECTION_TITLES = ("Python", "GPU", "NVRTC", "torch", "triton", "cache", "live check")

__all__ = ["SECTIONS", "Check", "Report", "Status", "doctor_command", "run"]


def _crashed(section: str, error: Exception) -> Check:
    """A check that could not run: a diagnostic reports its own failure rather than stopping."""
    where = traceback.extract_tb(error.__traceback__)[-1]
    return Check(section, "doctor", Status.FAIL, f"this check failed: {type(error).__name__}: {error}",
                 (f"at {where.filename}:{where.lineno} in {where.name}",),
                 "report it with the output of `python -m tritone doctor --json`")


def run(sections: Sequence[str] = SECTIONS, platform: Platform | None = None) -> Report:
    """Gather the facts of this machine and run the checks of `sections` (a
    subset of SECTIONS, reported in SECTIONS order). A check that raises is
    reported as failed; the others still run."""
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise ValueError(f"unknown doctor sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    platform = platform or host()
    checks: list[Check] = []

    def section(title: str, produce: Callable[[], list[Check]]) -> None:
        try:
            checks.extend(produce())
        except Exception as error:  # any failure of a check is itself the finding
            checks.append(_crashed(title, error))

    gpu = GpuFacts(None, None, "the GPU check failed", None, None, None, (),
                   DisplayDriver(None, None, ("the GPU check failed",)))
    torch = TorchFacts(None)
    gpu_known = False
    if {"gpu", "nvrtc", "torch", "live"} & set(sections):
        try:
            gpu = gpu_facts(platform)
            gpu_known = True
        except Exception as error:  # reported in the GPU section; the others go on without a GPU
            checks.append(_crashed("GPU", error))
    if {"torch", "live"} & set(sections):
        try:
            torch = torch_facts()
        except Exception as error:  # reported in the torch section
            checks.append(_crashed("torch", error))
    if "python" in sections:
        section("Python", lambda: python_checks(platform, python_facts()))
    if "gpu" in sections and gpu_known:
        section("GPU", lambda: gpu_checks(gpu))
    if "nvrtc" in sections:
        section("NVRTC", lambda: nvrtc_checks(platform, gpu))
    if "torch" in sections:
        section("torch", lambda: torch_checks(platform, torch, gpu))
    if "triton" in sections:
        section("triton", lambda: triton_checks(triton_facts(platform)))
        section("triton", lambda: provider_checks(provider_facts()))
    if "cache" in sections:
        section("cache", lambda: cache_checks(platform, cache_facts(platform)))
    if "live" in sections:
        section("live check", lambda: live_checks(gpu, torch))
    checks.sort(key=lambda check: _SECTION_TITLES.index(check.section))
    title = f"tritone {__tritone_version__} (Triton API {__version__}) doctor, {platform.name}"
    return Report(tuple(checks), title)


def doctor_command(out: TextIO, *, as_json: bool = False) -> int:
    """Run every check, write the report (text, or JSON with `as_json`) to `out`,
    and return the exit status: 0 when nothing failed, 1 otherwise."""
    report = run()
    out.write(report.json() if as_json else report.text())
    return report.exit_code
