"""The one place that asks about the operating system.

Everything tritone needs to know about the host (which OS, environment
variables naming folders, known folders, the Python installation's package
folders, files and folders, the shared libraries already loaded, loading one
more) goes through a `Platform`. `host()` is the real machine;
`SimulatedPlatform` describes another one as data (a Windows layout on a Linux
test machine, say), so discovery logic can be tested without that machine.
"""

from __future__ import annotations

import abc
import ctypes
import ctypes.util
import importlib.util
import ntpath
import os
import posixpath
import site
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

# Where Windows keeps its LongPathsEnabled switch (a DWORD under HKEY_LOCAL_MACHINE).
LONG_PATHS_KEY = r"SYSTEM\CurrentControlSet\Control\FileSystem"
LONG_PATHS_VALUE = "LongPathsEnabled"


class Platform(abc.ABC):
    """What tritone asks of an operating system. `HostPlatform` answers for the
    machine this process runs on; `SimulatedPlatform` answers from data."""

    name: str
    """"windows", "linux" or "darwin"."""

    @property
    def path(self) -> ModuleType:
        """The path module of this OS (`ntpath` or `posixpath`), so that Windows
        paths are joined and compared the Windows way on any host."""
        return ntpath if self.name == "windows" else posixpath

    @property
    def is_windows(self) -> bool:
        return self.name == "windows"

    @abc.abstractmethod
    def getenv(self, name: str) -> str | None:
        """The variable's value, None when unset or empty (case-insensitive on Windows)."""

    @abc.abstractmethod
    def env_names(self) -> list[str]:
        """Names of every environment variable set."""

    @abc.abstractmethod
    def executable(self) -> str:
        """The running Python's executable."""

    @abc.abstractmethod
    def prefix(self) -> str:
        """The running Python's `sys.prefix`."""

    @abc.abstractmethod
    def sys_path(self) -> list[str]:
        """The running Python's `sys.path`."""

    @abc.abstractmethod
    def site_dirs(self) -> list[str]:
        """What the `site` module reports: global site-packages, then the user's."""

    @abc.abstractmethod
    def home(self) -> str:
        """The user's home folder."""

    @abc.abstractmethod
    def is_file(self, path: str) -> bool:
        """Whether a file exists at `path`."""

    @abc.abstractmethod
    def is_dir(self, path: str) -> bool:
        """Whether a folder exists at `path`."""

    @abc.abstractmethod
    def list_dir(self, path: str) -> list[str]:
        """Names in the folder, sorted; empty when it does not exist or cannot be read."""

    @abc.abstractmethod
    def read_text(self, path: str) -> str | None:
        """The file's text, None when it cannot be read."""

    @abc.abstractmethod
    def realpath(self, path: str) -> str:
        """The path with symbolic links resolved (unchanged where that means nothing)."""

    @abc.abstractmethod
    def loaded_libraries(self) -> list[str]:
        """Full paths of the shared libraries this process has loaded, in load order."""

    @abc.abstractmethod
    def find_library(self, name: str) -> str | None:
        """What the system's library search finds for a short name ("nvrtc"), if anything."""

    @abc.abstractmethod
    def has_pathfinder(self) -> bool:
        """Whether NVIDIA's `cuda-pathfinder` package is installed (found, not imported)."""

    @abc.abstractmethod
    def pathfinder_library(self, libname: str) -> str | None:
        """Where NVIDIA's `cuda-pathfinder` package (when installed) finds a library
        ("nvrtc"), None when it is not installed or finds nothing."""

    @abc.abstractmethod
    def long_paths_enabled(self) -> bool | None:
        """Windows: whether paths beyond 260 characters work without the `\\\\?\\`
        prefix (the LongPathsEnabled registry value; absent counts as off). None on
        other systems, and when the registry cannot be read."""

    @abc.abstractmethod
    def add_dll_directory(self, folder: str) -> None:
        """Windows: let DLLs loaded later find their dependencies in `folder`. No-op elsewhere."""

    @abc.abstractmethod
    def load_library(self, path: str) -> Any:
        """Load a shared library by full path or bare name; raise OSError when it fails."""


