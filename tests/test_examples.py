"""The scripts of examples/ run and print what they promise."""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, run_name: str = "__main__") -> tuple[dict, str]:
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        namespace = runpy.run_path(str(EXAMPLES / name), run_name=run_name)
    return namespace, output.getvalue()


def test_vector_add_prints_zeros():
    _, printed = run_example("vector_add.py")
    assert printed.splitlines()[0] == "tensor([0., 0., 0.])"


def test_fused_softmax_on_numpy_and_torch():
    import torch

    namespace, printed = run_example("fused_softmax.py")
    assert float(printed.rsplit(":", 1)[1]) < 1e-6
    softmax = namespace["softmax"]
    x = torch.randn(7, 300)
    torch.testing.assert_close(softmax(x), torch.softmax(x, dim=1))
    array = np.random.default_rng().standard_normal((5, 64), dtype=np.float32)
    np.testing.assert_allclose(softmax(array), torch.softmax(torch.from_numpy(array), dim=1).numpy(), rtol=1e-5,
                               atol=1e-7)
