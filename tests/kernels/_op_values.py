"""Input values for the per-op sweep: which numbers each operation is fed.

Every generator returns a numpy array in the `NUMPY_DTYPES` representation of
its dtype, drawn from the given numpy Generator.
"""

from __future__ import annotations

import numpy as np

from tests.kernels._data import NUMPY_DTYPES, is_float, is_signed, random_array, round_to

_EXPONENT_RANGE = {"float16": 14, "bfloat16": 40, "float32": 40, "float64": 80,
                   "float8e4nv": 6, "float8e5": 14}

SPECIALS = (np.nan, np.inf, -np.inf, 0.0, -0.0)


def wide_floats(rng: np.random.Generator, shape, name: str, *, specials: bool = True) -> np.ndarray:
    """Floats of both signs over many binades; with `specials`, NaN, +-inf and
    +-0 sit in the first five elements (row-major)."""
    span = _EXPONENT_RANGE[name]
    mags = np.exp2(rng.uniform(-span, span, size=shape)) * rng.uniform(1.0, 2.0, size=shape)
    values = mags * rng.choice([-1.0, 1.0], size=shape)
    values = round_to(values, name)
    if specials and values.size >= len(SPECIALS):
        flat = values.reshape(-1)
        flat[: len(SPECIALS)] = SPECIALS
    return values


def floats_in(rng: np.random.Generator, shape, name: str, low: float, high: float) -> np.ndarray:
    return random_array(rng, shape, name, low=low, high=high)


def positive_floats(rng: np.random.Generator, shape, name: str, span: float = 30) -> np.ndarray:
    return round_to(np.exp2(rng.uniform(-span, span, size=shape)) * rng.uniform(1.0, 2.0, size=shape), name)


def ints(rng: np.random.Generator, shape, name: str, low=None, high=None) -> np.ndarray:
    """Integers in [low, high] clipped to the dtype's range (default: all of it)."""
    if name != "int1":
        info = np.iinfo(NUMPY_DTYPES[name])
        low = None if low is None else max(low, int(info.min))
        high = None if high is None else min(high, int(info.max))
    return random_array(rng, shape, name, low=low, high=high)


def divisors(rng: np.random.Generator, shape, name: str) -> np.ndarray:
    """Non-zero integers, never -1 (INT_MIN // -1 overflows): half small, half
    from the whole range."""
    if is_float(name):
        mags = np.exp2(rng.uniform(-8, 8, size=shape))
        return round_to(mags * rng.choice([-1.0, 1.0], size=shape), name)
    whole = random_array(rng, shape, name)
    small = ints(rng, shape, name, -9, 9)
    values = np.where(rng.random(size=shape) < 0.5, small, whole)
    values = np.where(values == 0, NUMPY_DTYPES[name].type(3), values)
    if is_signed(name):
        values = np.where(values == -1, NUMPY_DTYPES[name].type(-3), values)
    return values.astype(NUMPY_DTYPES[name])


def shift_amounts(rng: np.random.Generator, shape, name: str, width: int) -> np.ndarray:
    return rng.integers(0, width, size=shape).astype(NUMPY_DTYPES[name])


def values_for(rng: np.random.Generator, shape, name: str, kind: str) -> np.ndarray:
    """Values of a named kind: "any" (ints: whole range, floats: wide with
    specials), "finite" (no NaN/inf), "small" (|x| <= 100, exact in fp16)."""
    shape = tuple(shape)
    if name == "int1":
        return random_array(rng, shape, "int1")
    if kind == "any":
        return wide_floats(rng, shape, name) if is_float(name) else random_array(rng, shape, name)
    if kind == "finite":
        return wide_floats(rng, shape, name, specials=False) if is_float(name) else random_array(rng, shape, name)
    if kind == "small":
        if is_float(name):
            return round_to(np.round(rng.uniform(-100, 100, size=shape) * 4) / 4, name)
        return ints(rng, shape, name, -100, 100)
    raise ValueError(kind)

