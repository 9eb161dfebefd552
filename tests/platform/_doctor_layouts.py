"""Simulated Windows machines for the doctor tests: folder layouts (ComfyUI
portable, FramePack, conda, pip cu12/cu13 wheels, torch\\lib, CUDA toolkits),
an NVRTC library that answers its version and architectures, a CUDA driver
that answers its version and its GPUs, and NVML answering the display driver's
version."""

from __future__ import annotations

from tritone.backends.cuda.bindings.driver_api import DeviceAttribute
from tritone.platform import SimulatedLibrary, SimulatedPlatform

target = SimulatedLibrary.target

# What nvrtcGetSupportedArchs answers in each release.
NVSMI_NVML = "C:\\Program Files\\NVIDIA Corporation\\NVSMI\\nvml.dll"

NVRTC_ARCHS = {
    (11, 8): (35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90),
    (12, 4): (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90),
    (12, 8): (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120),
    (12, 9): (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121),
    (13, 0): (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121),
}

PORTABLE = "C:\\ComfyUI_windows_portable"
EMBEDDED = f"{PORTABLE}\\python_embeded"
EMBEDDED_EXE = f"{EMBEDDED}\\python.exe"
SITE = f"{EMBEDDED}\\Lib\\site-packages"
TOOLKITS = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
PIP12 = f"{SITE}\\nvidia\\cuda_nvrtc\\bin\\nvrtc64_120_0.dll"
PIP13 = f"{SITE}\\nvidia\\cu13\\bin\\x86_64\\nvrtc64_130_0.dll"
TORCH_LIB = f"{SITE}\\torch\\lib\\nvrtc64_120_0.dll"
CUDA118 = f"{TOOLKITS}\\v11.8\\bin\\nvrtc64_112_0.dll"
CUDA124 = f"{TOOLKITS}\\v12.4\\bin\\nvrtc64_120_0.dll"
CUDA128 = f"{TOOLKITS}\\v12.8\\bin\\nvrtc64_120_0.dll"
CONDA_ENV = "C:\\Users\\ana\\miniconda3\\envs\\ml"
CONDA_NVRTC = f"{CONDA_ENV}\\Library\\bin\\nvrtc64_120_0.dll"
FRAMEPACK = "D:\\FramePack\\system\\python"

RTX_5090 = ("NVIDIA GeForce RTX 5090", (12, 0))
RTX_4090 = ("NVIDIA GeForce RTX 4090", (8, 9))
GTX_1080 = ("NVIDIA GeForce GTX 1080", (6, 1))
H100 = ("NVIDIA H100 80GB HBM3", (9, 0))

