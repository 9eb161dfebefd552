"""bench/tutorials.py on the CPU: a tutorial file loaded as a module whose `triton`
imports tritone answers (top-level and inside functions), the table it prints, the
autotuner choices it reports, and its refusals."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import tritone
import tritone.language
from bench import tutorials

TUTORIAL = textwrap.dedent('''
    import triton
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    LOADED_WITH = triton.__name__


    @triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"])
    @triton.jit
    def double(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)


    def package_inside_a_function():
        import triton.language as language
        return language.__name__


    if __name__ == "__main__":
        raise SystemExit("a tutorial's __main__ part must not run")
''')


@pytest.fixture
def tutorial_file(tmp_path: Path) -> Path:
    path = tmp_path / "99-example.py"
    path.write_text(TUTORIAL, encoding="utf-8")
    return path


def test_a_tutorial_loaded_for_tritone_imports_tritone(tutorial_file: Path) -> None:
    module = tutorials.load_tutorial(tutorial_file, "tritone")
    assert module.LOADED_WITH == "tritone" and module.triton is tritone and module.tl is tritone.language
    assert module.TensorDescriptor is tritone.tools.tensor_descriptor.TensorDescriptor
    assert isinstance(module.double, tritone.runtime.autotuner.Autotuner)
    assert module.package_inside_a_function() == "tritone.language"
    assert module.__file__ == str(tutorial_file)  # the kernels' source is read from the tutorial itself


def test_the_choices_an_autotuner_made_are_reported(tutorial_file: Path) -> None:
    module = tutorials.load_tutorial(tutorial_file, "tritone")
    assert tutorials._autotuner_choices(module) == {}
    module.double.cache[(7,)] = module.double.configs[1]
    assert tutorials._autotuner_choices(module) == {("double", (7,)): module.double.configs[1]}


def test_the_importer_leaves_other_packages_alone() -> None:
    import_ = tutorials.importer("tritone")
    assert import_("textwrap") is textwrap
    assert import_("tritone.language", fromlist=["constexpr"]) is tritone.language
    assert import_("triton", fromlist=None) is tritone


def test_the_table_gives_ratios_and_names_what_was_not_timed(capsys) -> None:
    table = tutorials.Table()
    table.add("09 tma fp16 8192^3", {"torch": 640.0, "triton": 600.0, "tritone": 660.0})
    table.add("06 fwd d64 ws 4096 tokens", {"torch": 470.0, "triton": "wrong (error nan of the tolerance)",
                                            "tritone": 410.0})
    table.choices.append("  09 tma fp16 8192^3, tritone: matmul_kernel_tma BLOCK_SIZE_M: 128")
    table.print()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["case", "torch", "triton", "tritone", "tt/triton", "tt/torch"]
    assert lines[1].split()[-5:] == ["640.0", "600.0", "660.0", "1.100", "1.031"]
    assert lines[2].split()[-5:] == ["470.0", "-", "410.0", "-", "0.872"]
    assert lines[3:] == ["not timed:", "  06 fwd d64 ws 4096 tokens, triton: wrong (error nan of the tolerance)",
                         "configs the autotuners chose:",
                         "  09 tma fp16 8192^3, tritone: matmul_kernel_tma BLOCK_SIZE_M: 128"]


def test_a_folder_without_the_tutorials_is_refused(tmp_path: Path, capsys) -> None:
    assert tutorials.main(["--tutorials", str(tmp_path), "--only", "matmul"]) == 2
    assert "lacks 09-persistent-matmul.py" in capsys.readouterr().err


class _Tutorial09:
    """What matmul_methods reads of tutorial 09's module, and a record of the kernels called."""

    def __init__(self, hopper: bool, tensor_desc: bool = True):
        self.HAS_WARP_SPECIALIZE = True
        self.HAS_HOST_TENSOR_DESC = True
        self.HAS_TENSOR_DESC = tensor_desc
        self.hopper = hopper
        self.called: list = []

    def is_hopper(self) -> bool:
        return self.hopper

    def __getattr__(self, name: str):
        if not name.startswith("matmul"):
            raise AttributeError(name)
        return lambda *args: self.called.append((name, args[-1] if len(args) == 3 else None))


