"""The startup hook in real processes: a venv holding the hook as the wheel
installs it, beside this Python's packages (upstream triton where installed, as
in CI). `python -c`, a `multiprocessing` spawn child, `python -m tritone use`
and `doctor` all follow the same decision."""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import json
import os
import textwrap
from pathlib import Path

import numpy
import pytest

import _tritone_triton_hook as hook
import tritone
from tests.provider._environments import REPORT, SOURCE_ROOT, hooked_environment

UPSTREAM = hook.upstream_origin([importlib.machinery.PathFinder])
needs_upstream = pytest.mark.skipif(UPSTREAM is None, reason="upstream triton is not installed in this Python")
TRITONE_INIT = SOURCE_ROOT / "tritone" / "__init__.py"


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    return hooked_environment(tmp_path_factory.mktemp("hooked") / "venv")


@pytest.fixture
def no_recorded_choice(environment):
    yield
    (environment.site_packages / hook.CHOICE_FILE).unlink(missing_ok=True)


SPAWN = textwrap.dedent("""
    import json, multiprocessing

    def probe(queue):
        import importlib.metadata, triton
        queue.put({"file": triton.__file__, "metadata": importlib.metadata.version("triton"),
                   "is_tritone": hasattr(triton, "__tritone_version__")})

    if __name__ == "__main__":
        context = multiprocessing.get_context("spawn")
        queue = context.Queue()
        child = context.Process(target=probe, args=(queue,))
        child.start()
        found = queue.get(timeout=120)
        child.join()
        print(json.dumps(found))
""")


def test_the_variable_makes_tritone_answer_in_python_c(environment):
    code = textwrap.dedent("""
        import json, sys
        import triton, tritone
        import triton.language as tl, tritone.language
        import triton.runtime.autotuner
        from triton.runtime.jit import JITFunction
        assert triton is tritone and triton.jit is tritone.jit and tl is tritone.language
        assert tl.dtype is tritone.language.dtype
        assert triton.runtime.autotuner.Autotuner is tritone.runtime.autotuner.Autotuner
        assert JITFunction is tritone.JITFunction
        assert sys.modules["triton.runtime.jit"] is sys.modules["tritone.runtime.jit"]
    """) + REPORT
    found = environment.json(code, env={"TRITONE_AS_TRITON": "1"})
    assert Path(found["file"]) == TRITONE_INIT and Path(found["spec_origin"]) == TRITONE_INIT
    assert found["is_tritone"] and found["version"] == found["metadata"] == tritone.__version__


def test_reload_keeps_working_on_an_aliased_module(environment):
    code = ("import importlib, triton.testing, tritone.testing; "
            "assert importlib.reload(triton.testing) is tritone.testing; print('{}')")
    environment.run(code, env={"TRITONE_AS_TRITON": "yes"})


ANNOTATIONS = textwrap.dedent("""
    import json, pickle, types
    import triton
    import triton.language as tl
    # What Inductor's copy of a user kernel holds for `SCALE: tl.constexpr = tl.constexpr(3)`:
    copy = types.ModuleType("copy")
    exec(f"import triton\\nSCALE: {tl.constexpr.__module__}.{tl.constexpr.__name__} = 3", copy.__dict__)
    print(json.dumps({"module": tl.constexpr.__module__, "resolved": copy.__annotations__["SCALE"] is tl.constexpr,
                      "pickled": type(pickle.loads(pickle.dumps(tl.constexpr(3)))) is tl.constexpr}))
""")


def test_classes_torch_names_in_generated_code_resolve_through_triton(environment):
    assert environment.json(ANNOTATIONS, env={"TRITONE_AS_TRITON": "1"}) == {
        "module": "triton.language.core", "resolved": True, "pickled": True}
    alone = environment.run("import tritone.language as tl; print(tl.constexpr.__module__)",
                            env={"TRITONE_AS_TRITON": "0"})
    assert alone.stdout.strip() == "tritone.language.core"  # a process where upstream answers keeps tritone's


def test_python_m_triton_runs_tritone_modules(environment):
    done = environment.run("", "-m", "triton", "use", "--help", env={"TRITONE_AS_TRITON": "1"})
    assert done.stdout.startswith("usage: python -m tritone use") and "{tritone,triton,auto}" in done.stdout


def test_a_spawned_child_follows_the_variable(environment, tmp_path):
    script = tmp_path / "spawn_probe.py"
    script.write_text(SPAWN, encoding="utf-8")
    found = environment.json("", str(script), env={"TRITONE_AS_TRITON": "1"})
    assert found["is_tritone"] and Path(found["file"]) == TRITONE_INIT
    assert found["metadata"] == tritone.__version__


@needs_upstream
def test_without_the_variable_upstream_answers(environment):
    found = environment.json(REPORT)
    assert not found["is_tritone"] and Path(found["file"]) == Path(UPSTREAM)
    assert found["metadata"] == importlib.metadata.version("triton") == found["version"]


@needs_upstream
def test_the_recorded_choice_holds_in_spawned_children_until_auto(environment, tmp_path, no_recorded_choice):
    used = environment.run("", "-m", "tritone", "use", "tritone")
    assert str(environment.site_packages / hook.CHOICE_FILE) in used.stdout
    script = tmp_path / "spawn_probe.py"
    script.write_text(SPAWN, encoding="utf-8")
    assert environment.json("", str(script))["is_tritone"]
    # The variable still wins over the record.
    assert not environment.json(REPORT, env={"TRITONE_AS_TRITON": "0"})["is_tritone"]
    environment.run("", "-m", "tritone", "use", "auto")
    assert not (environment.site_packages / hook.CHOICE_FILE).exists()
    assert not environment.json("", str(script))["is_tritone"]


def test_a_bad_variable_stops_the_import_with_its_name(environment):
    done = environment.run("import triton", env={"TRITONE_AS_TRITON": "sure"}, check=False)
    assert done.returncode != 0 and "TRITONE_AS_TRITON='sure' is not understood" in done.stderr


def test_doctor_says_who_answers_and_that_the_hook_is_installed(environment):
    done = environment.run("", "-m", "tritone", "doctor", "--json", env={"TRITONE_AS_TRITON": "1"}, check=False,
                           timeout=300)
    checks = {(check["section"], check["name"]): check for check in json.loads(done.stdout)["checks"]}
    which = checks[("triton", "which triton answers")]
    assert which["status"] == "pass" and which["data"]["answer"] == "tritone" and which["data"]["reason"] == "env"
    assert which["summary"].startswith(f"tritone (Triton {tritone.__version__} API) at ")
    hook_check = checks[("triton", "startup hook")]
    assert hook_check["status"] == "pass" and str(environment.site_packages) in hook_check["summary"]


def test_doctor_explains_a_python_started_without_site(environment):
    code = ("import json; from tritone.doctor.provider import provider_checks, provider_facts; "
            "print(json.dumps([check.summary for check in provider_checks(provider_facts())]))")
    numpy_site = Path(numpy.__file__).resolve().parent.parent
    path = os.pathsep.join(map(str, (environment.site_packages, SOURCE_ROOT, numpy_site)))
    which, hooked = environment.json("", "-S", "-c", code, env={"PYTHONPATH": path, "TRITONE_AS_TRITON": "1"})
    assert "startup hook is not active in this process" in which
    assert hooked == "installed but did not run: this Python started without `site` (-S)"
