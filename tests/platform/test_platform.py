"""tritone.platform: the host's answers, and a simulated Windows layout answering the same questions."""

from __future__ import annotations

import ctypes
import os
import sys

import pytest

from tritone import platform
from tritone.platform import SimulatedLibrary, SimulatedPlatform

COMFY = "C:\\ComfyUI_windows_portable\\python_embeded"


def comfy_portable(**extra) -> SimulatedPlatform:
    """ComfyUI portable: an embedded Python whose `._pth` lists its site-packages,
    run before `site` has added anything to sys.path."""
    pth = ("python312.zip\n.\n../ComfyUI\nLib/site-packages\n\n"
           "# Uncomment to run site.main() automatically\nimport site\n")
    files = {
        f"{COMFY}\\python.exe": None,
        f"{COMFY}\\python312._pth": pth,
        f"{COMFY}\\python312.zip": None,
        f"{COMFY}\\Lib\\site-packages\\torch\\__init__.py": "",
        "C:\\ComfyUI_windows_portable\\ComfyUI\\main.py": "",
    }
    files.update(extra.pop("files", {}))
    return SimulatedPlatform("windows", files=files, executable=f"{COMFY}\\python.exe",
                             sys_path=[f"{COMFY}\\python312.zip", COMFY], home="C:\\Users\\ana", **extra)


def test_embedded_python_site_packages_come_from_pth_file():
    found = platform.site_packages_dirs(comfy_portable())
    lowered = [entry.lower() for entry in found]
    assert f"{COMFY}\\Lib\\site-packages".lower() in lowered
    assert "C:\\ComfyUI_windows_portable\\ComfyUI".lower() in lowered
    assert COMFY.lower() in lowered
    # Files listed in the ._pth (the zip) and comments are not folders.
    assert not any(entry.endswith(".zip") for entry in lowered)
    assert len(lowered) == len(set(lowered))


def test_framepack_python_without_pth_still_finds_lib_site_packages():
    root = "D:\\FramePack\\system\\python"
    sim = SimulatedPlatform("windows", files={f"{root}\\python.exe": None,
                                              f"{root}\\Lib\\site-packages\\nvidia\\__init__.py": ""},
                            executable=f"{root}\\python.exe", sys_path=[root])
    assert platform.site_packages_dirs(sim) == [f"{root}\\Lib\\site-packages"]


def test_site_packages_order_and_existing_only():
    venv = "/venv/lib/python3.12/site-packages"
    user = "/home/u/.local/lib/python3.12/site-packages"
    debian = "/usr/lib/python3/dist-packages"
    sim = SimulatedPlatform("linux", dirs=[venv, user, debian], executable="/venv/bin/python", prefix="/venv",
                            site_dirs=[venv, user, "/venv/local/lib/python3.12/site-packages"],
                            sys_path=["", venv, debian])
    assert platform.site_packages_dirs(sim) == [venv, user, debian]


def test_windows_environment_and_paths_are_case_insensitive():
    sim = SimulatedPlatform("windows", env={"Path": "C:\\x", "CUDA_PATH": ""},
                            files={"C:\\Tools\\Nvrtc64_120_0.DLL": None})
    assert sim.getenv("PATH") == "C:\\x"
    assert sim.getenv("CUDA_PATH") is None
    assert sim.is_file("c:\\tools\\nvrtc64_120_0.dll")
    assert sim.is_dir("C:\\TOOLS")
    assert sim.list_dir("c:\\tools") == ["Nvrtc64_120_0.DLL"]
    assert platform.unique_paths(sim, ["C:\\A\\b", "c:/a/B", "C:\\A\\c\\..\\b", ""]) == ["C:\\A\\b"]


def test_user_cache_dir_per_platform():
    windows = SimulatedPlatform("windows", env={"LOCALAPPDATA": "C:\\Users\\ana\\AppData\\Local"})
    assert platform.user_cache_dir(windows) == "C:\\Users\\ana\\AppData\\Local\\tritone\\cache"
    windows_bare = SimulatedPlatform("windows", home="C:\\Users\\bo")
    assert platform.user_cache_dir(windows_bare) == "C:\\Users\\bo\\AppData\\Local\\tritone\\cache"
    assert platform.user_cache_dir(SimulatedPlatform("linux", env={"XDG_CACHE_HOME": "/c"}, home="/h")) == "/c/tritone"
    assert platform.user_cache_dir(SimulatedPlatform("linux", home="/h")) == "/h/.cache/tritone"


def test_proc_maps_paths_unique_in_order():
    maps = (
        "55d0c000-55d0d000 r--p 00000000 fe:00 1 /usr/bin/python3.12\n"
        "7f00-7f01 r-xp 00000000 00:00 0 \n"
        "7f01-7f02 r--p 00000000 fe:00 2 /site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12\n"
        "7f02-7f03 r-xp 00001000 fe:00 2 /site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12\n"
        "7f03-7f04 rw-p 00000000 00:00 0 [heap]\n"
        "7f04-7f05 r--p 00000000 fe:00 3 /tmp/a file with spaces.so (deleted)\n"
    )
    assert platform._paths_in_proc_maps(maps) == [
        "/usr/bin/python3.12", "/site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12", "/tmp/a file with spaces.so"]


