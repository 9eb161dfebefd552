"""Memory-ordering and cache qualifiers in the PTX tritone compiles (NVRTC,
no GPU): every atomic carries its `sem` and `scope` in the spelling Triton's PTX
uses (`atom.global.gpu.acq_rel.add`, `atom.global.acq_rel.gpu.cas`), Pascal gets
fences in place of `.sem`, stores and loads carry their cache operator; and the
interpreter gives the same results whatever ordering is asked for."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource
from tritone.errors import CompilationError

SEMS = ("relaxed", "acquire", "release", "acq_rel")
SCOPES = ("cta", "gpu", "sys")
RNG = np.random.default_rng()


@triton.jit
def _all_atomics(I32, F32, F64, F16, BF16, I64, OUT, n, SEM: tl.constexpr, SCOPE: tl.constexpr):
    offs = tl.arange(0, 128)
    mask = offs < n
    i = tl.load(I32 + offs, mask=mask)
    old = tl.atomic_add(I32 + offs, i, mask=mask, sem=SEM, scope=SCOPE)
    old += tl.atomic_max(I32 + offs, i, mask=mask, sem=SEM, scope=SCOPE)
    old += tl.atomic_min(I32 + offs, i, mask=mask, sem=SEM, scope=SCOPE)
    old += tl.atomic_and(I32 + offs, i, mask=mask, sem=SEM, scope=SCOPE)
    old += tl.atomic_or(I32 + offs, i, mask=mask, sem=SEM, scope=SCOPE)
    old += tl.atomic_xor(I32 + offs, i, mask=mask, sem=SEM, scope=SCOPE)
    old += tl.atomic_xchg(I32 + offs, i, mask=mask, sem=SEM, scope=SCOPE)
    f = tl.load(F32 + offs, mask=mask)
    old += tl.atomic_add(F32 + offs, f, mask=mask, sem=SEM, scope=SCOPE).to(tl.int32)
    old += tl.atomic_max(F32 + offs, f, mask=mask, sem=SEM, scope=SCOPE).to(tl.int32)
    old += tl.atomic_add(F64, 1.5, sem=SEM, scope=SCOPE).to(tl.int32)
    old += tl.atomic_add(F16 + offs, f.to(tl.float16), mask=mask, sem=SEM, scope=SCOPE).to(tl.int32)
    old += tl.atomic_add(BF16 + offs, f.to(tl.bfloat16), mask=mask, sem=SEM, scope=SCOPE).to(tl.int32)
    old += tl.atomic_cas(I64, 3, 4, sem=SEM, scope=SCOPE).to(tl.int32)
    tl.store(OUT + offs, old, mask=mask)


_SIGNATURE = {"I32": "*i32", "F32": "*fp32", "F64": "*fp64", "F16": "*fp16", "BF16": "*bf16", "I64": "*i64",
              "OUT": "*i32", "n": "i32"}


def _ptx(fn, signature, constexprs, arch, attrs=None):
    compiled = triton.compile(ASTSource(fn, signature=signature, constexprs=constexprs, attrs=attrs),
                              target=GPUTarget("cuda", arch, 32))
    assert compiled.asm["cubin"][:4] == b"\x7fELF", "ptxas did not take the PTX"
    return compiled.asm["ptx"]


def _atoms(ptx: str) -> set[str]:
    return set(re.findall(r"\batom\.[\w:.]+", ptx))


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("sem", SEMS)
def test_every_atomic_carries_sem_and_scope_on_sm90(sem, scope):
    atoms = _atoms(_ptx(_all_atomics, _SIGNATURE, {"SEM": sem, "SCOPE": scope}, 90))
    rmw, cas = f"atom.global.{scope}.{sem}", f"atom.global.{sem}.{scope}"
    expected = {f"{rmw}.{op}" for op in ("add.u32", "max.s32", "min.s32", "and.b32", "or.b32", "xor.b32",
                                         "exch.b32", "add.f32", "min.u32", "add.f64", "add.noftz.f16",
                                         "add.noftz.bf16")}
    expected.add(f"{cas}.cas.b64")
    assert expected <= atoms, sorted(expected - atoms)
    # nothing falls back to an unordered spelling
    assert all(a.startswith((rmw + ".", cas + ".")) for a in atoms), sorted(atoms)


def test_default_sem_and_scope_are_acq_rel_gpu():
    @triton.jit
    def kernel(X, Z):
        x = tl.load(X + tl.program_id(0))
        tl.atomic_add(Z, x)
        tl.atomic_cas(Z + 1, x, x + 1)

    atoms = _atoms(_ptx(kernel, {"X": "*i32", "Z": "*i32"}, {}, 90))
    assert atoms == {"atom.global.gpu.acq_rel.add.u32", "atom.global.acq_rel.gpu.cas.b32"}


@pytest.mark.parametrize("sem, scope", [("acquire", "gpu"), ("release", "sys")])
def test_bf16_add_before_hopper_is_an_ordered_cas_loop(sem, scope):
    atoms = _atoms(_ptx(_all_atomics, _SIGNATURE, {"SEM": sem, "SCOPE": scope}, 80))
    assert f"atom.{sem}.{scope}.global.cas.b32" in atoms
    assert f"atom.global.{scope}.{sem}.add.noftz.f16" in atoms
    assert not any("bf16" in a for a in atoms)


@pytest.mark.parametrize("sem, before, after", [("relaxed", False, False), ("acquire", False, True),
                                                 ("release", True, False), ("acq_rel", True, True)])
def test_pascal_orders_atomics_with_fences(sem, before, after):
    @triton.jit
    def kernel(X, Z, SEM: tl.constexpr):
        x = tl.load(X + tl.program_id(0))
        tl.atomic_add(Z, x, sem=SEM, scope="sys")

    ptx = _ptx(kernel, {"X": "*i32", "Z": "*i32"}, {"SEM": sem}, 61)
    atoms = _atoms(ptx)
    assert atoms == {"atom.global.sys.add.u32"}  # .sem needs sm_70
    start = ptx.index("atom.global.sys.add.u32")
    assert ("membar.sys" in ptx[:start]) == before
    assert ("membar.sys" in ptx[start:]) == after


@triton.jit
def _copy(dst, src, LOAD_CACHE: tl.constexpr, STORE_CACHE: tl.constexpr):
    offsets = tl.arange(0, 128)
    x = tl.load(src + offsets, cache_modifier=LOAD_CACHE)
    tl.store(dst + offsets, x, cache_modifier=STORE_CACHE)


@pytest.mark.parametrize("arch", [61, 90])
@pytest.mark.parametrize("load_cache, store_cache", [("", ".wb"), (".ca", ".cg"), (".cg", ".cs"), (".cv", ".wt"),
                                                     ("", "")])
def test_cache_operators_reach_ld_and_st(arch, load_cache, store_cache):
    ptx = _ptx(_copy, {"dst": "*fp32", "src": "*fp32"}, {"LOAD_CACHE": load_cache, "STORE_CACHE": store_cache},
               arch)
    stores = set(re.findall(r"\bst\.global[\w:.]*", ptx))
    loads = set(re.findall(r"\bld\.global[\w:.]*", ptx))
    assert stores == {f"st.global{store_cache}.b32"}
    assert loads == {f"ld.global{load_cache}.b32"}


# -- the interpreter ---------------------------------------------------------------------------

@triton.jit
def _rmw_everything(X, ADD, MAX, MIN, AND, OR, XOR, XCHG, FADD, FMAX, OLD, SEM: tl.constexpr,
                    SCOPE: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(X + pid)
    old = tl.atomic_add(ADD, x, sem=SEM, scope=SCOPE)
    tl.atomic_max(MAX, x, sem=SEM, scope=SCOPE)
    tl.atomic_min(MIN, x, sem=SEM, scope=SCOPE)
    tl.atomic_and(AND, x, sem=SEM, scope=SCOPE)
    tl.atomic_or(OR, x, sem=SEM, scope=SCOPE)
    tl.atomic_xor(XOR, x, sem=SEM, scope=SCOPE)
    tl.atomic_xchg(XCHG + pid, x, sem=SEM, scope=SCOPE)
    tl.atomic_add(FADD, x.to(tl.float32) * 0.5, sem=SEM, scope=SCOPE)
    tl.atomic_max(FMAX, x.to(tl.float32) - 0.25, sem=SEM, scope=SCOPE)
    tl.store(OLD + pid, old)


@pytest.mark.parametrize("sem, scope", [(None, None), ("relaxed", "cta"), ("acquire", "gpu"), ("release", "sys"),
                                        ("acq_rel", "cta")])
def test_interpreter_results_do_not_depend_on_ordering(sem, scope):
    n = 7
    x = torch.from_numpy(RNG.integers(-1000, 1000, size=n, dtype=np.int32))
    seed = int(RNG.integers(1, 1 << 20))
    cells = {name: torch.tensor([value], dtype=torch.int32)
             for name, value in (("add", seed), ("max", -(1 << 30)), ("min", 1 << 30), ("and", -1), ("or", seed),
                                 ("xor", seed))}
    xchg = torch.zeros(n, dtype=torch.int32)
    fadd = torch.tensor([0.75], dtype=torch.float32)
    fmax = torch.tensor([-1e9], dtype=torch.float32)
    old = torch.zeros(n, dtype=torch.int32)
    _rmw_everything[(n,)](x, *cells.values(), xchg, fadd, fmax, old, SEM=sem, SCOPE=scope)
    xs = x.numpy()
    assert cells["add"].item() == seed + int(xs.sum())
    assert cells["max"].item() == xs.max() and cells["min"].item() == xs.min()
    assert cells["and"].item() == int(np.bitwise_and.reduce(xs))
    assert cells["or"].item() == int(np.bitwise_or.reduce(np.append(xs, np.int32(seed))))
    assert cells["xor"].item() == int(np.bitwise_xor.reduce(np.append(xs, np.int32(seed))))
    np.testing.assert_array_equal(xchg.numpy(), xs)
    np.testing.assert_allclose(fadd.item(), 0.75 + xs.astype(np.float64).sum() * 0.5, rtol=1e-6)
    assert fmax.item() == float(xs.max()) - 0.25
    # the interpreter runs the programs in order, so each saw the sum before it
    np.testing.assert_array_equal(old.numpy(), seed + np.concatenate([[0], np.cumsum(xs)[:-1]]))


def test_an_unknown_sem_is_named():
    with pytest.raises(CompilationError, match="Memory semantic seq_cst not supported"):
        _rmw_everything[(1,)](*([torch.zeros(1, dtype=torch.int32)] * 8),
                              torch.zeros(1), torch.zeros(1), torch.zeros(1, dtype=torch.int32),
                              SEM="seq_cst", SCOPE="gpu")


# -- hints given as statements -------------------------------------------------------------------

@triton.jit
def _shifted_copy(dst, src, off, N, BLOCK: tl.constexpr, HINT: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offsets = offsets + tl.load(off)
    if HINT:
        tl.max_contiguous(tl.multiple_of(offsets, BLOCK), BLOCK)  # result dropped: hints `offsets` itself
    x = tl.load(src + offsets, mask=offsets < N)
    tl.store(dst + offsets, x, mask=offsets < N)


_ALIGNED = [["tt.divisibility", 16]]


@pytest.mark.parametrize("hint", [False, True])
def test_a_dropped_hint_still_vectorizes_later_uses(hint):
    src = ASTSource(_shifted_copy, signature={"dst": "*fp32", "src": "*fp32", "off": "*i32", "N": "i32"},
                    constexprs={"BLOCK": 1024, "HINT": hint}, attrs={(i,): _ALIGNED for i in range(4)})
    ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    loads = set(re.findall(r"\bld\.global[\w:.]*", ptx))
    assert ("ld.global.v4.b32" in loads) == hint, loads


@triton.jit
def _hint_in_a_loop(dst, src, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(n):
        tl.multiple_of(offsets, BLOCK)  # made inside the loop on a value from before it
        acc += tl.load(src + offsets)
    tl.store(dst + offsets, acc)


def test_a_hint_inside_a_loop_leaves_the_outer_value_usable_after_it():
    src = torch.from_numpy(RNG.standard_normal(64).astype(np.float32))
    dst = torch.empty(64)
    _hint_in_a_loop[(1,)](dst, src, 3, BLOCK=64)
    torch.testing.assert_close(dst, src * 3, rtol=1e-6, atol=1e-6)
    ptx = _ptx(_hint_in_a_loop, {"dst": "*fp32", "src": "*fp32", "n": "i32"}, {"BLOCK": 64}, 90)
    assert "st.global" in ptx


@triton.jit
def _scatter_adds(X32, X16, XB16, OUT32, OUT16, OUTB16, SEM: tl.constexpr):
    # Results unused: Triton emits `red`, vectorised on sm_90 for float adds.
    rows = tl.arange(0, 8)[:, None]
    cols = tl.arange(0, 64)[None, :]
    idx = rows * 64 + cols
    tl.atomic_add(OUT32 + idx, tl.load(X32 + idx), sem=SEM)
    tl.atomic_add(OUT16 + idx, tl.load(X16 + idx), sem=SEM)
    tl.atomic_add(OUTB16 + idx, tl.load(XB16 + idx), sem=SEM)


@triton.jit
def _scatter_max(I32, OUTI, SEM: tl.constexpr):
    idx = tl.arange(0, 8)[:, None] * 64 + tl.arange(0, 64)[None, :]
    tl.atomic_max(OUTI + idx, tl.load(I32 + idx), sem=SEM)


_SCATTER_SIGNATURE = {"X32": "*fp32", "X16": "*fp16", "XB16": "*bf16", "OUT32": "*fp32", "OUT16": "*fp16",
                      "OUTB16": "*bf16"}
_MAX_SIGNATURE = {"I32": "*i32", "OUTI": "*i32"}


def test_unused_atomic_results_become_red_vectorised_on_sm90():
    aligned = {(i,): [["tt.divisibility", 16]] for i in range(len(_SCATTER_SIGNATURE))}
    ptx90 = _ptx(_scatter_adds, _SCATTER_SIGNATURE, {"SEM": "relaxed"}, 90, aligned)
    reds = set(re.findall(r"\bred\.[\w:.]+", ptx90))
    assert "red.global.gpu.relaxed.add.v4.f32" in reds, reds
    # 512 elements over 128 threads: 4 per thread, so the 16-bit adds go 4 at a time too.
    assert {"red.global.gpu.relaxed.add.noftz.v4.f16", "red.global.gpu.relaxed.add.noftz.v4.bf16"} <= reds, reds
    assert not _atoms(ptx90)
    assert set(re.findall(r"\bred\.[\w:.]+", _ptx(_scatter_max, _MAX_SIGNATURE, {"SEM": "relaxed"}, 90))) == {
        "red.global.gpu.relaxed.max.s32"}
    ptx80 = _ptx(_scatter_adds, _SCATTER_SIGNATURE, {"SEM": "release"}, 80, aligned)
    reds80 = set(re.findall(r"\bred\.[\w:.]+", ptx80))
    assert {"red.global.gpu.release.add.f32", "red.global.gpu.release.add.noftz.f16"} <= reds80, reds80
    assert not any(".v" in red for red in reds80)
    # bf16 adds below sm_90 stay a CAS loop; acq_rel (the default) keeps `atom`.
    assert any("cas" in atom for atom in _atoms(ptx80))
    ptx_acq = _ptx(_scatter_adds, _SCATTER_SIGNATURE, {"SEM": "acq_rel"}, 90, aligned)
    assert not re.findall(r"\bred\.", ptx_acq) and "atom.global.gpu.acq_rel.add.f32" in _atoms(ptx_acq)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_red_atomics_add_up_in_the_interpreter_and_on_the_gpu(device):
    # Several programs add into the same 512 elements; each element's adds are atomic.
    programs = 6
    x32, x16, xb = torch.randn(512), torch.randn(512).half(), torch.randn(512).bfloat16()
    out32, out16, outb = torch.randn(512), torch.randn(512).half(), torch.randn(512).bfloat16()
    i32 = torch.randint(-1000, 1000, (512,), dtype=torch.int32)
    outi = torch.randint(-1000, 1000, (512,), dtype=torch.int32)
    expected32 = out32.double() + programs * x32.double()
    expected16 = out16.double() + programs * x16.double()
    expectedb = outb.double() + programs * xb.double()
    expectedi = torch.maximum(outi, i32)
    moved = [t.to(device) for t in (x32, x16, xb, out32, out16, outb, i32, outi)]
    _scatter_adds[(programs,)](*moved[:6], SEM="relaxed")
    _scatter_max[(programs,)](moved[6], moved[7], SEM="relaxed")
    torch.testing.assert_close(moved[3].cpu().double(), expected32, rtol=1e-5, atol=1e-5)
    # 16-bit sums round after every add, in whatever order the programs come.
    torch.testing.assert_close(moved[4].cpu().double(), expected16, rtol=1e-2, atol=2e-2)
    torch.testing.assert_close(moved[5].cpu().double(), expectedb, rtol=4e-2, atol=1e-1)
    assert torch.equal(moved[7].cpu(), expectedi)


@triton.jit
def _unread_cas(X, SEM: tl.constexpr, DTYPE: tl.constexpr):
    offsets = tl.program_id(0) * 64 + tl.arange(0, 64)
    tl.atomic_cas(X + offsets, tl.full((64,), 0, DTYPE), tl.full((64,), 2, DTYPE), sem=SEM)


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("element, dtype", [("bf16", tl.bfloat16), ("fp32", tl.float32), ("i64", tl.int64)])
@pytest.mark.parametrize("sem", ["relaxed", "release", "acq_rel"])
def test_a_cas_whose_old_value_nobody_reads_stays_a_cas(arch, element, dtype, sem):
    # `red` (what other atomics with unread results become) has no compare-and-swap
    kernel = triton.compile(ASTSource(_unread_cas, {"X": f"*{element}"}, {"SEM": sem, "DTYPE": dtype}),
                            target=GPUTarget("cuda", arch, 32))
    ptx = kernel.asm["ptx"]
    assert re.search(r"atom\.global\.[\w.]*cas\.b(16|32|64)", ptx)
    assert "red." not in ptx
