"""Golden-test helper for the passes: IR text in, one pass, IR text out."""

import textwrap

import pytest

from tritone.ir import parse_module, print_module
from tritone.passes import run_pipeline


def _run_golden(pass_module, before: str, after: str) -> None:
    module = parse_module(textwrap.dedent(before))
    run_pipeline(module, passes=[pass_module], verify=True)
    assert print_module(module) == textwrap.dedent(after).lstrip("\n")


@pytest.fixture
def golden():
    """`golden(pass_module, before_text, expected_text)` checks one pass against hand-written output."""
    return _run_golden
