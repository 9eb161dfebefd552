"""TRITON_REPRODUCER_PATH: every CUDA lowering first writes
`<prefix>.make_cuda.repro.ttir`, the IR it starts from with its options, and
that file compiles again to the same PTX (NVRTC, no GPU needed)."""

from __future__ import annotations

import re

import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource


@triton.jit
def scaled_copy(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * 3, mask=offs < n)


TARGET = GPUTarget("cuda", 90, 32)


def _source() -> ASTSource:
    return ASTSource(scaled_copy, {"X": "*fp32", "Y": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 128})


def _code(ptx: str) -> str:
    # the PTX without its comments (NVRTC names the source file in them)
    return "\n".join(line for line in ptx.splitlines() if not line.lstrip().startswith("//"))


def test_reproducer_is_written_and_compiles_again(tmp_path, monkeypatch):
    prefix = tmp_path / "repro_prefix"
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("TRITON_REPRODUCER_PATH", str(prefix))
    compiled = triton.compile(_source(), target=TARGET, options={"num_warps": 2})
    path = tmp_path / "repro_prefix.make_cuda.repro.ttir"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("// tritone reproducer: kernel scaled_copy")
    assert "tt.func @scaled_copy" in text and re.search(r"num_warps = 2\b", text)
    assert f"tritone.compile({str(path)!r}, target=GPUTarget('cuda', 90, 32))" in text
    monkeypatch.delenv("TRITON_REPRODUCER_PATH")
    again = triton.compile(str(path), target=TARGET)
    assert _code(again.asm["ptx"]) == _code(compiled.asm["ptx"])


def test_no_reproducer_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    monkeypatch.delenv("TRITON_REPRODUCER_PATH", raising=False)
    monkeypatch.chdir(tmp_path)
    triton.compile(_source(), target=TARGET)
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_reproducer_path_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("TRITON_REPRODUCER_PATH", str(tmp_path / "missing-folder" / "repro"))
    with pytest.warns(UserWarning, match="TRITON_REPRODUCER_PATH: could not write"):
        compiled = triton.compile(_source(), target=TARGET)
    assert compiled.asm["cubin"][:4] == b"\x7fELF"
