"""Compiling a kernel for the GPU: module IR -> CUDA C++ (`lowering`) ->
NVRTC -> cubin, through the disk cache.

`compile_kernel` computes the cache key first, from tritone's own source hash,
the kernel's hash (its source, callees and globals, and the specialization),
the options, the target and the NVRTC that compiles, so a cache hit skips the
frontend as well as NVRTC. The key, 32 hex digits, is also the compiled
kernel's `hash`, so `_base32(kernel.hash)` names its cache folder as
TorchInductor expects.
"""

from __future__ import annotations

import functools
import hashlib
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ... import knobs
from ...errors import PTXASError
from ...ir.core import Module
from ...ir.printer import print_module
from ...ir.target import GPUTarget, KernelOptions, check_ctas_for
from ...runtime.cache import KernelCache, default_cache, triton_key
from ..base import KernelBinary
from .bindings import driver_api, libs
from .bindings.nvrtc import CompileResult, NVRTCError

if TYPE_CHECKING:
    from ...compiler.timer import CompileTimer

KEY_DIGITS = 32
# The CUDA backend's entry point: (module, compute capability, options) -> (source, entry name, metadata).
Generator = Callable[[Module, int, KernelOptions], "tuple[str, str, Mapping[str, Any]]"]


class Compiler(Protocol):
    """What compiles CUDA C++: `tritone.backends.cuda.bindings.nvrtc.NVRTC`, or a stand-in in tests."""

    version: tuple[int, int]

    def compile(self, source: str, name: str, arch: int, *, ptx_only: bool = False, options: Sequence[str] = (),
                arch_suffix: str = "") -> CompileResult:
        ...


@dataclass(frozen=True)
class Toolchain:
    """The NVRTC that compiles and for what: a cubin for `sm_<arch>`, or with
    `ptx_only` PTX for `compute_<arch>` that the driver compiles at load."""

    compiler: Compiler
    arch: int
    ptx_only: bool

    @property
    def key(self) -> str:
        """What of the toolchain changes the output (part of the cache key)."""
        major, minor = self.compiler.version
        return f"nvrtc {major}.{minor} {'compute' if self.ptx_only else 'sm'}_{self.arch}"


@functools.lru_cache(maxsize=1)
def _driver_version() -> int | None:
    """The CUDA version the driver supports, None where there is no usable driver
    (compiling for a given target needs no GPU)."""
    try:
        return driver_api.driver().driver_version()
    except (libs.LibraryNotFound, driver_api.CudaError):
        return None


def select_toolchain(target: GPUTarget, *, forced: bool = False) -> Toolchain:
    """The NVRTC `libs` chooses for `target.arch`. With `forced` (TRITONE_TARGET
    set) the target may be older than the GPU, so PTX is compiled for the driver
    to JIT; so it is too when no NVRTC present knows the architecture."""
    choice = libs.nvrtc_for(int(target.arch), driver_version=_driver_version())
    if choice.ptx_fallback:
        return Toolchain(choice.nvrtc, int(choice.target_arch), True)
    return Toolchain(choice.nvrtc, int(target.arch), forced)


def cache_key(src_hash: str, options: KernelOptions, target: GPUTarget, toolchain: Toolchain, *,
              line_info: bool = True) -> str:
    """The compiled kernel's hash and cache key: 32 hex digits (128 bits) of a sha256."""
    parts = [triton_key(), src_hash, options.hash(), repr(target), toolchain.key]
    if not line_info:
        parts.append("no line info")
    if knobs.nvidia.tma is not None:
        parts.append(f"tma={knobs.nvidia.tma}")
    text = "\n".join(parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_DIGITS]


class NVRTCCompileError(NVRTCError, PTXASError):
    """NVRTC rejected a kernel's generated code. An `NVRTCError` carrying NVRTC's
    log, and a `PTXASError` (what Triton raises when its assembler fails), so that
    the autotuner skips the config."""


# NVRTC 12.4 added `--minimal`: it leaves out the CUDA runtime's declarations
# (textures, cudadevrt, device-side launches), which generated code never uses,
# and so takes about 4 ms off every compilation (a fifth of an empty kernel's).
_MINIMAL_SINCE = (12, 4)


