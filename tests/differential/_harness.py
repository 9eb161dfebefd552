"""The parent side of the differential tests: run jobs on upstream's
interpreter in a subprocess (`_upstream_runner.py`), the same jobs on tritone
in this process, and compare.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.differential._upstream_runner import IMPORT_FAILED
from tests.kernels._loader import Implementation, implementation_under_test

REPO_ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_TIMEOUT_S = 600


def run_on_upstream(jobs: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Results of `jobs` (see `_upstream_runner`) on upstream's interpreter.
    Skips the calling test when `import triton` fails in the subprocess."""
    with tempfile.TemporaryDirectory(prefix="tritone-differential-") as scratch:
        jobs_path = os.path.join(scratch, "jobs.pt")
        results_path = os.path.join(scratch, "results.pt")
        torch.save(jobs, jobs_path)
        env = dict(os.environ)
        env["TRITON_INTERPRET"] = "1"
        env.pop("TRITONE_TEST_IMPL", None)
        # Upstream answers `import triton` there even where this environment chose tritone.
        env["TRITONE_AS_TRITON"] = "0"
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        proc = subprocess.run([sys.executable, "-m", "tests.differential._upstream_runner", jobs_path, results_path],
                              cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=UPSTREAM_TIMEOUT_S)
        if proc.returncode == IMPORT_FAILED:
            pytest.skip(f"upstream Triton is not available here ({proc.stderr.strip()}); "
                        "the differential tests need it (Linux: pip install -e \".[test]\")")
        if proc.returncode != 0:
            raise RuntimeError(f"the upstream runner failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
        return torch.load(results_path, weights_only=False)


def tritone_implementation() -> Implementation:
    """tritone, on the device the end-to-end tests use."""
    impl = implementation_under_test()
    if impl.name == "tritone":
        return impl
    # TRITONE_TEST_IMPL=upstream validates tests/kernels; the differential
    # tests always compare tritone with upstream.
    sites = importlib.import_module("tritone.backends.sites")
    device = "cuda" if sites.active_target().backend == "cuda" else "cpu"
    return Implementation("tritone", importlib.import_module("tritone"), importlib.import_module("tritone.language"),
                          device, False)
