"""Control flow, reductions, scans, dots, calls, shapes, print and assert."""

import numpy as np
import pytest
import torch
from kernel_builder import KernelBuilder, T

from tritone.errors import InterpreterError
from tritone.interpreter import run_kernel
from tritone.ir.core import Function


def _ptrs(k, base, offsets, elem, shape):
    shape = list(shape)
    dims = "x".join(map(str, shape))
    return k.op("addptr", [k.splat(base, shape), offsets], f"<{dims}x*{elem}>")


def _grid_offsets(k, rows, cols, stride):
    """rows x cols offsets r * stride + c."""
    r = k.op("expand_dims", [k.arange(rows)], f"<{rows}x1xi32>", axis=1)
    r = k.op("mul", [r, k.const(stride, f"<{rows}x1xi32>")], f"<{rows}x1xi32>")
    c = k.op("expand_dims", [k.arange(cols)], f"<1x{cols}xi32>", axis=0)
    rb = k.op("broadcast", [r], f"<{rows}x{cols}xi32>")
    cb = k.op("broadcast", [c], f"<{rows}x{cols}xi32>")
    return k.op("add", [rb, cb], f"<{rows}x{cols}xi32>")


def test_for_loop_carries_a_block():
    block, steps = 64, 5
    k = KernelBuilder("loop_sum", [("x", "*fp32"), ("out", "*fp32")])
    offsets = k.arange(block)

    def body(i, acc):
        start = k.op("mul", [i, k.const(block, "i32")], "i32")
        idx = k.op("add", [k.splat(start, [block]), offsets], f"<{block}xi32>")
        v = k.op("load", [_ptrs(k, k.args["x"], idx, "fp32", [block])], f"<{block}xfp32>")
        k.op("yield", [k.op("add", [acc, v], f"<{block}xfp32>")])

    region = k.region(["i32", f"<{block}xfp32>"], body)
    init = k.const(0.0, f"<{block}xfp32>")
    total = k.op("for", [k.const(0, "i32"), k.const(steps, "i32"), k.const(1, "i32"), init], f"<{block}xfp32>",
                 regions=[region])
    k.op("store", [_ptrs(k, k.args["out"], offsets, "fp32", [block]), total])
    x = np.random.default_rng().standard_normal(block * steps).astype(np.float32)
    out = np.zeros(block, dtype=np.float32)
    run_kernel(k.finish(), (1, 1, 1), [x, out])
    expected = np.zeros(block, dtype=np.float32)
    for s in range(steps):
        expected += x[s * block:(s + 1) * block]
    assert np.array_equal(out, expected)


def test_while_loop_counts_doublings():
    k = KernelBuilder("doublings", [("limit", "i32"), ("out", "*i32")])

    def before(v, count):
        cond = k.op("cmp", [v, k.args["limit"]], "i1", pred="lt")
        k.op("condition", [cond, v, count])

    def after(v, count):
        doubled = k.op("mul", [v, k.const(2, "i32")], "i32")
        k.op("yield", [doubled, k.op("add", [count, k.const(1, "i32")], "i32")])

    v, count = k.op("while", [k.const(1, "i32"), k.const(0, "i32")], ["i32", "i32"],
                    regions=[k.region(["i32", "i32"], before), k.region(["i32", "i32"], after)])
    k.op("store", [k.args["out"], count])
    k.op("store", [k.op("addptr", [k.args["out"], k.const(1, "i32")], "*i32"), v])
    limit = int(np.random.default_rng().integers(2, 10 ** 6))
    out = np.zeros(2, dtype=np.int32)
    run_kernel(k.finish(), (1, 1, 1), [limit, out])
    expected = int(np.ceil(np.log2(limit)))
    assert out.tolist() == [expected, 2 ** expected]


def test_if_else_per_program():
    k = KernelBuilder("branch", [("x", "*fp32"), ("out", "*fp32")])
    pid = k.pid()
    parity = k.op("and", [pid, k.const(1, "i32")], "i32")
    even = k.op("cmp", [parity, k.const(0, "i32")], "i1", pred="eq")
    x = k.op("load", [k.op("addptr", [k.args["x"], pid], "*fp32")], "fp32")
    then = k.region([], lambda: k.op("yield", [k.op("mul", [x, k.const(2.0, "fp32")], "fp32")]))
    other = k.region([], lambda: k.op("yield", [k.op("add", [x, k.const(100.0, "fp32")], "fp32")]))
    y = k.op("if", [even], "fp32", regions=[then, other])
    k.op("store", [k.op("addptr", [k.args["out"], pid], "*fp32"), y])
    x = np.random.default_rng().standard_normal(10).astype(np.float32)
    out = np.zeros(10, dtype=np.float32)
    run_kernel(k.finish(), (10, 1, 1), [x, out])
    assert np.array_equal(out[0::2], x[0::2] * 2) and np.array_equal(out[1::2], x[1::2] + 100)