def test_the_matmul_forms_are_the_tutorials_and_can_be_narrowed() -> None:
    import numpy as np

    a, b = np.zeros((4, 2)), np.zeros((3, 2))
    hopper = _Tutorial09(hopper=True)
    methods = tutorials.matmul_methods(hopper, a, b)
    # on Hopper the tutorial skips host descriptors with warp specialization
    assert [form for form, _ in methods] == ["naive", "persistent", "tma persistent", "tma", "descriptor persistent",
                                             "descriptor persistent ws"]
    assert set(tutorials.MATMUL_FORMS) == {form for form, _ in methods}
    for _, call in methods:
        call(hopper)
    assert hopper.called[2:] == [("matmul_tma_persistent", False), ("matmul_tma", False),
                                 ("matmul_descriptor_persistent", False), ("matmul_descriptor_persistent", True)]
    blackwell = tutorials.matmul_methods(_Tutorial09(hopper=False, tensor_desc=False), a, b)
    assert [form for form, _ in blackwell] == ["naive", "persistent", "tma persistent", "tma"]
    narrowed = tutorials.matmul_methods(hopper, a, b, ("tma persistent", "descriptor persistent ws"))
    assert [form for form, _ in narrowed] == ["tma persistent", "descriptor persistent ws"]


def test_an_unknown_form_is_refused(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        tutorials.main(["--tutorials", str(tmp_path), "--forms", "tiled"])
    assert exited.value.code == 2 and "invalid choice: 'tiled'" in capsys.readouterr().err


def simulate_cuda_events(monkeypatch, log: list, elapsed) -> None:
    """torch.cuda's events and synchronize, simulated: recording an event appends "event"
    to `log`, and `elapsed(start index, end index)` in `log` gives their milliseconds."""
    import torch

    class Event:
        def __init__(self, enable_timing: bool = False):
            self.at = None

        def record(self) -> None:
            self.at = len(log)
            log.append("event")

        def elapsed_time(self, end) -> float:
            return elapsed(self.at, end.at)

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)


def test_each_round_queues_an_untimed_call_before_its_first_event(monkeypatch) -> None:
    """time_in_turn on a simulated CUDA: the event pair of a round brackets only its
    timed calls, behind one call queued before them."""
    from bench import timing

    log: list = []
    # "milliseconds": the number of calls between the two events
    simulate_cuda_events(monkeypatch, log, lambda start, end: float(end - start - 1))
    calls = {"a": lambda: log.append("a"), "b": lambda: log.append("b")}
    times = timing.time_in_turn(calls, rounds=2, per_round=3)
    assert times == {"a": 1.0, "b": 1.0}
    round_of = {name: [name, "event", name, name, name, "event"] for name in calls}
    assert log == ["a", "b", *round_of["a"], *round_of["b"], *round_of["b"], *round_of["a"]]


