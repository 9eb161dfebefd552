"""The on-disk kernel cache.

Layout, Triton's (TorchInductor's static launcher reads the cubin from it):

    <root>/<_base32(key)>/<kernel name>.cubin   the binary (when NVRTC made one)
                         /<stem>.ptx .cu .ttir   the other stages, kept for people to read
                         /<stem>.json            commit mark: metadata, size and sha256 of each file

`<root>` is `TRITON_CACHE_DIR` or the platform's user cache folder
(`%LOCALAPPDATA%\\tritone\\cache`, `$XDG_CACHE_HOME/tritone`, `~/.cache/tritone`),
or, when that cannot be written, a folder under the temporary directory (with a
warning). `key` is a 32-hex-digit (128-bit) digest, so the folder name is 26
characters and the default path of a 60-character kernel name's cubin stays
under 150 characters.

File names: the cubin is always `<kernel name>.cubin`, because Inductor opens
exactly that. The other files use a stem: the kernel name itself when it has at
most 64 characters, else its first 55 characters, `_` and 8 hex digits of its
hash, so that the files tritone reads stay short. A name Windows reserves
(`con`, `aux`, `com1`...) gets the hash suffix on every file, the cubin included.

Writes are atomic file by file: each file is written under a temporary name in
the entry folder and moved into place with `os.replace`, retried with backoff
while another process holds the target (Windows sharing violations). The
`.json` file goes last, so an entry without it is invisible. Reads verify every
file's size and sha256 against it; anything missing, short or different is a
miss, and the caller recompiles and writes the entry again.

`KernelCache.entries` lists what the root holds (committed entries, and the
entry folders an interrupted write or damage left without one);
`KernelCache.remove` deletes one entry folder. Only folders named as entry
folders (26 base32 characters, files only inside) are listed or removed, so a
`TRITON_CACHE_DIR` shared with other tools (upstream Triton's folders have 52
characters) keeps everything else.
"""

from __future__ import annotations

import base64
import functools
import getpass
import hashlib
import json
import ntpath
import os
import re
import stat
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import __tritone_version__, __version__, knobs
from ..platform import Platform, host, user_cache_dir

FORMAT_VERSION = 1
STEM_LIMIT = 64
# Windows paths longer than this get the `\\?\` prefix (MAX_PATH is 260 with the NUL).
LONG_PATH_LIMIT = 240
_WINDOWS_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
                               *(f"lpt{i}" for i in range(1, 10))})
# ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION: another
# process has the file open, or is deleting it.
_SHARING_ERRORS = frozenset({5, 32, 33})
_RETRY_DELAYS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4)
# What `_base32` makes of a 128-bit key.
_ENTRY_FOLDER = re.compile(r"^[A-Z2-7]{26}$")

T = TypeVar("T")


def _base32(key: str) -> str:
    """A hex digest as unpadded base32: the entry folder name (Triton's encoding,
    case-insensitive-file-system safe). TorchInductor finds cubins with it."""
    return base64.b32encode(bytes.fromhex(key)).decode("ascii").rstrip("=")


# There is deliberately no `_base64`: Inductor prefers it when it exists, and
# base64 names differ only by letter case, which Windows file systems ignore.


@functools.lru_cache(maxsize=None)
def triton_key() -> str:
    """A digest of tritone itself (version and every source file): part of every
    cache key, so a changed compiler never reuses old binaries. TorchInductor
    folds it into its own cache keys."""
    # os.walk and strings rather than pathlib: this runs in every process's first compile.
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files: list[tuple[list[str], str]] = []
    for folder, _, names in os.walk(package):
        relative = os.path.relpath(folder, package).replace(os.sep, "/")
        for name in names:
            if name.endswith(".py"):
                parts = [name] if relative == "." else [*relative.split("/"), name]
                files.append((parts, os.path.join(folder, name)))
    digest = hashlib.sha256()
    for parts, file in sorted(files):
        digest.update("/".join(parts).encode())
        digest.update(b"\0")
        with open(file, "rb") as source:
            digest.update(hashlib.sha256(source.read()).digest())
    return f"{__version__}-tritone-{__tritone_version__}-{digest.hexdigest()}"


