"""doctor's Windows branches on simulated Windows machines (ComfyUI portable,
FramePack, conda; pip cu12/cu13 wheels, torch\\lib, CUDA_PATH with several
toolkits): the right driver, GPU, NVRTC choice, CUDA_PATH verdict, Python,
triton and cache findings, each with the right message and fix."""

from __future__ import annotations

import pytest

from tests.platform._doctor_layouts import (
    CONDA_ENV,
    CONDA_NVRTC,
    CUDA118,
    CUDA124,
    CUDA128,
    EMBEDDED,
    EMBEDDED_EXE,
    FRAMEPACK,
    GTX_1080,
    H100,
    NVSMI_NVML,
    PIP12,
    PIP13,
    RTX_4090,
    RTX_5090,
    SITE,
    TOOLKITS,
    TORCH_LIB,
    windows,
)
from tritone.backends.cuda.bindings.nvml import DisplayDriver
from tritone.doctor import Status
from tritone.doctor.cache_report import CacheFacts, cache_checks
from tritone.doctor.gpu import dot_path, gpu_checks, gpu_facts, nvrtc_checks
from tritone.doctor.packages import TorchFacts, torch_checks, triton_checks, triton_facts, triton_installs
from tritone.doctor.python_env import PythonFacts, python_checks
from tritone.runtime import cache


