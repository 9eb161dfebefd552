"""The interpreter with arrays in GPU memory (TRITON_INTERPRET on a machine with
a GPU): they are copied to the host, the kernel runs on the copies, and the
copies go back. On the CPU with stand-ins (torch tensors "on cuda" whose memory
is a CPU tensor; DeviceArrays and bare `__cuda_array_interface__` arrays on a
simulated driver whose device memory is host memory), and on a real GPU
(`gpu` marker) with torch CUDA tensors and DeviceArrays."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tests.runtime._host_gpu import install_host_gpu
from tritone.backends import sites
from tritone.backends.cuda.bindings import driver_api, libs
from tritone.backends.cuda.device_array import DeviceArray


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def double_2d(x_ptr, out_ptr, rows, cols, x_row, x_col, out_row, out_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols_ = tl.arange(0, BLOCK)
    mask = cols_ < cols
    x = tl.load(x_ptr + row * x_row + cols_ * x_col, mask=mask)
    tl.store(out_ptr + row * out_row + cols_ * out_col, x * 2, mask=mask)


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


# ---------------------------------------------------------------- torch tensors "on cuda"


class FakeCudaStorage:
    """The untyped storage of a FakeCudaTensor: `cpu()` copies, `copy_` writes back; both counted."""

    def __init__(self, real: torch.UntypedStorage):
        self.real = real
        self.copied_out = 0
        self.copied_in = 0

    def data_ptr(self) -> int:
        return self.real.data_ptr()

    def cpu(self) -> torch.UntypedStorage:
        self.copied_out += 1
        return self.real.clone()

    def copy_(self, host: torch.UntypedStorage) -> FakeCudaStorage:
        self.copied_in += 1
        self.real.copy_(host)
        return self


class FakeCudaTensor:
    """Stands for a torch tensor on cuda:0 whose memory is the CPU tensor `real`;
    views made with `view` share their base's storage."""

    def __init__(self, real: torch.Tensor, storage: FakeCudaStorage | None = None):
        self.real = real
        self.dtype = real.dtype
        self.device = torch.device("cuda", 0)
        self.storage = storage if storage is not None else FakeCudaStorage(real.untyped_storage())

    def view(self, real_view: torch.Tensor) -> FakeCudaTensor:
        return FakeCudaTensor(real_view, self.storage)

    def data_ptr(self) -> int:
        return self.real.data_ptr()

    def untyped_storage(self) -> FakeCudaStorage:
        return self.storage

    def storage_offset(self) -> int:
        return self.real.storage_offset()

    def size(self) -> torch.Size:
        return self.real.size()

    def stride(self) -> tuple[int, ...]:
        return self.real.stride()

    def new_empty(self, *args, **kwargs) -> torch.Tensor:
        return self.real.new_empty(*args, **kwargs)


