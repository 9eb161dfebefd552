"""Loads, stores, pointers, bounds checking and atomics."""

import numpy as np
import pytest
import torch
from kernel_builder import KernelBuilder

from tritone.errors import InterpreterError
from tritone.interpreter import run_kernel


def _offsets(k: KernelBuilder, block: int):
    start = k.op("mul", [k.pid(), k.const(block, "i32")], "i32")
    return k.op("add", [k.splat(start, [block]), k.arange(block)], f"<{block}xi32>")


def _ptrs(k: KernelBuilder, base, offsets, elem: str, block: int):
    return k.op("addptr", [k.splat(base, [block]), offsets], f"<{block}x*{elem}>")


def _add_kernel(block: int = 128):
    k = KernelBuilder("add_kernel", [("x", "*fp32"), ("y", "*fp32"), ("out", "*fp32"), ("n", "i32")])
    offsets = _offsets(k, block)
    mask = k.op("cmp", [offsets, k.splat(k.args["n"], [block])], f"<{block}xi1>", pred="lt")
    x = k.op("load", [_ptrs(k, k.args["x"], offsets, "fp32", block), mask], f"<{block}xfp32>")
    y = k.op("load", [_ptrs(k, k.args["y"], offsets, "fp32", block), mask], f"<{block}xfp32>")
    total = k.op("add", [x, y], f"<{block}xfp32>")
    k.at(12).op("store", [_ptrs(k, k.args["out"], offsets, "fp32", block), total, mask])
    return k.finish()


def test_vector_add_numpy_and_torch():
    rng = np.random.default_rng()
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = torch.randn(n)
    out = torch.full((n,), float("nan"))
    run_kernel(_add_kernel(), (8, 1, 1), [x, y, out, n])
    assert torch.equal(out, torch.from_numpy(x) + y)


def test_views_reach_their_whole_storage():
    # A pointer into the middle of a tensor may address the storage before it.
    base = torch.randn(512)
    out = torch.zeros(256)
    view = base[256:]
    k = KernelBuilder("shift", [("x", "*fp32"), ("out", "*fp32")])
    offsets = k.op("sub", [k.arange(256), k.splat(k.const(256, "i32"), [256])], "<256xi32>")
    v = k.op("load", [_ptrs(k, k.args["x"], offsets, "fp32", 256)], "<256xfp32>")
    k.op("store", [_ptrs(k, k.args["out"], k.arange(256), "fp32", 256), v])
    run_kernel(k.finish(), (1, 1, 1), [view, out])
    assert torch.equal(out, base[:256])


def test_a_strided_array_that_owns_no_contiguous_block_is_reachable():
    # as_strided's result has no ndarray base: the interpreter registers exactly
    # the bytes it spans (byte_bounds, found where numpy 1.x or 2.x keeps it).
    backing = np.random.default_rng().standard_normal(64).astype(np.float32)
    every_other = np.lib.stride_tricks.as_strided(backing, shape=(32,), strides=(8,))
    assert not every_other.flags.c_contiguous and not isinstance(every_other.base, np.ndarray)
    out = np.zeros(128, np.float32)
    run_kernel(_add_kernel(), (1, 1, 1), [every_other, every_other, out, 63])
    assert np.array_equal(out[:63], 2 * backing[:63]) and not out[63:].any()


def test_a_byte_swapped_numpy_array_is_refused():
    x = np.arange(8, dtype=">f4")
    out = np.zeros(128, np.float32)
    with pytest.raises((InterpreterError, TypeError), match="byte order"):
        run_kernel(_add_kernel(), (1, 1, 1), [x, x, out, 8])
    assert not out.any()


