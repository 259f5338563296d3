"""devptr: device pointers as a typed, checked value.

Addresses are held as unsigned 64-bit values (:class:`DevicePtr`), stored in uint64
host memory (:class:`PtrBuffer`, :class:`PtrTable`) and handed to each consumer in the
encoding it reads (:class:`Encoding`: int64 two's complement for CUDA/ROCm ops, uint64
for XPU), bit-exactly on every supported torch version.
"""

from devptr._buffer import PtrBuffer
from devptr._checked import checked, extent_of
from devptr._encoding import Encoding, encoding_for, register_backend
from devptr._errors import (
    AddressOverflowError,
    AddressRangeError,
    CapacityError,
    CheckedModeError,
    DevPtrError,
    LengthMismatchError,
    PtrTypeError,
    StaleBufferError,
    UnknownBackendError,
)
from devptr._pool import PtrBufferPool
from devptr._ptr import DevicePtr, SupportsDataPtr
from devptr._store import addresses, ptr_tensor, store
from devptr._table import Column, PtrTable

__version__ = "0.1.0"

__all__ = [
    "AddressOverflowError",
    "AddressRangeError",
    "CapacityError",
    "CheckedModeError",
    "Column",
    "DevPtrError",
    "DevicePtr",
    "Encoding",
    "LengthMismatchError",
    "PtrBuffer",
    "PtrBufferPool",
    "PtrTable",
    "PtrTypeError",
    "StaleBufferError",
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
