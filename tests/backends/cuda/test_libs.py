"""Finding the driver and NVRTC: Windows and Linux layouts simulated through
tritone.platform (pip wheels, torch\\lib, CUDA_PATH, conda, embedded Pythons),
each giving the right candidate order, choice and messages."""

from __future__ import annotations

import pickle

import pytest

from tritone.backends.cuda.bindings import libs
from tritone.backends.cuda.bindings.libs import Candidate, LibraryNotFound, find_driver, find_nvrtc, nvrtc_search
from tritone.platform import SimulatedLibrary, SimulatedPlatform, host

# What nvrtcGetSupportedArchs answers in each release.
ARCHS = {
    (11, 8): (35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90),
    (12, 4): (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90),
    (12, 8): (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120),
    (12, 9): (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121),
    (13, 0): (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121),
}
COMPILE_FUNCTIONS = ("nvrtcCreateProgram", "nvrtcDestroyProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize",
                     "nvrtcGetProgramLog", "nvrtcGetPTXSize", "nvrtcGetPTX", "nvrtcGetCUBINSize", "nvrtcGetCUBIN")


def simulated_nvrtc(version: tuple[int, int]) -> SimulatedLibrary:
    """An NVRTC library that answers its version and architectures (compiling is not simulated)."""
    archs = ARCHS[version]

    def nvrtc_version(major, minor):
        SimulatedLibrary.target(major).value, SimulatedLibrary.target(minor).value = version
        return 0

    def count(out):
        SimulatedLibrary.target(out).value = len(archs)
        return 0

    def supported(out):
        for index, arch in enumerate(archs):
            out[index] = arch
        return 0

    functions = {name: (lambda *arguments: 11) for name in COMPILE_FUNCTIONS}
    functions.update(nvrtcVersion=nvrtc_version, nvrtcGetNumSupportedArchs=count, nvrtcGetSupportedArchs=supported,
                     nvrtcGetErrorString=lambda code: b"NVRTC_ERROR_INTERNAL_ERROR")
    return SimulatedLibrary(functions)


# ---------------------------------------------------------------- a Windows machine with ComfyUI portable

PORTABLE = "C:\\ComfyUI_windows_portable"
EMBEDDED = f"{PORTABLE}\\python_embeded"
SITE = f"{EMBEDDED}\\Lib\\site-packages"
TOOLKITS = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
PIP12 = f"{SITE}\\nvidia\\cuda_nvrtc\\bin\\nvrtc64_120_0.dll"
PIP13 = f"{SITE}\\nvidia\\cu13\\bin\\x86_64\\nvrtc64_130_0.dll"
TORCH = f"{SITE}\\torch\\lib\\nvrtc64_120_0.dll"
CUDA118 = f"{TOOLKITS}\\v11.8\\bin\\nvrtc64_112_0.dll"
CUDA124 = f"{TOOLKITS}\\v12.4\\bin\\nvrtc64_120_0.dll"
CUDA128 = f"{TOOLKITS}\\v12.8\\bin\\nvrtc64_120_0.dll"
CUDA130 = f"{TOOLKITS}\\v13.0\\bin\\x64\\nvrtc64_130_0.dll"
CONDA_ENV = "C:\\Users\\ana\\miniconda3\\envs\\ml"
CONDA = f"{CONDA_ENV}\\Library\\bin\\nvrtc64_120_0.dll"
ON_PATH = "C:\\Tools\\cuda\\nvrtc64_112_0.dll"


