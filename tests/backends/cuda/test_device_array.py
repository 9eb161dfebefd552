"""DeviceArray (GPU memory without torch) and KernelMemory (arrays placed where
kernels run): against a simulated driver whose device memory is host memory,
and on a real GPU (`gpu` marker) with kernels and torch reading the array."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tests.runtime._host_gpu import install_host_gpu
from tritone.backends import sites
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.device_array import CudaDevice, DeviceArray, KernelMemory
from tritone.ir.target import INTERPRETER_TARGET


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "uint16", "int64", "bool"])
def test_round_trip_and_the_bytes_on_the_device(monkeypatch, dtype):
    gpu = install_host_gpu(monkeypatch)
    rng = np.random.default_rng()
    shape = (int(rng.integers(1, 9)), int(rng.integers(1, 40)))
    host = random_array(rng, shape, dtype)
    with DeviceArray.from_numpy(host) as array:
        assert array.shape == shape and array.dtype == host.dtype and array.nbytes == host.nbytes
        assert array.device == CudaDevice(0) and str(array.device) == "cuda:0" and array.device.type == "cuda"
        assert array.data_ptr() in gpu.allocations
        assert gpu.contents(array.data_ptr(), array.nbytes) == host.tobytes()
        back = array.numpy()
        assert back.dtype == host.dtype and back.shape == shape
        np.testing.assert_array_equal(back, host)
        assert gpu.synchronized >= 1, "numpy() must wait for the kernels launched before"
        replacement = random_array(rng, shape, dtype)
        array.copy_from(replacement)
        np.testing.assert_array_equal(array.numpy(), replacement)
    assert gpu.allocations == {}


def test_cuda_array_interface_version_3(monkeypatch):
    install_host_gpu(monkeypatch)
    host = np.random.default_rng().standard_normal((3, 5, 7)).astype(np.float32)
    with DeviceArray.from_numpy(host) as array:
        interface = array.__cuda_array_interface__
        assert interface == {"shape": (3, 5, 7), "typestr": "<f4", "data": (array.data_ptr(), False),
                             "strides": host.strides, "version": 3}
        assert array.strides == host.strides
    with DeviceArray(4, np.float16) as vector:
        assert vector.__cuda_array_interface__["typestr"] == "<f2" and vector.shape == (4,)


def test_non_contiguous_input_is_copied_in_c_order(monkeypatch):
    install_host_gpu(monkeypatch)
    host = np.random.default_rng().standard_normal((6, 8)).astype(np.float32)
    with DeviceArray.from_numpy(host.T[::2]) as array:
        assert array.shape == (4, 6)
        np.testing.assert_array_equal(array.numpy(), host.T[::2])


def test_empty_arrays_allocate_nothing(monkeypatch):
    gpu = install_host_gpu(monkeypatch)
    with DeviceArray.from_numpy(np.zeros((0, 3), np.float32)) as array:
        assert array.data_ptr() == 0 and array.nbytes == 0
        assert array.numpy().shape == (0, 3)
    assert gpu.library.cuMemAlloc_v2.calls == []


def test_memory_is_freed_deterministically(monkeypatch):
    gpu = install_host_gpu(monkeypatch)
    array = DeviceArray.from_numpy(np.arange(10, dtype=np.int32))
    pointer = array.data_ptr()
    array.free()
    assert gpu.allocations == {} and [call[0] for call in gpu.library.cuMemFree_v2.calls] == [pointer]
    array.free()
    assert len(gpu.library.cuMemFree_v2.calls) == 1
    with pytest.raises(ValueError, match="freed"):
        array.data_ptr()
    with pytest.raises(ValueError, match="freed"):
        array.numpy()
    assert "freed" in repr(array)
    # An array nobody freed gives its memory back when it is collected.
    DeviceArray.from_numpy(np.ones(4, np.float32))
    gc.collect()
    assert gpu.allocations == {}


def test_free_runs_in_the_array_s_context(monkeypatch):
    gpu = install_host_gpu(monkeypatch)
    array = DeviceArray(16, np.float32)
    gpu.current_context = None  # another thread's view: nothing current
    array.free()
    assert gpu.allocations == {} and gpu.current_context == 0xC0


def test_bad_shapes_dtypes_and_copies_are_refused(monkeypatch):
    install_host_gpu(monkeypatch)
    with pytest.raises(ValueError, match="negative"):
        DeviceArray((2, -1), np.float32)
    with pytest.raises(TypeError, match="object"):
        DeviceArray(3, object)
    with DeviceArray((2, 3), np.float32) as array:
        with pytest.raises(ValueError, match=r"got float64 \(2, 3\), the array holds float32 \(2, 3\)"):
            array.copy_from(np.zeros((2, 3)))
        with pytest.raises(ValueError, match=r"\(3, 2\)"):
            array.copy_from(np.zeros((3, 2), np.float32))


def test_kernel_memory_in_the_interpreter(monkeypatch):
    monkeypatch.setattr(sites, "launch_site", lambda: sites.INTERPRETER_SITE)
    host = np.zeros(5, np.float32)
    with KernelMemory() as memory:
        assert not memory.on_gpu and memory.target == INTERPRETER_TARGET and memory.where == "CPU interpreter"
        assert memory.put(host) is host
        assert memory.get(host) is host


def test_kernel_memory_on_a_gpu(monkeypatch):
    gpu = install_host_gpu(monkeypatch)
    monkeypatch.setattr(sites, "launch_site", lambda: (GPUTarget("cuda", 90, 32), 0))
    host = np.random.default_rng().standard_normal(7).astype(np.float32)
    with KernelMemory() as memory:
        assert memory.on_gpu and memory.where == "Simulated GPU (sm_90)"
        placed = memory.put(host)
        assert isinstance(placed, DeviceArray) and placed.device.index == 0
        original = host.copy()
        host[:] = 0  # the device copy is independent of the host array
        np.testing.assert_array_equal(memory.get(placed), original)
        assert len(gpu.allocations) == 1
    assert gpu.allocations == {}


# ---------------------------------------------------------------- a real GPU


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


@pytest.fixture
def real_gpu(monkeypatch):
    for name in ("TRITON_INTERPRET", "TRITONE_INTERPRET"):
        monkeypatch.delenv(name, raising=False)
    sites.reset_active_target()
    assert sites.active_target().backend == "cuda", sites.gpu_unavailable_reason()
    yield
    sites.reset_active_target()


@pytest.mark.gpu
def test_a_kernel_reads_and_writes_device_arrays_on_the_gpu(real_gpu):
    rng = np.random.default_rng()
    n = int(rng.integers(1, 100_000))
    x = rng.standard_normal(n).astype(np.float32)
    with DeviceArray.from_numpy(x) as device_x, DeviceArray.from_numpy(np.full(n, np.nan, np.float32)) as out:
        kernel = scale_kernel[(triton.cdiv(n, 512),)](device_x, out, n, 3.0, BLOCK=512)
        assert kernel.target.backend == "cuda"
        np.testing.assert_array_equal(out.numpy(), x * np.float32(3.0))


@pytest.mark.gpu
def test_torch_reads_the_cuda_array_interface(real_gpu):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA")
    host = np.random.default_rng().standard_normal((5, 9)).astype(np.float32)
    with DeviceArray.from_numpy(host) as array:
        seen = torch.as_tensor(array, device="cuda")
        assert seen.data_ptr() == array.data_ptr()
        np.testing.assert_array_equal(seen.cpu().numpy(), host)
