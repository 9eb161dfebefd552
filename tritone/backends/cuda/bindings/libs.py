"""Where the NVIDIA driver, NVRTC and cuBLASLt live, and which NVRTC to use.

This module alone knows the places. The driver is `nvcuda.dll` (Windows) or
`libcuda.so.1` (Linux) unless `TRITONE_LIBCUDA_PATH` names another. NVRTC is
searched, in this order:

1. `TRITONE_NVRTC_PATH` (a library file or its folder). When set it is the only
   candidate: a person who names a library expects that one, and is told when it
   cannot be used rather than silently given another.
2. An NVRTC this process has already loaded (torch loads one): using it avoids
   a second copy in the process.
3. The `nvidia` pip wheels in every site-packages folder: CUDA 12's
   `nvidia/cuda_nvrtc/{bin,lib}` first (tritone's default dependency), then
   CUDA 13's `nvidia/cu13/{bin/x86_64,lib}`.
4. `torch/lib` (torch for Windows bundles NVRTC there).
5. What NVIDIA's `cuda-pathfinder` finds, when it is installed.
6. CUDA toolkits: `CUDA_PATH`, `CUDA_HOME`, `CUDA_PATH_V*` (newest first), then
   the default install folders.
7. conda: `CONDA_PREFIX`, and this Python's prefix when it is a conda env.
8. The system search: `PATH` folders on Windows, the dynamic loader's own
   search (`LD_LIBRARY_PATH`, ld.so.cache) by library name.

The choice is the first candidate that loads, that the driver can run the
output of (an NVRTC 13 needs a CUDA 13 driver, R580 or newer) and that knows
the GPU's architecture. When none knows it, the one whose newest architecture
below the GPU's is highest compiles PTX for the driver to JIT, with a warning.

cuBLASLt (for `triton._C.libtriton.nvidia.cublas`) is searched in the same
places and order from step 2 on, its pip wheels being `nvidia-cublas-cu12`
(`nvidia/cublas/{bin,lib}`) and CUDA 13's `nvidia-cublas`
(`nvidia/cu13/{bin/x86_64,bin,lib}`); the first that loads and whose major
version the driver runs is used. Every failure lists what was searched and the
command that fixes it.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Sequence
from ctypes import c_size_t
from dataclasses import dataclass, field
from typing import Any

from tritone import knobs
from tritone.backends.cuda.bindings.nvrtc import NVRTC, NVRTCError
from tritone.errors import TritonError
from tritone.platform import Platform, host, site_packages_dirs, unique_paths

PIP_NVRTC_12 = "nvidia-cuda-nvrtc-cu12"
PIP_NVRTC_13 = "nvidia-cuda-nvrtc"
PIP_CUBLAS_12 = "nvidia-cublas-cu12"
PIP_CUBLAS_13 = "nvidia-cublas"
# What NVRTC 12.9, the last 12.x, knows (nvrtcGetSupportedArchs). NVRTC 13 starts at sm_75 and adds
# sm_88, sm_110 (Jetson Thor, sm_101 before CUDA 13) and every architecture after sm_121.
ARCHS_OF_NVRTC_12 = frozenset({50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121})
_OLDEST_ARCH_OF_NVRTC_13 = 75
NVRTC_OVERRIDE = "TRITONE_NVRTC_PATH"
DRIVER_OVERRIDE = "TRITONE_LIBCUDA_PATH"

# The oldest driver branch that runs the output of each NVRTC major version.
_DRIVER_BRANCH = {11: "R450", 12: "R525", 13: "R580"}

_WINDOWS_NVRTC = re.compile(r"^nvrtc64_(\d+)_0\.dll$", re.IGNORECASE)
# Older torch wheels bundle a renamed copy: libnvrtc-<8 hex digits>.so.11.2.
_LINUX_NVRTC = re.compile(r"^libnvrtc(?:-[0-9a-f]{8})?\.so((?:\.\d+)*)$")
_LINUX_BUILTINS = re.compile(r"^libnvrtc-builtins\.so((?:\.\d+)*)$")
_CUDA_PATH_VERSIONED = re.compile(r"^CUDA_PATH_V(\d+)_(\d+)$", re.IGNORECASE)
_TOOLKIT_VERSION_FOLDER = re.compile(r"^(?:v|cuda-)(\d+)\.(\d+)$", re.IGNORECASE)
_WINDOWS_SYSTEM_NAMES = ("nvrtc64_130_0.dll", "nvrtc64_120_0.dll", "nvrtc64_112_0.dll")
_LINUX_SYSTEM_NAMES = ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2")


class LibraryNotFound(TritonError):
    """The driver, NVRTC or cuBLASLt could not be found or used. The message lists every
    place searched, what was found there and why it was not used, and how to fix it."""

    def __init__(self, message: str, places: Sequence[str] = (), probes: Sequence[Probe] = ()):
        self.message = message
        self.places = tuple(places)
        self.probes = tuple(probes)
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.message, self.places, self.probes))


@dataclass(frozen=True)
class Candidate:
    """A library to try: a full path, or a bare name left to the OS loader's
    search; `source` says where it was found ("pip nvidia-cuda-nvrtc-cu12", "CUDA_PATH", ...)."""

    path: str
    source: str


@dataclass(frozen=True)
class Search:
    """The candidates found, best first, and a line per place looked at (for messages)."""

    candidates: tuple[Candidate, ...]
    places: tuple[str, ...]


@dataclass(frozen=True)
class Probe:
    """What trying one candidate of `library` showed: its version (and for NVRTC
    the architectures it knows) once loaded, and the verdict ("chosen", "usable",
    or why it was not used)."""

    candidate: Candidate
    version: tuple[int, int] | None
    archs: tuple[int, ...]
    verdict: str
    library: str = "NVRTC"

    def describe(self) -> str:
        found = f"{self.candidate.path} [{self.candidate.source}]"
        if self.version is not None:
            found += f": {self.library} {self.version[0]}.{self.version[1]}"
            if self.library == "NVRTC":
                found += f", {_arch_span(self.archs)}"
        return f"{found}: {self.verdict}"


@dataclass(frozen=True)
class NvrtcChoice:
    """The NVRTC to compile with. `target_arch` is the architecture to compile for:
    the one asked for, or with `ptx_fallback` the newest this NVRTC knows below it
    (compile PTX, the driver JITs it). `reason` says why this one, `probes` what
    was tried, `places` where it looked."""

    nvrtc: NVRTC
    candidate: Candidate
    target_arch: int | None
    ptx_fallback: bool
    reason: str
    probes: tuple[Probe, ...]
    places: tuple[str, ...] = field(default=(), repr=False)

    @property
    def version(self) -> tuple[int, int]:
        return self.nvrtc.version


@dataclass(frozen=True)
class DriverLibrary:
    """The loaded CUDA driver library, where it came from."""

    library: Any
    path: str
    source: str


def _arch_span(archs: Sequence[int]) -> str:
    return f"sm_{min(archs)}..sm_{max(archs)}" if archs else "no architectures"


def _driver_cuda_text(driver_version: int) -> str:
    return f"{driver_version // 1000}.{driver_version % 1000 // 10}"


def package_for(arch: int | None) -> str:
    """The pip package whose NVRTC compiles for compute capability `arch` (86 for
    8.6): CUDA 12's `nvidia-cuda-nvrtc-cu12` for every architecture NVRTC 12.9
    knows (sm_50 to sm_121: it also knows Pascal and Volta, and its output runs
    on CUDA 12 drivers); CUDA 13's `nvidia-cuda-nvrtc` for the others from
    sm_75 on (sm_88, sm_110, anything after sm_121). None (no particular GPU)
    gets the CUDA 12 one, tritone's default dependency."""
    if arch is None or arch in ARCHS_OF_NVRTC_12 or arch < _OLDEST_ARCH_OF_NVRTC_13:
        return PIP_NVRTC_12
    return PIP_NVRTC_13


