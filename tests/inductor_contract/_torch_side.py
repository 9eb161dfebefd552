"""Run in a child process where tritone answers `import triton` (TRITONE_AS_TRITON=1):
asks torch's own code what it learns from tritone, and prints it as one JSON
object for the tests to check.

    python -m tests.inductor_contract._torch_side
"""

from __future__ import annotations

import json
import logging
import os
import sys

import torch


def tensor_for(name: str, length: int) -> torch.Tensor:
    if name == "index_ptr":  # a permutation, so the scatter it drives stays in bounds
        return torch.randperm(length, dtype=torch.int32)
    if name == "target_ptr":
        return torch.randint(0, 32, (length,), dtype=torch.int64)
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
        if hasattr(triton_kernel_wrap, "identify_accessed_tensors"):
            result = triton_kernel_wrap.identify_accessed_tensors(kernel, kwargs, {})
            reads = sorted(dep.name for dep in result.read_writes.reads)
            writes = sorted(dep.name for dep in result.read_writes.writes)
        else:  # torch before 2.13 looks for writes only
            reads = None
            writes = sorted(triton_kernel_wrap.identify_mutated_tensors(kernel, kwargs, {}))
    finally:
        logger.removeHandler(handler)
    return {"reads": reads, "writes": writes,
            "gave_up": any("assuming every input is mutated" in w for w in warnings)}


def analysis_results() -> dict:
    from tests.inductor_contract import _kernels

    results = {}
    for name, (tensors, others, _, _) in _kernels.ACCESSES.items():
        kwargs = {key: tensor_for(key, length) for key, length in tensors.items()}
        kernel = getattr(_kernels, name.removesuffix("_given"))
        results[name] = accesses(kernel, {**kwargs, **others})
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


def functionalized_autotuned_copy() -> dict:
    """As `functionalized_add`, for an `@autotune`d kernel: torch checks the
    autotuner's settings (warmup, rep, hooks, configs) before tracing it."""
    import triton
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.library import wrap_triton

    from tests.inductor_contract import _kernels

    def f(x):
        out = torch.empty_like(x)
        wrap_triton(_kernels.tuned_copy)[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, out, x.numel())
        return out

    x = torch.randn(64)
    graph = make_fx(torch.func.functionalize(f))(x)
    nodes = [node for node in graph.graph.nodes if "triton_kernel_wrapper" in str(node.target)]
    x2 = torch.randn(64)
    return {"tensors_to_clone": [list(node.kwargs.get("tensors_to_clone", ())) for node in nodes],
            "grids": [len(node.kwargs["grid"]) for node in nodes], "matches": bool(torch.equal(graph(x2), x2))}


def probes() -> dict:
    """What torch's `has_triton*` probes answer, and which triton module answers."""
    import triton
    from torch.utils import _triton as probe

    answers = {name: getattr(probe, name)() for name in (
        "has_triton_package", "has_triton", "has_triton_tma", "has_triton_tma_device",
        "has_triton_stable_tma_api", "has_triton_tensor_descriptor_host_tma", "has_triton_experimental_host_tma")}
    capability = list(torch.cuda.get_device_capability()) if torch.cuda.is_available() else None
    return {"answers": answers, "triton": triton.__name__, "cuda": torch.cuda.is_available(), "capability": capability}


def _compare(check) -> str:
    """"" when `check()` passes, else its error's first lines."""
    try:
        check()
    except Exception as error:  # reported to the test, which fails with it
        return f"{type(error).__name__}: {str(error)[:800]}"
    return ""


