"""Triton's compile API: `compile(ASTSource(fn, signature, constexprs, attrs),
target=GPUTarget(...), options={...})` -> `CompiledKernel`, or `compile` of an
IR file (`IRSource`); `make_backend(target)` for a target's options."""

from ..errors import CompilationError
from .compiler import ASTSource, CompiledKernel, IRSource, LazyDict, compile, get_cache_key, make_backend

__all__ = ["ASTSource", "CompilationError", "CompiledKernel", "IRSource", "LazyDict", "compile", "get_cache_key",
           "make_backend"]
