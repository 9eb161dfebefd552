"""Autotuning and heuristics: `@autotune(configs, key)`, `Config`, `@heuristics(values)`.

An `Autotuner` wraps a `@jit` kernel (or a `Heuristics`) and, for each new
tuning key (the values of the `key` arguments plus the dtype of every argument
that has one), picks one of its `Config`s:

- on a GPU, or wherever a `do_bench` was given, it benchmarks the configs that
  survive pruning and keeps the fastest; configs that cannot compile or do not
  fit the device are skipped with their reason kept, and when none is left the
  error lists every config and why it failed;
- on the interpreter, without a `do_bench`, it takes the first config that
  compiles, without timing anything (interpreted timings say nothing about a GPU).

Results are kept in memory per launch site (the GPU, with its architecture)
and key and, with `cache_results=True` or `TRITON_CACHE_AUTOTUNING=1`, on disk
beside the compiled kernels per architecture and key, so another process starts
with the same choice without benchmarking. A launch's arguments are kept per
thread: threads driving different GPUs may launch one kernel at once. While a
sweep of several configs runs with stderr on a terminal, one line there shows
which config is being timed and the best so far.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import shutil
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from .. import knobs
from ..backends.sites import launch_site
from ..errors import CompilationError, OutOfResources, PTXASError, TritonError
from .driver import driver
from .jit import JITFunction, KernelInterface, base_function, deepcopy_by_state, reduce_by_name

__all__ = ["Autotuner", "AutotunerError", "Config", "Heuristics", "OutOfResources", "PTXASError", "autotune",
           "heuristics"]

# Errors that mean "this config does not work here" rather than "the kernel is
# broken": the config is skipped. A CompilationError is one when it comes from a
# config's constexprs (a block too large for tl.arange, a static_assert); when
# every config fails the same way, the listing shows it is the kernel's.
CONFIG_ERRORS = (OutOfResources, CompilationError, PTXASError)

# The quantiles each config is timed at; the first (the median) ranks them.
BENCH_QUANTILES = (0.5, 0.2, 0.8)

# What `kernel[grid](...)` adds to every launch's keywords.
_LAUNCHER_KEYWORDS = frozenset({"grid", "warmup"})
# Whether this process was told that the interpreter does not time configs.
_told_configs_untimed = False

# Sweeps of at least this many configs show the progress line.
PROGRESS_MIN_CONFIGS = 4


class _LaunchState(threading.local):
    """What one launch of an autotuned kernel works with, kept per thread: two
    threads (driving two GPUs, say) may launch the same kernel at once."""

    def __init__(self):
        self.nargs: dict[str, Any] | None = None
        self.restore_copies: dict[str, Any] = {}


class AutotunerError(TritonError):
    """Autotuning could not choose a config; reads "Autotuner error: <message>",
    as Triton's. `failures` holds `(config, exception)` for each config that was
    tried and failed."""

    def __init__(self, message: str, failures: Iterable[tuple[Config, BaseException]] = ()):
        self.error_message = message
        self.failures = list(failures)
        super().__init__(message)

    def __str__(self) -> str:
        return f"Autotuner error: {self.error_message}"


class Config:
    """One candidate setting of a kernel's meta-parameters: `kwargs` (constexpr
    values by name) and the launch options `num_warps`, `num_stages`,
    `num_ctas`, `maxnreg`. `pre_hook(args)` runs before each launch with this
    config, with every argument by name. Equal configs hash alike."""

    def __init__(self, kwargs: dict[str, Any], num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: int | None = None, pre_hook: Callable[[dict[str, Any]], Any] | None = None):
        self.kwargs = kwargs
        self.num_warps = num_warps
        self.num_ctas = num_ctas
        self.num_stages = num_stages
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict[str, Any]:
        """The meta-parameters and the launch options that are set, as launch keywords."""
        options = {"num_warps": self.num_warps, "num_ctas": self.num_ctas, "num_stages": self.num_stages,
                   "maxnreg": self.maxnreg}
        return {**self.kwargs, **{name: value for name, value in options.items() if value is not None}}

    def _identity(self) -> tuple:
        return (tuple(sorted(self.all_kwargs().items())), self.pre_hook)

    def __hash__(self) -> int:
        return hash(self._identity())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Config):
            return NotImplemented
        return self._identity() == other._identity()

    def __str__(self) -> str:
        parts = [f"{name}: {value}" for name, value in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}", f"num_stages: {self.num_stages}",
                  f"maxnreg: {self.maxnreg}"]
        return ", ".join(parts)

    def __repr__(self) -> str:
        text = f"Config({self.kwargs!r}, num_warps={self.num_warps}, num_stages={self.num_stages}"
        if self.num_ctas != 1:
            text += f", num_ctas={self.num_ctas}"
        if self.maxnreg is not None:
            text += f", maxnreg={self.maxnreg}"
        if self.pre_hook is not None:
            text += f", pre_hook={_callable_name(self.pre_hook)}"
        return text + ")"


def _callable_name(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _reason(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _plain_timing(timing: Any) -> float | list[float]:
    """A benchmark result as JSON can hold it."""
    if isinstance(timing, (list, tuple)):
        return [float(value) for value in timing]
    return float(timing)


def _score(timing: Any) -> float:
    """The number configs are ranked by: the first quantile of a benchmark result."""
    if isinstance(timing, (list, tuple)):
        return float(timing[0])
    return float(timing)


# ---------------------------------------------------------------- tensors the hooks reset and restore


def _zero(value: Any) -> None:
    if hasattr(value, "zero_"):
        value.zero_()
    else:
        value.fill(0)


def _copy_of(value: Any) -> Any:
    return value.clone() if hasattr(value, "clone") else value.copy()


def _restore(destination: Any, saved: Any) -> None:
    if hasattr(destination, "copy_"):
        destination.copy_(saved)
    else:
        destination[...] = saved


# ---------------------------------------------------------------- the progress line


class SweepProgress:
    """The one-line progress indicator of a benchmark sweep, written to `stream`
    (stderr) only when it is a terminal and the sweep has at least
    PROGRESS_MIN_CONFIGS configs. Each update rewrites the line; `close` erases it."""

    def __init__(self, kernel_name: str, total: int, stream: TextIO | None = None):
        self.kernel_name = kernel_name
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self._width = 0
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = total >= PROGRESS_MIN_CONFIGS and callable(isatty) and isatty()

    def update(self, index: int, best: tuple[Config, float] | None) -> None:
        """Show that config `index` (from 0) is being timed, and the best so far."""
        if not self.enabled:
            return
        text = f"autotuning {self.kernel_name}: config {index + 1} of {self.total}"
        if best is not None:
            text += f", best so far {best[1]:.4g} ms ({best[0]})"
        # Longer than the terminal, the line would wrap and `\r` could not rewrite it.
        columns = shutil.get_terminal_size((80, 24)).columns - 1
        text = text[:columns]
        self._write("\r" + text.ljust(self._width))
        self._width = len(text)

    def close(self) -> None:
        if self.enabled and self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


# ---------------------------------------------------------------- the autotuner


def _innermost_jit(fn: Any) -> JITFunction:
    while not isinstance(fn, JITFunction):
        fn = fn.fn
    return fn


def _config_record(config: Config) -> dict[str, Any]:
    """What identifies a config across processes (kept in the disk cache)."""
    record: dict[str, Any] = {"kwargs": config.kwargs, "num_warps": config.num_warps,
                              "num_stages": config.num_stages, "num_ctas": config.num_ctas,
                              "maxnreg": config.maxnreg}
    if config.pre_hook is not None:
        record["pre_hook"] = _callable_name(config.pre_hook)
    return json.loads(json.dumps(record, sort_keys=True, default=repr))


class Autotuner(KernelInterface):
    """A kernel whose meta-parameters are chosen among `configs` for each tuning key.

    `fn` is a `JITFunction` or another kernel wrapper (`Heuristics`) with
    `arg_names`. `key` names the arguments whose values start a new tuning.
    `prune_configs_by` may give `early_config_prune(configs, named_args,
    **kwargs) -> configs`, `perf_model(**args, **config kwargs) -> estimate`
    and `top_k` (an int, or a fraction of the configs). `reset_to_zero` /
    `restore_value` name tensors zeroed before each timed run / restored after
    it; a `pre_hook(args, reset_only=False)` / `post_hook(args, exception)`
    replaces that default handling. `do_bench(kernel_call, quantiles)` times a
    call (default: the active driver's benchmarker). `warmup`, `rep` and
    `use_cuda_graph` are Triton's deprecated ways to configure it."""

    def __init__(self, fn: Any, arg_names: list[str], configs: list[Config] | None, key: list[str],
                 reset_to_zero: list[str] | None, restore_value: list[str] | None,
                 pre_hook: Callable | None = None, post_hook: Callable | None = None,
                 prune_configs_by: dict[str, Any] | None = None, warmup: int | None = None, rep: int | None = None,
                 use_cuda_graph: bool = False, do_bench: Callable | None = None, cache_results: bool = False):
        self.fn = fn
        self.base_fn = fn
        while not inspect.isfunction(self.base_fn):
            self.base_fn = self.base_fn.fn
        self.arg_names = list(arg_names)
        self.configs = list(configs) if configs else [Config({}, num_warps=4, num_stages=3, num_ctas=1)]
        self.keys = list(key)
        self._site_caches: dict[tuple, dict[tuple, Config]] = {}
        self.cache_results = cache_results
        self.best_config: Config | None = None
        self.bench_time = 0.0
        self.configs_timings: dict[Config, Any] = {}
        self.config_failures: dict[Config, str] = {}
        self._launch = _LaunchState()

        name = self.base_fn.__name__
        for missing in [k for k in self.keys if k not in self.arg_names]:
            warnings.warn(f"autotune key {missing!r} is not a parameter of kernel {name} "
                          f"({', '.join(self.arg_names)}); it is ignored", stacklevel=3)
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        for what, names in (("reset_to_zero", self.reset_to_zero), ("restore_value", self.restore_value)):
            unknown = [n for n in names if n not in self.arg_names]
            if unknown:
                raise ValueError(f"autotune {what} of kernel {name} names {unknown}, which are not among its "
                                 f"parameters ({', '.join(self.arg_names)})")

        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        if pre_hook is not None:
            self.pre_hook = pre_hook
        elif self.reset_to_zero or self.restore_value:
            self.pre_hook = self._reset_and_save
        else:
            self.pre_hook = _no_pre_hook
        if post_hook is not None:
            self.post_hook = post_hook
        elif self.restore_value:
            self.post_hook = self._restore_saved
        else:
            self.post_hook = _no_post_hook

        prune_configs_by = prune_configs_by or {}
        self.perf_model = prune_configs_by.get("perf_model")
        self.configs_top_k = prune_configs_by.get("top_k", 1.0)
        self.early_config_prune = prune_configs_by.get("early_config_prune")

        self.num_warmups = warmup
        self.num_reps = rep
        self.use_cuda_graph = use_cuda_graph
        self._do_bench = do_bench
        if warmup is not None or rep is not None or use_cuda_graph:
            warnings.warn("autotune's warmup, rep and use_cuda_graph are deprecated (as in Triton); pass "
                          "do_bench=lambda kernel_call, quantiles: ... instead", DeprecationWarning, stacklevel=3)
            self._do_bench = self._legacy_benchmarker(warmup, rep, use_cuda_graph)

    @property
    def nargs(self) -> dict[str, Any] | None:
        """The positional arguments of the launch in progress on this thread, by
        parameter name (None between launches), as hooks and pruning read them."""
        return self._launch.nargs

    @nargs.setter
    def nargs(self, value: dict[str, Any] | None) -> None:
        self._launch.nargs = value

    @property
    def restore_copies(self) -> dict[str, Any]:
        """The copies `restore_value` saved for the launch in progress on this thread."""
        return self._launch.restore_copies

    @restore_copies.setter
    def restore_copies(self, value: dict[str, Any]) -> None:
        self._launch.restore_copies = value

    @property
    def cache(self) -> dict[tuple, Config]:
        """The choices made for the current launch site (`backends.sites.launch_site()`:
        the GPU and its architecture, or the interpreter): tuning key -> Config.
        Triton keeps one such mapping per autotuner, keyed as this one is; tritone
        keeps one per launch site, so that a choice timed on one GPU is never used
        on another (an sm_90 choice may not even fit an sm_80 device)."""
        site = launch_site()
        choices = self._site_caches.get(site)
        if choices is None:
            choices = self._site_caches.setdefault(site, {})
        return choices

    @cache.setter
    def cache(self, choices: dict[tuple, Config]) -> None:
        """Replace the choices of every launch site by `choices`, for the current
        one (`kernel.cache = {}` forgets them all)."""
        self._site_caches = {launch_site(): choices}

    @staticmethod
    def _legacy_benchmarker(warmup: int | None, rep: int | None, use_cuda_graph: bool) -> Callable:
        from .. import testing

        if use_cuda_graph:
            return lambda kernel_call, quantiles: testing.do_bench_cudagraph(
                kernel_call, rep=100 if rep is None else rep, quantiles=quantiles)
        return lambda kernel_call, quantiles: testing.do_bench(
            kernel_call, warmup=25 if warmup is None else warmup, rep=100 if rep is None else rep,
            quantiles=quantiles)

    @property
    def do_bench(self) -> Callable:
        """`do_bench(kernel_call, quantiles)`: the one given, else the active driver's."""
        return self._do_bench if self._do_bench is not None else driver.active.get_benchmarker()

    @do_bench.setter
    def do_bench(self, value: Callable | None) -> None:
        self._do_bench = value

    # -- the default hooks -------------------------------------------------------

    def _reset_and_save(self, kwargs: dict[str, Any], reset_only: bool = False) -> None:
        for name in self.reset_to_zero:
            _zero(kwargs[name])
        if not reset_only:
            self.restore_copies = {name: _copy_of(kwargs[name]) for name in self.restore_value}

    def _restore_saved(self, kwargs: dict[str, Any], exception: BaseException | None) -> None:
        for name in self.restore_value:
            _restore(kwargs[name], self.restore_copies[name])
        self.restore_copies = {}

    # -- choosing a config ---------------------------------------------------------

    def _tuning_key(self, kwargs: dict[str, Any], nargs: dict[str, Any]) -> tuple:
        """The key of the choice for a launch with `kwargs` and the positional arguments
        `nargs` (by name): the values of the `key` arguments, then the dtype of every
        argument that has one, as Triton keys it."""
        named = nargs  # positional arguments are all parameters
        if kwargs:
            named = {**named, **{name: value for name, value in kwargs.items() if name in self.arg_names}}
        key = [named[name] for name in self.keys if name in named]
        key += [str(value.dtype) for value in named.values() if hasattr(value, "dtype")]
        return tuple(key)

    def prune_configs(self, kwargs: dict[str, Any]) -> list[Config]:
        """The configs worth timing for the current arguments: those
        `early_config_prune` keeps, then the `top_k` best by `perf_model`."""
        pruned = self.configs
        if self.early_config_prune:
            pruned = self.early_config_prune(self.configs, self.nargs, **kwargs)
            if not pruned:
                # Triton's exact words, which tests compare; the note names the kernel.
                error = AutotunerError("No valid autotuner configs after pruning. "
                                       "`early_config_prune` should return at least one config.")
                if hasattr(error, "add_note"):  # Python 3.11 and later
                    error.add_note(f"early_config_prune of kernel {self.base_fn.__name__} returned {pruned!r}")
                raise error
        if self.perf_model:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(self.configs) * top_k))
            elif not isinstance(top_k, int):
                raise TypeError(f"prune_configs_by['top_k'] must be an int or a float <= 1.0, got {top_k!r}")
            if len(pruned) > top_k:
                estimates = {config: self.perf_model(**self.nargs, **kwargs, **config.all_kwargs())
                             for config in pruned}
                pruned = sorted(estimates, key=estimates.get)[:top_k]
        return list(pruned)

    def _benchmarking(self) -> bool:
        """Whether configs are timed: always on a GPU; on the interpreter only
        when a do_bench was given."""
        return self._do_bench is not None or driver.active.get_current_target().backend != "interpreter"

    def run(self, *args, **kwargs):
        """Choose the config for these arguments (tuning when their key is new) and
        launch the kernel with it. Returns what the wrapped kernel's `run` returns."""
        launch = self._launch  # this thread's (the nargs property, without its calls)
        launch.nargs = nargs = dict(zip(self.arg_names, args))
        try:
            given = kwargs.keys() - _LAUNCHER_KEYWORDS
            tuned = False
            if len(self.configs) > 1:
                key = self._tuning_key(kwargs, nargs)
                config = self.cache.get(key)
                if config is None:
                    if given:
                        self._check_no_tuned_keywords(given)
                    tuned = self._tune(key, args, kwargs)
                    config = self.cache[key]
            else:
                config = self.configs[0]
            self.best_config = config
            launch_kwargs = config.all_kwargs()
            if given and not given.isdisjoint(launch_kwargs):
                self._check_no_tuned_keywords(given)  # raises, naming them
            if tuned and knobs.autotuning.print:
                print(f"tritone autotuning of {self.base_fn.__name__} for key {key}: {self.bench_time:.2f}s, "
                      f"best config: {config!r}")
            if config.pre_hook is not None:
                config.pre_hook({**nargs, **kwargs, **launch_kwargs})
            return self.fn.run(*args, **kwargs, **launch_kwargs)
        finally:
            launch.nargs = None

    def _check_no_tuned_keywords(self, given: set[str]) -> None:
        tuned = set().union(*(config.all_kwargs() for config in self.configs))
        conflicts = sorted(tuned & given)
        if conflicts:
            raise ValueError(f"kernel {self.base_fn.__name__}: {', '.join(conflicts)} given at launch "
                             "are set by the autotuner's configs; do not pass tuned meta-parameters")

    def _tune(self, key: tuple, args: tuple, kwargs: dict[str, Any]) -> bool:
        """Choose and cache the config for `key`. Returns False when the choice was
        read from the disk cache, True when it was made now."""
        pruned = self.prune_configs(kwargs)
        self.config_failures = {}
        if len(pruned) == 1:
            # Nothing to compare: timing the one candidate would only cost time.
            self.cache[key] = pruned[0]
            self.configs_timings = {}
            self.bench_time = 0.0
            return True
        if not self._benchmarking():
            self._choose_first_working(key, args, kwargs, pruned)
            return True
        if self.cache_results or knobs.autotuning.cache:
            return not self._load_or_benchmark(key, args, kwargs, pruned)
        self._benchmark(key, args, kwargs, pruned)
        return True

    def _choose_first_working(self, key: tuple, args: tuple, kwargs: dict[str, Any], configs: list[Config]) -> None:
        """The interpreter's choice: the first config that compiles (compiled
        only; the real launch follows). Says so once per process."""
        global _told_configs_untimed
        if not _told_configs_untimed:
            _told_configs_untimed = True
            warnings.warn(f"autotune in tritone's CPU interpreter does not time configs: kernel "
                          f"{self.base_fn.__name__} (and every autotuned kernel after it) runs with the first config "
                          "that compiles, since interpreted timings say nothing about a GPU; pass do_bench= to "
                          "autotune to time them anyway", stacklevel=2)
        started = time.perf_counter()
        failures = []
        for config in configs:
            try:
                self.fn.run(*args, **{**kwargs, "warmup": True}, **config.all_kwargs())
            except CONFIG_ERRORS as error:
                failures.append((config, error))
                self.config_failures[config] = _reason(error)
                continue
            self.cache[key] = config
            self.configs_timings = {}
            self.bench_time = time.perf_counter() - started
            return
        raise self._all_failed(key, failures)

    def _bench(self, *args, config: Config, **meta) -> Any:
        """Time the kernel with `config` through `do_bench`, with the hooks around
        every call. Raises what compiling or launching raises."""
        current = {**meta, **config.all_kwargs()}
        named = {**self.nargs, **current}

        def kernel_call() -> None:
            if config.pre_hook is not None:
                config.pre_hook(named)
            self.pre_hook(named)
            try:
                self.fn.run(*args, **current)
            except BaseException as error:
                self.post_hook(named, exception=error)
                raise
            self.post_hook(named, exception=None)

        return self.do_bench(kernel_call, quantiles=BENCH_QUANTILES)

    def _benchmark(self, key: tuple, args: tuple, kwargs: dict[str, Any], configs: list[Config]) -> None:
        verbose = knobs.autotuning.print
        name = self.base_fn.__name__
        progress = SweepProgress(name, len(configs))
        # The printed lines already show the sweep's progress.
        progress.enabled = progress.enabled and not verbose
        timings: dict[Config, Any] = {}
        failures: list[tuple[Config, BaseException]] = []
        best: tuple[Config, float] | None = None
        started = time.perf_counter()
        try:
            for index, config in enumerate(configs):
                progress.update(index, best)
                try:
                    timing = self._bench(*args, config=config, **kwargs)
                except CONFIG_ERRORS as error:
                    failures.append((config, error))
                    self.config_failures[config] = _reason(error)
                    timings[config] = [math.inf] * len(BENCH_QUANTILES)
                    if verbose:
                        print(f"  {name} {config!r}: skipped, {_reason(error)}")
                    continue
                timings[config] = timing
                if verbose:
                    print(f"  {name} {config!r}: {_score(timing):.4f} ms")
                if best is None or _score(timing) < best[1]:
                    best = (config, _score(timing))
        finally:
            progress.close()
        self.bench_time = time.perf_counter() - started
        self.configs_timings = timings
        if best is None:
            raise self._all_failed(key, failures)
        self.cache[key] = best[0]
        # The timed runs changed the reset_to_zero tensors; the real launch must see zeros.
        self.pre_hook({**self.nargs, **kwargs, **best[0].all_kwargs()}, reset_only=True)

    def _all_failed(self, key: tuple, failures: list[tuple[Config, BaseException]]) -> AutotunerError:
        lines = [f"autotuning kernel {self.base_fn.__name__} (key {key}): no config compiles and fits"]
        for config, error in failures:
            reason = _reason(error).replace("\n", "\n      ")
            lines.append(f"  {config!r}:\n      {reason}")
        return AutotunerError("\n".join(lines), failures)

    # -- the disk cache ---------------------------------------------------------------

    def _disk_cache_key(self, key: tuple, configs: list[Config]) -> str:
        from .cache import triton_key

        jit_fn = _innermost_jit(self.fn)
        layers = []
        wrapper = self.fn
        while not isinstance(wrapper, JITFunction):
            if isinstance(wrapper, Heuristics):
                layers.append(sorted(wrapper.values))
            wrapper = wrapper.fn
        parts = {
            "tritone": triton_key(),
            "target": repr(driver.active.get_current_target()),
            "kernel": jit_fn.cache_key,
            "heuristics": layers,
            "knobs": [knobs.compilation.debug, knobs.language.default_fp_fusion, knobs.language.fp32_default,
                      knobs.nvidia.target],
            "key": repr(key),
            "configs": [_config_record(config) for config in configs],
        }
        text = json.dumps(parts, sort_keys=True, default=repr)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def _load_or_benchmark(self, key: tuple, args: tuple, kwargs: dict[str, Any], configs: list[Config]) -> bool:
        """Take the choice for `key` from the disk cache, or benchmark and store it.
        Returns True when it came from the disk."""
        from .cache import default_cache

        store = default_cache()
        if store is None:
            self._benchmark(key, args, kwargs, configs)
            return False
        digest = self._disk_cache_key(key, configs)
        entry_name = f"{_innermost_jit(self.fn).__name__[:150]}.autotune"
        entry = store.get(digest, entry_name)
        if entry is not None:
            chosen = self._read_entry(entry.metadata, configs)
            if chosen is not None:
                self.cache[key] = chosen
                self.bench_time = 0.0
                if knobs.autotuning.print:
                    print(f"tritone autotuning of {self.base_fn.__name__} for key {key}: best config read from "
                          f"the disk cache ({entry.folder}): {chosen!r}")
                return True
        self._benchmark(key, args, kwargs, configs)
        record = {
            "key": repr(key),
            "configs": [_config_record(config) for config in configs],
            "timings": [_plain_timing(self.configs_timings[config]) for config in configs],
            "failures": {str(i): self.config_failures[c] for i, c in enumerate(configs) if c in self.config_failures},
            "best": configs.index(self.cache[key]),
        }
        store.put(digest, entry_name, {}, record)
        return False

    def _read_entry(self, record: dict[str, Any], configs: list[Config]) -> Config | None:
        """The best config a disk entry records, with its timings restored; None
        when the entry does not describe these configs."""
        try:
            if record["configs"] != [_config_record(config) for config in configs]:
                return None
            self.configs_timings = dict(zip(configs, record["timings"]))
            self.config_failures = {configs[int(i)]: reason for i, reason in record["failures"].items()}
            return configs[int(record["best"])]
        except (KeyError, IndexError, TypeError, ValueError):
            return None

    # -- compiling ahead of time ------------------------------------------------------------

    def warmup(self, *args, **kwargs) -> list:
        """Compile the kernel for every config that survives pruning, without
        running it; returns the compiled kernels."""
        self.nargs = dict(zip(self.arg_names, args))
        try:
            return [self.fn.warmup(*args, **kwargs, **config.all_kwargs()) for config in self.prune_configs(kwargs)]
        finally:
            self.nargs = None

    def __repr__(self) -> str:
        return f"Autotuner({self.fn!r}, {len(self.configs)} configs, key={self.keys})"

    # -- crossing processes ----------------------------------------------------------

    def __reduce_ex__(self, protocol):
        """By name when its module names it (`module.kernel`), else by value: the
        configs, the choices made so far (`cache`, `best_config`) and the hooks
        (which must pickle: module-level functions, not lambdas)."""
        by_name = reduce_by_name(self, getattr(self.base_fn, "__module__", None),
                                 getattr(self.base_fn, "__qualname__", ""))
        return by_name if by_name is not None else super().__reduce_ex__(protocol)

    def __getstate__(self) -> dict[str, Any]:
        # The arguments of a launch in progress and the copies saved for
        # `restore_value` belong to that launch (`_launch`). `base_fn` is found
        # again under `fn` (as a plain function, the module names the kernel, not it).
        state = dict(self.__dict__)
        state.pop("_launch", None)
        state.pop("base_fn", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update((name, value) for name, value in state.items()
                             if name not in ("nargs", "restore_copies"))
        self._launch = _LaunchState()
        self.base_fn = base_function(self.fn)

    def __deepcopy__(self, memo: dict) -> Autotuner:
        return deepcopy_by_state(self, memo)


def _no_pre_hook(kwargs: dict[str, Any], reset_only: bool = False) -> None:
    """Nothing to reset or save."""


def _no_post_hook(kwargs: dict[str, Any], exception: BaseException | None) -> None:
    """Nothing to restore."""


def autotune(configs: list[Config], key: list[str], prune_configs_by: dict[str, Any] | None = None,
             reset_to_zero: list[str] | None = None, restore_value: list[str] | None = None,
             pre_hook: Callable | None = None, post_hook: Callable | None = None, warmup: int | None = None,
             rep: int | None = None, use_cuda_graph: bool = False, do_bench: Callable | None = None,
             cache_results: bool = False) -> Callable[[Any], Autotuner]:
    """Decorate a `@jit` kernel (or a `@heuristics` one) to choose among `configs`
    whenever the values of the `key` arguments (or the argument dtypes) change.

        @tritone.autotune(configs=[tritone.Config({"BLOCK": 128}, num_warps=4),
                                   tritone.Config({"BLOCK": 1024}, num_warps=8)], key=["n"])
        @tritone.jit
        def kernel(x_ptr, n, BLOCK: tl.constexpr): ...

    Every config runs while tuning, so a kernel that updates its arguments in
    place needs `reset_to_zero` / `restore_value` (names of those arguments).
    See `Autotuner` for the other parameters. `TRITON_PRINT_AUTOTUNING=1`
    prints each choice and the time it took; `TRITON_CACHE_AUTOTUNING=1` (or
    `cache_results=True`) keeps choices on disk for later processes."""

    def decorator(fn: Any) -> Autotuner:
        return Autotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench, cache_results=cache_results)

    return decorator