def helper_results() -> dict:
    """Each kernel of `_helper_kernels` (built on Inductor's triton_helpers) run on
    the CPU and compared with torch: "" where it matches, else why not."""
    from torch.testing import assert_close

    from tests.inductor_contract import _helper_kernels as kernels

    results = {}

    def welford():
        x = torch.randn(4, 64) * 3 + 1
        mean, var = torch.empty(4), torch.empty(4)
        kernels.welford_rows[(1,)](x, mean, var, R_BLOCK=4, C_BLOCK=16)
        assert_close(mean, x.mean(1), rtol=1e-5, atol=1e-5)
        assert_close(var, x.var(1, unbiased=False), rtol=1e-5, atol=1e-5)

    def sort(descending: bool):
        def check():
            x = torch.randn(4, 13)
            values, indices = torch.empty(4, 13), torch.empty(4, 13, dtype=torch.int64)
            kernels.sort_rows[(1,)](x, values, indices, 13, R_BLOCK=4, C_BLOCK=16, DESCENDING=descending)
            expected = torch.sort(x, dim=1, stable=True, descending=descending)
            assert_close(values, expected.values, rtol=0, atol=0)
            assert_close(indices, expected.indices, rtol=0, atol=0)
        return check

    def bucketize(right: bool):
        def check():
            boundaries = torch.sort(torch.randn(9)).values
            values = torch.cat([torch.randn(28), boundaries[2:6]])  # some values on a boundary
            out = torch.empty(32, dtype=torch.int64)
            kernels.bucketize[(1,)](values, boundaries, out, N_BOUNDARIES=9, BLOCK=32, RIGHT=right)
            assert_close(out, torch.bucketize(values, boundaries, right=right), rtol=0, atol=0)
        return check

    def bucketize_with_sorter(right: bool):
        def check():
            boundaries = torch.randn(9)  # unsorted: the sorter orders it
            sorter = torch.argsort(boundaries)
            values = torch.cat([torch.randn(28), boundaries[:4]])
            out = torch.empty(32, dtype=torch.int32)
            kernels.bucketize_with_sorter[(1,)](values, boundaries, sorter, out, N_BOUNDARIES=9, BLOCK=32,
                                                RIGHT=right)
            expected = torch.searchsorted(boundaries, values, right=right, sorter=sorter)
            assert_close(out.long(), expected, rtol=0, atol=0)
        return check

    def extremes():
        x = torch.randn(4, 16)
        x[1, 3] = x[1, 9] = 10.0  # ties: the first index wins, as torch.argmax
        top, bottom = torch.empty(4), torch.empty(4)
        where_top, where_bottom = torch.empty(4, dtype=torch.int32), torch.empty(4, dtype=torch.int32)
        kernels.arg_extremes[(1,)](x, top, where_top, bottom, where_bottom, R_BLOCK=4, C_BLOCK=16)
        assert_close(top, x.max(1).values, rtol=0, atol=0)
        assert_close(where_top.long(), x.argmax(1), rtol=0, atol=0)
        assert_close(bottom, x.min(1).values, rtol=0, atol=0)
        assert_close(where_bottom.long(), x.argmin(1), rtol=0, atol=0)

    def online_softmax():
        x = torch.randn(4, 32) * 4
        row_max, row_sum = torch.empty(4), torch.empty(4)
        kernels.online_softmax_rows[(1,)](x, row_max, row_sum, R_BLOCK=4, C_BLOCK=32)
        assert_close(row_max, x.max(1).values, rtol=0, atol=0)
        assert_close(row_sum, torch.exp(x - x.max(1, keepdim=True).values).sum(1), rtol=1e-5, atol=1e-5)

    def products_and_any():
        x = torch.rand(4, 8) + 0.5
        flags = (torch.rand(4, 8) < 0.1).to(torch.int8)
        flags[0] = 0
        flags[1, 5] = 1
        prod, anything = torch.empty(4), torch.empty(4, dtype=torch.int8)
        kernels.products_and_any[(1,)](x, flags, prod, anything, R_BLOCK=4, C_BLOCK=8)
        assert_close(prod, x.prod(1), rtol=1e-5, atol=1e-6)
        assert_close(anything, flags.bool().any(1).to(torch.int8), rtol=0, atol=0)

    def integer_division():
        a = torch.randint(-50, 50, (32,), dtype=torch.int32)
        b = torch.randint(1, 9, (32,), dtype=torch.int32) * torch.where(torch.rand(32) < 0.5, -1, 1).int()
        quotient, remainder = torch.empty_like(a), torch.empty_like(a)
        kernels.integer_division[(1,)](a, b, quotient, remainder, BLOCK=32)
        assert_close(quotient, torch.div(a, b, rounding_mode="floor"), rtol=0, atol=0)
        assert_close(remainder, torch.remainder(a, b), rtol=0, atol=0)

    checks = {"welford": welford, "sort_ascending": sort(False), "sort_descending": sort(True),
              "bucketize_left": bucketize(False), "bucketize_right": bucketize(True),
              "bucketize_sorter_left": bucketize_with_sorter(False),
              "bucketize_sorter_right": bucketize_with_sorter(True), "arg_extremes": extremes,
              "online_softmax": online_softmax, "products_and_any": products_and_any,
              "integer_division": integer_division}
    for name, check in checks.items():
        results[name] = _compare(check)
    return results


