"""Checks of the GPU side: the driver (where the CUDA driver library was
found, the display driver's version from NVML, the CUDA version it supports),
each GPU (name, compute capability, whether tritone supports it and by which
dot path), and NVRTC (every candidate found with its version and
architectures, the one chosen and why, and whether `CUDA_PATH` points at a
toolkit tritone does not use or that is too old for the GPU)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import knobs
from ..backends.cuda.bindings import libs
from ..backends.cuda.bindings.driver_api import CudaDriver, CudaError, Device
from ..backends.cuda.bindings.nvml import DisplayDriver, display_driver
from ..errors import TritonError
from ..platform import Platform
from .report import Check, Status, pip_install, worst

GPU = "GPU"
NVRTC = "NVRTC"
NO_DEVICE = "CUDA_ERROR_NO_DEVICE"


@dataclass(frozen=True)
class GpuFacts:
    """What the driver said. `driver_error` is set when no driver library loads;
    `init_error` (with the driver's error name) when it loads but cannot
    initialise or list the GPUs. `display` is the display driver's version as
    NVML (or the kernel module) gave it, looked up whether or not CUDA works."""

    driver_path: str | None
    driver_source: str | None
    driver_error: str | None
    driver_version: int | None
    init_error: str | None
    init_error_name: str | None
    devices: tuple[Device, ...]
    display: DisplayDriver


def gpu_facts(platform: Platform) -> GpuFacts:
    """Load the driver on `platform` as tritone does (honouring TRITONE_LIBCUDA_PATH),
    initialise it and describe every GPU, and ask NVML for the display driver's
    version; never raises for a missing driver, NVML or GPU."""
    display = display_driver(platform)
    try:
        found = libs.find_driver(platform, knobs.nvidia.libcuda_path)
    except libs.LibraryNotFound as error:
        return GpuFacts(None, None, str(error), None, None, None, (), display)
    driver = CudaDriver(found.library, found.path)
    version = None
    try:
        version = driver.driver_version()
        driver.init(0)
        devices = tuple(driver.device(ordinal) for ordinal in range(driver.device_count()))
    except CudaError as error:
        return GpuFacts(found.path, found.source, None, version, str(error), error.name, (), display)
    except TritonError as error:
        return GpuFacts(found.path, found.source, None, version, str(error), None, (), display)
    return GpuFacts(found.path, found.source, None, version, None, None, devices, display)


def cuda_version_text(driver_version: int) -> str:
    """12080 -> "12.8"."""
    return f"{driver_version // 1000}.{driver_version % 1000 // 10}"


def dot_path(capability: tuple[int, int]) -> tuple[Status, str, str | None]:
    """Whether tritone supports a GPU of this compute capability, the dot path it
    uses there (or why not), and a fix when it does not."""
    major, minor = capability
    if major < 6:
        return (Status.FAIL, "older than tritone supports (compute capability 6.0, Pascal, or newer)",
                "use a Pascal (GTX 10xx) or newer GPU; TRITON_INTERPRET=1 runs kernels on the CPU meanwhile")
    if major == 6:
        return Status.PASS, "supported: Pascal, FMA dot path (bf16 and fp8 emulated in software)", None
    if (major, minor) == (7, 5):
        return (Status.PASS, "supported: Turing, mma m16n8k8 f16 (bf16 emulated, fp8 by exact software "
                "conversion)", None)
    if major == 7:
        return (Status.WARN, "Volta is not in tritone's target table (6.x, 7.5, 8.x, 9.0, 10.x, 12.x); kernels "
                "may compile but are not tested there", None)
    if major == 8:
        fp8 = "fp8 native" if (major, minor) == (8, 9) else "fp8 by exact software conversion"
        return Status.PASS, f"supported: Ampere/Ada, mma.sync m16n8k16 with cp.async ({fp8})", None
    if major == 9:
        return Status.PASS, "supported: Hopper, wgmma with TMA (sm_90a) and an mma.sync fallback", None
    if major in (10, 11, 12):
        wgmma = "; 12.x has no wgmma" if major == 12 else ""
        return Status.PASS, f"supported: Blackwell, mma.sync family{wgmma}", None
    return (Status.WARN, "newer than tritone's target table: kernels compile for the newest architecture the "
            "NVRTC knows, as PTX the driver JITs", None)


def gpu_checks(facts: GpuFacts) -> list[Check]:
    """The driver, then one check per GPU."""
    checks = [_driver(facts)]
    for device in facts.devices:
        status, path, fix = dot_path(device.capability)
        memory = f"{device.total_memory / 2**30:.0f} GiB"
        summary = (f"{device.name}, compute capability {device.capability[0]}.{device.capability[1]} "
                   f"(sm_{device.arch}), {memory}, {device.multiprocessor_count} SMs")
        checks.append(Check(GPU, f"GPU {device.ordinal}", status, summary, (path,), fix))
    return checks


def _display_details(display: DisplayDriver) -> tuple[str, ...]:
    """Where the display driver's version came from, or why it is unknown, and any problem met on the way."""
    if display.version is None:
        return tuple(f"display driver version unknown: {problem}" for problem in display.problems)
    return (f"display driver {display.version} from {display.source}", *display.problems)


def _driver_data(facts: GpuFacts) -> tuple[tuple[str, str | int | None], ...]:
    cuda = cuda_version_text(facts.driver_version) if facts.driver_version else None
    return (("library", facts.driver_path), ("library_source", facts.driver_source),
            ("driver_version", facts.display.version), ("driver_version_source", facts.display.source),
            ("cuda_version", cuda))


def _driver(facts: GpuFacts) -> Check:
    display = _display_details(facts.display)
    data = _driver_data(facts)
    if facts.driver_error is not None:
        searched = [line.strip() for line in facts.driver_error.splitlines()[1:]
                    if line.strip().startswith("- ")]
        fix = [line.removeprefix("Fix: ") for line in facts.driver_error.splitlines()
               if line.startswith(("Fix:", "or "))]
        return Check(GPU, "driver", Status.WARN, "no NVIDIA driver library: no GPU can be used, kernels run in "
                     "the CPU interpreter", (*searched, *display), "\n".join(fix) or None, data)
    release = f"driver {facts.display.version}" if facts.display.version else "driver version unknown"
    cuda = f" (CUDA {cuda_version_text(facts.driver_version)})" if facts.driver_version else ""
    summary = f"{facts.driver_path} [{facts.driver_source}], {release}{cuda}"
    if facts.init_error is not None:
        message = facts.init_error.splitlines()
        if facts.init_error_name == NO_DEVICE:
            return Check(GPU, "driver", Status.WARN, f"{summary}; it sees no GPU: kernels run in the CPU interpreter",
                         (*message[:1], *display), "\n".join(message[1:]) or None, data)
        return Check(GPU, "driver", Status.FAIL, f"{summary}; it cannot initialise", (*message[:1], *display),
                     "\n".join(message[1:]) or "reinstall or update the NVIDIA driver, then restart", data)
    if facts.driver_version is not None and facts.driver_version < 12000:
        return Check(GPU, "driver", Status.WARN, summary + ": older than CUDA 12",
                     ("NVRTC 12's output, tritone's default, needs a CUDA 12 driver (R525 or newer)", *display),
                     "update the NVIDIA driver (https://www.nvidia.com/drivers)", data)
    return Check(GPU, "driver", Status.PASS, f"{summary}, {len(facts.devices)} GPU(s)", display, data=data)


def _found_probes(platform: Platform, probes: Sequence[libs.Probe]) -> list[libs.Probe]:
    """The candidates that exist: those that loaded, and full paths that did not
    (a bare name that does not load is only a place the system looked)."""
    return [probe for probe in probes
            if probe.version is not None or platform.path.basename(probe.candidate.path) != probe.candidate.path]


def nvrtc_checks(platform: Platform, gpu: GpuFacts) -> list[Check]:
    """NVRTC as tritone chooses it for each GPU architecture present (or for no
    particular one without a GPU), then the CUDA_PATH check."""
    archs: list[int | None] = sorted({device.arch for device in gpu.devices}) or [None]
    reports = [(arch, libs.describe(arch, driver_version=gpu.driver_version, platform=platform)) for arch in archs]
    checks = [_nvrtc_choice(platform, arch, report, have_gpu=bool(gpu.devices)) for arch, report in reports]
    checks.append(_cuda_path(platform, reports))
    return checks


def _nvrtc_choice(platform: Platform, arch: int | None, report: libs.LibraryReport, *, have_gpu: bool) -> Check:
    name = f"sm_{arch}" if arch is not None else "choice"
    candidates = tuple(f"candidate: {probe.describe()}" for probe in _found_probes(platform, report.nvrtc_probes))
    choice = report.nvrtc
    if choice is None:
        fix = [line.removeprefix("Fix: ") for line in (report.nvrtc_error or "").splitlines()
               if line.startswith(("Fix:", "or "))]
        for_what = f" for sm_{arch}" if arch is not None else ""
        searched = tuple(f"searched: {place}" for place in report.nvrtc_places)
        return Check(NVRTC, name, Status.FAIL if have_gpu else Status.WARN,
                     f"no usable NVRTC{for_what}: kernels cannot be compiled for the GPU", candidates + searched,
                     "\n".join(fix) or pip_install(platform.executable(), [libs.package_for(arch)]))
    where = f"NVRTC {choice.nvrtc.version_text} at {choice.candidate.path} [{choice.candidate.source}]"
    if choice.ptx_fallback:
        return Check(NVRTC, name, Status.WARN,
                     f"no NVRTC found knows sm_{arch}: {where} compiles PTX for compute_{choice.target_arch} "
                     "and the driver JITs it (slower first launch, no sm-specific instructions)",
                     candidates, f"install an NVRTC that knows sm_{arch}: "
                                 f"{pip_install(platform.executable(), [libs.package_for(arch)])}")
    why = "first usable in tritone's search order" + (f" that knows sm_{arch}" if arch is not None else "")
    return Check(NVRTC, name, Status.PASS, f"{where}: {why}", candidates)


def _cuda_path(platform: Platform, reports: Sequence[tuple[int | None, libs.LibraryReport]]) -> Check:
    root = platform.getenv("CUDA_PATH")
    if not root:
        return Check(NVRTC, "CUDA_PATH", Status.PASS, "not set (tritone does not need a CUDA toolkit)")
    findings: list[tuple[Status, str]] = []
    too_old = False
    for arch, report in reports:
        probes = [probe for probe in report.nvrtc_probes if probe.candidate.source == "CUDA_PATH"]
        chosen = report.nvrtc
        used = f"tritone uses {chosen.candidate.path}" if chosen is not None else "tritone found no usable NVRTC"
        loaded = [probe for probe in probes if probe.version is not None]
        if chosen is not None and any(probe.candidate == chosen.candidate for probe in probes):
            findings.append((Status.PASS, f"CUDA_PATH={root}: its NVRTC {chosen.nvrtc.version_text} is the one used"))
        elif arch is not None and loaded and not any(arch in probe.archs for probe in loaded):
            version = loaded[0].version
            too_old = True
            findings.append((Status.WARN, f"CUDA_PATH={root} holds NVRTC {version[0]}.{version[1]}, "
                                          f"too old for sm_{arch}; {used}"))
        elif probes:
            verdicts = "; ".join(probe.verdict for probe in probes)
            findings.append((Status.WARN, f"CUDA_PATH={root} is not used (its NVRTC: {verdicts}); {used}"))
        else:
            override = knobs.nvidia.nvrtc_path
            why = f"TRITONE_NVRTC_PATH ({override}) names the NVRTC" if override else "it holds no NVRTC library"
            findings.append((Status.WARN, f"CUDA_PATH={root} is not used: {why}; {used}"))
    status = worst(found for found, _ in findings)
    lines = [line for found, line in findings if found is status]
    if status is Status.PASS:
        return Check(NVRTC, "CUDA_PATH", status, lines[0])
    if too_old:
        fix = ("point CUDA_PATH at a toolkit that knows the GPU (CUDA 12.8 or newer for sm_120), or unset it: "
               "tools that read CUDA_PATH would pick that old toolkit")
    else:
        fix = ("nothing to do if kernels run; to compile with that toolkit's NVRTC instead, set "
               "TRITONE_NVRTC_PATH to the folder holding its NVRTC library")
    return Check(NVRTC, "CUDA_PATH", status, lines[0], tuple(lines[1:]), fix)