class Heuristics(KernelInterface):
    """A kernel some of whose meta-parameters are computed from the arguments:
    for each `name: f` of `values`, in order, `kwargs[name] = f(args)` where
    `args` maps every argument given (and each value computed before) by name."""

    def __init__(self, fn: Any, arg_names: list[str], values: dict[str, Callable[[dict[str, Any]], Any]]):
        self.fn = fn
        self.values = values
        self.arg_names = list(arg_names)

    def run(self, *args, **kwargs):
        for name, heuristic in self.values.items():
            kwargs[name] = heuristic({**dict(zip(self.arg_names, args)), **kwargs})
        return self.fn.run(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Heuristics({self.fn!r}, {list(self.values)})"

    def __reduce_ex__(self, protocol):
        """By name when its module names it (`module.kernel`), else by value
        (its heuristics must then pickle: module-level functions, not lambdas)."""
        function = base_function(self)
        by_name = reduce_by_name(self, getattr(function, "__module__", None), getattr(function, "__qualname__", ""))
        return by_name if by_name is not None else super().__reduce_ex__(protocol)

    def __deepcopy__(self, memo: dict) -> Heuristics:
        return deepcopy_by_state(self, memo)


def heuristics(values: dict[str, Callable[[dict[str, Any]], Any]]) -> Callable[[Any], Heuristics]:
    """Decorate a kernel so that the meta-parameters named in `values` are
    computed at each launch from the arguments by name:

        @tritone.heuristics(values={"BLOCK": lambda args: tritone.next_power_of_2(args["n"])})
        @tritone.jit
        def kernel(x_ptr, n, BLOCK: tl.constexpr): ..."""

    def decorator(fn: Any) -> Heuristics:
        return Heuristics(fn, fn.arg_names, values)

    return decorator
