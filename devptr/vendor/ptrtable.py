"""devptr's lowest layer in one file to copy: torch and numpy only, nothing run at import (see docs)."""

from __future__ import annotations

import enum
import functools
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Final, NoReturn, Protocol, cast, overload

import numpy as np
import numpy.typing as npt
import torch

ADDR_LIMIT: Final = 1 << 64
SIGN_BIT: Final = 1 << 63
ENV_VAR: Final = "DEVPTR_ENCODING"
_U64 = np.dtype(np.uint64)
_DTYPES = {False: (np.dtype(np.int64), _U64), True: (torch.int64, torch.uint64)}

class DevPtrError(Exception):
    """Base of every error raised here (never raised itself)."""
class PtrTypeError(DevPtrError, TypeError):
    """A value or container of the wrong type (a raw int where a DevicePtr goes, a read-only array)."""
class AddressRangeError(DevPtrError, ValueError):
    """A value outside its range (an address outside ``[0, 2**64)``...)."""
class LengthMismatchError(DevPtrError, ValueError):
    """Shapes or lengths that must match do not (there is no broadcasting)."""
class UnknownBackendError(DevPtrError, ValueError):
    """A backend (device type), encoding or environment value that is not known."""
class CapacityError(DevPtrError, IndexError):
    """An index or slice bound outside the container (never wrapped, never clamped)."""
class AddressOverflowError(DevPtrError, OverflowError):
    """Address arithmetic would leave ``[0, 2**64)`` (it never wraps)."""

def check_int(value: object, what: str = "address") -> int:
    if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
        raise PtrTypeError(f"{what} must be an int (got {value!r})")
    return int(value)
def unsigned_address(raw: object, what: str = "data_ptr()") -> int:
    if not -SIGN_BIT <= (value := check_int(raw, what)) < ADDR_LIMIT:
        raise AddressRangeError(f"{what} is not an int64 or uint64 value (got {value:#x})")
    return value % ADDR_LIMIT
class SupportsDataPtr(Protocol):
    def data_ptr(self) -> int: ...
taken: Callable[[object, int], None] | None = None  # if set, taken(obj, addr) for each obj.data_ptr() read

@functools.total_ordering
class DevicePtr:
    """An address in ``[0, 2**64)``; immutable, picklable; no ``__int__``; ``DevicePtr(16) == 16`` raises."""
    __slots__ = ("addr",)
    addr: int
    NULL: ClassVar[DevicePtr]
    def __init__(self, addr: int) -> None:
        if not 0 <= (value := check_int(addr)) < ADDR_LIMIT:
            raise AddressRangeError(f"address must be in [0, 2**64) (got {value:#x})")
        object.__setattr__(self, "addr", value)
    def __setattr__(self, name: str, value: object = None) -> None:
        raise AttributeError(f"DevicePtr is immutable (cannot change {name!r})")
    @classmethod
    def of(cls, obj: SupportsDataPtr, offset: int = 0) -> DevicePtr:
        if not callable(getattr(obj, "data_ptr", None)) or isinstance(obj, DevicePtr):
            raise PtrTypeError(f"DevicePtr.of() needs an object with data_ptr() (got {obj!r}): DevicePtr(x)?")
        addr = unsigned_address(obj.data_ptr())
        if taken is not None:
            taken(obj, addr)
        return cls(addr) + offset if offset else cls(addr)
    @classmethod
    def from_signed(cls, value: int) -> DevicePtr:
        if not -SIGN_BIT <= check_int(value, "signed address") < SIGN_BIT:
            raise AddressRangeError(f"signed address must be in [-2**63, 2**63) (got {value:#x})")
        return cls(value % ADDR_LIMIT)
    @property
    def signed(self) -> int: return self.addr - ADDR_LIMIT if self.addr >= SIGN_BIT else self.addr
    @property
    def is_null(self) -> bool: return self.addr == 0
    def encode(self, encoding: Encoding) -> int:
        if not isinstance(encoding, Encoding):
            raise PtrTypeError(f"encoding must be an Encoding (got {encoding!r})")
        return self.addr if encoding is Encoding.U64 else self.signed
    def is_aligned(self, n: int) -> bool:
        if check_int(n, "alignment") <= 0:
            raise AddressRangeError(f"alignment must be positive (got {n})")
        return self.addr % n == 0
    def __add__(self, n: int) -> DevicePtr:
        if not 0 <= self.addr + check_int(n, "offset") < ADDR_LIMIT:
            raise AddressOverflowError(f"{self!r} + {n} leaves [0, 2**64) (got {self.addr + n:#x})")
        return DevicePtr(self.addr + n)
    @overload
    def __sub__(self, other: DevicePtr) -> int: ...
    @overload
    def __sub__(self, other: int) -> DevicePtr: ...
    def __sub__(self, other: DevicePtr | int) -> DevicePtr | int:
        return self.addr - other.addr if isinstance(other, DevicePtr) else self + -check_int(other, "offset")
    def __eq__(self, other: object) -> bool:
        if isinstance(other, DevicePtr):
            return self.addr == other.addr
        if hasattr(type(other), "__index__"):  # an int, a numpy or torch integer
            self._refuse(other)
        return NotImplemented
    def __lt__(self, other: DevicePtr) -> bool:
        return self.addr < other.addr if isinstance(other, DevicePtr) else self._refuse(other)
    def _refuse(self, other: object) -> NoReturn:
        raise PtrTypeError(f"a DevicePtr compares only with a DevicePtr (got {other!r}): use p.addr")
    __radd__, __delattr__ = __add__, __setattr__
    def __reduce__(self) -> tuple[type[DevicePtr], tuple[int]]: return DevicePtr, (self.addr,)
    def __hash__(self) -> int: return hash(self.addr)
    def __repr__(self) -> str: return f"DevicePtr({self.addr:#x})"
