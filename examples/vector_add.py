"""The first test for a new install: add two vectors with a kernel.

This is the test program Windows users of Triton run first, unchanged except
for `import tritone as triton` and the choice of device below. It prints
`tensor([0., 0., 0.], device='cuda:0')` on a GPU, `tensor([0., 0., 0.])` on
the CPU, when everything works.
"""

import torch

import tritone as triton
import tritone.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor):
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


# Triton's script says `device="cuda"`. tritone also runs where there is no GPU
# (in its CPU interpreter, which reads CPU tensors), so where torch has no CUDA
# the script uses CPU tensors. On a machine whose GPU tritone uses, torch must be
# a CUDA build: the GPU launcher refuses CPU tensors, as Triton's does.
device = "cuda" if torch.cuda.is_available() else "cpu"
a = torch.rand(3, device=device)
b = a + a
b_compiled = add(a, a)
print(b_compiled - b)
print(f"If you see {torch.zeros(3, device=device)}, then it works")
