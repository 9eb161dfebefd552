"""`compile(ASTSource(...), target, options)` -> `CompiledKernel`: Triton's
compile API, the path TorchInductor uses, and the one `kernel[grid](...)` uses.

Pipeline: `frontend.ast_to_ir` -> `passes.run_pipeline` -> (CUDA backend, to
come) . Until the CUDA backend lands, a `CompiledKernel` holds the optimised IR
(`asm["ttir"]`) and runs on the CPU interpreter; it has no cubin, and loading
it for a CUDA target raises an error saying so.
"""

from __future__ import annotations

import hashlib
from collections import namedtuple
from typing import TYPE_CHECKING, Any

from ..backends.compiler import INTERPRETER_TARGET, GPUTarget, KernelOptions

if TYPE_CHECKING:
    from ..ir.core import Module
    from ..runtime.jit import JITFunction

CONSTEXPR = "constexpr"
DIVISIBILITY = "tt.divisibility"


class ASTSource:
    """A `@jit` function with its signature fixed: `signature` maps parameter
    names to type strings (`"*fp32"`, `"i32"`, `"constexpr"`), `constexprs`
    maps names or `(index,)` tuples to values, `attrs` maps `(index,)` to
    `[["tt.divisibility", 16]]`-style lists."""

    ext = "ttir"

    def __init__(self, fn: JITFunction, signature: dict[str, str], constexprs: dict | None = None,
                 attrs: dict | None = None):
        self.fn = fn
        self.name = fn.__name__
        unknown = [name for name in signature if name not in fn.arg_names]
        if unknown:
            raise TypeError(f"kernel {self.name} has no parameter {unknown[0]!r} (signature of ASTSource)")
        self.signature = dict(signature)
        self.constants: dict[tuple[int, ...], Any] = {}
        for key, value in (constexprs or {}).items():
            self.constants[_index_path(fn, key)] = value
        self.attrs: dict[tuple[int, ...], list] = {
            _index_path(fn, key): list(value) for key, value in (attrs or {}).items()}

    def hash(self) -> str:
        """Digest of the function's cache key and this specialization."""
        parts = [self.fn.cache_key, repr(sorted(self.signature.items())),
                 repr(sorted((k, repr(v)) for k, v in self.constants.items())),
                 repr(sorted((k, repr(v)) for k, v in self.attrs.items()))]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def runtime_parameters(self) -> list[str]:
        """Names of the parameters passed at run time (not constexpr), in order."""
        return [name for num, name in enumerate(self.fn.arg_names) if not self._is_constexpr(num, name)]

    def _is_constexpr(self, num: int, name: str) -> bool:
        return (num,) in self.constants or self.signature.get(name) == CONSTEXPR or self.fn.params[num].is_constexpr

    def frontend_inputs(self) -> tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]:
        """`(signature, constexprs, divisible_by_16)` as the frontend takes them:
        IR types of the run-time parameters by name, constexpr values by name,
        names of the parameters specialised as divisible by 16."""
        from ..ir.types import parse_type
        from ..language.core import constexpr

        signature: dict[str, Any] = {}
        constexprs: dict[str, Any] = {}
        for param in self.fn.params:
            num, name = param.num, param.name
            if self._is_constexpr(num, name):
                if (num,) in self.constants:
                    value = self.constants[(num,)]
                elif param.has_default:
                    value = param.default
                else:
                    raise TypeError(f"kernel {self.name}: constexpr parameter {name!r} has no value")
                constexprs[name] = value.value if isinstance(value, constexpr) else value
            elif name in self.signature:
                signature[name] = parse_type(self.signature[name])
            else:
                raise TypeError(f"kernel {self.name}: parameter {name!r} is missing from the signature")
        divisible = tuple(self.fn.arg_names[key[0]] for key, values in self.attrs.items()
                          if len(key) == 1 and [DIVISIBILITY, 16] in [list(v) for v in values])
        return signature, constexprs, divisible


def _index_path(fn: JITFunction, key) -> tuple[int, ...]:
    if isinstance(key, str):
        if key not in fn.arg_names:
            raise TypeError(f"kernel {fn.__name__} has no parameter {key!r}")
        return (fn.arg_names.index(key),)
    if isinstance(key, int):
        return (key,)
    return tuple(key)