def _install_command(platform: Platform, package: str) -> str:
    executable = platform.executable()
    if not executable:
        return f"pip install {package}"
    quoted = f'"{executable}"' if " " in executable else executable
    return f"{quoted} -m pip install {package}   (or: pip install {package})"


# --------------------------------------------------------------------------- the search


@dataclass(frozen=True)
class Wheel:
    """Where one `nvidia` pip wheel puts a library: `package` is its folder under
    site-packages, and each system's subfolders of it are tried in order;
    `source` names the wheel in messages."""

    source: str
    package: tuple[str, ...]
    windows: tuple[tuple[str, ...], ...]
    linux: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class LibraryKind:
    """One NVIDIA library searched for. `windows_name` matches its DLL names, group 1
    being the number that orders versions (newest first); `linux_name` its shared
    objects, group 1 the version suffix (".12", ".12.9.86", "" when unversioned).
    `short_name` is what `find_library` and cuda-pathfinder are asked for,
    `windows_glob` how messages write its DLL names, the system names what the
    OS loader is asked for last, newest first."""

    title: str
    short_name: str
    windows_name: re.Pattern[str]
    linux_name: re.Pattern[str]
    windows_glob: str
    windows_system_names: tuple[str, ...]
    linux_system_names: tuple[str, ...]
    wheels: tuple[Wheel, ...]


NVRTC_LIBRARY = LibraryKind(
    "NVRTC", "nvrtc", _WINDOWS_NVRTC, _LINUX_NVRTC, "nvrtc64_*.dll", _WINDOWS_SYSTEM_NAMES, _LINUX_SYSTEM_NAMES,
    (Wheel(f"pip {PIP_NVRTC_12}", ("nvidia", "cuda_nvrtc"), (("bin",),), (("lib",),)),
     Wheel(f"pip {PIP_NVRTC_13} (CUDA 13)", ("nvidia", "cu13"), (("bin", "x86_64"),), (("lib",),))))

