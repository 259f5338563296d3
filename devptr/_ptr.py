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


def _storage_span(obj: object) -> tuple[object, int, int] | None:
    """``(storage, start, end)`` of the storage behind ``obj``, when it has one."""
    get_storage = getattr(obj, "untyped_storage", None)
    if get_storage is None:
        return None
    storage = get_storage()
    start = unsigned_address(storage.data_ptr())
    nbytes = storage.nbytes
    size = nbytes() if callable(nbytes) else nbytes  # test fakes hold it as an attribute
    return storage, start, start + check_int(size, "storage nbytes")


def storage_extent(obj: object) -> tuple[int, int] | None:
    """The unsigned byte range of the storage behind ``obj``, when it can be found."""
    span = _storage_span(obj)
    return None if span is None else span[1:]


def note_extent(addr: int, obj: object) -> None:
    """Checked mode: remember the storage behind ``obj`` for ``addr`` while it lives."""
    span = _storage_span(obj)
    if span is not None:
        _checked.record(addr, span[1], span[2], span[0])


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


def _taken(obj: object, addr: int) -> None:
    """The vendorable module's ``taken`` hook (``DevicePtr.of`` and ``store`` call it for
    each ``data_ptr()`` they read): in checked mode, remember the storage ``addr`` is in."""
    if _checked.ENABLED and _checked.is_enabled():
        note_extent(addr, obj)


ptrtable.taken = _taken

__all__ = [
    "ADDR_LIMIT",
    "SIGN_BIT",
    "DevicePtr",
    "SupportsDataPtr",
    "check_int",
    "extent_of",
    "note_extent",
    "storage_extent",
    "unsigned_address",
]