def nvrtc_options(options: KernelOptions, generated: Mapping[str, Any], *, line_info: bool = True,
                  nvrtc_version: tuple[int, int] = (0, 0)) -> list[str]:
    """NVRTC's command line for a kernel compiled with `options`, plus those the
    code generator asks for (`metadata["nvrtc_options"]`). `line_info` asks for
    the source line table profilers and error reports read; `nvrtc_version` is
    the compiling NVRTC's, for the options it takes."""
    flags = [f"--fmad={'true' if options.enable_fp_fusion else 'false'}"]
    if nvrtc_version >= _MINIMAL_SINCE:
        flags.append("--minimal")
    if line_info:
        flags.append("--generate-line-info")
    if options.maxnreg is not None:
        flags.append(f"--maxrregcount={options.maxnreg}")
    flags.extend(generated.get("nvrtc_options", ()))
    return flags


def without_line_directives(source: str) -> str:
    """`source` without its `#line` directives, which point the CUDA code at the
    kernel's Python lines."""
    return "".join(line for line in source.splitlines(keepends=True) if not line.lstrip().startswith("#line "))


def _cuda_generator() -> Generator:
    # The CUDA backend imports most of the compiler, which imports the runtime:
    # it is loaded when the first kernel is compiled for a GPU.
    from .lowering import generate_cuda

    return generate_cuda


_DEFAULT: Any = object()


def write_reproducer(prefix: str, name: str, ttir: str, target: GPUTarget, toolchain: Toolchain) -> Path | None:
    """Write `<prefix>.make_cuda.repro.ttir` (Triton writes `<prefix>.<stage>.repro.mlir`
    for its MLIR stages): the IR of kernel `name` that the CUDA lowering (layouts,
    dot operands, pipelining, shared memory, C++ and NVRTC) starts from, its
    options as module attributes, after comments saying how to compile it again.
    Written before the lowering runs, so it is there when the lowering fails; a
    path that cannot be written is warned about, and the compilation goes on."""
    path = Path(f"{prefix}.make_cuda.repro.ttir")
    header = "\n".join([
        f"// tritone reproducer: kernel {name}, the IR its CUDA lowering starts from,",
        f"// for {target.backend} sm_{target.arch} ({toolchain.key}). Compile it again with:",
        "//   import tritone",
        "//   from tritone.backends.compiler import GPUTarget",
        f"//   tritone.compile({str(path)!r}, target=GPUTarget({target.backend!r}, {target.arch}, "
        f"{target.warp_size}))",
    ])
    try:
        path.write_text(f"{header}\n{ttir}", encoding="utf-8")
    except OSError as error:
        warnings.warn(f"TRITON_REPRODUCER_PATH: could not write {path}: {error}", stacklevel=2)
        return None
    return path


def _arch_suffix(toolchain: Toolchain) -> str:
    """`a` for a cubin of compute capability 9.0 or later (`sm_90a`, `sm_100a`), as
    Triton compiles them: it is for this exact device anyway, and the
    architecture-specific instructions are available. PTX left for the driver
    to JIT (an older NVRTC, a forced target) stays portable."""
    return "a" if toolchain.arch >= 90 and not toolchain.ptx_only else ""


