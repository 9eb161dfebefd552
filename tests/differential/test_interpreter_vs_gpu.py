"""tritone's two back ends held together: every end-to-end kernel case of
tests/kernels runs on the GPU and, with the same inputs, in tritone's CPU
interpreter (the reference semantics, which follows the GPU: DESIGN.md). The
outputs must agree exactly for integers and memory movement, and within each
case's agreement for floats (the GPU's exp, / and sqrt are approximate PTX,
its sums run in another order and `a*b + c` is one fma).

The kernels module is shared by both runs. Compiled kernels are cached per
launch site (`JITFunction.device_caches`, keyed by (target, device)), and the
launch reads TRITON_INTERPRET on every call (the dispatcher's fast path steps
aside while any launch knob variable is set), so the interpreter launch never
reuses the GPU's kernel, nor the GPU launch the interpreter's.

Needs a GPU (`gpu` marker); on one, run `python -m pytest
tests/differential/test_interpreter_vs_gpu.py -q`.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.differential._harness import tritone_implementation
from tests.kernels._cases import EXACT, KERNEL_CASES, Agreement, KernelCase, Outputs, run_case
from tests.kernels._data import seed_for
from tritone.backends import sites

pytestmark = pytest.mark.gpu

INTERPRET_VARIABLES = ("TRITON_INTERPRET", "TRITONE_INTERPRET")

def _agreement(case: KernelCase, name: str, output: torch.Tensor) -> Agreement:
    """How the two runs of `case` must agree on output `name`: exactly unless it
    is a float output with a tolerance of its own."""
    if not output.dtype.is_floating_point:
        return EXACT
    return case.agreement.get(name, EXACT)


def _run_on_gpu(module, case: KernelCase, inputs, monkeypatch: pytest.MonkeyPatch) -> Outputs:
    with monkeypatch.context() as scope:
        for variable in INTERPRET_VARIABLES:
            scope.delenv(variable, raising=False)
        assert sites.active_target().backend == "cuda", "the GPU run would not run on the GPU"
        return run_case(module, case, inputs, "cuda")


def _run_on_interpreter(module, case: KernelCase, inputs, monkeypatch: pytest.MonkeyPatch) -> Outputs:
    with monkeypatch.context() as scope:
        scope.setenv("TRITON_INTERPRET", "1")
        assert sites.launch_site() == sites.INTERPRETER_SITE, "TRITON_INTERPRET did not select the interpreter"
        return run_case(module, case, inputs, "cpu")


@pytest.fixture(scope="module")
def kernels():
    return tritone_implementation().load()


@pytest.mark.parametrize("case", KERNEL_CASES, ids=[c.name for c in KERNEL_CASES])
def test_interpreter_matches_gpu(case: KernelCase, kernels, monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = case.make_inputs(np.random.default_rng(seed_for(case.name)))
    on_gpu = _run_on_gpu(kernels, case, inputs, monkeypatch)
    interpreted = _run_on_interpreter(kernels, case, inputs, monkeypatch)
    assert sorted(interpreted) == sorted(on_gpu), "different outputs"
    for name, expected in on_gpu.items():
        _agreement(case, name, expected).check(interpreted[name], expected, f"{case.name}: output {name!r}")
