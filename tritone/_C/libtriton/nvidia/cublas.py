"""`triton._C.libtriton.nvidia.cublas`: `CublasLt`, the cuBLASLt matrix multiply
that upstream Triton's tutorials and tests time and check their kernels against
(`cublas.matmul(a, b, c)`), called through ctypes.

The contract is upstream Triton 3.6's binding:

- `CublasLt(workspace)`: a CUDA tensor whose bytes cuBLASLt may use as scratch
  (the tutorials pass 32 MiB of uint8). It is kept alive as long as the object.
- `matmul(a, b, c)`: `c = a @ b.T`. `a` is (M, K), `b` is (N, K) (B comes
  transposed), `c` is (M, N), all of one dtype: float16, bfloat16, float32
  (multiplied in TF32) or float8_e4m3fn (accumulated in float32 with cuBLASLt's
  fast float8 accumulation, the result rounded to float8_e4m3fn).
- `gemm(a, b, c, d, alpha, beta)`: `d = alpha * a @ b.T + beta * c`, with `c` and
  `d` (M, N). `c` is float16 when the inputs are float8_e4m3fn, else of their
  dtype. (Upstream asks float16 of `c` whatever the inputs and hands cuBLASLt
  that memory as the inputs' type, which only agrees for float16 and float8.)

Tensors are read through `data_ptr()`, `shape`, `dtype`, `stride()` and `device`
(torch tensors; torch is not imported here). They must be row-major contiguous
CUDA tensors on the workspace's device; the work is queued on torch's current
stream of that device (upstream's binding uses the legacy default stream). Bad
arguments and failing cuBLASLt calls raise `CublasError`, a `RuntimeError` as
upstream's are.

cuBLAS reads matrices column-major, and a row-major (R, C) matrix read
column-major is its (C, R) transpose. So `c = a @ b.T` is computed as the
column-major `c.T = b @ a.T`: cuBLAS's A is the memory of `b` read as (K, N)
and transposed (op T), its B the memory of `a` read as (K, M) (op N), and the
(N, M) column-major result is `c` row-major. That "TN" form is also the only
one cuBLASLt's float8 kernels take.
"""

from __future__ import annotations

import contextlib
import ctypes
import enum
import sys
import threading
from ctypes import POINTER, byref, c_char_p, c_float, c_int8, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any

from ....errors import TritonError

__all__ = ["CublasError", "CublasLt"]


class Status(enum.IntEnum):
    """cublasStatus_t."""

    SUCCESS = 0
    NOT_INITIALIZED = 1
    ALLOC_FAILED = 3
    INVALID_VALUE = 7
    ARCH_MISMATCH = 8
    MAPPING_ERROR = 11
    EXECUTION_FAILED = 13
    INTERNAL_ERROR = 14
    NOT_SUPPORTED = 15
    LICENSE_ERROR = 16


class DataType(enum.IntEnum):
    """cudaDataType_t (library_types.h): the element types used here."""

    R_32F = 0
    R_16F = 2
    R_16BF = 14
    R_8F_E4M3 = 28


class ComputeType(enum.IntEnum):
    """cublasComputeType_t: what products are accumulated in."""

    COMPUTE_32F = 68
    COMPUTE_32F_FAST_TF32 = 77


class Operation(enum.IntEnum):
    """cublasOperation_t."""

    N = 0
    T = 1


class MatmulDescAttribute(enum.IntEnum):
    """cublasLtMatmulDescAttributes_t: TRANSA and TRANSB take an int32_t, FAST_ACCUM an int8_t."""

    TRANSA = 3
    TRANSB = 4
    FAST_ACCUM = 25


class PreferenceAttribute(enum.IntEnum):
    """cublasLtMatmulPreferenceAttributes_t: MAX_WORKSPACE_BYTES takes a uint64_t,
    the MIN_ALIGNMENT ones (bytes; 256 when unset) a uint32_t."""

    MAX_WORKSPACE_BYTES = 1
    MIN_ALIGNMENT_A_BYTES = 5
    MIN_ALIGNMENT_B_BYTES = 6
    MIN_ALIGNMENT_C_BYTES = 7
    MIN_ALIGNMENT_D_BYTES = 8


class MatmulAlgo(ctypes.Structure):
    """cublasLtMatmulAlgo_t: opaque, 64 bytes."""

    _fields_ = [("data", c_uint64 * 8)]