def test_grid_runs_x_fastest_then_y_then_z():
    k = KernelBuilder("order", [("counter", "*i32"), ("out", "*i32")])
    ticket = k.op("atomic_rmw", [k.args["counter"], k.const(1, "i32")], "i32", kind="add", sem="relaxed", scope="gpu")
    nx = k.op("num_programs", [], "i32", axis=0)
    ny = k.op("num_programs", [], "i32", axis=1)
    flat = k.op("add", [k.op("mul", [k.op("add", [k.op("mul", [k.pid(2), ny], "i32"), k.pid(1)], "i32"), nx], "i32"),
                        k.pid(0)], "i32")
    k.op("store", [k.op("addptr", [k.args["out"], flat], "*i32"), ticket])
    out = np.full(24, -1, dtype=np.int32)
    run_kernel(k.finish(), (4, 3, 2), [np.zeros(1, np.int32), out])
    assert out.tolist() == list(range(24))


def _sum_region(k, ty):
    return k.region([ty, ty], lambda a, b: k.op("yield", [k.op("add", [a, b], ty)]))


def test_reduce_2d_both_axes():
    k = KernelBuilder("sums", [("x", "*fp64"), ("rows", "*fp64"), ("cols", "*fp64")])
    offsets = _grid_offsets(k, 8, 16, 16)
    x = k.op("load", [_ptrs(k, k.args["x"], offsets, "fp64", [8, 16])], "<8x16xfp64>")
    by_row = k.op("reduce", [x], "<8xfp64>", regions=[_sum_region(k, "fp64")], axis=1)
    by_col = k.op("reduce", [x], "<16xfp64>", regions=[_sum_region(k, "fp64")], axis=0)
    k.op("store", [_ptrs(k, k.args["rows"], k.arange(8), "fp64", [8]), by_row])
    k.op("store", [_ptrs(k, k.args["cols"], k.arange(16), "fp64", [16]), by_col])
    x = np.random.default_rng().integers(-100, 100, (8, 16)).astype(np.float64)
    rows, cols = np.zeros(8), np.zeros(16)
    run_kernel(k.finish(), (1, 1, 1), [x, rows, cols])
    assert np.array_equal(rows, x.sum(1)) and np.array_equal(cols, x.sum(0))


def _reduce_1d(elem, values, region_builder):
    n = len(values)
    k = KernelBuilder("reduce1d", [("x", f"*{elem}"), ("out", f"*{elem}")])
    x = k.op("load", [_ptrs(k, k.args["x"], k.arange(n), elem, [n])], f"<{n}x{elem}>")
    total = k.op("reduce", [x], elem, regions=[region_builder(k)], axis=0)
    k.op("store", [k.args["out"], total])
    out = np.zeros(1, dtype=values.dtype)
    run_kernel(k.finish(), (1, 1, 1), [values, out])
    return out[0]


def test_fp16_sum_adds_in_fp16_along_a_tree():
    values = np.array([2049] + [1] * 127, dtype=np.float16)
    assert _reduce_1d("fp16", values, lambda k: _sum_region(k, "fp16")) == 2174


def test_reduce_keeps_operand_order_for_non_commutative_combines():
    # f(a, b) = a picks the first element; f(a, b) = b the last.
    values = np.random.default_rng().standard_normal(64).astype(np.float32)
    assert _reduce_1d("fp32", values, lambda k: k.region(["fp32", "fp32"], lambda a, b: k.op("yield", [a]))) \
        == values[0]
    assert _reduce_1d("fp32", values, lambda k: k.region(["fp32", "fp32"], lambda a, b: k.op("yield", [b]))) \
        == values[-1]


