"""A numpy model of Triton's Philox (TRITON_SEMANTICS 8), checked against the
sheet's reference values. It pins down the algorithm random.py implements;
the interpreter's tests can run random.py against the same model."""

from __future__ import annotations

import numpy as np

ROUND_A, ROUND_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
KEY_A, KEY_B = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32(seed: int, offsets: np.ndarray, n_rounds: int = 10):
    """The four u32 words `randint4x(seed, offsets)` returns (i32 or i64 offsets)."""
    seed64 = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    k0, k1 = np.uint32(seed64 & MASK32), np.uint32(seed64 >> np.uint64(32))
    c0 = offsets.astype(np.uint32)
    if offsets.dtype.itemsize == 8:
        c1 = (offsets >> 32).astype(np.uint32)
    else:
        c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    with np.errstate(over="ignore"):
        for _ in range(n_rounds):
            product_b = c2.astype(np.uint64) * ROUND_B
            product_a = c0.astype(np.uint64) * ROUND_A
            c0, c1, c2, c3 = (
                (product_b >> np.uint64(32)).astype(np.uint32) ^ c1 ^ k0,
                (product_b & MASK32).astype(np.uint32),
                (product_a >> np.uint64(32)).astype(np.uint32) ^ c3 ^ k1,
                (product_a & MASK32).astype(np.uint32),
            )
            k0 = np.uint32((int(k0) + int(KEY_A)) & 0xFFFFFFFF)
            k1 = np.uint32((int(k1) + int(KEY_B)) & 0xFFFFFFFF)
    return c0, c1, c2, c3


def uint_to_uniform_float(x: np.ndarray) -> np.ndarray:
    signed = x.view(np.int32)
    with np.errstate(over="ignore"):
        signed = np.where(signed < 0, -signed - 1, signed)
    return signed.astype(np.float32) * np.float32(4.6566127342e-10)


def pair_uniform_to_normal(u1: np.ndarray, u2: np.ndarray):
    u1 = np.maximum(np.float32(1e-7), u1)
    theta = np.float32(6.283185307179586) * u2
    radius = np.sqrt(np.float32(-2.0) * np.log(u1))
    return radius * np.cos(theta), radius * np.sin(theta)


def test_randint_reference_values():
    offsets = np.arange(4, dtype=np.int32)
    c0, _, _, _ = philox4x32(0, offsets)
    assert c0.tolist() == [1713891541, 4175744164, 83534633, 3381718825]
    c0, c1, _, _ = philox4x32(12345, offsets)
    assert c0.tolist() == [3522838145, 11954473, 1814877333, 3057540118]
    assert c1.tolist() == [796912209, 619747172, 1409597833, 2555317768]


def test_rand_and_randn_reference_values():
    offsets = np.arange(4, dtype=np.int32)
    for seed, rand, randn in [
        (0, [0.7980929, 0.05551759, 0.03889884, 0.42526442], [0.04655153, -0.38836142, -1.6379520, 0.63153148]),
        (12345, [0.35955063, 0.005566735, 0.84511805, 0.5762219],
         [-0.98624301, -0.77366710, -0.32186657, 0.38707107]),
    ]:
        c0, c1, _, _ = philox4x32(seed, offsets)
        np.testing.assert_allclose(uniform := uint_to_uniform_float(c0), rand, rtol=1e-6)
        assert uniform.dtype == np.float32 and (uniform < 1).all()
        normal, _ = pair_uniform_to_normal(uniform, uint_to_uniform_float(c1))
        np.testing.assert_allclose(normal, randn, rtol=1e-5)


def test_uniform_range_ends():
    words = np.array([0, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000], dtype=np.uint32)
    values = uint_to_uniform_float(words)
    assert values[0] == 0.0 and values[1] == 0.0
    assert values.max() == np.float32(1 - 2**-24) and values.max() < 1.0


def test_64_bit_offsets_use_the_high_word():
    rng = np.random.default_rng()
    low = rng.integers(0, 2**31, 8).astype(np.int64)
    same_low = philox4x32(7, low)[0]
    assert (philox4x32(7, low.astype(np.int32))[0] == same_low).all()
    assert (philox4x32(7, low + (1 << 32))[0] != same_low).all()