class HostPlatform(Platform):
    """The machine this process runs on."""

    def __init__(self):
        if sys.platform == "win32":
            self.name = "windows"
        elif sys.platform.startswith("linux"):
            self.name = "linux"
        else:
            self.name = sys.platform
        self._dll_dirs: dict[str, Any] = {}
        self._lock = threading.Lock()

    def getenv(self, name: str) -> str | None:
        return os.environ.get(name) or None

    def env_names(self) -> list[str]:
        return list(os.environ)

    def executable(self) -> str:
        return sys.executable

    def prefix(self) -> str:
        return sys.prefix

    def sys_path(self) -> list[str]:
        return list(sys.path)

    def site_dirs(self) -> list[str]:
        found = []
        # Embedded Pythons run without `site` having been set up; these calls
        # still answer from sys.prefix, and may fail on unusual builds.
        try:
            found.extend(site.getsitepackages())
        except AttributeError:
            pass
        try:
            found.append(site.getusersitepackages())
        except AttributeError:
            pass
        return found

    def home(self) -> str:
        return os.path.expanduser("~")

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def list_dir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []

    def read_text(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as file:
                return file.read()
        except OSError:
            return None

    def realpath(self, path: str) -> str:
        return os.path.realpath(path)

    def loaded_libraries(self) -> list[str]:
        if self.is_windows:
            return _windows_loaded_modules()
        maps = self.read_text("/proc/self/maps")
        return _paths_in_proc_maps(maps) if maps else []

    def find_library(self, name: str) -> str | None:
        return ctypes.util.find_library(name)

    def has_pathfinder(self) -> bool:
        try:
            return importlib.util.find_spec("cuda.pathfinder") is not None
        except (ImportError, ValueError):
            return False

    def pathfinder_library(self, libname: str) -> str | None:
        try:
            from cuda.pathfinder import load_nvidia_dynamic_lib
        except ImportError:
            return None
        # It loads the library to resolve it; any failure only means it found nothing usable.
        try:
            return load_nvidia_dynamic_lib(libname).abs_path
        except Exception:
            return None

    def long_paths_enabled(self) -> bool | None:
        if not self.is_windows:
            return None
        import winreg

        try:
            with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, LONG_PATHS_KEY) as key:
                value, _ = winreg.QueryValueEx(key, LONG_PATHS_VALUE)
        except FileNotFoundError:
            return False  # never set: Windows keeps the 260-character limit
        except OSError:
            return None
        return value == 1

    def add_dll_directory(self, folder: str) -> None:
        if not self.is_windows:
            return
        key = ntpath.normcase(ntpath.normpath(folder))
        with self._lock:
            if key not in self._dll_dirs:
                # Kept so the directory stays registered: closing the handle removes it.
                self._dll_dirs[key] = os.add_dll_directory(folder)

    def load_library(self, path: str) -> Any:
        return ctypes.CDLL(path)


def _paths_in_proc_maps(maps: str) -> list[str]:
    """Unique file paths of /proc/self/maps lines, in order of first mapping."""
    seen: dict[str, None] = {}
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            seen.setdefault(fields[5].removesuffix(" (deleted)"), None)
    return list(seen)


