"""Shared pytest set-up: the `gpu` marker, skipped where no GPU is usable."""

from __future__ import annotations

import pytest


def _gpu_usable() -> bool:
    from tritone.runtime.launch import active_target

    return active_target().backend == "cuda"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU (skipped where none is usable)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _gpu_usable():
        return
    skip = pytest.mark.skip(reason="no usable NVIDIA GPU (kernels run in the CPU interpreter)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
