"""The catalogue of IR operations: one `OpSpec` per op of docs/IR.md.

The spec records what every pass and the verifier need to know about an op
without knowing its meaning: how many operands and results it has, which
attributes it needs and what values they may take, its regions and their
terminators, whether it may be removed or merged (its effects), whether it
is elementwise, and how the layouts of its block operands and results relate
(its layout rule, which the GPU layout pass and the verifier apply). A new
elementwise op is one `OpSpec(..., elementwise=True)` here as far as the
passes are concerned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .core import Operation, Value

# Effects of an op by itself (nested regions are looked at separately):
PURE = "pure"  # no effect at all: CSE may merge it, DCE may remove it when unused
READ = "read"  # reads memory: DCE may remove it when unused, CSE may not merge it
WRITE = "write"  # writes memory, prints, traps or synchronises: never removed


# Layout rules: how the layouts of an op's block operands and results relate
# once the GPU layout pass has given every block one (docs/IR.md "Layouts").
SAME_LAYOUT = "same"  # all in one layout (elementwise ops, hints, inline assembly, scans)
ACCESS_LAYOUT = "access"  # memory ops: every operand in the pointer's layout, which is coalesced;
#                           a loaded result or a stored value may be converted from another
BROADCAST_LAYOUT = "broadcast"  # the operand in the result's layout
EXPAND_DIMS_LAYOUT = "expand_dims"  # the operand in SliceLayout(axis, result's layout)
PERMUTE_LAYOUT = "permute"  # the result in the operand's layout with its dims in `order`
RESHAPE_LAYOUT = "reshape"  # each thread keeps the elements it holds (a linear layout of the new shape)
REDUCE_LAYOUT = "reduce"  # the operands in one layout, the results in SliceLayout(axis, it)
SPLIT_LAYOUT = "split"  # both results in the operand's layout without its last dim, which is one register bit
JOIN_LAYOUT = "join"  # both operands in one layout, the result in it with a last dim in register bit 0
SHARED_LAYOUT = "shared"  # the result is a shared-memory tile (a SwizzledSharedLayout)
# Rules that derive an operand's layout from the result's (and back).
DERIVED_LAYOUTS = (BROADCAST_LAYOUT, EXPAND_DIMS_LAYOUT, PERMUTE_LAYOUT, RESHAPE_LAYOUT)


@dataclass(frozen=True)
class AttrSpec:
    """One attribute of an op: the Python kinds its value may have and, when the
    attribute is an enumeration, the allowed values."""

    kinds: tuple[type, ...]
    required: bool = True
    allowed: tuple[Any, ...] | None = None

    def accepts(self, value: Any) -> bool:
        if self.allowed is not None:
            return any(value == a and type(value) is type(a) for a in self.allowed)
        if bool in self.kinds:
            return isinstance(value, self.kinds)
        # Python bools are ints; an int attribute given True is a frontend slip.
        return isinstance(value, self.kinds) and not isinstance(value, bool)


@dataclass(frozen=True)
class RegionSpec:
    """A region of an op: its role name and the op that must end it."""

    name: str
    terminator: str


@dataclass(frozen=True)
class OpSpec:
    """What the IR knows about an op independently of its semantics.

    `results` is an int (that many results), "operands" (one per operand),
    "carried" (one per operand after the first three, for `for`) or "any".
    `max_operands` is None when unbounded.

    `elementwise`: each result element is a function of the operand elements
    at its index alone (so the op computes on scalars and on blocks alike,
    keeps which elements are equal, and can be computed again in any layout);
    such an op's layout rule is SAME_LAYOUT. `layout`: the layout rule (one of
    the *_LAYOUT names above), None for ops whose layouts the layout pass
    decides case by case (dots, control flow) or leaves free. `cheap`: the op
    makes a block from scalars or by repeating elements (constants, aranges,
    splats, broadcasts), so computing its value again in another layout costs
    less than converting it, and its value may follow whichever layout its
    users have. `rearranges`: its one result holds its one operand's elements,
    moved or repeated (a constant stays that constant). `commutative`: a
    two-operand op whose operands may be swapped.
    """

    name: str
    min_operands: int
    max_operands: int | None
    results: int | str
    attrs: dict[str, AttrSpec] = field(default_factory=dict)
    regions: tuple[RegionSpec, ...] = ()
    effect: str = PURE
    terminator: bool = False
    elementwise: bool = False
    layout: str | None = None
    cheap: bool = False
    rearranges: bool = False
    commutative: bool = False

    def __post_init__(self):
        if self.elementwise:
            if self.layout not in (None, SAME_LAYOUT):
                raise ValueError(f"elementwise op {self.name} with the layout rule {self.layout!r}")
            object.__setattr__(self, "layout", SAME_LAYOUT)

    def expected_results(self, num_operands: int) -> int | None:
        """The number of results an op with `num_operands` operands must have (None: any)."""
        if isinstance(self.results, int):
            return self.results
        if self.results == "operands":
            return num_operands
        if self.results == "carried":
            return max(num_operands - 3, 0)
        return None


_INT = (int,)
_BOOL = (bool,)
_STR = (str,)
_TUPLE = (tuple,)
_NUMBER = (int, float, bool)


def _attr(kinds: tuple[type, ...], allowed: tuple[Any, ...] | None = None, required: bool = True) -> AttrSpec:
    return AttrSpec(kinds, required, allowed)


def _optional(kinds: tuple[type, ...], allowed: tuple[Any, ...] | None = None) -> AttrSpec:
    return AttrSpec(kinds, False, allowed)


_LOAD_CACHE = _optional(_STR, ("", ".ca", ".cg", ".cv"))
_STORE_CACHE = _optional(_STR, ("", ".wb", ".cg", ".cs", ".wt"))
_EVICT = _optional(_STR, ("", "evict_first", "evict_last", "evict_normal"))
_SEM = _optional(_STR, ("relaxed", "acquire", "release", "acq_rel"))
_SCOPE = _optional(_STR, ("gpu", "cta", "sys"))
_AXIS3 = _attr(_INT, (0, 1, 2))

BINARY_OPS = ("add", "sub", "mul", "div", "div_rn", "floordiv", "mod", "and", "or", "xor", "shl", "ashr",
              "lshr", "max", "min", "umulhi")
INT_ONLY_BINARY_OPS = ("floordiv", "and", "or", "xor", "shl", "ashr", "lshr", "umulhi")
FLOAT_ONLY_BINARY_OPS = ("div", "div_rn")
FLOAT_MATH_OPS = ("exp", "exp2", "log", "log2", "sin", "cos", "sqrt", "sqrt_rn", "rsqrt", "erf", "floor", "ceil")
CMP_PREDICATES = ("lt", "le", "gt", "ge", "eq", "ne")
ATOMIC_KINDS = ("add", "max", "min", "and", "or", "xor", "xchg")
DESCRIPTOR_ATOMIC_KINDS = ("add", "min", "max", "and", "or", "xor")
DESCRIPTOR_PADDINGS = ("zero", "nan")
DESCRIPTOR_OPS = ("make_tensor_descriptor", "descriptor_load", "descriptor_store", "descriptor_atomic",
                  "descriptor_gather", "descriptor_scatter")
FOR_ATTRS = ("num_stages", "loop_unroll_factor", "disallow_acc_multi_buffer", "flatten", "warp_specialize",
             "disable_licm")
# `special` ops by name: the effect each has (and so what passes may do with it).
SPECIAL_EFFECTS = {
    "globaltimer": READ,  # a clock: never merged with another read, dropped when unused
    "smid": PURE,  # the SM a program runs on stays the same
    "gdc_wait": WRITE,  # orders memory with the kernel launched before
    "gdc_launch_dependents": WRITE,
}


def _elementwise(name: str, operands: int, attrs: dict[str, AttrSpec] | None = None,
                 commutative: bool = False) -> OpSpec:
    return OpSpec(name, operands, operands, 1, attrs or {}, elementwise=True, commutative=commutative)


def _build_table() -> dict[str, OpSpec]:
    specs = [
        # constants, program ids, construction
        OpSpec("constant", 0, 0, 1, {"value": _attr(_NUMBER)}, cheap=True),
        OpSpec("program_id", 0, 0, 1, {"axis": _AXIS3}),
        OpSpec("num_programs", 0, 0, 1, {"axis": _AXIS3}),
        OpSpec("arange", 0, 0, 1, {"start": _attr(_INT), "end": _attr(_INT)}, cheap=True),
        OpSpec("splat", 1, 1, 1, cheap=True, rearranges=True),
        OpSpec("broadcast", 1, 1, 1, layout=BROADCAST_LAYOUT, cheap=True, rearranges=True),
        OpSpec("expand_dims", 1, 1, 1, {"axis": _attr(_INT)}, layout=EXPAND_DIMS_LAYOUT, cheap=True,
               rearranges=True),
        OpSpec("reshape", 1, 1, 1, {"can_reorder": _optional(_BOOL)}, rearranges=True, layout=RESHAPE_LAYOUT),
        OpSpec("permute", 1, 1, 1, {"order": _attr(_TUPLE)}, layout=PERMUTE_LAYOUT, rearranges=True),
        OpSpec("join", 2, 2, 1, layout=JOIN_LAYOUT),
        OpSpec("split", 1, 1, 2, layout=SPLIT_LAYOUT),
        OpSpec("cat", 2, 2, 1),
        OpSpec("gather", 2, 2, 1, {"axis": _attr(_INT)}),
        OpSpec("histogram", 1, 2, 1, {"num_bins": _attr(_INT)}),
        # elementwise arithmetic
        *[_elementwise(name, 2, commutative=name in ("add", "mul", "and", "or", "xor"))
          for name in BINARY_OPS if name not in ("max", "min")],
        _elementwise("max", 2, {"propagate_nan": _optional(_BOOL)}, commutative=True),
        _elementwise("min", 2, {"propagate_nan": _optional(_BOOL)}, commutative=True),
        _elementwise("fma", 3),
        _elementwise("cmp", 2, {"pred": _attr(_STR, CMP_PREDICATES)}),
        _elementwise("select", 3),
        _elementwise("addptr", 2),
        _elementwise("abs", 1),
        *[_elementwise(name, 1) for name in FLOAT_MATH_OPS],
        OpSpec("extern", 0, None, 1, {"name": _attr(_STR)}, elementwise=True),
        # the same elements with facts about the whole block (per dim): not for scalars
        OpSpec("hint", 1, 1, 1, {"kind": _attr(_STR, ("multiple_of", "max_contiguous", "max_constancy")),
                                 "values": _attr(_TUPLE)}, layout=SAME_LAYOUT),
        # `assume` has no result, so "pure" would let DCE drop the fact it carries.
        OpSpec("assume", 1, 1, 0, effect=WRITE),
        # casts
        _elementwise("cast", 1, {"rounding": _optional(_STR, ("rtne", "rtz"))}),
        _elementwise("bitcast", 1),
        # memory
        OpSpec("load", 1, 3, 1, {"cache": _LOAD_CACHE, "evict": _EVICT, "volatile": _optional(_BOOL)}, effect=READ,
               layout=ACCESS_LAYOUT),
        OpSpec("store", 2, 3, 0, {"cache": _STORE_CACHE, "evict": _EVICT}, effect=WRITE, layout=ACCESS_LAYOUT),
        OpSpec("atomic_rmw", 2, 3, 1, {"kind": _attr(_STR, ATOMIC_KINDS), "sem": _SEM, "scope": _SCOPE},
               effect=WRITE, layout=ACCESS_LAYOUT),
        OpSpec("atomic_cas", 3, 3, 1, {"sem": _SEM, "scope": _SCOPE}, effect=WRITE, layout=ACCESS_LAYOUT),
        # tensor descriptors (docs/IR.md "Tensor descriptors"; passes/lower_descriptors.py writes them as
        # the ops above for targets without TMA). Operand counts follow the descriptor's rank.
        OpSpec("make_tensor_descriptor", 3, None, 1, {"padding": _attr(_STR, DESCRIPTOR_PADDINGS)}),
        OpSpec("descriptor_load", 5, None, 1, {"cache": _LOAD_CACHE, "evict": _EVICT}, effect=READ),
        OpSpec("descriptor_store", 5, None, 0, effect=WRITE),
        OpSpec("descriptor_atomic", 5, None, 0, {"kind": _attr(_STR, DESCRIPTOR_ATOMIC_KINDS)}, effect=WRITE),
        OpSpec("descriptor_gather", 8, 8, 1, effect=READ),
        OpSpec("descriptor_scatter", 8, 8, 0, effect=WRITE),
        # a scalar function applied to every element (lowered to block ops by passes/map_elementwise.py)
        OpSpec("map_elementwise", 1, None, "any", {"pack": _attr(_INT)}, (RegionSpec("body", "yield"),)),
        # target assembly applied to `pack` elements at a time (tl.inline_asm_elementwise); the effect is
        # the `pure` attribute's; not elementwise, as the elements of a pack meet in one invocation
        OpSpec("inline_asm", 0, None, "any", {"asm": _attr(_STR), "constraints": _attr(_STR), "pure": _attr(_BOOL),
                                              "pack": _attr(_INT)}, effect=WRITE, layout=SAME_LAYOUT),
        # reductions, scans, dots
        OpSpec("reduce", 1, None, "operands", {"axis": _attr(_INT)}, (RegionSpec("combine", "yield"),),
               layout=REDUCE_LAYOUT),
        OpSpec("scan", 1, None, "operands", {"axis": _attr(_INT), "reverse": _attr(_BOOL)},
               (RegionSpec("combine", "yield"),), layout=SAME_LAYOUT),
        OpSpec("dot", 3, 3, 1, {"input_precision": _attr(_STR, ("tf32", "tf32x3", "ieee")),
                                "max_num_imprecise_acc": _optional((int, type(None))),
                                # set by the GPU passes: the implementation chosen, and
                                # whether the dot is left running into the next trip
                                "implementation": _optional(_STR), "in_flight": _optional(_INT)}),
        # control flow
        OpSpec("for", 3, None, "carried", {name: _optional((int, bool)) for name in FOR_ATTRS},
               (RegionSpec("body", "yield"),)),
        OpSpec("while", 0, None, "any", {}, (RegionSpec("before", "condition"), RegionSpec("after", "yield"))),
        OpSpec("if", 1, 1, "any", {}, (RegionSpec("then", "yield"), RegionSpec("else", "yield"))),
        OpSpec("yield", 0, None, 0, terminator=True),
        OpSpec("condition", 1, None, 0, terminator=True),
        OpSpec("return", 0, None, 0, terminator=True),
        OpSpec("call", 0, None, "any", {"callee": _attr(_STR)}, effect=WRITE),
        # debugging
        OpSpec("print", 0, None, 0, {"prefix": _optional(_STR), "hex": _optional(_BOOL)}, effect=WRITE),
        OpSpec("assert", 1, 1, 0, {"msg": _optional(_STR)}, effect=WRITE),
        OpSpec("barrier", 0, 0, 0, effect=WRITE),
        # hardware registers and launch control (tl.extra.cuda); the effect is the name's
        OpSpec("special", 0, 0, "any", {"name": _attr(_STR, tuple(SPECIAL_EFFECTS))}, effect=WRITE),
        # layouts (after the GPU layout pass)
        OpSpec("convert_layout", 1, 1, 1),
        # shared-memory tiles and asynchronous copies (the dot operand and pipelining passes)
        OpSpec("local_alloc", 1, 1, 1, layout=SHARED_LAYOUT),
        OpSpec("local_buffer", 0, 0, 1, layout=SHARED_LAYOUT),
        OpSpec("local_index", 2, 2, 1, layout=SHARED_LAYOUT),
        OpSpec("async_copy", 3, 4, 0, effect=WRITE),
        OpSpec("async_commit", 0, 0, 0, effect=WRITE),
        OpSpec("async_wait", 0, None, 0, {"pending": _attr(_INT)}, effect=WRITE),
        # TMA copies of a host descriptor's block (the CUDA backend's `tma.py` on sm_90+): operands
        # (tensor map, offsets..) for a load, (tensor map, value, offsets..) for a store
        OpSpec("tma_load", 2, None, 1, effect=READ),
        # a tensor map the kernel encodes for a `make_tensor_descriptor` (its operands: base,
        # shape.., strides..) into bytes `global_offset` on of the program's global scratch;
        # its copies move `box` (default: the block) with `swizzle` (bytes; default none)
        OpSpec("tensormap_create", 3, None, 1, {"global_offset": _attr(_INT),
                                                "padding": _attr(_STR, DESCRIPTOR_PADDINGS),
                                                "box": _optional(_TUPLE), "swizzle": _optional(_INT, (0, 32, 64, 128))},
               effect=WRITE),
        # the tensor map at `global_offset` in the program's global scratch, as the last
        # `tensormap_create` there wrote it (a descriptor carried through loops or branches)
        OpSpec("tensormap_at", 0, 0, 1, {"global_offset": _attr(_INT)}, effect=READ),
        # the software pipeline's TMA copies (`pipeline.py`): (buffer, stage, mbarriers, tensor map,
        # offsets.., in range) copies one tile in `box`es (rows, columns); mbarriers (a `local_buffer`
        # of i64, one per stage) are initialised, arrived on (mbarriers, stage, in range) announcing
        # `bytes`, waited on (mbarriers, stage, phase) and invalidated
        OpSpec("tma_copy", 6, None, 0, {"box": _attr(_TUPLE)}, effect=WRITE),
        OpSpec("mbarrier_init", 1, 1, 0, {"count": _optional(_INT)}, effect=WRITE),
        OpSpec("mbarrier_arrive", 3, 3, 0, {"bytes": _attr(_INT)}, effect=WRITE),
        OpSpec("mbarrier_wait", 3, 3, 0, effect=WRITE),
        OpSpec("mbarrier_inval", 1, 1, 0, effect=WRITE),
        # a warp-specialized loop (`warp_specialize.py`): the producer warp's code (the region; the
        # warp returns after it), each consumer warp's arrival on mbarriers (mbarriers, slot), and
        # the consumers' wait for the producer to be done
        OpSpec("warp_roles", 0, 0, 0, {"num_warps": _attr(_INT)}, (RegionSpec("producer", "yield"),), effect=WRITE),
        OpSpec("mbarrier_release", 2, 2, 0, effect=WRITE),
        OpSpec("warp_join", 0, 0, 0, {"num_warps": _attr(_INT)}, effect=WRITE),
        OpSpec("tma_store", 3, None, 0, effect=WRITE),
        # waits for asynchronous dots (wgmma) accumulating into its operands
        OpSpec("dot_wait", 0, None, 0, {"pending": _attr(_INT)}, effect=WRITE),
    ]
    return {spec.name: spec for spec in specs}


OP_SPECS: dict[str, OpSpec] = _build_table()

# Ops whose regions end with `yield` (the others are `condition` and `return`).
YIELD_PARENTS = ("for", "if", "while", "reduce", "scan", "map_elementwise", "warp_roles")

# Ops whose regions see only their own arguments: the CUDA backend emits a
# combine region as a device function of its own, so a pass must not make it
# use a value defined outside it.
ISOLATED_PARENTS = ("reduce", "scan")


def op_spec(name: str) -> OpSpec:
    """The spec of the op called `name`; KeyError naming it when there is none."""
    try:
        return OP_SPECS[name]
    except KeyError:
        raise KeyError(f"unknown IR op {name!r}") from None


def effect_of(op: Operation) -> str | None:
    """The effect of `op` by itself (PURE, READ or WRITE; None for unknown ops):
    its spec's, for `special` its name's, for `inline_asm` PURE when it says
    it is pure (the user's promise) and WRITE otherwise."""
    if op.name == "special":
        return SPECIAL_EFFECTS.get(op.attrs.get("name"), WRITE)
    if op.name == "inline_asm":
        return PURE if op.attrs.get("pure") is True else WRITE
    spec = OP_SPECS.get(op.name)
    return None if spec is None else spec.effect


def has_side_effects(op: Operation) -> bool:
    """Whether `op`, or any op nested in its regions, writes memory, prints, traps,
    synchronises or calls; volatile loads count as effects. Unknown ops do."""
    effect = effect_of(op)
    if effect is None or effect == WRITE:
        return True
    if op.name == "load" and op.attrs.get("volatile", False):
        return True
    return any(has_side_effects(inner) for region in op.regions for inner in region.ops)


def is_pure(op: Operation) -> bool:
    """Whether `op` computes its results from its operands alone: no memory access,
    no effect anywhere in its regions, and not a terminator. Pure ops may be
    merged with identical ones and removed when unused."""
    spec = OP_SPECS.get(op.name)
    if spec is None or spec.terminator or effect_of(op) != PURE:
        return False
    return not has_side_effects(op)


def is_pure_elementwise(op: Operation) -> bool:
    """Whether `op` is a pure op of the same-layout rule without regions: each
    result element from the operands' elements at its place (arithmetic, casts,
    hints; pure inline assembly)."""
    spec = OP_SPECS.get(op.name)
    return spec is not None and spec.layout == SAME_LAYOUT and spec.effect == PURE and not spec.regions


def is_removable_when_unused(op: Operation) -> bool:
    """Whether deleting `op` when none of its results is used changes nothing
    observable: pure ops, non-volatile loads, and region ops without effects."""
    spec = OP_SPECS.get(op.name)
    if spec is None or spec.terminator:
        return False
    return effect_of(op) in (PURE, READ) and not has_side_effects(op)


def is_zero_constant(value: Value) -> bool:
    """Whether `value` is a constant zero (a scalar or a splat block, of any type),
    possibly converted to another type: a zero is zero in every type."""
    op = value.defining_op
    while op is not None and op.name == "cast":
        op = op.operands[0].defining_op
    return op is not None and op.name == "constant" and op.attrs.get("value") in (0, 0.0, False)
