"""`tl.dot_scaled` against a numpy model written from the format definitions: operands
decoded from their bit patterns (e2m1, e4m3, e5m2, bf16, fp16), e8m0 scales turned into
the 16-bit compute type the way upstream Triton does on GPUs without block-scaled MMA
(bf16: the exponent byte as bf16 bits; fp16: through fp32, rounded), products rounded to
that type, and a float64 matmul that the fp32-accumulating kernel must match."""

from __future__ import annotations

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource
from tritone.errors import CompilationError

RNG = np.random.default_rng()

# format -> (exponent bits, mantissa bits, bias, which codes are not finite)
FORMATS = {"e2m1": (2, 1, 1, None), "e4m3": (4, 3, 7, "fn"), "e5m2": (5, 2, 15, "ieee"),
           "bf16": (8, 7, 127, "ieee"), "fp16": (5, 10, 15, "ieee")}


# -- the numpy model -------------------------------------------------------------------------

def decode(bits: np.ndarray, fmt: str) -> np.ndarray:
    """float64 values of the bit patterns `bits` in format `fmt`."""
    ebits, mbits, bias, specials = FORMATS[fmt]
    bits = bits.astype(np.int64)
    sign = np.where((bits >> (ebits + mbits)) & 1, -1.0, 1.0)
    exponent = (bits >> mbits) & ((1 << ebits) - 1)
    mantissa = bits & ((1 << mbits) - 1)
    magnitude = np.where(exponent == 0, mantissa * np.exp2(1.0 - bias - mbits),
                         (1 + mantissa / 2**mbits) * np.exp2(exponent - float(bias)))
    top = (1 << ebits) - 1
    if specials == "ieee":
        magnitude = np.where(exponent == top, np.where(mantissa == 0, np.inf, np.nan), magnitude)
    elif specials == "fn":  # e4m3fn: no infinities, all-ones is NaN
        magnitude = np.where((exponent == top) & (mantissa == (1 << mbits) - 1), np.nan, magnitude)
    return sign * magnitude


def unpack_e2m1(packed: np.ndarray, axis: int) -> np.ndarray:
    """The e2m1 codes of `packed` (uint8), the low nibble first, along `axis`."""
    pairs = np.stack([packed & 0xF, packed >> 4], axis=axis % packed.ndim + 1)
    shape = list(packed.shape)
    shape[axis] *= 2
    return pairs.reshape(shape)


def round_to(values: np.ndarray, compute: str) -> np.ndarray:
    """`values` rounded to bf16 or fp16 (nearest even), as float64."""
    if compute == "fp16":
        return values.astype(np.float16).astype(np.float64)
    # bf16: every value here is exact in fp32, so round the fp32 bits once
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    finite = np.isfinite(values)
    return np.where(finite, rounded.astype(np.uint32).view(np.float32), values).astype(np.float64)


def scale_factors(scale: np.ndarray, compute: str, fast_math: bool) -> np.ndarray:
    """What e8m0 exponents `scale` multiply by in the compute type: 2^(s - 127), with bf16
    taking s as its exponent field (0 is zero, 0xFF infinity) and fp16 rounding the fp32
    value (far-off scales become 0 or inf); 0xFF is NaN unless `fast_math`."""
    s = scale.astype(np.int64)
    if compute == "bf16":
        factors = np.where(s == 0, 0.0, np.where(s == 0xFF, np.inf, np.exp2(s - 127.0)))
    else:
        with np.errstate(over="ignore"):
            factors = np.where(s == 0xFF, np.inf, np.exp2(s - 127.0)).astype(np.float16).astype(np.float64)
    return factors if fast_math else np.where(s == 0xFF, np.nan, factors)


def operand(bits, fmt, compute, scale=None, k_axis=-1, packed_axis=-1, fast_math=False, scale_fmt="e8m0"):
    """The float64 values the kernel multiplies: decoded, scaled, rounded to `compute`."""
    if fmt == "e2m1":
        bits = unpack_e2m1(bits, packed_axis)
    values = round_to(decode(bits, fmt), compute)
    if scale is None:
        return values
    if scale_fmt == "e8m0":
        factors = scale_factors(scale, compute, fast_math)
        group = 32
    else:
        factors, group = round_to(decode(scale, scale_fmt), compute), 16
    if k_axis == -2:
        factors = np.swapaxes(factors, -1, -2)
    with np.errstate(invalid="ignore", over="ignore"):
        return round_to(values * np.repeat(factors, group, axis=k_axis), compute)


