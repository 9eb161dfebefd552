"""`python -m tritone doctor` on this machine, the report's forms (text,
summary, JSON, exit code), `python -m tritone cache info|clear|prune` on a real
cache folder, the live check, and the error messages users meet (no driver, no
NVRTC, NVRTC too old for the GPU, cache not writable, a CPU tensor passed to a
GPU kernel): each names the thing and the fix."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import io
import json
import os
import platform as platform_module
import re
import sys
import tempfile
import time
import warnings

import numpy as np
import pytest

import tritone
from tests.platform._doctor_layouts import CUDA124, EMBEDDED_EXE, RTX_5090, TOOLKITS, windows
from tritone import doctor, knobs
from tritone.__main__ import main
from tritone.backends.cuda import launch_plan
from tritone.backends.cuda.bindings import libs
from tritone.backends.cuda.bindings.driver_api import Device
from tritone.backends.cuda.bindings.nvml import DisplayDriver
from tritone.doctor import Check, Report, Status
from tritone.doctor.cache_report import cache_checks, cache_command, cache_facts, parse_size
from tritone.doctor.gpu import GpuFacts, gpu_facts, nvrtc_checks
from tritone.doctor.live import interpreter_check, live_checks, vector_add
from tritone.doctor.packages import TorchFacts, torch_facts, triton_facts
from tritone.doctor.provider import provider_facts
from tritone.doctor.python_env import python_checks, python_facts
from tritone.platform import SimulatedPlatform, host
from tritone.runtime import cache


def by_name(checks, name):
    [check] = [check for check in checks if check.name == name]
    return check


# ---------------------------------------------------------------- the report


def sample_report() -> Report:
    return Report((
        Check("Python", "version", Status.PASS, "CPython 3.12.8"),
        Check("GPU", "driver", Status.WARN, "no driver", ("searched: nvcuda.dll",), "install the driver\nor this"),
        Check("NVRTC", "sm_86", Status.FAIL, "no usable NVRTC", fix="pip install nvidia-cuda-nvrtc-cu12"),
    ), "tritone doctor")


def test_report_text_summary_json_and_exit_code():
    report = sample_report()
    assert report.exit_code == 1
    assert report.counts_text() == "1 passed, 1 warning, 1 failed"
    assert report.text() == (
        "tritone doctor\n\nPython\n  pass  version: CPython 3.12.8\n\nGPU\n  warn  driver: no driver\n"
        "          searched: nvcuda.dll\n        fix: install the driver\n             or this\n\nNVRTC\n"
        "  fail  sm_86: no usable NVRTC\n        fix: pip install nvidia-cuda-nvrtc-cu12\n\n"
        "1 passed, 1 warning, 1 failed\n")
    assert report.summary_text() == (
        "doctor: 1 passed, 1 warning, 1 failed (details: python -m tritone doctor)\n"
        "  warn  GPU driver: no driver\n  fail  NVRTC sm_86: no usable NVRTC\n")
    data = json.loads(report.json())
    assert data["exit_code"] == 1 and data["counts"] == {"pass": 1, "warn": 1, "fail": 1}
    assert data["checks"][1] == {"section": "GPU", "name": "driver", "status": "warn", "summary": "no driver",
                                 "details": ["searched: nvcuda.dll"], "fix": "install the driver\nor this", "data": {}}
    assert Report(report.checks[:2], "t").exit_code == 0


def test_doctor_on_this_machine(capsys):
    status = main(["doctor", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert status == data["exit_code"] == (1 if data["counts"]["fail"] else 0)
    sections = [check["section"] for check in data["checks"]]
    assert list(dict.fromkeys(sections)) == ["Python", "GPU", "NVRTC", "torch", "triton", "cache", "live check"]
    # The live check on a GPU is the gpu-marked test's to judge; everything else must pass here.
    failed = [check for check in data["checks"] if check["status"] == "fail" and check["section"] != "live check"]
    assert not failed, failed
    version = next(check for check in data["checks"] if check["name"] == "version")
    assert version["summary"].startswith(f"CPython {platform_module.python_version()}, 64-bit")
    # The display driver's version (NVML's "580.159.04"), or why it is unknown.
    driver = next(check for check in data["checks"] if check["section"] == "GPU" and check["name"] == "driver")
    release = driver["data"]["driver_version"]
    if release is None:
        assert any(line.startswith("display driver version unknown: ") for line in driver["details"])
    else:
        assert re.fullmatch(r"\d+\.\d+(\.\d+)?", release)
        assert f"display driver {release} from {driver['data']['driver_version_source']}" in driver["details"]
        assert driver["data"]["library"] is None or f"driver {release}" in driver["summary"]


def test_a_check_that_raises_is_reported_and_the_others_still_run(monkeypatch):
    def broken(platform):
        raise OSError("the registry is unreadable")

    monkeypatch.setattr(doctor, "triton_facts", broken)
    monkeypatch.setattr(doctor, "gpu_facts", broken)
    report = doctor.run(["python", "gpu", "nvrtc", "triton", "cache"])
    failed = report.with_status(Status.FAIL)
    assert [(check.section, check.name) for check in failed] == [("GPU", "doctor"), ("triton", "doctor")]
    assert failed[1].summary == "this check failed: OSError: the registry is unreadable"
    assert "python -m tritone doctor --json" in failed[1].fix
    assert report.find("Python", "version") and report.find("cache", "location") and report.find("NVRTC")
    assert not report.find("GPU", "driver") and report.exit_code == 1


def test_unknown_sections_are_refused():
    with pytest.raises(ValueError, match="unknown doctor sections"):
        doctor.run(["python", "gpus"])


def test_selftest_prints_the_doctor_summary_first(capsys):
    assert main(["selftest", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("doctor: ") and "(details: python -m tritone doctor)" in out.splitlines()[0]
    assert "selftest on" in out


def test_selftest_summary_counts_are_doctors(capsys):
    assert main(["selftest", "--seed", "4"]) == 0
    summary = capsys.readouterr().out.splitlines()[0]
    main(["doctor", "--json"])
    counts = json.loads(capsys.readouterr().out)["counts"]
    expected = (f"{counts['pass']} passed, {counts['warn']} warning{'s' * (counts['warn'] != 1)}, "
                f"{counts['fail']} failed")
    assert summary == f"doctor: {expected} (details: python -m tritone doctor)"


def test_version_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"tritone {tritone.__tritone_version__} (Triton API {tritone.__version__})\n"


@pytest.mark.parametrize("argv0, name", [
    ("/usr/lib/python3/site-packages/tritone/__main__.py", "python -m tritone"),
    ("/home/me/venv/bin/tritone", "tritone"),
    ("C:\\venv\\Scripts\\tritone.exe", "tritone"),
    ("C:\\venv\\Scripts\\tritone-script.py", "tritone"),
])
def test_usage_line_names_how_the_command_was_started(monkeypatch, capsys, argv0, name):
    monkeypatch.setattr(sys, "argv", [argv0])
    with pytest.raises(SystemExit):
        main(["--help"])
    assert capsys.readouterr().out.startswith(f"usage: {name} [-h] [--version]")


def test_facts_of_this_python_and_its_packages():
    facts = python_facts()
    assert facts.pointer_bits == 64 and facts.cwd == os.getcwd()
    assert by_name(python_checks(host(), facts), "version").status is Status.PASS
    torch = pytest.importorskip("torch")
    found = torch_facts()
    assert found.version == torch.__version__ and found.cuda_build == torch.version.cuda
    triton = triton_facts(host())
    try:
        installed = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        installed = None
    assert [install.version for install in triton.installs if install.distribution == "triton"][:1] == \
        ([installed] if installed else [])
    # Whether the startup hook runs here depends on how tritone was installed; either way
    # doctor must name the place `import triton` goes to.
    spec = importlib.util.find_spec("triton")
    provider = provider_facts()
    assert provider.origin == (spec.origin if spec else None)
    assert provider.hook_active == (provider.answer is not None)


# ---------------------------------------------------------------- error messages: the thing and the fix


def test_no_driver_message_names_the_library_and_the_fix():
    with pytest.raises(libs.LibraryNotFound) as linux:
        libs.find_driver(SimulatedPlatform("linux"))
    assert "libcuda.so.1" in str(linux.value) and "Fix: install the NVIDIA driver" in str(linux.value)
    assert "Without a GPU, tritone runs kernels in its CPU interpreter by itself" in str(linux.value)
    with pytest.raises(libs.LibraryNotFound) as on_windows:
        libs.find_driver(windows(driver=False))
    message = str(on_windows.value)
    assert "nvcuda.dll" in message and "Fix: install or update the NVIDIA display driver" in message


def test_no_nvrtc_message_lists_the_places_and_the_package():
    sim = windows(driver=False)
    with pytest.raises(libs.LibraryNotFound) as caught:
        libs.find_nvrtc(sim, 86)
    message = str(caught.value)
    assert message.startswith("NVRTC (NVIDIA's run-time CUDA compiler) was not found.")
    assert "Searched:" in message and "pip nvidia-cuda-nvrtc-cu12: " in message
    assert f"Fix: {EMBEDDED_EXE} -m pip install nvidia-cuda-nvrtc-cu12" in message


def test_nvrtc_too_old_for_the_gpu_message_and_doctor_check(monkeypatch):
    monkeypatch.delenv("TRITONE_NVRTC_PATH", raising=False)
    monkeypatch.delenv("TRITONE_LIBCUDA_PATH", raising=False)
    # The driver (CUDA 12.0) cannot JIT NVRTC 12.4's PTX either, so nothing can compile for sm_120.
    sim = windows({CUDA124: (12, 4)}, gpus=[RTX_5090], driver_version=12000,
                  env={"CUDA_PATH": f"{TOOLKITS}\\v12.4"})
    with pytest.raises(libs.LibraryNotFound) as caught:
        libs.find_nvrtc(sim, 120, driver_version=12000)
    message = str(caught.value)
    assert "No usable NVRTC (NVIDIA's run-time CUDA compiler) that can compile for sm_120" in message
    assert f"{CUDA124} [CUDA_PATH]: NVRTC 12.4, sm_50..sm_90: does not know sm_120" in message
    assert "pip install nvidia-cuda-nvrtc-cu12" in message
    check = by_name(nvrtc_checks(sim, gpu_facts(sim)), "sm_120")
    assert check.status is Status.FAIL and "nvidia-cuda-nvrtc-cu12" in check.fix


@pytest.fixture
def private_temp(tmp_path, monkeypatch):
    """Keep the cache's fallback folder (under the temporary directory) inside the test's folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
    (tmp_path / "temp").mkdir()
    return tmp_path


