"""Warp specialization on Hopper: the same descriptor kernels with and without
`tl.range(..., warp_specialize=True)`, under tritone and under upstream Triton,
each side in its own process, timed in one run.

    python bench/warp_specialize.py [--quick] [--only matmul attention]

Matmuls one tile a program and persistent (a program per multiprocessor, the
loop over tiles specialized), attention forward. Per case it prints TFLOP/s of
tritone and of upstream, each with the loop warp-specialized (`ws`) and
single-role (`single`), and the ratios
tritone/upstream (same form) and ws/single (same side). Within a process the
two forms are timed alternately (CUDA events, medians of rounds), so that
clock and power drift fall on both alike. Upstream Triton's specialization on
sm_90 (its `add_hopper_warpspec`) takes loops of 4-warp kernels; where it
fails to compile, or its output is wrong, the cell says so instead of a figure.
Needs an sm_90+ GPU, torch, and upstream Triton installed beside tritone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

MATMUL_CONFIGS = ((128, 128, 64, 4, 4), (128, 256, 64, 3, 8), (128, 128, 64, 3, 4))  # BM, BN, BK, stages, warps
PERSISTENT_CONFIGS = ((128, 256, 64, 3, 8), (128, 128, 64, 4, 4))  # a program per multiprocessor
ATTENTION_CASES = ((64, False, 4), (64, True, 4), (128, False, 8), (128, True, 8))  # head dim, causal, warps


def make_kernels(triton, tl):
    """(matmul, persistent matmul, attention forward) jitted by `triton`, each with a
    `WS` constexpr that asks for warp specialization of its loop (the tests use them too)."""
    @triton.jit
    def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               STAGES: tl.constexpr, WS: tl.constexpr):
        a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
        b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
        c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
        pid = tl.program_id(0)
        tiles_n = tl.cdiv(N, BN)
        group = 8 * tiles_n
        first_m = (pid // group) * 8
        rows = min(tl.cdiv(M, BM) - first_m, 8)
        pid_m = first_m + (pid % group) % rows
        pid_n = (pid % group) // rows
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES, warp_specialize=WS):
            acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([pid_n * BN, k * BK]).T, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))

    @triton.jit
    def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          STAGES: tl.constexpr, WS: tl.constexpr, PROGRAMS: tl.constexpr):
        a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
        b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
        c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
        tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        group = 8 * tiles_n
        for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, PROGRAMS, warp_specialize=WS):
            first_m = (tile // group) * 8
            rows = min(tiles_m - first_m, 8)
            pid_m = first_m + (tile % group) % rows
            pid_n = (tile % group) // rows
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES):
                acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([pid_n * BN, k * BK]).T, acc)
            c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))

    @triton.jit
    def attention(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, WS: tl.constexpr):
        start_m, off_h = tl.program_id(0), tl.program_id(1)
        rows = tl.num_programs(1) * N_CTX
        q_desc = tl.make_tensor_descriptor(q_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
        k_desc = tl.make_tensor_descriptor(k_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
        v_desc = tl.make_tensor_descriptor(v_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
        o_desc = tl.make_tensor_descriptor(o_ptr, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
        base = off_h * N_CTX
        q = q_desc.load([base + start_m * BLOCK_M, 0])
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        qk_scale = sm_scale * 1.44269504
        hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
        for start_n in tl.range(0, hi, BLOCK_N, warp_specialize=WS):
            k = k_desc.load([base + start_n, 0])
            qk = tl.dot(q, k.T)
            if CAUSAL:
                qk = qk * qk_scale + tl.where(offs_m[:, None] >= (start_n + offs_n[None, :]), 0, -1.0e6)
                m_ij = tl.maximum(m_i, tl.max(qk, 1))
                qk -= m_ij[:, None]
            else:
                m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
                qk = qk * qk_scale - m_ij[:, None]
            p = tl.math.exp2(qk)
            alpha = tl.math.exp2(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            v = v_desc.load([base + start_n, 0])
            acc = tl.dot(p.to(v.dtype), v, acc)
            m_i = m_ij
        o_desc.store([base + start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(tl.float16))

    return matmul, persistent_matmul, attention


def side_main(only: list[str], quick: bool) -> dict:
    """This process's figures: {case: {"ws": TFLOP/s or a message, "single": ...}}."""
    import torch
    import triton
    import triton.language as tl

    from bench.timing import time_in_turn

    matmul, persistent_matmul, attention = make_kernels(triton, tl)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    rounds, per_round = (5, 10) if quick else (11, 20)
    results: dict[str, dict] = {}

    def measure(case: str, flops: float, runs: dict, check) -> None:
        figures: dict = {}
        ok = {}
        for name, run in runs.items():
            try:
                run()
                torch.cuda.synchronize()
                error = check()
            except Exception as exc:  # a compile failure on either side is a result, not a crash
                figures[name] = f"fails: {type(exc).__name__}: {str(exc).splitlines()[0][:60]}"
                continue
            if not error <= 2e-2:
                figures[name] = f"wrong (max error {error:.3g})"
                continue
            ok[name] = run
        for name, ms in time_in_turn(ok, rounds, per_round).items():
            figures[name] = round(flops / (ms * 1e-3) * 1e-12, 1)
        results[case] = figures
        print(json.dumps({case: figures}), file=sys.stderr, flush=True)

    programs = torch.cuda.get_device_properties("cuda").multi_processor_count

    def matmul_case(a, b, c, reference, size, bm, bn, bk, stages, warps, persistent=False):
        tiles = triton.cdiv(size, bm) * triton.cdiv(size, bn)
        if persistent:
            runs = {form: (lambda ws=ws: persistent_matmul[(min(programs, tiles),)](
                a, b, c, size, size, size, bm, bn, bk, stages, ws, programs, num_warps=warps, num_stages=stages))
                for form, ws in (("ws", True), ("single", False))}
        else:
            runs = {form: (lambda ws=ws: matmul[(tiles,)](a, b, c, size, size, size, bm, bn, bk, stages, ws,
                                                          num_warps=warps, num_stages=stages))
                    for form, ws in (("ws", True), ("single", False))}

        def check():
            error = ((c.float() - reference).abs().max() / reference.abs().max()).item()
            c.fill_(float("nan"))
            return error

        c.fill_(float("nan"))
        kind = "persistent matmul" if persistent else "matmul"
        measure(f"{kind} {size}^3 {bm}x{bn}x{bk} s{stages} w{warps}", 2.0 * size ** 3, runs, check)

    def attention_case(heads, tokens, head_dim, causal, warps):
        torch.manual_seed(0)
        q, k, v = (torch.randn((heads, tokens, head_dim), device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.full_like(q, float("nan"))
        scale = head_dim ** -0.5
        reference = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal,
                                                                     scale=scale)[0].float()
        grid = (tokens // 128, heads)
        runs = {form: (lambda ws=ws: attention[grid](q, k, v, o, scale, tokens, head_dim, 128, 64, causal, ws,
                                                      num_warps=warps, num_stages=3))
                for form, ws in (("ws", True), ("single", False))}

        def check():
            error = (o.float() - reference).abs().max().item()
            o.fill_(float("nan"))
            return error

        flops = 4.0 * heads * tokens * tokens * head_dim * (0.5 if causal else 1.0)
        measure(f"attention d{head_dim}{' causal' if causal else ''} 128x64 w{warps}", flops, runs, check)

    if "matmul" in only:
        size = 4096 if quick else 8192
        torch.manual_seed(0)
        a = torch.randn((size, size), device="cuda", dtype=torch.float16)
        b = torch.randn((size, size), device="cuda", dtype=torch.float16)
        c = torch.empty((size, size), device="cuda", dtype=torch.float16)
        reference = (a @ b.T).float()
        for config in MATMUL_CONFIGS:
            matmul_case(a, b, c, reference, size, *config)
        for config in PERSISTENT_CONFIGS:
            matmul_case(a, b, c, reference, size, *config, persistent=True)
    if "attention" in only:
        heads, tokens = (32, 2048) if quick else (128, 4096)
        for head_dim, causal, warps in ATTENTION_CASES:
            attention_case(heads, tokens, head_dim, causal, warps)
    return results


def _cell(value) -> str:
    return f"{value:.1f}" if isinstance(value, float) else "-"


def _ratio(a, b) -> str:
    return f"{a / b:.3f}" if isinstance(a, float) and isinstance(b, float) else "-"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    parser.add_argument("--only", nargs="+", default=["matmul", "attention"], choices=["matmul", "attention"])
    parser.add_argument("--side", choices=["tritone", "upstream"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(side_main(args.only, args.quick)))
        return 0
    sides = {}
    for side in ("upstream", "tritone"):
        env = dict(os.environ, TRITONE_AS_TRITON="1" if side == "tritone" else "0", PYTHONPATH=str(REPO_ROOT))
        done = subprocess.run([sys.executable, __file__, "--side", side, "--only", *args.only]
                              + (["--quick"] if args.quick else []), env=env, stdout=subprocess.PIPE, text=True)
        lines = done.stdout.strip().splitlines()
        sides[side] = json.loads(lines[-1]) if done.returncode == 0 and lines else {}
    cases = list(dict.fromkeys([*sides["tritone"], *sides["upstream"]]))
    header = ("case", "tt ws", "tt single", "up ws", "up single", "tt/up ws", "tt/up single", "tt ws/single")
    print(" | ".join(header))
    notes = []
    for case in cases:
        tt, up = sides["tritone"].get(case, {}), sides["upstream"].get(case, {})
        print(" | ".join([case, _cell(tt.get("ws")), _cell(tt.get("single")), _cell(up.get("ws")),
                          _cell(up.get("single")), _ratio(tt.get("ws"), up.get("ws")),
                          _ratio(tt.get("single"), up.get("single")), _ratio(tt.get("ws"), tt.get("single"))]))
        notes += [f"  {case}, {side} {form}: {value}" for side, figures in (("tritone", tt), ("upstream", up))
                  for form, value in figures.items() if not isinstance(value, float)]
    if notes:
        print("not timed:")
        print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