def windows(nvrtcs: dict[str, tuple[int, int]], *, env: dict[str, str] | None = None, loaded=(),
            executable: str = f"{EMBEDDED}\\python.exe", dirs=(), libraries=None, pathfinder=None) -> SimulatedPlatform:
    """A Windows machine holding NVRTC DLLs of the given versions, each with its
    nvrtc-builtins DLL beside it (and an .alt.dll beside the pip one), running the
    ComfyUI portable embedded Python unless told otherwise."""
    files: dict[str, str | None] = {
        f"{EMBEDDED}\\python.exe": None,
        f"{EMBEDDED}\\python312._pth": "python312.zip\n.\n../ComfyUI\nLib/site-packages\nimport site\n",
        f"{EMBEDDED}\\python312.zip": None,
        f"{SITE}\\torch\\__init__.py": "",
        f"{SITE}\\nvidia\\cuda_nvrtc\\bin\\nvrtc64_120_0.alt.dll": None,
    }
    for path, (major, minor) in nvrtcs.items():
        files[path] = None
        files[path.rsplit("\\", 1)[0] + f"\\nvrtc-builtins64_{major}{minor}.dll"] = None
    environment = {"ProgramFiles": "C:\\Program Files", "Path": "C:\\Windows\\system32;C:\\Windows"}
    environment.update(env or {})
    return SimulatedPlatform(
        "windows", files=files, dirs=dirs, env=environment, executable=executable,
        sys_path=[f"{EMBEDDED}\\python312.zip", EMBEDDED], home="C:\\Users\\ana", loaded=loaded,
        pathfinder=pathfinder or {},
        libraries={**{path: simulated_nvrtc(version) for path, version in nvrtcs.items()}, **(libraries or {})})


def sources(search) -> list[tuple[str, str]]:
    return [(candidate.path, candidate.source) for candidate in search.candidates]


def test_windows_candidate_order_with_everything_installed():
    sim = windows({PIP12: (12, 9), PIP13: (13, 0), TORCH: (12, 8), CUDA118: (11, 8), CUDA124: (12, 4),
                   CUDA130: (13, 0), CONDA: (12, 4), ON_PATH: (11, 8)},
                  env={"CUDA_PATH": f"{TOOLKITS}\\v11.8", "CUDA_PATH_V11_8": f"{TOOLKITS}\\v11.8",
                       "CUDA_PATH_V12_4": f"{TOOLKITS}\\v12.4", "CUDA_PATH_V13_0": f"{TOOLKITS}\\v13.0",
                       "CONDA_PREFIX": CONDA_ENV, "Path": "C:\\Windows\\system32;C:\\Tools\\cuda;C:\\tools\\CUDA\\"})
    assert sources(nvrtc_search(sim)) == [
        (PIP12, "pip nvidia-cuda-nvrtc-cu12"),
        (PIP13, "pip nvidia-cuda-nvrtc (CUDA 13)"),
        (TORCH, "torch/lib"),
        (CUDA118, "CUDA_PATH"),
        (CUDA130, "CUDA_PATH_V13_0"),
        (CUDA124, "CUDA_PATH_V12_4"),
        (CONDA, "CONDA_PREFIX"),
        (ON_PATH, "PATH"),
        ("nvrtc64_130_0.dll", "system DLL search"),
        ("nvrtc64_120_0.dll", "system DLL search"),
        ("nvrtc64_112_0.dll", "system DLL search"),
    ]
    assert not sim.loads, "searching must not load anything"


def test_windows_default_choice_is_the_cu12_wheel_with_its_folder_added():
    sim = windows({PIP12: (12, 9), PIP13: (13, 0), TORCH: (12, 8), CUDA124: (12, 4)},
                  env={"CUDA_PATH": f"{TOOLKITS}\\v12.4"})
    choice = find_nvrtc(sim, 89, driver_version=13000)
    assert choice.candidate == Candidate(PIP12, "pip nvidia-cuda-nvrtc-cu12")
    assert choice.version == (12, 9) and choice.target_arch == 89 and not choice.ptx_fallback
    assert sim.loads == [PIP12], "the first usable candidate ends the search"
    assert sim.dll_dirs == [f"{SITE}\\nvidia\\cuda_nvrtc\\bin"]
    assert "knows sm_89" in choice.reason and PIP12 in choice.reason
    assert [probe.verdict for probe in choice.probes] == ["chosen"]


def test_alt_dll_is_never_a_candidate():
    sim = windows({PIP12: (12, 9)})
    assert not any(".alt." in candidate.path for candidate in nvrtc_search(sim).candidates)


