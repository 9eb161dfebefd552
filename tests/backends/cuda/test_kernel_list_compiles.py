"""The whole kernel test list compiles for every GPU tritone targets, without a GPU.

Every end-to-end kernel of tests/kernels (matmul included) and a sample of the
per-op sweep (the first case of each operation, and of each source dtype of
the casts) goes through `tritone.compile(ASTSource(...), target=GPUTarget("cuda",
arch, 32))` for sm_61, sm_75, sm_80, sm_86, sm_89, sm_90 and sm_120, with the
NVRTC tritone finds (the nvidia-cuda-nvrtc-cu12 wheel it depends on). Each
result must hold a cubin: an ELF for CUDA of that architecture with the
kernel's entry in it, that ptxas compiled without a stack frame or register
spills. The generated CUDA must point its `#line` directives at the kernel's
Python source.

The kernels are specialised exactly as a real launch specialises them: every
launcher runs with each `kernel[grid](...)` turned into `kernel.warmup(...)`
(compile only, in the interpreter, so nothing touches a GPU), and the
`ASTSource` and options of each kernel the runtime compiled are taken from it.

The compilations (frontend, passes and code generation for each architecture,
then NVRTC) run in a thread pool: NVRTC, most of the time, releases the GIL in
its ctypes calls. ptxas's resource report comes from NVRTC's log: the toolchain
`compile` chooses is wrapped to add `--ptxas-options=-v` (which changes only
the log) and to keep each log.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import struct
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import tritone
import tritone.language as tl
from tests.kernels._cases import KERNEL_CASES, KernelCase
from tests.kernels._data import seed_for
from tests.kernels._loader import KERNELS_PATH, OPS_PATH, load_kernels
from tests.kernels.test_ops import ALL_OP_CASES
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import build
from tritone.backends.cuda.bindings import libs
from tritone.backends.cuda.bindings.nvrtc import CompileResult
from tritone.compiler import ASTSource, CompiledKernel
from tritone.ir.target import KernelOptions
from tritone.runtime.jit import JITFunction

ARCHS = (61, 75, 80, 86, 89, 90, 120)
ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190
TRITONE_DIR = Path(tritone.__file__).resolve().parent
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
# `#line N "file"`, or `#line N` keeping the file of the directive before it
_LINE = re.compile(r'^\s*#line (\d+)(?: "((?:[^"\\]|\\.)*)")?\s*$', re.MULTILINE)


def _line_directives(source: str) -> list[tuple[str, str]]:
    """(line, file) of every `#line` directive of `source`, the file carried over
    to the directives that leave it out."""
    directives, file = [], ""
    for line, named in _LINE.findall(source):
        file = named or file
        directives.append((line, file))
    return directives


# -- the specialisations a real launch compiles ------------------------------------------------


@dataclass(frozen=True)
class Specialisation:
    """One kernel as the runtime compiled it for a launch of `case`."""

    case: str
    src: ASTSource
    options: KernelOptions

    @property
    def label(self) -> str:
        return f"{self.src.name} ({self.case})"


def _launched(path: Path, cases: Sequence[KernelCase]) -> list[Specialisation]:
    """The distinct (source, options) the launchers of `cases` compile, each
    `kernel[grid](...)` becoming `kernel.warmup(..., grid=grid)` run by the
    interpreter (so that no GPU is touched)."""
    kernels = load_kernels(tritone, tl, path)
    compiled: list[tuple[str, CompiledKernel]] = []
    current = [""]

    def warm_up_instead(kernel, grid):
        def launcher(*args, **kwargs):
            compiled.append((current[0], kernel.warmup(*args, grid=grid, **kwargs)))

        return launcher

    with pytest.MonkeyPatch.context() as patch:
        # Through the environment: undoing a setattr would leave the knob assigned (False) for later tests.
        patch.setenv("TRITON_INTERPRET", "1")
        patch.delenv("TRITONE_INTERPRET", raising=False)
        patch.setattr(JITFunction, "__getitem__", warm_up_instead)
        for case in cases:
            current[0] = case.name
            # Some op cases cast out-of-range values on purpose; only the argument types matter here.
            with np.errstate(over="ignore", invalid="ignore"):
                inputs = case.make_inputs(np.random.default_rng(seed_for(case.name)))
            getattr(kernels, case.launcher)(**inputs)
    unique: dict[tuple[str, KernelOptions], Specialisation] = {}
    for case_name, kernel in compiled:
        unique.setdefault((kernel.src.hash(), kernel.options), Specialisation(case_name, kernel.src, kernel.options))
    return list(unique.values())


def _op_sample() -> list[KernelCase]:
    """A representative sample of the per-op sweep: the first case of each
    (launcher, operation), and of each source dtype for the casts (the fp8, bf16
    and fp16 conversions differ most between architectures)."""
    chosen: dict[tuple[str, ...], KernelCase] = {}
    for case in ALL_OP_CASES:
        parts = case.name.split("-")
        key = (case.launcher, *parts[1:3]) if parts[1] == "cast" else (case.launcher, parts[1])
        chosen.setdefault(key, case)
    return list(chosen.values())


# -- NVRTC's log, kept per compilation ---------------------------------------------------------


class _VerboseCompiler:
    """The NVRTC `tritone.compile` chose, asking ptxas for its resource report
    and keeping the log of each compilation by (source digest, target)."""

    def __init__(self, compiler, logs: dict[tuple[str, str], str], lock: threading.Lock):
        self._compiler = compiler
        self._logs = logs
        self._lock = lock
        self.version = compiler.version

    def compile(self, source: str, name: str, arch: int, *, ptx_only: bool = False, options: Sequence[str] = (),
                arch_suffix: str = "") -> CompileResult:
        result = self._compiler.compile(source, name, arch, ptx_only=ptx_only,
                                        options=[*options, "--ptxas-options=-v"], arch_suffix=arch_suffix)
        with self._lock:
            self._logs[(_digest(source), result.target)] = result.log
        return result


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- the cubin ---------------------------------------------------------------------------------


def _cubin_arch(cubin: bytes) -> int:
    """The SM version of a CUDA ELF: the low byte of e_flags, or its second byte
    in the newer ABI (EI_OSABI 0x41, used from sm_100)."""
    e_flags = struct.unpack_from("<I", cubin, 48)[0]
    return (e_flags >> 8) & 0xFF if cubin[7] == 0x41 else e_flags & 0xFF


def _section_names(elf: bytes) -> set[str]:
    """The section names of a 64-bit little-endian ELF."""
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def header(index: int) -> tuple[int, int, int]:
        base = shoff + index * shentsize
        name = struct.unpack_from("<I", elf, base)[0]
        offset, size = struct.unpack_from("<QQ", elf, base + 0x18)
        return name, offset, size

    _, strings_at, strings_size = header(shstrndx)
    strings = elf[strings_at:strings_at + strings_size]
    return {strings[name:strings.index(b"\0", name)].decode("ascii", "replace")
            for name, _, _ in (header(i) for i in range(shnum))}


def _cubin_problems(kernel: CompiledKernel, arch: int, log: str | None) -> list[str]:
    """What is wrong with `kernel` compiled for sm_`arch` (nothing: [])."""
    cubin = kernel.asm.get("cubin")
    if not isinstance(cubin, bytes) or cubin[:4] != ELF_MAGIC:
        return [f"no cubin (compiled for {kernel.metadata.compiled_for}; asm has {sorted(kernel.asm)})"]
    problems = []
    machine = struct.unpack_from("<H", cubin, 18)[0]
    if machine != EM_CUDA:
        problems.append(f"ELF machine {machine}, not CUDA ({EM_CUDA})")
    if _cubin_arch(cubin) != arch:
        problems.append(f"cubin for sm_{_cubin_arch(cubin)}")
    if kernel.metadata.compiled_for not in (f"sm_{arch}", f"sm_{arch}a"):
        problems.append(f"compiled for {kernel.metadata.compiled_for}")
    entry = kernel.metadata.entry
    if f".text.{entry}" not in _section_names(cubin):
        problems.append(f"no .text.{entry} section in the cubin")
    if log is None:
        problems.append("NVRTC's log was not seen (compiled outside the toolchain this test wraps?)")
    else:
        frames = _PTXAS_FRAME.findall(log)
        if f"Compiling entry function '{entry}' for 'sm_{arch}" not in log or not frames:
            problems.append(f"no ptxas report for {entry} in NVRTC's log: {log[:300]!r}")
        for stack, spill_stores, spill_loads in frames:
            if (stack, spill_stores, spill_loads) != ("0", "0", "0"):
                problems.append(f"ptxas: {stack} bytes stack frame, {spill_stores} bytes spill stores, "
                                f"{spill_loads} bytes spill loads")
    return problems


# -- the compilations --------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One specialisation compiled for one architecture: the kernel and NVRTC's
    log, or the error."""

    spec: Specialisation
    arch: int
    kernel: CompiledKernel | None
    log: str | None
    error: BaseException | None


