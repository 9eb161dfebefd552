"""`tl.extra.cuda` hardware registers, launch-configuration constants and
programmatic dependent launch (PDL) controls, as Triton's namespace has them."""

from __future__ import annotations

from ...core import builtin, constexpr

_DEFAULT_NUM_WARPS = 4


@builtin
def globaltimer(_semantic=None):
    """The GPU's global nanosecond clock (`%globaltimer`), an int64 scalar read
    anew at each call (on the CPU: the host clock)."""
    return _semantic.special("globaltimer")


@builtin
def smid(_semantic=None):
    """The id of the streaming multiprocessor running this program (`%smid`), an
    int32 scalar (0 on the CPU)."""
    return _semantic.special("smid")


@builtin
def num_warps(_semantic=None):
    """The kernel's `num_warps` launch option, a constexpr."""
    return constexpr(int(_semantic.options.get("num_warps", _DEFAULT_NUM_WARPS)))


@builtin
def num_threads(_semantic=None):
    """Threads per program (`32 * num_warps`), a constexpr."""
    return constexpr(32 * int(_semantic.options.get("num_warps", _DEFAULT_NUM_WARPS)))


@builtin
def gdc_wait(_semantic=None):
    """Wait until the kernel launched before this one (with `launch_pdl=True`) has
    finished and its memory writes are visible. Safe without PDL; nothing to do
    on GPUs before sm_90 (which have no PDL) and on the CPU."""
    _semantic.special("gdc_wait")


@builtin
def gdc_launch_dependents(_semantic=None):
    """Let the next kernel (launched with `launch_pdl=True`) start once every
    program has called this or finished; only a hint, safe without PDL, nothing
    to do before sm_90 and on the CPU."""
    _semantic.special("gdc_launch_dependents")
