"""The on-disk kernel cache as `doctor` sees it (location, whether it can be
written and the fallback taken, free space, path lengths against Windows'
260-character limit, entries by size and age) and `python -m tritone cache
info|clear|prune`.

What the cache holds, and removing entries, is `KernelCache.entries` and
`KernelCache.remove` (runtime/cache.py): only tritone's own entry folders are
listed or deleted, so a TRITON_CACHE_DIR shared with other tools keeps
everything else.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from .. import knobs
from ..platform import LONG_PATHS_KEY, LONG_PATHS_VALUE, Platform, host
from ..runtime import cache
from .report import Check, Status, plural, quoted

SECTION = "cache"
# Older than this, a folder without its commit mark (or a temporary file) is
# an interrupted write rather than one in progress.
STALE_SECONDS = 3600.0
LOW_FREE_BYTES = 200 * 2**20
# A kernel name of this length is common (TorchInductor's fused names are longer still).
TYPICAL_NAME = 60
WINDOWS_PATH_LIMIT = cache.LONG_PATH_LIMIT
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class CacheFacts:
    """Where the cache was asked to be (`wanted`, from TRITON_CACHE_DIR when
    `configured`) and where it is (`used`, None when nowhere is writable, with
    `problem` saying why `wanted` could not be used), and what is in it
    (`contents`, empty without a cache)."""

    wanted: str
    configured: bool
    used: str | None
    problem: str | None
    free_bytes: int | None
    longest_path: str | None
    contents: cache.CacheContents
    long_paths_enabled: bool | None
    now: float


def _longest_path(root: str) -> str | None:
    longest = None
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if longest is None or len(path) > len(longest):
                longest = path
    return longest


def _free_bytes(folder: str) -> int | None:
    while folder and not os.path.isdir(folder):
        parent = os.path.dirname(folder)
        folder = parent if parent != folder else ""
    try:
        return shutil.disk_usage(folder).free if folder else None
    except OSError:
        return None


def cache_facts(platform: Platform | None = None) -> CacheFacts:
    """The cache this process uses (TRITON_CACHE_DIR or the user cache folder,
    with the fallback `runtime/cache.py` takes when that cannot be written)."""
    platform = platform or host()
    configured = knobs.cache.dir
    wanted = cache.default_root(platform, configured)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        used_cache = cache.cache_for_root(configured)
    used = used_cache.root if used_cache is not None else None
    contents = used_cache.entries() if used_cache is not None else cache.CacheContents()
    problem = None
    if used != wanted:
        said = [str(warning.message) for warning in caught]
        problem = said[0] if said else f"{wanted} cannot be written"
    root = used or wanted
    return CacheFacts(
        wanted=wanted, configured=configured is not None, used=used, problem=problem,
        free_bytes=_free_bytes(root), longest_path=_longest_path(root) if used else None,
        contents=contents, long_paths_enabled=platform.long_paths_enabled(),
        now=time.time())


def size_text(size: float) -> str:
    """Bytes for people: 1536 -> "1.5 KiB"."""
    if size < 1024:
        return f"{size:.0f} B"
    for unit in ("KiB", "MiB", "GiB"):
        size /= 1024
        if size < 1024 or unit == "GiB":
            break
    return f"{size:.1f} {unit}"


def age_text(seconds: float) -> str:
    """A duration for people, in its largest whole unit: "3 days", "5 hours"."""
    for unit, length in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= length:
            return plural(int(seconds // length), unit)
    return plural(max(int(seconds), 0), "second")


def parse_size(text: str) -> int:
    """"500M", "2G", "1.5GiB", "4096" -> bytes (powers of 1024)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (examples: 500M, 2G, 4096)")
    scale = 1024 ** " kmgt".index((match.group(2) or " ").lower())
    return int(float(match.group(1)) * scale)


def cache_checks(platform: Platform, facts: CacheFacts) -> list[Check]:
    """Location and writability, free space, path lengths, entries."""
    checks = [_location(facts)]
    if facts.used is None:
        return checks
    if facts.free_bytes is not None:
        free = size_text(facts.free_bytes)
        if facts.free_bytes < LOW_FREE_BYTES:
            checks.append(Check(SECTION, "free space", Status.WARN, f"{free} free on the cache's drive",
                                fix="free some space, or set TRITON_CACHE_DIR to a folder on another drive"))
        else:
            checks.append(Check(SECTION, "free space", Status.PASS, f"{free} free on the cache's drive"))
    checks.append(_path_length(platform, facts))
    checks.append(_entries(facts))
    return checks


def _location(facts: CacheFacts) -> Check:
    origin = "TRITON_CACHE_DIR" if facts.configured else "default"
    if facts.used is None:
        return Check(SECTION, "location", Status.FAIL,
                     "no writable cache folder: kernels are compiled again in every process",
                     (facts.problem or "",),
                     "set TRITON_CACHE_DIR to a folder you can write (or fix the permissions of "
                     f"{facts.wanted})")
    if facts.used != facts.wanted:
        return Check(SECTION, "location", Status.WARN,
                     f"{facts.wanted} ({origin}) cannot be written; using {facts.used} instead",
                     (facts.problem or "",),
                     f"set TRITON_CACHE_DIR to a folder you can write, or fix the permissions of {facts.wanted}")
    return Check(SECTION, "location", Status.PASS, f"{facts.used} ({origin}), writable")