ERRORS = {100: ("CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
          101: ("CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"),
          803: ("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination")}


def simulated_nvrtc(version: tuple[int, int]) -> SimulatedLibrary:
    """An NVRTC library that answers its version and architectures (compiling is not simulated)."""
    archs = NVRTC_ARCHS[version]

    def nvrtc_version(major, minor):
        target(major).value, target(minor).value = version
        return 0

    def count(out):
        target(out).value = len(archs)
        return 0

    def supported(out):
        for index, arch in enumerate(archs):
            out[index] = arch
        return 0

    return SimulatedLibrary({
        "nvrtcVersion": nvrtc_version, "nvrtcGetNumSupportedArchs": count, "nvrtcGetSupportedArchs": supported,
        "nvrtcGetErrorString": lambda code: b"NVRTC_ERROR_INTERNAL_ERROR",
        **{name: (lambda *arguments: 11) for name in (
            "nvrtcCreateProgram", "nvrtcDestroyProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize",
            "nvrtcGetProgramLog", "nvrtcGetPTXSize", "nvrtcGetPTX", "nvrtcGetCUBINSize", "nvrtcGetCUBIN")},
    })


def simulated_driver(gpus: list[tuple[str, tuple[int, int]]], *, version: int = 12080,
                     init_code: int = 0) -> SimulatedLibrary:
    """A CUDA driver that supports CUDA `version` and lists `gpus` (name, compute
    capability); cuInit answers `init_code`."""

    def store(out, value) -> int:
        target(out).value = value
        return 0

    def device_get(out, ordinal) -> int:
        return store(out, ordinal) if ordinal < len(gpus) else 101

    def name(buffer, length, device) -> int:
        buffer.value = gpus[device][0].encode()
        return 0

    def attribute(out, which, device) -> int:
        major, minor = gpus[device][1]
        values = {DeviceAttribute.COMPUTE_CAPABILITY_MAJOR: major, DeviceAttribute.COMPUTE_CAPABILITY_MINOR: minor,
                  DeviceAttribute.MULTIPROCESSOR_COUNT: 20 * major, DeviceAttribute.WARP_SIZE: 32}
        return store(out, values.get(which, 1024))

    def error_text(code, out, which) -> int:
        if code not in ERRORS:
            return 1
        target(out).value = ERRORS[code][which].encode()
        return 0

    return SimulatedLibrary({
        "cuDriverGetVersion": lambda out: store(out, version),
        "cuInit": lambda flags: init_code,
        "cuDeviceGetCount": lambda out: store(out, len(gpus)),
        "cuDeviceGet": device_get,
        "cuDeviceGetName": name,
        "cuDeviceGetAttribute": attribute,
        "cuDeviceTotalMem_v2": lambda out, device: store(out, 24 * 2**30),
        "cuGetErrorName": lambda code, out: error_text(code, out, 0),
        "cuGetErrorString": lambda code, out: error_text(code, out, 1),
    })


NVML_ERRORS = {9: b"Driver Not Loaded", 18: b"RM has detected an NVML/RM version mismatch.", 999: b"Unknown Error"}


def simulated_nvml(version: str = "581.57", *, init_code: int = 0, version_code: int = 0,
                   shutdown_code: int = 0) -> SimulatedLibrary:
    """NVML answering the display driver `version`; each call answers the code given for it."""

    def driver_version(buffer, length) -> int:
        if version_code == 0:
            buffer.value = version.encode()[:length - 1]
        return version_code

    return SimulatedLibrary({
        "nvmlInit_v2": lambda: init_code,
        "nvmlSystemGetDriverVersion": driver_version,
        "nvmlShutdown": lambda: shutdown_code,
        "nvmlErrorString": lambda code: NVML_ERRORS.get(code),
    })


COMFY_PTH = ("python312.zip\n.\n../ComfyUI\nLib/site-packages\n\n# Uncomment to run site.main() automatically\n"
             "import site\n")


def windows(nvrtcs: dict[str, tuple[int, int]] | None = None, *, gpus=(RTX_4090,), driver_version: int = 12080,
            init_code: int = 0, driver: bool = True, display_version: str = "581.57", nvml: str | None = "nvml.dll",
            env: dict[str, str] | None = None, executable: str = EMBEDDED_EXE,
            files: dict[str, str | None] | None = None, dirs=(), sys_path=None) -> SimulatedPlatform:
    """A Windows machine running ComfyUI portable's embedded Python (unless told
    otherwise), with NVRTC DLLs of the given versions (each with its builtins DLL
    beside it), the NVIDIA driver listing `gpus` unless `driver` is False, with
    NVML at `nvml` (System32's by default, None for none) answering `display_version`."""
    nvrtcs = nvrtcs or {}
    layout: dict[str, str | None] = {
        EMBEDDED_EXE: None,
        f"{EMBEDDED}\\python312._pth": COMFY_PTH,
        f"{EMBEDDED}\\python312.zip": None,
        f"{SITE}\\torch\\__init__.py": "",
        f"{SITE}\\nvidia\\cuda_nvrtc\\bin\\nvrtc64_120_0.alt.dll": None,
    }
    for path, (major, minor) in nvrtcs.items():
        layout[path] = None
        layout[path.rsplit("\\", 1)[0] + f"\\nvrtc-builtins64_{major}{minor}.dll"] = None
    layout.update(files or {})
    environment = {"ProgramFiles": "C:\\Program Files", "Path": "C:\\Windows\\system32;C:\\Windows",
                   "LOCALAPPDATA": "C:\\Users\\ana\\AppData\\Local"}
    environment.update(env or {})
    libraries = {path: simulated_nvrtc(version) for path, version in nvrtcs.items()}
    if driver:
        libraries["nvcuda.dll"] = simulated_driver(list(gpus), version=driver_version, init_code=init_code)
        if nvml is not None:
            libraries[nvml] = simulated_nvml(display_version)
            if nvml != "nvml.dll":
                layout[nvml] = None
    return SimulatedPlatform(
        "windows", files=layout, dirs=dirs, env=environment, executable=executable, home="C:\\Users\\ana",
        sys_path=sys_path if sys_path is not None else [f"{EMBEDDED}\\python312.zip", EMBEDDED],
        libraries=libraries)
