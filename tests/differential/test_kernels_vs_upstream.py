"""Every end-to-end kernel and per-op case of tests/kernels, run on upstream
Triton's interpreter and on tritone with the same inputs: the outputs must
agree (exactly for integers and memory, within each case's tolerance for
floats).

Cases where upstream's interpreter computes something other than upstream's
GPU (TRITON_SEMANTICS section 12) are excluded, each naming its row; tritone
follows the GPU there and tests/kernels checks it against numpy models of the
GPU instead.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.differential._harness import run_on_upstream, tritone_implementation
from tests.kernels._cases import EXACT, KERNEL_CASES, KernelCase, run_case
from tests.kernels._data import seed_for
from tests.kernels._op_cases import CAST_CASES, ELEMENTWISE_CASES
from tests.kernels._op_cases_blocks import BLOCK_CASES

ALL_CASES = KERNEL_CASES + ELEMENTWISE_CASES + CAST_CASES + BLOCK_CASES
COMPARED = [c for c in ALL_CASES if not c.excluded_from_differential]
EXCLUDED = [c for c in ALL_CASES if c.excluded_from_differential]


def _inputs(case: KernelCase):
    return case.make_inputs(np.random.default_rng(seed_for(case.name)))


@pytest.fixture(scope="module")
def upstream_results():
    jobs = [{"id": c.name, "source": str(c.source), "launcher": c.launcher, "inputs": _inputs(c)} for c in COMPARED]
    return run_on_upstream(jobs)


@pytest.fixture(scope="module")
def tritone():
    return tritone_implementation()


@pytest.mark.parametrize("case", COMPARED, ids=[c.name for c in COMPARED])
def test_tritone_matches_upstream_interpreter(case: KernelCase, upstream_results, tritone) -> None:
    upstream = upstream_results[case.name]
    assert "error" not in upstream, f"upstream's interpreter failed on {case.name}:\n{upstream.get('error')}"
    outputs = run_case(tritone.load(case.source), case, _inputs(case), tritone.device)
    assert sorted(outputs) == sorted(upstream["outputs"]), "different outputs"
    for name, expected in upstream["outputs"].items():
        agreement = case.agreement.get(name, EXACT)
        agreement.check(outputs[name], expected, f"{case.name}: output {name!r}")


def test_every_exclusion_names_a_divergence() -> None:
    for case in EXCLUDED:
        reason = case.excluded_from_differential
        assert reason.strip(), case.name
    # The list, for the record (pytest -s prints it).
    by_reason: dict[str, list[str]] = {}
    for case in EXCLUDED:
        by_reason.setdefault(case.excluded_from_differential, []).append(case.name)
    for reason, names in sorted(by_reason.items()):
        print(f"excluded ({len(names)}): {reason}: {', '.join(names)}")
