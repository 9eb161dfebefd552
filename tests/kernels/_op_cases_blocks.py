"""The per-op sweep, part 2: reductions and scans, shape operations, dots,
memory (masks, `other`, pointers, block pointers), program ids, construction
and atomics. Same conventions as `_op_cases.py`.
"""

from __future__ import annotations

import numpy as np

from tests.kernels import _gpu_numpy as gpu
from tests.kernels import _op_values as values
from tests.kernels._cases import EXACT, Agreement, KernelCase
from tests.kernels._data import (
    NUMPY_DTYPES,
    assert_close,
    assert_equal,
    from_numpy,
    is_float,
    is_signed,
    poison_value,
    round_to,
    to_numpy,
)
from tests.kernels._data import TORCH_DTYPES as _TORCH
from tests.kernels._op_cases import (
    ROW_BF16,
    ROW_BF16_SUM,
    ROW_DOT_TF32,
    ROW_FP16_SUM,
    _case,
    _compare,
)

SHAPE = (8, 16)
UPSTREAM_INTERPRETER_CRASH_FLOAT_XCHG = (
    "(not in section 12) upstream's interpreter rejects float `atomic_xchg` ('Unsupported data type')")


# --- reductions and scans ---------------------------------------------------------------------


def sum_dtype(dtype: str) -> str:
    """TRITON_SEMANTICS 5.1: narrow signed ints sum in i32, narrow unsigned (and i1) in u32."""
    if dtype in ("int8", "int16"):
        return "int32"
    if dtype in ("uint8", "uint16", "int1"):
        return "uint32"
    return dtype


def max_dtype(dtype: str) -> str:
    if dtype == "bfloat16":
        return "float32"
    if dtype in ("float16",):
        return "float32"
    if dtype in ("int1", "int8", "int16", "uint8", "uint16"):
        return "int32"
    return dtype


REDUCTIONS = {
    # name -> (helper, result dtype of input dtype, scan?)
    "sum": ("red_sum", sum_dtype, False),
    "method_sum": ("red_method_sum", sum_dtype, False),
    "max": ("red_max", max_dtype, False),
    "min": ("red_min", max_dtype, False),
    "argmax": ("red_argmax", lambda d: "int32", False),
    "argmin": ("red_argmin", lambda d: "int32", False),
    "xor_sum": ("red_xor_sum", lambda d: d, False),
    "reduce_or": ("red_reduce_or", lambda d: d, False),
    "custom_reduce": ("red_custom_reduce", lambda d: d, False),
    "cumsum": ("red_cumsum", lambda d: sum_dtype("float32" if d == "bfloat16" else d), True),
    "cumsum_reverse": ("red_cumsum_reverse", lambda d: sum_dtype("float32" if d == "bfloat16" else d), True),
    "cumprod": ("red_cumprod", lambda d: "float32" if d == "bfloat16" else d, True),
    "max_with_indices": ("red_max_with_indices", lambda d: "float32", False),
    "min_with_indices": ("red_min_with_indices", lambda d: "float32", False),
}


def _reduced_shape(shape, axis, keep_dims) -> tuple[int, ...]:
    if axis is None:
        return tuple([1] * len(shape)) if keep_dims else ()
    axis %= len(shape)
    if keep_dims:
        return tuple(1 if i == axis else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i != axis)


def _reduction_values(op: str, rng, shape, dtype: str) -> np.ndarray:
    if op.startswith(("arg", "max_with", "min_with")):
        v = rng.integers(-5, 6, size=shape).astype(np.float64)  # ties: the first index wins
        if not is_signed(dtype) and not is_float(dtype):
            v = v + 5
        return round_to(v / 2, dtype) if is_float(dtype) else v.astype(NUMPY_DTYPES[dtype])
    if op == "cumprod":
        if is_float(dtype):
            return round_to(rng.uniform(0.8, 1.25, size=shape), dtype)
        return values.ints(rng, shape, dtype, -3, 3)
    if is_float(dtype):
        v = round_to(rng.uniform(-10, 10, size=shape), dtype)
        if op in ("max", "min") and dtype == "float32":
            v.reshape(-1)[::7] = np.nan  # ignored by max/min unless a whole row is NaN
        return v
    if op in ("sum", "method_sum", "custom_reduce") and dtype in ("int32", "uint32", "int64"):
        # Totals that fit: upstream's interpreter cannot wrap a reduced scalar.
        return values.ints(rng, shape, dtype, -(2**20), 2**20)
    return values.values_for(rng, shape, dtype, "any")


