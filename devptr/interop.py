"""Pointer dialects: :class:`~devptr.DevicePtr` to and from the address types of other libraries.

Engines receive device addresses from many libraries, each spelling them its own way.
Every conversion here is lossless over the whole range ``[0, 2**64)``, addresses at or
above 2**63 (Intel XPU) included. Where a library spells an address as a *signed* 64-bit
integer (CuPy's ``intptr_t``, a negative ``data_ptr()``), the value is decoded as two's
complement, the rule :meth:`DevicePtr.of` and :meth:`DevicePtr.from_signed` apply; where a
library wants the signed spelling back, the ``to_*`` function gives it (:attr:`DevicePtr.signed`).

- a raw int, unsigned or int64 two's complement: :func:`from_int`; back: ``ptr.addr`` or
  ``ptr.signed``;
- cuda-python ``cuda.bindings.driver.CUdeviceptr``: :func:`from_cudeviceptr`,
  :func:`to_cudeviceptr`;
- the cuda.core ``Buffer`` handle: :func:`from_cuda_core_buffer`, :func:`to_cuda_core_buffer`;
- CuPy ``MemoryPointer`` (``.ptr``, a signed ``intptr_t``): :func:`from_cupy`, :func:`to_cupy`;
- ``__cuda_array_interface__``'s ``data`` field: :func:`from_cuda_array_interface`,
  :func:`to_cuda_array_interface`;
- DLPack's ``data`` plus ``byte_offset``: :func:`from_dlpack`, :func:`to_dlpack_fields`;
- ctypes ``c_void_p`` (and 64-bit integer ctypes): :func:`from_ctypes`, :func:`to_ctypes`.

The optional libraries (cuda-python, cuda.core, CuPy) are imported only by the ``to_*``
function that builds their objects; the ``from_*`` functions read attributes and never
import them, so they also accept look-alike objects (tests use such fakes). Memory is never
copied or owned here: a result only names an address; keeping the memory alive is the
caller's business (``to_cupy`` and ``to_cuda_core_buffer`` take an ``owner``).
"""

from __future__ import annotations

import ctypes
import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

from devptr._errors import AddressRangeError, MissingDependencyError, PtrTypeError, describe
from devptr._ptr import DevicePtr, check_int, unsigned_address

__all__ = [
    "DLPACK_ALIGNMENT",
    "MissingDependencyError",
    "from_ctypes",
    "from_cuda_array_interface",
    "from_cuda_core_buffer",
    "from_cudeviceptr",
    "from_cupy",
    "from_dlpack",
    "from_int",
    "to_ctypes",
    "to_cuda_array_interface",
    "to_cuda_core_buffer",
    "to_cudeviceptr",
    "to_cupy",
    "to_dlpack_fields",
]

DLPACK_ALIGNMENT: Final = 256
"""The ``data`` alignment DLPack asks producers for on CUDA (the rest goes to ``byte_offset``)."""