CUBLASLT_LIBRARY = LibraryKind(
    "cuBLASLt", "cublasLt", re.compile(r"^cublasLt64_(\d+)\.dll$", re.IGNORECASE),
    re.compile(r"^libcublasLt\.so((?:\.\d+)*)$"), "cublasLt64_*.dll",
    ("cublasLt64_13.dll", "cublasLt64_12.dll", "cublasLt64_11.dll"),
    ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"),
    (Wheel(f"pip {PIP_CUBLAS_12}", ("nvidia", "cublas"), (("bin",),), (("lib",),)),
     # CUDA 13's wheels keep Windows DLLs per architecture (bin\x86_64); plain bin is looked at too.
     Wheel(f"pip {PIP_CUBLAS_13} (CUDA 13)", ("nvidia", "cu13"), (("bin", "x86_64"), ("bin",)), (("lib",),))))


def _library_names(platform: Platform, kind: LibraryKind, names: Sequence[str]) -> list[str]:
    """The names among `names` that are `kind`'s library, best first. Windows: newest
    version first (NVRTC's `.alt.dll` builds never match). Linux: per major version
    the shortest versioned name (libnvrtc.so.12 before libnvrtc.so.12.9.86, the same
    library), newest major first; the unversioned name only alone."""
    if platform.is_windows:
        matched = [(int(m.group(1)), name) for name in names if (m := kind.windows_name.match(name))]
        return [name for _, name in sorted(matched, reverse=True)]
    per_major: dict[int, tuple[int, str]] = {}
    unversioned = []
    for name in names:
        m = kind.linux_name.match(name)
        if not m:
            continue
        parts = [int(part) for part in m.group(1).split(".") if part]
        if not parts:
            unversioned.append(name)
            continue
        best = per_major.get(parts[0])
        if best is None or len(parts) < best[0]:
            per_major[parts[0]] = (len(parts), name)
    if per_major:
        return [per_major[major][1] for major in sorted(per_major, reverse=True)]
    return unversioned


def _is_library_file(platform: Platform, kind: LibraryKind, path: str) -> bool:
    return bool(_library_names(platform, kind, [platform.path.basename(path)]))


class _Searcher:
    """Collects the candidates of one library kind and a description of every place
    looked at. Without a kind (the driver's search) files are only named one by one."""

    def __init__(self, platform: Platform, kind: LibraryKind | None = None):
        self.platform = platform
        self.kind = kind
        self.candidates: list[Candidate] = []
        self.places: list[str] = []

    def folder(self, source: str, folder: str, *, note_absent: bool = True) -> bool:
        """Search one folder; returns whether it held the library."""
        if not self.platform.is_dir(folder):
            if note_absent:
                self.places.append(f"{source}: {folder} (no such folder)")
            return False
        names = _library_names(self.platform, self.kind, self.platform.list_dir(folder))
        if not names:
            if note_absent:
                self.places.append(f"{source}: {folder} (no {self.kind.title} library in it)")
            return False
        self.places.append(f"{source}: {folder}")
        self.candidates += [Candidate(self.platform.path.join(folder, name), source) for name in names]
        return True

    def file(self, source: str, path: str) -> None:
        self.places.append(f"{source}: {path}")
        self.candidates.append(Candidate(path, source))

    def package(self, source: str, sites: Sequence[str], package: Sequence[str],
                subfolders: Sequence[Sequence[str]]) -> None:
        """An installed Python package's library folders (tried in order), in every
        site-packages folder that has the package; one line for all when none has it."""
        path = self.platform.path
        installed = [site for site in sites if self.platform.is_dir(path.join(site, *package))]
        for site in installed:
            folders = [path.join(site, *package, *subfolder) for subfolder in subfolders]
            if len(folders) == 1:
                self.folder(source, folders[0])
            elif not any([self.folder(source, folder, note_absent=False) for folder in folders]):
                self.places.append(f"{source}: {' or '.join(folders)} (no {self.kind.title} library in them)")
        if not installed:
            self.places.append(f"{source}: not installed in {', '.join(sites) or 'any site-packages folder'}")

    def toolkit(self, source: str, root: str) -> None:
        """A CUDA toolkit root: Windows `bin` (CUDA 13 also `bin\\x64`), Linux `lib64`, `lib`."""
        subfolders = (("bin",), ("bin", "x64")) if self.platform.is_windows else (("lib64",), ("lib",))
        found = [self.folder(source, self.platform.path.join(root, *sub), note_absent=False) for sub in subfolders]
        if not any(found):
            where = "bin" if self.platform.is_windows else "lib64 or lib"
            self.places.append(f"{source}: {root} (no {self.kind.title} library in {where})")

    def result(self) -> Search:
        seen: set[str] = set()
        kept = []
        for candidate in self.candidates:
            path = self.platform.path
            is_bare = path.basename(candidate.path) == candidate.path
            resolved = candidate.path if is_bare else self.platform.realpath(candidate.path)
            key = path.normcase(path.normpath(resolved))
            if key not in seen:
                seen.add(key)
                kept.append(candidate)
        return Search(tuple(kept), tuple(self.places))


