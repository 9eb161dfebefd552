"""The source addresses of a pipeline's cp.async copies (the K loop of a matmul that
loads through pointers): each is `mad.wide.s32` of its 32-bit offset onto the base
(`tt_shift_add`), which ptxas makes a shift and add on the integer pipe (LEA, LEA.HI.X)
rather than the widening multiply C++'s pointer addition gives (IMAD.WIDE); and the
offsets made before the loop stay in registers through it (`asm` pins) instead of
being computed again on every trip. On an H100, tutorial 09's persistent fp16 kernel
(128x256x64, 3 stages, 8 warps) took 1.79 ms under ncu against upstream's 1.54, and
1.50 ms with both.

Without a GPU: the generated CUDA, and where NVRTC and cuobjdump are at hand the K
loop's SASS. On a GPU (`gpu` marker) test_tile_ahead.py and test_dot_gpu.py run these
kernels against torch.
"""

from __future__ import annotations

import re
import subprocess

import cuda_emulator
import numpy as np
import pytest
from test_conversion_pieces import tile_matmul
from test_dot_compile import _cuobjdump, sass_loops
from test_tile_ahead import pointer_persistent

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import lowering
from tritone.compiler import ASTSource
from tritone.compiler.compiler import make_ir

_SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
              "K_LOOP": "i32"}
_OPTIONS = {"num_warps": 8, "num_stages": 3}


def _persistent_source(arch: int) -> tuple[str, str]:
    module = make_ir(ASTSource(pointer_persistent, _SIGNATURE, {"NUM_PROGRAMS": 132, "BM": 128, "BN": 256, "BK": 64},
                               {(i,): [["tt.divisibility", 16]] for i in range(7)}), GPUTarget("cuda", arch, 32),
                     _OPTIONS)
    source, name, _ = lowering.generate_cuda(module, arch, _OPTIONS)
    return source, name


@triton.jit
def row_sums(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(n):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(y_ptr + offs, acc)


@pytest.mark.parametrize("arch", [80, 90])
def test_copy_sources_are_shift_adds_of_offsets_pinned_before_the_loop(arch):
    source, _ = _persistent_source(arch)
    copied = set(re.findall(r"tt_cp_async16\([^,]+, (v\d+)\[\d+\]", source))
    assert copied, "the K loop copies with cp.async"
    # the copies' source arrays, and no other (the epilogue's stores), are shift-adds
    # (registers a constant apart from another are that one's address plus the constant)
    shifted = set(re.findall(r"(v\d+)\[i\] = (?:\(i & \d+\) \? \1\[i & \d+\] \+ \([^;]*\) : )?\(?tt_shift_add\(",
                             source))
    assert shifted == copied
    # the offsets made before the K loop are pinned before it (and before the loop over
    # tiles, which holds the K loop, those made before that)
    pins = [m.start() for m in re.finditer(r'asm volatile\(\"\" : \"\+r\"\(v\d+\[\d+\]\)\);', source)]
    loops = [m.start() for m in re.finditer(r"for \(int iv", source)]
    assert pins and len(loops) >= 2
    assert max(pins) < loops[1]


def test_a_loop_without_copies_has_neither():
    module = make_ir(ASTSource(row_sums, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}, {"BLOCK": 256}),
                     GPUTarget("cuda", 90, 32), {"num_warps": 4})
    source, _, _ = lowering.generate_cuda(module, 90, {"num_warps": 4})
    assert 'asm volatile("" : "+' not in source and "tt_shift_add" not in source


def test_the_k_loop_adds_offsets_by_shifts_in_sass(tmp_path):
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("no cuobjdump")
    from tritone.backends.cuda.bindings import libs

    try:
        nvrtc = libs.nvrtc_for(90).nvrtc
    except Exception as error:  # no NVRTC on this machine
        pytest.skip(f"no NVRTC: {error}")
    source, name = _persistent_source(90)
    path = tmp_path / "persistent.cubin"
    path.write_bytes(nvrtc.compile(source, f"{name}.cu", 90, options=["-w"], arch_suffix="a").cubin)
    sass = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    k_loop = min((loop for loop in sass_loops(sass) if any("HGMMA" in t for t in loop)), key=len)
    copies = sum("LDGSTS" in t for t in k_loop)
    # this tile's copies and the next tile's (tile-ahead), 12 each: 16 KB of a, 32 KB of b
    assert copies == 24
    assert not [t for t in k_loop if "IMAD.WIDE" in t]
    assert sum("LEA.HI.X" in t for t in k_loop) == copies


_CONSTANT_STRIDES = {"K": 128, "BM": 64, "BN": 64, "BK": 32}


def _constant_stride_source(arch: int) -> tuple[str, str, dict]:
    options = {"num_warps": 4, "num_stages": 3}
    # K a constant too: the rows one thread copies are a constant apart in a and in b
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", **dict.fromkeys(_CONSTANT_STRIDES, "constexpr")}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(3)}
    module = make_ir(ASTSource(tile_matmul, signature, _CONSTANT_STRIDES, attrs), GPUTarget("cuda", arch, 32), options)
    return lowering.generate_cuda(module, arch, options)


@pytest.mark.parametrize("arch", [80, 90])
def test_copies_a_constant_apart_are_one_address_plus_the_constant(arch):
    source, _, _ = _constant_stride_source(arch)
    copied = set(re.findall(r"tt_cp_async16\([^,]+, (v\d+)\[\d+\]", source))
    steps = {}
    for name, step in re.findall(r"(v\d+)\[i\] = \(i & \d+\) \? \1\[i & \d+\] \+ \(([^;]*)\) : \(?tt_shift_add\(",
                                 source):
        steps[name] = {int(d) for d in re.findall(r"\* (\d+)", step)}
    assert copied and copied <= set(steps)
    # 128 threads copy 16 bytes each: a's rows (K apart) by 32, b's (BN apart) by 16
    assert {frozenset(s) for name, s in steps.items() if name in copied} \
        == {frozenset({1, 2, 4, 32 * 128}), frozenset({1, 2, 4, 16 * 64})}


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
def test_copies_a_constant_apart_read_the_right_rows_on_the_cuda_emulator():
    source, _, metadata = _constant_stride_source(80)
    rng = np.random.default_rng(81)
    a = rng.integers(-4, 4, size=(64, 128)).astype(np.float16)
    b = rng.integers(-4, 4, size=(128, 64)).astype(np.float16)
    c = np.full((64, 64), np.nan, dtype=np.float32)
    cuda_emulator.Emulator(source, 4, metadata["shared"]).launch((1,), a, b, c)
    np.testing.assert_array_equal(c, (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))
