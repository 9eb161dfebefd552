"""A cubin for compute capability 9.0 or later targets the architecture-specific
`sm_XYa` (as Triton compiles them: Triton's test_compile_only looks for
`.target sm_100a`); older targets compile for the plain `sm_XY`."""

from __future__ import annotations

import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource


@triton.jit
def add_kernel(a, b, c):
    idx = tl.arange(0, 32)
    tl.store(c + idx, tl.load(a + idx) + tl.load(b + idx))


@pytest.mark.parametrize("arch, target", [(80, "sm_80"), (86, "sm_86"), (90, "sm_90a"), (100, "sm_100a"),
                                          (120, "sm_120a")])
def test_ptx_target_of_each_compute_capability(arch, target):
    src = ASTSource(fn=add_kernel, signature={"a": "*fp32", "b": "*fp32", "c": "*fp32"}, constexprs={})
    compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32))
    targets = [line.split()[1] for line in compiled.asm["ptx"].splitlines() if line.startswith(".target")]
    assert targets == [target]
    assert ".address_size 64" in compiled.asm["ptx"]
    assert compiled.asm["cubin"][:4] == b"\x7fELF"
