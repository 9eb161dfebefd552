"""Every setting tritone reads, in one place.

Each knob reads its environment variable on every access, so a variable set
after import still takes effect. Assigning a knob (`knobs.runtime.interpret =
True`) overrides the environment until the knob is deleted (`del
knobs.runtime.interpret`). Truthy values: `1 true yes on y` (any case).

The rest of tritone reads settings only through this module and passes the
values down.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

_TRUTHY = frozenset({"1", "true", "yes", "on", "y"})
_ENVIRON_TYPE = type(os.environ)


def _read_mapping(environ: Any, names: tuple[str, ...]) -> str | None:
    """The value of the first of `names` set in a mapping that stands for os.environ."""
    for name in names:
        value = environ.get(name)
        if value is not None:
            return value
    return None


class _EnvKnob:
    """A setting read from the first of `names` that is set, converted by `parse`."""

    def __init__(self, *names: str, default: Any = None, parse: Callable[[str], Any] = str):
        self.names = names
        self.keys = tuple(os.environ.encodekey(name) for name in names)
        self.default = default
        self.parse = parse

    def __set_name__(self, owner, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        overrides = instance.__dict__.get("_overrides")
        if overrides and self.attribute in overrides:
            return overrides[self.attribute]
        environ = os.environ
        if type(environ) is _ENVIRON_TYPE:
            # Every launch reads several knobs. Through the Mapping interface an unset
            # variable costs a KeyError raised and caught (microseconds); the dictionary
            # os.environ keeps, under its encoded keys, answers at once.
            data = environ._data
            for key in self.keys:
                raw = data.get(key)
                if raw is not None:
                    return self.parse(environ.decodevalue(raw))
            return self.default
        text = _read_mapping(environ, self.names)  # os.environ replaced by a plain mapping (a test's, say)
        return self.default if text is None else self.parse(text)

    def __set__(self, instance, value) -> None:
        instance.__dict__.setdefault("_overrides", {})[self.attribute] = value
        _assigned.add((id(instance), self.attribute))

    def __delete__(self, instance) -> None:
        instance.__dict__.setdefault("_overrides", {}).pop(self.attribute, None)
        _assigned.discard((id(instance), self.attribute))


# (id of the group, knob name) of every knob assigned now, for `KnobReader`.
_assigned: set[tuple[int, str]] = set()


class KnobReader:
    """Reads a fixed list of knobs together, for code that runs on every launch:
    `reader()` is the tuple of their values. While none of their variables is set
    and none of them is assigned (the usual case), two checks in C answer with
    their defaults; otherwise each knob is read as its attribute is."""

    def __init__(self, *knobs: tuple[Any, str]):
        self._knobs = knobs
        descriptors = [type(group).__dict__[name] for group, name in knobs]
        self._keys = frozenset(key for descriptor in descriptors for key in descriptor.keys)
        self._assignable = frozenset((id(group), name) for group, name in knobs)
        self._defaults = tuple(descriptor.default for descriptor in descriptors)

    def __call__(self) -> tuple:
        environ = os.environ
        if (type(environ) is _ENVIRON_TYPE and environ._data.keys().isdisjoint(self._keys)
                and self._assignable.isdisjoint(_assigned)):
            return self._defaults
        return tuple(getattr(group, name) for group, name in self._knobs)

    @property
    def defaults(self) -> tuple:
        """The tuple `reader()` answers (this very object) while none of its knobs
        is set or assigned."""
        return self._defaults

    @property
    def environ_keys(self) -> frozenset:
        """The names of the environment variables these knobs read, encoded as
        os.environ keeps them (its `_data` keys), for code that checks them inline."""
        return self._keys

    @property
    def assigned(self) -> set:
        """The live set of knobs assigned now, all groups ((id of group, name)):
        empty in the usual case, when `reader()` answers with the defaults if
        none of `environ_keys` is set."""
        return _assigned


def _parse_bool(text: str) -> bool:
    return text.strip().lower() in _TRUTHY


def _env_bool(*names: str, default: bool = False) -> _EnvKnob:
    return _EnvKnob(*names, default=default, parse=_parse_bool)


def _env_str(*names: str, default: str | None = None) -> _EnvKnob:
    return _EnvKnob(*names, default=default, parse=lambda text: text or default)


def _parse_fp32_default(text: str) -> str | None:
    text = text.strip().lower()
    if not text:
        return None
    if text not in ("tf32", "tf32x3", "ieee"):
        raise ValueError(f"TRITON_F32_DEFAULT must be one of tf32, tf32x3, ieee; got {text!r}")
    return text


class HookChain(list):
    """Hooks called in turn with the same arguments: `add` appends a hook once,
    `remove` drops it (absent: nothing happens), calling the chain calls each,
    last added first when `reversed` (exit hooks unwind as enter hooks nested).
    The chain is the list of its hooks (`calls`, as Triton names it): an empty
    one is false, which every launch tests without a Python call."""

    def __init__(self, reversed: bool = False):
        super().__init__()
        self.reversed = reversed

    @property
    def calls(self) -> list[Callable]:
        return self

    def add(self, func: Callable) -> None:
        if func not in self:
            self.append(func)

    def remove(self, func: Callable) -> None:
        if func in self:
            super().remove(func)

    def __call__(self, *args, **kwargs) -> None:
        for call in (self[::-1] if self.reversed else list(self)):
            call(*args, **kwargs)

    def __repr__(self) -> str:
        return f"HookChain({list(self)!r}, reversed={self.reversed})"


@dataclass(frozen=True)
class CompileTimes:
    """How long one compilation took, in whole microseconds, as
    `compilation.listener` receives it: `ir_initialization` (from the call until
    the cache was looked up and, on a miss, the kernel's IR begun),
    `lowering_stages` ((stage, duration) in order: "ttir" frontend and passes,
    "cuda" code generation, "ptx"/"cubin" NVRTC; empty on a cache hit) and
    `store_results` (writing the cache entry; 0 on a hit)."""

    ir_initialization: int
    lowering_stages: list[tuple[str, int]]
    store_results: int

    @property
    def total_lowering(self) -> int:
        return sum(duration for _, duration in self.lowering_stages)

    @property
    def total(self) -> int:
        return self.ir_initialization + self.total_lowering + self.store_results


class _Group:
    @contextmanager
    def scope(self) -> Iterator[_Group]:
        """A `with` block after which this group is as before it: its assignments
        (knobs and hooks), the hooks in its HookChains and the environment
        variables its knobs read."""
        descriptors = [value for klass in type(self).__mro__ for value in vars(klass).values()
                       if isinstance(value, _EnvKnob)]
        environ = {name: os.environ.get(name) for descriptor in descriptors for name in descriptor.names}
        attributes = {name: value for name, value in vars(self).items() if name != "_overrides"}
        chains = {name: list(value.calls) for name, value in attributes.items() if isinstance(value, HookChain)}
        overrides = dict(vars(self).get("_overrides", {}))
        try:
            yield self
        finally:
            for descriptor in descriptors:
                delattr(self, descriptor.attribute)
            for name, value in overrides.items():
                setattr(self, name, value)
            for name in [name for name in vars(self) if name != "_overrides"]:
                delattr(self, name)
            for name, value in attributes.items():
                setattr(self, name, value)
            for name, calls in chains.items():  # hooks added to a chain inside the block are dropped
                attributes[name].calls[:] = calls
            for name, value in environ.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def __repr__(self) -> str:
        names = [name for name, value in type(self).__dict__.items() if isinstance(value, _EnvKnob)]
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__name__}({shown})"


class RuntimeKnobs(_Group):
    interpret = _env_bool("TRITON_INTERPRET", "TRITONE_INTERPRET")
    """Run kernels in the CPU interpreter even where a GPU is usable."""

    def __init__(self):
        # Called as hook(metadata) around each launch (a HookChain, or one callable
        # assigned in its place); metadata is a LazyDict of "name", "function",
        # "grid", "stream" and what the kernel's `launch_metadata` adds.
        self.launch_enter_hook: Callable[..., None] | None = HookChain()
        self.launch_exit_hook: Callable[..., None] | None = HookChain(reversed=True)
        # Called as hook(module, function, name, metadata_group, hash) before and
        # after a compiled kernel is loaded (module and function are None before).
        self.kernel_load_start_hook: Callable[..., None] | None = HookChain()
        self.kernel_load_end_hook: Callable[..., None] | None = HookChain(reversed=True)
        # Called with keywords key, repr, fn, compile, is_manual_warmup and
        # already_compiled before a `@jit` launch compiles (a true answer skips the
        # compilation and the launch) and after it compiled.
        self.jit_cache_hook: Callable[..., Any] | None = None
        self.jit_post_compile_hook: Callable[..., Any] | None = None


class CompilationKnobs(_Group):
    dump_ir = _env_bool("TRITONE_DUMP_IR")
    """Print the IR after each pass."""
    always_compile = _env_bool("TRITON_ALWAYS_COMPILE")
    """Ignore the in-memory and on-disk caches."""
    debug = _env_bool("TRITON_DEBUG")
    """Compile every kernel in debug mode (device asserts on, IR verified after each pass).
    Compile errors then also show tritone's own frames, as `full_traceback` does."""
    verify_ir = _env_bool("TRITONE_VERIFY_IR")
    """Verify the IR after every pass, naming the pass that broke it (also on under
    `debug`). A check of tritone itself, so a kernel's own `debug=True`, which Inductor
    sets on every kernel for its indexing asserts, does not turn it on: that costs
    about a third of the GPU passes' time."""
    full_traceback = _env_bool("TRITONE_FULL_TRACEBACK")
    """Show compile errors with tritone's internal frames: the whole Python traceback,
    the chain of underlying exceptions and the call sites inside tritone's own
    `@jit` library functions. Off, a compile error shows only the user's kernel lines."""
    allow_non_constexpr_globals = _env_bool("TRITON_ALLOW_NON_CONSTEXPR_GLOBALS")
    """Let kernels read plain (non-constexpr) global values, baked in at compile time."""
    reproducer_path = _env_str("TRITON_REPRODUCER_PATH")
    """Prefix of the reproducer written before each CUDA lowering that compiles:
    `<prefix>.make_cuda.repro.ttir`, the IR the lowering starts from, which
    `tritone.compile(path, target=...)` compiles again (runtime/gpu_compile.py)."""
    disable_line_info = _env_bool("TRITON_DISABLE_LINE_INFO")
    """Compile GPU code without source line information (no `#line` directives, no
    NVRTC `--generate-line-info`): profilers and error reports then cannot name kernel lines."""

    def __init__(self):
        # Called after each compilation, from the cache or not, with keywords src,
        # metadata, metadata_group, times (CompileTimes) and cache_hit.
        self.listener: Callable[..., None] | None = None


class LanguageKnobs(_Group):
    fp32_default = _EnvKnob("TRITON_F32_DEFAULT", default=None, parse=_parse_fp32_default)
    """Default `input_precision` of `tl.dot` on fp32 operands: None (tf32), "tf32", "tf32x3", "ieee"."""
    default_fp_fusion = _env_bool("TRITON_DEFAULT_FP_FUSION", default=True)
    """Default of the `enable_fp_fusion` launch option (a*b+c may become one fma); Triton
    keeps it in `knobs.language`."""


class CacheKnobs(_Group):
    dir = _env_str("TRITON_CACHE_DIR")
    """Folder of the on-disk kernel cache; None means the platform's user cache folder."""


class NvidiaKnobs(_Group):
    nvrtc_path = _env_str("TRITONE_NVRTC_PATH")
    """Explicit path of the NVRTC library."""
    libcuda_path = _env_str("TRITONE_LIBCUDA_PATH")
    """Explicit path of the CUDA driver library."""
    target = _env_str("TRITONE_TARGET")
    """Forced compile target, e.g. "sm_80" (the driver JITs its PTX on newer GPUs)."""
    tma = _EnvKnob("TRITONE_TMA", default=None, parse=lambda text: _parse_bool(text) if text.strip() else None)
    """Tensor descriptors (host `TensorDescriptor`s and `tl.make_tensor_descriptor`)
    through TMA. Unset (None): on sm_90, where the dot tiles they feed are pipelined
    by the copy engine into wgmma's layout; true (TRITONE_TMA=1): on every target
    from sm_90 on (sm_100 and sm_120 too, where tritone's dots are mma.sync and a
    TMA load feeding one is staged through registers); false: pointer code
    everywhere. Offsets the copy engine faults on are checked at run time (see
    docs/ARCHITECTURE.md)."""
    dump_ptxas_log = _env_bool("TRITON_DUMP_PTXAS_LOG")
    """Print ptxas's report of each kernel compiled (not read from the cache), as
    Triton prints its ptxas log: registers, shared memory, spills, and the notes
    on performance (wgmma serialized, C7514/C7515). NVRTC runs ptxas with
    `--verbose` for it; the machine code is the same."""
    libdevice_path = _env_str("TRITON_LIBDEVICE_PATH")
    """Triton's choice of libdevice bitcode, kept for callers that set it (TorchInductor,
    for eager-matching numerics): tritone's kernels use the libdevice NVRTC links, so the
    value changes nothing they compute."""


class AutotuningKnobs(_Group):
    print = _env_bool("TRITON_PRINT_AUTOTUNING")
    """Print each autotuned kernel's chosen config and how long tuning took."""
    cache = _env_bool("TRITON_CACHE_AUTOTUNING")
    """Keep autotuning results on disk, so later processes start without tuning again."""


runtime = RuntimeKnobs()
compilation = CompilationKnobs()
language = LanguageKnobs()
cache = CacheKnobs()
nvidia = NvidiaKnobs()
autotuning = AutotuningKnobs()


def verify_each_pass() -> bool:
    """Whether compilations verify the IR after each pass: `TRITONE_VERIFY_IR`
    or `TRITON_DEBUG` (see `CompilationKnobs.verify_ir`)."""
    return bool(compilation.verify_ir or compilation.debug)
