"""`compile(ASTSource(...), target, options)` -> `CompiledKernel`: Triton's
compile API, the path TorchInductor uses, and the one `kernel[grid](...)` uses.

Pipeline: `frontend.ast_to_ir` -> `passes.run_pipeline` (`make_ir`), then the
target's backend from `backends.registry` (`TargetBackend.compile`; the CUDA
backend's goes through NVRTC and the disk cache, which skips everything on a
hit). A kernel compiled for the interpreter target holds its IR and runs on
the CPU; one compiled for CUDA holds the generated CUDA, PTX and cubin. Either
launches through the plan its backend loads (`TargetBackend.load`).

`compile` also takes an IR file (`IRSource`, or its path): the text of a
kernel's IR (`asm["ttir"]`, or a `TRITONE_DUMP_IR` dump), which skips the
frontend; the target-independent passes run on it (they leave optimised IR as
it is) before the backend.
"""

from __future__ import annotations

import gc
import hashlib
import os
import threading
from collections import namedtuple
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .. import __tritone_version__, __version__, knobs
from ..backends import registry
from ..backends.base import KernelBinary, normalize_grid
from ..backends.compiler import ZERO_PADDING, BaseBackend
from ..backends.compiler import make_backend as make_backend  # Triton's path: triton.compiler.compiler.make_backend
from ..backends.sites import active_target
from ..errors import CompilationError, TritonError, show_internal_frames, without_internal_frames
from ..ir.parser import parse_module
from ..ir.target import INTERPRETER_TARGET, GPUTarget, KernelOptions
from ..ir.types import descriptor_leaf_types, is_descriptor_type, parse_type, tensordesc_type, type_text
from ..ir.verifier import verify
from ..language.core import constexpr
from .timer import CompileTimer

# The backend TorchInductor's CPU Triton backend (`cpu_backend = "triton"`) compiles for:
# GPUTarget("cpu", "", 32). tritone runs such kernels in its interpreter.
INDUCTOR_CPU_BACKEND = "cpu"

if TYPE_CHECKING:
    from ..ir.core import Module
    from ..runtime.jit import JITFunction

CONSTEXPR = "constexpr"
DIVISIBILITY = "tt.divisibility"


@dataclass(frozen=True)
class ArgumentLeaf:
    """One argument of a compiled kernel's function, in order: element `path` of
    parameter `num` (`name`), of signature type `type` (`*fp32`, `i32`...). A
    parameter that is not a tuple is its own leaf, of path `()`."""

    num: int
    name: str
    path: tuple[int, ...]
    type: str

    @property
    def label(self) -> str:
        """How messages name it: `x_ptr`, `t[1][0]`."""
        return self.name + "".join(f"[{index}]" for index in self.path)


def _check_signature_type(kernel: str, name: str, entry: Any) -> None:
    """Raise TypeError unless `entry` is a type string or a (named)tuple of them."""
    if isinstance(entry, tuple):
        for item in entry:
            _check_signature_type(kernel, name, item)
    elif not isinstance(entry, str):
        raise TypeError(f"kernel {kernel}: the signature type of {name!r} must be a string or a tuple of them, "
                        f"got {entry!r}")
    elif entry.strip().startswith("["):
        raise TypeError(f"kernel {kernel}: the signature type {entry!r} of {name!r} is the C launcher's spelling "
                        f"of a tuple; write the tuple of its element types, such as ('*fp32', 'i32')")


def signature_leaves(entry: Any, path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], str]]:
    """`(path, type)` of each element of a signature entry in order, depth first:
    the entry itself (path `()`) for a type string."""
    if isinstance(entry, tuple):
        return [leaf for index, item in enumerate(entry) for leaf in signature_leaves(item, (*path, index))]
    return [(path, entry)]


# What `@jit(repr=fn)` functions receive, as in Triton: constexpr values by
# parameter name (parameters only, not tuple elements) and the signature.
_SpecializationProxy = namedtuple("SpecializationProxy", ["constants", "signature"])


