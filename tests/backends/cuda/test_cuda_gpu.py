"""Generated kernels run on the GPU agree with numpy/torch (skipped without a GPU).

Each test builds IR by hand, generates CUDA for the GPU's own architecture,
compiles it with NVRTC, loads the cubin with the driver and launches it on
torch tensors whose outputs are poisoned first."""

import ctypes

import numpy as np
import pytest
import test_cuda_codegen as kernels

from tritone.backends.cuda.lowering import generate_cuda

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

_CTYPES = {"int": ctypes.c_int32, "unsigned": ctypes.c_uint32, "long long": ctypes.c_int64,
           "unsigned long long": ctypes.c_uint64, "float": ctypes.c_float, "double": ctypes.c_double,
           "bool": ctypes.c_bool, "short": ctypes.c_int16, "signed char": ctypes.c_int8}


def run(build, grid, *args, options=None):
    """Compile the kernel `build()` makes for this GPU and launch it on `args`
    (torch CUDA tensors for pointers, Python numbers for scalars)."""
    from tritone.backends.cuda.bindings import driver_api, libs

    major, minor = torch.cuda.get_device_capability()
    arch = major * 10 + minor
    kb = build()
    source, name, metadata = generate_cuda(kb.module, arch, options)
    nvrtc = libs.nvrtc_for(arch).nvrtc
    result = nvrtc.compile(source, f"{name}.cu", arch, ptx_only=not nvrtc.knows(arch), options=["-w"])
    drv = driver_api.driver()
    torch.cuda.init()
    drv.context_set_current(drv.primary_context_retain(drv.device_get(torch.cuda.current_device())))
    module = drv.module_load_data(result.cubin if result.cubin is not None else result.ptx.encode() + b"\0")
    function = drv.module_get_function(module, name)
    if metadata["shared"] > 48 * 1024:
        drv.set_function_attribute(function, driver_api.FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   metadata["shared"])
    values = []
    for (_, ctype, _), arg in zip(metadata["params"], args):
        values.append(ctypes.c_void_p(arg.data_ptr()) if ctype.endswith("*") else _CTYPES[ctype](arg))
    params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    drv.launch_kernel(function, tuple(grid) + (1,) * (3 - len(grid)), (metadata["threads"], 1, 1),
                      metadata["shared"], torch.cuda.current_stream().cuda_stream, params)
    torch.cuda.synchronize()
    drv.module_unload(module)


def _poison(shape, dtype):
    out = torch.empty(shape, dtype=dtype, device="cuda")
    out.fill_(float("nan") if dtype.is_floating_point else -12345)
    return out


