"""Tensor descriptors on the CUDA backend: kernels with device-made and host
descriptors compile with NVRTC for Turing, Ampere and Hopper (no GPU needed)
as the pointer code of `passes/lower_descriptors.py`, with the parameters the
launcher writes; on a GPU (`gpu` marker) they agree with torch. The GPU
checks also run in the interpreter here, so their own logic is tested
everywhere."""

from __future__ import annotations

import re

import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone._internal_testing import default_alloc_fn
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import lowering
from tritone.backends.cuda.launch_plan import LaunchSpec, _allocate_storage
from tritone.compiler import ASTSource
from tritone.ir.parser import parse_module
from tritone.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def device_kernel(X, Y, Z, W, Index, M, N, BM: tl.constexpr, BN: tl.constexpr):
    source = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN], padding_option="nan")
    target = tl.make_tensor_descriptor(Y, [M, N], [N, 1], [BM, BN])
    rows = tl.make_tensor_descriptor(Z, [M, N], [N, 1], [1, BN])
    sums = tl.make_tensor_descriptor(W, [M, N], [N, 1], [BM, BN])
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    block = source.load([m, n])
    target.store([m, n], block * 2)
    sums.atomic_add([m, n], block)
    if tl.program_id(0) == 0:  # one program per column block: no two programs write the same rows
        index = tl.load(Index + tl.arange(0, BM))
        rows.scatter(rows.gather(index, n) + 1, index, n)


@triton.jit
def host_kernel(a_desc, b_desc, c_desc):
    K = a_desc.shape[1]
    BM: tl.constexpr = a_desc.block_shape[0]
    BK: tl.constexpr = a_desc.block_shape[1]
    BN: tl.constexpr = b_desc.block_shape[1]
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([m, k]), b_desc.load([k, n]), acc)
    c_desc.store([m, n], acc.to(c_desc.dtype))


_DEVICE_SIGNATURE = {"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "W": "*fp32", "Index": "*i32", "M": "i32",
                     "N": "i32"}
_DIVISIBLE = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]], (6,): [["tt.divisibility", 16]]}
_HOST_SIGNATURE = {"a_desc": "tensordesc<fp16[32, 16]>", "b_desc": "tensordesc<fp16[16, 32]>",
                   "c_desc": "tensordesc<fp16[32, 32]>"}


@pytest.mark.parametrize("arch", [75, 80, 90])
def test_device_descriptors_compile_to_vectorized_pointer_code(arch, monkeypatch):
    monkeypatch.setenv("TRITONE_TMA", "0")  # sm_90 would copy `source` and `target` with TMA
    kernel = triton.compile(ASTSource(device_kernel, _DEVICE_SIGNATURE, {"BM": 16, "BN": 64}, _DIVISIBLE),
                            target=GPUTarget("cuda", arch, 32))
    assert kernel.asm["cubin"][:4] == b"\x7fELF"
    ptx = kernel.asm["ptx"]
    assert re.search(r"ld\.global(\.\w+)*\.v4", ptx), "the N-divisible rows load as 16-byte vectors"
    assert re.search(r"red\.global(\.\w+)*\.add(\.v\d)?\.f32", ptx)  # old values unused: `red`
    assert "cp.async.bulk.tensor" not in ptx  # pointer code, not TMA
    assert "descriptor_load(" in kernel.asm["ttir"]  # the target-neutral IR keeps the descriptor ops


def test_device_descriptors_loaded_and_stored_only_use_tma_on_sm90(monkeypatch):
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    kernel = triton.compile(ASTSource(device_kernel, _DEVICE_SIGNATURE, {"BM": 16, "BN": 64}, _DIVISIBLE),
                            target=GPUTarget("cuda", 90, 32))
    ptx = kernel.asm["ptx"]
    # `source` and `target` through tensor maps the kernel encodes; `sums` (atomics) and `rows`
    # (gather, scatter) stay pointer code
    assert ptx.count("tensormap.cp_fenceproxy") == 2 and kernel.metadata.global_scratch_size == 256
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx and "cp.async.bulk.tensor.2d.global" in ptx
    assert re.search(r"red\.global(\.\w+)*\.add(\.v\d)?\.f32", ptx)


