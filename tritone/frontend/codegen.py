"""The frontend: walks the Python AST of a `@jit` function and emits IR (docs/IR.md).

`ast_to_ir` compiles a kernel for one specialisation (argument types and
constexpr values) into an `ir.Module`: the kernel function plus one function
per specialisation of every `@jit` function it calls. Typing rules live in
`tritone.language.semantic.Semantic`; this package owns scoping, control
flow, constexpr evaluation, calls and the errors (TRITON_SEMANTICS 10).

The work is split by concept: this module holds the per-module state, the
visitor's core (locations, errors, names, assignments, expressions);
`control_flow.py` the statements that open regions and `return`;
`calls.py` calls of every kind.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import operator
from typing import Any, Callable, Iterator

from ..errors import CompilationError, UnsupportedLanguageConstruct
from ..ir.core import Builder, Function, Location, Module, Value
from ..ir.types import dtype, int1, parse_type, tensordesc_type, type_text
from ..language.aggregate import is_aggregate
from ..language.core import NotConstexprError, constexpr, is_builtin, tensor
from ..language.core import slice as tl_slice
from ..language.core import tuple as tl_tuple
from ..language.descriptor import tensor_descriptor, tensor_descriptor_type
from ..language.semantic import Semantic
from . import hints
from .calls import BoundJitMethod, CallsMixin
from .control_flow import ControlFlowMixin
from .scope import GlobalScope, is_jit_function, language_attr
from .values import (
    Slot,
    TensorSlot,
    constexpr_named,
    has_tensor,
    leaves,
    make_tuple,
    rebuild,
    slot_key,
    slot_of,
    slot_types,
    to_python,
    tuple_field,
    tuple_fields,
    tuple_like,
    unwrap,
    wrap,
)

_BINARY_METHODS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift", ast.BitOr: "or",
    ast.BitXor: "xor", ast.BitAnd: "and",
}
_PYTHON_BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "lshift": operator.lshift,
    "rshift": operator.rshift, "or": operator.or_, "xor": operator.xor, "and": operator.and_,
    "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
    "ne": operator.ne,
}
_COMPARE_METHODS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
# `a < t` with a tensor only on the right is `t > a`.
_REFLECTED_COMPARE = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_UNARY_METHODS = {ast.USub: "__neg__", ast.UAdd: "__pos__", ast.Invert: "__invert__"}
_PYTHON_UNARY = {"__neg__": operator.neg, "__pos__": operator.pos, "__invert__": operator.invert}

# IR attribute values must print and parse back (docs/IR.md).
_ATTR_SCALARS = (bool, int, float, str, type(None))


def _is_attr_value(value: Any) -> bool:
    if isinstance(value, _ATTR_SCALARS) or isinstance(value, dtype):
        return True
    return isinstance(value, tuple) and all(_is_attr_value(v) for v in value)


class ModuleContext:
    """What the functions of one module share while they are generated: the
    module, the builder and Semantic, the options, and the specialisations of
    `@jit` callees already emitted."""

    def __init__(self, module: Module, builder: Builder, semantic: Any, options: dict[str, Any]):
        self.module = module
        self.builder = builder
        self.semantic = semantic
        self.options = options
        self.debug = bool(options.get("debug", False))
        self.allow_non_constexpr_globals = bool(options.get("allow_non_constexpr_globals", False))
        self._function_defs: dict[int, ast.FunctionDef] = {}
        # (id of the JITFunction, argument slots) -> (function name, result slot)
        self._specialisations: dict[tuple, tuple[str, Slot]] = {}
        self._in_progress: set[tuple] = set()
        self._keep_alive: list[Any] = []

    def function_def(self, jit_fn: Any) -> ast.FunctionDef:
        """The parsed `def` of a `@jit` function (parsed once per module)."""
        key = id(jit_fn)
        node = self._function_defs.get(key)
        if node is None:
            tree = ast.parse(jit_fn.src)
            node = tree.body[0]
            if not isinstance(node, ast.FunctionDef):
                raise TypeError(f"{jit_fn.__name__}: the source of a @jit function must start with `def`")
            self._function_defs[key] = node
            self._keep_alive.append(jit_fn)
        return node

    # -- @jit callees ----------------------------------------------------------
    def call_jit(self, jit_fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Emit a `call` of `jit_fn` specialised for these arguments at the
        builder's insertion point and return its result as a kernel value.

        Tensors (also inside tuples) become arguments of the callee; every
        other value (Python numbers, constexprs, None, dtypes, functions) is
        baked into the callee as a constexpr. Each argument decides this, not
        the callee's annotations: a parameter annotated `tl.constexpr` that is
        given a tensor receives the tensor, and an unannotated one given a
        constexpr stays a constexpr, as Triton specialises its callees."""
        try:
            bound = inspect.signature(jit_fn.fn).bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{jit_fn.__name__}(): {error}") from None
        bound.apply_defaults()
        values = [_as_argument(bound.arguments[name]) for name in jit_fn.arg_names]
        slots = tuple(slot_of(v) for v in values)
        key = (id(jit_fn), slots)
        if key in self._in_progress:
            raise RecursionError(f"recursive calls of @jit function {jit_fn.__name__} are not supported")
        spec = self._specialisations.get(key)
        if spec is None:
            spec = self._specialise(jit_fn, slots)
            self._specialisations[key] = spec
            self._keep_alive.append(jit_fn)
        name, result_slot = spec
        handles = [leaf.handle for value in values for leaf in leaves(value)]
        op = self.builder.create("call", handles, slot_types(result_slot), {"callee": name})
        return rebuild(result_slot, op.results)

    def call_jit_for_region(self, fn: Any, args: list[Any]) -> Any:
        """`Semantic.call_jit_function`: call `fn` (a `@jit` function, or a
        builtin) on kernel values at the builder's insertion point, e.g. inside
        the combine region the language is building or for a tensor method
        written with `@jit`; the callee's return value (a tensor, a tl.tuple,
        or None)."""
        if is_builtin(fn):
            value = fn(*args, _semantic=self.semantic)
            return tl_tuple(list(value)) if isinstance(value, (tuple, list)) else value
        return self.call_jit(fn, list(args), {})

    def _specialise(self, jit_fn: Any, slots: tuple) -> tuple[str, Slot]:
        arg_types: list[dtype] = []
        arg_names: list[str] = []
        for name, slot in zip(jit_fn.arg_names, slots):
            types = slot_types(slot)
            arg_types.extend(types)
            arg_names.extend([name] if isinstance(slot, TensorSlot) else [f"{name}_{i}" for i in range(len(types))])
        name = self._mangle(jit_fn, slots, arg_types)
        loc = Location(jit_fn.file_name, jit_fn.starting_line_number, 0, jit_fn.__name__)
        function = Function(name, arg_types, arg_names, attrs={"noinline": bool(jit_fn.noinline)}, loc=loc)
        self.module.add(function)
        scope: dict[str, Any] = {}
        offset = 0
        for param, slot in zip(jit_fn.arg_names, slots):
            count = len(slot_types(slot))
            scope[param] = rebuild(slot, function.args[offset:offset + count])
            offset += count
        key = (id(jit_fn), slots)
        point, loc = self.builder.insertion_point(), self.builder.loc
        self._in_progress.add(key)
        try:
            result = FunctionCodegen(self, jit_fn, function, scope, is_kernel=False).generate()
        finally:
            self._in_progress.discard(key)
            self.builder.restore_insertion_point(point)
            self.builder.loc = loc
        function.result_types = slot_types(result)
        return name, result

    def _mangle(self, jit_fn: Any, slots: tuple, arg_types: list[dtype]) -> str:
        text = f"{jit_fn.__module__}.{jit_fn.__qualname__}|" + "|".join(slot_key(s) for s in slots)
        digest = hashlib.sha256(text.encode()).hexdigest()[:10]
        types = "_".join(t.mangle() for t in arg_types)
        base = f"{jit_fn.__name__}__{types}__{digest}" if types else f"{jit_fn.__name__}__{digest}"
        name, n = base, 1
        while name in self.module.functions:
            name, n = f"{base}_{n}", n + 1
        return name


