"""What TorchInductor's runtime takes from Triton, checked with torch's own code
(the `torch_side` fixture): its device helpers (`triton_helpers`: Welford, the
bitonic sort, bucketize, arg-reductions, online softmax) compiled by tritone and
run on the CPU against torch; a compiled kernel wrapped, pickled and launched as
its compile workers hand it back; the static launcher's reading of a cubin
compiled for sm_80 and the FX graph cache's bundling of it (NVRTC, no GPU)."""

from __future__ import annotations

import pytest

from tritone import knobs

HELPERS = ["welford", "sort_ascending", "sort_descending", "bucketize_left", "bucketize_right",
           "bucketize_sorter_left", "bucketize_sorter_right", "arg_extremes", "online_softmax", "products_and_any",
           "integer_division"]


@pytest.mark.parametrize("helper", HELPERS)
def test_inductor_helpers_compute_what_torch_does(torch_side, helper):
    assert torch_side["helpers"][helper] == ""


def test_a_compile_result_pickled_as_workers_send_it_launches(torch_side):
    result = torch_side["compile_result"]
    assert result["matches"]
    assert result["n_spills"] == 0 and result["shared"] == 0  # ints: Inductor compares and logs them


def test_the_static_launcher_takes_tritone_cubins(torch_side):
    static = torch_side["static_launcher"]
    if "skipped" in static:
        pytest.skip(f"no NVRTC to compile for sm_80: {static['skipped']}")
    assert static["accepted"], "torch fell back from its static launcher (see its info log for why)"
    assert static["name"] == "triton_poi_fused_add_mul_0" and static["entry_in_cubin"]
    assert static["cubin_file"] == "triton_poi_fused_add_mul_0.cubin" and static["cubin_matches"]
    # three pointers and the i32 xnumel; XBLOCK is a constexpr and no argument
    assert static["arg_tys"] == "OOOi" and static["num_warps"] == 2 and static["shared"] == 0
    # metadata reports scratch sizes of 0, so torch adds null pointers the kernel does not declare
    assert static["scratch"] == [True, True]
    assert static["copy"] == ["OOOi", "triton_poi_fused_add_mul_0", None, True]


def test_libdevice_path_is_a_knob_inductor_can_set(monkeypatch):
    monkeypatch.delenv("TRITON_LIBDEVICE_PATH", raising=False)
    with knobs.nvidia.scope():
        assert knobs.nvidia.libdevice_path is None
        monkeypatch.setenv("TRITON_LIBDEVICE_PATH", "/opt/cuda/nvvm/libdevice/libdevice.10.bc")
        assert knobs.nvidia.libdevice_path == "/opt/cuda/nvvm/libdevice/libdevice.10.bc"
        knobs.nvidia.libdevice_path = "/elsewhere/libdevice.10.bc"
        assert knobs.nvidia.libdevice_path == "/elsewhere/libdevice.10.bc"


def test_inductor_copies_a_user_kernel_with_what_it_calls(torch_side):
    copied = torch_side["copied_user_kernel"]
    assert "@triton.constexpr_function\ndef halve(x):" in copied["source"]
    assert "@triton.jit\ndef scaled(x):" in copied["source"] and "SCALE = tl.constexpr(3)" in copied["source"]
    # An annotated global's annotation names the class by a path the copy (importing only triton) resolves.
    assert "OFFSET: triton.language.core.constexpr = tl.constexpr(1)" in copied["source"], copied["source"]
    assert copied["matches"]


def test_constexpr_functions_keep_their_source():
    from tests.inductor_contract import _kernels

    assert _kernels.halve.src == "def halve(x):\n    return x // 2\n"
    assert _kernels.halve(7) == 3


def test_the_fx_graph_cache_bundler_carries_a_kernel_to_another_cache(torch_side):
    bundled = torch_side["bundler"]
    if "skipped" in bundled:
        pytest.skip(f"no NVRTC to compile for sm_80: {bundled['skipped']}")
    assert bundled["kernel_names"] == ["triton_poi_fused_add_mul_0"]
    assert "triton_poi_fused_add_mul_0.cubin" in bundled["files"]
    assert bundled["cache_hits"] == [True] and bundled["same_cubin"] and bundled["same_hash"]
