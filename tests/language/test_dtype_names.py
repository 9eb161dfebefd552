"""dtype names, `str` and `repr` are Triton's (compared with upstream Triton where it
is installed), and so is what `tl.static_print` and messages show of kernel values."""

import pytest

import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource, compile
from tritone.ir.types import type_text
from tritone.runtime.jit import jit

DTYPE_NAMES = ["int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float8e4nv",
               "float8e5", "float8e4b15", "float8e4b8", "float8e5b16", "float16", "bfloat16", "float32", "float64",
               "void"]


def _texts(ty) -> tuple[str, str, str]:
    return ty.name, str(ty), repr(ty)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_names_match_upstream(name):
    upstream = pytest.importorskip("triton.language")
    ours, theirs = getattr(tl, name), getattr(upstream, name)
    assert _texts(ours) == _texts(theirs)
    if name != "void":
        for const in (False, True):
            assert _texts(tl.pointer_type(ours, const=const)) == _texts(upstream.pointer_type(theirs, const=const))
        for shape in ([4], [4, 8], [2, 1, 16]):
            assert _texts(tl.block_type(ours, shape)) == _texts(upstream.block_type(theirs, shape))
            assert (_texts(tl.block_type(tl.pointer_type(ours), shape))
                    == _texts(upstream.block_type(upstream.pointer_type(theirs), shape)))


def test_dtype_names_without_upstream():
    assert [tl.int1.name, tl.int8.name, tl.uint8.name, tl.float32.name, tl.bfloat16.name, tl.float8e4nv.name,
            tl.float8e5.name] == ["int1", "int8", "uint8", "fp32", "bf16", "fp8e4nv", "fp8e5"]
    assert str(tl.int8) == "int8" and repr(tl.bfloat16) == "triton.language.bfloat16"
    assert str(tl.pointer_type(tl.float32)) == "pointer<fp32>"
    assert str(tl.pointer_type(tl.float16, const=True)) == "const_pointer<fp16>"
    assert str(tl.block_type(tl.int32, [4, 8])) == "<['4', '8'], int32>"
    # Triton's names are accepted where a dtype is named, and the IR keeps its compact spelling.
    assert tl.dtype("int32") == tl.int32 and tl.dtype("fp32") == tl.float32
    assert type_text(tl.block_type(tl.pointer_type(tl.int8), [4])) == "<4x*i8>"


@jit
def _printing_kernel(X, n, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    t = (x, n)
    tl.static_print(x, n, X, x.dtype, x.type, X.dtype, X.type, N, t, x < 0)
    tl.static_print((1, 2), (N, n), [1, 2], x.shape, tl.float32, None, "s", 1.5, True)
    tl.static_print(t[0] + 1, x[None, :], tl.zeros((2, 4), tl.int8), tl.int1, X.dtype.element_ty,
                    tl.pointer_type(tl.float16, const=True))


# Printed by upstream Triton 3.6 compiling the same kernel (`triton.compile(ASTSource(..., {"X": "*fp32",
# "n": "i32", "N": "constexpr"}, {"N": 128}), target=GPUTarget("cuda", 80, 32))`, no GPU needed).
UPSTREAM_STATIC_PRINT = """\
fp32[constexpr[128]] int32[] pointer<fp32>[] fp32 <['128'], fp32> pointer<fp32> pointer<fp32> 128 \
['fp32[constexpr[128]]', 'int32[]'] int1[constexpr[128]]
['1', '2'] ['128', 'int32[]'] ['1', '2'] ['128'] fp32 None s 1.5 True
fp32[constexpr[128]] fp32[constexpr[1], constexpr[128]] int8[constexpr[2], constexpr[4]] int1 fp32 \
const_pointer<fp16>
"""


def test_static_print_shows_what_upstream_shows(capsys):
    src = ASTSource(_printing_kernel, {"X": "*fp32", "n": "i32", "N": "constexpr"}, {"N": 128})
    compile(src, target=GPUTarget("interpreter", 0, 32))
    assert capsys.readouterr().out == UPSTREAM_STATIC_PRINT