def test_cuda_path_too_old_for_the_gpu_is_passed_over():
    # An RTX 50xx (sm_120) with a system CUDA 11.8 in CUDA_PATH and torch built with 12.4.
    sim = windows({TORCH: (12, 4), CUDA118: (11, 8), CUDA128: (12, 8)},
                  env={"CUDA_PATH": f"{TOOLKITS}\\v11.8", "CUDA_PATH_V12_8": f"{TOOLKITS}\\v12.8"})
    choice = find_nvrtc(sim, 120, driver_version=12080)
    assert choice.candidate == Candidate(CUDA128, "CUDA_PATH_V12_8")
    assert [(probe.candidate.path, probe.verdict) for probe in choice.probes] == [
        (TORCH, "does not know sm_120"), (CUDA118, "does not know sm_120"), (CUDA128, "chosen")]
    assert sim.dll_dirs == [f"{SITE}\\torch\\lib", f"{TOOLKITS}\\v11.8\\bin", f"{TOOLKITS}\\v12.8\\bin"]


def test_nvrtc13_is_skipped_for_pascal():
    sim = windows({PIP12: (12, 9), CUDA130: (13, 0)}, loaded=[CUDA130])
    choice = find_nvrtc(sim, 61, driver_version=13000)
    assert choice.candidate == Candidate(PIP12, "pip nvidia-cuda-nvrtc-cu12")
    assert choice.probes[0].candidate == Candidate(CUDA130, "already loaded by this process")
    assert choice.probes[0].verdict == "does not know sm_61"
    # The same process on a Hopper GPU keeps the NVRTC 13 it already has.
    assert find_nvrtc(sim, 90, driver_version=13000).candidate.path == CUDA130


def test_nvrtc13_alone_cannot_compile_for_pascal_and_says_what_to_install():
    sim = windows({PIP13: (13, 0)})
    with pytest.raises(LibraryNotFound) as caught:
        find_nvrtc(sim, 61, driver_version=13000)
    message = str(caught.value)
    assert "No usable NVRTC (NVIDIA's run-time CUDA compiler) that can compile for sm_61" in message
    assert f"{PIP13} [pip nvidia-cuda-nvrtc (CUDA 13)]: NVRTC 13.0, sm_75..sm_121: does not know sm_61" in message
    assert f"Fix: {EMBEDDED}\\python.exe -m pip install nvidia-cuda-nvrtc-cu12" in message


def test_package_for_each_architecture_is_one_whose_nvrtc_knows_it():
    packages = {libs.PIP_NVRTC_12: ARCHS[(12, 9)], libs.PIP_NVRTC_13: ARCHS[(13, 0)]}
    for arch in sorted({*ARCHS[(12, 9)], *ARCHS[(13, 0)]}):
        assert arch in packages[libs.package_for(arch)], arch
    # Pascal and Volta only in CUDA 12; None (no GPU) gets CUDA 12's, the default dependency.
    assert libs.package_for(61) == libs.package_for(70) == libs.package_for(None) == "nvidia-cuda-nvrtc-cu12"
    assert libs.package_for(121) == "nvidia-cuda-nvrtc-cu12"
    # Jetson Thor is sm_110 from CUDA 13 on (sm_101 before): only NVRTC 13 knows it.
    assert libs.package_for(110) == libs.package_for(88) == libs.package_for(130) == "nvidia-cuda-nvrtc"
    assert libs.ARCHS_OF_NVRTC_12 == set(ARCHS[(12, 9)])


def test_archs_of_nvrtc_12_are_what_the_installed_nvrtc_12_9_answers():
    try:
        choice = find_nvrtc(host())
    except LibraryNotFound:
        pytest.skip("no NVRTC on this machine")
    if choice.version != (12, 9):
        pytest.skip(f"the NVRTC here is {choice.nvrtc.version_text}, not 12.9")
    assert set(choice.nvrtc.supported_archs) == libs.ARCHS_OF_NVRTC_12


def test_gpu_newer_than_nvrtc_12_is_told_to_install_cuda13s():
    sim = windows({PIP12: (12, 9)})
    choice = find_nvrtc(sim, 130, driver_version=13000)
    assert choice.ptx_fallback and choice.target_arch == 121
    assert choice.reason.endswith(f"{EMBEDDED}\\python.exe -m pip install nvidia-cuda-nvrtc   "
                                  "(or: pip install nvidia-cuda-nvrtc)")
    with pytest.raises(LibraryNotFound) as caught:
        find_nvrtc(windows({}), 130, driver_version=13000)
    assert f"Fix: {EMBEDDED}\\python.exe -m pip install nvidia-cuda-nvrtc   (or:" in str(caught.value)


