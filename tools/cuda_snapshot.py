"""Write the CUDA C++ that tritone generates for a fixed set of kernels, for
sm_61, sm_75, sm_80 and sm_90, one file per kernel and target, so that the
output of two source trees can be compared: a change meant to leave the
generated code alone (a refactoring) must leave every file the same.

    python tools/cuda_snapshot.py OUT                   # this tree's snapshot into the folder OUT
    python tools/cuda_snapshot.py --against OTHER_TREE  # this tree's and OTHER_TREE's, compared

The kernels: every specialisation the end-to-end kernels of tests/kernels and
its layout-moving per-op kernels compile (as test_gpu_passes_ir.py collects
them, in the interpreter, without a GPU), the dot kernels of
tests/backends/cuda/test_dot_compile.py in each dtype and on tiles below the
mma instruction shape, and the examples' kernels. A kernel the tree refuses
gives a `.err` file with the error instead. Paths of the tree in the output
(`#line` directives, messages) are written as `<tree>`, so two checkouts
compare equal. With `--against`, each tree runs in a process of its own (its
`tritone` and `tests` first on the path); the exit status is 1 when the
snapshots differ, and the differing files are listed.
"""

from __future__ import annotations

import argparse
import ast
import filecmp
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

TARGETS = (61, 75, 80, 90)
ROOT = Path(__file__).resolve().parent.parent


def _dot_jobs(tree: Path) -> list[tuple[str, object, object]]:
    """(name, ASTSource, KernelOptions) of the dot kernels."""
    sys.path.insert(0, str(tree / "tests" / "backends" / "cuda"))
    import test_dot_compile as dots

    import tritone.language as tl
    from tritone.compiler.compiler import ASTSource
    from tritone.ir.target import KernelOptions

    jobs = []

    def add(name, fn, signature, constexprs, num_warps=4):
        divisible = [n for n, ty in signature.items() if ty.startswith("*") or ty.startswith("i")]
        src = ASTSource(fn, signature, constexprs, {n: [["tt.divisibility", 16]] for n in divisible})
        jobs.append((name, src, KernelOptions.from_dict({"num_warps": num_warps, "num_stages": 3})))

    add("dtype_zoo", dots.dtype_zoo_kernel, dots.ZOO_SIG, {})
    add("matmul_leaky_relu", dots.matmul_kernel, dots.MATMUL_SIG, dots.matmul_constexprs(activation="leaky_relu"))
    add("matmul_128x128_8_warps", dots.matmul_kernel, dots.MATMUL_SIG, dots.matmul_constexprs(128, 128, 32), 8)
    add("attention", dots.attention_kernel, dots.ATTENTION_SIG,
        {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 32, "CAUSAL": True})
    add("attention_block_pointers", dots.attention_block_ptr_kernel, dots.ATTENTION_BLOCK_PTR_SIG,
        {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 32})
    add("batched_dot", dots.batched_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"},
        {"B": 2, "M": 16, "N": 16, "K": 16})
    for dtype, m, n, k, precision in (("fp16", 8, 8, 16, "tf32"), ("fp16", 16, 8, 16, "tf32"),
                                      ("fp16", 16, 16, 16, "tf32"), ("i8", 32, 32, 32, "tf32"),
                                      ("fp32", 32, 32, 16, "tf32x3"), ("bf16", 64, 32, 32, "tf32"),
                                      ("fp8e5", 32, 32, 32, "tf32")):
        acc = "i32" if dtype == "i8" else "fp32"
        signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{acc}", "stride_am": "i32",
                     "stride_bn": "i32"}
        constexprs = {"M": m, "N": n, "K": k, "TRANS_A": False, "TRANS_B": True, "PRECISION": precision,
                      "ACC": tl.int32 if acc == "i32" else tl.float32, "stride_ak": 1, "stride_bk": 1}
        add(f"dot_{dtype}_{m}x{n}x{k}_{precision}", dots.dot_kernel, signature, constexprs)
    return jobs


