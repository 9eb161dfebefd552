"""Check the fuzz generator's exclusions on a GPU: its kernels must give the
same numbers on upstream Triton's GPU and on upstream's interpreter (within
each case's agreement). Not a test: run it on a machine with an NVIDIA GPU and
upstream Triton,

    python -m tests.differential.validate_fuzz_on_gpu SEED [SEED ...]

It prints every mismatch with the kernel's source and ends with the count.
Run on an H200 (Triton 3.6.0, torch 2.11) for seeds 11, 21, 22, 23, 31:
2500 kernels, no mismatch.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
from pathlib import Path

CASES_PER_SEED = 500
WORKERS = 14


def _run_on_gpu(job: tuple[str, list]) -> dict:
    path, cases = job
    os.environ.pop("TRITON_INTERPRET", None)
    import triton
    import triton.language as tl

    from tests.differential import _fuzz
    from tests.kernels._loader import load_kernels

    module = load_kernels(triton, tl, path)
    results = {}
    for index, inputs in cases:
        try:
            outputs = module.run_fuzz(**_fuzz.to_device(inputs, "cuda"))
            results[index] = {"outputs": {k: v.cpu() for k, v in outputs.items()}}
        except Exception as error:  # noqa: BLE001 - reported with the case
            results[index] = {"error": repr(error)}
    return results


def main(seeds: list[int]) -> int:
    from tests.differential import _fuzz
    from tests.differential._harness import run_on_upstream

    mismatches = 0
    for seed in seeds:
        cases = [_fuzz.generate_case(seed, i) for i in range(CASES_PER_SEED)]
        path = str(_fuzz.write_module(cases, Path(tempfile.mkdtemp()) / f"fuzz_kernels_{seed}.py"))
        interpreted = run_on_upstream(
            [{"id": c.index, "source": path, "launcher": "run_fuzz", "inputs": c.inputs} for c in cases])
        jobs = [(path, [(c.index, c.inputs) for c in cases[k::WORKERS]]) for k in range(WORKERS)]
        on_gpu: dict = {}
        with multiprocessing.get_context("spawn").Pool(WORKERS) as pool:
            for part in pool.map(_run_on_gpu, jobs):
                on_gpu.update(part)
        for case in cases:
            gpu, interp = on_gpu[case.index], interpreted[case.index]
            try:
                assert "error" not in gpu and "error" not in interp, (gpu.get("error"), interp.get("error"))
                case.agreement.check(gpu["outputs"]["out"], interp["outputs"]["out"], "out")
            except AssertionError as error:
                mismatches += 1
                print(f"MISMATCH {_fuzz.describe(case, seed)}\n{error}\n")
        print(f"seed {seed}: {mismatches} mismatches so far", flush=True)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main([int(arg) for arg in sys.argv[1:]]))
