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
    assert knobs.language.default_fp_fusion is True
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
    assert knobs.language.default_fp_fusion is False
    assert knobs.language.fp32_default == "ieee"
    assert knobs.cache.dir == "/tmp/cache"
    assert knobs.nvidia.target == "sm_80"
    assert knobs.nvidia.nvrtc_path == "/opt/nvrtc.so" and knobs.nvidia.libcuda_path == "/opt/libcuda.so.1"
    monkeypatch.setenv("TRITON_F32_DEFAULT", "fp16")
    with pytest.raises(ValueError, match="TRITON_F32_DEFAULT"):
        _ = knobs.language.fp32_default


def test_launch_option_defaults_follow_the_knobs(monkeypatch):
    from tritone.ir.target import KernelOptions

    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    monkeypatch.setenv("TRITON_F32_DEFAULT", "tf32x3")
    monkeypatch.setenv("TRITON_DEBUG", "1")
    options = KernelOptions.from_dict({})
    assert options.enable_fp_fusion is False
    assert options.default_dot_input_precision == "tf32x3"
    assert options.debug is True
    assert KernelOptions.from_dict({"enable_fp_fusion": True}).enable_fp_fusion is True


def test_disable_line_info(monkeypatch):
    monkeypatch.delenv("TRITON_DISABLE_LINE_INFO", raising=False)
    assert knobs.compilation.disable_line_info is False
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")
    assert knobs.compilation.disable_line_info is True


def test_full_traceback(monkeypatch):
    from tritone.errors import show_internal_frames

    for name in ("TRITONE_FULL_TRACEBACK", "TRITON_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    assert knobs.compilation.full_traceback is False and show_internal_frames() is False
    monkeypatch.setenv("TRITONE_FULL_TRACEBACK", "yes")
    assert knobs.compilation.full_traceback is True and show_internal_frames() is True
    monkeypatch.delenv("TRITONE_FULL_TRACEBACK")
    monkeypatch.setenv("TRITON_DEBUG", "1")
    assert knobs.compilation.full_traceback is False and show_internal_frames() is True


def test_knob_reader_gives_what_the_attributes_give(monkeypatch):
    names = ["TRITON_INTERPRET", "TRITONE_INTERPRET", "TRITON_DEBUG", "TRITON_F32_DEFAULT", "TRITON_CACHE_DIR"]
    for name in names:
        monkeypatch.delenv(name, raising=False)
    pairs = [(knobs.runtime, "interpret"), (knobs.compilation, "debug"), (knobs.language, "fp32_default"),
             (knobs.cache, "dir")]
    reader = knobs.KnobReader(*pairs)

    def attributes():
        return tuple(getattr(group, name) for group, name in pairs)

    assert reader() == attributes() == (False, False, None, None)
    monkeypatch.setenv("TRITONE_INTERPRET", "on")
    monkeypatch.setenv("TRITON_F32_DEFAULT", "ieee")
    assert reader() == attributes() == (True, False, "ieee", None)
    monkeypatch.delenv("TRITONE_INTERPRET")
    monkeypatch.delenv("TRITON_F32_DEFAULT")
    knobs.compilation.debug = True
    try:
        assert reader() == attributes() == (False, True, None, None)
    finally:
        del knobs.compilation.debug
    assert reader() == (False, False, None, None)
    # Knobs outside the reader's list do not matter to it.
    knobs.compilation.always_compile = True
    try:
        assert reader() == (False, False, None, None)
    finally:
        del knobs.compilation.always_compile
    # os.environ replaced by a plain mapping.
    monkeypatch.setattr("os.environ", {"TRITON_DEBUG": "yes", "TRITON_CACHE_DIR": "/c"})
    assert reader() == (False, True, None, "/c")


def test_hook_chain_calls_each_hook_once_in_order():
    calls = []
    first, second = (lambda *args, tag=tag: calls.append((tag, args)) for tag in ("first", "second"))
    chain = knobs.HookChain()
    assert not chain
    chain.add(first)
    chain.add(second)
    chain.add(first)  # already there: still called once
    chain(1, 2)
    assert chain and calls == [("first", (1, 2)), ("second", (1, 2))]
    calls.clear()
    unwinding = knobs.HookChain(reversed=True)
    unwinding.add(first)
    unwinding.add(second)
    unwinding("x")
    assert calls == [("second", ("x",)), ("first", ("x",))]
    unwinding.remove(second)
    unwinding.remove(second)  # absent: nothing happens
    calls.clear()
    unwinding("y")
    assert calls == [("first", ("y",))]


def test_scope_restores_assignments_hooks_and_environment(monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", "before")
    hook = object.__hash__
    with knobs.cache.scope():
        knobs.cache.dir = "assigned"
        assert knobs.cache.dir == "assigned"
    assert knobs.cache.dir == "before"
    with knobs.cache.scope():
        monkeypatch.setenv("TRITON_CACHE_DIR", "changed inside")
    assert knobs.cache.dir == "before"
    enter_chain = knobs.runtime.launch_enter_hook
    with knobs.runtime.scope():
        knobs.runtime.launch_enter_hook.add(hook)
        knobs.runtime.jit_cache_hook = hook
        knobs.runtime.interpret = True
        knobs.runtime.launch_exit_hook = hook
    assert knobs.runtime.launch_enter_hook is enter_chain and hook not in enter_chain.calls
    assert knobs.runtime.jit_cache_hook is None and isinstance(knobs.runtime.launch_exit_hook, knobs.HookChain)
    assert (id(knobs.runtime), "interpret") not in knobs._assigned


def test_compile_times_add_up():
    times = knobs.CompileTimes(ir_initialization=7, lowering_stages=[("ttir", 11), ("cuda", 13)], store_results=5)
    assert times.total_lowering == 24 and times.total == 36
    assert knobs.CompileTimes(3, [], 0).total == 3