def _example_jobs(tree: Path) -> list[tuple[str, object, object]]:
    """The examples' @jit kernels (the scripts themselves are not run: they launch)."""
    from tritone.compiler.compiler import ASTSource
    from tritone.ir.target import KernelOptions

    examples = {
        "vector_add": ({"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"},
                       {"BLOCK_SIZE": 1024}),
        "fused_softmax": ({"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                           "output_row_stride": "i32", "n_cols": "i32"}, {"BLOCK_SIZE": 1024}),
    }
    jobs = []
    for example, (signature, constexprs) in examples.items():
        path = tree / "examples" / f"{example}.py"
        parsed = ast.parse(path.read_text(encoding="utf-8"))
        kept = [node for node in parsed.body if isinstance(node, (ast.Import, ast.ImportFrom))
                or (isinstance(node, ast.FunctionDef) and node.decorator_list)]
        module = types.ModuleType(f"_snapshot_example_{example}")
        module.__file__ = str(path)
        sys.modules[module.__name__] = module  # @jit reads its function's source through the module
        exec(compile(ast.Module(kept, []), str(path), "exec"), module.__dict__)
        for node in kept:
            if isinstance(node, ast.FunctionDef):
                src = ASTSource(module.__dict__[node.name], signature, constexprs, {})
                jobs.append((f"example_{example}_{node.name}", src, KernelOptions.from_dict({"num_warps": 4})))
    return jobs


def snapshot(out: Path) -> int:
    """Write the snapshot of this script's tree (or of TRITONE_SNAPSHOT_TREE's,
    set by `--against` for a tree without this script) into `out`; the number
    of files."""
    tree = Path(os.environ.get("TRITONE_SNAPSHOT_TREE", ROOT)).resolve()
    sys.path.insert(0, str(tree))
    os.chdir(tree)
    from tests.kernels._cases import KERNEL_CASES
    from tests.kernels._loader import KERNELS_PATH, OPS_PATH
    from tests.kernels._op_cases_blocks import BLOCK_CASES
    from tests.passes.test_gpu_passes_ir import _LAYOUT_MOVING_LAUNCHERS, _compiled_specialisations
    from tritone.backends.compiler import GPUTarget
    from tritone.backends.cuda.lowering import generate_cuda
    from tritone.compiler.compiler import make_ir

    specialisations = _compiled_specialisations(KERNELS_PATH, KERNEL_CASES)
    specialisations += _compiled_specialisations(
        OPS_PATH, [case for case in BLOCK_CASES if case.launcher in _LAYOUT_MOVING_LAUNCHERS])
    jobs = [(f"{src.name}_{src.hash()[:8]}", src, options) for src, options in specialisations]
    jobs += _dot_jobs(tree) + _example_jobs(tree)
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, src, options in jobs:
        for target in TARGETS:
            try:
                module = make_ir(src, GPUTarget("cuda", target, 32), options)
                source, _, metadata = generate_cuda(module, target, options)
                text, suffix = f"{source}\n// metadata: {sorted(metadata.items())!r}\n", ".cu"
            except Exception as error:  # a refused kernel is part of the snapshot too
                text, suffix = f"{type(error).__name__}: {error}\n", ".err"
            (out / f"{name}.sm{target}{suffix}").write_text(text.replace(str(tree), "<tree>"), encoding="utf-8")
            count += 1
    return count


def _snapshot_of(tree: Path, out: Path) -> None:
    """Run `tree`'s copy of this script (this one where the tree has none) in a
    process whose imports come from `tree`."""
    script = tree / "tools" / "cuda_snapshot.py"
    if not script.exists():
        script = Path(__file__).resolve()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]),
               TRITONE_SNAPSHOT_TREE=str(tree))
    subprocess.run([sys.executable, str(script), str(out)], check=True, env=env, cwd=str(tree))


def compare(this: Path, other: Path, workdir: Path | None = None) -> list[str]:
    """The files whose contents differ between the snapshots of the trees `this`
    and `other` (or that only one of them has); the snapshots are written into
    `workdir`/this and `workdir`/other (a temporary folder when None)."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="cuda-snapshot-") as scratch:
            return compare(this, other, Path(scratch))
    mine, theirs = workdir / "this", workdir / "other"
    _snapshot_of(this, mine)
    _snapshot_of(other, theirs)
    names = sorted({p.name for p in mine.iterdir()} | {p.name for p in theirs.iterdir()})
    return [name for name in names if not ((mine / name).exists() and (theirs / name).exists()
                                           and filecmp.cmp(mine / name, theirs / name, shallow=False))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, help="folder to write this tree's snapshot into")
    parser.add_argument("--against", type=Path, help="another checkout of tritone to compare this tree with")
    args = parser.parse_args(argv)
    if args.against is not None:
        differing = compare(ROOT, args.against.resolve())
        for name in differing:
            print(f"differs: {name}")
        print("identical" if not differing else f"{len(differing)} files differ")
        return 1 if differing else 0
    if args.out is None:
        parser.error("give a folder to write the snapshot into, or --against another tree")
    print(f"{snapshot(args.out.resolve())} files in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
