"""`python -m tritone doctor`: what tritone finds on this machine and whether it
will work, each finding passed, warned or failed with the fix.

Sections: the Python (version, build, embedded distributions, other Pythons on
PATH, a shadowing `triton.py`), the GPU (driver, each GPU and its dot path),
NVRTC (every candidate, the choice and why, CUDA_PATH), torch (build, GPUs,
the Triton API its version expects), triton (a real install beside tritone,
the drop-in alias), the kernel cache, and a live vector add on each GPU.

Facts are gathered from the machine through `tritone.platform` (and the
driver, torch, the file system), then judged by functions that take the
facts, so tests can judge a simulated Windows machine on Linux.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from .. import __tritone_version__, __version__
from ..platform import Platform, host
from .cache_report import cache_checks, cache_facts
from .gpu import gpu_checks, gpu_facts, nvrtc_checks
from .live import live_checks
from .packages import torch_checks, torch_facts, triton_checks, triton_facts
from .python_env import python_checks, python_facts
from .report import Check, Report, Status

SECTIONS = ("python", "gpu", "nvrtc", "torch", "triton", "cache", "live")
# What `selftest` prints first: quick, and without importing torch.
SUMMARY_SECTIONS = ("python", "gpu", "nvrtc", "cache")

__all__ = ["SECTIONS", "SUMMARY_SECTIONS", "Check", "Report", "Status", "doctor_command", "run"]


def run(sections: Sequence[str] = SECTIONS, platform: Platform | None = None) -> Report:
    """Gather the facts of this machine and run the checks of `sections` (a
    subset of SECTIONS, reported in SECTIONS order)."""
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise ValueError(f"unknown doctor sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    platform = platform or host()
    checks: list[Check] = []
    if "python" in sections:
        checks += python_checks(platform, python_facts())
    gpu = gpu_facts(platform) if {"gpu", "nvrtc", "torch", "live"} & set(sections) else None
    if "gpu" in sections:
        checks += gpu_checks(gpu)
    if "nvrtc" in sections:
        checks += nvrtc_checks(platform, gpu)
    torch = torch_facts() if {"torch", "live"} & set(sections) else None
    if "torch" in sections:
        checks += torch_checks(platform, torch, gpu)
    if "triton" in sections:
        checks += triton_checks(triton_facts(platform))
    if "cache" in sections:
        checks += cache_checks(platform, cache_facts(platform))
    if "live" in sections:
        checks += live_checks(gpu, torch)
    title = f"tritone {__tritone_version__} (Triton API {__version__}) doctor, {platform.name}"
    return Report(tuple(checks), title)


def doctor_command(out: TextIO, *, as_json: bool = False) -> int:
    """Run every check, write the report (text, or JSON with `as_json`) to `out`,
    and return the exit status: 0 when nothing failed, 1 otherwise."""
    report = run()
    out.write(report.json() if as_json else report.text())
    return report.exit_code
