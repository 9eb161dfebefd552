"""tritone's IR: typed block-level SSA with structured regions (see docs/IR.md)."""

from .core import Builder, Function, Location, Module, Operation, Region, Value  # noqa: F401
from .parser import parse_module  # noqa: F401
from .printer import print_function, print_module, print_op  # noqa: F401
from .types import block_type, dtype, parse_type, pointer_type, type_text  # noqa: F401
from .verifier import IRVerificationError, verify  # noqa: F401
