"""Device-pointer tables in one file: the part of devptr an engine can vendor.

Depends only on the standard library, numpy and torch; imports nothing else of devptr, so it
can be copied as is (e.g. to ``vllm/utils/ptrtable.py``). Names and behaviour follow devptr's
core (``DevicePtr``, ``Encoding``, ``encoding_for``, ``PtrBuffer``, ``store``, ``ptr_tensor``,
``addresses``), so ``devptr check`` and its messages apply unchanged; the tests run the same
assertions against both (``tests/vendor/test_ptrtable.py``).

What it leaves out: pools, mixed-record tables (``PtrTable``), checked mode, the kernels.

Memory: a :class:`PtrBuffer` owns a uint64 host tensor (pinned when an accelerator is
present) and, with ``device=``, a device mirror; every view it hands out shares that memory.
The encoding table is read once, by :func:`configure` (call it at start-up).
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import torch

ADDR_LIMIT: Final = 1 << 64
SIGN_BIT: Final = 1 << 63
ENV_VAR: Final = "DEVPTR_ENCODING"


# -- errors: one base, each also of its built-in family --------------------------------------
class PtrTableError(Exception):
    """Base of every error this module raises."""


class PtrTypeError(PtrTableError, TypeError):
    """A value of the wrong type (a raw int where a DevicePtr is needed, a bad dtype)."""


class AddressRangeError(PtrTableError, ValueError):
    """An address outside [0, 2**64), or a bad encoding specification."""


class AddressOverflowError(PtrTableError, OverflowError):
    """Address arithmetic left [0, 2**64)."""


class StateError(PtrTableError, RuntimeError):
    """The object is not in the state the call needs (no device mirror)."""


class CapacityError(PtrTableError, IndexError):
    """An index or count outside a table's capacity."""


def _kind(x: object) -> str:
    return (
        f"{type(x).__name__} {x:#x}" if isinstance(x, int) and not isinstance(x, bool) else type(x).__name__
    )


# -- encodings -------------------------------------------------------------------------------
class Encoding(enum.Enum):
    """How a consumer reads the 64 bits: uint64 (XPU ops) or int64 two's complement (CUDA/ROCm)."""

    U64 = "U64"
    I64 = "I64"

    @property
    def torch_dtype(self) -> torch.dtype:
        return torch.uint64 if self is Encoding.U64 else torch.int64

    @property
    def numpy_dtype(self) -> type[np.unsignedinteger[Any]] | type[np.signedinteger[Any]]:
        return np.uint64 if self is Encoding.U64 else np.int64


_DEFAULTS: Final[Mapping[str, Encoding]] = {"xpu": Encoding.U64}
_table: dict[str, Encoding] = dict(_DEFAULTS)
_all: Encoding | None = None


def configure(spec: str | None = None) -> None:
    """Fix the per-backend encodings once, at start-up: ``"U64"`` for every backend, or
    ``"xpu=U64,cuda=I64"``; ``None`` reads ``$DEVPTR_ENCODING`` (unset: the defaults)."""
    global _all
    text = os.environ.get(ENV_VAR, "") if spec is None else spec
    table, every = dict(_DEFAULTS), None
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.rpartition("=")
        try:
            enc = Encoding(value.strip().upper())
        except ValueError:
            raise AddressRangeError(f"{ENV_VAR}: unknown encoding {value!r} (expected U64 or I64)") from None
        if name:
            table[name.strip().lower()] = enc
        else:
            every = enc
    _table.clear()
    _table.update(table)
    _all = every


def register_backend(name: str, encoding: Encoding) -> None:
    """Set ``name``'s default encoding (e.g. ``register_backend("cuda", Encoding.U64)``)."""
    if not isinstance(encoding, Encoding):
        raise PtrTypeError(f"encoding must be an Encoding (got {_kind(encoding)})")
    _table[name.lower()] = encoding


def encoding_for(device: str | torch.device | None) -> Encoding:
    """The default encoding of ``device``'s backend (``xpu``: U64; every other: I64)."""
    kind = "cpu" if device is None else torch.device(device).type
    if _all is not None:
        return _all
    return _table.get(kind, Encoding.I64)


