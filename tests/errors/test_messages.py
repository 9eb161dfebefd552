"""Errors a newcomer meets, and that they lead to the fix.

Each kind of mistake has a test that the message names the user's thing (the
kernel, the parameter, the source line) and says what to change. The traceback
Python prints for a compile error is the user's call and the kernel's lines,
not tritone's internals, unless TRITONE_FULL_TRACEBACK=1 or TRITON_DEBUG=1.

These check tritone's own wording, so they run on tritone whatever
TRITONE_TEST_IMPL says (test_bad_kernels.py is the file shared with upstream).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import pytest
import torch

import tritone as triton
import tritone.language as tl
from tests.errors._compile import location_of
from tritone.backends.compiler import GPUTarget
from tritone.compiler import ASTSource
from tritone.errors import CompilationError

THIS_FILE = Path(__file__)
WORKTREE = THIS_FILE.parents[2]
# Set by the tests that ask for tritone's frames; cleared for every other test.
DEBUG_SETTINGS = ("TRITONE_FULL_TRACEBACK", "TRITON_DEBUG")


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    for name in DEBUG_SETTINGS:
        monkeypatch.delenv(name, raising=False)


def _data(n: int = 16) -> torch.Tensor:
    return torch.randn(n) + 2.0


@triton.jit
def runtime_arange_bound(x_ptr, n):
    offs = tl.arange(0, n)  # E: runtime arange
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def runtime_zeros_shape(x_ptr, BLOCK):
    acc = tl.zeros((BLOCK,), tl.float32)  # E: runtime zeros
    tl.store(x_ptr + tl.arange(0, 16), acc)


@triton.jit
def full_with_runtime_value_and_shape(x_ptr, fill, BLOCK):
    block = tl.full((BLOCK,), fill, x_ptr.dtype.element_ty)  # E: full beside
    tl.store(x_ptr + tl.arange(0, 16), block)


@triton.jit
def computed_arange_bound(x_ptr, n):
    offs = tl.arange(0, n * 2)  # E: computed bound
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def innermost(width):
    return tl.arange(0, width)  # E: deep arange


@triton.jit
def middle(width):
    return innermost(width) * 2  # E: deep middle


@triton.jit
def outer(size):
    return middle(size) + 1  # E: deep outer


@triton.jit
def three_helpers_deep(x_ptr, n_cols):
    offs = outer(n_cols)  # E: deep kernel
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def arange_of_ten(x_ptr):
    offs = tl.arange(0, 10)  # E: arange ten
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def arange_from_four_to_ten(x_ptr):
    offs = tl.arange(4, 10)  # E: arange four
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def stores_fp8_to_int(x_ptr, i_ptr):
    offs = tl.arange(0, 16)
    tl.store(i_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e5))  # E: fp8 store


@triton.jit
def dot_of_unmatched_blocks(x_ptr):
    a = tl.full((16, 32), 1.0, tl.float16)
    b = tl.full((16, 32), 2.0, tl.float16)
    c = tl.dot(a, b)  # E: dot shapes
    tl.store(x_ptr + tl.arange(0, 16), tl.sum(c, 1))


@triton.jit
def adds_unmatched_blocks(x_ptr):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    tl.store(x_ptr + a, a + b)  # E: broadcast


@triton.jit
def indexes_a_pointer(x_ptr):
    offs = tl.arange(0, 16)
    v = x_ptr[offs]  # E: pointer index
    tl.store(x_ptr + offs, v)


@triton.jit
def misspells_a_local(x_ptr):
    offsets = tl.arange(0, 16)  # noqa: F841
    tl.store(x_ptr + offset, 1.0)  # E: local typo  # noqa: F821


@triton.jit
def misspells_a_language_function(x_ptr):
    offs = tl.arnge(0, 16)  # E: tl typo
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def forgets_the_tl_prefix(x_ptr):
    offs = arange(0, 16)  # E: no prefix  # noqa: F821
    tl.store(x_ptr + offs, 1.0)


@triton.jit
def stores_through_an_int(x_ptr, n):
    offs = tl.arange(0, 16)
    tl.store(n + offs, 1.0)  # E: int pointer


@triton.jit
def adds_a_string(v):
    return v + "a"  # E: helper string


@triton.jit
def calls_a_helper_that_adds_a_string(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, adds_a_string(tl.load(x_ptr + offs)))  # E: helper call


@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def _compile_error(kernel, *args, **kwargs) -> CompilationError:
    with pytest.raises(CompilationError) as caught:
        kernel[(1,)](*args, **kwargs)
    return caught.value


def _shows_line(message: str, marker: str, snippet: str) -> None:
    """The message points at the line marked `# E: marker`, column of `snippet`, and shows it."""
    line, column = location_of(marker, snippet, THIS_FILE)
    assert f"at {line}:{column} " in message, message
    source = THIS_FILE.read_text().splitlines()[line - 1]
    assert f"{source}\n{' ' * column}^" in message, message


# -- a run-time value where a constant is needed --------------------------------------

def test_runtime_arange_bound_names_the_parameter_to_declare_constexpr() -> None:
    error = _compile_error(runtime_arange_bound, _data(), 16)
    message = str(error)
    _shows_line(message, "runtime arange", "tl.arange")
    assert "kernel runtime_arange_bound" in message
    assert "`n: tl.constexpr`" in message
    assert "def runtime_arange_bound(...)" in message
    assert error.hint and "`n: tl.constexpr`" in error.hint


def test_runtime_shape_of_zeros_names_the_parameter_and_hides_the_library_frame() -> None:
    message = str(_compile_error(runtime_zeros_shape, _data(), 16))
    _shows_line(message, "runtime zeros", "tl.zeros")
    assert "Shape element 0" in message
    assert "`BLOCK: tl.constexpr`" in message
    # tl.zeros is a @jit function of tritone's own library: its body is not the user's mistake.
    assert "standard.py" not in message
    assert message.count(" in kernel ") == 1


def test_only_the_shape_parameter_is_named_not_the_values_beside_it() -> None:
    error = _compile_error(full_with_runtime_value_and_shape, _data(), 3.5, 16)
    _shows_line(str(error), "full beside", "tl.full")
    assert "`BLOCK: tl.constexpr`" in error.hint
    assert "fill" not in error.hint and "x_ptr" not in error.hint


def test_a_bound_computed_from_a_parameter_names_the_parameter() -> None:
    error = _compile_error(computed_arange_bound, _data(32), 16)
    _shows_line(str(error), "computed bound", "tl.arange")
    assert "`n: tl.constexpr`" in error.hint


def test_full_traceback_shows_the_library_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITONE_FULL_TRACEBACK", "1")
    message = str(_compile_error(runtime_zeros_shape, _data(), 16))
    assert "standard.py" in message
    assert "in kernel zeros" in message


def test_three_helpers_deep_shows_each_call_and_names_the_kernel_parameter() -> None:
    error = _compile_error(three_helpers_deep, _data(), 16)
    message = str(error)
    places = [("deep kernel", "outer(n_cols)"), ("deep outer", "middle(size)"), ("deep middle", "innermost(width)"),
              ("deep arange", "tl.arange")]
    positions = []
    for marker, snippet in places:
        _shows_line(message, marker, snippet)
        positions.append(message.index(f"at {location_of(marker, snippet, THIS_FILE)[0]}:"))
    assert positions == sorted(positions), "call sites are not listed from the kernel inwards"
    # The value came from the kernel's `n_cols`, through the helpers' `size` and `width`.
    assert "`n_cols: tl.constexpr`" in message
    assert "kernel three_helpers_deep" in error.hint
    assert "arange's arguments must be of type tl.constexpr" in error.error_message
    assert error.callee is not None and error.callee.callee is not None


# -- arange of a length that is not a power of two ------------------------------------

@pytest.mark.parametrize(("kernel", "marker", "suggested", "mask"), [
    (arange_of_ten, "arange ten", "tl.arange(0, 16)", "mask=offs < 10"),
    (arange_from_four_to_ten, "arange four", "tl.arange(4, 12)", "mask=offs < 10"),
])
def test_arange_not_a_power_of_two_suggests_next_power_of_2_and_a_mask(kernel, marker, suggested, mask) -> None:
    message = str(_compile_error(kernel, _data()))
    _shows_line(message, marker, "tl.arange")
    assert "power of 2" in message
    assert "next_power_of_2" in message
    assert suggested in message
    assert mask in message


# -- launch-time mistakes ----------------------------------------------------------------

def test_list_as_a_pointer_says_what_an_argument_can_be() -> None:
    values = [float(v) for v in _data().tolist()]
    with pytest.raises(TypeError) as caught:
        scale[(1,)](values, 16, BLOCK=16)
    message = str(caught.value)
    assert "kernel scale" in message and "'x_ptr'" in message
    assert "list" in message
    assert "tensor" in message and "torch.tensor(" in message


def test_calling_a_kernel_directly_shows_the_grid_launch() -> None:
    with pytest.raises(RuntimeError) as caught:
        scale(_data(), 16, BLOCK=16)
    message = str(caught.value)
    assert "outside of the scope of a kernel" in message
    assert "scale[grid](x_ptr, n, BLOCK)" in message
    assert "triton.cdiv" in message


def test_misspelt_launch_option_suggests_the_option() -> None:
    with pytest.raises(KeyError) as caught:
        scale[(1,)](_data(), 16, BLOCK=16, num_warp=4)
    message = str(caught.value)
    assert "Keyword argument num_warp was specified but unrecognised" in message
    assert "did you mean num_warps?" in message
    assert "kernel scale has parameters x_ptr, n, BLOCK" in message


def test_missing_argument_names_the_kernel_and_parameter() -> None:
    with pytest.raises(TypeError) as caught:
        scale[(1,)](_data(), BLOCK=16)
    assert "scale()" in str(caught.value) and "'n'" in str(caught.value)


# -- other compile-time mistakes --------------------------------------------------------

@pytest.mark.parametrize(("kernel", "args", "marker", "snippet", "words"), [
    (stores_fp8_to_int, lambda: (_data(), torch.randint(1, 9, (16,), dtype=torch.int32)), "fp8 store", "tl.store",
     ("tl.store", "fp8e5", "int32", ".to(tl.float32)")),
    (dot_of_unmatched_blocks, lambda: (_data(),), "dot shapes", "tl.dot",
     ("[16, 32]", "reduction", "tl.trans")),
    (adds_unmatched_blocks, lambda: (_data(32),), "broadcast", "a + b", ("[16]", "[32]", "x[:, None]")),
    (indexes_a_pointer, lambda: (_data(),), "pointer index", "x_ptr[offs]", ("tl.load(ptr + offsets)",)),
    (misspells_a_local, lambda: (_data(),), "local typo", "offset", ("offset is not defined", "`offsets`")),
    (misspells_a_language_function, lambda: (_data(),), "tl typo", "tl.arnge", ("arnge", "`arange`")),
    (calls_a_helper_that_adds_a_string, lambda: (_data(),), "helper call", "adds_a_string",
     ("'a'", "str")),
    (forgets_the_tl_prefix, lambda: (_data(),), "no prefix", "arange", ("arange is not defined", "`tl.arange`")),
    (stores_through_an_int, lambda: (_data(), 5), "int pointer", "tl.store",
     ("tl.store", "pointer", "x_ptr + offs", "an int32 block of shape [16]")),
], ids=["fp8-store", "dot-shapes", "broadcast", "pointer-index", "local-typo", "tl-typo", "helper-string",
        "no-tl-prefix", "int-pointer"])
def test_mistake_is_shown_at_its_line_with_what_to_do(kernel, args, marker, snippet, words) -> None:
    message = str(_compile_error(kernel, *args()))
    _shows_line(message, marker, snippet)
    for word in words:
        assert word in message, f"{word!r} not in:\n{message}"


def test_error_in_a_helper_shows_the_call_and_the_helper_line() -> None:
    message = str(_compile_error(calls_a_helper_that_adds_a_string, _data()))
    _shows_line(message, "helper call", "adds_a_string")
    _shows_line(message, "helper string", 'v + "a"')


# -- what Python prints -------------------------------------------------------------------

def _user_level_traceback(path: str) -> tuple[CompilationError, list[str]]:
    """The error of compiling `runtime_arange_bound` by `path` ("launch" or
    "compile", the CUDA compile API) and the lines of its printed traceback."""
    with pytest.raises(CompilationError) as caught:
        if path == "launch":
            runtime_arange_bound[(1,)](_data(), 16)
        else:
            source = ASTSource(runtime_arange_bound, {"x_ptr": "*fp32", "n": "i32"})
            triton.compile(source, target=GPUTarget("cuda", 80, 32))
    error = caught.value
    return error, "".join(traceback.format_exception(error)).splitlines()


@pytest.mark.parametrize("path", ["launch", "compile"])
def test_traceback_of_a_compile_error_is_the_users_call_and_kernel_line(path: str) -> None:
    error, lines = _user_level_traceback(path)
    text = "\n".join(lines)
    assert len(lines) < 25, text
    # The cause is the error that started it, as Triton's callers read it, without frames of its own.
    assert str(error.__cause__).startswith("arange's arguments must be of type tl.constexpr")
    assert error.__cause__.__traceback__ is None and error.__cause__.__cause__ is None and error.__suppress_context__
    for internal in ("codegen.py", "calls.py", "semantic_shape.py", "ast.py"):
        assert internal not in text, f"{internal} in the traceback:\n{text}"
    assert "offs = tl.arange(0, n)" in text and "`n: tl.constexpr`" in text


@pytest.mark.parametrize("setting", DEBUG_SETTINGS)
def test_debug_settings_keep_the_internal_frames_and_the_cause(monkeypatch: pytest.MonkeyPatch,
                                                               setting: str) -> None:
    monkeypatch.setenv(setting, "1")
    error, lines = _user_level_traceback("launch")
    text = "\n".join(lines)
    assert isinstance(error.__cause__, ValueError)
    assert "codegen.py" in text and "semantic_shape.py" in text
    assert len(lines) > 25


def test_a_script_with_one_mistake_prints_a_short_traceback(tmp_path: Path) -> None:
    script = tmp_path / "newcomer.py"
    script.write_text(textwrap.dedent("""
        import torch
        import tritone as triton
        import tritone.language as tl

        @triton.jit
        def add_one(x_ptr, n):
            offs = tl.arange(0, n)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)

        add_one[(1,)](torch.randn(16), 16)
    """))
    env = dict(os.environ, PYTHONPATH=str(WORKTREE), TRITON_INTERPRET="1")
    for name in DEBUG_SETTINGS:
        env.pop(name, None)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) < 25, result.stderr
    assert lines[-1].startswith("Hint: `n` is a run-time argument of kernel add_one"), result.stderr
    assert f'File "{script}", line 11' in result.stderr
    assert "offs = tl.arange(0, n)" in result.stderr


def test_pytest_shows_the_kernel_line_not_tritone_internals(tmp_path: Path) -> None:
    test_file = tmp_path / "test_newcomer.py"
    test_file.write_text(textwrap.dedent("""
        import torch
        import tritone as triton
        import tritone.language as tl

        @triton.jit
        def fill(x_ptr, BLOCK):
            tl.store(x_ptr + tl.arange(0, 16), tl.zeros((BLOCK,), tl.float32))

        def test_fill():
            fill[(1,)](torch.randn(16), 16)
    """))
    env = dict(os.environ, PYTHONPATH=str(WORKTREE), TRITON_INTERPRET="1")
    for name in DEBUG_SETTINGS:
        env.pop(name, None)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
                            capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    assert "`BLOCK: tl.constexpr`" in result.stdout
    assert "tl.store(x_ptr + tl.arange(0, 16), tl.zeros((BLOCK,), tl.float32))" in result.stdout
    # launch.py's frame is hidden from pytest (`__tracebackhide__`): pytest would print its whole source.
    # The language's exception shows as the cause (its message line only), as Triton keeps it.
    for internal in ("codegen.py", "calls.py", "standard.py", "launch.py"):
        assert internal not in result.stdout, result.stdout


# -- compatibility ------------------------------------------------------------------------

def test_compilation_error_keeps_upstreams_attributes_and_pickles_with_its_chain() -> None:
    error = _compile_error(three_helpers_deep, _data(), 16)
    assert error.src == three_helpers_deep.src
    assert error.node.lineno + three_helpers_deep.starting_line_number - 1 == error.lineno
    assert error.message == str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error)
    assert copy.hint == error.hint and copy.callee.function == "outer"


@triton.jit
def bad_program_id_axis(x_ptr, AXIS: tl.constexpr):
    tl.store(x_ptr, tl.program_id(AXIS).to(tl.float32))


@triton.jit
def bad_expand_dims_axis(x_ptr, AXIS: tl.constexpr):
    t = tl.expand_dims(tl.arange(0, 16), AXIS)
    tl.store(x_ptr + tl.arange(0, 16), tl.reshape(t, [16]).to(tl.float32))


@triton.jit
def static_assert_fails(x_ptr, N: tl.constexpr):
    tl.static_assert(N < 4, "N must be below 4")


def test_the_cause_of_a_compile_error_is_the_error_of_the_language_call() -> None:
    # Triton's callers read the language's message from `__cause__`.
    axis = int(torch.randint(3, 40, ()).item())
    error = _compile_error(bad_program_id_axis, _data(), axis)
    assert isinstance(error.__cause__, ValueError)
    assert str(error.__cause__) == f"program_id axis must be 0, 1, or 2 but got {axis}"
    error = _compile_error(bad_expand_dims_axis, _data(), -3)
    assert "invalid axis -3" in str(error.__cause__)
    # An error that starts as a compile error (a failed static_assert) has no cause.
    assert _compile_error(static_assert_fails, _data(), 8).__cause__ is None
