"""Who answers `import triton`: the startup hook's decision from the environment
variable, the recorded choice and simulated sys.path layouts, and `python -m
tritone use` recording it."""

from __future__ import annotations

import importlib.machinery
import io
import os
from pathlib import Path

import pytest

import _tritone_triton_hook as hook
import tritone
from tritone.doctor.provider import use_command


@pytest.fixture
def choice_file(tmp_path, monkeypatch):
    """The recorded choice lives in a temporary folder instead of beside the hook."""
    path = tmp_path / hook.CHOICE_FILE
    monkeypatch.setattr(hook, "choice_path", lambda: str(path))
    return path


def fake_triton(folder, as_package=True):
    """A `triton` package (or a bare folder: a namespace package) in `folder`; returns the folder."""
    (folder / "triton").mkdir(parents=True)
    if as_package:
        (folder / "triton" / "__init__.py").write_text("__version__ = '0.0.1'\n")
    return folder


def test_hook_presents_the_api_version_tritone_declares():
    assert hook.TRITON_API_VERSION == tritone.__version__


@pytest.mark.parametrize("value", ["1", "true", "YES", " on "])
def test_env_true_makes_tritone_answer_whatever_else_says(value):
    decision = hook.decide(value, "triton", "/somewhere/triton/__init__.py")
    assert (decision.answer, decision.reason) == ("tritone", "env")
    assert hook.ENV_VAR in decision.detail


@pytest.mark.parametrize("value", ["0", "False", "no", "OFF"])
def test_env_false_leaves_triton_to_upstream_even_when_tritone_is_recorded(value):
    decision = hook.decide(value, "tritone", None)
    assert (decision.answer, decision.reason) == ("triton", "env")


@pytest.mark.parametrize("value", ["2", "tritone", "ture"])
def test_a_value_the_hook_does_not_understand_names_the_variable(value):
    with pytest.raises(ValueError, match=f"{hook.ENV_VAR}={value!r} is not understood"):
        hook.decide(value, None, None)


def test_recorded_choice_applies_when_the_variable_is_unset_or_empty(choice_file):
    assert hook.decide(None, "tritone", "/x/triton/__init__.py") == hook.Decision(
        "tritone", "recorded", f"`python -m tritone use tritone` recorded in {choice_file}")
    assert hook.decide("  ", "triton", None).answer == "triton"


def test_auto_gives_upstream_where_it_is_installed_and_tritone_where_not():
    upstream = hook.decide(None, None, "/site/triton/__init__.py")
    assert (upstream.answer, upstream.reason) == ("triton", "auto") and "another triton" in upstream.detail
    alone = hook.decide(None, "auto", None)
    assert (alone.answer, alone.reason) == ("tritone", "auto")


def test_upstream_is_found_on_a_simulated_sys_path(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    site = fake_triton(tmp_path / "site")
    finders = [hook.TritonFinder(), importlib.machinery.PathFinder]
    assert hook.upstream_origin(finders, [str(empty)]) is None
    assert hook.upstream_origin(finders, [str(empty), str(site)]) == str(site / "triton" / "__init__.py")


def test_a_bare_triton_folder_is_not_an_upstream_install(tmp_path):
    # e.g. a clone of the triton repository in the current directory
    checkout = fake_triton(tmp_path / "work", as_package=False)
    assert hook.upstream_origin([importlib.machinery.PathFinder], [str(checkout)]) is None


def test_the_finder_decides_once_and_keeps_it(tmp_path, monkeypatch, choice_file):
    monkeypatch.delenv(hook.ENV_VAR, raising=False)
    monkeypatch.setattr(hook, "upstream_origin", lambda: None)
    finder = hook.TritonFinder()
    assert finder.decision().answer == "tritone"
    hook.record("triton")
    assert finder.decision().answer == "tritone"
    assert hook.TritonFinder().decision() == hook.Decision(
        "triton", "recorded", f"`python -m tritone use triton` recorded in {choice_file}")


def test_record_writes_reads_and_auto_removes(choice_file):
    assert hook.read_recorded() is None
    assert hook.record("tritone") == str(choice_file)
    assert hook.read_recorded() == "tritone"
    hook.record("triton")
    assert hook.read_recorded() == "triton"
    hook.record("auto")
    assert not choice_file.exists() and hook.read_recorded() is None
    with pytest.raises(ValueError, match="unknown choice 'upstream'"):
        hook.record("upstream")


def test_a_file_holding_anything_else_counts_as_no_choice(choice_file):
    choice_file.write_text("maybe\n")
    assert hook.read_recorded() is None


def test_record_where_it_cannot_write_says_what_to_do(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the folder should be")
    monkeypatch.setattr(hook, "choice_path", lambda: str(blocker / hook.CHOICE_FILE))
    with pytest.raises(OSError, match="cannot record the choice in .*TRITONE_AS_TRITON"):
        hook.record("tritone")


@pytest.fixture
def installed_hook(monkeypatch, choice_file):
    """The hook as `use` sees it in an environment where its .pth is installed."""
    monkeypatch.setattr(hook, "pth_installed", lambda: True)
    monkeypatch.delenv(hook.ENV_VAR, raising=False)
    return hook


def test_use_records_the_choice(installed_hook, choice_file, monkeypatch):
    monkeypatch.setattr(hook, "upstream_origin", lambda: "/site/triton/__init__.py")
    out = io.StringIO()
    assert use_command("tritone", out, installed_hook) == 0
    assert choice_file.read_text().strip() == "tritone"
    assert "tritone answers `import triton` in this environment" in out.getvalue()
    out = io.StringIO()
    assert use_command("auto", out, installed_hook) == 0
    assert not choice_file.exists() and "here that is upstream triton" in out.getvalue()


def test_use_triton_without_upstream_says_so(installed_hook, choice_file, monkeypatch):
    monkeypatch.setattr(hook, "upstream_origin", lambda: None)
    out = io.StringIO()
    assert use_command("triton", out, installed_hook) == 0
    assert choice_file.read_text().strip() == "triton"
    assert "no upstream triton is installed here" in out.getvalue()


def test_use_mentions_a_variable_that_overrides_it(installed_hook, monkeypatch):
    monkeypatch.setattr(hook, "upstream_origin", lambda: None)
    monkeypatch.setenv(hook.ENV_VAR, "0")
    out = io.StringIO()
    assert use_command("tritone", out, installed_hook) == 0
    assert f"{hook.ENV_VAR}=0 is set in this shell and wins" in out.getvalue()


def test_use_without_the_hook_installed_fails_with_the_fix(monkeypatch, choice_file):
    monkeypatch.setattr(hook, "pth_installed", lambda: False)
    out = io.StringIO()
    assert use_command("tritone", out, hook) == 1
    assert "startup hook is not installed" in out.getvalue() and "pip install" in out.getvalue()
    assert not os.path.exists(choice_file)


def test_the_hook_under_test_is_the_one_in_this_source_tree():
    # An editable install holds a copy of the hook, imported at start in place of the source.
    source = Path(tritone.__file__).resolve().parent.parent / "_tritone_triton_hook.py"
    assert Path(hook.__file__).read_bytes() == source.read_bytes(), (
        f"{hook.__file__} is an older copy of {source}: install tritone again (pip install -e .)")
