"""TRITON_DUMP_PTXAS_LOG (`knobs.nvidia.dump_ptxas_log`): each kernel compiled
prints ptxas's report, as Triton prints its ptxas log, through NVRTC's
`--ptxas-options=--verbose`; the machine code is the same with and without.
Without a GPU: kernels compiled for a target, not launched."""

from __future__ import annotations

import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource


@triton.jit
def scaled_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _compile(monkeypatch, tmp_path, dump: bool, folder: str):
    from tritone.backends.cuda.bindings import libs

    try:
        libs.nvrtc_for(80)
    except libs.LibraryNotFound as exc:  # pragma: no cover - NVRTC is a test dependency
        pytest.skip(f"no NVRTC: {exc}")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / folder))
    if dump:
        monkeypatch.setenv("TRITON_DUMP_PTXAS_LOG", "1")
    else:
        monkeypatch.delenv("TRITON_DUMP_PTXAS_LOG", raising=False)
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    return triton.compile(ASTSource(scaled_add, signature, {"BLOCK": 256}, {}), target=GPUTarget("cuda", 80, 32))


def test_the_log_is_printed_for_each_kernel_compiled(monkeypatch, tmp_path, capsys):
    plain = _compile(monkeypatch, tmp_path, False, "plain")
    assert "ptxas" not in capsys.readouterr().out
    logged = _compile(monkeypatch, tmp_path, True, "logged")
    out = capsys.readouterr().out
    assert "ptxas log of kernel scaled_add (sm_80)" in out
    assert "Compiling entry function 'scaled_add' for 'sm_80'" in out and "registers" in out
    assert logged.asm["cubin"] == plain.asm["cubin"]
    # a kernel read from the cache is not compiled: nothing to report
    _compile(monkeypatch, tmp_path, True, "logged")
    assert "ptxas" not in capsys.readouterr().out