def test_argmax_tuple_reduce_ties_to_the_left():
    n = 128
    values = np.random.default_rng().standard_normal(n).astype(np.float32)
    values[[9, 40, 90]] = 10.0
    k = KernelBuilder("argmax", [("x", "*fp32"), ("out", "*i32")])
    x = k.op("load", [_ptrs(k, k.args["x"], k.arange(n), "fp32", [n])], f"<{n}xfp32>")

    def combine(v1, i1, v2, i2):
        gt = k.op("cmp", [v1, v2], "i1", pred="gt")
        eq = k.op("cmp", [v1, v2], "i1", pred="eq")
        lt = k.op("cmp", [i1, i2], "i1", pred="lt")
        take_left = k.op("or", [gt, k.op("and", [eq, lt], "i1")], "i1")
        k.op("yield", [k.op("select", [take_left, v1, v2], "fp32"), k.op("select", [take_left, i1, i2], "i32")])

    region = k.region(["fp32", "i32", "fp32", "i32"], combine)
    _, index = k.op("reduce", [x, k.arange(n)], ["fp32", "i32"], regions=[region], axis=0)
    k.op("store", [k.args["out"], index])
    out = np.zeros(1, dtype=np.int32)
    run_kernel(k.finish(), (1, 1, 1), [values, out])
    assert out[0] == 9


def _scan(values, reverse, region_builder, elem="i32"):
    n = len(values)
    k = KernelBuilder("scan", [("x", f"*{elem}"), ("out", f"*{elem}")])
    x = k.op("load", [_ptrs(k, k.args["x"], k.arange(n), elem, [n])], f"<{n}x{elem}>")
    r = k.op("scan", [x], f"<{n}x{elem}>", regions=[region_builder(k)], axis=0, reverse=reverse)
    k.op("store", [_ptrs(k, k.args["out"], k.arange(n), elem, [n]), r])
    out = np.zeros(n, dtype=values.dtype)
    run_kernel(k.finish(), (1, 1, 1), [values, out])
    return out


def test_cumsum_forward_and_reverse():
    values = np.random.default_rng().integers(-50, 50, 256).astype(np.int32)
    assert np.array_equal(_scan(values, False, lambda k: _sum_region(k, "i32")), np.cumsum(values))
    assert np.array_equal(_scan(values, True, lambda k: _sum_region(k, "i32")), np.cumsum(values[::-1])[::-1])


def test_scan_accumulated_part_is_the_left_operand():
    values = np.random.default_rng().integers(-50, 50, 16).astype(np.int32)

    def first(k):
        return k.region(["i32", "i32"], lambda a, b: k.op("yield", [a]))
    assert np.all(_scan(values, False, first) == values[0])
    assert np.all(_scan(values, True, first) == values[-1])


def test_scan_with_an_affine_non_commutative_combine():
    # Composition of affine maps x -> a*x + b is associative, not commutative.
    n = 32
    rng = np.random.default_rng()
    a = rng.integers(-3, 4, n).astype(np.int64)
    b = rng.integers(-5, 6, n).astype(np.int64)
    k = KernelBuilder("affine", [("a", "*i64"), ("b", "*i64"), ("oa", "*i64"), ("ob", "*i64")])
    av = k.op("load", [_ptrs(k, k.args["a"], k.arange(n), "i64", [n])], f"<{n}xi64>")
    bv = k.op("load", [_ptrs(k, k.args["b"], k.arange(n), "i64", [n])], f"<{n}xi64>")

    def compose(a1, b1, a2, b2):
        # apply (a1, b1) first, then (a2, b2)
        k.op("yield", [k.op("mul", [a2, a1], "i64"), k.op("add", [k.op("mul", [a2, b1], "i64"), b2], "i64")])

    region = k.region(["i64", "i64", "i64", "i64"], compose)
    ra, rb = k.op("scan", [av, bv], [f"<{n}xi64>", f"<{n}xi64>"], regions=[region], axis=0, reverse=False)
    k.op("store", [_ptrs(k, k.args["oa"], k.arange(n), "i64", [n]), ra])
    k.op("store", [_ptrs(k, k.args["ob"], k.arange(n), "i64", [n]), rb])
    oa, ob = np.zeros(n, np.int64), np.zeros(n, np.int64)
    run_kernel(k.finish(), (1, 1, 1), [a, b, oa, ob])
    ea, eb = [a[0]], [b[0]]
    for i in range(1, n):
        ea.append(a[i] * ea[-1])
        eb.append(a[i] * eb[-1] + b[i])
    assert oa.tolist() == ea and ob.tolist() == eb


