"""The compiler's passes and the one ordered list they run in.

Every pass is a module with `run(module, ctx) -> None` that rewrites the
module in place. `run_pipeline` runs a list of them, verifying the IR after
each one and dumping it when asked.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import MappingProxyType, ModuleType
from typing import Any, Mapping, Sequence

from ..ir.core import Module
from ..ir.printer import print_module
from ..ir.verifier import IRVerificationError
from ..ir.verifier import verify as verify_module
from . import cse, dce, fold, inline, map_elementwise


@dataclass(frozen=True)
class PassContext:
    """What a pass may know beyond the module: the compile options (num_warps,
    debug, target, ...), read-only."""

    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


# Target-independent clean-up of the frontend's IR, in order. map_elementwise
# needs the scalar functions inlined into its regions.
FRONTEND_PASSES: tuple[ModuleType, ...] = (inline, map_elementwise, fold, cse, dce)


def pass_name(pass_module: ModuleType) -> str:
    """The name of a pass in dumps and errors: its module's `PASS_NAME` when it
    sets one, else the module's last component (`inline`, `fold`, ...)."""
    return getattr(pass_module, "PASS_NAME", None) or pass_module.__name__.rsplit(".", 1)[-1]


def run_pipeline(module: Module, options: dict | None = None, *, dump: bool = False, verify: bool = True,
                 passes: Sequence[ModuleType] | None = None) -> Module:
    """Runs `passes` (FRONTEND_PASSES by default) over `module` in order and returns it.

    With `verify`, the IR is checked before the first pass and after each one,
    and an IRVerificationError says which pass broke it. With `dump`, the IR
    is printed to stderr after every pass under a header
    `// -----// IR Dump After <pass> //----- //`.
    """
    ctx = PassContext(MappingProxyType(dict(options or {})))
    if verify:
        _verify(module, "before the first pass")
    for pass_module in FRONTEND_PASSES if passes is None else passes:
        name = pass_name(pass_module)
        pass_module.run(module, ctx)
        if dump:
            sys.stderr.write(f"// -----// IR Dump After {name} //----- //\n{print_module(module)}\n")
            sys.stderr.flush()
        if verify:
            _verify(module, f"after pass {name}")
    return module


def _verify(module: Module, when: str) -> None:
    try:
        verify_module(module)
    except IRVerificationError as exc:
        raise IRVerificationError(f"{when}: {exc}") from exc
