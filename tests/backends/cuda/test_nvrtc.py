"""NVRTC through ctypes, against the real library (the nvidia-cuda-nvrtc-cu12 wheel
tritone depends on): cubins for every architecture tritone targets, PTX, errors."""

from __future__ import annotations

import pickle
import random
import struct

import pytest

from tritone.backends.cuda.bindings import libs
from tritone.backends.cuda.bindings.nvrtc import NVRTC, CompileResult, NVRTCError, compile_cuda

TARGET_ARCHS = (61, 75, 80, 86, 89, 90, 120)
ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190


def kernel_source(value: float) -> str:
    return (f'extern "C" __global__ void add_constant(float* x, int n) {{\n'
            f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"    if (i < n) x[i] += {value!r}f;\n"
            f"}}\n")


@pytest.fixture(scope="module")
def nvrtc() -> NVRTC:
    return libs.nvrtc_for(None).nvrtc


def cubin_arch(cubin: bytes) -> int:
    """The SM version a CUDA ELF is for. Older cubins keep it in the low byte of
    e_flags; the newer ABI (EI_OSABI 0x41, used from sm_100) in the second byte."""
    e_flags = struct.unpack_from("<I", cubin, 48)[0]
    return (e_flags >> 8) & 0xFF if cubin[7] == 0x41 else e_flags & 0xFF


def test_version_and_supported_archs(nvrtc):
    assert nvrtc.version >= (11, 2)
    assert list(nvrtc.supported_archs) == sorted(nvrtc.supported_archs)
    assert 80 in nvrtc.supported_archs
    if nvrtc.version[0] == 12:
        assert 61 in nvrtc.supported_archs


@pytest.mark.parametrize("arch", TARGET_ARCHS)
def test_cubin_for_every_target(nvrtc, arch):
    if not nvrtc.knows(arch):
        # Only acceptable where this NVRTC predates the architecture:
        # sm_120 arrived in 12.8; NVRTC 13 dropped everything below sm_75.
        assert (arch == 120 and nvrtc.version < (12, 8)) or (arch < 75 and nvrtc.version[0] >= 13), \
            f"NVRTC {nvrtc.version} lists {nvrtc.supported_archs} without sm_{arch}"
        with pytest.raises(NVRTCError):
            nvrtc.compile(kernel_source(1.0), "k.cu", arch)
        pytest.skip(f"NVRTC {nvrtc.version_text} does not target sm_{arch}")
    result = nvrtc.compile(kernel_source(random.uniform(-4, 4)), "k.cu", arch)
    assert isinstance(result, CompileResult)
    assert result.cubin[:4] == ELF_MAGIC
    assert struct.unpack_from("<H", result.cubin, 18)[0] == EM_CUDA
    assert cubin_arch(result.cubin) == arch
    assert result.target == f"sm_{arch}"
    assert result.nvrtc_version == nvrtc.version
    assert ".entry add_constant" in result.ptx


def test_ptx_only_for_compute_80(nvrtc):
    value = random.uniform(1, 2)
    result = nvrtc.compile(kernel_source(value), "k.cu", 80, ptx_only=True)
    assert result.cubin is None
    assert result.target == "compute_80"
    assert ".target sm_80" in result.ptx
    assert ".visible .entry add_constant(" in result.ptx
    assert "\0" not in result.ptx
    # The literal survives into the PTX as the bits of the float.
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    assert f"0f{bits:08X}" in result.ptx


def test_arch_specific_target_sm_90a(nvrtc):
    result = nvrtc.compile(kernel_source(2.0), "k.cu", 90, arch_suffix="a")
    assert result.target == "sm_90a"
    assert ".target sm_90a" in result.ptx
    assert cubin_arch(result.cubin) == 90
    # sm_90a defines the feature macro that arch-specific code is gated on.
    gated = ('#ifndef __CUDA_ARCH_FEAT_SM90_ALL\n#error not sm_90a\n#endif\n' + kernel_source(2.0))
    assert nvrtc.compile(gated, "k.cu", 90, arch_suffix="a").cubin[:4] == ELF_MAGIC
    with pytest.raises(NVRTCError, match="not sm_90a"):
        nvrtc.compile(gated, "k.cu", 90)


def test_options_reach_the_compiler(nvrtc):
    source = 'extern "C" __global__ void k(int* x) { x[0] = SCALE * 3; }\n'
    scale = random.randint(10, 1000)
    result = nvrtc.compile(source, "k.cu", 80, ptx_only=True, options=[f"-DSCALE={scale}"])
    assert str(scale * 3) in result.ptx
    with pytest.raises(NVRTCError, match="SCALE"):
        nvrtc.compile(source, "k.cu", 80, ptx_only=True)


def test_compile_error_carries_log(nvrtc):
    source = 'extern "C" __global__ void broken(float* x) {\n    x[0] = undefined_name;\n}\n'
    with pytest.raises(NVRTCError) as caught:
        nvrtc.compile(source, "broken_kernel.cu", 86)
    error = caught.value
    assert "undefined_name" in error.log
    assert "broken_kernel.cu(2)" in error.log
    assert "sm_86" in str(error) and "undefined_name" in str(error)
    assert error.call == "nvrtcCompileProgram"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.log, copy.call, copy.code, str(copy)) == (error.log, error.call, error.code, str(error))


def test_invalid_option_is_reported_with_its_name(nvrtc):
    with pytest.raises(NVRTCError, match="--no-such-option"):
        nvrtc.compile(kernel_source(1.0), "k.cu", 80, options=["--no-such-option"])


def test_compile_cuda_uses_the_chosen_nvrtc():
    result = compile_cuda(kernel_source(3.0), "k.cu", 86)
    assert result.cubin[:4] == ELF_MAGIC and cubin_arch(result.cubin) == 86
    assert result.nvrtc_version == libs.nvrtc_for(86).version


def test_compile_cuda_falls_back_to_ptx_for_an_unknown_architecture():
    unknown = 250  # no NVRTC knows sm_250
    with pytest.warns(RuntimeWarning, match="sm_250"):
        result = compile_cuda(kernel_source(1.5), "k.cu", unknown)
    newest = max(libs.nvrtc_for(None).nvrtc.supported_archs)
    assert result.cubin is None
    assert result.target == f"compute_{newest}"
    assert f".target sm_{newest}" in result.ptx
    with pytest.raises(NVRTCError, match="sm_250a needs an NVRTC that knows sm_250"):
        compile_cuda(kernel_source(1.5), "k.cu", unknown, arch_suffix="a")
