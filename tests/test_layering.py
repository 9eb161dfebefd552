"""The layering of the package (docs/ARCHITECTURE.md), checked on the import graph
read from the source with `ast`: every import of a tritone module, at module
level or inside a function (only `if TYPE_CHECKING:` blocks, which never run,
are left out), must point to the importer's own layer or one below it, apart
from the few upward imports listed in `UPWARD` with their reason."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tritone"

# Bottom to top. A module belongs to the layer of the longest prefix naming it.
# `tritone.<version>` stands for the version constants of the package, which
# `tritone/__init__.py` defines before it imports anything.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("tritone.<version>", "tritone.errors", "tritone.knobs", "tritone.platform", "tritone.tensors",
              "tritone.runtime.cache", "tritone.runtime._allocation")),
    ("ir", ("tritone.ir",)),
    ("language", ("tritone.language", "tritone.tools.tensor_descriptor")),
    ("frontend", ("tritone.frontend",)),
    ("passes", ("tritone.passes",)),
    ("interpreter", ("tritone.interpreter",)),
    ("backends", ("tritone.backends",)),
    ("compiler", ("tritone.compiler", "tritone._C")),
    ("runtime", ("tritone.runtime",)),
    ("api", ("tritone", "tritone.profiler")),
)

# (importer, imported, when, why): the imports allowed to point up. "call":
# only inside functions, so that no import cycle runs at import time;
# "import": at module level too, where the imported module imports nothing
# above the importer's layer at module level itself.
UPWARD: tuple[tuple[str, str, str, str], ...] = (
    ("tritone.language", "tritone.runtime.jit", "import",
     "tl's own functions (tl.standard, tl.random, ...) are @jit functions"),
    ("tritone.frontend.scope", "tritone.runtime.jit", "call", "a name that is a @jit function is a callee to inline"),
    ("tritone.language.target_info", "tritone.runtime.driver", "call",
     "on the host, Triton's target queries (is_cuda(), ...) ask the active driver"),
    ("tritone.backends.cuda.driver", "tritone.testing", "call", "Triton's get_benchmarker() answers testing.do_bench"),
    ("tritone.backends.interpreter.driver", "tritone.testing", "call",
     "Triton's get_benchmarker() answers testing.do_bench"),
    ("tritone.runtime.autotuner", "tritone.testing", "call", "the autotuner times configs with testing.do_bench"),
    ("tritone.tools.tensor_descriptor", "tritone.runtime.specialize", "call",
     "a host descriptor's signature type names its element type as the binders name argument types"),
)

# Backend folders import no other backend folder, but for these.
CROSS_BACKEND: tuple[tuple[str, str, str], ...] = (
    ("tritone.backends.interpreter.launch_plan", "tritone.backends.cuda",
     "with TRITON_INTERPRET, arguments in GPU memory are copied to the host and back through the CUDA driver"),
)

TARGET_NEUTRAL = ("tritone.ir", "tritone.language", "tritone.frontend", "tritone.passes", "tritone.interpreter")


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    in_function: bool


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package) of every module of the package."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


MODULES = _modules()


def _targets(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """The modules a `from ... import ...` reads: each name that is a submodule,
    else the module it is taken from."""
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    targets = []
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        if submodule in MODULES:
            targets.append(submodule)
        elif source == "tritone" and alias.name.startswith("__"):
            targets.append("tritone.<version>")
        else:
            targets.append(source)
    return targets


def _imports(module: str) -> list[Import]:
    path, is_package = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    inside_functions: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(sub) for sub in ast.walk(node))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside_functions.update(id(sub) for sub in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = _targets(module, is_package, node)
        else:
            continue
        found.extend(Import(module, name, node.lineno, id(node) in inside_functions) for name in names)
    return found


IMPORTS = [found for module in MODULES for found in _imports(module)]


def _layer(module: str) -> int:
    matches = [(len(prefix), index) for index, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
               if module == prefix or module.startswith(prefix + ".")]
    return max(matches)[1]


def _named(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _allowed(found: Import, rules: tuple[tuple[str, ...], ...]) -> bool:
    return any(_named(found.importer, rule[0]) and _named(found.imported, rule[1]) for rule in rules)


def _where(found: Import) -> str:
    return f"{found.importer} (line {found.line}) imports {found.imported}"


def test_the_graph_is_read():
    # The checks below mean nothing if the walk finds no imports: known edges must be there.
    edges = {(found.importer, found.imported) for found in IMPORTS}
    assert ("tritone.compiler.compiler", "tritone.backends.registry") in edges
    assert ("tritone.backends.cuda.launch_plan", "tritone.backends.cuda.bindings.driver_api") in edges
    assert any(found.in_function for found in IMPORTS)


def test_imports_point_down_the_layers():
    upward = [found for found in IMPORTS if found.imported.startswith("tritone")
              and _layer(found.imported) > _layer(found.importer) and not _allowed(found, UPWARD)]
    assert not upward, "imports pointing up the layers of docs/ARCHITECTURE.md:\n" + "\n".join(map(_where, upward))


def test_allowed_upward_imports_run_when_listed_and_still_exist():
    # A module-level upward import that is not listed as such could close an
    # import cycle; an exception no longer used must leave the list (and the document).
    for importer, imported, when, why in UPWARD:
        found = [found for found in IMPORTS if _named(found.importer, importer) and _named(found.imported, imported)]
        assert found, f"UPWARD lists {importer} -> {imported} ({why}), which no module imports any more"
        if when == "call":
            at_import = [item for item in found if not item.in_function]
            assert not at_import, "only inside functions:\n" + "\n".join(map(_where, at_import))
    jit = [found for found in IMPORTS if found.importer == "tritone.runtime.jit" and not found.in_function
           and found.imported.startswith("tritone.") and _layer(found.imported) > _layer("tritone.language")
           and found.imported != "tritone.runtime.jit"]
    assert not jit, "runtime/jit.py must import nothing above the language at module level:\n" + "\n".join(
        map(_where, jit))


@pytest.mark.parametrize("layer", TARGET_NEUTRAL)
def test_target_neutral_layers_import_no_backend(layer):
    found = [found for found in IMPORTS if _named(found.importer, layer) and _named(found.imported, "tritone.backends")]
    assert not found, "\n".join(map(_where, found))


def test_only_the_profiler_imports_the_profiler():
    # Its launch hooks come and go with its sessions; `import triton` must not load it.
    found = [found for found in IMPORTS if _named(found.imported, "tritone.profiler")
             and not _named(found.importer, "tritone.profiler")]
    assert not found, "\n".join(map(_where, found))


def test_backend_folders_import_no_other_backend_folder():
    folders = {name for name, (_, is_package) in MODULES.items()
               if is_package and name.count(".") == 2 and name.startswith("tritone.backends.")}
    crossing = []
    for found in IMPORTS:
        source = next((folder for folder in folders if _named(found.importer, folder)), None)
        target = next((folder for folder in folders if _named(found.imported, folder)), None)
        if source and target and source != target and not _allowed(found, CROSS_BACKEND):
            crossing.append(found)
    assert folders >= {"tritone.backends.cuda", "tritone.backends.interpreter"}
    assert not crossing, "\n".join(map(_where, crossing))


def test_runtime_has_no_ctypes():
    found = [found for found in IMPORTS
             if _named(found.importer, "tritone.runtime") and _named(found.imported, "ctypes")]
    assert not found, "ctypes bindings belong to a backend folder:\n" + "\n".join(map(_where, found))


def test_every_registered_backend_is_a_folder_with_its_object():
    from tritone.backends import registry
    from tritone.backends.base import TargetBackend

    for name, module in registry.REGISTRY.items():
        folder = module.rsplit(".", 1)[0]
        assert MODULES.get(folder, (None, False))[1], f"{name}: {folder} is not a package"
        backend = registry.target_backend(name)
        assert isinstance(backend, TargetBackend) and backend.name == name
