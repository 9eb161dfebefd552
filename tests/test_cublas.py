"""`triton._C.libtriton.nvidia.cublas.CublasLt`: the enum values and structures
against cuBLASLt's headers, finding cuBLASLt on simulated Linux and Windows
layouts, the argument checks, the calls made on a simulated cuBLASLt (the
row-major trick, the float8 settings, alignments, plans), and on a GPU the
results against torch."""

from __future__ import annotations

import ctypes
import pickle
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tritone._C.libtriton.nvidia import cublas
from tritone._C.libtriton.nvidia.cublas import ComputeType, CublasError, CublasLt, CublasLtLibrary, DataType, Operation
from tritone.backends.cuda.bindings import libs
from tritone.backends.cuda.bindings.libs import Candidate, LibraryNotFound, cublaslt_search, find_cublaslt
from tritone.platform import SimulatedLibrary, SimulatedPlatform, host

MatmulDescAttribute = cublas.MatmulDescAttribute
PreferenceAttribute = cublas.PreferenceAttribute

# ---------------------------------------------------------------- the values of cuBLASLt's headers


def test_enum_values_are_cublaslts():
    # cublas_api.h, library_types.h and cublasLt.h (CUDA 12.x and 13.x): a wrong value computes garbage silently.
    assert {member.name: int(member) for member in cublas.Status} == {
        "SUCCESS": 0, "NOT_INITIALIZED": 1, "ALLOC_FAILED": 3, "INVALID_VALUE": 7, "ARCH_MISMATCH": 8,
        "MAPPING_ERROR": 11, "EXECUTION_FAILED": 13, "INTERNAL_ERROR": 14, "NOT_SUPPORTED": 15, "LICENSE_ERROR": 16}
    assert {member.name: int(member) for member in DataType} == {"R_32F": 0, "R_16F": 2, "R_16BF": 14,
                                                                 "R_8F_E4M3": 28}
    assert (ComputeType.COMPUTE_32F, ComputeType.COMPUTE_32F_FAST_TF32) == (68, 77)
    assert (Operation.N, Operation.T) == (0, 1)
    assert (MatmulDescAttribute.TRANSA, MatmulDescAttribute.TRANSB, MatmulDescAttribute.FAST_ACCUM) == (3, 4, 25)
    assert [int(member) for member in PreferenceAttribute] == [1, 5, 6, 7, 8]
    assert [member.name for member in PreferenceAttribute] == [
        "MAX_WORKSPACE_BYTES", "MIN_ALIGNMENT_A_BYTES", "MIN_ALIGNMENT_B_BYTES", "MIN_ALIGNMENT_C_BYTES",
        "MIN_ALIGNMENT_D_BYTES"]


def test_structures_have_cublaslts_layout():
    assert ctypes.sizeof(cublas.MatmulAlgo) == 64
    assert ctypes.sizeof(cublas.HeuristicResult) == 96
    assert [(name, getattr(cublas.HeuristicResult, name).offset) for name, _ in cublas.HeuristicResult._fields_] == [
        ("algo", 0), ("workspace_size", 64), ("state", 72), ("waves_count", 76), ("reserved", 80)]


def test_element_types_follow_upstreams_binding():
    types = cublas.ELEMENT_TYPES
    assert set(types) == {"float16", "bfloat16", "float32", "float8_e4m3fn"}
    assert (types["float16"].data_type, types["float16"].c_type, types["float16"].compute) == (2, 2, 68)
    assert (types["bfloat16"].data_type, types["bfloat16"].c_type, types["bfloat16"].c_dtype) == (14, 14, "bfloat16")
    assert types["float32"].compute == ComputeType.COMPUTE_32F_FAST_TF32
    fp8 = types["float8_e4m3fn"]
    assert (fp8.data_type, fp8.c_type, fp8.c_dtype, fp8.fast_accum) == (28, 2, "float16", True)
    assert not any(types[name].fast_accum for name in ("float16", "bfloat16", "float32"))


