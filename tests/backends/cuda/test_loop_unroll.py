"""`tl.range(..., loop_unroll_factor=n)` unrolls the loop n times in the PTX
(`#pragma unroll n` in the generated C++; 1 keeps it rolled), with a remainder
loop when the trip count is not known."""

from __future__ import annotations

import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler.compiler import ASTSource


@triton.jit
def unrolled_atomics(dst, n, unroll_factor: tl.constexpr):
    pid = tl.program_id(axis=0)
    for i in tl.range(0, n, loop_unroll_factor=unroll_factor):
        tl.atomic_add(dst + pid, i + pid)


@triton.jit
def plain_atomics(dst, n):
    pid = tl.program_id(axis=0)
    for i in tl.range(0, n):
        tl.atomic_add(dst + pid, i + pid)


def _compile(fn, constexprs):
    sig = {"dst": "*fp32", "n": "i32", **{name: "constexpr" for name in constexprs}}
    return triton.compile(ASTSource(fn, sig, constexprs), target=GPUTarget("cuda", 90, 32))


@pytest.mark.parametrize("factor", [1, 2, 5, 8])
def test_loop_unroll_factor_copies_the_body(factor):
    compiled = _compile(unrolled_atomics, {"unroll_factor": factor})
    source = compiled.asm["cuda"].splitlines()
    pragma = source.index(f"#pragma unroll {factor}")
    assert source[pragma + 1].lstrip().startswith("for (")
    atomics = compiled.asm["ptx"].count("atom.global")
    # factor copies in the unrolled loop, plus one in the remainder loop when unrolled
    assert atomics == (1 if factor == 1 else factor + 1)


def test_loop_without_factor_has_no_pragma():
    compiled = _compile(plain_atomics, {})
    assert not any(line.startswith("#pragma unroll ") for line in compiled.asm["cuda"].splitlines())


@pytest.mark.gpu
@pytest.mark.parametrize("factor", [1, 3, 8])
def test_unrolled_loop_runs_every_trip_on_the_gpu(factor):
    import torch

    n = int(torch.randint(5, 40, (1,)).item())
    programs = 4
    dst = torch.full((programs,), 0.5, dtype=torch.float32, device="cuda")
    unrolled_atomics[(programs,)](dst, n, unroll_factor=factor)
    expected = torch.tensor([0.5 + sum(i + pid for i in range(n)) for pid in range(programs)])
    torch.testing.assert_close(dst.cpu(), expected)
