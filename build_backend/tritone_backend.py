"""tritone's PEP 517 build backend: setuptools', plus the startup hook in the wheel's root.

setuptools places packages and modules, but a `.pth` file must lie directly in
site-packages, and in an editable (PEP 660) wheel nothing of the project is
copied at all. So after setuptools builds a wheel (`pip install .`,
`pip wheel .`) or an editable wheel (`pip install -e .`), this backend adds
`_tritone_triton_hook.py` and `_tritone_triton_hook.pth` to the wheel's root and
rewrites its RECORD. An editable install thus holds a copy of the hook: after
editing `_tritone_triton_hook.py`, install again. Every other hook (sdist,
metadata, requirements) is setuptools' own.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

HOOK_MODULE = "_tritone_triton_hook"
PROJECT_ROOT = Path(__file__).resolve().parent.parent

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]


def hook_files() -> dict[str, bytes]:
    """The files the wheel root receives: the hook module and the .pth line that runs it at start."""
    source = (PROJECT_ROOT / f"{HOOK_MODULE}.py").read_bytes()
    pth = f"import {HOOK_MODULE}; {HOOK_MODULE}.install()\n".encode()
    return {f"{HOOK_MODULE}.py": source, f"{HOOK_MODULE}.pth": pth}


def _record_line(name: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return [name, f"sha256={digest}", str(len(data))]


def add_to_wheel(wheel: Path, files: dict[str, bytes]) -> None:
    """Add `files` (name in the wheel's root -> content) to `wheel`, replacing
    entries of the same name, and rewrite its RECORD to list them with their
    sha256 and size."""
    with zipfile.ZipFile(wheel) as source:
        entries = [(info, source.read(info)) for info in source.infolist()]
    records = [info.filename for info, _ in entries if info.filename.endswith(".dist-info/RECORD")]
    if len(records) != 1:
        raise RuntimeError(f"{wheel.name}: expected one .dist-info/RECORD, found {records}")
    record_name = records[0]
    partial = wheel.with_name(wheel.name + ".partial")
    rows = []
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as target:
        for info, data in entries:
            if info.filename == record_name or info.filename in files:
                continue
            target.writestr(info, data)
            rows.append(_record_line(info.filename, data))
        for name, data in files.items():
            target.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data,
                            compress_type=zipfile.ZIP_DEFLATED)
            rows.append(_record_line(name, data))
        rows.append([record_name, "", ""])
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        target.writestr(record_name, text.getvalue().encode("utf-8"), compress_type=zipfile.ZIP_DEFLATED)
    os.replace(partial, wheel)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """setuptools' wheel with the startup hook added to its root."""
    name = _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    add_to_wheel(Path(wheel_directory, name), hook_files())
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """setuptools' editable wheel with (a copy of) the startup hook added to its root."""
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    add_to_wheel(Path(wheel_directory, name), hook_files())
    return name