def _nvrtc_problems() -> list[str]:
    """The target architectures no NVRTC found here knows, with what would fix it."""
    problems = []
    for arch in ARCHS:
        choice = libs.nvrtc_for(arch)
        if choice.ptx_fallback or not choice.nvrtc.knows(arch):
            problems.append(
                f"sm_{arch}: NVRTC {choice.nvrtc.version_text} at {choice.nvrtc.path} knows only "
                f"{', '.join(f'sm_{a}' for a in choice.nvrtc.supported_archs)} ({choice.reason})")
    return problems


def _error_text(error: BaseException) -> str:
    """The error's first line and the first lines of NVRTC's log when it has one."""
    lines = str(getattr(error, "message", error)).strip().splitlines()
    log = [line for line in str(getattr(error, "log", "")).splitlines() if line.strip()][:6]
    return "; ".join([f"{type(error).__name__}: {lines[0] if lines else ''}", *log])


@pytest.fixture(scope="module")
def specialisations() -> list[Specialisation]:
    return _launched(KERNELS_PATH, KERNEL_CASES) + _launched(OPS_PATH, _op_sample())


@pytest.fixture(scope="module")
def outcomes(specialisations, tmp_path_factory) -> dict[int, list[Outcome]]:
    """Every specialisation compiled for every architecture of ARCHS, by
    architecture; fails at once when NVRTC does not know one of them."""
    missing = _nvrtc_problems()
    if missing:
        pytest.fail("the NVRTC found cannot compile for every target (pip install -U nvidia-cuda-nvrtc-cu12, "
                    "12.8 or newer, knows sm_61 to sm_120):\n" + "\n".join(missing), pytrace=False)
    logs: dict[tuple[str, str], str] = {}
    lock = threading.Lock()
    select = build.select_toolchain

    def verbose_toolchain(target: GPUTarget, *, forced: bool = False) -> build.Toolchain:
        chosen = select(target, forced=forced)
        return build.Toolchain(_VerboseCompiler(chosen.compiler, logs, lock), chosen.arch, chosen.ptx_only)

    def compile_one(spec: Specialisation, arch: int) -> Outcome:
        try:
            kernel = tritone.compile(spec.src, target=GPUTarget("cuda", arch, 32), options=spec.options)
        except Exception as error:  # every failure is reported with the others, by kernel and architecture
            return Outcome(spec, arch, None, None, error)
        log = logs.get((_digest(kernel.asm["cuda"]), kernel.metadata.compiled_for))
        return Outcome(spec, arch, kernel, log, None)

    with pytest.MonkeyPatch.context() as patch:
        # A fresh cache: every kernel really compiles, and nothing is left in the user's.
        patch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("kernel_cache")))
        for name in ("TRITONE_TARGET", "TRITON_DISABLE_LINE_INFO", "TRITON_ALWAYS_COMPILE"):
            patch.delenv(name, raising=False)
        patch.setattr(build, "select_toolchain", verbose_toolchain)
        workers = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                             else os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(compile_one, spec, arch) for arch in ARCHS for spec in specialisations]
            results = [future.result() for future in futures]
    by_arch: dict[int, list[Outcome]] = {arch: [] for arch in ARCHS}
    for outcome in results:
        by_arch[outcome.arch].append(outcome)
    return by_arch


