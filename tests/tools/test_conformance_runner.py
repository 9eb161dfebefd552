"""tools/conformance.py, the runner of upstream Triton's tests with upstream and
with tritone answering `import triton`, on a synthetic test folder: two fake
`triton` packages stand for the two columns, so the test needs neither of them
and runs in seconds."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _load_runner():
    spec = importlib.util.spec_from_file_location("conformance_runner", REPO_ROOT / "tools" / "conformance.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


runner = _load_runner()

CONFTEST = """
import pytest

def pytest_configure(config):
    config.addinivalue_line("markers", "interpreter: runs in the interpreter")

def pytest_addoption(parser):
    parser.addoption("--device", action="store", default="cuda")

@pytest.fixture
def device(request):
    return request.config.getoption("--device")
"""

TEST_FILE = """
import os
import time

import pytest
import triton

UNDER_TRITONE = getattr(triton, "__tritone_version__", None) is not None
pytestmark = pytest.mark.interpreter

def test_both(device):
    assert device == "cpu" and os.environ["TRITON_INTERPRET"] == "1"

@pytest.mark.parametrize("n", [1, 2])
def test_upstream_only(n):
    assert not UNDER_TRITONE, f"tritone lacks feature {n}"

def test_known():
    assert not UNDER_TRITONE, "reads upstream's TTGIR"

def test_tritone_only():
    assert UNDER_TRITONE

def test_skipped():
    pytest.skip("not on this machine")

def test_compile_error():
    if UNDER_TRITONE:
        raise ValueError("at 3:8 in kernel k (file.py):\\n    x = y\\n    ^\\nname 'y' is not defined")

@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")

def test_setup_error(broken):
    pass
"""

HANGING_FILE = """
import time

import pytest

pytestmark = pytest.mark.interpreter

def test_quick():
    pass

def test_hangs():
    time.sleep(120)
"""

KNOWN = """
# Conformance

- `unit/test_sample.py::test_both`: a bullet outside the section is not an entry

## Known differences

- `unit/test_sample.py::test_known`: tritone has no TTGIR
  to read
- `tutorials/02-*.py`: needs a GPU feature tritone lacks

### On the GPU only

- `unit/test_sample.py::test_upstream_only` (cuda): only a GPU run expects this

## Elsewhere

