"""tritone's startup hook: makes `import triton` answer with tritone where tritone is chosen.

Installed into site-packages beside `_tritone_triton_hook.pth`, whose one line
(`import _tritone_triton_hook; _tritone_triton_hook.install()`) Python's `site`
runs at every start, so the choice holds in every process: `python -c`,
`multiprocessing` spawn children, pytest-xdist workers, TorchInductor's compile
workers. `install()` puts a finder first in `sys.meta_path`; until something
imports `triton` nothing else happens (this module imports only `sys` and `os`,
which `site` has already loaded), so Python starts as fast as without it.

Who answers `import triton`, decided on the first import and kept:

1. `TRITONE_AS_TRITON` in the environment: 1/true/yes/on -> tritone,
   0/false/no/off -> upstream Triton (whatever else provides `triton`);
2. else the choice recorded by `python -m tritone use tritone|triton` in a file
   beside this module (per Python environment);
3. else "auto": upstream when a real `triton` package is importable, tritone
   when none is.

When tritone answers, `triton` and `triton.X` are tritone's own module objects
(`sys.modules["triton.X"] is sys.modules["tritone.X"]`, with their own
`__name__` and `__spec__`), and `importlib.metadata` reports a `triton`
distribution at the Triton API version tritone presents.

tritone itself imports this module to read the same decision (`doctor`, `use`).
"""

import os
import sys

ENV_VAR = "TRITONE_AS_TRITON"
CHOICES = ("tritone", "triton", "auto")
# The Triton API tritone presents; tritone.__version__ holds the same value
# (a test keeps them equal). Kept here so that `importlib.metadata` can answer
# without importing tritone.
TRITON_API_VERSION = "3.6.0"
CHOICE_FILE = "_tritone_triton_choice.txt"
PTH_FILE = "_tritone_triton_hook.pth"

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_TARGET = "tritone"
_ALIAS = "triton"


class Decision:
    """Who answers `import triton` (`answer`: "tritone" or "triton"), by which
    rule (`reason`: "env", "recorded" or "auto") and the fact behind it
    (`detail`, one line for people)."""

    __slots__ = ("answer", "reason", "detail")

    def __init__(self, answer: str, reason: str, detail: str) -> None:
        self.answer = answer
        self.reason = reason
        self.detail = detail

    @property
    def tritone_answers(self) -> bool:
        return self.answer == _TARGET

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Decision) and (self.answer, self.reason, self.detail) == (
            other.answer, other.reason, other.detail)

    def __hash__(self) -> int:
        return hash((self.answer, self.reason, self.detail))

    def __repr__(self) -> str:
        return f"Decision({self.answer!r}, {self.reason!r}, {self.detail!r})"


def parse_env(value: "str | None") -> "str | None":
    """The choice `TRITONE_AS_TRITON=value` makes: "tritone", "triton", or None
    when unset or empty. Any other value raises ValueError naming the variable."""
    if value is None or not value.strip():
        return None
    word = value.strip().lower()
    if word in _TRUE:
        return _TARGET
    if word in _FALSE:
        return _ALIAS
    raise ValueError(f"{ENV_VAR}={value!r} is not understood: use one of {'/'.join(_TRUE)} (tritone answers "
                     f"`import triton`) or {'/'.join(_FALSE)} (upstream Triton answers), or unset it")


def decide(env_value: "str | None", recorded: "str | None", upstream: "str | None") -> Decision:
    """Who answers `import triton`, from the environment variable's value, the
    recorded choice (None or "auto" when there is none) and where a real
    `triton` package would be imported from (None: nowhere)."""
    from_env = parse_env(env_value)
    if from_env is not None:
        return Decision(from_env, "env", f"{ENV_VAR}={env_value}")
    if recorded in (_TARGET, _ALIAS):
        return Decision(recorded, "recorded", f"`python -m tritone use {recorded}` recorded in {choice_path()}")
    if upstream is not None:
        return Decision(_ALIAS, "auto", "another triton package is installed")
    return Decision(_TARGET, "auto", "no other triton package is installed")


