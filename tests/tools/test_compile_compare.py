"""tools/compile_compare.py: Inductor's kernels recorded from a CPU run, then compiled for
sm_90 by tritone (and upstream Triton where it is installed) without a GPU, kernel by kernel."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.tools._tool_loader import load_tool


def test_table_puts_the_slowest_ratio_last_and_adds_up_what_both_compiled():
    tool = load_tool("compile_compare")
    kernels = [{"name": f"k{i}", "case": "softmax fp32"} for i in range(4)]
    times = {"tritone": [0.2, 0.05, 0.3, None], "upstream": [0.1, 0.1, 0.3, 0.2]}
    lines = tool.format_table(kernels, times).splitlines()
    assert [line.split()[-3] for line in lines[1:5]] == ["k1", "k2", "k0", "k3"]
    assert lines[1].split()[:3] == ["50.0", "100.0", "0.50"]
    assert lines[4].split()[:3] == ["-", "200.0", "-"]  # tritone failed: no ratio, listed last
    assert lines[-1] == (f"3 kernels compiled by both: geomean tt/up {math.exp(math.log(0.5 * 1.0 * 2.0) / 3):.3f}, "
                         "sums 0.55 s against 0.50 s")
    only_ours = tool.format_table(kernels[:1], {"tritone": [0.2]}).splitlines()
    assert only_ours[1].split()[:3] == ["200.0", "-", "-"]


def test_a_workloads_kernels_are_recorded_and_compiled_for_sm90(tmp_path, capsys):
    pytest.importorskip("torch")
    from tritone.backends.cuda.bindings import libs

    try:
        libs.nvrtc_for(90)
    except Exception as error:  # no NVRTC here: nothing to time
        pytest.skip(f"no NVRTC: {error}")
    tool = load_tool("compile_compare")
    assert tool.main([str(tmp_path), "--workloads", "softmax", "--dtypes", "fp32"]) == 0
    kernels = json.loads((tmp_path / "kernels.json").read_text(encoding="utf-8"))
    assert kernels and all(Path(entry["file"]).is_file() for entry in kernels)
    assert {entry["case"] for entry in kernels} == {"softmax fp32"}
    ours = json.loads((tmp_path / "times_tritone.json").read_text(encoding="utf-8"))
    assert len(ours) == len(kernels) and all(seconds and seconds > 0 for seconds in ours)
    out = capsys.readouterr().out
    assert f"{len(kernels)} kernels recorded from softmax" in out
    assert all(entry["name"] in out for entry in kernels)
