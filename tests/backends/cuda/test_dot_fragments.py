"""The generated mma code feeds every tensor-core instruction the right elements,
checked without a GPU: a simulator evaluates the generated C++ address
arithmetic for every lane and warp, models `st.shared`, `cp.async`, `ldmatrix`
(plain and `.trans`) and the fp8/tf32 fragment conversions, and assembles each
`mma` call's operands with the fragment layouts of PTX_FACTS 1.2 (checked on
an H200). For every accumulator element, each mma must pair a[.., m, k] with
b[.., k, n] for the element's m and n, and over all mmas every k must come
exactly as often as every other (once; three times for tf32x3).

What follows the mmas (the accumulator's conversions, layout conversions
through shared memory, packing of 16-bit values, masked stores) is checked by
running whole kernels on the CPU (`cuda_emulator.py`: the generated C++ itself,
its PTX translated) against numpy with fresh random inputs.

Kernels are written in the Triton language and compiled by the frontend."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from types import MappingProxyType

import cuda_emulator
import numpy as np
import pytest
from test_dot_compile import (
    ATTENTION_BLOCK_PTR_SIG,
    ATTENTION_SIG,
    MATMUL_SIG,
    attention_block_ptr_kernel,
    attention_kernel,
    batched_kernel,
    dot_kernel,
    ir_module,
    matmul_constexprs,
    matmul_kernel,
)

import tritone.language as tl
from tritone.backends.compiler import GPUTarget
from tritone.backends.cuda.dot.shared import TileGeometry
from tritone.backends.cuda.lowering import generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir

# -- kernels -------------------------------------------------------------------------------


def compile_ir(fn, signature, constexprs, arch, num_warps=4, divisible=()):
    src = ASTSource(fn, signature, constexprs, {name: [["tt.divisibility", 16]] for name in divisible})
    return make_ir(src, GPUTarget("cuda", arch, 32), {"num_warps": num_warps})


_DOT_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "stride_am": "i32", "stride_ak": "i32",
            "stride_bk": "i32", "stride_bn": "i32"}


def dot_module(arch, dtype, m, n, k, trans_a=False, trans_b=False, acc=tl.float32, precision="tf32",
               num_warps=4, acc_name="fp32"):
    sig = dict(_DOT_SIG, a_ptr=f"*{dtype}", b_ptr=f"*{dtype}", c_ptr=f"*{acc_name}")
    consts = {"M": m, "N": n, "K": k, "TRANS_A": trans_a, "TRANS_B": trans_b, "ACC": acc, "PRECISION": precision,
              # unit strides along the contiguous dims, so loads are vectorised
              "stride_ak" if not trans_a else "stride_am": 1, "stride_bn" if not trans_b else "stride_bk": 1}
    sig = {name: t for name, t in sig.items() if name not in consts}
    return compile_ir(dot_kernel, sig, consts, arch, num_warps, divisible=tuple(sig))


# -- the simulator --------------------------------------------------------------------------------

def lower(module, target):
    """Run the GPU passes and the code generator; the Emitter (lines, prologue, names)."""
    from tritone.backends.cuda.codegen import generate_kernel  # noqa: F401  (registers the generators)
    from tritone.backends.cuda.codegen_base import CodegenOptions, Emitter
    from tritone.backends.cuda.lowering import GPU_PASSES
    from tritone.passes import PassContext

    num_warps = int(module.attrs.get("num_warps", 4))
    module.attrs["num_warps"] = num_warps
    ctx = PassContext(MappingProxyType({"num_warps": num_warps, "target": target,
                                        "num_stages": module.attrs.get("num_stages", 3)}))
    for pass_module in GPU_PASSES:
        pass_module.run(module, ctx)
    fn = module.kernel
    em = Emitter(fn, target, CodegenOptions(num_warps=num_warps), int(module.attrs.get("shared", 0)))
    for i, arg in enumerate(fn.args):
        em.bind(arg, f"arg{i}")
    em.emit_region(fn.body)
    return em


_CAST = re.compile(r"\((?:unsigned|int|unsigned short|unsigned char|signed char|short)\)")
_SUFFIX = re.compile(r"\b(0x[0-9a-fA-F]+|\d+)u\b")


@functools.lru_cache(maxsize=None)
def _py(expr: str):
    """The C++ integer expression as compiled Python (same operators, same precedence)."""
    expr = _CAST.sub("", expr)
    return compile(_SUFFIX.sub(r"\1", expr).replace("tt_shared_u32(tt_smem)", "0"), "<c++>", "eval")


def _split_args(text: str) -> list[str]:
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([" and 1 or 0
        depth -= ch in ")]" and 1 or 0
        cur += ch
    if cur.strip():
        args.append(cur.strip())
    return args


_REF = re.compile(r"(\w+)\[(\d+)\]")
# Vector types the FMA dot reads operands with: (elements, bytes per element).
_VECTOR_READS = {"float4": (4, 4), "float2": (2, 4), "double2": (2, 8)}

_SHARED_READ = re.compile(r"\*reinterpret_cast<const ([\w ]+)\*>\(tt_smem \+ ")


def _smem_reads(expr: str) -> list[str]:
    """The address expressions of `*reinterpret_cast<const T*>(tt_smem + ADDR)` in order."""
    out = []
    for match in _SHARED_READ.finditer(expr):
        depth, i = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(expr[i], 0)
            i += 1
        out.append(expr[match.end():i - 1])
    return out


class SharedMemory:
    """Shared memory seen by threads in lockstep, checking the synchronisation: a
    byte written by one thread and read or written by another between the same
    two barriers is a race; `cp.async` writes land at their `cp.async.wait_group`
    (for the issuing thread), and reading a byte a copy is still headed for is a
    race too."""

    def __init__(self):
        self.data: dict[int, tuple] = {}
        self.epoch = 0
        self.writer: dict[int, tuple] = {}
        self.readers: dict[int, tuple[int, set]] = {}
        self.open: dict[tuple, list] = {}
        self.groups: dict[tuple, list] = {}
        self.in_flight: Counter = Counter()
        self.races: list[str] = []

    def barrier(self) -> None:
        self.epoch += 1

    def _others_reading(self, thread, byte) -> bool:
        readers = self.readers.get(byte)
        return readers is not None and readers[0] == self.epoch and bool(readers[1] - {thread})

    def write(self, thread, byte, content) -> None:
        last = self.writer.get(byte)
        if last and last[1] == self.epoch and last[0] != thread and last[2] != content:
            self.races.append(f"byte {byte}: {last[2]} and {content} written by two threads without a barrier")
        if self._others_reading(thread, byte):
            self.races.append(f"byte {byte}: {content} written while another thread reads it")
        self.writer[byte] = (thread, self.epoch, content)
        self.data[byte] = content

    def copy(self, thread, byte, content) -> None:
        if self._others_reading(thread, byte):
            self.races.append(f"byte {byte}: cp.async of {content} issued while another thread reads it")
        self.open.setdefault(thread, []).append((byte, content))
        self.in_flight[byte] += 1

    def commit(self, thread) -> None:
        self.groups.setdefault(thread, []).append(self.open.pop(thread, []))

    def wait(self, thread, pending: int) -> None:
        groups = self.groups.get(thread, [])
        done, self.groups[thread] = groups[:max(0, len(groups) - pending)], groups[len(groups) - pending:]
        for group in done:
            for byte, content in group:
                self.in_flight[byte] -= 1
                self.write(thread, byte, content)

    def read(self, thread, byte):
        if self.in_flight[byte]:
            self.races.append(f"byte {byte} read before the copy headed for it arrived")
        last = self.writer.get(byte)
        if last and last[1] == self.epoch and last[0] != thread:
            self.races.append(f"byte {byte}: {last[2]} read by another thread without a barrier")
        readers = self.readers.get(byte)
        if readers is None or readers[0] != self.epoch:
            readers = self.readers[byte] = (self.epoch, set())
        readers[1].add(thread)
        return self.data[byte]


class Simulator:
    """Runs the shared-memory and mma lines of one generated kernel body for every
    thread; `check_dot(op)` verifies the mmas of a dot."""

    def __init__(self, em, num_warps):
        self.em = em
        self.num_warps = num_warps
        self.values = {name: value for value, name in em.names.items()}
        self.smem = SharedMemory()
        # 8-address phases of ldmatrix and 16-byte st.shared that hit a 16-byte bank group twice
        self.conflicts = 0
        # FMA dots: (warp, result element, a element, b element) per product
        self.products: list[tuple] = []
        self.tiles = []
        for op in em.fn.walk():
            if op.name == "local_alloc":
                ty = op.results[0].type
                geom = TileGeometry(ty.layout, tuple(ty.shape), ty.scalar.itemsize)
                self.tiles.append((int(op.attrs["offset"]), em.names[op.operands[0]], geom))
        self._prologue = [m.groups() for m in (re.match(r"const (?:int|unsigned) (\w+) = (.*);$", line)
                                               for line in em.prologue) if m]
        self._lines = [line.strip() for line in em.lines if "tt_" in line or "const unsigned s" in line
                       or line.strip() == "}" or "cp.async" in line or "__syncthreads" in line
                       or re.match(r"\s*(?:const )?(?:int|unsigned|bool) \w+ = ", line)]

    def elements(self, name: str, reg: int, lane: int, warp: int):
        """(storage name, coordinates) of register `reg` of a register array."""
        ty = self.values[name].type
        return (name, ty.layout.linear(tuple(ty.shape)).coords(reg, lane, warp))

    def run(self):
        """Every mma call: {"helper", "warp", "lanes": {lane: [operand element lists]}}.

        The threads run in lockstep, one generated statement at a time for all of
        them (a valid order for code whose barriers are right): a store replaces
        what an earlier one left, and two threads storing different elements at
        one byte in the same statement fail."""
        threads = [(w, lane) for w in range(self.num_warps) for lane in range(32)]
        env_of = {}
        events = {t: self._thread(*t, env_of) for t in threads}
        count = len(events[threads[0]])
        assert all(len(evs) == count for evs in events.values()), "threads run different statements"
        regs = {t: {} for t in threads}
        calls = []
        for i in range(count):
            kind = events[threads[0]][i][0]
            if kind == "barrier":
                self.smem.barrier()
            elif kind == "commit":
                for t in threads:
                    self.smem.commit(t)
            elif kind == "wait":
                for t in threads:
                    self.smem.wait(t, events[t][i][1])
            elif kind == "store":
                self._store(events, threads, i)
            elif kind == "ldmatrix":
                for warp in range(self.num_warps):
                    rows = [events[(warp, lane)][i][4] for lane in range(32)]
                    for q in range(events[(warp, 0)][i][2]):
                        self._count_conflicts(rows[8 * q:8 * q + 8])
                    for lane in range(32):
                        for q, out in enumerate(events[(warp, lane)][i][1]):
                            regs[(warp, lane)][out] = self._ldmatrix(rows[8 * q:8 * q + 8], (warp, lane),
                                                                     events[(warp, 0)][i][3])
            elif kind == "mma":
                for warp in range(self.num_warps):
                    call = {"helper": events[(warp, 0)][i][1], "warp": warp, "lanes": {}}
                    for lane in range(32):
                        call["lanes"][lane] = [self._value(regs[(warp, lane)], a, lane, warp)
                                               for a in events[(warp, lane)][i][2]]
                    calls.append(call)
            elif kind == "fma":
                for warp, lane in threads:
                    self.products.extend(self._fma(events[(warp, lane)][i], env_of[(warp, lane)], lane, warp))
            else:
                for warp, lane in threads:
                    self._local(regs[(warp, lane)], events[(warp, lane)][i], lane, warp)
        assert not self.smem.races, self.smem.races[:3]
        return calls

    def _store(self, events, threads, i):
        if events[threads[0]][i][3] * len(events[threads[0]][i][2]) == 16:
            for warp in range(self.num_warps):
                for quarter in range(4):
                    self._count_conflicts([events[(warp, lane)][i][1] for lane in range(8 * quarter, 8 * quarter + 8)])
        written: dict[int, tuple] = {}
        for t in threads:
            _, address, elems, eb, family, asynchronous = events[t][i]
            self._check_layout(address, elems)
            for j, elem in enumerate(elems):
                for byte in range(eb):
                    key = address + j * eb + byte
                    new = (elem, byte, family)
                    old = written.get(key)
                    # stages of a pipeline buffer are written from several pointer arrays
                    # (prologue, loop): the same tile element must land at one byte
                    assert old is None or (old[0][1], old[1], old[2]) == (elem[1], byte, family), (
                        f"shared byte {key} written with {old} and {new} by one statement")
                    written[key] = new
                    if asynchronous:
                        self.smem.copy(t, key, new)
                    else:
                        self.smem.write(t, key, new)

    def _fma(self, ev, env, lane, warp):
        """(warp, result element, a element, b element) of every product of an FMA dot loop;
        a vector read's components are named `tt_opN.x`, `.y`, ..."""
        _, k_size, step, reads, updates = ev
        out = []
        for k in range(0, k_size, step):
            scope = _Default(env)
            scope["tt_k"] = k
            values = {}
            for name, expr, ctype in reads:
                address = eval(_py(expr), {}, scope)
                width, elem_bytes = _VECTOR_READS.get(ctype, (1, 0))
                if width == 1:
                    values[name] = self.smem.read((warp, lane), address)[0]
                for i in range(width if width > 1 else 0):
                    values[f"{name}.{'xyzw'[i]}"] = self.smem.read((warp, lane), address + i * elem_bytes)[0]
            for array, reg, a, b in updates:
                result = self.elements(array, reg, lane, warp)
                out.append((warp, result, values[a], values[b]))
        return out

    def _count_conflicts(self, addresses):
        if len({a // 16 for a in addresses}) == len({(a // 16) % 8 for a in addresses}):
            return
        self.conflicts += 1

    def _check_layout(self, address, elems):
        """A stored element sits where its tile's layout says (PTX_FACTS 4)."""
        for base, source, geom in self.tiles:
            if elems[0][0] == source:
                for i, (_, coords) in enumerate(elems):
                    expected = base + geom.byte_offset(coords)
                    assert address + i * geom.elem_bytes == expected, (
                        f"{coords} stored at {address + i * geom.elem_bytes}, layout says {expected}")

    def _local(self, regs, ev, lane, warp):
        if ev[0] == "elements":
            regs[ev[1]] = [self.smem.read((warp, lane), a)[0] for a in ev[2]]
        elif ev[0] == "convert":
            elems = self._value(regs, ev[1], lane, warp)
            regs[ev[2]], regs[ev[3]] = elems[:2], elems[2:]
        elif ev[0] == "alias":
            regs[ev[1]] = self._value(regs, ev[2], lane, warp)

    def _ldmatrix(self, rows, thread, trans):
        """What one lane receives of one 8x8 b16 matrix whose rows start at `rows` (PTX_FACTS 2)."""
        t, g = thread[1] & 3, thread[1] >> 2
        if not trans:
            data = [self.smem.read(thread, rows[g] + 4 * t + b) for b in range(4)]
        else:
            data = [self.smem.read(thread, rows[2 * t + h] + 2 * g + b) for h in range(2) for b in range(2)]
        return [elem for elem, byte, _ in data if byte == 0]

    def _value(self, regs, arg, lane, warp):
        arg = arg.strip()
        if arg in regs:
            return regs[arg]
        refs = _REF.findall(arg)
        if not refs:
            raise AssertionError(f"cannot evaluate mma operand {arg}")
        if len(refs) == 1 and f"{refs[0][0]}[{refs[0][1]}]" in regs:
            return regs[f"{refs[0][0]}[{refs[0][1]}]"]
        return [self.elements(name, int(reg), lane, warp) for name, reg in refs]

    def _thread(self, warp, lane, env_of):
        env = env_of[(warp, lane)] = {"tt_lane": lane, "tt_warp": warp}
        for name, expr in self._prologue:
            env[name] = eval(_py(expr), {}, env)

        def ev(expr):
            try:
                return eval(_py(expr), {}, _Default(env))
            except Exception as exc:  # pragma: no cover - a failure names the expression
                raise AssertionError(f"cannot evaluate {expr}: {exc}") from None

        events = []
        lines = self._lines
        pending_copy = None
        families = {}
        fma = None
        for line in lines:
            if line == "__syncthreads();":
                events.append(("barrier",))
                continue
            if "cp.async.commit_group" in line:
                events.append(("commit",))
                continue
            m = re.search(r"cp\.async\.wait_group (?:\\t)?(\d+)", line)
            if m:
                events.append(("wait", int(m.group(1))))
                continue
            m = re.match(r"for \(int tt_k = 0; tt_k < (\d+); (?:\+\+tt_k|tt_k \+= (\d+))\) \{", line)
            if m:
                fma = ("fma", int(m.group(1)), int(m.group(2) or 1), [], [])
                continue
            if fma is not None:
                if line == "}":
                    events.append(fma)
                    fma = None
                    continue
                m = re.match(r"const (\w+) (tt_op\d+) = (.*);$", line)
                if m:
                    fma[3].append((m.group(2), _smem_reads(m.group(3))[0], m.group(1)))
                    continue
                m = re.match(r"(\w+)\[(\d+)\] = .*?(tt_op\d+(?:\.[xyzw])?)\W.*?(tt_op\d+(?:\.[xyzw])?)\W", line)
                if m:
                    fma[4].append((m.group(1), int(m.group(2)), m.group(3), m.group(4)))
                continue
            m = re.match(r"(?:const )?(?:int|unsigned|bool) (\w+) = (.*?);(\s*//.*)?$", line)
            if m and not m.group(1).startswith(("tt_f", "tt_big", "tt_small")):
                if m.group(1).startswith("tt_stage"):
                    families[m.group(1)] = re.search(r"\bs\d+\w*", m.group(2)).group(0)
                try:
                    env[m.group(1)] = eval(_py(m.group(2)), {}, _Default(env))
                except Exception:  # a scalar the address arithmetic does not need
                    pass
                continue
            m = re.match(r"memcpy\(tt_w, &(\w+)\[(\d+)\], (\d+)\);", line)
            if m:
                pending_copy = (m.group(1), int(m.group(2)), int(m.group(3)))
                continue
            m = re.match(r'asm volatile\("st\.shared\.\S+ \[%0\].*?:: "r"\((.*?)\), "[rh]"\(tt_w', line)
            if m and pending_copy:
                name, first, nbytes = pending_copy
                eb = self.values[name].type.scalar.itemsize
                elems = [self.elements(name, first + i, lane, warp) for i in range(nbytes // eb)]
                family = re.search(r"\bs\d+\w*", m.group(1)).group(0)
                events.append(("store", ev(m.group(1)), elems, eb, family, False))
                pending_copy = None
                continue
            m = re.match(r"tt_cp_async(\d+)\((.*)\);$", line)
            if m:
                dst, src, _pred = _split_args(m.group(2))
                name, first = _REF.match(src).groups()
                value = self.values[name]
                eb = value.type.scalar.element_ty.itemsize
                count = int(m.group(1)) // eb
                elems = [self.elements(name, int(first) + i, lane, warp) for i in range(count)]
                events.append(("store", ev(dst), elems, eb, families[dst.split()[0]], True))
                continue
            m = re.match(r"(tt_ldmatrix_x(\d)(_trans)?)\((.*)\);$", line)
            if m:
                args = _split_args(m.group(4))
                count = int(m.group(2))
                events.append(("ldmatrix", args[:count], count, bool(m.group(3)), ev(args[-1])))
                continue
            m = re.match(r"const unsigned (tt_fe\d+) = (.*);$", line)
            if m:
                events.append(("elements", m.group(1), [ev(a) for a in _smem_reads(m.group(2))]))
                continue
            m = re.match(r"(tt_e\w+_to_f16x4)\((.*)\);$", line)
            if m:
                x, lo, hi = _split_args(m.group(2))
                events.append(("convert", x, lo, hi))
                continue
            m = re.match(r"const unsigned (tt_(?:big|small)\d+) = (.*);$", line)
            if m:
                source = re.search(r"tt_frag\d+\[\d+\]|tt_fe\d+|\w+\[\d+\]", m.group(2)).group(0)
                events.append(("alias", m.group(1), source))
                continue
            m = re.match(r"(tt_mma_\w+)\((.*)\);$", line)
            if m:
                events.append(("mma", m.group(1), _split_args(m.group(2))))
        return events

class _Default(dict):
    """Names the address arithmetic does not know (a pipeline's stage index) read as 0."""

    def __init__(self, env):
        super().__init__(env)

    def __missing__(self, key):
        return 0


# PTX_FACTS 1.2: (rows of a, cols of a = k), (k, n) of b, per (lane, register, part)
def _frag_a(shape, lane, reg, part):
    g, t = lane >> 2, lane & 3
    if shape in ("m16n8k16", "m16n8k8_f16"):
        return g + 8 * (reg & 1), 2 * t + part + 8 * (reg >> 1)
    if shape == "m16n8k8_tf32":
        return g + 8 * (reg & 1), t + 4 * (reg >> 1)
    if shape == "m16n8k32":
        return g + 8 * (reg & 1), 4 * t + part + 16 * (reg >> 1)
    if shape == "m8n8k16":
        return g, 4 * t + part
    raise KeyError(shape)


def _frag_b(shape, lane, reg, part):
    g, t = lane >> 2, lane & 3
    if shape in ("m16n8k16", "m16n8k8_f16"):
        return 2 * t + part + 8 * reg, g
    if shape == "m16n8k8_tf32":
        return t + 4 * reg, g
    if shape == "m16n8k32":
        return 4 * t + part + 16 * reg, g
    if shape == "m8n8k16":
        return 4 * t + part, g
    raise KeyError(shape)


def _frag_c(shape, lane, i):
    g, t = lane >> 2, lane & 3
    return g + 8 * (i >> 1), 2 * t + (i & 1)


def _shape_of(helper):
    if "m16n8k16" in helper:
        return "m16n8k16", 4, 4, 2
    if "m16n8k8" in helper and "tf32" in helper:
        return "m16n8k8_tf32", 4, 4, 2
    if "m16n8k8" in helper:
        return "m16n8k8_f16", 4, 2, 1
    if "m16n8k32" in helper:
        return "m16n8k32", 4, 4, 2
    if "m8n8k16" in helper:
        return "m8n8k16", 2, 1, 1
    raise KeyError(helper)


def storage_names(em, value):
    """The register arrays whose elements a dot operand's fragments come from, each
    with the permutation from its coordinates to the operand's (None: the same):
    the operand itself, what was stored into its tile, or what was copied into its
    pipeline buffer (seen through a `permute` of the tile)."""
    op = value.defining_op
    order = None
    while op is not None and op.name == "permute":
        step = tuple(op.attrs["order"])
        order = step if order is None else tuple(step[i] for i in order)
        value = op.operands[0]
        op = value.defining_op
    if op is not None and op.name == "local_alloc":
        return {em.names[op.operands[0]]: None}
    if op is not None and op.name == "local_index":
        buffer = op.operands[0]
        return {em.names[c.operands[2]]: order for c in em.fn.walk()
                if c.name == "async_copy" and c.operands[0] is buffer}
    return {em.names[value]: None}


def _in_operand_order(names, element):
    source, coords = element
    assert source in names, f"operand from {source}"
    order = names[source]
    return coords if order is None else tuple(coords[d] for d in order)


def check_mmas(calls, a_names, b_names, result_name, k_size, result_shape, repeats=1):
    """Every mma pairs a[.., m, k] with b[.., k, n] for its accumulator's (m, n);
    in each warp, each of its result elements gets every k `repeats` times; the
    warps together cover the result. Returns how many mmas ran."""
    seen: dict[tuple, Counter] = {}
    for call in calls:
        shape, n_c, n_a, n_b = _shape_of(call["helper"])
        assert len(call["lanes"]) == 32, "an mma not executed by all lanes"
        a_mat, b_mat, c_mat = {}, {}, {}
        for lane, args in call["lanes"].items():
            c, a, b = args[:n_c], args[n_c:n_c + n_a], args[n_c + n_a:]
            for i, (elem,) in enumerate(c):
                assert elem[0] == result_name, f"accumulator operand {elem}"
                c_mat[_frag_c(shape, lane, i)] = elem[1]
            for r, reg in enumerate(a):
                for part, elem in enumerate(reg):
                    a_mat[_frag_a(shape, lane, r, part)] = elem
            for r, reg in enumerate(b):
                for part, elem in enumerate(reg):
                    b_mat[_frag_b(shape, lane, r, part)] = elem
        ks = sorted({k for _, k in a_mat})
        assert ks == sorted({k for k, _ in b_mat})
        for (row, col), coords in c_mat.items():
            counter = seen.setdefault((call["warp"], coords), Counter())
            for k in ks:
                a_coords = _in_operand_order(a_names, a_mat[(row, k)])
                b_coords = _in_operand_order(b_names, b_mat[(k, col)])
                assert a_coords[:-2] == coords[:-2] == b_coords[:-2], f"batch {a_coords} {b_coords} -> {coords}"
                assert a_coords[-2] == coords[-2], f"a row {a_coords} for result {coords}"
                assert b_coords[-1] == coords[-1], f"b column {b_coords} for result {coords}"
                assert a_coords[-1] == b_coords[-2], f"a k {a_coords} with b k {b_coords}"
                counter[a_coords[-1]] += 1
    for (warp, coords), counter in seen.items():
        assert sorted(counter) == list(range(k_size)), f"result {coords} (warp {warp}) gets k {sorted(counter)}"
        assert set(counter.values()) == {repeats}, f"result {coords} (warp {warp}): k counts {set(counter.values())}"
    covered = {coords for _, coords in seen}
    assert covered == set(np.ndindex(*result_shape)), "the warps leave result elements out"
    return len(calls)


def check_products(products, a_names, b_names, result_name, k_size, result_shape):
    """FMA dots: each thread's accumulator of result (.., m, n) takes a[.., m, k] * b[.., k, n]
    once for every k; the threads together cover the result."""
    seen: dict[tuple, Counter] = {}
    for warp, (name, coords), a_elem, b_elem in products:
        if name != result_name:
            continue
        a_coords, b_coords = _in_operand_order(a_names, a_elem), _in_operand_order(b_names, b_elem)
        assert a_coords[:-2] == coords[:-2] == b_coords[:-2] and a_coords[-2] == coords[-2], (a_coords, coords)
        assert b_coords[-1] == coords[-1] and a_coords[-1] == b_coords[-2], (a_coords, b_coords, coords)
        seen.setdefault((warp, coords), Counter())[a_coords[-1]] += 1
    for key, counter in seen.items():
        assert sorted(counter) == list(range(k_size)) and set(counter.values()) == {1}, (key, counter)
    assert {coords for _, coords in seen} == set(np.ndindex(*result_shape))
    return len(seen)


def simulate_dot(module, target, num_warps=4, index=0, repeats=1):
    """Lower `module`, simulate it, check its `index`-th dot: (mma calls, bank-conflicted
    8-address phases of ldmatrix and 16-byte stores, the Emitter)."""
    em = lower(module, target)
    dots = [op for op in module.kernel.walk() if op.name == "dot"]
    op = dots[index]
    sim = Simulator(em, num_warps)
    calls = sim.run()
    result = em.names[op.results[0]]
    if sim.products:
        count = check_products(sim.products, storage_names(em, op.operands[0]), storage_names(em, op.operands[1]),
                               result, op.operands[0].type.shape[-1], tuple(op.results[0].type.shape))
        return count, sim.conflicts, em
    ours = [c for c in calls if _call_result(c) == result]
    count = check_mmas(ours, storage_names(em, op.operands[0]), storage_names(em, op.operands[1]), result,
                       op.operands[0].type.shape[-1], tuple(op.results[0].type.shape), repeats)
    return count, sim.conflicts, em


def _call_result(call):
    shape, n_c, _, _ = _shape_of(call["helper"])
    return call["lanes"][0][0][0][0]


# -- tests -------------------------------------------------------------------------------------

F32, F16, I32 = tl.float32, tl.float16, tl.int32


@pytest.mark.parametrize("arch, dtype, acc, precision, trans_a, trans_b", [
    (80, "fp16", F32, "tf32", False, False),  # ldmatrix a, ldmatrix.trans b
    (80, "fp16", F16, "tf32", True, True),    # ldmatrix.trans a, ldmatrix b; fp16 accumulator
    (80, "bf16", F32, "tf32", False, True),
    (80, "fp32", F32, "tf32", True, False),   # fp32 a contiguous along m: element loads
    (86, "fp32", F32, "tf32x3", False, False),
    (80, "i8", I32, "tf32", False, True),
    (80, "i8", I32, "tf32", True, False),     # int8 b contiguous along n: element loads
    (89, "fp8e4nv", F32, "tf32", False, True),
    (80, "fp8e5", F16, "tf32", False, False),  # fp8 through fp16 fragments
    (75, "fp16", F32, "tf32", False, False),
    (75, "i8", I32, "tf32", False, True),
    (75, "fp8e4nv", F16, "tf32", True, True),
])
def test_mma_operands_pair_up(arch, dtype, acc, precision, trans_a, trans_b):
    k = 64 if dtype in ("i8", "fp8e4nv", "fp8e5") else 32
    acc_name = {F32: "fp32", F16: "fp16", I32: "i32"}[acc]
    module = dot_module(arch, dtype, 32, 32, k, trans_a, trans_b, acc, precision, 4, acc_name)
    calls, conflicts, _ = simulate_dot(module, arch, repeats=3 if precision == "tf32x3" else 1)
    assert calls > 0
    if dtype in ("fp16", "bf16") or not (trans_a or trans_b):
        assert conflicts == 0


@pytest.mark.parametrize("arch, dtype, acc, precision, trans_a, trans_b, shape", [
    (61, "fp16", F32, "tf32", False, True, (32, 16, 16)),
    (80, "fp32", F32, "ieee", True, False, (16, 32, 16)),
    (75, "bf16", F32, "tf32", True, True, (16, 16, 32)),
    (61, "i8", I32, "tf32", False, False, (16, 16, 32)),
])
def test_fma_products_pair_up(arch, dtype, acc, precision, trans_a, trans_b, shape):
    acc_name = {F32: "fp32", F16: "fp16", I32: "i32"}[acc]
    module = dot_module(arch, dtype, *shape, trans_a, trans_b, acc, precision, 4, acc_name)
    elements, _, _ = simulate_dot(module, arch)
    assert elements >= shape[0] * shape[1]


def test_small_dot_with_replicated_warps():
    calls, _, _ = simulate_dot(dot_module(80, "fp16", 16, 16, 16), 80)
    assert calls == 4  # two 16x8 tiles, each computed by two warps


def test_batched_dot():
    module = compile_ir(batched_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"},
                        {"B": 2, "M": 32, "N": 16, "K": 16}, 80, divisible=("a_ptr", "b_ptr", "c_ptr"))
    calls, conflicts, _ = simulate_dot(module, 80)
    assert calls == 8 and conflicts == 0


def test_pipelined_matmul_tiles():
    module = ir_module(matmul_kernel, MATMUL_SIG, matmul_constexprs(64, 64, 32), 80)
    calls, conflicts, em = simulate_dot(module, 80)
    assert calls == 64 and conflicts == 0
    assert any("tt_cp_async16" in line for line in em.lines)


@pytest.mark.parametrize("block_pointers", [False, True])
def test_attention_dots_take_p_from_registers(block_pointers):
    if block_pointers:  # k's pipelined tile read transposed
        consts = {"HEAD_DIM": 32, "BLOCK_M": 64, "BLOCK_N": 32}
        module = ir_module(attention_block_ptr_kernel, ATTENTION_BLOCK_PTR_SIG, consts, 80)
    else:
        consts = {"HEAD_DIM": 32, "BLOCK_M": 64, "BLOCK_N": 32, "CAUSAL": True}
        module = ir_module(attention_kernel, ATTENTION_SIG, consts, 80)
    em = lower(module, 80)
    sim = Simulator(em, 4)
    calls = sim.run()
    qk, pv = [op for op in module.kernel.walk() if op.name == "dot"]
    assert pv.operands[0].defining_op.name == "convert_layout"  # p: registers, no shared memory
    for op in (qk, pv):
        result = em.names[op.results[0]]
        mine = [c for c in calls if _call_result(c) == result]
        check_mmas(mine, storage_names(em, op.operands[0]), storage_names(em, op.operands[1]), result,
                   op.operands[0].type.shape[-1], tuple(op.results[0].type.shape))
    assert sim.conflicts == 0



# -- whole kernels on the CPU ------------------------------------------------------------------

needs_gxx = pytest.mark.skipif(not cuda_emulator.available(), reason="no g++ to build emulated kernels")

_NP = {"fp16": np.float16, "fp32": np.float32, "i32": np.int32, "i8": np.int8}


def emulate(module, arch, num_warps=4, corrupt=None):
    """The kernel of `module` generated for sm_`arch`, built for the CPU emulator;
    `corrupt(source)` may change the generated source first."""
    source, _, metadata = generate_cuda(module, arch, {"num_warps": num_warps})
    if corrupt is not None:
        source = corrupt(source)
    return cuda_emulator.Emulator(source, num_warps, metadata["shared"])


def _random(rng, shape, dtype):
    if dtype == "i8":
        return rng.integers(-128, 128, shape, dtype=np.int8)
    return rng.standard_normal(shape).astype(_NP[dtype])


def _block_dot(arch, dtype, acc, m, n, k, num_warps=4, corrupt=None):
    sig = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{acc}", "stride_am": "i32", "stride_bk": "i32"}
    consts = {"M": m, "N": n, "K": k, "TRANS_A": False, "TRANS_B": False, "PRECISION": "tf32", "stride_ak": 1,
              "stride_bn": 1, "ACC": {"fp16": F16, "fp32": F32, "i32": I32}[acc]}
    kernel = emulate(ir_module(dot_kernel, sig, consts, arch, num_warps), arch, num_warps, corrupt)
    rng = np.random.default_rng()
    a, b = _random(rng, (m, k), dtype), _random(rng, (k, n), dtype)
    c = np.full((m, n), -12345 if acc == "i32" else np.nan, dtype=_NP[acc])
    kernel.launch((1,), a, b, c, k, n)
    return c, a.astype(np.float64) @ b.astype(np.float64)


@needs_gxx
@pytest.mark.parametrize("arch, dtype, acc, shape", [
    (80, "fp16", "fp16", (32, 64, 32)),   # fp16 accumulator through the layout conversion
    (80, "fp16", "fp16", (16, 16, 16)),   # stored straight from the mma layout
    (80, "fp16", "fp32", (64, 32, 64)),
    (80, "i8", "i32", (32, 32, 64)),
    (75, "fp16", "fp16", (64, 32, 32)),   # two m16n8k8 per fragment tile
])
def test_emulated_block_dot(arch, dtype, acc, shape):
    c, ref = _block_dot(arch, dtype, acc, *shape)
    if acc == "i32":
        np.testing.assert_array_equal(c, ref.astype(np.int64).astype(np.int32))
    else:
        tol = 1e-2 * np.abs(ref).max() if acc == "fp16" else 1e-4
        np.testing.assert_allclose(c.astype(np.float64), ref, atol=tol, rtol=1e-2)


def _drop_high_halves(source):
    # the high fp16 half of each accumulator register lost when it is unpacked
    corrupted, count = re.subn(r"(c[13])\.bits = \(unsigned short\)\(d[01] >> 16\);", r"\1.bits = 0;", source)
    assert count == 2
    return corrupted


@needs_gxx
def test_the_emulator_sees_a_lost_fp16_half():
    """The odd columns of an fp16 result lost (what a wrong packing of two fp16
    values per register gives) fail the emulated run; the even ones stay right."""
    c, ref = _block_dot(80, "fp16", "fp16", 32, 64, 32, corrupt=_drop_high_halves)
    wrong = ~np.isclose(c.astype(np.float64), ref, atol=0.1, rtol=1e-2)
    assert wrong[:, 1::2].mean() > 0.9 and not wrong[:, 0::2].any()


def _emulated_matmul(arch, m, n, k, block, num_warps=4, num_stages=3):
    bm, bn, bk = block
    # the integers as launched below, specialised as Triton does: those divisible by 16 are marked so
    sizes = {"M": m, "N": n, "K": k, "stride_am": k, "stride_bk": n, "stride_cm": n}
    divisible = [name for name in MATMUL_SIG if name not in sizes] + [name for name, v in sizes.items() if v % 16 == 0]
    module = ir_module(matmul_kernel, MATMUL_SIG, matmul_constexprs(bm, bn, bk), arch, num_warps, num_stages,
                       divisible)
    kernel = emulate(module, arch, num_warps)
    rng = np.random.default_rng()
    a, b = _random(rng, (m, k), "fp16"), _random(rng, (k, n), "fp16")
    c = np.full((m, n), np.nan, dtype=np.float16)
    kernel.launch((math.ceil(m / bm) * math.ceil(n / bn),), a, b, c, m, n, k, k, n, n)
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float64), ref.astype(np.float64), atol=2e-2, rtol=2e-3)


@needs_gxx
@pytest.mark.parametrize("arch, m, n, k, block, stages", [
    (80, 128, 128, 160, (64, 64, 32), 3),  # cp.async pipeline, fp32 accumulator to fp16
    (80, 100, 77, 65, (64, 64, 32), 3),    # masked edges, unaligned rows (no pipeline)
    (75, 64, 64, 64, (64, 64, 32), 2),
])
def test_emulated_matmul(arch, m, n, k, block, stages):
    _emulated_matmul(arch, m, n, k, block, num_stages=stages)


@needs_gxx
@pytest.mark.parametrize("k", [70, 93])
def test_emulated_matmul_with_a_k_edge_the_analysis_cannot_see(k):
    # K is not a multiple of 8 but A's rows are 16-byte aligned (a padded leading
    # dimension): A's tiles copy as 16-byte cp.async pieces that check their mask bits
    # at run time, the piece across the edge element by element with zeros after it
    m, n, lda, (bm, bn, bk) = 64, 64, 96, (64, 64, 32)
    divisible = [name for name in MATMUL_SIG if name not in ("K",)]
    module = ir_module(matmul_kernel, MATMUL_SIG, matmul_constexprs(bm, bn, bk), 80, 4, 3, divisible)
    sources = []
    kernel = emulate(module, 80, 4, corrupt=lambda source: sources.append(source) or source)
    assert "cp.async.cg.shared.global" in sources[0] and "st.shared.u16" in sources[0]
    rng = np.random.default_rng()
    a = _random(rng, (m, lda), "fp16")
    a[:, k:] = np.nan  # past the edge: never read
    b = _random(rng, (k, n), "fp16")
    c = np.full((m, n), np.nan, dtype=np.float16)
    kernel.launch((1,), a, b, c, m, n, k, lda, n, n)
    ref = (a[:, :k].astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float64), ref.astype(np.float64), atol=2e-2, rtol=2e-3)


@needs_gxx
@pytest.mark.parametrize("causal", [False, True])
def test_emulated_attention(causal):
    head_dim, block_m, block_n, n_ctx, z, h = 64, 64, 32, 128, 1, 2
    consts = {"HEAD_DIM": head_dim, "BLOCK_M": block_m, "BLOCK_N": block_n, "CAUSAL": causal}
    kernel = emulate(ir_module(attention_kernel, ATTENTION_SIG, consts, 80), 80)
    rng = np.random.default_rng()
    q, k, v = (_random(rng, (z, h, n_ctx, head_dim), "fp16") for _ in range(3))
    out = np.full_like(q, np.nan)
    strides = (h * n_ctx * head_dim, n_ctx * head_dim, head_dim)
    kernel.launch((n_ctx // block_m, z * h), q, k, v, np.float32(head_dim ** -0.5), out, *strides, *strides, *strides,
                  *strides, h, n_ctx)
    scores = np.einsum("zhmd,zhnd->zhmn", q.astype(np.float64), k.astype(np.float64)) * head_dim ** -0.5
    if causal:
        scores = np.where(np.tril(np.ones((n_ctx, n_ctx), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=1e-2, rtol=1e-2)