def _reduction_reference(op: str, x: np.ndarray, dtype: str, result: str, axis, keep_dims) -> np.ndarray:
    np_axis = axis
    if op.startswith("cum"):
        acc = gpu.convert(x, dtype, result) if result != dtype else x
        data = np.flip(acc, axis) if op == "cumsum_reverse" else acc
        with np.errstate(all="ignore"):
            if is_float(result):
                out = (np.cumprod if op == "cumprod" else np.cumsum)(data.astype(np.float64), axis=axis)
            else:
                out = (np.cumprod if op == "cumprod" else np.cumsum)(data, axis=axis, dtype=NUMPY_DTYPES[result])
        out = np.flip(out, axis) if op == "cumsum_reverse" else out
        return out if not is_float(result) else out
    with np.errstate(all="ignore"):
        if op in ("sum", "method_sum", "custom_reduce"):
            data = x * x if op == "custom_reduce" else x
            if is_float(result):
                out = np.sum(data.astype(np.float64), axis=np_axis, keepdims=keep_dims)
            else:
                out = np.sum(gpu.convert(data, dtype, result), axis=np_axis, keepdims=keep_dims,
                             dtype=NUMPY_DTYPES[result])
        elif op in ("max", "min"):
            fn = np.nanmax if op == "max" else np.nanmin
            out = fn(x.astype(np.float64) if is_float(dtype) else x.astype(NUMPY_DTYPES[result]),
                     axis=np_axis, keepdims=keep_dims)
        elif op in ("argmax", "argmin"):
            fn = np.argmax if op == "argmax" else np.argmin
            out = fn(x, axis=np_axis, keepdims=keep_dims)
        elif op == "xor_sum":
            out = np.bitwise_xor.reduce(x, axis=np_axis, keepdims=keep_dims)
        elif op == "reduce_or":
            out = np.bitwise_or.reduce(x, axis=np_axis, keepdims=keep_dims)
        else:
            fn, arg = (np.max, np.argmax) if op == "max_with_indices" else (np.min, np.argmin)
            out = np.stack([fn(x, axis=np_axis, keepdims=keep_dims).astype(np.float64),
                            arg(x, axis=np_axis, keepdims=keep_dims).astype(np.float64)], axis=-1)
    return np.asarray(out)


def reduce_case(op: str, dtype: str, shape=SHAPE, axis=1, keep_dims: bool = False) -> KernelCase:
    helper, result_of, is_scan = REDUCTIONS[op]
    result = result_of(dtype)
    out_shape = tuple(shape) if is_scan else _reduced_shape(shape, axis, keep_dims)
    if op.endswith("with_indices"):
        out_shape = out_shape + (2,)
    n = int(np.prod(shape)) if axis is None else shape[axis]
    if is_float(result) and op not in ("max", "min", "argmax", "argmin") and not op.endswith("indices"):
        # Tree vs sequential order, fp16/bf16 accumulation in their own type.
        eps = {"float16": 2.0**-10, "bfloat16": 2.0**-7}.get(dtype, 2.0**-22)
        tolerance = Agreement(atol=eps * n * 10 * (1.3 if op == "cumprod" else 1.0), rtol=eps * np.log2(n) * 4)
    else:
        tolerance = EXACT

    def make(rng):
        x = _reduction_values(op, rng, shape, dtype)
        return {"x": from_numpy(x, dtype), "op": helper, "result": result, "axis": axis, "keep_dims": keep_dims,
                "out_shape": out_shape}

    def check(inputs, outputs):
        expected = _reduction_reference(op, to_numpy(inputs["x"]), dtype, result, axis, keep_dims)
        if is_float(result) and not tolerance.exact:
            expected = expected.astype(np.float64)
        _compare(outputs["out"], expected.reshape(out_shape), result, tolerance)

    excluded = None
    if dtype == "float16" and op in ("sum", "method_sum", "cumsum", "cumsum_reverse", "custom_reduce"):
        excluded = ROW_FP16_SUM
    if dtype == "bfloat16":
        excluded = ROW_BF16_SUM if "sum" in op else ROW_BF16
    name = f"{op}-{dtype}-{'x'.join(map(str, shape))}-axis{axis}{'-keep' if keep_dims else ''}"
    return _case(name, "run_reduce", make, check, tolerance, excluded)


