"""Counter-based random numbers: Philox 4x32 (SEMANTICS 8), written in Triton.

Same seed and offsets give the same numbers as Triton: `randint` returns the
first Philox word (uint32), `rand` maps it to `[0, 1)`, `randn` turns two
uniforms into a normal variate with Box-Muller. All integer arithmetic is
unsigned 32-bit and wraps, so it is built with `sanitize_overflow=False`.
"""

from __future__ import annotations

from ..runtime.jit import jit
from . import core, math

__all__ = ["N_ROUNDS_DEFAULT", "pair_uniform_to_normal", "philox", "philox_impl", "rand", "rand4x", "randint",
           "randint4x", "randn", "randn4x", "uint_to_uniform_float"]

N_ROUNDS_DEFAULT = core.constexpr(10)

# Philox 4x32 multipliers and Weyl key increments (Salmon et al., 2011).
PHILOX_ROUND_A = core.constexpr(0xD2511F53)
PHILOX_ROUND_B = core.constexpr(0xCD9E8D57)
PHILOX_KEY_A = core.constexpr(0x9E3779B9)
PHILOX_KEY_B = core.constexpr(0xBB67AE85)
# The 64-bit-word variant used when the counters are 64-bit.
PHILOX_ROUND_A_64 = core.constexpr(0xD2E7470EE14C6C93)
PHILOX_ROUND_B_64 = core.constexpr(0xCA5A826395121157)
PHILOX_KEY_A_64 = core.constexpr(0x9E3779B97F4A7C15)
PHILOX_KEY_B_64 = core.constexpr(0xBB67AE8584CAA73B)


@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """`n_rounds` Philox rounds on the counter words `c0..c3` with key `(k0, k1)`;
    words and keys share one unsigned dtype (u32, or u64 for the 64-bit variant)."""
    if c0.dtype == core.uint32:
        round_a: core.constexpr = PHILOX_ROUND_A
        round_b: core.constexpr = PHILOX_ROUND_B
        key_a: core.constexpr = PHILOX_KEY_A
        key_b: core.constexpr = PHILOX_KEY_B
    else:
        core.static_assert(c0.dtype == core.uint64, "philox counters must be uint32 or uint64")
        round_a: core.constexpr = PHILOX_ROUND_A_64
        round_b: core.constexpr = PHILOX_ROUND_B_64
        key_a: core.constexpr = PHILOX_KEY_A_64
        key_b: core.constexpr = PHILOX_KEY_B_64
    for _ in core.static_range(n_rounds):
        product_b = core.mul(c2, round_b, sanitize_overflow=False)
        product_a = core.mul(c0, round_a, sanitize_overflow=False)
        high_b = math.umulhi(c2, round_b)
        high_a = math.umulhi(c0, round_a)
        c0 = high_b ^ c1 ^ k0
        c1 = product_b
        c2 = high_a ^ c3 ^ k1
        c3 = product_a
        k0 = core.add(k0, key_a, sanitize_overflow=False)
        k1 = core.add(k1, key_b, sanitize_overflow=False)
    return c0, c1, c2, c3


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """Philox on counters `c0..c3` (32-bit: Philox 4x32 keyed by the low and high words
    of `seed` as u64; 64-bit: the 64-bit variant keyed by `seed`)."""
    seed = core.to_tensor(seed)
    core.static_assert(seed.dtype.is_int(), "the seed of Triton's random numbers must be an integer scalar "
                       "(not a float, nor a pointer: pass seed_tensor.item(), not the tensor)")
    seed = seed.to(core.uint64)
    c0 = core.to_tensor(c0)
    c1 = core.to_tensor(c1)
    c2 = core.to_tensor(c2)
    c3 = core.to_tensor(c3)
    if c0.dtype.primitive_bitwidth == 32:
        key_lo = (seed & 0xFFFFFFFF).to(core.uint32)
        key_hi = (seed >> 32).to(core.uint32)
        counter_dtype: core.constexpr = core.uint32
    else:
        core.static_assert(c0.dtype.primitive_bitwidth == 64, "philox counters must be 32- or 64-bit integers")
        key_lo = seed
        key_hi = core.full((), 0, core.uint64)
        counter_dtype: core.constexpr = core.uint64
    c0 = c0.to(counter_dtype, bitcast=True)
    c1 = c1.to(counter_dtype, bitcast=True)
    c2 = c2.to(counter_dtype, bitcast=True)
    c3 = c3.to(counter_dtype, bitcast=True)
    return philox_impl(c0, c1, c2, c3, key_lo, key_hi, n_rounds)


@jit
def randint4x(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of random uint32 for each `offset` (the four Philox words of the
    counter `(offset low, offset high for 64-bit offsets, 0, 0)`)."""
    offset = core.to_tensor(offset)
    counter_lo = offset.to(core.uint32)
    zero = core.full(counter_lo.shape, 0, core.uint32)
    if offset.dtype.primitive_bitwidth > 32:
        counter_hi = (offset >> 32).to(core.uint32)
    else:
        counter_hi = zero
    return philox(seed, counter_lo, counter_hi, zero, zero, n_rounds)


@jit
def randint(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """A block of random uint32, one per `offset` (the first word of `randint4x`)."""
    first, _, _, _ = randint4x(seed, offset, n_rounds)
    return first


@jit
def uint_to_uniform_float(x):
    """Random 32- or 64-bit integers to fp32 uniforms in `[0, 1)`."""
    if x.dtype == core.uint32 or x.dtype == core.int32:
        x = x.to(core.int32, bitcast=True)
        scale = 4.6566127342e-10
    else:
        core.static_assert(x.dtype == core.uint64 or x.dtype == core.int64, "expected 32- or 64-bit integers")
        x = x.to(core.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    # x and ~x give the same value, so the sign bit is used up (INT_MIN wraps to INT_MAX)
    flipped = core.sub(core.sub(0, x, sanitize_overflow=False), 1, sanitize_overflow=False)
    x = core.where(x < 0, flipped, x)
    return x * scale


@jit
def rand(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """A block of fp32 uniforms in `[0, 1)`, one per `offset`."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@jit
def rand4x(seed, offsets, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of fp32 uniforms in `[0, 1)` per offset."""
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    return (uint_to_uniform_float(i1), uint_to_uniform_float(i2), uint_to_uniform_float(i3),
            uint_to_uniform_float(i4))


@jit
def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniforms to two independent standard normal variates."""
    u1 = core.maximum(1.0e-7, u1)
    theta = 6.283185307179586 * u2
    radius = math.sqrt(-2.0 * math.log(u1))
    return radius * math.cos(theta), radius * math.sin(theta)


@jit
def randn(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """A block of standard normal fp32 variates, one per `offset`."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    normal, _ = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    return normal


@jit
def randn4x(seed, offset, n_rounds: core.constexpr = N_ROUNDS_DEFAULT):
    """Four blocks of standard normal fp32 variates per offset."""
    i1, i2, i3, i4 = randint4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    n3, n4 = pair_uniform_to_normal(uint_to_uniform_float(i3), uint_to_uniform_float(i4))
    return n1, n2, n3, n4