class HeuristicResult(ctypes.Structure):
    """cublasLtMatmulHeuristicResult_t."""

    _fields_ = [("algo", MatmulAlgo), ("workspace_size", c_size_t), ("state", c_int32),
                ("waves_count", c_float), ("reserved", c_int32 * 4)]


# Every function returns a cublasStatus_t, a C enum: 32 bits on every platform tritone runs on.
_PROTOTYPES: dict[str, list[Any]] = {
    "cublasLtCreate": [POINTER(c_void_p)],
    "cublasLtDestroy": [c_void_p],
    "cublasLtMatmulDescCreate": [POINTER(c_void_p), c_int32, c_int32],
    "cublasLtMatmulDescDestroy": [c_void_p],
    "cublasLtMatmulDescSetAttribute": [c_void_p, c_int32, c_void_p, c_size_t],
    "cublasLtMatrixLayoutCreate": [POINTER(c_void_p), c_int32, c_uint64, c_uint64, c_int64],
    "cublasLtMatrixLayoutDestroy": [c_void_p],
    "cublasLtMatmulPreferenceCreate": [POINTER(c_void_p)],
    "cublasLtMatmulPreferenceDestroy": [c_void_p],
    "cublasLtMatmulPreferenceSetAttribute": [c_void_p, c_int32, c_void_p, c_size_t],
    "cublasLtMatmulAlgoGetHeuristic": [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p,
                                       c_int32, POINTER(HeuristicResult), POINTER(c_int32)],
    "cublasLtMatmul": [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p,
                       c_void_p, c_void_p, c_void_p, c_void_p, POINTER(MatmulAlgo), c_void_p, c_size_t, c_void_p],
}


class CublasError(TritonError, RuntimeError):
    """`CublasLt` refused its arguments, or a cuBLASLt call failed: then `call`
    names the function and `status` is its cublasStatus_t."""

    def __init__(self, message: str, call: str = "", status: int | None = None):
        self.message = message
        self.call = call
        self.status = status
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.message, self.call, self.status))