DevicePtr.NULL = DevicePtr(0)

class Encoding(enum.Enum):
    """``U64`` (uint64) or ``I64`` (int64 two's complement, the CUDA/ROCm C++ ops' ABI)."""
    U64 = "U64"
    I64 = "I64"
    @property
    def torch_dtype(self) -> torch.dtype: return torch.uint64 if self is Encoding.U64 else torch.int64
    @property
    def numpy_dtype(self) -> np.dtype[Any]: return np.dtype(np.uint64 if self is Encoding.U64 else np.int64)
BACKENDS: dict[str, Encoding] = {"xpu": Encoding.U64}
"""Device types not read as I64 (XPU: addresses >= 2**63), and types torch does not know: add yours."""
_env: tuple[Encoding | None, dict[str, Encoding]] | None = None  # read at the first lookup
def _known(name: str) -> bool:
    try:
        return name in BACKENDS or (":" not in name and torch.device(name).index is None)
    except RuntimeError:  # not a torch device type (they are lower case: "cuda", not "CUDA")
        return False
def use_environment(name: str | None = ENV_VAR) -> tuple[Encoding | None, dict[str, Encoding]]:
    """Read environment variable ``name`` now (None: none): ``U64``/``I64``, or ``xpu=U64,cuda=I64``."""
    global _env
    text, per = (os.environ.get(name, "") if name else "").strip(), dict[str, Encoding]()
    for part in filter(None, (p.strip() for p in (text.split(",") if "=" in text else [text]))):
        kind, _, enc = (s.strip() for s in part.rpartition("="))
        if enc.upper() not in ("U64", "I64") or ("=" in text) != bool(kind) or not _known(kind or "cpu"):
            raise UnknownBackendError(f"environment variable {name}={text!r} is invalid at {part!r}: "
                                      "expected U64, I64 or backend=ENC,... with torch's (lower-case) types")
        per[kind] = Encoding(enc.upper())
    _env = (per.pop("", None), per)
    return _env
def encoding_for(device: str | torch.device | torch.Tensor, default: Encoding | None = None) -> Encoding:
    """The environment's encoding for ``device``, else BACKENDS', else I64 (torch's types) or ``default``."""
    if not isinstance(device, (str, torch.device, torch.Tensor)) or not isinstance(default, Encoding | None):
        raise PtrTypeError(f"expected a device (type) or a tensor and an Encoding default (got {device!r})")
    name, colon, index = str(getattr(device, "device", device)).partition(":")
    if colon and not index.isdigit():
        raise UnknownBackendError(f"not a device name: {device!r}")
    every, per = _env or use_environment()
    if not (known := name in per or _known(name)) and default is None:
        raise UnknownBackendError(f"unknown backend {name!r}: not a torch device type, nor in BACKENDS")
    return per.get(name) or every or BACKENDS.get(name, Encoding.I64 if known or not default else default)
