"""`kernel[grid](*args, **kwargs)`: bind the arguments, find or compile the
kernel for their specialization and the options, resolve the grid, run.

Where kernels run is `backends.sites.launch_site()`: on the current NVIDIA GPU
when the driver loads and sees a GPU and TRITON_INTERPRET is not set, else in
the CPU interpreter. Compiled kernels are kept per kernel in
`fn.device_caches[(target, device)]`, keyed by (specialization, what the
options are made from: launch keywords, the kernel's debug flag, knob values).

The path of a launch whose kernel is cached is kept lean: the kernel is found
by the key binder's cheap argument key (the full specialization is computed
only when that key is new), knobs are read through their fast path, and the
loaded kernel's plan is called directly when no launch hooks are set.
"""

from __future__ import annotations

import difflib
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import knobs
from ..backends import sites
from ..backends.base import normalize_grid
from ..backends.compiler import specialization_attrs
from ..backends.sites import launch_site, site_for
from ..compiler import compiler
from ..errors import CompilationError, show_internal_frames, without_internal_frames
from ..ir.target import GPUTarget, KernelOptions
from ..language.core import constexpr
from .jit import SCALAR_TYPES
from .specialization_data import deserialize_specialization_data, serialize_specialization_data
from .specialize import (
    CONSTEXPR,
    TupleSpecialization,
    UnknownKeywordError,
    argument_tuple,
    generated_prefix,
    key_namespace,
    key_statements,
    make_key_binder,
    parameter_list,
)

if TYPE_CHECKING:
    from .jit import JITFunction


def _source_for(fn: JITFunction, bound: dict[str, Any], specialization: tuple) -> compiler.ASTSource:
    """The ASTSource of this specialization, in Triton's form: tuple arguments
    typed by (named)tuples of type strings, their constexpr elements and
    divisibility attributes keyed by index paths (`(2, 0)`: element 0 of parameter 2)."""
    signature: dict[str, Any] = {}
    constexprs: dict[tuple[int, ...], Any] = {}
    attrs: dict[tuple[int, ...], list] = {}

    def record(path: tuple[int, ...], value: Any, type_name: Any, attribute: Any) -> None:
        if isinstance(type_name, TupleSpecialization):
            for index, (item, (item_type, item_attribute)) in enumerate(zip(value, type_name.items)):
                record((*path, index), item, item_type, item_attribute)
        elif type_name == CONSTEXPR:
            if isinstance(value, constexpr):
                value = value.value
            constexprs[path] = value.item() if isinstance(value, np.generic) else value
        elif attribute:
            attrs[path] = specialization_attrs(attribute)

    for param, (type_name, attribute) in zip(fn.params, specialization):
        record((param.num,), bound[param.name], type_name, attribute)
        signature[param.name] = type_name.signature() if isinstance(type_name, TupleSpecialization) else type_name
    return compiler.ASTSource(fn, signature, constexprs, attrs)


def source_for_call(fn: JITFunction, args: tuple, kwargs: dict[str, Any]) -> tuple[compiler.ASTSource, dict[str, Any]]:
    """(the ASTSource of `fn` specialised for a call with `args` and `kwargs`,
    the keywords that are not parameters: compile options)."""
    bound, specialization, options = fn._get_binder()(*args, **kwargs)
    return _source_for(fn, bound, specialization), options


def specialization_data(fn: JITFunction, source: compiler.ASTSource, options: KernelOptions, key: Any) -> str:
    """The `specialization_data` text of compiling `source` (of kernel `fn`)
    with `options`, under the launch cache key `key` (written as its repr, for
    people: preload needs only the source and options): what a jit hook
    receives and `preload` reads."""
    return serialize_specialization_data(f"{fn.__module__}.{fn.__qualname__}", source.signature, source.constants,
                                         source.attrs, options.as_dict(), repr(key))


def preload(fn: JITFunction, text: str) -> compiler.CompiledKernel:
    """`JITFunction.preload`: compile what the specialization data `text` of
    kernel `fn` describes for the current launch site."""
    data = deserialize_specialization_data(text)
    name = f"{fn.__module__}.{fn.__qualname__}"
    if data["name"] != name:
        raise RuntimeError(f"Specialization data is for {data['name']} but trying to preload for {name}")
    source = compiler.ASTSource(fn, data["signature"], data["constants"], data["attrs"])
    return compiler.compile(source, target=launch_site()[0], options=data["options"])