def nvrtc_search(platform: Platform, override: str | None = None, *, system_lookup: bool = True) -> Search:
    """Every NVRTC candidate on `platform`, in tritone's order (see the module's
    docstring), without loading any (cuda-pathfinder, when installed, loads
    what it finds). `override` is TRITONE_NVRTC_PATH's value. Without
    `system_lookup` (the quick search) nothing that runs code is asked: the
    search ends before cuda-pathfinder when it is installed, and the system
    search offers its fixed library names only, not what `find_library`
    answers (which runs programs); each costs tens of milliseconds."""
    searcher = _Searcher(platform, NVRTC_LIBRARY)
    if override:
        if platform.is_file(override):
            searcher.file(NVRTC_OVERRIDE, override)
        elif platform.is_dir(override):
            searcher.folder(NVRTC_OVERRIDE, override)
        else:
            searcher.places.append(f"{NVRTC_OVERRIDE}: {override} (no such file or folder)")
        return searcher.result()
    searcher.places.append(f"{NVRTC_OVERRIDE}: not set")
    return _search_everywhere(searcher, system_lookup)


def cublaslt_search(platform: Platform, *, system_lookup: bool = True) -> Search:
    """Every cuBLASLt candidate on `platform`, in the order NVRTC is searched
    after its override (see the module's docstring), without loading any;
    `system_lookup` as for `nvrtc_search`."""
    return _search_everywhere(_Searcher(platform, CUBLASLT_LIBRARY), system_lookup)


def _search_everywhere(searcher: _Searcher, system_lookup: bool) -> Search:
    """The search after the override: the copy this process has loaded, the pip
    wheels, torch/lib, cuda-pathfinder, toolkits, conda, the system."""
    platform, kind = searcher.platform, searcher.kind
    loaded = [library for library in platform.loaded_libraries() if _is_library_file(platform, kind, library)]
    for library in loaded:
        searcher.file("already loaded by this process", library)
    if not loaded:
        searcher.places.append(f"libraries this process has loaded: none is {kind.title}")

    sites = site_packages_dirs(platform)
    for wheel in kind.wheels:
        searcher.package(wheel.source, sites, wheel.package, wheel.windows if platform.is_windows else wheel.linux)
    searcher.package("torch/lib", sites, ("torch",), (("lib",),))

    if platform.has_pathfinder():
        if not system_lookup:
            # Asking cuda-pathfinder imports its package and loads what it finds (tens of
            # milliseconds): the quick search ends here, so that it stays a prefix of the order.
            searcher.places.append("cuda-pathfinder: not asked by the quick search")
            return searcher.result()
        pathfinder = platform.pathfinder_library(kind.short_name)
        if pathfinder:
            searcher.file("cuda-pathfinder", pathfinder)

    _search_toolkits(platform, searcher)
    _search_conda(platform, searcher)
    _search_system(platform, searcher, system_lookup)
    return searcher.result()


def _search_toolkits(platform: Platform, searcher: _Searcher) -> None:
    path = platform.path
    for variable in ("CUDA_PATH", "CUDA_HOME"):
        root = platform.getenv(variable)
        if root:
            searcher.toolkit(variable, root)
        else:
            searcher.places.append(f"{variable}: not set")
    versioned = [(int(m.group(1)), int(m.group(2)), name) for name in platform.env_names()
                 if (m := _CUDA_PATH_VERSIONED.match(name))]
    for _, _, name in sorted(versioned, reverse=True):
        root = platform.getenv(name)
        if root:
            searcher.toolkit(name, root)
    if platform.is_windows:
        program_files = platform.getenv("ProgramFiles") or "C:\\Program Files"
        parent = path.join(program_files, "NVIDIA GPU Computing Toolkit", "CUDA")
        roots = [path.join(parent, name) for name in _newest_first(platform.list_dir(parent))]
    else:
        parent = "/usr/local"
        roots = [path.join(parent, "cuda")] if platform.is_dir(path.join(parent, "cuda")) else []
        roots += [path.join(parent, name) for name in _newest_first(platform.list_dir(parent))]
    for root in roots:
        searcher.toolkit("CUDA toolkit", root)
    if not roots:
        searcher.places.append(f"CUDA toolkit: none installed under {parent}")


def _newest_first(names: Sequence[str]) -> list[str]:
    """Toolkit version folders ("v12.8", "cuda-12.8") among `names`, newest first."""
    versions = [(int(m.group(1)), int(m.group(2)), name)
                for name in names if (m := _TOOLKIT_VERSION_FOLDER.match(name))]
    return [name for _, _, name in sorted(versions, reverse=True)]


