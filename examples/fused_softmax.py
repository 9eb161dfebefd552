"""Row-wise softmax in one kernel: each program loads a whole row, subtracts
its maximum, exponentiates, normalises and stores it, so the row is read from
memory once. `softmax` takes torch tensors (on the GPU, or on the CPU for the
CPU interpreter) and numpy arrays (CPU interpreter only).

    python examples/fused_softmax.py
"""

from __future__ import annotations

import numpy as np
import torch

import tritone as triton
import tritone.language as tl


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    # Masked-off columns read -inf so that they add exp(-inf) = 0 to the sum.
    x = tl.load(input_ptr + row * input_row_stride + cols, mask=mask, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)
    numerator = tl.exp(shifted)
    denominator = tl.sum(numerator, axis=0)
    tl.store(output_ptr + row * output_row_stride + cols, numerator / denominator, mask=mask)


def softmax(x):
    """Softmax over the last axis of a 2-D float32 torch tensor or numpy array."""
    rows, cols = x.shape
    if isinstance(x, np.ndarray):
        output = np.empty_like(x)
        in_stride, out_stride = x.strides[0] // x.itemsize, output.strides[0] // output.itemsize
    else:
        output = torch.empty_like(x)
        in_stride, out_stride = x.stride(0), output.stride(0)
    softmax_kernel[(rows,)](output, x, in_stride, out_stride, cols, BLOCK_SIZE=triton.next_power_of_2(cols))
    return output


if __name__ == "__main__":
    # On the GPU when torch has one (as Triton's tutorial runs it), else on the CPU
    # in tritone's interpreter; see vector_add.py.
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(128, 1000, device=device)
    y = softmax(x)
    print(f"on {y.device}: max abs difference from torch.softmax: "
          f"{(y - torch.softmax(x, dim=1)).abs().max().item():.2e}")