def _hashable(value):
    """`value` as a hashable key: dicts become sorted item tuples, lists and sets tuples
    (launch options such as `extern_libs={...}` hold them). A dict of scalars (an
    autotuner's num_warps, num_stages, num_ctas on every launch) is sorted as it is."""
    if isinstance(value, dict):
        for item in value.values():  # a loop, not all() and a generator: this runs on every launch
            if type(item) not in SCALAR_TYPES:
                return tuple(sorted((key, _hashable(item)) for key, item in value.items()))
        return tuple(sorted(value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(item) for item in value)
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(_hashable(item) for item in value))
    return value


def _unknown_keyword(fn: JITFunction, name: str) -> UnknownKeywordError:
    known = [*fn.arg_names, *KernelOptions.FIELD_NAMES, "stream"]
    by_case = {candidate.lower(): candidate for candidate in known}
    close = difflib.get_close_matches(name.lower(), list(by_case), n=1, cutoff=0.7)
    suggestion = f"; did you mean {by_case[close[0]]}?" if close else ""
    return UnknownKeywordError(
        f"Keyword argument {name} was specified but unrecognised{suggestion} (kernel {fn.__name__} has parameters "
        f"{', '.join(fn.arg_names)}; launch options are {', '.join(sorted(KernelOptions.FIELD_NAMES))}, stream)")


# Held while a kernel's hot entry and its dispatcher are set (see `launch`).
_hot_lock = threading.Lock()

# What a kernel's options are made from: the launch keywords, the kernel's debug
# flag and the knobs that give defaults. Kernels are cached under this tuple
# (hashed in C, unlike KernelOptions) and options are built from it once.
_options_memo: dict[tuple, KernelOptions] = {}

# The knobs every launch reads: where to run, whether to use the cache, and those
# that give option defaults.
_launch_knobs = knobs.KnobReader((knobs.runtime, "interpret"), (knobs.compilation, "always_compile"),
                                 (knobs.language, "default_fp_fusion"), (knobs.language, "fp32_default"),
                                 (knobs.compilation, "debug"))


# What the reader answers while no knob variable is set and no knob assigned (the same object each time).
_launch_knobs_defaults = _launch_knobs.defaults
_ENVIRON_TYPE = type(os.environ)


def _options(key: tuple, extra: dict[str, Any], debug_default: Any) -> KernelOptions:
    """The KernelOptions of an options key (see `launch`); raises ValueError for bad values."""
    options = _options_memo.get(key)
    if options is None:
        options = _options_memo[key] = KernelOptions.from_dict(extra, debug_default=bool(debug_default))
    return options


def _grid_dims(grid: Any, kernel_name: str) -> tuple[Any, Any, Any]:
    """The three grid dimensions; tuples of ints pass as they are (the plans check
    their ranges), anything else through `normalize_grid`."""
    if type(grid) is tuple:
        size = len(grid)
        if size == 1:
            x = grid[0]
            if type(x) is int:
                return x, 1, 1
        elif size == 3:
            x, y, z = grid
            if type(x) is int and type(y) is int and type(z) is int:
                return grid
    return normalize_grid(grid, kernel_name)


