"""`@jit` and `JITFunction`: a Python function marked as a kernel.

A `JITFunction` holds what the frontend needs to compile the function (its
source from `def` on, its parameters, its globals) and what the launcher needs
to run it (`kernel[grid](...)`, the per-device caches). It never imports
`tritone.language` at module import time: `tritone.language.standard` and
`.random` are themselves written with `@jit`.
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import importlib
import inspect
import pickle
import sys
import textwrap
import threading
import types
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, NamedTuple, TypeVar, overload

# TensorWrapper and reinterpret are Triton's names here (triton.runtime.jit.reinterpret).
from ..tensors import TensorWrapper, is_pointer_like, reinterpret  # noqa: F401

T = TypeVar("T")

# Canonical spellings of annotation type names, as they appear in signatures.
# Booleans are written `u1` in signatures, as Triton writes them.
_CANONICAL_TYPE_NAMES = {
    "bool": "u1", "int1": "u1", "uint1": "u1", "i1": "u1",
    "float8e4nv": "fp8e4nv", "float8_e4m3fn": "fp8e4nv", "float8e5": "fp8e5", "float8_e5m2": "fp8e5",
    "float8e4b15": "fp8e4b15", "float8e4b8": "fp8e4b8", "float8_e4m3fnuz": "fp8e4b8",
    "float8e5b16": "fp8e5b16", "float8_e5m2fnuz": "fp8e5b16",
    "half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32",
    "double": "fp64", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int": "i32", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "void": "void",
}
_CANONICAL_TYPE_NAMES.update({name: name for name in list(_CANONICAL_TYPE_NAMES.values())})
# Triton's name for the table.
type_canonicalisation_dict = _CANONICAL_TYPE_NAMES
_SIGNATURE_TYPE_NAMES = frozenset(_CANONICAL_TYPE_NAMES.values())


def normalize_annotation(annotation: Any) -> str:
    """The annotation of a kernel parameter as a signature string: `""` when there
    is none, `"constexpr"`, `"const"`, `"i32"`, `"*fp16"`, `"*kfp32"` (const pointer)."""
    from ..ir import types as ir_types

    if annotation is inspect.Parameter.empty or annotation is None or annotation == "":
        return ""
    if isinstance(annotation, str):
        text = annotation.strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            # `x: "i32"` under `from __future__ import annotations` reads '"i32"'.
            text = text[1:-1].strip()
        for prefix in ("triton.language.core.", "triton.language.", "tritone.language.core.",
                       "tritone.language.", "tl.core.", "tl."):
            if text.startswith(prefix):
                text = text[len(prefix):]
                break
        if text.startswith("const "):
            pointee = normalize_annotation(text[len("const "):])
            return "*k" + pointee[1:] if pointee.startswith("*") else "const"
        if text.endswith("*"):
            return "*" + normalize_annotation(text[:-1])
        if text.startswith("*") and not text.startswith("*k"):
            return "*" + normalize_annotation(text[1:])
        return _CANONICAL_TYPE_NAMES.get(text.replace("_t", ""), text)
    if isinstance(annotation, ir_types.pointer_type):
        prefix = "*k" if annotation.const else "*"
        return prefix + normalize_annotation(annotation.element_ty)
    if isinstance(annotation, ir_types.dtype):
        return _CANONICAL_TYPE_NAMES.get(annotation.name, annotation.name)
    if isinstance(annotation, type):
        # `tl.constexpr`, `tl.const`, `int`, `float`, `bool`.
        return _CANONICAL_TYPE_NAMES.get(annotation.__name__, annotation.__name__)
    return normalize_annotation(str(annotation))


@dataclass(frozen=True)
class KernelParam:
    """One parameter of a `@jit` function with what its declaration says about it."""

    num: int
    name: str
    annotation: str
    is_constexpr: bool
    is_const: bool
    do_not_specialize: bool
    do_not_specialize_on_alignment: bool
    default: Any = inspect.Parameter.empty

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty

    @property
    def annotation_type(self) -> str:
        """The annotation when it names a concrete type (`i32`, `*fp16`), else `""`."""
        core = self.annotation
        if core.startswith("*k"):
            core = core[2:]
        elif core.startswith("*"):
            core = core[1:]
        return self.annotation if core in _SIGNATURE_TYPE_NAMES else ""


class KernelInterface(Generic[T]):
    """What makes `kernel[grid](*args, **kwargs)` work: subclasses provide `run`."""

    run: T

    def __getitem__(self, grid) -> T:
        """`kernel[grid]` returns a launcher bound to `grid` (a tuple of 1-3 ints or a
        callable of the bound arguments)."""
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def warmup(self, *args, grid, **kwargs):
        """Compile for these arguments without running the kernel; a torch dtype
        may stand for a tensor of that dtype."""
        return self.run(*map(MockTensor.wrap_dtype, args), grid=grid, warmup=True, **kwargs)


class MockTensor:
    """Stands for a tensor of `dtype` when only its type matters (`warmup`)."""

    def __init__(self, dtype, shape=None):
        self.dtype = dtype
        self.shape = [1] if shape is None else shape

    @staticmethod
    def wrap_dtype(arg):
        """A torch dtype becomes a MockTensor of that dtype; other values pass through."""
        if type(arg).__name__ == "dtype" and type(arg).__module__ == "torch":
            return MockTensor(arg)
        return arg

    @staticmethod
    def data_ptr() -> int:
        return 0


# -- Triton's specialization functions -------------------------------------------
# Callers of Triton's API (TorchInductor's mutation analysis, Triton's own
# interpreter) ask for an argument's type and attribute in Triton's shapes.
# These answer from tritone's own specialization (`runtime.specialize`), so they
# agree with what the launcher compiles for.

def _upstream_answer(value: Any, type_name: Any, attribute: Any,
                     extra: Callable[[Any, str, Any], Any] | None) -> tuple[Any, Any]:
    """Triton's `(type, attribute)` for `value` from tritone's `specialize_value`
    answer: a constexpr's attribute is its value (a kernel's: its cache key),
    a tuple's are a tuple (or namedtuple) of types and one of attributes, and
    `extra(value, kind, attribute)` (kind "int" or "tensor") gives the
    attribute of ints and pointers that were specialised."""
    import numpy as np

    from .specialize import CONSTEXPR, TupleSpecialization

    if isinstance(type_name, TupleSpecialization):
        pairs = [_upstream_answer(item, item_type, item_attribute, extra)
                 for item, (item_type, item_attribute) in zip(value, type_name.items)]
        make = tuple if type_name.kind is tuple else type_name.kind._make
        return make(pair[0] for pair in pairs), make(pair[1] for pair in pairs)
    if isinstance(type_name, str) and type_name.startswith("tensordesc<"):
        return type_name, None  # Triton specialises descriptors on their type alone
    if type_name == CONSTEXPR:
        if isinstance(value, JITFunction):
            return CONSTEXPR, value.cache_key
        # A numpy scalar stands for the Python value it holds, as in `specialize_value`.
        return CONSTEXPR, value.item() if isinstance(value, np.generic) else value
    if extra is not None and attribute is not None:
        return type_name, extra(value, "tensor" if is_pointer_like(value) else "int", attribute)
    return type_name, attribute


def _specialize(arg: Any, is_const: bool, specialize_value: bool, align: bool,
                extra: Callable[[Any, str, Any], Any] | None) -> tuple[Any, Any]:
    from .specialize import specialize_value as tritone_specialization

    type_name, attribute = tritone_specialization(arg, is_const, specialize_value, align)
    return _upstream_answer(arg, type_name, attribute, extra)


def native_specialize_impl(backend: Any, arg: Any, is_const: bool = False, specialize_value: bool = True,
                           align: bool = True) -> tuple[Any, Any]:
    """Triton's `(type, attribute)` of a kernel argument: `("*fp32", "D")`,
    `("i32", "")`, `("constexpr", 1)`, `("fp32", None)`; a tuple gives a tuple of
    types and a tuple of attributes. The attribute is `"D"` (divisible by 16 /
    16-byte aligned), `""`, or None when not looked at. A `backend` class whose
    `supports_native_tensor_specialization` is False gives tensors' attributes
    with its `get_tensor_specialization(arg, align=...)` (ints keep the rule
    above). TypeError for values that cannot be arguments."""
    extra = None
    if backend is not None and not getattr(backend, "supports_native_tensor_specialization", True):
        def extra(value: Any, kind: str, attribute: Any) -> Any:
            return backend.get_tensor_specialization(value, align=align) if kind == "tensor" else attribute
    return _specialize(arg, is_const, specialize_value, align, extra)


def specialize_impl(arg: Any, specialize_extra: Callable[..., Any] | None = None, is_const: bool = False,
                    specialize_value: bool = True, align: bool = True) -> tuple[Any, Any]:
    """`native_specialize_impl` in the form of Triton before 3.5: the attribute
    of a specialised int or tensor is `specialize_extra(arg, "int" | "tensor",
    align=align)` when given (a backend's `get_arg_specialization`)."""
    extra = None
    if specialize_extra is not None:
        def extra(value: Any, kind: str, attribute: Any) -> Any:
            return specialize_extra(value, kind, align=align)
    return _specialize(arg, is_const, specialize_value, align, extra)


def create_specialize_impl(specialize_extra: Callable[..., Any] | None = None) -> Callable[..., tuple[Any, Any]]:
    """`specialize_impl` with `specialize_extra` bound: a function of `(arg,
    is_const=False, specialize_value=True, align=True)`."""

    def bound_specialize_impl(arg: Any, is_const: bool = False, specialize_value: bool = True,
                              align: bool = True) -> tuple[Any, Any]:
        return specialize_impl(arg, specialize_extra, is_const, specialize_value, align)

    return bound_specialize_impl


def mangle_type(arg: Any, specialize: bool = False) -> Any:
    """The signature type of `arg` (`"*fp16"`, `"i32"`, `"constexpr"`...), as
    Triton writes it; with `specialize`, an int 1 is `"constexpr"`."""
    return native_specialize_impl(None, arg, False, specialize, True)[0]


def _resolve_indices(spec: Iterable[int | str] | None, arg_names: list[str], fn_name: str, what: str) -> frozenset[int]:
    if not spec:
        return frozenset()
    indices = set()
    for item in spec:
        if isinstance(item, str):
            if item not in arg_names:
                raise ValueError(f"{what} of kernel {fn_name} names {item!r}, which is not one of its "
                                 f"parameters {arg_names}")
            indices.add(arg_names.index(item))
        else:
            index = int(item)
            if not 0 <= index < len(arg_names):
                raise ValueError(f"{what} of kernel {fn_name} holds index {index}, but it has "
                                 f"{len(arg_names)} parameters")
            indices.add(index)
    return frozenset(indices)


def _source_from_def(fn: Callable) -> tuple[str, int]:
    """The function's source from its `def` line on (decorators stripped, dedented)
    and the file line number of that `def`."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as error:
        raise ValueError("@jit functions should be defined in a Python file") from error
    text = textwrap.dedent("".join(lines))
    tree = ast.parse(text)
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise ValueError(f"@jit applies to functions, not to {type(node).__name__}")
    def_index = node.lineno - 1  # the `def` line; decorators come before it
    src = "".join(text.splitlines(keepends=True)[def_index:])
    return src, first_line + def_index


class SiteKernels(dict):
    """The kernels compiled for one launch site: specialization key -> CompiledKernel.

    `by_arguments` maps the launcher's cheaper argument key (see
    `specialize.make_key_binder`) to the same kernels; any change to this mapping
    empties it, and the launchers of its `owner` (a `DeviceCaches`), so none ever
    answers with a kernel the mapping no longer holds."""

    __slots__ = ("by_arguments", "owner")

    def __init__(self, *args, owner: DeviceCaches | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.by_arguments: dict = {}
        self.owner = owner

    def _changed(self) -> None:
        self.by_arguments.clear()
        if self.owner is not None:
            self.owner.clear_launchers()

    def __setitem__(self, key, value) -> None:
        self._changed()
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        self._changed()
        super().__delitem__(key)

    def clear(self) -> None:
        self._changed()
        super().clear()

    def pop(self, *args):
        self._changed()
        return super().pop(*args)

    def popitem(self):
        self._changed()
        return super().popitem()

    def setdefault(self, key, default=None):
        self._changed()
        return super().setdefault(key, default)

    def update(self, *args, **kwargs) -> None:
        self._changed()
        super().update(*args, **kwargs)

    def __ior__(self, other):
        self.update(other)
        return self


class DeviceEntry(NamedTuple):
    """One device's caches as Triton's `device_caches[device]` gives them:
    `(kernel_cache, kernel_key_cache, target, backend, binder)`."""

    kernel_cache: SiteKernels
    kernel_key_cache: dict
    target: Any
    backend: Any
    binder: Callable | None


_new_site_lock = threading.Lock()


class DeviceCaches(dict):
    """`JITFunction.device_caches`: launch site `(target, device)` -> {key:
    CompiledKernel} (a `SiteKernels`). `for_site` remembers the site it answered
    last, so that launches on the same device skip hashing the site (a
    dataclass, hashed in Python); any change to the mapping forgets it.

    `ready` is what `kernel[grid](...)` launches from without the general path:
    argument key -> (the GPU decision, device, plan launch function, kernel),
    filled by `runtime.dispatch`, the entry of the device launched last;
    `elsewhere` holds every device's, by (device, *argument key), for launches
    alternating between GPUs; `hot` holds the one entry the dispatcher launches
    inline (None once forgotten). All are forgotten on any change here or to a
    site's kernels."""

    __slots__ = ("_last", "ready", "elsewhere", "hot", "_binder")

    def __init__(self, *args, binder: Callable[[], Callable] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._last: tuple[Any, SiteKernels | None] = (None, None)
        self.ready: dict = {}
        self.elsewhere: dict = {}
        self.hot: list = []
        self._binder = binder

    def __missing__(self, device: Any) -> DeviceEntry:
        """Triton keys these caches by device: `device_caches[device]` (a GPU
        ordinal, not a site) is a `DeviceEntry` whose `kernel_cache` is the
        kernels of that device's site (added empty, as a launch would), so
        clearing it makes the next launch there compile again."""
        if isinstance(device, tuple):
            raise KeyError(device)
        from ..backends.compiler import make_backend
        from ..backends.sites import site_of_device

        site = site_of_device(device)
        kernels = self.for_site(site)
        binder = self._binder() if self._binder is not None else None
        return DeviceEntry(kernels, kernels.by_arguments, site[0], make_backend(site[0]), binder)

    def clear_launchers(self) -> None:
        """Forget `ready`, `elsewhere` and `hot` (the kernels they name may be gone)."""
        self.ready.clear()
        self.elsewhere.clear()
        if self.hot:
            # Overwritten, never emptied: a dispatcher running in another thread
            # may be between its `hot` and `hot[0]` checks.
            self.hot[0] = None

    def for_site(self, site: Any) -> SiteKernels:
        """The kernels of `site` (an empty mapping, added, when there are none yet)."""
        last_site, kernels = self._last
        if last_site is site:
            return kernels
        kernels = self.get(site)
        if type(kernels) is not SiteKernels or kernels.owner is not self:
            # Two threads meeting a new site (two GPUs launching at once) must
            # end with the same SiteKernels, or one's kernels would be lost.
            with _new_site_lock:
                kernels = self.get(site)
                if type(kernels) is not SiteKernels or kernels.owner is not self:
                    # None yet, or a mapping someone stored: keep its kernels.
                    kernels = SiteKernels(kernels or {}, owner=self)
                    super().__setitem__(site, kernels)
        self._last = (site, kernels)
        return kernels

    def _forget(self) -> None:
        self._last = (None, None)
        self.clear_launchers()

    def __setitem__(self, key, value) -> None:
        self._forget()
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        self._forget()
        super().__delitem__(key)

    def clear(self) -> None:
        self._forget()
        super().clear()

    def pop(self, *args):
        self._forget()
        return super().pop(*args)

    def popitem(self):
        self._forget()
        return super().popitem()

    def setdefault(self, key, default=None):
        self._forget()
        return super().setdefault(key, default)

    def update(self, *args, **kwargs) -> None:
        self._forget()
        super().update(*args, **kwargs)


class _CacheKeyWalk(threading.local):
    """Kernels whose cache key is being computed on this thread (guards recursion)."""

    def __init__(self):
        self.active: set[int] = set()


_cache_key_walk = _CacheKeyWalk()


@dataclass(frozen=True)
class JitFunctionInfo:
    """What `knobs.runtime.jit_cache_hook` and `jit_post_compile_hook` receive as
    `fn`: the kernel's module name, qualified name and JITFunction."""

    module: str
    name: str
    jit_function: JITFunction


class JITFunction(KernelInterface[T]):
    """A kernel (or a device function it calls): a Python function compiled on
    first launch for each specialization of its arguments.

    `src` is the source from `def` on; line `k` of `src` is line
    `starting_line_number + k - 1` of `file_name`.
    """

    def __init__(self, fn: Callable, version=None, do_not_specialize=None, do_not_specialize_on_alignment=None,
                 debug: bool | None = None, noinline: bool | None = None,
                 launch_metadata: Callable | None = None, repr: Callable | None = None):
        self.fn = fn
        self._repr = repr
        self.module = fn.__module__
        self.version = version
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__globals__ = fn.__globals__
        self.signature = inspect.signature(fn)
        self.arg_names = list(self.signature.parameters)
        self.src, self.starting_line_number = _source_from_def(fn)
        self.file_name = inspect.getsourcefile(fn) or fn.__code__.co_filename
        self.debug = debug
        self.noinline = noinline
        self.launch_metadata = launch_metadata

        no_spec = _resolve_indices(do_not_specialize, self.arg_names, self.__name__, "do_not_specialize")
        no_align = _resolve_indices(do_not_specialize_on_alignment, self.arg_names, self.__name__,
                                    "do_not_specialize_on_alignment")
        self.do_not_specialize = sorted(no_spec)
        self.do_not_specialize_on_alignment = sorted(no_align)
        params = []
        for num, (name, parameter) in enumerate(self.signature.parameters.items()):
            if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise TypeError(f"kernel {self.__name__}: parameter *{name} is not supported in @jit functions")
            annotation = self._annotation_text(parameter.annotation)
            is_constexpr = "constexpr" in annotation
            params.append(KernelParam(
                num=num, name=name, annotation=annotation, is_constexpr=is_constexpr,
                is_const=not is_constexpr and (annotation == "const" or annotation.startswith("*k")),
                do_not_specialize=num in no_spec, do_not_specialize_on_alignment=num in no_align,
                default=parameter.default))
        self.params = params
        self.constexprs = [p.num for p in params if p.is_constexpr]

        # (target, device) -> {specialization key: CompiledKernel}; filled by the launcher.
        self.device_caches = DeviceCaches(binder=self._get_binder)
        self.pre_run_hooks: list[Callable] = []
        self._cache_key: str | None = None
        # (name, id(globals dict)) -> (value, globals dict) of the constexpr globals the kernel reads.
        self.used_global_vals: dict[tuple[str, int], tuple[Any, dict]] = {}
        self._binder = None
        self._key_binder = None
        self._dispatch = None
        self._last_launcher: tuple[Any, Any, Any] = (None, None, None)

    def _annotation_text(self, annotation: Any) -> str:
        text = normalize_annotation(annotation)
        if isinstance(annotation, str) and "(" in text:
            # An expression kept as text by `from __future__ import annotations`,
            # such as "tl.pointer_type(tl.float16)": evaluate it where the kernel lives.
            try:
                return normalize_annotation(eval(annotation, self.__globals__))
            except Exception:
                return text
        return text

    def _unsafe_update_src(self, new_src: str) -> None:
        """Replace the kernel's source (from `def` on) with `new_src`, as Triton's
        tests do to make variants of a template kernel. Compiled kernels and the
        cache key of this function are dropped; like Triton, the cache keys of
        `@jit` callers that already hashed this function are not (clear theirs)."""
        tree = ast.parse(textwrap.dedent(new_src))
        if not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise ValueError(f"kernel {self.__name__}: the new source must start with `def`")
        self.src = new_src
        self._cache_key = None
        self.used_global_vals.clear()
        self.device_caches = DeviceCaches(binder=self._get_binder)
        self._dispatch = None
        self._last_launcher = (None, None, None)

    # -- identity ------------------------------------------------------------
    @property
    def cache_key(self) -> str:
        """Hash of the source, of the sources of the `@jit` functions it reaches
        through its globals, and of the constexpr globals it reads."""
        if self._cache_key is None:
            if id(self) in _cache_key_walk.active:
                # A recursive kernel: the cycle is already covered by the outer hash.
                return f"recursive:{self.__qualname__}"
            _cache_key_walk.active.add(id(self))
            try:
                parts = [self.src, f"noinline={self.noinline}", f"debug={self.debug}"]
                parts.extend(self._dependency_key_parts())
                self._cache_key = hashlib.sha256("\n".join(parts).encode()).hexdigest()
            finally:
                _cache_key_walk.active.discard(id(self))
        return self._cache_key

    def _dependency_key_parts(self) -> list[str]:
        from ..language.aggregate import aggregate_key
        from ..language.core import constexpr

        closure = {}
        for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # a closure variable not assigned yet
                continue
        parts = []
        for dotted in _global_references(self.src, set(self.arg_names)):
            head, *rest = dotted.split(".")
            if head in closure:
                value, scope = closure[head], closure
            elif head in self.__globals__:
                value, scope = self.__globals__[head], self.__globals__
            else:
                continue
            if isinstance(value, constexpr) and not rest:
                self.used_global_vals[(head, id(scope))] = (value, scope)
                parts.append(f"{head}={value.value!r}")
                continue
            for attribute in rest:
                if isinstance(value, JITFunction):
                    break
                value = getattr(value, attribute, None)
            if isinstance(value, JITFunction):
                parts.append(f"{dotted}:{value.cache_key}")
            elif isinstance(value, constexpr):
                parts.append(f"{dotted}={value.value!r}")
            elif isinstance(value, type) and getattr(value, "__triton_aggregate__", False):
                parts.append(f"{dotted}:{aggregate_key(value)}")
        return parts

    def check_globals_unchanged(self) -> None:
        """Raise RuntimeError when a constexpr global this kernel was compiled
        against has been rebound since."""
        for (name, _), (value, scope) in self.used_global_vals.items():
            current = scope.get(name, None)
            if current is not value:
                raise RuntimeError(
                    f"Global variable {name} has changed since we compiled this kernel "
                    f"({self.__name__}), from {value} to {current}")

    # -- calls -----------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        name = self.__name__
        raise RuntimeError(
            f"Cannot call @triton.jit'd outside of the scope of a kernel: {name} is a kernel; launch it over a grid "
            f"of programs: {name}[grid]({', '.join(self.arg_names)}), with grid a tuple of 1 to 3 ints such as "
            f"(triton.cdiv(size, BLOCK_SIZE),). Inside another @jit function, call it directly.")

    def add_pre_run_hook(self, hook: Callable) -> None:
        """Register `hook(*args, **kwargs)`, called with the launch arguments before each run."""
        assert callable(hook)
        self.pre_run_hooks.append(hook)

    def _get_binder(self) -> Callable:
        """The kernel's binder (`specialize.make_binder`), made on first use."""
        if self._binder is None:
            from .specialize import make_binder

            self._binder = make_binder(self)
        return self._binder

    def preload(self, specialization_data: str):
        """Compile the specialization that `specialization_data` describes (the
        text a `knobs.runtime.jit_cache_hook` received as
        `compile["specialization_data"]`) for the current launch site, and
        return the CompiledKernel, as Triton's preload does. It goes through
        the compile cache, where a later launch with matching arguments finds it."""
        from .dispatch import preload

        return preload(self, specialization_data)

    def run(self, *args, grid, warmup: bool, **kwargs):
        """Bind, specialise, compile when not cached, and (unless `warmup`) run.
        Returns the `CompiledKernel`."""
        return _launch_function()(self, args, kwargs, grid=grid, warmup=warmup)

    def __getitem__(self, grid) -> T:
        """`kernel[grid]`: a launcher bound to `grid` that goes straight to the
        launch path, through the kernel's generated dispatcher
        (`runtime.dispatch.make_dispatcher`) while no pre-run hook is set (a
        subclass overriding `run` gets `run` called, as Triton's KernelInterface does)."""
        dispatch = self._dispatch
        if dispatch is None or self.pre_run_hooks:
            if type(self).run is not JITFunction.run:
                return super().__getitem__(grid)
            launch = _launch_function()
            if self.pre_run_hooks:
                return lambda *args, **kwargs: launch(self, args, kwargs, grid=grid, warmup=False)
            dispatch = self._dispatch = _dispatcher_factory()(self)
        last_grid, last_dispatch, launcher = self._last_launcher
        if last_grid is grid and last_dispatch is dispatch:
            # A loop launching over the same grid object gets the same bound launcher.
            return launcher
        launcher = functools.partial(dispatch, grid)
        self._last_launcher = (grid, dispatch, launcher)
        return launcher

    def repr(self, specialization: Any) -> str:
        """The kernel's name for profilers and logs: what the `repr=` argument of
        `@jit` returns for `specialization`, else the function's name. (An
        instance attribute `repr` replaces this method, as TorchInductor sets it.)"""
        return self.__name__ if self._repr is None else self._repr(specialization)

    def __repr__(self) -> str:
        return f"JITFunction({self.module}:{self.__qualname__})"

    # -- crossing processes ----------------------------------------------------
    # What is compiled, loaded or generated for this process (compiled kernels,
    # binders, dispatchers) stays behind: a copy compiles again where it runs.
    # So does `_hash_lock`, a lock TorchInductor sets on kernels (Triton's own)
    # after unpickling them: locks do not pickle.
    _PROCESS_LOCAL = ("device_caches", "_binder", "_key_binder", "_dispatch", "_last_launcher", "_hash_lock")

    def __reduce_ex__(self, protocol):
        """A kernel that its module names (`module.qualname`) pickles as that
        name, as functions do, so the other process imports it. Otherwise it
        pickles by value when its `fn` pickles (TorchInductor sets `fn`,
        `__globals__` and `used_global_vals` to None first); the copy has the
        source, parameters and `repr` but compiles nothing without `fn`."""
        if self.fn is not None:
            by_name = reduce_by_name(self, self.__module__, self.__qualname__)
            if by_name is not None:
                return by_name
            if not _names_object(getattr(self.fn, "__module__", None), getattr(self.fn, "__qualname__", ""),
                                 self.fn):
                raise pickle.PicklingError(
                    f"kernel {self.__qualname__} cannot be pickled: {self.__module__}.{self.__qualname__} does not "
                    f"name it (a kernel defined inside a function, or a copy?). Define it at module level, or set "
                    f"its fn to None first, as TorchInductor does before pickling")
        return super().__reduce_ex__(protocol)

    def __getstate__(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items() if key not in self._PROCESS_LOCAL}
        # The module's globals come back from `fn`; the constexpr globals the cache
        # key read point into them, so they are read again with the key.
        state.pop("__globals__", None)
        if state.get("used_global_vals") is not None:
            state["used_global_vals"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__globals__ = self.fn.__globals__ if self.fn is not None else None
        if self.fn is not None and self._cache_key is not None and self.used_global_vals is not None:
            # The cache key came along; the globals it read are found again here.
            self._dependency_key_parts()
        self.device_caches = DeviceCaches(binder=self._get_binder)
        self._binder = self._key_binder = self._dispatch = None
        self._last_launcher = (None, None, None)

    def __deepcopy__(self, memo: dict) -> JITFunction:
        """A separate kernel over the same function, with no compiled kernels:
        changing the copy (TorchInductor clears fields before pickling) leaves
        this one whole."""
        return deepcopy_by_state(self, memo)


_launch: Callable[..., Any] | None = None
_make_dispatcher: Callable[..., Any] | None = None


def _dispatcher_factory() -> Callable[..., Any]:
    """`runtime.dispatch.make_dispatcher`, imported on first use (see `_launch_function`)."""
    global _make_dispatcher
    if _make_dispatcher is None:
        from .dispatch import make_dispatcher

        _make_dispatcher = make_dispatcher
    return _make_dispatcher


def _names_object(module: str | None, qualname: str, obj: Any) -> bool:
    """Whether `module.qualname` is `obj` in this process (so another process
    that imports `module` finds the same object there)."""
    if not module or "<locals>" in qualname:
        return False
    value: Any = sys.modules.get(module)
    for part in qualname.split("."):
        value = getattr(value, part, None)
    return value is obj


def reduce_by_name(obj: Any, module: str | None, qualname: str) -> tuple[Callable, tuple[str, str]] | None:
    """A `__reduce_ex__` answer that pickles `obj` as the name `module.qualname`
    (so it comes back as the object the other process's module holds), or None
    when that name is not `obj` here."""
    if not _names_object(module, qualname, obj):
        return None
    return (_import_object, (module, qualname))


def deepcopy_by_state(obj: Any, memo: dict) -> Any:
    """A new object of `obj`'s class set from a deep copy of `obj.__getstate__()`
    (for classes whose `__reduce_ex__` pickles by name, which `copy.deepcopy`
    would otherwise answer with `obj` itself)."""
    clone = type(obj).__new__(type(obj))
    memo[id(obj)] = clone
    getstate = getattr(obj, "__getstate__", None)  # object has none before Python 3.11
    state = copy.deepcopy(getstate() if getstate is not None else dict(obj.__dict__), memo)
    setstate = getattr(clone, "__setstate__", None)
    if setstate is not None:
        setstate(state)
    else:
        clone.__dict__.update(state)
    return clone


def base_function(kernel: Any) -> Any:
    """The Python function under a kernel and its wrappers (`Autotuner`,
    `Heuristics`, `JITFunction`), following `.fn`."""
    while not inspect.isfunction(kernel) and getattr(kernel, "fn", None) is not None:
        kernel = kernel.fn
    return kernel


def _import_object(module: str, qualname: str) -> Any:
    """The object `module.qualname` (importing `module`): how a kernel pickled by
    name comes back."""
    value: Any = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def _launch_function() -> Callable[..., Any]:
    """`runtime.dispatch.launch`, imported on first use (it imports the compiler,
    which imports this module) and kept, since every launch goes through it."""
    global _launch
    if _launch is None:
        from .dispatch import launch

        _launch = launch
    return _launch


def _global_references(src: str, parameters: set[str]) -> list[str]:
    """Dotted names (`fn`, `mod.fn`, `tl.constexpr_value`) the source reads that are
    neither parameters nor assigned locally, in first-seen order."""
    tree = ast.parse(src)
    assigned = set(parameters)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            assigned.add(node.id)
    found: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = []
            current: ast.AST = node
            while isinstance(current, ast.Attribute):
                chain.append(current.attr)
                current = current.value
            if isinstance(current, ast.Name) and current.id not in assigned:
                found[".".join([current.id, *reversed(chain)])] = None
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in assigned:
            found[node.id] = None
    return list(found)


# Plain host values: what a constexpr function takes as it is (no constexpr among them),
# and launch options `runtime.dispatch` keys without recursing into them.
SCALAR_TYPES = frozenset({int, float, bool, str, type(None)})


class ConstexprFunction:
    """A plain Python function callable from kernels on constexpr arguments,
    giving a constexpr (`@triton.constexpr_function`), and from host code as is.

    It is a builtin for the frontend: called with `_semantic=`, its constexpr
    arguments are unwrapped and the result wrapped back into a constexpr."""

    __triton_builtin__ = True

    def __init__(self, fn: Callable):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn

    def __call__(self, *args, _semantic=None, **kwargs):
        if _semantic is None and not kwargs and all(type(arg) in SCALAR_TYPES for arg in args):
            # host code, a launch grid's `triton.cdiv(n, META["BLOCK"])`: nothing to unwrap
            return self.fn(*args)
        from ..language.core import _unwrap_if_constexpr, constexpr

        args = [_unwrap_if_constexpr(arg) for arg in args]
        kwargs = {key: _unwrap_if_constexpr(value) for key, value in kwargs.items()}
        result = self.fn(*args, **kwargs)
        return result if _semantic is None else constexpr(result)

    @property
    def src(self) -> str:
        """The function's source from its `def` line on, decorators stripped, as
        Triton keeps it (TorchInductor copies it into the modules it generates
        for user kernels that call the function); ValueError when `fn` has no
        source file."""
        return _source_from_def(self.fn)[0]

    def __get__(self, instance, owner=None):
        """As a method (of an aggregate class, `self.square()`), bound to `instance`."""
        return self if instance is None else types.MethodType(self, instance)

    def __repr__(self) -> str:
        return f"ConstexprFunction({self.__module__}:{self.__qualname__})"

    def __reduce_ex__(self, protocol):
        """By name when its module names it (`tritone.cdiv`), as functions pickle;
        else by value, which needs `fn` itself to pickle."""
        by_name = reduce_by_name(self, self.__module__, self.__qualname__)
        return by_name if by_name is not None else super().__reduce_ex__(protocol)


def constexpr_function(fn: Callable) -> ConstexprFunction:
    """Make `fn` callable inside kernels on constexpr values (result: a constexpr)."""
    return ConstexprFunction(fn)


@overload
def jit(fn: T) -> JITFunction[T]:
    ...


@overload
def jit(*, version=None, repr: Callable | None = None, launch_metadata: Callable | None = None,
        do_not_specialize: Iterable[int | str] | None = None,
        do_not_specialize_on_alignment: Iterable[int | str] | None = None,
        debug: bool | None = None, noinline: bool | None = None) -> Callable[[T], JITFunction[T]]:
    ...


def jit(fn=None, *, version=None, repr=None, launch_metadata=None, do_not_specialize=None,
        do_not_specialize_on_alignment=None, debug=None, noinline=None):
    """Mark a function as a kernel: `@jit` or `@jit(do_not_specialize=[...], ...)`.

    `do_not_specialize` / `do_not_specialize_on_alignment` take parameter
    indices or names. `launch_metadata(grid, metadata, args)` adds entries to
    what the launch hooks receive. `repr(specialization)` names the kernel for
    profilers (`JITFunction.repr`); `version` is accepted for compatibility and
    has no effect. Kernels are compiled on
    their first launch per specialization (see `tritone.runtime.specialize`)."""

    def decorator(function: T) -> JITFunction[T]:
        assert callable(function), f"@jit applies to functions, got {function!r}"
        return JITFunction(function, version=version, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment, debug=debug,
                           noinline=noinline, launch_metadata=launch_metadata, repr=repr)

    if fn is not None:
        return decorator(fn)
    return decorator