class CublasLtLibrary:
    """One loaded cuBLASLt (what `ctypes.CDLL` returned, or a stand-in with the
    same functions) with the functions `CublasLt` calls prototyped. Each method
    makes one call and raises `CublasError` naming it when it does not succeed;
    handles are returned and taken as integers."""

    def __init__(self, library: Any, path: str = "cuBLASLt"):
        self.path = path
        self._functions: dict[str, Any] = {}
        for name, argtypes in _PROTOTYPES.items():
            function = getattr(library, name)
            function.argtypes = argtypes
            function.restype = c_int32
            self._functions[name] = function
        # The status texts are a convenience: a cuBLASLt without them still works.
        self._status_name = self._optional_text_function(library, "cublasLtGetStatusName")
        self._status_string = self._optional_text_function(library, "cublasLtGetStatusString")

    @staticmethod
    def _optional_text_function(library: Any, name: str) -> Any:
        function = getattr(library, name, None)
        if function is not None:
            function.argtypes = [c_int32]
            function.restype = c_char_p
        return function

    def status_name(self, status: int) -> str:
        """cuBLASLt's name for a status ("CUBLAS_STATUS_NOT_SUPPORTED")."""
        known = _text(self._status_name, status)
        if known:
            return known
        try:
            return f"CUBLAS_STATUS_{Status(status).name}"
        except ValueError:
            return f"cuBLAS status {status}"

    def status_string(self, status: int) -> str:
        """cuBLASLt's description of a status."""
        return _text(self._status_string, status) or "no description from cuBLASLt"

    def call(self, name: str, *arguments: Any, detail: str = "") -> None:
        """Call `name`; raise CublasError naming it, its status and `detail` unless it succeeds."""
        status = int(self._functions[name](*arguments))
        if status != Status.SUCCESS:
            message = f"{name} failed: {self.status_name(status)} ({status}): {self.status_string(status)}"
            raise CublasError(f"{message}\n{detail}" if detail else message, name, status)

    def create(self) -> int:
        handle = c_void_p()
        self.call("cublasLtCreate", byref(handle))
        return handle.value or 0

    def destroy(self, handle: int) -> None:
        self.call("cublasLtDestroy", handle)

    def create_matmul_desc(self, compute: ComputeType, scale: DataType) -> int:
        desc = c_void_p()
        self.call("cublasLtMatmulDescCreate", byref(desc), compute, scale)
        return desc.value or 0

    def set_matmul_desc_attribute(self, desc: int, attribute: MatmulDescAttribute, value: Any) -> None:
        """Set `attribute` to `value`, a ctypes scalar of the attribute's C type."""
        self.call("cublasLtMatmulDescSetAttribute", desc, attribute, byref(value), ctypes.sizeof(value))

    def destroy_matmul_desc(self, desc: int) -> None:
        self.call("cublasLtMatmulDescDestroy", desc)

    def create_layout(self, data_type: DataType, rows: int, cols: int, leading: int) -> int:
        """A column-major (rows, cols) matrix of `data_type` whose columns are `leading` elements apart."""
        layout = c_void_p()
        self.call("cublasLtMatrixLayoutCreate", byref(layout), data_type, rows, cols, leading)
        return layout.value or 0

    def destroy_layout(self, layout: int) -> None:
        self.call("cublasLtMatrixLayoutDestroy", layout)

    def create_preference(self) -> int:
        preference = c_void_p()
        self.call("cublasLtMatmulPreferenceCreate", byref(preference))
        return preference.value or 0

    def set_preference_attribute(self, preference: int, attribute: PreferenceAttribute, value: Any) -> None:
        """Set `attribute` to `value`, a ctypes scalar of the attribute's C type."""
        self.call("cublasLtMatmulPreferenceSetAttribute", preference, attribute, byref(value), ctypes.sizeof(value))

    def destroy_preference(self, preference: int) -> None:
        self.call("cublasLtMatmulPreferenceDestroy", preference)

    def best_algorithm(self, handle: int, desc: int, layouts: tuple[int, int, int, int], preference: int,
                       problem: str) -> HeuristicResult:
        """The algorithm cuBLASLt's heuristic ranks first for `desc` over the layouts
        of A, B, C and D; raises CublasError naming `problem` when it offers none."""
        result = HeuristicResult()
        count = c_int32(0)
        self.call("cublasLtMatmulAlgoGetHeuristic", handle, desc, *layouts, preference, 1, byref(result),
                  byref(count), detail=f"for {problem}")
        if count.value < 1:
            raise CublasError(f"cublasLtMatmulAlgoGetHeuristic found no algorithm for {problem}",
                              "cublasLtMatmulAlgoGetHeuristic")
        return result

    def matmul(self, handle: int, desc: int, alpha: c_float, a: int, a_layout: int, b: int, b_layout: int,
               beta: c_float, c: int, c_layout: int, d: int, d_layout: int, algo: MatmulAlgo, workspace: int,
               workspace_size: int, stream: int) -> None:
        """Queue `d = alpha * op(a) @ op(b) + beta * c` on `stream`."""
        self.call("cublasLtMatmul", handle, desc, byref(alpha), a, a_layout, b, b_layout, byref(beta), c, c_layout,
                  d, d_layout, byref(algo), workspace, workspace_size, stream)


def _text(function: Any, status: int) -> str | None:
    """What a `const char *(cublasStatus_t)` function answers, None without one."""
    text = function(status) if function is not None else None
    return text.decode("utf-8", "replace") if text else None


_library: CublasLtLibrary | None = None
_library_lock = threading.Lock()


def cublaslt_library() -> CublasLtLibrary:
    """This process's cuBLASLt: the one `backends/cuda/bindings/libs.py` finds for
    this driver, bound on first use. Raises `LibraryNotFound` saying where it
    looked and what to install."""
    global _library
    with _library_lock:
        if _library is None:
            from ....backends.cuda.bindings import libs

            choice = libs.load_cublaslt(driver_version=_driver_version())
            _library = CublasLtLibrary(choice.library, choice.candidate.path)
        return _library


def _driver_version() -> int | None:
    """The CUDA version the driver supports (12080 = 12.8), None when there is no usable driver."""
    from ....backends.cuda.bindings import driver_api

    try:
        return driver_api.driver().driver_version()
    except (TritonError, OSError):
        return None


@dataclass(frozen=True)
class ElementType:
    """How cuBLASLt multiplies matrices of one torch dtype: the type of A, B and D,
    the type it reads C as (`c_dtype` in torch's spelling), what it accumulates in,
    and whether float8's fast accumulation is on."""

    data_type: DataType
    c_type: DataType
    c_dtype: str
    compute: ComputeType
    fast_accum: bool


