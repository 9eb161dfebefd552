"""The GPU passes run through the compiler's pass runner (`passes.run_pipeline`):
in one ordered list, each dumped with its layouts under TRITONE_DUMP_IR, and in
debug mode the IR is verified after each, a failure naming the pass. No NVRTC
is needed: the code is generated, not compiled."""

from __future__ import annotations

import pytest

import tritone as triton
import tritone.language as tl
from tritone.backends.cuda import build, layout_pass, pipeline
from tritone.backends.cuda.bindings.nvrtc import CompileResult
from tritone.backends.cuda.lowering import GPU_PASSES, generate_cuda
from tritone.compiler.compiler import ASTSource, make_ir
from tritone.ir import IRVerificationError, parse_module, print_module, verify
from tritone.ir.layouts import NvidiaMmaLayout, default_blocked_layout
from tritone.ir.target import GPUTarget, KernelOptions
from tritone.passes import FRONTEND_PASSES, pass_name

GPU_PASS_NAMES = ["tma", "lower_descriptors", "accumulate", "fp_contract", "pointer_steps", "layout_pass",
                  "dot_operands", "pipeline", "smem", "warp_specialize"]
HEADER = "// -----// IR Dump After "


@triton.jit
def scaled_matmul(a_ptr, b_ptr, c_ptr, K, scale, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    """c = exp(scale * a @ b) over K in BLOCK_K steps, one BLOCK x BLOCK tile."""
    rows = tl.arange(0, BLOCK)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rows[:, None] * K + (k + ks)[None, :])
        b = tl.load(b_ptr + (k + ks)[:, None] * BLOCK + rows[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rows[:, None] * BLOCK + rows[None, :], tl.exp(acc * scale))


SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32", "scale": "fp32"}
CONSTEXPRS = {"BLOCK": 64, "BLOCK_K": 32}
SOURCE = ASTSource(scaled_matmul, SIGNATURE, CONSTEXPRS,
                   {name: [["tt.divisibility", 16]] for name in ("a_ptr", "b_ptr", "c_ptr", "K")})


def _module(target: int, **options):
    return make_ir(SOURCE, GPUTarget("cuda", target, 32), {"num_warps": 4, "num_stages": 3, **options})


def _dumps(err: str) -> list[tuple[str, str]]:
    """(pass name, IR text) of every dump in `err`."""
    dumps = []
    for chunk in err.split(HEADER)[1:]:
        header, text = chunk.split("\n", 1)
        assert header.endswith(" //----- //"), header
        dumps.append((header[:-len(" //----- //")], text[:-1]))
    return dumps


def test_gpu_passes_are_one_ordered_list():
    assert [pass_name(p) for p in GPU_PASSES] == GPU_PASS_NAMES


@pytest.mark.parametrize("target", [61, 75, 80, 90])
def test_dump_shows_every_gpu_pass_with_its_layouts(capsys, target):
    module = _module(target)
    generate_cuda(module, target, {"num_warps": 4}, dump_ir=True)
    dumps = _dumps(capsys.readouterr().err)
    assert [name for name, _ in dumps] == GPU_PASS_NAMES
    texts = dict(dumps)
    # The frontend's IR has no layouts; from the layout pass on every block has one.
    assert "Layout(" not in print_module(_module(target))
    after_layouts = texts["layout_pass"]
    assert "BlockedLayout(" in after_layouts
    # tensor cores from 7.5 on: the accumulator in mma fragments, converted for the coalesced store
    assert ("NvidiaMmaLayout(" in after_layouts) == (target >= 75)
    assert (" = convert_layout(" in after_layouts) == (target >= 75)
    assert "local_alloc(" not in after_layouts
    assert "local_alloc(" in texts["dot_operands"] and "SharedLayout(" in texts["dot_operands"]
    # cp.async pipelining from 8.0 on; before, the dot_operands IR passes through unchanged
    assert ("async_copy(" in texts["pipeline"]) == (target >= 80)
    if target < 80:
        assert texts["pipeline"] == texts["dot_operands"]
    assert "offset = " in texts["smem"] and "offset = " not in texts["pipeline"]
    assert texts["smem"] == print_module(module)
    for name, text in dumps:
        again = parse_module(text)
        verify(again)
        assert print_module(again) == text, f"the dump after {name} does not round-trip"


def test_no_dump_unless_asked(capsys):
    generate_cuda(_module(80), 80, {"num_warps": 4})
    assert capsys.readouterr().err == ""


class _StandInNVRTC:
    """Stands for NVRTC: no compilation, the source as 'PTX'."""

    version = (12, 9)

    def compile(self, source, name, arch, *, ptx_only=False, options=(), arch_suffix=""):
        return CompileResult(cubin=None, ptx=source, log="", target=f"compute_{arch}", nvrtc_version=self.version)


def test_dump_ir_knob_dumps_frontend_and_gpu_passes_of_a_compilation(monkeypatch, capfd):
    monkeypatch.setenv("TRITONE_DUMP_IR", "1")
    options = KernelOptions.from_dict({"num_warps": 4, "num_stages": 3})
    target = GPUTarget("cuda", 80, 32)
    binary = build.compile_kernel(
        "scaled_matmul", SOURCE.hash(), lambda codegen_target: make_ir(SOURCE, codegen_target, options), target,
        options, toolchain=build.Toolchain(_StandInNVRTC(), 80, True), cache=None)
    dumps = _dumps(capfd.readouterr().err)
    assert [name for name, _ in dumps] == [pass_name(p) for p in FRONTEND_PASSES] + GPU_PASS_NAMES
    assert dumps[len(FRONTEND_PASSES) - 1][1] == binary.asm["ttir"]  # the IR the GPU passes start from
    assert "cp.async" in binary.asm["ptx"]
    monkeypatch.delenv("TRITONE_DUMP_IR")
    build.compile_kernel(
        "scaled_matmul", SOURCE.hash(), lambda codegen_target: make_ir(SOURCE, codegen_target, options), target,
        options, toolchain=build.Toolchain(_StandInNVRTC(), 80, True), cache=None)
    assert HEADER not in capfd.readouterr().err


def test_a_gpu_pass_that_breaks_the_ir_is_named_when_verifying(monkeypatch):
    monkeypatch.setenv("TRITONE_VERIFY_IR", "1")
    def split_the_exp_layout(module, ctx):
        real_layout_run(module, ctx)
        exp = next(op for op in module.kernel.walk() if op.name == "exp")
        result = exp.results[0]
        assert isinstance(result.type.layout, NvidiaMmaLayout)  # computed where the dot left it
        result.type = result.type.with_layout(default_blocked_layout(tuple(result.type.shape), 4))

    real_layout_run = layout_pass.run
    monkeypatch.setattr(layout_pass, "run", split_the_exp_layout)
    broken = r"(?s)after pass layout_pass: .*the result has type .*BlockedLayout.*expected .*NvidiaMmaLayout.*= exp\("
    with pytest.raises(IRVerificationError, match=broken):
        generate_cuda(_module(80, debug=True), 80, {"num_warps": 4, "debug": True})


def test_a_gpu_pass_that_drops_an_op_is_named(monkeypatch):
    monkeypatch.setenv("TRITON_DEBUG", "1")
    def drop_the_last_dot(module, ctx):
        real_pipeline_run(module, ctx)
        loop = next(op for op in module.kernel.walk() if op.name == "for")
        body = loop.regions[0]
        body.ops.remove(next(op for op in body.ops if op.name == "dot"))

    real_pipeline_run = pipeline.run
    monkeypatch.setattr(pipeline, "run", drop_the_last_dot)
    with pytest.raises(IRVerificationError, match="after pass pipeline: IR verification failed in function "
                                                  "@scaled_matmul"):
        generate_cuda(_module(80, debug=True), 80, {"num_warps": 4, "debug": True})


def test_the_gpu_passes_are_verified_only_when_asked(monkeypatch):
    """Verification costs compile time (a third of the GPU passes'): a kernel's own
    `debug=True`, which Inductor sets on every kernel, does not pay it;
    TRITONE_VERIFY_IR or TRITON_DEBUG do."""
    verified = []
    monkeypatch.setattr("tritone.passes.verify_module", verified.append)
    for variable in ("TRITONE_VERIFY_IR", "TRITON_DEBUG"):
        monkeypatch.delenv(variable, raising=False)
    generate_cuda(_module(80), 80, {"num_warps": 4})
    generate_cuda(_module(80, debug=True), 80, {"num_warps": 4, "debug": True})
    assert verified == []
    for variable in ("TRITONE_VERIFY_IR", "TRITON_DEBUG"):
        module = _module(80)
        monkeypatch.setenv(variable, "1")
        generate_cuda(module, 80, {"num_warps": 4})
        assert verified == [module] * (1 + len(GPU_PASSES))
        verified.clear()
        monkeypatch.delenv(variable)

