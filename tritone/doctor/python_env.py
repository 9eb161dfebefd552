"""Checks of the Python that runs tritone: version and build, the kind of
installation (embedded distributions such as ComfyUI portable's
`python_embeded` and FramePack's `system\\python`, conda, venv), other Pythons
on PATH that `python`/`pip` may start instead, and a `triton.py` or `triton/`
in the current folder that `import triton` would pick up."""

from __future__ import annotations

import os
import platform as platform_module
import struct
import sys
import sysconfig
from dataclasses import dataclass

from ..platform import Platform, site_packages_dirs, unique_paths
from .report import Check, Status, pip_install, plural, quoted

SECTION = "Python"
SUPPORTED = ((3, 10), (3, 14))

# Where each known embedded distribution keeps its python.exe.
_EMBEDDED_LAYOUTS = (
    (("python_embeded",), "ComfyUI portable (python_embeded)"),
    (("system", "python"), "FramePack (system\\python)"),
)


@dataclass(frozen=True)
class PythonFacts:
    """What the running Python says about itself (the rest comes from the Platform)."""

    version: tuple[int, int, int]
    implementation: str
    pointer_bits: int
    free_threaded_build: bool
    gil_enabled: bool
    base_prefix: str
    cwd: str


def python_facts() -> PythonFacts:
    """The facts of the Python running this process."""
    gil_check = getattr(sys, "_is_gil_enabled", None)
    return PythonFacts(
        version=(sys.version_info.major, sys.version_info.minor, sys.version_info.micro),
        implementation=platform_module.python_implementation(),
        pointer_bits=struct.calcsize("P") * 8,
        free_threaded_build=bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        gil_enabled=gil_check() if gil_check is not None else True,
        base_prefix=sys.base_prefix,
        cwd=os.getcwd(),
    )


def python_checks(platform: Platform, facts: PythonFacts) -> list[Check]:
    """Version and build, installation, Pythons on PATH, shadowing `triton` modules."""
    return [_version(facts), _installation(platform, facts), _pythons_on_path(platform),
            _shadowing(platform, facts)]


def _version(facts: PythonFacts) -> Check:
    version = ".".join(map(str, facts.version))
    if facts.free_threaded_build:
        build = f"free-threaded build, GIL {'enabled' if facts.gil_enabled else 'disabled'}"
    else:
        build = "GIL build"
    summary = f"{facts.implementation} {version}, {facts.pointer_bits}-bit, {build}"
    low, high = SUPPORTED
    supported = f"{low[0]}.{low[1]} to {high[0]}.{high[1]}"
    if facts.pointer_bits != 64:
        return Check(SECTION, "version", Status.FAIL, summary + ": NVIDIA's driver and NVRTC are 64-bit only",
                     fix=f"install a 64-bit (x86-64 / AMD64) CPython {supported}")
    if facts.implementation != "CPython":
        return Check(SECTION, "version", Status.WARN, summary + ": tritone is tested on CPython only",
                     fix=f"use CPython {supported} if something fails")
    if facts.version[:2] > high:
        return Check(SECTION, "version", Status.WARN, summary + f": newer than tested ({supported})",
                     fix=f"use CPython {supported} if something fails")
    details = ()
    if facts.free_threaded_build and facts.gil_enabled:
        details = ("this free-threaded build runs with the GIL: PYTHON_GIL=1 is set, or an extension "
                   "module that does not declare free-threading support re-enabled it",)
    return Check(SECTION, "version", Status.PASS, summary, details)


def _pth_files(platform: Platform, folder: str) -> list[str]:
    return [platform.path.join(folder, name) for name in platform.list_dir(folder) if name.lower().endswith("._pth")]


def _embedded_layout(platform: Platform, exe_dir: str) -> str:
    parts = [part.lower() for part in platform.path.normpath(exe_dir).split(platform.path.sep)]
    for tail, name in _EMBEDDED_LAYOUTS:
        if tuple(parts[-len(tail):]) == tail:
            return name
    return "embedded distribution"


