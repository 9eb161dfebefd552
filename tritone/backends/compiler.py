"""What a compilation is for: the target (`GPUTarget`) and the options
(`KernelOptions`). Both are frozen values, hashed into cache keys.

There is deliberately no `AttrsDescriptor` here: without it TorchInductor
passes specialization attributes as plain dicts `{(i,): [["tt.divisibility", 16]]}`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class GPUTarget:
    """`backend` ("cuda", or "interpreter" for the CPU), `arch` (compute
    capability as major*10+minor for CUDA), `warp_size`."""

    backend: str
    arch: int | str
    warp_size: int


INTERPRETER_TARGET = GPUTarget("interpreter", 0, 32)

_DOT_PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")


@dataclass(frozen=True)
class KernelOptions:
    """The options a kernel is compiled with; every field may be given as a
    launch keyword (`kernel[grid](..., num_warps=8)`) or in `compile(options=)`."""

    num_warps: int = 4
    num_ctas: int = 1
    num_stages: int = 3
    maxnreg: int | None = None
    enable_fp_fusion: bool = True
    launch_pdl: bool = False
    launch_cooperative_grid: bool = False
    debug: bool = False
    sanitize_overflow: bool = True
    default_dot_input_precision: str = "tf32"
    max_num_imprecise_acc_default: int = 0

    FIELD_NAMES: ClassVar[frozenset[str]]  # set below, once the fields exist

    def __post_init__(self):
        warps = self.num_warps
        if not isinstance(warps, int) or warps < 1 or warps & (warps - 1):
            raise ValueError(f"num_warps must be a power of 2, got {warps!r}")
        if not isinstance(self.num_ctas, int) or self.num_ctas < 1:
            raise ValueError(f"num_ctas must be a positive integer, got {self.num_ctas!r}")
        if not isinstance(self.num_stages, int) or self.num_stages < 0:
            raise ValueError(f"num_stages must be a non-negative integer, got {self.num_stages!r}")
        if self.default_dot_input_precision not in _DOT_PRECISIONS:
            raise ValueError(f"default_dot_input_precision must be one of {_DOT_PRECISIONS}, "
                             f"got {self.default_dot_input_precision!r}")

    @classmethod
    def from_dict(cls, values: dict[str, Any], *, debug_default: bool = False) -> KernelOptions:
        """Options from user keywords (unknown keys are the caller's to reject);
        unset fields take the defaults of the knobs (`TRITON_DEFAULT_FP_FUSION`,
        `TRITON_F32_DEFAULT`, `TRITON_DEBUG`)."""
        from .. import knobs

        given = {key: value for key, value in values.items() if key in cls.FIELD_NAMES and value is not None}
        given.setdefault("enable_fp_fusion", knobs.compilation.default_fp_fusion)
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
