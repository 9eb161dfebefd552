"""`triton._internal_testing`: the helpers upstream Triton's own test-suite
imports (dtype name lists, "which machine is this" predicates, random inputs and
conversions between numpy arrays and kernel arguments), so that suite runs
unmodified with tritone answering `import triton` (tools/conformance.py).

Not a public API of Triton; the names and behaviour follow Triton 3.6's module
of this name. It imports torch, as the tests that use it do.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from . import language as tl
from .runtime.jit import TensorWrapper, reinterpret

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
# the dtypes torch tensors of the tests are made of (uint8 is the one unsigned torch type)
torch_dtypes = ["bool", *int_dtypes, "uint8", *float_dtypes, "bfloat16"]
# element types a tensor descriptor carries: no 64-bit ones
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})

# dtype names the tests spell the numpy or torch way, as tl dtypes
_TL_DTYPE_BY_NAME = {
    "bool": tl.int1,
    "bool_": tl.int1,
    "int1": tl.int1,
    "float8_e4m3fn": tl.float8e4nv,
    "float8e4nv": tl.float8e4nv,
    "float8_e5m2": tl.float8e5,
    "float8e5": tl.float8e5,
    "float8e4b15": tl.float8e4b15,
    "float8e4b8": tl.float8e4b8,
    "float8e5b16": tl.float8e5b16,
    **{name: getattr(tl, name) for name in dtypes_with_bfloat16},
}


def is_interpreter() -> bool:
    """True when kernels run in the CPU interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def get_current_target():
    """The GPU target kernels compile for, None in the interpreter."""
    if is_interpreter():
        return None
    from .runtime import driver

    return driver.active.get_current_target()


def _backend_is(name: str) -> bool:
    target = get_current_target()
    return target is not None and target.backend == name


def _hip_arch_matches(fragment: str) -> bool:
    target = get_current_target()
    return target is not None and target.backend == "hip" and fragment in str(target.arch)


def _cuda_major() -> int | None:
    return torch.cuda.get_device_capability()[0] if is_cuda() else None


def is_cuda() -> bool:
    return _backend_is("cuda")


def is_hip() -> bool:
    return _backend_is("hip")


def is_xpu() -> bool:
    return _backend_is("xpu")


def is_ampere_or_newer() -> bool:
    return (_cuda_major() or 0) >= 8


def is_hopper_or_newer() -> bool:
    return (_cuda_major() or 0) >= 9


def is_hopper() -> bool:
    return _cuda_major() == 9


def is_blackwell() -> bool:
    return _cuda_major() == 10


def is_sm12x() -> bool:
    return _cuda_major() == 12


def is_hip_cdna2() -> bool:
    return _hip_arch_matches("gfx90a")


def is_hip_cdna3() -> bool:
    return _hip_arch_matches("gfx942")


def is_hip_cdna4() -> bool:
    return _hip_arch_matches("gfx950")


def is_hip_cdna() -> bool:
    return is_hip_cdna2() or is_hip_cdna3() or is_hip_cdna4()


def is_hip_gfx11() -> bool:
    return _hip_arch_matches("gfx11")


def is_hip_gfx12() -> bool:
    return _hip_arch_matches("gfx12")


def is_hip_gfx1250() -> bool:
    return _hip_arch_matches("gfx1250")


def get_hip_lds_size() -> int:
    return 163840 if is_hip_cdna4() else 65536


def get_arch() -> str:
    """The target's architecture as text ("" in the interpreter)."""
    target = get_current_target()
    return "" if target is None else str(target.arch)


def numpy_random(shape, dtype_str: str, rs: np.random.RandomState | None = None, low=None, high=None) -> np.ndarray:
    """Random test input of a dtype named by string: integers over the type's
    range (or [low, high)) with zeros replaced by 1 so divisions are defined,
    normal floats, bfloat16 values as float32 with the low 16 bits cleared,
    float8 as small int8 bit patterns, bools. Seeded with 17 unless `rs` is given."""
    shape = (shape,) if isinstance(shape, int) else shape
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
        bits = rs.normal(0, 1, shape).astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
        return bits.view(np.float32)
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"numpy_random: unknown dtype {dtype_str!r}")


def to_triton(x: np.ndarray, device, dst_type: str | None = None):
    """A kernel argument holding x on `device`: a torch tensor, or a tensor
    reinterpreted as the unsigned or float8 type torch cannot hold. A float32 x
    with dst_type "bfloat16" becomes a bfloat16 tensor."""
    name = x.dtype.name
    if name in uint_dtypes:
        signed = x.astype(getattr(np, name[1:]))
        return reinterpret(torch.tensor(signed, device=device), getattr(tl, name))
    if dst_type and "float8" in dst_type:
        return reinterpret(torch.tensor(x, device=device), _TL_DTYPE_BY_NAME[dst_type])
    if name == "float32" and dst_type == "bfloat16":
        return torch.tensor(x, device=device).bfloat16()
    return torch.tensor(x, device=device)


def str_to_triton_dtype(name: str):
    """The tl dtype of a numpy- or torch-style dtype name ("int8", "bool", "float8_e5m2")."""
    try:
        return _TL_DTYPE_BY_NAME[name]
    except KeyError:
        raise ValueError(f"str_to_triton_dtype: unknown dtype name {name!r}") from None


def torch_dtype_name(dtype) -> str:
    """The name of a tl or torch dtype without its module: "int64", "bfloat16"."""
    if isinstance(dtype, tl.dtype):
        return dtype.name
    if isinstance(dtype, torch.dtype):
        return str(dtype).removeprefix("torch.")
    raise TypeError(f"torch_dtype_name: not a triton or torch dtype: {type(dtype).__name__}")


def to_numpy(x) -> np.ndarray:
    """A host numpy copy of a kernel argument made by to_triton (bfloat16 as float32)."""
    if isinstance(x, TensorWrapper):
        return x.base.cpu().numpy().astype(getattr(np, torch_dtype_name(x.dtype)))
    if isinstance(x, torch.Tensor):
        return x.cpu().float().numpy() if x.dtype is torch.bfloat16 else x.cpu().numpy()
    raise ValueError(f"to_numpy: not a tensor a kernel takes: {type(x).__name__}")


def unwrap_tensor(t):
    """The torch tensor under a TensorWrapper, or t itself."""
    return t.base if isinstance(t, TensorWrapper) else t


def supports_tma(byval_only: bool = False) -> bool:
    """Whether tensor descriptors (TMA) run here: always in the interpreter, on
    CUDA from Hopper on (tritone needs no ptxas, so no toolkit version to check)."""
    if is_interpreter():
        return True
    return is_hopper_or_newer()


def supports_ws() -> bool:
    return is_interpreter() or is_hopper_or_newer()


def tma_skip_msg(byval_only: bool = False) -> str:
    return "Requires TMA support (NVIDIA Hopper or newer, or the interpreter)"


requires_tma = pytest.mark.skipif(not supports_tma(), reason=tma_skip_msg())


def default_alloc_fn(size: int, align: int, stream):
    """The global scratch allocator of the tests: torch memory on the GPU."""
    return torch.empty(size, dtype=torch.int8, device="cuda")
