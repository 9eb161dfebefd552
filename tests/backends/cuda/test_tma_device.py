"""TMA for descriptors made in the kernel (`tl.make_tensor_descriptor`) on
sm_90+: the kernel encodes each tensor map into its global scratch memory
(`tma.py`'s `tensormap_create`, `codegen_tma.py`), which the launcher asks the
allocator of `triton.set_allocator` for.

Without a GPU: what compiles for sm_90 (the maps' instructions in the PTX,
the scratch size in the metadata, the extra kernel parameter) and what keeps
pointer code (sm_80, TRITONE_TMA=0, descriptors used by atomics), and one
map for a descriptor carried through loops and branches. On a GPU (`gpu` marker): copies of blocks straddling every edge
for several dtypes and both paddings, bit-exact against torch; a matmul
against torch; descriptors made again inside a loop; the allocator's sizes.
"""

from __future__ import annotations

import re

import pytest
import torch
from test_tma import copy_2d

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import lowering
from tritone.compiler import ASTSource
from tritone.ir import parse_module, print_module


@triton.jit
def copy_2d_device(src_ptr, dst_ptr, out, M, N, BM: tl.constexpr, BN: tl.constexpr, NAN: tl.constexpr):
    """test_tma's `copy_2d` (blocks shifted by half a block, into `out` and back
    through a store) on descriptors made here."""
    if NAN:
        src = tl.make_tensor_descriptor(src_ptr, [M, N], [N, 1], [BM, BN], padding_option="nan")
    else:
        src = tl.make_tensor_descriptor(src_ptr, [M, N], [N, 1], [BM, BN])
    copy_2d(src, tl.make_tensor_descriptor(dst_ptr, [M, N], [N, 1], [BM, BN]), out, BM, BN)


