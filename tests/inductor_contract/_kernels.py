"""User kernels whose reads and writes TorchInductor's mutation analysis must
find, each with the arguments it reads and writes (`ACCESSES`)."""

import tritone as triton
import tritone.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def add_in_place(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def scalar_between(x_ptr, scale, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


@triton.jit
def atomic_sum(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total_ptr, tl.sum(tl.load(x_ptr + offsets, mask=offsets < n, other=0.0), axis=0))


@triton.jit
def locked_count(lock_ptr, count_ptr, unused_ptr, BLOCK: tl.constexpr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(count_ptr, tl.load(count_ptr) + 1)
    tl.atomic_xchg(lock_ptr, 0)


@triton.jit(noinline=True)
def store_block(ptr, offsets, value, mask):
    tl.store(ptr + offsets, value, mask=mask)


@triton.jit(noinline=True)
def load_block(ptr, offsets, mask):
    return tl.load(ptr + offsets, mask=mask)


@triton.jit
def through_helpers(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    store_block(out_ptr, offsets, load_block(x_ptr, offsets, mask) * 2.0, mask)


@triton.jit
def pointer_walk_in_loop(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    src = x_ptr
    dst = out_ptr
    for _ in range(rows):
        tl.store(dst + offsets, tl.load(src + offsets, mask=offsets < cols), mask=offsets < cols)
        src += cols
        dst += cols


@triton.jit
def pointer_walk_in_while(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    row = 0
    dst = out_ptr
    while row < rows:
        tl.store(dst + offsets, tl.load(x_ptr + row * cols + offsets, mask=offsets < cols), mask=offsets < cols)
        dst += cols
        row += 1


@triton.jit
def store_in_branch(x_ptr, low_ptr, high_ptr, threshold, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    if tl.sum(x, axis=0) < threshold:
        tl.store(low_ptr + offsets, x)
    else:
        tl.store(high_ptr + offsets, x)


@triton.jit
def row_softmax(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * cols + offsets, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def cumulative(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.cumsum(tl.load(x_ptr + offsets), axis=0))


@triton.jit
def gather_scatter(index_ptr, src_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    index = tl.load(index_ptr + offsets)
    tl.store(out_ptr + index, tl.load(src_ptr + offsets))


@triton.jit
def block_pointers(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    src = tl.make_block_ptr(x_ptr, (rows, cols), (cols, 1), (0, 0), (BLOCK, BLOCK), (1, 0))
    dst = tl.make_block_ptr(out_ptr, (rows, cols), (cols, 1), (0, 0), (BLOCK, BLOCK), (1, 0))
    tl.store(dst, tl.load(src, boundary_check=(0, 1)), boundary_check=(0, 1))


@triton.jit
def accumulate_over_k(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        ks = k + tl.arange(0, BLOCK)
        a = tl.load(a_ptr + rows[:, None] * K + ks[None, :])
        b = tl.load(b_ptr + ks[:, None] * BLOCK + rows[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rows[:, None] * BLOCK + rows[None, :], acc)


@triton.jit
def pure_asm(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [tl.load(x_ptr + offsets)], dtype=tl.float32,
                                  is_pure=True, pack=1)
    tl.store(out_ptr + offsets, y)


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"])
@triton.jit
def tuned_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


@triton.jit
def impure_asm(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [tl.load(x_ptr + offsets)], dtype=tl.float32,
                                  is_pure=False, pack=1)
    tl.store(out_ptr + offsets, y)


@triton.jit
def cross_entropy_in_place(logits_ptr, stride, target_ptr, loss_ptr, n_cols, BLOCK: tl.constexpr):
    # The shape of a library's cross-entropy: an online softmax over the row block by block in a
    # run-time loop, then the gradient written over the logits; the targets are only read.
    row = tl.program_id(0).to(tl.int64)
    logits_ptr += row * stride
    target = tl.load(target_ptr + row)
    running_max = float("-inf")
    running_sum = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + cols, mask=cols < n_cols, other=float("-inf"))
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + cols, mask=cols < n_cols, other=float("-inf"))
        grad = tl.exp(x - running_max) / running_sum - tl.where(cols == target, 1.0, 0.0)
        tl.store(logits_ptr + cols, grad, mask=cols < n_cols)
    target_logit = tl.load(logits_ptr + target)
    tl.store(loss_ptr + row, tl.log(running_sum) + running_max - target_logit)


@triton.jit
def optional_bias(x_ptr, bias_ptr, scale, out_ptr, BLOCK: tl.constexpr):
    # Given None, bias_ptr is a constant and no argument: the arguments after it move down one.
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets) * scale
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offsets)
    tl.store(out_ptr + offsets, x)


# case -> (tensor arguments with their lengths, other arguments, reads, writes); a case names its
# kernel, or the kernel and what it is given (`optional_bias_given`)
ACCESSES = {
    "add": ({"x_ptr": 64, "y_ptr": 64, "out_ptr": 64}, {"n": 64, "BLOCK": 16},
            ["x_ptr", "y_ptr"], ["out_ptr"]),
    "add_in_place": ({"x_ptr": 64, "y_ptr": 64}, {"n": 64, "BLOCK": 16}, ["x_ptr", "y_ptr"], ["x_ptr"]),
    "scalar_between": ({"x_ptr": 64, "out_ptr": 64}, {"scale": 1.5, "n": 64, "BLOCK": 16}, ["x_ptr"], ["out_ptr"]),
    "atomic_sum": ({"x_ptr": 64, "total_ptr": 1}, {"n": 64, "BLOCK": 16}, ["x_ptr"], ["total_ptr"]),
    "locked_count": ({"lock_ptr": 1, "count_ptr": 1, "unused_ptr": 4}, {"BLOCK": 1}, ["count_ptr"],
                     ["count_ptr", "lock_ptr"]),
    "through_helpers": ({"x_ptr": 64, "out_ptr": 64}, {"n": 64, "BLOCK": 16}, ["x_ptr"], ["out_ptr"]),
    "pointer_walk_in_loop": ({"x_ptr": 64, "out_ptr": 64}, {"rows": 4, "cols": 16, "BLOCK": 16}, ["x_ptr"],
                             ["out_ptr"]),
    "pointer_walk_in_while": ({"x_ptr": 64, "out_ptr": 64}, {"rows": 4, "cols": 16, "BLOCK": 16}, ["x_ptr"],
                              ["out_ptr"]),
    "store_in_branch": ({"x_ptr": 16, "low_ptr": 16, "high_ptr": 16}, {"threshold": 0.5, "BLOCK": 16}, ["x_ptr"],
                        ["high_ptr", "low_ptr"]),
    "row_softmax": ({"x_ptr": 64, "out_ptr": 64}, {"cols": 16, "BLOCK": 16}, ["x_ptr"], ["out_ptr"]),
    "cumulative": ({"x_ptr": 16, "out_ptr": 16}, {"BLOCK": 16}, ["x_ptr"], ["out_ptr"]),
    "gather_scatter": ({"index_ptr": 16, "src_ptr": 16, "out_ptr": 16}, {"BLOCK": 16}, ["index_ptr", "src_ptr"],
                       ["out_ptr"]),
    "block_pointers": ({"x_ptr": 64, "out_ptr": 64}, {"rows": 8, "cols": 8, "BLOCK": 8}, ["x_ptr"], ["out_ptr"]),
    "accumulate_over_k": ({"a_ptr": 512, "b_ptr": 512, "c_ptr": 256}, {"K": 32, "BLOCK": 16}, ["a_ptr", "b_ptr"],
                          ["c_ptr"]),
    "pure_asm": ({"x_ptr": 16, "out_ptr": 16}, {"BLOCK": 16}, ["x_ptr"], ["out_ptr"]),
    "tuned_copy": ({"x_ptr": 64, "out_ptr": 64}, {"n": 64}, ["x_ptr"], ["out_ptr"]),
    "optional_bias": ({"x_ptr": 16, "out_ptr": 16}, {"bias_ptr": None, "scale": 2.0, "BLOCK": 16}, ["x_ptr"],
                      ["out_ptr"]),
    "optional_bias_given": ({"x_ptr": 16, "bias_ptr": 16, "out_ptr": 16}, {"scale": 2.0, "BLOCK": 16},
                            ["bias_ptr", "x_ptr"], ["out_ptr"]),
    "cross_entropy_in_place": ({"logits_ptr": 128, "target_ptr": 4, "loss_ptr": 4},
                               {"stride": 32, "n_cols": 32, "BLOCK": 16}, ["logits_ptr", "target_ptr"],
                               ["logits_ptr", "loss_ptr"]),
}



@triton.jit
def triton_poi_fused_add_mul_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    # The shape of a pointwise kernel Inductor generates.
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + xindex, xmask)
    tmp1 = tl.load(in_ptr1 + xindex, xmask)
    tl.store(out_ptr0 + xindex, tmp0 + tmp1 * 2.0, xmask)


SCALE = tl.constexpr(3)
# Annotated, as Liger's kernels write their constants: Inductor's copy writes the annotation as
# `<class module>.<class name>`, which must resolve in a module that imports only `triton`.
OFFSET: tl.constexpr = tl.constexpr(1)


@triton.constexpr_function
def halve(x):
    return x // 2


@triton.jit
def scaled(x):
    return x * SCALE


@triton.jit
def shifted(x):
    return x + OFFSET


@triton.jit
def calls_helpers(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # Inductor copies a user kernel with the @jit and constexpr functions and globals it uses.
    offsets = tl.arange(0, halve(2 * BLOCK))
    tl.store(out_ptr + offsets, shifted(scaled(tl.load(x_ptr + offsets))))