# By torch dtype name ("float16" of "torch.float16"): what upstream's binding accepts.
ELEMENT_TYPES = {
    "float16": ElementType(DataType.R_16F, DataType.R_16F, "float16", ComputeType.COMPUTE_32F, False),
    "bfloat16": ElementType(DataType.R_16BF, DataType.R_16BF, "bfloat16", ComputeType.COMPUTE_32F, False),
    "float32": ElementType(DataType.R_32F, DataType.R_32F, "float32", ComputeType.COMPUTE_32F_FAST_TF32, False),
    "float8_e4m3fn": ElementType(DataType.R_8F_E4M3, DataType.R_16F, "float16", ComputeType.COMPUTE_32F, True),
}

# cuBLASLt's default (and largest useful) buffer alignment.
_MAX_ALIGNMENT = 256
# Plans kept per CublasLt: one per problem (types, sizes, alignments) seen; the oldest goes first.
_PLANS_KEPT = 64


def _dtype_name(tensor: Any) -> str:
    return str(tensor.dtype).rsplit(".", 1)[-1]


def _alignment(address: int) -> int:
    """The largest power of two up to 256 dividing `address` (256 for a null pointer)."""
    return _MAX_ALIGNMENT if address == 0 else min(_MAX_ALIGNMENT, address & -address)


def _device(tensor: Any) -> tuple[str, int | None]:
    """A tensor's device kind ("cuda", "cpu") and index."""
    device = getattr(tensor, "device", None)
    kind = getattr(device, "type", None) or str(device).split(":", 1)[0]
    return kind, getattr(device, "index", None)


def _device_text(kind: str, index: int | None) -> str:
    return kind if index is None else f"{kind}:{index}"


def _device_guard(index: int | None) -> Any:
    """Make device `index` torch's current one for a while (cuBLASLt works on the
    current device), when torch is in use."""
    torch = sys.modules.get("torch")
    if index is None or torch is None:
        return contextlib.nullcontext()
    try:
        available = torch.cuda.is_available()
    except Exception:  # a torch half imported, or without CUDA
        available = False
    return torch.cuda.device(index) if available else contextlib.nullcontext()


def _current_stream(index: int | None) -> int:
    from ....backends.cuda.driver import NvidiaDriver

    return NvidiaDriver().get_current_stream(index)


@dataclass(frozen=True)
class _Plan:
    """What one problem needs, made once: the operation descriptor, the layouts
    of cuBLAS's A, B, C and D, and the algorithm the heuristic chose."""

    desc: int
    layouts: tuple[int, ...]
    algorithm: HeuristicResult

    def destroy(self, library: CublasLtLibrary) -> None:
        _destroy_descriptors(library, self.desc, self.layouts)


def _destroy_descriptors(library: CublasLtLibrary, desc: int, layouts: tuple[int, ...]) -> None:
    for layout in layouts:
        library.destroy_layout(layout)
    if desc:
        library.destroy_matmul_desc(desc)


