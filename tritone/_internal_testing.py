"""Triton's `triton._internal_testing`: what Triton's own test suite imports to
ask where kernels run, make random inputs and move them between numpy and torch.

Where kernels run is tritone's answer, not an environment variable's:
`is_interpreter()` is true when tritone's CPU interpreter runs kernels now
(TRITON_INTERPRET set, or no usable GPU), and the GPU checks read the compute
capability tritone compiles for (`driver.active.get_current_target()`).
torch is imported by the functions that make or read torch tensors, pytest by
`requires_tma` and `_fresh_knobs_impl`, so importing this module needs neither.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from . import knobs
from .runtime.driver import driver
from .runtime.jit import TensorWrapper, reinterpret, type_canonicalisation_dict

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
# Element types a TMA descriptor moves (8-byte elements excluded).
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})


# -- where kernels run --------------------------------------------------------------

def get_current_target() -> Any:
    """The GPU target kernels compile for now, or None when they run in the interpreter."""
    target = driver.active.get_current_target()
    return None if target.backend == "interpreter" else target


def is_interpreter() -> bool:
    """Whether kernels run in tritone's CPU interpreter now (TRITON_INTERPRET is
    set, or no usable GPU was found)."""
    return get_current_target() is None


def _backend_is(name: str) -> bool:
    target = get_current_target()
    return target is not None and target.backend == name


def is_cuda() -> bool:
    return _backend_is("cuda")


def is_hip() -> bool:
    return _backend_is("hip")


def is_xpu() -> bool:
    return _backend_is("xpu")


def _cuda_major() -> int | None:
    """The major compute capability kernels compile for, None off CUDA."""
    return int(get_current_target().arch) // 10 if is_cuda() else None


def is_ampere_or_newer() -> bool:
    major = _cuda_major()
    return major is not None and major >= 8


def is_hopper_or_newer() -> bool:
    major = _cuda_major()
    return major is not None and major >= 9


def is_hopper() -> bool:
    return _cuda_major() == 9


def is_blackwell() -> bool:
    return _cuda_major() == 10


def is_blackwell_ultra() -> bool:
    """sm_103 (Triton 3.7's name; its tests read it)."""
    return is_cuda() and int(get_current_target().arch) == 103


def is_sm12x() -> bool:
    return _cuda_major() == 12


def _hip_arch_has(text: str) -> bool:
    return is_hip() and text in str(get_current_target().arch)


def is_hip_cdna2() -> bool:
    return _hip_arch_has("gfx90a")


def is_hip_cdna3() -> bool:
    return _hip_arch_has("gfx942")


def is_hip_cdna4() -> bool:
    return _hip_arch_has("gfx950")


def is_hip_cdna() -> bool:
    return is_hip_cdna2() or is_hip_cdna3() or is_hip_cdna4()


def is_hip_gfx11() -> bool:
    return _hip_arch_has("gfx11")


def is_hip_gfx12() -> bool:
    return _hip_arch_has("gfx12")


def is_hip_gfx1250() -> bool:
    return _hip_arch_has("gfx1250")


# RDNA names of Triton 3.7's test helpers (RDNA3 is gfx11, RDNA4 gfx12).
def is_hip_rdna3() -> bool:
    return _hip_arch_has("gfx11")


def is_hip_rdna4() -> bool:
    return _hip_arch_has("gfx12")


def is_hip_rdna() -> bool:
    return is_hip_rdna3() or is_hip_rdna4()


def get_hip_lds_size() -> int:
    """Bytes of local data share per workgroup on the AMD GPU (CDNA4: 160 KiB)."""
    return 163840 if is_hip_cdna4() else 65536


def get_arch() -> str:
    """The current target's architecture as text (`"90"`), `""` in the interpreter."""
    target = get_current_target()
    return "" if target is None else str(target.arch)


def supports_tma(byval_only: bool = False) -> bool:
    """Whether tensor descriptors (TMA) work: always in the interpreter, on
    Hopper or newer GPUs. (tritone compiles with NVRTC, which generates TMA code
    for every CUDA 12 version it supports, so `byval_only` changes nothing.)"""
    return is_interpreter() or is_hopper_or_newer()


def supports_ws() -> bool:
    """Whether warp specialization may be asked for: in the interpreter, and on Hopper or newer."""
    return is_interpreter() or is_hopper_or_newer()


def tma_skip_msg(byval_only: bool = False) -> str:
    if byval_only:
        return "Requires __grid_constant__ TMA support (NVIDIA Hopper or newer)"
    return "Requires TMA support (NVIDIA Hopper or newer)"


def __getattr__(name: str) -> Any:
    # `requires_tma` is a pytest mark: made on first use, so importing this module does not import pytest.
    if name == "requires_tma":
        import pytest

        mark = pytest.mark.skipif(not supports_tma(), reason=tma_skip_msg())
        globals()["requires_tma"] = mark
        return mark
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- inputs ------------------------------------------------------------------------------

def numpy_random(shape: int | tuple[int, ...], dtype_str: str, rs: np.random.RandomState | None = None,
                 low: int | None = None, high: int | None = None) -> np.ndarray:
    """Random values of `dtype_str` (a numpy name, `"bfloat16"`, `"bool"` or a
    float8 name): integers uniform in [low, high) within the type's range and
    never 0 (so tests may divide by them), floats standard normal, bfloat16 as
    float32 values that bfloat16 holds exactly, float8 as int8 bytes in [20, 40).
    `rs` defaults to one seeded with 17, so repeated calls repeat unless given one."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    rs = np.random.RandomState(seed=17) if rs is None else rs
    if dtype_str in integral_dtypes:
        info = np.iinfo(getattr(np, dtype_str))
        low = info.min if low is None else max(low, info.min)
        high = info.max if high is None else min(high, info.max)
        values = rs.randint(low, high, shape, dtype=getattr(np, dtype_str))
        values[values == 0] = 1
        return values
    if dtype_str and "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        # bfloat16 is the top half of a float32: clear the low 16 bits.
        bits = rs.normal(0, 1, shape).astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
        return bits.view(np.float32)
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"numpy_random: unknown dtype {dtype_str!r}")


def str_to_triton_dtype(name: str) -> Any:
    """The tl dtype of a type name (`"float32"`, `"fp32"`, `"bool"`)."""
    from .ir.types import parse_type

    if name not in type_canonicalisation_dict:
        raise ValueError(f"str_to_triton_dtype: unknown type name {name!r}")
    return parse_type(type_canonicalisation_dict[name])


def torch_dtype_name(dtype: Any) -> str:
    """The name of a tl dtype (`dtype.name`) or a torch dtype (`torch.int64` -> `"int64"`)."""
    from .ir.types import dtype as tl_dtype

    if isinstance(dtype, tl_dtype):
        return dtype.name
    match = re.fullmatch(r"torch\.(\w+)", str(dtype))
    if match is None:
        raise TypeError(f"torch_dtype_name: not a tl or torch dtype: {type(dtype).__name__} {dtype!r}")
    return match.group(1)


def to_triton(x: np.ndarray, device: Any, dst_type: str | None = None) -> Any:
    """A torch tensor on `device` holding `x`: unsigned integers as their signed
    bytes reinterpreted as the tl unsigned type, float8 bytes (int8) as the
    float8 type named by `dst_type`, float32 as bfloat16 when `dst_type` says so."""
    import torch

    name = x.dtype.name
    if name in uint_dtypes:
        signed = x.astype(getattr(np, name[1:]))
        return reinterpret(torch.tensor(signed, device=device), getattr(_language(), name))
    if dst_type and "float8" in dst_type:
        # torch's spellings (float8_e4m3fn) as well as tl's (float8e4nv).
        return reinterpret(torch.tensor(x, device=device), str_to_triton_dtype(dst_type))
    if name == "float32" and dst_type == "bfloat16":
        return torch.tensor(x, device=device).bfloat16()
    return torch.tensor(x, device=device)


def to_numpy(x: Any) -> np.ndarray:
    """A numpy copy of a torch tensor (bfloat16 as float32) or of a
    `TensorWrapper` (its bytes read as its tl type)."""
    import torch

    if isinstance(x, TensorWrapper):
        return x.base.cpu().numpy().astype(getattr(np, torch_dtype_name(x.dtype)))
    if isinstance(x, torch.Tensor):
        if x.dtype is torch.bfloat16:
            return x.cpu().float().numpy()
        return x.cpu().numpy()
    raise ValueError(f"to_numpy: not a tensor kernels take: {type(x).__name__}")


def unwrap_tensor(t: Any) -> Any:
    """The tensor under a `TensorWrapper`, or `t` itself."""
    return t.base if isinstance(t, TensorWrapper) else t


def default_alloc_fn(size: int, align: int, stream: Any) -> Any:
    """A scratch allocator for `set_allocator`: `size` bytes of CUDA memory as a torch tensor."""
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda")


def _language() -> Any:
    from . import language

    return language


# -- knobs -------------------------------------------------------------------------------

def _fresh_knobs_impl(skipped_attr: set[str] | None = None) -> tuple[Any, Any]:
    """`(fresh, reset)`: `fresh()` sets every knob group of `tritone.knobs`
    (except those named in `skipped_attr`) back to its defaults, with the
    environment variables they read unset, and returns the knobs module;
    `reset()` restores the assignments and the environment as they were."""
    import pytest

    skipped = set(skipped_attr or ())
    groups = {name: group for name, group in vars(knobs).items()
              if isinstance(group, knobs._Group) and name not in skipped}
    monkeypatch = pytest.MonkeyPatch()
    saved: dict[str, dict[str, Any]] = {}

    def fresh() -> Any:
        for name, group in groups.items():
            state = saved[name] = dict(vars(group))
            state["_overrides"] = dict(state.get("_overrides", {}))
            descriptors = {attribute: value for klass in type(group).__mro__
                           for attribute, value in vars(klass).items() if isinstance(value, knobs._EnvKnob)}
            for attribute, descriptor in descriptors.items():
                delattr(group, attribute)
                for variable in descriptor.names:
                    monkeypatch.delenv(variable, raising=False)
            # Plain attributes (launch hooks) as a new group starts with them.
            for attribute, value in vars(type(group)()).items():
                if attribute != "_overrides":
                    setattr(group, attribute, value)
        return knobs

    def reset() -> None:
        for name, group in groups.items():
            state = saved.pop(name, None)
            if state is None:
                continue
            for attribute, value in state.items():
                if attribute != "_overrides":
                    setattr(group, attribute, value)
            for attribute in list(vars(group).get("_overrides", {})):
                delattr(group, attribute)
            for attribute, value in state.get("_overrides", {}).items():
                setattr(group, attribute, value)
        monkeypatch.undo()

    return fresh, reset


__all__ = [
    "default_alloc_fn", "dtypes", "dtypes_with_bfloat16", "float_dtypes", "float_dtypes_with_bfloat16", "get_arch",
    "get_current_target", "get_hip_lds_size", "int_dtypes", "integral_dtypes", "is_ampere_or_newer", "is_blackwell",
    "is_blackwell_ultra", "is_cuda", "is_hip", "is_hip_cdna", "is_hip_cdna2", "is_hip_cdna3", "is_hip_cdna4",
    "is_hip_gfx11", "is_hip_gfx12", "is_hip_gfx1250", "is_hip_rdna", "is_hip_rdna3", "is_hip_rdna4", "is_hopper",
    "is_hopper_or_newer", "is_interpreter", "is_sm12x", "is_xpu", "numpy_random", "str_to_triton_dtype",
    "supports_tma", "supports_ws", "tma_dtypes", "tma_skip_msg", "to_numpy", "to_triton", "torch_dtype_name",
    "torch_dtypes", "torch_float8_dtypes", "type_canonicalisation_dict", "uint_dtypes", "unwrap_tensor",
]