def choice_path() -> str:
    """The file holding this environment's recorded choice (beside this module)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), CHOICE_FILE)


def read_recorded() -> "str | None":
    """The recorded choice ("tritone", "triton"), or None when none is recorded
    (a file that cannot be read or holds anything else counts as none)."""
    try:
        with open(choice_path(), encoding="utf-8") as file:
            word = file.read().strip()
    except OSError:
        return None
    return word if word in (_TARGET, _ALIAS) else None


def record(choice: str) -> str:
    """Record `choice` ("tritone", "triton", or "auto", which removes the
    record) for this Python environment; returns the file's path. Raises
    ValueError for an unknown choice, and OSError (of the same kind as the
    cause, saying what to do) when the file cannot be written."""
    if choice not in CHOICES:
        raise ValueError(f"unknown choice {choice!r}: use one of {', '.join(CHOICES)}")
    path = choice_path()
    try:
        if choice == "auto":
            if os.path.exists(path):
                os.remove(path)
            return path
        # Written beside and moved into place, so a process starting meanwhile reads all of it or none.
        partial = f"{path}.{os.getpid()}.tmp"
        try:
            with open(partial, "w", encoding="utf-8") as file:
                file.write(choice + "\n")
            os.replace(partial, path)
        finally:
            if os.path.exists(partial):
                os.remove(partial)
    except OSError as error:
        raise type(error)(
            f"cannot record the choice in {path}: {error.strerror or error}. Run the command with the rights to write "
            f"{os.path.dirname(path)} (the environment's site-packages), or set {ENV_VAR} in the environment "
            "instead") from error
    return path


def upstream_origin(finders: "list | None" = None, path: "list[str] | None" = None) -> "str | None":
    """Where a real `triton` package would be imported from without tritone's
    finder (its `__init__.py`, or the location a finder reports), or None. Asks
    `finders` (default: sys.meta_path) in order, skipping tritone's own; a
    namespace package (a bare `triton` folder) does not count."""
    for finder in sys.meta_path if finders is None else finders:
        if isinstance(finder, TritonFinder) or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(_ALIAS, path)
        if spec is None:
            continue
        if spec.origin in (None, "namespace"):
            continue
        return spec.origin
    return None


def installed_finder() -> "TritonFinder | None":
    """tritone's finder in sys.meta_path (put there by the .pth at start), or None."""
    for finder in sys.meta_path:
        if isinstance(finder, TritonFinder):
            return finder
    return None


def pth_installed() -> bool:
    """Whether the .pth that runs this hook at start lies beside this module."""
    return os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), PTH_FILE))


def install() -> "TritonFinder":
    """Put tritone's finder first in sys.meta_path (once); returns it."""
    finder = installed_finder()
    if finder is None:
        finder = TritonFinder()
        sys.meta_path.insert(0, finder)
    return finder


def uninstall() -> None:
    """Take tritone's finder out of sys.meta_path (modules already imported stay)."""
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, TritonFinder)]


class TritonFinder:
    """The meta-path finder that answers `triton` and `triton.*` with tritone's
    modules when tritone is chosen, and `importlib.metadata`'s question for the
    `triton` distribution likewise. `decision()` is made on first use and kept."""

    def __init__(self) -> None:
        self._decision: "Decision | None" = None

    def decision(self) -> Decision:
        """Who answers `import triton` in this process (decided once)."""
        if self._decision is None:
            self._decision = decide(os.environ.get(ENV_VAR), read_recorded(), upstream_origin())
        return self._decision

    def find_spec(self, fullname: str, path=None, target=None):
        # Every import of the process passes here: leave quickly unless it is ours.
        if fullname != _ALIAS and not fullname.startswith(_ALIAS + "."):
            return None
        if not self.decision().tritone_answers:
            return None
        import importlib.machinery
        import importlib.util

        real_name = _TARGET + fullname[len(_ALIAS):]
        try:
            real_spec = importlib.util.find_spec(real_name)
        except ModuleNotFoundError:
            real_spec = None
        if real_spec is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: tritone answers `import triton` here ({self.decision().detail}) "
                f"and has no {real_name}", name=fullname)
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(real_name), origin=real_spec.origin,
                                              is_package=real_spec.submodule_search_locations is not None)
        if real_spec.submodule_search_locations is not None:
            spec.submodule_search_locations = list(real_spec.submodule_search_locations)
        spec.has_location = real_spec.has_location
        return spec

    def find_distributions(self, context=None):
        """The `triton` distribution when tritone answers and `context` asks for
        it by name in this process's own sys.path; nothing otherwise (so tools
        that list every distribution of a folder, such as pip, never see it)."""
        name = getattr(context, "name", None)
        if name is None or name.lower() != _ALIAS:
            return iter(())
        if getattr(context, "path", sys.path) != sys.path or not self.decision().tritone_answers:
            return iter(())
        return iter((_distribution_class()(),))