def long_path(platform: Platform, path: str) -> str:
    """`path` as Windows file functions accept it when it is long: with the `\\\\?\\`
    prefix (`\\\\?\\UNC\\` for network shares) beyond 240 characters; unchanged
    elsewhere and on other systems."""
    if not platform.is_windows or len(path) <= LONG_PATH_LIMIT or path.startswith("\\\\?\\"):
        return path
    path = ntpath.normpath(path)
    if path.startswith("\\\\"):
        return "\\\\?\\UNC\\" + path[2:]
    return "\\\\?\\" + path


@dataclass(frozen=True)
class EntryNames:
    """The file names of one kernel's entry."""

    stem: str
    cubin: str

    def file(self, kind: str) -> str:
        """The file holding stage `kind` ("cubin", "ptx", "cu", "ttir", "json")."""
        return self.cubin if kind == "cubin" else f"{self.stem}.{kind}"


def entry_names(name: str, platform: Platform) -> EntryNames:
    """File names for kernel `name` (see the module docstring for the rules)."""
    suffix = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    if platform.is_windows and name.split(".")[0].lower() in _WINDOWS_RESERVED:
        stem = f"{name}_{suffix}"
        return EntryNames(stem, f"{stem}.cubin")
    stem = name if len(name) <= STEM_LIMIT else f"{name[:STEM_LIMIT - 9]}_{suffix}"
    return EntryNames(stem, f"{name}.cubin")


@dataclass(frozen=True)
class CacheEntry:
    """A verified entry: `files` maps each stage ("cubin", "ptx", ...) to its
    bytes, `metadata` is what the writer stored, `folder` where it lives."""

    key: str
    name: str
    folder: str
    files: Mapping[str, bytes]
    metadata: Mapping[str, Any]


@dataclass(frozen=True)
class StoredEntry:
    """A committed entry as `KernelCache.entries` lists it: kernel `name` under
    `key` in `folder`; `size` is the bytes of its files, commit mark included;
    `modified` is when it was committed (the commit mark's mtime, seconds since
    the epoch)."""

    folder: str
    key: str
    name: str
    size: int
    modified: float


@dataclass(frozen=True)
class IncompleteFolder:
    """An entry folder holding no usable entry: `reason` says why (a write
    interrupted, or still in progress, before its commit mark; a damaged mark; a
    file missing or of another size). `size` is the bytes of all its files,
    `modified` the newest file's mtime (the folder's own when it is empty)."""

    folder: str
    size: int
    modified: float
    reason: str


@dataclass(frozen=True)
class CacheContents:
    """What `KernelCache.entries` found, each part oldest first."""

    committed: tuple[StoredEntry, ...] = ()
    incomplete: tuple[IncompleteFolder, ...] = ()


def retry_while_shared(action: Callable[[], T], sleep: Callable[[float], None] = time.sleep) -> T:
    """Run `action`, retrying with growing pauses (about a second in all) while it
    fails because another process holds the file (Windows' WinError 5/32/33);
    other errors, and the last failure, propagate."""
    for delay in _RETRY_DELAYS:
        try:
            return action()
        except PermissionError as error:
            if getattr(error, "winerror", None) not in _SHARING_ERRORS:
                raise
            sleep(delay)
    return action()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _parse_mark(data: bytes, platform: Platform) -> tuple[dict[str, Any], dict[str, dict[str, Any]]] | None:
    """The record a commit mark holds and its `files` (kind -> file, size,
    sha256), when it is this version's format, has the shape `put` writes and
    names the files this kernel's entry has; None for anything else (damaged,
    foreign, another format)."""
    try:
        record = json.loads(data.decode("utf-8"))
        if (not isinstance(record, dict) or record["format"] != FORMAT_VERSION or not isinstance(record["key"], str)
                or not isinstance(record["name"], str) or not isinstance(record["metadata"], dict)
                or not isinstance(record["files"], dict)):
            return None
        bytes.fromhex(record["key"])  # raises for a key that no entry folder name is made from
        names = entry_names(record["name"], platform)
        files = record["files"]
        for kind, described in files.items():
            if (described["file"] != names.file(kind) or not isinstance(described["size"], int)
                    or not isinstance(described["sha256"], str)):
                return None
        return record, files
    except (ValueError, KeyError, TypeError):
        # Not JSON (UnicodeDecodeError is a ValueError), or not the shape this version writes.
        return None