def _reduction_cases() -> list[KernelCase]:
    cases = []
    for dtype in ("int8", "uint8", "int1", "int32", "int64", "float16", "bfloat16", "float32", "float64"):
        cases.append(reduce_case("sum", dtype))
    cases += [reduce_case("sum", "float32", axis=0), reduce_case("sum", "int32", axis=None),
              reduce_case("sum", "float32", axis=None, keep_dims=True), reduce_case("sum", "int16", axis=-1),
              reduce_case("sum", "float32", shape=(4, 8, 16), axis=1), reduce_case("method_sum", "int32", axis=0),
              reduce_case("sum", "uint16", keep_dims=True), reduce_case("sum", "float32", shape=(64,), axis=0)]
    for op in ("max", "min"):
        for dtype in ("int8", "uint8", "int32", "uint32", "int64", "float16", "bfloat16", "float32", "float64"):
            cases.append(reduce_case(op, dtype))
        cases += [reduce_case(op, "float32", axis=0, keep_dims=True), reduce_case(op, "int32", axis=None)]
    for op in ("argmax", "argmin"):
        for dtype in ("int32", "float16", "float32", "uint8"):
            cases.append(reduce_case(op, dtype))
        cases += [reduce_case(op, "float32", axis=0), reduce_case(op, "int32", shape=(64,), axis=0),
                  reduce_case(op, "float32", axis=1, keep_dims=True)]
    for op in ("max_with_indices", "min_with_indices"):
        cases += [reduce_case(op, "float32"), reduce_case(op, "int32", axis=0)]
    for op in ("xor_sum", "reduce_or"):
        cases += [reduce_case(op, d) for d in ("int8", "int32", "uint32", "int64")]
        cases.append(reduce_case(op, "int32", axis=0))
    cases += [reduce_case("custom_reduce", d) for d in ("int32", "float32")]
    for op in ("cumsum", "cumsum_reverse"):
        for dtype in ("int8", "uint8", "int32", "int64", "float16", "float32"):
            cases.append(reduce_case(op, dtype))
        cases.append(reduce_case(op, "int32", axis=0))
    cases += [reduce_case("cumsum", "int32", shape=(64,), axis=0), reduce_case("cumsum", "float32", axis=-1)]
    cases += [reduce_case("cumprod", d) for d in ("int8", "int32", "float32", "float64")]
    return cases


# --- shape operations -------------------------------------------------------------------------


def _unary_shape_case(name: str, helper: str, shape, dtype: str, out_shape, ref, kind: str = "any") -> KernelCase:
    def make(rng):
        return {"x": from_numpy(values.values_for(rng, shape, dtype, kind), dtype), "op": helper,
                "result": dtype, "out_shape": out_shape}

    def check(inputs, outputs):
        assert_equal(outputs["out"], ref(to_numpy(inputs["x"])))

    return _case(f"{name}-{dtype}", "run_unary", make, check)


