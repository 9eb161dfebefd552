"""Statements that open regions: `if`, ternaries, `for`, `while`, and `return`.

Rules (TRITON_SEMANTICS 10, compiled mode):

- A compile-time condition picks a branch; the other is not even visited.
- A run-time `if` becomes an `if` op. Names reassigned in a branch, or
  defined in both, become its results (their types must agree); a name
  defined in one branch only is not visible after it.
- `range`/`tl.range` loops become `for` ops and `while` loops `while` ops.
  Which variables a loop carries is found by a dry run of its body in a
  scratch region: the names live before the loop whose value the body
  changes. Their types must not change; constexprs cannot be reassigned.
- `tl.static_range` loops are unrolled with a constexpr loop variable.
- `return` ends a block. An `if` that contains a `return` (outside run-time
  loops) is lowered structurally: the statements after it are visited as the
  tail of both branches, so the `if` op's results are the function's return
  values and the function still has one `return` at its end. A
  `tl.static_range` loop may contain a `return` too, as in Triton: its
  iterations are unrolled as a chain of tails, each iteration followed by the
  next and the last by the statements after the loop. A path that falls off
  the end of a function returning a value on another path returns zeros
  (Triton returns poison there).
"""

from __future__ import annotations

import ast
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..ir.core import Region, Value
from ..language.core import constexpr, tensor
from ..language.core import tuple as tl_tuple
from .scope import language_attr
from .values import (
    describe_slot,
    describe_type,
    describe_value,
    detached_scope,
    has_tensor,
    leaves,
    rebuild,
    same_value,
    slot_of,
    slot_types,
    tuple_like,
    unwrap,
)

_CONDITION_TYPES = (bool, int, type(None))
# The code that follows a block in program order, visited where the block falls through.
Tail = Callable[[], "Returned | None"]
# What `_visit_statements` gives when the statements reach their end.
_FELL_THROUGH = object()
_RETURN_IN_LOOP = "Cannot have `return` statements inside `while` or `for` statements in triton."


@dataclass(frozen=True)
class LoopHeader:
    """A `for` loop's iterator, evaluated: the bounds, whether it is a
    `tl.static_range` (unrolled), and the attributes of a `for` op."""

    lb: Any
    ub: Any
    step: Any
    static: bool
    attrs: dict[str, Any]


@dataclass(frozen=True)
class Returned:
    """A block ended in `return value` (None: a bare `return` or the end of the function)."""

    value: Any
    node: ast.AST