def test_nvrtc13_needs_a_cuda13_driver():
    sim = windows({PIP13: (13, 0)})
    assert find_nvrtc(sim, 90, driver_version=13000).candidate.path == PIP13
    with pytest.raises(LibraryNotFound) as caught:
        find_nvrtc(sim, 90, driver_version=12080)
    message = str(caught.value)
    assert "needs a driver for CUDA 13 (R580 or newer); this driver supports CUDA 12.8" in message
    assert "update the NVIDIA driver" in message
    assert "pip install nvidia-cuda-nvrtc-cu12" in message


def test_loaded_nvrtc13_is_passed_over_when_the_driver_is_older():
    sim = windows({PIP12: (12, 9), TORCH: (13, 0)}, loaded=[TORCH])
    choice = find_nvrtc(sim, 90, driver_version=12060)
    assert choice.candidate.path == PIP12
    assert "needs a driver for CUDA 13" in choice.probes[0].verdict


def test_conda_library_bin_with_and_without_conda_prefix():
    files = {CONDA: (12, 4)}
    activated = windows(files, env={"CONDA_PREFIX": CONDA_ENV})
    assert find_nvrtc(activated, 86).candidate == Candidate(CONDA, "CONDA_PREFIX")
    # python.exe of the env run directly: no CONDA_PREFIX, but conda-meta marks the env.
    direct = windows(files, executable=f"{CONDA_ENV}\\python.exe", dirs=[f"{CONDA_ENV}\\conda-meta"])
    assert find_nvrtc(direct, 86).candidate == Candidate(CONDA, "conda env of this Python")


def test_cuda_path_versions_newest_first_and_toolkit_folders():
    sim = windows({CUDA118: (11, 8), CUDA124: (12, 4), CUDA128: (12, 8)},
                  env={"CUDA_PATH_V11_8": f"{TOOLKITS}\\v11.8", "CUDA_PATH_V12_4": f"{TOOLKITS}\\v12.4"})
    assert sources(nvrtc_search(sim))[:3] == [
        (CUDA124, "CUDA_PATH_V12_4"), (CUDA118, "CUDA_PATH_V11_8"), (CUDA128, "CUDA toolkit")]


def test_ptx_fallback_when_no_nvrtc_knows_the_gpu():
    sim = windows({CUDA124: (12, 4), CUDA118: (11, 8)},
                  env={"CUDA_PATH": f"{TOOLKITS}\\v12.4", "CUDA_PATH_V11_8": f"{TOOLKITS}\\v11.8"})
    choice = find_nvrtc(sim, 120, driver_version=12080)
    assert choice.ptx_fallback and choice.target_arch == 90
    assert choice.candidate.path == CUDA124
    assert "compiles PTX for compute_90 and the driver JITs it for sm_120" in choice.reason
    # A 12.2 driver cannot JIT 12.4's PTX, but can 11.8's.
    older_driver = find_nvrtc(sim, 120, driver_version=12020)
    assert older_driver.ptx_fallback and older_driver.candidate.path == CUDA118


def test_missing_nvrtc_lists_every_place_and_the_pip_fix():
    sim = windows({}, env={"Path": "C:\\Windows\\system32;C:\\Windows;C:\\Tools"})
    with pytest.raises(LibraryNotFound) as caught:
        find_nvrtc(sim, 86)
    message = str(caught.value)
    assert message.startswith("NVRTC (NVIDIA's run-time CUDA compiler) was not found.")
    for place in (
        "TRITONE_NVRTC_PATH: not set",
        "libraries this process has loaded: none is NVRTC",
        f"pip nvidia-cuda-nvrtc-cu12: {SITE}\\nvidia\\cuda_nvrtc\\bin (no NVRTC library in it)",
        f"pip nvidia-cuda-nvrtc (CUDA 13): not installed in {EMBEDDED}, {SITE}",
        f"torch/lib: {SITE}\\torch\\lib (no such folder)",
        "CUDA_PATH: not set",
        "CUDA_HOME: not set",
        f"CUDA toolkit: none installed under {TOOLKITS}",
        "conda: CONDA_PREFIX not set, this Python is not a conda env",
        "PATH: none of its 3 folders holds nvrtc64_*.dll",
        "nvrtc64_120_0.dll [system DLL search]: does not load",
        f"Fix: {EMBEDDED}\\python.exe -m pip install nvidia-cuda-nvrtc-cu12",
        "or set TRITONE_NVRTC_PATH to an NVRTC library (nvrtc64_120_0.dll) or its folder.",
    ):
        assert place in message, place
    assert caught.value.places and caught.value.probes
    copy = pickle.loads(pickle.dumps(caught.value))
    assert str(copy) == message and copy.places == caught.value.places