POINTWISE_SIGNATURE = {"in_ptr0": "*fp32", "in_ptr1": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32",
                       "XBLOCK": "constexpr"}


def compile_pointwise(target):
    """`triton.compile` of an Inductor-shaped pointwise kernel, called as
    CachingAutotuner calls it."""
    import triton
    from triton.compiler.compiler import ASTSource

    from tests.inductor_contract import _kernels

    source = ASTSource(_kernels.triton_poi_fused_add_mul_0, POINTWISE_SIGNATURE, {"XBLOCK": 16},
                       {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]],
                        (2,): [["tt.divisibility", 16]]})
    return triton.compile(source, target=target, options={"num_warps": 2, "num_stages": 1, "debug": False,
                                                          "sanitize_overflow": False, "enable_fp_fusion": True,
                                                          "launch_pdl": False, "launch_cooperative_grid": False})


def static_launcher() -> dict:
    """What torch's static launcher reads from a kernel compiled for sm_80 (no GPU
    needed): whether it accepts the kernel, and the launch facts it derives."""
    import pickle

    from torch._inductor.runtime.hints import HeuristicType
    from torch._inductor.runtime.runtime_utils import triton_cache_dir
    from torch._inductor.runtime.triton_heuristics import StaticTritonCompileResult
    from triton.backends.compiler import GPUTarget

    if os.getenv("TRITON_CACHE_DIR") is None:  # as CachingAutotuner sets it before compiling
        os.environ["TRITON_CACHE_DIR"] = triton_cache_dir(0)
    try:
        kernel = compile_pointwise(GPUTarget("cuda", 80, 32))
    except Exception as error:  # no NVRTC here: the test says so
        return {"skipped": f"{type(error).__name__}: {str(error)[:300]}"}
    static = StaticTritonCompileResult.can_statically_launch(
        kernel, {"grid_type": "Grid1D"}, {"device_type": "cuda", "device": 0}, HeuristicType.POINTWISE)
    if static is None:
        return {"accepted": False}
    with open(static.cubin_path, "rb") as file:
        on_disk = file.read()
    copy = pickle.loads(pickle.dumps(static))
    return {"accepted": True, "name": static.name, "arg_tys": static.arg_tys, "num_warps": static.num_warps,
            "shared": static.shared, "scratch": [static.has_global_scratch, static.has_profile_scratch],
            "cubin_matches": on_disk == static.cubin_raw == kernel.asm["cubin"],
            "entry_in_cubin": b".text." + static.name.encode() + b"\0" in on_disk,
            "cubin_file": os.path.basename(static.cubin_path),
            "copy": [copy.arg_tys, copy.name, copy.cubin_path, copy.cubin_raw == on_disk]}