def test_cache_not_writable_message_and_doctor_check(private_temp, monkeypatch):
    blocker = private_temp / "a-file"
    blocker.write_text("not a folder")
    wanted = str(blocker / "cache")
    monkeypatch.setenv("TRITON_CACHE_DIR", wanted)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        used = cache.cache_for_root(wanted)
    [warning] = [str(item.message) for item in caught]
    assert used is not None and used.root.startswith(str(private_temp / "temp"))
    assert f"tritone cannot write its kernel cache to {wanted} (TRITON_CACHE_DIR" in warning
    assert f"using {used.root} instead. Set TRITON_CACHE_DIR to a writable folder" in warning
    location = by_name(cache_checks(host(), cache_facts()), "location")
    assert location.status is Status.WARN
    assert location.summary == f"{wanted} (TRITON_CACHE_DIR) cannot be written; using {used.root} instead"
    assert "set TRITON_CACHE_DIR to a folder you can write" in location.fix


def test_cpu_tensor_for_a_gpu_kernel_names_the_parameter():
    torch = pytest.importorskip("torch")
    parameter = launch_plan.Parameter(2, "out_ptr", "*fp32")
    with pytest.raises(ValueError) as caught:
        launch_plan.pointer_address(torch.zeros(4), parameter, 0, None)
    assert str(caught.value).startswith("Pointer argument out_ptr (at 2) cannot be accessed from Triton (cpu tensor?)")
    with pytest.raises(ValueError) as caught:
        launch_plan.pointer_address(np.zeros(4, np.float32), parameter, 0, None)
    assert "out_ptr (at 2)" in str(caught.value) and "copy it to the GPU first" in str(caught.value)