def test_vector_add():
    n = 5000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = _poison(n, torch.float32)
    run(kernels.build_vector_add, [(n + 1023) // 1024], x, y, out, n)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


def test_widening_store_through_shared_memory():
    n = 3008  # n is specialised as a multiple of 16; the second program's tail is masked
    x = torch.randn(4096, device="cuda").half()
    out = _poison(4096, torch.float32)
    run(kernels.build_widening_store, [2], x, out, n)
    torch.testing.assert_close(out[:n], x[:n].float() * 2, rtol=0, atol=0)
    assert torch.isnan(out[n:]).all()


def test_masked_load_with_other():
    n = 700
    x = torch.randn(1024, device="cuda").half()
    out = _poison(1024, torch.float32)
    run(kernels.build_masked_load_with_other, [2], x, out, n)
    expected = (x[:n] * 2).float()
    torch.testing.assert_close(out[:n], expected, rtol=0, atol=0)
    assert torch.isnan(out[n:]).all()  # masked-off lanes are not stored


@pytest.mark.parametrize("rows, cols, num_warps", [(32, 128, 4), (4, 1024, 8)])
def test_two_d_reduce_sum_max_and_nan(rows, cols, num_warps):
    x = torch.randn(rows, cols, device="cuda")
    x[1, 5] = float("nan")
    total, colmax, nanmax = _poison(rows, torch.float32), _poison(cols, torch.float32), _poison(rows, torch.float32)
    run(kernels.build_reduce_2d(rows, cols, num_warps), [1], x, total, colmax, nanmax, cols)
    xs = x.cpu().numpy()
    np.testing.assert_allclose(total.cpu().numpy()[2:], xs[2:].sum(1), rtol=1e-5, atol=1e-4)
    assert np.isnan(total.cpu().numpy()[1])
    np.testing.assert_array_equal(colmax.cpu().numpy(), np.nanmax(xs, 0))  # NaN ignored
    expected = xs.max(1)
    np.testing.assert_array_equal(nanmax.cpu().numpy(), expected)  # NaN propagated (row 1)


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(reverse):
    x = torch.randint(-100, 100, (2048,), device="cuda", dtype=torch.int32)
    out = _poison(2048, torch.int32)
    run(kernels.build_scan(reverse), [1], x, out, 0)
    xs = x.cpu().numpy().astype(np.int64)
    expected = np.cumsum(xs[::-1])[::-1] if reverse else np.cumsum(xs)
    np.testing.assert_array_equal(out.cpu().numpy(), expected)


def test_cumsum_along_rows_of_a_tile():
    x = torch.randint(-100, 100, (64, 32), device="cuda", dtype=torch.int32)
    out = _poison((64, 32), torch.int32)
    run(kernels.build_scan(False, (64, 32), 0), [1], x, out, 32)
    np.testing.assert_array_equal(out.cpu().numpy(), np.cumsum(x.cpu().numpy(), 0))


def test_for_and_while_loops():
    k = 5
    x = torch.randn(256 * k, device="cuda")
    out = _poison(256, torch.float32)
    run(kernels.build_for_loop, [1], x, out, k)
    xs = x.cpu().numpy().reshape(k, 256)
    expected = sum(xs[i] * i for i in range(k))
    np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)

    grown = _poison(128, torch.int32)
    run(kernels.build_while_loop, [1], grown, 100)
    i, acc = 0, np.arange(128)
    while i < 100:
        acc = acc + i
        i = i * 2 + 1
    np.testing.assert_array_equal(grown.cpu().numpy()[1:], acc[1:])
    assert grown.cpu().numpy()[0] == i  # the scalar store comes last


def test_atomic_histogram():
    n = 3000
    x = torch.randint(0, 1000, (4096,), device="cuda", dtype=torch.int32)
    hist = torch.zeros(64, dtype=torch.int32, device="cuda")
    count = torch.zeros(1, dtype=torch.int32, device="cuda")
    fmax = torch.full((64,), -1.0, device="cuda")
    half = torch.zeros(64, dtype=torch.bfloat16, device="cuda")
    run(kernels.build_histogram, [(n + 1023) // 1024], x, hist, count, fmax, half, n)
    bins = x[:n].cpu().numpy() % 64
    np.testing.assert_array_equal(hist.cpu().numpy(), np.bincount(bins, minlength=64))
    expected_max = np.full(64, -1.0)
    np.maximum.at(expected_max, bins, x[:n].cpu().numpy().astype(np.float64))
    np.testing.assert_array_equal(fmax.cpu().numpy(), expected_max.astype(np.float32))


def test_casts_match_torch():
    specials = [float("nan"), float("inf"), -float("inf"), 1e-40, -1e-40, 464.0, 500.0, 1.9999, 65520.0, 3.4e38,
                2.0 ** -10, 1.005859375, -2.7, 2.7, 1e10, -1e10]
    x = torch.cat([torch.randn(240, device="cuda") * 300, torch.tensor(specials, device="cuda")])
    d = x.double() * 1.000001
    i = torch.randint(-(2 ** 20), 2 ** 20, (256,), device="cuda", dtype=torch.int64)
    bf = _poison(256, torch.bfloat16)
    e4 = torch.zeros(256, dtype=torch.uint8, device="cuda")
    e5 = torch.zeros(256, dtype=torch.uint8, device="cuda")
    h, back = _poison(256, torch.float16), _poison(256, torch.float32)
    ints = torch.zeros(256, dtype=torch.int8, device="cuda")
    u = torch.zeros(256, dtype=torch.int32, device="cuda")
    run(kernels.build_casts, [1], x, d, i, bf, e4, e5, h, back, ints, u)
    # the last store to each output wins: bf16 <- i64, e4 <- fp16 -> e4m3, e5 <- f64, h <- bf16 -> fp16
    xs = x.cpu()
    finite = ~torch.isnan(xs)
    assert torch.equal(bf.cpu(), i.cpu().to(torch.float32).to(torch.bfloat16))  # |i| < 2**24: exact in fp32
    # cvt.rn.satfinite: beyond the largest finite value (inf included) e4m3 saturates to +-448, where
    # torch's own conversion gives NaN, so the reference clamps first (after fp16 rounding).
    e4_ref = xs.half().float().clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)
    assert torch.equal(e4.cpu()[finite], e4_ref[finite])
    assert (e4.cpu()[~finite] == 0x7F).all()
    assert torch.equal(h.cpu()[finite], xs.to(torch.bfloat16).half()[finite])
    # float -> int: truncate, saturate (i8 through the 16-bit conversion), NaN -> 0
    clipped16 = np.nan_to_num(np.clip(np.trunc(xs.numpy().astype(np.float64)), -32768, 32767), nan=0.0)
    np.testing.assert_array_equal(ints.cpu().numpy(), clipped16.astype(np.int64).astype(np.int8))
    clipped32 = np.nan_to_num(np.clip(np.trunc(xs.numpy().astype(np.float64)), 0, 2.0 ** 32 - 1), nan=0.0)
    np.testing.assert_array_equal(u.cpu().numpy().view(np.uint32), clipped32.astype(np.uint32))


def test_scalar_reduce_and_argmax():
    x = torch.randn(2048, device="cuda")
    out, idx = _poison(1, torch.float32), _poison(1, torch.int32)
    run(kernels.build_argmax, [1], x, out, idx)
    xs = x.cpu().numpy()
    assert idx.item() == int(np.argmax(xs))
    np.testing.assert_allclose(out.item(), xs.max() + xs.sum(), rtol=1e-4, atol=1e-3)


def test_fp32_blocks_to_fp8_convert_two_at_a_time_and_match_torch():
    # A block cast from fp32 to fp8 converts register pairs with one instruction
    # (cvt.rn.satfinite.e4m3x2.f32 on sm_89+); each element must still be its own
    # rounding: saturating to the largest finite value, NaN to the format's NaN.
    import tritone as triton
    import tritone.language as tl

    @triton.jit
    def to_fp8(x, e4, e5, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x + offs)
        tl.store(e4 + offs, v.to(tl.float8e4nv))
        tl.store(e5 + offs, v.to(tl.float8e5))

    specials = [float("nan"), float("inf"), -float("inf"), 1e-40, 464.0, 500.0, -448.0, 57344.0, 61440.0, 1e10,
                2.0 ** -9, 2.0 ** -10, 2.0 ** -17, 1.0625, -2.7]
    x = torch.cat([torch.randn(2048 - len(specials), device="cuda") * 100, torch.tensor(specials, device="cuda")])
    e4 = torch.full((2048,), 0x55, dtype=torch.uint8, device="cuda").view(torch.float8_e4m3fn)
    e5 = torch.full((2048,), 0x55, dtype=torch.uint8, device="cuda").view(torch.float8_e5m2)
    compiled = to_fp8[(2,)](x, e4, e5, BLOCK=1024, num_warps=4)
    if torch.cuda.get_device_capability() >= (8, 9):
        assert "tt_f32x2_to_fp8e4nv(" in compiled.asm["cuda"] and "tt_f32x2_to_fp8e5(" in compiled.asm["cuda"]
    xs = x.cpu()
    finite = ~torch.isnan(xs)
    expected4 = xs.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)
    expected5 = xs.clamp(-57344.0, 57344.0).to(torch.float8_e5m2).view(torch.uint8)
    assert torch.equal(e4.view(torch.uint8).cpu()[finite], expected4[finite])
    assert torch.equal(e5.view(torch.uint8).cpu()[finite], expected5[finite])
    assert e4.float().cpu()[~finite].isnan().all() and e5.float().cpu()[~finite].isnan().all()
