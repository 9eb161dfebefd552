"""Kernels the compiler must reject, and launches that must fail.

Each compile-time case asserts the exception type (`triton.CompilationError`),
the line (in this file) and column of the offending expression, and that the
message shows that source line and names the problem. The expected place is
the line ending with `# E: <marker>` and the column where the given snippet
starts on it; both were checked against upstream Triton 3.6's compiler
(`TRITONE_TEST_IMPL=upstream python -m pytest tests/errors`, see _compile.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from tests.errors._compile import IMPL, LOCATION, compile_kernel, location_of, modules

triton, tl = modules()
THIS_FILE = Path(__file__)

GLOBAL_SCALE = 3  # a plain global: kernels may not read it
GLOBAL_CONSTEXPR = tl.constexpr(4)


def _f32(n: int = 16) -> torch.Tensor:
    return torch.arange(n, dtype=torch.float32)


def _u32(n: int = 16) -> torch.Tensor:
    return torch.arange(n, dtype=torch.int32).view(torch.uint32)


@triton.jit
def uses_break(x_ptr, n):
    acc = 0
    for i in range(n):
        if i > 3:
            break  # E: break
        acc += i
    tl.store(x_ptr, acc)


@triton.jit
def uses_continue(x_ptr, n):
    acc = 0
    for i in range(n):
        if i % 2 == 0:
            continue  # E: continue
        acc += i
    tl.store(x_ptr, acc)


@triton.jit
def uses_lambda(x_ptr):
    double = lambda v: v * 2  # E: lambda  # noqa: E731
    tl.store(x_ptr, double(1.0))


@triton.jit
def uses_try(x_ptr):
    try:  # E: try
        tl.store(x_ptr, 1.0)
    except Exception:
        pass


@triton.jit
def chained_comparison(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, tl.where(0.0 < x < 3.0, x, 0.0))  # E: chained


@triton.jit
def runtime_arange_bound(x_ptr, n):
    offs = tl.arange(0, n)  # E: runtime arange
    tl.store(x_ptr + offs, 0.0)


@triton.jit
def runtime_full_shape(x_ptr, n):
    block = tl.full((16, n), 0.0, tl.float32)  # E: runtime shape
    tl.store(x_ptr + tl.arange(0, 16)[:, None], block)


@triton.jit
def arange_not_power_of_two(x_ptr):
    offs = tl.arange(0, 10)  # E: power of two
    tl.store(x_ptr + offs, 0.0)


@triton.jit
def float_floordiv(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x // 2.0)  # E: float floordiv


@triton.jit
def fp8_plus_int(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    y = x.to(tl.float8e5) + offs  # E: fp8 plus int
    tl.store(x_ptr + offs, y.to(tl.float32))


@triton.jit
def unsigned_plus_negative(u_ptr):
    offs = tl.arange(0, 16)
    u = tl.load(u_ptr + offs)
    tl.store(u_ptr + offs, u + -1)  # E: unsigned negative


@triton.jit
def unknown_name(x_ptr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, undefined_helper(x))  # E: unknown name  # noqa: F821


@triton.jit
def loop_carried_type_change(x_ptr, n):
    acc = tl.zeros((16,), tl.int32)
    for _ in range(n):  # E: loop carried
        acc = acc + 1.5
    tl.store(x_ptr + tl.arange(0, 16), acc)


@triton.jit
def defined_in_one_branch(x_ptr, n):
    if n > 3:
        only_then = 1.0
    tl.store(x_ptr, only_then)  # E: one branch


@triton.jit
def return_inside_loop(x_ptr, n):
    for i in range(n):
        if i == 2:  # E: return in loop
            return
        tl.store(x_ptr + i, 1.0)


@triton.jit
def store_to_constexpr(x_ptr, OUT: tl.constexpr):
    offs = tl.arange(0, 16)
    tl.store(OUT + offs, tl.load(x_ptr + offs))  # E: store to constexpr


@triton.jit
def constexpr_reassigned_in_loop(x_ptr, n, BLOCK: tl.constexpr):
    for _ in range(n):  # E: constexpr in loop
        BLOCK = BLOCK + 1
    tl.store(x_ptr, BLOCK)


@triton.jit
def chained_assignment(x_ptr):
    a = b = 1.0  # E: chained assignment
    tl.store(x_ptr, a + b)


@triton.jit
def item_assignment(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    x[0] = 1.0  # E: item assignment
    tl.store(x_ptr + tl.arange(0, 16), x)


@triton.jit
def branch_types_differ(x_ptr, n):
    if n > 3:  # E: branch types
        y = 1
    else:
        y = 1.0
    tl.store(x_ptr, y)


@triton.jit
def block_condition(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if x > 0:  # E: block condition
        tl.store(x_ptr, 1.0)


@triton.jit
def reads_plain_global(x_ptr):
    tl.store(x_ptr, GLOBAL_SCALE * 2)  # E: plain global


@triton.jit
def static_assert_fails(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")  # E: static_assert
    tl.store(x_ptr, 1.0)


@triton.jit
def nested_function(x_ptr):
    def helper(v):  # E: nested def
        return v + 1

    tl.store(x_ptr, helper(1.0))


@triton.jit
def tensor_power(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), x**2)  # E: x squared


@dataclass(frozen=True)
class BadKernel:
    kernel: object
    args: tuple
    marker: str
    snippet: str
    keywords: tuple  # each (a word, or a tuple of alternatives) must appear in the message, any case
    kwargs: tuple = ()
    upstream_differs: str | None = None  # why upstream's compiler fails this check (tritone must pass it)


PTR = ("ptr", "pointer")
BAD_KERNELS = [
    BadKernel(uses_break, (_f32(), 8), "break", "break", ("break",)),
    BadKernel(uses_continue, (_f32(), 8), "continue", "continue", ("continue",)),
    BadKernel(uses_lambda, (_f32(),), "lambda", "lambda", ("lambda",)),
    BadKernel(uses_try, (_f32(),), "try", "try", ("try",)),
    BadKernel(chained_comparison, (_f32(),), "chained", "0.0 < x < 3.0", ("comparison", ("chained", "multiple"))),
    BadKernel(runtime_arange_bound, (_f32(), 16), "runtime arange", "tl.arange", ("arange", "constexpr")),
    BadKernel(runtime_full_shape, (_f32(), 16), "runtime shape", "tl.full", ("shape element 1", "constexpr")),
    BadKernel(arange_not_power_of_two, (_f32(),), "power of two", "tl.arange", ("arange", "power of 2")),
    BadKernel(float_floordiv, (_f32(),), "float floordiv", "x // 2.0", ("fp32",)),
    BadKernel(fp8_plus_int, (_f32(),), "fp8 plus int", "x.to(tl.float8e5) + offs", ("fp8e5", "int32")),
    BadKernel(unsigned_plus_negative, (_u32(),), "unsigned negative", "u + -1", ("unsigned", "negative")),
    BadKernel(unknown_name, (_f32(),), "unknown name", "undefined_helper", ("undefined_helper",)),
    BadKernel(loop_carried_type_change, (_f32(), 4), "loop carried", "for", ("acc", "int32", "fp32")),
    BadKernel(defined_in_one_branch, (_f32(), 4), "one branch", "only_then", ("only_then",)),
    BadKernel(return_inside_loop, (_f32(), 4), "return in loop", "if", ("return",)),
    BadKernel(store_to_constexpr, (_f32(), 0), "store to constexpr", "tl.store", (PTR,)),
    BadKernel(constexpr_reassigned_in_loop, (_f32(), 4), "constexpr in loop", "for", ("BLOCK",),
              (("BLOCK", 16),)),
    BadKernel(chained_assignment, (_f32(),), "chained assignment", "a = b = 1.0", ("assignment",),
              upstream_differs="upstream raises a bare TypeError without a location"),
    BadKernel(item_assignment, (_f32(),), "item assignment", "x[0]", (("__setitem__", "item assignment"),)),
    BadKernel(branch_types_differ, (_f32(), 4), "branch types", "if", ("y", "int32", "fp32")),
    BadKernel(block_condition, (_f32(),), "block condition", "if", ("ambiguous",)),
    BadKernel(reads_plain_global, (_f32(),), "plain global", "GLOBAL_SCALE", ("GLOBAL_SCALE",)),
    BadKernel(static_assert_fails, (_f32(),), "static_assert", "tl.static_assert", ("multiple of 32",),
              (("BLOCK", 48),)),
    BadKernel(nested_function, (_f32(),), "nested def", "def helper", (("nested", "def", "FunctionDef"),),
              upstream_differs="upstream fails with a bare StopIteration at the argument list"),
    BadKernel(tensor_power, (_f32(),), "x squared", "x**2", (("__pow__", "**", "pow"),)),
]


def _has(message: str, word) -> bool:
    alternatives = (word,) if isinstance(word, str) else word
    return any(a.lower() in message.lower() for a in alternatives)


@pytest.mark.parametrize("bad", BAD_KERNELS, ids=[b.marker.replace(" ", "-") for b in BAD_KERNELS])
def test_bad_kernel_is_rejected_at_its_line(bad: BadKernel) -> None:
    if IMPL == "upstream" and bad.upstream_differs:
        pytest.skip(bad.upstream_differs)
    with pytest.raises(triton.CompilationError) as caught:
        compile_kernel(bad.kernel, *bad.args, **dict(bad.kwargs))
    message = str(caught.value)
    line, column = location_of(bad.marker, bad.snippet, THIS_FILE)
    where = LOCATION.search(message)
    assert where, f"no 'at LINE:COLUMN' in the message:\n{message}"
    reported = (int(where.group(1)), int(where.group(2)))
    if IMPL == "upstream":
        # Upstream counts lines from the kernel's `def` (line 1); tritone from the file's start.
        reported = (reported[0] + _def_line(bad.kernel) - 1, reported[1])
    assert reported == (line, column), f"reported at {reported}, expected {line}:{column}\n{message}"
    source_line = THIS_FILE.read_text().splitlines()[line - 1].split("  # E:")[0].strip()
    assert source_line in message, f"the message does not show the source line {source_line!r}:\n{message}"
    for word in bad.keywords:
        assert _has(message, word), f"{word!r} not in the message:\n{message}"


def _def_line(kernel) -> int:
    name = kernel.fn.__name__
    lines = THIS_FILE.read_text().splitlines()
    return next(i for i, text in enumerate(lines, start=1) if text.startswith(f"def {name}("))


@triton.jit
def well_formed(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@pytest.mark.skipif(IMPL == "upstream", reason="upstream launches need its GPU runtime")
def test_missing_argument_is_a_type_error() -> None:
    with pytest.raises(TypeError) as caught:
        well_formed[(1,)](_f32(), BLOCK=16)
    assert "n" in str(caught.value)


@pytest.mark.skipif(IMPL == "upstream", reason="upstream launches need its GPU runtime")
def test_too_many_arguments_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        well_formed[(1,)](_f32(), 16, 16, 99)


@pytest.mark.skipif(IMPL == "upstream", reason="upstream launches need its GPU runtime")
def test_unknown_keyword_is_a_key_error() -> None:
    with pytest.raises(KeyError) as caught:
        well_formed[(1,)](_f32(), 16, BLOCK=16, num_warpz=4)
    assert "num_warpz" in str(caught.value)
    assert "unrecognised" in str(caught.value)
