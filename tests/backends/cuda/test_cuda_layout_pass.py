"""Layout assignment on hand-built kernels: coalesced vector layouts where axis
analysis proves alignment, slices for reductions, conversions only where
producers and consumers truly disagree."""

import cuda_emulator
import numpy as np
from cuda_ir_builder import KernelBuilder

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import layout_pass
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir
from tritone.ir import types as T
from tritone.ir.core import Region
from tritone.ir.layouts import BlockedLayout, SliceLayout

FP32_PTR = T.pointer_type(T.float32)
FP16_PTR = T.pointer_type(T.float16)
SPEC = {0: {"divisibility": 16}, 1: {"divisibility": 16}, 2: {"divisibility": 16}, 3: {"divisibility": 16}}


def _run(kb: KernelBuilder):
    kb.ret()
    layout_pass.run(kb.module)
    layout_pass.verify_layouts(kb.fn)
    return layout_pass.conversions(kb.fn)


def _vector_add(kb: KernelBuilder, block: int, ptr_args=(0, 1, 2), n_arg=3):
    offs = kb.add(kb.splat(kb.mul(kb.pid(), kb.const(block, T.int32)), [block]), kb.arange(0, block))
    mask = kb.cmp("lt", offs, kb.splat(kb.args[n_arg], [block]))
    x = kb.load(kb.ptr_block(kb.args[ptr_args[0]], offs), mask)
    y = kb.load(kb.ptr_block(kb.args[ptr_args[1]], offs), mask)
    out = kb.add(x, y)
    kb.store(kb.ptr_block(kb.args[ptr_args[2]], offs), out, mask)
    return offs, x, out


def test_vector_add_gets_16_byte_vectors_and_no_conversions():
    kb = KernelBuilder("add", [("x", FP32_PTR), ("y", FP32_PTR), ("o", FP32_PTR), ("n", T.int32)], arg_attrs=SPEC)
    offs, x, out = _vector_add(kb, 1024)
    assert _run(kb) == []
    expected = BlockedLayout((4,), (32,), (4,), (0,))
    assert offs.type.layout == expected and x.type.layout == expected and out.type.layout == expected


def test_unaligned_pointers_get_one_element_per_thread_and_fp16_gets_eight():
    kb = KernelBuilder("add", [("x", FP32_PTR), ("y", FP32_PTR), ("o", FP32_PTR), ("n", T.int32)], num_warps=8)
    offs, _, _ = _vector_add(kb, 512)
    assert _run(kb) == []
    assert offs.type.layout == BlockedLayout((1,), (32,), (8,), (0,))

    kb = KernelBuilder("h", [("x", FP16_PTR), ("y", FP16_PTR), ("o", FP16_PTR), ("n", T.int32)], arg_attrs=SPEC)
    offs, _, _ = _vector_add(kb, 4096)
    assert _run(kb) == []
    assert offs.type.layout.size_per_thread == (8,)


def test_a_store_of_8_fp32_a_thread_gets_its_own_coalesced_layout():
    kb = KernelBuilder("widen", [("x", FP16_PTR), ("o", FP32_PTR), ("n", T.int32)], arg_attrs=SPEC)
    offs = kb.add(kb.splat(kb.mul(kb.pid(), kb.const(2048, T.int32)), [2048]), kb.arange(0, 2048))
    mask = kb.cmp("lt", offs, kb.splat(kb.args[2], [2048]))
    x = kb.load(kb.ptr_block(kb.args[0], offs), mask)
    wide = kb.cast(x, T.float32)
    kb.store(kb.ptr_block(kb.args[1], offs), wide, mask)
    converted = _run(kb)
    assert wide.type.layout.size_per_thread == (8,)
    store = kb.fn.body.ops[-2]
    assert store.name == "store" and all(v.type.layout.size_per_thread == (4,) for v in store.operands)
    # Only the data moves through shared memory, right before the store; the pointers
    # and the mask are computed again in the store's layout.
    assert [op.operands[0] for op in converted] == [wide]
    ops = kb.fn.body.ops
    between = ops[ops.index(converted[0]) + 1:ops.index(store)]
    assert between and {op.name for op in between} <= {"arange", "splat", "add", "mul", "cmp", "addptr"}