def test_install_hint_quotes_an_executable_path_with_spaces():
    sim = windows({}, executable="C:\\Program Files\\Python312\\python.exe")
    with pytest.raises(LibraryNotFound, match=r'Fix: "C:\\Program Files\\Python312\\python.exe" -m pip install'):
        find_nvrtc(sim, 86)


def test_override_is_the_only_candidate():
    sim = windows({PIP12: (12, 9), CUDA124: (12, 4)})
    as_file = find_nvrtc(sim, 86, override=CUDA124)
    assert as_file.candidate == Candidate(CUDA124, "TRITONE_NVRTC_PATH")
    as_folder = find_nvrtc(sim, 86, override=f"{TOOLKITS}\\v12.4\\bin")
    assert as_folder.candidate == Candidate(CUDA124, "TRITONE_NVRTC_PATH")
    assert PIP12 not in sim.loads


def test_unusable_override_is_reported_not_replaced():
    sim = windows({PIP12: (12, 9), PIP13: (13, 0)})
    with pytest.raises(LibraryNotFound) as caught:
        find_nvrtc(sim, 61, override=PIP13)
    message = str(caught.value)
    assert "does not know sm_61" in message and "point TRITONE_NVRTC_PATH at a usable NVRTC" in message
    with pytest.raises(LibraryNotFound, match=r"TRITONE_NVRTC_PATH: D:\\nowhere\\nvrtc.dll \(no such file or folder\)"):
        find_nvrtc(sim, 61, override="D:\\nowhere\\nvrtc.dll")
    assert PIP12 not in sim.loads


def test_library_that_is_not_a_recent_nvrtc():
    sim = windows({CUDA118: (11, 8)}, libraries={CUDA118: SimulatedLibrary({"nvrtcVersion": lambda a, b: 0})})
    with pytest.raises(LibraryNotFound, match=r"not an NVRTC 11.2 or newer \(undefined symbol: nvrtc"):
        find_nvrtc(sim, 86, override=CUDA118)


def test_cuda_pathfinder_answer_is_a_candidate_before_toolkits():
    sim = windows({CUDA124: (12, 4)}, env={"CUDA_PATH": f"{TOOLKITS}\\v12.4"},
                  pathfinder={"nvrtc": "D:\\wheels\\nvrtc64_120_0.dll"})
    assert sources(nvrtc_search(sim))[:2] == [("D:\\wheels\\nvrtc64_120_0.dll", "cuda-pathfinder"),
                                              (CUDA124, "CUDA_PATH")]


def _counting_pathfinder(sim: SimulatedPlatform) -> list[str]:
    asked: list[str] = []
    answer = sim.pathfinder_library
    sim.pathfinder_library = lambda libname: asked.append(libname) or answer(libname)
    return asked


def test_an_nvrtc_found_before_cuda_pathfinder_does_not_ask_it():
    # Asking cuda-pathfinder imports its package and loads libraries (tens of
    # milliseconds of a kernel's first call): a pip NVRTC, earlier in the order, is chosen without it.
    sim = windows({PIP13: (13, 0), CUDA124: (12, 4)}, env={"CUDA_PATH": f"{TOOLKITS}\\v12.4"},
                  pathfinder={"nvrtc": CUDA124})
    asked = _counting_pathfinder(sim)
    assert find_nvrtc(sim, 90).candidate.path == PIP13
    assert asked == []


def test_cuda_pathfinder_keeps_its_place_when_nothing_before_it_is_usable():
    # Only a toolkit NVRTC and pathfinder's: the quick search ends before pathfinder, so the
    # full search asks it and its answer, earlier in the order than the toolkit's, is chosen.
    wheel = "D:\\wheels\\nvrtc64_120_0.dll"
    sim = windows({CUDA124: (12, 4), wheel: (12, 8)}, env={"CUDA_PATH": f"{TOOLKITS}\\v12.4"},
                  pathfinder={"nvrtc": wheel})
    asked = _counting_pathfinder(sim)
    assert find_nvrtc(sim, 90).candidate.path == wheel
    assert asked == ["nvrtc"]
    assert "cuda-pathfinder: not asked by the quick search" in nvrtc_search(sim, system_lookup=False).places