def check_close(got, a, b, acc=None):
    """`got` (fp32) against the float64 product of the decoded operands, within fp32
    accumulation error; NaNs in the same places."""
    with np.errstate(invalid="ignore", over="ignore"):
        exact = np.matmul(a, b) + (0 if acc is None else acc)
        magnitude = np.matmul(np.abs(a), np.abs(b)) + (0 if acc is None else np.abs(acc))
    assert np.array_equal(np.isnan(got), np.isnan(exact))
    finite = np.isfinite(exact)
    assert np.array_equal(got[~finite & ~np.isnan(exact)], exact[~finite & ~np.isnan(exact)])
    bound = (a.shape[-1] + 2) * 2.0**-24 * magnitude[finite]
    assert np.all(np.abs(got[finite] - exact[finite]) <= bound)


def random_bits(shape, fmt: str) -> np.ndarray:
    """Random finite bit patterns of `fmt` (uint8 for fp4/fp8, packed fp4; uint16 else)."""
    if fmt in ("bf16", "fp16"):
        values = RNG.standard_normal(shape) * 4
        if fmt == "fp16":
            return values.astype(np.float16).view(np.uint16)
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    bits = RNG.integers(0, 256, shape, dtype=np.uint8)
    if fmt == "e4m3":
        bits = np.where(bits & 0x7F == 0x7F, bits ^ 0x01, bits)  # NaN -> 448 or -448
    elif fmt == "e5m2":
        bits = np.where(bits & 0x7C == 0x7C, bits & 0xF3, bits)  # inf/NaN -> a normal number
    return bits.astype(np.uint8)


# -- kernels ---------------------------------------------------------------------------

@triton.constexpr_function
def format_dtype(fmt):
    return {"e4m3": tl.float8e4nv, "e5m2": tl.float8e5, "bf16": tl.bfloat16, "fp16": tl.float16}.get(fmt)


@triton.jit
def load_2d(ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    return tl.load(ptr + tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :])


@triton.jit
def as_format(x, FMT: tl.constexpr, TYPED: tl.constexpr):
    """`x` (bits) as the float dtype of `FMT` when TYPED, else the bits themselves."""
    if TYPED and FMT != "e2m1":
        return x.to(format_dtype(FMT), bitcast=True)
    return x