def _row_offsets(kb, rows, cols, stride_arg, transpose=False):
    r = kb.arange(0, rows)
    c = kb.arange(0, cols)
    r2 = kb.expand_dims(r, 1)
    c2 = kb.expand_dims(c, 0)
    stride = kb.args[stride_arg]
    if transpose:  # element (i, j) at i + j * stride: contiguous along dim 0
        return r, kb.add(kb.broadcast(r2, [rows, cols]), kb.broadcast(kb.mul(c2, kb.splat(stride, [1, cols])),
                                                                       [rows, cols]))
    return r, kb.add(kb.broadcast(kb.mul(r2, kb.splat(stride, [rows, 1])), [rows, cols]),
                     kb.broadcast(c2, [rows, cols]))


def _sum_combine(kb: KernelBuilder, elem: T.dtype) -> Region:
    region, (a, b) = kb.region([elem, elem])
    with kb.inside(region):
        kb.op("yield", [kb.add(a, b)])
    return region


def test_row_reduction_result_is_a_slice_and_is_stored_without_conversion():
    kb = KernelBuilder("rowsum", [("x", FP32_PTR), ("o", FP32_PTR), ("stride", T.int32)], arg_attrs=SPEC)
    rows, offs = _row_offsets(kb, 64, 128, 2)
    x = kb.load(kb.ptr_block(kb.args[0], offs))
    reduce = kb.op_multi("reduce", [x], [T.block_type(T.float32, [64])], [_sum_combine(kb, T.float32)], axis=1)
    kb.store(kb.ptr_block(kb.args[1], rows), reduce.results[0])
    assert _run(kb) == []
    layout = x.type.layout
    assert isinstance(layout, BlockedLayout) and layout.order == (1, 0) and layout.size_per_thread == (1, 4)
    assert reduce.results[0].type.layout == SliceLayout(1, layout)


def test_transposed_copy_converts_once_through_the_data():
    kb = KernelBuilder("transpose", [("x", FP32_PTR), ("o", FP32_PTR), ("stride", T.int32)], arg_attrs=SPEC)
    _, src = _row_offsets(kb, 64, 64, 2)
    _, dst = _row_offsets(kb, 64, 64, 2, transpose=True)
    x = kb.load(kb.ptr_block(kb.args[0], src))
    kb.store(kb.ptr_block(kb.args[1], dst), x)
    converts = _run(kb)
    assert len(converts) == 1
    (conv,) = converts
    assert conv.operands[0] is x
    assert x.type.layout.order == (1, 0) and conv.results[0].type.layout.order == (0, 1)
    assert conv.results[0].type.layout.size_per_thread == (4, 1)


def test_loop_carried_accumulator_shares_the_load_layout():
    kb = KernelBuilder("acc", [("x", FP32_PTR), ("o", FP32_PTR), ("k", T.int32)], arg_attrs={0: {"divisibility": 16},
                                                                                          1: {"divisibility": 16}})
    offs = kb.arange(0, 256)
    zero = kb.const(0.0, T.block_type(T.float32, [256]))
    ptr0 = kb.ptr_block(kb.args[0], offs)
    body, (iv, acc, p) = kb.region([T.int32, zero.type, ptr0.type])
    with kb.inside(body):
        acc2 = kb.add(acc, kb.load(p))
        p2 = kb.addptr(p, kb.splat(kb.const(256, T.int32), [256]))
        kb.op("yield", [acc2, p2])
    loop = kb.op_multi("for", [kb.const(0, T.int32), kb.args[2], kb.const(1, T.int32), zero, ptr0],
                       [zero.type, ptr0.type], [body])
    kb.store(kb.ptr_block(kb.args[1], offs), loop.results[0])
    assert _run(kb) == []
    layout = BlockedLayout((2,), (32,), (4,), (0,))  # 256 elements over 128 threads, aligned
    assert acc.type.layout == layout and loop.results[0].type.layout == layout and zero.type.layout == layout


def test_cheap_values_are_recomputed_instead_of_converted():
    """One arange feeds a row-major and a column-major tile: the index math is
    computed again in each layout, only the loaded data is converted."""
    kb = KernelBuilder("t", [("x", FP32_PTR), ("o", FP32_PTR), ("stride", T.int32)], arg_attrs=SPEC)
    r = kb.arange(0, 32)
    rows = kb.broadcast(kb.expand_dims(r, 1), [32, 32])
    cols = kb.broadcast(kb.expand_dims(r, 0), [32, 32])
    stride = kb.splat(kb.args[2], [32, 32])
    x = kb.load(kb.ptr_block(kb.args[0], kb.add(kb.mul(rows, stride), cols)))
    kb.store(kb.ptr_block(kb.args[1], kb.add(rows, kb.mul(cols, stride))), x)
    converts = _run(kb)
    assert [c.operands[0] for c in converts] == [x]