def _binary_shape_case(name: str, helper: str, shapes, dtypes, result: str, out_shape, ref, make_values=None,
                       agreement: Agreement = EXACT, excluded: str | None = None) -> KernelCase:
    def make(rng):
        if make_values is not None:
            x, y = make_values(rng)
        else:
            x = values.values_for(rng, shapes[0], dtypes[0], "any")
            y = values.values_for(rng, shapes[1], dtypes[1], "any")
        return {"x": from_numpy(x, dtypes[0]), "y": from_numpy(y, dtypes[1]), "op": helper, "result": result,
                "out_shape": out_shape}

    def check(inputs, outputs):
        # The "any" values hold infinities of both signs: inf - inf is a NaN the kernel makes too.
        with np.errstate(invalid="ignore", over="ignore"):
            expected = ref(to_numpy(inputs["x"]), to_numpy(inputs["y"]))
        _compare(outputs["out"], expected, result, agreement)

    return _case(f"{name}-{'-'.join(dtypes)}", "run_binary", make, check, agreement, excluded)


def _sorted_ref(descending: bool):
    def ref(x):
        s = np.sort(x, axis=-1)
        return np.flip(s, -1) if descending else s
    return ref


def _shape_cases() -> list[KernelCase]:
    cases = []
    for dtype in ("float32", "int8", "float16"):
        cases.append(_unary_shape_case("trans", "op_trans", (8, 16), dtype, (16, 8), lambda x: x.T))
    cases += [
        _unary_shape_case(".T", "op_dot_T", (4, 16), "int32", (16, 4), lambda x: x.T),
        _unary_shape_case("permute-201", "op_permute_201", (2, 4, 8), "float32", (8, 2, 4),
                          lambda x: np.transpose(x, (2, 0, 1))),
        _unary_shape_case("reshape-flat", "op_reshape_flat", (8, 16), "int16", (128,), lambda x: x.reshape(-1)),
        _unary_shape_case("reshape-swap", "op_reshape_swap", (8, 16), "float32", (16, 8), lambda x: x.reshape(16, 8)),
        _unary_shape_case("ravel", "op_ravel", (4, 8), "uint8", (32,), lambda x: x.reshape(-1)),
        _unary_shape_case("expand_dims-0", "op_expand_dims_0", (16,), "float64", (1, 16), lambda x: x[None, :]),
        _unary_shape_case("expand_dims-broadcast_to", "op_expand_dims_last_broadcast", (16,), "int32", (16, 4),
                          lambda x: np.broadcast_to(x[:, None], (16, 4))),
        _unary_shape_case("broadcast_to", "op_broadcast_to_rows", (1, 16), "float32", (4, 16),
                          lambda x: np.broadcast_to(x, (4, 16))),
        _unary_shape_case("flip-last", "op_flip_last", (8, 16), "int32", (8, 16), lambda x: np.flip(x, -1)),
        _unary_shape_case("flip-0", "op_flip_0", (16,), "float16", (16,), lambda x: np.flip(x, 0)),
        _unary_shape_case("hints", "op_hints_identity", (64,), "int32", (64,), lambda x: x),
        _binary_shape_case("broadcast", "op_broadcast_pair", ((8, 1), (1, 16)), ("float32", "float32"), "float32",
                           (8, 16), lambda a, b: a * 2 + b),
        _binary_shape_case("join-1d", "op_join", ((16,), (16,)), ("int32", "int32"), "int32", (16, 2),
                           lambda a, b: np.stack([a, b], -1)),
        _binary_shape_case("join-2d", "op_join", ((4, 8), (4, 8)), ("float16", "float16"), "float16", (4, 8, 2),
                           lambda a, b: np.stack([a, b], -1)),
        _binary_shape_case("interleave", "op_interleave", ((16,), (16,)), ("float32", "float32"), "float32", (32,),
                           lambda a, b: np.stack([a, b], -1).reshape(-1)),
        _binary_shape_case("swizzle2d", "op_swizzle2d", ((8, 1), (1, 8)), ("int32", "int32"), "int32", (8, 8),
                           _swizzle_ref, make_values=lambda rng: (np.arange(8, dtype=np.int32)[:, None],
                                                                  np.arange(8, dtype=np.int32)[None, :])),
        _binary_shape_case("gather-axis1", "op_gather_axis1", ((4, 16), (4, 8)), ("float32", "int32"), "float32",
                           (4, 8), lambda s, i: np.take_along_axis(s, i, 1),
                           make_values=lambda rng: (values.values_for(rng, (4, 16), "float32", "any"),
                                                    rng.integers(0, 16, size=(4, 8)).astype(np.int32))),
    ]
    # Sorting compares, so no NaN in its inputs.
    for dtype, shape in (("float32", (16,)), ("int32", (4, 16)), ("float16", (2, 32))):
        cases.append(_unary_shape_case("sort", "op_sort", shape, dtype, shape, _sorted_ref(False), "finite"))
    cases.append(_unary_shape_case("sort-descending", "op_sort_descending", (4, 16), "int32", (4, 16),
                                   _sorted_ref(True)))
    cases.append(_unary_shape_case("topk-4", "op_topk_4", (4, 16), "float32", (4, 4),
                                   lambda x: np.flip(np.sort(x, -1), -1)[:, :4], "finite"))
    cases.append(_split_case())
    cases.append(_cat_case())
    cases.append(_histogram_case())
    cases.append(_softmax_case())
    return cases


