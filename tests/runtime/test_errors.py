"""Error classes under Triton's module paths (`triton.runtime.errors`,
`triton.compiler.errors` reached as an attribute): one class per error, whichever
path names it, so `except` clauses and `pytest.raises` of upstream code match."""

from __future__ import annotations

import subprocess
import sys

import tritone.errors
from tritone.runtime import autotuner, errors


def test_runtime_errors_are_the_same_classes():
    assert errors.InterpreterError is tritone.errors.InterpreterError
    assert errors.OutOfResources is tritone.errors.OutOfResources
    assert errors.PTXASError is tritone.errors.PTXASError
    assert errors.AutotunerError is autotuner.AutotunerError


def test_compiler_errors_is_an_attribute_after_importing_the_package():
    code = ("import tritone, tritone.errors; "
            "assert tritone.compiler.errors.CompilationError is tritone.errors.CompilationError")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
