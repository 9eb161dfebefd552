"""Checks of the packages around tritone: torch (version, CUDA or CPU build,
whether it sees the GPUs the driver lists, and whether its version expects the
Triton API that tritone presents) and a real `triton` installed beside
tritone. Which one answers `import triton` is provider.py's part."""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass

from .. import __version__ as TRITON_API
from ..platform import Platform, site_packages_dirs
from .gpu import GpuFacts
from .report import Check, Status, pip_install

TORCH = "torch"
TRITON = "triton"

# Which Triton release each torch release pins (torch 2.4 and 2.5 both use 3.1).
TORCH_TRITON = {
    (2, 4): (3, 1), (2, 5): (3, 1), (2, 6): (3, 2), (2, 7): (3, 3), (2, 8): (3, 4), (2, 9): (3, 5),
    (2, 10): (3, 6), (2, 11): (3, 6), (2, 12): (3, 7), (2, 13): (3, 7),
}
_RELEASE = re.compile(r"^(\d+)\.(\d+)")
_TRITON_DIST_INFO = re.compile(r"^(triton(?:[-_]windows)?)-([^-]+)\.dist-info$", re.IGNORECASE)


def release(version: str) -> tuple[int, int] | None:
    """(major, minor) of a version string ("2.13.0+cpu" -> (2, 13)); None when it has none."""
    match = _RELEASE.match(version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def presented_api() -> tuple[int, int]:
    """The Triton API version tritone presents (`tritone.__version__`)."""
    found = release(TRITON_API)
    assert found is not None, TRITON_API
    return found


@dataclass(frozen=True)
class TorchFacts:
    """torch as this Python has it: `version` None when it is not installed;
    `import_error` when it is but does not import; `cuda_build` the CUDA version
    it was built with (None for a CPU or ROCm build); `devices` the (name,
    compute capability) of each GPU it sees."""

    version: str | None
    location: str | None = None
    import_error: str | None = None
    cuda_build: str | None = None
    cuda_available: bool = False
    devices: tuple[tuple[str, tuple[int, int]], ...] = ()


def torch_facts() -> TorchFacts:
    """Import torch (when installed) and ask it about its build and GPUs."""
    spec = importlib.util.find_spec("torch")
    if spec is None:
        return TorchFacts(None)
    location = os.path.dirname(spec.origin) if spec.origin else None
    try:
        import torch
    except Exception as error:  # a broken install raises anything: OSError for DLLs, ImportError, RuntimeError
        return TorchFacts("unknown", location, f"{type(error).__name__}: {error}")
    cuda_build = torch.version.cuda
    available = bool(cuda_build) and torch.cuda.is_available()
    devices = ()
    if available:
        devices = tuple((torch.cuda.get_device_name(index), tuple(torch.cuda.get_device_capability(index)))
                        for index in range(torch.cuda.device_count()))
    return TorchFacts(torch.__version__, location, None, cuda_build, available, devices)


def torch_checks(platform: Platform, facts: TorchFacts, gpu: GpuFacts) -> list[Check]:
    """torch's build and GPUs, and the Triton API its version expects."""
    if facts.version is None:
        return [Check(TORCH, "torch", Status.PASS, "not installed (optional: kernels take numpy arrays on the CPU "
                                                   "and any tensor with data_ptr() or __cuda_array_interface__)")]
    if facts.import_error is not None:
        fix = "reinstall torch"
        if platform.is_windows:
            fix += ("; `DLL load failed` usually means the Microsoft Visual C++ Redistributable (x64) is missing: "
                    "https://aka.ms/vs/17/release/vc_redist.x64.exe")
        return [Check(TORCH, "torch", Status.WARN, f"installed at {facts.location} but does not import",
                      (facts.import_error.splitlines()[0],), fix)]
    return [_torch_build(platform, facts, gpu), _triton_api(facts)]


def _torch_build(platform: Platform, facts: TorchFacts, gpu: GpuFacts) -> Check:
    have_gpu = bool(gpu.devices)
    if facts.cuda_build is None:
        summary = f"torch {facts.version}, CPU build"
        if not have_gpu:
            return Check(TORCH, "torch", Status.PASS, summary)
        return Check(TORCH, "torch", Status.WARN, summary + ": torch tensors cannot be put on the GPU",
                     fix=pip_install(platform.executable(), ["--force-reinstall", "torch", "--index-url",
                                                              "https://download.pytorch.org/whl/cu128"]))
    summary = f"torch {facts.version}, built with CUDA {facts.cuda_build}"
    if not have_gpu:
        return Check(TORCH, "torch", Status.PASS, summary + " (no GPU here)")
    if not facts.cuda_available:
        return Check(TORCH, "torch", Status.WARN, summary + ", but it cannot use the GPU",
                     ("torch.cuda.is_available() is False while the driver lists "
                      f"{len(gpu.devices)} GPU(s)",),
                     f"the driver may be older than CUDA {facts.cuda_build} needs: update it, or install a torch "
                     "build for an older CUDA")
    driver = tuple((device.name, device.capability) for device in gpu.devices)
    if facts.devices == driver:
        return Check(TORCH, "torch", Status.PASS, summary + f"; it sees the same {len(driver)} GPU(s) as tritone")
    details = (f"tritone (driver): {', '.join(f'{name} {cc[0]}.{cc[1]}' for name, cc in driver)}",
               f"torch: {', '.join(f'{name} {cc[0]}.{cc[1]}' for name, cc in facts.devices) or 'none'}")
    return Check(TORCH, "torch", Status.WARN, summary + "; it does not see the same GPUs as tritone", details,
                 "set CUDA_VISIBLE_DEVICES (and CUDA_DEVICE_ORDER=PCI_BUS_ID) before starting Python so "
                 "both number the GPUs alike")


def _triton_api(facts: TorchFacts) -> Check:
    presented = presented_api()
    torch_release = release(facts.version or "")
    expected = TORCH_TRITON.get(torch_release) if torch_release else None
    shown = f"{presented[0]}.{presented[1]}"
    pairs = sorted(f"{torch[0]}.{torch[1]}" for torch, triton in TORCH_TRITON.items() if triton == presented)
    fix = f"for torch.compile with tritone use torch {' or '.join(pairs)}; @jit kernels work with any torch"
    if expected is None:
        return Check(TORCH, "Triton API", Status.WARN,
                     f"torch {facts.version} is not in tritone's torch/Triton table; tritone presents Triton {shown}",
                     fix=fix)
    if expected == presented:
        return Check(TORCH, "Triton API", Status.PASS,
                     f"torch {torch_release[0]}.{torch_release[1]} expects Triton {shown}, which tritone presents")
    return Check(TORCH, "Triton API", Status.WARN,
                 f"torch {torch_release[0]}.{torch_release[1]} expects Triton {expected[0]}.{expected[1]}; "
                 f"tritone presents {shown}, so torch.compile may reject it or call what it lacks", fix=fix)


@dataclass(frozen=True)
class TritonInstall:
    """A distribution that provides the `triton` module: its name as pip knows
    it ("triton", "triton_windows"), its version and site-packages folder."""

    distribution: str
    version: str
    site: str


@dataclass(frozen=True)
class TritonFacts:
    """The triton distributions installed."""

    installs: tuple[TritonInstall, ...]


def triton_installs(platform: Platform) -> tuple[TritonInstall, ...]:
    """Every `triton`/`triton-windows` distribution in this Python's site-packages folders."""
    found = []
    for site in site_packages_dirs(platform):
        for name in platform.list_dir(site):
            match = _TRITON_DIST_INFO.match(name)
            if match:
                found.append(TritonInstall(match.group(1).lower().replace("-", "_"), match.group(2), site))
    return tuple(found)


def triton_facts(platform: Platform) -> TritonFacts:
    """The installs on `platform`."""
    return TritonFacts(triton_installs(platform))


def triton_checks(facts: TritonFacts) -> list[Check]:
    """The real triton beside tritone."""
    installs = [f"{install.distribution} {install.version} in {install.site}" for install in facts.installs]
    if not facts.installs:
        return [Check(TRITON, "real triton", Status.PASS, "not installed (tritone does not need it)")]
    if len({install.distribution for install in facts.installs}) > 1 or len(facts.installs) > 1:
        return [Check(TRITON, "real triton", Status.WARN,
                      f"{len(facts.installs)} installs provide the `triton` module; the one imported depends on "
                      "the order of sys.path", tuple(installs),
                      "keep one: pip uninstall the others (pip uninstall triton triton-windows, then reinstall one)")]
    return [Check(TRITON, "real triton", Status.PASS, f"{installs[0]}, beside tritone")]
