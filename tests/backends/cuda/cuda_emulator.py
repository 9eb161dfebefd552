"""Runs tritone's generated CUDA C++ on the CPU, so that what a kernel computes
(not only which elements its instructions touch) is checked without a GPU.

The generated source is preprocessed with g++ (its macros expanded), every
inline `asm` statement is translated from PTX into C++ on 64-bit register
values (`translate_asm`), and the result is compiled with g++ against
`cuda_emulator.h`, which runs each GPU thread as a fiber with barriers, warp
collectives (mma.sync with the fragment layouts of PTX_FACTS 1.2, ldmatrix,
shuffles), shared memory and cp.async groups. `Emulator(source).launch(...)`
runs a grid over numpy arrays. Instructions the translator does not know
compile into a call that fails the launch if it is ever executed.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_emulator.h")

# What the CUDA-only keywords mean on the host, before preprocessing.
_PREFIX = """#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__
#define __align__(n) __attribute__((aligned(n)))
"""


def available() -> bool:
    """Whether emulated kernels can be built here: g++ and the POSIX fibers (ucontext) of Linux."""
    return sys.platform.startswith("linux") and shutil.which("g++") is not None


# -- asm statements -------------------------------------------------------------------------

@dataclass(frozen=True)
class Operand:
    constraint: str  # "=r", "+r", "l", ...
    expr: str

    @property
    def is_output(self) -> bool:
        return self.constraint[0] in "=+"


def _skip_string(text: str, i: int) -> int:
    """Index after the string literal starting at text[i] == '"'."""
    i += 1
    while text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def _split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside strings, parentheses and brackets."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            j = _skip_string(text, i)
            cur.append(text[i:j])
            i = j
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def _strings(text: str) -> str:
    """The concatenation of the adjacent string literals of `text`."""
    out, i = [], 0
    while i < len(text):
        if text[i] == '"':
            j = _skip_string(text, i)
            out.append(bytes(text[i + 1:j - 1], "utf-8").decode("unicode_escape"))
            i = j
        else:
            i += 1
    return "".join(out)


def _operands(text: str) -> list[Operand]:
    out = []
    for part in _split_top(text, ","):
        part = part.strip()
        if not part:
            continue
        paren = part.index("(", part.rindex('"'))
        out.append(Operand(_strings(part[:paren]), part[paren + 1:part.rindex(")")].strip()))
    return out


_ASM = re.compile(r"\basm\s*(?:volatile\s*|__volatile__\s*)?\(")


def replace_asm(source: str) -> str:
    """`source` with every asm statement replaced by its C++ translation."""
    out, pos = [], 0
    for match in _ASM.finditer(source):
        if match.start() < pos:
            continue
        i, depth = match.end(), 1
        while depth:
            ch = source[i]
            if ch == '"':
                i = _skip_string(source, i)
                continue
            depth += {"(": 1, ")": -1}.get(ch, 0)
            i += 1
        parts = _split_top(source[match.end():i - 1], ":")
        template = _strings(parts[0])
        outputs = _operands(parts[1]) if len(parts) > 1 else []
        inputs = _operands(parts[2]) if len(parts) > 2 else []
        out.append(source[pos:match.start()])
        out.append(translate_asm(template, outputs + inputs))
        pos = i
        while source[pos] in " \t\n":
            pos += 1
        if source[pos] == ";":
            pos += 1
    out.append(source[pos:])
    return "".join(out)


# -- PTX to C++ -----------------------------------------------------------------------------

_TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4, "u32": 4,
               "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}
_MMA_TYPES = {"f16": 0, "bf16": 1, "tf32": 2, "s8": 3, "e4m3": 4, "e5m2": 5}
_ACC = {"f16": 0, "f32": 1, "s32": 2}


class _Unsupported(Exception):
    pass


def translate_asm(template: str, operands: list[Operand]) -> str:
    """A C++ block doing what the PTX `template` does to the C++ `operands`."""
    lines = ["{", f"  uint64_t tt_o[{max(1, len(operands))}] = {{}};"]
    for i, op in enumerate(operands):
        if op.constraint.startswith("=") and not op.constraint.startswith("+"):
            continue
        lines.append(f"  tt_o[{i}] = tt_emu_bits({op.expr});")
    try:
        lines += ["  " + line for line in _translate_ptx(template)]
    except _Unsupported:
        escaped = template.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
        lines.append(f'  tt_emu_unsupported("{escaped}");')
    for i, op in enumerate(operands):
        if op.is_output:
            lines.append(f"  tt_emu_set({op.expr}, tt_o[{i}]);")
    lines.append("}")
    return "\n".join(lines)


def _translate_ptx(template: str) -> list[str]:
    body = template.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    out = []
    for instruction in body.split(";"):
        instruction = instruction.strip()
        if not instruction:
            continue
        if instruction.startswith(".reg"):
            names = instruction.split(None, 2)[2]
            out += [f"uint64_t tt_r_{n.strip()} = 0;" for n in names.split(",")]
            continue
        guard = None
        m = re.match(r"@(!?)(\w+)\s+(.*)", instruction, re.S)
        if m:
            guard = f"{'!' if m.group(1) else ''}tt_r_{m.group(2)}"
            instruction = m.group(3)
        opcode, _, rest = instruction.partition(" ")
        code = _instruction(opcode, [a.strip() for a in _split_top(rest, ",")] if rest.strip() else [])
        out.append(f"if ({guard}) {{ {code} }}" if guard else code)
    return out


def _reg(token: str) -> str:
    token = token.strip()
    if token.startswith("%"):
        return f"tt_o[{int(token[1:])}]"
    if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", token):
        return f"uint64_t({token})"
    if re.fullmatch(r"\w+", token):
        return f"tt_r_{token}"
    raise _Unsupported(token)


def _vector(token: str) -> list[str]:
    token = token.strip()
    if token.startswith("{"):
        return [_reg(t) for t in token[1:-1].split(",")]
    return [_reg(token)]


def _address(token: str) -> str:
    m = re.fullmatch(r"\[\s*([^\]+]+?)\s*(?:\+\s*(-?\d+))?\s*\]", token.strip())
    if not m:
        raise _Unsupported(token)
    base = _reg(m.group(1))
    return f"({base} + {m.group(2)})" if m.group(2) else base


def _instruction(opcode: str, args: list[str]) -> str:
    parts = opcode.split(".")
    name = parts[0]
    if name == "setp":
        cmp, ty = parts[1], parts[-1]
        op = {"ne": "!=", "eq": "==", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[cmp]
        cast = {"s32": "int32_t", "u32": "uint32_t", "b32": "uint32_t", "s64": "int64_t", "u64": "uint64_t",
                "b64": "uint64_t"}.get(ty)
        if cast is None:
            raise _Unsupported(opcode)
        return f"{_reg(args[0])} = {cast}({_reg(args[1])}) {op} {cast}({_reg(args[2])});"
    if name in ("ld", "st"):
        return _memory(name, parts[1:], args)
    if name == "atom":
        return _atomic(parts[1:], args)
    if name == "cvta" and parts[1:3] == ["to", "shared"]:
        return f"{_reg(args[0])} = tt_emu_to_shared({_reg(args[1])});"
    if name == "cvt":
        return _convert(parts[1:], args)
    if name == "mov" and parts[1] == "b32":
        if args[0].startswith("{"):
            lo, hi = _vector(args[0])
            src = _reg(args[1])
            return f"{lo} = {src} & 0xffff; {hi} = ({src} >> 16) & 0xffff;"
        if args[1].startswith("{"):
            lo, hi = _vector(args[1])
            return f"{_reg(args[0])} = ({lo} & 0xffff) | (({hi} & 0xffff) << 16);"
        return f"{_reg(args[0])} = {_reg(args[1])} & 0xffffffffu;"
    if name == "prmt":
        return f"{_reg(args[0])} = tt_emu_prmt({_reg(args[1])}, {_reg(args[2])}, {_reg(args[3])});"
    if name == "ldmatrix":
        count = int(next(p for p in parts if p.startswith("x"))[1:])
        regs = _vector(args[0])
        return (f"{{ uint64_t tt_m[4]; tt_emu_ldmatrix({count}, {str('trans' in parts).lower()}, "
                f"{_address(args[1])}, tt_m); " + " ".join(f"{r} = tt_m[{i}];" for i, r in enumerate(regs)) + " }")
    if name == "mma":
        return _mma(parts, args)
    if name == "cp" and parts[1] == "async":
        if parts[2] == "commit_group":
            return "tt_emu_cp_async_commit();"
        if parts[2] == "wait_group":
            return f"tt_emu_cp_async_wait({int(args[0])});"
        if parts[2] == "wait_all":
            return "tt_emu_cp_async_commit(); tt_emu_cp_async_wait(0);"
        size = int(args[2])
        src_bytes = _reg(args[3]) if len(args) > 3 else str(size)
        return f"tt_emu_cp_async({_address(args[0])}, {_address(args[1])}, {size}, {src_bytes});"
    return _arithmetic(opcode, args)


def _memory(kind: str, parts: list[str], args: list[str]) -> str:
    space = parts[0]
    if space not in ("global", "shared"):
        raise _Unsupported(space)
    nbytes = _TYPE_BYTES.get(parts[-1])
    if nbytes is None:
        raise _Unsupported(parts[-1])
    access = "tt_emu_global" if space == "global" else "tt_emu_shared"
    if kind == "ld":
        regs, address = _vector(args[0]), _address(args[1])
        return " ".join(f"{r} = tt_emu_load({access}({address} + {i * nbytes}, {nbytes}), {nbytes});"
                        for i, r in enumerate(regs))
    address, regs = _address(args[0]), _vector(args[1])
    return " ".join(f"tt_emu_store({access}({address} + {i * nbytes}, {nbytes}), {r}, {nbytes});"
                    for i, r in enumerate(regs))


def _atomic(parts: list[str], args: list[str]) -> str:
    """`atom...global.cas.bN d, [a], cmp, new` and the vector 16-bit float
    `atom...global.vN.f16.min.noftz {d...}, [a], {b...}`, in any order of their
    qualifiers: fibers switch only at barriers and warp collectives, so each read
    and write are one step no other thread sees between."""
    if "global" not in parts:
        raise _Unsupported("atom." + ".".join(parts))
    vector = next((p for p in parts if re.fullmatch(r"v\d", p)), None)
    if vector and ("min" in parts or "max" in parts) and ("f16" in parts or "bf16" in parts):
        olds, values, address = _vector(args[0]), _vector(args[2]), _address(args[1])
        bf16, is_max = str("bf16" in parts).lower(), str("max" in parts).lower()
        code = []
        for i, (d, b) in enumerate(zip(olds, values)):
            code.append(f"{{ unsigned char* tt_p = tt_emu_global({address} + {2 * i}, 2); "
                        f"{d} = tt_emu_load(tt_p, 2); "
                        f"tt_emu_store(tt_p, tt_emu_min_max16({d}, {b}, {bf16}, {is_max}), 2); }}")
        return " ".join(code)
    if "cas" not in parts:
        raise _Unsupported("atom." + ".".join(parts))
    nbytes = _TYPE_BYTES[parts[-1]]
    mask = (1 << (8 * nbytes)) - 1
    d, address, compare, new = _reg(args[0]), _address(args[1]), _reg(args[2]), _reg(args[3])
    return (f"{{ unsigned char* tt_p = tt_emu_global({address}, {nbytes}); {d} = tt_emu_load(tt_p, {nbytes}); "
            f"if ({d} == ({compare} & {mask:#x}ull)) tt_emu_store(tt_p, {new}, {nbytes}); }}")


def _convert(parts: list[str], args: list[str]) -> str:
    modifiers = [p for p in parts if p in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "ftz", "sat",
                                           "satfinite", "relu")]
    types = [p for p in parts if p not in modifiers]
    if len(types) != 2:
        raise _Unsupported(".".join(parts))
    dst_ty, src_ty = types
    d, a = _reg(args[0]), _reg(args[1])
    rounding = next((p for p in modifiers if p.startswith("r")), "")
    if src_ty == "f32" and dst_ty == "f16" and rounding in ("rn", ""):
        return f"{d} = tt_emu_f64_to_f16(tt_emu_f({a}));"
    if src_ty == "f64" and dst_ty == "f16" and rounding in ("rn", ""):
        return f"{d} = tt_emu_f64_to_f16(tt_emu_d({a}));"
    if src_ty == "f16" and dst_ty == "f32":
        return f"{d} = tt_emu_fbits(tt_emu_f16_to_f32({a} & 0xffff));"
    if src_ty == "f32" and dst_ty == "bf16" and rounding == "rn":
        return f"{d} = tt_emu_f32_to_bf16(tt_emu_f({a}));"
    if src_ty == "bf16" and dst_ty == "f32":
        return f"{d} = tt_emu_fbits(tt_emu_bf16_to_f32({a} & 0xffff));"
    if src_ty == "f32" and dst_ty == "f32" and rounding in ("rmi", "rpi", "rzi", "rni"):
        fn = {"rmi": "std::floor", "rpi": "std::ceil", "rzi": "std::trunc", "rni": "std::nearbyint"}[rounding]
        return f"{d} = tt_emu_fbits({fn}(tt_emu_f({a})));"
    if src_ty == "f32" and rounding == "rzi" and dst_ty in ("s16", "u16", "s32", "u32", "s64", "u64"):
        bits = int(dst_ty[1:])
        signed = dst_ty[0] == "s"
        low = f"-{2 ** (bits - 1)}.0" if signed else "0.0"
        high = f"{2 ** (bits - 1) - 1}.0" if signed else f"{2 ** bits - 1}.0"
        return (f"{{ double tt_x = std::trunc(double(tt_emu_f({a}))); tt_x = std::isnan(tt_x) ? 0.0 : "
                f"std::min({high}, std::max({low}, tt_x)); {d} = uint64_t(int64_t(tt_x)) & "
                f"{hex((1 << bits) - 1)}ull; }}")
    if dst_ty == "u32" and src_ty == "u64":
        return f"{d} = {a} & 0xffffffffu;"
    if dst_ty == "f32" and src_ty in ("s32", "u32") and rounding in ("rn", ""):
        cast = "int32_t" if src_ty == "s32" else "uint32_t"
        return f"{d} = tt_emu_fbits(float({cast}({a})));"
    raise _Unsupported(".".join(parts))


_MMA_SHAPE = re.compile(r"m(\d+)n(\d+)k(\d+)")


def _mma(parts: list[str], args: list[str]) -> str:
    shape = next(p for p in parts if _MMA_SHAPE.fullmatch(p))
    m, n, k = map(int, _MMA_SHAPE.fullmatch(shape).groups())
    types = [p for p in parts if p in _MMA_TYPES or p in ("f32", "s32")]
    d_ty, a_ty, b_ty, c_ty = types
    if d_ty != c_ty or c_ty not in _ACC:
        raise _Unsupported(".".join(parts))
    d, a, b, c = (_vector(x) for x in args)
    a_code, b_code = _MMA_TYPES[a_ty], _MMA_TYPES[b_ty]
    saturate = "satfinite" in parts
    lines = [f"uint64_t tt_a[8] = {{{', '.join(a)}}};", f"uint64_t tt_b[8] = {{{', '.join(b)}}};",
             f"uint64_t tt_c[8] = {{{', '.join(c)}}};", "uint64_t tt_d[8] = {};",
             f"tt_emu_mma({m}, {n}, {k}, {a_code}, {b_code}, {_ACC[c_ty]}, {str(saturate).lower()}, tt_a, {len(a)}, "
             f"tt_b, {len(b)}, tt_c, {len(c)}, tt_d);"]
    lines += [f"{r} = tt_d[{i}];" for i, r in enumerate(d)]
    return "{ " + " ".join(lines) + " }"


def _arithmetic(opcode: str, args: list[str]) -> str:
    regs = [_reg(a) for a in args]
    f = [f"tt_emu_f({r})" for r in regs]
    table = {
        "ex2.approx.f32": lambda: f"tt_emu_fbits(std::exp2(double({f[1]})))",
        "ex2.approx.ftz.f32": lambda: f"tt_emu_fbits(std::exp2(double({f[1]})))",
        "max.NaN.f32": lambda: f"tt_emu_fbits(tt_emu_max_nan({f[1]}, {f[2]}))",
        "min.NaN.f32": lambda: f"tt_emu_fbits(tt_emu_min_nan({f[1]}, {f[2]}))",
        "sqrt.approx.ftz.f32": lambda: f"tt_emu_fbits(std::sqrt({f[1]}))",
        "sqrt.rn.f32": lambda: f"tt_emu_fbits(std::sqrt({f[1]}))",
        "rsqrt.approx.ftz.f32": lambda: f"tt_emu_fbits(1.0f / std::sqrt({f[1]}))",
        "div.full.f32": lambda: f"tt_emu_fbits({f[1]} / {f[2]})",
        "div.rn.f32": lambda: f"tt_emu_fbits({f[1]} / {f[2]})",
        "div.rn.f64": lambda: f"tt_emu_dbits(tt_emu_d({regs[1]}) / tt_emu_d({regs[2]}))",
        "sqrt.rn.f64": lambda: f"tt_emu_dbits(std::sqrt(tt_emu_d({regs[1]})))",
        "mul.hi.u32": lambda: f"((({regs[1]} & 0xffffffffull) * ({regs[2]} & 0xffffffffull)) >> 32)",
        "mad.wide.s32": lambda: f"uint64_t(int64_t(int32_t({regs[1]})) * int64_t(int32_t({regs[2]})) + "
                                f"int64_t({regs[3]}))",
    }
    if opcode not in table:
        raise _Unsupported(opcode)
    return f"{regs[0]} = {table[opcode]()};"


# -- building and launching -------------------------------------------------------------------

_KERNEL = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\(\d+(?:, *\d+)?\) )?(\w+)\((.*?)\) \{')


def _kernel_signature(source: str) -> tuple[str, list[str]]:
    m = _KERNEL.search(source)
    if m is None:
        raise ValueError("no kernel in the source")
    params = [p.strip() for p in m.group(2).split(",") if p.strip()]
    types = [re.sub(r"\s*\b\w+$", "", p) if not p.endswith("*") else p for p in params]
    return m.group(1), types


def host_source(source: str) -> str:
    """The generated `source` as host C++ for the emulator (asm translated)."""
    name, types = _kernel_signature(source)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cu")
        with open(path, "w") as f:
            f.write(_PREFIX + source)
        pre = subprocess.run(["g++", "-E", "-P", "-x", "c++", path], capture_output=True, text=True, check=True).stdout
    pre = re.sub(r"extern\s+__attribute__\(\(aligned\(\d+\)\)\)\s+unsigned char tt_smem\[\];",
                 "unsigned char* tt_smem = tt_emu_S.smem;", pre)
    body = replace_asm(pre)
    unpack = ", ".join(f"*reinterpret_cast<{t}*>(args[{i}])" for i, t in enumerate(types))
    entry = f'extern "C" void tt_emu_entry(void** args) {{ {name}({unpack}); }}\n'
    return f'#include "{HEADER}"\n{body}\n{entry}'


_BUILT: dict[str, ctypes.CDLL] = {}


class Emulator:
    """One generated kernel compiled for the CPU."""

    def __init__(self, source: str, num_warps: int, shared: int):
        host = host_source(source)
        key = hashlib.sha256((host + open(HEADER).read()).encode()).hexdigest()[:24]
        if key not in _BUILT:
            folder = os.path.join(tempfile.gettempdir(), "tritone_cuda_emulator")
            os.makedirs(folder, exist_ok=True)
            lib = os.path.join(folder, f"{key}.so")
            if not os.path.exists(lib):
                src = os.path.join(folder, f"{key}.cpp")
                with open(src, "w") as f:
                    f.write(host)
                tmp = f"{lib}.{os.getpid()}"
                built = subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-fno-strict-aliasing",
                                        src, "-o", tmp], capture_output=True, text=True)
                if built.returncode:
                    raise RuntimeError(f"g++ failed on {src}:\n{built.stderr[:4000]}")
                os.replace(tmp, lib)
            _BUILT[key] = ctypes.CDLL(lib)
        self.lib = _BUILT[key]
        self.num_warps = num_warps
        self.shared = shared

    def launch(self, grid: tuple[int, ...], *args) -> None:
        """Run the kernel on `grid` with `args`: numpy arrays (passed as pointers,
        written in place), Python ints (int32) and floats (fp32), or numpy scalars."""
        grid = tuple(grid) + (1,) * (3 - len(grid))
        keep, ptrs, buffers, sizes = [], [], [], []
        for arg in args:
            if isinstance(arg, np.ndarray):
                assert arg.flags.c_contiguous
                holder = ctypes.c_uint64(arg.ctypes.data)
                buffers.append(arg.ctypes.data)
                sizes.append(arg.nbytes)
            elif isinstance(arg, (bool, np.bool_)):
                holder = ctypes.c_bool(bool(arg))
            elif isinstance(arg, (int, np.integer)):
                holder = ctypes.c_int64(int(arg)) if isinstance(arg, np.int64) else ctypes.c_int32(int(arg))
            elif isinstance(arg, (float, np.floating)):
                holder = ctypes.c_float(float(arg))
            else:
                raise TypeError(f"argument of type {type(arg).__name__}")
            keep.append(holder)
            ptrs.append(ctypes.cast(ctypes.pointer(holder), ctypes.c_void_p))
        argv = (ctypes.c_void_p * max(1, len(ptrs)))(*ptrs)
        bufv = (ctypes.c_uint64 * max(1, len(buffers)))(*buffers)
        sizev = (ctypes.c_uint64 * max(1, len(sizes)))(*sizes)
        error = ctypes.create_string_buffer(512)
        self.lib.tt_emu_launch.restype = ctypes.c_int
        entry = ctypes.cast(self.lib.tt_emu_entry, ctypes.c_void_p)
        rc = self.lib.tt_emu_launch(entry, ctypes.c_uint(grid[0]), ctypes.c_uint(grid[1]),
                                    ctypes.c_uint(grid[2]), ctypes.c_uint(32 * self.num_warps),
                                    ctypes.c_uint(self.shared), argv, bufv, sizev, ctypes.c_int(len(buffers)), error,
                                    ctypes.c_int(len(error)))
        if rc:
            raise RuntimeError(f"emulated kernel failed: {error.value.decode()}")
