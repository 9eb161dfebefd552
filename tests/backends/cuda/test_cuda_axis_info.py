"""Axis analysis on hand-built IR: the facts are what vectorisation needs (strong
enough), and they hold for concrete values that respect the specialisation (sound)."""

import numpy as np
from cuda_ir_builder import KernelBuilder

from tritone.backends.cuda.axis_info import AxisInfo, analyze, max_vector_elements
from tritone.ir import types as T

FP32_PTR = T.pointer_type(T.float32)
SPECIALISED = {0: {"divisibility": 16}, 1: {"divisibility": 16}, 2: {"divisibility": 16}}


# -- a tiny concrete evaluator for the integer ops the tests use ----------------

def _shape(v):
    return tuple(v.type.shape) if v.type.is_block() else (1,)


def evaluate(kb: KernelBuilder, args: list[int], pid: int) -> dict:
    env = {a: np.array([v], dtype=np.int64) for a, v in zip(kb.fn.args, args)}

    def run(region):
        for op in region.ops:
            ins = [env[v] for v in op.operands]
            name = op.name
            if name == "return" or name == "store":
                continue
            if name == "for":
                lb, ub, step = (int(x[0]) for x in ins[:3])
                carried = ins[3:]
                body = op.regions[0]
                for iv in range(lb, ub, step):
                    env[body.args[0]] = np.array([iv])
                    for arg, value in zip(body.args[1:], carried):
                        env[arg] = value
                    run(body)
                    carried = [env[v] for v in body.terminator.operands]
                for result, value in zip(op.results, carried):
                    env[result] = value
                continue
            if name == "yield":
                continue
            out = _shape(op.results[0])
            if name == "program_id":
                r = np.array([pid])
            elif name == "constant":
                r = np.full(out, int(op.attrs["value"]))
            elif name == "arange":
                r = np.arange(op.attrs["start"], op.attrs["end"])
            elif name == "splat":
                r = np.full(out, ins[0][0])
            elif name == "broadcast":
                r = np.broadcast_to(ins[0], out)
            elif name == "expand_dims":
                r = np.expand_dims(ins[0], op.attrs["axis"])
            elif name in ("hint", "convert_layout"):
                r = ins[0]
            elif name == "add":
                r = ins[0] + ins[1]
            elif name == "sub":
                r = ins[0] - ins[1]
            elif name == "mul":
                r = ins[0] * ins[1]
            elif name == "floordiv":
                r = ins[0] // ins[1]
            elif name == "mod":
                r = ins[0] % ins[1]
            elif name == "shl":
                r = ins[0] << ins[1]
            elif name == "cmp":
                r = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
                     "eq": np.equal, "ne": np.not_equal}[op.attrs["pred"]](ins[0], ins[1]).astype(np.int64)
            elif name == "select":
                r = np.where(ins[0] != 0, ins[1], ins[2])
            elif name == "addptr":
                r = ins[0] + ins[1] * op.operands[0].type.scalar.element_ty.itemsize
            else:
                raise AssertionError(f"evaluator lacks {name}")
            env[op.results[0]] = np.array(r).reshape(out)

    run(kb.fn.body)
    return env