- `unit/test_sample.py::test_upstream_only*`: outside the section again
"""


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """A tests folder, a tutorials folder, a fake upstream `triton` on the
    inherited PYTHONPATH and an alias folder holding a fake tritone-answered one."""
    tests = tmp_path / "test"
    (tests / "unit").mkdir(parents=True)
    (tests / "conftest.py").write_text(CONFTEST)
    (tests / "unit" / "test_sample.py").write_text(TEST_FILE)
    (tests / "unit" / "test_hanging.py").write_text(HANGING_FILE)
    (tests / "unit" / "test_unmarked.py").write_text("def test_not_for_the_interpreter():\n    pass\n")
    (tests / "unit" / "test_broken_import.py").write_text(
        "import pytest\nimport triton.nothing_here\n\npytestmark = pytest.mark.interpreter\n\ndef test_a():\n    pass\n"
    )
    tutorials = tmp_path / "tutorials"
    tutorials.mkdir()
    (tutorials / "01-works.py").write_text("import triton\nprint('ok')\n")
    (tutorials / "02-upstream-only.py").write_text(
        "import triton\nassert getattr(triton, '__tritone_version__', None) is None\n"
    )
    (tutorials / "03-fails.py").write_text("raise SystemExit('broken everywhere')\n")
    upstream = tmp_path / "upstream"
    (upstream / "triton").mkdir(parents=True)
    (upstream / "triton" / "__init__.py").write_text("__version__ = '3.6.0'\n")
    (upstream / "triton" / "nothing_here.py").write_text("")
    alias = tmp_path / "alias"
    (alias / "triton").mkdir(parents=True)
    (alias / "triton" / "__init__.py").write_text("__version__ = '3.6.0'\n__tritone_version__ = 'fake'\n")
    known = tmp_path / "CONFORMANCE.md"
    known.write_text(KNOWN)
    monkeypatch.setenv("PYTHONPATH", str(upstream))
    return {"tests": tests, "tutorials": tutorials, "alias": alias, "known": known, "upstream": upstream}


def _common_args(folders, out):
    return ["--device", "cpu", "--alias-dir", str(folders["alias"]), "--known", str(folders["known"]),
            "--out", str(out), "--timeout", "60"]


def test_table_regressions_and_expected_differences(folders, tmp_path, capsys):
    out = tmp_path / "out"
    status = runner.main(
        ["--tests", str(folders["tests"]),
         "--files", "unit/test_sample.py", "unit/test_broken_import.py", "unit/test_unmarked.py",
         "--tutorials", str(folders["tutorials"]), "--tutorial-names", "0*.py", "--list-regressions", "--jobs", "2"]
        + _common_args(folders, out)
    )
    assert status == 1
    report = json.loads((out / "conformance.json").read_text())
    files = {entry["path"]: entry for entry in report["files"]}

    sample = files["unit/test_sample.py"]
    counts = {side: {s: 0 for s in runner.STATUSES} for side in runner.SIDES}
    for side, run in sample["runs"].items():
        for result in run["tests"].values():
            counts[side][result["status"]] += 1
    assert counts["upstream"] == {"passed": 5, "failed": 1, "skipped": 1, "error": 1}
    assert counts["tritone"] == {"passed": 2, "failed": 4, "skipped": 1, "error": 1}
    regressions = sample["regressions"]
    assert regressions["unit/test_sample.py::test_compile_error"] == (
        "failed: ValueError: at 3:8 in kernel k (file.py): ... name 'y' is not defined")
    assert sorted(regressions) == [
        "unit/test_sample.py::test_compile_error",
        "unit/test_sample.py::test_upstream_only[1]",
        "unit/test_sample.py::test_upstream_only[2]",
    ]
    assert "tritone lacks feature 2" in regressions["unit/test_sample.py::test_upstream_only[2]"]
    assert list(sample["expected"]) == ["unit/test_sample.py::test_known"]
    assert sample["tritone_only"] == ["unit/test_sample.py::test_tritone_only"]
    assert "no TTGIR" in sample["expected"]["unit/test_sample.py::test_known"]
    setup_error = sample["runs"]["tritone"]["tests"]["unit/test_sample.py::test_setup_error"]
    assert setup_error["status"] == "error" and "fixture broke" in setup_error["message"]

    # --device cpu runs what upstream marks `interpreter` unless -m says otherwise
    assert files["unit/test_unmarked.py"]["runs"]["upstream"]["tests"] == {}
    assert files["unit/test_unmarked.py"]["runs"]["tritone"]["tests"] == {}

    broken = files["unit/test_broken_import.py"]
    assert broken["runs"]["upstream"]["tests"]["unit/test_broken_import.py::test_a"]["status"] == "passed"
    assert broken["runs"]["tritone"]["tests"]["unit/test_broken_import.py"]["status"] == "error"
    assert "triton.nothing_here" in broken["regressions"]["unit/test_broken_import.py::test_a"]

    assert files["tutorials/01-works.py"]["regressions"] == {}
    assert list(files["tutorials/02-upstream-only.py"]["expected"]) == ["tutorials/02-upstream-only.py"]
    fails = files["tutorials/03-fails.py"]["runs"]
    assert fails["upstream"]["tests"]["tutorials/03-fails.py"]["status"] == "failed"
    assert "broken everywhere" in fails["tritone"]["tests"]["tutorials/03-fails.py"]["message"]

    lines = (out / "regressions.txt").read_text().splitlines()
    assert [line.split("\t")[0] for line in lines] == [
        "unit/test_broken_import.py::test_a",
        "unit/test_sample.py::test_compile_error",
        "unit/test_sample.py::test_upstream_only[1]",
        "unit/test_sample.py::test_upstream_only[2]",
    ]
    table = (out / "conformance.md").read_text()
    assert "| unit/test_sample.py | 5 | 1 | 1 | 1 |" in table
    assert "| 3 | 1 | 1 |  |" in table  # regressions, expected, tritone only, no note
    assert "| 2 | failed: AssertionError: tritone lacks feature N" in table
    assert "| 1 | failed: ValueError: name 'y' is not defined |" in table
    printed = capsys.readouterr().out
    assert "\tfailed" not in printed  # with --out the regression list goes to its file only
    table_at = printed.index("| unit/test_sample.py | 5 | 1 | 1 | 1 |")
    assert printed.index("regressions by message:") > table_at
    assert "     2  failed: AssertionError: tritone lacks feature N" in printed[table_at:]


def test_timeout_keeps_the_results_before_the_hang(folders, tmp_path):
    out = tmp_path / "out"
    args = ["--tests", str(folders["tests"]), "--files", "unit/test_hanging.py", "--sides", "tritone"]
    args += _common_args(folders, out)
    args[args.index("--timeout") + 1] = "4"
    assert runner.main(args) == 0
    run = json.loads((out / "conformance.json").read_text())["files"][0]["runs"]["tritone"]
    assert run["timed_out"] and "timed out after 4 s" in run["note"]
    assert run["tests"] == {"unit/test_hanging.py::test_quick": {"status": "passed", "message": ""}}
    assert run["wall_s"] < 60


def test_refuses_a_column_answered_by_the_wrong_package(folders, tmp_path):
    (folders["upstream"] / "triton" / "__init__.py").write_text("__tritone_version__ = 'not upstream'\n")
    with pytest.raises(SystemExit, match="with TRITONE_AS_TRITON=0, `import triton` answers with tritone"):
        runner.main(["--tests", str(folders["tests"]), "--files", "unit/test_sample.py"]
                    + _common_args(folders, tmp_path / "out"))


def test_known_differences_come_from_their_section_only(folders):
    entries = runner.load_known_differences(folders["known"])
    assert [(entry.pattern, entry.device) for entry in entries] == [
        ("unit/test_sample.py::test_known", None),
        ("tutorials/02-*.py", None),
        ("unit/test_sample.py::test_upstream_only", "cuda"),
    ]
    assert runner.known_reason("unit/test_sample.py::test_known", entries) == "tritone has no TTGIR to read"
    assert runner.known_reason("tutorials/02-fused.py", entries) == "needs a GPU feature tritone lacks"
    assert runner.known_reason("unit/test_sample.py::test_both", entries) is None
    on_cpu = runner.load_known_differences(folders["known"], "cpu")
    assert runner.known_reason("unit/test_sample.py::test_upstream_only[1]", on_cpu) is None
    on_gpu = runner.load_known_differences(folders["known"], "cuda")
    assert runner.known_reason("unit/test_sample.py::test_upstream_only[1]", on_gpu) == "only a GPU run expects this"


def test_report_log_folds_phases_into_one_status(tmp_path):
    records = [
        {"nodeid": "x/t.py::a", "when": "setup", "outcome": "passed"},
        {"nodeid": "x/t.py::a", "when": "call", "outcome": "failed", "message": "AssertionError: call"},
        {"nodeid": "x/t.py::a", "when": "teardown", "outcome": "failed", "message": "teardown broke"},
        {"nodeid": "x/t.py::b", "when": "call", "outcome": "passed"},
        {"nodeid": "x/t.py::b", "when": "teardown", "outcome": "failed", "message": "teardown broke"},
        {"nodeid": "x/t.py::c", "when": "setup", "outcome": "skipped", "message": "xfail reason"},
        {"nodeid": "x/t.py", "when": "collect", "outcome": "failed", "message": "ImportError: no"},
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"xfail": False, "duration": 0, "message": "", **r}) + "\n" for r in records))
    results = runner.read_report_log(log, "unit/t.py")
    assert {key: (r.status, r.message) for key, r in results.items()} == {
        "unit/t.py::a": ("failed", "AssertionError: call"),
        "unit/t.py::b": ("error", "teardown broke"),
        "unit/t.py::c": ("skipped", "xfail reason"),
        "unit/t.py": ("error", "ImportError: no"),
    }


def test_upstream_column_taken_from_an_earlier_report(folders, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    args = ["--tests", str(folders["tests"]), "--files", "unit/test_sample.py"]
    assert runner.main(args + _common_args(folders, first)) == 1
    assert runner.main(args + _common_args(folders, second) + ["--upstream-from", str(first / "conformance.json")]) == 1
    before = json.loads((first / "conformance.json").read_text())["files"][0]
    after = json.loads((second / "conformance.json").read_text())
    assert after["meta"]["sides"].keys() == {"tritone"}
    assert after["files"][0]["runs"]["upstream"] == before["runs"]["upstream"]
    assert after["files"][0]["regressions"] == before["regressions"]
    with pytest.raises(SystemExit):
        runner.main(args + ["--sides", "upstream", "--upstream-from", str(first / "conformance.json")])