def _swizzle_ref(i: np.ndarray, j: np.ndarray) -> np.ndarray:
    # tl.swizzle2d(i, j, size_i=8, size_j=8, size_g=2): column-major groups of 2 rows.
    i, j = np.broadcast_arrays(i, j)
    ij = i * 8 + j
    size_gj = 2 * 8
    group_id = ij // size_gj
    off_i = group_id * 2
    size_g = np.minimum(8 - off_i, 2)
    ij = ij % size_gj
    new_i = off_i + ij % size_g
    new_j = ij // size_g
    return (new_i * 8 + new_j).astype(np.int32)


def _split_case() -> KernelCase:
    def make(rng):
        return {"x": from_numpy(values.values_for(rng, (16, 2), "int32", "any"), "int32"), "op": "op_split",
                "result": "int32", "result2": "int32", "out_shape": (16,)}

    def check(inputs, outputs):
        x = to_numpy(inputs["x"])
        assert_equal(outputs["out"], x[:, 0], "first half")
        assert_equal(outputs["out2"], x[:, 1], "second half")

    return _case("split-int32", "run_unary_pair", make, check, outputs=("out", "out2"))


def _cat_case() -> KernelCase:
    def make(rng):
        return {"x": from_numpy(values.values_for(rng, (16,), "int32", "any"), "int32"),
                "y": from_numpy(values.values_for(rng, (16,), "int32", "any"), "int32"), "op": "op_cat",
                "result": "int32", "out_shape": (32,)}

    def check(inputs, outputs):
        # can_reorder=True: the GPU may order the elements as it likes.
        expected = np.sort(np.concatenate([to_numpy(inputs["x"]), to_numpy(inputs["y"])]))
        assert_equal(np.sort(to_numpy(outputs["out"])), expected)

    return _case("cat-int32", "run_binary", make, check)


def _histogram_case() -> KernelCase:
    def make(rng):
        return {"x": from_numpy(rng.integers(0, 16, size=(128,)).astype(np.int32), "int32"), "op": "op_histogram_16",
                "result": "int32", "out_shape": (16,)}

    def check(inputs, outputs):
        assert_equal(outputs["out"], np.bincount(to_numpy(inputs["x"]), minlength=16).astype(np.int32))

    return _case("histogram-int32", "run_unary", make, check)


def _softmax_case() -> KernelCase:
    agreement = Agreement(ulps=8, atol=1e-9)

    def make(rng):
        return {"x": from_numpy(round_to(rng.uniform(-5, 5, size=SHAPE), "float32"), "float32"), "op": "op_softmax",
                "result": "float32", "out_shape": SHAPE}

    def check(inputs, outputs):
        x = to_numpy(inputs["x"]).astype(np.float64)
        e = np.exp(x - x.max(axis=0))  # dim=None means axis 0
        _compare(outputs["out"], e / e.sum(axis=0), "float32", agreement)

    return _case("softmax-float32", "run_unary", make, check, agreement)


# --- dots -------------------------------------------------------------------------------------