def compile_kernel(name: str, src_hash: str, build_ir: Callable[[GPUTarget], Module], target: GPUTarget,
                   options: KernelOptions, *, toolchain: Toolchain | None = None,
                   cache: KernelCache | None = _DEFAULT, generate: Generator | None = None,
                   always_compile: bool | None = None, line_info: bool | None = None,
                   timer: CompileTimer | None = None) -> KernelBinary:
    """Compile kernel `name` for `target`, or take it from the cache.

    `src_hash` identifies the source and specialization (`ASTSource.hash()`);
    `build_ir(codegen_target)` runs the frontend and passes, only on a miss. The
    code is generated for the architecture NVRTC compiles for, which is older
    than `target` when the toolchain falls back to PTX. Defaults: the toolchain
    of `select_toolchain`, the cache of TRITON_CACHE_DIR (None: no disk cache),
    the CUDA backend's `generate_cuda` (dumping the IR after each GPU pass under
    TRITONE_DUMP_IR), TRITON_ALWAYS_COMPILE (skip cache reads,
    still write) and line information unless TRITON_DISABLE_LINE_INFO is set.
    NVRTC failures raise `NVRTCCompileError` naming the kernel. A `timer` is told
    where the lowering starts and each stage ("ttir", "cuda", "ptx" or "cubin") ends."""
    if options.arch is None:  # an `arch` option was checked when the options were made
        check_ctas_for(options, int(target.arch))
    toolchain = toolchain or select_toolchain(target, forced=knobs.nvidia.target is not None)
    cache = default_cache() if cache is _DEFAULT else cache
    always_compile = knobs.compilation.always_compile if always_compile is None else always_compile
    line_info = not knobs.compilation.disable_line_info if line_info is None else line_info
    key = cache_key(src_hash, options, target, toolchain, line_info=line_info)
    if cache is not None and not always_compile:
        entry = cache.get(key, name)
        if entry is not None and _usable(entry.files, entry.metadata):
            return KernelBinary(key, _asm_from_files(entry.files), _metadata_from_json(entry.metadata), True)

    if timer is not None:
        timer.lowering_started()
    codegen_target = GPUTarget(target.backend, toolchain.arch, target.warp_size)
    module = build_ir(codegen_target)
    ttir = print_module(module)
    if knobs.compilation.reproducer_path:
        write_reproducer(knobs.compilation.reproducer_path, name, ttir, target, toolchain)
    if timer is not None:
        timer.stage_finished("ttir")
    if generate is None:
        generate = functools.partial(_cuda_generator(), dump_ir=knobs.compilation.dump_ir)
    source, entry_name, generated = generate(module, toolchain.arch, options)
    if not line_info:
        source = without_line_directives(source)
    if timer is not None:
        timer.stage_finished("cuda")
    flags = nvrtc_options(options, generated, line_info=line_info, nvrtc_version=toolchain.compiler.version)
    dump_ptxas_log = knobs.nvidia.dump_ptxas_log and not toolchain.ptx_only
    if dump_ptxas_log:
        flags.append("--ptxas-options=--verbose")  # a report only: the same machine code
    try:
        result = toolchain.compiler.compile(source, f"{name}.cu", toolchain.arch, ptx_only=toolchain.ptx_only,
                                            options=flags,
                                            arch_suffix=generated.get("arch_suffix", _arch_suffix(toolchain)))
    except NVRTCError as error:
        where = _keep_failed_source(cache, key, name, source)
        raise NVRTCCompileError(
            f"kernel {name}: {error.message}" + (f"\nthe generated CUDA is in {where}" if where else ""),
            log=error.log, call=error.call, code=error.code) from None
    if timer is not None:
        timer.stage_finished("ptx" if result.cubin is None else "cubin")
    if dump_ptxas_log:
        # printed as Triton prints its ptxas log (TRITON_DUMP_PTXAS_LOG)
        print(f"ptxas log of kernel {name} ({result.target}):\n{result.log.rstrip()}", flush=True)

    metadata = {
        **{k: v for k, v in generated.items() if k not in ("nvrtc_options",)},
        "name": name, "entry": entry_name, "num_warps": int(generated.get("num_warps", options.num_warps)),
        # Blocks per program as the generated code runs them (a cluster when above 1),
        # which is what launchers must launch; the num_ctas option is a request.
        "num_ctas": int(generated.get("num_ctas", 1)),
        "shared": int(generated.get("shared", 0)), "hash": key,
        "target": [target.backend, target.arch, target.warp_size],
        "nvrtc": f"{result.nvrtc_version[0]}.{result.nvrtc_version[1]}", "compiled_for": result.target,
    }
    files = {"ttir": ttir.encode("utf-8"), "cu": source.encode("utf-8"), "ptx": result.ptx.encode("utf-8")}
    if result.cubin is not None:
        files["cubin"] = result.cubin
    # Through JSON on both paths, so a fresh compilation and a cache hit give equal metadata.
    metadata = json.loads(json.dumps(metadata))
    if cache is not None:
        cache.put(key, name, files, metadata)
    return KernelBinary(key, _asm_from_files(files), _metadata_from_json(metadata), False)


def _usable(files: Mapping[str, bytes], metadata: Mapping[str, Any]) -> bool:
    """Whether a verified entry has what a kernel needs (an entry written by
    another tool under the same key might not)."""
    return {"ttir", "cu", "ptx"} <= set(files) and {"name", "entry", "shared", "target"} <= set(metadata)


def _asm_from_files(files: Mapping[str, bytes]) -> dict[str, str | bytes]:
    asm: dict[str, str | bytes] = {
        "ttir": files["ttir"].decode("utf-8"), "cuda": files["cu"].decode("utf-8"),
        "ptx": files["ptx"].decode("utf-8")}
    if "cubin" in files:
        asm["cubin"] = files["cubin"]
    return asm


def _metadata_from_json(metadata: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(metadata)
    backend, arch, warp_size = result["target"]
    result["target"] = GPUTarget(backend, arch, warp_size)
    return result


def _keep_failed_source(cache: KernelCache | None, key: str, name: str, source: str) -> str | None:
    """Save the source NVRTC rejected in the entry folder (no commit mark, so the
    entry stays a miss) for a person to read; its path, or None."""
    if cache is None:
        return None
    path = cache.path(key, name, "cu")
    try:
        cache.write_file(path, source.encode("utf-8"))
    except OSError:
        return None
    return path

