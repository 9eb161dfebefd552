"""The interpreter's memory: the real memory of the caller's buffers, reached
through 64-bit addresses.

Every pointer argument registers the address range of the storage behind it
(a torch tensor's whole untyped storage, a numpy array's base memory), so a
kernel may also reach memory of the same allocation outside the view it was
given, as on the GPU. Accesses translate addresses to (buffer, offset) with one
`np.searchsorted` per access and read or write through numpy views of that
memory, so stores land in the caller's tensors. An unmasked access outside
every buffer, or misaligned for its element size, raises `AccessError` before
anything is touched, and so does a store or atomic into a numpy array that is
not writeable (its memory may belong to an immutable object such as `bytes`);
masked-off lanes never touch memory.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np

from ..ir.types import dtype
from . import values as V

_U64_MAX = 0xFFFF_FFFF_FFFF_FFFF
# Up to this many lanes hitting one address, atomics are applied one lane after
# the other (exact lane order); beyond, through a segmented scan (log steps).
_SEQUENTIAL_ATOMIC_DEPTH = 8


class AccessError(Exception):
    """A memory access the GPU would fault on or that hits no known buffer.
    The executor adds the kernel, program id and source line."""


@dataclass
class _Buffer:
    start: int
    end: int
    names: list[str]
    raw: np.ndarray  # uint8 view of [start, end)
    writable: bool
    typed: dict = field(default_factory=dict)

    def view(self, storage: np.dtype) -> tuple[np.ndarray, int]:
        """A view of the buffer as `storage` elements, and the address of element 0
        (the first address at or after the start aligned to the element size)."""
        cached = self.typed.get(storage)
        if cached is None:
            size = storage.itemsize
            base = -(-self.start // size) * size
            count = max(0, (self.end - base) // size)
            offset = base - self.start
            cached = (self.raw[offset:offset + count * size].view(storage), base)
            self.typed[storage] = cached
        return cached


def _raw_memory(address: int, nbytes: int) -> np.ndarray:
    array_type = ctypes.c_uint8 * nbytes
    return np.ctypeslib.as_array(array_type.from_address(address))


# numpy 2 moved byte_bounds to np.lib.array_utils; numpy 1.x has it at the top level.
_byte_bounds = getattr(np.lib, "array_utils", np).byte_bounds


def _numpy_span(array: np.ndarray) -> tuple[int, int]:
    """Address range of the memory an ndarray's data lives in (its base's whole span)."""
    base = array
    while isinstance(base.base, np.ndarray):
        base = base.base
    start = base.__array_interface__["data"][0]
    if base.flags.c_contiguous or base.flags.f_contiguous:
        return start, base.nbytes
    # A strided array that owns no contiguous block: cover exactly the bytes it spans.
    low, high = _byte_bounds(base)
    return low, high - low


class Memory:
    """The buffers a launch may touch, and vectorised loads, stores and atomics on them."""

    def __init__(self):
        self._spans: list[tuple[int, int, str, bool]] = []
        self._buffers: list[_Buffer] = []
        self._starts = np.zeros(0, dtype=np.uint64)
        self._ends = np.zeros(0, dtype=np.uint64)
        self._writable = np.zeros(0, dtype=bool)

    # -- registration ------------------------------------------------------
    def pointer_argument(self, arg, name: str) -> int:
        """The address a pointer argument stands for, registering its storage.

        `arg` is an object with `data_ptr()` (torch tensors: the whole untyped
        storage is registered), a numpy array (its base memory), an int address
        (not registered: it must point into another buffer) or None (null)."""
        if arg is None:
            return 0
        if isinstance(arg, (int, np.integer)) and not isinstance(arg, bool):
            return int(arg) & _U64_MAX
        if isinstance(arg, np.ndarray):
            if not arg.dtype.isnative:
                # Memory is read in the machine's byte order: a swapped array would
                # give silently wrong numbers.
                raise TypeError(f"argument {name!r}: a numpy array of non-native byte order ({arg.dtype.str}) "
                                f"cannot be a kernel argument; convert it with .astype({arg.dtype.name!r})")
            start, nbytes = _numpy_span(arg)
            self.add_span(start, nbytes, name, writable=bool(arg.flags.writeable))
            return arg.__array_interface__["data"][0]
        if hasattr(arg, "data_ptr"):
            device = getattr(arg, "device", None)
            if device is not None and getattr(device, "type", "cpu") != "cpu":
                raise TypeError(f"argument {name!r} lives on {device}; the interpreter needs CPU memory")
            address = int(arg.data_ptr())
            storage = getattr(arg, "untyped_storage", None)
            if storage is not None:
                s = storage()
                self.add_span(int(s.data_ptr()), int(s.nbytes()), name)
            elif hasattr(arg, "nbytes"):
                self.add_span(address, int(arg.nbytes), name)
            return address
        raise TypeError(f"argument {name!r}: expected a tensor, a numpy array, an int address or None "
                        f"for a pointer parameter, got {type(arg).__name__}")

    def add_span(self, start: int, nbytes: int, name: str, writable: bool = True) -> None:
        """Make [start, start + nbytes) accessible (overlapping spans are merged;
        the merged memory may be written if any of its spans may)."""
        if nbytes > 0 and start:
            self._spans.append((start, start + nbytes, name, writable))
            self._rebuild()

    def _rebuild(self) -> None:
        merged: list[list] = []
        for start, end, name, writable in sorted(self._spans):
            if merged and start < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
                merged[-1][3] = merged[-1][3] or writable
                if name not in merged[-1][2]:
                    merged[-1][2].append(name)
            else:
                merged.append([start, end, [name], writable])
        self._buffers = [_Buffer(s, e, names, _raw_memory(s, e - s), w) for s, e, names, w in merged]
        self._starts = np.array([b.start for b in self._buffers], dtype=np.uint64)
        self._ends = np.array([b.end for b in self._buffers], dtype=np.uint64)
        self._writable = np.array([b.writable for b in self._buffers], dtype=bool)

    # -- address translation -------------------------------------------------
    def _locate(self, addresses: np.ndarray, size: int, lanes, shape, access: str, write: bool = False) -> np.ndarray:
        """Buffer index of each address; raises AccessError for any access that is
        misaligned or not wholly inside one buffer, or (with `write`) that lands
        in read-only memory."""
        idx = np.searchsorted(self._starts, addresses, side="right").astype(np.intp) - 1
        if len(self._buffers):
            safe = np.maximum(idx, 0)
            limit = np.uint64(_U64_MAX - size)
            inside = (idx >= 0) & (addresses <= limit) & (addresses + np.uint64(size) <= self._ends[safe])
        else:
            inside = np.zeros(addresses.shape, dtype=bool)
        aligned = (addresses % np.uint64(size)) == 0
        good = inside & aligned
        if not good.all():
            bad = int(np.flatnonzero(~good)[0])
            raise AccessError(self._describe(int(addresses[bad]), size, bool(inside[bad]), lanes, bad, shape, access))
        if write and not self._writable[idx].all():
            bad = int(np.flatnonzero(~self._writable[idx])[0])
            lane = int(lanes[bad]) if lanes is not None else bad
            where = f" at index {tuple(int(i) for i in np.unravel_index(lane, shape))}" if shape else ""
            names = ", ".join(repr(n) for n in self._buffers[int(idx[bad])].names)
            raise AccessError(f"{access}{where} into read-only memory: address {int(addresses[bad]):#x} is in "
                              f"{names}, a numpy array that is not writeable")
        return idx

    def _describe(self, address: int, size: int, inside: bool, lanes, bad: int, shape, access: str) -> str:
        lane = int(lanes[bad]) if lanes is not None else bad
        where = f" at index {tuple(int(i) for i in np.unravel_index(lane, shape))}" if shape else ""
        if inside:
            return (f"misaligned {access}{where}: address {address:#x} is not a multiple of the "
                    f"element size {size}")
        text = f"out-of-bounds {access}{where}: address {address:#x} ({size} bytes) is outside every buffer"
        if self._buffers:
            nearest = min(self._buffers, key=lambda b: min(abs(address - b.start), abs(address - b.end)))
            names = ", ".join(repr(n) for n in nearest.names)
            rel = address - nearest.start
            length = nearest.end - nearest.start
            if rel >= 0:
                text += (f"; it is at byte offset {rel} of {names}, whose storage is "
                         f"{length} bytes at {nearest.start:#x}")
            else:
                text += f"; it is {-rel} bytes before {names} (storage at {nearest.start:#x})"
            # Near a buffer, it is an indexing mistake; far from all of them, most
            # likely a pointer loaded from memory into a tensor the kernel was not given.
            far = rel >= 2 * length or -rel > length
        else:
            text += " (no buffer was passed to the kernel)"
            far = False
        if far:
            text += ("; the interpreter can reach only the storage of the kernel's pointer arguments "
                     "(pass a tensor whose address the kernel loads from memory as an argument too)")
        return text

    def _element_index(self, addresses: np.ndarray, idx: np.ndarray, storage: np.dtype):
        """Yield (positions, typed view, element indices) per buffer touched."""
        if idx.size == 0:
            return
        first = int(idx[0])
        if (idx == first).all():
            groups = [(slice(None), first)]
        else:
            groups = [(idx == b, int(b)) for b in np.unique(idx)]
        for positions, b in groups:
            view, base = self._buffers[b].view(storage)
            elements = ((addresses[positions] - np.uint64(base)) // np.uint64(storage.itemsize)).astype(np.intp)
            yield positions, view, elements

    def _read(self, addresses: np.ndarray, ty: dtype, lanes, shape, access: str) -> np.ndarray:
        storage = V.storage_dtype(ty)
        idx = self._locate(addresses, storage.itemsize, lanes, shape, access)
        out = np.empty(addresses.shape, dtype=storage)
        for positions, view, elements in self._element_index(addresses, idx, storage):
            out[positions] = view[elements]
        return V.decode(out, ty)

    def _write(self, addresses: np.ndarray, values, ty: dtype, idx) -> None:
        storage = V.storage_dtype(ty)
        raw = np.broadcast_to(V.encode(values, ty), addresses.shape)
        for positions, view, elements in self._element_index(addresses, idx, storage):
            view[elements] = raw[positions]

    # -- loads and stores ------------------------------------------------------
    @staticmethod
    def _active(ptr, mask):
        flat = np.asarray(ptr, dtype=np.uint64).reshape(-1)
        if mask is None:
            return flat, None
        m = np.asarray(mask, dtype=bool).reshape(-1)
        if m.all():
            return flat, None
        lanes = np.flatnonzero(m)
        return flat[lanes], lanes

    def load(self, ptr, ty: dtype, mask=None, other=None):
        """Elements of type `ty` at `ptr` (a uint64 scalar or block); masked-off lanes
        give `other` (broadcast to the pointer's shape) or 0."""
        shape = np.shape(ptr)
        addresses, lanes = self._active(ptr, mask)
        data = self._read(addresses, ty, lanes, shape, f"load of {ty}")
        if lanes is None:
            out = data.reshape(shape)
        else:
            fill = 0 if other is None else other
            out = np.array(np.broadcast_to(np.asarray(fill, dtype=V.value_dtype(ty)), shape))
            out.reshape(-1)[lanes] = data
        return out[()] if not shape else out

    def store(self, ptr, value, ty: dtype, mask=None) -> None:
        """Write `value` (the pointer's shape, `ty`'s representation) where `mask`."""
        shape = np.shape(ptr)
        addresses, lanes = self._active(ptr, mask)
        flat_values = np.broadcast_to(np.asarray(value), shape).reshape(-1)
        if lanes is not None:
            flat_values = flat_values[lanes]
        storage = V.storage_dtype(ty)
        idx = self._locate(addresses, storage.itemsize, lanes, shape, f"store of {ty}", write=True)
        self._write(addresses, flat_values, ty, idx)

    # -- atomics -----------------------------------------------------------------
    def atomic_rmw(self, kind: str, ptr, value, ty: dtype, mask=None):
        """Apply `*p = kind(*p, v)` for each active lane in lane order; return the
        old values (0 for masked-off lanes)."""
        combine = _atomic_combine(kind, ty)
        return self._atomic(ptr, mask, ty, f"atomic_{kind} on {ty}", value, None, combine, kind == "xchg")

    def atomic_cas(self, ptr, compare, value, ty: dtype):
        """For each lane in order: `old = *p; if old == cmp: *p = val` (bitwise compare)."""
        return self._atomic(ptr, None, ty, f"atomic_cas on {ty}", value, compare, None, False)

    def _atomic(self, ptr, mask, ty, access, value, compare, combine, exchange):
        shape = np.shape(ptr)
        addresses, lanes = self._active(ptr, mask)
        flat_values = np.broadcast_to(np.asarray(value), shape).reshape(-1)
        flat_compare = None if compare is None else np.broadcast_to(np.asarray(compare), shape).reshape(-1)
        if lanes is not None:
            flat_values = flat_values[lanes]
            flat_compare = None if flat_compare is None else flat_compare[lanes]
        storage = V.storage_dtype(ty)
        self._locate(addresses, storage.itemsize, lanes, shape, access, write=True)
        if addresses.size == 0:
            old = np.zeros(shape, dtype=V.value_dtype(ty))
            return old[()] if not shape else old

        order = np.argsort(addresses, kind="stable")
        sorted_addresses = addresses[order]
        vals = flat_values[order]
        new_segment = np.ones(sorted_addresses.shape, dtype=bool)
        new_segment[1:] = sorted_addresses[1:] != sorted_addresses[:-1]
        segment = np.cumsum(new_segment) - 1
        segment_starts = np.flatnonzero(new_segment)
        rank = np.arange(len(vals)) - segment_starts[segment]
        unique_addresses = sorted_addresses[segment_starts]
        depth = int(rank.max()) + 1
        current = self._read(unique_addresses, ty, None, (), access).copy()

        if compare is not None:
            old_sorted = self._atomic_rounds(current, segment, rank, depth, vals, flat_compare[order], ty, None)
        elif exchange and depth > _SEQUENTIAL_ATOMIC_DEPTH:
            old_sorted = np.where(rank == 0, current[segment], np.roll(vals, 1))
            segment_ends = np.append(segment_starts[1:], len(vals)) - 1
            current = vals[segment_ends]
        elif depth > _SEQUENTIAL_ATOMIC_DEPTH:
            old_sorted, current = _atomic_scan(current, segment, rank, depth, segment_starts, vals, combine)
        else:
            old_sorted = self._atomic_rounds(current, segment, rank, depth, vals, None, ty, combine)

        self._write(unique_addresses, current, ty, self._locate(unique_addresses, storage.itemsize, None, (), access))
        old_flat = np.empty(len(vals), dtype=V.value_dtype(ty))
        old_flat[order] = old_sorted
        if lanes is None:
            out = old_flat.reshape(shape)
        else:
            out = np.zeros(shape, dtype=V.value_dtype(ty))
            out.reshape(-1)[lanes] = old_flat
        return out[()] if not shape else out

    @staticmethod
    def _atomic_rounds(current, segment, rank, depth, vals, compare, ty, combine):
        """Lane-ordered application: round r applies the r-th lane of every address."""
        old = np.empty(len(vals), dtype=current.dtype)
        for r in range(depth):
            sel = rank == r
            seg = segment[sel]
            before = current[seg]
            old[sel] = before
            if compare is None:
                current[seg] = combine(before, vals[sel])
            else:
                equal = V.to_bits(before, ty) == V.to_bits(compare[sel].astype(before.dtype), ty)
                current[seg] = np.where(equal, vals[sel], before)
        return old


def _atomic_scan(current, segment, rank, depth, segment_starts, vals, combine):
    """Old values and final memory for many lanes per address: a segmented
    Hillis-Steele inclusive scan of the lanes' values in lane order."""
    inclusive = vals.copy()
    step = 1
    while step < depth:
        shifted = combine(inclusive[:-step], inclusive[step:])
        inclusive[step:] = np.where(rank[step:] >= step, shifted, inclusive[step:])
        step *= 2
    init = current[segment]
    previous = np.roll(inclusive, 1)
    old = np.where(rank == 0, init, combine(init, previous))
    segment_ends = np.append(segment_starts[1:], len(vals)) - 1
    final = combine(current, inclusive[segment_ends])
    return old, final


def _float_min(a, b):
    """IEEE 754-2019 minimumNumber: a NaN loses to a number, -0.0 is below +0.0."""
    result = np.fmin(a, b)
    negative_zero = (a == b) & (np.signbit(a) | np.signbit(b))
    return np.where(negative_zero, -np.abs(result), result)


def _float_max(a, b):
    """IEEE 754-2019 maximumNumber: a NaN loses to a number, +0.0 is above -0.0."""
    result = np.fmax(a, b)
    positive_zero = (a == b) & ~(np.signbit(a) & np.signbit(b))
    return np.where(positive_zero, np.abs(result), result)


def _atomic_combine(kind: str, ty: dtype):
    sc = V.scalar_of(ty)
    is_float = sc.is_floating()
    emulated = V.is_emulated_float(sc)
    if kind == "add":
        if emulated:
            return lambda a, b: V.round_value(a.astype(np.float64) + b, sc)
        return lambda a, b: a + b
    if kind in ("max", "min"):
        if is_float:
            return _float_max if kind == "max" else _float_min
        return np.maximum if kind == "max" else np.minimum
    if kind == "and":
        return np.bitwise_and
    if kind == "or":
        return np.bitwise_or
    if kind == "xor":
        return np.bitwise_xor
    if kind == "xchg":
        return lambda a, b: b
    raise ValueError(f"unknown atomic kind {kind!r}")