class ASTSource:
    """A `@jit` function with its signature fixed: `signature` maps parameter
    names to type strings (`"*fp32"`, `"i32"`, `"constexpr"`), or for tuple
    parameters to tuples (or namedtuples) of them, nested as the arguments are;
    `constexprs` maps names or index paths (`(index,)`, `(index, element, ...)`
    for tuple elements) to values; `attrs` maps index paths to
    `[["tt.divisibility", 16]]`-style lists."""

    ext = "ttir"

    def __init__(self, fn: JITFunction, signature: dict[str, Any], constexprs: dict | None = None,
                 attrs: dict | None = None):
        self.fn = fn
        self.name = fn.__name__
        unknown = [name for name in signature if name not in fn.arg_names]
        if unknown:
            raise TypeError(f"kernel {self.name} has no parameter {unknown[0]!r} (signature of ASTSource)")
        for name, entry in signature.items():
            _check_signature_type(self.name, name, entry)
        self.signature = dict(signature)
        self.constants: dict[tuple[int, ...], Any] = {}
        for key, value in (constexprs or {}).items():
            self.constants[_index_path(fn, key)] = value
        self.attrs: dict[tuple[int, ...], list] = {
            _index_path(fn, key): list(value) for key, value in (attrs or {}).items()}
        # `fn.repr` (`@jit(repr=...)`, else the function's name) names the compiled
        # kernel (`CompiledKernel.name`, metadata "name") from this specialization,
        # as in Triton; cache files and the C entry keep the function's name.
        self.kernel_name = self.name
        if callable(getattr(fn, "repr", None)):
            self.kernel_name = str(fn.repr(_SpecializationProxy(
                {fn.arg_names[path[0]]: value for path, value in self.constants.items() if len(path) == 1},
                self.signature)))

    def hash(self) -> str:
        """Digest of the function's cache key and this specialization (a namedtuple
        type's repr names its fields, so they are part of it)."""
        parts = [self.fn.cache_key, repr(sorted(self.signature.items())),
                 repr(sorted((k, repr(v)) for k, v in self.constants.items())),
                 repr(sorted((k, repr(v)) for k, v in self.attrs.items()))]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def runtime_parameters(self) -> list[str]:
        """Names of the parameters passed at run time (not constexpr), in order; a
        tuple parameter is one even when all its elements are constexprs."""
        return [name for num, name in enumerate(self.fn.arg_names) if not self._is_constexpr(num, name)]

    def runtime_leaves(self) -> tuple[ArgumentLeaf, ...]:
        """The kernel function's arguments in order: every run-time parameter, a
        tuple parameter as its elements that are not constexprs, depth first; a
        host tensor descriptor as its parts (`descriptor_leaf_types`), the path
        of each ending with the part's index in `TensorDescriptor.kernel_arguments()`."""
        leaves = []
        for num, name in enumerate(self.fn.arg_names):
            if self._is_constexpr(num, name):
                continue
            for path, type_name in signature_leaves(self.signature[name]):
                if type_name == CONSTEXPR or (num, *path) in self.constants:
                    continue
                if is_descriptor_type(type_name):
                    leaves.extend(ArgumentLeaf(num, name, (*path, part), part_type)
                                  for part, part_type in enumerate(descriptor_leaf_types(type_name)))
                else:
                    leaves.append(ArgumentLeaf(num, name, path, type_name))
        return tuple(leaves)

    def _is_constexpr(self, num: int, name: str) -> bool:
        return (num,) in self.constants or self.signature.get(name) == CONSTEXPR or self.fn.params[num].is_constexpr

    def frontend_inputs(self) -> tuple[dict[str, Any], dict[str, Any], tuple[Any, ...]]:
        """`(signature, constexprs, divisible_by_16)` as the frontend takes them:
        the types of the run-time parameters by name (an IR type, or for a tuple
        parameter a tuple, or namedtuple of the signature's class, of IR types and
        `constexpr` values), constexpr values by name, and the parameters
        specialised as divisible by 16 (names, and `(name, element, ...)` paths
        of tuple elements)."""
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
                signature[name] = self._frontend_type(self.signature[name], (num,))
            else:
                raise TypeError(f"kernel {self.name}: parameter {name!r} is missing from the signature")
        return signature, constexprs, self._paths_with(DIVISIBILITY, 16)

    def zero_padded(self) -> tuple[Any, ...]:
        """The host descriptor parameters specialised on zero padding, as
        `frontend_inputs` names its divisible ones."""
        return self._paths_with(ZERO_PADDING, 1)

    def _paths_with(self, attr: str, value: Any) -> tuple[Any, ...]:
        return tuple(self.fn.arg_names[key[0]] if len(key) == 1 else (self.fn.arg_names[key[0]], *key[1:])
                     for key, values in self.attrs.items() if key and [attr, value] in [list(v) for v in values])

    def make_ir(self, target: GPUTarget, options: Any, codegen_fns: Any, module_map: Any, context: Any) -> Any:
        """The kernel's IR before any pass, as Triton's `make_ir` gives its TTIR:
        a `triton._C.libtriton.ir.module` to walk (TorchInductor's mutation
        analysis does). `options` are those of `make_backend(target).parse_options`;
        `codegen_fns` and `module_map` are taken as Triton takes them and not
        needed (tritone's frontend resolves libdevice itself); `context` is a
        `triton._C.libtriton.ir.context`."""
        from .._C.libtriton import ir

        if not isinstance(context, ir.context):
            raise TypeError(f"kernel {self.name}: make_ir takes a triton._C.libtriton.ir.context, "
                            f"got {type(context).__name__}")
        return ir.module(frontend_ir(self, target, options))

    def _frontend_type(self, entry: Any, path: tuple[int, ...]) -> Any:
        """A signature entry as the frontend takes it (see `frontend_inputs`)."""
        if isinstance(entry, tuple):
            items = [self._frontend_type(item, (*path, index)) for index, item in enumerate(entry)]
            return type(entry)._make(items) if hasattr(type(entry), "_fields") else tuple(items)
        if path in self.constants:
            value = self.constants[path]
            return value if isinstance(value, constexpr) else constexpr(value)
        if entry == CONSTEXPR:
            label = self.fn.arg_names[path[0]] + "".join(f"[{index}]" for index in path[1:])
            raise TypeError(f"kernel {self.name}: constexpr element {label} has no value in constexprs")
        return parse_type(entry)


