"""Python environments for the provider's subprocess tests, made with `venv`.

`hooked_environment` is an environment holding tritone's startup hook exactly
as a wheel installs it (the build backend's own files in its site-packages),
with the tritone under test on its path and, through the system site-packages,
whatever this Python has (upstream triton, where installed).
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import tritone
from build_backend.tritone_backend import hook_files

SOURCE_ROOT = Path(tritone.__file__).resolve().parent.parent
# The variables that would decide for the child instead of the test.
CONTROLLED = ("TRITONE_AS_TRITON", "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE")


class Environment:
    """A venv at `root`; `python` its interpreter and `site_packages` its purelib folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        scripts = root / ("Scripts" if os.name == "nt" else "bin")
        self.python = scripts / ("python.exe" if os.name == "nt" else "python")
        self.site_packages = Path(self.run("import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())

    def run(self, code: str, *args: str, env: dict[str, str] | None = None, check: bool = True,
            cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run `python -c code args...` (or `python args...` when `code` is empty) in this environment."""
        command = [str(self.python), *(["-c", code] if code else []), *args]
        environ = {name: value for name, value in os.environ.items() if name not in CONTROLLED}
        environ.update(env or {})
        done = subprocess.run(command, capture_output=True, text=True, env=environ, cwd=str(cwd or self.root),
                              timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"{command} exited with {done.returncode}\nstdout:\n{done.stdout}\n"
                                 f"stderr:\n{done.stderr}")
        return done

    def json(self, code: str, *args: str, **kwargs) -> dict:
        """Run `code` (see `run`), which prints one JSON value as its last line; returns it."""
        return json.loads(self.run(code, *args, **kwargs).stdout.strip().splitlines()[-1])


def create_venv(root: Path, *, system_site_packages: bool, with_pip: bool) -> Environment:
    """A new venv at `root`."""
    command = [sys.executable, "-m", "venv", str(root)]
    command += ["--system-site-packages"] * system_site_packages + ["--without-pip"] * (not with_pip)
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    return Environment(root)


def hooked_environment(root: Path) -> Environment:
    """A venv seeing this Python's packages, with the startup hook installed the
    way the wheel installs it and the tritone under test first on its path."""
    environment = create_venv(root, system_site_packages=True, with_pip=False)
    for name, data in hook_files().items():
        (environment.site_packages / name).write_bytes(data)
    # A .pth line naming a folder appends it to sys.path; it sorts after the
    # hook's .pth and ahead of the system site-packages (with its own tritone).
    (environment.site_packages / "tritone_under_test.pth").write_text(f"{SOURCE_ROOT}\n", encoding="utf-8")
    if sys.prefix != sys.base_prefix:
        # This Python is itself a venv: a venv made from it sees the base
        # interpreter's site-packages, not this one's, so name this one's too
        # (after the tritone under test; the .pth files run in name order).
        caller_sites = "".join(f"{folder}\n" for folder in site.getsitepackages())
        (environment.site_packages / "tritone_zz_caller_site.pth").write_text(caller_sites, encoding="utf-8")
    return environment


REPORT = """
import importlib.metadata, importlib.util, json, sys
import triton
spec = importlib.util.find_spec("triton")
print(json.dumps({"file": triton.__file__, "version": triton.__version__,
                  "metadata": importlib.metadata.version("triton"), "spec_origin": spec.origin,
                  "is_tritone": hasattr(triton, "__tritone_version__")}))
"""
"""Code that reports, as JSON, what `import triton` gave."""
