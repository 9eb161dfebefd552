"""Global scratch memory at launch (backends/cuda/launch_plan.py with
runtime/_allocation.py), against the simulated driver of test_launch_plan: a
kernel whose metadata reports `global_scratch_size` takes the address of a
buffer from the allocator of `triton.set_allocator` as its last argument, asked
for grid size * num_ctas * size bytes on the launch's stream, as Triton's
launcher asks."""

from __future__ import annotations

import ctypes
import struct
import threading

import numpy as np
import pytest
import torch

from tests.backends.cuda.test_launch_plan import SCALARS, FakeGPU, NoCompiler, decode, generated_binary, spec_of
from tritone.backends.cuda.launch_plan import LaunchPlan, LaunchSpec
from tritone.errors import TritonError
from tritone.runtime import _allocation

PARAMS = [("x_ptr", "*fp32"), ("BLOCK", "constexpr"), ("n", "i32")]
SIZE, ALIGN = 192, 128


class ScratchBuffer:
    """What a torch allocator returns, as far as the launcher looks: a tensor of
    int8 on a GPU (cuda:0 unless `ordinal` says) with an address."""

    def __init__(self, address: int, nbytes: int, ordinal: int = 0):
        self.address, self.nbytes, self.device = address, nbytes, torch.device("cuda", ordinal)

    def data_ptr(self) -> int:
        return self.address

    def numel(self) -> int:
        return self.nbytes

    def element_size(self) -> int:
        return 1


class RecordingAllocator:
    """An allocator that answers each call with a fresh buffer of the size asked
    for (or what `answer(size)` returns) and keeps the calls and the buffers."""

    def __init__(self, answer=None):
        self.calls: list[tuple] = []
        self.buffers: list = []
        self.answer = answer

    def __call__(self, size, alignment, stream):
        self.calls.append((size, alignment, stream))
        buffer = self.answer(size) if self.answer else ScratchBuffer(0x7F00_0000_0000 + 0x1000 * len(self.calls), size)
        self.buffers.append(buffer)
        return buffer


@pytest.fixture
def allocator():
    recording = RecordingAllocator()
    token = _allocation.allocator.set(recording)
    yield recording
    _allocation.allocator.reset(token)


def scratch_plan(gpu: FakeGPU, **fields) -> LaunchPlan:
    fields = {"global_scratch_size": SIZE, "global_scratch_align": ALIGN, "name": "scratch_kernel", **fields}
    return LaunchPlan(spec_of(PARAMS, **fields), 0, gpu.driver)


def scratch_address(record: dict) -> int:
    return struct.unpack("<Q", record["bytes"][-1])[0]


def test_each_launch_asks_for_the_whole_grid_and_passes_the_address_last(allocator):
    gpu = FakeGPU()
    plan = scratch_plan(gpu)
    assert len(plan.storage) == len(plan.spec.runtime_parameters) + 1 == 3
    plan.launch(3, 2, 5, 0x5EA, 0x1000, 64, 7)
    plan.launch(4, 1, 1, 0x5EB, 0x2000, 64, 9)
    assert allocator.calls == [(3 * 2 * 5 * SIZE, ALIGN, 0x5EA), (4 * SIZE, ALIGN, 0x5EB)]
    first, second = gpu.launches
    assert first["call"] == second["call"] == "cuLaunchKernel" and len(first["bytes"]) == 3
    assert decode(first["bytes"], PARAMS) == [0x1000, 7] and decode(second["bytes"], PARAMS) == [0x2000, 9]
    assert [scratch_address(first), scratch_address(second)] == [b.address for b in allocator.buffers]
    assert first["stream"] == 0x5EA and second["stream"] == 0x5EB


def test_cluster_launches_ask_for_num_ctas_blocks_per_program(allocator):
    gpu = FakeGPU()
    plan = scratch_plan(gpu, num_ctas=2)
    plan.launch(4, 3, 2, 0x5EA, 0x1000, 64, 7)
    record = gpu.launches[-1]
    assert record["call"] == "cuLaunchKernelEx" and record["grid"] == (8, 3, 2) and record["stream"] == 0x5EA
    assert allocator.calls == [(4 * 3 * 2 * 2 * SIZE, ALIGN, 0x5EA)]
    assert scratch_address(record) == allocator.buffers[0].address
    assert plan.inline_parts() is None