def test_nvidia_is_importable_without_loading_cublaslt():
    code = ("import sys\n"
            "from tritone._C.libtriton import nvidia\n"
            "from tritone.backends.cuda.bindings import libs\n"
            "assert nvidia.cublas.CublasLt and nvidia.__all__ == ['cublas']\n"
            "assert nvidia.cublas._library is None and not libs._cublaslts\n"
            "assert 'torch' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_real_cublaslt_takes_these_values_and_sizes():
    # Host-side calls only (no GPU needed): cuBLASLt refuses an attribute value of the wrong size,
    # and reads back what was set, so wrong ids or C types show here.
    try:
        choice = find_cublaslt(host())
    except LibraryNotFound:
        pytest.skip("no cuBLASLt on this machine")
    library = CublasLtLibrary(choice.library, choice.candidate.path)
    get = choice.library.cublasLtMatmulDescGetAttribute
    get.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
    get.restype = ctypes.c_int32
    desc = library.create_matmul_desc(ComputeType.COMPUTE_32F_FAST_TF32, DataType.R_32F)
    try:
        library.set_matmul_desc_attribute(desc, MatmulDescAttribute.TRANSA, ctypes.c_int32(Operation.T))
        library.set_matmul_desc_attribute(desc, MatmulDescAttribute.FAST_ACCUM, ctypes.c_int8(1))
        with pytest.raises(CublasError, match="CUBLAS_STATUS_INVALID_VALUE"):
            library.set_matmul_desc_attribute(desc, MatmulDescAttribute.FAST_ACCUM, ctypes.c_int32(1))
        read = {}
        for attribute, ctype in ((0, ctypes.c_int32), (1, ctypes.c_int32), (3, ctypes.c_int32), (25, ctypes.c_int8)):
            value, written = ctype(), ctypes.c_size_t()
            assert get(desc, attribute, ctypes.byref(value), ctypes.sizeof(value), ctypes.byref(written)) == 0
            read[attribute] = value.value
        # COMPUTE_TYPE (0) and SCALE_TYPE (1) as created, then TRANSA and FAST_ACCUM as set.
        assert read == {0: 77, 1: 0, 3: 1, 25: 1}
    finally:
        library.destroy_matmul_desc(desc)
    for data_type in DataType:
        library.destroy_layout(library.create_layout(data_type, 64, 32, 64))
    preference = library.create_preference()
    try:
        library.set_preference_attribute(preference, PreferenceAttribute.MAX_WORKSPACE_BYTES, ctypes.c_uint64(1 << 25))
        for attribute in list(PreferenceAttribute)[1:]:
            library.set_preference_attribute(preference, attribute, ctypes.c_uint32(16))
            with pytest.raises(CublasError, match="CUBLAS_STATUS_INVALID_VALUE"):
                library.set_preference_attribute(preference, attribute, ctypes.c_uint64(16))
    finally:
        library.destroy_preference(preference)


# ---------------------------------------------------------------- finding cuBLASLt


def simulated_cublaslt(version: int, **functions) -> SimulatedLibrary:
    """A cuBLASLt answering `cublasLtGetVersion` (encoded as cuBLAS does), with `functions` besides."""
    return SimulatedLibrary({"cublasLtGetVersion": lambda: version, **functions})


LINUX_SITE = "/home/u/venv/lib/python3.12/site-packages"
LINUX_PIP12 = f"{LINUX_SITE}/nvidia/cublas/lib/libcublasLt.so.12"
LINUX_PIP13 = f"{LINUX_SITE}/nvidia/cu13/lib/libcublasLt.so.13"
LINUX_TOOLKIT = "/usr/local/cuda-12.4/lib64"


def linux(libraries: dict[str, SimulatedLibrary] | None = None, **extra) -> SimulatedPlatform:
    files = {
        LINUX_PIP12: None,
        f"{LINUX_SITE}/nvidia/cublas/lib/libcublas.so.12": None,
        f"{LINUX_SITE}/nvidia/cublas/lib/libnvblas.so.12": None,
        LINUX_PIP13: None,
        f"{LINUX_TOOLKIT}/libcublasLt.so": None,
        f"{LINUX_TOOLKIT}/libcublasLt.so.12": None,
        f"{LINUX_TOOLKIT}/libcublasLt.so.12.4.5.8": None,
        f"{LINUX_TOOLKIT}/libcublasLt_static.a": None,
        "/home/u/venv/bin/python": None,
    }
    if libraries is None:
        libraries = {LINUX_PIP12: simulated_cublaslt(120903), LINUX_PIP13: simulated_cublaslt(130100)}
    return SimulatedPlatform("linux", files=files, executable="/home/u/venv/bin/python", prefix="/home/u/venv",
                             site_dirs=[LINUX_SITE], env={"CUDA_HOME": "/usr/local/cuda-12.4"},
                             system_libraries={"cublasLt": "libcublasLt.so.12"}, libraries=libraries, **extra)


def sources(search) -> list[tuple[str, str]]:
    return [(candidate.path, candidate.source) for candidate in search.candidates]


def test_linux_candidate_order_and_names():
    assert sources(cublaslt_search(linux())) == [
        (LINUX_PIP12, "pip nvidia-cublas-cu12"),
        (LINUX_PIP13, "pip nvidia-cublas (CUDA 13)"),
        (f"{LINUX_TOOLKIT}/libcublasLt.so.12", "CUDA_HOME"),
        ("libcublasLt.so.12", "system loader (LD_LIBRARY_PATH, ld.so.cache)"),
        ("libcublasLt.so.13", "system loader (LD_LIBRARY_PATH, ld.so.cache)"),
        ("libcublasLt.so.11", "system loader (LD_LIBRARY_PATH, ld.so.cache)"),
    ]


def test_linux_copy_loaded_by_torch_comes_first():
    loaded = "/opt/conda/lib/python3.12/site-packages/nvidia/cublas/lib/libcublasLt.so.12"
    sim = linux(loaded=["/usr/bin/python3.12", "/lib/x86_64-linux-gnu/libc.so.6", loaded],
                libraries={loaded: simulated_cublaslt(120400)})
    choice = find_cublaslt(sim, driver_version=12080)
    assert choice.candidate == Candidate(loaded, "already loaded by this process")
    assert choice.version == (12, 4) and sim.loads == [loaded]


def test_linux_first_loadable_cu12_wheel_is_chosen():
    sim = linux()
    choice = find_cublaslt(sim, driver_version=13000)
    assert choice.candidate == Candidate(LINUX_PIP12, "pip nvidia-cublas-cu12")
    assert choice.version == (12, 9) and [probe.verdict for probe in choice.probes] == ["chosen"]
    assert sim.loads == [LINUX_PIP12] and sim.dll_dirs == []
    assert choice.probes[0].describe() == f"{LINUX_PIP12} [pip nvidia-cublas-cu12]: cuBLASLt 12.9: chosen"


def test_cublaslt13_needs_a_cuda13_driver():
    sim = linux(libraries={LINUX_PIP13: simulated_cublaslt(130100)})
    with pytest.raises(LibraryNotFound) as caught:
        find_cublaslt(sim, driver_version=12080)
    message = str(caught.value)
    assert message.startswith("No usable cuBLASLt")
    assert (f"{LINUX_PIP13} [pip nvidia-cublas (CUDA 13)]: cuBLASLt 13.1: needs a driver for CUDA 13 (R580 or newer); "
            "this driver supports CUDA 12.8") in message
    assert find_cublaslt(sim, driver_version=13000).version == (13, 1)


def test_versions_are_decoded_both_ways_cublas_has_written_them():
    assert libs.cublaslt_version(simulated_cublaslt(120903)) == (12, 9)
    assert libs.cublaslt_version(simulated_cublaslt(130100)) == (13, 1)
    assert libs.cublaslt_version(simulated_cublaslt(110902)) == (11, 9)
    assert libs.cublaslt_version(simulated_cublaslt(11605)) == (11, 6)  # before cuBLAS 11.9: major*1000


def test_library_that_is_not_cublaslt_is_passed_over():
    sim = linux(libraries={LINUX_PIP12: SimulatedLibrary({}), LINUX_PIP13: simulated_cublaslt(130000)})
    choice = find_cublaslt(sim, driver_version=13000)
    assert choice.candidate.path == LINUX_PIP13
    assert choice.probes[0].verdict.startswith("not a cuBLASLt (undefined symbol: cublasLtGetVersion")


PORTABLE = "C:\\ComfyUI_windows_portable"
EMBEDDED = f"{PORTABLE}\\python_embeded"
SITE = f"{EMBEDDED}\\Lib\\site-packages"
TOOLKITS = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
WIN_PIP12 = f"{SITE}\\nvidia\\cublas\\bin\\cublasLt64_12.dll"
WIN_PIP13 = f"{SITE}\\nvidia\\cu13\\bin\\x86_64\\cublasLt64_13.dll"
WIN_TORCH = f"{SITE}\\torch\\lib\\cublasLt64_12.dll"
WIN_CUDA124 = f"{TOOLKITS}\\v12.4\\bin\\cublasLt64_12.dll"
WIN_CUDA130 = f"{TOOLKITS}\\v13.0\\bin\\x64\\cublasLt64_13.dll"
WIN_ON_PATH = "C:\\Tools\\cuda\\cublasLt64_11.dll"


def windows(dlls: dict[str, int], *, env: dict[str, str] | None = None, loaded=(), dirs=()) -> SimulatedPlatform:
    """The ComfyUI portable embedded Python on Windows, holding cuBLASLt DLLs (path: encoded version)
    with cuBLAS's other DLLs beside them."""
    files: dict[str, str | None] = {
        f"{EMBEDDED}\\python.exe": None,
        f"{EMBEDDED}\\python312._pth": "python312.zip\n.\n../ComfyUI\nLib/site-packages\nimport site\n",
        f"{SITE}\\torch\\__init__.py": "",
    }
    for path in dlls:
        folder, name = path.rsplit("\\", 1)
        files[path] = None
        files[f"{folder}\\{name.replace('cublasLt', 'cublas')}"] = None
    environment = {"ProgramFiles": "C:\\Program Files", "Path": "C:\\Windows\\system32;C:\\Windows"}
    environment.update(env or {})
    return SimulatedPlatform(
        "windows", files=files, dirs=dirs, env=environment, executable=f"{EMBEDDED}\\python.exe",
        sys_path=[f"{EMBEDDED}\\python312.zip", EMBEDDED], home="C:\\Users\\ana", loaded=loaded,
        libraries={path: simulated_cublaslt(version) for path, version in dlls.items()})


def test_windows_candidate_order_with_everything_installed():
    sim = windows({WIN_PIP12: 120903, WIN_PIP13: 130100, WIN_TORCH: 120801, WIN_CUDA124: 120405,
                   WIN_CUDA130: 130000, WIN_ON_PATH: 111103},
                  env={"CUDA_PATH": f"{TOOLKITS}\\v12.4", "CUDA_PATH_V13_0": f"{TOOLKITS}\\v13.0",
                       "Path": "C:\\Windows\\system32;C:\\Tools\\cuda"})
    assert sources(cublaslt_search(sim)) == [
        (WIN_PIP12, "pip nvidia-cublas-cu12"),
        (WIN_PIP13, "pip nvidia-cublas (CUDA 13)"),
        (WIN_TORCH, "torch/lib"),
        (WIN_CUDA124, "CUDA_PATH"),
        (WIN_CUDA130, "CUDA_PATH_V13_0"),
        (WIN_ON_PATH, "PATH"),
        ("cublasLt64_13.dll", "system DLL search"),
        ("cublasLt64_12.dll", "system DLL search"),
        ("cublasLt64_11.dll", "system DLL search"),
    ]
    assert not sim.loads, "searching must not load anything"


def test_windows_cu13_wheel_without_the_architecture_folder():
    flat = f"{SITE}\\nvidia\\cu13\\bin\\cublasLt64_13.dll"
    search = cublaslt_search(windows({flat: 130100}))
    assert search.candidates[0] == Candidate(flat, "pip nvidia-cublas (CUDA 13)")
    assert f"pip nvidia-cublas (CUDA 13): {SITE}\\nvidia\\cu13\\bin" in search.places


def test_windows_torch_lib_copy_is_used_and_its_folder_added():
    sim = windows({WIN_TORCH: 120801})
    choice = find_cublaslt(sim, driver_version=12080)
    assert choice.candidate == Candidate(WIN_TORCH, "torch/lib") and choice.version == (12, 8)
    assert sim.dll_dirs == [f"{SITE}\\torch\\lib"] and sim.loads == [WIN_TORCH]


def test_windows_cuda_path_toolkit_bin():
    sim = windows({WIN_CUDA124: 120405}, env={"CUDA_PATH": f"{TOOLKITS}\\v12.4"})
    choice = find_cublaslt(sim, driver_version=12040)
    assert choice.candidate == Candidate(WIN_CUDA124, "CUDA_PATH")
    assert sim.dll_dirs == [f"{TOOLKITS}\\v12.4\\bin"]


def test_missing_cublaslt_lists_every_place_and_the_pip_fix():
    sim = windows({}, env={"Path": "C:\\Windows\\system32;C:\\Windows;C:\\Tools"})
    with pytest.raises(LibraryNotFound) as caught:
        find_cublaslt(sim, driver_version=12080)
    message = str(caught.value)
    assert message.startswith("cuBLASLt (NVIDIA's matrix-multiply library, which "
                              "`triton._C.libtriton.nvidia.cublas` calls) was not found.")
    for place in (
        "libraries this process has loaded: none is cuBLASLt",
        f"pip nvidia-cublas-cu12: not installed in {EMBEDDED}, {SITE}",
        f"torch/lib: {SITE}\\torch\\lib (no such folder)",
        "CUDA_PATH: not set",
        f"CUDA toolkit: none installed under {TOOLKITS}",
        "PATH: none of its 3 folders holds cublasLt64_*.dll",
        "cublasLt64_12.dll [system DLL search]: does not load",
        f"Fix: {EMBEDDED}\\python.exe -m pip install nvidia-cublas-cu12",
        "or, with a CUDA 13 driver (R580 or newer):",
    ):
        assert place in message, place
    copy = pickle.loads(pickle.dumps(caught.value))
    assert str(copy) == message and copy.places == caught.value.places


def test_nvrtc_messages_are_unchanged_by_the_shared_search():
    # The search serves NVRTC and cuBLASLt: NVRTC's places still name NVRTC and its own wheels.
    search = libs.nvrtc_search(linux())
    assert "libraries this process has loaded: none is NVRTC" in search.places
    assert any(place.startswith("pip nvidia-cuda-nvrtc-cu12: ") for place in search.places)
    assert not any("cublas" in candidate.path for candidate in search.candidates)


def test_cublaslt_missing_raises_from_the_constructor(monkeypatch):
    monkeypatch.setattr(libs, "host", lambda: SimulatedPlatform("linux", executable="/usr/bin/python3"))
    monkeypatch.setattr(libs, "_cublaslts", {})
    monkeypatch.setattr(cublas, "_library", None)
    monkeypatch.setattr(cublas, "_driver_version", lambda: None)
    with pytest.raises(LibraryNotFound, match="cuBLASLt .* was not found"):
        CublasLt(FakeTensor((1024,), "uint8", itemsize=1))


# ---------------------------------------------------------------- the calls, on a simulated cuBLASLt


@dataclass(frozen=True)
class FakeDevice:
    type: str
    index: int | None


class FakeDtype:
    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


class FakeTensor:
    """What CublasLt reads of a torch tensor: row-major strides unless given."""

    def __init__(self, shape, dtype="float16", *, address=0x7F0000000000, strides=None, device=("cuda", 0),
                 itemsize=2):
        self.shape = tuple(shape)
        self.dtype = FakeDtype(dtype)
        self.device = FakeDevice(*device)
        self._address = address
        self._itemsize = itemsize
        if strides is None:
            strides, step = [], 1
            for size in reversed(self.shape):
                strides.insert(0, step)
                step *= size
        self._strides = tuple(strides)

    def data_ptr(self) -> int:
        return self._address

    def stride(self):
        return self._strides

    def numel(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count

    def element_size(self) -> int:
        return self._itemsize

    def is_contiguous(self) -> bool:
        return self._strides == FakeTensor(self.shape)._strides


class RecordingCublasLt:
    """A simulated cuBLASLt: hands out handles, records every call with what its
    pointer arguments pointed at, offers `algorithms` algorithms, and fails the
    functions named in `failing` with their status."""

    def __init__(self, algorithms: int = 1, failing: dict[str, int] | None = None):
        self.calls: list[tuple] = []
        self.next_handle = 0x1000
        self.live: set[int] = set()
        self.algorithms = algorithms
        self.failing = failing or {}
        names = ("cublasLtCreate", "cublasLtMatmulDescCreate", "cublasLtMatrixLayoutCreate",
                 "cublasLtMatmulPreferenceCreate")
        functions = {name: self._creator(name) for name in names}
        for name in ("cublasLtDestroy", "cublasLtMatmulDescDestroy", "cublasLtMatrixLayoutDestroy",
                     "cublasLtMatmulPreferenceDestroy"):
            functions[name] = self._destroyer(name)
        for name in ("cublasLtMatmulDescSetAttribute", "cublasLtMatmulPreferenceSetAttribute"):
            functions[name] = self._setter(name)
        functions["cublasLtMatmulAlgoGetHeuristic"] = self._heuristic
        functions["cublasLtMatmul"] = self._matmul
        functions["cublasLtGetStatusName"] = lambda status: {15: b"CUBLAS_STATUS_NOT_SUPPORTED"}.get(status)
        functions["cublasLtGetStatusString"] = lambda status: b"the functionality requested is not supported"
        self.library = SimulatedLibrary(functions)

    def _status(self, name: str) -> int:
        return self.failing.get(name, 0)

    def _creator(self, name):
        def create(out, *arguments):
            self.next_handle += 0x10
            SimulatedLibrary.target(out).value = self.next_handle
            self.live.add(self.next_handle)
            self.calls.append((name, self.next_handle, *arguments))
            return self._status(name)
        return create

    def _destroyer(self, name):
        def destroy(handle):
            self.live.remove(handle)
            self.calls.append((name, handle))
            return self._status(name)
        return destroy

    def _setter(self, name):
        def set_attribute(owner, attribute, buffer, size):
            value = SimulatedLibrary.target(buffer)
            assert ctypes.sizeof(value) == size
            self.calls.append((name, owner, int(attribute), type(value), value.value))
            return self._status(name)
        return set_attribute

    def _heuristic(self, handle, desc, a, b, c, d, preference, requested, results, count):
        self.calls.append(("cublasLtMatmulAlgoGetHeuristic", handle, desc, a, b, c, d, preference, requested))
        result = SimulatedLibrary.target(results)
        result.algo.data[0] = 0xA160
        SimulatedLibrary.target(count).value = self.algorithms
        return self._status("cublasLtMatmulAlgoGetHeuristic")

    def _matmul(self, handle, desc, alpha, a, a_layout, b, b_layout, beta, c, c_layout, d, d_layout, algo,
                workspace, workspace_size, stream):
        self.calls.append(("cublasLtMatmul", handle, desc, SimulatedLibrary.target(alpha).value, a, a_layout, b,
                           b_layout, SimulatedLibrary.target(beta).value, c, c_layout, d, d_layout,
                           SimulatedLibrary.target(algo).data[0], workspace, workspace_size, stream))
        return self._status("cublasLtMatmul")

    def named(self, name: str) -> list[tuple]:
        return [call for call in self.calls if call[0] == name]


@pytest.fixture
def simulated(monkeypatch):
    """Makes a CublasLt over a fresh simulated cuBLASLt, which stays at `simulated.recording`."""

    def make(workspace=None, **options):
        recording = make.recording = RecordingCublasLt(**options)
        monkeypatch.setattr(cublas, "cublaslt_library", lambda: CublasLtLibrary(recording.library, "simulated"))
        return CublasLt(workspace or FakeTensor((WORKSPACE_BYTES,), "uint8", address=WORKSPACE, itemsize=1))

    return make


A = 0x7F0000000000
B = 0x7F0000100000
C = 0x7F0000200000
D = 0x7F0000300000
WORKSPACE = 0x7E0000000000
WORKSPACE_BYTES = 32 * 1024 * 1024


def test_matmul_computes_c_from_b_and_a_column_major(simulated):
    handle = simulated()
    recording = simulated.recording
    a, b, c = FakeTensor((128, 64), address=A), FakeTensor((256, 64), address=B), FakeTensor((128, 256), address=C)
    handle.matmul(a, b, c)
    (_, handle_value), = recording.named("cublasLtCreate")
    (_, desc, compute, scale), = recording.named("cublasLtMatmulDescCreate")
    assert (compute, scale) == (ComputeType.COMPUTE_32F, DataType.R_32F)
    assert [call[2:] for call in recording.named("cublasLtMatmulDescSetAttribute")] == [
        (MatmulDescAttribute.TRANSA, ctypes.c_int32, Operation.T),
        (MatmulDescAttribute.TRANSB, ctypes.c_int32, Operation.N)]
    # M, N, K = 128, 256, 64: cuBLAS's A is b as (K, N), its B is a as (K, M), C and D are (N, M).
    layouts = recording.named("cublasLtMatrixLayoutCreate")
    assert [call[2:] for call in layouts] == [(DataType.R_16F, 64, 256, 64), (DataType.R_16F, 64, 128, 64),
                                              (DataType.R_16F, 256, 128, 256), (DataType.R_16F, 256, 128, 256)]
    (_, preference), = recording.named("cublasLtMatmulPreferenceCreate")
    assert [call[2:] for call in recording.named("cublasLtMatmulPreferenceSetAttribute")] == [
        (PreferenceAttribute.MAX_WORKSPACE_BYTES, ctypes.c_uint64, WORKSPACE_BYTES),
        (PreferenceAttribute.MIN_ALIGNMENT_A_BYTES, ctypes.c_uint32, 256),
        (PreferenceAttribute.MIN_ALIGNMENT_B_BYTES, ctypes.c_uint32, 256),
        (PreferenceAttribute.MIN_ALIGNMENT_C_BYTES, ctypes.c_uint32, 256),
        (PreferenceAttribute.MIN_ALIGNMENT_D_BYTES, ctypes.c_uint32, 256)]
    layout_handles = [call[1] for call in layouts]
    (heuristic,) = recording.named("cublasLtMatmulAlgoGetHeuristic")
    assert heuristic[1:] == (handle_value, desc, *layout_handles, preference, 1)
    assert preference not in recording.live, "the preference is released once the algorithm is chosen"
    (matmul,) = recording.named("cublasLtMatmul")
    assert matmul[1:] == (handle_value, desc, 1.0, B, layout_handles[0], A, layout_handles[1], 0.0, 0,
                          layout_handles[2], C, layout_handles[3], 0xA160, WORKSPACE, WORKSPACE_BYTES, 0)


def test_a_plan_is_made_once_per_problem(simulated):
    handle = simulated()
    recording = simulated.recording
    a, b, c = FakeTensor((16, 32), address=A), FakeTensor((8, 32), address=B), FakeTensor((16, 8), address=C)
    handle.matmul(a, b, c)
    handle.matmul(a, b, c)
    assert len(recording.named("cublasLtMatmulAlgoGetHeuristic")) == 1
    assert len(recording.named("cublasLtMatmul")) == 2
    handle.matmul(FakeTensor((17, 32), address=A), b, FakeTensor((17, 8), address=C))
    assert len(recording.named("cublasLtMatmulAlgoGetHeuristic")) == 2


def test_float8_uses_fast_accumulation_and_a_float16_c(simulated):
    handle = simulated()
    recording = simulated.recording
    a = FakeTensor((64, 32), "float8_e4m3fn", address=A, itemsize=1)
    b = FakeTensor((16, 32), "float8_e4m3fn", address=B, itemsize=1)
    c = FakeTensor((64, 16), "float8_e4m3fn", address=C, itemsize=1)
    handle.matmul(a, b, c)
    assert recording.named("cublasLtMatmulDescCreate")[0][2:] == (ComputeType.COMPUTE_32F, DataType.R_32F)
    assert (MatmulDescAttribute.FAST_ACCUM, ctypes.c_int8, 1) in [
        call[2:] for call in recording.named("cublasLtMatmulDescSetAttribute")]
    assert [call[2] for call in recording.named("cublasLtMatrixLayoutCreate")] == [
        DataType.R_8F_E4M3, DataType.R_8F_E4M3, DataType.R_16F, DataType.R_8F_E4M3]


def test_float32_multiplies_in_tf32(simulated):
    handle = simulated()
    a, b, c = (FakeTensor(shape, "float32", address=address, itemsize=4)
               for shape, address in (((8, 8), A), ((8, 8), B), ((8, 8), C)))
    handle.matmul(a, b, c)
    assert simulated.recording.named("cublasLtMatmulDescCreate")[0][2] == ComputeType.COMPUTE_32F_FAST_TF32


def test_gemm_passes_alpha_beta_and_c(simulated):
    handle = simulated()
    recording = simulated.recording
    a, b = FakeTensor((32, 16), "bfloat16", address=A), FakeTensor((8, 16), "bfloat16", address=B)
    c, d = FakeTensor((32, 8), "bfloat16", address=C), FakeTensor((32, 8), "bfloat16", address=D)
    handle.gemm(a, b, c, d, 0.5, 2)
    (matmul,) = recording.named("cublasLtMatmul")
    assert (matmul[3], matmul[4], matmul[6], matmul[8], matmul[9], matmul[11]) == (0.5, B, A, 2.0, C, D)
    assert [call[2] for call in recording.named("cublasLtMatrixLayoutCreate")] == [DataType.R_16BF] * 4


def test_gemm_of_float8_takes_a_float16_c(simulated):
    handle = simulated()
    a = FakeTensor((32, 16), "float8_e4m3fn", address=A, itemsize=1)
    b = FakeTensor((8, 16), "float8_e4m3fn", address=B, itemsize=1)
    d = FakeTensor((32, 8), "float8_e4m3fn", address=D, itemsize=1)
    handle.gemm(a, b, FakeTensor((32, 8), "float16", address=C), d, 1.0, 1.0)
    with pytest.raises(CublasError, match=r"C dtype must be torch.float16 for torch.float8_e4m3fn inputs, got "
                                          r"torch.float8_e4m3fn"):
        handle.gemm(a, b, FakeTensor((32, 8), "float8_e4m3fn", address=C, itemsize=1), d, 1.0, 1.0)


def test_alignment_of_each_pointer_is_told_to_the_heuristic(simulated):
    handle = simulated()
    a = FakeTensor((16, 32), address=A + 2)     # a view starting one element in
    b = FakeTensor((8, 32), address=B + 64)
    c = FakeTensor((16, 8), address=C + 16)
    handle.gemm(a, b, c, FakeTensor((16, 8), address=D + 512), 1.0, 1.0)
    attributes = {call[2]: call[4] for call in simulated.recording.named("cublasLtMatmulPreferenceSetAttribute")}
    # cuBLAS's A is our b, its B our a.
    assert [attributes[attribute] for attribute in list(PreferenceAttribute)[1:]] == [64, 2, 16, 256]


def test_workspace_is_used_from_its_first_256_byte_boundary(simulated):
    handle = simulated(FakeTensor((4096,), "uint8", address=WORKSPACE + 100, itemsize=1))
    assert handle.workspace_size == 4096 - 156
    handle.matmul(FakeTensor((8, 8), address=A), FakeTensor((8, 8), address=B), FakeTensor((8, 8), address=C))
    (matmul,) = simulated.recording.named("cublasLtMatmul")
    assert matmul[-3:] == (WORKSPACE + 256, 4096 - 156, 0)


def test_close_releases_everything_and_is_final(simulated):
    handle = simulated()
    recording = simulated.recording
    handle.matmul(FakeTensor((8, 8), address=A), FakeTensor((8, 8), address=B), FakeTensor((8, 8), address=C))
    handle.matmul(FakeTensor((8, 16), address=A), FakeTensor((8, 16), address=B), FakeTensor((8, 8), address=C))
    assert recording.live
    handle.close()
    assert not recording.live
    handle.close()
    with pytest.raises(CublasError, match="CublasLt.matmul: this CublasLt is closed"):
        handle.matmul(FakeTensor((8, 8), address=A), FakeTensor((8, 8), address=B), FakeTensor((8, 8), address=C))
    with simulated() as scoped:
        assert "device=cuda:0" in repr(scoped) and simulated.recording.live
    assert not simulated.recording.live and "closed" in repr(scoped)


def test_failing_call_names_the_function_and_status(simulated):
    handle = simulated(failing={"cublasLtMatmulAlgoGetHeuristic": 15})
    with pytest.raises(CublasError) as caught:
        handle.matmul(FakeTensor((8, 8), address=A), FakeTensor((8, 8), address=B), FakeTensor((8, 8), address=C))
    message = str(caught.value)
    assert message.startswith("cublasLtMatmulAlgoGetHeuristic failed: CUBLAS_STATUS_NOT_SUPPORTED (15): the "
                              "functionality requested is not supported")
    assert "for torch.float16 (M, N, K) = (8, 8, 8)" in message
    assert (caught.value.call, caught.value.status) == ("cublasLtMatmulAlgoGetHeuristic", 15)
    assert isinstance(caught.value, RuntimeError), "upstream's binding raises RuntimeError"
    assert not (simulated.recording.live - {simulated.recording.named("cublasLtCreate")[0][1]}), \
        "a failed plan leaves nothing behind"
    copy = pickle.loads(pickle.dumps(caught.value))
    assert str(copy) == message and copy.status == 15


def test_status_without_cublaslts_own_text_is_named_from_the_table():
    library = CublasLtLibrary(RecordingCublasLt().library)
    assert library.status_name(7) == "CUBLAS_STATUS_INVALID_VALUE" and library.status_name(99) == "cuBLAS status 99"
    assert library.status_name(15) == "CUBLAS_STATUS_NOT_SUPPORTED"


def test_no_algorithm_is_an_error_that_names_the_problem(simulated):
    handle = simulated(algorithms=0)
    a = FakeTensor((8, 16), "float8_e4m3fn", address=A, itemsize=1)
    b = FakeTensor((4, 16), "float8_e4m3fn", address=B, itemsize=1)
    with pytest.raises(CublasError, match=r"found no algorithm for torch.float8_e4m3fn \(M, N, K\) = \(8, 4, 16\) "
                                          r"\(cuBLASLt multiplies float8 on compute capability 8.9 or newer\)"):
        handle.matmul(a, b, FakeTensor((8, 4), "float8_e4m3fn", address=C, itemsize=1))


def test_empty_output_makes_no_call(simulated):
    handle = simulated()
    handle.matmul(FakeTensor((0, 8), address=A), FakeTensor((4, 8), address=B), FakeTensor((0, 4), address=C))
    assert not simulated.recording.named("cublasLtMatmul")


# ---------------------------------------------------------------- the argument checks


def matrices(dtype="float16", m=16, n=8, k=32):
    return FakeTensor((m, k), dtype, address=A), FakeTensor((n, k), dtype, address=B), FakeTensor((m, n), dtype,
                                                                                                   address=C)


@pytest.mark.parametrize("change, message", [
    (lambda a, b, c: (a, FakeTensor(b.shape, "bfloat16"), c),
     r"CublasLt.matmul: data types do not match: A is torch.float16, B is torch.bfloat16, C is torch.float16"),
    (lambda a, b, c: tuple(FakeTensor(t.shape, "int8") for t in (a, b, c)),
     r"unsupported data type torch.int8; cuBLASLt takes torch.float16, torch.bfloat16, torch.float32, "
     r"torch.float8_e4m3fn"),
    (lambda a, b, c: (FakeTensor((2, 16, 32)), b, c), r"only 2D matrices are supported; A has shape \[2, 16, 32\]"),
    (lambda a, b, c: (a, FakeTensor((32, 8)), c),
     r"A is \[16, 32\], B is \[32, 8\]; expected A.shape\[1\] == B.shape\[1\] \(B is given transposed"),
    (lambda a, b, c: (a, b, FakeTensor((8, 8))), r"expected A.shape\[0\] == C.shape\[0\]"),
    (lambda a, b, c: (a, b, FakeTensor((16, 16))), r"expected B.shape\[0\] == C.shape\[1\]"),
    (lambda a, b, c: (FakeTensor((16, 0)), FakeTensor((8, 0)), c), r"K is 0 \(A is \[16, 0\]\)"),
    (lambda a, b, c: (FakeTensor(a.shape, device=("cpu", None)), b, c), r"A must be a CUDA tensor; it is on cpu"),
    (lambda a, b, c: (a, b, FakeTensor(c.shape, device=("cuda", 1))),
     r"C is on cuda:1 but this CublasLt's workspace is on cuda:0; use one CublasLt per device"),
    (lambda a, b, c: (a, FakeTensor((8, 32), strides=(1, 8)), c),
     r"B must be contiguous \(row-major\): its shape \[8, 32\] has strides \[1, 8\]; pass B.contiguous\(\)"),
    (lambda a, b, c: (FakeTensor((16, 32), strides=(64, 1)), b, c), r"A must be contiguous"),
])
def test_matmul_refuses_bad_arguments(simulated, change, message):
    handle = simulated()
    with pytest.raises(CublasError, match=message):
        handle.matmul(*change(*matrices()))
    assert not simulated.recording.named("cublasLtMatmul")


def test_single_row_or_column_strides_do_not_matter(simulated):
    handle = simulated()
    # A (1, K) row and a (N, 1) column are contiguous whatever the stride of their size-1 dimension.
    handle.matmul(FakeTensor((1, 32), strides=(7, 1)), FakeTensor((8, 32)), FakeTensor((1, 8), strides=(99, 1)))
    handle.matmul(FakeTensor((16, 1), strides=(1, 5)), FakeTensor((8, 1), strides=(1, 3)), FakeTensor((16, 8)))
    assert len(simulated.recording.named("cublasLtMatmul")) == 2


def test_gemm_checks_c_against_d(simulated):
    handle = simulated()
    a, b, d = matrices()
    with pytest.raises(CublasError, match=r"CublasLt.gemm: C and D shapes must match; C is \[8, 8\], D is \[16, 8\]"):
        handle.gemm(a, b, FakeTensor((8, 8)), d, 1.0, 0.0)
    with pytest.raises(CublasError, match=r"C dtype must be torch.float16 for torch.float16 inputs, got torch.float32"):
        handle.gemm(a, b, FakeTensor((16, 8), "float32"), d, 1.0, 0.0)
    with pytest.raises(CublasError, match=r"CublasLt.gemm: C must be contiguous"):
        handle.gemm(a, b, FakeTensor((16, 8), strides=(1, 16)), d, 1.0, 0.0)
    with pytest.raises(CublasError, match=r"CublasLt.gemm: data types do not match: A is torch.float16, "
                                          r"B is torch.float16, D is torch.bfloat16"):
        handle.gemm(a, b, FakeTensor((16, 8)), FakeTensor((16, 8), "bfloat16"), 1.0, 0.0)


def test_workspace_must_be_one_cuda_buffer(simulated):
    with pytest.raises(CublasError, match="the workspace must be a CUDA tensor; it is on cpu"):
        simulated(FakeTensor((1024,), "uint8", device=("cpu", None), itemsize=1))
    with pytest.raises(CublasError, match="the workspace must be a contiguous tensor"):
        simulated(FakeTensor((64, 64), "uint8", strides=(1, 64), itemsize=1))


# ---------------------------------------------------------------- on a GPU, against torch


@pytest.fixture(scope="module")
def gpu():
    """(torch, one CublasLt over a 32 MiB workspace, as upstream's tutorials make it)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA GPU")
    from tritone._C.libtriton import nvidia

    handle = nvidia.cublas.CublasLt(torch.empty(32 * 1024 * 1024, device="cuda", dtype=torch.uint8))
    yield torch, handle
    torch.cuda.synchronize()
    handle.close()


def _needs_float8(torch) -> None:
    if torch.cuda.get_device_capability() < (8, 9) or not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("cuBLASLt multiplies float8 on compute capability 8.9 or newer")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("m, n, k", [(128, 256, 64), (257, 129, 96), (1, 64, 512)])
def test_gpu_matmul_against_torch(gpu, dtype_name, m, n, k):
    torch, handle = gpu
    dtype = getattr(torch, dtype_name)
    if dtype is torch.bfloat16 and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bfloat16 matmul")
    generator = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn((m, k), device="cuda", dtype=dtype, generator=generator)
    b = torch.randn((n, k), device="cuda", dtype=dtype, generator=generator)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    handle.matmul(a, b, c)
    reference = (a.float() @ b.float().T).to(dtype)
    tolerance = 2e-2 if dtype is torch.bfloat16 else 1e-2
    torch.testing.assert_close(c.float(), reference.float(), atol=tolerance * k ** 0.5, rtol=tolerance)


@pytest.mark.gpu
def test_gpu_float32_matmul_in_tf32(gpu):
    torch, handle = gpu
    a = torch.randn((96, 128), device="cuda")
    b = torch.randn((64, 128), device="cuda")
    c = torch.full((96, 64), float("nan"), device="cuda")
    handle.matmul(a, b, c)
    # TF32 keeps 10 bits of each input's mantissa: about 1e-3 relative per product, over 128 of them.
    torch.testing.assert_close(c, a @ b.T, atol=0.1, rtol=1e-2)


@pytest.mark.gpu
def test_gpu_matmul_runs_on_torchs_current_stream(gpu):
    torch, handle = gpu
    a = torch.randn((64, 32), device="cuda", dtype=torch.float16)
    a_new = torch.randn((64, 32), device="cuda", dtype=torch.float16)
    b = torch.randn((48, 32), device="cuda", dtype=torch.float16)
    c = torch.full((64, 48), float("nan"), device="cuda", dtype=torch.float16)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        # A matmul queued on another stream would run during the sleep, before `a` is overwritten.
        torch.cuda._sleep(100_000_000)
        a.copy_(a_new)
        handle.matmul(a, b, c)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, (a_new.float() @ b.float().T).half(), atol=5e-2, rtol=1e-2)


@pytest.mark.gpu
def test_gpu_float8_matmul_against_float32(gpu):
    torch, handle = gpu
    _needs_float8(torch)
    m, n, k = 128, 64, 256
    generator = torch.Generator(device="cuda").manual_seed(1)
    # Multiples of 1/4 up to 2 are exact in e4m3: the products are exact, only the sum and the output round.
    a32 = torch.randint(-8, 9, (m, k), device="cuda", generator=generator).float() / 4
    b32 = torch.randint(-8, 9, (n, k), device="cuda", generator=generator).float() / 4
    a, b = a32.to(torch.float8_e4m3fn), b32.to(torch.float8_e4m3fn)
    assert torch.equal(a.float(), a32) and torch.equal(b.float(), b32)
    c = torch.empty((m, n), device="cuda", dtype=torch.float8_e4m3fn)
    handle.matmul(a, b, c)
    # The result is rounded to e4m3 (3 mantissa bits: a step of 1/8 relative) and saturates at 448.
    expected = (a32 @ b32.T).clamp(-448, 448)
    torch.testing.assert_close(c.float(), expected, rtol=0.125, atol=0.0625)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_gpu_gemm_alpha_beta_against_torch(gpu, dtype_name):
    torch, handle = gpu
    dtype = getattr(torch, dtype_name)
    if dtype is torch.bfloat16 and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bfloat16 matmul")
    m, n, k = 96, 80, 64
    a = torch.randn((m, k), device="cuda", dtype=dtype)
    b = torch.randn((n, k), device="cuda", dtype=dtype)
    c = torch.randn((m, n), device="cuda", dtype=dtype)
    d = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
    handle.gemm(a, b, c, d, 0.5, -2.0)
    reference = 0.5 * (a.float() @ b.float().T) - 2.0 * c.float()
    torch.testing.assert_close(d.float(), reference, atol=0.1, rtol=2e-2)


@pytest.mark.gpu
def test_gpu_float8_gemm_adds_a_float16_c(gpu):
    torch, handle = gpu
    _needs_float8(torch)
    m, n, k = 64, 32, 64
    a32 = torch.randint(-4, 5, (m, k), device="cuda").float() / 2
    b32 = torch.randint(-4, 5, (n, k), device="cuda").float() / 2
    c = torch.randint(-4, 5, (m, n), device="cuda").half()
    d = torch.empty((m, n), device="cuda", dtype=torch.float8_e4m3fn)
    handle.gemm(a32.to(torch.float8_e4m3fn), b32.to(torch.float8_e4m3fn), c, d, 1.0, 1.0)
    expected = (a32 @ b32.T + c.float()).clamp(-448, 448)
    torch.testing.assert_close(d.float(), expected, rtol=0.125, atol=0.0625)


@pytest.mark.gpu
def test_gpu_rejects_a_transposed_view(gpu):
    torch, handle = gpu
    a = torch.randn((64, 32), device="cuda", dtype=torch.float16)
    b = torch.randn((32, 48), device="cuda", dtype=torch.float16).T  # (48, 32), column-major
    c = torch.full((64, 48), float("nan"), device="cuda", dtype=torch.float16)
    with pytest.raises(CublasError, match="B must be contiguous"):
        handle.matmul(a, b, c)
    assert torch.isnan(c).all(), "a refused call writes nothing"
    handle.matmul(a, b.contiguous(), c)
    torch.testing.assert_close(c, (a.float() @ b.float().T).half(), atol=5e-2, rtol=1e-2)


@pytest.mark.gpu
def test_gpu_unaligned_view_is_multiplied_right(gpu):
    torch, handle = gpu
    # Starting one element in, `a` is only 2-byte aligned: cuBLASLt must be told so, not assume 256.
    storage = torch.randn((64 * 32 + 1,), device="cuda", dtype=torch.float16)
    a = storage[1:].view(64, 32)
    b = torch.randn((48, 32), device="cuda", dtype=torch.float16)
    c = torch.full((64, 48), float("nan"), device="cuda", dtype=torch.float16)
    handle.matmul(a, b, c)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, (a.float() @ b.float().T).half(), atol=5e-2, rtol=1e-2)