def test_masked_load_gives_other_and_never_touches_memory():
    rng = np.random.default_rng()
    x = rng.standard_normal(64).astype(np.float16)
    out = np.zeros(128, dtype=np.float16)
    k = KernelBuilder("masked", [("x", "*fp16"), ("out", "*fp16")])
    offsets = k.arange(128)
    # Odd lanes point far outside any buffer but are masked off.
    far = k.op("mul", [offsets, k.splat(k.const(1 << 20, "i32"), [128])], "<128xi32>")
    odd = k.op("and", [offsets, k.splat(k.const(1, "i32"), [128])], "<128xi32>")
    is_odd = k.op("cmp", [odd, k.splat(k.const(0, "i32"), [128])], "<128xi1>", pred="ne")
    half = k.op("ashr", [offsets, k.splat(k.const(1, "i32"), [128])], "<128xi32>")
    index = k.op("select", [is_odd, far, half], "<128xi32>")
    keep = k.op("xor", [is_odd, k.splat(k.const(True, "i1"), [128])], "<128xi1>")
    other = k.const(float("-inf"), "<128xfp16>")
    v = k.op("load", [_ptrs(k, k.args["x"], index, "fp16", 128), keep, other], "<128xfp16>")
    k.op("store", [_ptrs(k, k.args["out"], offsets, "fp16", 128), v])
    run_kernel(k.finish(), (1, 1, 1), [x, out])
    assert np.array_equal(out[0::2], x) and np.all(out[1::2] == -np.inf)


def test_masked_load_without_other_reads_zero():
    x = np.random.default_rng().integers(1, 100, 16).astype(np.int32)
    out = np.full(16, -1, dtype=np.int32)
    k = KernelBuilder("zero", [("x", "*i32"), ("out", "*i32")])
    offsets = k.arange(16)
    mask = k.op("cmp", [offsets, k.splat(k.const(10, "i32"), [16])], "<16xi1>", pred="lt")
    v = k.op("load", [_ptrs(k, k.args["x"], offsets, "i32", 16), mask], "<16xi32>")
    k.op("store", [_ptrs(k, k.args["out"], offsets, "i32", 16), v])
    run_kernel(k.finish(), (1, 1, 1), [x, out])
    assert out.tolist() == x[:10].tolist() + [0] * 6


def test_pointers_loaded_from_memory():
    rng = np.random.default_rng()
    a, b = torch.randn(32), torch.randn(32)
    out = torch.zeros(2, 32)
    table = torch.tensor([b.data_ptr(), a.data_ptr()], dtype=torch.int64)
    k = KernelBuilder("gather_rows", [("table", "*i64"), ("out", "*fp32"), ("a", "*fp32"), ("b", "*fp32")])
    pid = k.pid()
    entry = k.op("addptr", [k.args["table"], pid], "*i64")
    address = k.op("load", [entry], "i64")
    row = k.op("cast", [address], "*fp32")
    v = k.op("load", [_ptrs(k, row, k.arange(32), "fp32", 32)], "<32xfp32>")
    start = k.op("mul", [pid, k.const(32, "i32")], "i32")
    offsets = k.op("add", [k.splat(start, [32]), k.arange(32)], "<32xi32>")
    k.op("store", [_ptrs(k, k.args["out"], offsets, "fp32", 32), v])
    run_kernel(k.finish(), (2, 1, 1), [table, out, a, b])
    assert torch.equal(out[0], b) and torch.equal(out[1], a)
    del rng


def test_pointer_to_memory_that_is_no_argument_says_how_to_reach_it():
    # 1 MiB: an allocation of its own, far from the small argument tensors.
    hidden = torch.randn(1 << 18)
    out = torch.zeros(32)
    table = torch.tensor([hidden.data_ptr()], dtype=torch.int64)
    k = KernelBuilder("follow", [("table", "*i64"), ("out", "*fp32")])
    row = k.op("cast", [k.op("load", [k.args["table"]], "i64")], "*fp32")
    v = k.op("load", [_ptrs(k, row, k.arange(32), "fp32", 32)], "<32xfp32>")
    k.op("store", [_ptrs(k, k.args["out"], k.arange(32), "fp32", 32), v])
    module = k.finish()
    with pytest.raises(InterpreterError, match="pointer arguments .pass a tensor whose address"):
        run_kernel(module, (1, 1, 1), [table, out])
    # Just past the end of an argument it is an indexing mistake: no such advice.
    table[0] = out.data_ptr() + out.nbytes
    with pytest.raises(InterpreterError, match="out-of-bounds load") as info:
        run_kernel(module, (1, 1, 1), [table, out])
    assert "pass a tensor" not in str(info.value)


