"""Run kernels on upstream Triton's interpreter, in a process of its own.

    python -m tests.differential._upstream_runner JOBS_FILE RESULTS_FILE

JOBS_FILE (written with `torch.save`) holds a list of jobs, each a dict with
`id`, `source` (a kernel file for `tests.kernels._loader.load_kernels`),
`launcher` (a host function of that file) and `inputs` (its keyword
arguments: CPU tensors and Python values). RESULTS_FILE receives
`{id: {"outputs": {name: tensor}} or {"error": traceback text}}`.

Exit status 3, with the reason on stderr, means `import triton` failed (or
gave tritone's own drop-in alias): the differential tests are then skipped. Why a subprocess, and the one shim applied
to upstream's interpreter, are explained in tests/kernels/_loader.py.
"""

from __future__ import annotations

import sys
import traceback

IMPORT_FAILED = 3


def main(jobs_path: str, results_path: str) -> int:
    from tests.kernels._loader import load_kernels, use_upstream_interpreter

    use_upstream_interpreter()
    try:
        import triton
        import triton.language as tl
    except Exception as error:  # noqa: BLE001 - any import failure means "no upstream here"
        print(f"import triton failed: {type(error).__name__}: {error}", file=sys.stderr)
        return IMPORT_FAILED
    if hasattr(triton, "__tritone_version__"):
        # tritone's drop-in alias answers to `import triton` when switched on:
        # comparing tritone with itself would prove nothing.
        print("`import triton` gives tritone's drop-in alias here, not upstream Triton", file=sys.stderr)
        return IMPORT_FAILED
    import torch

    jobs = torch.load(jobs_path, weights_only=False)
    modules = {}
    results = {}
    for job in jobs:
        try:
            if job["source"] not in modules:
                modules[job["source"]] = load_kernels(triton, tl, job["source"])
            outputs = getattr(modules[job["source"]], job["launcher"])(**job["inputs"])
            results[job["id"]] = {"outputs": {name: t.cpu() for name, t in outputs.items()}}
        except Exception:  # noqa: BLE001 - reported per job to the parent
            results[job["id"]] = {"error": traceback.format_exc()}
    torch.save(results, results_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
