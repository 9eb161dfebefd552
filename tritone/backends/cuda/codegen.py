"""IR with layouts -> one CUDA C++ translation unit: the prelude, the helper
functions (combine functions, libdevice prototypes) and the kernel

    extern "C" __global__ void __launch_bounds__(32 * num_warps) <name>(<params>)

(`__maxnreg__(maxnreg)` in place of the launch bounds when that option is set)

whose parameters are the kernel function's arguments in order (pointers as
`T*`, scalars by value, TMA tensor maps as `const __grid_constant__
tt_tensormap`, 128 bytes by value), then, for a kernel with the attribute
`global_scratch_size` (tensor maps it encodes itself), `unsigned char*
tt_global_scratch`: that many bytes per block, which the launcher allocates.
Its dynamic shared memory is `tt_smem`, of the size `smem.py` planned (the
launcher passes it).
"""

from __future__ import annotations

import re

from tritone.ir.core import Module
from tritone.ir.types import tensormap_type

# The op generators register themselves with codegen_base.EMITTERS on import.
from . import (  # noqa: F401
    codegen_cast,
    codegen_control,
    codegen_debug,
    codegen_elementwise,
    codegen_gather,
    codegen_inline_asm,
    codegen_layout,
    codegen_memory,
    codegen_reduce,
    codegen_tma,
    dot,
)
from .bindings.driver_api import TENSOR_MAP_BYTES
from .codegen_base import CodegenError, CodegenOptions, Emitter
from .codegen_tma import GLOBAL_SCRATCH, GLOBAL_SCRATCH_ALIGN, tensormap_parameter
from .codegen_types import ctype
from .prelude import prelude

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# Functions NVRTC declares `extern "C"` in every translation unit (the CUDA math
# API, float and double, and the device runtime's C functions): an `extern "C"`
# kernel of the same name does not compile ("more than one instance of
# overloaded function has C linkage"), so such a kernel gets another entry name.
_MATH_NAMES = (
    "acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh cospi cyl_bessel_i0 cyl_bessel_i1 erf "
    "erfc erfcinv erfcx erfinv exp exp10 exp2 expm1 fabs fdim floor fma fmax fmin fmod frexp hypot ilogb ldexp "
    "lgamma llrint llround log log10 log1p log2 logb lrint lround modf nan nearbyint nextafter norm norm3d norm4d "
    "normcdf normcdfinv pow rcbrt remainder remquo rhypot rint rnorm rnorm3d rnorm4d round rsqrt scalbln scalbn "
    "sin sincos sincospi sinh sinpi sqrt tan tanh tgamma trunc y0 y1 yn j0 j1 jn").split()
_C_LINKAGE_NAMES = frozenset(
    _MATH_NAMES + [f"{n}f" for n in _MATH_NAMES]
    + "abs labs llabs min max umin umax llmin llmax ullmin ullmax printf vprintf malloc free memcpy memset "
      "clock clock64 __assertfail __assert_fail".split())


def entry_name(kernel_name: str) -> str:
    """The name of the kernel's `extern "C"` entry: the kernel's own, unless that
    is a C function NVRTC already declares (`exp2`) or a name of the prelude's
    (`tt_`, libdevice's `__nv_`), then with `_kernel` added."""
    if kernel_name in _C_LINKAGE_NAMES or kernel_name.startswith(("tt_", "__nv_")):
        return f"{kernel_name}_kernel"
    return kernel_name


def _param_name(index: int, hint: str | None) -> str:
    hint = re.sub(r"[^A-Za-z0-9_]", "_", hint or "")
    return f"arg{index}_{hint}" if hint else f"arg{index}"


