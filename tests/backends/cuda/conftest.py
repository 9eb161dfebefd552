"""Compiling generated CUDA with the NVRTC tritone finds (the pip wheel here)."""

from __future__ import annotations

import pytest

from tritone.backends.cuda import generate_cuda

ARCHS = (61, 75, 80, 86, 89, 90, 120)
ELF_MAGIC = b"\x7fELF"


def _nvrtc():
    from tritone.runtime import libs

    try:
        return libs.nvrtc_for(80).nvrtc
    except libs.LibraryNotFound as exc:  # pragma: no cover - NVRTC is a test dependency
        pytest.skip(f"no NVRTC: {exc}")


@pytest.fixture(scope="session")
def cuda_compile():
    """`cuda_compile(build, archs=ARCHS, options=None)`: for each architecture NVRTC
    knows, build the kernel afresh (`build()` returns a KernelBuilder), generate its
    CUDA, compile it to a cubin and check the ELF magic. Returns {arch: (source,
    metadata, CompileResult)}."""
    nvrtc = _nvrtc()

    def compile_all(build, archs=ARCHS, options=None):
        results = {}
        for arch in archs:
            if not nvrtc.knows(arch):
                continue
            kb = build()
            source, name, metadata = generate_cuda(kb.module, arch, options)
            result = nvrtc.compile(source, f"{name}.cu", arch, options=["-w"])
            assert result.cubin[:4] == ELF_MAGIC, f"sm_{arch}: not a cubin"
            results[arch] = (source, metadata, result)
        assert results, "NVRTC knows none of the architectures"
        return results

    return compile_all