def test_pointer_typed_table():
    x = np.random.default_rng().standard_normal(8)
    table = np.array([x.ctypes.data + 8 * i for i in range(8)], dtype=np.uint64)
    out = np.zeros(8)
    k = KernelBuilder("deref", [("table", "**fp64"), ("out", "*fp64"), ("x", "*fp64")])
    ptrs = k.op("load", [k.op("addptr", [k.splat(k.args["table"], [8]), k.arange(8)], "<8x**fp64>")], "<8x*fp64>")
    v = k.op("load", [ptrs], "<8xfp64>")
    k.op("store", [_ptrs(k, k.args["out"], k.arange(8), "fp64", 8), v])
    run_kernel(k.finish(), (1, 1, 1), [table, out, x])
    assert np.array_equal(out, x)


def test_out_of_bounds_names_program_line_and_address():
    x = np.random.default_rng().standard_normal(1000).astype(np.float32)
    y = np.random.default_rng().standard_normal(1000).astype(np.float32)
    out = np.zeros(1000, dtype=np.float32)
    before = out.copy()
    module = _add_kernel()
    with pytest.raises(InterpreterError) as info:
        # n too large: program 7 loads x[896:1024].
        run_kernel(module, (8, 1, 1), [x, y, out, 1024], source_lines={12: "tl.store(out_ptr + offs, x + y, mask)"})
    message = str(info.value)
    assert "out-of-bounds load" in message and "program (7, 0, 0)" in message
    assert "add_kernel" in message and "at index (104,)" in message and "byte offset 4000" in message
    assert "kernel.py:1" in message
    # Programs before the faulty one ran; the faulty one wrote nothing.
    assert np.array_equal(out[:896], x[:896] + y[:896]) and np.array_equal(out[896:], before[896:])


def test_out_of_bounds_store_reports_the_source_line():
    out = np.zeros(100, dtype=np.float32)
    k = KernelBuilder("oob_store", [("out", "*fp32")], file="my_kernels.py")
    offsets = k.arange(128)
    value = k.const(1.0, "<128xfp32>")
    k.at(3).op("store", [_ptrs(k, k.args["out"], offsets, "fp32", 128), value])
    with pytest.raises(InterpreterError) as info:
        source = "a\nb\n    tl.store(out + offs, 1.0)\n"
        run_kernel(k.finish(), (1, 1, 1), [out], source_lines={"my_kernels.py": source})
    message = str(info.value)
    assert "out-of-bounds store" in message and "my_kernels.py:3" in message and "tl.store(out + offs, 1.0)" in message
    assert "'out'" in message and not out.any()


def test_misaligned_access_is_reported():
    x = np.zeros(16, dtype=np.float32)
    k = KernelBuilder("misaligned", [("x", "*fp32")])
    base = k.op("cast", [k.args["x"]], "i64")
    shifted = k.op("add", [base, k.const(2, "i64")], "i64")
    ptr = k.op("cast", [shifted], "*fp32")
    k.op("load", [ptr], "fp32")
    with pytest.raises(InterpreterError, match="misaligned load"):
        run_kernel(k.finish(), (1, 1, 1), [x])


def test_null_pointer_is_out_of_bounds():
    k = KernelBuilder("null", [("x", "*i32")])
    k.op("load", [k.args["x"]], "i32")
    with pytest.raises(InterpreterError, match="outside every buffer"):
        run_kernel(k.finish(), (1, 1, 1), [0])