def assert_sound(info: AxisInfo, values: np.ndarray, step: int = 1) -> None:
    """`step`: what one element adds (a pointer's element size)."""
    for d in range(values.ndim):
        moved = np.moveaxis(values, d, -1)
        n = moved.shape[-1]
        c, v, k = info.contiguity[d], info.divisibility[d], info.constancy[d]
        assert n % c == 0 and n % k == 0
        runs = moved.reshape(moved.shape[:-1] + (n // c, c))
        assert (runs - runs[..., :1] == np.arange(c) * step).all(), f"contiguity {c} wrong along {d}: {values}"
        assert (runs[..., 0] % v == 0).all(), f"divisibility {v} wrong along {d}: {values}"
        groups = moved.reshape(moved.shape[:-1] + (n // k, k))
        assert (groups == groups[..., :1]).all(), f"constancy {k} wrong along {d}: {values}"


def check_all(kb: KernelBuilder, make_args, trials: int = 20):
    infos = analyze(kb.fn)
    rng = np.random.default_rng(7)
    # hints are the user's promises, not facts the test data keeps
    values = [v for op in kb.fn.walk() if op.name != "hint" for v in op.results] + list(kb.fn.args)
    for _ in range(trials):
        env = evaluate(kb, make_args(rng), int(rng.integers(0, 1000)))
        for v in values:
            if v in env:
                step = v.type.scalar.element_ty.itemsize if v.type.scalar.is_ptr() else 1
                assert_sound(infos.get(v), env[v], step)
    return infos


def _spec_args(rng):
    return [16 * int(rng.integers(1, 1 << 20)), 16 * int(rng.integers(1, 1 << 20)), 16 * int(rng.integers(1, 64))]


def test_vector_add_offsets_mask_and_pointer():
    kb = KernelBuilder("add", [("x", FP32_PTR), ("y", FP32_PTR), ("n", T.int32)], arg_attrs=SPECIALISED)
    block = 1024
    offs = kb.add(kb.splat(kb.mul(kb.pid(), kb.const(block, T.int32)), [block]), kb.arange(0, block))
    mask = kb.cmp("lt", offs, kb.splat(kb.args[2], [block]))
    ptr = kb.ptr_block(kb.args[0], offs)
    infos = check_all(kb, _spec_args)
    assert infos.get(offs).contiguity == (block,) and infos.get(offs).divisibility == (block,)
    assert infos.get(ptr).contiguity == (block,)
    assert infos.get(ptr).divisibility == (16,)  # 16-byte base, offsets of 1024 elements
    assert infos.get(mask).constancy == (16,)
    assert max_vector_elements(infos.get(ptr), 0, 4) == 4
    assert max_vector_elements(infos.get(ptr), 0, 2) == 8
    assert max_vector_elements(infos.get(ptr), 0, 8) == 2


def test_unspecialised_arguments_give_scalar_accesses():
    kb = KernelBuilder("add", [("x", FP32_PTR), ("y", FP32_PTR), ("n", T.int32)])
    offs = kb.add(kb.splat(kb.mul(kb.pid(), kb.const(256, T.int32)), [256]), kb.arange(0, 256))
    ptr = kb.ptr_block(kb.args[0], offs)
    mask = kb.cmp("lt", offs, kb.splat(kb.args[2], [256]))
    infos = check_all(kb, lambda rng: [int(rng.integers(1, 1 << 30)) * 4, 4, int(rng.integers(1, 5000))])
    assert infos.get(ptr).contiguity == (256,)
    assert max_vector_elements(infos.get(ptr), 0, 4) == 1
    assert infos.get(mask).constancy == (1,)


def test_two_d_row_major_tile():
    kb = KernelBuilder("tile", [("x", FP32_PTR), ("stride", T.int32), ("n", T.int32)], arg_attrs=SPECIALISED)
    rows = kb.expand_dims(kb.arange(0, 32), 1)
    cols = kb.expand_dims(kb.arange(0, 64), 0)
    row_off = kb.broadcast(kb.mul(rows, kb.splat(kb.args[1], [32, 1])), [32, 64])
    offs = kb.add(row_off, kb.broadcast(cols, [32, 64]))
    ptr = kb.ptr_block(kb.args[0], offs)
    col_major = kb.add(kb.broadcast(rows, [32, 64]), kb.broadcast(kb.mul(cols, kb.splat(kb.args[1], [1, 64])),
                                                                  [32, 64]))
    infos = check_all(kb, _spec_args)
    assert infos.get(ptr).contiguity == (1, 64)
    assert infos.get(ptr).divisibility[1] == 16
    assert max_vector_elements(infos.get(ptr), 1, 4) == 4
    assert infos.get(col_major).contiguity == (32, 1)
    assert infos.get(row_off).constancy == (1, 64)


def test_hints_mod_floordiv_and_select():
    kb = KernelBuilder("mm", [("x", FP32_PTR), ("m", T.int32), ("n", T.int32)], arg_attrs=SPECIALISED)
    offs = kb.add(kb.splat(kb.mul(kb.pid(), kb.const(128, T.int32)), [128]), kb.arange(0, 128))
    wrapped = kb.binary("mod", offs, kb.splat(kb.args[1], [128]))
    hinted = kb.hint(kb.hint(wrapped, "multiple_of", [128]), "max_contiguous", [128])
    quarter = kb.binary("floordiv", kb.arange(0, 64), kb.splat(kb.const(4, T.int32), [64]))
    shifted = kb.binary("shl", kb.arange(0, 64), kb.splat(kb.const(3, T.int32), [64]))
    cond = kb.cmp("lt", kb.arange(0, 64), kb.splat(kb.const(32, T.int32), [64]))
    chosen = kb.op("select", [cond, kb.arange(0, 64), kb.arange(64, 128)], T.block_type(T.int32, [64]))
    infos = check_all(kb, _spec_args)
    assert infos.get(wrapped).contiguity == (16,)  # m is only known to be a multiple of 16
    assert infos.get(hinted).contiguity == (128,) and infos.get(hinted).divisibility == (128,)
    assert infos.get(quarter).constancy == (4,)
    assert infos.get(shifted).divisibility == (8,)
    assert infos.get(cond).constancy == (32,)
    assert infos.get(chosen).contiguity == (32,)


def test_loop_carried_pointer_keeps_contiguity():
    kb = KernelBuilder("loop", [("x", FP32_PTR), ("k", T.int32), ("n", T.int32)], arg_attrs={0: {"divisibility": 16}})
    ptr = kb.ptr_block(kb.args[0], kb.arange(0, 64))
    lb, ub, step = kb.const(0, T.int32), kb.args[1], kb.const(1, T.int32)
    body, (iv, p) = kb.region([T.int32, ptr.type])
    with kb.inside(body):
        nxt = kb.addptr(p, kb.splat(kb.const(32, T.int32), [64]))
        kb.op("yield", [nxt])
    loop = kb.op_multi("for", [lb, ub, step, ptr], [ptr.type], [body])
    odd = kb.const(3, T.int32)
    body2, (iv2, q) = kb.region([T.int32, ptr.type])
    with kb.inside(body2):
        kb.op("yield", [kb.addptr(q, kb.splat(odd, [64]))])
    loop2 = kb.op_multi("for", [lb, kb.const(5, T.int32), step, ptr], [ptr.type], [body2])
    infos = check_all(kb, lambda rng: [16 * int(rng.integers(1, 99)), int(rng.integers(0, 6)), 16])
    assert infos.get(loop.results[0]).contiguity == (64,)
    assert infos.get(loop.results[0]).divisibility == (16,)
    assert infos.get(p).divisibility == (16,)
    assert infos.get(loop2.results[0]).divisibility == (4,)  # fp32 steps of 3 elements: only 4-byte aligned
    assert infos.get(iv).divisibility == (1,)
