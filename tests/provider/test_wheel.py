"""tritone installed from its sdist, then editable, into a fresh venv without
any other Triton: `import triton` answers with tritone right after `pip
install`, in `python -c` and in spawned children, and `pip uninstall` takes the
hook away again."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

import tritone
from tests.provider._environments import REPORT, SOURCE_ROOT, create_venv
from tests.provider.test_processes import SPAWN

# What an sdist needs to build the wheel (MANIFEST.in names the rest it ships).
PROJECT_FILES = ("pyproject.toml", "README.md", "MANIFEST.in", "_tritone_triton_hook.py")
PROJECT_FOLDERS = ("tritone", "build_backend")
HOOK_FILES = ("_tritone_triton_hook.py", "_tritone_triton_hook.pth")

CHECK = textwrap.dedent("""
    import triton, tritone
    assert triton.jit is tritone.jit and triton is tritone
""") + REPORT


def copy_project(target: Path) -> Path:
    """The project's sources in `target` (a build there leaves the checkout clean)."""
    target.mkdir()
    for name in PROJECT_FILES:
        shutil.copy2(SOURCE_ROOT / name, target / name)
    for name in PROJECT_FOLDERS:
        shutil.copytree(SOURCE_ROOT / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def assert_tritone_answers(environment, tmp_path, package_folder: Path) -> None:
    found = environment.json(CHECK)
    assert found["is_tritone"] and Path(found["file"]).resolve() == (package_folder / "__init__.py").resolve()
    assert found["version"] == found["metadata"] == tritone.__version__
    assert Path(found["spec_origin"]).resolve() == Path(found["file"]).resolve()
    script = tmp_path / "spawn_probe.py"
    script.write_text(SPAWN, encoding="utf-8")
    child = environment.json("", str(script))
    assert child["is_tritone"] and child["metadata"] == tritone.__version__


@pytest.mark.slow
def test_sdist_and_editable_installs_answer_import_triton_without_upstream(tmp_path):
    environment = create_venv(tmp_path / "venv", system_site_packages=False, with_pip=True)
    pip = ("-m", "pip", "--disable-pip-version-check", "--no-input")
    # The build requirements too: the builds below run without isolation, which saves a
    # fresh build environment per install.
    fetched = environment.run("", *pip, "install", "numpy", "setuptools>=64", "wheel", check=False, timeout=300)
    if fetched.returncode != 0:
        lines = (fetched.stderr or fetched.stdout).strip().splitlines()
        pytest.skip(f"cannot install numpy from PyPI into a fresh venv: {lines[-1] if lines else 'no output'}")
    assert environment.run("import importlib.util; print(importlib.util.find_spec('triton'))").stdout.strip() == \
        "None"
    source = copy_project(tmp_path / "src")
    sdist = environment.run("import sys; sys.path.insert(0, 'build_backend'); import tritone_backend; "
                            "print(tritone_backend.build_sdist('dist'))", cwd=source).stdout.strip().splitlines()[-1]

    environment.run("", *pip, "install", "--no-deps", "--no-build-isolation", str(source / "dist" / sdist), timeout=300)
    for name in HOOK_FILES:
        assert (environment.site_packages / name).is_file(), name
    assert_tritone_answers(environment, tmp_path, environment.site_packages / "tritone")

    environment.run("", *pip, "uninstall", "--yes", "tritone")
    assert not any((environment.site_packages / name).exists() for name in HOOK_FILES)

    environment.run("", *pip, "install", "--no-deps", "--no-build-isolation", "--editable", str(source), timeout=300)
    assert (environment.site_packages / "_tritone_triton_hook.pth").is_file()
    assert_tritone_answers(environment, tmp_path, source / "tritone")
