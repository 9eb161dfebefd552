"""Triton's `triton.backends.compiler`: `BaseBackend`, the compiler objects its
API hands out (`make_backend(target)`, `tritone.backends.backends`), which turn
option dicts into `KernelOptions` for a target. The target vocabulary
(`GPUTarget`, `KernelOptions`, ...) lives in `tritone.ir.target`; `GPUTarget`
is here too, at Triton's path `triton.backends.compiler.GPUTarget`.

There is deliberately no `AttrsDescriptor` here: without it TorchInductor
passes specialization attributes as plain dicts `{(i,): [["tt.divisibility", 16]]}`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..errors import TritonError
from ..ir.target import GPUTarget, KernelOptions
from ..tensors import data_address
from . import registry

# A host descriptor specialised on zero padding (its specialization attribute holds "Z", tritone's).
ZERO_PADDING = "tritone.zero_padding"


def specialization_attrs(attribute: str) -> list[list[Any]]:
    """The compile attributes (`ASTSource.attrs` values) of a specialization
    attribute: `"D"` -> `[["tt.divisibility", 16]]`; a descriptor's `"Z"` adds
    `["tritone.zero_padding", 1]`; `""` -> `[]`."""
    attrs: list[list[Any]] = [["tt.divisibility", 16]] if "D" in attribute else []
    if "Z" in attribute:
        attrs.append([ZERO_PADDING, 1])
    return attrs


class BaseBackend:
    """A compilation backend as Triton's API exposes it (`make_backend(target)`):
    it knows its `target` and turns an option dict into the `KernelOptions`
    compiled with (`parse_options`). tritone's compiler itself is
    `tritone.compiler.compile`, which lowers through the target backends of
    `registry`; these objects exist for callers of Triton's API, TorchInductor
    among them. Each target backend names its subclass (`TargetBackend.compiler`)."""

    binary_ext = "ttir"

    def __init__(self, target: GPUTarget):
        if not self.supports_target(target):
            raise ValueError(f"{type(self).__name__} does not compile for {target}")
        self.target = target

    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        raise NotImplementedError

    def option_defaults(self) -> dict[str, Any]:
        """Options that depend on the target, used where the caller gives none."""
        return {}

    def parse_options(self, options: dict[str, Any]) -> KernelOptions:
        """The `KernelOptions` for `options` (names of `KernelOptions`; others and
        None values are ignored, as Triton's backends ignore them), with the
        target's defaults and the knobs' (`TRITON_DEFAULT_FP_FUSION`,
        `TRITON_F32_DEFAULT`, `TRITON_DEBUG`) where `options` gives none."""
        given = {key: value for key, value in options.items() if value is not None}
        return KernelOptions.from_dict({**self.option_defaults(), **given})

    # The specialization answers of Triton's backends, which callers of Triton's
    # API (TorchInductor's kernel analysis) turn into compile attributes. A
    # backend that types tensors itself sets this False (see
    # `runtime.jit.native_specialize_impl`); tritone's launcher uses the rule below.
    supports_native_tensor_specialization = True

    @staticmethod
    def parse_attr(desc: str) -> list[list[Any]]:
        """The compile attributes of an argument's specialization attribute:
        `"D"` -> `[["tt.divisibility", 16]]`, `""` -> `[]` (a host descriptor's
        `"Z"`, tritone's, adds `["tritone.zero_padding", 1]`)."""
        if not isinstance(desc, str):
            raise TypeError(f"a specialization attribute is a string such as 'D', got {desc!r}")
        return specialization_attrs(desc)

    @staticmethod
    def get_int_specialization(arg: int, **kwargs: Any) -> str:
        """`"D"` when the int is a multiple of 16 and `align=True` is given, else `""`."""
        return "D" if kwargs.get("align", False) and arg % 16 == 0 else ""

    @staticmethod
    def get_tensor_specialization(arg: Any, **kwargs: Any) -> str:
        """`"D"` when the tensor's address is 16-byte aligned and `align=True` is
        given, else `""`."""
        return "D" if kwargs.get("align", False) and data_address(arg) % 16 == 0 else ""

    def get_arg_specialization(self, arg: Any, ty: str, **kwargs: Any) -> str:
        """The attribute of an int (`ty == "int"`) or a tensor (`ty == "tensor"`),
        as Triton 3.3-3.4 backends answer `specialize_extra`."""
        if ty == "int":
            return self.get_int_specialization(arg, **kwargs)
        if ty == "tensor":
            return self.get_tensor_specialization(arg, **kwargs)
        raise ValueError(f"get_arg_specialization: kind must be 'int' or 'tensor', got {ty!r}")

    def load_dialects(self, context: Any) -> None:
        """Nothing to load: Triton's backends add their MLIR dialects to `context`
        here; tritone's IR has none (see `triton._C.libtriton.ir`)."""

    def get_codegen_implementation(self, options: KernelOptions) -> dict[str, Any]:
        """The target hooks Triton's frontend takes (`make_ir(..., codegen_fns,
        ...)`): none, tritone's frontend knows its targets itself."""
        return {}

    def get_module_map(self) -> dict[str, Any]:
        """Modules Triton's frontend substitutes (its `libdevice` for the target's):
        none, tritone's `libdevice` serves every target."""
        return {}

    def hash(self) -> str:
        """A digest of what the backend compiles for (part of Triton's cache keys)."""
        return hashlib.sha256(f"{type(self).__name__}-{self.target!r}".encode()).hexdigest()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target!r})"


def make_backend(target: GPUTarget) -> BaseBackend:
    """The compiler object of the backend compiling for `target`; RuntimeError when none does."""
    try:
        backend = registry.backend_for(target)
    except TritonError:
        raise RuntimeError(f"no tritone backend compiles for {target}") from None
    return backend.compiler(target)
