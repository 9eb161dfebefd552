"""Random small kernels (tests/differential/_fuzz.py) on upstream Triton's
interpreter and on tritone: the outputs must agree.

A run makes TRITONE_FUZZ_CASES kernels (default 500) from one seed, printed at
the start of the run and in every failure; TRITONE_FUZZ_SEED=<seed> repeats a
run, and `-k caseNNNN` one case of it. All kernels go into one generated file
and upstream runs them in a single subprocess, so start-up costs are paid once.
What the generator avoids, and why, is `_fuzz.EXCLUSIONS`.
"""

from __future__ import annotations

import contextlib
import os
import secrets

import pytest

from tests.differential import _fuzz
from tests.differential._harness import run_on_upstream, tritone_implementation
from tests.kernels._cases import Agreement

CASE_COUNT = int(os.environ.get("TRITONE_FUZZ_CASES", "500"))
SEED = int(os.environ["TRITONE_FUZZ_SEED"]) if os.environ.get("TRITONE_FUZZ_SEED") else secrets.randbits(31)


def announce_seed(config) -> str:
    """Say which seed this run uses, in the terminal report of every run (a
    plain print would be captured and shown only when a test fails)."""
    line = f"differential fuzz: seed {SEED}, {CASE_COUNT} cases (TRITONE_FUZZ_SEED={SEED} repeats this run)"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        print(line)
        return line
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        reporter.write_line("")
        reporter.write_line(line)
    return line


@pytest.fixture(scope="module")
def fuzz_run(tmp_path_factory, pytestconfig):
    announce_seed(pytestconfig)
    cases = [_fuzz.generate_case(SEED, i) for i in range(CASE_COUNT)]
    path = _fuzz.write_module(cases, tmp_path_factory.mktemp("fuzz") / f"fuzz_kernels_{SEED}.py")
    jobs = [{"id": c.index, "source": str(path), "launcher": "run_fuzz", "inputs": c.inputs} for c in cases]
    upstream = run_on_upstream(jobs)
    tritone = tritone_implementation()
    return cases, path, upstream, tritone, tritone.load(path)


@pytest.mark.parametrize("index", range(CASE_COUNT), ids=[f"case{i:04d}" for i in range(CASE_COUNT)])
def test_random_kernel(index: int, fuzz_run) -> None:
    cases, _, upstream_results, tritone, module = fuzz_run
    case = cases[index]
    upstream = upstream_results[index]
    about = _fuzz.describe(case, SEED)
    assert "error" not in upstream, f"generator bug: upstream's interpreter rejected\n{about}\n{upstream['error']}"
    try:
        outputs = module.run_fuzz(**_fuzz.to_device(case.inputs, tritone.device))
    except Exception as error:
        raise AssertionError(f"tritone failed on\n{about}") from error
    expected = upstream["outputs"]["out"]
    agreement: Agreement = case.agreement
    try:
        agreement.check(outputs["out"].cpu(), expected, "out")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{about}") from None


def test_exclusions_name_their_rows() -> None:
    for avoided, row in _fuzz.EXCLUSIONS:
        assert avoided and row.split(":")[0].split(",")[0] in ("12", "14", "1.8"), (avoided, row)


def test_the_seed_goes_to_the_terminal_report() -> None:
    written = []

    class Reporter:
        def write_line(self, text: str) -> None:
            written.append(text)

    class PluginManager:
        def get_plugin(self, name: str):
            return Reporter() if name == "terminalreporter" else None

    class Config:
        pluginmanager = PluginManager()

    announce_seed(Config())
    assert any(f"seed {SEED}" in text and f"TRITONE_FUZZ_SEED={SEED}" in text for text in written)
