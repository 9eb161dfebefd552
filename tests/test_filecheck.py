"""`triton._filecheck`: `run_parser` runs tritone's frontend on a kernel called
with arguments; the FileCheck helpers fail with NoMLIRError (tritone has no
MLIR text), after compiling the kernel."""

from __future__ import annotations

import numpy as np
import pytest

import tritone
import tritone.language as tl
from tritone._filecheck import (
    MatchError,
    NoMLIRError,
    filecheck_test,
    run_filecheck,
    run_filecheck_test,
    run_parser,
    stub_target,
)
from tritone.errors import CompilationError


@tritone.jit
def fill(X, value, N: tl.constexpr):
    tl.store(X + tl.arange(0, N), value)


@tritone.jit
def bad_shape():
    tl.arange(0, 3)


@tritone.jit
def checked_kernel():
    # CHECK: tt.make_range
    tl.arange(0, 4)


def test_run_parser_gives_the_frontend_ir_of_the_call():
    n = int(np.random.default_rng().choice([16, 32, 64]))
    module = run_parser(fill, args=(np.zeros(n, np.float32), 2.5), kwargs={"N": n})
    assert module.kernel.name.startswith("fill")
    (store,) = [op for op in module.walk() if op.name == "store"]
    assert [int(d) for d in store.operands[0].type.shape] == [n]
    assert stub_target.arch == 100


def test_run_parser_raises_the_kernels_compilation_error():
    with pytest.raises(CompilationError, match="power of 2"):
        run_parser(bad_shape)


def test_filecheck_helpers_fail_naming_the_missing_mlir():
    with pytest.raises(NoMLIRError, match="tritone has no MLIR text") as info:
        run_filecheck("placeholder", "module {}", "// CHECK: module")
    assert "'placeholder'" in str(info.value)
    with pytest.raises(NoMLIRError, match="kernel checked_kernel"):
        run_filecheck_test(checked_kernel)
    test_fn = filecheck_test(checked_kernel)
    assert test_fn.__name__ == "checked_kernel"
    with pytest.raises(NoMLIRError, match="kernel checked_kernel"):
        test_fn()


def test_filecheck_test_still_reports_compile_errors():
    with pytest.raises(CompilationError):
        run_filecheck_test(bad_shape)


def test_match_error_shows_the_module():
    error = MatchError("no match for CHECK", "module { tt.func }")
    assert isinstance(error, ValueError)
    assert str(error) == "no match for CHECK\nmodule { tt.func }"