@dataclass(frozen=True)
class IRFunction:
    """What the runtime reads of the function of a source (`src.fn`) for a kernel
    that comes from an IR file: its parameter names, and no launch-metadata
    hook or debug flag of its own."""

    name: str
    arg_names: tuple[str, ...]
    launch_metadata: None = None
    debug: bool = False


class IRSource:
    """A kernel given as the text of its optimised IR (the printer's form,
    `docs/IR.md`): `IRSource("kernel.ttir")`. The entry function is the
    kernel; every argument is passed at run time, typed as the IR types it
    (`signature` maps argument names to `*fp32`, `i32`...; argument names
    are the IR's value names, `arg<i>` where it has none). Module attributes
    that are compile options (`num_warps`, ...) are the options it is
    compiled with (`parse_options`)."""

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        self.ext = Path(path).suffix[1:]
        self.src = Path(path).read_text(encoding="utf-8")
        self.module = parse_module(self.src)
        verify(self.module)
        kernel = self.module.kernel
        self.name = kernel.name
        self.kernel_name = self.name
        arg_names = tuple(arg.name_hint or f"arg{i}" for i, arg in enumerate(kernel.args))
        self.fn = IRFunction(self.name, arg_names)
        # A host descriptor's arguments are its parts (tensordesc_type.argument_types), each its own
        # argument here: the descriptor itself is passed as its tensor, a pointer.
        self.signature = {name: type_text(arg.type.base_ty if isinstance(arg.type, tensordesc_type) else arg.type)
                          for name, arg in zip(arg_names, kernel.args)}

    def hash(self) -> str:
        """Digest of the IR text."""
        return hashlib.sha256(self.src.encode("utf-8")).hexdigest()

    def runtime_parameters(self) -> list[str]:
        """Names of the kernel's arguments, all passed at run time."""
        return list(self.fn.arg_names)

    def runtime_leaves(self) -> tuple[ArgumentLeaf, ...]:
        """The kernel's arguments, each its own leaf (IR files have no tuples)."""
        return tuple(ArgumentLeaf(num, name, (), self.signature[name]) for num, name in enumerate(self.fn.arg_names))

    def parse_options(self) -> dict[str, Any]:
        """The compile options the IR's module attributes record."""
        return {key: value for key, value in self.module.attrs.items() if key in KernelOptions.FIELD_NAMES}

    def make_ir(self) -> Module:
        """A fresh copy of the module after the target-independent passes (so a
        dump taken between passes compiles too); backends rewrite the module
        they lower, hence a copy each time."""
        from ..passes import run_pipeline  # see _frontend: loaded by the first compilation

        return run_pipeline(parse_module(self.src))


