"""First-call time of a new process for an autotuned matmul (8 configs), with
and without the on-disk autotuning cache, for tritone and, where installed with
a GPU, upstream Triton.

    python bench/autotune_cache.py [--size 1024] [--repeats 3]

Each figure is the wall time of the first `matmul[grid](...)` call in a fresh
Python process (tuning, compiling and running it, synchronised), median over
`--repeats` processes. Three scenarios per implementation:

- cold: an empty cache folder (TRITON_CACHE_DIR): every config is compiled and timed;
- retuned: the cache folder a cold run left, autotune caching off: the configs
  are timed again (compiled kernels may come from the kernel cache);
- warm: that folder with `cache_results=True`: the choice is read from disk
  and no config is timed.

"timed" counts the configs the process benchmarked; "vs cold" is the ratio to
the cold figure of the same implementation. Without a GPU, tritone tunes on
the interpreter (timing with the host clock, a small matrix) and upstream
Triton is left out: its interpreter has no driver to tune with.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# A child process runs the kernel with the implementation its parent names.
IMPLEMENTATION = os.environ.get("AUTOTUNE_CACHE_BENCH_CHILD", "tritone")
if IMPLEMENTATION == "triton":
    import triton
    import triton.language as tl
else:
    import tritone as triton
    import tritone.language as tl

GPU_CONFIGS = [(64, 64, 32, 4, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (128, 128, 32, 8, 3),
               (64, 64, 64, 4, 2), (128, 128, 64, 8, 2), (32, 64, 32, 2, 4), (64, 32, 32, 2, 4)]
CPU_CONFIGS = [(16, 16, 16, 4, 3), (32, 16, 16, 4, 3), (16, 32, 16, 4, 3), (32, 32, 16, 4, 3),
               (16, 16, 32, 4, 3), (32, 32, 32, 4, 3), (16, 32, 32, 2, 3), (32, 16, 32, 2, 3)]


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def child(size: int) -> None:
    """Time the first call of the autotuned matmul in this process; print JSON."""
    import torch

    on_gpu = torch.cuda.is_available()
    device, dtype = ("cuda", torch.float16) if on_gpu else ("cpu", torch.float32)
    timed: list[int] = []

    def counting_do_bench(kernel_call, quantiles):
        timed.append(1)
        if on_gpu:
            return triton.testing.do_bench(kernel_call, quantiles=quantiles)
        return triton.testing.do_bench(kernel_call, warmup=1, rep=5, quantiles=quantiles)

    configs = [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k}, num_warps=w, num_stages=s)
               for m, n, k, w, s in (GPU_CONFIGS if on_gpu else CPU_CONFIGS)]
    matmul = triton.autotune(configs, key=["M", "N", "K"], do_bench=counting_do_bench,
                             cache_results=os.environ.get("AUTOTUNE_CACHE_BENCH_RESULTS") == "1")(matmul_kernel)
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    c = torch.empty(size, size, device=device, dtype=dtype)

    def grid(meta):
        return (triton.cdiv(size, meta["BLOCK_M"]), triton.cdiv(size, meta["BLOCK_N"]))

    started = time.perf_counter()
    matmul[grid](a, b, c, size, size, size)
    if on_gpu:
        torch.cuda.synchronize()
    first_call = time.perf_counter() - started
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=size * 2e-3)
    print(json.dumps({"first_call_s": first_call, "timed": len(timed), "best": str(matmul.best_config)}))


def run_child(implementation: str, size: int, cache_dir: str, cache_results: bool) -> dict:
    env = {**os.environ, "AUTOTUNE_CACHE_BENCH_CHILD": implementation, "TRITON_CACHE_DIR": cache_dir,
           "AUTOTUNE_CACHE_BENCH_RESULTS": "1" if cache_results else "0"}
    for name in ("TRITON_CACHE_AUTOTUNING", "TRITON_PRINT_AUTOTUNING", "TRITON_INTERPRET"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, __file__, "--child", "--size", str(size)], env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{implementation} child failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(implementation: str, size: int, repeats: int) -> dict[str, list[dict]]:
    results: dict[str, list[dict]] = {"cold": [], "retuned": [], "warm": []}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="autotune-cache-bench-") as folder:
            results["cold"].append(run_child(implementation, size, folder, cache_results=True))
            results["retuned"].append(run_child(implementation, size, folder, cache_results=False))
            results["warm"].append(run_child(implementation, size, folder, cache_results=True))
    return results


def upstream_usable() -> bool:
    try:
        import torch
        import triton as upstream  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=None, help="M = N = K (default 1024 on a GPU, 64 on the CPU)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.size)
        return

    gpu = upstream_usable()
    size = args.size or (1024 if gpu else 64)
    implementations = ["tritone", "triton"] if gpu else ["tritone"]
    print(f"autotuned matmul, {len(GPU_CONFIGS if gpu else CPU_CONFIGS)} configs, M=N=K={size}, "
          f"{'GPU' if gpu else 'CPU interpreter'}, median of {args.repeats} processes")
    print(f"{'implementation':<15}{'scenario':<10}{'first call (s)':>16}{'timed':>7}{'vs cold':>9}  best config")
    for implementation in implementations:
        results = measure(implementation, size, args.repeats)
        cold = statistics.median(r["first_call_s"] for r in results["cold"])
        for scenario, runs in results.items():
            seconds = statistics.median(r["first_call_s"] for r in runs)
            timed = statistics.median(r["timed"] for r in runs)
            print(f"{implementation:<15}{scenario:<10}{seconds:>16.3f}{timed:>7.0f}{seconds / cold:>9.2f}  "
                  f"{runs[-1]['best']}")


if __name__ == "__main__":
    main()
