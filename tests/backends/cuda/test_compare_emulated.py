"""64-bit integer compares of a widened 32-bit operand (`offsets == label` with
an int64 label, as in a cross-entropy kernel) are generated as a 32-bit
compare plus a range check of the other side; run on the CPU emulator
against numpy, with 64-bit values whose low 32 bits match but whose high bits
do not (a truncating compare would call those equal)."""

from __future__ import annotations

import cuda_emulator
import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir

pytestmark = pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")

N = 256


@triton.jit
def widened_compare_kernel(A, B, Label, Eq, Ne, EqLabel, N: tl.constexpr, UNSIGNED: tl.constexpr):
    offsets = tl.arange(0, N)
    a = tl.load(A + offsets)
    if UNSIGNED:
        a = a.to(tl.uint32, bitcast=True)
    b = tl.load(B + offsets)
    label = tl.load(Label)
    tl.store(Eq + offsets, (a.to(tl.int64) == b).to(tl.int8))
    tl.store(Ne + offsets, (b != a.to(tl.int64)).to(tl.int8))
    tl.store(EqLabel + offsets, (a.to(tl.int64) == label).to(tl.int8))


@pytest.mark.parametrize("unsigned", [False, True])
def test_widened_compares_match_numpy(unsigned):
    signature = {"A": "*i32", "B": "*i64", "Label": "*i64", "Eq": "*i8", "Ne": "*i8", "EqLabel": "*i8",
                 "N": "constexpr", "UNSIGNED": "constexpr"}
    constexprs = {"N": N, "UNSIGNED": unsigned}
    module = make_ir(ASTSource(widened_compare_kernel, signature, constexprs), GPUTarget("cuda", 90, 32),
                     {"num_warps": 2})
    source, _, metadata = generate_cuda(module, 90, {"num_warps": 2})
    # the compares are 32-bit ones on the narrow operand
    assert source.count(f" == ({'unsigned' if unsigned else 'int'})") >= 3
    rng = np.random.default_rng(7 + unsigned)
    a = rng.integers(-2**31, 2**31, size=N, dtype=np.int64).astype(np.int32)
    wide = a.view(np.uint32).astype(np.int64) if unsigned else a.astype(np.int64)
    b = wide.copy()
    shifted = rng.random(N) < 0.4
    b[shifted] += rng.choice([-1, 1, 3], size=int(shifted.sum())) << 32  # same low bits, other value
    other = rng.random(N) < 0.2
    b[other] = rng.integers(-2**40, 2**40, size=int(other.sum()))
    label = np.array([wide[17]], dtype=np.int64)
    eq, ne, eq_label = (np.full(N, 9, dtype=np.int8) for _ in range(3))
    cuda_emulator.Emulator(source, 2, metadata["shared"]).launch((1,), a, b, label, eq, ne, eq_label)
    np.testing.assert_array_equal(eq, (wide == b).astype(np.int8))
    np.testing.assert_array_equal(ne, (b != wide).astype(np.int8))
    np.testing.assert_array_equal(eq_label, (wide == label[0]).astype(np.int8))
    for high in (1, -1):
        label[0] = wide[17] + (high << 32)
        cuda_emulator.Emulator(source, 2, metadata["shared"]).launch((1,), a, b, label, eq, ne, eq_label)
        np.testing.assert_array_equal(eq_label, (wide == label[0]).astype(np.int8))