# ---------------------------------------------------------------- Linux


LINUX_SITE = "/home/u/venv/lib/python3.12/site-packages"
LINUX_PIP12 = f"{LINUX_SITE}/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
LINUX_TOOLKIT = "/usr/local/cuda-12.4/lib64"


def linux(**extra) -> SimulatedPlatform:
    files = {
        LINUX_PIP12: None,
        f"{LINUX_SITE}/nvidia/cuda_nvrtc/lib/libnvrtc.alt.so.12": None,
        f"{LINUX_SITE}/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.alt.so.12.9": None,
        f"{LINUX_SITE}/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.9": None,
        f"{LINUX_TOOLKIT}/libnvrtc.so": None,
        f"{LINUX_TOOLKIT}/libnvrtc.so.12": None,
        f"{LINUX_TOOLKIT}/libnvrtc.so.12.4.127": None,
        "/home/u/venv/bin/python": None,
    }
    return SimulatedPlatform("linux", files=files, executable="/home/u/venv/bin/python", prefix="/home/u/venv",
                             site_dirs=[LINUX_SITE], env={"CUDA_HOME": "/usr/local/cuda-12.4"},
                             system_libraries={"nvrtc": "libnvrtc.so.12"},
                             libraries={LINUX_PIP12: simulated_nvrtc((12, 9)),
                                        f"{LINUX_TOOLKIT}/libnvrtc.so.12": simulated_nvrtc((12, 4))}, **extra)


def test_linux_candidate_order_and_names():
    assert sources(nvrtc_search(linux())) == [
        (LINUX_PIP12, "pip nvidia-cuda-nvrtc-cu12"),
        (f"{LINUX_TOOLKIT}/libnvrtc.so.12", "CUDA_HOME"),
        ("libnvrtc.so.12", "system loader (LD_LIBRARY_PATH, ld.so.cache)"),
        ("libnvrtc.so.13", "system loader (LD_LIBRARY_PATH, ld.so.cache)"),
        ("libnvrtc.so.11.2", "system loader (LD_LIBRARY_PATH, ld.so.cache)"),
    ]


def test_linux_loads_builtins_beside_nvrtc_first():
    sim = linux()
    choice = find_nvrtc(sim, 90)
    assert choice.candidate.path == LINUX_PIP12
    assert sim.loads == [f"{LINUX_SITE}/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.9", LINUX_PIP12]
    assert sim.dll_dirs == []


def test_linux_nvrtc_loaded_by_torch_comes_first():
    loaded_copy = "/opt/torch/lib/libnvrtc-672ee683.so.11.2"
    sim = linux(loaded=["/usr/bin/python3.12", "/lib/x86_64-linux-gnu/libc.so.6", loaded_copy])
    search = nvrtc_search(sim)
    assert search.candidates[0] == Candidate(loaded_copy, "already loaded by this process")


def test_describe_reports_every_candidate_and_the_choice(monkeypatch):
    monkeypatch.delenv("TRITONE_NVRTC_PATH", raising=False)
    monkeypatch.delenv("TRITONE_LIBCUDA_PATH", raising=False)
    sim = windows({PIP12: (12, 9), CUDA124: (12, 4)}, env={"CUDA_PATH": f"{TOOLKITS}\\v12.4"},
                  libraries={"nvcuda.dll": SimulatedLibrary({})})
    report = libs.describe(86, driver_version=12080, platform=sim)
    assert report.nvrtc is not None and report.nvrtc.candidate.path == PIP12
    text = str(report)
    assert "CUDA driver: nvcuda.dll [system DLL search (System32)]" in text
    assert f"{PIP12} [pip nvidia-cuda-nvrtc-cu12]: NVRTC 12.9, sm_50..sm_121: chosen" in text
    assert f"{CUDA124} [CUDA_PATH]: NVRTC 12.4, sm_50..sm_90: usable" in text
    assert "nvrtc64_130_0.dll [system DLL search]: does not load" in text
    assert "TRITONE_NVRTC_PATH: not set" in text