def dot_case(name: str, helper: str, a_shape, b_shape, dtype: str, result: str, acc: float = 0.0,
             excluded: str | None = None) -> KernelCase:
    out_shape = tuple(a_shape[:-1]) + (b_shape[-1],)
    k = a_shape[-1]
    if dtype == "int8":
        agreement = EXACT
    elif result == "float16":
        agreement = Agreement(ulps=2, atol=k * 2.0**-11)
    elif helper == "op_dot" and dtype == "float32":
        agreement = Agreement(atol=k * 2.0**-9)  # tf32
    else:
        agreement = Agreement(atol=k * 2.0**-22)

    def make(rng):
        if dtype == "int8":
            a, b = (values.ints(rng, s, "int8") for s in (a_shape, b_shape))
        else:
            a, b = (round_to(rng.uniform(-1, 1, size=s), dtype) for s in (a_shape, b_shape))
        return {"x": from_numpy(a, dtype), "y": from_numpy(b, dtype), "op": helper, "result": result,
                "out_shape": out_shape}

    def check(inputs, outputs):
        a, b = to_numpy(inputs["x"]), to_numpy(inputs["y"])
        if dtype == "int8":
            expected = np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(np.int32)
        else:
            expected = np.matmul(a.astype(np.float64), b.astype(np.float64)) + acc
        _compare(outputs["out"], expected, result, agreement)

    return _case(f"dot-{name}", "run_binary", make, check, agreement, excluded)


def _dot_cases() -> list[KernelCase]:
    return [
        dot_case("float16", "op_dot", (16, 16), (16, 16), "float16", "float32"),
        dot_case("float16-32x64x16", "op_dot", (32, 64), (64, 16), "float16", "float32"),
        dot_case("int8", "op_dot", (16, 32), (32, 16), "int8", "int32"),
        dot_case("float32-ieee", "op_dot_ieee", (16, 16), (16, 32), "float32", "float32"),
        dot_case("float32-default-tf32", "op_dot", (16, 32), (32, 16), "float32", "float32", excluded=ROW_DOT_TF32),
        dot_case("float16-out-float16", "op_dot_out_fp16", (16, 16), (16, 16), "float16", "float16"),
        dot_case("float16-acc", "op_dot_acc", (16, 32), (32, 16), "float16", "float32", acc=1.5),
        dot_case("batched-float16", "op_dot", (2, 16, 16), (2, 16, 32), "float16", "float32"),
        dot_case("bfloat16", "op_dot", (16, 16), (16, 16), "bfloat16", "float32", excluded=ROW_BF16),
        dot_case("float64", "op_dot", (16, 16), (16, 16), "float64", "float64"),
    ]


# --- memory, program ids, construction --------------------------------------------------------


def masked_load_case(dtype: str, n: int, other, use_other: bool, column_mask: bool = False) -> KernelCase:
    shape = (4, 16)

    def make(rng):
        return {"x": from_numpy(values.values_for(rng, shape, dtype, "finite"), dtype), "n": n, "other": other,
                "use_other": use_other, "column_mask": column_mask}

    def check(inputs, outputs):
        x = to_numpy(inputs["x"])
        offsets = np.arange(x.size).reshape(shape)
        mask = (np.arange(shape[1])[None, :] < n) if column_mask else offsets < n
        # `other` is cast to the element type (1.5 into an int32 load reads 1).
        filler = gpu.convert(np.array(other if use_other else 0, dtype=np.float64), "float64", dtype)
        assert_equal(outputs["out"], np.where(mask, x, filler))

    label = f"masked-load-{dtype}-n{n}-other{other if use_other else 'None'}{'-column-mask' if column_mask else ''}"
    return _case(label, "run_masked_load", make, check)


