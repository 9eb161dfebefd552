"""Which `triton` answers `import triton` (tritone or upstream, and why), whether
tritone's startup hook is installed in this environment, and
`python -m tritone use tritone|triton|auto`, which records the choice.

The decision itself lives in the startup hook (`_tritone_triton_hook`, shipped
in the wheel's root), so the hook, `doctor` and `use` cannot disagree.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import TextIO

from .. import __version__ as TRITON_API
from .report import Check, Status

HOOK_MODULE = "_tritone_triton_hook"
SECTION = "triton"
REINSTALL = ("reinstall tritone so that its startup hook lands in site-packages: pip install --force-reinstall "
             "--no-deps tritone (in a checkout: pip install -e .)")


def hook_module() -> ModuleType | None:
    """The startup hook module as this Python finds it, or None when it is not importable."""
    try:
        return importlib.import_module(HOOK_MODULE)
    except ImportError:
        return None


@dataclass(frozen=True)
class ProviderFacts:
    """The startup hook and its decision, as this process sees them.

    `hook_location`: the hook module's folder (None: not importable);
    `pth_installed`: its .pth lies beside it (so every start runs it);
    `hook_active`: its finder is in sys.meta_path in this process;
    `site_disabled`: Python was started without `site` (-S), so no .pth runs;
    `answer`/`reason`/`detail`: the decision ("tritone"/"triton", "env"/
    "recorded"/"auto", a line for people), None where the hook is not active;
    `decision_error`: the message when the decision cannot be made (a bad
    TRITONE_AS_TRITON); `origin`/`version`: where `import triton` goes and the
    version it reports (None: nowhere)."""

    hook_location: str | None
    pth_installed: bool
    hook_active: bool
    site_disabled: bool
    answer: str | None
    reason: str | None
    detail: str | None
    decision_error: str | None
    origin: str | None
    version: str | None


def _upstream_version() -> str | None:
    import importlib.metadata

    for name in ("triton", "triton-windows"):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def provider_facts(hook: ModuleType | None = None) -> ProviderFacts:
    """Ask the startup hook (default: the one importable here) who answers
    `import triton` in this process, without importing triton."""
    hook = hook if hook is not None else hook_module()
    site_disabled = bool(sys.flags.no_site)
    finder = hook.installed_finder() if hook is not None else None
    if finder is None:
        origin = _find_origin()
        version = _upstream_version() if origin is not None else None
        location = os.path.dirname(os.path.abspath(hook.__file__)) if hook is not None else None
        return ProviderFacts(location, hook is not None and hook.pth_installed(), False, site_disabled,
                             None, None, None, None, origin, version)
    location = os.path.dirname(os.path.abspath(hook.__file__))
    try:
        decision = finder.decision()
    except ValueError as error:
        return ProviderFacts(location, hook.pth_installed(), True, site_disabled, None, None, None, str(error),
                             None, None)
    if decision.tritone_answers:
        origin = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "__init__.py")
        version = TRITON_API
    else:
        origin = hook.upstream_origin()
        version = _upstream_version() if origin is not None else None
    return ProviderFacts(location, hook.pth_installed(), True, site_disabled, decision.answer, decision.reason,
                         decision.detail, None, origin, version)


def _find_origin() -> str | None:
    loaded = sys.modules.get("triton")
    if loaded is not None:
        return getattr(loaded, "__file__", None)
    import importlib.util

    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None else None


def provider_checks(facts: ProviderFacts) -> list[Check]:
    """Which triton answers and why, then whether the startup hook is installed."""
    return [_which_answers(facts), _hook_installed(facts)]


def _which_answers(facts: ProviderFacts) -> Check:
    name = "which triton answers"
    if facts.decision_error is not None:
        return Check(SECTION, name, Status.FAIL, "cannot decide: TRITONE_AS_TRITON is not understood",
                     (facts.decision_error,), "set TRITONE_AS_TRITON to 1 (tritone) or 0 (upstream), or unset it")
    data = (("answer", facts.answer), ("reason", facts.reason), ("origin", facts.origin), ("version", facts.version))
    if facts.answer is None:
        where = (f"upstream triton {facts.version or '(version unknown)'} at {os.path.dirname(facts.origin)}"
                 if facts.origin else "nothing (`import triton` fails)")
        return Check(SECTION, name, Status.PASS,
                     f"{where}, because tritone's startup hook is not active in this process", data=data)
    if facts.answer == "tritone":
        folder = os.path.dirname(facts.origin or "")
        return Check(SECTION, name, Status.PASS,
                     f"tritone (Triton {facts.version} API) at {folder}, because {facts.detail}", data=data)
    if facts.origin is None:
        return Check(SECTION, name, Status.WARN,
                     f"nothing: upstream Triton is chosen ({facts.detail}) but none is installed, so `import triton` "
                     "fails", data=data,
                     fix="install upstream triton, or let tritone answer: python -m tritone use tritone")
    return Check(SECTION, name, Status.PASS,
                 f"upstream triton {facts.version or '(version unknown)'} at {os.path.dirname(facts.origin)}, "
                 f"because {facts.detail}", data=data)


def _hook_installed(facts: ProviderFacts) -> Check:
    name = "startup hook"
    if facts.hook_active and facts.pth_installed:
        return Check(SECTION, name, Status.PASS,
                     f"installed in {facts.hook_location}; it runs in every Python process of this environment")
    if facts.hook_active:
        return Check(SECTION, name, Status.WARN,
                     "active in this process only: no .pth beside it, so other processes (spawn children, "
                     "compile workers) will not have it", (f"hook module: {facts.hook_location}",), REINSTALL)
    if facts.pth_installed and facts.site_disabled:
        return Check(SECTION, name, Status.WARN,
                     "installed but did not run: this Python started without `site` (-S)",
                     (f"hook: {facts.hook_location}",),
                     "start Python without -S; for an embedded Python keep `import site` in its python3XX._pth")
    if facts.pth_installed:
        return Check(SECTION, name, Status.WARN,
                     "installed but did not run at start (an embedded Python whose python3XX._pth lacks "
                     "`import site`?)", (f"hook: {facts.hook_location}",),
                     "add the line `import site` to the python3XX._pth beside python.exe, or reinstall tritone")
    return Check(SECTION, name, Status.WARN,
                 "not installed in this environment: tritone cannot answer `import triton` "
                 "(`import tritone as triton` still works)", fix=REINSTALL)


def use_command(choice: str, out: TextIO, hook: ModuleType | None = None) -> int:
    """`python -m tritone use tritone|triton|auto`: record who answers `import
    triton` in this Python environment and say what that means here; returns
    the exit status (1 when the hook is not installed or the choice cannot be
    written)."""
    hook = hook if hook is not None else hook_module()
    if hook is None or not hook.pth_installed():
        out.write(f"tritone's startup hook is not installed in this Python environment ({sys.prefix}), so no "
                  f"choice can take effect.\nfix: {REINSTALL}\n")
        return 1
    try:
        path = hook.record(choice)
    except (OSError, ValueError) as error:
        out.write(f"{error}\n")
        return 1
    upstream = hook.upstream_origin()
    if choice == "auto":
        now = "upstream triton" if upstream is not None else "tritone"
        out.write(f"removed the recorded choice ({path}): tritone answers `import triton` where no other triton is "
                  f"installed; here that is {now}.\n")
    elif choice == "tritone":
        out.write(f"recorded in {path}: tritone answers `import triton` in this environment.\n")
    else:
        out.write(f"recorded in {path}: upstream Triton answers `import triton` in this environment.\n")
        if upstream is None:
            out.write("note: no upstream triton is installed here, so `import triton` fails until one is "
                      "(pip install triton, or triton-windows on Windows).\n")
    forced = os.environ.get(hook.ENV_VAR, "").strip()
    if forced:
        out.write(f"note: {hook.ENV_VAR}={forced} is set in this shell and wins over the recorded choice.\n")
    out.write("Processes started from now on follow it; running ones keep their decision.\n")
    return 0
