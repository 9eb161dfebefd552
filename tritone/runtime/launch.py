"""`kernel[grid](*args, **kwargs)`: bind the arguments, find or compile the
kernel for their specialization and the options, resolve the grid, run.

Compiled kernels are kept per kernel in `fn.device_caches[target]`, keyed by
(specialization, options).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import knobs
from ..backends.compiler import INTERPRETER_TARGET, GPUTarget, KernelOptions
from ..compiler import compiler
from ..language.core import constexpr
from .specialize import CONSTEXPR, DIVISIBLE, UnknownKeywordError, make_binder

if TYPE_CHECKING:
    from .jit import JITFunction

# Launch keywords that are not compile options.
_LAUNCH_ONLY_KEYWORDS = frozenset({"stream"})


def active_target() -> GPUTarget:
    """Where kernels run now. The one place that chooses between GPU and CPU:
    the CUDA backend is not part of tritone yet, so every kernel runs in the CPU
    interpreter (as `TRITON_INTERPRET=1` asks for explicitly)."""
    return INTERPRETER_TARGET


def normalize_grid(grid: Any, kernel_name: str) -> tuple[int, int, int]:
    """A grid of 1-3 ints (or constexprs) as three ints, missing dimensions 1."""
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"kernel {kernel_name}: the grid must have 1 to 3 dimensions, got {grid!r}")
    result = []
    for dim in dims:
        value = dim.value if isinstance(dim, constexpr) else dim
        try:
            value = int(value)
        except (TypeError, ValueError):
            raise TypeError(f"kernel {kernel_name}: grid dimensions must be integers, got {grid!r}") from None
        if value < 0:
            raise ValueError(f"kernel {kernel_name}: grid dimensions must not be negative, got {grid!r}")
        result.append(value)
    while len(result) < 3:
        result.append(1)
    return result[0], result[1], result[2]


def _source_for(fn: JITFunction, bound: dict[str, Any], specialization: tuple) -> compiler.ASTSource:
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    attrs: dict[tuple[int, ...], list] = {}
    for param, (type_name, attribute) in zip(fn.params, specialization):
        if type_name == CONSTEXPR:
            value = bound[param.name]
            if isinstance(value, constexpr):
                value = value.value
            constexprs[param.name] = value.item() if isinstance(value, np.generic) else value
        elif attribute == DIVISIBLE:
            attrs[(param.num,)] = [["tt.divisibility", 16]]
        signature[param.name] = type_name
    return compiler.ASTSource(fn, signature, constexprs, attrs)


def _unknown_keyword(fn: JITFunction, name: str) -> UnknownKeywordError:
    return UnknownKeywordError(
        f"Keyword argument {name} was specified but unrecognised (kernel {fn.__name__} has parameters "
        f"{', '.join(fn.arg_names)}; launch options are {', '.join(sorted(KernelOptions.FIELD_NAMES))}, stream)")


# (launch keywords, debug default, knob values) -> KernelOptions: options are
# rebuilt only when something they depend on changes.
_options_memo: dict[tuple, KernelOptions] = {}


def _options(extra: dict[str, Any], debug_default: bool) -> KernelOptions:
    key = (tuple(sorted(extra.items())), debug_default, knobs.compilation.default_fp_fusion,
           knobs.language.fp32_default, knobs.compilation.debug)
    options = _options_memo.get(key)
    if options is None:
        options = _options_memo[key] = KernelOptions.from_dict(extra, debug_default=debug_default)
    return options


def launch(fn: JITFunction, args: tuple, kwargs: dict[str, Any], *, grid, warmup: bool) -> compiler.CompiledKernel:
    """Compile `fn` for these arguments if not cached and, unless `warmup`, run it
    over `grid`. Returns the CompiledKernel."""
    binder = fn._binder
    if binder is None:
        binder = fn._binder = make_binder(fn)
    bound, specialization, extra = binder(*args, **kwargs)
    stream = extra.pop("stream", None)
    for name in extra:
        if name not in KernelOptions.FIELD_NAMES:
            raise _unknown_keyword(fn, name)
    for hook in fn.pre_run_hooks:
        hook(*args, **kwargs)

    options = _options(extra, bool(fn.debug))
    target = active_target()
    cache = fn.device_caches.setdefault(target, {})
    key = (specialization, options)
    kernel = None if knobs.compilation.always_compile else cache.get(key)
    if kernel is None:
        kernel = compiler.compile(_source_for(fn, bound, specialization), target=target, options=options)
        cache[key] = kernel
    else:
        fn.check_globals_unchanged()
    if warmup:
        return kernel

    kernel._init_handles()
    grid_3 = normalize_grid(grid(bound) if callable(grid) else grid, fn.__name__)
    values = list(bound.values())
    metadata = kernel.launch_metadata(grid_3, stream, *values)
    kernel.run(*grid_3, stream, kernel.function, kernel.packed_metadata, metadata,
               knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *values)
    return kernel
