"""Philox 4x32-10 and `rand`'s mapping to floats in numpy, written from
TRITON_SEMANTICS section 8, to check kernels that draw random numbers.

(tests/language/test_random_reference.py pins tritone's `tl.rand` & co. to
values recorded from upstream Triton; this module only lets a kernel test
predict which lanes a seeded dropout keeps.)
"""

from __future__ import annotations

import numpy as np

_MUL_A = np.uint64(0xD2511F53)
_MUL_B = np.uint64(0xCD9E8D57)
_KEY_A = np.uint32(0x9E3779B9)
_KEY_B = np.uint32(0xBB67AE85)
_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)


def philox(seed: int, offsets: np.ndarray, rounds: int = 10) -> tuple[np.ndarray, ...]:
    """The four uint32 words of `tl.randint4x(seed, offsets)` for integer `offsets`."""
    seed64 = np.uint64(seed % 2**64)
    k0 = np.uint32(int(seed64) & 0xFFFFFFFF)
    k1 = np.uint32(int(seed64) >> 32)
    offsets = np.asarray(offsets)
    c0 = offsets.astype(np.int64).astype(np.uint64) & _LOW32
    if offsets.dtype.itemsize == 8:
        c1 = (offsets.astype(np.int64) >> 32).astype(np.uint64) & _LOW32
    else:
        c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    with np.errstate(over="ignore"):
        for _ in range(rounds):
            prod_b = _MUL_B * c2
            prod_a = _MUL_A * c0
            c0, c1, c2, c3 = (
                (prod_b >> _SHIFT32) ^ c1 ^ np.uint64(k0),
                prod_b & _LOW32,
                (prod_a >> _SHIFT32) ^ c3 ^ np.uint64(k1),
                prod_a & _LOW32,
            )
            k0 = np.uint32(k0 + _KEY_A)
            k1 = np.uint32(k1 + _KEY_B)
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def uniform(words: np.ndarray) -> np.ndarray:
    """`uint_to_uniform_float` for uint32 words: fp32 in [0, 1)."""
    signed = words.astype(np.uint32).view(np.int32).astype(np.int64)
    folded = np.where(signed < 0, -signed - 1, signed)
    return (folded.astype(np.float32) * np.float32(4.6566127342e-10)).astype(np.float32)


def rand(seed: int, offsets: np.ndarray) -> np.ndarray:
    """`tl.rand(seed, offsets)`."""
    return uniform(philox(seed, offsets)[0])