def _as_argument(value: Any) -> Any:
    """A call argument as the callee receives it: tensors and block pointers stay,
    tuples are converted element by element, everything else becomes a constexpr."""
    if isinstance(value, tl_tuple):
        return tuple_like(value, [_as_argument(v) for v in value.values])
    if isinstance(value, constexpr) or has_tensor(value) or is_aggregate(value):
        return value
    return constexpr(value)


class FunctionCodegen(ControlFlowMixin, CallsMixin, ast.NodeVisitor):
    """Generates the body of one IR function from one `@jit` function.

    `scope` maps parameter names to their values (tensors for IR arguments,
    constexprs for specialised values). Statements of the body are visited in
    order; each expression visit returns a kernel value: a `tensor`, a
    `constexpr`, a `tl.tuple` or a compile-time Python object.
    """

    def __init__(self, ctx: ModuleContext, jit_fn: Any, function: Function, scope: dict[str, Any],
                 is_kernel: bool):
        self.ctx = ctx
        self.jit_fn = jit_fn
        self.function = function
        self.scope = dict(scope)
        self.is_kernel = is_kernel
        self.builder = ctx.builder
        self.semantic = ctx.semantic
        self.src = jit_fn.src
        self.file_name = jit_fn.file_name
        self.fn_name = jit_fn.__name__
        self.line_offset = jit_fn.starting_line_number - 1
        self.globals = GlobalScope(jit_fn.fn, jit_fn.__globals__, ctx.allow_non_constexpr_globals)
        self.loop_depth = 0
        # Names bound by `tl.static_range` loops: rebinding them inside a region
        # is not a reassignment of a constexpr (they keep their outer value after it).
        self.static_loop_vars: set[str] = set()
        # Calls that are whole statements: their result is discarded, an error
        # for callees marked `must_use_result`.
        self.discarded_calls: set[ast.Call] = set()

    def generate(self) -> Slot:
        """Emit the function body, ending with `return`; the slot of the
        returned value (a ConstSlot of None when it returns nothing)."""
        fdef = self.ctx.function_def(self.jit_fn)
        self.builder.set_insertion_point_to_end(self.function.body)
        self.builder.loc = self.location(fdef)
        returned = self.visit_block(fdef.body)
        value = returned.value if returned is not None else None
        if returned is not None:
            self.builder.loc = self.location(returned.node)
        self.builder.create("return", [leaf.handle for leaf in leaves(value)])
        return slot_of(value)

    # -- locations and errors --------------------------------------------------
    def location(self, node: ast.AST) -> Location:
        return Location(self.file_name, node.lineno + self.line_offset, node.col_offset, self.fn_name)

    def error(self, node: ast.AST, message: str | None, cls: type = CompilationError, *,
              callee: CompilationError | None = None, hint: str | None = None) -> CompilationError:
        return cls(self.src, node, message, filename=self.file_name, function=self.fn_name,
                   line_offset=self.line_offset, callee=callee, hint=hint)

    def not_constexpr_error(self, node: ast.AST, error: NotConstexprError) -> CompilationError:
        """The error for a run-time value used as a constant in `node`, with a
        hint naming the value and, where it is this function's parameter, in
        `runtime_names` for the caller to trace."""
        expressions = hints.call_arguments(node) if isinstance(node, ast.Call) else [node]
        names = hints.runtime_names(self.scope, expressions, error.value)
        hint, parameters = hints.not_constexpr_hint(names, list(self.jit_fn.arg_names), self.fn_name,
                                                    self.is_kernel)
        located = self.error(node, str(error), hint=hint)
        located.runtime_names = parameters
        return located

    def unsupported(self, node: ast.AST, message: str) -> CompilationError:
        return self.error(node, message, UnsupportedLanguageConstruct)

    def visit(self, node: ast.AST | None) -> Any:
        """Visit `node` with the builder's location set to it; any exception
        other than a CompilationError becomes one pointing at the innermost
        node being compiled, with the original as `__cause__`."""
        if node is None:
            return None
        saved = self.builder.loc
        if hasattr(node, "lineno"):
            self.builder.loc = self.location(node)
        try:
            return super().visit(node)
        except CompilationError:
            raise
        except NotConstexprError as error:
            raise self.not_constexpr_error(node, error) from error
        except Exception as error:  # noqa: BLE001 - every user-facing failure becomes a CompilationError
            raise self.error(node, str(error) or type(error).__name__,
                             hint=getattr(error, "tritone_hint", None)) from error
        finally:
            self.builder.loc = saved

    def generic_visit(self, node: ast.AST) -> Any:
        raise self.unsupported(node, f"unsupported AST node type: {type(node).__name__}")

    # -- statements --------------------------------------------------------------
    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Call):
            self.discarded_calls.add(node.value)
        self.visit(node.value)

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise self.unsupported(node, "simultaneous multiple assignment is not supported.")
        self._check_target(node.targets[0])
        value = self.assigned_value(self.visit(node.value))
        self.assign(node.targets[0], value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_target(node.target)
        annotation = unwrap(self.visit(node.annotation))
        if node.value is None:
            return
        if annotation is constexpr:
            if not isinstance(node.target, ast.Name):
                raise self.unsupported(node.target, "only names can be annotated as constexpr")
            name = node.target.id
            if name in self.scope:
                raise self.error(node, f"{name} is already defined. constexpr cannot be reassigned.")
            value = self.visit(node.value)
            if has_tensor(value):
                # The annotation cannot make a run-time value compile-time: as a
                # callee's constexpr parameter given a tensor, the name holds the tensor.
                self.scope[name] = self.assigned_value(value)
                return
            self.scope[name] = value if isinstance(value, constexpr) else constexpr_named(value)
            return
        self.assign(node.target, self.assigned_value(self.visit(node.value)))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target)
        lhs = self.visit_Name(node.target)
        rhs = self.visit(node.value)
        method = _BINARY_METHODS.get(type(node.op))
        if method is None:
            raise self.unsupported(node, f"AST binary operator '{type(node.op).__name__}' is not supported")
        self.assign(node.target, self.assigned_value(self.binary(method, lhs, rhs)))

    def visit_Assert(self, node: ast.Assert) -> None:
        test = self.visit(node.test)
        message = unwrap(self.visit(node.msg)) if node.msg is not None else ""
        if not self.ctx.debug:
            return
        device_assert = language_attr("device_assert")
        if device_assert is None:
            raise self.error(node, "tl.device_assert is not available")
        device_assert(test, message, _semantic=self.semantic)

    def visit_Global(self, node: ast.Global) -> None:
        raise self.unsupported(node, "`global` statements are not supported in kernels")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        raise self.unsupported(node, "`nonlocal` statements are not supported in kernels")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        raise self.unsupported(node, "nested function definition is not supported.")

    def _check_target(self, target: ast.expr) -> None:
        """Reject assignment targets kernels cannot have, before evaluating anything."""
        if isinstance(target, ast.Subscript):
            raise self.unsupported(target, "__setitem__ is not supported in triton")
        if isinstance(target, ast.Attribute):
            raise self.unsupported(target, "Attribute assignment is not supported in triton")
        if isinstance(target, ast.Starred):
            raise self.unsupported(target, "starred assignment is not supported in triton")
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._check_target(element)
        elif not isinstance(target, ast.Name):
            raise self.unsupported(target, f"cannot assign to {type(target).__name__}")

    def assigned_value(self, value: Any) -> Any:
        """What a variable holds after `name = value` (TRITON_SEMANTICS 1.5):
        Python numbers become 0-d tensors (also inside tuples); tensors,
        dtypes, None and other compile-time objects stay as they are."""
        if isinstance(value, tl_tuple):
            return tuple_like(value, [self.assigned_value(v) for v in value.values])
        raw = unwrap(value)
        if isinstance(raw, (bool, int, float)):
            return self.semantic.to_tensor(raw)
        return value

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.scope[target.id] = value
            return
        assert isinstance(target, (ast.Tuple, ast.List))
        if isinstance(value, tl_tuple):
            items = value.values
        elif isinstance(unwrap(value), (tuple, list)):
            items = [wrap(v) for v in unwrap(value)]
        else:
            raise self.error(target, f"cannot unpack a non-tuple value ({type(unwrap(value)).__name__})")
        if len(items) != len(target.elts):
            raise self.error(target, f"cannot unpack {len(items)} values into {len(target.elts)} names")
        for element, item in zip(target.elts, items):
            self.assign(element, item)

    # -- expressions ---------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> Any:
        if node.id in self.scope:
            return self.scope[node.id]
        try:
            return self.globals.lookup(node.id)
        except NameError as error:
            if str(error) != f"{node.id} is not defined":
                raise
            if language_attr(node.id) is not None:
                raise NameError(f"{error} (did you mean `tl.{node.id}`?)") from None
            known = [*self.scope, *self.globals.closure, *self.globals.globals]
            raise NameError(f"{error}{hints.did_you_mean(node.id, known)}") from None

    def visit_Constant(self, node: ast.Constant) -> Any:
        return constexpr(node.value)

    def visit_Tuple(self, node: ast.Tuple) -> tl_tuple:
        return tl_tuple(self._elements(node.elts))

    def visit_List(self, node: ast.List) -> tl_tuple:
        return tl_tuple(self._elements(node.elts))

    def _elements(self, nodes: list[ast.expr]) -> list[Any]:
        values: list[Any] = []
        for element in nodes:
            if isinstance(element, ast.Starred):
                values.extend(self.expand_starred(element))
            else:
                values.append(self.visit(element))
        return values

    def expand_starred(self, node: ast.Starred) -> list[Any]:
        value = self.visit(node.value)
        if isinstance(value, tl_tuple):
            return list(value.values)
        raw = unwrap(value)
        if isinstance(raw, (tuple, list)):
            return [wrap(v) for v in raw]
        raise self.error(node, f"cannot unpack a value of type {type(raw).__name__} with *")

    def visit_ListComp(self, node: ast.ListComp) -> tl_tuple:
        if len(node.generators) != 1:
            raise self.unsupported(node, "nested comprehensions are not supported")
        generator = node.generators[0]
        if generator.ifs or generator.is_async or not isinstance(generator.target, ast.Name):
            raise self.unsupported(node, "only `[expr for name in tuple]` comprehensions are supported")
        iterable = self.visit(generator.iter)
        if isinstance(iterable, tl_tuple):
            items = list(iterable.values)
        elif not has_tensor(iterable) and hasattr(unwrap(iterable), "__iter__"):
            items = [wrap(v) for v in unwrap(iterable)]
        else:
            raise self.unsupported(generator.iter, "only tuple comprehensions are supported")
        name = generator.target.id
        absent = object()
        saved = self.scope.get(name, absent)
        results = []
        try:
            for item in items:
                self.scope[name] = item
                results.append(self.visit(node.elt))
        finally:
            if saved is absent:
                self.scope.pop(name, None)
            else:
                self.scope[name] = saved
        return tl_tuple(results)

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        if not isinstance(node.ctx, ast.Load):
            raise self.unsupported(node, "Attribute assignment is not supported in triton")
        base = self.visit(node.value)
        return self.attribute(base, node.attr)

    def attribute(self, base: Any, attr: str) -> Any:
        if isinstance(base, tensor) and attr == "T":
            permute = language_attr("permute")
            return permute(base, (1, 0), _semantic=self.semantic)
        if isinstance(base, constexpr) and attr not in ("value", "type"):
            base = base.value
        if isinstance(base, tl_tuple) and (attr in (tuple_fields(base) or ()) or not hasattr(base, attr)):
            return tuple_field(base, attr)  # a namedtuple's field
        try:
            value = getattr(base, attr)
        except AttributeError as error:
            public = [name for name in dir(base) if not name.startswith("_")]
            raise AttributeError(f"{error}{hints.did_you_mean(attr, public)}") from None
        if (isinstance(base, (tensor, tl_tuple)) or is_aggregate(base)) and is_jit_function(value):
            return BoundJitMethod(base, value)
        if isinstance(value, list) or (isinstance(value, tuple) and not hasattr(type(value), "_fields")):
            return wrap(value)
        return value

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        if not isinstance(node.ctx, ast.Load):
            raise self.unsupported(node, "__setitem__ is not supported in triton")
        base = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(base, tensor):
            return base.__getitem__(index, _semantic=self.semantic)
        if is_aggregate(base):
            # the class's __getitem__: a @jit method, or a plain one (given `_semantic` if it takes it)
            return self.call(node, self.attribute(base, "__getitem__"), [index], {})
        if has_tensor(index):
            raise self.error(node.slice, "tuples can only be indexed by compile-time constants")
        if isinstance(base, tl_tuple):
            return base[unwrap(index)]
        return wrap(to_python(base)[to_python(index)])

    def visit_Slice(self, node: ast.Slice) -> tl_slice:
        return tl_slice(unwrap(self.visit(node.lower)), unwrap(self.visit(node.upper)), unwrap(self.visit(node.step)))

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        method = _BINARY_METHODS.get(type(node.op))
        if method is None:
            raise self.unsupported(node, f"AST binary operator '{type(node.op).__name__}' is not supported")
        return self.binary(method, self.visit(node.left), self.visit(node.right))

    def binary(self, method: str, lhs: Any, rhs: Any) -> Any:
        """`lhs <method> rhs`: the tensor's operator builtin when either side is a
        tensor, else Python's operator at compile time."""
        if isinstance(lhs, tensor):
            return getattr(lhs, f"__{method}__")(rhs, _semantic=self.semantic)
        if isinstance(rhs, tensor):
            reflected = _REFLECTED_COMPARE.get(method)
            name = f"__{reflected}__" if reflected else f"__r{method}__"
            return getattr(rhs, name)(lhs, _semantic=self.semantic)
        python_op = _PYTHON_BINARY[method]
        if isinstance(lhs, tl_tuple) or isinstance(rhs, tl_tuple):
            return wrap(python_op(lhs, rhs))
        return wrap(python_op(unwrap(lhs), unwrap(rhs)))

    def visit_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise self.unsupported(node, "simultaneous multiple comparison is not supported")
        op = type(node.ops[0])
        lhs = self.visit(node.left)
        rhs = self.visit(node.comparators[0])
        if op is ast.Is:
            return constexpr(unwrap(lhs) is unwrap(rhs))
        if op is ast.IsNot:
            return constexpr(unwrap(lhs) is not unwrap(rhs))
        if op in (ast.In, ast.NotIn):
            if has_tensor(lhs) or has_tensor(rhs):
                raise self.unsupported(node, "`in` only works on compile-time values")
            found = to_python(lhs) in to_python(rhs)
            return constexpr(found if op is ast.In else not found)
        return self.binary(_COMPARE_METHODS[op], lhs, rhs)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            if isinstance(operand, tensor):
                return self.language_call("logical_not", operand)
            if isinstance(operand, tl_tuple):
                # As Triton: a tuple has no truth value in kernel code (it may hold tensors).
                raise self.error(node, "`not` of a tuple is not supported: a tuple has no truth value in kernel code")
            return constexpr(not unwrap(operand))
        method = _UNARY_METHODS[type(node.op)]
        if isinstance(operand, tensor):
            return getattr(operand, method)(_semantic=self.semantic)
        return wrap(_PYTHON_UNARY[method](unwrap(operand)))

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        pending: list[Any] = []
        value = None
        for operand in node.values:
            value = self.visit(operand)
            if isinstance(value, tensor):
                pending.append(value)
                continue
            # A compile-time operand decides the result or drops out.
            if bool(unwrap(value)) is not is_and:
                return value
        if not pending:
            return value
        result = pending[0]
        for other in pending[1:]:
            result = self.language_call("logical_and" if is_and else "logical_or", result, other)
        return result

    def visit_JoinedStr(self, node: ast.JoinedStr) -> constexpr:
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
                continue
            assert isinstance(part, ast.FormattedValue)
            value = self.visit(part.value)
            if has_tensor(value):
                raise self.unsupported(
                    node, "Cannot evaluate f-string containing non-constexpr conversion values, found conversion "
                          f"of type {type(value).__name__}")
            raw = to_python(value)
            if part.conversion == ord("r"):
                raw = repr(raw)
            elif part.conversion == ord("s"):
                raw = str(raw)
            elif part.conversion == ord("a"):
                raw = ascii(raw)
            spec = unwrap(self.visit(part.format_spec)) if part.format_spec is not None else ""
            parts.append(format(raw, spec))
        return constexpr("".join(parts))

    def visit_Starred(self, node: ast.Starred) -> Any:
        raise self.unsupported(node, "`*` unpacking is only supported in calls and tuples")

    def language_call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call the language builtin `name` (docs/FRONTEND.md) with `_semantic=`."""
        fn = language_attr(name)
        if fn is None:
            raise NotImplementedError(f"tritone.language does not define {name}")
        return fn(*args, _semantic=self.semantic, **kwargs)


def ast_to_ir(fn: Any, signature: dict[str, Any], constexprs: dict[str, Any], options: dict[str, Any],
              supported_fp8: tuple[str, ...] | None = None) -> Module:
    """Compile the `@jit` function `fn` for one specialisation into an IR module.

    `signature` maps each run-time parameter to its IR type (a dtype, or its
    text form such as `"*fp32"`); a tuple parameter maps to a tuple (or a
    namedtuple, whose fields kernel code reads as attributes) of such types,
    nested as the argument is, with `constexpr` values for its compile-time
    elements. `constexprs` maps the other parameters to their Python values;
    `options` holds `num_warps`, `num_stages`, `num_ctas`, `debug`,
    `allow_non_constexpr_globals`, `divisible_by_16` (the run-time parameters
    the runtime found divisible by 16: names, and `(name, element, ...)` paths
    of tuple elements)... The module's entry function is named `fn.__name__`,
    takes one argument per typed signature entry in parameter order, tuples
    flattened depth first (an element's argument is named `t.0.1` for
    `t[0][1]`), has attrs {"kernel": True} (plus `arg_attrs`, docs/IR.md, when
    some argument is divisible by 16) and ends with `return()`; the module's
    attrs carry the options. Raises CompilationError (or a subclass) naming the
    user's source line for every problem in the kernel. With `supported_fp8`
    (the target's fp8 formats), a value of any other fp8 format is such a problem.
    """
    options = dict(options)
    unknown = [name for name in list(signature) + list(constexprs) if name not in fn.arg_names]
    if unknown:
        raise TypeError(f"kernel {fn.__name__} has no parameter {unknown[0]!r}")
    not_specialized = {param.name for param in getattr(fn, "params", ()) if param.do_not_specialize}
    scope: dict[str, Any] = {}
    arg_paths: list[tuple] = []
    arg_types: list[dtype] = []
    for name in fn.arg_names:
        if name in constexprs:
            if name in not_specialized:
                # Triton's words: a constexpr is its value, so it cannot be left unspecialised
                raise CompilationError(fn.src, _parameter_node(fn, name),
                                       f"{name} marked as constexpr and listed in do_not_specialize",
                                       filename=fn.file_name, function=fn.__name__,
                                       line_offset=fn.starting_line_number - 1)
            if name in signature:
                raise TypeError(f"kernel {fn.__name__}: parameter {name} is both typed and a constexpr")
            scope[name] = constexpr_named(constexprs[name])
        elif name in signature:
            for path, leaf in _typed_leaves(signature[name], (name,)):
                ty = parse_type(leaf) if isinstance(leaf, str) else leaf
                if isinstance(ty, tensordesc_type):
                    # A host descriptor is passed as its parts (tensordesc_type.argument_types).
                    arg_paths.extend((*path, part) for part in _descriptor_part_names(ty.rank))
                    arg_types.extend(ty.argument_types())
                else:
                    arg_paths.append(path)
                    arg_types.append(ty)
        else:
            raise TypeError(f"kernel {fn.__name__}: parameter {name} has neither a type nor a constexpr value")

    module = Module(entry=fn.__name__, attrs={k: v for k, v in options.items() if _is_attr_value(v)})
    builder = Builder()
    if supported_fp8 is not None:
        builder.check_type = fp8_type_check(tuple(supported_fp8))
    semantic = Semantic(builder, options)
    ctx = ModuleContext(module, builder, semantic, options)
    semantic.call_jit_function = ctx.call_jit_for_region
    loc = Location(fn.file_name, fn.starting_line_number, 0, fn.__name__)
    arg_names = [".".join(str(part) for part in path if part != "") for path in arg_paths]
    function = module.add(Function(fn.__name__, arg_types, arg_names, attrs={"kernel": True}, loc=loc))
    arg_attrs = _divisibility_attrs(fn, arg_paths, arg_types, options.get("divisible_by_16") or ())
    if arg_attrs:
        function.attrs["arg_attrs"] = arg_attrs
    arguments = iter(zip(_zero_padding_flags(function, arg_paths, options.get("zero_padded") or ()), arg_types))
    for name in fn.arg_names:
        if name not in scope:
            scope[name] = _argument_value(signature[name], arguments)
    FunctionCodegen(ctx, fn, function, scope, is_kernel=True).generate()
    return module


def _parameter_node(fn: Any, name: str) -> ast.AST | None:
    """The `def`'s AST node of parameter `name` of the @jit function `fn` (for errors)."""
    definition = ast.parse(fn.src).body[0]
    params = definition.args.posonlyargs + definition.args.args + definition.args.kwonlyargs
    return next((param for param in params if param.arg == name), definition)


def fp8_type_check(supported: tuple[str, ...]) -> Callable[[dtype], None]:
    """A `Builder.check_type` refusing values of the fp8 formats not in
    `supported` (the target's `supported_fp8_dtypes`), in blocks or behind
    pointers too, with Triton's words: the frontend reports it at the user's line."""

    def check(ty: dtype) -> None:
        ty = ty.scalar
        while ty.is_ptr():
            ty = ty.element_ty.scalar
        if ty.is_fp8() and type_text(ty) not in supported:
            raise ValueError(f"type {ty} not supported in this architecture. "
                             f"The supported fp8 dtypes are {supported}")

    return check


def _typed_leaves(entry: Any, path: tuple) -> Iterator[tuple[tuple, Any]]:
    """`(path, type)` of the run-time elements of a signature entry, depth first
    (`path` is the parameter's name followed by element indices)."""
    if isinstance(entry, tuple):
        for index, item in enumerate(entry):
            yield from _typed_leaves(item, (*path, index))
    elif not isinstance(entry, constexpr):
        yield path, entry


def _argument_value(entry: Any, arguments: Iterator[tuple[Any, dtype]]) -> Any:
    """The kernel value of a parameter typed `entry`, taking its function
    arguments from `arguments` in order: a tensor, or for a tuple a tl.tuple
    (with the namedtuple's fields) of tensors and constexprs."""
    if isinstance(entry, tuple):
        values = [_argument_value(item, arguments) for item in entry]
        return make_tuple(values, getattr(type(entry), "_fields", None))
    if isinstance(entry, constexpr):
        return entry
    handle, ty = next(arguments)
    if isinstance(ty, tensordesc_type):
        parts = [tensor(handle, ty)]
        parts.extend(tensor(*next(arguments)) for _ in range(len(ty.argument_types()) - 1))
        return tensor_descriptor.from_leaves(tensor_descriptor_type(ty.block), parts)
    return tensor(handle, ty)


def _zero_padding_flags(function: Function, arg_paths: list[tuple], zero_padded: tuple[Any, ...]) -> list[Value]:
    """`function`'s arguments, with the NaN-padding flag of each host descriptor in
    `zero_padded` (parameter names or tuple element paths) replaced by a constant
    false: the descriptor's loads then pad with a constant zero, which the
    asynchronous copies of pipelined loads can give."""
    wanted = {(entry,) if isinstance(entry, str) else tuple(entry) for entry in zero_padded}
    values = list(function.args)
    false = None
    for index, path in enumerate(arg_paths):
        if path[-1] == "nan_padding" and path[:-1] in wanted:
            if false is None:
                false = Builder(function.body).create_value("constant", [], int1, {"value": False})
            values[index] = false
    return values


def _descriptor_part_names(rank: int) -> list[str]:
    """How the kernel's arguments for the parts of a host descriptor are named
    after the parameter (`desc`, `desc.shape0`, ..., `desc.nan_padding`)."""
    return ["", *(f"shape{d}" for d in range(rank)), *(f"strides{d}" for d in range(rank)), "nan_padding"]


def _divisibility_attrs(fn: Any, arg_paths: list[tuple], arg_types: list[dtype],
                        divisible: tuple[Any, ...]) -> dict[int, dict[str, int]]:
    """The kernel's `arg_attrs` (docs/IR.md): `{argument index: {"divisibility": 16}}`
    for the integer and pointer arguments named in `divisible` (an int divisible
    by 16, a pointer aligned to 16 bytes) by name, or for tuple elements by
    `(name, element, ...)` path. Indices count the kernel function's arguments,
    so constexpr parameters and elements, which are not arguments, are skipped."""
    wanted = {(entry,) if isinstance(entry, str) else tuple(entry) for entry in divisible}
    unknown = [path for path in wanted if not path or path[0] not in fn.arg_names]
    if unknown:
        raise TypeError(f"kernel {fn.__name__} has no parameter {unknown[0][0] if unknown[0] else ''!r} "
                        "(divisible_by_16)")
    attrs: dict[int, dict[str, int]] = {}
    for index, (path, ty) in enumerate(zip(arg_paths, arg_types)):
        if path in wanted and (ty.is_int() or ty.is_ptr()):
            attrs[index] = {"divisibility": 16}
        elif path[:-1] in wanted and str(path[-1]).startswith("shape"):
            attrs[index] = {"divisibility": 16}  # a host descriptor specialised on a shape of multiples of 16
    return attrs
