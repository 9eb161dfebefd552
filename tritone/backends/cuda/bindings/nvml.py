"""The NVIDIA display driver's version ("580.159.04"), through NVML.

The CUDA driver only tells which CUDA version it supports (cuDriverGetVersion:
13000); the driver release a person installs and names is NVML's
nvmlSystemGetDriverVersion. NVML is `nvml.dll` on Windows (System32 since
driver R450, `NVIDIA Corporation\\NVSMI` under Program Files before) and
`libnvidia-ml.so.1` on Linux (also in `/usr/lib/wsl/lib` on WSL). On Linux,
when NVML does not answer, the kernel module's version in
`/proc/driver/nvidia/version` is the fallback. Everything goes through
`tritone.platform`, so simulated machines answer in tests. Prototypes use
fixed-width types only, and every call's return code is checked.
"""

from __future__ import annotations

import ctypes
import re
from ctypes import c_char_p, c_int32, c_uint32
from dataclasses import dataclass
from typing import Any

from ....errors import TritonError
from ....platform import Platform

NVML_SUCCESS = 0
# NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE in nvml.h: room for any version string.
DRIVER_VERSION_BUFFER_SIZE = 80

# nvmlReturn_t is a C enum: 32 bits.
_PROTOTYPES: dict[str, tuple[list[Any], Any]] = {
    "nvmlInit_v2": ([], c_int32),
    "nvmlShutdown": ([], c_int32),
    "nvmlSystemGetDriverVersion": ([c_char_p, c_uint32], c_int32),
    "nvmlErrorString": ([c_int32], c_char_p),
}

_VERSION = re.compile(r"\d+\.\d+(\.\d+)?")


class NvmlError(TritonError):
    """NVML could not be loaded, lacks a function, or a call failed; the message says which and why."""


@dataclass(frozen=True)
class DisplayDriver:
    """The display driver's version as found: `version` ("580.159.04") or None
    when unknown, `source` saying where it came from ("NVML at nvml.dll"), and
    `problems`, one line per thing that did not answer (why the version is
    unknown, or why a fallback gave it)."""

    version: str | None
    source: str | None
    problems: tuple[str, ...] = ()


class Nvml:
    """NVML on one loaded library (what `Platform.load_library` returned, or a
    stand-in with the same functions); `path` names it in messages."""

    def __init__(self, library: Any, path: str):
        self.path = path
        self._library = library
        self._functions: dict[str, Any] = {}

    def _function(self, name: str) -> Any:
        function = self._functions.get(name)
        if function is None:
            try:
                function = getattr(self._library, name)
            except AttributeError:
                raise NvmlError(f"NVML at {self.path} has no {name}: the NVIDIA driver is too old; "
                                "update it (https://www.nvidia.com/drivers)") from None
            function.argtypes, function.restype = _PROTOTYPES[name]
            self._functions[name] = function
        return function

    def error_string(self, code: int) -> str:
        """NVML's description of a return code, or the bare code where NVML gives none."""
        try:
            text = self._function("nvmlErrorString")(code)
        except NvmlError:
            return f"NVML error {code}"
        return f"{text.decode('utf-8', 'replace')} (NVML error {code})" if text else f"NVML error {code}"

    def _call(self, name: str, *arguments: Any) -> None:
        code = self._function(name)(*arguments)
        if code != NVML_SUCCESS:
            raise NvmlError(f"{name} failed at {self.path}: {self.error_string(code)}")

    def init(self) -> None:
        """nvmlInit_v2. NVML counts initialisations; each successful one needs a `shutdown`."""
        self._call("nvmlInit_v2")

    def shutdown(self) -> None:
        """nvmlShutdown, undoing one `init`."""
        self._call("nvmlShutdown")

    def system_driver_version(self) -> str:
        """The display driver's version ("580.159.04"); NVML must be initialised."""
        buffer = ctypes.create_string_buffer(DRIVER_VERSION_BUFFER_SIZE)
        self._call("nvmlSystemGetDriverVersion", buffer, DRIVER_VERSION_BUFFER_SIZE)
        version = buffer.value.decode("utf-8", "replace").strip()
        if not version:
            raise NvmlError(f"nvmlSystemGetDriverVersion at {self.path} returned an empty version")
        return version


