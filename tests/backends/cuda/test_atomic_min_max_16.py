"""fp16 and bf16 atomic min/max on the CUDA backend. Upstream Triton takes them
only as tensor-descriptor reductions where descriptors are TMA's (sm_90+), and
never through pointers; tritone refuses the same kernels at the user's line,
and compiles the others (NVRTC, no GPU): sm_90's vector atoms
(`atom.global.v8.f16.min.noftz`) on runs of aligned elements, elsewhere a
compare-and-swap loop on the aligned 32-bit word, which also compiles for
Turing and Ampere when the IR asks (an IR file). The generated CUDA runs on the
CPU emulator and, with the `gpu` marker, on the GPU, against IEEE 754-2019
minimumNumber/maximumNumber (the GPU's `min.f16`/`max.f16`), the interpreter's
meaning of these ops, and against upstream on the same GPU."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import cuda_emulator
import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler import ASTSource
from tritone.compiler.compiler import make_ir
from tritone.errors import CompilationError
from tritone.tools.tensor_descriptor import TensorDescriptor

RNG = np.random.default_rng()
KINDS = ["min", "max"]
TYPES = ["fp16", "bf16"]
_TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16}
_PTX_TYPE = {"fp16": "f16", "bf16": "bf16"}


@triton.jit
def reduce_kernel(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr, KIND: tl.constexpr):
    """Every program reduces its own block of X into the same [BM, BN] block of Y."""
    desc = tl.make_tensor_descriptor(Y, [M, N], [N, 1], [BM, BN])
    offsets = tl.program_id(0) * BM * BN + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    value = tl.load(X + offsets)
    if KIND == "min":
        desc.atomic_min([0, 0], value)
    else:
        desc.atomic_max([0, 0], value)


@triton.jit
def host_reduce_kernel(desc, X, KIND: tl.constexpr):
    BM: tl.constexpr = desc.block_shape[0]
    BN: tl.constexpr = desc.block_shape[1]
    m, n = tl.program_id(0) * BM, tl.program_id(1) * BN
    rows = m + tl.arange(0, BM)[:, None]
    cols = n + tl.arange(0, BN)[None, :]
    value = tl.load(X + rows * desc.shape[1] + cols, mask=(rows < desc.shape[0]) & (cols < desc.shape[1]))
    if KIND == "min":
        desc.atomic_min([m, n], value)
    else:
        desc.atomic_max([m, n], value)


@triton.jit
def pointer_kernel(X, KIND: tl.constexpr):
    offsets = tl.arange(0, 64)
    if KIND == "min":
        tl.atomic_min(X + offsets, tl.load(X + offsets))
    else:
        tl.atomic_max(X + offsets, tl.load(X + offsets))


def _signature(type_name: str) -> dict:
    return {"X": f"*{type_name}", "Y": f"*{type_name}", "M": "i32", "N": "i32"}


def _source(type_name: str, kind: str, block=(8, 16)) -> ASTSource:
    return ASTSource(reduce_kernel, _signature(type_name), {"BM": block[0], "BN": block[1], "KIND": kind})


def _atoms(ptx: str) -> set[str]:
    return set(re.findall(r"\batom\.[\w:.]+", ptx))


# -- what compiles where ------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("type_name", TYPES)
def test_descriptor_min_max_compile_for_hopper(type_name, kind):
    kernel = triton.compile(_source(type_name, kind), target=GPUTarget("cuda", 90, 32))
    assert kernel.asm["cubin"][:4] == b"\x7fELF"
    ptx = kernel.asm["ptx"]
    # pointer code: a relaxed CAS loop on the 32-bit word (a TMA lowering would use cp.reduce.async.bulk)
    assert "atom.relaxed.gpu.global.cas.b32" in _atoms(ptx) or re.search(
        rf"cp\.reduce\.async\.bulk\.tensor[\w:.]*\.{kind}", ptx), sorted(_atoms(ptx))
    assert not any(f".{kind}.f16" in atom or f".{kind}.bf16" in atom for atom in _atoms(ptx))


_DIVISIBLE = {(index,): [["tt.divisibility", 16]] for index in range(4)}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("type_name", TYPES)
def test_runs_of_aligned_elements_take_the_vector_atom_on_hopper(type_name, kind):
    """16-byte aligned rows of a 32x64 block: one `atom.global.v8.<type>.<kind>.noftz` per 8 elements."""
    kernel = triton.compile(ASTSource(reduce_kernel, _signature(type_name), {"BM": 32, "BN": 64, "KIND": kind},
                                      _DIVISIBLE), target=GPUTarget("cuda", 90, 32))
    ptx, atoms = kernel.asm["ptx"], _atoms(kernel.asm["ptx"])
    vector_atom = f"atom.global.gpu.relaxed.v8.{_PTX_TYPE[type_name]}.{kind}.noftz"
    assert vector_atom in atoms and not any(".cas." in atom for atom in atoms) or re.search(
        rf"cp\.reduce\.async\.bulk\.tensor[\w:.]*\.{kind}", ptx), sorted(atoms)


@pytest.mark.parametrize("arch", [75, 80, 89])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("type_name", TYPES)
def test_descriptor_min_max_refused_before_hopper(type_name, kind, arch):
    with pytest.raises(CompilationError) as info:
        triton.compile(_source(type_name, kind), target=GPUTarget("cuda", arch, 32))
    message = str(info.value)
    assert f"descriptor atomic_{kind} of {type_name} needs a target with TMA (CUDA sm_90 or newer), not sm_{arch}" \
        in message, message
    assert f"desc.atomic_{kind}([0, 0], value)" in message and "reduce_kernel" in message


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("type_name", TYPES)
def test_pointer_min_max_refused_everywhere(type_name, kind, arch):
    with pytest.raises(CompilationError) as info:
        triton.compile(ASTSource(pointer_kernel, {"X": f"*{type_name}"}, {"KIND": kind}),
                       target=GPUTarget("cuda", arch, 32))
    assert f"atomic_{kind} does not support {type_name}" in str(info.value)
    assert f"tl.atomic_{kind}(X + offsets" in str(info.value)


@pytest.mark.parametrize("arch", [75, 80])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("type_name", TYPES)
def test_cas_loop_compiles_for_turing_and_ampere(type_name, kind, arch, tmp_path, monkeypatch):
    """The codegen takes 16-bit float min/max on any target: an IR file made for
    sm_90 (the frontend refuses older targets) compiles for Turing and Ampere."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    ttir = triton.compile(_source(type_name, kind), target=GPUTarget("cuda", 90, 32)).asm["ttir"]
    path = tmp_path / "reduce_kernel.ttir"
    path.write_text(ttir)
    kernel = triton.compile(str(path), target=GPUTarget("cuda", arch, 32))
    assert kernel.asm["cubin"][:4] == b"\x7fELF"
    assert "atom.relaxed.gpu.global.cas.b32" in _atoms(kernel.asm["ptx"])


