"""Checks that a module is well-formed IR (docs/IR.md).

`verify(module)` checks every op against its spec (ir/ops.py): operand and
result counts, attributes, regions and their terminators; SSA dominance
(an operand must be defined earlier in the same region or in an enclosing
one; region arguments are visible only inside their region); and the type
rules of the common ops. The first problem raises `IRVerificationError`
naming the function, the op (printed) and what is wrong.

Block types may carry a layout (after the GPU layout pass, docs/IR.md
"Layouts and the GPU ops"). The type rules compare shapes and element types;
layouts are compared only where docs/IR.md says values share one (the ops
whose spec has the same-layout rule, `OpSpec.layout`: elementwise ops, hints,
scans, inline assembly; memory ops, carried values, broadcast) or derive one
from another (expand_dims, reduce), and `convert_layout` may change nothing
but the layout. IR before the layout pass (no layouts anywhere) meets those
rules trivially.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import TritonError
from .core import Function, Module, Operation, Region, Value
from .inline_asm import check_constraints
from .ops import (
    BINARY_OPS,
    FLOAT_MATH_OPS,
    FLOAT_ONLY_BINARY_OPS,
    INT_ONLY_BINARY_OPS,
    OP_SPECS,
    SAME_LAYOUT,
    YIELD_PARENTS,
)
from .printer import print_op
from .types import block_type, dtype, int1, int32, int64, pointer_type, tensordesc_type, tensormap_type, type_text


class IRVerificationError(TritonError):
    """The IR breaks a rule of docs/IR.md; the message names the op and the rule."""


class _Failure(Exception):
    """A rule broken by the op being checked (turned into IRVerificationError with the op's text)."""


def _fail(message: str) -> None:
    raise _Failure(message)


def _shape(ty: dtype) -> tuple:
    return tuple(ty.shape) if ty.is_block() else ()


def _shaped(element: dtype, shape: tuple) -> dtype:
    """`element` in `shape` (the scalar itself for the empty shape)."""
    return block_type(element, shape) if shape else element


def _layout(ty: dtype) -> Any:
    """The layout of a block type (None for scalars and blocks without one)."""
    return ty.layout if ty.is_block() else None


def _plain(ty: dtype) -> dtype:
    """`ty` without its layout: what the rules compare where layouts may differ."""
    return block_type(ty.scalar, ty.shape) if _layout(ty) is not None else ty


def _slice_layout(dim: int, parent: Any) -> Any:
    """`SliceLayout(dim, parent)`, the layout docs/IR.md derives for expand_dims
    operands and reduce results (None when `parent` is None: no layouts yet)."""
    if parent is None:
        return None
    # Layouts exist only once the GPU layout pass has run; importing them here
    # keeps `import tritone` from loading them.
    from tritone.ir.layouts import SliceLayout

    return SliceLayout(dim, parent)


def _same_layout(a: Any, b: Any, shape: tuple[int, ...]) -> bool:
    """Equal layouts (None for no layout), or layouts placing every element of a
    `shape` block alike (a reshape's linear encoding of a blocked layout, say)."""
    if a == b:
        return True
    if a is None or b is None:
        return False
    from tritone.ir.layouts import same_placement  # see _slice_layout

    return same_placement(a, b, shape)


def _types(values: list[Value]) -> list[dtype]:
    return [v.type for v in values]


def _t(ty: dtype) -> str:
    """A type as the IR text writes it (messages quote the IR)."""
    return type_text(ty)


def _fmt(types: list[dtype]) -> str:
    return "(" + ", ".join(type_text(t) for t in types) + ")"


def _same_type(a: dtype, b: dtype) -> bool:
    """Equal types, or blocks of one shape and element type whose layouts place every
    element alike (a reshape's linear encoding of a blocked layout, say)."""
    if a == b:
        return True
    return (a.is_block() and b.is_block() and _plain(a) == _plain(b)
            and _same_layout(_layout(a), _layout(b), tuple(a.shape)))


def _expect_type(what: str, actual: dtype, expected: dtype) -> None:
    if not _same_type(actual, expected):
        _fail(f"{what} has type {_t(actual)}, expected {_t(expected)}")


def _expect_shaped(what: str, actual: dtype, expected: dtype) -> None:
    """`actual` has the shape and element type of `expected`, in any layout."""
    if _plain(actual) != _plain(expected):
        _fail(f"{what} has type {_t(actual)}, expected {_t(_plain(expected))} (in any layout)")


def _expect_layout(what: str, actual: dtype, expected: Any) -> None:
    if not _same_layout(_layout(actual), expected, _shape(actual)):
        _fail(f"{what} has type {_t(actual)}, expected the layout {expected}")


def _expect_one_layout(what: str, types: list[dtype]) -> None:
    """The blocks among `types` share one layout (or layouts placing every element alike)."""
    blocks = [t for t in types if t.is_block()]
    if any(not _same_layout(_layout(t), _layout(blocks[0]), tuple(t.shape)) for t in blocks[1:]):
        _fail(f"{what} {_fmt(types)} must share one layout")


def _expect_types(what: str, actual: list[dtype], expected: list[dtype]) -> None:
    if len(actual) != len(expected) or not all(_same_type(a, e) for a, e in zip(actual, expected)):
        _fail(f"{what} {_fmt(actual)} do not match {_fmt(expected)}")


def _is_number(ty: dtype) -> bool:
    return ty.scalar.is_int() or ty.scalar.is_floating()


# -- type rules, one per op (or family of ops) ---------------------------------------

def _check_binary(op: Operation) -> None:
    a, b = _types(op.operands)
    if not _same_type(a, b):
        _fail(f"operands have different types {_t(a)} and {_t(b)}")
    _expect_type("the result", op.results[0].type, a)
    scalar = a.scalar
    if not _is_number(a):
        _fail(f"operands must be numbers, got {_t(a)}")
    if op.name in INT_ONLY_BINARY_OPS and not scalar.is_int():
        _fail(f"operands must be integers, got {_t(a)}")
    if op.name in FLOAT_ONLY_BINARY_OPS and not scalar.is_floating():
        _fail(f"operands must be floats, got {_t(a)}")
    if op.name == "umulhi" and scalar.int_bitwidth not in (32, 64):
        _fail(f"umulhi needs 32- or 64-bit integers, got {_t(a)}")


def _check_unary_math(op: Operation) -> None:
    x = op.operands[0].type
    _expect_type("the result", op.results[0].type, x)
    if op.name == "abs":
        if not _is_number(x):
            _fail(f"operand must be a number, got {_t(x)}")
    elif not x.scalar.is_floating():
        _fail(f"operand must be a float, got {_t(x)}")


def _check_fma(op: Operation) -> None:
    a, b, c = _types(op.operands)
    if not (_same_type(a, b) and _same_type(b, c)):
        _fail(f"operands have different types {_t(a)}, {_t(b)}, {_t(c)}")
    if not a.scalar.is_floating():
        _fail(f"operands must be floats, got {_t(a)}")
    _expect_type("the result", op.results[0].type, a)


def _check_cmp(op: Operation) -> None:
    a, b = _types(op.operands)
    if not _same_type(a, b):
        _fail(f"operands have different types {_t(a)} and {_t(b)}")
    _expect_type("the result", op.results[0].type, a.with_element_ty(int1))


def _check_select(op: Operation) -> None:
    cond, a, b = _types(op.operands)
    if not _same_type(a, b):
        _fail(f"the two choices have different types {_t(a)} and {_t(b)}")
    _expect_type("the condition", cond, a.with_element_ty(int1))
    _expect_type("the result", op.results[0].type, a)


def _check_addptr(op: Operation) -> None:
    ptr, offset = _types(op.operands)
    if not ptr.scalar.is_ptr():
        _fail(f"the first operand must be a pointer, got {_t(ptr)}")
    if not offset.scalar.is_int() or _shape(offset) != _shape(ptr):
        _fail(f"the offset must be an integer of the pointer's shape, got {_t(offset)} for {_t(ptr)}")
    _expect_layout("the offset", offset, _layout(ptr))
    _expect_type("the result", op.results[0].type, ptr)


def _check_constant(op: Operation) -> None:
    ty = op.results[0].type
    value = op.attrs["value"]
    scalar = ty.scalar
    if scalar.is_floating():
        if not isinstance(value, float):
            _fail(f"a {_t(ty)} constant needs a float value, got {value!r}")
        narrow = {"fp16": np.float16, "fp32": np.float32}.get(type_text(scalar))
        with np.errstate(over="ignore"):
            rounded = float(narrow(value)) if narrow is not None else value
        if not np.isnan(value) and rounded != value:
            _fail(f"value {value!r} is not representable in {_t(scalar)}")
    elif scalar.is_int() or scalar.is_ptr():
        if not isinstance(value, int):
            _fail(f"a {_t(ty)} constant needs an integer value, got {value!r}")
        low, high = scalar.int_range() if scalar.is_int() else (0, (1 << 64) - 1)
        if not low <= value <= high:
            _fail(f"value {value} is out of the range [{low}, {high}] of {_t(scalar)}")
    else:
        _fail(f"constants of type {_t(ty)} do not exist")


def _check_i32_result(op: Operation) -> None:
    _expect_type("the result", op.results[0].type, int32)


def _check_arange(op: Operation) -> None:
    start, end = op.attrs["start"], op.attrs["end"]
    if end <= start:
        _fail(f"empty range [{start}, {end})")
    _expect_shaped("the result", op.results[0].type, block_type(int32, [end - start]))


def _check_splat(op: Operation) -> None:
    x, r = op.operands[0].type, op.results[0].type
    if x.is_block() or not r.is_block():
        _fail(f"splat makes a block from a scalar, not {_t(x)} -> {_t(r)}")
    _expect_type("the result's element", r.scalar, x)


def _check_broadcast(op: Operation) -> None:
    x, r = op.operands[0].type, op.results[0].type
    if not x.is_block() or not r.is_block() or x.scalar != r.scalar or len(x.shape) != len(r.shape):
        _fail(f"broadcast needs blocks of one element type and rank, got {_t(x)} -> {_t(r)}")
    for src, dst in zip(x.shape, r.shape):
        if src not in (1, dst):
            _fail(f"cannot broadcast shape {list(x.shape)} to {list(r.shape)}")
    _expect_layout("the operand (broadcast keeps the layout)", x, _layout(r))


def _check_expand_dims(op: Operation) -> None:
    x, r = op.operands[0].type, op.results[0].type
    axis = op.attrs["axis"]
    shape = list(_shape(x))
    if not 0 <= axis <= len(shape):
        _fail(f"axis {axis} out of range for {_t(x)}")
    _expect_shaped("the result", r, block_type(x.scalar, shape[:axis] + [1] + shape[axis:]))
    _expect_layout("the operand", x, _slice_layout(axis, _layout(r)))


def _check_reshape(op: Operation) -> None:
    x, r = op.operands[0].type, op.results[0].type
    if x.scalar != r.scalar or x.numel != r.numel:
        _fail(f"reshape keeps the element type and the number of elements, got {_t(x)} -> {_t(r)}")


def _check_permute(op: Operation) -> None:
    x, r = op.operands[0].type, op.results[0].type
    order = op.attrs["order"]
    shape = _shape(x)
    if sorted(order) != list(range(len(shape))):
        _fail(f"order {list(order)} is not a permutation of the {len(shape)} dims of {_t(x)}")
    _expect_shaped("the result", r, block_type(x.scalar, [shape[i] for i in order]))


def _check_join(op: Operation) -> None:
    a, b = _types(op.operands)
    if _plain(a) != _plain(b):
        _fail(f"operands have different types {_t(a)} and {_t(b)}")
    _expect_shaped("the result", op.results[0].type, block_type(a.scalar, _shape(a) + (2,)))


def _check_split(op: Operation) -> None:
    x = op.operands[0].type
    if not x.is_block() or x.shape[-1] != 2:
        _fail(f"split needs a block whose last dim is 2, got {_t(x)}")
    half = _shaped(x.scalar, x.shape[:-1])
    for result in op.results:
        _expect_shaped("a result", result.type, half)


def _check_cat(op: Operation) -> None:
    a, b = _types(op.operands)
    if len(_shape(a)) != 1 or len(_shape(b)) != 1 or a.scalar != b.scalar:
        _fail(f"cat needs two 1-D blocks of one element type, got {_t(a)} and {_t(b)}")
    _expect_shaped("the result", op.results[0].type, block_type(a.scalar, [a.shape[0] + b.shape[0]]))


def _check_gather(op: Operation) -> None:
    src, index = _types(op.operands)
    axis = op.attrs["axis"]
    if not src.is_block() or not index.is_block() or len(src.shape) != len(index.shape):
        _fail(f"gather needs blocks of equal rank, got {_t(src)} and {_t(index)}")
    if not index.scalar.is_int():
        _fail(f"the index must be integers, got {_t(index)}")
    if not 0 <= axis < len(src.shape):
        _fail(f"axis {axis} out of range for {_t(src)}")
    _expect_shaped("the result", op.results[0].type, block_type(src.scalar, index.shape))


def _check_histogram(op: Operation) -> None:
    x = op.operands[0].type
    if not x.is_block() or not x.scalar.is_int():
        _fail(f"histogram needs a block of integers, got {_t(x)}")
    if len(op.operands) == 2:
        _expect_shaped("the mask", op.operands[1].type, block_type(int1, x.shape))
    _expect_shaped("the result", op.results[0].type, block_type(int32, [op.attrs["num_bins"]]))


def _check_cast(op: Operation) -> None:
    x, r = op.operands[0].type, op.results[0].type
    if _shape(x) != _shape(r) or not _same_layout(_layout(x), _layout(r), _shape(x)):
        _fail(f"casts keep the shape and the layout, got {_t(x)} -> {_t(r)}")
    if op.name == "bitcast" and x.scalar.primitive_bitwidth != r.scalar.primitive_bitwidth:
        _fail(f"bitcast needs equal bit widths, got {_t(x)} -> {_t(r)}")


def _check_memory_operands(op: Operation, mask_index: int | None) -> dtype:
    """Checks the pointer and the optional mask (operand `mask_index`); returns
    the type of the values behind the pointer (in the pointer's shape and layout)."""
    ptr = op.operands[0].type
    if not ptr.scalar.is_ptr():
        _fail(f"the first operand must be a pointer, got {_t(ptr)}")
    if mask_index is not None and len(op.operands) > mask_index:
        _expect_type("the mask", op.operands[mask_index].type, ptr.with_element_ty(int1))
    return ptr.with_element_ty(ptr.scalar.element_ty)


def _check_load(op: Operation) -> None:
    data = _check_memory_operands(op, 1)
    if len(op.operands) == 3:
        _expect_type("`other`", op.operands[2].type, data)
    _expect_type("the result", op.results[0].type, data)


def _check_store(op: Operation) -> None:
    data = _check_memory_operands(op, 2)
    _expect_type("the value", op.operands[1].type, data)
    if op.operands[0].type.scalar.is_const():
        _fail("cannot store through a const pointer")


def _check_atomic_rmw(op: Operation) -> None:
    data = _check_memory_operands(op, 2)
    _expect_type("the value", op.operands[1].type, data)
    _expect_type("the result", op.results[0].type, data)


def _check_atomic_cas(op: Operation) -> None:
    data = _check_memory_operands(op, None)
    _expect_type("`cmp`", op.operands[1].type, data)
    _expect_type("`val`", op.operands[2].type, data)
    _expect_type("the result", op.results[0].type, data)


def _check_descriptor_part(op: Operation, extra: int, then: int) -> tensordesc_type:
    """Checks the descriptor, shape and strides operands of a descriptor op whose
    operand list is `(desc, shape.., strides.., <extra operands>, <then operands>)`;
    returns the descriptor type."""
    desc = op.operands[0].type
    if not isinstance(desc, tensordesc_type):
        _fail(f"the first operand must be a tensor descriptor, got {_t(desc)}")
    rank = desc.rank
    if len(op.operands) != 1 + 2 * rank + extra + then:
        _fail(f"a rank-{rank} descriptor takes {1 + 2 * rank + extra + then} operands here, got {len(op.operands)}")
    _expect_types("the shape", _types(op.operands[1:1 + rank]), [int32] * rank)
    _expect_types("the strides", _types(op.operands[1 + rank:1 + 2 * rank]), [int64] * rank)
    return desc


def _check_made_of_a_tensor(op: Operation, kind: type, what: str) -> dtype:
    """make_tensor_descriptor and tensormap_create: a result of `kind` (`what`) made
    of the tensor's base, shape (i32 each) and strides (i64 each)."""
    made = op.results[0].type
    if not isinstance(made, kind):
        _fail(f"the result must be a {what}, got {_t(made)}")
    rank = made.rank
    if len(op.operands) != 1 + 2 * rank:
        _fail(f"a rank-{rank} {what} is made of {1 + 2 * rank} operands, got {len(op.operands)}")
    _expect_type("the base", op.operands[0].type, pointer_type(made.element_ty))
    _expect_types("the shape", _types(op.operands[1:1 + rank]), [int32] * rank)
    _expect_types("the strides", _types(op.operands[1 + rank:]), [int64] * rank)
    return made


def _check_make_tensor_descriptor(op: Operation) -> None:
    _check_made_of_a_tensor(op, tensordesc_type, "descriptor")


def _check_tensormap_create(op: Operation) -> None:
    _check_made_of_a_tensor(op, tensormap_type, "tensor map")
    if int(op.attrs["global_offset"]) % 128:
        _fail(f"global_offset {op.attrs['global_offset']} is not a multiple of 128 bytes")


def _check_descriptor_access(op: Operation) -> None:
    """descriptor_load (nan flag, offsets), _store and _atomic (value, offsets)."""
    probe = op.operands[0].type
    rank = probe.rank if isinstance(probe, tensordesc_type) else 0
    desc = _check_descriptor_part(op, 1, rank)
    value = op.operands[1 + 2 * rank]
    if op.name == "descriptor_load":
        _expect_type("the NaN-padding flag", value.type, int1)
        _expect_shaped("the result", op.results[0].type, desc.block)
    else:
        _expect_shaped("the value", value.type, desc.block)
    _expect_types("the offsets", _types(op.operands[2 + 2 * rank:]), [int32] * rank)


def _check_descriptor_rows(op: Operation) -> None:
    """descriptor_gather (nan flag) and _scatter (value): rows `x_offsets` from
    column `y_offset` of a 2-D descriptor whose block is one row."""
    desc = _check_descriptor_part(op, 1, 2)
    if desc.rank != 2 or desc.block.shape[0] != 1:
        _fail(f"gather and scatter take a 2-D descriptor of one-row blocks, got {_t(desc)}")
    x_offsets, y_offset = op.operands[6], op.operands[7]
    if not x_offsets.type.is_block() or len(x_offsets.type.shape) != 1 or x_offsets.type.scalar != int32:
        _fail(f"the row offsets must be a 1-D block of i32, got {_t(x_offsets.type)}")
    _expect_type("the column offset", y_offset.type, int32)
    rows = block_type(desc.element_ty, (x_offsets.type.shape[0], desc.block.shape[1]))
    if op.name == "descriptor_gather":
        _expect_type("the NaN-padding flag", op.operands[5].type, int1)
        _expect_shaped("the result", op.results[0].type, rows)
    else:
        _expect_shaped("the value", op.operands[5].type, rows)


def _check_tma_access(op: Operation) -> None:
    """tma_load (tensor map, offsets, and optionally shape and NaN-padding flag)
    and tma_store (tensor map, value, offsets, and optionally the run-time check
    and the descriptor's base pointer, shape and strides for when it fails)."""
    tensormap = op.operands[0].type
    if not isinstance(tensormap, tensormap_type):
        _fail(f"the first operand must be a tensor map, got {_t(tensormap)}")
    rank = tensormap.rank
    first = 1 if op.name == "tma_load" else 2
    counts = (first + rank, first + 2 * rank + 1) if op.name == "tma_load" else (first + rank, first + 3 * rank + 2)
    if len(op.operands) not in counts:
        _fail(f"a rank-{rank} tensor map takes {' or '.join(map(str, counts))} operands here, "
              f"got {len(op.operands)}")
    if op.name == "tma_load":
        _expect_shaped("the result", op.results[0].type, tensormap.block)
    else:
        _expect_shaped("the value", op.operands[1].type, tensormap.block)
    _expect_types("the offsets", _types(op.operands[first:first + rank]), [int32] * rank)
    if len(op.operands) > first + rank and op.name == "tma_load":
        _expect_types("the shape", _types(op.operands[first + rank:first + 2 * rank]), [int32] * rank)
        _expect_type("the NaN-padding flag", op.operands[-1].type, int1)
    elif len(op.operands) > first + rank:
        _expect_type("the check", op.operands[first + rank].type, int1)
        _expect_types("the shape", _types(op.operands[first + rank + 2:first + 2 * rank + 2]), [int32] * rank)


def _yield_types(region: Region) -> list[dtype]:
    return _types(region.ops[-1].operands)


def _check_combine_region(op: Operation) -> None:
    elements = [t.scalar for t in _types(op.operands)]
    region = op.regions[0]
    _expect_types("the combine region's argument types", _types(region.args), elements + elements)
    _expect_types("the combine region's yielded types", _yield_types(region), elements)


def _check_reduce_scan(op: Operation) -> None:
    inputs = _types(op.operands)
    shape = _shape(inputs[0])
    if not shape or any(_shape(t) != shape for t in inputs):
        _fail(f"inputs must be blocks of one shape, got {_fmt(inputs)}")
    axis = op.attrs["axis"]
    if not 0 <= axis < len(shape):
        _fail(f"axis {axis} out of range for shape {list(shape)}")
    _expect_one_layout("inputs", inputs)
    if op.name == "reduce":
        reduced = shape[:axis] + shape[axis + 1:]
        sliced = _slice_layout(axis, _layout(inputs[0])) if reduced else None
        for i, (result, input_type) in enumerate(zip(op.results, inputs)):
            _expect_shaped(f"result {i}", result.type, _shaped(input_type.scalar, reduced))
            _expect_layout(f"result {i}", result.type, sliced)
    else:
        _expect_types("the result types", _types(op.results), inputs)
    _check_combine_region(op)


def _check_map_elementwise(op: Operation) -> None:
    inputs = _types(op.operands)
    shape = _shape(inputs[0])
    if not shape or any(_shape(t) != shape for t in inputs):
        _fail(f"inputs must be blocks of one shape, got {_fmt(inputs)}")
    pack = op.attrs["pack"]
    if pack < 1:
        _fail(f"pack must be at least 1, got {pack}")
    region = op.regions[0]
    _expect_types("the body's argument types", _types(region.args), [t.scalar for t in inputs for _ in range(pack)])
    yielded = _yield_types(region)
    scalars = [r.scalar for r in _types(op.results)]
    _expect_types("the body's yielded types", yielded, [s for s in scalars for _ in range(pack)])
    _expect_types("the result types", _types(op.results), [_shaped(s, shape) for s in scalars])


def _check_dot(op: Operation) -> None:
    a, b, acc = _types(op.operands)
    if not (a.is_block() and b.is_block() and acc.is_block()) or not len(a.shape) == len(b.shape) == len(acc.shape):
        _fail(f"dot needs blocks of equal rank, got {_t(a)}, {_t(b)}, {_t(acc)}")
    if len(a.shape) not in (2, 3):
        _fail(f"dot needs 2-D or 3-D blocks, got {_t(a)}")
    *batch, m, k = a.shape
    *batch_b, k2, n = b.shape
    if k != k2 or batch != batch_b or tuple(acc.shape) != (*batch, m, n):
        _fail(f"shapes do not multiply: {list(a.shape)} x {list(b.shape)} + {list(acc.shape)}")
    _expect_shaped("the result", op.results[0].type, acc)


def _check_for(op: Operation) -> None:
    lb, ub, step, *inits = _types(op.operands)
    if not lb == ub == step or lb.is_block() or not lb.scalar.is_int():
        _fail(f"bounds and step must be one scalar integer type, got {_t(lb)}, {_t(ub)}, {_t(step)}")
    body = op.regions[0]
    _expect_types("the body's argument types", _types(body.args), [lb] + inits)
    _expect_types("the body's yielded types", _yield_types(body), inits)
    _expect_types("the result types", _types(op.results), inits)


def _check_while(op: Operation) -> None:
    inits = _types(op.operands)
    before, after = op.regions
    _expect_types("the `before` region's argument types", _types(before.args), inits)
    cond, *passed = _types(before.ops[-1].operands)
    _expect_type("the condition", cond, int1)
    _expect_types("the `after` region's argument types", _types(after.args), passed)
    _expect_types("the result types", _types(op.results), passed)
    _expect_types("the `after` region's yielded types", _yield_types(after), inits)


def _check_if(op: Operation) -> None:
    _expect_type("the condition", op.operands[0].type, int1)
    results = _types(op.results)
    for name, region in zip(("then", "else"), op.regions):
        if region.args:
            _fail(f"the `{name}` region must not have arguments")
        _expect_types(f"the `{name}` region's yielded types", _yield_types(region), results)


def _check_hint(op: Operation) -> None:
    x = op.operands[0].type
    _expect_type("the result", op.results[0].type, x)
    values = op.attrs["values"]
    if x.is_block() and len(values) != len(x.shape):
        _fail(f"{len(values)} hint values for the {len(x.shape)} dims of {_t(x)}")


def _check_extern(op: Operation) -> None:
    blocks = [t for t in _types(op.operands) + _types(op.results) if t.is_block()]
    if len({t.shape for t in blocks}) > 1:
        _fail(f"block operands and result of different shapes {_fmt(_types(op.operands))} -> {_t(op.results[0].type)}")


def _check_inline_asm(op: Operation) -> None:
    operands, results = _types(op.operands), _types(op.results)
    if not results:
        _fail("inline_asm needs at least one result")
    pack = op.attrs["pack"]
    if pack < 1:
        _fail(f"pack must be at least 1, got {pack}")
    shapes = {_shape(t) for t in operands + results}
    if len(shapes) > 1:
        _fail(f"operands and results of different shapes {_fmt(operands)} -> {_fmt(results)}")
    try:
        check_constraints(op.attrs["constraints"], operands, results, pack)
    except ValueError as error:
        _fail(str(error))


def _check_convert_layout(op: Operation) -> None:
    x, r = op.operands[0].type, op.results[0].type
    if not x.is_block() or _layout(r) is None:
        _fail(f"convert_layout takes a block to a block with a layout, got {_t(x)} -> {_t(r)}")
    _expect_shaped("the result", r, x)


_SPECIAL_RESULTS = {"globaltimer": [int64], "smid": [int32], "gdc_wait": [], "gdc_launch_dependents": []}


def _check_special(op: Operation) -> None:
    _expect_types("the results", _types(op.results), _SPECIAL_RESULTS[op.attrs["name"]])


def _check_scalar_condition(op: Operation) -> None:
    _expect_type("the condition", op.operands[0].type, int1)


def _check_assert(op: Operation) -> None:
    cond = op.operands[0].type
    if cond.scalar != int1:
        _fail(f"the condition must be i1, got {_t(cond)}")


_TYPE_RULES: dict[str, Callable[[Operation], None]] = {
    **{name: _check_binary for name in BINARY_OPS},
    **{name: _check_unary_math for name in FLOAT_MATH_OPS + ("abs",)},
    "fma": _check_fma,
    "cmp": _check_cmp,
    "select": _check_select,
    "addptr": _check_addptr,
    "constant": _check_constant,
    "program_id": _check_i32_result,
    "num_programs": _check_i32_result,
    "arange": _check_arange,
    "splat": _check_splat,
    "broadcast": _check_broadcast,
    "expand_dims": _check_expand_dims,
    "reshape": _check_reshape,
    "permute": _check_permute,
    "join": _check_join,
    "split": _check_split,
    "cat": _check_cat,
    "gather": _check_gather,
    "histogram": _check_histogram,
    "cast": _check_cast,
    "bitcast": _check_cast,
    "load": _check_load,
    "store": _check_store,
    "atomic_rmw": _check_atomic_rmw,
    "atomic_cas": _check_atomic_cas,
    "make_tensor_descriptor": _check_make_tensor_descriptor,
    "descriptor_load": _check_descriptor_access,
    "descriptor_store": _check_descriptor_access,
    "descriptor_atomic": _check_descriptor_access,
    "descriptor_gather": _check_descriptor_rows,
    "descriptor_scatter": _check_descriptor_rows,
    "tma_load": _check_tma_access,
    "tensormap_create": _check_tensormap_create,
    "tma_store": _check_tma_access,
    "reduce": _check_reduce_scan,
    "scan": _check_reduce_scan,
    "dot": _check_dot,
    "map_elementwise": _check_map_elementwise,
    "for": _check_for,
    "while": _check_while,
    "if": _check_if,
    "hint": _check_hint,
    "assume": _check_scalar_condition,
    "assert": _check_assert,
    "extern": _check_extern,
    "inline_asm": _check_inline_asm,
    "convert_layout": _check_convert_layout,
    "special": _check_special,
}


class _Verifier:
    def __init__(self, module: Module | None, fn: Function):
        self.module = module
        self.fn = fn
        # Values visible at the current point: defined earlier in this region or
        # an enclosing one. Values of a region are dropped when it is left.
        self.visible: set[Value] = set()
        self.defined: set[Value] = set()
        self.seen_ops: set[Operation] = set()

    def error(self, op: Operation | None, message: str) -> IRVerificationError:
        where = f"in function @{self.fn.name}"
        if op is None:
            return IRVerificationError(f"IR verification failed {where}: {message}")
        text = print_op(op, regions=False)
        return IRVerificationError(f"IR verification failed {where}: {message}\n  {text}")

    def define(self, value: Value, op: Operation | None, region_values: list[Value]) -> None:
        if value in self.defined:
            raise self.error(op, "defines a value that is already defined (an op or region used twice?)")
        self.defined.add(value)
        self.visible.add(value)
        region_values.append(value)

    def function(self) -> None:
        fn = self.fn
        if fn.body.parent is not fn:
            raise self.error(None, "the function body's parent is not the function")
        ops = fn.body.ops
        if not ops or ops[-1].name != "return":
            raise self.error(ops[-1] if ops else None, "the function body must end with `return`")
        self.region(fn.body, fn, "return")

    def region(self, region: Region, owner: Operation | Function, terminator: str) -> None:
        region_values: list[Value] = []
        for arg in region.args:
            if arg.owner is not region:
                raise self.error(owner if isinstance(owner, Operation) else None,
                                 f"region argument {arg.index} does not belong to its region")
            self.define(arg, None, region_values)
        for index, op in enumerate(region.ops):
            if op.parent is not region:
                raise self.error(op, "the op's parent is not the region that holds it")
            if op in self.seen_ops:
                raise self.error(op, "the op appears twice in the IR")
            self.seen_ops.add(op)
            last = index == len(region.ops) - 1
            try:
                self.op(op, region, owner, terminator if last else None)
            except _Failure as failure:
                raise self.error(op, str(failure)) from None
            for result in op.results:
                self.define(result, op, region_values)
        if not region.ops or region.ops[-1].name != terminator:
            anchor = owner if isinstance(owner, Operation) else None
            raise self.error(anchor, f"a region must end with `{terminator}`")
        for value in region_values:
            self.visible.discard(value)

    def op(self, op: Operation, region: Region, owner: Operation | Function, terminator: str | None) -> None:
        spec = OP_SPECS.get(op.name)
        if spec is None:
            _fail(f"unknown op `{op.name}`")
        for i, value in enumerate(op.operands):
            if value not in self.visible:
                _fail(f"operand {i} is not defined before this op in its region or an enclosing one")
        count = len(op.operands)
        if count < spec.min_operands or (spec.max_operands is not None and count > spec.max_operands):
            if spec.max_operands == spec.min_operands:
                expected_text = str(spec.min_operands)
            elif spec.max_operands is None:
                expected_text = f"at least {spec.min_operands}"
            else:
                expected_text = f"{spec.min_operands} to {spec.max_operands}"
            _fail(f"has {count} operands, expected {expected_text}")
        expected = spec.expected_results(count)
        if expected is not None and len(op.results) != expected:
            _fail(f"has {len(op.results)} results, expected {expected}")
        for i, result in enumerate(op.results):
            if result.owner is not op or result.index != i:
                _fail(f"result {i} does not belong to the op")
        for key, attr in spec.attrs.items():
            if key not in op.attrs:
                if attr.required:
                    _fail(f"missing attribute `{key}`")
            elif not attr.accepts(op.attrs[key]):
                allowed = f" (one of {list(attr.allowed)})" if attr.allowed is not None else ""
                _fail(f"attribute `{key}` has a bad value {op.attrs[key]!r}{allowed}")
        if spec.terminator:
            self.check_terminator(op, owner, region, terminator)
        if len(op.regions) != len(spec.regions):
            _fail(f"has {len(op.regions)} regions, expected {len(spec.regions)}")
        for inner, inner_spec in zip(op.regions, spec.regions):
            if inner.parent is not op:
                _fail(f"the `{inner_spec.name}` region's parent is not the op")
            self.region(inner, op, inner_spec.terminator)
        rule = _TYPE_RULES.get(op.name)
        if rule is not None:
            rule(op)
        if spec.layout == SAME_LAYOUT:
            _expect_one_layout("block operands and results", _types(op.operands) + _types(op.results))
        if op.name == "call":
            self.check_call(op)

    def check_terminator(self, op: Operation, owner: Operation | Function, region: Region,
                         terminator: str | None) -> None:
        if terminator is None:
            _fail(f"`{op.name}` must be the last op of its region")
        if terminator != op.name:
            _fail(f"`{op.name}` cannot end this region, which must end with `{terminator}`")
        if op.name == "return":
            _expect_types("the returned types", _types(op.operands), list(self.fn.result_types))
        elif op.name == "condition":
            if not (isinstance(owner, Operation) and owner.name == "while" and owner.regions[0] is region):
                _fail("`condition` ends only the `before` region of a `while`")
        elif not (isinstance(owner, Operation) and owner.name in YIELD_PARENTS):
            _fail("`yield` must end a region of for / if / while / reduce / scan")

    def check_call(self, op: Operation) -> None:
        name = op.attrs["callee"]
        callee = self.module.functions.get(name) if self.module is not None else None
        if callee is None:
            _fail(f"calls @{name}, which the module does not define")
        _expect_types("the argument types", _types(op.operands), callee.arg_types)
        _expect_types("the result types", _types(op.results), list(callee.result_types))


def verify_function(fn: Function, module: Module | None = None) -> None:
    """Checks one function (calls are checked against `module`'s functions)."""
    _Verifier(module, fn).function()


def verify(module: Module) -> None:
    """Checks every function of `module`; raises IRVerificationError at the first problem."""
    if module.entry not in module.functions:
        raise IRVerificationError(f"IR verification failed: the entry function @{module.entry} is not defined")
    for name, fn in module.functions.items():
        if fn.name != name:
            raise IRVerificationError(f"IR verification failed: function @{fn.name} is registered as @{name}")
        verify_function(fn, module)
