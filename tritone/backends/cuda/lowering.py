"""The CUDA backend: IR (after the frontend passes) -> CUDA C++ text for NVRTC.

The whole lowering of a kernel, in order (`generate_cuda`):

1. the frontend's passes (`passes.FRONTEND_PASSES`: inline, map_elementwise,
   fold, CSE, DCE), run by the compiler before the IR is cached as "ttir";
2. `GPU_PASSES`, through the same pass runner (`passes.run_pipeline`: the IR
   verified after each pass under `TRITONE_VERIFY_IR` or `TRITON_DEBUG`,
   printed with its layouts after each pass under `TRITONE_DUMP_IR=1`):
   - `tma` (`tma.py`): on sm_90+, loads and stores of host tensor
     descriptors as TMA copies (`tma_load`, `tma_store`);
   - `lower_descriptors` (`passes/lower_descriptors.py`): the other tensor
     descriptor ops as pointer code;
   - `accumulate` (`dot/accumulate.py`): `acc + dot(a, b, 0)` as
     `dot(a, b, acc)` on every dot path, as upstream combines it;
   - `fp_contract`: float adds and subs of a product as fmas where upstream's
     LLVM fuses them (unless `enable_fp_fusion=False`);
   - `pointer_steps`: pointer blocks a loop advances by one uniform step a
     trip become their start plus a carried scalar offset;
   - `layout_pass`: a distributed layout for every block value (coalesced for
     memory accesses, the layouts the dots' implementations ask for),
     `convert_layout` where producers and consumers disagree, and the clean-up
     of needless conversions;
   - `dot_operands` (`dot/operands.py`): each dot operand into registers in a
     dot-operand layout or into a shared tile;
   - `pipeline`: loads feeding dots in loops become `cp.async` copies into
     multi-stage shared buffers, issued `num_stages - 1` trips ahead (8.0+);
   - `smem`: shared memory for tiles and scratch, by liveness;
  - `warp_specialize`: on sm_90+, a TMA-pipelined loop under
    `tl.range(..., warp_specialize=True)` gets a producer warp issuing its
    copies, where that costs no blocks per multiprocessor (shared memory
    placed again after);
3. `codegen`: per-thread C++ over register arrays, after the prelude.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Mapping

from tritone import knobs
from tritone.errors import OutOfResources
from tritone.ir.core import Module
from tritone.passes import lower_descriptors, run_pipeline

from . import fp_contract, layout_pass, pipeline, pointer_steps, smem, tma, warp_specialize
from .codegen import generate_kernel
from .codegen_base import CodegenError, CodegenOptions
from .dot import accumulate, operands

__all__ = ["GPU_PASSES", "generate_cuda", "CodegenError", "CodegenOptions", "max_shared_memory"]

# The GPU passes, in the order they run (after the frontend's passes). A new
# pass is one module with `run(module, ctx)` and one entry here.
GPU_PASSES: tuple[ModuleType, ...] = (tma, lower_descriptors, accumulate, fp_contract, pointer_steps, layout_pass,
                                      operands, pipeline, smem, warp_specialize)

# Largest dynamic shared memory per block (opt-in), bytes, by compute capability (PTX_FACTS 11).
_MAX_SHARED = {60: 49152, 61: 49152, 62: 49152, 70: 98304, 72: 98304, 75: 65536, 80: 166912, 86: 101376,
               87: 166912, 89: 101376, 90: 232448, 100: 232448, 120: 101376}


def max_shared_memory(target: int) -> int:
    """The most dynamic shared memory one CTA may use on compute capability `target`."""
    known = [arch for arch in _MAX_SHARED if arch <= target]
    return _MAX_SHARED[max(known)] if known else 49152


def _option(options: Any, name: str, default: Any) -> Any:
    if options is None:
        return default
    if isinstance(options, Mapping):
        return options.get(name, default)
    return getattr(options, name, default)


def generate_cuda(module: Module, target: int, options: Any = None, *, dump_ir: bool = False) -> tuple[str, str, dict]:
    """Lower `module` (the frontend passes done) for compute capability `target`
    (80 = sm_80) and return (CUDA C++ source, kernel name, metadata).

    `options` is a `KernelOptions`, a mapping or None: `num_warps` (the module's
    `num_warps` attribute wins when set), `enable_fp_fusion`, `debug` (device
    asserts), `maxnreg`, `enable_reflect_ftz`. With
    `dump_ir` the IR is printed to stderr after every GPU pass. The module
    is rewritten in place by the GPU passes. Metadata: `name`, `num_warps`,
    `threads`, `shared` (dynamic shared memory bytes to launch with), `target`,
    `params` ((name, C type, bytes) per kernel argument). Raises `OutOfResources`
    when the kernel needs more shared memory than the target has, and
    `IRVerificationError` naming the pass when, verifying
    (`knobs.verify_each_pass()`), a pass leaves broken IR."""
    num_warps = int(module.attrs.get("num_warps", _option(options, "num_warps", 4)))
    module.attrs["num_warps"] = num_warps
    codegen_options = CodegenOptions(num_warps=num_warps,
                                     enable_fp_fusion=bool(_option(options, "enable_fp_fusion", True)),
                                     debug=bool(_option(options, "debug", False)),
                                     maxnreg=_option(options, "maxnreg", None),
                                     enable_reflect_ftz=bool(_option(options, "enable_reflect_ftz", True)))
    verify = knobs.verify_each_pass()
    run_pipeline(module, {"num_warps": num_warps, "target": target, "tma": knobs.nvidia.tma,
                          "num_ctas": int(_option(options, "num_ctas", 1) or 1),
                          "enable_fp_fusion": codegen_options.enable_fp_fusion,
                          "max_shared": max_shared_memory(target)}, passes=GPU_PASSES,
                 dump=dump_ir, verify=verify)
    if verify:
        for fn in module.functions.values():
            layout_pass.verify_layouts(fn)
    shared = int(module.attrs.get("shared", 0))
    if shared > max_shared_memory(target):
        raise OutOfResources(shared, max_shared_memory(target), "shared memory")
    return generate_kernel(module, target, codegen_options)
