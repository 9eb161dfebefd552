"""The display driver's version through NVML (tritone.backends.cuda.bindings.nvml) on
simulated Linux machines: NVML answering, NVML missing or failing with the
reason kept, the /proc/driver/nvidia/version fallback, every return code
checked, nvmlShutdown after each successful nvmlInit_v2, and the doctor's
driver line and JSON that show it."""

from __future__ import annotations

import json
from ctypes import c_char_p, c_int32, c_uint32

import numpy as np
import pytest

from tests.platform._doctor_layouts import simulated_driver, simulated_nvml
from tritone.backends.cuda.bindings.nvml import (
    DisplayDriver,
    Nvml,
    NvmlError,
    display_driver,
    kernel_module_version,
    load_nvml,
)
from tritone.doctor import Report
from tritone.doctor.gpu import gpu_checks, gpu_facts
from tritone.platform import SimulatedLibrary, SimulatedPlatform

H200 = ("NVIDIA H200", (9, 0))
PROC = "/proc/driver/nvidia/version"
NOT_FOUND = ("NVML (part of the display driver) not found: libnvidia-ml.so.1 [system loader (LD_LIBRARY_PATH, "
             "ld.so.cache)] does not load (cannot load libnvidia-ml.so.1: simulated library absent); "
             "/usr/lib/wsl/lib/libnvidia-ml.so.1: no such file")


@pytest.fixture(autouse=True)
def no_overrides(monkeypatch):
    monkeypatch.delenv("TRITONE_LIBCUDA_PATH", raising=False)


def random_version() -> str:
    rng = np.random.default_rng()
    return f"{rng.integers(450, 700)}.{rng.integers(10, 200)}.{rng.integers(0, 100):02d}"


def proc_text(version: str, *, open_module: bool = False) -> str:
    module = "Open Kernel Module for x86_64" if open_module else "Kernel Module"
    return (f"NVRM version: NVIDIA UNIX {module}  {version}  Release Build  (dvs-builder@U16-I3-B05-1-1)  "
            "Thu Aug 14 18:38:51 UTC 2025\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")


def linux(nvml: SimulatedLibrary | None = None, *, proc: str | None = None, nvml_path: str = "libnvidia-ml.so.1",
          cuda_version: int = 13000) -> SimulatedPlatform:
    """A Linux machine with one H200, its CUDA driver, NVML at `nvml_path` (when
    given) and `/proc/driver/nvidia/version` holding `proc` (when given)."""
    libraries = {"libcuda.so.1": simulated_driver([H200], version=cuda_version)}
    if nvml is not None:
        libraries[nvml_path] = nvml
    files = {PROC: proc} if proc is not None else {}
    if nvml is not None and nvml_path.startswith("/"):
        files[nvml_path] = None
    return SimulatedPlatform("linux", libraries=libraries, files=files)


def calls(library: SimulatedLibrary, name: str) -> int:
    return len(library.functions[name].calls)


def test_nvml_answers_the_version_and_is_shut_down():
    version = random_version()
    nvml = simulated_nvml(version)
    assert display_driver(linux(nvml)) == DisplayDriver(version, "NVML at libnvidia-ml.so.1")
    assert calls(nvml, "nvmlInit_v2") == calls(nvml, "nvmlShutdown") == 1
    [(buffer, length)] = nvml.functions["nvmlSystemGetDriverVersion"].calls
    assert length == len(buffer) == 80
    assert nvml.functions["nvmlSystemGetDriverVersion"].argtypes == [c_char_p, c_uint32]
    assert nvml.functions["nvmlInit_v2"].restype is c_int32
    assert nvml.functions["nvmlSystemGetDriverVersion"].restype is c_int32


def test_wsl_driver_folder():
    version = random_version()
    sim = linux(simulated_nvml(version), nvml_path="/usr/lib/wsl/lib/libnvidia-ml.so.1")
    assert display_driver(sim) == DisplayDriver(version, "NVML at /usr/lib/wsl/lib/libnvidia-ml.so.1")
    assert sim.loads == ["libnvidia-ml.so.1", "/usr/lib/wsl/lib/libnvidia-ml.so.1"]


def test_nvml_missing_falls_back_to_the_kernel_module_and_keeps_the_reason():
    version = random_version()
    found = display_driver(linux(proc=proc_text(version)))
    assert found == DisplayDriver(version, f"the kernel module ({PROC})", (NOT_FOUND,))


def test_nvml_and_proc_missing_says_why_the_version_is_unknown():
    found = display_driver(linux())
    assert found == DisplayDriver(None, None, (NOT_FOUND, f"{PROC} cannot be read (no NVIDIA kernel module loaded)"))
    garbled = display_driver(linux(proc="NVRM: something else\n"))
    assert garbled.version is None
    assert garbled.problems[1] == f"{PROC} names no driver version: 'NVRM: something else'"


