"""The CPU interpreter: runs a kernel's IR over its grid with numpy. Its
results are tritone's reference semantics (upstream Triton's on the GPU)."""

from .run import run_kernel  # noqa: F401