def test_store_into_a_read_only_numpy_array_is_refused_before_writing():
    # np.frombuffer over bytes: its memory belongs to an immutable object.
    rng = np.random.default_rng()
    x = rng.standard_normal(256).astype(np.float32)
    y = rng.standard_normal(256).astype(np.float32)
    frozen = bytes(256 * 4)
    out = np.frombuffer(frozen, dtype=np.float32)
    with pytest.raises(InterpreterError, match="read-only memory") as info:
        run_kernel(_add_kernel(), (2, 1, 1), [x, y, out, 256])
    assert "'out'" in str(info.value) and "program (0, 0, 0)" in str(info.value)
    assert frozen == bytes(256 * 4)
    # Read-only inputs may still be read; a writeable view of the same memory may be written.
    x.flags.writeable = False
    out = np.zeros(256, np.float32)
    run_kernel(_add_kernel(), (2, 1, 1), [x, y, out, 256])
    assert np.array_equal(out, x + y)
    locked = out.view()
    locked.flags.writeable = False
    expected = out + y
    run_kernel(_add_kernel(), (2, 1, 1), [locked, y, out, 256])
    assert np.array_equal(out, expected)


def test_atomic_into_a_read_only_numpy_array_is_refused():
    counts = np.zeros(4, dtype=np.int32)
    counts.flags.writeable = False
    idx = np.arange(8, dtype=np.int32) % 4
    with pytest.raises(InterpreterError, match="read-only memory"):
        run_kernel(_atomic_kernel("add", "i32", 8, 4), (1, 1, 1), [counts, idx, np.ones(8, np.int32),
                                                                   np.zeros(8, np.int32)])
    assert not counts.any()


# ---------------------------------------------------------------------------
# atomics