# -- what the generated code computes ------------------------------------------------------

def minimum_number(a: float, b: float, kind: str) -> float:
    """IEEE 754-2019 minimumNumber (`kind` "min") or maximumNumber of two floats."""
    if math.isnan(a) or math.isnan(b):
        return b if math.isnan(a) else a
    if a == b:  # zeros of either sign, or equal numbers
        negatives = [math.copysign(1, a) < 0, math.copysign(1, b) < 0]
        negative = any(negatives) if kind == "min" else all(negatives)
        return math.copysign(abs(a), -1 if negative else 1)
    return min(a, b) if kind == "min" else max(a, b)


# (memory, value): NaNs on either side, zeros of both signs, infinities, ties.
SPECIAL_PAIRS = [(math.nan, 1.5), (-2.5, math.nan), (math.nan, math.nan), (0.0, -0.0), (-0.0, 0.0), (-0.0, -0.0),
                 (0.0, 0.0), (-math.inf, 3.0), (math.inf, -2.0), (-5.0, -7.0), (4.0, 4.0), (-0.0, 2.0),
                 (math.nan, -math.inf), (1.0, -0.0), (-3.0, -3.0), (0.0, -1.0)]


def _bits(values, type_name: str) -> np.ndarray:
    """fp32 `values` as fp16 or bf16 bit patterns (bf16 by truncation: exact for these values)."""
    values = np.asarray(values, dtype=np.float32)
    if type_name == "fp16":
        return values.astype(np.float16).view(np.uint16)
    return (values.view(np.uint32) >> 16).astype(np.uint16)