def _search_conda(platform: Platform, searcher: _Searcher) -> None:
    path = platform.path
    prefixes = []
    if platform.getenv("CONDA_PREFIX"):
        prefixes.append(("CONDA_PREFIX", platform.getenv("CONDA_PREFIX")))
    # A conda env's python.exe run without `conda activate` sets no CONDA_PREFIX.
    if platform.is_dir(path.join(platform.prefix(), "conda-meta")):
        prefixes.append(("conda env of this Python", platform.prefix()))
    if not prefixes:
        searcher.places.append("conda: CONDA_PREFIX not set, this Python is not a conda env")
    for source, prefix in prefixes:
        folder = path.join(prefix, "Library", "bin") if platform.is_windows else path.join(prefix, "lib")
        searcher.folder(source, folder)


def _search_system(platform: Platform, searcher: _Searcher, lookup: bool) -> None:
    kind = searcher.kind
    if platform.is_windows:
        folders = unique_paths(platform, (platform.getenv("PATH") or "").split(";"))
        held = [folder for folder in folders if searcher.folder("PATH", folder, note_absent=False)]
        if not held:
            searcher.places.append(f"PATH: none of its {len(folders)} folders holds {kind.windows_glob}")
        names = kind.windows_system_names
        source = "system DLL search"
    else:
        names = kind.linux_system_names
        source = "system loader (LD_LIBRARY_PATH, ld.so.cache)"
        found = platform.find_library(kind.short_name) if lookup else None
        if found:
            names = tuple(dict.fromkeys((found, *names)))
    searcher.places.append(f"{source}: {', '.join(names)}")
    searcher.candidates += [Candidate(name, source) for name in names]


# --------------------------------------------------------------------------- NVRTC choice


def _prepare_folder(platform: Platform, library_path: str) -> None:
    """Let NVRTC find its `nvrtc-builtins` library, which it loads by name on
    first use: on Windows add the folder to the DLL search; on Linux load the
    builtins beside it first (some wheels lack the RUNPATH that would find it)."""
    path = platform.path
    folder = path.dirname(library_path)
    if not folder:
        return
    if platform.is_windows:
        platform.add_dll_directory(folder)
        return
    for name in platform.list_dir(folder):
        if _LINUX_BUILTINS.match(name):
            try:
                platform.load_library(path.join(folder, name))
            except OSError:
                pass
            return


def load_nvrtc(platform: Platform, candidate: Candidate) -> NVRTC:
    """Load one candidate and bind it; raises OSError (does not load), AttributeError
    (not an NVRTC 11.2 or newer) or NVRTCError (it refused to answer)."""
    _prepare_folder(platform, candidate.path)
    return NVRTC(platform.load_library(candidate.path), candidate.path)


def _unusable_because(nvrtc: NVRTC, arch: int | None, driver_version: int | None) -> str | None:
    major = nvrtc.version[0]
    if driver_version is not None and major * 1000 > driver_version:
        branch = _DRIVER_BRANCH.get(major, f"CUDA {major}")
        return (f"its output needs a driver for CUDA {major} ({branch} or newer); "
                f"this driver supports CUDA {_driver_cuda_text(driver_version)}")
    if arch is not None and not nvrtc.knows(arch):
        return f"does not know sm_{arch}"
    return None


def _ptx_fallback_arch(nvrtc: NVRTC, arch: int, driver_version: int | None) -> int | None:
    """The newest architecture below `arch` this NVRTC can emit PTX for, if the driver can JIT its PTX."""
    if driver_version is not None and nvrtc.version[0] * 1000 + nvrtc.version[1] * 10 > driver_version:
        return None
    below = [known for known in nvrtc.supported_archs if known < arch]
    return max(below) if below else None


def find_nvrtc(platform: Platform, arch: int | None = None, *, override: str | None = None,
               driver_version: int | None = None, probe_all: bool = False) -> NvrtcChoice:
    """Choose the NVRTC for compute capability `arch` (86 for 8.6; None: any) on
    `platform`, given the driver's CUDA version (`cuDriverGetVersion`, e.g.
    12080) when known. Candidates are loaded in search order until one is
    usable; with `probe_all` every candidate is loaded and judged (for `describe`).
    Raises LibraryNotFound listing what was searched and tried."""
    if not probe_all:
        # The usual case, an NVRTC early in the order, needs no `find_library` lookup.
        search = nvrtc_search(platform, override, system_lookup=False)
        probes, chosen, _ = _probe_nvrtcs(platform, search, arch, driver_version, probe_all)
        if chosen is not None:
            return _chosen_nvrtc(chosen, probes, arch, search)
    search = nvrtc_search(platform, override)
    probes, chosen, fallback = _probe_nvrtcs(platform, search, arch, driver_version, probe_all)
    if chosen is not None:
        return _chosen_nvrtc(chosen, probes, arch, search)
    if fallback is not None and arch is not None:
        index, nvrtc, candidate, target = fallback
        probes[index] = Probe(candidate, nvrtc.version, nvrtc.supported_archs, f"chosen: PTX for compute_{target}")
        reason = (f"no NVRTC found knows sm_{arch}; NVRTC {nvrtc.version_text} at {candidate.path} "
                  f"({candidate.source}) compiles PTX for compute_{target} and the driver JITs it for sm_{arch}. "
                  f"A newer NVRTC compiles for sm_{arch} directly: {_install_command(platform, package_for(arch))}")
        return NvrtcChoice(nvrtc, candidate, target, True, reason, tuple(probes), search.places)
    raise LibraryNotFound(_nvrtc_failure(platform, arch, driver_version, override, search, probes),
                          search.places, probes)