def _path_length(platform: Platform, facts: CacheFacts) -> Check:
    root = facts.used or facts.wanted
    # <root>\<26-character entry>\<kernel name>.cubin
    typical = len(root) + 1 + 26 + 1 + TYPICAL_NAME + len(".cubin")
    longest = len(facts.longest_path) if facts.longest_path else 0
    summary = f"longest path {longest} characters" if longest else "no files yet"
    summary += f"; a {TYPICAL_NAME}-character kernel name gives {typical}"
    if not platform.is_windows:
        return Check(SECTION, "path length", Status.PASS, summary)
    registry = {True: "1 (long paths allowed)", False: "0 (260-character limit)", None: "unknown"}
    summary += f"; LongPathsEnabled = {registry[facts.long_paths_enabled]}"
    details = (f"longest: {facts.longest_path}",) if facts.longest_path else ()
    if facts.long_paths_enabled is not True and max(longest, typical) > WINDOWS_PATH_LIMIT:
        return Check(SECTION, "path length", Status.WARN,
                     summary + ": tools that open cache files without the \\\\?\\ prefix (TorchInductor) "
                     "fail with [WinError 206] or FileNotFoundError", details,
                     "set TRITON_CACHE_DIR to a short folder (C:\\tritone-cache), or, as administrator: reg add "
                     f"HKLM\\{LONG_PATHS_KEY} /v {LONG_PATHS_VALUE} /t REG_DWORD /d 1 /f")
    return Check(SECTION, "path length", Status.PASS, summary, details)


def _entries(facts: CacheFacts) -> Check:
    committed = facts.contents.committed
    if committed:
        total = size_text(sum(entry.size for entry in committed))
        summary = (f"{plural(len(committed), 'entry', 'entries')}, {total}; oldest written "
                   f"{age_text(facts.now - committed[0].modified)} ago, newest "
                   f"{age_text(facts.now - committed[-1].modified)} ago")
    else:
        summary = "empty"
    stale = _stale(facts)
    if not stale:
        return Check(SECTION, "entries", Status.PASS, summary)
    return Check(SECTION, "entries", Status.PASS, summary,
                 (f"{plural(len(stale), 'folder')} ({size_text(sum(folder.size for folder in stale))}) left "
                  "incomplete by interrupted writes or damage (recompiled when needed): "
                  "`python -m tritone cache prune` removes them",))


def _stale(facts: CacheFacts) -> list[cache.IncompleteFolder]:
    """The incomplete folders untouched for STALE_SECONDS: no write is still filling them."""
    return [folder for folder in facts.contents.incomplete if facts.now - folder.modified > STALE_SECONDS]


# --------------------------------------------------------------------------- python -m tritone cache


def cache_command(action: str, out: TextIO, *, older_than_days: float = 30.0, max_size: str | None = None,
                  platform: Platform | None = None) -> int:
    """`info`: where the cache is and what it holds. `clear`: remove every entry
    and incomplete folder. `prune`: remove entries written more than
    `older_than_days` ago, folders left incomplete, and then the oldest entries
    until the rest fit in `max_size` ("2G"). Returns the exit status (1 when
    something could not be removed or there is no cache, 2 for a `max_size`
    that is not a size)."""
    try:
        max_bytes = parse_size(max_size) if max_size else None
    except ValueError as error:
        out.write(f"--max-size: {error}\n")
        return 2
    platform = platform or host()
    facts = cache_facts(platform)
    if action == "info":
        for check in cache_checks(platform, facts):
            out.write(f"{check.name}: {check.summary}\n")
            for detail in check.details:
                out.write(f"  {detail}\n")
            if check.fix:
                out.write(f"  fix: {check.fix}\n")
        return 0 if facts.used is not None else 1
    if facts.used is None:
        out.write(f"no cache: {facts.problem}\n")
        return 1
    if action == "clear":
        doomed = [entry.folder for entry in facts.contents.committed]
        doomed += [folder.folder for folder in facts.contents.incomplete]
    elif action == "prune":
        doomed = _prune_plan(facts, older_than_days, max_bytes)
    else:
        raise ValueError(f"unknown cache action {action!r} (info, clear, prune)")
    store = cache.KernelCache(facts.used, platform)
    removed: set[str] = set()
    for folder in dict.fromkeys(doomed):
        try:
            store.remove(folder)
        except (OSError, ValueError) as error:
            out.write(f"  could not remove {folder}: {error}\n")
        else:
            removed.add(folder)
    entries = [entry for entry in facts.contents.committed if entry.folder in removed]
    folders = [folder for folder in facts.contents.incomplete if folder.folder in removed]
    freed = sum(entry.size for entry in entries) + sum(folder.size for folder in folders)
    what = plural(len(entries), "entry", "entries")
    if folders:
        what += f" and {plural(len(folders), 'incomplete folder')}"
    left = len(facts.contents.committed) - len(entries)
    out.write(f"{action}: removed {what} ({size_text(freed)}) from {quoted(facts.used)}; {left} left\n")
    return 1 if len(removed) < len(set(doomed)) else 0


def _prune_plan(facts: CacheFacts, older_than_days: float, max_bytes: int | None) -> list[str]:
    """The folders `prune` removes: incomplete ones no write is filling, those
    of entries older than the limit, then those of the oldest entries until the
    rest fit in `max_bytes`."""
    limit = older_than_days * 86400
    doomed = [folder.folder for folder in _stale(facts)]
    doomed += [entry.folder for entry in facts.contents.committed if facts.now - entry.modified > limit]
    if max_bytes is not None:
        chosen = set(doomed)
        kept: Sequence[cache.StoredEntry] = [entry for entry in facts.contents.committed if entry.folder not in chosen]
        total = sum(entry.size for entry in kept)
        total += sum(folder.size for folder in facts.contents.incomplete if folder.folder not in chosen)
        for entry in kept:  # oldest first
            if total <= max_bytes:
                break
            doomed.append(entry.folder)
            total -= entry.size
    return doomed
