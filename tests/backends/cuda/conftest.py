"""Compiling generated CUDA with the NVRTC tritone finds (the pip wheel here)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tritone.backends.cuda.lowering import generate_cuda

ARCHS = (61, 75, 80, 86, 89, 90, 120)
ELF_MAGIC = b"\x7fELF"


def _nvrtc():
    from tritone.backends.cuda.bindings import libs

    try:
        return libs.nvrtc_for(80).nvrtc
    except libs.LibraryNotFound as exc:  # pragma: no cover - NVRTC is a test dependency
        pytest.skip(f"no NVRTC: {exc}")


@pytest.fixture(scope="session")
def cuda_compile():
    """`cuda_compile(build, archs=None (all of ARCHS), options=None)`: for each architecture NVRTC
    knows, build the kernel afresh (`build()` returns a KernelBuilder), generate its
    CUDA, compile it to a cubin and check the ELF magic. Returns {arch: (source,
    metadata, CompileResult)}."""
    nvrtc = _nvrtc()

    def compile_all(build, archs=None, options=None):
        generated = {}
        for arch in archs or ARCHS:
            if nvrtc.knows(arch):
                source, name, metadata = generate_cuda(build().module, arch, options)
                generated[arch] = (source, name, metadata)
        assert generated, "NVRTC knows none of the architectures"
        # NVRTC compiles separate programs concurrently (and releases the GIL)
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = {arch: pool.submit(nvrtc.compile, source, f"{name}.cu", arch, options=["-w"],
                                         arch_suffix=metadata.get("arch_suffix", ""))
                       for arch, (source, name, metadata) in generated.items()}
        results = {}
        for arch, (source, _, metadata) in generated.items():
            result = futures[arch].result()
            assert result.cubin[:4] == ELF_MAGIC, f"sm_{arch}: not a cubin"
            results[arch] = (source, metadata, result)
        return results

    return compile_all
