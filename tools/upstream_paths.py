"""Write docs/UPSTREAM_PATHS.md: every public module path of the installed
upstream Triton wheel and whether tritone provides it.

    python tools/upstream_paths.py            # rewrite docs/UPSTREAM_PATHS.md
    python tools/upstream_paths.py --check    # exit 1 when the file is out of date

Upstream's modules are read as source (with `ast`, nothing of upstream is
imported, so no GPU is needed); tritone's are imported. A module is *provided*
when `tritone.<rest>` imports and has every public name of upstream's
(`__all__`, else its top-level definitions and, for packages, what they import
from their own submodules), *partial* when names are missing (listed), and
*not provided* when it does not import (the reason is written below).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "UPSTREAM_PATHS.md"

# Why a module path is not provided, by the longest matching prefix.
NOT_PROVIDED = {
    "triton._filecheck": "FileCheck tests of Triton's MLIR output; tritone's IR is its own text, with its own tests",
    "triton.backends.amd": "no AMD target",
    "triton.backends.nvidia": "the CUDA backend is `tritone.backends.cuda`; `backends.backends['nvidia']` holds "
                              "its compiler and driver classes",
    "triton.compiler.code_generator": "the frontend is `tritone.frontend` (Python AST to tritone's IR)",
    "triton.compiler.make_launcher": "launchers are Python (`backends.cuda.launch_plan`); nothing is compiled "
                                     "for the host",
    "triton.experimental": "Gluon (the explicit-layout dialect) is not implemented",
    "triton.language.extra.cuda.gdc": "its functions (`gdc_wait`, `gdc_launch_dependents`) are in "
                                      "`tl.extra.cuda` itself",
    "triton.language.extra.cuda.utils": "its functions (`globaltimer`, `smid`, `num_threads`, `num_warps`) are in "
                                        "`tl.extra.cuda` itself",
    "triton.language.extra.hip": "no AMD target",
    "triton.profiler.flags": "the profiler's state is `profiler._recorder`; there is no `proton` command",
    "triton.profiler.hooks": "the launch hooks are `profiler._recorder`'s; no instrumentation hook",
    "triton.profiler.language": "device-side scopes need kernel instrumentation, which tritone's profiler has not",
    "triton.profiler.mode": "PC sampling and instrumentation modes need CUPTI or instrumented kernels",
    "triton.profiler.proton": "the `proton` command (profiling a whole script) is not provided",
    "triton.profiler.specs": "no per-architecture peak figures, so the viewer has no `util`",
    "triton.runtime._async_compile": "compilation is synchronous; TorchInductor's parallel compile uses processes",
    "triton.runtime.build": "builds C extensions with a host compiler; tritone compiles no host code",
    "triton.tools.build_extern": "generates bindings of LLVM bitcode libraries; NVRTC links libdevice itself",
    "triton.tools.compile": "ahead-of-time C launchers need a host compiler",
    "triton.tools.disasm": "wraps `cuobjdump`/`nvdisasm` from a CUDA toolkit, which tritone does not need",
    "triton.tools.link": "links ahead-of-time C launchers (`tools.compile`)",
    "triton.tools.ragged_tma": "the ragged tensor-descriptor helpers are not provided",
    "triton.tools.triton_to_gluon_translater": "Gluon is not implemented",
}
SHOWN_MISSING = 12

# Modules of upstream's native extension, which have no source to list names from: what tritone offers of them.
NATIVE = {
    "triton._C.libtriton": "only `ir` and `nvidia`; the other bindings (`passes`, `llvm`, `native_specialize_impl`, "
                           "...) drive upstream's C++ compiler, which tritone has not",
    "triton._C.libtriton.nvidia": "only `cublas` (`CublasLt`: `matmul`, `gemm`; cuBLASLt through ctypes); the "
                                  "others (`passes`, `load_dialects`, ...) drive upstream's C++ compiler",
    "triton._C.libtriton.ir": "only what code outside Triton walks: `context`, `load_dialects` and a read-only "
                              "`module` over tritone's IR (`walk`, operations, values, blocks, regions)",
}


def upstream_root() -> Path:
    spec = importlib.util.find_spec("triton")
    if spec is None or spec.origin is None:
        raise SystemExit("upstream Triton is not installed (pip install triton==3.6.0)")
    root = Path(spec.origin).parent
    if (root / "selftest.py").exists() or not (root / "_C").exists():
        raise SystemExit(f"{root} is not upstream Triton's wheel (is `import triton` tritone?)")
    return root


def module_paths(root: Path) -> dict[str, Path]:
    """Dotted path -> source file of every Python module of the wheel, `_C` left out."""
    paths = {}
    for source in sorted(root.rglob("*.py")):
        parts = source.relative_to(root).with_suffix("").parts
        if parts[0] == "_C" or "__pycache__" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        paths[".".join(("triton", *parts))] = source
    return paths


def public_names(source: Path) -> list[str]:
    """`__all__` of the module, else the public names it defines at top level
    (and, in a package, those it imports from its own submodules)."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    names: dict[str, None] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return sorted(ast.literal_eval(node.value))
            except ValueError:
                break
    is_package = source.name == "__init__.py"
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = None
        elif isinstance(node, ast.Assign):
            if _is_type_variable(node.value):
                continue
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = None
        elif isinstance(node, ast.ImportFrom) and is_package and node.level == 1:
            for alias in node.names:
                names[alias.asname or alias.name] = None
    return sorted(name for name in names if not name.startswith("_") and name != "*")


