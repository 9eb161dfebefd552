"""Dots smaller than the mma instruction (M < 16 or N < 8) still use `mma.sync`,
as Triton does: the accumulator's layout wraps onto the small block, so the
lanes past it hold copies of its rows and columns, and they read the operands'
rows again (their products are copies too). Checked in the PTX for sm_80 and
sm_90, and for numbers by running the generated C++ on the CPU
(`cuda_emulator.py`) and on a GPU where there is one."""

from __future__ import annotations

import numpy as np
import pytest
from test_dot_compile import dot_kernel, ir_module

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler.compiler import ASTSource

import cuda_emulator  # isort: skip
from test_dot_fragments import emulate  # isort: skip

_ACC = {"fp32": tl.float32, "fp16": tl.float16, "i32": tl.int32}
_NP = {"fp16": np.float16, "fp32": np.float32, "i32": np.int32, "i8": np.int8}

# (dtype, acc, M, N, K, trans_a, trans_b, num_warps)
SMALL = [
    ("fp16", "fp32", 2, 4, 32, False, False, 1),
    ("fp8e5", "fp32", 1, 2, 32, False, False, 1),
    ("fp16", "fp16", 8, 8, 16, False, True, 4),
    ("fp16", "fp32", 4, 32, 32, True, False, 2),
    ("i8", "i32", 16, 4, 64, False, False, 4),
    ("fp32", "fp32", 2, 16, 16, False, False, 1),
    ("fp8e4nv", "fp32", 16, 2, 64, True, True, 4),
    ("fp16", "fp32", 1, 1, 16, False, False, 1),
    ("bf16", "fp32", 32, 4, 32, False, True, 8),
]


def _signature(dtype: str, acc: str, trans_a: bool, trans_b: bool) -> tuple[dict, dict]:
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{acc}", "stride_am": "i32", "stride_ak": "i32",
           "stride_bk": "i32", "stride_bn": "i32"}
    unit = {"stride_am" if trans_a else "stride_ak": 1, "stride_bk" if trans_b else "stride_bn": 1}
    return {name: t for name, t in sig.items() if name not in unit}, unit


def _module(arch, dtype, acc, m, n, k, trans_a, trans_b, num_warps):
    sig, unit = _signature(dtype, acc, trans_a, trans_b)
    consts = {"M": m, "N": n, "K": k, "TRANS_A": trans_a, "TRANS_B": trans_b, "ACC": _ACC[acc],
              "PRECISION": "tf32", **unit}
    return ir_module(dot_kernel, sig, consts, arch, num_warps)


def _ptx(arch, dtype, acc, m, n, k, trans_a, trans_b, num_warps) -> str:
    sig, unit = _signature(dtype, acc, trans_a, trans_b)
    sig = dict(sig, **{name: "constexpr" for name in ("M", "N", "K", "TRANS_A", "TRANS_B", "ACC", "PRECISION")},
               **{name: "constexpr" for name in unit})
    consts = {"M": m, "N": n, "K": k, "TRANS_A": trans_a, "TRANS_B": trans_b, "ACC": _ACC[acc],
              "PRECISION": "tf32", **unit}
    attrs = {name: [["tt.divisibility", 16]] for name, t in sig.items() if t != "constexpr"}
    compiled = triton.compile(ASTSource(dot_kernel, sig, consts, attrs), target=GPUTarget("cuda", arch, 32),
                              options={"num_warps": num_warps})
    return compiled.asm["ptx"]


