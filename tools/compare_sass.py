"""Compile Inductor's kernels with tritone and with upstream Triton for one GPU
architecture, without a GPU, and print a table of what the machine code of
each does differently: instructions, registers, spills, and the count of each
memory, barrier and shuffle instruction (`STG.E.128` vs `STG.E.U16` is a
vectorized store against eight narrow ones).

    python tools/compare_sass.py MODULE.py [MODULE.py ...] [--arch 90] [--dump DIR]

Each MODULE.py is an output module Inductor wrote (the file holding
`async_compile.triton('name', '''...''')` calls): run a workload under
`torch.compile` with `TORCHINDUCTOR_CACHE_DIR=<dir>` (with
`torch._inductor.config.cpu_backend = "triton"` and CPU tensors, Inductor
writes them without a GPU; the run itself then fails, which does not matter)
and pass the modules found there (`grep -l async_compile.triton -r <dir>`).

Each kernel is compiled with the constexprs a typical config gives it
(pointwise XBLOCK 1024 or a 64x64 tile, reductions one row of up to 2048 per
program) and the divisibility attributes Inductor recorded. Both
implementations run in their own process (tritone as the `triton` module,
through TRITONE_AS_TRITON=1); the SASS comes from the `cuobjdump` shipped in
upstream Triton's wheel (or on PATH). With `--dump DIR` each side's PTX, cubin and
SASS of every kernel (and tritone's CUDA) are written to DIR as
`SIDE_KERNEL_DIGEST.{ptx,cubin,sass,cu}`, to read what the two make differently.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
_KERNEL = re.compile(r"async_compile\.triton\('(\w+)', '''(.*?)''', device_str", re.S)
_HEADER = ("import triton\nimport triton.language as tl\nfrom torch._inductor.runtime import triton_helpers\n"
           "from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math\n")
_MEMORY = ("LDG", "STG", "LDS", "STS", "LDSM", "BAR", "LDL", "STL", "SHFL", "RED", "ATOM")


class _Properties:
    """Stands for Inductor's DeviceProperties inside the recorded triton_meta."""

    def __init__(self, **fields):
        self.fields = fields


def _next_power_of_2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _cuobjdump() -> str:
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        if bundled.exists():
            return str(bundled)
    found = shutil.which("cuobjdump")
    if found is None:
        raise SystemExit("no cuobjdump: install upstream Triton (its wheel ships one) or the CUDA toolkit")
    return found


def _inductor_kernels(path: str):
    """(name, source text, triton_meta, heuristic kind, size hints) of each kernel of a module."""
    text = Path(path).read_text(encoding="utf-8")
    for name, source in _KERNEL.findall(text):
        meta = eval(re.search(r"triton_meta=(\{.*?\}),\n", source).group(1), {"DeviceProperties": _Properties})
        kind = re.search(r"@triton_heuristics\.(\w+)", source).group(1)
        hints = eval(re.search(r"size_hints=(\{.*?\})", source).group(1))
        yield name, _HEADER + _without_heuristics(source[source.index("@triton.jit"):]), meta, kind, hints


def _without_heuristics(text: str) -> str:
    """`text` without its `@triton_heuristics.<kind>(...)` decorators (a kernel may
    follow @jit helpers), which would build Inductor's autotuner."""
    while (start := text.find("@triton_heuristics.")) >= 0:
        depth, i = 0, text.index("(", start)
        while True:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
            if depth == 0:
                break
        text = text[:start] + text[i:].lstrip("\n")
    return text


def _constexprs(signature: dict, kind: str, hints: dict) -> tuple[dict, int]:
    """The meta-parameters of a typical config, and its warps."""
    values = {}
    tiled = "y" in hints
    for name, kind_of in signature.items():
        if kind_of != "constexpr":
            continue
        if name == "XBLOCK":
            values[name] = (64 if tiled else 1024) if kind == "pointwise" else 1
        elif name == "YBLOCK":
            values[name] = 64
        elif name.startswith("R"):
            values[name] = min(_next_power_of_2(hints.get("r0_", 1)), 2048)
    return values, 4 if kind == "pointwise" else 8


def _sass_facts(cuobjdump: str, cubin: bytes, scratch: str, dump: str | None = None) -> dict:
    """Counts of the SASS of `cubin`; with `dump` (a path without suffix), the SASS also
    written to `dump`.sass."""
    path = os.path.join(scratch, "kernel.cubin")
    Path(path).write_bytes(cubin)
    sass = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True, check=True).stdout
    if dump:
        Path(dump + ".sass").write_text(sass, encoding="utf-8")
    instructions = [line.split("*/", 1)[1].strip().rstrip(" ;") for line in sass.splitlines()
                    if re.match(r"\s+/\*[0-9a-f]{4,}\*/", line)]
    opcodes = collections.Counter((i.split(" ", 1)[1] if i.startswith("@") else i).split()[0].rstrip(";")
                                  for i in instructions if i)
    usage = subprocess.run([cuobjdump, "-res-usage", path], capture_output=True, text=True, check=True).stdout
    registers, stack = re.search(r"REG:(\d+) STACK:(\d+)", usage).groups()
    return {"instructions": sum(n for op, n in opcodes.items() if op != "NOP"), "registers": int(registers),
            "stack": int(stack), "memory": {op: n for op, n in opcodes.items() if op.startswith(_MEMORY)}}