def _floats(bits: np.ndarray, type_name: str) -> np.ndarray:
    if type_name == "fp16":
        return bits.view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _cases(type_name: str, kind: str, programs: int, block=(8, 16)):
    """(memory bits, values bits of `programs` blocks, expected floats): the first
    program's first row holds SPECIAL_PAIRS' values over their memory; the rest is
    random, with negatives, and every program reduces into the same block."""
    count = block[0] * block[1]
    memory = RNG.uniform(-100, 100, count).astype(np.float32)
    values = RNG.uniform(-100, 100, (programs, count)).astype(np.float32)
    memory[:len(SPECIAL_PAIRS)] = [pair[0] for pair in SPECIAL_PAIRS]
    # where the first program holds the special values, the others hold the identity
    values[:, :len(SPECIAL_PAIRS)] = math.inf if kind == "min" else -math.inf
    values[0, :len(SPECIAL_PAIRS)] = [pair[1] for pair in SPECIAL_PAIRS]
    return _bits(memory, type_name), _bits(values, type_name)


def _expected(memory: np.ndarray, values: np.ndarray, type_name: str, kind: str) -> np.ndarray:
    """Memory after each program's block is combined in, in program order (the
    order does not change a min or max)."""
    result = _floats(memory, type_name).tolist()
    for row in _floats(values, type_name):
        result = [minimum_number(a, float(b), kind) for a, b in zip(result, row)]
    return np.array(result, dtype=np.float32)


