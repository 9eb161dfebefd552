"""The startup hook's finder in this process: with tritone chosen, `triton` and
`triton.X` are tritone's own module objects and importlib.metadata agrees; with
upstream chosen, the finder stays out of the way."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import inspect
import pickle
import sys
from pathlib import Path

import pytest

import _tritone_triton_hook as hook
import tritone
import tritone.language
import tritone.runtime.autotuner

UPSTREAM = hook.upstream_origin([importlib.machinery.PathFinder])


def _triton_modules() -> dict:
    return {name: module for name, module in sys.modules.items() if name == "triton" or name.startswith("triton.")}


@pytest.fixture
def finder_with(monkeypatch):
    """Install a fresh finder deciding by TRITONE_AS_TRITON=`value`; afterwards
    the finder, and whatever `triton` modules the test imported, are gone."""
    saved = _triton_modules()
    installed = []

    def install(value: str) -> hook.TritonFinder:
        for name in _triton_modules():
            del sys.modules[name]
        monkeypatch.setenv(hook.ENV_VAR, value)
        finder = hook.TritonFinder()
        sys.meta_path.insert(0, finder)
        installed.append(finder)
        return finder

    yield install
    for finder in installed:
        sys.meta_path.remove(finder)
    for name in _triton_modules():
        del sys.modules[name]
    sys.modules.update(saved)


def test_triton_is_tritone(finder_with):
    finder_with("1")
    import triton
    import triton.language as tl
    import triton.runtime.autotuner

    assert triton is tritone and triton.jit is tritone.jit and triton.__version__ == tritone.__version__
    assert tl is tritone.language and tl.dtype is tritone.language.dtype
    assert triton.runtime.autotuner.Autotuner is tritone.runtime.autotuner.Autotuner
    assert sys.modules["triton.runtime.jit"] is sys.modules["tritone.runtime.jit"]
    from triton.runtime.jit import JITFunction

    @triton.jit
    def kernel(x):
        pass

    assert isinstance(kernel, JITFunction) and JITFunction is sys.modules["tritone.runtime.jit"].JITFunction


def test_tritone_modules_keep_their_identity(finder_with):
    finder_with("1")
    import triton.language

    assert triton.language.__name__ == "tritone.language"
    assert triton.language.__spec__.name == "tritone.language"
    assert Path(inspect.getsourcefile(triton.language)) == Path(tritone.language.__file__)
    config = pickle.loads(pickle.dumps(triton.Config({"BLOCK": 64}, num_warps=8)))
    assert isinstance(config, tritone.Config) and config.kwargs == {"BLOCK": 64} and config.num_warps == 8


def test_a_package_binding_named_like_its_submodule_survives(finder_with):
    # tritone.runtime binds the driver object under the name of its submodule, like upstream
    driver = tritone.runtime.driver
    finder_with("1")
    import triton.runtime.driver
    from triton.runtime.driver import driver as imported

    assert tritone.runtime.driver is driver and triton.runtime.driver is driver and imported is driver


def test_a_module_tritone_lacks_names_the_triton_path(finder_with):
    finder_with("true")
    with pytest.raises(ModuleNotFoundError) as raised:
        importlib.import_module("triton.no_such_module")
    assert raised.value.name == "triton.no_such_module"
    assert "tritone answers `import triton` here" in str(raised.value)
    assert "tritone.no_such_module" in str(raised.value)


def test_find_spec_and_metadata_agree_with_tritone(finder_with):
    finder_with("1")
    spec = importlib.util.find_spec("triton")
    assert spec.origin == tritone.__file__
    assert importlib.metadata.version("triton") == tritone.__version__
    assert "tritone" in importlib.metadata.metadata("triton")["Summary"]
    assert importlib.metadata.version("Triton") == tritone.__version__


def test_listing_distributions_does_not_invent_triton(finder_with, tmp_path):
    # pip lists each folder's distributions without a name: tritone's must not appear there
    finder_with("1")
    presented = hook._distribution_class()
    assert not any(isinstance(dist, presented) for dist in importlib.metadata.distributions())
    assert not any(isinstance(dist, presented) for dist in importlib.metadata.distributions(name="triton",
                                                                                            path=[str(tmp_path)]))


def test_a_bad_variable_fails_the_import_naming_it(finder_with):
    finder_with("maybe")
    with pytest.raises(ValueError, match="TRITONE_AS_TRITON='maybe'"):
        importlib.import_module("triton")


@pytest.mark.skipif(UPSTREAM is None, reason="upstream triton is not installed in this Python")
def test_upstream_answers_when_chosen(finder_with):
    finder_with("0")
    spec = importlib.util.find_spec("triton")
    assert spec.origin == UPSTREAM
    assert importlib.metadata.version("triton") != "" and not isinstance(
        importlib.metadata.distribution("triton"), hook._distribution_class())


def test_install_is_idempotent_and_first():
    before = list(sys.meta_path)
    try:
        # Where tritone is installed, the startup hook's finder is already there.
        hook.uninstall()
        assert hook.installed_finder() is None
        first = hook.install()
        assert hook.install() is first and sys.meta_path[0] is first and hook.installed_finder() is first
        assert sum(isinstance(finder, hook.TritonFinder) for finder in sys.meta_path) == 1
    finally:
        sys.meta_path[:] = before
