"""A kernel drawing every flavour of `tl` random numbers for given seeds and
offsets (loaded by `tests.kernels._loader.load_kernels(triton, tl, path)`)."""

import torch

from tests.kernels._data import poisoned

if "triton" not in globals() or "tl" not in globals():
    raise ImportError("load this file with tests.kernels._loader.load_kernels(triton, tl, path)")
triton = globals()["triton"]
tl = globals()["tl"]


@triton.jit
def random_kernel(seed, offsets_ptr, rand_ptr, randn_ptr, randint_ptr, randint4x_ptr, N: tl.constexpr):
    lanes = tl.arange(0, N)
    offsets = tl.load(offsets_ptr + lanes)
    tl.store(rand_ptr + lanes, tl.rand(seed, offsets))
    tl.store(randn_ptr + lanes, tl.randn(seed, offsets))
    # randint gives uint32: widen to int64 (zero-extension) to store it.
    tl.store(randint_ptr + lanes, tl.randint(seed, offsets).to(tl.int64))
    c0, c1, c2, c3 = tl.randint4x(seed, offsets)
    tl.store(randint4x_ptr + lanes * 4 + 0, c0.to(tl.int64))
    tl.store(randint4x_ptr + lanes * 4 + 1, c1.to(tl.int64))
    tl.store(randint4x_ptr + lanes * 4 + 2, c2.to(tl.int64))
    tl.store(randint4x_ptr + lanes * 4 + 3, c3.to(tl.int64))


def run_random(seed, offsets):
    n = offsets.numel()
    device = offsets.device
    outputs = {
        "rand": poisoned((n,), torch.float32, device),
        "randn": poisoned((n,), torch.float32, device),
        "randint": poisoned((n,), torch.int64, device),
        "randint4x": poisoned((n, 4), torch.int64, device),
    }
    random_kernel[(1,)](seed, offsets, outputs["rand"], outputs["randn"], outputs["randint"], outputs["randint4x"],
                        N=n)
    return outputs