def _report(failures: Iterable[str]) -> str:
    return "\n".join(failures)


# -- tests -------------------------------------------------------------------------------------


def _jit_kernel_names(path: Path) -> set[str]:
    """The public @jit functions (the kernels, not the `_helpers`) of a kernel file."""
    kernels = load_kernels(tritone, tl, path)
    return {name for name, value in vars(kernels).items() if isinstance(value, JITFunction) and name[0] != "_"}


def test_every_kernel_of_the_list_is_compiled(specialisations):
    names = {spec.src.name for spec in specialisations}
    assert _jit_kernel_names(KERNELS_PATH) <= names, "an end-to-end kernel was never launched"
    assert "matmul_kernel" in names and "unary_kernel" in names and "binary_kernel" in names
    assert len(specialisations) > 60, f"only {len(specialisations)} specialisations: the op sample shrank"
    assert any(spec.src.frontend_inputs()[2] for spec in specialisations), \
        "no kernel was specialised with a divisible-by-16 argument"


@pytest.mark.parametrize("arch", ARCHS, ids=[f"sm_{a}" for a in ARCHS])
def test_kernel_list_compiles_to_cubins(outcomes, arch):
    failures = []
    for outcome in outcomes[arch]:
        if outcome.error is not None:
            failures.append(f"{outcome.spec.label}: {_error_text(outcome.error)}")
            continue
        failures.extend(f"{outcome.spec.label}: {problem}"
                        for problem in _cubin_problems(outcome.kernel, arch, outcome.log))
    assert not failures, f"sm_{arch}: {len(failures)} problems\n" + _report(failures)