def launch(fn: JITFunction, args: tuple, kwargs: dict[str, Any], *, grid, warmup: bool) -> compiler.CompiledKernel:
    """Compile `fn` for these arguments if not cached and, unless `warmup`, run it
    over `grid`. Returns the CompiledKernel."""
    key_binder = fn._key_binder
    if key_binder is None:
        key_binder = fn._key_binder = make_key_binder(fn)
    arguments_key, values, extra = key_binder(*args, **kwargs)
    stream = None
    if extra:
        stream = extra.pop("stream", None)
        for name in extra:
            if name not in KernelOptions.FIELD_NAMES:
                raise _unknown_keyword(fn, name)
    if fn.pre_run_hooks:
        for hook in fn.pre_run_hooks:
            hook(*args, **kwargs)

    knob_values = _launch_knobs()
    interpret, always_compile, fp_fusion_default, fp32_default, debug_knob = knob_values
    options_key = (_hashable(extra) if extra else (), fn.debug, fp_fusion_default, fp32_default, debug_knob)
    cache = fn.device_caches.for_site(site := site_for(interpret))
    lookup_key = (arguments_key, options_key)
    kernel = None if always_compile else cache.by_arguments.get(lookup_key)
    if kernel is None:
        try:
            kernel = _specialized(fn, args, kwargs, cache, site, options_key, extra, always_compile, warmup)
        except CompilationError as error:
            if show_internal_frames():
                raise
            __tracebackhide__ = True  # pytest then shows the test's call and the kernel lines, not this function
            short = without_internal_frames(error)
            raise short from short.__cause__
        if kernel is None:  # knobs.runtime.jit_cache_hook asked to skip it
            return None
        cache.by_arguments[lookup_key] = kernel
    elif fn.used_global_vals:
        fn.check_globals_unchanged()
    if warmup:
        return kernel

    plan = kernel._plan
    if plan is None:
        kernel._init_handles()
        plan = kernel._plan
    if callable(grid):
        grid = grid(dict(zip(fn.arg_names, values)))
    grid_x, grid_y, grid_z = _grid_dims(grid, fn.__name__)
    hooks = knobs.runtime
    if not (hooks.launch_enter_hook or hooks.launch_exit_hook):
        plan.launch(grid_x, grid_y, grid_z, stream, *values)
        if (not extra and not always_compile and not fn.pre_run_hooks and not fn.used_global_vals
                and site[1] is not None and knob_values is _launch_knobs_defaults and not _launch_knobs.assigned):
            # The dispatcher may launch these arguments from now on without this path.
            entry = (sites._gpu, site[1], plan.launch, kernel)
            caches = fn.device_caches
            caches.ready[arguments_key] = entry
            caches.elsewhere[(site[1], *arguments_key)] = entry
            if (not caches.hot or caches.hot[0] is None) and fn._dispatch is not None:
                inline = _inline_launch(fn, arguments_key, entry)
                if inline is not None:
                    with _hot_lock:  # one hot entry, and the dispatcher of that one, when threads race here
                        if not caches.hot or caches.hot[0] is None:
                            caches.hot[:] = [entry]
                            fn._dispatch = make_dispatcher(fn, inline)
        return kernel
    metadata = kernel.launch_metadata((grid_x, grid_y, grid_z), stream, *values)
    kernel.run(grid_x, grid_y, grid_z, stream, kernel.function, kernel.packed_metadata, metadata,
               hooks.launch_enter_hook, hooks.launch_exit_hook, *values)
    return kernel


@dataclass(frozen=True)
class _Inline:
    """The code a dispatcher runs to launch one `ready` entry itself (see
    `make_dispatcher`): `guards` (expressions true exactly when the arguments
    have that entry's key, binding `{prefix}a<i>` to tensor addresses), `writes`
    (statements filling the plan's storage) and the names they use."""

    entry: tuple
    guards: tuple[str, ...]
    writes: tuple[str, ...]
    names: dict[str, Any]