def _memory_cases() -> list[KernelCase]:
    cases = [
        masked_load_case("int32", 37, 1.5, True),
        masked_load_case("float16", 20, float("-inf"), True),
        masked_load_case("float32", 50, None, False),
        masked_load_case("int8", 5, 7, True, column_mask=True),
        masked_load_case("uint8", 63, 255, True),
    ]

    def store_make(rng):
        return {"x": from_numpy(values.ints(rng, (200,), "int32", -1000, 1000), "int32"), "n": 150}

    def store_check(inputs, outputs):
        x = to_numpy(inputs["x"])
        offsets = np.arange(x.size)
        keep = (offsets < inputs["n"]) & (offsets % 3 != 0)
        assert_equal(outputs["out"], np.where(keep, x + 1, np.int32(poison_value(_TORCH["int32"]))))

    cases.append(_case("masked-store-int32", "run_masked_store", store_make, store_check))

    def scalar_make(rng):
        return {"x": from_numpy(values.values_for(rng, (8,), "float32", "finite"), "float32"), "index": 5}

    def scalar_check(inputs, outputs):
        x = to_numpy(inputs["x"])
        assert_equal(outputs["out"], np.array([x[5] * 2, x[0], 7], dtype=np.float32))

    cases.append(_case("scalar-load-store", "run_scalar_memory", scalar_make, scalar_check))

    def pointer_make(rng):
        return {"x": from_numpy(values.values_for(rng, (32,), "float32", "any"), "float32")}

    def pointer_check(inputs, outputs):
        x = to_numpy(inputs["x"])
        assert_equal(outputs["out"], np.concatenate([x[::-1], x[::-1], x]))

    cases.append(_case("pointer-arithmetic", "run_pointer_arithmetic", pointer_make, pointer_check))

    def bool_make(rng):
        return {"x": from_numpy(rng.random(32) < 0.5, "int1")}

    def bool_check(inputs, outputs):
        x = to_numpy(inputs["x"])
        assert_equal(outputs["not"], ~x, "not")
        assert_equal(outputs["int8"], x.astype(np.int8), "as int8")

    cases.append(_case("bool-pointers", "run_bool_memory", bool_make, bool_check, outputs=("not", "int8")))

    def pid_make(rng):
        return {"grid": (3, 2, 2), "device_probe": from_numpy(np.zeros(1, np.int32), "int32")}

    def pid_check(inputs, outputs):
        rows = [(p0, p1, p2, 12) for p2 in range(2) for p1 in range(2) for p0 in range(3)]
        assert_equal(outputs["out"], np.array(rows, dtype=np.int32))

    cases.append(_case("program_id-num_programs-3d-grid", "run_program_id", pid_make, pid_check))

    def construction_make(rng):
        return {"n": int(rng.integers(5, 20)), "device_probe": from_numpy(np.zeros(1, np.int32), "int32")}

    def construction_check(inputs, outputs):
        n = inputs["n"]
        a = np.arange(3, 11, dtype=np.int32)
        acc = a * (0 + 2 + 4) + sum(range(1, n, 3))
        expected = np.concatenate([a, np.full(8, 2), np.full(8, -(-n // 4)), acc]).astype(np.int32)
        assert_equal(outputs["out"], expected)

    cases.append(_case("construction-and-loops", "run_construction", construction_make, construction_check))

    def block_ptr_make(rng):
        return {"x": from_numpy(round_to(rng.uniform(-4, 4, size=(10, 20)), "float32"), "float32"), "bm": 4, "bn": 8}

    def block_ptr_check(inputs, outputs):
        x = to_numpy(inputs["x"]).astype(np.float64)
        padded = np.zeros((12, 24))
        padded[:10, :20] = x
        sums = padded.reshape(12, 3, 8).sum(axis=1)[:10]
        assert_close(outputs["sums"], sums, rtol=1e-6, atol=1e-6, what="sums")
        tail = np.full((12, 8), np.nan)
        tail[:10, :4] = x[:, 16:20]
        assert_equal(outputs["tail"], tail.astype(np.float32), "tail (nan padding)")

    cases.append(_case("block-pointers-advance-boundary-check", "run_block_pointer", block_ptr_make,
                       block_ptr_check, Agreement(rtol=1e-6, atol=1e-6), outputs=("sums", "tail")))
    return cases


# --- atomics ----------------------------------------------------------------------------------


def atomic_case(op: str, dtype: str, collisions: bool, n: int = 200) -> KernelCase:
    helper = {"add": "at_add", "max": "at_max", "min": "at_min", "and": "at_and", "or": "at_or", "xor": "at_xor",
              "xchg": "at_xchg", "add_relaxed_cta": "at_add_relaxed_cta"}[op]
    slots = 8 if collisions else n
    float_add = is_float(dtype) and op.startswith("add")
    agreement = EXACT
    if float_add:
        # Each update rounds to the element type, in an order the hardware picks.
        agreement = Agreement(rtol=1e-5, atol=1e-5) if dtype == "float32" else Agreement(atol=(n // slots + 1) * 0.05)

    def make(rng):
        if is_float(dtype):
            initial = round_to(rng.uniform(-10, 10, size=slots), dtype)
            value = round_to(rng.uniform(-10, 10, size=n), dtype)
        else:
            lo, hi = (-1000, 1000) if op.startswith("add") else (None, None)
            initial = values.ints(rng, (slots,), dtype, lo, hi)
            value = values.ints(rng, (n,), dtype, lo, hi)
        index = rng.integers(0, slots, size=n) if collisions else rng.permutation(n)
        return {"initial": from_numpy(initial, dtype), "index": from_numpy(index.astype(np.int32), "int32"),
                "value": from_numpy(value, dtype), "op": helper, "return_old": not collisions}

    def check(inputs, outputs):
        memory = to_numpy(inputs["initial"]).copy()
        index, value = to_numpy(inputs["index"]), to_numpy(inputs["value"])
        old = memory[index].copy()
        if float_add:
            memory = memory.astype(np.float64)
        ufunc = {"add": np.add, "add_relaxed_cta": np.add, "max": np.maximum, "min": np.minimum,
                 "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}.get(op)
        with np.errstate(all="ignore"):
            if ufunc is None:  # xchg, indices unique
                memory[index] = value
            else:
                ufunc.at(memory, index, value.astype(memory.dtype))
        _compare(outputs["memory"], memory, dtype, agreement, "memory")
        if not collisions:
            assert_equal(outputs["old"], old, "returned old values")

    kind = "collisions" if collisions else "unique"
    outputs = ("memory",) if collisions else ("memory", "old")
    excluded = UPSTREAM_INTERPRETER_CRASH_FLOAT_XCHG if op == "xchg" and is_float(dtype) else None
    return _case(f"atomic_{op}-{dtype}-{kind}", "run_atomic", make, check, agreement, excluded, outputs)


def _atomic_cases() -> list[KernelCase]:
    cases = [atomic_case("add", d, True) for d in ("int32", "int64", "uint32", "float32")]
    cases += [atomic_case("add", "int32", False), atomic_case("add", "float32", False),
              atomic_case("add", "float16", True), atomic_case("add_relaxed_cta", "int32", True)]
    for op in ("max", "min"):
        cases += [atomic_case(op, d, True) for d in ("int32", "uint32", "int64", "float32")]
        cases.append(atomic_case(op, "float32", False))
    for op in ("and", "or", "xor"):
        cases += [atomic_case(op, "int32", True), atomic_case(op, "uint64", False)]
    cases += [atomic_case("xchg", "int32", False), atomic_case("xchg", "float32", False)]
    cases.append(_atomic_cas_case())
    return cases


def _atomic_cas_case() -> KernelCase:
    def make(rng):
        initial = values.ints(rng, (64,), "int32")
        cmp = np.where(rng.random(64) < 0.5, initial, initial + 1).astype(np.int32)
        return {"initial": from_numpy(initial, "int32"), "cmp": from_numpy(cmp, "int32"),
                "value": from_numpy(values.ints(rng, (64,), "int32"), "int32")}

    def check(inputs, outputs):
        initial, cmp, value = (to_numpy(inputs[k]) for k in ("initial", "cmp", "value"))
        assert_equal(outputs["memory"], np.where(cmp == initial, value, initial), "memory")
        assert_equal(outputs["old"], initial, "old")

    return _case("atomic_cas-int32", "run_atomic_cas", make, check, outputs=("memory", "old"))


BLOCK_CASES: list[KernelCase] = _reduction_cases() + _shape_cases() + _dot_cases() + _memory_cases() + _atomic_cases()