def _probe_nvrtcs(platform: Platform, search: Search, arch: int | None, driver_version: int | None,
                  probe_all: bool) -> tuple[list[Probe], Any, Any]:
    """Load and judge `search`'s candidates in order (all of them with `probe_all`,
    else until one is usable): the probes, the chosen `(probe index, NVRTC,
    candidate)` or None, and the best PTX fallback `(index, NVRTC, candidate,
    target arch)` or None."""
    probes: list[Probe] = []
    chosen: tuple[int, NVRTC, Candidate] | None = None
    fallback: tuple[int, NVRTC, Candidate, int] | None = None
    for candidate in search.candidates:
        if chosen is not None and not probe_all:
            break
        try:
            nvrtc = load_nvrtc(platform, candidate)
        except OSError as error:
            probes.append(Probe(candidate, None, (), f"does not load ({error})"))
            continue
        except AttributeError as error:
            probes.append(Probe(candidate, None, (), f"not an NVRTC 11.2 or newer ({error})"))
            continue
        except NVRTCError as error:
            probes.append(Probe(candidate, None, (), f"does not answer ({error})"))
            continue
        problem = _unusable_because(nvrtc, arch, driver_version)
        probe = Probe(candidate, nvrtc.version, nvrtc.supported_archs, problem or "usable")
        if problem is None and chosen is None:
            chosen = (len(probes), nvrtc, candidate)
        elif arch is not None and not nvrtc.knows(arch):
            target = _ptx_fallback_arch(nvrtc, arch, driver_version)
            if target is not None and (fallback is None or target > fallback[3]):
                fallback = (len(probes), nvrtc, candidate, target)
        probes.append(probe)
    return probes, chosen, fallback


def _chosen_nvrtc(chosen: tuple[int, NVRTC, Candidate], probes: list[Probe], arch: int | None,
                  search: Search) -> NvrtcChoice:
    index, nvrtc, candidate = chosen
    probes[index] = Probe(candidate, nvrtc.version, nvrtc.supported_archs, "chosen")
    needs = f", knows sm_{arch}" if arch is not None else ""
    reason = (f"NVRTC {nvrtc.version_text} at {candidate.path} ({candidate.source}){needs}: "
              "the first usable one in tritone's search order")
    return NvrtcChoice(nvrtc, candidate, arch, False, reason, tuple(probes), search.places)


def _nvrtc_failure(platform: Platform, arch: int | None, driver_version: int | None, override: str | None,
                   search: Search, probes: Sequence[Probe]) -> str:
    wanted = f" that can compile for sm_{arch}" if arch is not None else ""
    if driver_version is not None:
        wanted += f" with this driver (CUDA {_driver_cuda_text(driver_version)})"
    if any(probe.version is not None for probe in probes):
        lines = [f"No usable NVRTC (NVIDIA's run-time CUDA compiler){wanted} was found.",
                 "Found, and why each was not used:"]
    else:
        lines = ["NVRTC (NVIDIA's run-time CUDA compiler) was not found.", "Tried:"]
    lines += [f"  - {probe.describe()}" for probe in probes]
    lines.append("Searched:")
    lines += [f"  - {place}" for place in search.places]
    lines.append(f"Fix: {_install_command(platform, package_for(arch))}")
    if override:
        lines.append(f"or point {NVRTC_OVERRIDE} at a usable NVRTC library (or unset it to let tritone search).")
    else:
        example = "nvrtc64_120_0.dll" if platform.is_windows else "libnvrtc.so.12"
        lines.append(f"or set {NVRTC_OVERRIDE} to an NVRTC library ({example}) or its folder.")
    if driver_version is not None and any("needs a driver" in probe.verdict for probe in probes):
        lines.append("or update the NVIDIA driver (R580 or newer runs NVRTC 13's output).")
    return "\n".join(lines)


# --------------------------------------------------------------------------- driver


def driver_search(platform: Platform, override: str | None = None, *, system_lookup: bool = True) -> Search:
    """The CUDA driver library candidates on `platform`; `override` is TRITONE_LIBCUDA_PATH's value.
    Without `system_lookup`, not what `find_library` answers (it runs programs)."""
    searcher = _Searcher(platform)
    if override:
        searcher.file(DRIVER_OVERRIDE, override)
        return searcher.result()
    if platform.is_windows:
        searcher.file("system DLL search (System32)", "nvcuda.dll")
        return searcher.result()
    searcher.file("system loader (LD_LIBRARY_PATH, ld.so.cache)", "libcuda.so.1")
    # WSL exposes the Windows driver here, not always on the loader's path.
    wsl = "/usr/lib/wsl/lib/libcuda.so.1"
    if platform.is_file(wsl):
        searcher.file("WSL driver folder", wsl)
    found = platform.find_library("cuda") if system_lookup else None
    # Only the versioned soname is the driver; a bare libcuda.so is the toolkit's link stub.
    if found and found.endswith(".so.1"):
        searcher.file("ctypes.util.find_library", found)
    return searcher.result()