class CublasLt:
    """A cuBLASLt handle and the workspace it may use (see the module's docstring).
    `close()` (or leaving a `with` block) releases the handle; so does garbage collection."""

    def __init__(self, workspace: Any):
        self._handle = 0
        self._plans: dict[tuple, _Plan] = {}
        self._lock = threading.Lock()
        kind, index = _device(workspace)
        if kind != "cuda":
            raise CublasError(f"CublasLt: the workspace must be a CUDA tensor; it is on {_device_text(kind, index)}")
        is_contiguous = getattr(workspace, "is_contiguous", None)
        if is_contiguous is not None and not is_contiguous():
            raise CublasError("CublasLt: the workspace must be a contiguous tensor (its bytes are one buffer)")
        pointer = int(workspace.data_ptr())
        end = pointer + int(workspace.numel()) * int(workspace.element_size())
        self.workspace = workspace
        self.device = index
        # cublasLtMatmul takes a 256-byte aligned workspace: the bytes before the first such address go unused.
        self._workspace_pointer = -(-pointer // _MAX_ALIGNMENT) * _MAX_ALIGNMENT
        self.workspace_size = max(0, end - self._workspace_pointer)
        self._library = cublaslt_library()
        with _device_guard(index):
            self._handle = self._library.create()

    def matmul(self, a: Any, b: Any, c: Any) -> None:
        """`c = a @ b.T`: `a` (M, K), `b` (N, K), `c` (M, N), one dtype among float16,
        bfloat16, float32 and float8_e4m3fn."""
        call = "CublasLt.matmul"
        element, (m, n, k) = self._check(call, a, b, c, "C")
        self._run(call, element, m, n, k, a, b, None, c, 1.0, 0.0)

    def gemm(self, a: Any, b: Any, c: Any, d: Any, alpha: float, beta: float) -> None:
        """`d = alpha * a @ b.T + beta * c`: `a` (M, K), `b` (N, K), `c` and `d` (M, N);
        `a`, `b` and `d` of one dtype among float16, bfloat16, float32 and
        float8_e4m3fn, `c` float16 for float8_e4m3fn inputs, else of their dtype."""
        call = "CublasLt.gemm"
        element, (m, n, k) = self._check(call, a, b, d, "D")
        if _dtype_name(c) != element.c_dtype:
            raise CublasError(f"{call}: C dtype must be torch.{element.c_dtype} for torch.{_dtype_name(a)} "
                              f"inputs, got {c.dtype}")
        if tuple(c.shape) != tuple(d.shape):
            raise CublasError(f"{call}: C and D shapes must match; C is {list(c.shape)}, D is {list(d.shape)}")
        self._check_placement(call, {"C": c})
        self._run(call, element, m, n, k, a, b, c, d, float(alpha), float(beta))

    def close(self) -> None:
        """Release the handle and everything made for it; the object is unusable after."""
        handle, self._handle = self._handle, 0
        plans, self._plans = self._plans, {}
        if not handle:
            return
        with _device_guard(self.device):
            for plan in plans.values():
                plan.destroy(self._library)
            self._library.destroy(handle)

    def __enter__(self) -> CublasLt:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass  # at interpreter exit the context or the library may already be gone

    def __repr__(self) -> str:
        return (f"CublasLt(device={_device_text('cuda', self.device)}, workspace={self.workspace_size} bytes, "
                f"{'closed' if not self._handle else self._library.path})")

    # ---------------------------------------------------------------- arguments

    def _check(self, call: str, a: Any, b: Any, out: Any, out_name: str) -> tuple[ElementType, tuple[int, int, int]]:
        """The element type and (M, N, K) of `out = a @ b.T`, after checking what
        upstream's binding checks (in its order), then where the tensors live."""
        dtypes = {"A": str(a.dtype), "B": str(b.dtype), out_name: str(out.dtype)}
        if len(set(dtypes.values())) != 1:
            listed = ", ".join(f"{name} is {dtype}" for name, dtype in dtypes.items())
            raise CublasError(f"{call}: data types do not match: {listed}")
        element = ELEMENT_TYPES.get(_dtype_name(a))
        if element is None:
            supported = ", ".join(f"torch.{name}" for name in ELEMENT_TYPES)
            raise CublasError(f"{call}: unsupported data type {a.dtype}; cuBLASLt takes {supported}")
        shapes = {"A": tuple(a.shape), "B": tuple(b.shape), out_name: tuple(out.shape)}
        for name, shape in shapes.items():
            if len(shape) != 2:
                raise CublasError(f"{call}: only 2D matrices are supported; {name} has shape {list(shape)}")
        (m, k), (n, b_k), (out_m, out_n) = shapes["A"], shapes["B"], shapes[out_name]
        if k != b_k:
            raise CublasError(f"{call}: matrix dimensions do not match: A is {[m, k]}, B is {[n, b_k]}; expected "
                              "A.shape[1] == B.shape[1] (B is given transposed, as (N, K))")
        if m != out_m:
            raise CublasError(f"{call}: matrix dimensions do not match: A is {[m, k]}, {out_name} is "
                              f"{[out_m, out_n]}; expected A.shape[0] == {out_name}.shape[0]")
        if n != out_n:
            raise CublasError(f"{call}: matrix dimensions do not match: B is {[n, b_k]}, {out_name} is "
                              f"{[out_m, out_n]}; expected B.shape[0] == {out_name}.shape[1] "
                              "(B is given transposed, as (N, K))")
        if k == 0 and m and n:
            raise CublasError(f"{call}: K is 0 (A is {[m, k]}); cuBLASLt multiplies matrices with K >= 1")
        self._check_placement(call, {"A": a, "B": b, out_name: out})
        return element, (m, n, k)

    def _check_placement(self, call: str, tensors: dict[str, Any]) -> None:
        """Each tensor is a row-major contiguous CUDA tensor on the workspace's device."""
        for name, tensor in tensors.items():
            kind, index = _device(tensor)
            if kind != "cuda":
                raise CublasError(f"{call}: {name} must be a CUDA tensor; it is on {_device_text(kind, index)}")
            if index != self.device:
                raise CublasError(f"{call}: {name} is on {_device_text(kind, index)} but this CublasLt's workspace "
                                  f"is on {_device_text('cuda', self.device)}; use one CublasLt per device")
            rows, cols = tuple(tensor.shape)
            strides = tuple(tensor.stride())
            if (cols > 1 and strides[1] != 1) or (rows > 1 and strides[0] != cols):
                raise CublasError(f"{call}: {name} must be contiguous (row-major): its shape {[rows, cols]} has "
                                  f"strides {list(strides)}; pass {name}.contiguous()")

    # ---------------------------------------------------------------- the call

    def _run(self, call: str, element: ElementType, m: int, n: int, k: int, a: Any, b: Any, c: Any, d: Any,
             alpha: float, beta: float) -> None:
        if not self._handle:
            raise CublasError(f"{call}: this CublasLt is closed")
        if not m or not n:
            return  # no element to write
        a_pointer, b_pointer, d_pointer = int(a.data_ptr()), int(b.data_ptr()), int(d.data_ptr())
        c_pointer = int(c.data_ptr()) if c is not None else 0
        # Aligned addresses let cuBLASLt choose vectorised kernels; a view into a tensor may be less aligned.
        alignments = (_alignment(b_pointer), _alignment(a_pointer), _alignment(c_pointer), _alignment(d_pointer))
        with _device_guard(self.device):
            plan = self._plan(element, m, n, k, alignments)
            self._library.matmul(self._handle, plan.desc, c_float(alpha), b_pointer, plan.layouts[0], a_pointer,
                                 plan.layouts[1], c_float(beta), c_pointer, plan.layouts[2], d_pointer,
                                 plan.layouts[3], plan.algorithm.algo, self._workspace_pointer, self.workspace_size,
                                 _current_stream(self.device))

    def _plan(self, element: ElementType, m: int, n: int, k: int, alignments: tuple[int, int, int, int]) -> _Plan:
        key = (element, m, n, k, alignments)
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                plan = self._make_plan(element, m, n, k, alignments)
                if len(self._plans) >= _PLANS_KEPT:
                    self._plans.pop(next(iter(self._plans))).destroy(self._library)
                self._plans[key] = plan
            return plan

    def _make_plan(self, element: ElementType, m: int, n: int, k: int, alignments: tuple[int, int, int, int]) -> _Plan:
        library = self._library
        desc, layouts, preference = 0, (), 0
        try:
            desc = library.create_matmul_desc(element.compute, DataType.R_32F)
            library.set_matmul_desc_attribute(desc, MatmulDescAttribute.TRANSA, c_int32(Operation.T))
            library.set_matmul_desc_attribute(desc, MatmulDescAttribute.TRANSB, c_int32(Operation.N))
            if element.fast_accum:
                library.set_matmul_desc_attribute(desc, MatmulDescAttribute.FAST_ACCUM, c_int8(1))
            # Column-major: cuBLAS's A is `b` as (K, N), its B is `a` as (K, M), C and D are (N, M).
            shapes = ((element.data_type, k, n), (element.data_type, k, m), (element.c_type, n, m),
                      (element.data_type, n, m))
            for data_type, rows, cols in shapes:
                layouts += (library.create_layout(data_type, rows, cols, rows),)
            preference = library.create_preference()
            library.set_preference_attribute(preference, PreferenceAttribute.MAX_WORKSPACE_BYTES,
                                             c_uint64(self.workspace_size))
            minimums = (PreferenceAttribute.MIN_ALIGNMENT_A_BYTES, PreferenceAttribute.MIN_ALIGNMENT_B_BYTES,
                        PreferenceAttribute.MIN_ALIGNMENT_C_BYTES, PreferenceAttribute.MIN_ALIGNMENT_D_BYTES)
            for attribute, alignment in zip(minimums, alignments):
                library.set_preference_attribute(preference, attribute, c_uint32(alignment))
            algorithm = library.best_algorithm(self._handle, desc, layouts, preference,
                                               _problem_text(element, m, n, k))
        except BaseException:
            # The first error is the one to report, not a failure to release what was made before it.
            with contextlib.suppress(CublasError):
                _destroy_descriptors(library, desc, layouts)
            raise
        finally:
            if preference:
                library.destroy_preference(preference)
        return _Plan(desc, layouts, algorithm)


def _problem_text(element: ElementType, m: int, n: int, k: int) -> str:
    name = next(name for name, known in ELEMENT_TYPES.items() if known == element)
    text = f"torch.{name} (M, N, K) = ({m}, {n}, {k})"
    if element.fast_accum:
        text += " (cuBLASLt multiplies float8 on compute capability 8.9 or newer)"
    return text