def _import(module: str, package: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(f"this conversion needs {module} (pip install {package})") from exc


def _ptr(ptr: object) -> DevicePtr:
    if type(ptr) is not DevicePtr:
        raise PtrTypeError(f"expected a DevicePtr (got {describe(ptr)})")
    return ptr


# -- raw ints --------------------------------------------------------------------------------
def from_int(value: object) -> DevicePtr:
    """An address as a library spells it: unsigned in ``[0, 2**64)``, or a negative int64
    (two's complement, decoded by :meth:`DevicePtr.from_signed`).

    Raises :class:`~devptr.PtrTypeError` for non-ints (bool and float included) and
    :class:`~devptr.AddressRangeError` outside ``[-2**63, 2**64)``.
    """
    return DevicePtr(unsigned_address(value, "an address"))


# -- cuda-python -----------------------------------------------------------------------------
def from_cudeviceptr(handle: object) -> DevicePtr:
    """The address held by a cuda-python ``CUdeviceptr`` (``int(handle)``, unsigned).

    Also accepts a plain int, as cuda-python's runtime API returns (``cudaMalloc``).
    """
    if isinstance(handle, int) and not isinstance(handle, bool):
        return from_int(handle)
    if type(handle).__name__ != "CUdeviceptr" or not hasattr(handle, "__int__"):
        raise PtrTypeError(f"expected a cuda.bindings.driver.CUdeviceptr (got {describe(handle)})")
    return from_int(int(handle))


def to_cudeviceptr(ptr: DevicePtr) -> Any:
    """A new ``cuda.bindings.driver.CUdeviceptr`` holding ``ptr`` (needs cuda-python)."""
    driver = _import("cuda.bindings.driver", "cuda-bindings")
    return driver.CUdeviceptr(_ptr(ptr).addr)


def from_cuda_core_buffer(buffer: object, offset: int = 0) -> DevicePtr:
    """The address of a cuda.core ``Buffer`` (its ``handle``) plus ``offset`` bytes.

    ``offset`` must lie inside the buffer (``0 <= offset <= buffer.size``).
    """
    handle = getattr(buffer, "handle", None)
    if handle is None:
        raise PtrTypeError(f"expected a cuda.core Buffer (got {describe(buffer)})")
    base = from_cudeviceptr(handle)
    size = getattr(buffer, "size", None)
    off = check_int(offset, "offset")
    if off < 0 or (isinstance(size, int) and off > size):
        raise AddressRangeError(f"offset {off} is outside the buffer of {size} bytes")
    return base + off


def to_cuda_core_buffer(ptr: DevicePtr, size: int, mr: object = None) -> Any:
    """A cuda.core ``Buffer`` naming ``size`` bytes at ``ptr`` (``Buffer.from_handle``).

    The buffer does not own the memory unless ``mr`` (a memory resource) is given, as
    cuda.core documents. Needs cuda.core.
    """
    p = _ptr(ptr)
    n = check_int(size, "size")
    if n < 0:
        raise AddressRangeError(f"size must be non-negative (got {n})")
    try:
        core = importlib.import_module("cuda.core")
        buffer_cls = getattr(core, "Buffer", None)
    except ImportError:
        buffer_cls = None
    if buffer_cls is None:
        buffer_cls = _import("cuda.core.experimental", "cuda-core").Buffer
    return buffer_cls.from_handle(to_cudeviceptr(p), n, mr=mr)


# -- CuPy ------------------------------------------------------------------------------------
def from_cupy(memptr: object) -> DevicePtr:
    """The address of a CuPy ``MemoryPointer`` (``.ptr``: an ``intptr_t``, so an address at
    or above 2**63 arrives negative and is decoded as two's complement).

    A CuPy array is accepted too (its ``data`` is the MemoryPointer).
    """
    if not hasattr(memptr, "ptr") and hasattr(memptr, "data"):
        memptr = memptr.data
    raw = getattr(memptr, "ptr", None)
    if raw is None:
        raise PtrTypeError(f"expected a cupy.cuda.MemoryPointer (got {describe(memptr)})")
    return from_int(raw)


def to_cupy(ptr: DevicePtr, size: int, owner: object = None, device_id: int = -1) -> Any:
    """A CuPy ``MemoryPointer`` over ``size`` bytes at ``ptr`` (``cupy.cuda.UnownedMemory``).

    CuPy takes the address as a signed ``intptr_t``: it gets :attr:`DevicePtr.signed`.
    ``owner`` is kept alive by CuPy as long as the memory pointer; ``device_id`` -1 means
    the current device. Needs CuPy.
    """
    p = _ptr(ptr)
    n = check_int(size, "size")
    cupy = _import("cupy", "cupy-cuda12x or cupy-cuda13x")
    dev = cupy.cuda.runtime.getDevice() if device_id == -1 else check_int(device_id, "device_id")
    mem = cupy.cuda.UnownedMemory(p.signed, n, owner, dev)
    return cupy.cuda.MemoryPointer(mem, 0)


# -- __cuda_array_interface__ ----------------------------------------------------------------
def from_cuda_array_interface(obj: object) -> DevicePtr:
    """The ``data`` address of ``obj.__cuda_array_interface__`` (or of such a dict).

    ``data`` is ``(address, read_only)``; a negative address is decoded as two's
    complement. The address already includes any offset into the allocation.
    """
    iface = obj if isinstance(obj, Mapping) else getattr(obj, "__cuda_array_interface__", None)
    if not isinstance(iface, Mapping):
        raise PtrTypeError(f"expected an object with __cuda_array_interface__ (got {describe(obj)})")
    data = iface.get("data")
    if not isinstance(data, Sequence) or len(data) != 2:
        raise PtrTypeError(f"__cuda_array_interface__['data'] must be (address, read_only) (got {data!r})")
    return from_int(data[0])


def to_cuda_array_interface(
    ptr: DevicePtr,
    shape: Sequence[int],
    typestr: str,
    *,
    strides: Sequence[int] | None = None,
    read_only: bool = False,
    stream: int | None = None,
) -> dict[str, object]:
    """A version-3 ``__cuda_array_interface__`` dict for an array at ``ptr`` (unsigned
    address in ``data``). Attach it to an object to hand the memory to Numba, CuPy, ..."""
    p = _ptr(ptr)
    iface: dict[str, object] = {
        "shape": tuple(check_int(d, "shape") for d in shape),
        "typestr": typestr,
        "data": (p.addr, bool(read_only)),
        "version": 3,
        "strides": None if strides is None else tuple(check_int(s, "stride") for s in strides),
    }
    if stream is not None:
        iface["stream"] = check_int(stream, "stream")
    return iface


# -- DLPack ----------------------------------------------------------------------------------
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


_capsule_get_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_get_name.restype = ctypes.c_char_p
_capsule_get_name.argtypes = [ctypes.py_object]
_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dl_tensor(capsule: object) -> _DLTensor:
    if type(capsule).__name__ != "PyCapsule":
        raise PtrTypeError(
            f"expected a DLPack capsule or an object with __dlpack__ (got {describe(capsule)})"
        )
    name = _capsule_get_name(capsule)
    if name == b"dltensor":  # DLManagedTensor starts with its DLTensor
        return _DLTensor.from_address(_capsule_get_pointer(capsule, name))
    if name == b"dltensor_versioned":
        managed = _DLManagedTensorVersioned.from_address(_capsule_get_pointer(capsule, name))
        tensor: _DLTensor = managed.dl_tensor
        return tensor
    raise PtrTypeError(f"not an unconsumed DLPack capsule (its name is {name!r})")


def from_dlpack(obj: object) -> DevicePtr:
    """The first element's address of a DLPack tensor: ``data + byte_offset``.

    ``obj`` is an unconsumed DLPack capsule, or an object with ``__dlpack__`` (asked for a
    capsule, which is not consumed: its producer frees it). ``data`` is a ``void*``
    (unsigned) and ``byte_offset`` a ``uint64``; a sum past 2**64 raises
    :class:`~devptr.AddressOverflowError`.
    """
    capsule = obj.__dlpack__() if hasattr(obj, "__dlpack__") else obj
    t = _dl_tensor(capsule)
    return from_int(t.data or 0) + int(t.byte_offset)


def to_dlpack_fields(ptr: DevicePtr, alignment: int = DLPACK_ALIGNMENT) -> tuple[int, int]:
    """``(data, byte_offset)`` for a DLTensor whose first element is at ``ptr``: ``data``
    rounded down to ``alignment`` (a power of two), the rest in ``byte_offset``."""
    p = _ptr(ptr)
    a = check_int(alignment, "alignment")
    if a <= 0 or a & (a - 1):
        raise AddressRangeError(f"alignment must be a positive power of two (got {a})")
    off = p.addr % a
    return p.addr - off, off


# -- ctypes ----------------------------------------------------------------------------------
_INT_CTYPES: Final = (
    ctypes.c_uint64, ctypes.c_int64, ctypes.c_size_t, ctypes.c_ssize_t,
    ctypes.c_ulonglong, ctypes.c_longlong,
)


def from_ctypes(value: object) -> DevicePtr:
    """The address in a ctypes ``c_void_p`` (``None`` is NULL), or in a 64-bit integer
    ctypes value (``c_uint64``, ``c_int64``: negative values are two's complement)."""
    if isinstance(value, ctypes.c_void_p):
        return from_int(value.value or 0)
    if isinstance(value, _INT_CTYPES):
        if ctypes.sizeof(value) != 8:
            raise PtrTypeError(f"a ctypes address must be 64 bits wide (got {describe(value)})")
        return from_int(value.value)
    raise PtrTypeError(f"expected a ctypes c_void_p or 64-bit integer (got {describe(value)})")


def to_ctypes(ptr: DevicePtr) -> ctypes.c_void_p:
    """A new ``ctypes.c_void_p`` holding ``ptr`` (``.value`` is None for NULL, as ctypes does)."""
    return ctypes.c_void_p(_ptr(ptr).addr)