@pytest.mark.gpu
def test_cpu_tensor_passed_to_a_kernel_on_the_gpu():
    torch = pytest.importorskip("torch")
    x = torch.rand(1000)
    y = torch.rand(1000, device="cuda")
    with pytest.raises(ValueError, match=r"Pointer argument x_ptr \(at 0\) cannot be accessed from Triton"):
        vector_add[(1,)](x, y, torch.empty_like(y), 1000, BLOCK=1024)


# ---------------------------------------------------------------- python -m tritone cache


def fill_cache(root) -> dict[str, str]:
    """Three complete entries (one written 40 days ago), an interrupted one and two
    folders that are not tritone's; returns entry folders by kernel name."""
    store = cache.KernelCache(str(root))
    rng = np.random.default_rng()
    folders = {}
    for name, size in (("old_kernel", 3000), ("add_kernel", 1000), ("softmax_kernel", 2000)):
        key = rng.bytes(16).hex()
        folders[name] = store.put(key, name, {"cubin": rng.bytes(size), "ptx": b"//ptx"}, {"name": name})
        if name == "add_kernel":
            time.sleep(0.01)  # distinct write times order the entries
    old = time.time() - 40 * 86400
    for file in os.listdir(folders["old_kernel"]):
        os.utime(os.path.join(folders["old_kernel"], file), (old, old))
    interrupted = store.folder(rng.bytes(16).hex())
    os.makedirs(interrupted)
    with open(os.path.join(interrupted, "lost.cubin"), "wb") as file:
        file.write(b"partial")
    os.utime(os.path.join(interrupted, "lost.cubin"), (old, old))
    folders["interrupted"] = interrupted
    os.makedirs(os.path.join(root, "my-notes"))
    os.makedirs(os.path.join(root, "A" * 52))
    return folders


