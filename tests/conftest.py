"""Shared pytest set-up: the `gpu` marker, skipped only where no GPU can run
kernels (whatever TRITON_INTERPRET says: GPU tests set up their own mode); and
private cache folders, so that the suite writes nothing into the user's."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

# Where tritone (TRITON_CACHE_DIR), upstream Triton (TRITON_HOME holds its
# ~/.triton) and XDG-following tools such as matplotlib (XDG_CACHE_HOME) would
# otherwise write under the user's home; the subprocesses of tests inherit them.
CACHE_VARIABLES = {"TRITON_CACHE_DIR": "tritone", "TRITON_HOME": "triton-home", "XDG_CACHE_HOME": "xdg-cache"}
_saved_environment: dict[str, str | None] = {}
_private_root: list[str] = []


def _why_no_gpu() -> str | None:
    """None when kernels can run on a GPU here: the driver library loads and
    initialises, it sees a device, and an NVRTC for that device is found. Else
    what is missing."""
    from tritone.backends.cuda.bindings import driver_api, libs

    try:
        driver = driver_api.driver()
        if driver.device_count() < 1:
            return "the CUDA driver sees no GPU"
        libs.nvrtc_for(driver.device(0).arch, driver_version=driver.driver_version())
    except Exception as error:  # any failure of the probe means no GPU tests, with its reason
        lines = str(error).strip().splitlines()
        return f"{type(error).__name__}: {lines[0] if lines else ''}"
    return None


def _why_not_two_gpus() -> str | None:
    """None when kernels can run on two GPUs or more here, else why not."""
    why = _why_no_gpu()
    if why is not None:
        return f"no usable NVIDIA GPU ({why})"
    from tritone.backends.cuda.bindings import driver_api

    count = driver_api.driver().device_count()
    return None if count >= 2 else f"needs 2 GPUs or more, the CUDA driver sees {count}"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (skipped where none is usable)")
    config.addinivalue_line("markers", "multi_gpu: needs two NVIDIA GPUs or more in one process (skipped with "
                                       "fewer, saying how many)")
    root = tempfile.mkdtemp(prefix="tritone-tests-")
    _private_root.append(root)
    for variable, folder in CACHE_VARIABLES.items():
        _saved_environment[variable] = os.environ.get(variable)
        os.environ[variable] = os.path.join(root, folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    for variable, value in _saved_environment.items():
        if value is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = value
    while _private_root:
        shutil.rmtree(_private_root.pop(), ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(item.get_closest_marker("multi_gpu") for item in items):
        why_not = _why_not_two_gpus()
        if why_not is not None:
            skip = pytest.mark.skip(reason=why_not)
            for item in items:
                if item.get_closest_marker("multi_gpu"):
                    item.add_marker(skip)
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    why = _why_no_gpu()
    if why is None:
        return
    skip = pytest.mark.skip(reason=f"no usable NVIDIA GPU ({why})")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _interpreter_autotune_note_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts as if this process had already been told, once, that the
    interpreter's autotuner does not time configs: which test autotunes first
    must not decide where that note appears (tests/runtime/test_autotuner.py
    turns it back on to check the note itself)."""
    from tritone.runtime import autotuner

    monkeypatch.setattr(autotuner, "_told_configs_untimed", True)