def nvml_candidates(platform: Platform) -> list[tuple[str, str]]:
    """Where NVML may be on `platform`, in the order tried: (path or bare name, how it is found)."""
    path = platform.path
    if platform.is_windows:
        program_files = platform.getenv("ProgramFiles") or "C:\\Program Files"
        return [("nvml.dll", "system DLL search (System32)"),
                (path.join(program_files, "NVIDIA Corporation", "NVSMI", "nvml.dll"), "NVSMI folder")]
    return [("libnvidia-ml.so.1", "system loader (LD_LIBRARY_PATH, ld.so.cache)"),
            ("/usr/lib/wsl/lib/libnvidia-ml.so.1", "WSL driver folder")]


def load_nvml(platform: Platform) -> Nvml:
    """The first NVML that loads on `platform`; raises NvmlError naming each place tried and why it failed."""
    failures = []
    for candidate, source in nvml_candidates(platform):
        if platform.path.basename(candidate) != candidate and not platform.is_file(candidate):
            failures.append(f"{candidate}: no such file")
            continue
        try:
            return Nvml(platform.load_library(candidate), candidate)
        except OSError as error:
            failures.append(f"{candidate} [{source}] does not load ({error})")
    raise NvmlError("NVML (part of the display driver) not found: " + "; ".join(failures))


def nvml_driver_version(nvml: Nvml) -> tuple[str | None, tuple[str, ...]]:
    """Ask `nvml` for the display driver's version: (the version or None, the
    problems met). A failed nvmlShutdown after a successful read is a problem
    reported beside the version, not a reason to drop it."""
    try:
        nvml.init()
    except NvmlError as error:
        return None, (str(error),)
    version = None
    problems = []
    try:
        version = nvml.system_driver_version()
    except NvmlError as error:
        problems.append(str(error))
    finally:
        try:
            nvml.shutdown()
        except NvmlError as error:
            problems.append(str(error))
    return version, tuple(problems)


def kernel_module_version(text: str) -> str | None:
    """The version in `/proc/driver/nvidia/version`'s text ("NVRM version: NVIDIA
    UNIX x86_64 Kernel Module  580.159.04  ..." or the open module's "... Kernel
    Module for x86_64  580.159.04  Release Build ..."), None when it names none."""
    for line in text.splitlines():
        if line.startswith("NVRM version:") and "Kernel Module" in line:
            after = line.split("Kernel Module", 1)[1]
            for word in after.split():
                if _VERSION.fullmatch(word):
                    return word
    return None


def display_driver(platform: Platform) -> DisplayDriver:
    """The NVIDIA display driver's version on `platform`: from NVML, else (Linux)
    from the kernel module's `/proc/driver/nvidia/version`. Never raises for a
    missing or failing NVML: the result then says why the version is unknown."""
    try:
        nvml = load_nvml(platform)
    except NvmlError as error:
        version, problems = None, (str(error),)
    else:
        version, problems = nvml_driver_version(nvml)
        if version is not None:
            return DisplayDriver(version, f"NVML at {nvml.path}", problems)
    if platform.is_windows:
        return DisplayDriver(None, None, problems)
    proc_file = "/proc/driver/nvidia/version"
    text = platform.read_text(proc_file)
    if text is None:
        return DisplayDriver(None, None, (*problems, f"{proc_file} cannot be read (no NVIDIA kernel module loaded)"))
    version = kernel_module_version(text)
    if version is None:
        first = text.splitlines()[0] if text.strip() else "(empty)"
        return DisplayDriver(None, None, (*problems, f"{proc_file} names no driver version: {first!r}"))
    return DisplayDriver(version, f"the kernel module ({proc_file})", problems)