@pytest.fixture(autouse=True)
def no_overrides(monkeypatch):
    for name in ("TRITONE_NVRTC_PATH", "TRITONE_LIBCUDA_PATH", "TRITON_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)


def by_name(checks, name):
    [check] = [check for check in checks if check.name == name]
    return check


def python(cwd: str = "C:\\Users\\ana", version=(3, 12, 8), **changes) -> PythonFacts:
    facts = dict(version=version, implementation="CPython", pointer_bits=64, free_threaded_build=False,
                 gil_enabled=True, base_prefix=EMBEDDED, cwd=cwd)
    facts.update(changes)
    return PythonFacts(**facts)


# ---------------------------------------------------------------- driver and GPUs


def test_comfyui_portable_rtx5090_driver_and_gpu():
    sim = windows({PIP12: (12, 9)}, gpus=[RTX_5090], driver_version=12080)
    facts = gpu_facts(sim)
    assert facts.driver_path == "nvcuda.dll" and facts.driver_version == 12080
    checks = gpu_checks(facts)
    driver = by_name(checks, "driver")
    assert driver.status is Status.PASS
    assert driver.summary == "nvcuda.dll [system DLL search (System32)], driver 581.57 (CUDA 12.8), 1 GPU(s)"
    assert driver.details == ("display driver 581.57 from NVML at nvml.dll",)
    assert dict(driver.data) == {"library": "nvcuda.dll", "library_source": "system DLL search (System32)",
                                 "driver_version": "581.57", "driver_version_source": "NVML at nvml.dll",
                                 "cuda_version": "12.8"}
    gpu = by_name(checks, "GPU 0")
    assert gpu.status is Status.PASS
    assert gpu.summary.startswith("NVIDIA GeForce RTX 5090, compute capability 12.0 (sm_120)")
    assert gpu.details == ("supported: Blackwell, mma.sync family; 12.x has no wgmma",)


def test_display_driver_from_the_nvsmi_folder_of_older_drivers():
    sim = windows({PIP12: (12, 9)}, nvml=NVSMI_NVML, display_version="442.19")
    facts = gpu_facts(sim)
    assert facts.display == DisplayDriver("442.19", f"NVML at {NVSMI_NVML}")
    assert "driver 442.19 (CUDA 12.8)" in by_name(gpu_checks(facts), "driver").summary


def test_display_driver_unknown_says_why_and_the_driver_check_still_passes():
    sim = windows({PIP12: (12, 9)}, nvml=None)
    driver = by_name(gpu_checks(gpu_facts(sim)), "driver")
    assert driver.status is Status.PASS
    assert driver.summary == ("nvcuda.dll [system DLL search (System32)], driver version unknown (CUDA 12.8), "
                              "1 GPU(s)")
    assert driver.details == (
        "display driver version unknown: NVML (part of the display driver) not found: nvml.dll [system DLL "
        "search (System32)] does not load (cannot load nvml.dll: simulated library absent); "
        f"{NVSMI_NVML}: no such file",)
    assert dict(driver.data)["driver_version"] is None and dict(driver.data)["cuda_version"] == "12.8"


def test_no_driver_is_a_warning_naming_nvcuda_and_the_fix():
    sim = windows({PIP12: (12, 9)}, driver=False)
    facts = gpu_facts(sim)
    driver = by_name(gpu_checks(facts), "driver")
    assert driver.status is Status.WARN
    assert "no NVIDIA driver library" in driver.summary and "CPU interpreter" in driver.summary
    assert any("nvcuda.dll" in line for line in driver.details)
    assert "install or update the NVIDIA display driver" in driver.fix and "nvcuda.dll in System32" in driver.fix
    # Without a GPU, a present NVRTC is fine and a missing one only a warning.
    assert by_name(nvrtc_checks(sim, facts), "choice").status is Status.PASS
    missing = by_name(nvrtc_checks(windows(driver=False), facts), "choice")
    assert missing.status is Status.WARN and "nvidia-cuda-nvrtc-cu12" in missing.fix


def test_driver_that_sees_no_gpu():
    facts = gpu_facts(windows({PIP12: (12, 9)}, init_code=100))
    driver = by_name(gpu_checks(facts), "driver")
    assert driver.status is Status.WARN and "sees no GPU" in driver.summary
    assert "CUDA_ERROR_NO_DEVICE" in driver.details[0]
    assert "CUDA_VISIBLE_DEVICES" in driver.fix


def test_driver_that_cannot_initialise_fails():
    facts = gpu_facts(windows({PIP12: (12, 9)}, init_code=803))
    driver = by_name(gpu_checks(facts), "driver")
    assert driver.status is Status.FAIL
    assert "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" in driver.details[0] and "reboot" in driver.fix


@pytest.mark.parametrize("capability, status, words", [
    ((5, 2), Status.FAIL, "older than tritone supports"),
    ((6, 1), Status.PASS, "Pascal, FMA dot path"),
    ((7, 0), Status.WARN, "Volta is not in tritone's target table"),
    ((7, 5), Status.PASS, "Turing, mma m16n8k8"),
    ((8, 0), Status.PASS, "mma.sync m16n8k16 with cp.async (fp8 by exact software conversion)"),
    ((8, 9), Status.PASS, "mma.sync m16n8k16 with cp.async (fp8 native)"),
    ((9, 0), Status.PASS, "Hopper, wgmma with TMA (sm_90a) and an mma.sync fallback"),
    ((10, 0), Status.PASS, "Blackwell, mma.sync family"),
    ((12, 1), Status.PASS, "12.x has no wgmma"),
    ((14, 0), Status.WARN, "newer than tritone's target table"),
])
def test_dot_path_per_compute_capability(capability, status, words):
    found, text, fix = dot_path(capability)
    assert found is status and words in text
    assert (fix is not None) == (status is Status.FAIL)


# ---------------------------------------------------------------- NVRTC choice and CUDA_PATH


def test_rtx5090_with_cuda_path_118_uses_the_cu12_wheel_and_warns_about_cuda_path():
    sim = windows({PIP12: (12, 9), TORCH_LIB: (12, 8), CUDA118: (11, 8)}, gpus=[RTX_5090],
                  env={"CUDA_PATH": f"{TOOLKITS}\\v11.8"})
    checks = nvrtc_checks(sim, gpu_facts(sim))
    choice = by_name(checks, "sm_120")
    assert choice.status is Status.PASS
    assert choice.summary == (f"NVRTC 12.9 at {PIP12} [pip nvidia-cuda-nvrtc-cu12]: first usable in tritone's "
                              "search order that knows sm_120")
    assert choice.details == (
        f"candidate: {PIP12} [pip nvidia-cuda-nvrtc-cu12]: NVRTC 12.9, sm_50..sm_121: chosen",
        f"candidate: {TORCH_LIB} [torch/lib]: NVRTC 12.8, sm_50..sm_120: usable",
        f"candidate: {CUDA118} [CUDA_PATH]: NVRTC 11.8, sm_35..sm_90: does not know sm_120",
    )
    cuda_path = by_name(checks, "CUDA_PATH")
    assert cuda_path.status is Status.WARN
    assert cuda_path.summary == (f"CUDA_PATH={TOOLKITS}\\v11.8 holds NVRTC 11.8, too old for sm_120; "
                                 f"tritone uses {PIP12}")
    assert "CUDA 12.8 or newer" in cuda_path.fix


def test_cuda_path_with_several_toolkits_picks_the_one_that_knows_the_gpu():
    sim = windows({CUDA124: (12, 4), CUDA128: (12, 8)}, gpus=[RTX_5090],
                  env={"CUDA_PATH": f"{TOOLKITS}\\v12.4", "CUDA_PATH_V12_4": f"{TOOLKITS}\\v12.4",
                       "CUDA_PATH_V12_8": f"{TOOLKITS}\\v12.8"})
    checks = nvrtc_checks(sim, gpu_facts(sim))
    assert by_name(checks, "sm_120").summary.startswith(f"NVRTC 12.8 at {CUDA128} [CUDA_PATH_V12_8]")
    assert "holds NVRTC 12.4, too old for sm_120" in by_name(checks, "CUDA_PATH").summary


def test_cuda_path_that_is_used_passes():
    sim = windows({CUDA128: (12, 8)}, gpus=[RTX_4090], env={"CUDA_PATH": f"{TOOLKITS}\\v12.8"})
    cuda_path = by_name(nvrtc_checks(sim, gpu_facts(sim)), "CUDA_PATH")
    assert cuda_path.status is Status.PASS
    assert cuda_path.summary == f"CUDA_PATH={TOOLKITS}\\v12.8: its NVRTC 12.8 is the one used"


def test_cuda_path_passed_over_for_the_wheel_is_reported_unused():
    sim = windows({PIP12: (12, 9), CUDA128: (12, 8)}, gpus=[RTX_4090], env={"CUDA_PATH": f"{TOOLKITS}\\v12.8"})
    cuda_path = by_name(nvrtc_checks(sim, gpu_facts(sim)), "CUDA_PATH")
    assert cuda_path.status is Status.WARN
    assert cuda_path.summary == f"CUDA_PATH={TOOLKITS}\\v12.8 is not used (its NVRTC: usable); tritone uses {PIP12}"
    assert "TRITONE_NVRTC_PATH" in cuda_path.fix


def test_cuda_path_without_nvrtc_and_unset():
    sim = windows({PIP12: (12, 9)}, env={"CUDA_PATH": f"{TOOLKITS}\\v12.8"}, dirs=[f"{TOOLKITS}\\v12.8\\bin"])
    assert "holds no NVRTC library" in by_name(nvrtc_checks(sim, gpu_facts(sim)), "CUDA_PATH").summary
    unset = by_name(nvrtc_checks(windows({PIP12: (12, 9)}), gpu_facts(windows({PIP12: (12, 9)}))), "CUDA_PATH")
    assert unset.status is Status.PASS and unset.summary.startswith("not set")


def test_cu13_wheel_alone_cannot_compile_for_pascal():
    sim = windows({PIP13: (13, 0)}, gpus=[GTX_1080], driver_version=13000)
    facts = gpu_facts(sim)
    assert by_name(gpu_checks(facts), "GPU 0").details == (
        "supported: Pascal, FMA dot path (bf16 and fp8 emulated in software)",)
    choice = by_name(nvrtc_checks(sim, facts), "sm_61")
    assert choice.status is Status.FAIL
    assert choice.summary == "no usable NVRTC for sm_61: kernels cannot be compiled for the GPU"
    assert f"candidate: {PIP13} [pip nvidia-cuda-nvrtc (CUDA 13)]: NVRTC 13.0, sm_75..sm_121: does not know sm_61" \
        in choice.details
    assert choice.fix.startswith(f"{EMBEDDED_EXE} -m pip install nvidia-cuda-nvrtc-cu12")


def test_cu13_wheel_with_an_older_driver_says_to_update_the_driver():
    sim = windows({PIP13: (13, 0)}, gpus=[H100], driver_version=12080)
    choice = by_name(nvrtc_checks(sim, gpu_facts(sim)), "sm_90")
    assert choice.status is Status.FAIL
    assert any("needs a driver for CUDA 13 (R580 or newer)" in line for line in choice.details)
    assert "update the NVIDIA driver" in choice.fix


def test_nvrtc_too_old_for_the_gpu_falls_back_to_ptx_with_a_warning():
    sim = windows({CUDA124: (12, 4)}, gpus=[RTX_5090], env={"CUDA_PATH": f"{TOOLKITS}\\v12.4"})
    choice = by_name(nvrtc_checks(sim, gpu_facts(sim)), "sm_120")
    assert choice.status is Status.WARN
    assert choice.summary.startswith(f"no NVRTC found knows sm_120: NVRTC 12.4 at {CUDA124} [CUDA_PATH] compiles "
                                     "PTX for compute_90 and the driver JITs it")
    assert choice.fix == f"install an NVRTC that knows sm_120: {EMBEDDED_EXE} -m pip install nvidia-cuda-nvrtc-cu12"


def test_gpu_newer_than_nvrtc_12_is_told_to_install_the_cuda13_wheel():
    future = ("NVIDIA GPU of a generation after Blackwell", (13, 0))
    sim = windows({PIP12: (12, 9)}, gpus=[future], driver_version=13000)
    checks = nvrtc_checks(sim, gpu_facts(sim))
    choice = by_name(checks, "sm_130")
    assert choice.status is Status.WARN and "compiles PTX for compute_121" in choice.summary
    assert choice.fix == f"install an NVRTC that knows sm_130: {EMBEDDED_EXE} -m pip install nvidia-cuda-nvrtc"
    missing = by_name(nvrtc_checks(windows(gpus=[future], driver_version=13000),
                                   gpu_facts(windows(gpus=[future], driver_version=13000))), "sm_130")
    assert missing.status is Status.FAIL
    assert f"{EMBEDDED_EXE} -m pip install nvidia-cuda-nvrtc   (or: pip install nvidia-cuda-nvrtc)" in missing.fix


def test_two_gpus_of_different_generations_get_one_choice_each():
    sim = windows({PIP12: (12, 9)}, gpus=[RTX_5090, GTX_1080])
    names = [check.name for check in nvrtc_checks(sim, gpu_facts(sim))]
    assert names == ["sm_61", "sm_120", "CUDA_PATH"]


def test_conda_library_bin():
    sim = windows({CONDA_NVRTC: (12, 4)}, executable=f"{CONDA_ENV}\\python.exe", dirs=[f"{CONDA_ENV}\\conda-meta"],
                  sys_path=[CONDA_ENV])
    choice = by_name(nvrtc_checks(sim, gpu_facts(sim)), "sm_89")
    assert choice.status is Status.PASS
    assert choice.summary.startswith(f"NVRTC 12.4 at {CONDA_NVRTC} [conda env of this Python]")
    installation = by_name(python_checks(sim, python(base_prefix="C:\\Users\\ana\\miniconda3")), "installation")
    assert installation.summary == f"conda environment {CONDA_ENV}"
    assert installation.details == (f"install packages with {CONDA_ENV}\\python.exe -m pip install <package>",)


# ---------------------------------------------------------------- Python


def test_comfyui_portable_is_recognised():
    check = by_name(python_checks(windows(), python()), "installation")
    assert check.status is Status.PASS
    assert check.summary == f"ComfyUI portable (python_embeded) at {EMBEDDED}"
    assert f"install packages with {EMBEDDED_EXE} -m pip install <package>: a plain `pip` installs into another " \
           "Python" in check.details


def framepack(pth: str) -> object:
    return windows(executable=f"{FRAMEPACK}\\python.exe", sys_path=[FRAMEPACK],
                   files={f"{FRAMEPACK}\\python.exe": None, f"{FRAMEPACK}\\python310._pth": pth,
                          f"{FRAMEPACK}\\Lib\\site-packages\\torch\\__init__.py": ""})


def test_framepack_pth_without_site_packages_is_a_warning_with_the_lines_to_add():
    check = by_name(python_checks(framepack("python310.zip\n.\n#import site\n"), python(version=(3, 10, 11))),
                    "installation")
    assert check.status is Status.WARN
    assert check.summary.startswith("FramePack (system\\python) at D:\\FramePack\\system\\python: its "
                                    "python310._pth does not put Lib\\site-packages on sys.path")
    assert check.fix == f"add the lines `Lib/site-packages` and `import site` to {FRAMEPACK}\\python310._pth"
    fine = by_name(python_checks(framepack("python310.zip\n.\nimport site\n"), python()), "installation")
    assert fine.status is Status.PASS and fine.summary == f"FramePack (system\\python) at {FRAMEPACK}"


def test_another_python_first_on_path_is_a_warning():
    apps = "C:\\Users\\ana\\AppData\\Local\\Microsoft\\WindowsApps"
    system = "C:\\Program Files\\Python313"
    sim = windows(env={"Path": f"{apps};{system};{system}\\Scripts;C:\\Windows"},
                  files={f"{apps}\\python.exe": None, f"{apps}\\python3.exe": None, f"{system}\\python.exe": None})
    check = by_name(python_checks(sim, python()), "PATH")
    assert check.status is Status.WARN
    assert check.summary == (f"2 Pythons on PATH; `python` and `pip` start {apps}\\python.exe, not this Python "
                             f"({EMBEDDED_EXE})")
    assert check.details == (f"{apps}\\python.exe (Microsoft Store alias: opens the Store unless that Python is "
                             "installed)", f"{system}\\python.exe")
    assert check.fix == (f"install packages with {EMBEDDED_EXE} -m pip install <package>, "
                         f"or put {EMBEDDED} first on PATH")
    alone = by_name(python_checks(windows(), python()), "PATH")
    assert alone.status is Status.PASS and alone.summary == f"no Python on PATH; this one is {EMBEDDED_EXE}"


def test_this_python_first_on_path_passes():
    sim = windows(env={"Path": f"{EMBEDDED};C:\\Windows"})
    check = by_name(python_checks(sim, python()), "PATH")
    assert check.status is Status.PASS and check.summary == "1 Python on PATH; the first is this one"


@pytest.mark.parametrize("shadow, is_folder", [("triton.py", False), ("triton", True)])
def test_triton_module_in_the_current_folder_is_reported(shadow, is_folder):
    work = "C:\\Users\\ana\\kernels"
    path = f"{work}\\{shadow}"
    sim = windows(files={} if is_folder else {path: "import triton\n"}, dirs=[path] if is_folder else [])
    check = by_name(python_checks(sim, python(cwd=work)), "shadowing")
    assert check.status is Status.WARN
    assert check.summary == f"{path} shadows the installed triton: `import triton` run from here imports it"
    assert check.fix.startswith(f"rename {path}")
    assert by_name(python_checks(windows(), python(cwd=work)), "shadowing").status is Status.PASS


def test_python_versions_and_builds():
    def version(**changes):
        return by_name(python_checks(windows(), python(**changes)), "version")

    assert version().summary == "CPython 3.12.8, 64-bit, GIL build"
    free = version(version=(3, 14, 0), free_threaded_build=True, gil_enabled=False)
    assert free.status is Status.PASS and free.summary == "CPython 3.14.0, 64-bit, free-threaded build, GIL disabled"
    assert version(free_threaded_build=True).details, "a re-enabled GIL is explained"
    assert version(pointer_bits=32).status is Status.FAIL
    assert version(version=(3, 15, 0)).status is Status.WARN
    assert version(implementation="PyPy").status is Status.WARN


# ---------------------------------------------------------------- torch and triton


def test_torch_cpu_build_on_a_gpu_machine():
    sim = windows({PIP12: (12, 9)})
    check = torch_checks(sim, TorchFacts("2.10.0+cpu"), gpu_facts(sim))
    assert check[0].status is Status.WARN
    assert check[0].summary == "torch 2.10.0+cpu, CPU build: torch tensors cannot be put on the GPU"
    assert check[0].fix == (f"{EMBEDDED_EXE} -m pip install --force-reinstall torch --index-url "
                            "https://download.pytorch.org/whl/cu128")
    assert check[1].status is Status.PASS
    assert check[1].summary == "torch 2.10 expects Triton 3.6, which tritone presents"


def test_torch_cuda_build_sees_the_same_gpus():
    sim = windows({PIP12: (12, 9)}, gpus=[RTX_4090, RTX_5090])
    gpu = gpu_facts(sim)
    same = torch_checks(sim, TorchFacts("2.11.0+cu128", cuda_build="12.8", cuda_available=True,
                                        devices=(RTX_4090, RTX_5090)), gpu)
    assert same[0].status is Status.PASS and same[0].summary.endswith("it sees the same 2 GPU(s) as tritone")
    other = torch_checks(sim, TorchFacts("2.11.0+cu128", cuda_build="12.8", cuda_available=True,
                                         devices=(RTX_5090,)), gpu)
    assert other[0].status is Status.WARN and "CUDA_VISIBLE_DEVICES" in other[0].fix
    blind = torch_checks(sim, TorchFacts("2.11.0+cu130", cuda_build="13.0", cuda_available=False), gpu)
    assert blind[0].status is Status.WARN and "CUDA 13.0" in blind[0].fix


@pytest.mark.parametrize("version, status, words", [
    ("2.13.0+cu130", Status.WARN, "torch 2.13 expects Triton 3.7; tritone presents 3.6"),
    ("2.9.1", Status.WARN, "torch 2.9 expects Triton 3.5"),
    ("2.11.0", Status.PASS, "torch 2.11 expects Triton 3.6, which tritone presents"),
    ("2.3.1", Status.WARN, "torch 2.3.1 is not in tritone's torch/Triton table"),
])
def test_torch_triton_api_table(version, status, words):
    sim = windows({PIP12: (12, 9)}, driver=False)
    check = torch_checks(sim, TorchFacts(version), gpu_facts(sim))[1]
    assert check.status is status and words in check.summary
    if status is Status.WARN:
        assert check.fix == "for torch.compile with tritone use torch 2.10 or 2.11; @jit kernels work with any torch"


def test_torch_that_does_not_import_on_windows_points_at_the_vc_runtime():
    sim = windows(driver=False)
    facts = TorchFacts("unknown", f"{SITE}\\torch", "OSError: [WinError 126] Error loading \"c10.dll\"")
    [check] = torch_checks(sim, facts, gpu_facts(sim))
    assert check.status is Status.WARN and "vc_redist.x64.exe" in check.fix


def test_triton_windows_beside_tritone():
    one = windows(dirs=[f"{SITE}\\triton_windows-3.2.0.post18.dist-info", f"{SITE}\\triton"])
    installs = triton_installs(one)
    assert [(install.distribution, install.version) for install in installs] == [("triton_windows", "3.2.0.post18")]
    [real] = triton_checks(triton_facts(one))
    assert real.status is Status.PASS and real.summary.startswith("triton_windows 3.2.0.post18 in ")
    both = windows(dirs=[f"{SITE}\\triton_windows-3.2.0.post18.dist-info", f"{SITE}\\triton-3.6.0.dist-info"])
    [real] = triton_checks(triton_facts(both))
    assert real.status is Status.WARN and "2 installs provide the `triton` module" in real.summary


# ---------------------------------------------------------------- cache


def cache_state(sim, *, configured: str | None = None, used: str | None = "same", longest: str | None = None,
                long_paths: bool | None = False, free: int = 50 * 2**30,
                contents: cache.CacheContents | None = None) -> CacheFacts:
    wanted = cache.default_root(sim, configured)
    return CacheFacts(wanted=wanted, configured=configured is not None, used=wanted if used == "same" else used,
                      problem=None if used == "same" else "[WinError 5] Access is denied", free_bytes=free,
                      longest_path=longest, contents=contents or cache.CacheContents(),
                      long_paths_enabled=long_paths, now=1e9)


def test_windows_default_cache_is_short_and_under_localappdata():
    sim = windows()
    checks = cache_checks(sim, cache_state(sim))
    location = by_name(checks, "location")
    assert location.status is Status.PASS
    assert location.summary == "C:\\Users\\ana\\AppData\\Local\\tritone\\cache (default), writable"
    length = by_name(checks, "path length")
    assert length.status is Status.PASS
    assert length.summary == ("no files yet; a 60-character kernel name gives 134; LongPathsEnabled = 0 "
                              "(260-character limit)")


def test_long_cache_folder_without_long_paths_is_a_warning():
    sim = windows()
    deep = "D:\\" + "\\".join(["a-rather-long-folder-name-for-projects"] * 5)
    longest = deep + "\\" + "A" * 26 + "\\triton_poi_fused_native_layer_norm_backward_0.cubin"
    checks = cache_checks(sim, cache_state(sim, configured=deep, longest=longest))
    length = by_name(checks, "path length")
    assert length.status is Status.WARN
    assert "[WinError 206]" in length.summary and f"longest: {longest}" in length.details
    assert "LongPathsEnabled /t REG_DWORD /d 1" in length.fix and "TRITON_CACHE_DIR" in length.fix
    # tritone itself opens such paths with the \\?\ prefix.
    assert cache.long_path(sim, longest) == "\\\\?\\" + longest
    allowed = by_name(cache_checks(sim, cache_state(sim, configured=deep, longest=longest, long_paths=True)),
                      "path length")
    assert allowed.status is Status.PASS and "LongPathsEnabled = 1 (long paths allowed)" in allowed.summary


def test_unwritable_cache_folder_and_the_fallback():
    sim = windows()
    fallback = "C:\\Users\\ana\\AppData\\Local\\Temp\\tritone-cache-ana"
    location = by_name(cache_checks(sim, cache_state(sim, used=fallback)), "location")
    assert location.status is Status.WARN
    assert location.summary == (f"C:\\Users\\ana\\AppData\\Local\\tritone\\cache (default) cannot be written; "
                                f"using {fallback} instead")
    assert location.details == ("[WinError 5] Access is denied",)
    assert "TRITON_CACHE_DIR" in location.fix
    [nowhere] = cache_checks(sim, cache_state(sim, used=None))
    assert nowhere.status is Status.FAIL and "compiled again in every process" in nowhere.summary


def test_cache_entries_and_free_space():
    sim = windows()
    contents = cache.CacheContents(
        (cache.StoredEntry("C:\\c\\AAAA", "00" * 16, "add_kernel", 3000, 1e9 - 3 * 86400),
         cache.StoredEntry("C:\\c\\BBBB", "11" * 16, "softmax", 5000, 1e9 - 7200)),
        (cache.IncompleteFolder("C:\\c\\CCCC", 2048, 1e9 - 2 * 3600, "no commit mark"),
         cache.IncompleteFolder("C:\\c\\DDDD", 100, 1e9 - 60, "no commit mark")))
    checks = cache_checks(sim, cache_state(sim, contents=contents, free=100 * 2**20))
    assert by_name(checks, "free space").status is Status.WARN
    listed = by_name(checks, "entries")
    assert listed.summary == "2 entries, 7.8 KiB; oldest written 3 days ago, newest 2 hours ago"
    # The folder written a minute ago may be a write in progress: only the older one is reported.
    assert listed.details[0].startswith("1 folder (2.0 KiB) left incomplete by interrupted writes")
    empty = by_name(cache_checks(sim, cache_state(sim)), "entries")
    assert empty.summary == "empty" and not empty.details
