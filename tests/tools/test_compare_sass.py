"""tools/compare_sass.py: an Inductor output module's kernels compiled by both sides for
sm_90 without a GPU, the table of their SASS, and `--dump`'s files of each side."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.tools._tool_loader import load_tool

pytest.importorskip("torch")

# A module as Inductor writes it: the kernel's source inside `async_compile.triton(...)`,
# with the decorator whose triton_meta (on one line) and size_hints the tool reads.
_SIGNATURE = {"in_ptr0": "*fp32", "in_ptr1": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"}
_META = (f"{{'signature': {_SIGNATURE!r}, 'device': DeviceProperties(type='cuda', index=0), 'constants': {{}}, "
         f"'configs': [{ {(i,): [['tt.divisibility', 16]] for i in range(4)}!r}]}}")
_MODULE = """
triton_poi_fused_add_mul_0 = async_compile.triton('triton_poi_fused_add_mul_0', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import DeviceProperties

@triton_heuristics.pointwise(
    size_hints={'x': 4096},
    filename=__file__,
    triton_meta={meta},
    inductor_meta={'kernel_name': 'triton_poi_fused_add_mul_0'},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_mul_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (xindex), xmask)
    tmp1 = tl.load(in_ptr1 + (xindex), xmask)
    tl.store(out_ptr0 + (xindex), tmp0 * tmp1 + tmp0, xmask)
''', device_str='cuda')
"""


def test_both_sides_compiled_tabled_and_dumped(tmp_path: Path, capsys) -> None:
    if importlib.util.find_spec("triton") is None or "tritone" in str(importlib.util.find_spec("triton").origin):
        pytest.skip("upstream Triton is not installed")
    tool = load_tool("compare_sass")
    try:
        tool._cuobjdump()
    except SystemExit:
        pytest.skip("no cuobjdump (upstream Triton's wheel ships one)")
    module = tmp_path / "output_code.py"
    module.write_text(_MODULE.replace("{meta}", _META), encoding="utf-8")
    dump = tmp_path / "dump"
    assert tool.main([str(module), "--dump", str(dump)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("triton_poi_fused_add_mul_0"))
    assert "error" not in row and "/" in row.split()[1], row  # instructions of both sides
    files = sorted(path.name for path in dump.iterdir())
    stems = {name.rsplit(".", 1)[0] for name in files}
    assert {stem.split("_", 1)[0] for stem in stems} == {"tritone", "upstream"}
    for stem in stems:
        side = stem.split("_", 1)[0]
        suffixes = {".ptx", ".cubin", ".sass"} | ({".cu"} if side == "tritone" else set())
        assert {name[len(stem):] for name in files if name.startswith(stem + ".")} == suffixes
        assert "triton_poi_fused_add_mul_0" in (dump / f"{stem}.ptx").read_text(encoding="utf-8")
        sass = (dump / f"{stem}.sass").read_text(encoding="utf-8")
        assert "LDG.E.128" in sass and "STG.E.128" in sass, side  # 16-byte accesses: the divisibility was read
