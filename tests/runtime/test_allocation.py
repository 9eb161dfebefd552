"""`set_allocator` and `NullAllocator`, the "none set" allocator Triton's tests reset to."""

from __future__ import annotations

import random

import pytest

from tritone.runtime import _allocation


def test_null_allocator_refuses_and_names_set_allocator():
    size = random.randint(1, 1 << 20)
    with pytest.raises(RuntimeError, match=f"{size} bytes .* triton.set_allocator"):
        _allocation.NullAllocator()(size, 128, None)


def test_set_allocator_keeps_a_null_allocator_and_rejects_non_callables():
    null = _allocation.NullAllocator()
    _allocation.set_allocator(null)
    try:
        assert _allocation.allocator.get() is null
    finally:
        _allocation.set_allocator(None)
    with pytest.raises(TypeError, match="must be callable"):
        _allocation.set_allocator(42)
