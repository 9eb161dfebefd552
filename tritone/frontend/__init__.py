"""The frontend: Python AST of a `@jit` function -> IR module (see docs/FRONTEND.md)."""

from .codegen import ast_to_ir

__all__ = ["ast_to_ir"]