def _jit_spans(path: Path) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of every @jit function in `path`, decorators included."""
    tree = ast.parse(path.read_text(), str(path))
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            spans.append((node.name, first, node.end_lineno or node.lineno))
    return spans


def test_line_directives_point_at_the_kernel_source(outcomes):
    spans = {path: _jit_spans(path) for path in (KERNELS_PATH, OPS_PATH)}
    failures = []
    for outcome in outcomes[80]:
        if outcome.kernel is None:
            continue  # reported by test_kernel_list_compiles_to_cubins
        source_file = Path(outcome.spec.src.fn.fn.__code__.co_filename).resolve()
        directives = [(int(line), Path(file.replace('\\"', '"').replace("\\\\", "\\")).resolve())
                      for line, file in _line_directives(outcome.kernel.asm["cuda"])]
        own = [span for span in spans[source_file] if span[0] == outcome.spec.src.name]
        if not any(file == source_file and own and own[0][1] <= line <= own[0][2] for line, file in directives):
            failures.append(f"{outcome.spec.label}: no #line inside the kernel's own lines in {source_file}")
        for line, file in directives:
            if file == source_file:
                if not any(first <= line <= last for _, first, last in spans[source_file]):
                    failures.append(f"{outcome.spec.label}: #line {line} of {file.name} is in no @jit function")
            elif TRITONE_DIR not in file.parents:
                failures.append(f"{outcome.spec.label}: #line {line} names {file}, neither the kernel's file "
                                f"nor tritone's language library")
    assert not failures, _report(failures)