def test_describe_without_any_library_never_raises(monkeypatch):
    monkeypatch.delenv("TRITONE_NVRTC_PATH", raising=False)
    monkeypatch.delenv("TRITONE_LIBCUDA_PATH", raising=False)
    report = libs.describe(86, platform=windows({}))
    assert report.driver is None and report.nvrtc is None
    text = str(report)
    assert "CUDA driver: not found" in text and "NVRTC: none usable" in text
    assert "Fix:" in text and "pip install nvidia-cuda-nvrtc-cu12" in text


# ---------------------------------------------------------------- the driver


def test_windows_driver_is_nvcuda_from_system32():
    driver_library = SimulatedLibrary({})
    found = find_driver(windows({}, libraries={"nvcuda.dll": driver_library}))
    assert (found.library, found.path, found.source) == (driver_library, "nvcuda.dll", "system DLL search (System32)")


def test_missing_windows_driver_says_to_install_it():
    with pytest.raises(LibraryNotFound) as caught:
        find_driver(windows({}))
    message = str(caught.value)
    assert "nvcuda.dll [system DLL search (System32)]: does not load" in message
    assert "install or update the NVIDIA display driver" in message
    assert "TRITONE_LIBCUDA_PATH" in message and "CPU interpreter by itself: nothing needs setting" in message


def test_linux_driver_search_wsl_and_stub():
    wsl = "/usr/lib/wsl/lib/libcuda.so.1"
    sim = SimulatedPlatform("linux", files={wsl: None}, system_libraries={"cuda": "libcuda.so"},
                            libraries={wsl: SimulatedLibrary({})})
    found = find_driver(sim)
    assert (found.path, found.source) == (wsl, "WSL driver folder")
    assert sim.loads == ["libcuda.so.1", wsl]
    assert "libcuda.so" not in [candidate.path for candidate in libs.driver_search(sim).candidates]


def test_missing_linux_driver_message():
    with pytest.raises(LibraryNotFound) as caught:
        find_driver(SimulatedPlatform("linux"))
    message = str(caught.value)
    assert "libcuda.so.1 [system loader (LD_LIBRARY_PATH, ld.so.cache)]: does not load" in message
    assert "install the NVIDIA driver" in message and "--gpus all" in message


def test_driver_override():
    custom = "/opt/driver/libcuda.so.1"
    sim = SimulatedPlatform("linux", files={custom: None}, libraries={custom: SimulatedLibrary({})})
    assert find_driver(sim, custom).source == "TRITONE_LIBCUDA_PATH"
    assert sim.loads == [custom]


class _CountingPlatform(SimulatedPlatform):
    """Counts `find_library` calls (on a real system each runs programs: tens of milliseconds)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lookups: list[str] = []

    def find_library(self, name: str) -> str | None:
        self.lookups.append(name)
        return super().find_library(name)


def test_find_library_is_asked_only_when_the_fixed_names_fail():
    pip12 = f"{LINUX_SITE}/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
    sim = _CountingPlatform("linux", files={pip12: None}, site_dirs=[LINUX_SITE],
                            system_libraries={"nvrtc": "libnvrtc.so.12.8", "cuda": "libcuda.so.1"},
                            libraries={pip12: simulated_nvrtc((12, 9)), "libcuda.so.1": SimulatedLibrary({}),
                                       "libnvrtc.so.12.8": simulated_nvrtc((12, 8))})
    assert find_nvrtc(sim, 90).candidate.path == pip12
    assert find_driver(sim).path == "libcuda.so.1"
    assert sim.lookups == []
    # Nothing usable before the system search: its find_library answer is tried too.
    sim = _CountingPlatform("linux", system_libraries={"nvrtc": "libnvrtc.so.12.8", "cuda": "libcuda.so.1.1"},
                            libraries={"libnvrtc.so.12.8": simulated_nvrtc((12, 8))})
    assert find_nvrtc(sim, 90).candidate.path == "libnvrtc.so.12.8"
    with pytest.raises(LibraryNotFound):
        find_driver(sim)
    assert sim.lookups == ["nvrtc", "cuda"]
