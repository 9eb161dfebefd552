"""`dot`, reductions and scans, math functions, libdevice calls, hints and
debugging ops (SEMANTICS 5, 6, 7).

A mixin of `Semantic` (semantic.py).
"""

from __future__ import annotations

import warnings
from typing import Sequence

from ..ir.core import Operation, Region
from ..ir.inline_asm import check_constraints
from ..ir.target import DOT_INPUT_PRECISIONS
from ..ir.types import block_type, dtype, type_text
from . import core as tl
from .core import dtype_name, tensor

# Precisions of fp32 dots that become several bf16 dots here (so no backend sees them).
BF16_SPLIT_PRECISIONS = ("bf16x3", "bf16x6")
_DOT_OPERAND_TYPES = ("i8", "u8", "fp16", "bf16", "fp32", "fp64")


class ComputeSemantic:
    """Dot, reduce/scan, math and debugging ops of `Semantic`."""

    # -- dot ----------------------------------------------------------------------
    def dot_input_precision(self, input_precision: str | None, allow_tf32: bool | None) -> str:
        """The `input_precision` a `tl.dot` call uses: the argument, else the
        `fp32_default` option, else tf32 unless `allow_tf32=False`; it must be one
        of the `allowed_dot_input_precisions` option (all of tf32, tf32x3, ieee,
        bf16x3, bf16x6 by default)."""
        if input_precision is not None and allow_tf32 is not None:
            raise AssertionError("Only one of input_precision and allow_tf32 can be specified")
        if input_precision is None:
            input_precision = self.fp32_default or ("ieee" if allow_tf32 is False else "tf32")
        allowed = tuple(self.options.get("allowed_dot_input_precisions", DOT_INPUT_PRECISIONS))
        if input_precision.lower() not in allowed:
            raise AssertionError(f"input_precision must be one of {allowed}. Got {input_precision}")
        return input_precision.lower()

    def dot(self, lhs: tensor, rhs: tensor, acc: tensor | None, input_precision: str,
            max_num_imprecise_acc: int | None, out_dtype: dtype) -> tensor:
        """`acc + lhs @ rhs` for 2-D or 3-D (batched) blocks (SEMANTICS 6)."""
        if not lhs.type.is_block() or not rhs.type.is_block():
            raise AssertionError("dot operands must be blocks")
        lhs_ty, rhs_ty = lhs.dtype, rhs.dtype
        if not (lhs_ty.is_fp8() and rhs_ty.is_fp8()):
            if type_text(lhs_ty) not in _DOT_OPERAND_TYPES:
                raise AssertionError(f"Unsupported lhs dtype {dtype_name(lhs_ty)}")
            if type_text(rhs_ty) not in _DOT_OPERAND_TYPES:
                raise AssertionError(f"Unsupported rhs dtype {dtype_name(rhs_ty)}")
            if lhs_ty != rhs_ty:
                raise AssertionError(f"Both operands must be same dtype. Got {dtype_name(lhs_ty)} and "
                                     f"{dtype_name(rhs_ty)}")
        if lhs_ty.is_fp8e4b15() or rhs_ty.is_fp8e4b15():
            deprecated = self.options.get("deprecated_fp8_dot_operand_dtypes")
            if deprecated is None:
                deprecated = ("fp8e4b15",) if (self.target_capability or 0) >= 90 else ()
            if "fp8e4b15" in deprecated:
                # Triton's warning, in its words (sm_90 and newer)
                warnings.warn("the use of fp8e4b15 is deprecated on Hopper and later architectures and can cause "
                              "significant slow down. It will be removed in a future triton release", stacklevel=2)
            lhs = self.cast(lhs, tl.float16)
            rhs = self.cast(rhs, tl.float16)

        lhs_shape, rhs_shape = lhs.type.shape, rhs.type.shape
        rank = len(lhs_shape)
        if not (rank == len(rhs_shape) and rank in (2, 3)):
            raise AssertionError(f"Both inputs must be either 2D or 3D; (lhs: {list(lhs_shape)} vs rhs: "
                                 f"{list(rhs_shape)})")
        if lhs_shape[-1] != rhs_shape[-2]:
            raise AssertionError(f"First input shape ({list(lhs_shape)}) and second input shape {list(rhs_shape)} "
                                 "are not compatible for matmul (second index of first shape "
                                 f"({lhs_shape[-1]}) must be equal to first index of second shape ({rhs_shape[-2]})")
        if self.target_capability is not None:
            # NVIDIA's minimum (mma tiles); the interpreter has none
            min_k = 32 if lhs.dtype.primitive_bitwidth == 8 else 16
            if lhs_shape[-1] < min_k:
                raise AssertionError(f"Input shapes should have M >= 1, N >= 1 and K >= {min_k}")

        operand_ty = lhs.dtype
        if operand_ty.is_int():
            if operand_ty != tl.int8:
                raise AssertionError("only int8 supported!")
            ret_scalar = tl.int32
        elif out_dtype.is_bf16():
            raise ValueError("out_dtype=bfloat16 is unsupported. Please use out_dtype=float32/float16 and cast with "
                             "`.to(tl.bfloat16)`")
        elif operand_ty.is_fp32() or operand_ty.is_bf16():
            ret_scalar = tl.float32
        elif operand_ty.is_fp64():
            ret_scalar = tl.float64
        else:
            ret_scalar = out_dtype
        ret_shape = list(lhs_shape[:-1]) + [rhs_shape[-1]]
        ret_ty = block_type(ret_scalar, ret_shape)
        if acc is None:
            acc = self.block_constant(0, ret_ty)
        elif list(acc.type.shape) != ret_shape or acc.dtype != out_dtype:
            raise AssertionError(f"accumulator must be {dtype_name(out_dtype)}{ret_shape}, got {acc.type}")
        elif acc.dtype != ret_scalar:
            raise AssertionError(f"accumulator of a {dtype_name(operand_ty)} dot must be {dtype_name(ret_scalar)}")

        if input_precision in BF16_SPLIT_PRECISIONS:
            if operand_ty.is_fp32():
                return self._dot_in_bf16_parts(lhs, rhs, acc, input_precision == "bf16x6")
            input_precision = "ieee"  # only fp32 operands are rounded by a precision
        k = lhs_shape[-1]
        if max_num_imprecise_acc is None:
            default = self.options.get("max_num_imprecise_acc_default")
            if default is None:
                default = 2**30 if self.target_capability == 90 else 0
            max_num_imprecise_acc = default if lhs.dtype.is_fp8() and rhs.dtype.is_fp8() else 0
        elif lhs.dtype.is_fp8() and rhs.dtype.is_fp8() and max_num_imprecise_acc > k:
            raise ValueError(f"max_num_imprecise_acc ({max_num_imprecise_acc}) must be <= K ({k})")
        return self.create("dot", [lhs, rhs, acc], ret_ty, input_precision=input_precision,
                           max_num_imprecise_acc=max_num_imprecise_acc)

    def _bf16_parts(self, x: tensor, count: int) -> list[tensor]:
        """fp32 `x` as `count` bf16 parts, largest first: each part is the rest of
        `x` (after the parts before it) rounded to bf16."""
        parts = []
        rest = x
        for i in range(count):
            part = self.cast(rest, tl.bfloat16)
            parts.append(part)
            if i + 1 < count:
                rest = self.sub(rest, self.cast(part, tl.float32))
        return parts

    def _dot_in_bf16_parts(self, lhs: tensor, rhs: tensor, acc: tensor, six: bool) -> tensor:
        """`acc + lhs @ rhs` for fp32 operands from bf16 dots of their parts with
        fp32 accumulation, as Triton's bf16x3 / bf16x6 precisions compute it:
        x = hi + lo (bf16x3) or hi + mid + lo (bf16x6); the small cross terms
        first, smallest first, then hi@hi. A NaN in the small terms (an infinite
        operand makes `x - hi` NaN) is dropped before hi@hi, which then decides;
        `acc` is added last."""
        count = 3 if six else 2
        a, b = self._bf16_parts(lhs, count), self._bf16_parts(rhs, count)
        if six:
            terms = [(1, 1), (2, 0), (0, 2), (1, 0), (0, 1)]  # mid*mid, lo*hi, hi*lo, mid*hi, hi*mid
        else:
            terms = [(1, 0), (0, 1)]  # lo*hi, hi*lo
        result = self.block_constant(0.0, acc.type)
        for i, j in terms:
            result = self.create("dot", [a[i], b[j], result], acc.type, input_precision="ieee",
                                 max_num_imprecise_acc=0)
        result = self.where(self.not_equal(result, result), self.block_constant(0.0, acc.type), result)
        result = self.create("dot", [a[0], b[0], result], acc.type, input_precision="ieee", max_num_imprecise_acc=0)
        return self.add(result, acc)

    # -- reductions and scans ------------------------------------------------------------
    def reduction(self, inputs: Sequence[tensor], axis: int | None, combine_fn) -> tuple[tensor, ...]:
        """A `reduce` op over `inputs` (same shapes) along `axis` (all axes when None,
        through a reshape to 1-D) whose region calls `combine_fn`."""
        inputs = list(inputs)
        if axis is None:
            inputs = [self.reshape(t, [t.type.numel], can_reorder=True) for t in inputs]
            axis = 0
        shape = inputs[0].type.shape
        rank = len(shape)
        if not 0 <= axis < rank:
            raise AssertionError(f"reduction axis must be < inputs rank ({rank})")
        if any(t.type.shape != shape for t in inputs):
            raise AssertionError("all reduction inputs must have the same shape")
        element_types = [t.dtype for t in inputs]
        ret_shape = [s for i, s in enumerate(shape) if i != axis]
        result_types = [self.shaped(ty, ret_shape) for ty in element_types]
        region = Region(element_types * 2)
        op = self.builder.create("reduce", [t.handle for t in inputs], result_types, {"axis": axis}, [region])
        self.build_combine_region(region, combine_fn, element_types)
        return tuple(tensor(value, ty) for value, ty in zip(op.results, result_types))

    def associative_scan(self, inputs: Sequence[tensor], axis: int, combine_fn, reverse: bool) -> tuple[tensor, ...]:
        """A `scan` op (inclusive prefix, or suffix when `reverse`) along `axis`."""
        inputs = list(inputs)
        shape = inputs[0].type.shape
        rank = len(shape)
        if not -rank <= axis < rank:
            raise AssertionError(f"scan axis {axis} must be < inputs rank ({rank})")
        if axis < 0:
            axis += rank
        if any(t.type.shape != shape for t in inputs):
            raise AssertionError("all scan inputs must have the same shape")
        element_types = [t.dtype for t in inputs]
        result_types = [t.type for t in inputs]
        region = Region(element_types * 2)
        op = self.builder.create("scan", [t.handle for t in inputs], result_types,
                                 {"axis": axis, "reverse": bool(reverse)}, [region])
        self.build_combine_region(region, combine_fn, element_types)
        return tuple(tensor(value, ty) for value, ty in zip(op.results, result_types))

    # -- map_elementwise ------------------------------------------------------------------
    def map_elementwise(self, scalar_fn, args: Sequence, pack: int):
        """A `map_elementwise` op applying the `@jit` `scalar_fn` to every element of
        `args` (broadcast together): its region takes `pack` consecutive elements
        (along the last dim) of each input, `arg i*pack + j` being element j of
        input i, and yields the results the same way, `k*pack + j`. Returns a
        tensor, or a tuple when `scalar_fn` returns one. With only scalar inputs
        it is a call of `scalar_fn`."""
        if not isinstance(pack, int) or isinstance(pack, bool) or pack < 1:
            raise ValueError(f"pack must be a positive int, got {pack!r}")
        inputs = [self.to_tensor(a) for a in args]
        if not inputs:
            raise ValueError("map_elementwise needs at least one input tensor")
        inputs = list(self.broadcast_tensors(*inputs))
        if not inputs[0].type.is_block():
            if pack != 1:
                raise ValueError(f"pack={pack} needs block inputs")
            return self.call_jit_function(scalar_fn, inputs)
        region = Region([t.dtype for t in inputs for _ in range(pack)])
        point = self.builder.insertion_point()
        self.builder.set_insertion_point_to_end(region)
        try:
            returned = self.call_jit_function(scalar_fn, [tensor(arg, arg.type) for arg in region.args])
            single = not isinstance(returned, (tl.tuple, tuple, list))
            results = [self.to_tensor(r) for r in ([returned] if single else list(returned))]
            if any(r.type.is_block() for r in results):
                raise TypeError("a map_elementwise function must return scalars, got "
                                f"{', '.join(str(r.type) for r in results)}")
            if not results or len(results) % pack:
                raise TypeError(f"a map_elementwise function with pack={pack} returns a multiple of {pack} values, "
                                f"got {len(results)}")
            scalars = [results[k * pack].dtype for k in range(len(results) // pack)]
            for index, result in enumerate(results):
                if result.dtype != scalars[index // pack]:
                    raise TypeError(f"value {index} of the map_elementwise function is {result.dtype}, but the "
                                    f"values of one result must share a type ({scalars[index // pack]})")
            self.create_void("yield", results)
        finally:
            self.builder.restore_insertion_point(point)
        shape = inputs[0].type.shape
        result_types = [block_type(ty, shape) for ty in scalars]
        op = self.builder.create("map_elementwise", [t.handle for t in inputs], result_types, {"pack": pack},
                                 [region])
        outputs = [tensor(value, ty) for value, ty in zip(op.results, result_types)]
        return outputs[0] if single and len(outputs) == 1 else tl.tuple(outputs)

    # -- inline_asm_elementwise -----------------------------------------------------------
    def inline_asm(self, asm: str, constraints: str, args: Sequence, dtypes: Sequence[dtype], is_pure: bool,
                   pack: int) -> list[tensor]:
        """An `inline_asm` op running `asm` on `pack` elements at a time of `args`
        (broadcast to one shape; no type promotion), with one result of each of
        `dtypes` in that shape. The constraint string must name exactly the
        registers the arguments and results take (tritone/ir/inline_asm.py)."""
        if not isinstance(asm, str):
            raise TypeError(f"asm must be a string, got {type(asm).__name__}")
        if not isinstance(constraints, str):
            raise TypeError(f"constraints must be a string, got {type(constraints).__name__}")
        if not isinstance(is_pure, bool):
            raise TypeError(f"is_pure must be a bool, got {is_pure!r}")
        if not isinstance(pack, int) or isinstance(pack, bool) or pack < 1:
            raise ValueError(f"pack must be a positive int, got {pack!r}")
        if not dtypes:
            raise ValueError("inline_asm_elementwise needs at least one result dtype")
        for ty in dtypes:
            if not isinstance(ty, dtype):
                raise TypeError(f"dtype must be a triton dtype or a tuple of them, got {ty!r}")
        inputs = list(self.broadcast_tensors(*[self.to_tensor(a) for a in args]))
        shape = inputs[0].type.shape if inputs and inputs[0].type.is_block() else None
        result_types = [block_type(ty, shape) if shape else ty for ty in dtypes]
        check_constraints(constraints, [t.type for t in inputs], result_types, pack)
        op = self.builder.create("inline_asm", [t.handle for t in inputs], result_types,
                                 {"asm": asm, "constraints": constraints, "pure": is_pure, "pack": pack})
        return [tensor(value, ty) for value, ty in zip(op.results, result_types)]

    # -- math -------------------------------------------------------------------------
    def math_unary(self, op: str, x: tensor, allowed: Sequence[str]) -> tensor:
        """An elementwise math op on a float tensor of one of the `allowed` dtypes."""
        check_math_dtype(x, allowed)
        return self.create(op, [x], x.type)

    def abs(self, x: tensor) -> tensor:
        """Floats clear the sign bit, signed ints wrap at INT_MIN, unsigned are unchanged."""
        if x.dtype.is_int_unsigned():
            return x
        if x.dtype.is_floating() or x.dtype.is_int():
            return self.create("abs", [x], x.type)
        raise TypeError(f"Unexpected dtype {dtype_name(x.dtype)}")

    def umulhi(self, x: tensor, y: tensor) -> tensor:
        x, y = self.binary_op_type_checking_impl(x, y)
        check_math_dtype(x, ("int32", "int64", "uint32", "uint64"))
        return self.create("umulhi", [x, y], x.type)

    def fma(self, x: tensor, y: tensor, z: tensor) -> tensor:
        x, y = self.binary_op_type_checking_impl(x, y)
        z, x = self.binary_op_type_checking_impl(z, x)
        z, y = self.binary_op_type_checking_impl(z, y)
        if not x.dtype.is_floating():
            raise TypeError(f"fma needs floating point operands, got {dtype_name(x.dtype)}")
        return self.create("fma", [x, y, z], x.type)

    def div_rn(self, x: tensor, y: tensor) -> tensor:
        x, y = self.binary_op_type_checking_impl(x, y)
        check_math_dtype(x, ("fp32",))
        return self.create("div_rn", [x, y], x.type)

    def extern(self, name: str, args: Sequence, signatures: Sequence[tuple[tuple[dtype, ...], dtype]]) -> tensor:
        """An `extern` op calling the libdevice function `name`: the argument dtypes
        must match one of `signatures` exactly (no promotion); arguments are
        broadcast together."""
        args = [self.to_tensor(a) for a in args]
        arg_types = tuple(a.dtype for a in args)
        for sig_args, _ in signatures:
            if len(sig_args) != len(args):
                raise ValueError(f"length of input args does not match.Expect {len(sig_args)}, got {len(args)}")
        result = next((res for sig_args, res in signatures if sig_args == arg_types), None)
        if result is None:
            expected = [tuple(dtype_name(t) for t in sig) for sig, _ in signatures]
            got = tuple(dtype_name(t) for t in arg_types)
            raise ValueError(f"input arg type does not match.Expect one of {expected}, got {got}")
        args = list(self.broadcast_tensors(*args))
        result_ty = args[0].type.with_element_ty(result) if args and args[0].type.is_block() else result
        return self.create("extern", args, result_ty, name=name)

    # -- hints --------------------------------------------------------------------------
    def hint(self, kind: str, x: tensor, values: Sequence[int]) -> tensor:
        """A `hint` op (multiple_of / max_contiguous / max_constancy) carrying one value per dim.

        Triton puts the hint on the op defining `x`, so it holds for every later
        use of `x`, even when the hinted result is dropped
        (`tl.multiple_of(offsets, 16)` as a statement). Where the hint is made in
        the region that defines `x`, `x` itself is therefore made to stand for
        the hinted value from here on (and is returned); elsewhere (a hint inside
        a loop on a value from before it) a later use outside could not see a
        value defined in the loop, so only the result carries the hint."""
        rank = max(1, len(x.type.shape)) if kind == "multiple_of" else len(x.type.shape)
        if rank != len(values):
            raise ValueError(f"Shape of input to {kind} does not match the length of values")
        hinted = self.create("hint", [x], x.type, kind=kind, values=tuple(int(v) for v in values))
        if _region_of(x.handle) is not None and _region_of(x.handle) is _region_of(hinted.handle):
            x.handle = hinted.handle
            return x
        return hinted

    def assume(self, cond: tensor) -> None:
        cond = self.to_tensor(cond)
        if cond.type.is_block() or not cond.dtype.is_bool():
            raise ValueError(f"assume needs a boolean scalar condition, got {cond.type}")
        self.create_void("assume", [cond])

    # -- hardware registers and launch control ---------------------------------------------
    def special(self, name: str) -> tensor | None:
        """A `special` op: `globaltimer` (i64 nanoseconds), `smid` (i32), or the
        grid-dependency controls `gdc_wait` / `gdc_launch_dependents` (no result)."""
        result_types = {"globaltimer": tl.int64, "smid": tl.int32}
        if name in result_types:
            return self.create("special", [], result_types[name], name=name)
        self.create_void("special", [], name=name)
        return None

    # -- debugging ---------------------------------------------------------------------
    def debug_barrier(self) -> None:
        self.create_void("barrier", [])

    def device_print(self, prefix: str, args: Sequence[tensor], hex: bool) -> None:
        """A `print` op; the prefix is normalised as Triton does (`" prefix: "`)."""
        if args and not prefix.endswith(" "):
            prefix += " "
        if args and not prefix.endswith(": "):
            prefix = prefix[:-1] + ": "
        if len(prefix) > 2 and not prefix.startswith(" "):
            prefix = " " + prefix
        self.create_void("print", list(args), prefix=prefix, hex=bool(hex))

    def device_assert(self, cond: tensor, msg: str, mask: tensor | None) -> None:
        """An `assert` op, only in debug mode (as Triton drops them otherwise)."""
        if not self.debug:
            return
        if mask is not None:
            cond = self.or_(cond, self.not_(mask))
        self.create_void("assert", [cond], msg=msg)


def check_math_dtype(x: tensor, allowed: Sequence[str]) -> None:
    """Math functions accept only some dtypes, with no implicit conversion (SEMANTICS 7.1).
    `allowed` uses Triton's dtype names (`fp32`, `int32`)."""
    name = dtype_name(x.dtype)
    if name not in allowed:
        raise ValueError(f"Expected dtype {list(allowed)} but got {name}")


def _region_of(value) -> Region | None:
    """The region whose block defines `value` (an op's result or a block argument)."""
    owner = value.owner
    if isinstance(owner, Region):
        return owner
    return owner.parent if isinstance(owner, Operation) else None
