"""Products feeding float adds and subs become fmas where upstream's LLVM fuses
them (`fp_contract`): also when the product has other uses, never for bf16, never
across a loop body's boundary, not at all with `enable_fp_fusion=False`. What
the fused kernels compute is checked bit for bit against the exactly rounded
`x*y ± z`, on the CPU emulator and on the GPU."""

from __future__ import annotations

from fractions import Fraction
from types import MappingProxyType

import cuda_emulator
import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda import fp_contract
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir
from tritone.passes import PassContext
from tritone.passes.fold import round_to_float

N = 128


@triton.jit
def products_kernel(X, Y, Z, Out, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    z = tl.load(Z + offs)
    p = x * y
    tl.store(Out + offs, p)
    tl.store(Out + N + offs, p - z)
    tl.store(Out + 2 * N + offs, z - x * y)
    tl.store(Out + 3 * N + offs, z + x * y)


@triton.jit
def two_products_kernel(A, B, C, D, Out, N: tl.constexpr, SHARE_FIRST: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(A + offs)
    b = tl.load(B + offs)
    c = tl.load(C + offs)
    d = tl.load(D + offs)
    if SHARE_FIRST:
        tl.store(Out + N + offs, a * b)
    else:
        tl.store(Out + N + offs, c * d)
    tl.store(Out + offs, a * b + c * d)


@triton.jit
def loop_kernel(X, Y, Out, K, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    outside = x * y
    acc = tl.zeros([N], dtype=tl.float32)
    for _ in range(K):
        acc = acc + outside
        acc = acc * y + x
    tl.store(Out + offs, acc)


def _module(kernel, signature, constexprs=None):
    signature = {**signature, **{name: "constexpr" for name in (constexprs or {})}}
    return make_ir(ASTSource(kernel, signature, constexprs or {}), GPUTarget("cuda", 90, 32), {"num_warps": 4})


def _contract(module, fusion=True):
    fp_contract.run(module, PassContext(MappingProxyType({"enable_fp_fusion": fusion})))
    return module


def _fmas(module):
    return [op for op in module.kernel.walk() if op.name == "fma"]


def _named(value) -> str:
    """What defines `value`: an op name, `load#i` for the i-th load, or `neg(...)`."""
    op = value.defining_op
    if op is None:
        return "arg"
    if op.name == "sub" and op.operands[0].defining_op.name == "constant" \
            and str(op.operands[0].defining_op.attrs["value"]) == "-0.0":
        return f"neg({_named(op.operands[1])})"
    if op.name == "load":
        loads = [o for o in op.parent.ops if o.name == "load"]
        return f"load#{loads.index(op)}"
    return op.name


def _products_signature(ty):
    return {"X": f"*{ty}", "Y": f"*{ty}", "Z": f"*{ty}", "Out": f"*{ty}"}


def test_products_become_fmas_even_when_used_elsewhere():
    module = _contract(_module(products_kernel, _products_signature("fp32"), {"N": N}))
    fmas = [[_named(v) for v in op.operands] for op in _fmas(module)]
    assert fmas == [["load#0", "load#1", "neg(load#2)"],  # p - z
                    ["neg(load#0)", "load#1", "load#2"],  # z - x*y
                    ["load#0", "load#1", "load#2"]]  # z + x*y
    # the product is still stored
    assert [op.name for op in module.kernel.walk()].count("mul") >= 1


def test_fusion_off_leaves_the_products_alone():
    module = _contract(_module(products_kernel, _products_signature("fp32"), {"N": N}), fusion=False)
    assert not _fmas(module)
    source, _, _ = generate_cuda(_module(products_kernel, _products_signature("fp32"), {"N": N}), 90,
                                 {"num_warps": 4, "enable_fp_fusion": False})
    kernel = source[source.index("products_kernel("):]
    assert "fmaf(" not in kernel and "__fmul_rn(" in kernel


@pytest.mark.parametrize("ty, fused", [("fp16", True), ("fp64", True), ("bf16", False), ("i32", False)])
def test_which_types_fuse(ty, fused):
    module = _contract(_module(products_kernel, _products_signature(ty), {"N": N}))
    assert len(_fmas(module)) == (3 if fused else 0)


@pytest.mark.parametrize("share_first", [False, True])
def test_of_two_products_the_one_with_fewer_uses_is_fused(share_first):
    signature = {name: "*fp32" for name in ("A", "B", "C", "D", "Out")}
    module = _contract(_module(two_products_kernel, signature, {"N": N, "SHARE_FIRST": share_first}))
    [fma] = _fmas(module)
    fused = [_named(v) for v in fma.operands[:2]]
    assert fused == (["load#2", "load#3"] if share_first else ["load#0", "load#1"])
    assert _named(fma.operands[2]) == "mul"


def test_a_product_outside_the_loop_is_not_fused_into_it():
    module = _contract(_module(loop_kernel, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "K": "i32"}, {"N": N}))
    loop = next(op for op in module.kernel.walk() if op.name == "for")
    body = [op.name for op in loop.regions[0].ops]
    assert body.count("add") == 1 and body.count("fma") == 1 and "mul" not in body


def _operands(rng, ty):
    """x, y and z = x*y rounded and nudged by a few units in the last place: x*y - z
    is then small and shows the product's rounding error, where fusion matters."""
    x = rng.uniform(1, 2, N).astype(ty)
    y = rng.uniform(-2, 2, N).astype(ty)
    z = (x * y).astype(ty)
    z = (z.view(f"i{z.itemsize}") + rng.integers(-3, 4, N).astype(f"i{z.itemsize}")).view(ty)
    return x, y, z


def _fused_reference(x, y, z, name):
    """The four outputs of products_kernel with one rounding per fma, from exact fractions."""
    exact = [Fraction(float(a)) * Fraction(float(b)) for a, b in zip(x, y)]
    zs = [Fraction(float(c)) for c in z]
    outputs = [[round_to_float(p, name) for p in exact],
               [round_to_float(p - c, name) for p, c in zip(exact, zs)],
               [round_to_float(c - p, name) for p, c in zip(exact, zs)],
               [round_to_float(c + p, name) for p, c in zip(exact, zs)]]
    return np.array(outputs, dtype=x.dtype).reshape(-1)


def _unfused_reference(x, y, z):
    p = x * y  # numpy rounds each operation
    return np.concatenate([p, p - z, z - p, z + p])


@pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")
@pytest.mark.parametrize("fusion", [True, False])
def test_fused_results_are_rounded_once_on_the_emulator(fusion):
    module = _module(products_kernel, _products_signature("fp32"), {"N": N})
    source, _, metadata = generate_cuda(module, 90, {"num_warps": 4, "enable_fp_fusion": fusion})
    x, y, z = _operands(np.random.default_rng(11), np.float32)
    out = np.full(4 * N, np.nan, dtype=np.float32)
    cuda_emulator.Emulator(source, 4, metadata["shared"]).launch((1,), x, y, z, out)
    fused, unfused = _fused_reference(x, y, z, "fp32"), _unfused_reference(x, y, z)
    assert (fused.view(np.int32) != unfused.view(np.int32)).sum() > N  # the inputs tell the two apart
    np.testing.assert_array_equal(out.view(np.int32), (fused if fusion else unfused).view(np.int32))


@pytest.mark.gpu
@pytest.mark.parametrize("ty, name", [(np.float32, "fp32"), (np.float16, "fp16"), (np.float64, "fp64")])
@pytest.mark.parametrize("fusion", [True, False])
def test_fused_results_are_rounded_once_on_the_gpu(ty, name, fusion):
    torch = pytest.importorskip("torch")
    x, y, z = _operands(np.random.default_rng(12), ty)
    out = torch.full((4 * N,), float("nan"), dtype=getattr(torch, np.dtype(ty).name), device="cuda")
    products_kernel[(1,)](*(torch.from_numpy(v).cuda() for v in (x, y, z)), out, N=N, enable_fp_fusion=fusion)
    bits = f"i{np.dtype(ty).itemsize}"
    fused = _fused_reference(x, y, z, name)
    expected = fused if fusion else _unfused_reference(x, y, z)
    np.testing.assert_array_equal(out.cpu().numpy().view(bits), expected.view(bits))
