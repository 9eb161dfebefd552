"""The C++ the code generator writes for an element's coordinate (`Emitter.coord`,
`Emitter.coord_in_loop`): a thread's part (lanes and warps) combined with the
register's. Where the two parts set disjoint bits the combination is an add, which
NVVM folds into a sum the loop changes (a causal mask's `start_n + column`: one
register for the row of columns rather than one per column held across the loop);
elsewhere it stays a XOR. Either way it names every element the layout places."""

import itertools

import pytest

from tritone.backends.cuda.codegen_base import CodegenOptions, Emitter
from tritone.ir.core import Function, Module
from tritone.ir.layouts import BlockedLayout, LinearLayout, NvidiaMmaLayout, SliceLayout

NUM_WARPS = 8


def emitter() -> Emitter:
    module = Module(attrs={"num_warps": NUM_WARPS})
    return Emitter(module.add(Function("k", [], [], attrs={"kernel": True})), 90, CodegenOptions(num_warps=NUM_WARPS))


def evaluate(em: Emitter, expr: str, lane: int, warp: int, **loop) -> int:
    """The C++ expression's value in lane `lane` of warp `warp` (the prologue's
    thread coordinates defined first; the operators mean the same in Python)."""
    names = {"tt_lane": lane, "tt_warp": warp, **loop}
    for line in em.prologue:
        name, value = line.removeprefix("const int ").rstrip(";").split(" = ")
        names[name] = eval(value, {}, names)
    return eval(expr, {}, names)


# Disjoint: the mma accumulator, blocked layouts. Overlapping: a lane and a register
# basis share bit 0 of dim 1, as a swizzle's XOR does.
OVERLAPPING = LinearLayout((4, 16), registers=((0, 1), (0, 2), (1, 0)), lanes=((0, 4), (0, 8), (2, 0), (0, 1), (0, 3)),
                           warps=())
LAYOUTS = {
    "mma": NvidiaMmaLayout((2, 0), (NUM_WARPS, 1), (16, 8)).linear((128, 64)),
    "mma rows": SliceLayout(1, NvidiaMmaLayout((2, 0), (4, 2), (16, 8))).linear((64,)),
    "blocked": BlockedLayout((1, 4), (4, 8), (NUM_WARPS, 1), (1, 0)).linear((64, 64)),
    "overlapping": OVERLAPPING,
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_every_coordinate_names_the_element_the_layout_places(name):
    linear = LAYOUTS[name]
    em = emitter()
    for dim in range(linear.rank):
        exprs = [em.coord(linear, dim, reg) for reg in range(linear.num_registers)]
        looped = em.coord_in_loop(linear, dim, "i")
        for lane, warp in itertools.product(range(linear.num_lanes), range(linear.num_warps)):
            for reg, expr in enumerate(exprs):
                want = linear.coords(reg, lane, warp)[dim]
                assert evaluate(em, expr, lane, warp) == want, (name, dim, reg, lane, warp, expr)
                assert evaluate(em, looped, lane, warp, i=reg) == want, (name, dim, reg, lane, warp, looped)


def test_disjoint_parts_add_and_overlapping_parts_xor():
    em = emitter()
    mma = LAYOUTS["mma"]
    # the accumulator's columns: lane bits 1-2, register bits 0 and 3-5
    assert [em.coord(mma, 1, reg) for reg in (1, 4, 5)] == ["(tt_tc0 + 1)", "(tt_tc0 + 8)", "(tt_tc0 + 9)"]
    assert em.coord_in_loop(mma, 1, "i").startswith("(tt_tc0 + (")
    assert "^" not in em.coord(mma, 0, 2)
    # bit 0 of dim 1 comes from lane 3 and from register 0: XOR, not add
    assert em.coord(OVERLAPPING, 1, 1).endswith(" ^ 1)")
    assert " ^ " in em.coord_in_loop(OVERLAPPING, 1, "i")
