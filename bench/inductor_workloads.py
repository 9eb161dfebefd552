"""The torch.compile workloads that bench/inductor.py times and tests/inductor runs on the CPU.

Each workload is a named builder `(device, dtype, scale) -> (fn, inputs)`: `fn` is a function
or an `nn.Module` whose call on `inputs` returns a tensor or a tuple of tensors, and `scale`
is "tiny" (CPU tests: the interpreter runs every kernel, so a few thousand elements) or
"full" (the sizes timed on a GPU). Workloads with `backward=True` are trained through: the
caller runs the backward of the outputs and compares the gradients of every input and
parameter that requires one. Outputs are chosen so that ties cannot make a correct
compiled result differ from eager (sort and top-k return values, argmax returns the value
it points at), so every output is compared numerically.

Inputs come from `torch.Generator` seeded per workload, never zeros.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

SCALES = ("tiny", "full")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}

Built = tuple[Callable[..., Any], tuple[Any, ...]]

# Set while a float64 reference is built for a case of another dtype: every drawn value is
# rounded to that dtype first, so the reference sees exactly the case's numbers.
_ROUND_TO: contextvars.ContextVar[torch.dtype | None] = contextvars.ContextVar("round_to", default=None)


@dataclass(frozen=True)
class Workload:
    """One torch.compile workload: `build(device, dtype, scale)` makes the callable and its
    inputs; `backward` says whether gradients are computed and compared; `options` are
    Inductor config values it is compiled with (`torch.compile(options=...)`), and
    `cpu_options` are added to them on the CPU. `not_on_cpu` says why Inductor's Triton CPU
    backend cannot run the workload at all ("" where it can)."""

    name: str
    what: str
    build: Callable[[str, torch.dtype, str], Built]
    backward: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    cpu_options: dict[str, Any] = field(default_factory=dict)
    not_on_cpu: str = ""

    def compile_options(self, device: str) -> dict[str, Any]:
        """The Inductor options of this workload on `device` ("cpu" or "cuda")."""
        return {**self.options, **self.cpu_options} if device == "cpu" else dict(self.options)


@contextlib.contextmanager
def values_of(dtype: torch.dtype) -> Iterator[None]:
    """Within this block, builders round every value they draw to `dtype` before casting
    it to the dtype they were asked for: `build(device, torch.float64, scale)` then makes
    the float64 reference of a `dtype` case (same inputs, same weights)."""
    token = _ROUND_TO.set(dtype)
    try:
        yield
    finally:
        _ROUND_TO.reset(token)


def cast(value: torch.Tensor, device: str, dtype: torch.dtype) -> torch.Tensor:
    """`value` on `device` in `dtype`, through the dtype of `values_of` when one is set."""
    rounding = _ROUND_TO.get()
    if rounding is not None and value.is_floating_point():
        value = value.to(rounding)
    return value.to(device=device, dtype=dtype)


def _generator(name: str) -> torch.Generator:
    """A generator seeded from the workload's name, so each workload's inputs are fixed
    across runs and processes (both sides of a comparison see the same numbers)."""
    seed = sum((index + 1) * ord(char) for index, char in enumerate(name))
    return torch.Generator(device="cpu").manual_seed(seed)


def _randn(shape: tuple[int, ...], dtype: torch.dtype, device: str, gen: torch.Generator,
           requires_grad: bool = False, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    # Drawn on the CPU and moved, so the CPU and GPU runs of a workload use the same numbers.
    value = cast(torch.randn(shape, generator=gen, dtype=torch.float32) * scale + shift, device, dtype)
    return value.requires_grad_(requires_grad)


def at_least_fp32(x: torch.Tensor) -> torch.Tensor:
    """`x` in float32, or kept in float64 (the reference's precision), as models upcast."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def _pick(scale: str, tiny: Any, full: Any) -> Any:
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return tiny if scale == "tiny" else full


def _module(module: nn.Module, device: str, dtype: torch.dtype, gen: torch.Generator) -> nn.Module:
    """`module` on `device` in `dtype`, with every parameter redrawn from `gen` (so both
    processes of a comparison hold the same weights) at the scale of its default init."""
    with torch.no_grad():
        for param in module.parameters():
            fan_in = param.shape[-1] if param.dim() > 1 else max(param.numel(), 1)
            drawn = torch.randn(param.shape, generator=gen) / fan_in ** 0.5
            param.copy_(cast(drawn if param.dim() > 1 else 1.0 + 0.1 * drawn, "cpu", torch.float32))
    return module.to(device=device, dtype=dtype)


# ---------------------------------------------------------------- transformer and MLP


def _transformer_layer(device: str, dtype: torch.dtype, scale: str, gen: torch.Generator) -> nn.Module:
    d_model, heads = _pick(scale, (32, 2), (1024, 16))
    layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=4 * d_model, dropout=0.0,
                                       batch_first=True, norm_first=True)
    return _module(layer, device, dtype, gen)


