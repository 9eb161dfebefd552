"""The build backend adds the startup hook to a wheel's root and keeps RECORD true."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import zipfile

from build_backend.tritone_backend import HOOK_MODULE, add_to_wheel, hook_files
from tests.provider._environments import SOURCE_ROOT


def make_wheel(path, files):
    record = "demo-1.0.dist-info/RECORD"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr(record, "".join(f"{name},sha256=stale,1\n" for name in files) + f"{record},,\n")
    return path


def records(path):
    with zipfile.ZipFile(path) as wheel:
        record = next(name for name in wheel.namelist() if name.endswith(".dist-info/RECORD"))
        rows = list(csv.reader(io.StringIO(wheel.read(record).decode("utf-8"))))
        contents = {name: wheel.read(name) for name in wheel.namelist()}
    return record, rows, contents


def test_hook_files_are_the_module_and_a_pth_that_runs_it():
    files = hook_files()
    assert files[f"{HOOK_MODULE}.py"] == (SOURCE_ROOT / f"{HOOK_MODULE}.py").read_bytes()
    pth = files[f"{HOOK_MODULE}.pth"].decode()
    # site runs a .pth line only when it starts with "import"; one line only
    assert pth.startswith("import ") and pth.count("\n") == 1 and f"{HOOK_MODULE}.install()" in pth


def test_added_files_are_recorded_with_their_hash_and_size(tmp_path):
    wheel = make_wheel(tmp_path / "demo-1.0-py3-none-any.whl",
                       {"demo/__init__.py": b"x = 1\n", "hook.py": b"old copy\n"})
    add_to_wheel(wheel, {"hook.py": b"print('new')\n", "hook.pth": b"import hook\n"})
    record, rows, contents = records(wheel)
    assert contents["hook.py"] == b"print('new')\n" and contents["hook.pth"] == b"import hook\n"
    assert sorted(row[0] for row in rows) == sorted(contents)
    for name, digest, size in rows:
        if name == record:
            assert (digest, size) == ("", "")
            continue
        expected = base64.urlsafe_b64encode(hashlib.sha256(contents[name]).digest()).rstrip(b"=").decode()
        assert digest == f"sha256={expected}" and int(size) == len(contents[name]), name