def _dot(elem, acc_elem, a, b, acc, **attrs):
    m, kk = a.shape
    n = b.shape[1]
    k = KernelBuilder("dot", [("a", f"*{elem}"), ("b", f"*{elem}"), ("c", f"*{acc_elem}")])
    av = k.op("load", [_ptrs(k, k.args["a"], _grid_offsets(k, m, kk, kk), elem, [m, kk])], f"<{m}x{kk}x{elem}>")
    bv = k.op("load", [_ptrs(k, k.args["b"], _grid_offsets(k, kk, n, n), elem, [kk, n])], f"<{kk}x{n}x{elem}>")
    c_ptrs = _ptrs(k, k.args["c"], _grid_offsets(k, m, n, n), acc_elem, [m, n])
    cv = k.op("load", [c_ptrs], f"<{m}x{n}x{acc_elem}>")
    r = k.op("dot", [av, bv, cv], f"<{m}x{n}x{acc_elem}>", **attrs)
    k.op("store", [c_ptrs, r])
    run_kernel(k.finish(), (1, 1, 1), [a, b, acc])
    return acc


def test_dot_fp16_accumulates_in_fp32():
    rng = np.random.default_rng()
    a = rng.standard_normal((32, 16)).astype(np.float16)
    b = rng.standard_normal((16, 64)).astype(np.float16)
    acc = rng.standard_normal((32, 64)).astype(np.float32)
    expected = (a.astype(np.float64) @ b.astype(np.float64) + acc).astype(np.float32)
    assert np.array_equal(_dot("fp16", "fp32", a, b, acc.copy(), input_precision="tf32"), expected)


def test_dot_int8_is_exact():
    rng = np.random.default_rng()
    a = rng.integers(-128, 128, (16, 64)).astype(np.int8)
    b = rng.integers(-128, 128, (64, 16)).astype(np.int8)
    acc = rng.integers(-1000, 1000, (16, 16)).astype(np.int32)
    expected = a.astype(np.int64) @ b.astype(np.int64) + acc
    assert np.array_equal(_dot("i8", "i32", a, b, acc.copy(), input_precision="ieee"), expected)


def test_dot_fp32_tf32_truncates_inputs_ieee_does_not():
    rng = np.random.default_rng()
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    zero = np.zeros((16, 16), np.float32)

    def trunc(x):
        return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)

    tf32 = _dot("fp32", "fp32", a, b, zero.copy(), input_precision="tf32")
    assert np.array_equal(tf32, (trunc(a) @ trunc(b)).astype(np.float32))
    ieee = _dot("fp32", "fp32", a, b, zero.copy(), input_precision="ieee")
    assert np.array_equal(ieee, (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))


def test_call_runs_a_module_function():
    k = KernelBuilder("caller", [("out", "*i32"), ("v", "i32")])
    callee = Function("square_plus", [T("i32"), T("i32")], ["x", "y"], [T("i32")])
    k.module.add(callee)
    saved = k.b.insertion_point()
    k.b.set_insertion_point_to_end(callee.body)
    x, y = callee.args
    k.op("return", [k.op("add", [k.op("mul", [x, x], "i32"), y], "i32")])
    k.b.restore_insertion_point(saved)
    r = k.op("call", [k.args["v"], k.const(3, "i32")], "i32", callee="square_plus")
    k.op("store", [k.args["out"], r])
    out = np.zeros(1, np.int32)
    run_kernel(k.finish(), (1, 1, 1), [out, 7])
    assert out[0] == 52


def test_shape_ops():
    rng = np.random.default_rng()
    x = rng.integers(0, 8, 16).astype(np.int32)
    out = np.zeros(64, dtype=np.int32)
    k = KernelBuilder("shapes", [("x", "*i32"), ("out", "*i32")])
    v = k.op("load", [_ptrs(k, k.args["x"], k.arange(16), "i32", [16])], "<16xi32>")
    m = k.op("reshape", [v], "<4x4xi32>", can_reorder=False)
    t = k.op("permute", [m], "<4x4xi32>", order=(1, 0))
    j = k.op("join", [t, m], "<4x4x2xi32>")
    lo, hi = k.op("split", [j], ["<4x4xi32>", "<4x4xi32>"])
    flat_t = k.op("reshape", [lo], "<16xi32>", can_reorder=False)
    flat_m = k.op("reshape", [hi], "<16xi32>", can_reorder=False)
    both = k.op("cat", [flat_t, flat_m], "<32xi32>")
    hist = k.op("histogram", [v], "<8xi32>", num_bins=8)
    rev = k.op("sub", [k.const(15, "<16xi32>"), k.arange(16)], "<16xi32>")
    gathered = k.op("gather", [v, rev], "<16xi32>", axis=0)
    k.op("store", [_ptrs(k, k.args["out"], k.arange(32), "i32", [32]), both])
    k.op("store", [_ptrs(k, k.args["out"], k.arange(8, 32), "i32", [8]), hist])
    k.op("store", [_ptrs(k, k.args["out"], k.arange(16, 40), "i32", [16]), gathered])
    run_kernel(k.finish(), (1, 1, 1), [x, out])
    assert out[:16].tolist() == x.reshape(4, 4).T.reshape(-1).tolist()
    assert out[16:32].tolist() == x.tolist()
    assert out[32:40].tolist() == np.bincount(x, minlength=8).tolist()
    assert out[40:56].tolist() == x[::-1].tolist()