def test_flushed_turns_time_each_call_alone_after_a_flush(monkeypatch) -> None:
    """time_in_turn(flush=True) on a simulated CUDA: every timed call sits alone between
    its two events, the cache flush before the first of them; a round's figure is the
    mean of its calls."""
    import torch

    from bench import timing

    log: list = []
    durations = iter([2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 20.0])

    def elapsed(start: int, end: int) -> float:
        assert log[start + 1:end] in (["a"], ["b"])  # one call, no flush, between the events
        return next(durations)

    simulate_cuda_events(monkeypatch, log, elapsed)

    class Buffer:
        def zero_(self) -> None:
            log.append("flush")

    def empty(*shape, dtype=None, device=None):
        assert shape == (timing.FLUSH_BYTES // 4,) and device == "cuda"
        return Buffer()

    monkeypatch.setattr(torch, "empty", empty)
    calls = {"a": lambda: log.append("a"), "b": lambda: log.append("b")}
    times = timing.time_in_turn(calls, rounds=2, per_round=2, flush=True)
    # the turns a, b, b, a take the durations in pairs: a (2, 4), b (6, 8), b (10, 12), a (14, 20)
    alone = {name: ["flush", "event", name, "event"] for name in calls}
    assert log == ["a", "b", *alone["a"] * 2, *alone["b"] * 4, *alone["a"] * 2]
    assert times == {"a": (3.0 + 17.0) / 2, "b": (7.0 + 11.0) / 2}


def run_sweep(tutorial_file: Path, monkeypatch, ms_at, fails=lambda side, block: False):
    """`tutorials.sweep` over the example tutorial's two configs (BLOCK 16 and 32), loaded
    for both sides, on a simulated GPU: a side's call leaves its autotuner's best_config
    as a launch does (before compiling), raises where `fails(side, block)`, and times
    `ms_at(side, block)` milliseconds. Returns the table and the modules."""
    import torch

    from bench import timing

    modules = {side: tutorials.load_tutorial(tutorial_file, "tritone") for side in tutorials.SIDES}
    pinned: dict = {}

    def call(side):
        tuner = modules[side].double
        tuner.best_config = tuner.configs[0]
        pinned[side] = tuner.configs[0].kwargs["BLOCK"]
        if fails(side, pinned[side]):
            raise RuntimeError(f"BLOCK {pinned[side]} does not compile")

    runs = {side: (lambda side=side: call(side)) for side in tutorials.SIDES}
    monkeypatch.setattr(timing, "time_in_turn", lambda calls, rounds, per_round, flush=False: {
        side: ms_at(side, pinned[side]) for side in calls})
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    table = tutorials.Table()
    tutorials.sweep(table, "case", 1e12, runs, lambda side: 0.0, 2, 3, modules, flush=False)
    return table, modules


def test_a_sweep_pins_both_sides_to_each_config_in_turn(tutorial_file: Path, monkeypatch) -> None:
    """--sweep: each config of the autotuner a case's call goes through is timed with both
    sides pinned to it, then each side's best is a row of its own; the autotuners get
    their configs back afterwards."""
    ms_at = {"triton": {16: 2.0, 32: 4.0}, "tritone": {16: 2.5, 32: 1.6}}  # tritone's best is BLOCK 32
    table, modules = run_sweep(tutorial_file, monkeypatch, lambda side, block: ms_at[side][block])
    assert [case for case, _ in table.rows] == [
        "case [BLOCK 16, w4 s3]", "case [BLOCK 32, w4 s3]", "case best"]
    assert table.rows[0][1] == {"triton": 500.0, "tritone": 400.0}  # 1e12 flops in 2 and 2.5 ms
    assert table.rows[-1][1] == {"triton": 500.0, "tritone": 625.0}
    assert table.choices == ["  case, triton: best [BLOCK 16, w4 s3]", "  case, tritone: best [BLOCK 32, w4 s3]"]
    for module in modules.values():
        assert [c.kwargs["BLOCK"] for c in module.double.configs] == [16, 32]


def test_a_sweep_names_a_side_whose_config_fails(tutorial_file: Path, monkeypatch) -> None:
    table, _ = run_sweep(tutorial_file, monkeypatch, lambda side, block: 1.0,
                         fails=lambda side, block: side == "triton" and block == 32)
    cells = dict(table.rows)
    assert cells["case [BLOCK 32, w4 s3]"]["triton"].startswith("fails: RuntimeError: BLOCK 32 does not compile")
    assert cells["case [BLOCK 32, w4 s3]"]["tritone"] == 1000.0
    assert cells["case best"] == {"triton": 1000.0, "tritone": 1000.0}


def test_a_sweep_finds_the_autotuner_even_when_the_first_config_fails(tutorial_file: Path, monkeypatch) -> None:
    table, _ = run_sweep(tutorial_file, monkeypatch, lambda side, block: 2.0, fails=lambda side, block: block == 16)
    cells = dict(table.rows)
    assert all(cell.startswith("fails: RuntimeError") for cell in cells["case [BLOCK 16, w4 s3]"].values())
    assert cells["case best"] == {"triton": 500.0, "tritone": 500.0}


def test_a_sweep_names_a_call_that_goes_through_no_autotuner(tutorial_file: Path) -> None:
    modules = {side: tutorials.load_tutorial(tutorial_file, "tritone") for side in tutorials.SIDES}
    runs = {side: (lambda: None) for side in tutorials.SIDES}
    table = tutorials.Table()
    tutorials.sweep(table, "case", 1e12, runs, lambda side: 0.0, 2, 3, modules, flush=False)
    assert table.rows == [("case", {side: "not swept: the call goes through 0 autotuners"
                                    for side in tutorials.SIDES})]
    for module in modules.values():
        assert [c.kwargs["BLOCK"] for c in module.double.configs] == [16, 32]


def test_tutorial_timing_flushes_attention_only() -> None:
    assert tutorials.flushed("attention", "tutorial") and not tutorials.flushed("matmul", "tutorial")
    assert not tutorials.flushed("attention", "back-to-back") and tutorials.flushed("matmul", "flushed")
