"""docs/UPSTREAM_PATHS.md against the code: every upstream path it marks
provided or partial imports as `tritone.<rest>`, every one marked not provided
does not, and (where upstream Triton 3.6 is installed) the file is what
tools/upstream_paths.py generates from the tree as it is now."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^\| `(?P<path>triton[\w.]*)` \| (?P<status>provided|partial|not provided) \|")


def table_rows() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "UPSTREAM_PATHS.md").read_text(encoding="utf-8")
    return [(match["path"], match["status"]) for match in map(ROW.match, text.splitlines()) if match]


def ours(path: str) -> str:
    return "tritone" + path[len("triton"):]


ROWS = table_rows()


def test_the_table_lists_the_paths_inductor_reads():
    statuses = dict(ROWS)
    assert len(ROWS) > 100 and statuses["triton._C.libtriton.ir"] == "partial"
    for path in ("triton.runtime.jit", "triton.runtime.errors", "triton.runtime.interpreter", "triton._utils",
                 "triton._internal_testing", "triton.testing", "triton.backends", "triton.language.standard"):
        assert statuses[path] in ("provided", "partial"), path


@pytest.mark.parametrize("path", [path for path, status in ROWS if status != "not provided"])
def test_provided_paths_import(path):
    assert importlib.import_module(ours(path)).__name__ == ours(path)


@pytest.mark.parametrize("path", [path for path, status in ROWS if status == "not provided"])
def test_paths_marked_not_provided_do_not_import(path):
    with pytest.raises(ImportError):
        importlib.import_module(ours(path))


def test_the_table_is_current():
    triton = pytest.importorskip("triton")
    if hasattr(triton, "__tritone_version__") or not triton.__version__.startswith("3.6."):
        pytest.skip("the table is generated from the upstream Triton 3.6 wheel, which is not what `triton` is here")
    spec = importlib.util.spec_from_file_location("upstream_paths", ROOT / "tools" / "upstream_paths.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    current = (ROOT / "docs" / "UPSTREAM_PATHS.md").read_text(encoding="utf-8")
    assert current == generator.table(), "run python tools/upstream_paths.py and commit docs/UPSTREAM_PATHS.md"
