"""Run in a child process where tritone answers `import triton` (TRITONE_AS_TRITON=1):
asks torch's own code what it learns from tritone, and prints it as one JSON
object for the tests to check.

    python -m tests.inductor_contract._torch_side
"""

from __future__ import annotations

import json
import logging
import sys

import torch


def tensor_for(name: str, length: int) -> torch.Tensor:
    if name == "index_ptr":  # a permutation, so the scatter it drives stays in bounds
        return torch.randperm(length, dtype=torch.int32)
    if name in ("lock_ptr", "count_ptr"):
        return torch.zeros(length, dtype=torch.int32)
    return torch.randn(length)


def accesses(kernel, kwargs: dict) -> dict:
    """What torch's mutation analysis finds: arguments read, arguments written,
    and whether it gave up (logging its warning) and assumed every argument."""
    from torch._higher_order_ops import triton_kernel_wrap

    warnings: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warnings.append(record.getMessage())

    logger = triton_kernel_wrap.log  # the module logs through torch._dynamo's logger
    handler = Collect(logging.WARNING)
    logger.addHandler(handler)
    try:
        result = triton_kernel_wrap.identify_accessed_tensors(kernel, kwargs, {})
    finally:
        logger.removeHandler(handler)
    return {"reads": sorted(dep.name for dep in result.read_writes.reads),
            "writes": sorted(dep.name for dep in result.read_writes.writes),
            "gave_up": any("assuming every input is mutated" in w for w in warnings)}


def analysis_results() -> dict:
    from tests.inductor_contract import _kernels

    results = {}
    for name, (tensors, others, _, _) in _kernels.ACCESSES.items():
        kwargs = {key: tensor_for(key, length) for key, length in tensors.items()}
        results[name] = accesses(getattr(_kernels, name), {**kwargs, **others})
    x, out = torch.randn(16), torch.empty(16)
    results["impure_asm"] = accesses(_kernels.impure_asm, {"x_ptr": x, "out_ptr": out, "BLOCK": 16})
    return results


def functionalized_add() -> dict:
    """`make_fx(functionalize(f))` of a function launching a user kernel through
    `wrap_triton`: the tensors the graph clones before the kernel, and whether
    running the graph gives the kernel's result."""
    import triton
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.library import wrap_triton

    from tests.inductor_contract import _kernels

    def f(x, y):
        out = torch.empty_like(x)
        wrap_triton(_kernels.add)[(triton.cdiv(x.numel(), 16),)](x, y, out, x.numel(), BLOCK=16)
        return out

    x, y = torch.randn(40), torch.randn(40)
    graph = make_fx(torch.func.functionalize(f))(x, y)
    nodes = [node for node in graph.graph.nodes if "triton_kernel_wrapper" in str(node.target)]
    x2, y2 = torch.randn(40), torch.randn(40)
    return {"wrappers": [str(node.target) for node in nodes],
            "tensors_to_clone": [list(node.kwargs.get("tensors_to_clone", ())) for node in nodes],
            "matches": bool(torch.allclose(graph(x2, y2), x2 + y2, rtol=1e-6, atol=1e-6))}


def probes() -> dict:
    """What torch's `has_triton*` probes answer, and which triton module answers."""
    import triton
    from torch.utils import _triton as probe

    answers = {name: getattr(probe, name)() for name in (
        "has_triton_package", "has_triton", "has_triton_tma", "has_triton_tma_device",
        "has_triton_stable_tma_api", "has_triton_tensor_descriptor_host_tma", "has_triton_experimental_host_tma")}
    return {"answers": answers, "triton": triton.__name__, "cuda": torch.cuda.is_available()}


def main() -> None:
    print(json.dumps({"analysis": analysis_results(), "functionalized": functionalized_add(), "probes": probes()}))


if __name__ == "__main__":
    sys.exit(main())