def _contains_return(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


def _arg_names(names: list[str], values: list[Any]) -> list[str]:
    """Name hints of the region arguments carrying `names` (tuples: `name_0`, ...)."""
    hints = []
    for name, value in zip(names, values):
        count = len(leaves(value))
        hints.extend([name] if isinstance(value, tensor) else [f"{name}_{i}" for i in range(count)])
    return hints


def _range_args(arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False, disable_licm=False):
    return dict(locals())


def _builtin_range_args(arg1, arg2=None, step=None, /):
    return dict(locals())


def _static_range_args(arg1, arg2=None, step=None):
    return dict(locals())


class ControlFlowMixin:
    """The control-flow part of FunctionCodegen (see codegen.py)."""

    # -- blocks and regions ------------------------------------------------------
    def visit_block(self, stmts: list[ast.stmt], tail: Tail | None = None) -> Returned | None:
        """Visit statements in order, then `tail` (the code that follows them,
        where a `return` in them may skip it); a Returned when the code ends
        in a return."""
        return self._then_tail(self._visit_statements(stmts, tail), tail)

    @staticmethod
    def _then_tail(outcome: Returned | None | object, tail: Tail | None) -> Returned | None:
        if outcome is _FELL_THROUGH:
            return tail() if tail is not None else None
        return outcome

    def _visit_statements(self, stmts: list[ast.stmt], tail: Tail | None) -> Returned | None | object:
        """Visit statements in order: a Returned (or None, where a run-time `if`
        merged paths that all fell off the end) when they return, `_FELL_THROUGH`
        when they reach their end, where `tail` is still to be visited. `tail`
        is visited here only inside the branches of a run-time `if` that
        returns; a fall-through is handed back, so that unrolling a static loop
        with a return does not nest one call per iteration."""
        for index, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                return self._visit_return(stmt)
            if isinstance(stmt, ast.If) and _contains_return(stmt):
                return self._visit_if_with_return(stmt, stmts[index + 1:], tail)
            if isinstance(stmt, ast.For) and _contains_return(stmt):
                header = self._visit_loop_header(stmt)
                if header.static:
                    iterations = self._static_iterations(stmt, header)
                    return self._unroll_from(stmt, iterations, 0, stmts[index + 1:], tail)
                self._emit_for(stmt, header)  # raises at the `return`
                continue
            self.visit(stmt)
        return _FELL_THROUGH

    @contextmanager
    def _inside(self, region: Region) -> Iterator[None]:
        point = self.builder.insertion_point()
        self.builder.set_insertion_point_to_end(region)
        try:
            yield
        finally:
            self.builder.restore_insertion_point(point)

    @contextmanager
    def _in_loop(self) -> Iterator[None]:
        self.loop_depth += 1
        try:
            yield
        finally:
            self.loop_depth -= 1

    def _yield(self, region: Region, values: list[Any], op_name: str = "yield") -> None:
        with self._inside(region):
            self.builder.create(op_name, [leaf.handle for value in values for leaf in leaves(value)])

    @staticmethod
    def _bind(scope: dict[str, Any], names: list[str], values: list[Any], handles: list[Value]) -> None:
        """Rebind `names` in `scope` to values shaped like `values` over `handles`."""
        offset = 0
        for name, value in zip(names, values):
            slot = slot_of(value)
            count = len(slot_types(slot))
            scope[name] = rebuild(slot, handles[offset:offset + count])
            offset += count

    def _to_tensor(self, value: Any) -> tensor:
        if isinstance(value, tensor):
            return value
        return self.semantic.to_tensor(unwrap(value))

    # -- conditions ------------------------------------------------------------------
    def _condition(self, test: ast.expr, stmt: ast.AST) -> bool | tensor:
        """The condition of an `if`/ternary: a Python bool when known at compile
        time, else an i1 scalar tensor."""
        cond = self.visit(test)
        if isinstance(cond, tensor):
            if cond.type.is_block() and cond.type.numel > 1:
                raise self.unsupported(stmt, "Boolean value of Tensor with more than one value is ambiguous")
            return self.semantic.to_cond(cond)
        raw = unwrap(cond)
        if type(raw) not in _CONDITION_TYPES:
            raise self.unsupported(
                stmt, "`if` conditionals can only accept values of type {bool, int, NoneType}, not objects of "
                      f"type {type(raw).__name__}")
        return bool(raw)

    # -- if ------------------------------------------------------------------------
    def visit_If(self, node: ast.If) -> None:
        cond = self._condition(node.test, node)
        if not isinstance(cond, tensor):
            self.visit_block(node.body if cond else node.orelse)
            return
        live = dict(self.scope)
        then_region, else_region = Region(), Region()
        then_scope = self._visit_branch(node.body, then_region, live)
        else_scope = self._visit_branch(node.orelse, else_region, live)
        self.scope = live
        names, then_values, else_values = self._merge_branches(node, live, then_scope, else_scope)
        result_types = [t for value in then_values for t in slot_types(slot_of(value))]
        op = self.builder.create("if", [cond.handle], result_types, regions=[then_region, else_region])
        self._yield(then_region, then_values)
        self._yield(else_region, else_values)
        self.scope = dict(live)
        self._bind(self.scope, names, then_values, op.results)

    def _visit_branch(self, stmts: list[ast.stmt], region: Region, live: dict[str, Any]) -> dict[str, Any]:
        self.scope = detached_scope(live)
        with self._inside(region):
            self.visit_block(stmts)
        return self.scope

    def _merge_branches(self, node: ast.If, live: dict[str, Any], then_scope: dict[str, Any],
                        else_scope: dict[str, Any]) -> tuple[list[str], list[Any], list[Any]]:
        """The names an `if` op must return, with their values in each branch."""
        names: list[str] = []
        then_values: list[Any] = []
        else_values: list[Any] = []
        for name, initial in live.items():
            in_then, in_else = then_scope[name], else_scope[name]
            if same_value(in_then, initial) and same_value(in_else, initial):
                continue
            if self._rebinds_static_loop_var(name, initial, in_then, in_else):
                continue
            if not has_tensor(initial):
                raise self.error(node, f"cannot reassign constexpr {name} in a run-time `if`")
            for value, block in ((in_then, "then"), (in_else, "else")):
                if slot_of(value) != slot_of(initial):
                    raise self.error(node, f"initial value for `{name}` is of type {describe_value(initial)}, "
                                           f"but the {block} block redefines it as {describe_value(value)}")
            names.append(name)
            then_values.append(in_then)
            else_values.append(in_else)
        for name in sorted((then_scope.keys() & else_scope.keys()) - live.keys()):
            in_then, in_else = then_scope[name], else_scope[name]
            then_slot, else_slot = slot_of(in_then), slot_of(in_else)
            if then_slot != else_slot:
                raise self.error(node, f"Mismatched type for {name} between then block "
                                       f"({describe_slot(then_slot)}) and else block ({describe_slot(else_slot)})")
            names.append(name)
            then_values.append(in_then)
            else_values.append(in_else)
        return names, then_values, else_values

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = self._condition(node.test, node)
        if not isinstance(cond, tensor):
            return self.visit(node.body if cond else node.orelse)
        then_region, else_region = Region(), Region()
        with self._inside(then_region):
            then_value = self.visit(node.body)
        with self._inside(else_region):
            else_value = self.visit(node.orelse)
        if unwrap(then_value) is None and unwrap(else_value) is None:
            # Both sides only act (`tl.store(...) if c else tl.store(...)`): an `if` without results.
            self.builder.create("if", [cond.handle], [], regions=[then_region, else_region])
            self._yield(then_region, [])
            self._yield(else_region, [])
            return constexpr(None)
        with self._inside(then_region):
            then_value = self._to_tensor(then_value)
        with self._inside(else_region):
            else_value = self._to_tensor(else_value)
        if then_value.type != else_value.type:
            raise self.error(node, "Ternary expression with dynamic condition has inconsistent types "
                                   f"{describe_type(then_value.type)} and {describe_type(else_value.type)}")
        op = self.builder.create("if", [cond.handle], [then_value.type], regions=[then_region, else_region])
        self._yield(then_region, [then_value])
        self._yield(else_region, [else_value])
        return tensor(op.results[0], then_value.type)

    # -- return --------------------------------------------------------------------
    def _visit_return(self, node: ast.Return) -> Returned:
        if self.loop_depth:
            raise self.unsupported(node, _RETURN_IN_LOOP)
        value = self._return_value(self.visit(node.value)) if node.value is not None else None
        if self.is_kernel and value is not None:
            raise self.error(node, "a kernel cannot return a value")
        return Returned(value, node)

    def _return_value(self, value: Any) -> Any:
        """A returned value as the caller gets it: Python numbers become tensors
        (TRITON_SEMANTICS 1.5), None means nothing is returned."""
        if isinstance(value, tl_tuple):
            return tuple_like(value, [self._return_value(v) for v in value.values])
        raw = unwrap(value)
        if raw is None:
            return None
        if isinstance(raw, (bool, int, float)):
            return self.semantic.to_tensor(raw)
        return value

    def _visit_if_with_return(self, node: ast.If, rest: list[ast.stmt],
                              tail: Tail | None) -> Returned | None | object:
        cond = self._condition(node.test, node)
        if not isinstance(cond, tensor):
            return self._visit_statements((node.body if cond else node.orelse) + rest, tail)
        if self.loop_depth:
            raise self.unsupported(node, _RETURN_IN_LOOP)
        live = dict(self.scope)
        regions = (Region(), Region())
        results: list[Returned | None] = []
        for stmts, region in ((node.body + rest, regions[0]), (node.orelse + rest, regions[1])):
            self.scope = detached_scope(live)
            with self._inside(region):
                results.append(self.visit_block(stmts, tail))
        self.scope = live
        values = [returned.value if returned is not None else None for returned in results]
        for side, other in ((0, 1), (1, 0)):
            if results[side] is None and values[other] is not None:
                # This path falls off the end of a function that returns a value on the
                # other: Triton returns poison there, of which zeros are one instance.
                with self._inside(regions[side]):
                    values[side] = self._zeros_like(values[other], node)
        then_slot, else_slot = slot_of(values[0]), slot_of(values[1])
        if then_slot != else_slot:
            raise self.error(node, f"Inconsistent return types: {describe_slot(then_slot)} and "
                                   f"{describe_slot(else_slot)}")
        op = self.builder.create("if", [cond.handle], slot_types(then_slot), regions=list(regions))
        self._yield(regions[0], [values[0]])
        self._yield(regions[1], [values[1]])
        return Returned(rebuild(then_slot, op.results), node)

    def _zeros_like(self, value: Any, node: ast.AST) -> Any:
        """A value of `value`'s shape and types made of zeros (compile-time parts kept)."""
        slot = slot_of(value)
        handles = []
        for ty in slot_types(slot):
            if ty.scalar.is_ptr():
                raise self.error(node, "a function that returns a pointer must return one on every path")
            handles.append(self.semantic.full(list(ty.shape) if ty.is_block() else [], 0, ty.scalar).handle)
        return rebuild(slot, handles)

    # -- loops ---------------------------------------------------------------------
    def visit_For(self, node: ast.For) -> None:
        header = self._visit_loop_header(node)
        if header.static:
            self._unroll(node, header)
        else:
            self._emit_for(node, header)

    def _visit_loop_header(self, node: ast.For) -> LoopHeader:
        if node.orelse:
            raise self.unsupported(node, "`for ... else` is not supported")
        iterator = node.iter
        if not isinstance(iterator, ast.Call):
            raise self.unsupported(iterator, "Only `range`, `tl.range` and `tl.static_range` iterators are "
                                             "supported in `for` loops")
        if not isinstance(node.target, ast.Name):
            raise self.unsupported(node.target, "the target of a `for` loop must be a single name")
        kind = unwrap(self.visit(iterator.func))
        static_range = language_attr("static_range")
        tl_range = language_attr("range")
        args = self._elements(iterator.args)
        kwargs = {kw.arg: self.visit(kw.value) for kw in iterator.keywords}
        if None in kwargs:
            raise self.unsupported(iterator, "`**` arguments are not supported in loop iterators")
        try:
            if static_range is not None and kind is static_range:
                bounds = _static_range_args(*args, **kwargs)
            elif tl_range is not None and kind is tl_range:
                bounds = _range_args(*args, **kwargs)
            elif kind is range:
                bounds = _builtin_range_args(*args, **kwargs)
            else:
                raise self.unsupported(iterator, "Only `range`, `tl.range` and `tl.static_range` iterators are "
                                                 "supported in `for` loops")
        except TypeError as error:
            raise self.error(iterator, str(error)) from error
        lb, ub, step = bounds["arg1"], bounds["arg2"], bounds["step"]
        if unwrap(ub) is None:
            lb, ub = constexpr(0), lb
        if unwrap(step) is None:
            step = constexpr(1)
        if static_range is not None and kind is static_range:
            return LoopHeader(lb, ub, step, static=True, attrs={})
        attrs = {}
        for name in ("num_stages", "loop_unroll_factor"):
            value = unwrap(bounds.get(name))
            if value is not None:
                attrs[name] = int(value)
        for name in ("disallow_acc_multi_buffer", "flatten", "warp_specialize", "disable_licm"):
            if bool(unwrap(bounds.get(name, False))):
                attrs[name] = True
        return LoopHeader(lb, ub, step, static=False, attrs=attrs)

    def _static_iterations(self, node: ast.For, header: LoopHeader) -> range:
        if any(has_tensor(v) for v in (header.lb, header.ub, header.step)):
            raise self.error(node.iter, "static_range bounds must be compile-time constants")
        values = [unwrap(v) for v in (header.lb, header.ub, header.step)]
        if not all(isinstance(v, int) for v in values):
            raise self.error(node.iter, f"static_range bounds must be ints, got {values}")
        self.static_loop_vars.add(node.target.id)
        return range(*values)

    def _unroll(self, node: ast.For, header: LoopHeader) -> None:
        for i in self._static_iterations(node, header):
            self.scope[node.target.id] = constexpr(i)
            self.visit_block(node.body)

    def _unroll_from(self, node: ast.For, iterations: range, start: int, rest: list[ast.stmt],
                     tail: Tail | None) -> Returned | None | object:
        """Unroll a static loop whose body may return, from iteration `start`,
        then `rest` (as `_visit_statements`). Each iteration's tail is the
        remaining iterations, `rest` and `tail`: a run-time `if` that returns
        visits it in its branches; a compile-time return skips it."""
        for position in range(start, len(iterations)):
            self.scope[node.target.id] = constexpr(iterations[position])

            def later(position: int = position) -> Returned | None:
                return self._then_tail(self._unroll_from(node, iterations, position + 1, rest, tail), tail)

            outcome = self._visit_statements(node.body, later)
            if outcome is not _FELL_THROUGH:
                return outcome
        return self._visit_statements(rest, tail)

    def _emit_for(self, node: ast.For, header: LoopHeader) -> None:
        lb, ub, step = header.lb, header.ub, header.step
        negative_step = False
        if not has_tensor(step):
            raw_step = unwrap(step)
            if isinstance(raw_step, int) and raw_step == 0:
                raise self.error(node.iter, "range() arg 3 must not be zero")
            if isinstance(raw_step, int) and raw_step < 0:
                # `for` ops need a positive step: iterate upwards and mirror the variable.
                negative_step = True
                step = constexpr(-raw_step)
                lb, ub = ub, lb
        lb, ub, step = (self._to_tensor(v) for v in (lb, ub, step))
        if not (lb.dtype.is_int() and ub.dtype.is_int() and step.dtype.is_int()):
            raise self.error(node.iter, "For loop bounds and step must all be ints, are "
                                        f"({describe_type(lb.dtype)}, {describe_type(ub.dtype)}, "
                                        f"{describe_type(step.dtype)})")
        for what, value in (("lower bound", lb), ("upper bound", ub), ("step", step)):
            if value.type.is_block():
                raise self.error(node.iter, f"For {what} must be a scalar, got {describe_type(value.type)}")
        iv_type = self.semantic.integer_promote_impl(self.semantic.integer_promote_impl(lb.dtype, ub.dtype),
                                                     step.dtype)
        lb, ub, step = (v if v.type == iv_type else self.semantic.cast(v, iv_type) for v in (lb, ub, step))
        target = node.target.id
        live = dict(self.scope)

        scratch = Region([iv_type])
        self.scope = detached_scope(live)
        self.scope[target] = tensor(scratch.args[0], iv_type)
        with self._inside(scratch), self._in_loop():
            self.visit_block(node.body)
        names = self._carried_names(node, live, self.scope, ignore={target})
        initial = [live[name] for name in names]
        carried_types = [t for value in initial for t in slot_types(slot_of(value))]

        body = Region([iv_type] + carried_types, [target] + _arg_names(names, initial))
        self.scope = detached_scope(live)
        self._bind(self.scope, names, initial, body.args[1:])
        with self._inside(body):
            iv = body.args[0]
            if negative_step:
                iv = self.builder.create_value("sub", [ub.handle, iv], iv_type)
                iv = self.builder.create_value("add", [iv, lb.handle], iv_type)
            self.scope[target] = tensor(iv, iv_type)
            with self._in_loop():
                self.visit_block(node.body)
        final = [self.scope[name] for name in names]
        self._check_carried(node, names, initial, final)
        self._yield(body, final)

        operands = [lb.handle, ub.handle, step.handle] + [leaf.handle for v in initial for leaf in leaves(v)]
        op = self.builder.create("for", operands, carried_types, header.attrs, [body])
        self.scope = dict(live)
        self._bind(self.scope, names, initial, op.results)

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.unsupported(node, "`while ... else` is not supported")
        live = dict(self.scope)
        scratch = Region()
        self.scope = detached_scope(live)
        with self._inside(scratch), self._in_loop():
            self.visit_block(node.body)
        names = self._carried_names(node, live, self.scope, ignore=set())
        initial = [live[name] for name in names]
        carried_types = [t for value in initial for t in slot_types(slot_of(value))]

        before = Region(carried_types, _arg_names(names, initial))
        self.scope = detached_scope(live)
        self._bind(self.scope, names, initial, before.args)
        with self._inside(before):
            cond = self.visit(node.test)
            condition_class = language_attr("condition")
            # `tl.condition(c, disable_licm=...)` is a plain class, so the call
            # comes back as a constexpr holding it. Its option only steers
            # loop-invariant code motion, which changes no result: it is dropped.
            if condition_class is not None and isinstance(unwrap(cond), condition_class):
                cond = unwrap(cond).condition
            if not isinstance(cond, tensor):
                raise self.error(node.test, "the condition of a `while` loop must be a tensor (a run-time value), "
                                            f"got {describe_value(cond)}")
            if cond.type.is_block() and cond.type.numel > 1:
                raise self.unsupported(node, "Boolean value of Tensor with more than one value is ambiguous")
            cond = self.semantic.to_cond(cond)
            self.builder.create("condition", [cond.handle] + list(before.args))

        after = Region(carried_types, _arg_names(names, initial))
        self.scope = detached_scope(live)
        self._bind(self.scope, names, initial, after.args)
        with self._inside(after), self._in_loop():
            self.visit_block(node.body)
        final = [self.scope[name] for name in names]
        self._check_carried(node, names, initial, final)
        self._yield(after, final)

        inits = [leaf.handle for v in initial for leaf in leaves(v)]
        op = self.builder.create("while", inits, carried_types, regions=[before, after])
        self.scope = dict(live)
        self._bind(self.scope, names, initial, op.results)

    def _carried_names(self, node: ast.AST, live: dict[str, Any], after: dict[str, Any],
                       ignore: set[str]) -> list[str]:
        """Names live before a loop whose value its body changes (checked for
        keeping their type)."""
        names = []
        for name, initial in live.items():
            if name in ignore or same_value(after[name], initial):
                continue
            if self._rebinds_static_loop_var(name, initial, after[name]):
                continue
            if not has_tensor(initial):
                raise self.error(node, f"cannot reassign constexpr {name} in the loop")
            self._check_carried(node, [name], [initial], [after[name]])
            names.append(name)
        return names

    def _rebinds_static_loop_var(self, name: str, *values: Any) -> bool:
        """Whether `name` only changed because a static_range loop inside the
        region reused it: it keeps its value from before the region."""
        return name in self.static_loop_vars and not any(has_tensor(v) for v in values)

    def _check_carried(self, node: ast.AST, names: list[str], initial: list[Any], final: list[Any]) -> None:
        for name, before, after in zip(names, initial, final):
            if slot_of(before) == slot_of(after):
                continue
            if isinstance(before, tensor) and isinstance(after, tensor):
                raise self.error(node, f"Loop-carried variable {name} has initial type {describe_type(before.type)} "
                                       f"but is re-assigned to {describe_type(after.type)} in loop! Please make "
                                       "sure that the type stays consistent.")
            raise self.error(node, f"Loop carried variable {name} changed type, was {describe_value(before)} but "
                                   f"is now {describe_value(after)}")