def test_cuda_tensors_are_copied_to_the_host_and_back(interpret):
    n = int(np.random.default_rng().integers(1, 300))
    x, y = FakeCudaTensor(torch.randn(n)), FakeCudaTensor(torch.randn(n))
    out = FakeCudaTensor(torch.full((n,), float("nan")))
    add_kernel[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
    torch.testing.assert_close(out.real, x.real + y.real, rtol=0, atol=0)
    for tensor in (x, y, out):
        assert (tensor.storage.copied_out, tensor.storage.copied_in) == (1, 1)


def test_views_of_one_storage_share_one_host_copy(interpret):
    base = FakeCudaTensor(torch.randn(6, 10))
    before = base.real.clone()
    x, out = base.view(base.real[:, ::2]), base.view(base.real[1:, 1::2])
    double_2d[(5,)](x, out, 5, 5, *x.stride(), *out.stride(), BLOCK=8)
    expected = before.clone()
    expected[1:, 1::2] = 2 * before[:5, ::2]
    torch.testing.assert_close(base.real, expected, rtol=0, atol=0)
    assert (base.storage.copied_out, base.storage.copied_in) == (1, 1)


def test_a_kernel_writing_its_input_in_place(interpret):
    x = FakeCudaTensor(torch.randn(100))
    before = x.real.clone()
    add_kernel[(2,)](x, x, x, 100, BLOCK=64)
    torch.testing.assert_close(x.real, 2 * before, rtol=0, atol=0)
    assert (x.storage.copied_out, x.storage.copied_in) == (1, 1)


def test_without_the_interpret_knob_gpu_arrays_are_refused(monkeypatch):
    """Where kernels fall back to the interpreter because no GPU is usable, a GPU
    array is an error that says why, not a silent copy."""

    def missing():
        raise libs.LibraryNotFound("The NVIDIA CUDA driver library was not found, so no GPU can be used.")

    for name in ("TRITON_INTERPRET", "TRITONE_INTERPRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(driver_api, "driver", missing)
    sites.reset_active_target()
    try:
        x = FakeCudaTensor(torch.randn(16))
        with pytest.raises(ValueError, match=r"argument 'x_ptr'.*no usable NVIDIA GPU") as caught:
            add_kernel[(1,)](x, torch.zeros(16), torch.zeros(16), 16, BLOCK=16)
        assert x.storage.copied_out == 0
        # The knob is not set: the advice is not to unset it.
        assert "TRITON_INTERPRET" not in str(caught.value) and "Pass a CPU tensor (`.cpu()`)" in str(caught.value)
        refused = r"argument 'y_ptr'.*device meta cannot be used here: a meta tensor holds no data \(kernels run"
        with pytest.raises(ValueError, match=refused) as caught:
            add_kernel[(1,)](torch.zeros(16), torch.empty(16, device="meta"), torch.zeros(16), 16, BLOCK=16)
        assert "unset" not in str(caught.value) and ".cpu()" not in str(caught.value)
    finally:
        sites.reset_active_target()


def test_tensors_without_memory_stay_refused(interpret):
    meta = torch.empty(16, device="meta")
    with pytest.raises(ValueError, match=r"argument 'y_ptr'.*device meta.*TRITON_INTERPRET is set") as caught:
        add_kernel[(1,)](torch.zeros(16), meta, torch.zeros(16), 16, BLOCK=16)
    # No GPU would make a meta tensor readable either.
    assert "unset" not in str(caught.value) and "Pass a CPU tensor holding the data instead" in str(caught.value)


@triton.jit
def add_pair(pair, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(pair[0] + offsets, mask=mask) + tl.load(pair[1] + offsets, mask=mask),
             mask=mask)


def test_gpu_arrays_inside_tuples_are_copied_too(interpret):
    x, out = FakeCudaTensor(torch.randn(100)), FakeCudaTensor(torch.full((100,), float("nan")))
    y = torch.randn(100)
    add_pair[(2,)]((x, y), out, 100, BLOCK=64)
    torch.testing.assert_close(out.real, x.real + y, rtol=0, atol=0)
    assert (x.storage.copied_out, out.storage.copied_in) == (1, 1)
    meta = torch.empty(16, device="meta")
    with pytest.raises(ValueError, match=r"argument 'pair\[1\]': a tensor on device meta"):
        add_pair[(1,)]((y, meta), out, 16, BLOCK=16)


# ---------------------------------------------------------------- CUDA array interface


def test_device_arrays_are_copied_through_the_driver(monkeypatch, interpret):
    gpu = install_host_gpu(monkeypatch)
    rng = np.random.default_rng()
    n = int(rng.integers(1, 300))
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    with DeviceArray.from_numpy(x) as dx, DeviceArray.from_numpy(y) as dy, DeviceArray(n, np.float32) as out:
        uploads = len(gpu.library.cuMemcpyHtoD_v2.calls)
        add_kernel[(triton.cdiv(n, 64),)](dx, dy, out, n, BLOCK=64)
        # Three arrays, three regions: each read once and written back once.
        assert len(gpu.library.cuMemcpyDtoH_v2.calls) == 3
        assert len(gpu.library.cuMemcpyHtoD_v2.calls) == uploads + 3
        np.testing.assert_array_equal(out.numpy(), x + y)
        add_kernel[(triton.cdiv(n, 64),)](dx, dx, dx, n, BLOCK=64)
        np.testing.assert_array_equal(dx.numpy(), 2 * x)


class InterfaceOnly:
    """A strided view of device memory known only by its `__cuda_array_interface__`
    (no `device` attribute), as other libraries' arrays are."""

    def __init__(self, address: int, shape: tuple[int, ...], strides: tuple[int, ...]):
        self.dtype = np.dtype(np.float32)
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (address, False),
                                         "strides": strides, "version": 3}

    def data_ptr(self) -> int:
        return self.__cuda_array_interface__["data"][0]


def test_overlapping_interface_arrays_are_copied_as_one_region(monkeypatch, interpret):
    gpu = install_host_gpu(monkeypatch)
    host = np.random.default_rng().standard_normal((6, 10)).astype(np.float32)
    with DeviceArray.from_numpy(host) as base:
        start = base.data_ptr()
        x = InterfaceOnly(start, (5, 5), (40, 8))  # host[:5, ::2]
        out = InterfaceOnly(start + 44, (5, 5), (40, 8))  # host[1:, 1::2]
        double_2d[(5,)](x, out, 5, 5, 10, 2, 10, 2, BLOCK=8)
        downloads = gpu.library.cuMemcpyDtoH_v2.calls
        assert [(call[1], call[2]) for call in downloads] == [(start, 44 + 4 * 40 + 4 * 8 + 4)]
        expected = host.copy()
        expected[1:, 1::2] = 2 * host[:5, ::2]
        np.testing.assert_array_equal(base.numpy(), expected)


def test_an_empty_interface_array_needs_no_copy(monkeypatch, interpret):
    gpu = install_host_gpu(monkeypatch)
    empty = InterfaceOnly(0, (0,), (4,))
    add_kernel[(1,)](empty, empty, empty, 0, BLOCK=16)
    assert gpu.library.cuMemcpyDtoH_v2.calls == [] and gpu.library.cuCtxSynchronize.calls == []


# ---------------------------------------------------------------- a real GPU


@pytest.mark.gpu
def test_interpreting_torch_cuda_tensors_on_a_gpu(interpret):
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA")
    n = int(np.random.default_rng().integers(1, 5000))
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    kernel = add_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    assert kernel.target.backend == "interpreter"
    assert out.device.type == "cuda"
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    base = torch.randn(6, 10, device="cuda")
    expected = base.clone()
    expected[1:, 1::2] = 2 * base[:5, ::2]
    x_view, out_view = base[:, ::2], base[1:, 1::2]
    double_2d[(5,)](x_view, out_view, 5, 5, *x_view.stride(), *out_view.stride(), BLOCK=8)
    torch.testing.assert_close(base, expected, rtol=0, atol=0)


@pytest.mark.gpu
def test_interpreting_device_arrays_on_a_gpu(interpret):
    rng = np.random.default_rng()
    n = int(rng.integers(1, 5000))
    x = rng.standard_normal(n).astype(np.float32)
    with DeviceArray.from_numpy(x) as dx, DeviceArray(n, np.float32) as out:
        kernel = add_kernel[(triton.cdiv(n, 128),)](dx, dx, out, n, BLOCK=128)
        assert kernel.target.backend == "interpreter"
        np.testing.assert_array_equal(out.numpy(), 2 * x)