@triton.jit
def atomics_kernel(A, B, C, D, E, M, N, BM: tl.constexpr, BN: tl.constexpr):
    a = tl.make_tensor_descriptor(A, [M, N], [N, 1], [BM, BN])
    b = tl.make_tensor_descriptor(B, [M, N], [N, 1], [BM, BN])
    c = tl.make_tensor_descriptor(C, [M, N], [N, 1], [BM, BN])
    d = tl.make_tensor_descriptor(D, [M, N], [N, 1], [BM, BN])
    e = tl.make_tensor_descriptor(E, [M, N], [N, 1], [BM, BN])
    a.atomic_add([0, 0], a.load([0, 0]))
    b.atomic_min([0, 0], b.load([0, 0]))
    b.atomic_max([0, 0], b.load([0, 0]))
    c.atomic_xor([0, 0], c.load([0, 0]))
    c.atomic_and([0, 0], c.load([0, 0]))
    c.atomic_or([0, 0], c.load([0, 0]))
    d.atomic_add([0, 0], d.load([0, 0]))
    e.atomic_add([0, 0], e.load([0, 0]))


@pytest.mark.parametrize("arch, bf16_add", [(80, "atom.relaxed.gpu.global.cas.b32"),
                                            (90, "red.global.gpu.relaxed.add.noftz.bf16")])
def test_descriptor_atomics_are_relaxed_atomics_of_their_dtype(arch, bf16_add):
    signature = {"A": "*u64", "B": "*i64", "C": "*u32", "D": "*bf16", "E": "*fp16", "M": "i32", "N": "i32"}
    kernel = triton.compile(ASTSource(atomics_kernel, signature, {"BM": 8, "BN": 16}),
                            target=GPUTarget("cuda", arch, 32))
    # Nothing reads the old values: `red` where the GPU has the operation, a CAS loop elsewhere.
    atoms = set(re.findall(r"(?:atom|red)\.[\w.]+", kernel.asm["ptx"]))
    assert {"red.global.gpu.relaxed.add.u64", "red.global.gpu.relaxed.min.s64", "red.global.gpu.relaxed.max.s64",
            "red.global.gpu.relaxed.xor.b32", "red.global.gpu.relaxed.and.b32", "red.global.gpu.relaxed.or.b32",
            "red.global.gpu.relaxed.add.noftz.f16", bf16_add} <= atoms


@pytest.mark.parametrize("arch", [80, 90])
def test_host_descriptor_parameters_are_what_the_launcher_writes(arch):
    kernel = triton.compile(ASTSource(host_kernel, _HOST_SIGNATURE), target=GPUTarget("cuda", arch, 32))
    spec = LaunchSpec.from_kernel(kernel)
    storage, _ = _allocate_storage(spec)
    assert [p[2] for p in kernel.metadata.params] == [len(bytes(value)) for value in storage]
    assert [p.type for p in spec.runtime_parameters][:6] == ["tensordesc<fp16[32, 16]>", "i32", "i32", "i64", "i64",
                                                            "u1"]


def test_host_descriptors_of_shapes_divisible_by_16_load_vectors():
    divisible = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]], (2,): [["tt.divisibility", 16]]}
    kernel = triton.compile(ASTSource(host_kernel, _HOST_SIGNATURE, attrs=divisible),
                            target=GPUTarget("cuda", 80, 32))
    ptx = kernel.asm["ptx"]
    # 4 fp16 per thread of a 32x16 block over 128 threads: 8-byte loads, 16-byte stores of 32x32
    assert re.search(r"ld\.global(\.\w+)*\.v2\.b32", ptx) and re.search(r"st\.global(\.\w+)*\.v4", ptx)
    assert not re.search(r"ld\.global(\.\w+)*\.b16", ptx)