def _inline_launch(fn: JITFunction, key: tuple, entry: tuple) -> _Inline | None:
    """How a dispatcher can launch `entry` (a `ready` entry of argument key `key`)
    itself, or None when the arguments are not all torch tensors, i32-range ints,
    floats and int constexprs, when the plan launches through cuLaunchKernelEx or
    converts a scalar, or when torch has not initialised CUDA (the stream is torch's)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    gpu, device, _, kernel = entry
    plan = kernel._plan
    parts = plan.inline_parts() if plan is not None else None
    if parts is None:
        return None
    prefix = generated_prefix(fn)
    p = prefix
    names = {f"{p}{name}": value for name, value in parts.items() if name != "storage"}
    names.update({f"{p}hot_entry": entry, f"{p}hot_gpu": gpu, f"{p}hot_kernel": kernel,
                  f"{p}raw_stream": torch._C._cuda_getCurrentRawStream})
    guards, writes = [], []
    slot = 0
    for index, (param, spec_param, part) in enumerate(zip(fn.params, plan.spec.parameters, key)):
        name = param.name
        if param.annotation_type:
            return None
        if param.is_constexpr or spec_param.is_constexpr:
            if part == (CONSTEXPR, ("int", 1)) or type(part) is int:
                guards.append(f"{p}type({name}) is {p}int and {name} == {1 if type(part) is not int else part}")
                continue
            return None
        value = f"{name}"
        if isinstance(part, torch.dtype) or (type(part) is tuple and len(part) == 2
                                            and isinstance(part[0], torch.dtype)):
            dtype = part if isinstance(part, torch.dtype) else part[0]
            names[f"{p}dtype{index}"] = dtype
            guards.append(f"{p}type({name}) is {p}Tensor and {name}.dtype is {p}dtype{index} "
                          f"and {name}.get_device() == {device}")
            value = f"{p}a{index}"
            if not param.do_not_specialize and not param.do_not_specialize_on_alignment:
                aligned = isinstance(part, torch.dtype)
                guards.append(f"{'not ' if aligned else ''}({value} := {name}.data_ptr()) & 15")
            else:
                guards.append(f"({value} := {name}.data_ptr()) >= 0")
        elif part in (("i32", "D"), ("i32", ""), ("i32", None)):
            # The conditions under which key_statements gives this part.
            guards.append(f"{p}type({name}) is {p}int and -2147483648 <= {name} <= 2147483647")
            if not param.do_not_specialize:
                guards.append(f"{name} != 1")
                if not param.do_not_specialize_on_alignment:
                    guards.append(f"{'not ' if part[1] else ''}{name} & 15")
        elif part == ("fp32", None):
            guards.append(f"{p}type({name}) is {p}float")
        else:
            return None
        if spec_param.type.startswith("*") != (value != name):
            return None  # a pointer parameter given an int, or a tensor for a scalar: the general path says why
        names[f"{p}v{slot}"] = parts["storage"][slot]
        writes.append(f"{p}v{slot}.value = {value}")
        slot += 1
    return _Inline(entry, tuple(guards), tuple(writes), names)


def make_dispatcher(fn: JITFunction, inline: _Inline | None = None) -> Callable[..., Any]:
    """`fn`'s `kernel[grid](...)` as one generated function `(grid, *args, **kwargs)`
    with the kernel's own parameters. While nothing a launch reads is set (launch
    options, knob variables or assignments, launch hooks) it computes the argument
    key (`specialize.key_statements`) and, when `fn.device_caches.ready` (or
    `elsewhere`, for another GPU than the last launch's) holds a launcher for it
    on the current GPU, runs that kernel's plan directly; with
    `inline`, arguments of that entry's key over a 1-D grid are written into its
    plan's storage and launched right here (while the entry is `hot`). Everything
    else goes through `launch`. Returns what `launch` returns: the CompiledKernel."""
    prefix = generated_prefix(fn)
    p = prefix
    namespace = key_namespace(fn, prefix)
    environ = os.environ
    namespace.update({
        f"{p}fn": fn, f"{p}ready": fn.device_caches.ready, f"{p}elsewhere": fn.device_caches.elsewhere,
        f"{p}hot": fn.device_caches.hot, f"{p}launch": launch,
        f"{p}module": sites, f"{p}os": os, f"{p}environ": environ,
        f"{p}knob_keys": _launch_knobs.environ_keys, f"{p}assigned": _launch_knobs.assigned,
        f"{p}runtime": knobs.runtime, f"{p}grid_dims": _grid_dims, f"{p}names": tuple(fn.arg_names),
    })
    if type(environ) is _ENVIRON_TYPE:
        namespace[f"{p}environ_keys"] = environ._data.keys()
        environ_check = f"{p}os.environ is {p}environ and {p}environ_keys.isdisjoint({p}knob_keys)"
    else:
        environ_check = "False"  # os.environ replaced by another mapping: knobs are read the general way
    arguments = argument_tuple(fn)
    general = f"return {p}launch({p}fn, ({arguments}), {p}options, grid={p}grid, warmup=False)"
    keys = "".join(f"{prefix}k{index}, " for index in range(len(fn.params)))
    lines = [
        f"def {fn.__name__}({p}grid, {parameter_list(fn, namespace, prefix)}):",
        (f"    if ({p}options or {p}assigned or not ({environ_check}) or {p}runtime.launch_enter_hook"
         f" or {p}runtime.launch_exit_hook):"),
        f"        {general}",
    ]
    if inline is not None:
        namespace.update(inline.names)
        device = inline.entry[1]
        guards = [f"{p}hot", f"{p}hot[0] is {p}hot_entry", f"{p}type({p}grid) is {p}tuple", f"{p}len({p}grid) == 1",
                  f"{p}type({p}gx := {p}grid[0]) is {p}int", f"0 < {p}gx <= 2147483647", *inline.guards,
                  f"{p}module._gpu is {p}hot_gpu", f"{p}hot_gpu.current_device() == {device}"]
        lines += [
            f"    if ({' and '.join(guards)}):",
            f"        {p}stream = {p}raw_stream({device})",
            f"        {p}acquire()",  # a with statement costs twice as much
            "        try:",
            *(f"            {write}" for write in inline.writes),
            f"            {p}config.grid_x = {p}gx",
            f"            {p}config.stream = {p}stream",
            f"            {p}code = {p}call_ex({p}config_address, {p}function, {p}params, None)",
            f"            if {p}code:",
            f"                {p}failed({p}code, {p}gx, {p}stream)",
            "        finally:",
            f"            {p}release()",
            f"        return {p}hot_kernel",
        ]
    lines += [
        *(f"    {line}" for index, param in enumerate(fn.params)
          for line in key_statements(param, f"{prefix}k{index}", prefix)),
        f"    {p}entry = {p}ready.get(({keys}))",
        f"    if {p}entry is None:",
        f"        {general}",
        f"    {p}gpu = {p}module._gpu",
        f"    if {p}gpu is not {p}entry[0] or {p}gpu.current_device() != {p}entry[1]:",
        # Another GPU than the one launched last (of the same GPU decision): its own entry, if it has one.
        f"        {p}entry = {p}elsewhere.get(({p}gpu.current_device(), {keys})) if {p}gpu is {p}entry[0] else None",
        f"        if {p}entry is None or {p}entry[0] is not {p}gpu:",
        f"            {general}",
        f"    if {p}type({p}grid) is {p}tuple and {p}len({p}grid) == 1 and {p}type({p}grid[0]) is {p}int:",
        f"        {p}entry[2]({p}grid[0], 1, 1, None, {arguments})",
        "    else:",
        f"        if {p}callable({p}grid):",
        f"            {p}grid = {p}grid({p}dict({p}zip({p}names, ({arguments}))))",
        f"        {p}entry[2](*{p}grid_dims({p}grid, {fn.__name__!r}), None, {arguments})",
        f"    return {p}entry[3]",
    ]
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<dispatcher of {fn.__name__}>", "exec"), namespace)
    dispatch = namespace[fn.__name__]
    dispatch.__source__ = source
    return dispatch


def _specialized(fn: JITFunction, args: tuple, kwargs: dict[str, Any], cache: dict,
                 site: tuple[GPUTarget, int | None], options_key: tuple, extra: dict[str, Any], always_compile: bool,
                 warmup: bool) -> compiler.CompiledKernel | None:
    """The kernel for these arguments' full specialization: from `cache`, else
    compiled (and added), with `knobs.runtime.jit_cache_hook` called before and
    `jit_post_compile_hook` after; None when the cache hook answers true."""
    bound, specialization, _ = fn._get_binder()(*args, **kwargs)
    key = (specialization, options_key)
    kernel = None if always_compile else cache.get(key)
    if kernel is None:
        options = _options(options_key, extra, fn.debug)
        source = _source_for(fn, bound, specialization)
        hooks = knobs.runtime
        if hooks.jit_cache_hook and _call_jit_hook(hooks.jit_cache_hook, fn, source, key, options, site[1], warmup):
            return None
        kernel = compiler.compile(source, target=site[0], options=options)
        cache[key] = kernel
        if hooks.jit_post_compile_hook:
            _call_jit_hook(hooks.jit_post_compile_hook, fn, source, key, options, site[1], warmup)
    elif fn.used_global_vals:
        fn.check_globals_unchanged()
    return kernel


def _call_jit_hook(hook: Callable[..., Any], fn: JITFunction, source: compiler.ASTSource, key: tuple,
                   options: KernelOptions, device: int | None, warmup: bool) -> Any:
    """Call a `jit_cache_hook` / `jit_post_compile_hook` as Triton does, describing
    the compilation of `source` with `options` (the `compile` dictionary holds the
    options a hook may look at, as their KernelOptions values); its answer."""
    from .jit import JitFunctionInfo

    types = ", ".join(f"{name}: {type_name}" for name, type_name in source.signature.items())
    described = ", ".join(f"{name}={getattr(options, name)}" for name in (
        "num_warps", "num_ctas", "num_stages", "enable_fp_fusion", "launch_cooperative_grid"))
    compile_info = {
        "key": key, "signature": dict(source.signature), "device": device, "constants": dict(source.constants),
        "num_warps": options.num_warps, "num_ctas": options.num_ctas, "num_stages": options.num_stages,
        "enable_fp_fusion": options.enable_fp_fusion, "launch_cooperative_grid": options.launch_cooperative_grid,
        "extern_libs": options.extern_libs, "configs": [dict(source.attrs)], "is_warmup": warmup,
        "specialization_data": specialization_data(fn, source, options, key),
    }
    return hook(key=key, repr=f"{fn.__qualname__}[{described}]({types})",
                fn=JitFunctionInfo(fn.__module__, fn.__qualname__, fn), compile=compile_info,
                is_manual_warmup=warmup, already_compiled=False)
