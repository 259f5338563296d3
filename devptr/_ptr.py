"""``DevicePtr``: one device address as an unsigned 64-bit value.

The class, the address decoding (:func:`unsigned_address`) and the constants are the
vendorable module's (:mod:`devptr.vendor.ptrtable`, the core's lowest layer); this module
adds what checked mode needs: the storage extent of an address taken from a tensor.
"""

from __future__ import annotations

from devptr import _checked
from devptr._errors import PtrTypeError, describe
from devptr.vendor import ptrtable
from devptr.vendor.ptrtable import (
    ADDR_LIMIT,
    SIGN_BIT,
    DevicePtr,
    SupportsDataPtr,
    check_int,
    unsigned_address,
)


def storage_extent(obj: object) -> tuple[int, int] | None:
    """The unsigned byte range of the storage behind ``obj``, when it can be found."""
    get_storage = getattr(obj, "untyped_storage", None)
    if get_storage is None:
        return None
    storage = get_storage()
    start = unsigned_address(storage.data_ptr())
    return start, start + int(storage.nbytes())


def extent_of(ptr: DevicePtr) -> tuple[int, int] | None:
    """The storage range ``[start, end)`` (unsigned ints) checked mode recorded for ``ptr``.

    None when nothing was recorded (checked mode off, or an address not taken from a
    tensor). ``ptr`` is a :class:`DevicePtr`; anything else, a raw int included (it is
    not an address until it is wrapped), raises :class:`PtrTypeError`.
    """
    if not isinstance(ptr, DevicePtr):
        raise PtrTypeError(
            f"extent_of() takes a DevicePtr (got {describe(ptr)}); wrap raw addresses with "
            "DevicePtr(x) or DevicePtr.of(tensor)"
        )
    return _checked.extents_get(ptr.addr)


def _remember_extent(obj: object, addr: int) -> None:
    """``DevicePtr.of``'s hook: in checked mode, record the storage ``addr`` points into."""
    if _checked.ENABLED:
        extent = storage_extent(obj)
        if extent is not None:
            _checked.record(addr, *extent)


ptrtable.taken = _remember_extent

__all__ = [
    "ADDR_LIMIT",
    "SIGN_BIT",
    "DevicePtr",
    "SupportsDataPtr",
    "check_int",
    "extent_of",
    "storage_extent",
    "unsigned_address",
]
