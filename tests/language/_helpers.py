"""Build IR directly with a `Semantic`, as the frontend would, and look at it."""

from __future__ import annotations

import pytest

from tritone.ir import verify
from tritone.ir.core import Builder, Function, Module
from tritone.ir.types import block_type, dtype, pointer_type
from tritone.language import core as tl
from tritone.language.semantic import Semantic


class Kernel:
    """A function under construction: arguments of chosen types, a builder at the
    end of its body, and a `Semantic` whose `call_jit_function` calls builtins
    directly (combine functions in these tests are plain builtins)."""

    def __init__(self, **options):
        self.fn = Function("kernel", [])
        self.builder = Builder(self.fn.body)
        self.sem = Semantic(self.builder, options)
        self.sem.call_jit_function = lambda fn, args: fn(*args, _semantic=self.sem)

    def arg(self, ty: dtype | str, shape=None) -> tl.tensor:
        """A new function argument of scalar type `ty`, or a block of `shape`."""
        if isinstance(ty, str):
            ty = tl.dtype(ty) if not ty.startswith("*") else pointer_type(tl.dtype(ty[1:]))
        if shape:
            ty = block_type(ty, shape)
        value = self.fn.body.add_arg(ty)
        return tl.tensor(value, ty)

    def op_names(self) -> list[str]:
        return [op.name for op in self.fn.walk()]

    def ops(self, name: str):
        return [op for op in self.fn.walk() if op.name == name]

    def verify(self) -> Module:
        """Close the function with `return` and run the IR verifier on it."""
        self.builder.create("return")
        module = Module()
        module.add(self.fn)
        verify(module)
        return module


# tritone dtype name -> upstream dtype, for comparisons with upstream's rules
def upstream_dtype(ty: dtype):
    """Upstream Triton's dtype of the same name; skips the test where upstream
    triton is not installed (Windows)."""
    return pytest.importorskip("triton.language").dtype(tl.dtype_name(ty))


SCALAR_TYPES = [tl.dtype(name) for name in ("i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
                                            "fp8e5", "fp8e4nv", "fp16", "bf16", "fp32", "fp64")]
