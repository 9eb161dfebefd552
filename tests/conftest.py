"""Shared pytest set-up: the `gpu` marker, skipped only where no GPU can run
kernels (whatever TRITON_INTERPRET says: GPU tests set up their own mode)."""

from __future__ import annotations

import pytest


def _why_no_gpu() -> str | None:
    """None when kernels can run on a GPU here: the driver library loads and
    initialises, it sees a device, and an NVRTC for that device is found. Else
    what is missing."""
    from tritone.runtime import cuda_driver, libs

    try:
        driver = cuda_driver.driver()
        if driver.device_count() < 1:
            return "the CUDA driver sees no GPU"
        libs.nvrtc_for(driver.device(0).arch, driver_version=driver.driver_version())
    except Exception as error:  # any failure of the probe means no GPU tests, with its reason
        lines = str(error).strip().splitlines()
        return f"{type(error).__name__}: {lines[0] if lines else ''}"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (skipped where none is usable)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    why = _why_no_gpu()
    if why is None:
        return
    skip = pytest.mark.skip(reason=f"no usable NVIDIA GPU ({why})")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