class KernelCache:
    """The cache under one root folder. `platform` decides path syntax and the
    Windows long-path prefix; files are read and written with the real `os`.
    Safe to use from several threads and processes at once."""

    def __init__(self, root: str, platform: Platform | None = None, *,
                 sleep: Callable[[float], None] = time.sleep):
        self.root = root
        self.platform = platform or host()
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"KernelCache({self.root!r})"

    def folder(self, key: str) -> str:
        """The entry folder of `key` (a hex digest)."""
        return self.platform.path.join(self.root, _base32(key))

    def path(self, key: str, name: str, kind: str) -> str:
        """The full path of stage `kind` of kernel `name` under `key`, as a person
        would write it (without the long-path prefix)."""
        return self.platform.path.join(self.folder(key), entry_names(name, self.platform).file(kind))

    def _os_path(self, path: str) -> str:
        return long_path(self.platform, path)

    def _read(self, path: str) -> bytes | None:
        def read() -> bytes:
            with open(self._os_path(path), "rb") as file:
                return file.read()

        try:
            return retry_while_shared(read, self._sleep)
        except OSError:
            return None

    def get(self, key: str, name: str) -> CacheEntry | None:
        """The entry of kernel `name` under `key` when it is complete and every file
        matches the size and sha256 its metadata records; None otherwise."""
        folder = self.folder(key)
        marker = self._read(self.platform.path.join(folder, entry_names(name, self.platform).file("json")))
        parsed = _parse_mark(marker, self.platform) if marker is not None else None
        if parsed is None:
            return None
        record, listed = parsed
        if record["key"] != key or record["name"] != name:
            return None
        files = {}
        for kind, described in listed.items():
            data = self._read(self.platform.path.join(folder, described["file"]))
            if data is None or len(data) != described["size"] or _sha256(data) != described["sha256"]:
                return None
            files[kind] = data
        return CacheEntry(key, name, folder, files, record["metadata"])

    def put(self, key: str, name: str, files: Mapping[str, bytes], metadata: Mapping[str, Any]) -> str | None:
        """Store stages `files` (kind -> bytes) and `metadata` (JSON values) as the entry
        of kernel `name` under `key`; returns the entry folder. An entry that is
        already complete is left as it is (another process wrote the same
        compilation). When the files cannot be written the cache is skipped with a
        warning and None returned: a cache failure never fails a compilation."""
        if self.get(key, name) is not None:
            return self.folder(key)
        names = entry_names(name, self.platform)
        folder = self.folder(key)
        record = {
            "format": FORMAT_VERSION, "key": key, "name": name,
            "files": {kind: {"file": names.file(kind), "size": len(data), "sha256": _sha256(data)}
                      for kind, data in files.items()},
            "metadata": dict(metadata),
        }
        marker = json.dumps(record, indent=1, sort_keys=True).encode("utf-8")
        try:
            for kind, data in files.items():
                self.write_file(self.platform.path.join(folder, names.file(kind)), data)
            self.write_file(self.platform.path.join(folder, names.file("json")), marker)
        except OSError as error:
            _warn_once(f"tritone could not write the kernel cache entry {folder} ({error}); "
                       "the kernel is compiled again in the next process. Set TRITON_CACHE_DIR to a writable "
                       "folder to keep compiled kernels.")
            return None
        return folder

    def write_file(self, path: str, data: bytes) -> None:
        """Write `data` to `path` (its folder created if missing) atomically: a
        temporary file beside it, then `os.replace`. When the target stays locked,
        an identical file already there counts as written. Raises OSError."""
        os.makedirs(self._os_path(self.platform.path.dirname(path)), exist_ok=True)
        temporary = f"{path}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            with open(self._os_path(temporary), "wb") as file:
                file.write(data)
            try:
                retry_while_shared(lambda: os.replace(self._os_path(temporary), self._os_path(path)), self._sleep)
            except PermissionError:
                if self._read(path) != data:
                    raise
        finally:
            try:
                os.remove(self._os_path(temporary))
            except OSError:
                pass  # moved into place already (the usual case)

    def entries(self) -> CacheContents:
        """Every entry folder under the root (see the module docstring), read
        without opening the stage files: an entry is committed when its commit
        mark is this version's, names this folder's key and lists files that
        exist with the recorded sizes (`get` checks their sha256 on use). A
        folder with no committed entry is listed as incomplete, with the reason."""
        committed: list[StoredEntry] = []
        incomplete: list[IncompleteFolder] = []
        for name in self._names(self.root):
            folder = self.platform.path.join(self.root, name)
            files = self._entry_files(folder) if _ENTRY_FOLDER.match(name) else None
            if files is None:
                continue
            found, problem = self._committed_in(folder, name, files)
            if found:
                committed += found
                continue
            modified = max((status.st_mtime for status in files.values()), default=None)
            if modified is None:
                modified = self._mtime(folder)
            incomplete.append(IncompleteFolder(folder, sum(status.st_size for status in files.values()),
                                               modified, problem))
        return CacheContents(tuple(sorted(committed, key=lambda entry: entry.modified)),
                             tuple(sorted(incomplete, key=lambda entry: entry.modified)))

    def remove(self, folder: str) -> None:
        """Delete entry folder `folder` (from `entries`) with its files, retrying
        while another process holds one (Windows sharing violations), as `put`
        does. Raises ValueError, deleting nothing, when `folder` is not an entry
        folder of this cache (directly under the root, named as `folder(key)`
        names them, holding only files). A folder already gone counts as
        removed; a file that stays locked raises OSError."""
        path = self.platform.path
        under_root = path.normcase(path.normpath(path.dirname(folder))) == path.normcase(path.normpath(self.root))
        if not under_root or not _ENTRY_FOLDER.match(path.basename(folder)):
            raise ValueError(f"{folder} is not an entry folder of the kernel cache in {self.root}")
        if not os.path.isdir(self._os_path(folder)):
            return
        files = self._entry_files(folder)
        if files is None:
            raise ValueError(f"{folder} holds more than files: not an entry folder of the kernel cache in {self.root}")
        for name in files:
            self._delete(os.remove, path.join(folder, name))
        self._delete(os.rmdir, folder)

    def _delete(self, delete: Callable[[str], None], path: str) -> None:
        """`delete(path)` retried while shared; a path already gone (another process
        pruned it) is not an error."""
        try:
            retry_while_shared(lambda: delete(self._os_path(path)), self._sleep)
        except FileNotFoundError:
            pass

    def _names(self, folder: str) -> list[str]:
        try:
            return sorted(os.listdir(self._os_path(folder)))
        except OSError:
            return []

    def _mtime(self, path: str) -> float:
        try:
            return os.stat(self._os_path(path)).st_mtime
        except OSError:
            return 0.0

    def _entry_files(self, folder: str) -> dict[str, os.stat_result] | None:
        """The files in `folder` with their status; None when it is not a folder
        (a link to one included) or holds anything but plain files."""
        files = {}
        try:
            if stat.S_ISLNK(os.lstat(self._os_path(folder)).st_mode):
                return None
            with os.scandir(self._os_path(folder)) as listing:
                for item in listing:
                    if not item.is_file(follow_symlinks=False):
                        return None
                    files[item.name] = item.stat(follow_symlinks=False)
        except OSError:
            # Not a folder, or it vanished while being read (another process pruned it).
            return None
        return files

    def _committed_in(self, folder: str, folder_name: str,
                      files: Mapping[str, os.stat_result]) -> tuple[list[StoredEntry], str]:
        """The committed entries among `files` of entry folder `folder`, and, when
        there are none, why."""
        marks = [name for name in files if name.endswith(".json")]
        if not marks:
            return [], "no commit mark: a write was interrupted or is in progress"
        found = []
        problems = []
        for mark in marks:
            data = self._read(self.platform.path.join(folder, mark))
            parsed = _parse_mark(data, self.platform) if data is not None else None
            if parsed is None:
                problems.append(f"{mark} is damaged or of another tritone version")
                continue
            record, listed = parsed
            if _base32(record["key"]) != folder_name or entry_names(record["name"], self.platform).file("json") != mark:
                problems.append(f"{mark} belongs to another key or kernel")
                continue
            wrong = [described["file"] for described in listed.values()
                     if described["file"] not in files or files[described["file"]].st_size != described["size"]]
            if wrong:
                problems.append(f"{', '.join(wrong)} listed in {mark} missing or of another size")
                continue
            size = files[mark].st_size + sum(described["size"] for described in listed.values())
            found.append(StoredEntry(folder, record["key"], record["name"], size, files[mark].st_mtime))
        return found, "; ".join(problems)


