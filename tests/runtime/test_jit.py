"""`@jit` and the attributes of a JITFunction."""

from __future__ import annotations

import inspect
import sys

import pytest

import tritone as triton
import tritone.language as tl
from tests.runtime._modules import load_module
from tritone.runtime.jit import JITFunction, KernelParam

KERNELS = """
import tritone as triton
import tritone.language as tl

SCALE = tl.constexpr(3)


@triton.jit
def helper(x):
    return x * 2


def decorate(fn):
    return fn


@decorate
@triton.jit(do_not_specialize=["n", 4], do_not_specialize_on_alignment=[0], noinline=True, debug=True)
def kernel(x_ptr, y_ptr: tl.const, n, m: "i64", k: tl.int32, out: tl.pointer_type(tl.float16),
           BLOCK: tl.constexpr, w=7):
    # comment inside
    v = helper(n) + SCALE
"""


def test_attributes(tmp_path):
    module = load_module(tmp_path, KERNELS)
    kernel = module.kernel
    assert isinstance(kernel, JITFunction)
    assert kernel.fn.__name__ == "kernel" and kernel.__name__ == "kernel"
    assert kernel.__globals__ is module.__dict__
    assert kernel.arg_names == ["x_ptr", "y_ptr", "n", "m", "k", "out", "BLOCK", "w"]
    assert kernel.src.startswith("def kernel(x_ptr, y_ptr: tl.const,")
    assert "@" not in kernel.src.splitlines()[0] and kernel.src.rstrip().endswith("v = helper(n) + SCALE")
    lines = open(kernel.file_name).read().splitlines()
    assert lines[kernel.starting_line_number - 1].startswith("def kernel(")
    assert kernel.file_name == str(tmp_path / f"{module.__name__}.py")
    assert kernel.noinline is True and kernel.debug is True
    assert isinstance(kernel.signature, inspect.Signature)
    assert kernel.constexprs == [6]
    assert kernel.do_not_specialize == [2, 4]
    assert [p.annotation for p in kernel.params] == ["", "const", "", "i64", "i32", "*fp16", "constexpr", ""]
    assert kernel.params[1] == KernelParam(num=1, name="y_ptr", annotation="const", is_constexpr=False,
                                           is_const=True, do_not_specialize=False,
                                           do_not_specialize_on_alignment=False)
    assert kernel.params[0].do_not_specialize_on_alignment
    assert kernel.params[2].do_not_specialize and kernel.params[4].do_not_specialize
    assert kernel.params[6].is_constexpr and not kernel.params[6].is_const
    assert kernel.params[7].default == 7 and kernel.params[7].has_default
    assert not kernel.params[0].has_default
    assert kernel.params[3].annotation_type == "i64" and kernel.params[0].annotation_type == ""
    assert repr(kernel) == f"JITFunction({module.__name__}:kernel)"


def test_annotation_spellings():
    @triton.jit
    def spelled(a: tl.float16, b: "fp32", c: bool, d: int, e: "const *fp32",  # noqa: F821 (Triton type strings)
                f: tl.pointer_type(tl.int8, const=True), g: "tl.constexpr", h: float):
        pass

    assert [p.annotation for p in spelled.params] == ["fp16", "fp32", "u1", "i32", "*kfp32", "*ki8", "constexpr",
                                                      "fp32"]
    assert [p.is_const for p in spelled.params] == [False, False, False, False, True, True, False, False]


def test_jit_without_parentheses_and_with_options_agree():
    def fn(x):
        pass

    plain = triton.jit(fn)
    configured = triton.jit(noinline=True)(fn)
    assert plain.src == configured.src and configured.noinline is True and plain.noinline is None


def test_calling_outside_a_kernel_raises():
    @triton.jit
    def device_fn(x):
        return x

    with pytest.raises(RuntimeError, match="outside of the scope of a kernel"):
        device_fn(1)


def test_bad_do_not_specialize():
    def fn(x, y):
        pass

    with pytest.raises(ValueError, match="'z'"):
        triton.jit(do_not_specialize=["z"])(fn)
    with pytest.raises(ValueError, match="index 5"):
        triton.jit(do_not_specialize=[5])(fn)


def test_cache_key_covers_callees_and_constexpr_globals(tmp_path):
    first = load_module(tmp_path, KERNELS)
    same = load_module(tmp_path, KERNELS)
    assert first.kernel.cache_key == same.kernel.cache_key
    assert len(first.kernel.cache_key) == 64

    callee_changed = load_module(tmp_path, KERNELS.replace("return x * 2", "return x * 3"))
    assert callee_changed.kernel.cache_key != first.kernel.cache_key

    global_changed = load_module(tmp_path, KERNELS.replace("tl.constexpr(3)", "tl.constexpr(4)"))
    assert global_changed.kernel.cache_key != first.kernel.cache_key

    unrelated_changed = load_module(tmp_path, KERNELS.replace("return fn", "return fn  # other"))
    assert unrelated_changed.kernel.cache_key == first.kernel.cache_key

    assert [name for name, _ in first.kernel.used_global_vals] == ["SCALE"]


def test_cache_key_follows_attribute_access(tmp_path):
    library = load_module(tmp_path, """
        import tritone as triton

        @triton.jit
        def twice(x):
            return x * 2
    """)
    user = """
        import tritone as triton
        import {lib} as lib

        @triton.jit
        def kernel(x):
            y = lib.twice(x)
    """
    sys.modules[library.__name__] = library
    try:
        kernel = load_module(tmp_path, user.format(lib=library.__name__)).kernel
        key = kernel.cache_key
        other = load_module(tmp_path, user.format(lib=library.__name__).replace("lib.twice", "lib.missing")).kernel
        assert other.cache_key != key
    finally:
        del sys.modules[library.__name__]


def test_changed_global_is_detected(tmp_path):
    module = load_module(tmp_path, KERNELS)
    kernel = module.kernel
    _ = kernel.cache_key
    kernel.check_globals_unchanged()
    module.SCALE = tl.constexpr(5)
    with pytest.raises(RuntimeError, match="Global variable SCALE has changed"):
        kernel.check_globals_unchanged()


def test_pre_run_hooks_registered():
    @triton.jit
    def fn(x):
        pass

    calls = []
    fn.add_pre_run_hook(lambda *args, **kwargs: calls.append(args))
    assert len(fn.pre_run_hooks) == 1
