"""Reductions, scans, dots, and the shape-changing ops of docs/IR.md.

`reduce` and `scan` run the op's combine region with whole arrays as
arguments (the region's elementwise ops are shape-agnostic), so a reduction
over n elements costs log2(n) region executions, never one per element.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..ir.core import Operation
from ..ir.types import type_text
from . import floats
from . import values as V
from .memory import AccessError

Combine = Callable[[list, list], list]


def _take(x: np.ndarray, axis: int, index) -> np.ndarray:
    return x[(slice(None),) * axis + (index,)]


def reduce_tree(inputs: Sequence[np.ndarray], axis: int, combine: Combine) -> list:
    """Combine the inputs along `axis` as a balanced tree of adjacent pairs:
    (x0 . x1) . (x2 . x3) ..., left operand always the lower indices, so any
    associative combine gives the ordered result. The axis is dropped."""
    xs = [np.asarray(x) for x in inputs]
    while xs[0].shape[axis] > 1:
        n = xs[0].shape[axis]
        even = n - n % 2
        left = [_take(x, axis, slice(0, even, 2)) for x in xs]
        right = [_take(x, axis, slice(1, even, 2)) for x in xs]
        pairs = [np.broadcast_to(r, left[0].shape) for r in combine(left, right)]
        if n % 2:
            pairs = [np.concatenate([p, _take(x, axis, slice(n - 1, n))], axis=axis) for p, x in zip(pairs, xs)]
        xs = pairs
    return [_take(x, axis, 0)[()] for x in xs]


def scan(inputs: Sequence[np.ndarray], axis: int, reverse: bool, combine: Combine) -> list:
    """Inclusive scan along `axis` (Hillis-Steele: log2(n) steps). Forward:
    r[i] = f(r[i-1], x[i]); reverse: r[i] = f(r[i+1], x[i]): the accumulated
    part is always the left operand."""
    xs = [np.asarray(x) for x in inputs]
    if reverse:
        xs = [np.flip(x, axis) for x in xs]
    n = xs[0].shape[axis]
    step = 1
    while step < n:
        left = [_take(x, axis, slice(0, n - step)) for x in xs]
        right = [_take(x, axis, slice(step, n)) for x in xs]
        combined = combine(left, right)
        xs = [np.concatenate([_take(x, axis, slice(0, step)), np.broadcast_to(c, r.shape).astype(x.dtype)], axis=axis)
              for x, c, r in zip(xs, combined, right)]
        step *= 2
    if reverse:
        xs = [np.flip(x, axis) for x in xs]
    return [np.ascontiguousarray(x) for x in xs]


# ---------------------------------------------------------------------------
# dot


def make_dot(op: Operation) -> Callable:
    a_ty = V.scalar_of(op.operands[0].type)
    acc_ty = V.scalar_of(op.operands[2].type)
    precision = op.attrs.get("input_precision", "tf32")
    if a_ty.is_int():
        def int_dot(a, b, acc):
            # int8 products summed exactly, then saturated into the i32 accumulator
            # (the tensor cores' `.satfinite`, as Triton's GPU computes it).
            product = np.matmul(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
            info = np.iinfo(np.int32)
            return np.clip(product + np.asarray(acc, dtype=np.int64), info.min, info.max).astype(V.value_dtype(acc_ty))
        return int_dot
    truncate_tf32 = type_text(a_ty) == "fp32" and precision == "tf32"

    def float_dot(a, b, acc):
        if truncate_tf32:
            a, b = floats.round_tf32(a), floats.round_tf32(b)
        # Products of narrow floats are exact in float64; the float64 sum stands
        # for the GPU's fp32 accumulation (whose order is not specified).
        total = np.matmul(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
        return V.round_value(total + np.asarray(acc, dtype=np.float64), acc_ty)
    return float_dot


# ---------------------------------------------------------------------------
# shapes


def make_splat(op: Operation) -> Callable:
    shape = V.shape_of(op.results[0].type)
    vdt = V.value_dtype(op.results[0].type)
    return lambda x: np.full(shape, x, dtype=vdt)


def make_broadcast(op: Operation) -> Callable:
    shape = V.shape_of(op.results[0].type)
    return lambda x: np.broadcast_to(x, shape)


def make_expand_dims(op: Operation) -> Callable:
    axis = op.attrs["axis"]
    return lambda x: np.expand_dims(x, axis)


def make_reshape(op: Operation) -> Callable:
    shape = V.shape_of(op.results[0].type)
    return lambda x: np.reshape(x, shape)[()]


def make_permute(op: Operation) -> Callable:
    order = tuple(op.attrs["order"])
    return lambda x: np.transpose(x, order)


def make_join(op: Operation) -> Callable:
    return lambda a, b: np.stack([np.asarray(a), np.asarray(b)], axis=-1)


def make_split(op: Operation) -> Callable:
    return lambda x: (np.asarray(x)[..., 0][()], np.asarray(x)[..., 1][()])


def make_cat(op: Operation) -> Callable:
    return lambda a, b: np.concatenate([a, b])


def make_gather(op: Operation) -> Callable:
    axis = op.attrs["axis"]

    def gather(src, index):
        index = np.asarray(index).astype(np.int64)
        size = np.shape(src)[axis]
        bad = (index < 0) | (index >= size)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise AccessError(f"gather index {int(index[where])} at {where} is outside [0, {size}) of axis {axis}")
        return np.take_along_axis(np.asarray(src), index.astype(np.intp), axis)
    return gather


def make_histogram(op: Operation) -> Callable:
    bins = op.attrs["num_bins"]

    def histogram(x, mask=None):
        x = np.asarray(x).astype(np.int64)
        valid = (x >= 0) & (x < bins)
        if mask is not None:
            valid &= np.asarray(mask, dtype=bool)
        return np.bincount(x[valid], minlength=bins)[:bins].astype(np.int32)
    return histogram


MAKERS = {
    "dot": make_dot,
    "splat": make_splat,
    "broadcast": make_broadcast,
    "expand_dims": make_expand_dims,
    "reshape": make_reshape,
    "permute": make_permute,
    "join": make_join,
    "split": make_split,
    "cat": make_cat,
    "gather": make_gather,
    "histogram": make_histogram,
}
