"""Row-wise softmax in one kernel: each program loads a whole row, subtracts
its maximum, exponentiates, normalises and stores it, so the row is read from
memory once. Works on torch CPU tensors and on numpy arrays.

    python examples/fused_softmax.py
"""

from __future__ import annotations

import numpy as np

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
        output = x.new_empty(x.shape)
        in_stride, out_stride = x.stride(0), output.stride(0)
    softmax_kernel[(rows,)](output, x, in_stride, out_stride, cols, BLOCK_SIZE=triton.next_power_of_2(cols))
    return output


if __name__ == "__main__":
    rng = np.random.default_rng()
    x = rng.standard_normal((128, 1000), dtype=np.float32)
    y = softmax(x)
    shifted = x - x.max(axis=1, keepdims=True)
    expected = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    print(f"max abs difference from numpy: {np.max(np.abs(y - expected)):.2e}")
