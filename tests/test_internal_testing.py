"""`tritone._internal_testing`, the helpers upstream Triton's test-suite imports
as `triton._internal_testing`: random inputs and their round trip through kernel
arguments, dtype names, the interpreter predicate."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tritone.language as tl
from tritone import _internal_testing as it
from tritone.runtime.jit import TensorWrapper


@pytest.mark.parametrize("name", it.dtypes_with_bfloat16 + ["bool"])
def test_random_inputs_round_trip_through_kernel_arguments(name):
    rs = np.random.RandomState(np.random.randint(1 << 30))
    values = it.numpy_random((5, 7), name, rs=rs)
    assert values.shape == (5, 7)
    if name in it.integral_dtypes:
        assert values.dtype == np.dtype(name) and not (values == 0).any()
    argument = it.to_triton(values, "cpu", dst_type=name)
    if name in it.uint_dtypes:
        assert isinstance(argument, TensorWrapper) and argument.dtype == getattr(tl, name)
    elif name == "bfloat16":
        assert argument.dtype == torch.bfloat16
    back = it.to_numpy(argument)
    np.testing.assert_array_equal(back, values)


def test_random_inputs_are_seeded_and_bounded():
    first, again = it.numpy_random(64, "int16"), it.numpy_random(64, "int16")
    np.testing.assert_array_equal(first, again)
    bounded = it.numpy_random(200, "int8", rs=np.random.RandomState(3), low=-5, high=5)
    assert bounded.min() >= -5 and bounded.max() < 5
    float8_bits = it.numpy_random(50, "float8_e5m2")
    assert float8_bits.dtype == np.int8 and 20 <= float8_bits.min() and float8_bits.max() < 40
    with pytest.raises(RuntimeError, match="unknown dtype 'complex64'"):
        it.numpy_random(4, "complex64")


def test_float8_arguments_are_reinterpreted():
    bits = it.numpy_random(8, "float8_e4m3fn")
    argument = it.to_triton(bits, "cpu", dst_type="float8_e4m3fn")
    assert isinstance(argument, TensorWrapper) and argument.dtype == tl.float8e4nv
    assert it.unwrap_tensor(argument).dtype == torch.int8


def test_dtype_names():
    assert it.str_to_triton_dtype("bool") == tl.int1
    assert it.str_to_triton_dtype("uint32") == tl.uint32
    assert it.str_to_triton_dtype("float8_e5m2") == tl.float8e5
    with pytest.raises(ValueError, match="'half2'"):
        it.str_to_triton_dtype("half2")
    assert it.torch_dtype_name(torch.int64) == "int64"
    assert it.torch_dtype_name(tl.bfloat16) == "bf16"
    with pytest.raises(TypeError, match="str"):
        it.torch_dtype_name("int8")


def test_machine_predicates_in_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert it.is_interpreter() and it.get_current_target() is None
    assert not it.is_cuda() and not it.is_hip() and not it.is_hopper() and it.get_arch() == ""
    assert it.supports_tma()