Addresses = Sequence[DevicePtr | SupportsDataPtr] | npt.NDArray[np.uint64]
Index = int | slice | tuple[int | slice, ...] | Sequence[int] | npt.NDArray[np.integer[Any]]
def _addresses(ptrs: object) -> npt.NDArray[np.uint64] | int:
    if type(ptrs) is DevicePtr or (isinstance(ptrs, np.ndarray) and ptrs.dtype == _U64 and ptrs.ndim == 1):
        return ptrs.addr if isinstance(ptrs, DevicePtr) else ptrs
    if isinstance(ptrs, (DevicePtr, str, bytes, np.ndarray, torch.Tensor)) or not isinstance(ptrs, Iterable):
        raise PtrTypeError(f"ptrs must be DevicePtrs, tensors (data_ptr()) or a uint64 array (got {ptrs!r})")
    out = []
    for k, p in enumerate(ptrs):
        if type(p) is not DevicePtr and not callable(getattr(p, "data_ptr", None)):
            raise PtrTypeError(f"ptrs[{k}] must be a DevicePtr or an object with data_ptr() (got {p!r})")
        out.append(p.addr if type(p) is DevicePtr else DevicePtr.of(p).addr)
    return np.array(out, _U64)
def _selected(shape: tuple[int, ...], index: Index) -> tuple[int, ...]:
    parts = cast("tuple[Any, ...]", index if isinstance(index, tuple) else (index,))
    for dim, (part, size) in enumerate(zip(parts, shape, strict=False)):
        sl = isinstance(part, slice)
        if sl and part.step is not None and (type(part.step) is not int or part.step < 1):
            raise PtrTypeError(f"store(): slice steps must be positive ints (got {part.step!r})")
        for b in [b for b in (part.start, part.stop) if b is not None] if sl else np.ravel(part).tolist():
            if isinstance(b, bool) or not isinstance(b, (int, np.integer)):
                raise PtrTypeError(f"store(): indices are ints, slices or a tuple of them (got {b!r})")
            if not 0 <= b <= size - (not sl):
                raise CapacityError(f"store(): index {b} out of range for dimension {dim} of size {size}")
    try:
        return np.broadcast_to(np.uint8(0), shape)[index].shape
    except IndexError as exc:
        raise CapacityError(f"store(): {exc} (index {index!r} into shape {shape})") from None
def store(container: torch.Tensor | npt.NDArray[Any], index: Index, ptrs: DevicePtr | Addresses) -> None:
    """Write DevicePtr(s) bit-exactly into an int64/uint64 tensor or array: an index never wraps (-1) nor
    clamps, ``ptrs`` has the selection's shape, nothing is written on error; a device tensor: one H2D copy."""
    tensor, layout = isinstance(container, torch.Tensor), getattr(container, "layout", torch.strided)
    if not (tensor or isinstance(container, np.ndarray)) or container.dtype not in _DTYPES[tensor] or (
            layout != torch.strided):
        raise PtrTypeError(f"store() needs an int64 or uint64 container: a dense torch tensor or numpy "
                           f"array (got {type(container).__name__} {getattr(container, 'dtype', '')})")
    arr = cast(torch.Tensor, container).numpy() if tensor and container.is_cpu else container  # type: ignore[union-attr]
    if isinstance(arr, np.ndarray) and not arr.flags.writeable:
        raise PtrTypeError("store() needs a writable container (got a read-only array: PtrBuffer.numpy()?)")
    if type(ptrs) is DevicePtr and type(index) is int and isinstance(arr, np.ndarray) and arr.ndim == 1:
        if 0 <= index < len(arr):  # the common case, one slot of a 1-D host table: fast
            arr.view(_U64)[index] = ptrs.addr  # devptr: ignore[DP001] -- a numpy uint64 view
            return
    got, vals = _selected(tuple(container.shape), index), _addresses(ptrs)
    if got != np.shape(vals):
        raise LengthMismatchError(f"store(): the index selects shape {got}, ptrs have shape {np.shape(vals)}")
    if isinstance(arr, np.ndarray):
        arr.view(_U64)[index] = vals
    else:
        src = torch.from_numpy(np.array(vals, dtype=_U64, ndmin=1).view(np.int64)).reshape(got)
        container.view(torch.int64)[index] = src.to(container.device)  # type: ignore[call-overload]
