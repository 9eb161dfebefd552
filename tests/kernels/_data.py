"""Inputs, poisoned outputs and comparisons shared by the kernel and differential tests.

Tensors cross between torch and numpy here: dtypes numpy lacks (bfloat16, the
fp8 formats) become float32 arrays holding exactly the same values.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import torch

TORCH_DTYPES: dict[str, torch.dtype] = {
    "int1": torch.bool,
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32, "uint64": torch.uint64,
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
    "float8e4nv": torch.float8_e4m3fn, "float8e5": torch.float8_e5m2,
}

# numpy dtype holding each dtype's values (exactly).
NUMPY_DTYPES: dict[str, np.dtype] = {
    "int1": np.dtype(np.bool_),
    "int8": np.dtype(np.int8), "int16": np.dtype(np.int16), "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8), "uint16": np.dtype(np.uint16), "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "float16": np.dtype(np.float16), "bfloat16": np.dtype(np.float32), "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64), "float8e4nv": np.dtype(np.float32), "float8e5": np.dtype(np.float32),
}

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
FP8_DTYPES = ("float8e4nv", "float8e5")

_POISON_BYTE = 0x5A


def dtype_name(dtype: torch.dtype) -> str:
    for name, candidate in TORCH_DTYPES.items():
        if candidate == dtype:
            return name
    raise KeyError(f"no test name for {dtype}")


def is_float(name: str) -> bool:
    return name in FLOAT_DTYPES or name in FP8_DTYPES


def is_signed(name: str) -> bool:
    return name.startswith("int") and name != "int1"


def bit_width(name: str) -> int:
    if name == "int1":
        return 1
    if name in FP8_DTYPES:
        return 8
    if name == "bfloat16":
        return 16
    return NUMPY_DTYPES[name].itemsize * 8


def poison_value(dtype: torch.dtype) -> Any:
    """What poisoned buffers of `dtype` hold: NaN for floats, True for bools,
    the integer whose every byte is 0x5A otherwise."""
    if dtype.is_floating_point:
        return float("nan")
    if dtype == torch.bool:
        return True
    size = torch.empty((), dtype=dtype).element_size()
    return int.from_bytes(bytes([_POISON_BYTE]) * size, "little")


def poisoned(shape, dtype: torch.dtype, device) -> torch.Tensor:
    """A new tensor whose every element is `poison_value(dtype)`."""
    if dtype.is_floating_point or dtype == torch.bool:
        return torch.full(tuple(shape), poison_value(dtype), dtype=dtype, device=device)
    # Unsigned 32/64-bit tensors have few torch kernels: fill the bytes.
    size = torch.empty((), dtype=dtype).element_size()
    raw = torch.full(tuple(shape) + (size,), _POISON_BYTE, dtype=torch.uint8, device=device)
    return raw.view(dtype).reshape(tuple(shape))


def seed_for(name: str, base: int = 0) -> int:
    """A stable per-test seed: the same test draws the same inputs every run."""
    return zlib.crc32(name.encode()) ^ base


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """The values of `t` (any device) as a numpy array; bf16/fp8 become float32."""
    t = t.detach().cpu()
    if t.dtype in (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2):
        t = t.to(torch.float32)
    return t.numpy().copy()


def from_numpy(a: np.ndarray, name: str) -> torch.Tensor:
    """A CPU tensor of dtype `name` holding the values of `a` (already representable)."""
    t = torch.from_numpy(np.ascontiguousarray(a))
    target = TORCH_DTYPES[name]
    return t if t.dtype == target else t.to(target)


def round_to(values: np.ndarray, name: str) -> np.ndarray:
    """Round float values to dtype `name` (nearest even) and give them back in
    the numpy dtype of `NUMPY_DTYPES[name]`. fp8 saturates like the GPU's
    `cvt.rn.satfinite` (inf and out-of-range values to the largest finite)."""
    values = np.asarray(values)
    if name in ("bfloat16",) + FP8_DTYPES:
        as32 = torch.from_numpy(np.ascontiguousarray(values.astype(np.float32)))
        if name in FP8_DTYPES:
            limit = 448.0 if name == "float8e4nv" else 57344.0
            as32 = torch.where(torch.isnan(as32), as32, as32.clamp(-limit, limit))
        return as32.to(TORCH_DTYPES[name]).to(torch.float32).numpy()
    # Values beyond the dtype's range round to infinity, as the GPU's conversion does.
    with np.errstate(over="ignore"):
        return values.astype(NUMPY_DTYPES[name])


def random_array(rng: np.random.Generator, shape, name: str, *, low=None, high=None) -> np.ndarray:
    """Random values of dtype `name` (as `NUMPY_DTYPES[name]`): integers over the
    given range (default: the whole type), floats normal with unit scale unless
    a range is given; never all zeros."""
    shape = tuple(shape)
    if name == "int1":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if name in INT_DTYPES:
        info = np.iinfo(NUMPY_DTYPES[name])
        lo = info.min if low is None else low
        hi = info.max if high is None else high
        return rng.integers(lo, hi, size=shape, endpoint=True, dtype=NUMPY_DTYPES[name])
    if low is not None:
        values = rng.uniform(low, high, size=shape)
    else:
        values = rng.standard_normal(size=shape)
    return round_to(values, name)


def tensor(rng: np.random.Generator, shape, name: str, **kw) -> torch.Tensor:
    """`random_array` as a CPU tensor of dtype `name`."""
    return from_numpy(random_array(rng, shape, name, **kw), name)


# --- comparisons ---------------------------------------------------------------------------


def _describe_mismatch(actual: np.ndarray, expected: np.ndarray, bad: np.ndarray, what: str) -> str:
    where = np.argwhere(bad)
    lines = [f"{what}: {int(bad.sum())} of {bad.size} elements differ"]
    for index in where[:8]:
        index = tuple(int(i) for i in index)
        lines.append(f"  at {index}: got {actual[index]!r}, expected {expected[index]!r}")
    return "\n".join(lines)


def assert_equal(actual, expected, what: str = "output") -> None:
    """Exact equality, shape included; floats compare bit for bit except that
    any NaN equals any NaN (payloads differ between implementations)."""
    actual = to_numpy(actual) if isinstance(actual, torch.Tensor) else np.asarray(actual)
    expected = to_numpy(expected) if isinstance(expected, torch.Tensor) else np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != expected {expected.shape}"
    if actual.dtype.kind == "f" or expected.dtype.kind == "f":
        a = actual.astype(np.float64)
        e = expected.astype(np.float64)
        both_nan = np.isnan(a) & np.isnan(e)
        same = (a == e) & (np.signbit(a) == np.signbit(e))
        bad = ~(same | both_nan)
    else:
        bad = actual != expected
    assert not bad.any(), _describe_mismatch(actual, expected, bad, what)


def ulp_of(values: np.ndarray, name: str) -> np.ndarray:
    """The spacing of dtype `name` at each value's magnitude (the smallest
    subnormal spacing for tiny values)."""
    mant = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52, "float8e4nv": 3, "float8e5": 2}[name]
    min_exp = {"float16": -14, "bfloat16": -126, "float32": -126, "float64": -1022,
               "float8e4nv": -6, "float8e5": -14}[name]
    mag = np.abs(values.astype(np.float64))
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    exponent = np.maximum(exponent, min_exp)
    return np.exp2(exponent - mant)


def assert_close(actual, expected, *, name: str | None = None, ulps: float = 0.0, rtol: float = 0.0,
                 atol: float = 0.0, what: str = "output") -> None:
    """`|actual - expected| <= atol + rtol*|expected| + ulps*ulp(expected)`
    elementwise; NaN only where NaN is expected, infinities equal."""
    if name is None and isinstance(expected, torch.Tensor):
        name = dtype_name(expected.dtype)
    actual = to_numpy(actual) if isinstance(actual, torch.Tensor) else np.asarray(actual)
    expected = to_numpy(expected) if isinstance(expected, torch.Tensor) else np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != expected {expected.shape}"
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    # Where e is infinite or NaN the tolerance is NaN (0 * inf) and unused:
    # special_ok judges those elements.
    with np.errstate(invalid="ignore"):
        allowed = atol + rtol * np.abs(e)
        if ulps:
            allowed = allowed + ulps * ulp_of(e, name or "float32")
        finite_ok = np.abs(a - e) <= allowed
    special_ok = (np.isnan(a) & np.isnan(e)) | (np.isinf(e) & (a == e))
    bad = ~np.where(np.isfinite(e), finite_ok & np.isfinite(a), special_ok)
    assert not bad.any(), _describe_mismatch(actual, expected, bad, what)
