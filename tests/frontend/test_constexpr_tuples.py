"""A tuple bound to a constexpr name (a kernel's constexpr parameter, a local
annotated `tl.constexpr`) is a constexpr of that tuple, as in Triton: its
`type` is `constexpr_type` of the Python tuple, and it still indexes, unpacks and
has a length as a tuple. Kernels run in the CPU interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import tritone.language as tl
from tests.frontend._helpers import compile_ir
from tritone.errors import CompilationError
from tritone.interpreter import run_kernel
from tritone.language.core import constexpr_type
from tritone.runtime.jit import jit

RNG = np.random.default_rng()


@jit
def constexpr_tuple_kernel(Y, VALUES: tl.constexpr):
    local: tl.constexpr = (5, 6, 7)
    tl.static_assert(local.type == constexpr_type((5, 6, 7)))
    tl.static_assert(VALUES.type == constexpr_type((5, 6, 7)))
    copied: tl.constexpr = VALUES
    tl.static_assert(copied.type == constexpr_type((5, 6, 7)))
    tl.static_assert(copied == local)
    a, b, c = VALUES
    tl.store(Y + tl.arange(0, 4), tl.full((4,), a * 100 + b * 10 + c + VALUES[2] * 1000 + len(local) * 10000,
                                          tl.int32))


def test_tuple_constexprs_have_a_constexpr_type():
    y = RNG.integers(-100, 100, 4).astype(np.int32)
    module = compile_ir(constexpr_tuple_kernel, {"Y": "*i32"}, {"VALUES": (5, 6, 7)})
    run_kernel(module, (1, 1, 1), [y])
    np.testing.assert_array_equal(y, np.full(4, 567 + 7000 + 3 * 10000, np.int32))


@jit
def wrong_tuple_kernel(Y, VALUES: tl.constexpr):
    tl.static_assert(VALUES.type == constexpr_type((5, 6, 8)))


def test_a_different_tuple_has_a_different_type():
    with pytest.raises(CompilationError):
        compile_ir(wrong_tuple_kernel, {"Y": "*i32"}, {"VALUES": (5, 6, 7)})