def build_transformer_fwd(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("transformer_fwd")
    # Training mode (dropout is 0): in eval mode under no_grad the layer takes its fused
    # "fast path", one aten op that Inductor calls as it is, with no kernel of its own.
    layer = _transformer_layer(device, dtype, scale, gen).train()
    batch, tokens = _pick(scale, (2, 8), (16, 512))
    x = _randn((batch, tokens, layer.linear1.in_features), dtype, device, gen)

    def transformer_fwd(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return layer(x)

    return transformer_fwd, (x,)


def build_transformer_bwd(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("transformer_bwd")
    layer = _transformer_layer(device, dtype, scale, gen).train()
    batch, tokens = _pick(scale, (2, 8), (16, 512))
    x = _randn((batch, tokens, layer.linear1.in_features), dtype, device, gen, requires_grad=True)
    return layer, (x,)


class MLPLoss(nn.Module):
    """Two hidden layers with GELU, then the cross-entropy of the logits: one training step's
    forward (the backward is the caller's)."""

    def __init__(self, width: int, classes: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, 4 * width),
                                 nn.GELU(), nn.Linear(4 * width, classes))

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(at_least_fp32(self.net(x)), target)


def build_mlp_train(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("mlp_train")
    batch, width, classes = _pick(scale, (16, 16, 10), (4096, 1024, 1000))
    model = _module(MLPLoss(width, classes), device, dtype, gen)
    x = _randn((batch, width), dtype, device, gen)
    target = torch.randint(0, classes, (batch,), generator=gen).to(device)
    return model, (x, target)


# ---------------------------------------------------------------- normalisations and pointwise


def build_layer_norm(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("layer_norm")
    rows, cols = _pick(scale, (37, 100), (8192, 8192))
    x = _randn((rows, cols), dtype, device, gen, requires_grad=True)
    weight = _randn((cols,), dtype, device, gen, requires_grad=True)
    bias = _randn((cols,), dtype, device, gen, requires_grad=True)

    def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), weight, bias)

    return layer_norm, (x, weight, bias)


def build_rms_norm(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("rms_norm")
    rows, cols = _pick(scale, (37, 100), (8192, 8192))
    x = _randn((rows, cols), dtype, device, gen, requires_grad=True)
    weight = _randn((cols,), dtype, device, gen, requires_grad=True)

    def rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        # Written out as the models write it (float32 statistics), not F.rms_norm.
        wide = at_least_fp32(x)
        variance = wide.pow(2).mean(-1, keepdim=True)
        return (wide * torch.rsqrt(variance + 1e-6)).to(x.dtype) * weight

    return rms_norm, (x, weight)


def build_softmax(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("softmax")
    rows, cols = _pick(scale, (37, 100), (32768, 4096))
    x = _randn((rows, cols), dtype, device, gen, scale=3.0)

    def softmax(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)

    return softmax, (x,)


def build_cross_entropy(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("cross_entropy")
    tokens, vocab = _pick(scale, (8, 1000), (4096, 128 * 1024))
    logits = _randn((tokens, vocab), dtype, device, gen, requires_grad=True, scale=2.0)
    target = torch.randint(0, vocab, (tokens,), generator=gen).to(device)

    def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(at_least_fp32(logits), target)

    return cross_entropy, (logits, target)


def build_rope(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("rope")
    batch, heads, tokens, head_dim = _pick(scale, (1, 2, 8, 16), (8, 32, 2048, 128))
    q = _randn((batch, heads, tokens, head_dim), dtype, device, gen)
    k = _randn((batch, heads, tokens, head_dim), dtype, device, gen)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(tokens, dtype=torch.float32), inv_freq)
    cos = cast(torch.cat((angles, angles), -1).cos(), device, dtype)
    sin = cast(torch.cat((angles, angles), -1).sin(), device, dtype)

    def rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, ...]:
        def rotate_half(x: torch.Tensor) -> torch.Tensor:
            first, second = x.chunk(2, dim=-1)
            return torch.cat((-second, first), dim=-1)

        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin

    return rope, (q, k, cos, sin)


def build_swiglu(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("swiglu")
    rows, cols = _pick(scale, (16, 64), (8192, 14336))
    gate = _randn((rows, cols), dtype, device, gen, requires_grad=True)
    up = _randn((rows, cols), dtype, device, gen, requires_grad=True)

    def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        return F.silu(gate) * up

    return swiglu, (gate, up)


# ---------------------------------------------------------------- attention, matmul, conv


def _flex_inputs(device: str, dtype: torch.dtype, scale: str, name: str) -> tuple[torch.Tensor, ...]:
    gen = _generator(name)
    batch, heads, tokens, head_dim = _pick(scale, (1, 2, 128, 16), (4, 16, 2048, 64))
    return tuple(_randn((batch, heads, tokens, head_dim), dtype, device, gen) for _ in range(3))


def _flex(device: str, dtype: torch.dtype, scale: str, name: str, window: int | None) -> Built:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    q, k, v = _flex_inputs(device, dtype, scale, name)
    tokens = q.shape[-2]

    def causal(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return q_idx >= kv_idx

    def sliding(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        return (q_idx >= kv_idx) & (q_idx - kv_idx < window)

    mask_mod = causal if window is None else sliding
    block_mask = create_block_mask(mask_mod, None, None, tokens, tokens, device=device)

    def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return flex_attention(q, k, v, block_mask=block_mask)

    attention.__name__ = name
    return attention, (q, k, v)


def build_flex_causal(device: str, dtype: torch.dtype, scale: str) -> Built:
    return _flex(device, dtype, scale, "flex_causal", None)


def build_flex_sliding(device: str, dtype: torch.dtype, scale: str) -> Built:
    return _flex(device, dtype, scale, "flex_sliding", _pick(scale, 48, 256))


def build_matmul(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("matmul")
    m, n, k = _pick(scale, (48, 40, 56), (4096, 4096, 4096))
    a = _randn((m, k), dtype, device, gen)
    b = _randn((k, n), dtype, device, gen)
    bias = _randn((n,), dtype, device, gen)

    def matmul(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return torch.relu(a @ b + bias)

    return matmul, (a, b, bias)


class ConvBlock(nn.Module):
    """conv, batch norm (inference statistics folded by Inductor), SiLU: a CNN's block."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.norm = nn.BatchNorm2d(2 * channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.norm(self.conv(x)))


def build_conv(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("conv")
    batch, channels, size = _pick(scale, (2, 4, 8), (16, 128, 56))
    block = _module(ConvBlock(channels), device, dtype, gen).eval()
    x = _randn((batch, channels, size, size), dtype, device, gen)

    def conv(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return block(x)

    return conv, (x,)


# ---------------------------------------------------------------- sorts, scans, scatters, reductions


def build_sort_topk(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("sort_topk")
    rows, cols, top = _pick(scale, (4, 64, 8), (4096, 2048, 64))
    x = _randn((rows, cols), dtype, device, gen)

    def sort_topk(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        ordered, order = torch.sort(x, dim=-1, stable=True)
        values, indices = torch.topk(x * 2.0, top, dim=-1)
        # Gathering through the indices checks them without depending on how ties break.
        return ordered, x.gather(-1, order), values, (x * 2.0).gather(-1, indices)

    return sort_topk, (x,)


def build_cumsum(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("cumsum")
    rows, cols = _pick(scale, (8, 100), (4096, 4096))
    x = _randn((rows, cols), dtype, device, gen)

    def cumsum(x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=-1)

    return cumsum, (x,)


def build_index_add(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("index_add")
    rows, cols, updates = _pick(scale, (32, 16, 64), (65536, 256, 262144))
    base = _randn((rows, cols), dtype, device, gen)
    source = _randn((updates, cols), dtype, device, gen)
    index = torch.randint(0, rows, (updates,), generator=gen).to(device)
    scatter_index = torch.randint(0, cols, (rows, cols), generator=gen).to(device)

    def index_add(base: torch.Tensor, source: torch.Tensor, index: torch.Tensor,
                  scatter_index: torch.Tensor) -> tuple[torch.Tensor, ...]:
        added = base.index_add(0, index, source)
        scattered = torch.zeros_like(base).scatter_add(1, scatter_index, base * 0.5)
        return added, scattered

    return index_add, (base, source, index, scatter_index)


def build_var_mean(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("var_mean")
    rows, cols = _pick(scale, (37, 100), (16384, 8192))
    x = _randn((rows, cols), dtype, device, gen, shift=3.0)

    def var_mean(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.var_mean(x, dim=-1, correction=1)

    return var_mean, (x,)


def build_argmax(device: str, dtype: torch.dtype, scale: str) -> Built:
    gen = _generator("argmax")
    rows, cols = _pick(scale, (37, 100), (16384, 8192))
    x = _randn((rows, cols), dtype, device, gen)

    def argmax(x: torch.Tensor) -> torch.Tensor:
        # The value the index points at: equal to the maximum however ties are broken.
        return x.gather(-1, torch.argmax(x * 1.5, dim=-1, keepdim=True))

    return argmax, (x,)


FLEX_NOT_ON_CPU = ("Inductor lowers flex_attention on the CPU to its C++ template whatever cpu_backend says "
                   "(torch 2.13: TypeError 'hint_override' with cpu_backend='triton')")

WORKLOADS: dict[str, Workload] = {workload.name: workload for workload in (
    Workload("transformer_fwd", "TransformerEncoderLayer forward (pre-norm, no dropout)", build_transformer_fwd),
    Workload("transformer_bwd", "TransformerEncoderLayer forward and backward", build_transformer_bwd,
             backward=True),
    Workload("mlp_train", "3-layer GELU MLP + cross-entropy, forward and backward", build_mlp_train,
             backward=True),
    Workload("layer_norm", "layer norm forward and backward", build_layer_norm, backward=True),
    Workload("rms_norm", "RMS norm (float32 statistics) forward and backward", build_rms_norm, backward=True),
    Workload("softmax", "row softmax", build_softmax),
    Workload("cross_entropy", "cross-entropy over a 128k vocabulary, forward and backward", build_cross_entropy,
             backward=True),
    Workload("rope", "rotary position embedding of q and k", build_rope),
    Workload("swiglu", "SiLU(gate) * up, forward and backward", build_swiglu, backward=True),
    Workload("flex_causal", "flex_attention, causal block mask", build_flex_causal, not_on_cpu=FLEX_NOT_ON_CPU),
    Workload("flex_sliding", "flex_attention, causal sliding window", build_flex_sliding,
             not_on_cpu=FLEX_NOT_ON_CPU),
    Workload("matmul", "relu(a @ b + bias), max-autotune Triton templates", build_matmul,
             options={"max_autotune": True, "max_autotune_gemm_backends": "TRITON"},
             # torch 2.13 writes the CPU benchmark module of an epilogue fusion with a
             # misindented import (IndentationError); the templates themselves still autotune.
             cpu_options={"benchmark_epilogue_fusion": False}),
    Workload("conv", "conv2d + batch norm + SiLU (inference)", build_conv),
    Workload("sort_topk", "sort and top-k along rows", build_sort_topk),
    Workload("cumsum", "cumulative sum along rows", build_cumsum),
    Workload("index_add", "index_add over rows and scatter_add along columns", build_index_add),
    Workload("var_mean", "var_mean along rows", build_var_mean),
    Workload("argmax", "argmax along rows", build_argmax),
)}
