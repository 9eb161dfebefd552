"""NVRTC, NVIDIA's run-time CUDA compiler, through ctypes: CUDA C++ text in,
cubin or PTX out.

`NVRTC` wraps one loaded library (found by `backends/cuda/bindings/libs.py`, or any object
with the same functions, such as a simulated library in tests). `compile_cuda`
compiles with the NVRTC that `libs` chooses for the target architecture.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from ctypes import POINTER, byref, c_char_p, c_int32, c_size_t, c_void_p
from dataclasses import dataclass
from typing import Any

from tritone.errors import TritonError

NVRTC_SUCCESS = 0
NVRTC_ERROR_COMPILATION = 6

# nvrtcResult is a C enum: 32 bits on every platform tritone runs on.
_PROTOTYPES: dict[str, list[Any]] = {
    "nvrtcVersion": [POINTER(c_int32), POINTER(c_int32)],
    "nvrtcGetNumSupportedArchs": [POINTER(c_int32)],
    "nvrtcGetSupportedArchs": [POINTER(c_int32)],
    "nvrtcCreateProgram": [POINTER(c_void_p), c_char_p, c_char_p, c_int32, POINTER(c_char_p), POINTER(c_char_p)],
    "nvrtcDestroyProgram": [POINTER(c_void_p)],
    "nvrtcCompileProgram": [c_void_p, c_int32, POINTER(c_char_p)],
    "nvrtcGetProgramLogSize": [c_void_p, POINTER(c_size_t)],
    "nvrtcGetProgramLog": [c_void_p, c_char_p],
    "nvrtcGetPTXSize": [c_void_p, POINTER(c_size_t)],
    "nvrtcGetPTX": [c_void_p, c_char_p],
    "nvrtcGetCUBINSize": [c_void_p, POINTER(c_size_t)],
    "nvrtcGetCUBIN": [c_void_p, c_char_p],
}


class NVRTCError(TritonError):
    """NVRTC refused a call or a compilation. `log` holds NVRTC's program log
    (the compiler's messages) when there is one."""

    def __init__(self, message: str, log: str = "", call: str = "", code: int = 0):
        self.message = message
        self.log = log
        self.call = call
        self.code = code
        super().__init__(f"{message}\n{log}" if log else message)

    def __reduce__(self):
        return (type(self), (self.message, self.log, self.call, self.code))


@dataclass(frozen=True)
class CompileResult:
    """What one compilation produced. `cubin` is None when only PTX was asked
    for; `target` is the `--gpu-architecture` value used ("sm_90a", "compute_80")."""

    cubin: bytes | None
    ptx: str
    log: str
    target: str
    nvrtc_version: tuple[int, int]


class NVRTC:
    """One loaded NVRTC library: its version, the architectures it can target,
    and compilation. `library` is what `ctypes.CDLL` returned (or a stand-in with
    the same functions); `path` names it in messages."""

    def __init__(self, library: Any, path: str = "nvrtc"):
        self.path = path
        self._lib = library
        for name, argtypes in _PROTOTYPES.items():
            function = getattr(library, name)
            function.argtypes = argtypes
            function.restype = c_int32
        error_string = library.nvrtcGetErrorString
        error_string.argtypes = [c_int32]
        error_string.restype = c_char_p
        major, minor = c_int32(), c_int32()
        self._check("nvrtcVersion", library.nvrtcVersion(byref(major), byref(minor)))
        self.version: tuple[int, int] = (major.value, minor.value)
        count = c_int32()
        self._check("nvrtcGetNumSupportedArchs", library.nvrtcGetNumSupportedArchs(byref(count)))
        archs = (c_int32 * count.value)()
        self._check("nvrtcGetSupportedArchs", library.nvrtcGetSupportedArchs(archs))
        self.supported_archs: tuple[int, ...] = tuple(archs)

    def __repr__(self) -> str:
        return f"NVRTC({self.version_text}, {self.path!r})"

    @property
    def version_text(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    def knows(self, arch: int) -> bool:
        """Whether this NVRTC can compile for compute capability `arch` (86 = 8.6)."""
        return arch in self.supported_archs

    def error_string(self, code: int) -> str:
        text = self._lib.nvrtcGetErrorString(code)
        return text.decode("utf-8", "replace") if text else f"NVRTC error {code}"

    def _check(self, call: str, code: int) -> None:
        if code != NVRTC_SUCCESS:
            raise NVRTCError(f"{call} failed: {self.error_string(code)} ({code}) in NVRTC at {self.path}",
                             call=call, code=code)

    def compile(self, source: str, name: str, arch: int, *, ptx_only: bool = False,
                options: Sequence[str] = (), arch_suffix: str = "") -> CompileResult:
        """Compile CUDA C++ `source` for compute capability `arch` (`sm_{arch}{arch_suffix}`;
        `arch_suffix="a"` gives the architecture-specific target such as sm_90a). With
        `ptx_only`, target `compute_{arch}` and return PTX alone, for the driver to
        JIT. `name` is the program's file name in messages. A failed compilation
        raises `NVRTCError` carrying NVRTC's log."""
        target = f"{'compute' if ptx_only else 'sm'}_{arch}{arch_suffix}"
        arguments = [f"--gpu-architecture={target}", *options]
        program = c_void_p()
        self._check("nvrtcCreateProgram", self._lib.nvrtcCreateProgram(
            byref(program), source.encode("utf-8"), name.encode("utf-8"), 0, None, None))
        try:
            encoded = (c_char_p * len(arguments))(*(argument.encode("utf-8") for argument in arguments))
            code = self._lib.nvrtcCompileProgram(program, len(arguments), encoded)
            log = self._program_text(program, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog").decode(
                "utf-8", "replace")
            if code != NVRTC_SUCCESS:
                what = "compilation failed" if code == NVRTC_ERROR_COMPILATION else self.error_string(code)
                raise NVRTCError(
                    f"NVRTC {self.version_text} could not compile {name} for {target} "
                    f"(options {' '.join(arguments)}): {what}", log=log, call="nvrtcCompileProgram", code=code)
            ptx = self._program_text(program, "nvrtcGetPTXSize", "nvrtcGetPTX").decode("utf-8", "replace")
            cubin = None if ptx_only else self._program_bytes(program, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")
        finally:
            self._lib.nvrtcDestroyProgram(byref(program))
        return CompileResult(cubin=cubin, ptx=ptx, log=log, target=target, nvrtc_version=self.version)

    def _program_bytes(self, program: c_void_p, size_call: str, get_call: str) -> bytes:
        size = c_size_t()
        self._check(size_call, getattr(self._lib, size_call)(program, byref(size)))
        buffer = ctypes.create_string_buffer(size.value)
        if size.value:
            self._check(get_call, getattr(self._lib, get_call)(program, buffer))
        return buffer.raw[: size.value]

    def _program_text(self, program: c_void_p, size_call: str, get_call: str) -> bytes:
        """A NUL-terminated output (log, PTX) without its terminator."""
        return self._program_bytes(program, size_call, get_call).rstrip(b"\0")


def compile_cuda(source: str, name: str, arch: int, *, ptx_only: bool = False, options: Sequence[str] = (),
                 arch_suffix: str = "", driver_version: int | None = None) -> CompileResult:
    """Compile `source` for compute capability `arch` with the NVRTC that
    `libs.nvrtc_for` chooses (given the driver's CUDA version when known).

    Where no NVRTC present knows `arch`, the chosen one compiles PTX for the
    newest architecture it knows below `arch` (the result's `target` says which,
    and `cubin` is None) so the driver can JIT it; `libs` warns once when it
    makes that choice."""
    # libs builds NVRTC objects from this module, so it is imported when first needed.
    from tritone.backends.cuda.bindings import libs

    choice = libs.nvrtc_for(arch, driver_version=driver_version)
    if choice.ptx_fallback:
        if arch_suffix:
            raise NVRTCError(f"sm_{arch}{arch_suffix} needs an NVRTC that knows sm_{arch}; {choice.reason}")
        return choice.nvrtc.compile(source, name, choice.target_arch, ptx_only=True, options=options)
    return choice.nvrtc.compile(source, name, arch, ptx_only=ptx_only, options=options, arch_suffix=arch_suffix)