def _is_type_variable(value: ast.expr) -> bool:
    """`T = TypeVar("T")`: typing machinery, not an API."""
    if not isinstance(value, ast.Call):
        return False
    name = value.func.id if isinstance(value.func, ast.Name) else getattr(value.func, "attr", "")
    return name in ("TypeVar", "ParamSpec", "NewType")


def not_provided_reason(path: str) -> str:
    matches = [prefix for prefix in NOT_PROVIDED if path == prefix or path.startswith(prefix + ".")]
    return NOT_PROVIDED[max(matches, key=len)] if matches else "not written yet"


def status_of(path: str, source: Path | None) -> tuple[str, str]:
    """`(status, note)` of one upstream module path."""
    ours = "tritone" + path[len("triton"):]
    try:
        module = importlib.import_module(ours)
    except ImportError:
        return "not provided", not_provided_reason(path)
    if path in NATIVE:
        return "partial", NATIVE[path]
    if source is None:
        return "provided", ""
    missing = [name for name in public_names(source) if not hasattr(module, name)]
    if not missing:
        return "provided", ""
    shown = ", ".join(f"`{name}`" for name in missing[:SHOWN_MISSING])
    more = f" and {len(missing) - SHOWN_MISSING} more" if len(missing) > SHOWN_MISSING else ""
    return "partial", f"missing {shown}{more}"


def table() -> str:
    sys.path.insert(0, str(ROOT))
    root = upstream_root()
    paths: dict[str, Path | None] = {**module_paths(root), **dict.fromkeys(NATIVE)}
    version = "unknown"
    for line in (root / "__init__.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("__version__"):
            version = line.split("=", 1)[1].strip().strip("'\"")
    lines = [
        "# Upstream Triton's module paths in tritone",
        "",
        f"Every public module of the Triton {version} wheel (its native `triton._C` internals left out, but",
        "`triton._C.libtriton`, its `ir` and `nvidia` listed) and whether `tritone.<rest>` provides it.",
        "`import triton` answers with these modules where tritone serves as Triton.",
        "",
        "- **provided**: the module imports and has every public name of upstream's (`__all__`, else its",
        "  top-level definitions; a package's also what it imports from its submodules).",
        "- **partial**: it imports; the names it lacks are listed.",
        "- **not provided**: no such module, and why.",
        "",
        "Generated by `python tools/upstream_paths.py` (`--check` tells whether this file is current);",
        "`tests/test_upstream_paths_doc.py` imports every path marked provided or partial, and checks that",
        "those marked not provided do not import.",
        "",
        "| upstream path | status | notes |",
        "|---|---|---|",
    ]
    for path in sorted(paths):
        status, note = status_of(path, paths[path])
        lines.append(f"| `{path}` | {status} | {note} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/UPSTREAM_PATHS.md is out of date")
    arguments = parser.parse_args()
    text = table()
    if arguments.check:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC} is out of date: run python tools/upstream_paths.py")
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