def find_driver(platform: Platform, override: str | None = None) -> DriverLibrary:
    """Load the CUDA driver library; raises LibraryNotFound naming every place
    tried and how to install the driver."""
    probes: list[Probe] = []
    tried: set[str] = set()
    # The fixed names first; `find_library`'s answer (it runs programs) only when they fail.
    for lookup in (False, True):
        search = driver_search(platform, override, system_lookup=lookup)
        for candidate in search.candidates:
            if candidate.path in tried:
                continue
            tried.add(candidate.path)
            try:
                return DriverLibrary(platform.load_library(candidate.path), candidate.path, candidate.source)
            except OSError as error:
                probes.append(Probe(candidate, None, (), f"does not load ({error})"))
    lines = ["The NVIDIA CUDA driver library was not found, so no GPU can be used. Tried:"]
    lines += [f"  - {probe.describe()}" for probe in probes]
    if platform.is_windows:
        lines.append("Fix: install or update the NVIDIA display driver (https://www.nvidia.com/drivers); "
                     "it puts nvcuda.dll in System32.")
    else:
        lines.append("Fix: install the NVIDIA driver (it provides libcuda.so.1; `nvidia-smi` should list the GPU). "
                     "In a container, expose the GPU (`docker run --gpus all` with the NVIDIA Container Toolkit).")
    lines.append(f"or set {DRIVER_OVERRIDE} to the driver library. Without a GPU, tritone runs kernels in its "
                 "CPU interpreter by itself: nothing needs setting.")
    raise LibraryNotFound("\n".join(lines), search.places, probes)


# --------------------------------------------------------------------------- cuBLASLt


@dataclass(frozen=True)
class CublasLtChoice:
    """The cuBLASLt loaded: the library object, the candidate it came from, its
    version (major, minor), every candidate tried and the places searched."""

    library: Any
    candidate: Candidate
    version: tuple[int, int]
    probes: tuple[Probe, ...]
    places: tuple[str, ...] = field(default=(), repr=False)


def cublaslt_version(library: Any) -> tuple[int, int]:
    """(major, minor) of a loaded cuBLASLt, from `cublasLtGetVersion`; AttributeError
    when the library has no such function (it is not cuBLASLt)."""
    get_version = library.cublasLtGetVersion
    get_version.argtypes = []
    get_version.restype = c_size_t
    encoded = int(get_version())
    # major*10000 + minor*100 + patch since cuBLAS 11.9; major*1000 + minor*100 + patch before.
    if encoded >= 100000:
        return encoded // 10000, encoded // 100 % 100
    return encoded // 1000, encoded // 100 % 10


def _probe_cublaslt(platform: Platform, candidate: Candidate, driver_version: int | None) -> tuple[Probe, Any]:
    """Load one candidate: its probe, and the library when it is usable (else None)."""
    folder = platform.path.dirname(candidate.path)
    if folder:
        platform.add_dll_directory(folder)
    try:
        library = platform.load_library(candidate.path)
    except OSError as error:
        return Probe(candidate, None, (), f"does not load ({error})", "cuBLASLt"), None
    try:
        version = cublaslt_version(library)
    except AttributeError as error:
        return Probe(candidate, None, (), f"not a cuBLASLt ({error})", "cuBLASLt"), None
    if driver_version is not None and version[0] * 1000 > driver_version:
        branch = _DRIVER_BRANCH.get(version[0], f"CUDA {version[0]}")
        verdict = (f"needs a driver for CUDA {version[0]} ({branch} or newer); "
                   f"this driver supports CUDA {_driver_cuda_text(driver_version)}")
        return Probe(candidate, version, (), verdict, "cuBLASLt"), None
    return Probe(candidate, version, (), "chosen", "cuBLASLt"), library