def _atomic_kernel(kind: str, elem: str, block: int, bins_mod: int, masked: bool = False):
    params = [("mem", f"*{elem}"), ("idx", "*i32"), ("val", f"*{elem}"), ("old", f"*{elem}")]
    k = KernelBuilder(f"atomic_{kind}", params)
    offsets = k.arange(block)
    index = k.op("load", [_ptrs(k, k.args["idx"], offsets, "i32", block)], f"<{block}xi32>")
    value = k.op("load", [_ptrs(k, k.args["val"], offsets, elem, block)], f"<{block}x{elem}>")
    operands = [_ptrs(k, k.args["mem"], index, elem, block), value]
    if masked:
        operands.append(k.op("cmp", [offsets, k.splat(k.const(block // 2, "i32"), [block])], f"<{block}xi1>",
                             pred="lt"))
    old = k.op("atomic_rmw", operands, f"<{block}x{elem}>", kind=kind, sem="acq_rel", scope="gpu")
    k.op("store", [_ptrs(k, k.args["old"], offsets, elem, block), old])
    return k.finish()


@pytest.mark.parametrize("bins", [4, 256])
def test_atomic_add_histogram_with_collisions(bins):
    rng = np.random.default_rng()
    n = 512
    idx = rng.integers(0, bins, n).astype(np.int32)
    counts = rng.integers(0, 5, bins).astype(np.int32)
    start = counts.copy()
    old = np.zeros(n, dtype=np.int32)
    run_kernel(_atomic_kernel("add", "i32", n, bins), (1, 1, 1), [counts, idx, np.ones(n, np.int32), old])
    assert np.array_equal(counts, start + np.bincount(idx, minlength=bins))
    # Lane order: the k-th lane hitting a bin sees start + k.
    rank = np.array([np.sum(idx[:i] == idx[i]) for i in range(n)])
    assert np.array_equal(old, start[idx] + rank)


@pytest.mark.parametrize("kind,fn", [("max", np.maximum), ("min", np.minimum), ("and", np.bitwise_and),
                                     ("or", np.bitwise_or), ("xor", np.bitwise_xor)])
@pytest.mark.parametrize("bins", [2, 128])
def test_atomic_rmw_kinds_in_lane_order(kind, fn, bins):
    rng = np.random.default_rng()
    n = 256
    idx = rng.integers(0, bins, n).astype(np.int32)
    val = rng.integers(-1000, 1000, n).astype(np.int32)
    mem = rng.integers(-1000, 1000, bins).astype(np.int32)
    expected_mem = mem.copy()
    expected_old = np.zeros(n, dtype=np.int32)
    for lane in range(n):
        expected_old[lane] = expected_mem[idx[lane]]
        expected_mem[idx[lane]] = fn(expected_mem[idx[lane]], val[lane])
    old = np.zeros(n, dtype=np.int32)
    run_kernel(_atomic_kernel(kind, "i32", n, bins), (1, 1, 1), [mem, idx, val, old])
    assert np.array_equal(mem, expected_mem) and np.array_equal(old, expected_old)


@pytest.mark.parametrize("bins", [3, 200])
def test_atomic_xchg_and_masked_float_add(bins):
    rng = np.random.default_rng()
    n = 256
    idx = rng.integers(0, bins, n).astype(np.int32)
    val = rng.standard_normal(n).astype(np.float32)
    mem = rng.standard_normal(bins).astype(np.float32)
    start = mem.copy()
    old = np.full(n, np.nan, dtype=np.float32)
    run_kernel(_atomic_kernel("xchg", "fp32", n, bins), (1, 1, 1), [mem, idx, val, old])
    for b in range(bins):
        lanes = np.flatnonzero(idx == b)
        if len(lanes):
            assert mem[b] == val[lanes[-1]]
            assert old[lanes[0]] == start[b] and np.array_equal(old[lanes[1:]], val[lanes[:-1]])
    mem = start.copy()
    run_kernel(_atomic_kernel("add", "fp32", n, bins, masked=True), (1, 1, 1), [mem, idx, val, old])
    expected = start.astype(np.float64)
    np.add.at(expected, idx[:n // 2], val[:n // 2])
    assert np.allclose(mem, expected, rtol=1e-5, atol=1e-5) and not old[n // 2:].any()


def test_atomic_cas_only_first_lane_wins():
    n = 64
    k = KernelBuilder("cas", [("lock", "*i32"), ("old", "*i32")])
    ptrs = k.splat(k.args["lock"], [n])
    values = k.op("add", [k.arange(n), k.splat(k.const(1, "i32"), [n])], f"<{n}xi32>")
    old = k.op("atomic_cas", [ptrs, k.const(0, f"<{n}xi32>"), values], f"<{n}xi32>", sem="acq_rel", scope="gpu")
    k.op("store", [_ptrs(k, k.args["old"], k.arange(n), "i32", n), old])
    lock = np.zeros(1, dtype=np.int32)
    old = np.full(n, -1, dtype=np.int32)
    run_kernel(k.finish(), (1, 1, 1), [lock, old])
    assert lock[0] == 1 and old[0] == 0 and np.all(old[1:] == 1)


def test_scalar_atomic_counter_across_programs():
    k = KernelBuilder("counter", [("count", "*i32"), ("tickets", "*i32")])
    ticket = k.op("atomic_rmw", [k.args["count"], k.const(1, "i32")], "i32", kind="add", sem="acq_rel", scope="gpu")
    k.op("store", [k.op("addptr", [k.args["tickets"], k.pid()], "*i32"), ticket])
    count = torch.zeros(1, dtype=torch.int32)
    tickets = torch.full((50,), -1, dtype=torch.int32)
    run_kernel(k.finish(), (50, 1, 1), [count, tickets])
    assert count.item() == 50 and tickets.tolist() == list(range(50))


def test_masked_off_scalar_store_through_null_does_nothing():
    k = KernelBuilder("maybe_store", [("x", "*fp32"), ("flag", "i1")])
    k.op("store", [k.args["x"], k.const(1.0, "fp32"), k.args["flag"]])
    run_kernel(k.finish(), (4, 1, 1), [None, False])


def test_device_memory_is_rejected():
    class FakeCudaTensor:
        device = torch.device("cuda", 0)

        def data_ptr(self):
            return 0x1000

    k = KernelBuilder("device", [("x", "*fp32")])
    with pytest.raises(InterpreterError, match="CPU memory"):
        run_kernel(k.finish(), (1, 1, 1), [FakeCudaTensor()])