def worker(modules: list[str], arch: int, cuobjdump: str, dump: str | None = None) -> None:
    """In one implementation's process: compile every kernel, print one JSON line each;
    with `dump`, write its PTX, cubin, SASS (and CUDA) there."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    with tempfile.TemporaryDirectory() as scratch:
        for path in modules:
            for name, source, meta, kind, hints in _inductor_kernels(path):
                digest = hashlib.sha256(source.encode()).hexdigest()[:12]
                file = os.path.join(scratch, f"{name}_{digest}.py")
                Path(file).write_text(source, encoding="utf-8")
                spec = importlib.util.spec_from_file_location(f"compare_sass_{name}_{digest}", file)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                signature = dict(meta["signature"])
                constexprs, num_warps = _constexprs(signature, kind, hints)
                constexprs.update(meta.get("constants", {}))
                attrs = meta["configs"][0] if meta.get("configs") else {}
                row = {"kernel": name, "digest": digest}
                try:
                    kernel = triton.compile(ASTSource(getattr(module, name), signature, constexprs, attrs),
                                            target=GPUTarget("cuda", arch, 32), options={"num_warps": num_warps})
                    base = None
                    if dump:
                        side = "tritone" if triton.__name__ == "tritone" else "upstream"
                        base = os.path.join(dump, f"{side}_{name}_{digest}")
                        Path(base + ".ptx").write_text(kernel.asm["ptx"], encoding="utf-8")
                        Path(base + ".cubin").write_bytes(kernel.asm["cubin"])
                        if "cuda" in kernel.asm:
                            Path(base + ".cu").write_text(kernel.asm["cuda"], encoding="utf-8")
                    row.update(_sass_facts(cuobjdump, kernel.asm["cubin"], scratch, base))
                except Exception as exc:  # reported in the table, the other kernels still compared
                    row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
                print(json.dumps(row), flush=True)


def _run_worker(impl: str, modules: list[str], arch: int, cuobjdump: str, dump: str | None = None,
                ) -> dict[str, dict]:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if impl == "tritone":
        env["TRITONE_AS_TRITON"] = "1"
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")])
    else:
        env.pop("TRITONE_AS_TRITON", None)
    command = [sys.executable, __file__, "--worker", cuobjdump, "--arch", str(arch), *modules]
    if dump:
        command += ["--dump", dump]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{impl} worker failed:\n{done.stderr[-3000:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {row["digest"]: row for row in rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="+", help="Inductor output modules")
    parser.add_argument("--arch", type=int, default=90, help="compute capability (default 90)")
    parser.add_argument("--dump", metavar="DIR", help="write each side's PTX, cubin, SASS (and CUDA) of every "
                                                      "kernel to DIR")
    parser.add_argument("--worker", metavar="CUOBJDUMP", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    dump = os.path.abspath(args.dump) if args.dump else None
    if args.worker:
        worker(args.modules, args.arch, args.worker, dump)
        return 0
    if dump:
        os.makedirs(dump, exist_ok=True)
    # found here: in tritone's worker `triton` is tritone, whose package has no cuobjdump
    cuobjdump = _cuobjdump()
    upstream = _run_worker("triton", args.modules, args.arch, cuobjdump, dump)
    tritone = _run_worker("tritone", args.modules, args.arch, cuobjdump, dump)
    print(f"sm_{args.arch}: upstream Triton / tritone")
    print(f"{'kernel':48} {'instr':>11} {'regs':>7} {'stack':>7}  memory ops that differ")
    for digest, up in upstream.items():
        tt = tritone.get(digest, {"error": "missing"})
        name = up["kernel"][:48]
        if "error" in up or "error" in tt:
            print(f"{name:48} upstream: {up.get('error', 'ok')} | tritone: {tt.get('error', 'ok')}")
            continue
        ops = sorted(set(up["memory"]) | set(tt["memory"]))
        differ = "  ".join(f"{op} {up['memory'].get(op, 0)}/{tt['memory'].get(op, 0)}" for op in ops
                           if up["memory"].get(op, 0) != tt["memory"].get(op, 0))
        print(f"{name:48} {up['instructions']:>5}/{tt['instructions']:<5} {up['registers']:>3}/{tt['registers']:<3} "
              f"{up['stack']:>3}/{tt['stack']:<3}  {differ}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