def test_cache_info_prune_and_clear(private_temp, monkeypatch, capsys):
    root = private_temp / "kernels"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(root))
    folders = fill_cache(root)

    out = io.StringIO()
    assert cache_command("info", out) == 0
    info = out.getvalue()
    assert f"location: {root} (TRITON_CACHE_DIR), writable" in info
    assert "entries: 3 entries, " in info and "oldest written 40 days ago" in info
    assert "  1 folder (7 B) left incomplete by interrupted writes or damage" in info

    capsys.readouterr()
    assert main(["cache", "prune", "--older-than-days", "30"]) == 0
    assert capsys.readouterr().out.startswith("prune: removed 1 entry and 1 incomplete folder (")
    assert not os.path.exists(folders["old_kernel"]) and not os.path.exists(folders["interrupted"])
    assert os.path.exists(folders["add_kernel"]) and os.path.exists(folders["softmax_kernel"])

    out = io.StringIO()
    assert cache_command("prune", out, max_size="3K") == 0
    assert out.getvalue().startswith("prune: removed 1 entry")
    assert not os.path.exists(folders["add_kernel"]) and os.path.exists(folders["softmax_kernel"])

    out = io.StringIO()
    assert cache_command("clear", out) == 0
    assert out.getvalue().startswith("clear: removed 1 entry (") and out.getvalue().endswith("; 0 left\n")
    assert sorted(os.listdir(root)) == ["A" * 52, "my-notes"], "only tritone's entry folders are removed"


def test_parse_size(capsys):
    assert parse_size("4096") == 4096 and parse_size("3K") == 3072 and parse_size("1.5GiB") == 3 * 2**29
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")
    assert main(["cache", "prune", "--max-size", "lots"]) == 2
    assert capsys.readouterr().out == "--max-size: not a size: 'lots' (examples: 500M, 2G, 4096)\n"


# ---------------------------------------------------------------- live check


def device(ordinal: int = 0) -> Device:
    return Device(ordinal, "NVIDIA H200", (9, 0), 150 * 2**30, 132, 32, 1024, 65536, 65536, 49152, 232448, 233472,
                  60 * 2**20)


NO_GPU = GpuFacts(None, None, "no driver", None, None, None, (), DisplayDriver(None, None, ("no NVML",)))
ONE_GPU = GpuFacts("libcuda.so.1", "system loader", None, 12080, None, None, (device(),),
                   DisplayDriver("580.159.04", "NVML at libnvidia-ml.so.1"))


def test_live_check_without_a_gpu_runs_the_interpreter():
    [check] = live_checks(NO_GPU, TorchFacts(None))
    assert check.status is Status.PASS
    assert check.summary.startswith("vector add of 98765 floats on the CPU interpreter matches the CPU")
    assert check.details == ("no GPU: the CPU interpreter runs kernels",)
    assert interpreter_check().status is Status.PASS


def test_live_check_with_interpret_set_skips_the_gpu():
    knobs.runtime.interpret = True
    try:
        cpu, gpu = live_checks(ONE_GPU, TorchFacts("2.10.0", cuda_build="12.8", cuda_available=True))
    finally:
        del knobs.runtime.interpret
    assert cpu.status is Status.PASS and "TRITON_INTERPRET is set" in cpu.details[0]
    assert gpu.status is Status.WARN and "unset TRITON_INTERPRET" in gpu.fix


def test_live_check_without_torch_cuda_is_skipped():
    [check] = live_checks(ONE_GPU, TorchFacts("2.13.0+cpu"))
    assert check.status is Status.WARN and check.summary.startswith("skipped")


@pytest.mark.gpu
def test_live_check_on_each_gpu():
    gpu = gpu_facts(host())
    checks = live_checks(gpu, torch_facts())
    assert [check.name for check in checks] == [f"GPU {item.ordinal}" for item in gpu.devices]
    for check in checks:
        assert check.status is Status.PASS, check
        assert " on cuda sm_" in check.summary
