"""Triton's compile API: `compile(ASTSource(fn, signature, constexprs, attrs),
target=GPUTarget(...), options={...})` -> `CompiledKernel`."""

from ..errors import CompilationError
from .compiler import ASTSource, CompiledKernel, compile

__all__ = ["ASTSource", "CompilationError", "CompiledKernel", "compile"]