_warned: set[str] = set()
_warn_lock = threading.Lock()


def _warn_once(message: str) -> None:
    with _warn_lock:
        if message in _warned:
            return
        _warned.add(message)
    warnings.warn(message, stacklevel=3)


def default_root(platform: Platform, configured: str | None) -> str:
    """The root folder asked for: `configured` (TRITON_CACHE_DIR) or the platform's
    user cache folder."""
    return configured or user_cache_dir(platform)


def writable(folder: str, platform: Platform) -> str | None:
    """Why `folder` cannot hold the cache (created if missing), or None when a file
    can be created in it."""
    try:
        os.makedirs(long_path(platform, folder), exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".write-test-", dir=long_path(platform, folder))
        os.close(handle)
        os.remove(probe)
    except OSError as error:
        return str(error)
    return None


def _fallback_root() -> str:
    try:
        user = getpass.getuser()
    except Exception:
        # getuser raises whatever the password database lookup raises (KeyError, OSError, ImportError).
        user = "user"
    safe = "".join(char if char.isalnum() or char in "-_" else "_" for char in user)
    return os.path.join(tempfile.gettempdir(), f"tritone-cache-{safe}")


_caches: dict[str | None, KernelCache | None] = {}
_caches_lock = threading.Lock()


def cache_for_root(configured: str | None) -> KernelCache | None:
    """The cache under `configured` (or this machine's user cache folder when
    None), falling back with a warning to a folder under the temporary directory
    when that cannot be written; None (with a warning) when neither can. Checked
    once per root and process."""
    platform = host()
    with _caches_lock:
        if configured in _caches:
            return _caches[configured]
    wanted = default_root(platform, configured)
    problem = writable(wanted, platform)
    root: str | None = wanted
    if problem is not None:
        fallback = _fallback_root()
        fallback_problem = writable(fallback, platform)
        root = None if fallback_problem is not None else fallback
        where = "TRITON_CACHE_DIR" if configured else "the default cache folder"
        if root is None:
            _warn_once(f"tritone cannot write its kernel cache to {wanted} ({where}: {problem}) nor to "
                       f"{fallback} ({fallback_problem}); kernels are compiled again in every process. "
                       "Set TRITON_CACHE_DIR to a writable folder.")
        else:
            _warn_once(f"tritone cannot write its kernel cache to {wanted} ({where}: {problem}); "
                       f"using {fallback} instead. Set TRITON_CACHE_DIR to a writable folder to choose another.")
    cache = KernelCache(root, platform) if root is not None else None
    with _caches_lock:
        return _caches.setdefault(configured, cache)


def default_cache() -> KernelCache | None:
    """The cache `knobs.cache.dir` (TRITON_CACHE_DIR) names, else the user cache folder."""
    return cache_for_root(knobs.cache.dir)