def test_the_stream_asked_for_is_the_one_launched_on(allocator, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    gpu = FakeGPU()
    scratch_plan(gpu).launch(1, 1, 1, None, 0x1000, 64, 7)
    assert allocator.calls[-1][2] == 0 and gpu.launches[-1]["stream"] == 0  # the default stream, as upstream tests
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0xABC0, raising=False)
    scratch_plan(gpu, name="on_torch_stream").launch(2, 1, 1, None, 0x1000, 64, 7)
    assert allocator.calls[-1] == (2 * SIZE, ALIGN, 0xABC0) and gpu.launches[-1]["stream"] == 0xABC0


def test_converted_grids_and_retried_launches_keep_the_scratch(allocator):
    gpu = FakeGPU()
    plan = scratch_plan(gpu)
    plan.launch(np.int64(3), np.int32(2), 1, 0, 0x1000, 64, 7)
    assert allocator.calls == [(6 * SIZE, ALIGN, 0)] and type(allocator.calls[0][0]) is int
    assert gpu.launches[-1]["grid"] == (3, 2, 1) and scratch_address(gpu.launches[-1]) == allocator.buffers[0].address
    gpu.current = 0
    gpu.launch_codes = [201]  # no context current: retried once in the plan's
    plan.launch(5, 1, 1, 0, 0x1000, 64, 7)
    assert [r["code"] for r in gpu.launches[-2:]] == [201, 0] and len(allocator.calls) == 2
    assert scratch_address(gpu.launches[-1]) == allocator.buffers[1].address
    with pytest.raises(TypeError, match="kernel scratch_kernel: grid dimension x must be an integer"):
        plan.launch(1.5, 1, 1, 0, 0x1000, 64, 7)
    assert len(allocator.calls) == 2


def test_without_an_allocator_the_launch_raises_naming_the_kernel():
    gpu = FakeGPU()
    plan = scratch_plan(gpu)
    message = rf"kernel scratch_kernel asked for {2 * SIZE} bytes of global scratch memory, but no allocator is set"
    with pytest.raises(RuntimeError, match=message + r": call triton\.set_allocator"):
        plan.launch(2, 1, 1, 0, 0x1000, 64, 7)
    token = _allocation.allocator.set(_allocation.NullAllocator())  # what Triton's tests reset to
    try:
        with pytest.raises(RuntimeError, match=message):
            plan.launch(2, 1, 1, 0, 0x1000, 64, 7)
    finally:
        _allocation.allocator.reset(token)
    assert gpu.launches == []


def test_kernels_without_scratch_never_call_the_allocator(allocator):
    gpu = FakeGPU()
    plan = LaunchPlan(spec_of(PARAMS), 0, gpu.driver)
    assert plan.spec.global_scratch_size == 0 and len(plan.storage) == 2
    assert "scratch" not in plan.launch.__source__
    plan.launch(3, 2, 1, 0x5EA, 0x1000, 64, 7)
    plan.launch(2, 1, 1, None, 0x1000, 64, 7)
    assert allocator.calls == [] and len(gpu.launches) == 2 and plan.inline_parts() is not None


def test_an_empty_grid_asks_for_nothing(allocator):
    gpu = FakeGPU()
    plan = scratch_plan(gpu)
    for empty in [(0, 1, 1), (2, 0, 1), (1, 1, 0)]:
        plan.launch(*empty, 0, 0x1000, 64, 7)
    with pytest.raises(ValueError, match="grid dimension x is negative"):
        plan.launch(-1, 1, 1, 0, 0x1000, 64, 7)
    assert allocator.calls == [] and gpu.launches == []