def _assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal floats, zeros of the same sign, NaN where NaN is expected."""
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    both = ~np.isnan(want)
    np.testing.assert_array_equal(got[both], want[both])
    np.testing.assert_array_equal(np.signbit(got[both]), np.signbit(want[both]))


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
@pytest.mark.parametrize("arch, divisible, vector", [(80, True, False), (90, False, False), (90, True, True)])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("type_name", TYPES)
def test_generated_code_on_the_emulator(type_name, kind, arch, divisible, vector):
    """The CAS loop, and on sm_90 the vector atoms of runs of aligned elements
    (the shape divisible by 16, so that a run shares its mask; the emulator
    models them as min.f16/max.f16 do), with three programs on one block."""
    programs, block = 3, (16, 64)
    kernel = ASTSource(reduce_kernel, _signature(type_name), {"BM": block[0], "BN": block[1], "KIND": kind},
                       _DIVISIBLE if divisible else None)
    module = make_ir(kernel, GPUTarget("cuda", 90, 32), {"num_warps": 2})
    source, _, metadata = generate_cuda(module, arch, {"num_warps": 2})
    vector_atom = f".{_PTX_TYPE[type_name]}.{kind}.noftz"
    assert (vector_atom in source) == vector and ("cas.b32" in source) != vector
    memory, values = _cases(type_name, kind, programs, block)
    expected = _expected(memory, values, type_name, kind)
    cuda_emulator.Emulator(source, 2, metadata["shared"]).launch((programs,), values, memory, *block)
    _assert_same(_floats(memory, type_name), expected)


def check_descriptor_reduce(type_name: str, kind: str, device: str, block=(8, 16)) -> None:
    """Several programs, each reducing into the same block, against minimumNumber/maximumNumber."""
    programs = 4
    memory, values = _cases(type_name, kind, programs, block)
    expected = _expected(memory, values, type_name, kind)
    y = torch.from_numpy(memory.view(np.int16).copy()).view(_TORCH[type_name]).to(device)
    x = torch.from_numpy(values.view(np.int16).copy()).view(_TORCH[type_name]).to(device)
    reduce_kernel[(programs,)](x, y, *block, *block, kind)
    got = y.cpu().view(torch.int16).numpy().view(np.uint16)
    _assert_same(_floats(got, type_name), expected)


def check_host_descriptor_reduce(type_name: str, kind: str, device: str) -> None:
    """A host descriptor over a tensor of several blocks, with elements past its edge."""
    dtype = _TORCH[type_name]
    x = (torch.rand(40, 96, device=device) * 200 - 100).to(dtype)
    y = (torch.rand(40, 96, device=device) * 200 - 100).to(dtype)
    expected = torch.minimum(x, y) if kind == "min" else torch.maximum(x, y)
    host_reduce_kernel[(3, 2)](TensorDescriptor.from_tensor(y, [16, 64]), x, kind)
    torch.testing.assert_close(y, expected, rtol=0, atol=0)


def check_vector_descriptor_reduce(type_name: str, kind: str, device: str) -> None:
    """As check_descriptor_reduce on a block of aligned rows (sm_90's vector atoms)."""
    check_descriptor_reduce(type_name, kind, device, (32, 64))


CHECKS = [check_descriptor_reduce, check_vector_descriptor_reduce, check_host_descriptor_reduce]


@pytest.mark.gpu
@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("type_name", TYPES)
def test_on_the_gpu(check, type_name, kind, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    if torch.cuda.get_device_capability()[0] < 9:
        with pytest.raises(CompilationError, match="needs a target with TMA"):
            check(type_name, kind, "cuda")
        return
    check(type_name, kind, "cuda")


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("type_name", TYPES)
def test_the_gpu_checks_in_the_interpreter(check, type_name, kind, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    check(type_name, kind, "cpu")


# -- against upstream Triton on the same GPU -----------------------------------------------

# Upstream reduces through TMA (cp.reduce.async.bulk.tensor) on sm_90+; what that does
# with NaNs and signed zeros is not in the PTX manual, so it is measured here.
_UPSTREAM_SCRIPT = '''
import json, sys
import torch, triton, triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor
if hasattr(triton, "__tritone_version__"):
    sys.exit(3)

@triton.jit
def reduce_block(desc, X, KIND: tl.constexpr):
    BM: tl.constexpr = desc.block_shape[0]
    BN: tl.constexpr = desc.block_shape[1]
    value = tl.load(X + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :])
    if KIND == "min":
        desc.atomic_min([0, 0], value)
    else:
        desc.atomic_max([0, 0], value)

job = json.load(sys.stdin)
dtype = getattr(torch, job["dtype"])
memory = torch.tensor(job["memory"], dtype=torch.int16).view(dtype).cuda()
values = torch.tensor(job["values"], dtype=torch.int16).view(dtype).cuda()
reduce_block[(1,)](TensorDescriptor.from_tensor(memory, list(memory.shape)), values, job["kind"])
print(json.dumps(memory.cpu().view(torch.int16).flatten().tolist()))
'''


def _upstream_reduce(tmp_path, type_name: str, kind: str, memory: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Memory after upstream Triton's descriptor min/max of `values` into it, on this GPU."""
    script = tmp_path / "upstream_reduce.py"
    script.write_text(_UPSTREAM_SCRIPT)
    job = {"dtype": {"fp16": "float16", "bf16": "bfloat16"}[type_name], "kind": kind,
           "memory": memory.view(np.int16).tolist(), "values": values.view(np.int16).tolist()}
    env = {**os.environ, "TRITONE_AS_TRITON": "0", "TRITON_CACHE_DIR": str(tmp_path / "upstream-cache")}
    env.pop("TRITON_INTERPRET", None)
    done = subprocess.run([sys.executable, str(script)], input=json.dumps(job), capture_output=True, text=True,
                          env=env, timeout=600)
    if done.returncode == 3 or "No module named 'triton'" in done.stderr:
        pytest.skip("upstream Triton is not importable beside tritone here (TRITONE_AS_TRITON=0)")
    assert done.returncode == 0, done.stderr
    return np.array(json.loads(done.stdout.strip().splitlines()[-1]), dtype=np.int16).view(np.uint16)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 16), (8, 64)])  # one element per thread (CAS loop), runs of 4 (vector atom)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("type_name", TYPES)
def test_nans_and_zeros_as_upstream_on_the_gpu(type_name, kind, shape, tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TRITONE_INTERPRET", raising=False)
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("upstream takes fp16/bf16 descriptor min/max only on sm_90+")
    memory, values = _cases(type_name, kind, 1, shape)
    memory = memory.reshape(shape)
    values = values.reshape(shape)
    upstream = _floats(_upstream_reduce(tmp_path, type_name, kind, memory, values), type_name)
    y = torch.from_numpy(memory.view(np.int16).copy()).view(_TORCH[type_name]).cuda()
    x = torch.from_numpy(values.view(np.int16).copy()).view(_TORCH[type_name]).cuda()
    host_reduce_kernel[(1, 1)](TensorDescriptor.from_tensor(y, list(shape)), x, kind)
    ours = _floats(y.cpu().view(torch.int16).numpy().view(np.uint16).ravel(), type_name)
    _assert_same(ours, upstream)
    _assert_same(ours, _expected(memory.ravel(), values.reshape(1, -1), type_name, kind))
