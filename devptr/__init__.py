"""devptr: device pointers as a typed, checked value.

Addresses are held as unsigned 64-bit values (:class:`DevicePtr`), stored in uint64
host memory (:class:`PtrBuffer`, :class:`PtrTable`) and handed to each consumer in the
encoding it reads (:class:`Encoding`: int64 two's complement for CUDA/ROCm ops, uint64
for XPU), bit-exactly on every supported torch version.

Names are imported on first use (PEP 562), so tools that need only part of the package
(``devptr check``, the mypy plugin) do not pay for importing torch.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from devptr._buffer import PtrBuffer
    from devptr._checked import checked
    from devptr._encoding import Encoding, encoding_for, register_backend
    from devptr._errors import (
        AddressOverflowError,
        AddressRangeError,
        CapacityError,
        CheckedModeError,
        DevPtrError,
        InvalidValueError,
        LengthMismatchError,
        PtrTypeError,
        StaleBufferError,
        StateError,
        UnknownBackendError,
    )
    from devptr._pool import PtrBufferPool
    from devptr._ptr import DevicePtr, SupportsDataPtr, extent_of
    from devptr._sizes import SizeBuffer
    from devptr._store import addresses, ptr_tensor, store
    from devptr._table import Column, PtrTable

__version__ = "0.1.0"

_HOMES: dict[str, str] = {
    "AddressOverflowError": "_errors",
    "AddressRangeError": "_errors",
    "CapacityError": "_errors",
    "CheckedModeError": "_errors",
    "Column": "_table",
    "DevPtrError": "_errors",
    "DevicePtr": "_ptr",
    "Encoding": "_encoding",
    "InvalidValueError": "_errors",
    "LengthMismatchError": "_errors",
    "PtrBuffer": "_buffer",
    "PtrBufferPool": "_pool",
    "PtrTable": "_table",
    "PtrTypeError": "_errors",
    "SizeBuffer": "_sizes",
    "StaleBufferError": "_errors",
    "StateError": "_errors",
    "SupportsDataPtr": "_ptr",
    "UnknownBackendError": "_errors",
    "addresses": "_store",
    "checked": "_checked",
    "encoding_for": "_encoding",
    "extent_of": "_ptr",
    "ptr_tensor": "_store",
    "register_backend": "_encoding",
    "store": "_store",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'devptr' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"devptr.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public API (``__all__``) and ``__version__``; not the helpers of this module."""
    return sorted([*__all__, "__version__"])


__all__ = [
    "AddressOverflowError",
    "AddressRangeError",
    "CapacityError",
    "CheckedModeError",
    "Column",
    "DevPtrError",
    "DevicePtr",
    "Encoding",
    "InvalidValueError",
    "LengthMismatchError",
    "PtrBuffer",
    "PtrBufferPool",
    "PtrTable",
    "PtrTypeError",
    "SizeBuffer",
    "StaleBufferError",
    "StateError",
    "SupportsDataPtr",
    "UnknownBackendError",
    "addresses",
    "checked",
    "encoding_for",
    "extent_of",
    "ptr_tensor",
    "register_backend",
    "store",
]