def test_an_allocator_set_in_another_thread_stays_there():
    gpu = FakeGPU()
    plan = scratch_plan(gpu)
    here, there = RecordingAllocator(), RecordingAllocator()
    token = _allocation.allocator.set(here)
    try:
        outcome = []

        def worker() -> None:
            try:
                plan.launch(1, 1, 1, 0, 0x1000, 64, 7)  # a new thread has none of this thread's
            except RuntimeError as error:
                outcome.append(str(error))
            _allocation.set_allocator(there)
            plan.launch(2, 1, 1, 0, 0x1000, 64, 7)

        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        plan.launch(3, 1, 1, 0, 0x1000, 64, 7)
    finally:
        _allocation.allocator.reset(token)
    assert len(outcome) == 1 and "no allocator is set" in outcome[0]
    assert there.calls == [(2 * SIZE, ALIGN, 0)] and here.calls == [(3 * SIZE, ALIGN, 0)]
    assert scratch_address(gpu.launches[-1]) == here.buffers[0].address


@pytest.mark.parametrize(("answer", "problem"), [
    (lambda size: None, r"returned a NoneType, which has no data_ptr\(\)"),
    (lambda size: np.empty(size, np.int8), r"returned a ndarray, which has no data_ptr\(\)"),
    (lambda size: ScratchBuffer(0x7F00_0000_0000, size - 1), rf"returned a tensor of {6 * SIZE - 1} bytes"),
    (lambda size: torch.empty(size, dtype=torch.int8), r"returned a tensor on cpu; allocate it on cuda:0"),
    (lambda size: ScratchBuffer(0x7F10_0000_0000, size, 1), r"returned a tensor on cuda:1; allocate it on cuda:0"),
    (lambda size: ScratchBuffer(0, size), "returned a buffer at address 0"),
    (lambda size: -16, "returned a buffer at address -16"),
    (lambda size: True, r"returned a bool, which has no data_ptr\(\)"),
])
def test_an_unusable_buffer_is_refused_naming_the_kernel_and_the_size(answer, problem):
    gpu = FakeGPU()
    plan = scratch_plan(gpu)
    token = _allocation.allocator.set(RecordingAllocator(answer))
    try:
        with pytest.raises(TritonError, match=rf"^kernel scratch_kernel: the allocator set with triton\.set_allocator, "
                                              rf"asked for {6 * SIZE} bytes of global scratch memory, {problem}"):
            plan.launch(3, 2, 1, 0, 0x1000, 64, 7)
    finally:
        _allocation.allocator.reset(token)
    assert gpu.launches == []


def test_an_int_address_is_passed_as_it_is():
    gpu = FakeGPU()
    token = _allocation.allocator.set(lambda size, alignment, stream: 0x7F00_0000_4000)
    try:
        scratch_plan(gpu).launch(1, 1, 1, 0, 0x1000, 64, 7)
    finally:
        _allocation.allocator.reset(token)
    assert scratch_address(gpu.launches[-1]) == 0x7F00_0000_4000


def test_the_spec_reads_scratch_from_the_compiled_metadata():
    gpu = FakeGPU()
    binary = generated_binary(SCALARS, NoCompiler())
    plain = LaunchSpec.from_compiled(SCALARS, binary.metadata, binary.asm, binary.hash)
    assert (plain.global_scratch_size, plain.global_scratch_align) == (0, 1)
    # What the code generator reports for a kernel that makes tensor descriptors on the device.
    params = [*binary.metadata["params"], ("tt_global_scratch", "unsigned char*", 8)]
    reported = {**binary.metadata, "global_scratch_size": 256, "global_scratch_align": 128, "params": params}
    spec = LaunchSpec.from_compiled(SCALARS, reported, binary.asm, "with-scratch")
    assert (spec.global_scratch_size, spec.global_scratch_align) == (256, 128)
    assert spec.argument_bytes == (8, 8, 4, 4, 8, 8, 1, 2, 8) and len(spec.runtime_parameters) == 8
    plan = LaunchPlan(spec, 0, gpu.driver)
    assert tuple(ctypes.sizeof(value) for value in plan.storage) == spec.argument_bytes
    missing = LaunchSpec.from_compiled(SCALARS, {**reported, "params": binary.metadata["params"]}, binary.asm, "x")
    with pytest.raises(TritonError, match="and a global scratch pointer gives .* the code generator and the launcher "
                                          "disagree"):
        LaunchPlan(missing, 0, gpu.driver)
