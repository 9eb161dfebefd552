"""A ternary whose two sides only act (`tl.store(...) if c else tl.store(...)`),
which Triton accepts: with a run-time condition it is an `if` op without
results, with a compile-time one only the chosen side is compiled. Run in the
CPU interpreter on random inputs against numpy."""

from __future__ import annotations

import numpy as np

import tritone.language as tl
from tests.frontend._helpers import compile_ir, ops_named
from tritone.interpreter import run_kernel
from tritone.runtime.jit import jit

RNG = np.random.default_rng()
BLOCK = 16


@jit
def store_one_side(X, A, B, OUT, FIRST: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(OUT + offs, x * 2) if pid % 2 == 0 else tl.store(OUT + offs, -x)
    tl.store(A + offs, x) if FIRST else tl.store(B + offs, x)


def test_a_ternary_of_stores_is_an_if_without_results():
    module = compile_ir(store_one_side, {"X": "*fp32", "A": "*fp32", "B": "*fp32", "OUT": "*fp32"},
                        {"FIRST": True, "BLOCK": BLOCK})
    (branch,) = ops_named(module, "if")
    assert branch.results == []
    assert len(ops_named(module, "store")) == 3  # two in the `if`, one for the constexpr side

    programs = 4
    x = RNG.standard_normal(programs * BLOCK).astype(np.float32)
    a, b, out = (np.full_like(x, np.nan) for _ in range(3))
    run_kernel(module, (programs,), [x, a, b, out])
    even = (np.arange(x.size) // BLOCK) % 2 == 0
    np.testing.assert_array_equal(out, np.where(even, x * 2, -x))
    np.testing.assert_array_equal(a, x)
    assert np.isnan(b).all()
