"""The `torch_side` fixture: torch's own code run once, in a child process where
tritone answers `import triton` (`_torch_side.py`), its findings as a dict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def torch_side() -> dict:
    pytest.importorskip("torch", reason="these checks run torch's own code")
    env = {**os.environ, "TRITONE_AS_TRITON": "1", "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    run = subprocess.run([sys.executable, "-m", "tests.inductor_contract._torch_side"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])