def test_nvml_init_failure_names_the_error_and_the_fallback_answers():
    version = random_version()
    nvml = simulated_nvml("0.0", init_code=18)
    found = display_driver(linux(nvml, proc=proc_text(version)))
    assert found.version == version and found.source == f"the kernel module ({PROC})"
    assert found.problems == ("nvmlInit_v2 failed at libnvidia-ml.so.1: RM has detected an NVML/RM version "
                              "mismatch. (NVML error 18)",)
    assert calls(nvml, "nvmlShutdown") == 0, "no shutdown for an initialisation that failed"


def test_a_failed_version_call_still_shuts_nvml_down():
    nvml = simulated_nvml(version_code=999)
    found = display_driver(linux(nvml))
    assert found.version is None
    assert found.problems[0] == "nvmlSystemGetDriverVersion failed at libnvidia-ml.so.1: Unknown Error (NVML error 999)"
    assert calls(nvml, "nvmlInit_v2") == calls(nvml, "nvmlShutdown") == 1


def test_a_failed_shutdown_is_reported_beside_the_version():
    version = random_version()
    found = display_driver(linux(simulated_nvml(version, shutdown_code=9)))
    assert found == DisplayDriver(version, "NVML at libnvidia-ml.so.1",
                                  ("nvmlShutdown failed at libnvidia-ml.so.1: Driver Not Loaded (NVML error 9)",))


def test_error_codes_without_nvml_descriptions_and_missing_functions():
    bare = Nvml(SimulatedLibrary({"nvmlInit_v2": lambda: 7}), "libnvidia-ml.so.1")
    with pytest.raises(NvmlError, match=r"^nvmlInit_v2 failed at libnvidia-ml.so.1: NVML error 7$"):
        bare.init()
    unnamed = Nvml(SimulatedLibrary({"nvmlInit_v2": lambda: 7, "nvmlErrorString": lambda code: None}), "nvml.dll")
    assert unnamed.error_string(7) == "NVML error 7"
    with pytest.raises(NvmlError, match="has no nvmlSystemGetDriverVersion: the NVIDIA driver is too old"):
        bare.system_driver_version()
    empty = Nvml(simulated_nvml(""), "libnvidia-ml.so.1")
    with pytest.raises(NvmlError, match="returned an empty version"):
        empty.system_driver_version()


def test_load_nvml_names_every_place_tried():
    with pytest.raises(NvmlError) as caught:
        load_nvml(linux())
    assert str(caught.value) == NOT_FOUND


@pytest.mark.parametrize("open_module", [False, True])
def test_kernel_module_version_of_both_kernel_modules(open_module):
    version = random_version()
    assert kernel_module_version(proc_text(version, open_module=open_module)) == version
    assert kernel_module_version(proc_text("550.54", open_module=open_module)) == "550.54"
    assert kernel_module_version("GCC version:  gcc version 12.3.0\n") is None


def test_doctor_driver_line_and_json_on_an_h200():
    version = random_version()
    checks = gpu_checks(gpu_facts(linux(simulated_nvml(version))))
    [driver] = [check for check in checks if check.name == "driver"]
    assert driver.summary == (f"libcuda.so.1 [system loader (LD_LIBRARY_PATH, ld.so.cache)], driver {version} "
                              "(CUDA 13.0), 1 GPU(s)")
    assert driver.details == (f"display driver {version} from NVML at libnvidia-ml.so.1",)
    [data] = [check["data"] for check in json.loads(Report(tuple(checks), "t").json())["checks"]
              if check["name"] == "driver"]
    assert data == {"library": "libcuda.so.1", "library_source": "system loader (LD_LIBRARY_PATH, ld.so.cache)",
                    "driver_version": version, "driver_version_source": "NVML at libnvidia-ml.so.1",
                    "cuda_version": "13.0"}


def test_doctor_driver_line_from_the_kernel_module_and_unknown():
    version = random_version()
    [driver, _] = gpu_checks(gpu_facts(linux(proc=proc_text(version, open_module=True))))
    assert f"driver {version} (CUDA 13.0)" in driver.summary
    assert driver.details == (f"display driver {version} from the kernel module ({PROC})", NOT_FOUND)
    [unknown, _] = gpu_checks(gpu_facts(linux()))
    assert "driver version unknown (CUDA 13.0)" in unknown.summary
    assert unknown.details == (f"display driver version unknown: {NOT_FOUND}",
                               f"display driver version unknown: {PROC} cannot be read (no NVIDIA kernel module "
                               "loaded)")


def test_no_cuda_driver_still_shows_the_display_driver():
    version = random_version()
    sim = SimulatedPlatform("linux", libraries={"libnvidia-ml.so.1": simulated_nvml(version)})
    [driver] = gpu_checks(gpu_facts(sim))
    assert driver.summary.startswith("no NVIDIA driver library")
    assert driver.details[-1] == f"display driver {version} from NVML at libnvidia-ml.so.1"
