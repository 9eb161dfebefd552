"""`tritone.autotune` and `tritone.Config`: keys, pruning, hooks, failing
configs, the disk cache, TRITON_PRINT_AUTOTUNING and the progress line, on the
interpreter with a scripted benchmarker; and on a GPU (`gpu` marker) with the
real one."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone import knobs
from tritone.errors import CompilationError, OutOfResources, PTXASError
from tritone.runtime import Autotuner, autotuner
from tritone.runtime.autotuner import AutotunerError, SweepProgress


@triton.jit
def add_one_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


@triton.jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.atomic_add(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def grid(meta):
    return (triton.cdiv(meta["n"], meta["BLOCK"]),)


class ScriptedBench:
    """A `do_bench` that runs the call once (so hooks and compile errors happen)
    and reports the next of `times` (ms): configs are timed in order."""

    def __init__(self, times=None):
        self.times = list(times or [])
        self.calls = 0

    def __call__(self, kernel_call, quantiles):
        kernel_call()
        time = self.times[self.calls] if self.calls < len(self.times) else 1.0 + self.calls
        self.calls += 1
        return [time, time / 2, time * 2]


def blocks(*sizes, **options):
    return [triton.Config({"BLOCK": size}, **options) for size in sizes]


@pytest.fixture(autouse=True)
def quiet_knobs(monkeypatch, request):
    """No printing, notes or disk caching unless a test asks; kernels in the interpreter
    (with CPU tensors) except in the GPU tests."""
    for name in ("TRITON_PRINT_AUTOTUNING", "TRITON_CACHE_AUTOTUNING", "TRITON_INTERPRET", "TRITONE_INTERPRET"):
        monkeypatch.delenv(name, raising=False)
    if request.node.get_closest_marker("gpu") is None:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    # As if the interpreter's once-per-process note on untimed configs was given.
    monkeypatch.setattr(autotuner, "_told_configs_untimed", True)


def random_input(n, seed=None):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(n).astype(np.float32))


# ---------------------------------------------------------------- Config


def test_config_kwargs_hash_and_repr():
    config = triton.Config({"BLOCK": 64, "GROUP": 8}, num_warps=8, num_stages=2, maxnreg=128)
    assert config.all_kwargs() == {"BLOCK": 64, "GROUP": 8, "num_warps": 8, "num_ctas": 1, "num_stages": 2,
                                   "maxnreg": 128}
    assert "maxnreg" not in triton.Config({"BLOCK": 64}).all_kwargs()
    same = triton.Config({"GROUP": 8, "BLOCK": 64}, num_warps=8, num_stages=2, maxnreg=128)
    assert config == same and hash(config) == hash(same) and len({config, same}) == 1
    assert config != triton.Config({"BLOCK": 64, "GROUP": 8}, num_warps=4, num_stages=2, maxnreg=128)
    assert config != "BLOCK: 64"
    assert repr(config) == "Config({'BLOCK': 64, 'GROUP': 8}, num_warps=8, num_stages=2, maxnreg=128)"
    assert str(config) == "BLOCK: 64, GROUP: 8, num_warps: 8, num_ctas: 1, num_stages: 2, maxnreg: 128"
    hooked = triton.Config({"BLOCK": 64}, pre_hook=random_input)
    assert hooked != triton.Config({"BLOCK": 64}) and "pre_hook=" in repr(hooked)


def test_attributes_others_read():
    def prune(configs, named_args, **kwargs):
        return configs

    def model(**kwargs):
        return 1.0

    tuned = triton.autotune(blocks(16, 32), key=["n"], prune_configs_by={"early_config_prune": prune,
                            "perf_model": model, "top_k": 1})(add_one_kernel)
    assert isinstance(tuned, Autotuner) and isinstance(tuned, triton.KernelInterface)
    assert tuned.configs == blocks(16, 32) and tuned.keys == ["n"] and tuned.arg_names == ["x_ptr", "n", "BLOCK"]
    assert tuned.fn is add_one_kernel and tuned.base_fn is add_one_kernel.fn and tuned.cache == {}
    assert tuned.early_config_prune is prune and tuned.perf_model is model and tuned.configs_top_k == 1
    assert not tuned.user_defined_pre_hook and not tuned.user_defined_post_hook
    assert tuned.num_warmups is None and tuned.num_reps is None and tuned.use_cuda_graph is False
    assert triton.autotune([], key=[])(add_one_kernel).configs == [triton.Config({})]
    with pytest.warns(DeprecationWarning):
        legacy = triton.autotune(blocks(16), key=[], warmup=5, rep=7)(add_one_kernel)
    assert legacy.num_warmups == 5 and legacy.num_reps == 7
    with pytest.warns(UserWarning, match="'size' is not a parameter"):
        triton.autotune(blocks(16), key=["size"])(add_one_kernel)
    with pytest.raises(ValueError, match="reset_to_zero .* names \\['out'\\]"):
        triton.autotune(blocks(16), key=[], reset_to_zero=["out"])(add_one_kernel)


# ---------------------------------------------------------------- choosing and keys


def test_fastest_config_runs_and_is_cached_per_key():
    bench = ScriptedBench([3.0, 1.0, 2.0])
    tuned = triton.autotune(blocks(16, 32, 64), key=["n"], do_bench=bench, restore_value=["x_ptr"])(add_one_kernel)
    x = random_input(100)
    expected = x + 1
    tuned[grid](x, 100)
    assert bench.calls == 3 and tuned.best_config == triton.Config({"BLOCK": 32})
    torch.testing.assert_close(x, expected, rtol=0, atol=0)
    assert tuned.configs_timings[triton.Config({"BLOCK": 16})] == [3.0, 1.5, 6.0]
    assert list(tuned.cache) == [(100, "torch.float32")]

    tuned[grid](x, 100)  # same key: no tuning
    assert bench.calls == 3
    tuned[grid](x, 60)  # new key value
    assert bench.calls == 6
    tuned[grid](x.double(), 60)  # new dtype: part of the key
    assert bench.calls == 9
    assert set(tuned.cache) == {(100, "torch.float32"), (60, "torch.float32"), (60, "torch.float64")}


def test_non_key_arguments_do_not_retune():
    bench = ScriptedBench()
    tuned = triton.autotune(blocks(16, 32), key=[], do_bench=bench, restore_value=["x_ptr"])(add_one_kernel)
    tuned[grid](random_input(50), 50)
    tuned[grid](random_input(70), 70)
    assert bench.calls == 2 and list(tuned.cache) == [("torch.float32",)]


def test_single_config_runs_without_tuning():
    bench = ScriptedBench()
    tuned = triton.autotune(blocks(32), key=["n"], do_bench=bench)(add_one_kernel)
    x = random_input(40)
    expected = x + 1
    tuned[grid](x, 40)
    assert bench.calls == 0 and tuned.best_config == triton.Config({"BLOCK": 32})
    torch.testing.assert_close(x, expected, rtol=0, atol=0)


def test_interpreter_takes_the_first_config_that_compiles(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(autotuner, "_told_configs_untimed", False)
    tuned = triton.autotune(blocks(24, 32, 16), key=["n"])(add_one_kernel)
    x = random_input(90)
    expected = x + 1
    with pytest.warns(UserWarning, match="does not time configs: kernel add_one_kernel") as said:
        tuned[grid](x, 90)
        tuned[grid](random_input(70), 70)  # a new key: tuned again, without a second note
        triton.autotune(blocks(16, 32), key=["n"])(accumulate_kernel)[grid](random_input(40), random_input(40), 40)
    assert [str(w.message).count("does not time configs") for w in said] == [1]
    assert tuned.best_config == triton.Config({"BLOCK": 32}) and tuned.configs_timings == {}
    assert "power of 2" in tuned.config_failures[triton.Config({"BLOCK": 24})]
    torch.testing.assert_close(x, expected, rtol=0, atol=0)


def test_tuned_meta_parameters_cannot_be_passed():
    tuned = triton.autotune(blocks(16, 32), key=[], do_bench=ScriptedBench())(add_one_kernel)
    with pytest.raises(ValueError, match="BLOCK given at launch"):
        tuned[grid](random_input(8), 8, BLOCK=16)
    with pytest.raises(ValueError, match="num_warps given at launch"):
        tuned[grid](random_input(8), 8, num_warps=2)
    tuned[grid](random_input(8), 8)  # the choice made: later launches take it from the cache
    with pytest.raises(ValueError, match="BLOCK given at launch"):
        tuned[grid](random_input(8), 8, BLOCK=16)
    single = triton.autotune(blocks(32), key=[])(add_one_kernel)
    with pytest.raises(ValueError, match="BLOCK given at launch"):
        single[grid](random_input(8), 8, BLOCK=16)


def test_warmup_compiles_every_pruned_config():
    tuned = triton.autotune(blocks(16, 32, 64), key=["n"],
                            prune_configs_by={"early_config_prune": lambda c, a, **k: c[1:]})(add_one_kernel)
    kernels = tuned.warmup(torch.float32, 64, grid=(1,))
    assert len(kernels) == 2 and all(k.name == "add_one_kernel" for k in kernels)
    assert tuned.nargs is None


# ---------------------------------------------------------------- pruning


def test_early_config_prune_sees_named_arguments():
    seen = []

    def prune(configs, named_args, **kwargs):
        seen.append((named_args["n"], sorted(kwargs)))
        return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n"]]

    bench = ScriptedBench()
    tuned = triton.autotune(blocks(16, 32, 64, 128), key=["n"], do_bench=bench, restore_value=["x_ptr"],
                            prune_configs_by={"early_config_prune": prune})(add_one_kernel)
    tuned[grid](random_input(40), 40)
    assert seen == [(40, ["grid", "warmup"])] and bench.calls == 2
    assert set(tuned.configs_timings) == set(blocks(16, 32))


def test_perf_model_keeps_top_k():
    def model(x_ptr, n, BLOCK, num_warps, num_stages, num_ctas, **kwargs):
        return abs(BLOCK - 32)  # predicts 32 best, then 16 and 64

    for top_k, expected in ((2, {16, 32}), (1, {32}), (0.5, {16, 32}), (1.0, {16, 32, 64, 128})):
        tuned = triton.autotune(blocks(64, 16, 128, 32), key=["n"], do_bench=ScriptedBench(), restore_value=["x_ptr"],
                                prune_configs_by={"perf_model": model, "top_k": top_k})(add_one_kernel)
        tuned[grid](random_input(64), 64)
        tried = set(tuned.configs_timings) or {tuned.best_config}
        assert {c.kwargs["BLOCK"] for c in tried} == expected, top_k


def test_pruning_errors():
    tuned = triton.autotune(blocks(16, 32), key=[], do_bench=ScriptedBench(),
                            prune_configs_by={"early_config_prune": lambda c, a, **k: []})(add_one_kernel)
    with pytest.raises(AutotunerError) as raised:
        tuned[grid](random_input(8), 8)
    assert str(raised.value) == ("Autotuner error: No valid autotuner configs after pruning. "
                                 "`early_config_prune` should return at least one config.")
    if sys.version_info >= (3, 11):
        assert raised.value.__notes__ == ["early_config_prune of kernel add_one_kernel returned []"]
    tuned = triton.autotune(blocks(16, 32), key=[], do_bench=ScriptedBench(),
                            prune_configs_by={"perf_model": lambda **k: 0, "top_k": "2"})(add_one_kernel)
    with pytest.raises(TypeError, match="top_k"):
        tuned[grid](random_input(8), 8)


# ---------------------------------------------------------------- hooks


def test_reset_to_zero_keeps_an_accumulating_kernel_correct():
    bench = ScriptedBench([2.0, 1.0, 3.0, 4.0])
    tuned = triton.autotune(blocks(16, 32, 64, 128), key=["n"], do_bench=bench,
                            reset_to_zero=["out_ptr"])(accumulate_kernel)
    x = random_input(200)
    out = torch.full((200,), float("nan"))
    tuned[grid](x, out, 200)
    assert bench.calls == 4
    torch.testing.assert_close(out, x, rtol=0, atol=0)


def test_restore_value_keeps_an_in_place_kernel_correct():
    tuned = triton.autotune(blocks(16, 32, 64), key=["n"], do_bench=ScriptedBench(),
                            restore_value=["x_ptr"])(add_one_kernel)
    x = random_input(150)
    expected = x + 1
    tuned[grid](x, 150)
    torch.testing.assert_close(x, expected, rtol=0, atol=0)
    array = np.random.default_rng().standard_normal(150).astype(np.float32)
    expected_array = array + 1
    tuned[grid](array, 150)  # numpy arrays are reset and restored too (a new key: the dtype differs)
    np.testing.assert_array_equal(array, expected_array)


def test_user_hooks_replace_the_defaults():
    events = []

    def pre_hook(kwargs, reset_only=False):
        events.append(("pre", kwargs["BLOCK"], reset_only))

    def post_hook(kwargs, exception):
        events.append(("post", kwargs["BLOCK"], exception))

    def config_hook(kwargs):
        events.append(("config", kwargs["BLOCK"], sorted(kwargs)))

    configs = [triton.Config({"BLOCK": 16}, pre_hook=config_hook), triton.Config({"BLOCK": 32})]
    tuned = triton.autotune(configs, key=[], do_bench=ScriptedBench([1.0, 2.0]), pre_hook=pre_hook,
                            post_hook=post_hook, restore_value=["x_ptr"])(add_one_kernel)
    assert tuned.user_defined_pre_hook and tuned.user_defined_post_hook
    tuned[grid](random_input(20), 20)
    names = ["BLOCK", "grid", "n", "num_ctas", "num_stages", "num_warps", "warmup", "x_ptr"]
    assert events == [
        ("config", 16, names), ("pre", 16, False), ("post", 16, None),
        ("pre", 32, False), ("post", 32, None),
        ("pre", 16, True),  # after tuning: reset only, before the real launch
        ("config", 16, names),  # the chosen config's own hook runs before the real launch
    ]


def test_post_hook_sees_the_exception():
    seen = []
    tuned = triton.autotune(blocks(24, 32), key=[], do_bench=ScriptedBench(), restore_value=["x_ptr"],
                            post_hook=lambda kwargs, exception: seen.append(type(exception)))(add_one_kernel)
    tuned[grid](random_input(20), 20)
    assert tuned.best_config == triton.Config({"BLOCK": 32})
    assert seen == [CompilationError, type(None)]


# ---------------------------------------------------------------- failing configs


def _raising(error):
    def hook(kwargs):
        raise error

    return hook


def test_failing_configs_are_skipped_with_their_reason():
    configs = [
        triton.Config({"BLOCK": 16}, pre_hook=_raising(OutOfResources(300000, 232448, "shared memory"))),
        triton.Config({"BLOCK": 24}),  # not a power of 2: a CompilationError from this config's constexpr
        triton.Config({"BLOCK": 32}, pre_hook=_raising(PTXASError("ptxas: too many registers"))),
        triton.Config({"BLOCK": 64}),
    ]
    tuned = triton.autotune(configs, key=["n"], do_bench=ScriptedBench(), restore_value=["x_ptr"])(add_one_kernel)
    x = random_input(100)
    expected = x + 1
    tuned[grid](x, 100)
    assert tuned.best_config == configs[3]
    torch.testing.assert_close(x, expected, rtol=0, atol=0)
    failures = tuned.config_failures
    assert set(failures) == set(configs[:3])
    assert failures[configs[0]].startswith("OutOfResources: out of resource: shared memory")
    assert failures[configs[1]].startswith("CompilationError") and "power of 2" in failures[configs[1]]
    assert failures[configs[2]] == "PTXASError: ptxas: too many registers"
    assert tuned.configs_timings[configs[0]] == [float("inf")] * 3


def test_all_configs_failing_lists_each_config():
    configs = [triton.Config({"BLOCK": 12}), triton.Config({"BLOCK": 24}),
               triton.Config({"BLOCK": 32}, pre_hook=_raising(OutOfResources(9, 8, "registers")))]
    tuned = triton.autotune(configs, key=["n"], do_bench=ScriptedBench())(add_one_kernel)
    with pytest.raises(AutotunerError) as raised:
        tuned[grid](random_input(10), 10)
    message = str(raised.value)
    assert "add_one_kernel" in message and "no config compiles and fits" in message
    for config in configs:
        assert repr(config) in message
    assert "got 12" in message and "got 24" in message and "out of resource: registers" in message
    assert [type(error) for _, error in raised.value.failures] == [CompilationError, CompilationError,
                                                                  OutOfResources]


def test_all_configs_failing_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    tuned = triton.autotune(blocks(12, 24), key=["n"])(add_one_kernel)
    with pytest.raises(AutotunerError, match="(?s)BLOCK': 12.*got 12.*BLOCK': 24.*got 24"):
        tuned[grid](random_input(10), 10)


def test_other_errors_propagate():
    tuned = triton.autotune(blocks(16, 32), key=[], do_bench=ScriptedBench(), restore_value=["x_ptr"],
                            pre_hook=_raising(KeyError("mine")))(add_one_kernel)
    with pytest.raises(KeyError, match="mine"):
        tuned[grid](random_input(8), 8)


# ---------------------------------------------------------------- knobs, printing, progress


def test_knobs(monkeypatch):
    assert knobs.autotuning.print is False and knobs.autotuning.cache is False
    monkeypatch.setenv("TRITON_PRINT_AUTOTUNING", "yes")
    monkeypatch.setenv("TRITON_CACHE_AUTOTUNING", "On")
    assert knobs.autotuning.print is True and knobs.autotuning.cache is True
    monkeypatch.setenv("TRITON_CACHE_AUTOTUNING", "0")
    assert knobs.autotuning.cache is False
    knobs.autotuning.print = False
    try:
        assert knobs.autotuning.print is False
    finally:
        del knobs.autotuning.print


def test_print_autotuning(monkeypatch, capsys):
    monkeypatch.setenv("TRITON_PRINT_AUTOTUNING", "1")
    tuned = triton.autotune(blocks(16, 24, 32), key=["n"], do_bench=ScriptedBench([2.0, 1.5]),
                            restore_value=["x_ptr"])(add_one_kernel)
    tuned[grid](random_input(30), 30)
    out = capsys.readouterr().out
    assert "Config({'BLOCK': 16}, num_warps=4, num_stages=3): 2.0000 ms" in out
    assert "Config({'BLOCK': 24}, num_warps=4, num_stages=3): skipped, CompilationError" in out
    assert "best config: Config({'BLOCK': 32}, num_warps=4, num_stages=3)" in out
    assert "for key (30, 'torch.float32')" in out and "s, best config" in out
    tuned[grid](random_input(30), 30)
    assert capsys.readouterr().out == ""


def _run_with_stderr(monkeypatch, stream, n_configs):
    monkeypatch.setattr(sys, "stderr", stream)
    tuned = triton.autotune(blocks(*[16 * 2 ** i for i in range(n_configs)]), key=["n"],
                            do_bench=ScriptedBench([5.0, 3.0, 4.0, 1.0, 2.0]), restore_value=["x_ptr"])(add_one_kernel)
    tuned[grid](random_input(64), 64)
    stream.flush()


def _read_available(fd):
    data = b""
    while select.select([fd], [], [], 0.05)[0]:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.decode()


def test_progress_line_on_a_terminal(monkeypatch):
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as stream:
        _run_with_stderr(monkeypatch, stream, 5)
        text = _read_available(master)
    os.close(master)
    for index in range(1, 6):
        assert f"autotuning add_one_kernel: config {index} of 5" in text
    assert "config 5 of 5, best so far 1 ms (BLOCK: 128," in text
    assert "config 2 of 5, best so far 5 ms (BLOCK: 16," in text
    assert text.endswith("\r") and text.rstrip("\r").split("\r")[-1].strip() == ""  # erased at the end


def test_progress_line_silent_on_a_pipe_and_for_few_configs(monkeypatch):
    pty = pytest.importorskip("pty")
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as stream:
        _run_with_stderr(monkeypatch, stream, 5)
    with os.fdopen(read_end) as pipe:
        assert pipe.read() == ""
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as stream:
        _run_with_stderr(monkeypatch, stream, 3)
        assert _read_available(master) == ""
    os.close(master)


def test_progress_line_fits_the_terminal(monkeypatch):
    class Terminal:
        def __init__(self):
            self.text = ""

        def isatty(self):
            return True

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    monkeypatch.setenv("COLUMNS", "40")
    terminal = Terminal()
    progress = SweepProgress("a_kernel_with_a_long_name", 6, terminal)
    progress.update(0, None)
    progress.update(1, (triton.Config({"BLOCK_M": 128, "BLOCK_N": 256}), 0.123))
    progress.close()
    lines = terminal.text.split("\r")
    assert all(len(line) <= 39 for line in lines)
    assert lines[1] == "autotuning a_kernel_with_a_long_name: c"[:39]


# ---------------------------------------------------------------- the disk cache


def test_disk_cache_skips_benchmarking_in_a_fresh_autotuner(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    configs = blocks(16, 24, 32, 64)
    first_bench = ScriptedBench([4.0, 1.0, 2.0, 3.0])
    first = triton.autotune(configs, key=["n"], do_bench=first_bench, cache_results=True,
                            restore_value=["x_ptr"])(add_one_kernel)
    first[grid](random_input(80), 80)
    assert first_bench.calls == 3 and first.best_config == configs[2]  # 24 fails to compile
    entries = list(tmp_path.rglob("add_one_kernel.autotune.json"))
    assert len(entries) == 1
    stored = json.loads(entries[0].read_text())["metadata"]
    assert stored["best"] == 2 and stored["timings"][0] == [4.0, 2.0, 8.0] and "1" in stored["failures"]

    # A new Autotuner (as in a new process) reads the choice instead of benchmarking.
    second_bench = ScriptedBench()
    second = triton.autotune(configs, key=["n"], do_bench=second_bench, cache_results=True,
                             restore_value=["x_ptr"])(add_one_kernel)
    x = random_input(80)
    expected = x + 1
    second[grid](x, 80)
    assert second_bench.calls == 0 and second.best_config == configs[2]
    assert second.configs_timings[configs[0]] == [4.0, 2.0, 8.0] and "power of 2" in second.config_failures[configs[1]]
    torch.testing.assert_close(x, expected, rtol=0, atol=0)

    # Another key, other configs, or caching off: benchmarked again.
    third_bench = ScriptedBench()
    third = triton.autotune(configs, key=["n"], do_bench=third_bench, cache_results=True,
                            restore_value=["x_ptr"])(add_one_kernel)
    third[grid](random_input(81), 81)
    assert third_bench.calls == 3
    other_bench = ScriptedBench()
    triton.autotune(blocks(16, 32, 128), key=["n"], do_bench=other_bench, cache_results=True,
                    restore_value=["x_ptr"])(add_one_kernel)[grid](random_input(80), 80)
    assert other_bench.calls == 3
    off_bench = ScriptedBench()
    triton.autotune(configs, key=["n"], do_bench=off_bench, restore_value=["x_ptr"])(add_one_kernel)[grid](
        random_input(80), 80)
    assert off_bench.calls == 3


def test_cache_autotuning_knob_and_print(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITON_CACHE_AUTOTUNING", "1")
    configs = blocks(16, 32)
    triton.autotune(configs, key=["n"], do_bench=ScriptedBench([2.0, 1.0]))(accumulate_kernel)[grid](
        random_input(33), torch.zeros(33), 33)
    monkeypatch.setenv("TRITON_PRINT_AUTOTUNING", "1")
    capsys.readouterr()
    bench = ScriptedBench()
    again = triton.autotune(configs, key=["n"], do_bench=bench)(accumulate_kernel)
    again[grid](random_input(33), torch.zeros(33), 33)
    assert bench.calls == 0 and again.best_config == configs[1]
    assert "read from the disk cache" in capsys.readouterr().out


# ---------------------------------------------------------------- on a GPU

GPU_MATMUL = '''
import json, sys, time
import torch
import tritone as triton
import tritone.language as tl
from tritone import testing

benchmarked = []


def counting_do_bench(kernel_call, quantiles):
    benchmarked.append(1)
    return testing.do_bench(kernel_call, quantiles=quantiles, warmup=5, rep=20)


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=w, num_stages=s)
             for m, n, k, w, s in [(64, 64, 32, 4, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3),
                                   (128, 128, 32, 8, 3), (64, 64, 64, 4, 2), (128, 128, 64, 8, 2),
                                   (32, 64, 32, 2, 4), (64, 32, 32, 2, 4)]],
    key=["M", "N", "K"], do_bench=counting_do_bench, cache_results=True)
@triton.jit
def matmul(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


M, N, K = 2048, 2048, 1024
a = torch.randn(M, K, device="cuda", dtype=torch.float16)
b = torch.randn(K, N, device="cuda", dtype=torch.float16)
c = torch.empty(M, N, device="cuda", dtype=torch.float16)
matmul[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))](a, b, c, M, N, K)
torch.cuda.synchronize()
torch.testing.assert_close(c.float(), (a.float() @ b.float()), rtol=1e-2, atol=1e-1)


def time_config(config):
    # Each config measured on its own, outside the tuner: the best of three medians.
    grid = (triton.cdiv(M, config.kwargs["BLOCK_M"]), triton.cdiv(N, config.kwargs["BLOCK_N"]))
    run = lambda: matmul.fn[grid](a, b, c, M, N, K, **config.all_kwargs())  # noqa: E731
    return min(testing.do_bench(run, warmup=25, rep=100, return_mode="median") for _ in range(3))


times = {repr(config): time_config(config) for config in matmul.configs}
print(json.dumps({"benchmarked": len(benchmarked), "best": repr(matmul.best_config), "times": times}))
'''


@pytest.mark.gpu
def test_gpu_disk_cache_second_process_does_not_benchmark(tmp_path):
    script = tmp_path / "matmul_tuning.py"
    script.write_text(textwrap.dedent(GPU_MATMUL))
    package_root = str(Path(triton.__file__).resolve().parent.parent)
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    env.pop("TRITON_INTERPRET", None)
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs[0]["benchmarked"] >= 8
    assert runs[1]["benchmarked"] == 0 and runs[1]["best"] == runs[0]["best"]
    # The tuner's choice is within 5 % of the fastest config measured on its own.
    times = runs[0]["times"]
    assert times[runs[0]["best"]] <= 1.05 * min(times.values()), times


@pytest.mark.gpu
def test_gpu_reset_to_zero_and_restore_value_while_tuning():
    rng = np.random.default_rng()
    n = 1 << 16
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    out = torch.full((n,), float("nan"), device="cuda")
    accumulate = triton.autotune(blocks(128, 256, 512, 1024), key=["n"], reset_to_zero=["out_ptr"])(
        accumulate_kernel)
    accumulate[grid](x, out, n)
    torch.testing.assert_close(out, x, rtol=0, atol=0)

    y = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    expected = y + 1
    add_one = triton.autotune(blocks(128, 256, 512, 1024), key=["n"], restore_value=["x_ptr"])(add_one_kernel)
    add_one[grid](y, n)
    torch.testing.assert_close(y, expected, rtol=0, atol=0)
    assert len(add_one.configs_timings) == 4
