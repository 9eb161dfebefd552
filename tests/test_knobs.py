"""tritone.knobs: environment read on each access, assignment overrides."""

from __future__ import annotations

import pytest

from tritone import knobs


@pytest.mark.parametrize("text", ["1", "true", "TRUE", "yes", "On", "y"])
def test_truthy_values(monkeypatch, text):
    monkeypatch.setenv("TRITON_INTERPRET", text)
    assert knobs.runtime.interpret is True


@pytest.mark.parametrize("text", ["0", "false", "no", "off", "", "2"])
def test_falsy_values(monkeypatch, text):
    monkeypatch.setenv("TRITON_INTERPRET", text)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    assert knobs.runtime.interpret is False


def test_read_on_every_access(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    assert knobs.runtime.interpret is False
    monkeypatch.setenv("TRITONE_INTERPRET", "1")
    assert knobs.runtime.interpret is True


def test_assignment_overrides_until_deleted(monkeypatch):
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    knobs.compilation.always_compile = False
    try:
        assert knobs.compilation.always_compile is False
    finally:
        del knobs.compilation.always_compile
    assert knobs.compilation.always_compile is True


def test_defaults_and_values(monkeypatch):
    for name in ("TRITON_DEFAULT_FP_FUSION", "TRITON_F32_DEFAULT", "TRITON_CACHE_DIR", "TRITONE_DUMP_IR",
                 "TRITON_DEBUG", "TRITONE_NVRTC_PATH", "TRITONE_LIBCUDA_PATH", "TRITONE_TARGET"):
        monkeypatch.delenv(name, raising=False)
    assert knobs.compilation.default_fp_fusion is True
    assert knobs.language.fp32_default is None
    assert knobs.cache.dir is None
    assert knobs.compilation.dump_ir is False and knobs.compilation.debug is False
    assert knobs.nvidia.nvrtc_path is None and knobs.nvidia.target is None
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    monkeypatch.setenv("TRITON_F32_DEFAULT", "IEEE")
    monkeypatch.setenv("TRITON_CACHE_DIR", "/tmp/cache")
    monkeypatch.setenv("TRITONE_TARGET", "sm_80")
    monkeypatch.setenv("TRITONE_NVRTC_PATH", "/opt/nvrtc.so")
    monkeypatch.setenv("TRITONE_LIBCUDA_PATH", "/opt/libcuda.so.1")
    assert knobs.compilation.default_fp_fusion is False
    assert knobs.language.fp32_default == "ieee"
    assert knobs.cache.dir == "/tmp/cache"
    assert knobs.nvidia.target == "sm_80"
    assert knobs.nvidia.nvrtc_path == "/opt/nvrtc.so" and knobs.nvidia.libcuda_path == "/opt/libcuda.so.1"
    monkeypatch.setenv("TRITON_F32_DEFAULT", "fp16")
    with pytest.raises(ValueError, match="TRITON_F32_DEFAULT"):
        _ = knobs.language.fp32_default


def test_launch_option_defaults_follow_the_knobs(monkeypatch):
    from tritone.backends.compiler import KernelOptions

    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    monkeypatch.setenv("TRITON_F32_DEFAULT", "tf32x3")
    monkeypatch.setenv("TRITON_DEBUG", "1")
    options = KernelOptions.from_dict({})
    assert options.enable_fp_fusion is False
    assert options.default_dot_input_precision == "tf32x3"
    assert options.debug is True
    assert KernelOptions.from_dict({"enable_fp_fusion": True}).enable_fp_fusion is True
