"""tools/cuda_snapshot.py: the generated CUDA of a fixed set of kernels per
target, compared between two trees. A copy of this tree whose dot preferences
put FMA first from sm_80 on differs from this one in exactly the kernels that
use mma.sync on sm_80 and sm_90."""

from __future__ import annotations

import shutil

from tests.tools._tool_loader import REPO_ROOT, load_tool


def test_a_tree_with_other_dot_preferences_differs_in_its_dots_alone(tmp_path):
    tool = load_tool("cuda_snapshot")
    other = tmp_path / "other"
    for part in ("tritone", "tests", "examples", "tools"):
        shutil.copytree(REPO_ROOT / part, other / part, ignore=shutil.ignore_patterns("__pycache__"))
    dot_init = other / "tritone" / "backends" / "cuda" / "dot" / "__init__.py"
    text = dot_init.read_text(encoding="utf-8")
    assert '(80, ("mma_v2", "fma")),' in text
    dot_init.write_text(text.replace('(80, ("mma_v2", "fma")),', '(80, ("fma", "mma_v2")),'), encoding="utf-8")

    differing = tool.compare(REPO_ROOT, other, tmp_path / "snapshots")

    assert "dtype_zoo.sm80.cu" in differing and "matmul_leaky_relu.sm80.cu" in differing
    for name in differing:
        assert name.endswith(".sm80.cu"), name  # sm_90 has its own row (wgmma first)
        mine = (tmp_path / "snapshots" / "this" / name).read_text(encoding="utf-8")
        theirs = (tmp_path / "snapshots" / "other" / name).read_text(encoding="utf-8")
        assert "mma.sync" in mine and "mma.sync" not in theirs, name
    unchanged = [p.name for p in (tmp_path / "snapshots" / "this").iterdir() if p.name not in differing]
    assert "dtype_zoo.sm75.cu" in unchanged and any(name.startswith("softmax_kernel") for name in unchanged)
