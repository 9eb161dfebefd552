"""Argument typing (Triton's specialization table) and the generated binder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tritone as triton
import tritone.language as tl
from tritone.language.core import constexpr
from tritone.runtime.specialize import constexpr_key, make_binder, make_key_binder, specialize_value
from tritone.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _device_fn(x):
    return x


# (value, do_not_specialize, do_not_specialize_on_alignment) -> (type, attribute); read from
# upstream Triton 3.6's native_specialize_impl.
INT_TABLE = [
    (0, False, False, ("i32", "D")),
    (16, False, False, ("i32", "D")),
    (-16, False, False, ("i32", "D")),
    (17, False, False, ("i32", "")),
    (2**31 - 1, False, False, ("i32", "")),
    (-(2**31), False, False, ("i32", "D")),
    (2**31, False, False, ("i64", "D")),
    (2**32, False, False, ("i64", "D")),
    (-(2**31) - 1, False, False, ("i64", "")),
    (2**63 - 1, False, False, ("i64", "")),
    (-(2**63), False, False, ("i64", "D")),
    (2**63, False, False, ("u64", "D")),
    (2**64 - 1, False, False, ("u64", "")),
    (16, True, False, ("i32", None)),
    (16, False, True, ("i32", "")),
    (2**40, True, False, ("i64", None)),
]


@pytest.mark.parametrize("value, no_spec, no_align, expected", INT_TABLE)
def test_int_rows(value, no_spec, no_align, expected):
    assert specialize_value(value, False, not no_spec, not no_align) == expected


def test_one_is_a_constexpr_unless_not_specialised():
    assert specialize_value(1) == ("constexpr", constexpr_key(1))
    assert specialize_value(1, specialize=False) == ("i32", None)
    assert specialize_value(1, align=False) == ("constexpr", constexpr_key(1))


def test_none_bool_float():
    assert specialize_value(None) == ("constexpr", constexpr_key(None))
    for value in (True, False):
        assert specialize_value(value) == ("u1", None)
        assert specialize_value(value, specialize=False) == ("u1", None)
    for value in (1.0, 1.5, -0.0, float("inf")):
        assert specialize_value(value) == ("fp32", None)
    assert specialize_value(np.float64(2.5)) == ("fp32", None)


def test_numpy_scalars_are_their_python_values():
    assert specialize_value(np.int32(32)) == ("i32", "D")
    assert specialize_value(np.int64(2**40 + 3)) == ("i64", "")
    assert specialize_value(np.bool_(True)) == ("u1", None)
    assert specialize_value(np.float32(0.5)) == ("fp32", None)


def test_constexpr_key_separates_equal_values_of_different_types():
    assert constexpr_key(1) != constexpr_key(True) != constexpr_key(1.0)
    assert constexpr_key([1, 2]) == constexpr_key([1, 2])


@pytest.mark.parametrize("dtype, name", [
    (torch.float32, "fp32"), (torch.float16, "fp16"), (torch.bfloat16, "bf16"), (torch.float64, "fp64"),
    (torch.int8, "i8"), (torch.int16, "i16"), (torch.int32, "i32"), (torch.int64, "i64"),
    (torch.uint8, "u8"), (torch.uint32, "u32"), (torch.bool, "u1"),
    (torch.float8_e4m3fn, "fp8e4nv"), (torch.float8_e5m2, "fp8e5"),
])
def test_torch_tensor_is_a_pointer_to_its_dtype(dtype, name):
    tensor = torch.zeros(64, dtype=dtype)
    aligned = tensor.data_ptr() % 16 == 0
    assert specialize_value(tensor) == ("*" + name, "D" if aligned else "")
    assert specialize_value(tensor, is_const=True)[0] == "*k" + name
    assert specialize_value(tensor, specialize=False) == ("*" + name, None)
    assert specialize_value(tensor, align=False) == ("*" + name, "")


def test_pointer_alignment_follows_the_address():
    base = torch.zeros(64, dtype=torch.float16)
    assert base.data_ptr() % 16 == 0
    assert specialize_value(base[1:]) == ("*fp16", "")
    assert specialize_value(base[8:]) == ("*fp16", "D")


@pytest.mark.parametrize("dtype, name", [
    (np.float32, "fp32"), (np.float16, "fp16"), (np.float64, "fp64"), (np.int8, "i8"), (np.int32, "i32"),
    (np.int64, "i64"), (np.uint8, "u8"), (np.uint16, "u16"), (np.uint64, "u64"), (np.bool_, "u1"),
])
def test_numpy_array_is_a_pointer_to_its_dtype(dtype, name):
    array = np.zeros(64, dtype=dtype)
    aligned = array.ctypes.data % 16 == 0
    assert specialize_value(array) == ("*" + name, "D" if aligned else "")


@triton.jit
def _copy_kernel(x_ptr, out_ptr: tl.pointer_type(tl.float32)):
    tl.store(out_ptr + tl.arange(0, 8), tl.load(x_ptr + tl.arange(0, 8)))


def test_arrays_of_the_other_byte_order_are_refused_by_name(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    swapped = np.arange(8, dtype=np.float32).astype(np.dtype(np.float32).newbyteorder())
    with pytest.raises(TypeError, match=r"non-native byte order \([<>]f4\).*\.astype\('float32'\)"):
        specialize_value(swapped)
    out = np.zeros(8, np.float32)
    with pytest.raises(TypeError, match=r"kernel _copy_kernel, argument 'x_ptr': a numpy array of non-native"):
        _copy_kernel[(1,)](swapped, out)
    with pytest.raises(TypeError, match=r"kernel _copy_kernel, argument 'out_ptr': a numpy array of non-native"):
        _copy_kernel[(1,)](out, swapped)
    assert not out.any()
    with pytest.raises(TypeError, match=r"element \[1\]: a numpy array of non-native byte order"):
        specialize_value((out, swapped))
    # One-byte elements have no byte order; a native array converted back is accepted.
    assert specialize_value(np.zeros(4, np.dtype(np.uint8).newbyteorder()))[0] == "*u8"
    _copy_kernel[(1,)](swapped.astype(np.float32), out)
    assert np.array_equal(out, np.arange(8, dtype=np.float32))


def test_jit_functions_and_constexprs_are_constexprs():
    assert specialize_value(_device_fn) == ("constexpr", ("jit", _device_fn.cache_key))
    assert specialize_value(constexpr(4)) == ("constexpr", constexpr_key(4))
    assert specialize_value(constexpr(tl.float16)) == ("constexpr", constexpr_key(tl.float16))


def test_reinterpret_and_mock_tensor():
    storage = torch.zeros(32, dtype=torch.int8)
    assert specialize_value(triton.reinterpret(storage, tl.float8e4nv))[0] == "*fp8e4nv"
    assert triton.reinterpret(triton.reinterpret(storage, tl.float8e4nv), torch.int8) is storage
    assert specialize_value(triton.MockTensor(torch.float16)) == ("*fp16", "D")


def test_values_that_cannot_be_arguments():
    with pytest.raises(TypeError, match="str"):
        specialize_value("text")
    with pytest.raises(TypeError, match="complex"):
        specialize_value(torch.zeros(2, dtype=torch.complex64))
    with pytest.raises(TypeError, match="list"):
        specialize_value([1, 2])
    with pytest.raises(TypeError, match=r"element \[1\]\[0\]: failed to specialize argument of type str"):
        specialize_value((3, ("text",)))
    with pytest.raises(OverflowError):
        specialize_value(2**64)
    with pytest.raises(OverflowError):
        specialize_value(-(2**63) - 1)


@triton.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=[1])
def _binder_kernel(x_ptr, y_ptr, n, m, scale: tl.float32, count: "i64",  # noqa: F821 (a Triton type string)
                   BLOCK: tl.constexpr, flag=True, eps=1e-5):
    pass


def test_binder_binds_positional_keyword_and_defaults():
    binder = make_binder(_binder_kernel)
    x = torch.zeros(16)
    y = torch.zeros(16)
    bound, specialization, options = binder(x, y, 16, 1, 2.0, 32, 128, eps=0.5, num_warps=8)
    assert list(bound) == ["x_ptr", "y_ptr", "n", "m", "scale", "count", "BLOCK", "flag", "eps"]
    assert bound["flag"] is True and bound["eps"] == 0.5 and bound["BLOCK"] == 128
    assert options == {"num_warps": 8}
    assert specialization == (
        ("*fp32", "D"),                      # x_ptr
        ("*fp32", ""),                       # y_ptr: do_not_specialize_on_alignment
        ("i32", None),                       # n: do_not_specialize
        ("constexpr", constexpr_key(1)),     # m == 1
        ("fp32", None),                      # annotated float: never specialised
        ("i64", "D"),                        # annotated i64: the annotation is the type
        ("constexpr", constexpr_key(128)),   # tl.constexpr parameter
        ("u1", None),                        # default True
        ("fp32", None),                      # eps
    )


def test_binder_errors_name_the_kernel_and_parameter():
    binder = make_binder(_binder_kernel)
    x = torch.zeros(4)
    with pytest.raises(TypeError, match=r"_binder_kernel\(\) missing 1 required positional argument: 'BLOCK'"):
        binder(x, x, 1, 2, 1.0, 3)
    with pytest.raises(TypeError, match=r"_binder_kernel\(\) takes .* positional arguments"):
        binder(x, x, 1, 2, 1.0, 3, 4, True, 1.0, "extra")
    with pytest.raises(TypeError, match=r"_binder_kernel\(\) got multiple values for argument 'n'"):
        binder(x, x, 1, 2, 1.0, 3, 4, n=5)
    with pytest.raises(TypeError, match=r"kernel _binder_kernel, argument 'm'"):
        binder(x, x, 1, "two", 1.0, 3, 4)


@triton.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=["y_ptr"])
def _key_kernel(x_ptr, y_ptr, n, m, scale, count: "i64", BLOCK: tl.constexpr,  # noqa: F821
                w_ptr: tl.pointer_type(tl.float16) = None):
    pass


def _key_arguments(rng: np.random.Generator) -> tuple:
    """Random arguments for _key_kernel: tensors of several dtypes, aligned or not,
    ints around the i32/i64/u64 edges and 1, floats, bools, numpy scalars, constexprs."""
    def tensor():
        dtype = [torch.float32, torch.float16, torch.int32, torch.uint8][rng.integers(4)]
        offset = int(rng.choice([0, 0, 1, 8]))
        return torch.zeros(64, dtype=dtype)[offset:]

    def scalar():
        choices = [1, 0, 16, 17, -32, 2**31 - 1, 2**31, -(2**31) - 1, 2**63, 2.5, True, np.int32(16), np.float32(1.5)]
        return choices[rng.integers(len(choices))]

    def descriptor():
        dtype = [torch.float16, torch.float32][rng.integers(2)]
        shape = [int(rng.choice([16, 32, 40])), 64]
        block = [int(rng.choice([8, 16])), int(rng.choice([16, 32]))]
        padding = ["zero", "nan"][rng.integers(2)]
        return TensorDescriptor(torch.zeros(shape, dtype=dtype), shape, [64, 1], block, padding)

    def pointer_or_scalar():
        draw = rng.random()
        return tensor() if draw < 0.6 else descriptor() if draw < 0.75 else scalar()

    block = [16, 1, True, 1.0, None, "text", constexpr(16)][rng.integers(7)]
    return (pointer_or_scalar(), pointer_or_scalar(), scalar(), scalar(), scalar(), int(rng.integers(-64, 64)),
            block, tensor() if rng.random() < 0.5 else None)


def test_equal_launch_keys_mean_equal_specializations():
    rng = np.random.default_rng()
    binder, key_binder = make_binder(_key_kernel), make_key_binder(_key_kernel)
    specialization_of: dict = {}
    for _ in range(400):
        args = _key_arguments(rng)
        try:
            _, specialization, _ = binder(*args)
        except TypeError:
            continue  # a value no kernel takes (the key binder may raise too, or key it: never cached)
        key, values, options = key_binder(*args, num_warps=2)
        assert len(values) == len(args) and all(a is b for a, b in zip(values, args))
        assert options == {"num_warps": 2}
        assert specialization_of.setdefault(key, specialization) == specialization, args
    # Common arguments get distinct keys when their specializations differ.
    x, unaligned = torch.zeros(8), torch.zeros(9)[1:]
    keys = {key_binder(a, x, 5, 3, 1.0, 2, 4)[0] for a in (x, unaligned, torch.zeros(8, dtype=torch.float16))}
    assert len(keys) == 3
    keys = {key_binder(x, x, 5, m, 1.0, 2, 4)[0] for m in (1, 16, 17, 2**31, 2.0)}
    assert len(keys) == 5
    # Host descriptors: by dtype, block, whether every dim divides by 16, and padding.
    halves = torch.zeros(48, 64, dtype=torch.float16)
    descriptors = [TensorDescriptor(halves, [32, 64], [64, 1], [16, 16]),
                   TensorDescriptor(halves, [32, 64], [64, 1], [16, 32]),
                   TensorDescriptor(halves, [40, 64], [64, 1], [16, 16]),
                   TensorDescriptor(halves, [32, 64], [64, 1], [16, 16], padding="nan"),
                   TensorDescriptor(torch.zeros(32, 64), [32, 64], [64, 1], [16, 16])]
    keys = [key_binder(d, x, 5, 3, 1.0, 2, 4)[0] for d in descriptors]
    assert len(set(keys)) == 5
    assert key_binder(TensorDescriptor(halves[16:], [32, 64], [64, 1], [16, 16]), x, 5, 3, 1.0, 2, 4)[0] == keys[0]
