"""Tensor descriptors run by the CPU interpreter on fresh random inputs, against
numpy: loads (zero and NaN padding), stores, atomics, gather and scatter of
2-D to 5-D tensors of every dtype class, at offsets partly or wholly outside
the tensor, both as the descriptor ops (the interpreter's own meaning) and as
the pointer code `passes/lower_descriptors.py` writes for targets without TMA.
The tensors sit in wider storage, so reading or writing past the descriptor's
shape would show."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tritone.language as tl
from tritone.errors import InterpreterError
from tritone.frontend import ast_to_ir
from tritone.interpreter import run_kernel
from tritone.ir import verify
from tritone.ir.types import tensordesc_type
from tritone.language.core import constexpr
from tritone.passes import PassContext, lower_descriptors, run_pipeline
from tritone.runtime.jit import jit

RNG = np.random.default_rng()
OPTIONS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "debug": False}
FORMS = ["ops", "pointers"]
# (IR type, numpy type of the interpreter's memory): bf16 and fp8 are compared as their bits.
# Their random bits never make a NaN (one exponent bit cleared): the interpreter keeps NaNs, not their payloads.
NOT_NAN_BITS = {"bf16": 0xBFFF, "fp8e5": 0xBF}
DTYPES = [("fp32", np.float32), ("fp16", np.float16), ("bf16", np.uint16), ("fp8e5", np.uint8), ("i8", np.int8),
          ("i16", np.int16), ("i32", np.int32), ("u8", np.uint8), ("u16", np.uint16), ("u32", np.uint32),
          ("fp64", np.float64), ("i64", np.int64)]


def run(kernel, signature: dict, args: list, constexprs: dict, form: str, grid=(1,)):
    """Compile `kernel` and run it in the interpreter as the descriptor ops
    (`form` "ops") or as the pointer code the lowering pass makes ("pointers")."""
    module = run_pipeline(ast_to_ir(kernel, signature, constexprs, OPTIONS))
    if form == "pointers":
        lower_descriptors.run(module, PassContext())
        verify(module)
        assert not any(op.name.startswith(("descriptor_", "make_tensor_descriptor")) for op in module.walk())
        assert not any(isinstance(arg.type, tensordesc_type) for arg in module.kernel.args)
    run_kernel(module, grid, args)


def random_array(shape, np_type, type_name: str = "") -> np.ndarray:
    if np.issubdtype(np_type, np.floating):
        return RNG.uniform(-100, 100, shape).astype(np_type)
    info = np.iinfo(np_type)
    values = RNG.integers(info.min, info.max, shape, endpoint=True, dtype=np_type)
    if type_name in NOT_NAN_BITS:
        values &= np_type(NOT_NAN_BITS[type_name])
    return values


def storage_for(shape, np_type, type_name: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(random storage whose rows are wider than `shape`'s by a multiple of 16
    bytes, the view of `shape` at its start): the descriptor's tensor."""
    row = 16 // np.dtype(np_type).itemsize
    wide = (-(-shape[-1] // row) + 1) * row
    storage = random_array((*shape[:-1], wide), np_type, type_name)
    return storage, storage[..., :shape[-1]]


def strides_of(view: np.ndarray) -> tuple:
    """The element strides of `view` as a signature value: the last is the constant 1."""
    return tuple(s // view.itemsize for s in view.strides[:-1])


def block_coordinates(offsets, block) -> list[np.ndarray]:
    """The tensor coordinates of every element of a block at `offsets`, one array per dim."""
    return [np.asarray(offset + grid) for offset, grid in zip(offsets, np.indices(block))]


def inside(coordinates, shape) -> np.ndarray:
    mask = np.ones(coordinates[0].shape, dtype=bool)
    for coordinate, size in zip(coordinates, shape):
        mask &= (coordinate >= 0) & (coordinate < size)
    return mask


def window(view: np.ndarray, offsets, block, fill) -> np.ndarray:
    """What a descriptor load gives, by numpy: `view`'s elements at the block's
    coordinates, `fill` outside the tensor."""
    coordinates = block_coordinates(offsets, block)
    mask = inside(coordinates, view.shape)
    out = np.full(block, fill, view.dtype)
    out[mask] = view[tuple(c[mask] for c in coordinates)]
    return out


def signature(type_name: str, rank: int, **extra) -> dict:
    return {"X": f"*{type_name}", "Y": f"*{type_name}", "shape": ("i32",) * rank,
            "strides": ("i64",) * (rank - 1) + (constexpr(1),), "offsets": ("i32",) * rank, **extra}


# Shapes and blocks of each rank (blocks at least 16 bytes wide for 1-byte elements).
CASES = {
    1: ((37,), (32,)),
    2: ((9, 21), (8, 16)),
    3: ((3, 5, 19), (2, 4, 16)),
    4: ((2, 3, 3, 17), (2, 2, 4, 16)),
    5: ((1, 2, 3, 2, 18), (1, 2, 2, 2, 16)),
}


def random_offsets(shape, block) -> tuple[int, ...]:
    """Offsets from wholly before to wholly after the tensor, mostly straddling its edges."""
    return tuple(int(RNG.integers(-block_dim, size + 1)) for size, block_dim in zip(shape, block))


# -- loads -------------------------------------------------------------------------------

@jit
def load_kernel(X, Y, shape, strides, offsets, BLOCK: tl.constexpr, NUMEL: tl.constexpr, PADDING: tl.constexpr):
    desc = tl.make_tensor_descriptor(X, shape, strides, BLOCK, padding_option=PADDING)
    tl.store(Y + tl.reshape(tl.arange(0, NUMEL), BLOCK), desc.load(offsets))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("rank", sorted(CASES))
@pytest.mark.parametrize("type_name, np_type", DTYPES)
def test_load_pads_with_zeros(form, rank, type_name, np_type):
    shape, block = CASES[rank]
    if np.dtype(np_type).itemsize * block[-1] < 16:
        block = (*block[:-1], 16 // np.dtype(np_type).itemsize)
    storage, x = storage_for(shape, np_type, type_name)
    for _ in range(3):
        offsets = random_offsets(shape, block)
        y = random_array(block, np_type)
        run(load_kernel, signature(type_name, rank), [storage, y, *shape, *strides_of(x), *offsets],
            {"BLOCK": block, "NUMEL": int(np.prod(block)), "PADDING": "zero"}, form)
        np.testing.assert_array_equal(y, window(x, offsets, block, 0))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("rank", [2, 3, 5])
@pytest.mark.parametrize("type_name, np_type", [("fp32", np.float32), ("fp16", np.float16), ("fp64", np.float64)])
def test_load_pads_with_nans(form, rank, type_name, np_type):
    shape, block = CASES[rank]
    storage, x = storage_for(shape, np_type)
    # Every dim straddles an edge (where its block can): the block's corners are both inside and outside.
    offsets = tuple((-1 if block_dim > 1 else 0) if d % 2 else size - 1 for d, (size, block_dim)
                    in enumerate(zip(shape, block)))
    y = random_array(block, np_type)
    run(load_kernel, signature(type_name, rank), [storage, y, *shape, *strides_of(x), *offsets],
        {"BLOCK": block, "NUMEL": int(np.prod(block)), "PADDING": "nan"}, form)
    expected = window(x, offsets, block, np.nan)
    assert np.isnan(expected).any() and not np.isnan(expected).all()
    np.testing.assert_array_equal(y, expected)


@jit
def tiled_copy_kernel(X, Y, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    """Y = X by tiles, the grid covering the tensor with tiles that run over its edges."""
    source = tl.make_tensor_descriptor(X, [M, N], [stride, 1], [BM, BN])
    target = tl.make_tensor_descriptor(Y, [M, N], [stride, 1], [BM, BN])
    offsets = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    target.store(offsets, source.load(offsets))


@pytest.mark.parametrize("form", FORMS)
def test_tiled_copy_over_a_grid(form):
    m, n, bm, bn = 37, 45, 16, 16
    storage, x = storage_for((m, n), np.float32)
    out_storage, _ = storage_for((m, n), np.float32)
    before = out_storage.copy()
    run(tiled_copy_kernel, {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32", "stride": "i32"},
        [storage, out_storage, m, n, storage.shape[1]], {"BM": bm, "BN": bn}, form, grid=(3, 3))
    np.testing.assert_array_equal(out_storage[:, :n], x)
    np.testing.assert_array_equal(out_storage[:, n:], before[:, n:])


# -- stores ------------------------------------------------------------------------------

@jit
def store_kernel(X, Y, shape, strides, offsets, BLOCK: tl.constexpr, NUMEL: tl.constexpr):
    desc = tl.make_tensor_descriptor(Y, shape, strides, BLOCK)
    desc.store(offsets, tl.load(X + tl.reshape(tl.arange(0, NUMEL), BLOCK)))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("rank", sorted(CASES))
@pytest.mark.parametrize("type_name, np_type", DTYPES)
def test_store_drops_what_is_outside(form, rank, type_name, np_type):
    shape, block = CASES[rank]
    if np.dtype(np_type).itemsize * block[-1] < 16:
        block = (*block[:-1], 16 // np.dtype(np_type).itemsize)
    storage, y = storage_for(shape, np_type, type_name)
    for _ in range(3):
        offsets = random_offsets(shape, block)
        x = random_array(block, np_type, type_name)
        expected = storage.copy()
        coordinates = block_coordinates(offsets, block)
        mask = inside(coordinates, shape)
        expected[tuple(c[mask] for c in coordinates)] = x[mask]
        run(store_kernel, signature(type_name, rank), [x, storage, *shape, *strides_of(y), *offsets],
            {"BLOCK": block, "NUMEL": int(np.prod(block))}, form)
        np.testing.assert_array_equal(storage, expected)


@jit
def downcast_store_kernel(Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    desc = tl.make_tensor_descriptor(Y, [M, N], [N, 1], [BM, BN])
    desc.store([tl.program_id(0) * BM, 0], (rows * N + cols).to(tl.float32) / 7.0)


@pytest.mark.parametrize("form", FORMS)
def test_store_casts_to_the_descriptor_dtype(form):
    m, n, bm, bn = 16, 32, 8, 32
    y = np.zeros((m, n), np.float16)
    run(downcast_store_kernel, {"Y": "*fp16", "M": "i32", "N": "i32"}, [y, m, n], {"BM": bm, "BN": bn}, form,
        grid=(2,))
    np.testing.assert_array_equal(y, (np.arange(m * n, dtype=np.float32).reshape(m, n) / np.float32(7.0))
                                  .astype(np.float16))


# -- atomics -----------------------------------------------------------------------------

@jit
def atomic_kernel(X, Y, shape, strides, offsets, BLOCK: tl.constexpr, NUMEL: tl.constexpr, KIND: tl.constexpr):
    desc = tl.make_tensor_descriptor(Y, shape, strides, BLOCK)
    value = tl.load(X + tl.reshape(tl.arange(0, NUMEL), BLOCK))
    if KIND == "add":
        desc.atomic_add(offsets, value)
    elif KIND == "min":
        desc.atomic_min(offsets, value)
    elif KIND == "max":
        desc.atomic_max(offsets, value)
    elif KIND == "and":
        desc.atomic_and(offsets, value)
    elif KIND == "or":
        desc.atomic_or(offsets, value)
    else:
        desc.atomic_xor(offsets, value)


_NUMPY_ATOMICS = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
                  "or": np.bitwise_or, "xor": np.bitwise_xor}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind, type_name, np_type", [
    ("add", "i32", np.int32), ("add", "u32", np.uint32), ("add", "u64", np.uint64), ("add", "fp32", np.float32),
    ("add", "fp16", np.float16), ("min", "i32", np.int32), ("min", "i64", np.int64), ("max", "u32", np.uint32),
    ("max", "u64", np.uint64), ("and", "i64", np.int64), ("or", "u32", np.uint32), ("xor", "i32", np.int32),
])
def test_atomics_combine_inside_only(form, kind, type_name, np_type):
    shape, block = (10, 19), (8, 16)
    storage, y = storage_for(shape, np_type)
    if kind == "add":  # keep sums exact
        storage[...] = RNG.integers(-20 if np.issubdtype(np_type, np.signedinteger) else 0, 20, storage.shape)
    offsets = random_offsets(shape, block)
    x = random_array(block, np_type) if kind != "add" else RNG.integers(0, 20, block).astype(np_type)
    expected = storage.copy()
    coordinates = block_coordinates(offsets, block)
    mask = inside(coordinates, shape)
    where = tuple(c[mask] for c in coordinates)
    expected[where] = _NUMPY_ATOMICS[kind](expected[where], x[mask])
    run(atomic_kernel, signature(type_name, 2), [x, storage, *shape, *strides_of(y), *offsets],
        {"BLOCK": block, "NUMEL": int(np.prod(block)), "KIND": kind}, form)
    np.testing.assert_array_equal(storage, expected)


# fp16 and bf16 min/max (upstream: only where descriptors are TMA's, sm_90+): the
# interpreter computes them as the GPU's min.f16/max.f16 do, IEEE 754-2019
# minimumNumber/maximumNumber (a NaN loses to a number, -0.0 is below +0.0).

def float16_bits(values: np.ndarray, type_name: str) -> np.ndarray:
    """fp32 `values` as the interpreter's memory of `type_name`: fp16 numbers, or
    bf16 bits (truncated: exact for the values these tests use)."""
    values = np.asarray(values, dtype=np.float32)
    if type_name == "fp16":
        return values.astype(np.float16)
    return (values.view(np.uint32) >> 16).astype(np.uint16)


def as_float32(memory: np.ndarray, type_name: str) -> np.ndarray:
    if type_name == "fp16":
        return memory.astype(np.float32)
    return (memory.astype(np.uint32) << 16).view(np.float32)


@jit
def shared_min_max_kernel(X, Y, shape, strides, offsets, BLOCK: tl.constexpr, NUMEL: tl.constexpr,
                          KIND: tl.constexpr):
    desc = tl.make_tensor_descriptor(Y, shape, strides, BLOCK)
    value = tl.load(X + tl.program_id(0) * NUMEL + tl.reshape(tl.arange(0, NUMEL), BLOCK))
    if KIND == "min":
        desc.atomic_min(offsets, value)
    else:
        desc.atomic_max(offsets, value)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("type_name", ["fp16", "bf16"])
def test_16_bit_float_min_max_of_several_programs(form, kind, type_name):
    """Five programs reduce their blocks into the same elements (some outside the tensor)."""
    shape, block, programs = (10, 19), (8, 16), 5
    np_type = np.float16 if type_name == "fp16" else np.uint16
    storage, y = storage_for(shape, np_type, type_name)
    storage[...] = float16_bits(RNG.uniform(-100, 100, storage.shape), type_name)
    x = float16_bits(RNG.uniform(-100, 100, (programs, *block)), type_name)
    offsets = random_offsets(shape, block)
    expected = as_float32(storage, type_name)
    coordinates = block_coordinates(offsets, block)
    mask = inside(coordinates, shape)
    where = tuple(c[mask] for c in coordinates)
    reduce = np.minimum if kind == "min" else np.maximum
    expected[where] = reduce(expected[where], reduce.reduce(as_float32(x, type_name), axis=0)[mask])
    run(shared_min_max_kernel, signature(type_name, 2), [x, storage, *shape, *strides_of(y), *offsets],
        {"BLOCK": block, "NUMEL": int(np.prod(block)), "KIND": kind}, form, grid=(programs,))
    np.testing.assert_array_equal(as_float32(storage, type_name), expected)


def minimum_number(a: float, b: float, kind: str) -> float:
    """IEEE 754-2019 minimumNumber (`kind` "min") or maximumNumber of two floats."""
    if math.isnan(a) or math.isnan(b):
        return b if math.isnan(a) else a
    if a == b:  # zeros of either sign, or equal numbers
        negative = math.copysign(1, a) < 0 or math.copysign(1, b) < 0
        if kind == "max":
            negative = math.copysign(1, a) < 0 and math.copysign(1, b) < 0
        return math.copysign(abs(a), -1 if negative else 1)
    return min(a, b) if kind == "min" else max(a, b)


_SPECIAL_PAIRS = [(math.nan, 1.5), (-2.5, math.nan), (math.nan, math.nan), (0.0, -0.0), (-0.0, 0.0), (-0.0, -0.0),
                  (0.0, 0.0), (-math.inf, 3.0), (math.inf, -2.0), (-5.0, -7.0), (4.0, 4.0), (-0.0, 2.0),
                  (math.nan, -math.inf), (1.0, -0.0), (-3.0, -3.0), (0.0, -1.0)]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("type_name", ["fp16", "bf16"])
def test_16_bit_float_min_max_of_nans_and_zeros(form, kind, type_name):
    memory = float16_bits([pair[0] for pair in _SPECIAL_PAIRS], type_name)
    values = float16_bits([pair[1] for pair in _SPECIAL_PAIRS], type_name)
    n = len(_SPECIAL_PAIRS)
    run(shared_min_max_kernel, signature(type_name, 1), [values, memory, n, 0],
        {"BLOCK": (n,), "NUMEL": n, "KIND": kind}, form)
    got = as_float32(memory, type_name)
    for (a, b), result in zip(_SPECIAL_PAIRS, got):
        want = minimum_number(a, b, kind)
        assert (math.isnan(want) and math.isnan(result)) or (
            want == result and math.copysign(1, want) == math.copysign(1, result)), (a, b, result)


# -- gather and scatter ------------------------------------------------------------------

@jit
def gather_kernel(X, Y, Index, M, N, stride, y, ROWS: tl.constexpr, COLS: tl.constexpr, PADDING: tl.constexpr):
    desc = tl.make_tensor_descriptor(X, [M, N], [stride, 1], [1, COLS], padding_option=PADDING)
    rows = desc.gather(tl.load(Index + tl.arange(0, ROWS)), y)
    tl.store(Y + tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :], rows)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("type_name, np_type, padding", [("fp32", np.float32, "nan"), ("fp16", np.float16, "zero"),
                                                         ("i8", np.int8, "zero")])
def test_gather_rows(form, type_name, np_type, padding):
    m, n, rows, cols = 20, 70, 16, 32 if np_type != np.int8 else 32
    storage, x = storage_for((m, n), np_type)
    index = RNG.integers(-3, m + 3, rows).astype(np.int32)  # some rows outside the tensor
    column = int(RNG.integers(-8, n - cols + 9))
    y = random_array((rows, cols), np_type)
    run(gather_kernel, {"X": f"*{type_name}", "Y": f"*{type_name}", "Index": "*i32", "M": "i32", "N": "i32",
                        "stride": "i32", "y": "i32"},
        [storage, y, index, m, n, storage.shape[1], column], {"ROWS": rows, "COLS": cols, "PADDING": padding}, form)
    fill = np.nan if padding == "nan" else 0
    expected = np.stack([window(x, (int(r), column), (1, cols), fill)[0] for r in index])
    np.testing.assert_array_equal(y, expected)


@jit
def scatter_kernel(X, Y, Index, M, N, stride, y, ROWS: tl.constexpr, COLS: tl.constexpr):
    desc = tl.make_tensor_descriptor(Y, [M, N], [stride, 1], [1, COLS])
    desc.scatter(tl.load(X + tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]),
                 tl.load(Index + tl.arange(0, ROWS)), y)


@pytest.mark.parametrize("form", FORMS)
def test_scatter_rows(form):
    m, n, rows, cols = 24, 40, 8, 16
    storage, y = storage_for((m, n), np.float32)
    index = RNG.permutation(np.arange(-2, m + 2))[:rows].astype(np.int32)  # distinct rows, some outside
    column = int(RNG.integers(-4, n - cols + 5))
    x = random_array((rows, cols), np.float32)
    expected = storage.copy()
    for row, values in zip(index, x):
        coordinates = block_coordinates((int(row), column), (1, cols))
        mask = inside(coordinates, (m, n))
        expected[tuple(c[mask] for c in coordinates)] = values[mask[0]]
    run(scatter_kernel, {"X": "*fp32", "Y": "*fp32", "Index": "*i32", "M": "i32", "N": "i32", "stride": "i32",
                         "y": "i32"}, [x, storage, index, m, n, storage.shape[1], column], {"ROWS": rows, "COLS": cols},
        form)
    np.testing.assert_array_equal(storage, expected)


# -- descriptors through control flow and calls --------------------------------------------

@jit(noinline=True)
def _make(ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    return tl.make_tensor_descriptor(ptr, [M, N], [N, 1], [BM, BN])


@jit(noinline=True)
def _negate_block(source, target, m, n):
    target.store([m, n], -source.load([m, n]))


@jit
def carried_kernel(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    descs = (_make(X, M, N, BM, BN), _make(Y, M, N, BM, BN))
    for i in range(0, N, BN):
        if (i // BN) % 2 == 0:
            descs = (_make(X, M, N, BM, BN), descs[1])
        tl.static_assert(descs[0].block_shape == [BM, BN])
        _negate_block(descs[0], descs[1], tl.program_id(0) * BM, i)
    k = 0
    while k < N:
        descs[1].store([tl.program_id(0) * BM, k], descs[1].load([tl.program_id(0) * BM, k]) * 2)
        k += BN


@pytest.mark.parametrize("form", FORMS)
def test_descriptors_through_loops_tuples_and_calls(form):
    m, n, bm, bn = 16, 64, 8, 16
    x = random_array((m, n), np.float32)
    y = random_array((m, n), np.float32)
    run(carried_kernel, {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32"}, [x, y, m, n], {"BM": bm, "BN": bn},
        form, grid=(2,))
    np.testing.assert_array_equal(y, -2 * x)


@jit
def matmul_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(A, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(B, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(C, [M, N], [N, 1], [BM, BN])
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([m, k]), b_desc.load([k, n]), acc)
    c_desc.store([m, n], acc.to(c_desc.dtype))


@pytest.mark.parametrize("form", FORMS)
def test_matmul_with_ragged_edges(form):
    m, n, k = 40, 24, 40  # none a multiple of the blocks: the padding must be zeros
    a = RNG.uniform(-1, 1, (m, k)).astype(np.float16)
    b = RNG.uniform(-1, 1, (k, n)).astype(np.float16)
    c = random_array((m, n), np.float16)
    run(matmul_kernel, {"A": "*fp16", "B": "*fp16", "C": "*fp16", "M": "i32", "N": "i32", "K": "i32"},
        [a, b, c, m, n, k], {"BM": 16, "BN": 16, "BK": 16}, form, grid=(3, 2))
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2,
                               atol=1e-2)


# -- checks at run time --------------------------------------------------------------------

@jit
def copy_kernel(X, Y, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(X, [M, N], [stride, 1], [BM, BN])
    tl.store(Y + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], desc.load([0, 0]))


def test_misaligned_strides_and_bases_are_reported_at_the_kernel_line():
    x = random_array((8, 40), np.float32)
    y = np.zeros((8, 16), np.float32)
    sig = {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32", "stride": "i32"}
    with pytest.raises(InterpreterError, match=r"stride 0 is 10 elements of 4 bytes.*\n.*test_tensor_descriptor.py"):
        run(copy_kernel, sig, [x, y, 8, 10, 10], {"BM": 8, "BN": 16}, "ops")
    with pytest.raises(InterpreterError, match=r"base address .* must be 16-byte aligned"):
        run(copy_kernel, sig, [x.reshape(-1)[1:], y, 8, 10, 40], {"BM": 8, "BN": 16}, "ops")