def _installation(platform: Platform, facts: PythonFacts) -> Check:
    path = platform.path
    executable = platform.executable()
    exe_dir = path.dirname(executable)
    prefix = platform.prefix()
    install = f"install packages with {pip_install(executable, ['<package>'])}"
    pth_files = _pth_files(platform, exe_dir) if platform.is_windows else []
    if pth_files:
        kind = _embedded_layout(platform, exe_dir)
        pth = pth_files[0]
        lines = [line.strip() for line in (platform.read_text(pth) or "").splitlines()]
        entries = {path.normcase(path.normpath(path.join(exe_dir, line))) for line in lines
                   if line and not line.startswith(("#", "import "))}
        site_folder = path.join(exe_dir, "Lib", "site-packages")
        if "import site" not in lines and path.normcase(path.normpath(site_folder)) not in entries:
            return Check(SECTION, "installation", Status.WARN,
                         f"{kind} at {exe_dir}: its {path.basename(pth)} does not put Lib\\site-packages on "
                         "sys.path, so packages installed with pip cannot be imported",
                         (f"._pth file: {pth}",),
                         fix=f"add the lines `Lib/site-packages` and `import site` to {pth}")
        return Check(SECTION, "installation", Status.PASS, f"{kind} at {exe_dir}",
                     (f"sys.path comes from {pth}, not from PYTHONPATH",
                      f"{install}: a plain `pip` installs into another Python"))
    if platform.is_dir(path.join(prefix, "conda-meta")):
        return Check(SECTION, "installation", Status.PASS, f"conda environment {prefix}", (install,))
    if path.normcase(path.normpath(prefix)) != path.normcase(path.normpath(facts.base_prefix)):
        return Check(SECTION, "installation", Status.PASS,
                     f"virtual environment {prefix} (based on {facts.base_prefix})", (install,))
    return Check(SECTION, "installation", Status.PASS, f"{executable} (prefix {prefix})", (install,))


def _python_label(platform: Platform, folder: str) -> str:
    lowered = platform.path.normcase(platform.path.normpath(folder))
    if platform.is_windows and lowered.endswith(platform.path.normcase("\\Microsoft\\WindowsApps")):
        return " (Microsoft Store alias: opens the Store unless that Python is installed)"
    if platform.path.basename(lowered) == "shims":
        return " (pyenv shim: starts whichever Python pyenv selects)"
    return ""


def _pythons_on_path(platform: Platform) -> Check:
    path = platform.path
    separator = ";" if platform.is_windows else ":"
    names = ("python.exe", "python3.exe") if platform.is_windows else ("python3", "python")
    found = []
    for folder in unique_paths(platform, (platform.getenv("PATH") or "").split(separator)):
        # One entry per folder: python.exe and python3.exe (python3 and python) there are one installation.
        present = [path.join(folder, name) for name in names if platform.is_file(path.join(folder, name))]
        if present:
            found.append(present[0])
    executable = platform.executable()
    if not found:
        return Check(SECTION, "PATH", Status.PASS, f"no Python on PATH; this one is {executable}")
    details = tuple(f"{entry}{_python_label(platform, path.dirname(entry))}" for entry in found)
    first = found[0]

    def same(one: str, other: str) -> bool:
        return path.normcase(platform.realpath(one)) == path.normcase(platform.realpath(other))

    first_is_this = same(first, executable) or same(path.dirname(first), path.dirname(executable))
    count = plural(len(found), "Python")
    if first_is_this:
        return Check(SECTION, "PATH", Status.PASS, f"{count} on PATH; the first is this one", details)
    return Check(SECTION, "PATH", Status.WARN,
                 f"{count} on PATH; `python` and `pip` start {first}, not this Python ({executable})", details,
                 fix=f"install packages with {pip_install(executable, ['<package>'])}, "
                     f"or put {quoted(path.dirname(executable))} first on PATH")


def _shadowing(platform: Platform, facts: PythonFacts) -> Check:
    """A `triton.py` or `triton/` where `import triton` looks first: the current
    folder (and the script's folder, sys.path[0]), unless that is a site-packages folder."""
    path = platform.path
    script_folder = (platform.sys_path() or [""])[0] or facts.cwd
    sites = {path.normcase(path.normpath(site)) for site in site_packages_dirs(platform)}
    shadows = []
    for folder in unique_paths(platform, [facts.cwd, script_folder]):
        if path.normcase(path.normpath(folder)) in sites:
            continue
        for candidate, exists in ((path.join(folder, "triton.py"), platform.is_file),
                                  (path.join(folder, "triton"), platform.is_dir)):
            if exists(candidate):
                shadows.append(candidate)
    if not shadows:
        return Check(SECTION, "shadowing", Status.PASS, "no triton.py or triton/ in the current folder")
    return Check(SECTION, "shadowing", Status.WARN,
                 f"{shadows[0]} shadows the installed triton: `import triton` run from here imports it",
                 tuple(shadows[1:]),
                 fix=f"rename {shadows[0]} (my_kernels.py, say) and delete its __pycache__ copies")