def _windows_loaded_modules() -> list[str]:
    """Full paths of the modules loaded in this process (kernel32 K32EnumProcessModules)."""
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    current_process = kernel32.GetCurrentProcess
    current_process.argtypes = []
    current_process.restype = ctypes.c_void_p
    enum_modules = kernel32.K32EnumProcessModules
    enum_modules.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint32,
                             ctypes.POINTER(ctypes.c_uint32)]
    enum_modules.restype = ctypes.c_int32
    module_file_name = kernel32.GetModuleFileNameW
    module_file_name.argtypes = [ctypes.c_void_p, ctypes.c_wchar_p, ctypes.c_uint32]
    module_file_name.restype = ctypes.c_uint32

    process = current_process()
    count = 512
    while True:
        handles = (ctypes.c_void_p * count)()
        needed = ctypes.c_uint32()
        if not enum_modules(process, handles, ctypes.sizeof(handles), ctypes.byref(needed)):
            return []
        if needed.value <= ctypes.sizeof(handles):
            break
        count = needed.value // ctypes.sizeof(ctypes.c_void_p) + 64
    paths = []
    buffer = ctypes.create_unicode_buffer(32768)
    for handle in handles[: needed.value // ctypes.sizeof(ctypes.c_void_p)]:
        if handle and module_file_name(handle, buffer, len(buffer)):
            paths.append(buffer.value)
    return paths


_host: HostPlatform | None = None
_host_lock = threading.Lock()


def host() -> HostPlatform:
    """The platform this process runs on (one object per process)."""
    global _host
    with _host_lock:
        if _host is None:
            _host = HostPlatform()
        return _host


def site_packages_dirs(platform: Platform) -> list[str]:
    """Every folder where this Python's packages may be installed, existing ones
    only, most specific first: `site`'s answer, site-packages folders on
    `sys.path`, and for embedded Pythons (ComfyUI portable's `python_embeded`,
    FramePack's `system\\python`) the entries of the `._pth` file beside the
    executable and `<executable's folder>/Lib/site-packages`, which such a
    Python may not list until pip has been bootstrapped."""
    path = platform.path
    candidates: list[str] = list(platform.site_dirs())
    candidates += [entry for entry in platform.sys_path()
                   if path.basename(path.normpath(entry or ".")).lower() in ("site-packages", "dist-packages")]
    exe_dir = path.dirname(platform.executable())
    if platform.is_windows:
        for name in platform.list_dir(exe_dir):
            if name.lower().endswith("._pth"):
                candidates += _pth_entries(platform, path.join(exe_dir, name))
        candidates.append(path.join(exe_dir, "Lib", "site-packages"))
        candidates.append(path.join(platform.prefix(), "Lib", "site-packages"))
    return [folder for folder in unique_paths(platform, candidates) if platform.is_dir(folder)]


def _pth_entries(platform: Platform, pth_file: str) -> list[str]:
    """The folders a `._pth` file puts on sys.path, resolved against its folder."""
    text = platform.read_text(pth_file) or ""
    base = platform.path.dirname(pth_file)
    entries = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or line.startswith("import "):
            continue
        entries.append(platform.path.normpath(platform.path.join(base, line)))
    return entries


def unique_paths(platform: Platform, paths: Iterable[str]) -> list[str]:
    """The paths without repeats, first occurrence kept; compared the way the OS
    compares them (case-insensitively on Windows, after normalisation)."""
    seen: set[str] = set()
    kept = []
    for entry in paths:
        if not entry:
            continue
        key = platform.path.normcase(platform.path.normpath(entry))
        if key not in seen:
            seen.add(key)
            kept.append(entry)
    return kept


def user_cache_dir(platform: Platform) -> str:
    """tritone's default cache folder: `%LOCALAPPDATA%\\tritone\\cache` on Windows,
    `$XDG_CACHE_HOME/tritone` or `~/.cache/tritone` elsewhere."""
    path = platform.path
    if platform.is_windows:
        base = platform.getenv("LOCALAPPDATA") or path.join(platform.home(), "AppData", "Local")
        return path.join(base, "tritone", "cache")
    base = platform.getenv("XDG_CACHE_HOME") or path.join(platform.home(), ".cache")
    return path.join(base, "tritone")


class SimulatedPlatform(Platform):
    """An operating system described by data, for tests.

    `files` maps each file's path to its text (or None for a binary); folders
    exist as the parents of files plus those listed in `dirs`. `libraries` maps
    a path or bare name to the object `load_library` returns for it; anything
    else fails to load with OSError. `system_libraries` and `pathfinder` map
    short names to what `find_library` and `pathfinder_library` answer.
    `long_paths` is what `long_paths_enabled` answers on a simulated Windows
    (other systems answer None). Loads and DLL folders added are recorded in
    `loads` and `dll_dirs`.
    """

    def __init__(self, name: str, *, files: Mapping[str, str | None] = (), dirs: Iterable[str] = (),
                 env: Mapping[str, str] = (), executable: str = "", prefix: str = "",
                 sys_path: Iterable[str] = (), site_dirs: Iterable[str] = (), home: str = "",
                 loaded: Iterable[str] = (), system_libraries: Mapping[str, str] = (),
                 pathfinder: Mapping[str, str] = (), libraries: Mapping[str, Any] = (),
                 long_paths: bool | None = None):
        self.name = name
        self._files = {self._key(path): text for path, text in dict(files).items()}
        self._file_names = {self._key(path): path for path in dict(files)}
        self._dirs: set[str] = set()
        for folder in [*dirs, *(self.path.dirname(path) for path in dict(files))]:
            while folder and self._key(folder) not in self._dirs:
                self._dirs.add(self._key(folder))
                parent = self.path.dirname(folder)
                folder = parent if parent != folder else ""
        self._env = dict(env)
        self._executable = executable
        self._prefix = prefix or self.path.dirname(executable)
        self._sys_path = list(sys_path)
        self._site_dirs = list(site_dirs)
        self._home = home
        self._loaded = list(loaded)
        self._system_libraries = dict(system_libraries)
        self._pathfinder = dict(pathfinder)
        self._libraries = {self._key(path): lib for path, lib in dict(libraries).items()}
        self._long_paths = long_paths
        self.loads: list[str] = []
        self.dll_dirs: list[str] = []

    def _key(self, path: str) -> str:
        return self.path.normcase(self.path.normpath(path))

    def getenv(self, name: str) -> str | None:
        if self.is_windows:
            name = next((key for key in self._env if key.upper() == name.upper()), name)
        return self._env.get(name) or None

    def env_names(self) -> list[str]:
        return list(self._env)

    def executable(self) -> str:
        return self._executable

    def prefix(self) -> str:
        return self._prefix

    def sys_path(self) -> list[str]:
        return list(self._sys_path)

    def site_dirs(self) -> list[str]:
        return list(self._site_dirs)

    def home(self) -> str:
        return self._home

    def is_file(self, path: str) -> bool:
        return self._key(path) in self._files

    def is_dir(self, path: str) -> bool:
        return self._key(path) in self._dirs

    def list_dir(self, path: str) -> list[str]:
        folder = self._key(path)
        names = {self.path.basename(original) for key, original in self._file_names.items()
                 if self.path.dirname(key) == folder}
        names |= {self.path.basename(key) for key in self._dirs if self.path.dirname(key) == folder and key != folder}
        return sorted(names)

    def read_text(self, path: str) -> str | None:
        return self._files.get(self._key(path))

    def realpath(self, path: str) -> str:
        return path

    def loaded_libraries(self) -> list[str]:
        return list(self._loaded)

    def find_library(self, name: str) -> str | None:
        return self._system_libraries.get(name)

    def has_pathfinder(self) -> bool:
        return bool(self._pathfinder)

    def pathfinder_library(self, libname: str) -> str | None:
        return self._pathfinder.get(libname)

    def long_paths_enabled(self) -> bool | None:
        return self._long_paths if self.is_windows else None

    def add_dll_directory(self, folder: str) -> None:
        if self.is_windows:
            self.dll_dirs.append(folder)

    def load_library(self, path: str) -> Any:
        self.loads.append(path)
        library = self._libraries.get(self._key(path))
        if library is None:
            raise OSError(f"cannot load {path}: simulated library absent")
        return library


class SimulatedFunction:
    """A stand-in for a ctypes foreign function: calls `implementation`, records
    every call's arguments in `calls`, and accepts `argtypes`/`restype`."""

    def __init__(self, name: str, implementation: Callable[..., Any]):
        self.name = name
        self.implementation = implementation
        self.calls: list[tuple] = []
        self.argtypes: Any = None
        self.restype: Any = None

    def __call__(self, *args):
        self.calls.append(args)
        return self.implementation(*args)


class SimulatedLibrary:
    """A stand-in for a loaded shared library: attribute access gives the
    `SimulatedFunction` of that name, AttributeError for a missing symbol as ctypes does."""

    def __init__(self, functions: Mapping[str, Callable[..., Any]]):
        self.functions = {name: SimulatedFunction(name, impl) for name, impl in functions.items()}

    def __getattr__(self, name: str) -> SimulatedFunction:
        functions = self.__dict__.get("functions", {})
        if name not in functions:
            raise AttributeError(f"undefined symbol: {name}")
        return functions[name]

    @staticmethod
    def target(argument: Any) -> Any:
        """The ctypes object behind an argument passed as `ctypes.byref(x)`, or the argument itself."""
        return getattr(argument, "_obj", argument)
