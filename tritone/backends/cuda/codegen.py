"""IR with layouts -> one CUDA C++ translation unit: the prelude, the helper
functions (combine functions, libdevice prototypes) and the kernel

    extern "C" __global__ void __launch_bounds__(32 * num_warps) <name>(<params>)

whose parameters are the kernel function's arguments in order (pointers as
`T*`, scalars by value). Its dynamic shared memory is `tt_smem`, of the size
`smem.py` planned (the launcher passes it).
"""

from __future__ import annotations

import re

from tritone.ir.core import Module

# The op generators register themselves with codegen_base.EMITTERS on import.
from . import (  # noqa: F401
    codegen_cast,
    codegen_control,
    codegen_debug,
    codegen_elementwise,
    codegen_gather,
    codegen_layout,
    codegen_memory,
    codegen_reduce,
    dot,
)
from .codegen_base import CodegenError, CodegenOptions, Emitter
from .codegen_types import ctype
from .prelude import prelude

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Functions CUDA's device headers declare with C linkage: a kernel of one of these
# names (a kernel called `exp2`, say) would clash with them, so its entry gets a
# suffix. C's <math.h> functions, their `f` forms, CUDA's additions, and a few more.
_MATH_NAMES = (
    "acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 exp10 expm1 frexp ilogb "
    "ldexp log log10 log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow sqrt rsqrt rcbrt erf erfc "
    "erfinv erfcinv erfcx lgamma tgamma ceil floor nearbyint rint lrint llrint round lround llround trunc "
    "fmod remainder remquo copysign nan nextafter fdim fmax fmin fma sinpi cospi sincos sincospi normcdf "
    "normcdfinv j0 j1 jn y0 y1 yn cyl_bessel_i0 cyl_bessel_i1 norm rnorm norm3d rnorm3d norm4d rnorm4d "
    "rhypot nexttoward signbit isnan isinf isfinite"
).split()
_C_LINKAGE_NAMES = frozenset(
    _MATH_NAMES + [n + "f" for n in _MATH_NAMES]
    + "abs labs llabs min max umin umax llmin llmax ullmin ullmax printf vprintf malloc free memcpy memset "
      "clock clock64 __assertfail __assert_fail".split())


def entry_name(name: str) -> str:
    """The C name of the kernel called `name`: `name` itself unless CUDA's headers
    already declare that name (or it starts with the prelude's `tt_`)."""
    if name in _C_LINKAGE_NAMES or name.startswith(("tt_", "__nv_")):
        return f"{name}_kernel"
    return name


def _param_name(index: int, hint: str | None) -> str:
    hint = re.sub(r"[^A-Za-z0-9_]", "_", hint or "")
    return f"arg{index}_{hint}" if hint else f"arg{index}"


def generate_kernel(module: Module, target: int, options: CodegenOptions) -> tuple[str, str, dict]:
    """(CUDA source, entry name, metadata) for the kernel of `module`, whose
    block values all have layouts; the entry is `entry_name` of the kernel's
    name. Metadata: `name`, `num_warps`, `threads`,
    `shared` (dynamic shared memory bytes), `target`, `params` (one
    `(name, C type, bytes)` per kernel argument, in order)."""
    fn = module.kernel
    name = fn.name
    if not _IDENTIFIER.match(name):
        raise CodegenError(f"kernel name {name!r} is not a C identifier")
    shared = int(module.attrs.get("shared", 0))
    em = Emitter(fn, target, options, shared)
    params = []
    for index, arg in enumerate(fn.args):
        if arg.type.is_block():
            raise CodegenError(f"kernel argument {index} is a block ({arg.type})")
        param = _param_name(index, arg.name_hint)
        em.bind(arg, param)
        params.append((param, ctype(arg.type), arg.type.itemsize if not arg.type.is_ptr() else 8))
    em.emit_region(fn.body)

    threads = 32 * options.num_warps
    signature = ", ".join(f"{c} {p}" for p, c, _ in params)
    # A dot kernel says one block per multiprocessor is enough: without that, ptxas
    # holds registers down for occupancy (attention's 8-warp loop: 172 registers
    # and 12% slower than with the 235 it takes then); its speed comes from the
    # independent work inside each warp, not from more blocks.
    bounds = f"{threads}, 1" if any(op.name == "dot" for op in fn.walk()) else str(threads)
    entry = entry_name(name)
    kernel = [f'extern "C" __global__ void __launch_bounds__({bounds}) {entry}({signature}) {{']
    if em.uses_scratch:
        kernel.append("  extern __shared__ __align__(16) unsigned char tt_smem[];")
    kernel.append("  const int tt_lane = threadIdx.x & 31;")
    kernel.append("  const int tt_warp = threadIdx.x >> 5;")
    kernel += ["  " + line for line in em.prologue]
    kernel += em.lines
    kernel.append("}")
    source = "\n".join([prelude(target), *em.helpers, "", *kernel, ""])
    metadata = {"name": name, "num_warps": options.num_warps, "threads": threads, "shared": shared,
                "target": target, "params": params}
    return source, entry, metadata