class LazyDict(Mapping):
    """The metadata launch hooks receive: `data` plus entries that functions added
    with `add(func, args)` compute the first time the metadata is read (a
    kernel's `launch_metadata` hook runs only when a launch hook looks).
    `get()` with no key returns the whole dict, as Triton's hooks call it;
    `metadata["name"]` and `metadata.get("name")` work as on a dict."""

    _WHOLE = object()

    def __init__(self, data: Mapping[str, Any]):
        self.data = dict(data)
        self.extras: list[tuple[Callable[..., Mapping[str, Any]], tuple]] = []

    def add(self, func: Callable[..., Mapping[str, Any]], args: tuple) -> None:
        self.extras.append((func, tuple(args)))

    def get(self, key: Any = _WHOLE, default: Any = None) -> Any:
        for func, args in self.extras:
            self.data = self.data | dict(func(*args))
        self.extras.clear()
        if key is LazyDict._WHOLE:
            return self.data
        return self.data.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self.get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.get())

    def __len__(self) -> int:
        return len(self.get())

    def __repr__(self) -> str:
        return f"LazyDict({self.data!r}, {len(self.extras)} pending)"


def get_cache_key(src: ASTSource | IRSource, backend: BaseBackend, backend_options: KernelOptions,
                  env_vars: Mapping[str, str]) -> str:
    """Triton's cache key of a compilation: tritone's own digest, the source's,
    the backend's, the options' and the environment variables that matter."""
    from ..runtime.cache import triton_key  # see _frontend: loaded by the first compilation

    return (f"{triton_key()}-{src.hash()}-{backend.hash()}-{backend_options.hash()}-"
            f"{sorted(env_vars.items())}")


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

    `asm` maps stage names to their text: `"ttir"` (the optimised IR) always, and
    for a CUDA target `"cuda"` (the generated CUDA C++), `"ptx"` and `"cubin"`
    (bytes; absent when only PTX was compiled, for the driver to JIT). `kernel`
    is the cubin (None for the interpreter). `ir` is the optimised IR as a
    Module. `_init_handles()` loads the kernel on the current device (setting
    `module`, `function`, `n_regs`, `n_spills`, `n_max_threads`); `run(gX, gY,
    gZ, stream, function, packed_metadata, launch_metadata, enter_hook,
    exit_hook, *args)` takes every parameter in order, constexprs included
    (skipped). `runtime_leaves` lists the arguments of the compiled function
    (`ArgumentLeaf`s: run-time parameters, tuples flattened).

    A kernel pickles and deep-copies without what `_init_handles()` loaded, which
    belongs to the process that loaded it: the copy loads again on first use.
    That loaded plan lives in a slot, outside `__dict__`, so that a copy of
    `__dict__` (TorchInductor pickles kernels that way, with `run`, `module` and
    `function` set to None) never carries it either."""

    __slots__ = ("_plan", "__dict__", "__weakref__")

    def __init__(self, src: ASTSource | IRSource, options: KernelOptions, target: GPUTarget, kernel_hash: str,
                 asm: dict[str, Any], metadata: dict[str, Any], ir_module: Module | None = None):
        self.src = src
        self.options = options
        self.target = target
        self.hash = kernel_hash
        self.name = src.kernel_name
        self.asm = asm
        self.kernel = asm.get("cubin")
        self._ir = ir_module
        self.metadata_group: dict[str, str] = {}
        fields = {
            **options.as_dict(), "hash": kernel_hash, "target": target, "name": src.kernel_name,
            "triton_version": __version__, "tritone_version": __tritone_version__, "shared": 0,
            "global_scratch_size": 0, "global_scratch_align": 1, "profile_scratch_size": 0,
            "profile_scratch_align": 1, "tensordesc_meta": None,
            # Triton 3.5's field, which torch 2.9's launcher reads (`metadata.cluster_dims`)
            "cluster_dims": (1, 1, 1),
        }
        # What the compilation reported (entry, params, shared, num_warps...) wins over the requested options.
        fields.update((key, value) for key, value in metadata.items() if key.isidentifier() and key[0] != "_")
        fields["name"] = self.name
        self.metadata = _metadata_tuple(fields)
        self.packed_metadata = (self.metadata.num_warps, self.metadata.num_ctas, self.metadata.shared)
        self.runtime_parameters = src.runtime_parameters()
        self.runtime_leaves = src.runtime_leaves()
        self._plan: Any = None
        self.module = None
        self.function = None
        self.n_regs = self.n_spills = self.n_max_threads = None

    @classmethod
    def from_binary(cls, src: ASTSource | IRSource, options: KernelOptions, target: GPUTarget,
                    binary: KernelBinary) -> CompiledKernel:
        """The kernel a backend compiled for `target` (`TargetBackend.compile`)."""
        return cls(src, options, target, binary.hash, dict(binary.asm), dict(binary.metadata), binary.module)

    @property
    def ir(self) -> Module:
        """The optimised IR (before any backend pass), read back from `asm["ttir"]`
        for a GPU kernel: the CUDA backend rewrites the module it lowers, and a
        kernel from the disk cache has only the text."""
        if self._ir is None:
            self._ir = parse_module(self.asm["ttir"])
        return self._ir

    def _init_handles(self) -> None:
        """Make the kernel ready to launch: loaded on the current GPU (or set up
        for the interpreter), and `run` its launch method again where it was set
        to None (as TorchInductor does before pickling). Raises `OutOfResources`
        when the GPU cannot run it."""
        if "run" in self.__dict__ and self.__dict__["run"] is None:
            del self.__dict__["run"]
        if getattr(self, "_plan", None) is not None:
            return
        hooks = knobs.runtime
        if hooks.kernel_load_start_hook:
            hooks.kernel_load_start_hook(None, None, self.name, self.metadata_group, self.hash)
        plan = registry.target_backend(self.target.backend).load(self)
        self.module, self.function = plan.module, plan.function
        self.n_regs, self.n_spills, self.n_max_threads = plan.n_regs, int(plan.n_spills), plan.n_max_threads
        self._plan = plan
        if hooks.kernel_load_end_hook:
            hooks.kernel_load_end_hook(self.module, self.function, self.name, self.metadata_group, self.hash)

    def launch_metadata(self, grid, stream, *args) -> LazyDict | None:
        """What the launch hooks receive (`name`, `function`, `grid`, `stream`, and
        what the kernel's `launch_metadata` hook adds when read), or None when no
        launch hook is set."""
        if not (knobs.runtime.launch_enter_hook or knobs.runtime.launch_exit_hook):
            return None
        metadata = LazyDict({"name": self.name, "function": self.function, "grid": grid, "stream": stream})
        user_hook = self.src.fn.launch_metadata
        if user_hook is not None:
            metadata.add(user_hook, (grid, self.metadata, dict(zip(self.src.fn.arg_names, args))))
        return metadata

    def run(self, grid_0: int, grid_1: int, grid_2: int, stream, function, packed_metadata, launch_metadata,
            enter_hook, exit_hook, *args) -> None:
        """Launch over the grid with every parameter's value (constexprs included)
        on `stream` (None: the current stream). `function` and `packed_metadata`
        are accepted as Triton's launchers take them; the loaded kernel is used."""
        if getattr(self, "_plan", None) is None:
            self._init_handles()
        if enter_hook and launch_metadata is not None:
            enter_hook(launch_metadata)
        self._plan.launch(grid_0, grid_1, grid_2, stream, *args)
        if exit_hook and launch_metadata is not None:
            exit_hook(launch_metadata)

    def __getitem__(self, grid):
        """`compiled[grid](*args, stream=None)` with every parameter's value."""
        def runner(*args, stream=None):
            grid_3 = normalize_grid(grid, self.name)
            metadata = self.launch_metadata(grid_3, stream, *args)
            self.run(*grid_3, stream, self.function, self.packed_metadata, metadata,
                     knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *args)

        return runner

    def __repr__(self) -> str:
        return f"CompiledKernel({self.name}, target={self.target}, hash={self.hash[:12]})"

    # -- crossing processes ----------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        # What `_init_handles` found is loaded again where the copy runs, and an
        # instance `run` (None, or a launcher set on this kernel) stays behind:
        # the class's `run` launches the copy. The IR is read back from
        # asm["ttir"] when asked for; the metadata's namedtuple class is made per
        # kernel, so it travels as a dict.
        state = {**self.__dict__, "metadata": self.metadata._asdict(), "_ir": None, "module": None,
                 "function": None, "n_regs": None, "n_spills": None, "n_max_threads": None}
        state.pop("run", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        metadata = state["metadata"]
        self.metadata = _metadata_tuple(metadata) if isinstance(metadata, dict) else metadata
        self._plan = None


def _metadata_tuple(fields: dict[str, Any]) -> tuple:
    """`CompiledKernel.metadata`: a namedtuple of `fields` in name order."""
    return namedtuple("KernelMetadata", sorted(fields))(**fields)


def _kernel_options(src: ASTSource | IRSource, options: dict | KernelOptions | None) -> KernelOptions:
    if isinstance(options, KernelOptions):
        return options
    if isinstance(src, IRSource):
        options = {**(options or {}), **src.parse_options()}
    return KernelOptions.from_dict(dict(options or {}), debug_default=bool(src.fn.debug))


def _frontend(src: ASTSource, target: GPUTarget, options: dict | KernelOptions | None) -> tuple[Module, dict, bool]:
    """(the frontend's IR of `src` for `target`, the options the passes take,
    whether to verify after each pass)."""
    kernel_options = _kernel_options(src, options)
    signature, constexprs, divisible = src.frontend_inputs()
    frontend_options = {**kernel_options.as_dict(), "target": target, "divisible_by_16": divisible,
                        "zero_padded": src.zero_padded(),
                        "fp32_default": knobs.language.fp32_default,
                        "allow_non_constexpr_globals": knobs.compilation.allow_non_constexpr_globals}
    # The interpreter holds every fp8 format; a GPU only those of its options.
    supported_fp8 = registry.backend_for(target).fp8_dtypes(kernel_options)
    # The frontend, the passes and the disk cache are loaded by the first
    # compilation that needs them, not by `import tritone` (about 200 ms
    # together); a kernel found in the disk cache never needs the first two.
    from ..frontend import ast_to_ir

    module = ast_to_ir(src.fn, signature, constexprs, frontend_options, supported_fp8=supported_fp8)
    return module, frontend_options, knobs.verify_each_pass()


def frontend_ir(src: ASTSource, target: GPUTarget, options: dict | KernelOptions | None = None) -> Module:
    """The IR the frontend builds for `src` for `target`, before any pass
    (`options` as for `compile`): what Triton's `ASTSource.make_ir` gives."""
    return _frontend(src, target, options)[0]


def make_ir(src: ASTSource, target: GPUTarget, options: dict | KernelOptions | None = None) -> Module:
    """The optimised IR of `src` for `target`: the frontend, then the passes
    (`options` as for `compile`). What the backends start from."""
    module, frontend_options, verify = _frontend(src, target, options)
    from ..passes import run_pipeline  # see _frontend: loaded by the first compilation

    return run_pipeline(module, frontend_options, dump=knobs.compilation.dump_ir, verify=verify)


_collector_lock = threading.Lock()
_collector_holds = 0  # compilations running now, in any thread
_collector_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while kernels compile. The IR is
    hundreds of thousands of small objects with reference cycles; without this,
    collections during a compile took a quarter of its host time (more in a
    process holding torch's objects, which every full collection walks). The
    collector is enabled again, if it was, when the last compile running in any
    thread ends, and collects the compile's garbage from then on."""
    global _collector_holds, _collector_was_enabled
    with _collector_lock:
        if _collector_holds == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _collector_holds += 1
    try:
        yield
    finally:
        with _collector_lock:
            _collector_holds -= 1
            if _collector_holds == 0 and _collector_was_enabled:
                gc.enable()


def compile(src: ASTSource | IRSource | str | os.PathLike, target: GPUTarget | None = None,
            options: dict | None = None) -> CompiledKernel:
    """Compile `src` for `target` (default: where kernels run now,
    `backends.sites.active_target()`) with `options` (keywords of
    `KernelOptions`; others are ignored, as Triton's backends ignore them).
    `src` is an `ASTSource`, or an IR file (`IRSource` or its path), whose IR
    skips the frontend and whose module attributes that are options win over
    `options`.

    For a CUDA target (`GPUTarget("cuda", 90, 32)`) the result holds the CUDA
    C++, PTX and cubin, taken from the disk cache when there; this needs NVRTC
    but no GPU. NVRTC rejecting the generated code raises a `PTXASError`
    (`backends.cuda.build.NVRTCCompileError`). For the interpreter target, and
    for the "cpu" target TorchInductor's CPU Triton backend asks for, the result
    holds the IR and runs in the CPU interpreter.

    A kernel that cannot be compiled raises `CompilationError` showing the
    kernel's lines; its traceback starts here unless `TRITONE_FULL_TRACEBACK=1`
    (or `TRITON_DEBUG=1`) asks for tritone's internal frames too."""
    listener = knobs.compilation.listener
    timer = CompileTimer() if listener else None
    if isinstance(src, (str, os.PathLike)):
        src = IRSource(src)
    if not isinstance(src, (ASTSource, IRSource)):
        raise TypeError(f"compile takes an ASTSource, an IRSource or the path of an IR file, got {type(src).__name__}")
    target = target or active_target()
    if target.backend == INDUCTOR_CPU_BACKEND:
        target = INTERPRETER_TARGET
    kernel_options = _kernel_options(src, options)
    if isinstance(src, IRSource):
        def build_ir(codegen_target: GPUTarget) -> Module:
            return src.make_ir()
    else:
        def build_ir(codegen_target: GPUTarget) -> Module:
            return make_ir(src, codegen_target, kernel_options)
    if target.backend not in registry.REGISTRY:
        raise TritonError(f"kernel {src.name}: tritone compiles for CUDA GPUs (GPUTarget('cuda', arch, 32)) and "
                          f"for its CPU interpreter, not for {target}")
    backend = registry.target_backend(target.backend)
    try:
        with collector_paused():
            binary = backend.compile(src.name, src.hash(), build_ir, target, kernel_options, timer=timer)
    except CompilationError as error:
        if show_internal_frames():
            raise
        __tracebackhide__ = True  # pytest then shows the test's call and the kernel lines, not this function
        short = without_internal_frames(error)
        raise short from short.__cause__
    kernel = CompiledKernel.from_binary(src, kernel_options, target, binary)
    if listener:
        _notify(listener, src, kernel, timer, cache_hit=binary.from_cache)
    return kernel


def _notify(listener: Callable[..., None], src: ASTSource | IRSource, kernel: CompiledKernel, timer: Any,
            cache_hit: bool) -> None:
    """Tell `knobs.compilation.listener` about a compilation that just ended."""
    listener(src=src, metadata=kernel.metadata._asdict(), metadata_group=kernel.metadata_group, times=timer.end(),
             cache_hit=cache_hit)
