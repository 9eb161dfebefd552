"""Kernels named by this module, so that they pickle by name, and the function a
`multiprocessing` spawn child runs on objects pickled by the tests in
test_pickling.py."""

from __future__ import annotations

import os
import pickle
from typing import Any

import numpy as np

import tritone
import tritone.language as tl

BLOCK = 32


@tritone.jit
def scaled_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, alpha * x + y, mask=mask)


@tritone.autotune(configs=[tritone.Config({"BLOCK": 16}), tritone.Config({"BLOCK": 64})], key=["n"])
@tritone.jit
def tuned_scale(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, alpha * tl.load(x_ptr + offsets, mask=mask), mask=mask)


def block_of(args: dict[str, Any]) -> int:
    """A heuristic that pickles (a module-level function, not a lambda)."""
    return 64 if args["n"] > 64 else 16


@tritone.heuristics(values={"BLOCK": block_of})
@tritone.jit
def heuristic_scale(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, alpha * tl.load(x_ptr + offsets, mask=mask), mask=mask)


def grid_for(n: int):
    return lambda meta: (tritone.cdiv(n, meta["BLOCK"]),)


def use_in_child(payload: bytes, x: np.ndarray, y: np.ndarray, alpha: float) -> dict[str, Any]:
    """Run in a spawn child: unpickle `payload` (a dict of tritone objects
    pickled by the parent) and use each object, returning what it computed."""
    # The child runs kernels in the interpreter on numpy arrays, GPU or not.
    os.environ["TRITON_INTERPRET"] = "1"
    objects = pickle.loads(payload)
    n = x.size
    results: dict[str, Any] = {}

    out = np.full_like(x, np.nan)
    objects["kernel"][(tritone.cdiv(n, BLOCK),)](x, y, out, n, alpha, BLOCK=BLOCK)
    results["kernel"] = out

    out = np.full_like(x, np.nan)
    objects["autotuner"][grid_for(n)](x, out, n, alpha)
    results["autotuner"] = out
    results["autotuner_configs"] = objects["autotuner"].configs

    out = np.full_like(x, np.nan)
    objects["heuristics"][grid_for(n)](x, out, n, alpha)
    results["heuristics"] = out

    compiled = objects["compiled"]
    compiled._init_handles()
    out = np.full_like(x, np.nan)
    compiled.run(tritone.cdiv(n, BLOCK), 1, 1, None, compiled.function, compiled.packed_metadata, None, None, None,
                 x, y, out, n, alpha, BLOCK)
    results["compiled"] = out

    cleared = objects["cleared_kernel"]
    results["cleared"] = (cleared.fn, cleared.repr(None), cleared.src, cleared.arg_names, cleared.cache_key)
    results["dtypes"] = objects["dtypes"]
    results["is_module_kernel"] = objects["kernel"] is scaled_add
    return results