class CompiledKernel:
    """A kernel compiled for one specialization, target and set of options.

    `asm` maps stage names to their text (`"ttir"`: the optimised IR); `kernel`
    is the GPU binary, None until the CUDA backend exists. `run(gX, gY, gZ,
    stream, function, packed_metadata, launch_metadata, enter_hook, exit_hook,
    *args)` takes every parameter in order, constexprs included (skipped)."""

    def __init__(self, src: ASTSource, ir_module: Module, options: KernelOptions, target: GPUTarget,
                 kernel_hash: str):
        from .. import __tritone_version__, __version__

        self.src = src
        self.ir = ir_module
        self.options = options
        self.target = target
        self.hash = kernel_hash
        self.name = src.name
        self.asm = {"ttir": _print(ir_module)}
        self.kernel = None
        self.metadata_group: dict[str, str] = {}
        fields = {
            **options.as_dict(), "hash": kernel_hash, "target": target, "name": src.name,
            "triton_version": __version__, "tritone_version": __tritone_version__, "shared": 0,
            "global_scratch_size": 0, "global_scratch_align": 1, "profile_scratch_size": 0,
            "profile_scratch_align": 1, "tensordesc_meta": None,
        }
        self.metadata = namedtuple("KernelMetadata", sorted(fields))(**fields)
        self.packed_metadata = (options.num_warps, options.num_ctas, 0)
        self.runtime_parameters = src.runtime_parameters()
        self._runtime_indices = [src.fn.arg_names.index(name) for name in self.runtime_parameters]
        self.module = None
        self.function = None
        self.n_regs = self.n_spills = self.n_max_threads = None

    def _init_handles(self) -> None:
        """Make the kernel ready to launch (sets `function`, `n_regs`, `n_spills`,
        `n_max_threads`)."""
        if self.function is not None:
            return
        if self.target.backend != INTERPRETER_TARGET.backend:
            raise RuntimeError(
                f"kernel {self.name} was compiled for {self.target}, but tritone cannot load GPU code yet "
                "(the CUDA backend is not implemented); compile without a target to run on the CPU interpreter")
        self.function = self.name
        self.n_regs = 0
        self.n_spills = 0
        self.n_max_threads = 1024

    def launch_metadata(self, grid, stream, *args) -> dict | None:
        """What the launch hooks receive, or None when no enter hook is set."""
        from .. import knobs

        if knobs.runtime.launch_enter_hook is None:
            return None
        metadata = {"name": self.name, "grid": grid, "stream": stream}
        user_hook = self.src.fn.launch_metadata
        if user_hook is not None:
            metadata.update(user_hook(grid, self.metadata, dict(zip(self.src.fn.arg_names, args))))
        return metadata

    def run(self, grid_0: int, grid_1: int, grid_2: int, stream, function, packed_metadata, launch_metadata,
            enter_hook, exit_hook, *args) -> None:
        """Launch over the grid with every parameter's value (constexprs included)."""
        from ..runtime.interpreter_launch import run_on_interpreter

        self._init_handles()
        if len(args) != len(self.src.fn.arg_names):
            raise TypeError(f"kernel {self.name} takes {len(self.src.fn.arg_names)} arguments "
                            f"(constexprs included), got {len(args)}")
        if enter_hook is not None and launch_metadata is not None:
            enter_hook(launch_metadata)
        runtime_args = [args[i] for i in self._runtime_indices]
        run_on_interpreter(self, (grid_0, grid_1, grid_2), runtime_args)
        if exit_hook is not None and launch_metadata is not None:
            exit_hook(launch_metadata)

    def __getitem__(self, grid):
        """`compiled[grid](*args, stream=None)` with every parameter's value."""
        from ..runtime.launch import normalize_grid

        def runner(*args, stream=None):
            from .. import knobs

            grid_3 = normalize_grid(grid, self.name)
            metadata = self.launch_metadata(grid_3, stream, *args)
            self.run(*grid_3, stream, self.function, self.packed_metadata, metadata,
                     knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *args)

        return runner

    def __repr__(self) -> str:
        return f"CompiledKernel({self.name}, target={self.target}, hash={self.hash[:12]})"


def _print(module: Module) -> str:
    from ..ir.printer import print_module

    return print_module(module)


def compile(src: ASTSource, target: GPUTarget | None = None, options: dict | None = None) -> CompiledKernel:
    """Compile `src` for `target` (default: where kernels run now) with
    `options` (keywords of `KernelOptions`; others are ignored, as Triton's
    backends ignore them).

    The result holds the optimised IR in `asm["ttir"]` and runs on the CPU
    interpreter. GPU code generation (a cubin in `asm`) comes with the CUDA
    backend; until then a CUDA target compiles the IR but cannot be launched."""
    from .. import __tritone_version__, knobs
    from ..frontend import ast_to_ir
    from ..passes import run_pipeline
    from ..runtime.launch import active_target

    if not isinstance(src, ASTSource):
        raise TypeError(f"compile takes an ASTSource, got {type(src).__name__}")
    target = target or active_target()
    kernel_options = options if isinstance(options, KernelOptions) else KernelOptions.from_dict(
        dict(options or {}), debug_default=bool(src.fn.debug))
    signature, constexprs, divisible = src.frontend_inputs()
    frontend_options = {**kernel_options.as_dict(), "target": target, "divisible_by_16": divisible,
                        "fp32_default": knobs.language.fp32_default,
                        "allow_non_constexpr_globals": knobs.compilation.allow_non_constexpr_globals}
    module = ast_to_ir(src.fn, signature, constexprs, frontend_options)
    module = run_pipeline(module, frontend_options, dump=knobs.compilation.dump_ir, verify=kernel_options.debug)
    digest = hashlib.sha256("\n".join([
        src.hash(), kernel_options.hash(), repr(target), __tritone_version__]).encode()).hexdigest()
    return CompiledKernel(src, module, kernel_options, target, digest)