def bundler_round_trip() -> dict:
    """A kernel compiled for sm_80 collected by the FX graph cache's TritonBundler,
    written back into another cache folder (another machine, say), and compiled
    again: tritone must find it there."""
    import tempfile

    import triton
    from torch._inductor import config
    from torch._inductor.runtime.runtime_utils import triton_hash_to_path_key
    from torch._inductor.triton_bundler import TritonBundler
    from triton.backends.compiler import GPUTarget

    hits: list[bool] = []
    saved_folder = os.environ.get("TRITON_CACHE_DIR")
    with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second, \
            config.patch(bundle_triton_into_fx_graph_cache=True), triton.knobs.compilation.scope():
        os.environ["TRITON_CACHE_DIR"] = first
        TritonBundler.begin_compile()
        try:
            kernel = compile_pointwise(GPUTarget("cuda", 80, 32))
        except Exception as error:  # no NVRTC here: the test says so
            TritonBundler.end_compile()
            return {"skipped": f"{type(error).__name__}: {str(error)[:300]}"}
        TritonBundler.put(triton_hash_to_path_key(kernel.hash), 0)
        bundle, metadata = TritonBundler.collect()
        os.environ["TRITON_CACHE_DIR"] = second
        TritonBundler.read_and_emit(bundle)
        triton.knobs.compilation.listener = lambda **event: hits.append(event["cache_hit"])
        again = compile_pointwise(GPUTarget("cuda", 80, 32))
    if saved_folder is None:
        os.environ.pop("TRITON_CACHE_DIR", None)
    else:
        os.environ["TRITON_CACHE_DIR"] = saved_folder
    return {"kernel_names": metadata.cached_kernel_names,
            "files": sorted(artifact.filename for entry in bundle.kernel_artifacts for artifact in entry.artifacts),
            "cache_hits": hits, "same_cubin": again.asm["cubin"] == kernel.asm["cubin"],
            "same_hash": again.hash == kernel.hash}


def compile_result_round_trip() -> dict:
    """A `TritonCompileResult` pickled as Inductor's compile workers send it back,
    unpickled, and launched through the launcher Inductor generates for it."""
    import pickle

    import triton
    from torch._inductor.runtime.triton_heuristics import Config, TritonCompileResult

    kernel = compile_pointwise(triton.runtime.driver.active.get_current_target())
    result = TritonCompileResult(kernel, Config({"XBLOCK": 16}, num_warps=2, num_stages=1),
                                 {"signature": POINTWISE_SIGNATURE, "constants": {"XBLOCK": 16}, "device": 0,
                                  "device_type": "cpu"}, {"grid_type": "Grid1D"})
    copy = pickle.loads(pickle.dumps(result))
    launcher = copy.make_launcher()
    x, y, out = torch.randn(40), torch.randn(40), torch.full((40,), float("nan"))
    launcher(x, y, out, 40, stream=0)  # XBLOCK is a constant: the launcher passes it itself
    return {"matches": bool(torch.allclose(out, x + y * 2.0, rtol=1e-6, atol=1e-6)),
            "n_spills": launcher.n_spills, "shared": launcher.shared}


def copied_user_kernel() -> dict:
    """Inductor's copy of a user kernel and everything it calls, written to a
    module as Inductor's generated code holds it, imported and launched."""
    import importlib.util
    import tempfile
    from pathlib import Path

    from torch._inductor.codegen.wrapper import user_defined_triton_kernel_transitive_closure_source_code

    from tests.inductor_contract import _kernels

    source = user_defined_triton_kernel_transitive_closure_source_code(_kernels.calls_helpers)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "copied_user_kernel.py"
        path.write_text("import triton\nimport triton.language as tl\n\n@triton.jit\n" + source)
        spec = importlib.util.spec_from_file_location("copied_user_kernel", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        x, out = torch.randn(16), torch.full((16,), float("nan"))
        module.calls_helpers[(1,)](x, out, BLOCK=16)
    return {"source": source, "matches": bool(torch.allclose(out, x * 3 + 1, rtol=1e-6, atol=1e-6))}


def main() -> None:
    release = [int(part) for part in torch.__version__.split("+")[0].split(".")[:2]]
    print(json.dumps({"torch": release, "analysis": analysis_results(), "functionalized": functionalized_add(),
                      "functionalized_autotuned": functionalized_autotuned_copy(), "probes": probes(),
                      "helpers": helper_results(), "static_launcher": static_launcher(),
                      "compile_result": compile_result_round_trip(), "copied_user_kernel": copied_user_kernel(),
                      "bundler": bundler_round_trip()}))


if __name__ == "__main__":
    sys.exit(main())