def test_scalar_only_kernel_is_untouched():
    kb = KernelBuilder("s", [("x", FP32_PTR), ("v", T.float32)])
    kb.store(kb.args[0], kb.args[1])
    assert _run(kb) == []


# -- a conversion after broadcasts moves the smaller value ---------------------------------------

@triton.jit
def broadcast_product_sum(Z, X, Y, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # `sum(x[:, :, None] * y[None, :, :], axis=1)`: a matmul written without tl.dot.
    offm = tl.arange(0, BM)[:, None]
    offn = tl.arange(0, BN)[None, :]
    x = tl.load(X + offm * BK + tl.arange(0, BK)[None, :])
    y = tl.load(Y + tl.arange(0, BK)[:, None] * BN + offn)
    t = tl.sum(tl.expand_dims(x, axis=2) * tl.expand_dims(y, axis=0), axis=1)
    tl.store(Z + offm * BN + offn, t)


def test_operands_of_a_broadcast_product_are_converted_before_the_broadcast():
    bm, bn, bk = 64, 32, 32
    src = ASTSource(broadcast_product_sum, {"Z": "*fp32", "X": "*fp32", "Y": "*fp32"}, {"BM": bm, "BN": bn, "BK": bk})
    module = make_ir(src, GPUTarget("cuda", 80, 32), {"num_warps": 4})
    source, _, metadata = generate_cuda(module, 80, {"num_warps": 4})
    # Converting the 64x32x32 product would need 256 KiB of shared memory (more than a GPU has);
    # a converted operand is at most 64x32.
    converted = [op.operands[0].type.numel for op in layout_pass.conversions(module.kernel)]
    assert converted and max(converted) <= bm * bk
    assert metadata["shared"] < bm * bn * bk * 4 // 4
    if not cuda_emulator.available():
        return
    rng = np.random.default_rng()
    x = rng.standard_normal((bm, bk)).astype(np.float32)
    y = rng.standard_normal((bk, bn)).astype(np.float32)
    z = np.full((bm, bn), np.nan, np.float32)
    cuda_emulator.Emulator(source, 4, metadata["shared"]).launch((1,), z, x, y)
    np.testing.assert_allclose(z, x @ y, rtol=1e-5, atol=1e-5)


@triton.jit
def a_times_b_transposed(C, A, B, K, BLOCK: tl.constexpr):
    """C = A @ B.T for one BLOCK x BLOCK tile, B given N x K: both loads read along K,
    which is a's rows and b's columns; both pad with zeros (one constant after CSE)."""
    r = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), tl.float32)
    for k0 in range(0, K, BLOCK):
        k = k0 + tl.arange(0, BLOCK)
        a = tl.load(A + r[:, None] * K + k[None, :], mask=k[None, :] < K, other=0.0)
        b = tl.load(B + k[:, None] + r[None, :] * K, mask=k[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(C + r[:, None] * BLOCK + r[None, :], acc)


def test_loads_sharing_a_constant_other_keep_their_own_access_order():
    # The zero both loads pad with is one value (a cast of a splat, shared by CSE);
    # it used to put both pointers in one layout class, so b was read across K
    # (one byte a copy for fp8, not pipelined: tutorial 09's 128x128x128 fp8 configs)
    src = ASTSource(a_times_b_transposed, {"C": "*fp32", "A": "*fp8e4nv", "B": "*fp8e4nv", "K": "i32"},
                    {"BLOCK": 128}, {(i,): [["tt.divisibility", 16]] for i in range(4)})
    module = make_ir(src, GPUTarget("cuda", 90, 32), {"num_warps": 8, "num_stages": 3})
    source, _, _ = generate_cuda(module, 90, {"num_warps": 8, "num_stages": 3})
    copies = [op for op in module.kernel.walk() if op.name == "async_copy"]
    orders = sorted({tuple(op.operands[2].type.layout.order) for op in copies})
    assert orders == [(0, 1), (1, 0)], orders
    assert source.count("tt_cp_async16(") >= 2
