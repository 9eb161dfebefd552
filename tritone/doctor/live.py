"""The live check: compile and run a vector add through the public API
(`@tritone.jit`, `kernel[grid](...)` on torch tensors) on each GPU, so it goes
through whatever path tritone picks there, and compare the result with the
CPU's. Without a GPU (or with TRITON_INTERPRET set) the CPU interpreter runs it
on numpy arrays instead."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .. import cdiv, jit, knobs
from .. import language as tl
from .gpu import GpuFacts
from .packages import TorchFacts
from .report import Check, Status

SECTION = "live check"
# Not a multiple of the block, so the masked tail is exercised.
N_ELEMENTS = 98_765
BLOCK = 1024


@jit
def vector_add(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def _where(kernel: Any) -> str:
    target = kernel.target
    return "the CPU interpreter" if target.backend == "interpreter" else f"{target.backend} sm_{target.arch}"


def _failed(name: str, error: Exception, fix: str) -> Check:
    lines = f"{type(error).__name__}: {error}".splitlines()
    return Check(SECTION, name, Status.FAIL, f"vector add did not run: {lines[0]}", tuple(lines[1:12]), fix)


def _compared(name: str, kernel: Any, mismatches: int, seconds: float, note: str = "") -> Check:
    where = _where(kernel)
    if mismatches:
        return Check(SECTION, name, Status.FAIL,
                     f"vector add on {where}: {mismatches} of {N_ELEMENTS} elements differ from the CPU's sums",
                     fix="report it with the output of `python -m tritone doctor --json`; TRITON_INTERPRET=1 "
                         "runs kernels on the CPU meanwhile")
    return Check(SECTION, name, Status.PASS,
                 f"vector add of {N_ELEMENTS} floats on {where} matches the CPU ({seconds:.2f}s with compilation)",
                 (note,) if note else ())


def interpreter_check(note: str = "") -> Check:
    """Run the vector add on numpy arrays (the CPU interpreter) and compare with numpy."""
    rng = np.random.default_rng()
    x = rng.random(N_ELEMENTS, dtype=np.float32)
    y = rng.random(N_ELEMENTS, dtype=np.float32)
    out = np.full(N_ELEMENTS, np.nan, dtype=np.float32)
    start = time.perf_counter()
    try:
        kernel = vector_add[(cdiv(N_ELEMENTS, BLOCK),)](x, y, out, N_ELEMENTS, BLOCK=BLOCK)
    except Exception as error:  # any failure of the kernel path is the finding
        return _failed("CPU", error, "report it with the output of `python -m tritone doctor --json`")
    return _compared("CPU", kernel, int(np.count_nonzero(out != x + y)), time.perf_counter() - start, note)


def gpu_check(torch: Any, ordinal: int) -> Check:
    """Run the vector add on torch tensors on GPU `ordinal` and compare with the sums the CPU computes."""
    name = f"GPU {ordinal}"
    device = torch.device("cuda", ordinal)
    start = time.perf_counter()
    try:
        x = torch.rand(N_ELEMENTS, device=device)
        y = torch.rand(N_ELEMENTS, device=device)
        out = torch.full_like(x, float("nan"))
        with torch.cuda.device(ordinal):
            kernel = vector_add[(cdiv(N_ELEMENTS, BLOCK),)](x, y, out, N_ELEMENTS, BLOCK=BLOCK)
            torch.cuda.synchronize(device)
        mismatches = int((out.cpu() != x.cpu() + y.cpu()).sum())
    except Exception as error:  # any failure of the kernel path is the finding
        return _failed(name, error, "the checks above name what is missing; TRITON_INTERPRET=1 runs kernels on "
                                    "the CPU meanwhile")
    return _compared(name, kernel, mismatches, time.perf_counter() - start)


def live_checks(gpu: GpuFacts, torch_facts: TorchFacts) -> list[Check]:
    """One check per GPU, or the interpreter's check where no GPU runs kernels."""
    if knobs.runtime.interpret:
        checks = [interpreter_check("TRITON_INTERPRET is set: kernels run in the CPU interpreter")]
        if gpu.devices:
            checks.append(Check(SECTION, "GPU", Status.WARN,
                                "skipped: TRITON_INTERPRET is set, so kernels run on the CPU",
                                fix="unset TRITON_INTERPRET and TRITONE_INTERPRET to run kernels on the GPU"))
        return checks
    if not gpu.devices:
        return [interpreter_check("no GPU: the CPU interpreter runs kernels")]
    if not torch_facts.cuda_available:
        return [Check(SECTION, "GPU", Status.WARN, "skipped: it puts tensors on the GPU with torch, and this "
                      "Python has no torch that can use the GPU (see the torch section)")]
    import torch

    return [gpu_check(torch, device.ordinal) if device.ordinal < torch.cuda.device_count()
            else Check(SECTION, f"GPU {device.ordinal}", Status.WARN, "skipped: torch does not see this GPU")
            for device in gpu.devices]
