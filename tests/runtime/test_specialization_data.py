"""Triton's per-device view of a kernel's caches (`device_caches[device]`), the
`specialization_data` text a jit hook receives, and `JITFunction.preload`,
which compiles it again: tuple parameters with constexpr elements included."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tritone as triton
import tritone.language as tl
from tests.runtime.test_gpu_path import H200_TARGET, fresh_site, gpu  # noqa: F401 - fixtures
from tritone.backends.sites import INTERPRETER_SITE
from tritone.ir.target import KernelOptions
from tritone.runtime import dispatch
from tritone.runtime.jit import DeviceEntry
from tritone.runtime.specialization_data import deserialize_specialization_data, serialize_specialization_data


@triton.jit
def nested_constexpr(x):
    for _ in range(1):
        tl.static_assert(x[1][0] == 2)


@triton.jit
def nested_store(out, pair, BLOCK: tl.constexpr, DT: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out + offsets, (pair[0] * pair[1][0]).to(DT))


def test_serialized_data_reads_back_with_tuples_constexprs_and_dtypes():
    signature = {"out": "*fp32", "pair": ("i32", ("fp32", "constexpr")), "BLOCK": "constexpr"}
    block = int(np.random.default_rng().choice([16, 64, 256]))
    constants = {(1, 1, 1): tl.constexpr(3), (2,): block, (3,): tl.float16, (4,): (1, "a"), (5,): None}
    attrs = {(0,): [["tt.divisibility", 16]]}
    options = {"num_warps": 8, "supported_fp8_dtypes": ("fp8e5",), "debug": False}
    text = serialize_specialization_data("mod.kernel", signature, constants, attrs, options, "key text")
    assert set(json.loads(text)) == {"name", "signature", "constant_keys", "constant_vals", "attrs_keys",
                                     "attrs_vals", "options", "key"}
    data = deserialize_specialization_data(text)
    assert data["name"] == "mod.kernel" and data["key"] == "key text"
    assert data["signature"] == signature
    assert data["attrs"] == attrs and data["options"] == options
    assert data["constants"].keys() == constants.keys()
    assert isinstance(data["constants"][(1, 1, 1)], tl.constexpr) and data["constants"][(1, 1, 1)].value == 3
    assert data["constants"][(2,)] == block and data["constants"][(3,)] == tl.float16
    assert data["constants"][(4,)] == (1, "a") and data["constants"][(5,)] is None


def test_values_json_cannot_hold_are_refused_by_name():
    with pytest.raises(TypeError, match="cannot hold .*object"):
        serialize_specialization_data("k", {}, {(0,): object()}, {}, {}, "")


def test_device_caches_by_device_is_the_sites_kernels_in_the_interpreter():
    nested_constexpr.device_caches.clear()
    kernel = nested_constexpr.warmup(((1,), (tl.constexpr(2),)), grid=(1,))
    entry = nested_constexpr.device_caches["cpu"]
    assert isinstance(entry, DeviceEntry) and entry.target == INTERPRETER_SITE[0]
    assert list(entry.kernel_cache.values()) == [kernel]
    assert entry.kernel_cache is nested_constexpr.device_caches[INTERPRETER_SITE]
    kernel_cache, _, _, backend, binder = nested_constexpr.device_caches[0]
    assert kernel_cache is entry.kernel_cache and backend.target == INTERPRETER_SITE[0]
    bound, _, _ = binder(((1,), (2,)))
    assert bound == {"x": ((1,), (2,))}
    kernel_cache.clear()
    again = nested_constexpr.warmup(((1,), (tl.constexpr(2),)), grid=(1,))
    assert again is not kernel and again.hash == kernel.hash and len(kernel_cache) == 1


@pytest.mark.usefixtures("gpu")
def test_device_caches_by_device_on_a_gpu():
    entry = nested_constexpr.device_caches[0]
    assert entry.target == H200_TARGET
    assert entry.kernel_cache is nested_constexpr.device_caches[(H200_TARGET, 0)]
    with pytest.raises(KeyError):
        nested_constexpr.device_caches[(H200_TARGET, 1)]


def test_preload_compiles_what_the_data_describes():
    value = int(np.random.default_rng().integers(2, 100))
    args = (np.zeros(32, np.float32), (value, (2.5, tl.constexpr(4))))
    kwargs = {"BLOCK": 32, "DT": tl.float32}
    kernel = nested_store.warmup(*args, grid=(1,), **kwargs)
    source, options = dispatch.source_for_call(nested_store, args, kwargs)
    assert source.signature["pair"] == ("i32", ("fp32", "constexpr"))
    text = dispatch.specialization_data(nested_store, source, KernelOptions.from_dict(options), "key")
    assert json.loads(text)["name"] == f"{__name__}.nested_store"
    preloaded = nested_store.preload(text)
    assert preloaded.hash == kernel.hash
    nested_text = dispatch.specialization_data(nested_constexpr, *dispatch.source_for_call(
        nested_constexpr, (((1,), (tl.constexpr(2),)),), {})[:1], KernelOptions(), "key")
    with pytest.raises(RuntimeError, match="is for .*nested_constexpr but trying to preload for .*nested_store"):
        nested_store.preload(nested_text)