def find_cublaslt(platform: Platform, *, driver_version: int | None = None) -> CublasLtChoice:
    """Load the first cuBLASLt in search order that loads and whose major version
    the driver (`cuDriverGetVersion`, e.g. 12080; None: not known) runs. Raises
    LibraryNotFound listing what was searched and tried, and what to install."""
    probes: list[Probe] = []
    tried: set[str] = set()
    places: tuple[str, ...] = ()
    # The quick search first; `find_library` and cuda-pathfinder (they run code) only when it fails.
    for lookup in (False, True):
        search = cublaslt_search(platform, system_lookup=lookup)
        places = search.places
        for candidate in search.candidates:
            if candidate.path in tried:
                continue
            tried.add(candidate.path)
            probe, library = _probe_cublaslt(platform, candidate, driver_version)
            probes.append(probe)
            if library is not None:
                return CublasLtChoice(library, candidate, probe.version, tuple(probes), places)
    if any(probe.version is not None for probe in probes):
        lines = ["No usable cuBLASLt (NVIDIA's matrix-multiply library) was found. Found, and why each was not used:"]
    else:
        lines = ["cuBLASLt (NVIDIA's matrix-multiply library, which `triton._C.libtriton.nvidia.cublas` calls) "
                 "was not found. Tried:"]
    lines += [f"  - {probe.describe()}" for probe in probes]
    lines.append("Searched:")
    lines += [f"  - {place}" for place in places]
    lines.append(f"Fix: {_install_command(platform, PIP_CUBLAS_12)}")
    lines.append(f"or, with a CUDA 13 driver (R580 or newer): {_install_command(platform, PIP_CUBLAS_13)}. "
                 "torch's CUDA builds bring cuBLASLt with them.")
    raise LibraryNotFound("\n".join(lines), places, probes)


# --------------------------------------------------------------------------- process-wide choices

_lock = threading.Lock()
_nvrtc_choices: dict[tuple[int | None, int | None, str | None], NvrtcChoice] = {}
_drivers: dict[str | None, DriverLibrary] = {}
_cublaslts: dict[int | None, CublasLtChoice] = {}


def nvrtc_for(arch: int | None = None, *, driver_version: int | None = None) -> NvrtcChoice:
    """This process's NVRTC for compute capability `arch`, chosen once per
    (arch, driver version, TRITONE_NVRTC_PATH) and remembered. Warns once when
    no NVRTC knows `arch` and PTX for an older one is used instead."""
    override = knobs.nvidia.nvrtc_path
    key = (arch, driver_version, override)
    with _lock:
        choice = _nvrtc_choices.get(key)
        if choice is None:
            choice = find_nvrtc(host(), arch, override=override, driver_version=driver_version)
            _nvrtc_choices[key] = choice
            if choice.ptx_fallback:
                warnings.warn(choice.reason, RuntimeWarning, stacklevel=2)
        return choice


def load_cublaslt(*, driver_version: int | None = None) -> CublasLtChoice:
    """This process's cuBLASLt for a driver of CUDA version `driver_version`, found once and remembered."""
    with _lock:
        choice = _cublaslts.get(driver_version)
        if choice is None:
            choice = find_cublaslt(host(), driver_version=driver_version)
            _cublaslts[driver_version] = choice
        return choice


def load_driver() -> DriverLibrary:
    """This process's CUDA driver library (TRITONE_LIBCUDA_PATH, else the system's), loaded once."""
    override = knobs.nvidia.libcuda_path
    with _lock:
        driver = _drivers.get(override)
        if driver is None:
            driver = find_driver(host(), override)
            _drivers[override] = driver
        return driver


@dataclass(frozen=True)
class LibraryReport:
    """What `describe` found: the driver and the NVRTC chosen, or why none, with
    every candidate tried. `str()` gives the text `doctor` prints."""

    driver: DriverLibrary | None
    driver_error: str | None
    nvrtc: NvrtcChoice | None
    nvrtc_error: str | None
    nvrtc_probes: tuple[Probe, ...]
    nvrtc_places: tuple[str, ...]

    def __str__(self) -> str:
        if self.driver is not None:
            lines = [f"CUDA driver: {self.driver.path} [{self.driver.source}]"]
        else:
            lines = ["CUDA driver: not found", *(f"  {line}" for line in (self.driver_error or "").splitlines())]
        if self.nvrtc is not None:
            lines.append(f"NVRTC: {self.nvrtc.reason}")
        else:
            lines.append("NVRTC: none usable")
        lines.append("NVRTC candidates, in search order:")
        lines += [f"  - {probe.describe()}" for probe in self.nvrtc_probes] or ["  (none)"]
        lines.append("Places searched:")
        lines += [f"  - {place}" for place in self.nvrtc_places]
        if self.nvrtc is None and self.nvrtc_error:
            fix = [line for line in self.nvrtc_error.splitlines() if line.startswith(("Fix:", "or "))]
            lines += fix
        return "\n".join(lines)


def describe(arch: int | None = None, *, driver_version: int | None = None,
             platform: Platform | None = None) -> LibraryReport:
    """Search for the driver and for NVRTC as tritone would (honouring
    TRITONE_LIBCUDA_PATH and TRITONE_NVRTC_PATH), loading and judging every NVRTC
    candidate, and report it all; never raises for a missing library."""
    platform = platform or host()
    driver, driver_error = None, None
    try:
        driver = find_driver(platform, knobs.nvidia.libcuda_path)
    except LibraryNotFound as error:
        driver_error = str(error)
    try:
        choice = find_nvrtc(platform, arch, override=knobs.nvidia.nvrtc_path, driver_version=driver_version,
                            probe_all=True)
    except LibraryNotFound as error:
        return LibraryReport(driver, driver_error, None, str(error), error.probes, error.places)
    return LibraryReport(driver, driver_error, choice, None, choice.probes, choice.places)