# -- one address -----------------------------------------------------------------------------
class DevicePtr:
    """One device address, unsigned, in [0, 2**64). No ``__int__``/``__index__``: say ``.addr``
    (unsigned) or ``.signed`` (int64 two's complement)."""

    __slots__ = ("addr",)
    addr: int

    def __init__(self, addr: int) -> None:
        if type(addr) is not int:
            raise PtrTypeError(f"DevicePtr needs an int address (got {_kind(addr)})")
        if not 0 <= addr < ADDR_LIMIT:
            raise AddressRangeError(f"address must be in [0, 2**64) (got {addr:#x})")
        object.__setattr__(self, "addr", addr)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("DevicePtr is immutable")

    @classmethod
    def of(cls, obj: Any, offset: int = 0) -> DevicePtr:
        """From anything with ``data_ptr()``; a negative value is decoded as two's complement."""
        raw = obj.data_ptr()
        base = cls(raw % ADDR_LIMIT if type(raw) is int and -SIGN_BIT <= raw < 0 else raw)
        return base + offset if offset else base

    @classmethod
    def from_signed(cls, value: int) -> DevicePtr:
        if type(value) is not int or not -SIGN_BIT <= value < SIGN_BIT:
            raise AddressRangeError(f"an int64 value is needed (got {_kind(value)})")
        return cls(value % ADDR_LIMIT)

    @property
    def signed(self) -> int:
        return self.addr - ADDR_LIMIT if self.addr >= SIGN_BIT else self.addr

    def encode(self, encoding: Encoding) -> int:
        return self.addr if encoding is Encoding.U64 else self.signed

    def __add__(self, n: int) -> DevicePtr:
        if type(n) is not int:
            return NotImplemented
        out = self.addr + n
        if not 0 <= out < ADDR_LIMIT:
            raise AddressOverflowError(f"{self!r} + {n:#x} leaves [0, 2**64)")
        return DevicePtr(out)

    def __sub__(self, other: int | DevicePtr) -> Any:
        if isinstance(other, DevicePtr):
            return self.addr - other.addr
        if type(other) is not int:
            return NotImplemented
        return self + (-other)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DevicePtr) and other.addr == self.addr

    def __lt__(self, other: DevicePtr) -> bool:
        return self.addr < other.addr

    def __hash__(self) -> int:
        return hash(("DevicePtr", self.addr))

    def __repr__(self) -> str:
        return f"DevicePtr({self.addr:#x})"


# -- arrays of addresses ---------------------------------------------------------------------
def _as_u64(ptrs: object) -> npt.NDArray[np.uint64]:
    """DevicePtrs, objects with ``data_ptr()``, or a uint64 array, as a new uint64 array."""
    if isinstance(ptrs, np.ndarray):
        if ptrs.dtype != np.uint64:
            raise PtrTypeError(f"address arrays must be uint64 (got {ptrs.dtype})")
        return np.ascontiguousarray(ptrs.reshape(-1))
    if isinstance(ptrs, (DevicePtr, int)) or hasattr(ptrs, "data_ptr") or not isinstance(ptrs, Iterable):
        ptrs = [ptrs]
    out: list[int] = []
    for p in ptrs:
        if isinstance(p, DevicePtr):
            out.append(p.addr)
        elif hasattr(p, "data_ptr"):
            out.append(DevicePtr.of(p).addr)
        else:
            raise PtrTypeError(f"expected DevicePtr or an object with data_ptr() (got {_kind(p)})")
    return np.asarray(out, dtype=np.uint64)


def addresses(base: DevicePtr, index: object, stride: int, offset: int = 0) -> npt.NDArray[np.uint64]:
    """``base + index*stride + offset`` as uint64, every element range-checked (no wrap)."""
    if not isinstance(base, DevicePtr):
        raise PtrTypeError(f"base must be a DevicePtr (got {_kind(base)})")
    idx = np.asarray(index)
    if idx.dtype.kind not in "iu":
        raise PtrTypeError(f"index must hold integers (got {idx.dtype})")
    if type(stride) is not int or type(offset) is not int or stride < 0 or offset < 0:
        raise AddressRangeError(f"stride and offset must be ints >= 0 (got {stride}, {offset})")
    if idx.size == 0:
        return np.zeros(0, dtype=np.uint64)
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0:
        raise AddressRangeError(f"index must be >= 0 (got {lo})")
    if base.addr + hi * stride + offset >= ADDR_LIMIT:
        raise AddressOverflowError(f"{base!r} + index {hi} * stride {stride:#x} + offset leaves [0, 2**64)")
    return np.uint64(base.addr + offset) + idx.astype(np.uint64).reshape(-1) * np.uint64(stride)


def _u64_view(container: object) -> npt.NDArray[np.uint64]:
    if isinstance(container, np.ndarray):
        if container.dtype not in (np.int64, np.uint64):
            raise PtrTypeError(f"store() needs an int64/uint64 array (got {container.dtype})")
        return container.view(np.uint64)
    if isinstance(container, torch.Tensor):
        if container.dtype not in (torch.int64, torch.uint64):
            raise PtrTypeError(f"store() needs an int64/uint64 tensor (got {container.dtype})")
        return container.view(torch.int64).numpy().view(np.uint64)
    raise PtrTypeError(f"store() needs a torch tensor or numpy array (got {_kind(container)})")


def store(container: object, index: int | slice, ptrs: object) -> None:
    """Write ``ptrs`` bit-exactly into an int64/uint64 tensor (any device) or numpy array.

    Validates everything before writing. A device tensor gets one synchronous H2D copy.
    """
    values = _as_u64(ptrs)
    if isinstance(container, torch.Tensor) and container.device.type != "cpu":
        if container.dtype not in (torch.int64, torch.uint64):
            raise PtrTypeError(f"store() needs an int64/uint64 tensor (got {container.dtype})")
        host = torch.from_numpy(values.view(np.int64))
        target = container.view(torch.int64)[index]
        if target.numel() != host.numel():
            raise CapacityError(f"{host.numel()} address(es) for {target.numel()} slot(s)")
        target.copy_(host.reshape(target.shape))
        return
    view = _u64_view(container)
    target_np = view[index]
    n = 1 if np.isscalar(target_np) or np.ndim(target_np) == 0 else int(np.size(target_np))
    if n != values.size:
        raise CapacityError(f"{values.size} address(es) for {n} slot(s)")
    view[index] = values[0] if isinstance(index, int) else values