@triton.jit
def scaled_dot_kernel(A, A_SCALE, B, B_SCALE, ACC, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                      A_ROWS: tl.constexpr, A_COLS: tl.constexpr, B_ROWS: tl.constexpr, B_COLS: tl.constexpr,
                      A_FMT: tl.constexpr, B_FMT: tl.constexpr, A_KPACK: tl.constexpr, B_KPACK: tl.constexpr,
                      GROUP: tl.constexpr, FP8_SCALES: tl.constexpr, FAST_MATH: tl.constexpr, TYPED: tl.constexpr):
    a = as_format(load_2d(A, A_ROWS, A_COLS), A_FMT, TYPED)
    b = as_format(load_2d(B, B_ROWS, B_COLS), B_FMT, TYPED)
    a_scale = A_SCALE
    b_scale = B_SCALE
    if A_SCALE is not None:
        a_scale = load_2d(A_SCALE, M, K // GROUP)
        if FP8_SCALES:
            a_scale = a_scale.to(tl.float8e4nv, bitcast=True)
    if B_SCALE is not None:
        b_scale = load_2d(B_SCALE, N, K // GROUP)
        if FP8_SCALES:
            b_scale = b_scale.to(tl.float8e4nv, bitcast=True)
    if ACC is not None:
        c = tl.dot_scaled(a, a_scale, A_FMT, b, b_scale, B_FMT, load_2d(ACC, M, N), fast_math=FAST_MATH,
                          lhs_k_pack=A_KPACK, rhs_k_pack=B_KPACK)
    else:
        c = tl.dot_scaled(a, a_scale, A_FMT, b, b_scale, B_FMT, fast_math=FAST_MATH, lhs_k_pack=A_KPACK,
                          rhs_k_pack=B_KPACK)
    tl.store(C + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def stored_shape(rows, cols, fmt, k_pack, side):
    """The stored shape of an operand of `rows` x `cols` elements."""
    if fmt != "e2m1":
        return rows, cols
    packs_rows = (side == "rhs") == k_pack  # lhs packs K (its columns), rhs packs K (its rows)
    return (rows // 2, cols) if packs_rows else (rows, cols // 2)


def run(a, a_scale, a_fmt, b, b_scale, b_fmt, m, n, k, acc=None, a_kpack=True, b_kpack=True, group=32,
        fast_math=False, typed=False):
    c = np.full((m, n), np.float32(7.5))
    scaled_dot_kernel[(1,)](a, a_scale, b, b_scale, acc, c, m, n, k, *a.shape, *b.shape, a_fmt, b_fmt, a_kpack,
                            b_kpack, group, group == 16, fast_math, typed)
    return c


def compute_type(a_fmt, b_fmt):
    return "fp16" if "fp16" in (a_fmt, b_fmt) else "bf16"


def random_scales(shape, compute):
    # products stay exact in the compute type: fp16 keeps e5m2's 57344 below its 65504
    low, high = (100, 150) if compute == "bf16" else (118, 127)
    return RNG.integers(low, high + 1, shape, dtype=np.uint8)


# -- tests -------------------------------------------------------------------------------

@pytest.mark.parametrize("b_fmt", list(FORMATS))
@pytest.mark.parametrize("a_fmt", list(FORMATS))
def test_every_pair_of_formats(a_fmt, b_fmt):
    m, n, k = 16, 32, 64
    compute = compute_type(a_fmt, b_fmt)
    a = random_bits(stored_shape(m, k, a_fmt, True, "lhs"), a_fmt)
    b = random_bits(stored_shape(k, n, b_fmt, True, "rhs"), b_fmt)
    # the microscaled formats get scales, bf16 and fp16 none
    a_scale = random_scales((m, k // 32), compute) if a_fmt in ("e2m1", "e4m3", "e5m2") else None
    b_scale = random_scales((n, k // 32), compute) if b_fmt in ("e2m1", "e4m3", "e5m2") else None
    got = run(a, a_scale, a_fmt, b, b_scale, b_fmt, m, n, k)
    check_close(got, operand(a, a_fmt, compute, a_scale),
                operand(b, b_fmt, compute, b_scale, k_axis=-2, packed_axis=-2))


@pytest.mark.parametrize("a_fmt, b_fmt", [("e4m3", "bf16"), ("fp16", "e5m2"), ("e2m1", "e2m1")])
def test_typed_operands_and_an_accumulator(a_fmt, b_fmt):
    """Operands given in their float dtypes (not bit patterns), scales on both sides, and `acc`."""
    m, n, k = 32, 16, 64
    compute = compute_type(a_fmt, b_fmt)
    a = random_bits(stored_shape(m, k, a_fmt, True, "lhs"), a_fmt)
    b = random_bits(stored_shape(k, n, b_fmt, True, "rhs"), b_fmt)
    a_scale, b_scale = random_scales((m, k // 32), compute), random_scales((n, k // 32), compute)
    acc = RNG.standard_normal((m, n)).astype(np.float32) * 100
    got = run(a, a_scale, a_fmt, b, b_scale, b_fmt, m, n, k, acc=acc, typed=True)
    check_close(got, operand(a, a_fmt, compute, a_scale), operand(b, b_fmt, compute, b_scale, k_axis=-2,
                                                                  packed_axis=-2), acc.astype(np.float64))


@pytest.mark.parametrize("a_kpack, b_kpack", [(False, True), (True, False), (False, False)])
def test_e2m1_packed_along_m_or_n(a_kpack, b_kpack):
    m, n, k = 32, 64, 64
    a = random_bits(stored_shape(m, k, "e2m1", a_kpack, "lhs"), "e2m1")
    b = random_bits(stored_shape(k, n, "e2m1", b_kpack, "rhs"), "e2m1")
    a_scale, b_scale = random_scales((m, k // 32), "bf16"), random_scales((n, k // 32), "bf16")
    got = run(a, a_scale, "e2m1", b, b_scale, "e2m1", m, n, k, a_kpack=a_kpack, b_kpack=b_kpack)
    a_values = operand(a, "e2m1", "bf16", a_scale, packed_axis=-1 if a_kpack else -2)
    b_values = operand(b, "e2m1", "bf16", b_scale, k_axis=-2, packed_axis=-2 if b_kpack else -1)
    check_close(got, a_values, b_values)


def positive_nonzero(bits: np.ndarray, fmt: str) -> np.ndarray:
    """Finite `bits` made positive and normal: sign cleared, a zero exponent raised to 1."""
    if fmt == "e2m1":  # per nibble: sign bit 3, exponent bits 2-1
        low, high = bits & 0x7, (bits >> 4) & 0x7
        low, high = (np.where(code & 0x6 == 0, code | 0x2, code) for code in (low, high))
        return (low | (high << 4)).astype(np.uint8)
    ebits, mbits, _, _ = FORMATS[fmt]
    magnitude = bits & ((1 << (ebits + mbits)) - 1)
    exponent_field = ((1 << ebits) - 1) << mbits
    return np.where(magnitude & exponent_field == 0, magnitude | (1 << mbits), magnitude).astype(bits.dtype)


@pytest.mark.parametrize("a_fmt, b_fmt", [("e4m3", "e5m2"), ("e4m3", "fp16"), ("fp16", "e2m1")])
@pytest.mark.parametrize("fast_math", [False, True])
def test_scale_0xff_is_nan_unless_fast_math(a_fmt, b_fmt, fast_math):
    """Lhs row 3 (its first group) and rhs column 5 (its last group) have scale 0xFF: NaN,
    or with `fast_math` the infinity its bits spell (+inf here: all values are positive)."""
    m, n, k = 16, 16, 64
    compute = compute_type(a_fmt, b_fmt)
    a = positive_nonzero(random_bits(stored_shape(m, k, a_fmt, True, "lhs"), a_fmt), a_fmt)
    b = positive_nonzero(random_bits(stored_shape(k, n, b_fmt, True, "rhs"), b_fmt), b_fmt)
    a_scale = b_scale = None
    if a_fmt in ("e4m3", "e5m2", "e2m1"):
        a_scale = random_scales((m, k // 32), compute)
        a_scale[3, 0] = 0xFF
    if b_fmt in ("e4m3", "e5m2", "e2m1"):
        b_scale = random_scales((n, k // 32), compute)
        b_scale[5, 1] = 0xFF
    got = run(a, a_scale, a_fmt, b, b_scale, b_fmt, m, n, k, fast_math=fast_math)
    check_close(got, operand(a, a_fmt, compute, a_scale, fast_math=fast_math),
                operand(b, b_fmt, compute, b_scale, k_axis=-2, packed_axis=-2, fast_math=fast_math))
    expected = np.zeros((m, n), bool)
    if a_scale is not None:
        expected[3, :] = True
    if b_scale is not None:
        expected[:, 5] = True
    special = np.isinf(got) if fast_math else np.isnan(got)
    assert np.array_equal(special, expected) and np.all(got[special] > 0 if fast_math else True)


@pytest.mark.parametrize("compute", ["bf16", "fp16"])
def test_scales_at_the_edges_of_the_compute_type(compute):
    """e8m0 0 is zero in bf16; in fp16 small scales round to subnormals or zero, and the
    products round again, large ones overflow to infinity."""
    m, n, k = 16, 16, 64
    edges = [0, 1, 101, 102, 103, 104, 112, 113, 142, 143] if compute == "fp16" else [0, 1, 2, 100, 127, 200, 254]
    a = random_bits((m, k // 2), "e2m1")
    a_scale = RNG.choice(np.array(edges, np.uint8), (m, k // 32))
    b_fmt = compute
    b = random_bits((k, n), b_fmt)
    got = run(a, a_scale, "e2m1", b, None, b_fmt, m, n, k)
    check_close(got, operand(a, "e2m1", compute, a_scale), operand(b, b_fmt, compute))


@pytest.mark.parametrize("a_fmt, b_fmt", [("e2m1", "e2m1"), ("e4m3", "bf16"), ("e2m1", "fp16")])
def test_float8e4nv_scales_per_16_elements(a_fmt, b_fmt):
    """nvfp4-style scales: float8e4nv values, one per 16 elements of K."""
    m, n, k = 16, 32, 64
    compute = compute_type(a_fmt, b_fmt)
    a = random_bits(stored_shape(m, k, a_fmt, True, "lhs"), a_fmt)
    b = random_bits(stored_shape(k, n, b_fmt, True, "rhs"), b_fmt)
    # positive scales between 2^-3 and 2^3, away from e4m3's NaN
    a_scale = RNG.integers(0x20, 0x50, (m, k // 16), dtype=np.uint8)
    b_scale = RNG.integers(0x20, 0x50, (n, k // 16), dtype=np.uint8) if b_fmt == "e2m1" else None
    got = run(a, a_scale, a_fmt, b, b_scale, b_fmt, m, n, k, group=16)
    check_close(got, operand(a, a_fmt, compute, a_scale, scale_fmt="e4m3"),
                operand(b, b_fmt, compute, b_scale, k_axis=-2, packed_axis=-2, scale_fmt="e4m3"))


@triton.jit
def batched_kernel(A, A_SCALE, B, B_SCALE, C, BATCH: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                   K: tl.constexpr):
    i = tl.arange(0, BATCH)[:, None, None]
    m = tl.arange(0, M)[None, :, None]
    n = tl.arange(0, N)[None, None, :]
    a = tl.load(A + i * (M * K // 2) + m * (K // 2) + tl.arange(0, K // 2)[None, None, :])
    b = tl.load(B + i * (K * N) + tl.arange(0, K)[None, :, None] * N + n)
    groups = tl.arange(0, K // 32)[None, None, :]
    a_scale = tl.load(A_SCALE + i * (M * K // 32) + m * (K // 32) + groups)
    b_scale = tl.load(B_SCALE + i * (N * K // 32) + tl.arange(0, N)[None, :, None] * (K // 32) + groups)
    c = tl.dot_scaled(a, a_scale, "e2m1", b, b_scale, "e4m3")
    tl.store(C + i * (M * N) + m * N + n, c)


def test_batched_blocks():
    batch, m, n, k = 2, 16, 16, 64
    a = random_bits((batch, m, k // 2), "e2m1")
    b = random_bits((batch, k, n), "e4m3")
    a_scale = random_scales((batch, m, k // 32), "bf16")
    b_scale = random_scales((batch, n, k // 32), "bf16")
    c = np.full((batch, m, n), np.float32(7.5))
    batched_kernel[(1,)](a, a_scale, b, b_scale, c, batch, m, n, k)
    a_values = operand(a, "e2m1", "bf16", a_scale)
    b_values = operand(b, "e4m3", "bf16", b_scale, k_axis=-2)
    for i in range(batch):
        check_close(c[i], a_values[i], b_values[i])


# -- errors ----------------------------------------------------------------------------------

@triton.jit
def bad_call_kernel(A, B, A_SCALE, C, A_DTYPE: tl.constexpr, A_SHAPE0: tl.constexpr, A_SHAPE1: tl.constexpr,
                    B_SHAPE0: tl.constexpr, SCALE_COLS: tl.constexpr, A_FMT: tl.constexpr, A_KPACK: tl.constexpr,
                    OUT_DTYPE: tl.constexpr, SCALE_DTYPE: tl.constexpr):
    a = load_2d(A, A_SHAPE0, A_SHAPE1).to(A_DTYPE)
    b = load_2d(B, B_SHAPE0, 16).to(tl.bfloat16)
    scale = load_2d(A_SCALE, A_SHAPE0, SCALE_COLS).to(SCALE_DTYPE)
    c = tl.dot_scaled(a, scale, A_FMT, b, None, "bf16", lhs_k_pack=A_KPACK, out_dtype=OUT_DTYPE)
    tl.store(C + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], c)


@pytest.mark.parametrize("change, message", [
    ({"A_FMT": "e3m2"}, "invalid lhs_format 'e3m2'"),
    ({"A_DTYPE": tl.int32}, "lhs in e2m1 must be packed two per uint8, got int32"),
    ({"A_FMT": "e4m3", "A_DTYPE": tl.int32, "A_SHAPE1": 64}, "lhs in e4m3 must be fp8e4nv or uint8, got int32"),
    ({"A_SHAPE1": 16}, "the reduction dimension must hold as many elements on both sides"),
    ({"SCALE_COLS": 1}, r"lhs_scale must be a tensor of shape \[16, 2\]"),
    ({"A_FMT": "e4m3", "A_SHAPE1": 64, "A_KPACK": False}, "only e2m1 can be packed along a dimension other than K"),
    ({"OUT_DTYPE": tl.float16}, "only float32 is supported for out_dtype"),
    ({"SCALE_DTYPE": tl.int32}, "lhs_scale must be uint8 \\(e8m0\\) or float8e4nv, got int32"),
])
def test_bad_calls_name_what_is_wrong(change, message):
    # a valid call (e2m1 lhs of 16 x 64 with its scales, bf16 rhs of 64 x 16) and one change
    args = {"A_DTYPE": tl.uint8, "A_SHAPE0": 16, "A_SHAPE1": 32, "B_SHAPE0": 64, "SCALE_COLS": 2, "A_FMT": "e2m1",
            "A_KPACK": True, "OUT_DTYPE": tl.float32, "SCALE_DTYPE": tl.uint8}
    args.update(change)
    a = RNG.integers(0, 256, (args["A_SHAPE0"], args["A_SHAPE1"]), dtype=np.uint8)
    b = RNG.standard_normal((args["B_SHAPE0"], 16)).astype(np.float32)
    scale = RNG.integers(120, 130, (16, args["SCALE_COLS"]), dtype=np.uint8)
    with pytest.raises(CompilationError, match=message):
        bad_call_kernel[(1,)](a, b, scale, np.zeros((16, 16), np.float32), *args.values())


def test_a_valid_call_of_the_error_kernel_runs():
    """The baseline of the cases above compiles and computes."""
    a = RNG.integers(0, 256, (16, 32), dtype=np.uint8)
    b = RNG.standard_normal((64, 16)).astype(np.float32)
    scale = random_scales((16, 2), "bf16")
    c = np.zeros((16, 16), np.float32)
    bad_call_kernel[(1,)](a, b, scale, c, tl.uint8, 16, 32, 64, 2, "e2m1", True, tl.float32, tl.uint8)
    check_close(c, operand(a, "e2m1", "bf16", scale), round_to(b.astype(np.float64), "bf16"))


# -- CUDA code -----------------------------------------------------------------------------

@pytest.mark.parametrize("arch", [80, 90])
def test_the_cuda_backend_compiles_it_to_a_16_bit_mma(arch, tmp_path, monkeypatch):
    """A bf16 tensor-core dot: mma.sync on Ampere, wgmma on Hopper."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    m, n, k = 64, 64, 64
    signature = {"A": "*u8", "A_SCALE": "*u8", "B": "*bf16", "B_SCALE": "constexpr", "ACC": "constexpr",
                 "C": "*fp32"}
    constexprs = {"B_SCALE": None, "ACC": None, "M": m, "N": n, "K": k, "A_ROWS": m, "A_COLS": k // 2, "B_ROWS": k,
                  "B_COLS": n, "A_FMT": "e2m1", "B_FMT": "bf16", "A_KPACK": True, "B_KPACK": True, "GROUP": 32,
                  "FP8_SCALES": False, "FAST_MATH": False, "TYPED": True}
    signature.update({name: "constexpr" for name in constexprs if name not in signature})
    compiled = triton.compile(ASTSource(scaled_dot_kernel, signature, constexprs), target=GPUTarget("cuda", arch, 32))
    instruction = ("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" if arch == 90
                   else "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
    assert instruction in compiled.asm["ptx"]
    assert compiled.metadata.shared <= 48 * 1024