def _random(rng, shape, dtype):
    if dtype == "bf16":  # bf16 bits: the high halves of random fp32 values
        return (rng.standard_normal(shape).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if dtype == "i8":
        return rng.integers(-128, 128, shape, dtype=np.int8)
    if dtype.startswith("fp8"):
        # every finite fp8 value but the largest few (their products stay far from overflow)
        bits = rng.integers(0, 256, shape, dtype=np.uint8)
        exponent_mask = 0x7C if dtype == "fp8e5" else 0x78
        return np.where((bits & exponent_mask) == exponent_mask, bits & 0x83, bits).astype(np.uint8)
    return rng.standard_normal(shape).astype(_NP[dtype])


def _fp8_values(bits: np.ndarray, dtype: str) -> np.ndarray:
    import torch

    torch_dtype = torch.float8_e5m2 if dtype == "fp8e5" else torch.float8_e4m3fn
    return torch.from_numpy(bits).view(torch_dtype).to(torch.float64).numpy()


def _as_float(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bf16":
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return _fp8_values(x, dtype) if dtype.startswith("fp8") else x.astype(np.float64)


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("case", SMALL[:2], ids=["2x4x32-fp16", "1x2x32-fp8e5"])
def test_small_dot_ptx_has_mma(arch, case):
    dtype, acc, m, n, k, trans_a, trans_b, num_warps = case
    ptx = _ptx(arch, dtype, acc, m, n, k, trans_a, trans_b, num_warps)
    # Triton's check for fp16 into fp32, and for fp8e5 below M 64 on 8.x and 9.x
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx


@pytest.mark.parametrize("arch, m", [(89, 16), (90, 64), (120, 16)])
def test_fp8_dots_keep_the_fp8_instruction(arch, m):
    """On Ada and Blackwell with mma.sync, and on Hopper for blocks of wgmma's 64 rows
    or more with wgmma."""
    ptx = _ptx(arch, "fp8e5", "fp32", m, 16, 32, False, False, 4)
    if arch == 90:
        assert "wgmma.mma_async.sync.aligned.m64n16k32.f32.e5m2.e5m2" in ptx
    else:
        assert "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32" in ptx
    assert "m16n8k16" not in ptx


def _check(c, a, b, dtype, acc):
    ref = _as_float(a, dtype) @ _as_float(b, dtype)
    if acc == "i32":
        np.testing.assert_array_equal(c, ref.astype(np.int64).astype(np.int32))
    elif acc == "fp16":
        np.testing.assert_allclose(c.astype(np.float64), ref, atol=1e-2 * np.abs(ref).max(), rtol=1e-2)
    elif dtype == "fp32":  # tf32 inputs
        np.testing.assert_allclose(c, ref, atol=1e-2 * np.abs(ref).max(), rtol=1e-2)
    else:  # exact products summed in fp32
        np.testing.assert_allclose(c, ref, atol=1e-5 * np.abs(ref).max(), rtol=1e-5)


def _operands(rng, dtype, m, n, k, trans_a, trans_b):
    a = _random(rng, (m, k), dtype)
    b = _random(rng, (k, n), dtype)
    a_mem = np.ascontiguousarray(a.T) if trans_a else a
    b_mem = np.ascontiguousarray(b.T) if trans_b else b
    strides = [k if not trans_a else 1, 1 if not trans_a else m, n if not trans_b else 1, 1 if not trans_b else k]
    unit = ("stride_am" if trans_a else "stride_ak", "stride_bk" if trans_b else "stride_bn")
    names = ("stride_am", "stride_ak", "stride_bk", "stride_bn")
    return a, b, a_mem, b_mem, [s for name, s in zip(names, strides) if name not in unit]


def _case_id(case) -> str:
    return f"{case[0]}-{case[2]}x{case[3]}x{case[4]}-w{case[7]}"


# The emulator has no translation of sm_89+'s cvt.rn.f16x2.e4m3x2: fp8e4nv runs on sm_80 only.
EMULATED = [(arch, case) for arch in (75, 80, 90) for case in SMALL if arch < 89 or case[0] != "fp8e4nv"]


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
@pytest.mark.parametrize("arch, case", EMULATED, ids=[f"sm{arch}-{_case_id(case)}" for arch, case in EMULATED])
def test_emulated_small_dot(arch, case):
    dtype, acc, m, n, k, trans_a, trans_b, num_warps = case
    kernel = emulate(_module(arch, dtype, acc, m, n, k, trans_a, trans_b, num_warps), arch, num_warps)
    rng = np.random.default_rng()
    a, b, a_mem, b_mem, strides = _operands(rng, dtype, m, n, k, trans_a, trans_b)
    c = np.full((m, n), -12345 if acc == "i32" else np.nan, dtype=_NP[acc])
    kernel.launch((1,), a_mem, b_mem, c, *strides)
    _check(c, a, b, dtype, acc)


@pytest.mark.gpu
@pytest.mark.parametrize("case", SMALL, ids=_case_id)
def test_small_dot_on_the_gpu(case):
    import torch

    dtype, acc, m, n, k, trans_a, trans_b, num_warps = case
    rng = np.random.default_rng()
    a, b, a_mem, b_mem, strides = _operands(rng, dtype, m, n, k, trans_a, trans_b)

    def device(x):
        t = torch.from_numpy(x).cuda()
        if dtype.startswith("fp8"):
            t = t.view(torch.float8_e5m2 if dtype == "fp8e5" else torch.float8_e4m3fn)
        if dtype == "bf16":
            t = t.view(torch.bfloat16)
        return t

    c = torch.full((m, n), -12345 if acc == "i32" else float("nan"),
                   dtype={"fp32": torch.float32, "fp16": torch.float16, "i32": torch.int32}[acc], device="cuda")
    stride_names = [s for s in ("stride_am", "stride_ak", "stride_bk", "stride_bn")
                    if s not in ("stride_am" if trans_a else "stride_ak", "stride_bk" if trans_b else "stride_bn")]
    kwargs = dict(zip(stride_names, strides))
    kwargs.update({"stride_am" if trans_a else "stride_ak": 1, "stride_bk" if trans_b else "stride_bn": 1})
    dot_kernel[(1,)](device(a_mem), device(b_mem), c, M=m, N=n, K=k, TRANS_A=trans_a, TRANS_B=trans_b,
                     ACC=_ACC[acc], PRECISION="tf32", num_warps=num_warps, **kwargs)
    _check(c.cpu().numpy(), a, b, dtype, acc)