def ptr_tensor(
    items: object, *, encoding: Encoding | None = None, device: str | torch.device | None = None
) -> torch.Tensor:
    """A new 1-D table of ``items`` (DevicePtrs or tensors) in ``encoding`` on ``device``."""
    enc = encoding if encoding is not None else encoding_for(device)
    host = torch.from_numpy(_as_u64(items).view(np.int64).copy())
    out = host if device is None or torch.device(device).type == "cpu" else host.to(device)
    return out.view(enc.torch_dtype)


class PtrBuffer:
    """``capacity`` addresses: a uint64 host table plus, with ``device=``, a device mirror."""

    def __init__(
        self, capacity: int, *, device: str | torch.device | None = None, pin_memory: bool | None = None
    ) -> None:
        if type(capacity) is not int or capacity < 0:
            raise CapacityError(f"capacity must be an int >= 0 (got {_kind(capacity)})")
        self._device = None if device is None else torch.device(device)
        accel = self._device is not None and self._device.type != "cpu"
        pin = accel if pin_memory is None else (pin_memory and accel)
        self._host = torch.zeros(capacity, dtype=torch.int64, pin_memory=pin)
        self._np: npt.NDArray[np.uint64] = self._host.numpy().view(np.uint64)
        self._mirror = (
            None if self._device is None else torch.zeros(capacity, dtype=torch.int64, device=self._device)
        )
        self._pending: Any = None

    @property
    def capacity(self) -> int:
        return int(self._np.size)

    def __len__(self) -> int:
        return self.capacity

    def _wait(self) -> None:
        if self._pending is not None:
            self._pending.synchronize()
            self._pending = None

    def _check(self, start: int, count: int) -> None:
        if type(start) is not int or start < 0 or start + count > self.capacity:
            raise CapacityError(f"entries [{start}, {start}+{count}) outside capacity {self.capacity}")

    def __getitem__(self, i: int) -> DevicePtr:
        self._check(i, 1)
        return DevicePtr(int(self._np[i]))

    def __setitem__(self, i: int, value: DevicePtr) -> None:
        if type(value) is not DevicePtr:
            raise PtrTypeError(f"entries are DevicePtrs (got {_kind(value)})")
        if type(i) is not int or not 0 <= i < self._np.size:
            raise CapacityError(f"index {i!r} outside capacity {self.capacity}")
        if self._pending is not None:
            self._wait()
        self._np[i] = value.addr

    def fill(self, start: int, ptrs: object) -> int:
        """Write ``ptrs`` from ``start``; returns the end index. Nothing is written on error."""
        values = _as_u64(ptrs)
        self._check(start, values.size)
        self._wait()
        self._np[start : start + values.size] = values
        return start + int(values.size)

    def fill_strided(self, start: int, base: DevicePtr, index: object, stride: int, offset: int = 0) -> int:
        return self.fill(start, addresses(base, index, stride, offset))

    def numpy(self) -> npt.NDArray[np.uint64]:
        out = self._np.view()
        out.flags.writeable = False
        return out

    def host(self, encoding: Encoding | None = None) -> torch.Tensor:
        enc = encoding if encoding is not None else encoding_for(self._device)
        return self._host.view(enc.torch_dtype)

    def device(self, encoding: Encoding | None = None) -> torch.Tensor:
        if self._mirror is None:
            raise StateError("this buffer has no device mirror: construct it with device=...")
        enc = encoding if encoding is not None else encoding_for(self._device)
        return self._mirror.view(enc.torch_dtype)

    def to_device(
        self, n: int | None = None, *, encoding: Encoding | None = None, non_blocking: bool = True
    ) -> torch.Tensor:
        """Copy the first ``n`` entries to the mirror (one copy); returns their device view."""
        count = self.capacity if n is None else n
        if type(count) is not int or not 0 <= count <= self.capacity:
            raise CapacityError(f"n must be an int in [0, {self.capacity}] (got {_kind(n)})")
        mirror = self.device(encoding)
        if count:
            asynchronous = non_blocking and self._host.is_pinned()
            self._mirror[:count].copy_(self._host[:count], non_blocking=asynchronous)  # type: ignore[index]
            if asynchronous:
                event_cls = getattr(getattr(torch, mirror.device.type, None), "Event", None)
                if event_cls is not None:
                    self._pending = event_cls()
                    self._pending.record()
        return mirror[:count]


configure()

__all__ = [
    "AddressOverflowError",
    "AddressRangeError",
    "CapacityError",
    "DevicePtr",
    "Encoding",
    "PtrBuffer",
    "PtrTableError",
    "PtrTypeError",
    "StateError",
    "addresses",
    "configure",
    "encoding_for",
    "ptr_tensor",
    "register_backend",
    "store",
]
