"""Tensor descriptors as pointer code, for targets without TMA.

Every descriptor op (docs/IR.md "Tensor descriptors") becomes ordinary IR:
the addresses of the block's elements,

    base + sum_d index_d * strides[d],   index_d = offsets[d] + arange(0, block_shape[d]),

the mask `0 <= index_d < shape[d]` of every dim, and a masked `load` (the
padding, 0 or NaN, as `other`), `store` or `atomic_rmw`. A descriptor value
becomes its tensor's base pointer: `make_tensor_descriptor` is replaced by
its base, and every value of a descriptor type (kernel arguments of host
descriptors, loop-carried values, `if` results) is retyped to the base's
pointer type, which needs no change to the control flow since each access
takes the shape, strides and padding as operands of its own.

The last stride is 1 by construction (the frontend requires the constant 1,
a host `TensorDescriptor` checks it), so the last dim's index is used as
is, which keeps the last dim contiguous for the axis analysis; a host
descriptor's base is 16-byte aligned (checked on the host), which its kernel
argument's divisibility attribute records, and a device descriptor's base and
leading strides get `multiple_of` hints saying what `make_tensor_descriptor`
requires of them. Indices are 32-bit as TMA's
coordinates are; their products with the strides are 64-bit.

The CUDA backend runs this pass first; a Hopper lowering to TMA would run
instead of it on sm_90+.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir.core import Builder, Function, Module, Operation, Region, Value, replace_all_uses
from ..ir.ops import DESCRIPTOR_OPS
from ..ir.types import block_type, dtype, int1, int32, int64, tensordesc_type
from . import dce

if TYPE_CHECKING:
    from . import PassContext


def run(module: Module, ctx: PassContext) -> None:
    """Rewrite every descriptor op of `module` as pointer code."""
    changed = False
    for fn in module.functions.values():
        changed |= _lower_function(fn)
    if changed:
        dce.run(module, ctx)


def _lower_function(fn: Function) -> bool:
    ops = [op for op in fn.walk() if op.name in DESCRIPTOR_OPS]
    if not ops and not any(isinstance(a.type, tensordesc_type) for a in fn.args):
        return False
    _mark_host_descriptors_aligned(fn)
    accesses = [(op, op.operands[0].type) for op in ops if op.name != "make_tensor_descriptor"]
    for op in ops:
        if op.name == "make_tensor_descriptor":
            _hint_device_descriptor_aligned(op, [access for access, _ in accesses])
            replace_all_uses(fn, op.results[0], op.operands[0])
            _erase(op)
    _retype_descriptors(fn)
    for op, desc_type in accesses:
        builder = Builder()
        builder.set_insertion_point(op.parent, op.parent.ops.index(op))
        builder.loc = op.loc
        _LOWERINGS[op.name](_Emitter(builder), op, desc_type)
        _erase(op)
    return True


def _erase(op: Operation) -> None:
    op.parent.ops.remove(op)


def _mark_host_descriptors_aligned(fn: Function) -> None:
    """Record what a host `TensorDescriptor` guarantees of the kernel arguments
    it is passed as (`tensordesc_type.argument_types`): a 16-byte aligned base,
    and strides but the last that are multiples of 16 bytes."""
    if not fn.attrs.get("kernel"):
        return
    attrs = dict(fn.attrs.get("arg_attrs") or {})
    for index, arg in enumerate(fn.args):
        ty = arg.type
        if not isinstance(ty, tensordesc_type):
            continue
        attrs[index] = {**attrs.get(index, {}), "divisibility": 16}
        elements = 16 // ty.element_ty.itemsize
        for stride in range(index + 1 + ty.rank, index + 2 * ty.rank):
            if elements > 1:
                attrs[stride] = {**attrs.get(stride, {}), "divisibility": elements}
    if attrs:
        fn.attrs["arg_attrs"] = attrs


def _hint_device_descriptor_aligned(make: Operation, accesses: list[Operation]) -> None:
    """What `tl.make_tensor_descriptor` requires of its arguments (a 16-byte aligned
    base, strides but the last that are multiples of 16 bytes; the interpreter checks
    it, TMA faults without it) as `multiple_of` hints on the base and the strides
    that the accesses of this descriptor read, so that their blocks copy as 16-byte
    vectors and pipeline. Other uses of those values do not see the hints."""
    desc = make.results[0]
    users = [op for op in accesses if op.operands[0] is desc]
    if not users:
        return
    rank = desc.type.rank
    builder = Builder()
    builder.set_insertion_point(make.parent, make.parent.ops.index(make))
    builder.loc = make.loc

    def hint(value: Value, multiple: int) -> Value:
        return builder.create_value("hint", [value], value.type, {"kind": "multiple_of", "values": (multiple,)})

    base = hint(make.operands[0], 16)
    elements = 16 // desc.type.element_ty.itemsize
    strides = {}
    if elements > 1:
        strides = {1 + rank + d: hint(make.operands[1 + rank + d], elements) for d in range(rank - 1)}
    for op in users:
        op.operands[0] = base
        for index, hinted in strides.items():
            if op.operands[index] is make.operands[index]:
                op.operands[index] = hinted


def _retype(value: Value) -> None:
    if isinstance(value.type, tensordesc_type):
        value.type = value.type.base_ty


def _retype_region(region: Region) -> None:
    for arg in region.args:
        _retype(arg)
    for op in region.ops:
        for result in op.results:
            _retype(result)
        for inner in op.regions:
            _retype_region(inner)


def _retype_descriptors(fn: Function) -> None:
    """Every value of a descriptor type becomes a value of its base pointer type."""
    _retype_region(fn.body)
    fn.result_types = [t.base_ty if isinstance(t, tensordesc_type) else t for t in fn.result_types]


class _Emitter:
    """Creates the ops of one lowering before the descriptor op, at its location."""

    def __init__(self, builder: Builder):
        self.builder = builder

    def op(self, name: str, operands: list[Value], ty: dtype, **attrs) -> Value:
        return self.builder.create_value(name, operands, ty, attrs)

    def void(self, name: str, operands: list[Value], **attrs) -> None:
        self.builder.create(name, operands, [], attrs)

    def constant(self, value, ty: dtype) -> Value:
        return self.op("constant", [], ty, value=value)

    def splat(self, scalar: Value, shape: tuple[int, ...]) -> Value:
        return self.op("splat", [scalar], block_type(scalar.type, shape))

    def arange(self, size: int) -> Value:
        return self.op("arange", [], block_type(int32, (size,)), start=0, end=size)

    def place(self, vector: Value, dim: int, shape: tuple[int, ...]) -> Value:
        """The 1-D block `vector` as dim `dim` of a block of `shape` (other dims broadcast)."""
        for axis in range(len(shape)):
            if axis != dim:
                current = vector.type.shape
                grown = current[:axis] + (1,) + current[axis:]
                vector = self.op("expand_dims", [vector], block_type(vector.type.element_ty, grown), axis=axis)
        if vector.type.shape != shape:
            vector = self.op("broadcast", [vector], block_type(vector.type.element_ty, shape))
        return vector

    def binary(self, name: str, a: Value, b: Value) -> Value:
        return self.op(name, [a, b], a.type)

    def inside(self, index: Value, size: Value) -> Value:
        """`0 <= index < size` for a 1-D i32 block and an i32 scalar."""
        shape = index.type.shape
        result = block_type(int1, shape)
        above = self.op("cmp", [index, self.constant(0, block_type(int32, shape))], result, pred="ge")
        below = self.op("cmp", [index, self.splat(size, shape)], result, pred="lt")
        return self.binary("and", above, below)

    def addresses(self, base: Value, shape: list[Value], strides: list[Value], indices: list[Value],
                  block: tuple[int, ...]) -> tuple[Value, Value]:
        """(the block of pointers of the elements at `indices`, their in-bounds mask)
        for 1-D i32 index blocks placed at dims `0..rank-1` of `block`; the
        last stride is 1 (see the module docstring)."""
        rank = len(block)
        offsets = None
        mask = None
        for dim in range(rank):
            index = indices[dim]
            in_bounds = self.place(self.inside(index, shape[dim]), dim, block)
            mask = in_bounds if mask is None else self.binary("and", mask, in_bounds)
            if dim == rank - 1:
                term = self.place(self.op("cast", [index], block_type(int64, index.type.shape)), dim, block)
            else:
                wide = self.op("cast", [index], block_type(int64, index.type.shape))
                term = self.place(self.binary("mul", wide, self.splat(strides[dim], index.type.shape)), dim, block)
            offsets = term if offsets is None else self.binary("add", offsets, term)
        pointers = self.op("addptr", [self.splat(base, block), offsets], block_type(base.type, block))
        return pointers, mask

    def block_indices(self, offsets: list[Value], block: tuple[int, ...]) -> list[Value]:
        """`offsets[d] + arange(0, block[d])` for each dim, as 1-D i32 blocks."""
        return [self.binary("add", self.splat(offset, (size,)), self.arange(size))
                for offset, size in zip(offsets, block)]

    def padding(self, nan_padding: Value, ty: block_type) -> Value:
        """The block a load gives outside the tensor: 0, or NaN where `nan_padding` holds."""
        zero = self.constant(0.0 if ty.element_ty.is_floating() else 0, ty)
        if not ty.element_ty.is_floating():
            return zero
        flag = nan_padding.defining_op
        if flag is not None and flag.name == "constant":
            return self.constant(float("nan"), ty) if flag.attrs["value"] else zero
        nan = self.constant(float("nan"), ty)
        return self.op("select", [self.splat(nan_padding, ty.shape), nan, zero], ty)


def _parts(op: Operation, desc_type: tensordesc_type, extra: int) -> tuple:
    """(base, shape, strides, the `extra` operands after them, the rest) of a
    descriptor op whose descriptor (of `desc_type`) is now its base pointer."""
    rank = desc_type.rank
    operands = op.operands
    return (operands[0], operands[1:1 + rank], operands[1 + rank:1 + 2 * rank],
            operands[1 + 2 * rank:1 + 2 * rank + extra], operands[1 + 2 * rank + extra:])


def _lower_load(em: _Emitter, op: Operation, desc_type: tensordesc_type) -> None:
    base, shape, strides, (nan_padding,), offsets = _parts(op, desc_type, 1)
    block = desc_type.block.shape
    pointers, mask = em.addresses(base, shape, strides, em.block_indices(offsets, block), block)
    result = op.results[0]
    loaded = em.op("load", [pointers, mask, em.padding(nan_padding, result.type)], result.type,
                   cache=op.attrs.get("cache", ""), evict=op.attrs.get("evict", ""), volatile=False)
    replace_all_uses(op.parent, result, loaded)


def _lower_store(em: _Emitter, op: Operation, desc_type: tensordesc_type) -> None:
    base, shape, strides, (value,), offsets = _parts(op, desc_type, 1)
    block = desc_type.block.shape
    pointers, mask = em.addresses(base, shape, strides, em.block_indices(offsets, block), block)
    if op.name == "descriptor_store":
        em.void("store", [pointers, value, mask], cache="", evict="")
    else:
        # TMA reductions order nothing; neither do these.
        em.op("atomic_rmw", [pointers, value, mask], value.type, kind=op.attrs["kind"], sem="relaxed", scope="gpu")


def _row_indices(em: _Emitter, x_offsets: Value, y_offset: Value, columns: int) -> list[Value]:
    return [x_offsets, em.binary("add", em.splat(y_offset, (columns,)), em.arange(columns))]


def _lower_gather(em: _Emitter, op: Operation, desc_type: tensordesc_type) -> None:
    base, shape, strides, (nan_padding,), (x_offsets, y_offset) = _parts(op, desc_type, 1)
    result = op.results[0]
    block = result.type.shape
    pointers, mask = em.addresses(base, shape, strides, _row_indices(em, x_offsets, y_offset, block[1]), block)
    loaded = em.op("load", [pointers, mask, em.padding(nan_padding, result.type)], result.type, cache="", evict="",
                   volatile=False)
    replace_all_uses(op.parent, result, loaded)


def _lower_scatter(em: _Emitter, op: Operation, desc_type: tensordesc_type) -> None:
    base, shape, strides, (value,), (x_offsets, y_offset) = _parts(op, desc_type, 1)
    block = value.type.shape
    pointers, mask = em.addresses(base, shape, strides, _row_indices(em, x_offsets, y_offset, block[1]), block)
    em.void("store", [pointers, value, mask], cache="", evict="")


_LOWERINGS = {
    "descriptor_load": _lower_load,
    "descriptor_store": _lower_store,
    "descriptor_atomic": _lower_store,
    "descriptor_gather": _lower_gather,
    "descriptor_scatter": _lower_scatter,
}
