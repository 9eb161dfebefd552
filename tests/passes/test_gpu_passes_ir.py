"""The IR of the real kernels of tests/kernels after the frontend passes and the
CUDA backend's GPU passes (layouts, `convert_layout`, shared memory) for sm_90,
sm_80, sm_75 and sm_61 (each dot path): it verifies after every GPU pass, and
its text parses back to a module that prints the same and verifies too.

The kernels are specialised exactly as the runtime specialises them: every
launcher of the end-to-end cases, and of the per-op cases that move data
between layouts (shapes, joins, gathers, histograms, sorts, dots, memory
ops), runs once with every launch turned into a warm-up (compile only), and the
specialisations the runtime compiled (signature, constexprs, divisibility)
are taken from the compiled kernels.
"""

from __future__ import annotations

import numpy as np
import pytest

import tritone
import tritone.language as tl
from tests.kernels._cases import KERNEL_CASES
from tests.kernels._data import seed_for
from tests.kernels._loader import KERNELS_PATH, OPS_PATH, load_kernels
from tests.kernels._op_cases_blocks import BLOCK_CASES
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.lowering import GPU_PASSES
from tritone.compiler.compiler import ASTSource
from tritone.frontend import ast_to_ir
from tritone.ir import parse_module, print_module, verify
from tritone.passes import run_pipeline
from tritone.runtime.jit import JITFunction

TARGETS = (90, 80, 75, 61)
# The per-op launchers whose kernels are not elementwise sweeps over dtypes
# (reductions and atomics are covered by the end-to-end kernels: softmax,
# layer norm, argmax, scans, the histogram).
_LAYOUT_MOVING_LAUNCHERS = frozenset(c.launcher for c in BLOCK_CASES) - {"run_reduce", "run_atomic"}


def _compiled_specialisations(path, cases) -> list[tuple[ASTSource, object]]:
    """(source, options) of every kernel the launchers of `cases` compile: each
    `kernel[grid](...)` becomes `kernel.warmup(..., grid=grid)` (compile, do not
    run), in the interpreter so that no GPU is touched."""
    kernels = load_kernels(tritone, tl, path)
    compiled = []

    def warm_up_instead(kernel, grid):
        def launcher(*args, **kwargs):
            compiled.append(kernel.warmup(*args, grid=grid, **kwargs))

        return launcher

    with pytest.MonkeyPatch.context() as patch:
        # Through the environment: undoing a setattr would leave the knob assigned (False) for later tests.
        patch.setenv("TRITON_INTERPRET", "1")
        patch.delenv("TRITONE_INTERPRET", raising=False)
        patch.setattr(JITFunction, "__getitem__", warm_up_instead)
        for case in cases:
            getattr(kernels, case.launcher)(**case.make_inputs(np.random.default_rng(seed_for(case.name))))
    unique = {(kernel.src.hash(), kernel.options): (kernel.src, kernel.options) for kernel in compiled}
    return list(unique.values())


@pytest.fixture(scope="module")
def specialisations() -> list[tuple[ASTSource, object]]:
    block_cases = [c for c in BLOCK_CASES if c.launcher in _LAYOUT_MOVING_LAUNCHERS]
    return _compiled_specialisations(KERNELS_PATH, KERNEL_CASES) + _compiled_specialisations(OPS_PATH, block_cases)


def _gpu_module(src: ASTSource, options, target: int):
    """`src` through the frontend, its passes and the GPU passes for sm_`target`,
    verified after every pass."""
    signature, constexprs, divisible = src.frontend_inputs()
    frontend_options = {**options.as_dict(), "target": GPUTarget("cuda", target, 32), "divisible_by_16": divisible}
    module = run_pipeline(ast_to_ir(src.fn, signature, constexprs, frontend_options), frontend_options)
    return run_pipeline(module, {"num_warps": options.num_warps, "target": target}, passes=GPU_PASSES)


def test_the_real_kernels_are_all_here(specialisations):
    names = {src.name for src, _ in specialisations}
    assert {"add_kernel", "softmax_kernel", "layer_norm_fwd_kernel", "layer_norm_bwd_dx_kernel", "matmul_kernel",
            "scan_kernel", "argmax_kernel", "collatz_kernel", "atomic_histogram_kernel", "nested_helpers_kernel",
            "unary_kernel", "binary_kernel", "unary_pair_kernel", "masked_load_kernel"} <= names
    divisible = [src for src, _ in specialisations if src.frontend_inputs()[2]]
    assert divisible, "no kernel was specialised with a divisible-by-16 argument"


@pytest.mark.parametrize("target", TARGETS)
def test_gpu_ir_of_real_kernels_verifies_and_round_trips(specialisations, target):
    converts = with_layouts = 0
    for src, options in specialisations:
        module = _gpu_module(src, options, target)
        text = print_module(module)
        again = parse_module(text)
        verify(again)
        assert print_module(again) == text, f"{src.name}: the text of its GPU IR does not round-trip"
        assert again.attrs["shared"] == module.attrs["shared"]
        converts += text.count(" = convert_layout(")
        with_layouts += ", BlockedLayout(" in text
    assert with_layouts > len(specialisations) // 2, "the GPU passes gave hardly any block a layout"
    assert converts > 0, "no kernel needed a layout conversion: the test lost its point"
