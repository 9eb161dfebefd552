"""TMA for host tensor descriptors on sm_90+ (`backends/cuda/tma.py`,
`codegen_tma.py`, `tensormap.py`, the launch plan's tensor maps).

Without a GPU: kernels compile with NVRTC for sm_90 into PTX holding
`cp.async.bulk.tensor` and `mbarrier`, while sm_80 gets exactly the pointer
code it got before; which descriptors keep pointer code and why; the
arguments of `cuTensorMapEncodeTiled` and the bytes a launch passes, against a
simulated driver. On a GPU (`gpu` marker): TMA loads and stores of 2-D and 3-D
blocks (1-D, 2-D and 3-D) of every dtype family, straddling the tensor's edges with zero and NaN
padding, bit-exact against torch; the same checks also run in the interpreter
here, so their own logic is tested everywhere.
"""

from __future__ import annotations

import ctypes
import re

import pytest
import torch
from test_launch_plan import FakeGPU

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import lowering, tma
from tritone.backends.cuda.bindings.driver_api import (
    TensorMapDataType,
    TensorMapL2Promotion,
    TensorMapOOBFill,
    TensorMapSwizzle,
)
from tritone.backends.cuda.launch_plan import LaunchPlan, LaunchSpec
from tritone.backends.cuda.tensormap import tma_unsupported_reason
from tritone.compiler import ASTSource
from tritone.ir.parser import parse_module
from tritone.ir.types import block_type, dtype, parse_type, tensordesc_type, tensormap_type, type_text
from tritone.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def copy_2d(src, dst, out, BM: tl.constexpr, BN: tl.constexpr):
    """Block (pm, pn) of `src`, shifted up-left by half a block (so blocks
    straddle every edge, offsets below 0 included): into `out` (where the
    padding shows) and through `dst.store` back to where it came from (out
    of bounds dropped)."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    m, n = pm * BM - BM // 2, pn * BN - BN // 2
    block = src.load([m, n])
    rows = (pm * BM + tl.arange(0, BM))[:, None]
    cols = (pn * BN + tl.arange(0, BN))[None, :]
    tl.store(out + rows * (tl.num_programs(1) * BN) + cols, block)
    dst.store([m, n], block)


@triton.jit
def copy_1d(src, dst, out, B: tl.constexpr):
    """`copy_2d` in one dim."""
    p = tl.program_id(0)
    block = src.load([p * B - B // 2])
    tl.store(out + p * B + tl.arange(0, B), block)
    dst.store([p * B - B // 2], block)


@triton.jit
def copy_3d(src, dst, out, BA: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """`copy_2d` in three dims."""
    pa, pm, pn = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    a, m, n = pa * BA - BA // 2, pm * BM - BM // 2, pn * BN - BN // 2
    block = src.load([a, m, n])
    i = (pa * BA + tl.arange(0, BA))[:, None, None]
    j = (pm * BM + tl.arange(0, BM))[None, :, None]
    k = (pn * BN + tl.arange(0, BN))[None, None, :]
    rows, cols = tl.num_programs(1) * BM, tl.num_programs(2) * BN
    tl.store(out + (i * rows + j) * cols + k, block)
    dst.store([a, m, n], block)


@triton.jit
def load_and_add(desc, out, BM: tl.constexpr, BN: tl.constexpr):
    """A TMA load and a descriptor atomic (pointer code) on one host descriptor."""
    block = desc.load([0, 0])
    tl.store(out + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], block)
    desc.atomic_add([0, 0], block)


@triton.jit
def two_loads(wide, narrow, out, out2, BM: tl.constexpr, BN: tl.constexpr, BN2: tl.constexpr):
    rows = tl.arange(0, BM)[:, None]
    tl.store(out + rows * BN + tl.arange(0, BN)[None, :], wide.load([0, 0]))
    tl.store(out2 + rows * BN2 + tl.arange(0, BN2)[None, :], narrow.load([0, 0]))


@triton.jit
def tile_copy(src, dst, BM: tl.constexpr, BN: tl.constexpr):
    """Block (pm, pn) to the same place: offsets that are multiples of the block."""
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    dst.store([m, n], src.load([m, n]))


@triton.jit
def load_and_store_same(desc, BM: tl.constexpr, BN: tl.constexpr):
    """Block pm of `desc` plus one, back in place: one map loaded and stored."""
    m = tl.program_id(0) * BM
    desc.store([m, 0], desc.load([m, 0]) + 1)


@triton.jit
def two_halves(src, dst, BM: tl.constexpr, BN: tl.constexpr):
    """Rows pm of `src` (2 * BN wide, pointer loads) stored as two halves through one map,
    one after the other (tutorial 09's subtiled epilogue): the two stores stage in the
    same shared bytes."""
    rows = (tl.program_id(0) * BM + tl.arange(0, BM))[:, None] * (2 * BN)
    cols = tl.arange(0, BN)[None, :]
    m = tl.program_id(0) * BM - BM // 2
    dst.store([m, 0], tl.load(src + rows + cols))
    dst.store([m, BN], tl.load(src + rows + BN + cols))


def _signature(element: str, block: list[int]) -> dict:
    desc = f"tensordesc<{element}[{', '.join(map(str, block))}]>"
    return {"src": desc, "dst": desc, "out": f"*{element}"}


@pytest.fixture(autouse=True)
def tma_on(monkeypatch):
    """TMA is the default (`knobs.nvidia.tma`); whatever the environment running the tests says."""
    monkeypatch.delenv("TRITONE_TMA", raising=False)


def test_tma_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("TRITONE_TMA", "0")
    ptx = _compile(copy_2d, _signature("fp16", [16, 64]), {"BM": 16, "BN": 64}, 90).asm["ptx"]
    assert "cp.async.bulk.tensor" not in ptx and "mbarrier" not in ptx


def _compile(kernel, signature: dict, constants: dict, arch: int):
    return triton.compile(ASTSource(kernel, signature, constants), target=GPUTarget("cuda", arch, 32))


_2D = {"BM": 16, "BN": 64}


# -- compiled for sm_90 and sm_80 --------------------------------------------------------------

# copy_2d's column offsets pn * BN - BN // 2 are multiples of 16 bytes for these blocks
@pytest.mark.parametrize("element, block", [("fp16", [16, 64]), ("fp8e4nv", [8, 32]), ("i8", [32, 32]),
                                            ("fp32", [8, 8])])
def test_host_descriptor_loads_and_stores_are_tma_copies_on_sm90(element, block):
    kernel = _compile(copy_2d, _signature(element, block), {"BM": block[0], "BN": block[1]}, 90)
    assert kernel.asm["cubin"][:4] == b"\x7fELF"
    ptx = kernel.asm["ptx"]
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes", ptx)
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group", ptx)
    for instruction in ("mbarrier.init.shared::cta.b64", "mbarrier.arrive.expect_tx.shared::cta.b64",
                        "mbarrier.try_wait.parity.shared::cta.b64", "mbarrier.inval.shared::cta.b64",
                        "fence.proxy.async.shared::cta", "cp.async.bulk.commit_group", "cp.async.bulk.wait_group"):
        assert instruction in ptx, instruction
    # the two tensor maps come after the 13 other arguments, 128 bytes each, by value
    params = kernel.metadata.params
    assert [p[1] for p in params[-2:]] == ["const __grid_constant__ tt_tensormap"] * 2
    assert [p[2] for p in params[-2:]] == [128, 128] and len(params) == 15
    assert list(kernel.metadata.tensormaps) == [0, 6]
    # the tile (128-byte aligned) and its mbarrier are in the dynamic shared memory
    tile = block[0] * block[1] * dtype(element).itemsize
    assert kernel.metadata.shared >= tile + 8
    assert "descriptor_load" not in kernel.asm["cuda"]
    # each thread moves 16 contiguous bytes of the row-major tile at a time, where the block gives it that many
    if block[0] * block[1] * dtype(element).itemsize >= 16 * 128:
        assert re.search(r"ld\.shared\.v4", ptx) and re.search(r"st\.shared\.v4", ptx)


@pytest.mark.parametrize("element, block", [("fp32", 16), ("fp16", 256), ("i8", 64)])
def test_1d_blocks_use_1d_copies(element, block):
    desc = f"tensordesc<{element}[{block}]>"
    kernel = _compile(copy_1d, {"src": desc, "dst": desc, "out": f"*{element}"}, {"B": block}, 90)
    ptx = kernel.asm["ptx"]
    assert "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert "cp.async.bulk.tensor.1d.global.shared::cta.bulk_group" in ptx


def test_3d_blocks_use_3d_copies_with_the_innermost_coordinate_first():
    signature = {"src": "tensordesc<bf16[2, 8, 32]>", "dst": "tensordesc<bf16[2, 8, 32]>", "out": "*bf16"}
    kernel = _compile(copy_3d, signature, {"BA": 2, "BM": 8, "BN": 32}, 90)
    ptx = kernel.asm["ptx"]
    load = re.search(r"cp\.async\.bulk\.tensor\.3d\.shared::cluster\S* \[%r\d+\], \[%rd\d+, \{(%r\d+), (%r\d+), "
                     r"(%r\d+)\}\]", ptx)
    assert load, "a 3-D tensor copy with three coordinates"
    assert "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group" in ptx
    cuda = kernel.asm["cuda"]
    # the C wrapper lists the coordinates outermost first; the PTX operands reverse them
    assert "[%1, {%5, %4, %3}], [%2]" in cuda


def test_fp8_nan_padding_is_written_by_the_kernel(monkeypatch):
    """The copy engine moves fp8 as bytes and fills only zeros: the kernel puts
    the NaNs itself where the padding flag asks, from the shape it is given."""
    kernel = _compile(copy_2d, _signature("fp8e5", [8, 32]), {"BM": 8, "BN": 32}, 90)
    cuda = kernel.asm["cuda"]
    assert "cp.async.bulk.tensor" in kernel.asm["ptx"]
    assert re.search(r"if \(arg5_src_nan_padding\)", cuda), "the NaN padding depends on the run-time flag"
    assert "< (unsigned)arg1_src_shape0" in cuda and "< (unsigned)arg2_src_shape1" in cuda
    # the IR of the extra operands passes the verifier after every GPU pass
    monkeypatch.setenv("TRITONE_VERIFY_IR", "1")
    lowering.generate_cuda(parse_module(kernel.asm["ttir"]), 90)


def test_sm80_and_older_generate_what_they_did_without_the_tma_pass(monkeypatch):
    """Below sm_90 the tma pass changes nothing: the CUDA is the same with it and without it."""
    signature = _signature("fp16", [16, 64])

    def cuda_for(arch: int) -> str:
        source = ASTSource(copy_2d, signature, _2D)
        return triton.compile(source, target=GPUTarget("cuda", arch, 32)).asm["cuda"]

    with_tma = {arch: cuda_for(arch) for arch in (75, 80)}
    monkeypatch.setattr(lowering, "GPU_PASSES", tuple(p for p in lowering.GPU_PASSES if p is not tma))
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    for arch, cuda in with_tma.items():
        assert cuda_for(arch) == cuda, f"sm_{arch}"
        assert "tt_tensormap" not in cuda and "cp.async.bulk" not in cuda


@pytest.mark.parametrize("element, block, reason", [
    ("fp16", [16, 4], "innermost dim is 8 bytes"),
    ("i8", [64, 8], "innermost dim is 8 bytes"),
    ("fp32", [128, 256], "more than the 65536 staged"),
    ("fp8e4b15", [16, 32], "no data type for fp8e4b15"),
])
def test_descriptors_tma_cannot_copy_keep_pointer_code(element, block, reason):
    desc_type = tensordesc_type(block_type(dtype(element), block))
    assert reason in tma_unsupported_reason(desc_type)
    if element == "fp8e4b15" or block[0] > 64:
        return  # no such kernel compiles in pointer code either (no C type; too many registers)
    kernel = _compile(copy_2d, _signature(element, block), {"BM": block[0], "BN": block[1]}, 90)
    assert "cp.async.bulk.tensor" not in kernel.asm["ptx"]
    assert "tt_tensormap" not in kernel.asm["cuda"] and not getattr(kernel.metadata, "tensormaps", None)


def test_supported_blocks_have_no_reason():
    for element, block in [("fp16", [16, 8]), ("fp32", [256, 4]), ("i8", [1, 16]), ("fp64", [2, 2, 2]),
                           ("bf16", [1, 1, 1, 1, 8]), ("fp8e4nv", [64, 16])]:
        assert tma_unsupported_reason(tensordesc_type(block_type(dtype(element), block))) is None, element


def test_the_ir_records_the_choice_per_op(capsys, monkeypatch):
    """The IR dumped after the GPU passes (TRITONE_DUMP_IR) shows the TMA op,
    the tensor map argument and, for a descriptor left to pointer code, why."""
    signature = {"wide": "tensordesc<fp16[16, 64]>", "narrow": "tensordesc<fp16[16, 4]>", "out": "*fp16",
                 "out2": "*fp16"}
    kernel = _compile(two_loads, signature, {"BM": 16, "BN": 64, "BN2": 4}, 90)
    monkeypatch.setenv("TRITONE_VERIFY_IR", "1")  # and the IR verified after every GPU pass
    lowering.generate_cuda(parse_module(kernel.asm["ttir"]), 90, dump_ir=True)
    dump = capsys.readouterr().err
    after_tma = dump[dump.index("IR Dump After tma "):dump.index("IR Dump After lower_descriptors ")]
    assert "tma_load(" in after_tma and "tensormap<fp16[16, 64]>" in after_tma
    assert "descriptor_load(" in after_tma, "the narrow descriptor's load is left to lower_descriptors"
    assert "innermost dim is 8 bytes" in after_tma


def test_a_descriptor_read_by_tma_keeps_its_base_for_pointer_code():
    signature = {"desc": "tensordesc<fp32[16, 32]>", "out": "*fp32"}
    kernel = _compile(load_and_add, signature, {"BM": 16, "BN": 32}, 90)
    ptx = kernel.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster" in ptx
    atomic = r"(atom|red)\.global(\.\w+)*\.add(\.v\d)?\.f32"
    assert re.search(atomic, ptx), "the atomic is pointer code on the base address"


def test_tensormap_types_print_and_parse():
    ty = tensormap_type(block_type(dtype("fp16"), [64, 32]))
    assert type_text(ty) == "tensormap<fp16[64, 32]>" and parse_type(type_text(ty)) == ty
    assert ty.itemsize == 128 and ty != tensordesc_type(block_type(dtype("fp16"), [64, 32]))


# -- the launch, against a simulated driver ----------------------------------------------------

class TensorMapDriver(FakeGPU):
    """test_launch_plan's one-GPU driver that also records every
    `cuTensorMapEncodeTiled` call's arguments, answering with 128 bytes derived
    from them, and each launch's arguments whole (`sizes`: their byte counts)."""

    def __init__(self):
        super().__init__(functions={"cuTensorMapEncodeTiled": self._encode})
        self.encodes: list[dict] = []
        self.sizes: list[int] = []

    def _encode(self, tensor_map, data_type, rank, address, dims, strides, box, element_strides, interleave,
                swizzle, l2, fill) -> int:
        self.encodes.append({
            "aligned": tensor_map % 64 == 0, "data_type": data_type, "rank": rank, "address": address,
            "dims": list(dims), "strides": list(strides)[:rank - 1], "box": list(box),
            "element_strides": list(element_strides), "interleave": interleave, "swizzle": swizzle, "l2": l2,
            "fill": fill})
        marker = len(self.encodes).to_bytes(8, "little") + address.to_bytes(8, "little")
        ctypes.memmove(tensor_map, marker * 8, 128)
        return 0

    def launch(self, *arguments) -> int:
        code = super().launch(*arguments)
        parameters = self.launches[-1]["parameters"]
        self.launches[-1]["arguments"] = [ctypes.string_at(parameters[i], size) for i, size in enumerate(self.sizes)]
        return code


class FakeTensor:
    """A tensor of cuda:0 at `address` as the launcher sees one."""

    def __init__(self, address: int, torch_dtype, shape: tuple[int, ...], strides: tuple[int, ...] | None = None):
        self.address, self.dtype, self.shape = address, torch_dtype, shape
        self.device = torch.device("cuda", 0)
        self._strides = strides or tuple(torch.empty(shape, device="meta").stride())

    def data_ptr(self) -> int:
        return self.address

    def stride(self) -> tuple[int, ...]:
        return self._strides


@pytest.fixture
def simulated_plan():
    """(the simulated driver, the copy_2d plan for fp16 [16, 64] blocks on it)."""
    kernel = _compile(copy_2d, _signature("fp16", [16, 64]), _2D, 90)
    spec = LaunchSpec.from_kernel(kernel)
    gpu = TensorMapDriver()
    gpu.sizes = list(spec.argument_bytes)
    return gpu, LaunchPlan(spec, 0, gpu.driver)


def test_the_tensor_map_is_encoded_from_the_descriptor(simulated_plan):
    gpu, plan = simulated_plan
    base = 0x7F00_0000_1000
    # a (40, 96) window of a (64, 128) fp16 tensor, from its column 8: strides of the whole
    src = TensorDescriptor(FakeTensor(base + 16, torch.float16, (64, 128)), [40, 96], [128, 1], [16, 64],
                           padding="nan")
    dst = TensorDescriptor.from_tensor(FakeTensor(base + 0x10000, torch.float16, (40, 96)), [16, 64])
    out = FakeTensor(base + 0x20000, torch.float16, (48, 128))
    plan.launch(3, 2, 1, 0, src, dst, out, 16, 64)
    encoded_src, encoded_dst = gpu.encodes
    assert encoded_src == {"aligned": True, "data_type": TensorMapDataType.FLOAT16, "rank": 2, "address": base + 16,
                           "dims": [96, 40], "strides": [256], "box": [64, 16], "element_strides": [1, 1],
                           "interleave": 0, "swizzle": 0, "l2": TensorMapL2Promotion.L2_128B,
                           "fill": TensorMapOOBFill.NAN_REQUEST_ZERO_FMA}
    assert encoded_dst["address"] == base + 0x10000 and encoded_dst["fill"] == TensorMapOOBFill.NONE
    assert encoded_dst["dims"] == [96, 40] and encoded_dst["strides"] == [192]
    arguments = gpu.launches[-1]["arguments"]
    # the maps are the last two arguments, 128 bytes each, as the driver encoded them
    assert arguments[-2] == ((1).to_bytes(8, "little") + (base + 16).to_bytes(8, "little")) * 8
    assert arguments[-1] == ((2).to_bytes(8, "little") + (base + 0x10000).to_bytes(8, "little")) * 8
    assert int.from_bytes(arguments[0], "little") == base + 16  # the base pointer is passed as before


def test_a_descriptor_seen_before_is_not_encoded_again(simulated_plan):
    gpu, plan = simulated_plan
    tensor = FakeTensor(0x7F00_0000_0000, torch.float16, (40, 96))
    other = FakeTensor(0x7F00_0001_0000, torch.float16, (40, 96))
    out = FakeTensor(0x7F00_0002_0000, torch.float16, (48, 128))
    for _ in range(3):  # new descriptor objects of the same tensor: one encoding each map
        plan.launch(3, 2, 1, 0, TensorDescriptor.from_tensor(tensor, [16, 64]),
                    TensorDescriptor.from_tensor(tensor, [16, 64]), out, 16, 64)
    # the loaded map's box is the block, the stored one's a swizzled column (here the same box)
    assert [(e["address"], e["swizzle"]) for e in gpu.encodes] == [(tensor.address, TensorMapSwizzle.NONE),
                                                                   (tensor.address, TensorMapSwizzle.B128)]
    plan.launch(3, 2, 1, 0, TensorDescriptor.from_tensor(other, [16, 64]),
                TensorDescriptor.from_tensor(tensor, [16, 64], padding="nan"), out, 16, 64)
    assert [e["address"] for e in gpu.encodes] == [tensor.address, tensor.address, other.address, tensor.address]
    assert gpu.encodes[-1]["fill"] == TensorMapOOBFill.NAN_REQUEST_ZERO_FMA
    assert gpu.launches[-1]["arguments"][-2][8:16] == other.address.to_bytes(8, "little")
    # back to the first tensor: its map (encoded before) is passed again, not the last one written
    plan.launch(3, 2, 1, 0, TensorDescriptor.from_tensor(tensor, [16, 64]),
                TensorDescriptor.from_tensor(tensor, [16, 64]), out, 16, 64)
    assert len(gpu.encodes) == 4
    assert gpu.launches[-1]["arguments"][-2][8:16] == tensor.address.to_bytes(8, "little")
    assert plan.inline_parts() is None  # the dispatcher leaves tensor maps to the plan's launch


def test_a_refused_encoding_names_the_descriptor(simulated_plan):
    gpu, plan = simulated_plan
    gpu.library.functions["cuTensorMapEncodeTiled"].implementation = lambda *arguments: 1
    tensor = FakeTensor(0x7F00_0000_0000, torch.float16, (40, 96))
    out = FakeTensor(0x7F00_0002_0000, torch.float16, (48, 128))
    with pytest.raises(ValueError, match=r"(?s)kernel copy_2d: tensor descriptor src \(at 0\) cannot be read with TMA"
                                         r".*cuTensorMapEncodeTiled.*dims \(96, 40\)"):
        plan.launch(3, 2, 1, 0, TensorDescriptor.from_tensor(tensor, [16, 64]),
                    TensorDescriptor.from_tensor(tensor, [16, 64]), out, 16, 64)


def test_the_fp8_tensor_map_asks_no_nan_fill_of_the_copy_engine():
    kernel = _compile(copy_2d, _signature("fp8e4nv", [8, 32]), {"BM": 8, "BN": 32}, 90)
    spec = LaunchSpec.from_kernel(kernel)
    gpu = TensorMapDriver()
    gpu.sizes = list(spec.argument_bytes)
    plan = LaunchPlan(spec, 0, gpu.driver)
    tensor = FakeTensor(0x7F00_0000_0000, torch.float8_e4m3fn, (24, 64))
    out = FakeTensor(0x7F00_0002_0000, torch.float8_e4m3fn, (32, 96))
    plan.launch(4, 3, 1, 0, TensorDescriptor.from_tensor(tensor, [8, 32], padding="nan"),
                TensorDescriptor.from_tensor(tensor, [8, 32]), out, 8, 32)
    assert [(e["data_type"], e["fill"]) for e in gpu.encodes] == [(TensorMapDataType.UINT8, TensorMapOOBFill.NONE)] * 2
    assert gpu.launches[-1]["arguments"][5] == b"\x01"  # the padding flag the kernel applies


# -- on the GPU (and the same checks in the interpreter) ---------------------------------------

def _bits(tensor: torch.Tensor) -> torch.Tensor:
    integer = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
    return tensor.contiguous().view(integer)


def assert_same(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """`actual` holds `expected` bit for bit, NaNs anywhere as NaNs: else an
    error naming `what`, how many elements differ and the first of them."""
    actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype.is_floating_point:
        nan_actual, nan_expected = actual.float().isnan(), expected.float().isnan()
        wrong = (nan_actual != nan_expected) | (~nan_expected & (_bits(actual) != _bits(expected)))
    else:
        wrong = actual != expected
    if wrong.any():
        first = tuple(int(i) for i in wrong.nonzero()[0])
        raise AssertionError(f"{what}: {int(wrong.sum())} of {wrong.numel()} elements differ; first at {first}: "
                             f"got {actual[first].float().item()!r}, expected {expected[first].float().item()!r}")


def _random(shape: tuple[int, ...], torch_dtype, device: str) -> torch.Tensor:
    if torch_dtype.is_floating_point:
        return torch.randn(shape, device=device).mul(4).to(torch_dtype)
    info = torch.iinfo(torch_dtype)
    return torch.randint(max(info.min, -1000), min(info.max, 1000), shape, device=device).to(torch_dtype)


def _shifted_blocks(src: torch.Tensor, grid: tuple[int, ...], block: list[int], fill: float) -> torch.Tensor:
    """What the copy kernels write into `out`: the blocks of `src` shifted by
    half a block, `fill` outside it."""
    out = torch.full(tuple(g * b for g, b in zip(grid, block)), fill, dtype=torch.float32).to(src.dtype)
    window = tuple(slice(b // 2, b // 2 + s) for b, s in zip(block, src.shape))
    out[window] = src.cpu()
    return out


# (torch dtype, block, tensor shape); the shapes' rows are multiples of 16 bytes as descriptors need
CASES_2D = [
    (torch.float16, [16, 64], (37, 72)),
    (torch.float16, [64, 32], (100, 40)),
    (torch.bfloat16, [32, 16], (45, 24)),
    (torch.float32, [8, 4], (13, 12)),
    (torch.float32, [32, 64], (70, 100)),
    (torch.int8, [32, 16], (50, 48)),
    (torch.int8, [16, 128], (20, 144)),
    (torch.int32, [16, 8], (30, 20)),
    (torch.float8_e4m3fn, [8, 32], (21, 48)),
    (torch.float8_e5m2, [16, 64], (33, 80)),
    (torch.float16, [16, 4], (37, 24)),  # an 8-byte inner block: pointer code on every target
    (torch.float16, [8, 512], (20, 600)),  # dims above 256: copied as several boxes
    (torch.float32, [512, 8], (700, 12)),
    # stores staged in the 128-byte swizzle (`tma._swizzle_stores`): one column, four
    # columns, and rows above 256 (two boxes a column)
    (torch.float32, [16, 32], (40, 68)),
    (torch.bfloat16, [64, 256], (100, 296)),
    (torch.float8_e4m3fn, [512, 128], (600, 144)),
]


def check_copy_2d(device: str, torch_dtype, block: list[int], shape: tuple[int, int], padding: str) -> None:
    what = f"{torch_dtype} block {block} of a {shape} tensor, padding {padding}"
    src = _random(shape, torch_dtype, device)
    dst = _random(shape, torch_dtype, device)  # every element is written: no stale value may stay
    grid = tuple(-(-(s + b // 2) // b) for s, b in zip(shape, block))
    out = _random(tuple(g * b for g, b in zip(grid, block)), torch_dtype, device)
    copy_2d[grid](TensorDescriptor.from_tensor(src, block, padding),
                  TensorDescriptor.from_tensor(dst, block), out, block[0], block[1])
    fill = float("nan") if padding == "nan" else 0.0
    assert_same(out, _shifted_blocks(src, grid, block, fill), f"loaded blocks of {what}")
    assert_same(dst, src, f"stored blocks of {what}")


def check_copy_of_a_strided_window(device: str) -> None:
    """A descriptor over part of a bigger tensor: its strides, not its shape, step the rows."""
    whole = _random((50, 160), torch.float16, device)
    window = whole[3:43, 16:112]
    dst_whole = _random((50, 160), torch.float16, device)
    dst_window = dst_whole[3:43, 16:112]
    untouched = dst_whole.clone()
    block = [16, 32]
    grid = (-(-(40 + 8) // 16), -(-(96 + 16) // 32))
    out = _random((grid[0] * 16, grid[1] * 32), torch.float16, device)
    copy_2d[grid](TensorDescriptor.from_tensor(window, block), TensorDescriptor.from_tensor(dst_window, block), out,
                  16, 32)
    assert_same(out, _shifted_blocks(window, grid, block, 0.0), "loaded blocks of a strided window")
    assert_same(dst_window, window, "stored blocks of a strided window")
    untouched[3:43, 16:112] = window
    assert_same(dst_whole, untouched, "the tensor around a stored window")


CASES_1D = [
    (torch.float32, [16], (45,)),
    (torch.float16, [256], (600,)),
    (torch.int8, [64], (100,)),
    (torch.float8_e5m2, [32], (48,)),
]


def check_copy_1d(device: str, torch_dtype, block: list[int], shape: tuple[int], padding: str) -> None:
    what = f"{torch_dtype} block {block} of a {shape} tensor, padding {padding}"
    src = _random(shape, torch_dtype, device)
    dst = _random(shape, torch_dtype, device)
    grid = (-(-(shape[0] + block[0] // 2) // block[0]),)
    out = _random((grid[0] * block[0],), torch_dtype, device)
    copy_1d[grid](TensorDescriptor.from_tensor(src, block, padding), TensorDescriptor.from_tensor(dst, block), out,
                  block[0])
    fill = float("nan") if padding == "nan" else 0.0
    assert_same(out, _shifted_blocks(src, grid, block, fill), f"loaded blocks of {what}")
    assert_same(dst, src, f"stored blocks of {what}")


CASES_3D = [
    (torch.float16, [2, 8, 32], (5, 19, 40)),
    (torch.float32, [4, 4, 8], (7, 9, 12)),
    (torch.int8, [2, 16, 32], (3, 20, 48)),
    (torch.bfloat16, [1, 16, 16], (3, 17, 24)),
]


def check_copy_3d(device: str, torch_dtype, block: list[int], shape: tuple[int, int, int], padding: str) -> None:
    what = f"{torch_dtype} block {block} of a {shape} tensor, padding {padding}"
    src = _random(shape, torch_dtype, device)
    dst = _random(shape, torch_dtype, device)
    grid = tuple(-(-(s + b // 2) // b) for s, b in zip(shape, block))
    out = _random(tuple(g * b for g, b in zip(grid, block)), torch_dtype, device)
    copy_3d[grid](TensorDescriptor.from_tensor(src, block, padding), TensorDescriptor.from_tensor(dst, block), out,
                  *block)
    fill = float("nan") if padding == "nan" else 0.0
    assert_same(out, _shifted_blocks(src, grid, block, fill), f"loaded blocks of {what}")
    assert_same(dst, src, f"stored blocks of {what}")


def _paddings(torch_dtype) -> list[str]:
    return ["zero", "nan"] if torch_dtype.is_floating_point else ["zero"]


def check_two_halves(device: str) -> None:
    """`two_halves` over 5 programs of 16 rows: each program's rows go half a block up,
    the first program's top rows dropped, the last rows of `dst` untouched."""
    src = _random((80, 64), torch.float16, device)
    dst = _random((80, 64), torch.float16, device)
    expected = dst.clone().cpu()
    expected[:72] = src.cpu()[8:]
    two_halves[(5,)](src, TensorDescriptor.from_tensor(dst, [16, 32]), 16, 32)
    assert_same(dst, expected, "two stored halves of each program's rows")


CHECKS = ([pytest.param(check_copy_1d, (dt, block, shape, padding), id=f"1d-{dt}-{block}-{shape}-{padding}")
           for dt, block, shape in CASES_1D for padding in _paddings(dt)]
          + [pytest.param(check_copy_2d, (dt, block, shape, padding), id=f"2d-{dt}-{block}-{shape}-{padding}")
             for dt, block, shape in CASES_2D for padding in _paddings(dt)]
          + [pytest.param(check_copy_3d, (dt, block, shape, padding), id=f"3d-{dt}-{block}-{shape}-{padding}")
             for dt, block, shape in CASES_3D for padding in _paddings(dt)]
          + [pytest.param(lambda device: check_copy_of_a_strided_window(device), (), id="strided-window"),
             pytest.param(lambda device: check_two_halves(device), (), id="two-halves")])


@pytest.mark.gpu
@pytest.mark.parametrize("check, arguments", CHECKS)
def test_tma_on_the_gpu(check, arguments, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    check("cuda", *arguments)


@pytest.mark.gpu
def test_the_gpu_kernels_are_tma_kernels_on_hopper(monkeypatch):
    """On an sm_90 GPU the checks above run TMA copies, not pointer code."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip(f"sm_{''.join(map(str, torch.cuda.get_device_capability()))} has no TMA")
    src = _random((37, 72), torch.float16, "cuda")
    dst = torch.empty_like(src)
    out = torch.empty((48, 128), dtype=torch.float16, device="cuda")
    compiled = copy_2d[(3, 2)](TensorDescriptor.from_tensor(src, [16, 64]), TensorDescriptor.from_tensor(dst, [16, 64]),
                               out, 16, 64)
    assert "cp.async.bulk.tensor.2d" in compiled.asm["ptx"]
    assert_same(dst, src, "stored blocks")


@pytest.mark.parametrize("check, arguments", CHECKS)
def test_the_gpu_checks_in_the_interpreter(check, arguments, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    check("cpu", *arguments)


def test_a_store_at_a_negative_offset_is_written_by_the_threads_at_run_time(monkeypatch):
    # The copy engine faults on a store box starting before the tensor (an H100 showed an
    # illegal instruction): the TMA store runs under `offsets >= 0`; otherwise the threads
    # write the staged tile out, element by element within the tensor's bounds.
    kernel = _compile(copy_2d, _signature("fp16", [16, 64]), {"BM": 16, "BN": 64}, 90)
    ptx, cuda = kernel.asm["ptx"], kernel.asm["cuda"]
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    assert "for (int tt_e = threadIdx.x; tt_e < 1024; tt_e += 128)" in cuda  # the kernel's threads
    assert re.search(r"tt_g0 >= 0 && tt_g0 < \(long long\)\(arg\d+_dst_shape0\)", cuda)
    assert re.search(r"st\.global\.(b16|u16)", ptx), "the fallback's element stores"


def test_stores_staging_in_the_same_bytes_wait_only_before_writing_them_again():
    # the second store waits for the copy engine's reads of the first store's staged tile
    # before it writes the bytes again: neither waits right after its copies, nor holds the
    # other threads at a barrier until then (the copy engine's read is waited before the
    # kernel returns). Offsets below 0 keep the threads' fallback under the run-time check.
    kernel = _compile(two_halves, {"src": "*fp16", "dst": "tensordesc<fp16[16, 32]>"},
                      {"BM": 16, "BN": 32}, 90)
    cuda = kernel.asm["cuda"]
    body = cuda[cuda.index("__global__"):]
    stores = [at for at in range(len(body)) if body.startswith("tt_tma_store_2d((", at)]
    waits = [at for at in range(len(body)) if body.startswith("cp.async.bulk.wait_group.read 0;", at)]
    assert len(stores) == 2 and len(waits) == 3
    assert waits[0] < stores[0] < waits[1] < stores[1] < waits[2], "before each store's staging, and at the end"
    fallbacks = [at for at in range(len(body)) if body.startswith("for (int tt_e = threadIdx.x;", at)]
    assert len(fallbacks) == 2
    between = body[fallbacks[0]:waits[1]]
    assert between.count("__syncthreads()") == 0, "no barrier between the first store and the second's wait"
    assert LaunchSpec.from_kernel(kernel).tensormap_boxes is not None


def test_blocks_of_a_map_only_stored_are_staged_swizzled_one_column_at_a_time():
    # A map that serves stores alone gets a box of one 128-byte column (64 fp16) and the
    # copy engine's 128-byte swizzle: the [64, 256] block goes out as four copies, and the
    # launcher encodes the map that way; `src`'s map, which loads read, keeps its block.
    kernel = _compile(copy_2d, _signature("fp16", [64, 256]), {"BM": 64, "BN": 256}, 90)
    cuda = kernel.asm["cuda"]
    stores = re.findall(r"tt_tma_store_2d\(\(&arg\d+_dst_tensormap\), tt_shared_address\(tt_buf\) \+ (\d+)u, "
                        r"([^;]*)\);", cuda)
    assert [int(at) for at, _ in stores] == [0, 8192, 16384, 24576]
    assert [coords.split(", ")[1].partition(" + ")[2] for _, coords in stores] == ["", "64", "128", "192"]
    spec = LaunchSpec.from_kernel(kernel)
    assert spec.tensormap_boxes == ((), ((64, 64), 128))


@pytest.mark.parametrize("element, block", [("fp16", (64, 256)), ("fp8e4nv", (512, 128)), ("fp32", (16, 32))])
def test_the_swizzled_staging_places_elements_as_the_copy_engine_reads_them(element, block):
    # 128-byte columns one after another, each row's 16-byte piece p at p ^ (row % 8)
    from tritone.backends.cuda.codegen_tma import _Staging
    from tritone.ir.core import Operation, Value

    tensormap = tensormap_type(block_type(dtype(element), list(block)))
    itemsize = dtype(element).itemsize
    span, piece = 128 // itemsize, 16 // itemsize
    store = Operation("tma_store", [Value(tensormap)], [], {"box": (min(block[0], 256), span), "swizzle": 128})
    staging = _Staging(store)
    for r in range(block[0]):
        for c in range(0, block[1], max(1, piece // 2)):
            expected = (c // span) * block[0] * span + r * span + (((c % span) // piece) ^ (r % 8)) * piece + c % piece
            assert eval(staging.index([str(r), str(c)])) == expected, (r, c)


def test_a_map_also_loaded_keeps_its_block_for_stores():
    kernel = _compile(load_and_store_same, {"desc": "tensordesc<fp16[64, 128]>"}, {"BM": 64, "BN": 128}, 90)
    assert LaunchSpec.from_kernel(kernel).tensormap_boxes in ((), ((),))
    assert kernel.asm["cuda"].count("tt_tma_store_2d((") == 1


def _ir_after_tma(kernel, signature: dict, constants: dict, capsys) -> str:
    compiled = _compile(kernel, signature, constants, 90)
    lowering.generate_cuda(parse_module(compiled.asm["ttir"]), 90, {}, dump_ir=True)
    dump = capsys.readouterr().err
    return dump[dump.index("IR Dump After tma "):dump.index("IR Dump After lower_descriptors ")]


def test_offsets_the_copy_engine_may_fault_on_are_checked_at_run_time(capsys):
    # The copy engine faults (illegal instruction, on an H100) on a box whose innermost
    # offset is not a multiple of 16 bytes, and on a store box starting before the
    # tensor. copy_2d's fp32 column offset pn * 4 - 2 may be either: the load sits in an
    # `if` on `(n & 3) == 0` with the descriptor op in the other branch; the store takes
    # that check and every offset >= 0 as an operand, with the descriptor's base, shape
    # and strides for when it fails.
    ir = _ir_after_tma(copy_2d, _signature("fp32", [8, 4]), {"BM": 8, "BN": 4}, capsys)
    assert ir.count("tma_load(") == 1 and ir.count("tma_store(") == 1
    assert ir.count("descriptor_load(") == 1 and ir.count("descriptor_store(") == 0
    assert ir.count("= if(") == 1 and ir.count(" if(") == 1
    assert ir.count('{pred = "eq"}') == 2 and ir.count('{pred = "ge"}') >= 2
    store = next(line for line in ir.splitlines() if "tma_store(" in line)
    assert store.count("%") == 2 + 2 + 1 + 1 + 2 + 2, "map, value, 2 offsets, check, base, 2 sizes, 2 strides"


def test_offsets_proven_aligned_get_no_check(capsys):
    # fp16 columns at pn * 64 are multiples of 16 bytes: the load needs no check; the store
    # keeps only the sign check (axis info proves divisibility, not sign).
    desc = "tensordesc<fp16[16, 64]>"
    ir = _ir_after_tma(tile_copy, {"src": desc, "dst": desc}, {"BM": 16, "BN": 64}, capsys)
    assert "descriptor_load(" not in ir and "= if(" not in ir, "the aligned load is a plain TMA load"
    assert ir.count(" if(") == 0 and '{pred = "eq"}' not in ir and ir.count('{pred = "ge"}') == 2
