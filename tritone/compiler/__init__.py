"""Triton's compile API: `compile(ASTSource(fn, signature, constexprs, attrs),
target=GPUTarget(...), options={...})` -> `CompiledKernel`, or `compile` of an
IR file (`IRSource`); `make_backend(target)` for a target's options."""

from .compiler import ASTSource, CompiledKernel, IRSource, LazyDict, compile, get_cache_key, make_backend

# importing the submodule also makes `triton.compiler.errors` an attribute, as code reaches it
from .errors import CompilationError

__all__ = ["ASTSource", "CompilationError", "CompiledKernel", "IRSource", "LazyDict", "compile", "get_cache_key",
           "make_backend"]