def test_host_answers_about_this_process(tmp_path):
    host = platform.host()
    assert host is platform.host()
    assert host.executable() == sys.executable
    assert host.getenv("TRITONE_SURELY_UNSET_VARIABLE") is None
    (tmp_path / "b.txt").write_text("text")
    (tmp_path / "a").mkdir()
    assert host.list_dir(str(tmp_path)) == ["a", "b.txt"]
    assert host.list_dir(str(tmp_path / "missing")) == []
    assert host.read_text(str(tmp_path / "b.txt")) == "text"
    assert host.read_text(str(tmp_path / "missing")) is None
    assert host.is_file(str(tmp_path / "b.txt")) and not host.is_file(str(tmp_path / "a"))
    assert host.is_dir(str(tmp_path / "a")) and not host.is_dir(str(tmp_path / "b.txt"))
    if host.name == "linux":
        libc = next(path for path in host.loaded_libraries() if os.path.basename(path).startswith("libc"))
        assert host.load_library(libc).strlen(b"abcd") == 4


def test_simulated_library_records_calls_and_writes_through_byref():
    def version(major, minor):
        SimulatedLibrary.target(major).value = 12
        SimulatedLibrary.target(minor).value = 9
        return 0

    library = SimulatedLibrary({"nvrtcVersion": version})
    major, minor = ctypes.c_int32(), ctypes.c_int32()
    assert library.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0
    assert (major.value, minor.value) == (12, 9)
    assert len(library.nvrtcVersion.calls) == 1
    with pytest.raises(AttributeError, match="cuMissing"):
        library.cuMissing()


def test_simulated_loads_are_recorded_and_unknown_ones_fail():
    sim = SimulatedPlatform("windows", libraries={"C:\\x\\a.dll": "A", "nvcuda.dll": "driver"})
    assert sim.load_library("c:\\X\\A.dll") == "A"
    assert sim.load_library("nvcuda.dll") == "driver"
    with pytest.raises(OSError, match="b.dll"):
        sim.load_library("C:\\x\\b.dll")
    assert sim.loads == ["c:\\X\\A.dll", "nvcuda.dll", "C:\\x\\b.dll"]
    sim.add_dll_directory("C:\\x")
    assert sim.dll_dirs == ["C:\\x"]


class _Registry:
    """Stands for the `winreg` module: HKLM holds `values` (key path -> {name: value});
    `denied` makes every open fail the way a locked-down registry does."""

    HKEY_LOCAL_MACHINE = "HKLM"

    def __init__(self, values: dict[str, dict[str, int]], denied: bool = False):
        self.values = values
        self.denied = denied
        self.opened: list[tuple[str, str]] = []

    def OpenKey(self, root: str, path: str):
        self.opened.append((root, path))
        if self.denied:
            raise PermissionError(13, "Access is denied")
        if path not in self.values:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        registry = self

        class Key:
            def __enter__(self):
                return registry.values[path]

            def __exit__(self, *exc):
                return False

        return Key()

    def QueryValueEx(self, key: dict[str, int], name: str):
        if name not in key:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return key[name], 4  # REG_DWORD


@pytest.mark.parametrize("values, denied, expected", [
    ({platform.LONG_PATHS_KEY: {"LongPathsEnabled": 1}}, False, True),
    ({platform.LONG_PATHS_KEY: {"LongPathsEnabled": 0}}, False, False),
    ({platform.LONG_PATHS_KEY: {"NtfsDisable8dot3NameCreation": 2}}, False, False),
    ({}, False, False),
    ({platform.LONG_PATHS_KEY: {"LongPathsEnabled": 1}}, True, None),
])
def test_host_reads_long_paths_enabled_from_the_windows_registry(monkeypatch, values, denied, expected):
    registry = _Registry(values, denied)
    monkeypatch.setitem(sys.modules, "winreg", registry)
    windows_host = platform.HostPlatform()
    windows_host.name = "windows"
    assert windows_host.long_paths_enabled() is expected
    assert registry.opened == [("HKLM", "SYSTEM\\CurrentControlSet\\Control\\FileSystem")]


def test_long_paths_enabled_elsewhere_and_simulated():
    if platform.host().name != "windows":
        assert platform.host().long_paths_enabled() is None
    assert SimulatedPlatform("windows", long_paths=True).long_paths_enabled() is True
    assert SimulatedPlatform("windows", long_paths=False).long_paths_enabled() is False
    assert SimulatedPlatform("windows").long_paths_enabled() is None
    assert SimulatedPlatform("linux", long_paths=True).long_paths_enabled() is None
