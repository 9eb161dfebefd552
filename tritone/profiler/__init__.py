"""`triton.profiler`: Proton's API, measured in pure Python.

    import triton.profiler as proton

    proton.start("matmul", hook="triton")        # session 0, active
    with proton.scope("cublas", {"flops16": 2 * M * N * K, "bytes": ...}):
        cublas_matmul(a, b)
    matmul_kernel[grid](...)                     # a node per kernel, with its launch_metadata
    proton.finalize()                            # writes matmul.hatchet

    import triton.profiler.viewer as proton_viewer
    tree, metrics = proton_viewer.parse(["tflop16/s", "time/ms"], "matmul.hatchet")
    proton_viewer.print_tree(tree, metrics)

The file is the hatchet literal Proton writes (a root node named "ROOT" whose
metrics name every inclusive metric, then the devices), so Proton's viewer
reads tritone's files and tritone's viewer reads Proton's.

How tritone measures, and how that differs from Proton. Proton sees every
kernel of the process through CUPTI, from C++. tritone has no compiled code:
while a session is active it installs launch hooks (`knobs.runtime`; none are
installed otherwise, so launches outside sessions keep their fast path) and
times each kernel tritone launches with two CUDA events recorded on its
stream, read only when a session is deactivated or finalized (or when 8192
intervals wait), so timing never serializes launches. GPU work that tritone
does not launch (cuBLAS, torch) is seen only through scopes: a scope inside
which no tritone kernel launched gets the time between CUDA events recorded
on the current stream at its enter and exit, less the scopes measured inside
it. Such work is therefore timed per scope, not per kernel, and includes any
time the GPU waited for the host inside the scope; outside scopes it is not
seen at all. In the CPU interpreter the host clock (`time.perf_counter_ns`)
replaces the events, which the file's device record says ("timing").
"""

from . import context
from .profile import DEFAULT_PROFILE_NAME, activate, deactivate, finalize, profile, start
from .scope import cpu_timed_scope, enter_scope, exit_scope, scope
from .state import enter_state, exit_state, state

__all__ = [
    "DEFAULT_PROFILE_NAME", "activate", "context", "cpu_timed_scope", "deactivate", "enter_scope", "enter_state",
    "exit_scope", "exit_state", "finalize", "profile", "scope", "start", "state",
]