@pytest.mark.parametrize("arch", [80, 90])
def test_zero_padded_host_descriptors_feed_dots_through_pipelined_copies(arch, monkeypatch):
    # Zero padding, specialised on ("Z"), pads with a constant zero, which cp.async's fill gives:
    # the K loop's loads become asynchronous copies. NaN padding keeps plain loads (the flag picks).
    monkeypatch.setenv("TRITONE_TMA", "0")  # pointer code on sm_90 too
    def compiled(attribute: str):
        attrs = {(i,): [["tt.divisibility", 16], *([["tritone.zero_padding", 1]] if attribute == "DZ" else [])]
                 for i in range(3)}
        return triton.compile(ASTSource(host_kernel, _HOST_SIGNATURE, attrs=attrs),
                              target=GPUTarget("cuda", arch, 32), options={"num_stages": 3}).asm["ptx"]

    zero, nan = compiled("DZ"), compiled("D")
    assert re.search(r"cp\.async\.(ca|cg)\.shared\.global", zero)
    assert not re.search(r"cp\.async\.(ca|cg)\.shared\.global", nan)


@triton.jit
def device_matmul_kernel(A, B, C, sizes, lds, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ Bᵀ through descriptors made on the device from sizes read from memory (as
    tutorial 08's grouped GEMM does): no divisibility of K is known when compiling."""
    m, n, k = tl.load(sizes), tl.load(sizes + 1), tl.load(sizes + 2)
    a = tl.make_tensor_descriptor(A, [m, k], [tl.load(lds), 1], [BM, BK])
    b = tl.make_tensor_descriptor(B, [n, k], [tl.load(lds + 1), 1], [BN, BK])
    c = tl.make_tensor_descriptor(C, [m, n], [tl.load(lds + 2), 1], [BM, BN])
    pm, pn = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, tl.cdiv(k, BK)):
        acc += tl.dot(a.load([pm, kk * BK]), b.load([pn, kk * BK]).T)
    c.store([pm, pn], acc.to(tl.float16))


_DEVICE_MATMUL_SIGNATURE = {"A": "*fp16", "B": "*fp16", "C": "*fp16", "sizes": "*i32", "lds": "*i32"}


def _device_matmul_ptx(arch: int) -> str:
    return triton.compile(ASTSource(device_matmul_kernel, _DEVICE_MATMUL_SIGNATURE, {"BM": 64, "BN": 64, "BK": 32},
                                    {(i,): [["tt.divisibility", 16]] for i in range(5)}),
                          target=GPUTarget("cuda", arch, 32), options={"num_stages": 3}).asm["ptx"]


@pytest.mark.parametrize("arch", [80, 90])
def test_device_descriptors_with_sizes_from_memory_feed_dots_through_pipelined_copies(arch, monkeypatch):
    # make_tensor_descriptor requires a 16-byte aligned base and leading strides: the
    # tiles copy as 16-byte pieces, and the piece across K's edge, which no analysis can
    # place, checks its mask bits at run time (element by element only there)
    monkeypatch.setenv("TRITONE_TMA", "0")  # sm_90 would copy with TMA
    ptx = _device_matmul_ptx(arch)
    assert re.search(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16", ptx)
    assert "st.shared.u16" in ptx


def test_device_descriptors_feed_dots_through_pipelined_tma_copies_on_sm90(monkeypatch):
    # the tiles (BK = 32 fp16: 64-byte rows) arrive by TMA in wgmma's 64-byte swizzle, one box
    # per tile, over mbarrier stages; the output's map, only stored, a 128-byte swizzled column
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    ptx = _device_matmul_ptx(90)
    assert not re.search(r"cp\.async\.(ca|cg)\.shared\.global", ptx)
    assert re.findall(r"swizzle_mode\.shared::cta\.b1024\.b32 \[%r\d+\], (\d)", ptx) == ["2", "2", "3"]
    assert "mbarrier.try_wait.parity" in ptx and "wgmma.mma_async" in ptx


# -- the same kernels run (on the GPU with the `gpu` marker, in the interpreter below) --------

def check_device_descriptors(device: str) -> None:
    m, n, bm, bn = 40, 192, 16, 64
    x = torch.randn(m, n, device=device)
    y = torch.randn(m, n, device=device)
    z = torch.randn(m, n, device=device)
    w = torch.randn(m, n, device=device)
    expected_w = w + x
    index = torch.randperm(m, device=device)[:bm].to(torch.int32)
    expected_z = z.clone()
    expected_z[index.long(), :] += 1
    device_kernel[(-(-m // bm), n // bn)](x, y, z, w, index, m, n, 16, 64)
    torch.testing.assert_close(y, 2 * x)
    torch.testing.assert_close(w, expected_w)
    torch.testing.assert_close(z, expected_z)


def check_host_descriptors(device: str) -> None:
    a = torch.randn(96, 48, dtype=torch.float16, device=device)
    b = torch.randn(48, 64, dtype=torch.float16, device=device)
    c = torch.full((96, 64), float("nan"), dtype=torch.float16, device=device)
    host_kernel[(3, 2)](TensorDescriptor.from_tensor(a, [32, 16]), TensorDescriptor.from_tensor(b, [16, 32]),
                        TensorDescriptor.from_tensor(c, [32, 32]))
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=1e-2, atol=1e-2)


@triton.jit
def padding_kernel(desc, out, BM: tl.constexpr, BN: tl.constexpr):
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    rows = m + tl.arange(0, BM)[:, None]
    cols = n + tl.arange(0, BN)[None, :]
    tl.store(out + rows * (2 * BN) + cols, desc.load([m, n]))


def check_padding(device: str) -> None:
    x = torch.randn(24, 48, device=device)
    for padding, fill in (("zero", 0.0), ("nan", float("nan"))):
        out = torch.empty(32, 64, device=device)
        padding_kernel[(2, 2)](TensorDescriptor(x, [20, 40], [48, 1], [16, 32], padding=padding), out, 16, 32)
        expected = torch.full((32, 64), fill, device=device)
        expected[:20, :40] = x[:20, :40]
        torch.testing.assert_close(out, expected, equal_nan=True)


def check_device_matmul(device: str) -> None:
    # rows padded to 80 elements (16-byte multiples, as descriptors require), K edges at 70
    # and 64, in fp16 and fp32 tiles (2- and 4-byte elements across the edge)
    for dtype, m, n, k in ((torch.float16, 96, 64, 70), (torch.float16, 64, 128, 64), (torch.float32, 64, 64, 70)):
        a = torch.randn(m, 80, dtype=dtype, device=device)
        b = torch.randn(n, 80, dtype=dtype, device=device)
        a[:, k:], b[:, k:] = float("nan"), float("nan")  # past the edge: never read
        c = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
        sizes = torch.tensor([m, n, k], dtype=torch.int32, device=device)
        lds = torch.tensor([80, 80, n], dtype=torch.int32, device=device)
        device_matmul_kernel[(-(-m // 32), n // 32)](a, b, c, sizes, lds, 32, 32, 32)
        expected = a[:, :k].double() @ b[:, :k].double().T
        torch.testing.assert_close(c.double(), expected, rtol=2e-2, atol=2e-2)


CHECKS = [check_device_descriptors, check_host_descriptors, check_padding, check_device_matmul]


@pytest.mark.gpu
@pytest.mark.parametrize("check", CHECKS)
def test_on_the_gpu(check, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    # descriptors made in a kernel keep their tensor maps in global scratch memory on sm_90+
    triton.set_allocator(default_alloc_fn)
    try:
        check("cuda")
    finally:
        triton.set_allocator(None)


@pytest.mark.parametrize("check", CHECKS)
def test_the_gpu_checks_in_the_interpreter(check, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    check("cpu")


@triton.jit
def grouped_tma_matmul(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ Bᵀ over host descriptors in grouped program order (tutorial 09's TMA
    kernel): the output's offsets come from `%` and `min`, which no analysis proves
    non-negative, so the TMA store keeps a run-time check."""
    pid = tl.program_id(0)
    num_pid_m, num_pid_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group_id = pid // (8 * num_pid_n)
    group_size_m = min(num_pid_m - group_id * 8, 8)
    pid_m = group_id * 8 + pid % group_size_m
    pid_n = (pid % (8 * num_pid_n)) // group_size_m
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([pid_n * BN, k * BK]).T, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


def _grouped_tma_matmul(element: str, bm: int, bn: int, bk: int):
    signature = {"a_desc": f"tensordesc<{element}[{bm}, {bk}]>", "b_desc": f"tensordesc<{element}[{bn}, {bk}]>",
                 "c_desc": f"tensordesc<{element}[{bm}, {bn}]>", "M": "i32", "N": "i32", "K": "i32"}
    # as the launcher specialises them: zero padding, sizes divisible by 16
    attrs = {(i,): [["tt.divisibility", 16], *([["tritone.zero_padding", 1]] if i < 3 else [])] for i in range(6)}
    return triton.compile(ASTSource(grouped_tma_matmul, signature, {"BM": bm, "BN": bn, "BK": bk}, attrs),
                          target=GPUTarget("cuda", 90, 32), options={"num_stages": 3, "num_warps": 4})


@pytest.mark.parametrize("element, swizzle", [("fp16", 128), ("fp8e4nv", 64)])
def test_host_descriptor_tiles_of_every_dot_dtype_arrive_by_pipelined_tma(element, swizzle, monkeypatch):
    # fp8 loads carry the shape and the NaN flag for the padding the kernel writes itself;
    # specialised on zero padding, the copy engine's own padding is all they need
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    kernel = _grouped_tma_matmul(element, 64, 64, 64)
    ptx = kernel.asm["ptx"]
    assert "mbarrier.try_wait.parity" in ptx and "wgmma.mma_async" in ptx
    assert not re.search(r"ld\.global", ptx), "the tiles are not loaded through registers"
    rows = swizzle // (2 if element == "fp16" else 1)
    assert kernel.metadata.tensormap_boxes[:2] == [[[64, rows], swizzle]] * 2


def test_a_checked_tma_store_keeps_no_second_copy_of_its_block(monkeypatch):
    # the store's run-time check picks the copy engine or the threads, both writing out the
    # tile staged by stmatrix: no conversion of the value to a pointer-code layout (a second
    # copy of the block in registers, beside the accumulator)
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    kernel = _grouped_tma_matmul("fp16", 64, 64, 64)
    module = parse_module(kernel.asm["ttir"])
    lowering.generate_cuda(module, 90, {"num_warps": 4, "num_stages": 3})
    (fn,) = module.functions.values()
    (store,) = [op for op in fn.walk() if op.name == "tma_store"]
    assert len(store.operands) == 2 + 2 + 1 + 1 + 2 + 2, "map, value, offsets, check, base, sizes, strides"
    assert not [op for op in fn.walk() if op.name in ("convert_layout", "store")]
    assert "stmatrix.sync.aligned.m8n8.x4.shared.b16" in kernel.asm["ptx"]


def test_an_fp8_mma_result_is_staged_for_its_tma_store_in_byte_pairs(monkeypatch):
    # each thread of an mma/wgmma result holds column pairs: fp8 elements are staged two at a time
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    ptx = _grouped_tma_matmul("fp8e4nv", 64, 64, 64).asm["ptx"]
    assert re.search(r"st\.shared\.(u16|b16)", ptx) and not re.search(r"st\.shared\.(u8|b8)", ptx)