@triton.jit
def matmul_device(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([k * BK, pid_n * BN]), acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


@triton.jit
def matmul_in_two_loops(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """`matmul_device` with its K loop split in two, both reading the same descriptors
    (as attention's two loops over K and V do)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    half = tl.cdiv(K, BK) // 2
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, half):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([k * BK, pid_n * BN]), acc)
    for k in range(half, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([k * BK, pid_n * BN]), acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


@triton.jit
def two_dots_device(q_ptr, k_ptr, v_ptr, o_ptr, N, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """o = (q k^T, rounded to fp16) v over blocks of keys: attention's loop without the
    softmax, its K tile read by the first dot, its V tile by the second."""
    q_desc = tl.make_tensor_descriptor(q_ptr, [N, D], [D, 1], [BM, D])
    k_desc = tl.make_tensor_descriptor(k_ptr, [N, D], [D, 1], [BN, D])
    v_desc = tl.make_tensor_descriptor(v_ptr, [N, D], [D, 1], [BN, D])
    o_desc = tl.make_tensor_descriptor(o_ptr, [N, D], [D, 1], [BM, D])
    pid = tl.program_id(0)
    q = q_desc.load([pid * BM, 0])
    acc = tl.zeros((BM, D), dtype=tl.float32)
    for start in range(0, N, BN):
        scores = tl.dot(q, k_desc.load([start, 0]).T)
        acc = tl.dot(scores.to(tl.float16), v_desc.load([start, 0]), acc)
    o_desc.store([pid * BM, 0], acc.to(tl.float16))


@triton.jit
def remade_in_a_loop(a_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Adds 1 to each block of rows `pid`, making the descriptor again every
    third block (inside an `if`), as persistent kernels do per tile."""
    pid = tl.program_id(0)
    for i in range(0, N, BN):
        if i % (3 * BN) == 0:
            first = tl.make_tensor_descriptor(a_ptr, [M, N], [N, 1], [BM, BN])
            first.store([pid * BM, i], first.load([pid * BM, i]) + 1)
        else:
            other = tl.make_tensor_descriptor(a_ptr, [M, N], [N, 1], [BM, BN])
            other.store([pid * BM, i], other.load([pid * BM, i]) + 1)


@triton.jit
def carried(a_ptr, b_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Adds 1 to rows `pid` of `a` and 2 to those of `b`: a descriptor carried through a
    loop and a branch, remade as another tensor's every other block."""
    pid = tl.program_id(0)
    desc = tl.make_tensor_descriptor(a_ptr, [M, N], [N, 1], [BM, BN])
    for i in range(0, 2 * N, BN):
        if i == N:
            desc = tl.make_tensor_descriptor(b_ptr, [M, N], [N, 1], [BM, BN])
        column = i % N
        desc.store([pid * BM, column], desc.load([pid * BM, column]) + (1 + (i >= N)))


@triton.jit
def with_an_atomic(a_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(a_ptr, [M, N], [N, 1], [BM, BN])
    desc.atomic_add([0, 0], desc.load([0, 0]))


_FENCE = "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned"
_MATMUL_SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
_MATMUL_BLOCKS = {"BM": 128, "BN": 128, "BK": 64}
_COPY_SIGNATURE = {"a_ptr": "*fp32", "M": "i32", "N": "i32"}


def _compile(kernel, signature: dict, constants: dict, arch: int):
    return triton.compile(ASTSource(kernel, signature, constants), target=GPUTarget("cuda", arch, 32))


def _gpu_ir(compiled) -> str:
    """The kernel's IR after the CUDA backend's passes."""
    module = parse_module(compiled.asm["ttir"])
    lowering.generate_cuda(module, 90, {})
    return print_module(module)


def test_made_descriptors_encode_their_tensor_maps_on_sm90(monkeypatch):
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    kernel = _compile(matmul_device, _MATMUL_SIGNATURE, _MATMUL_BLOCKS, 90)
    ptx = kernel.asm["ptx"]
    assert ptx.count(_FENCE) == 3
    assert ptx.count("fence.proxy.tensormap::generic.acquire.gpu") == 3
    for field in ("global_address", "rank", "box_dim", "global_dim", "global_stride", "element_stride",
                  "elemtype", "interleave_layout", "swizzle_mode", "fill_mode"):
        assert f"tensormap.replace.tile.{field}.shared::cta.b1024" in ptx, field
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global", ptx)
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", ptx)
    assert ".target sm_90a" in ptx
    # the wgmma result reaches the output's staged tile through stmatrix, four 8x8 matrices a time
    assert "stmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx
    # 128 bytes per map, per program; the scratch pointer is the last parameter
    assert (kernel.metadata.global_scratch_size, kernel.metadata.global_scratch_align) == (384, 128)
    assert tuple(kernel.metadata.params[-1]) == ("tt_global_scratch", "unsigned char*", 8)


def test_two_loops_over_one_descriptor_each_pipeline_their_tiles(monkeypatch):
    # the second loop's tiles get maps of their own (5 in all), so both loops copy by TMA
    # over mbarriers in wgmma's swizzle, and no tile goes through registers; the output's
    # map, only stored, stages its block in the 128-byte swizzle too
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    kernel = _compile(matmul_in_two_loops, _MATMUL_SIGNATURE, _MATMUL_BLOCKS, 90)
    ptx = kernel.asm["ptx"]
    assert kernel.metadata.global_scratch_size == 5 * 128 and ptx.count(_FENCE) == 5
    assert re.findall(r"swizzle_mode\.shared::cta\.b1024\.b32 \[%r\d+\], (\d)", ptx) == ["3"] * 5
    ir = _gpu_ir(kernel)
    # per loop: a wait, and the two tiles' copies for each of the 2 stages ahead and in the body
    assert ir.count("mbarrier_wait(") == 2 and ir.count("tma_copy(") == 2 * 2 * 3 and "tma_load(" not in ir


def _two_dots_ir(head_dim: int) -> str:
    return _gpu_ir(_compile(two_dots_device, {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16",
                                              "o_ptr": "*fp16", "N": "i32"}, {"D": head_dim, "BM": 128, "BN": 64}, 90))


def test_tiles_read_by_different_dots_each_have_their_mbarriers(monkeypatch):
    # K's copies complete on mbarriers of their own, waited for before the first dot;
    # V's (16 KB, d128) on others, waited for only before the second dot, so the first
    # runs while V lands
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    ir = _two_dots_ir(128)
    assert ir.count("mbarrier_init(") == 2 and ir.count("mbarrier_inval(") == 2
    loop = ir[ir.index("= for("):]
    first_wait, first_dot = loop.index("mbarrier_wait("), loop.index("= dot(")
    second_wait = loop.index("mbarrier_wait(", first_wait + 1)
    assert first_wait < first_dot < second_wait < loop.index("= dot(", first_dot + 1)
    # a tile's bytes announced on its own mbarrier (64 x 128 fp16 each), for each of the
    # 2 stages ahead and in the body
    assert re.findall(r"mbarrier_arrive\(.*bytes = (\d+)", ir) == ["16384"] * 6
    # an 8 KB V tile (d64) lands in time: one mbarrier a stage for both, as for a matmul's
    # tiles, which one dot reads
    matmul = _gpu_ir(_compile(matmul_device, _MATMUL_SIGNATURE, _MATMUL_BLOCKS, 90))
    for single, stage_bytes in ((_two_dots_ir(64), 2 * 64 * 64 * 2), (matmul, 2 * 128 * 64 * 2)):
        assert single.count("mbarrier_init(") == 1 and single.count("mbarrier_wait(") == 1
        assert re.findall(r"mbarrier_arrive\(.*bytes = (\d+)", single) == [str(stage_bytes)] * 3


@pytest.mark.parametrize("arch", [100, 120])
def test_after_hopper_tma_is_asked_for(arch, monkeypatch):
    # tritone's dots there are mma.sync, whose tiles cp.async pipelines from pointer code
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    pointer = _compile(matmul_device, _MATMUL_SIGNATURE, _MATMUL_BLOCKS, arch)
    assert "tensormap" not in pointer.asm["ptx"] and pointer.metadata.global_scratch_size == 0
    monkeypatch.setenv("TRITONE_TMA", "1")
    tma = _compile(matmul_device, _MATMUL_SIGNATURE, _MATMUL_BLOCKS, arch)
    assert tma.asm["ptx"].count(_FENCE) == 3 and f".target sm_{arch}a" in tma.asm["ptx"]


def test_below_sm90_or_switched_off_descriptors_stay_pointer_code(monkeypatch):
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    sm80 = _compile(matmul_device, _MATMUL_SIGNATURE, _MATMUL_BLOCKS, 80)
    monkeypatch.setenv("TRITONE_TMA", "0")
    off = _compile(matmul_device, _MATMUL_SIGNATURE, _MATMUL_BLOCKS, 90)
    for kernel in (sm80, off):
        assert "tensormap" not in kernel.asm["ptx"] and "cp.async.bulk.tensor" not in kernel.asm["ptx"]
        assert kernel.metadata.global_scratch_size == 0
        assert all(name != "tt_global_scratch" for name, _, _ in kernel.metadata.params)


def test_descriptors_used_otherwise_than_by_loads_and_stores_stay_pointer_code(monkeypatch):
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    compiled = _compile(with_an_atomic, _COPY_SIGNATURE, {"BM": 8, "BN": 32}, 90)
    assert _FENCE not in compiled.asm["ptx"]
    assert compiled.metadata.global_scratch_size == 0


def test_a_descriptor_carried_through_a_loop_has_one_map_every_make_writes(monkeypatch):
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    compiled = _compile(carried, {**_COPY_SIGNATURE, "b_ptr": "*fp32"}, {"BM": 8, "BN": 32}, 90)
    assert compiled.asm["ptx"].count(_FENCE) == 2
    assert compiled.metadata.global_scratch_size == 128
    assert "tensormap_at(" in compiled.asm["cuda"] or "tensormap_at" in _gpu_ir(compiled)


def test_each_made_descriptor_gets_its_own_map(monkeypatch):
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    compiled = _compile(remade_in_a_loop, _COPY_SIGNATURE, {"BM": 8, "BN": 32}, 90)
    assert compiled.asm["ptx"].count(_FENCE) == 2
    assert compiled.metadata.global_scratch_size == 256


def test_fp8_nan_padding_is_left_to_the_kernel(monkeypatch):
    """The copy engine moves fp8 as bytes, which it cannot fill with NaN: the map
    asks for zeros (fill mode 0) and the kernel writes the NaNs."""
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    signature = {"src_ptr": "*fp8e4nv", "dst_ptr": "*fp8e4nv", "out": "*fp8e4nv", "M": "i32", "N": "i32"}
    fp8 = _compile(copy_2d_device, signature, {"BM": 8, "BN": 32, "NAN": True}, 90).asm["ptx"]
    fp32 = _compile(copy_2d_device, {**signature, "src_ptr": "*fp32", "dst_ptr": "*fp32", "out": "*fp32"},
                    {"BM": 8, "BN": 32, "NAN": True}, 90).asm["ptx"]
    fill = r"tensormap\.replace\.tile\.fill_mode\.shared::cta\.b1024\.b32 \[%r\d+\], (\d);"
    assert re.findall(fill, fp8) == ["0", "0"]
    assert sorted(re.findall(fill, fp32)) == ["0", "1"]  # src NaN-padded, dst not


# -- on the GPU ---------------------------------------------------------------------------------

class RecordingAllocator:
    """A `triton.set_allocator` allocator that records what kernels ask for and
    poisons what it hands out."""

    def __init__(self):
        self.calls: list[tuple[int, int, object]] = []

    def __call__(self, size: int, alignment: int, stream):
        self.calls.append((size, alignment, stream))
        return torch.full((size,), 0x5A, dtype=torch.uint8, device="cuda")


@pytest.fixture
def on_the_gpu(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_TMA", raising=False)
    allocator = RecordingAllocator()
    triton.set_allocator(allocator)
    yield allocator
    triton.set_allocator(None)


def _random(shape, torch_dtype) -> torch.Tensor:
    if torch_dtype.is_floating_point:
        return torch.randn(shape, device="cuda").mul(4).to(torch_dtype)
    return torch.randint(-100, 100, shape, device="cuda").to(torch_dtype)


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    integer = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[tensor.element_size()]
    return tensor.contiguous().view(integer)


def _assert_same(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    if actual.dtype.is_floating_point:
        nan_a, nan_e = actual.float().isnan(), expected.float().isnan()
        wrong = (nan_a != nan_e) | (~nan_e & (_bits(actual) != _bits(expected)))
    else:
        wrong = actual != expected
    assert not wrong.any(), f"{what}: {int(wrong.sum())} of {wrong.numel()} elements differ"


@pytest.mark.gpu
@pytest.mark.parametrize("torch_dtype, block, shape", [
    (torch.float16, [16, 64], (37, 72)),
    (torch.bfloat16, [32, 16], (45, 24)),
    (torch.float32, [8, 32], (13, 44)),
    (torch.int8, [32, 16], (50, 48)),
    (torch.float8_e4m3fn, [8, 32], (21, 48)),
    (torch.float16, [8, 512], (20, 600)),  # dims above 256: copied as several boxes
    (torch.float32, [512, 8], (700, 12)),
])
@pytest.mark.parametrize("nan", [False, True])
def test_blocks_straddling_every_edge(torch_dtype, block, shape, nan, on_the_gpu):
    if nan and not torch_dtype.is_floating_point:
        pytest.skip("NaN padding is for floats")
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("pointer code below sm_90: the tensor descriptor tests cover it")
    src, dst = _random(shape, torch_dtype), _random(shape, torch_dtype)
    grid = tuple(-(-(s + b // 2) // b) for s, b in zip(shape, block))
    out = _random((grid[0] * block[0], grid[1] * block[1]), torch_dtype)
    compiled = copy_2d_device[grid](src, dst, out, shape[0], shape[1], block[0], block[1], nan)
    assert _FENCE in compiled.asm["ptx"]
    expected = torch.full(out.shape, float("nan") if nan else 0.0, device="cuda").to(torch_dtype)
    expected[block[0] // 2:block[0] // 2 + shape[0], block[1] // 2:block[1] // 2 + shape[1]] = src
    _assert_same(out, expected, "loaded blocks")
    _assert_same(dst, src, "stored blocks")
    assert on_the_gpu.calls == [(grid[0] * grid[1] * 256, 128, on_the_gpu.calls[0][2])]


@pytest.mark.gpu
@pytest.mark.parametrize("kernel, sizes, maps", [(matmul_device, (300, 256, 200), 3),
                                                 (matmul_in_two_loops, (256, 256, 512), 5)])
def test_matmul_through_kernel_made_maps(kernel, sizes, maps, on_the_gpu):
    M, N, K = sizes
    a, b = torch.randn((M, K), device="cuda", dtype=torch.float16), torch.randn((K, N), device="cuda",
                                                                                    dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
    kernel[grid](a, b, c, M, N, K, 128, 128, 64)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=1e-2, atol=1e-2)
    assert [call[:2] for call in on_the_gpu.calls] == [(grid[0] * grid[1] * maps * 128, 128)]


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("D", [64, 128])  # one mbarrier a stage; K's and V's apart
def test_two_dots_through_kernel_made_maps(D, stages, on_the_gpu):
    N = 512
    q, k, v = (torch.randn((N, D), device="cuda").mul(0.5).half() for _ in range(3))
    o = torch.full((N, D), float("nan"), device="cuda", dtype=torch.float16)
    two_dots_device[(N // 128,)](q, k, v, o, N, D, 128, 64, num_stages=stages)
    expected = (q.float() @ k.float().T).half().float() @ v.float()
    torch.testing.assert_close(o.float(), expected, rtol=2e-2, atol=5e-2)


@pytest.mark.gpu
def test_a_descriptor_carried_through_a_loop(on_the_gpu):
    M, N = 64, 256
    a, b = torch.randn((M, N), device="cuda"), torch.randn((M, N), device="cuda")
    expected_a, expected_b = a + 1, b + 2
    carried[(M // 8,)](a, b, M, N, 8, 32)
    torch.testing.assert_close(a, expected_a, rtol=0, atol=0)
    torch.testing.assert_close(b, expected_b, rtol=0, atol=0)
    assert [call[:2] for call in on_the_gpu.calls] == [(M // 8 * 128, 128)]


@pytest.mark.gpu
def test_descriptors_made_again_inside_a_loop(on_the_gpu):
    M, N = 64, 512
    a = torch.randn((M, N), device="cuda")
    expected = a + 1
    remade_in_a_loop[(M // 8,)](a, M, N, 8, 32)
    torch.testing.assert_close(a, expected, rtol=0, atol=0)