def generate_kernel(module: Module, target: int, options: CodegenOptions) -> tuple[str, str, dict]:
    """(CUDA source, entry name (`entry_name`), metadata) for the kernel of `module`, whose
    block values all have layouts. Metadata: `name`, `num_warps`, `threads`,
    `shared` (dynamic shared memory bytes), `target`, `params` (one
    `(name, C type, bytes)` per kernel argument, in order)."""
    fn = module.kernel
    if not _IDENTIFIER.match(fn.name):
        raise CodegenError(f"kernel name {fn.name!r} is not a C identifier")
    name = entry_name(fn.name)
    shared = int(module.attrs.get("shared", 0))
    em = Emitter(fn, target, options, shared)
    params = []
    for index, arg in enumerate(fn.args):
        if arg.type.is_block():
            raise CodegenError(f"kernel argument {index} is a block ({arg.type})")
        param = _param_name(index, arg.name_hint)
        if isinstance(arg.type, tensormap_type):
            em.bind(arg, f"(&{param})")  # a tensor map value is its address
            params.append((param, tensormap_parameter(em), TENSOR_MAP_BYTES))
            continue
        em.bind(arg, param)
        params.append((param, ctype(arg.type), arg.type.itemsize if not arg.type.is_ptr() else 8))
    global_scratch = int(fn.attrs.get("global_scratch_size", 0))
    if global_scratch:
        params.append((GLOBAL_SCRATCH, "unsigned char*", 8))
    em.emit_region(fn.body)
    if em.memo.get("zeros_if_no_trips"):
        # a loop's accumulator left unzeroed whose dot_wait never came: a K loop of no trips would read garbage
        raise CodegenError(f"kernel {fn.name}: a K loop's zeroed accumulator was never written after it")

    # a warp-specialized kernel's producer warp runs beside the num_warps the code was laid out for
    warps = options.num_warps + int(fn.attrs.get("warp_specialized", 0))
    threads = 32 * warps
    signature = ", ".join(f"{c} {p}" for p, c, _ in params)
    # A dot kernel says one block per multiprocessor is enough: without that, ptxas
    # holds registers down for occupancy (attention's 8-warp loop: 172 registers
    # and 12% slower than with the 235 it takes then); its speed comes from the
    # independent work inside each warp, not from more blocks.
    bounds = f"{threads}, 1" if any(op.name == "dot" for op in fn.walk()) else str(threads)
    kernel = []
    if options.maxnreg is None:
        kernel.append(f'extern "C" __global__ void __launch_bounds__({bounds}) {name}({signature}) {{')
    else:
        # `__maxnreg__` (NVRTC 12.4+, not combinable with `__launch_bounds__`) puts
        # `.maxnreg` on the entry in the PTX, as Triton does; older NVRTCs keep
        # the launch bounds and the `--maxrregcount` the runtime passes.
        kernel += ["#if __CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4)",
                   f'extern "C" __global__ void __maxnreg__({int(options.maxnreg)}) {name}({signature}) {{',
                   "#else",
                   f'extern "C" __global__ void __launch_bounds__({bounds}) {name}({signature}) {{',
                   "#endif"]
    if em.uses_scratch:
        kernel.append("  extern __shared__ __align__(1024) unsigned char tt_smem[];")
    kernel.append("  const int tt_lane = threadIdx.x & 31;")
    kernel.append("  const int tt_warp = threadIdx.x >> 5;")
    kernel += ["  " + line for line in em.prologue]
    kernel += em.lines
    kernel.append("}")
    source = "\n".join([prelude(target), *em.helpers, "", *kernel, ""])
    metadata = {"name": fn.name, "num_warps": warps, "threads": threads, "shared": shared,
                "target": target, "params": params}
    if global_scratch:
        metadata["global_scratch_size"] = global_scratch
        metadata["global_scratch_align"] = GLOBAL_SCRATCH_ALIGN
    if fn.attrs.get("tensormaps"):
        # per appended tensor map argument, the index of its host descriptor's argument
        metadata["tensormaps"] = [int(index) for index in fn.attrs["tensormaps"]]
        boxes = fn.attrs.get("tensormap_boxes") or {}
        if boxes:
            # per map, () or the [box, swizzle] the pipeline asked of its copies
            metadata["tensormap_boxes"] = [list(boxes[n]) if n in boxes else []
                                           for n in range(len(fn.attrs["tensormaps"]))]
    if em.memo.get("arch_suffix"):
        # instructions of the architecture-specific target (wgmma, tensormap.replace: sm_90a)
        metadata["arch_suffix"] = em.memo["arch_suffix"]
    return source, name, metadata
