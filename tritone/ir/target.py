"""What a compilation is for: the target (`GPUTarget`) and the options
(`KernelOptions`), both frozen values hashed into cache keys. Target-neutral
vocabulary: the language, the frontend and every backend read them; Triton's
paths (`triton.backends.compiler.GPUTarget`, `triton.compiler.GPUTarget`)
re-export them.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any, ClassVar

from .. import knobs


@dataclass(frozen=True)
class GPUTarget:
    """`backend` ("cuda", or "interpreter" for the CPU), `arch` (compute
    capability as major*10+minor for CUDA), `warp_size`."""

    backend: str
    arch: int | str
    warp_size: int


INTERPRETER_TARGET = GPUTarget("interpreter", 0, 32)

DOT_INPUT_PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")


# The fp8 formats the CUDA backend holds and converts on every architecture it
# targets (fp8e4b15 in software; `tl.dot` widens it to fp16 first). AMD's fnuz
# formats (fp8e4b8, fp8e5b16) are refused at compile time, as Triton does on NVIDIA GPUs.
SUPPORTED_FP8_DTYPES = ("fp8e4b15", "fp8e4nv", "fp8e5")


class InvalidOptionError(ValueError, AssertionError):
    """A compile option with a value it cannot take. A ValueError, and an
    AssertionError too because Triton checks some options with `assert`
    (`num_warps`), so callers written for either catch it."""


def _capability(arch: Any) -> int | None:
    """The compute capability an `arch` option names ("sm80", "sm_90a", 80), or
    None where it names none."""
    text = str(arch).lower().removeprefix("sm").lstrip("_").rstrip("af")
    return int(text) if text.isdigit() else None


def check_ctas_for(options: KernelOptions, capability: int) -> None:
    """Raise ValueError where `options` asks for clusters (num_ctas > 1) on a GPU
    older than Hopper, as Triton's CUDA backend does."""
    if options.num_ctas > 1 and capability < 90:
        raise InvalidOptionError(f"num_ctas > 1 requires NVIDIA SM90+ (Hopper): num_ctas={options.num_ctas} "
                                 f"was asked for sm_{capability}; use num_ctas=1 or an SM90+ target")


@dataclass(frozen=True)
class KernelOptions:
    """The options a kernel is compiled with; every field may be given as a
    launch keyword (`kernel[grid](..., num_warps=8)`) or in `compile(options=)`.

    The field names are those of Triton's `CUDAOptions`, so every option Triton
    accepts is accepted. Some are kept without changing what tritone generates:
    `ptx_version`, `ptx_options` (NVRTC compiles C++, not PTX with ptxas
    options), `ir_override`, `enable_reflect_ftz` (only fp32 `exp2` follows it:
    `ex2.approx` with or without `.ftz`; the libdevice NVRTC links stays non-FTZ),
    `extern_libs` (kept as a tuple of (name, path) pairs; libdevice is NVRTC's),
    `supported_fp8_dtypes` and `deprecated_fp8_dot_operand_dtypes` (facts
    reported to callers such as TorchInductor), `backend_name`, `arch` (the
    target decides what is generated; an arch before sm90 refuses num_ctas > 1,
    as Triton does), `instrumentation_mode`. `warp_size` must be 32.
    `allowed_dot_input_precisions` limits what `tl.dot(input_precision=...)`
    accepts. `deprecated_fp8_dot_operand_dtypes` and
    `max_num_imprecise_acc_default` left None take the target's values when
    the kernel is compiled, as Triton's CUDA backend fills them (sm_90 and
    newer: fp8e4b15 deprecated; sm_90: 2**30)."""

    num_warps: int = 4
    num_ctas: int = 1
    num_stages: int = 3
    warp_size: int = 32
    maxnreg: int | None = None
    ptx_version: int | None = None
    ptx_options: str | None = None
    ir_override: str | None = None
    enable_fp_fusion: bool = True
    enable_reflect_ftz: bool = True
    launch_pdl: bool = False
    launch_cooperative_grid: bool = False
    supported_fp8_dtypes: tuple[str, ...] = SUPPORTED_FP8_DTYPES
    deprecated_fp8_dot_operand_dtypes: tuple[str, ...] | None = None
    default_dot_input_precision: str = "tf32"
    allowed_dot_input_precisions: tuple[str, ...] = DOT_INPUT_PRECISIONS
    max_num_imprecise_acc_default: int | None = None
    extern_libs: tuple[tuple[str, str], ...] = ()
    debug: bool = False
    backend_name: str = "cuda"
    sanitize_overflow: bool = True
    arch: str | None = None
    instrumentation_mode: str = ""

    FIELD_NAMES: ClassVar[frozenset[str]]  # set below, once the fields exist

    def __post_init__(self):
        # Triton passes `extern_libs` as a dict; lists arrive from JSON. Kept hashable.
        libs = self.extern_libs.items() if isinstance(self.extern_libs, dict) else self.extern_libs
        object.__setattr__(self, "extern_libs", tuple((str(k), str(v)) for k, v in libs))
        for name in ("supported_fp8_dtypes", "deprecated_fp8_dot_operand_dtypes", "allowed_dot_input_precisions"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.warp_size != 32:
            raise InvalidOptionError(f"warp_size must be 32 (NVIDIA warps), got {self.warp_size!r}")
        unknown = [p for p in self.allowed_dot_input_precisions if p not in DOT_INPUT_PRECISIONS]
        if unknown:
            raise InvalidOptionError(f"allowed_dot_input_precisions must be among {DOT_INPUT_PRECISIONS}, "
                                     f"got {unknown}")
        warps = self.num_warps
        if not isinstance(warps, int) or warps < 1 or warps & (warps - 1):
            raise InvalidOptionError(f"num_warps must be a power of 2, got {warps!r}")
        if not isinstance(self.num_ctas, int) or self.num_ctas < 1:
            raise InvalidOptionError(f"num_ctas must be a positive integer, got {self.num_ctas!r}")
        if not isinstance(self.num_stages, int) or self.num_stages < 0:
            raise InvalidOptionError(f"num_stages must be a non-negative integer, got {self.num_stages!r}")
        capability = _capability(self.arch) if self.arch is not None else None
        if capability is not None:
            check_ctas_for(self, capability)
        if self.default_dot_input_precision not in DOT_INPUT_PRECISIONS:
            raise InvalidOptionError(f"default_dot_input_precision must be one of {DOT_INPUT_PRECISIONS}, "
                             f"got {self.default_dot_input_precision!r}")

    @classmethod
    def from_dict(cls, values: dict[str, Any], *, debug_default: bool = False) -> KernelOptions:
        """Options from user keywords (unknown keys are the caller's to reject);
        unset fields take the defaults of the knobs (`TRITON_DEFAULT_FP_FUSION`,
        `TRITON_F32_DEFAULT`, `TRITON_DEBUG`)."""
        given = {key: value for key, value in values.items() if key in cls.FIELD_NAMES and value is not None}
        given.setdefault("enable_fp_fusion", knobs.language.default_fp_fusion)
        given.setdefault("default_dot_input_precision", knobs.language.fp32_default or "tf32")
        given["debug"] = bool(given.get("debug", debug_default)) or knobs.compilation.debug
        return cls(**given)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def hash(self) -> str:
        """A stable digest of every option (part of the compiled kernel's hash)."""
        text = ",".join(f"{key}={value!r}" for key, value in sorted(self.as_dict().items()))
        return hashlib.sha256(text.encode()).hexdigest()


# The launch keywords that are compile options.
KernelOptions.FIELD_NAMES = frozenset(field.name for field in dataclasses.fields(KernelOptions))