class _AliasLoader:
    """Hands back tritone's module object for `triton.X`, leaving its identity intact."""

    def __init__(self, real_name: str) -> None:
        self.real_name = real_name
        self._real_spec = None

    def create_module(self, spec):
        import importlib

        module = importlib.import_module(self.real_name)
        self._real_spec = module.__spec__
        return module

    def get_code(self, fullname):
        """The code of tritone's module, which is what `python -m triton.X` runs."""
        import importlib.util

        return importlib.util.find_spec(self.real_name).loader.get_code(self.real_name)

    def exec_module(self, module) -> None:
        # importlib set module.__spec__ to the alias spec; tritone's module keeps
        # its own, so reload, pickle and inspect see the tritone name.
        module.__spec__ = self._real_spec
        _alias_loaded_modules()
        _present_annotation_classes()


def _alias_loaded_modules() -> None:
    """Enter every tritone submodule already imported under its `triton.` name too.

    Where a package binds a name that is also a submodule (tritone.runtime's
    `driver` object, like upstream's), a fresh import of the alias would end
    with importlib setting the submodule over that name on the parent. An alias
    already in sys.modules is returned as is, so the parent keeps its binding;
    such a submodule is always imported before its parent finishes, hence
    before this runs for the parent."""
    prefix = _TARGET + "."
    for name, module in list(sys.modules.items()):
        if module is not None and name.startswith(prefix):
            sys.modules.setdefault(_ALIAS + name[len(_TARGET):], module)


# Classes that torch writes into generated source by `<__module__>.<__name__>`: Inductor's
# copy of a user kernel keeps a global's annotation (`SCALE: tl.constexpr = ...`) that way,
# in a module that imports only `triton`. When tritone answers `import triton` they report
# their `triton.` path, which names the same object then (pickle resolves it alike).
_ANNOTATION_CLASSES = (("language.core", "constexpr"),)


def _present_annotation_classes() -> None:
    for module_name, class_name in _ANNOTATION_CLASSES:
        module = sys.modules.get(_TARGET + "." + module_name)
        if module is not None:
            getattr(module, class_name).__module__ = _ALIAS + "." + module_name


_DISTRIBUTION = None


def _distribution_class():
    """A Distribution subclass made on first use: importlib.metadata is loaded
    by then (it is asking), and at start it would cost every Python process."""
    global _DISTRIBUTION
    if _DISTRIBUTION is None:
        import importlib.metadata
        import pathlib

        here = pathlib.Path(__file__).resolve().parent
        metadata = ("Metadata-Version: 2.1\n"
                    f"Name: {_ALIAS}\n"
                    f"Version: {TRITON_API_VERSION}\n"
                    f"Summary: tritone answering `import triton` (Triton {TRITON_API_VERSION} API); "
                    "see `python -m tritone doctor`\n")

        class TritoneAsTriton(importlib.metadata.Distribution):
            """The `triton` distribution tritone presents while it answers `import triton`."""

            def read_text(self, filename):
                return metadata if filename in ("METADATA", "PKG-INFO") else None

            def locate_file(self, path):
                return here / _TARGET / path

        _DISTRIBUTION = TritoneAsTriton
    return _DISTRIBUTION
