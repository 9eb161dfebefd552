"""Python-side cost of one kernel launch, for a kernel of 4 arguments
(two pointers, an i32, an fp32), side by side with the floor of a bare ctypes
`cuLaunchKernel` call, tritone's launch plan alone and its whole
`kernel[grid](...)`, a torch eager op and, where installed with a GPU,
upstream Triton's `kernel[grid](...)`.

    python bench/launch_overhead.py [--launches 5000]

Needs an NVIDIA GPU; elsewhere it says so and exits. Each figure is the median
over repeats of the wall time of a burst of launches divided by their number
(the kernel does almost nothing, so the GPU keeps up and the time is the host's).
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tritone.backends.cuda.bindings import driver_api, libs  # noqa: E402
from tritone.backends.cuda.bindings.nvrtc import compile_cuda  # noqa: E402
from tritone.backends.cuda.launch_plan import LaunchSpec, Parameter, plan_for  # noqa: E402

KERNEL = r"""
extern "C" __global__ void scale_add(const float* x, float* y, int n, float alpha) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += alpha * x[i];
}
"""
PARAMETERS = (Parameter(0, "x", "*fp32"), Parameter(1, "y", "*fp32"), Parameter(2, "n", "i32"),
              Parameter(3, "alpha", "fp32"))


def per_launch_us(paths: dict[str, Callable[[], None]], synchronize: Callable[[], None], launches: int,
                  repeats: int = 9) -> dict[str, float]:
    """Median over `repeats` bursts of the host time per launch, in microseconds,
    for each path; bursts of the paths alternate so that drifts in clock speed
    affect them alike."""
    for launch in paths.values():
        for _ in range(min(launches, 1000)):
            launch()
    synchronize()
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, launch in paths.items():
            start = time.perf_counter()
            for _ in range(launches):
                launch()
            samples[name].append((time.perf_counter() - start) / launches * 1e6)
            synchronize()
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=5000)
    arguments = parser.parse_args()
    try:
        driver = driver_api.driver()
        device = driver.device(0)
    except (libs.LibraryNotFound, driver_api.CudaError) as error:
        print(f"no usable NVIDIA GPU, nothing to measure: {error}")
        return 0
    try:
        import torch
    except ImportError:
        torch = None
    use_torch = torch is not None and torch.cuda.is_available()
    n = 256
    cubin = compile_cuda(KERNEL, "scale_add.cu", device.arch, driver_version=driver.driver_version()).cubin
    spec = LaunchSpec("scale_add", "scale_add", PARAMETERS, cubin, False, num_warps=8, shared=0,
                      hash="bench-launch-overhead")
    plan = plan_for(spec, 0, driver)
    if use_torch:
        x, y = torch.rand(n, device="cuda"), torch.zeros(n, device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        synchronize = torch.cuda.synchronize
    else:
        x, y = driver.memory_alloc(4 * n), driver.memory_alloc(4 * n)
        driver.memset_d8(x, 0, 4 * n)
        driver.memset_d8(y, 0, 4 * n)
        stream = 0
        synchronize = driver.context_synchronize

    # The floor: the same driver call with every argument already converted, as the launcher makes it.
    prototyped = driver.function("cuLaunchKernel")
    bare = type(prototyped)(ctypes.cast(prototyped, ctypes.c_void_p).value)
    bare.restype = ctypes.c_int32
    values = [ctypes.c_uint64(x.data_ptr() if use_torch else x), ctypes.c_uint64(y.data_ptr() if use_torch else y),
              ctypes.c_int32(n), ctypes.c_float(0.5)]
    pointers = (ctypes.c_void_p * 4)(*(ctypes.addressof(v) for v in values))
    constants = (ctypes.c_void_p(plan.function), ctypes.c_uint32(256), ctypes.c_uint32(1), ctypes.c_uint32(0),
                 ctypes.c_void_p(stream))
    function, block, one, shared, stream_value = constants
    prototyped_ex = driver.function("cuLaunchKernelEx")
    bare_ex = type(prototyped_ex)(ctypes.cast(prototyped_ex, ctypes.c_void_p).value)
    bare_ex.restype = ctypes.c_int32
    config = driver_api.launch_config((1, 1, 1), (256, 1, 1), 0, stream)
    config_address = ctypes.c_void_p(ctypes.addressof(config))
    launch = plan.launch
    paths = {
        "bare ctypes cuLaunchKernel (floor)":
            lambda: bare(function, 1, 1, 1, block, one, one, shared, stream_value, pointers, None),
        "bare ctypes cuLaunchKernelEx": lambda: bare_ex(config_address, function, pointers, None),
        "tritone plan.launch, stream given": lambda: launch(1, 1, 1, stream, x, y, n, 0.5),
        "tritone plan.launch, current stream": lambda: launch(1, 1, 1, None, x, y, n, 0.5),
    }
    if use_torch:
        paths.update(_tritone_jit_paths(x, y, n))
        paths["torch eager y.add_(x, alpha=0.5)"] = lambda: y.add_(x, alpha=0.5)
        paths.update(_upstream_triton_paths(x, y, n))
    rows = list(per_launch_us(paths, synchronize, arguments.launches).items())

    floor = rows[0][1]
    print(f"launch overhead on {device.name} (sm_{device.arch}), {arguments.launches} launches per burst")
    print(f"{'path':<44} {'us/launch':>10} {'x floor':>8}")
    for name, value in rows:
        print(f"{name:<44} {value:>10.2f} {value / floor:>8.2f}")
    return 0


def _tritone_jit_paths(x, y, n) -> dict[str, Callable[[], None]]:
    """tritone's `kernel[grid](...)` of the same kernel written with `@tritone.jit`,
    and the argument key computation of that path on its own."""
    import tritone
    import tritone.language as tl

    @tritone.jit
    def scale_add(x_ptr, y_ptr, n, alpha):
        offsets = tl.program_id(0) * 256 + tl.arange(0, 256)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(y_ptr + offsets, mask=mask) + alpha * tl.load(x_ptr + offsets, mask=mask),
                 mask=mask)

    scale_add[(1,)](x, y, n, 0.5)
    key_binder = scale_add._key_binder
    return {"tritone kernel[grid](...)": lambda: scale_add[(1,)](x, y, n, 0.5),
            "  of which the argument key": lambda: key_binder(x, y, n, 0.5)}


def _upstream_triton_paths(x, y, n) -> dict[str, Callable[[], None]]:
    """Upstream Triton's launch of the same kernel, when it is installed and works here."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return {}
    if getattr(triton, "__tritone_version__", None) is not None:
        return {}  # the drop-in alias, not upstream

    @triton.jit
    def scale_add(x_ptr, y_ptr, n, alpha):
        offsets = tl.program_id(0) * 256 + tl.arange(0, 256)
        mask = offsets < n
        tl.store(y_ptr + offsets, tl.load(y_ptr + offsets, mask=mask) + alpha * tl.load(x_ptr + offsets, mask=mask),
                 mask=mask)

    try:
        scale_add[(1,)](x, y, n, 0.5)
    except Exception as error:  # any failure only means there is no upstream figure
        print(f"(upstream Triton not measured: {type(error).__name__}: {error})")
        return {}
    return {f"upstream Triton {triton.__version__} kernel[grid](...)": lambda: scale_add[(1,)](x, y, n, 0.5)}


if __name__ == "__main__":
    sys.exit(main())