def test_device_print_format(capsys):
    k = KernelBuilder("printer", [("x", "*i32")])
    v = k.op("load", [_ptrs(k, k.args["x"], k.arange(16), "i32", [16])], "<16xi32>")
    k.op("print", [v], prefix=" x: ", hex=False)
    k.op("print", [k.pid(1)], prefix=" pid1: ", hex=True)
    x = np.arange(-8, 8, dtype=np.int32)
    run_kernel(k.finish(), (1, 2, 1), [x])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "pid (0, 0, 0) idx ( 0) x: -8"
    assert lines[15] == "pid (0, 0, 0) idx (15) x: 7"
    assert lines[16] == "pid (0, 0, 0) idx () pid1: 0x00000000"
    assert lines[-1] == "pid (0, 1, 0) idx () pid1: 0x00000001"


def test_device_assert_reports_message_program_and_line():
    k = KernelBuilder("checked", [("x", "*i32")], file="checked.py")
    v = k.op("load", [_ptrs(k, k.args["x"], k.arange(8), "i32", [8])], "<8xi32>")
    positive = k.op("cmp", [v, k.const(0, "<8xi32>")], "<8xi1>", pred="gt")
    k.at(5).op("assert", [positive], msg="x must be positive")
    x = np.array([1, 2, 3, 4, 5, -6, 7, 8], dtype=np.int32)
    with pytest.raises(InterpreterError) as info:
        run_kernel(k.finish(), (3, 1, 1), [x], source_lines={5: "tl.device_assert(x > 0, 'x must be positive')"})
    message = str(info.value)
    assert "x must be positive" in message and "program (0, 0, 0)" in message and "checked.py:5" in message
    assert "at index (5,)" in message and "tl.device_assert" in message


def test_arguments_are_checked():
    k = KernelBuilder("args", [("x", "*fp32"), ("n", "i32")])
    module = k.finish()
    with pytest.raises(InterpreterError, match="takes 2 arguments"):
        run_kernel(module, (1, 1, 1), [np.zeros(4, np.float32)])
    with pytest.raises(InterpreterError, match="'n'"):
        run_kernel(module, (1, 1, 1), [np.zeros(4, np.float32), torch.zeros(3)])


def test_bf16_block_reduce_with_torch_tensor():
    values = torch.randn(64).to(torch.bfloat16)
    k = KernelBuilder("bf16max", [("x", "*bf16"), ("out", "*bf16")])
    x = k.op("load", [_ptrs(k, k.args["x"], k.arange(64), "bf16", [64])], "<64xbf16>")
    region = k.region(["bf16", "bf16"], lambda a, b: k.op("yield", [k.op("max", [a, b], "bf16")]))
    m = k.op("reduce", [x], "bf16", regions=[region], axis=0)
    k.op("store", [k.args["out"], m])
    out = torch.zeros(1, dtype=torch.bfloat16)
    run_kernel(k.finish(), (1, 1, 1), [values, out])
    assert out[0] == values.max()


def test_device_print_several_operands_and_floats(capsys):
    k = KernelBuilder("printer2", [("x", "*fp16")])
    v = k.op("load", [_ptrs(k, k.args["x"], _grid_offsets(k, 2, 4, 4), "fp16", [2, 4])], "<2x4xfp16>")
    hinted = k.op("hint", [v], "<2x4xfp16>", kind="multiple_of", values=(1, 1))
    k.op("barrier", [])
    k.op("assume", [k.const(True, "i1")])
    k.op("print", [hinted, k.const(-3, "<2x4xi8>")], prefix=" v: ", hex=False)
    x = np.array([0.5, -1.25, 2, 3, 4, 5, 6, 7.75], dtype=np.float16)
    run_kernel(k.finish(), (1, 1, 1), [x])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "pid (0, 0, 0) idx (0, 1) v: (operand 0) -1.250000"
    assert lines[7] == "pid (0, 0, 0) idx (1, 3) v: (operand 0) 7.750000"
    assert lines[8] == "pid (0, 0, 0) idx (0, 0) v: (operand 1) -3"
