"""``DevicePtr``: one device address as an unsigned 64-bit value."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol, overload

import attrs

from devptr import _checked
from devptr._errors import (
    AddressOverflowError,
    AddressRangeError,
    PtrTypeError,
    describe,
    hexaddr,
)

if TYPE_CHECKING:
    from devptr._encoding import Encoding

ADDR_LIMIT = 1 << 64
"""One past the largest address."""
SIGN_BIT = 1 << 63
"""Addresses at or above this (Intel XPU) do not fit a signed int64."""


class SupportsDataPtr(Protocol):
    """Anything with ``data_ptr()``: tensors, storages, test fakes."""

    def data_ptr(self) -> int: ...


def check_int(value: object, what: str = "address") -> int:
    """Return ``value`` if it is a plain int (not bool), else raise PtrTypeError."""
    if type(value) is int:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    raise PtrTypeError(f"{what} must be an int (got {describe(value)})")


def unsigned_address(raw: object, what: str = "data_ptr()") -> int:
    """Decode a ``data_ptr()``-style value into an unsigned address in ``[0, 2**64)``.

    Backends report an address either unsigned or as an int64 two's-complement value
    (negative for addresses at or above 2**63); both decode to the same address. The one
    place devptr does this for a single value (arrays: :func:`devptr._convert.ptr_array`).
    """
    if type(raw) is not int:
        raw = check_int(raw, what)
    if raw < 0:
        if raw < -SIGN_BIT:
            raise AddressRangeError(f"{what} is not an int64 or uint64 value (got {hexaddr(raw)})")
        return raw + ADDR_LIMIT
    if raw >= ADDR_LIMIT:
        raise AddressRangeError(f"{what} is not an int64 or uint64 value (got {hexaddr(raw)})")
    return raw


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


def _int_like(value: object) -> bool:
    """An integer that is not a DevicePtr: int, bool, numpy or torch integer scalars."""
    return isinstance(value, int) or hasattr(type(value), "__index__")


def _refuse_compare(p: DevicePtr, op: str, other: object) -> PtrTypeError:
    return PtrTypeError(
        f"{p!r} {op} {describe(other)}: a DevicePtr compares only with a DevicePtr; "
        f"write p.addr {op} n (unsigned) or p {op} DevicePtr(n)"
    )


def _valid_addr(_inst: object, _attr: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise PtrTypeError(f"address must be an int (got {describe(value)})")
    if not 0 <= value < ADDR_LIMIT:
        raise AddressRangeError(f"address must be in [0, 2**64) (got {hexaddr(value)})")


@attrs.frozen(eq=False, repr=False)
class DevicePtr:
    """A device address, held as an unsigned int in ``[0, 2**64)``.

    Comparisons are unsigned and between DevicePtrs only: ``DevicePtr(16) == 16`` and
    ``DevicePtr(16) < 17`` both raise :class:`PtrTypeError` (a TypeError), because an
    equality with a raw int (``p == t.data_ptr()``) would be silently False for every
    address a backend reports signed. Other objects compare unequal (``p == None`` is
    False). There is deliberately no ``__int__``/``__index__``: code
    says ``.addr`` (unsigned) or ``.signed`` (int64 two's complement), so a DevicePtr
    never slips into an integer tensor or array unnoticed.

    Parameters
    ----------
    addr
        The address. ``TypeError`` for anything but an int (bool and float included),
        ``ValueError`` outside ``[0, 2**64)``.
    """

    addr: int = attrs.field(validator=_valid_addr)

    NULL: ClassVar[DevicePtr]

    @classmethod
    def of(cls, obj: SupportsDataPtr, offset: int = 0) -> DevicePtr:
        """The address of ``obj.data_ptr()`` plus ``offset`` bytes.

        A negative ``data_ptr()`` value (a two's-complement int64) is decoded. In checked
        mode the extent of the object's storage is remembered for the result.
        """
        get = getattr(obj, "data_ptr", None)
        if get is None or isinstance(obj, DevicePtr):
            raise PtrTypeError(
                f"DevicePtr.of() needs an object with data_ptr() (got {describe(obj)})"
            )
        raw = unsigned_address(get())
        if offset:
            raw += check_int(offset, "offset")
            if not 0 <= raw < ADDR_LIMIT:
                raise AddressOverflowError(
                    f"address plus offset leaves [0, 2**64) (got {hexaddr(raw)})"
                )
        if _checked.ENABLED and _checked.is_enabled():
            note_extent(raw, obj)
        return cls(raw)

    @classmethod
    def from_signed(cls, value: int) -> DevicePtr:
        """Decode an int64 two's-complement value (``[-2**63, 2**63)``)."""
        value = check_int(value, "signed address")
        if not -SIGN_BIT <= value < SIGN_BIT:
            raise AddressRangeError(
                f"signed address must be in [-2**63, 2**63) (got {hexaddr(value)})"
            )
        return cls(value + ADDR_LIMIT if value < 0 else value)

    @property
    def signed(self) -> int:
        """The int64 two's-complement value with the same 64 bits."""
        a = self.addr
        return a - ADDR_LIMIT if a >= SIGN_BIT else a

    def encode(self, encoding: Encoding) -> int:
        """The int a container of ``encoding`` holds for this address."""
        from devptr._encoding import Encoding

        if encoding is Encoding.U64:
            return self.addr
        if encoding is Encoding.I64:
            return self.signed
        raise PtrTypeError(f"encoding must be an Encoding (got {describe(encoding)})")

    @property
    def is_null(self) -> bool:
        """Whether this is address 0."""
        return self.addr == 0

    def is_aligned(self, n: int) -> bool:
        """Whether the address is a multiple of ``n`` (a positive int)."""
        n = check_int(n, "alignment")
        if n <= 0:
            raise AddressRangeError(f"alignment must be positive (got {n})")
        return self.addr % n == 0

    def __add__(self, n: int) -> DevicePtr:
        if type(n) is not int:
            if isinstance(n, bool) or not isinstance(n, int):
                return NotImplemented
        r = self.addr + n
        if not 0 <= r < ADDR_LIMIT:
            raise AddressOverflowError(f"{self!r} + {n} leaves [0, 2**64) (got {hexaddr(r)})")
        return DevicePtr(r)

    __radd__ = __add__

    @overload
    def __sub__(self, other: DevicePtr) -> int: ...

    @overload
    def __sub__(self, other: int) -> DevicePtr: ...

    def __sub__(self, other: DevicePtr | int) -> DevicePtr | int:
        if isinstance(other, DevicePtr):
            return self.addr - other.addr
        if type(other) is not int:
            if isinstance(other, bool) or not isinstance(other, int):
                return NotImplemented
        r = self.addr - other
        if not 0 <= r < ADDR_LIMIT:
            raise AddressOverflowError(f"{self!r} - {other} leaves [0, 2**64) (got {hexaddr(r)})")
        return DevicePtr(r)

    # -- comparisons: unsigned, DevicePtr with DevicePtr only -------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, DevicePtr):
            return self.addr == other.addr
        if _int_like(other):
            raise _refuse_compare(self, "==", other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, DevicePtr):
            return self.addr != other.addr
        if _int_like(other):
            raise _refuse_compare(self, "!=", other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.addr)

    def _key(self, op: str, other: object) -> int:
        if isinstance(other, DevicePtr):
            return other.addr
        raise _refuse_compare(self, op, other)

    def __lt__(self, other: DevicePtr) -> bool:
        return self.addr < self._key("<", other)

    def __le__(self, other: DevicePtr) -> bool:
        return self.addr <= self._key("<=", other)

    def __gt__(self, other: DevicePtr) -> bool:
        return self.addr > self._key(">", other)

    def __ge__(self, other: DevicePtr) -> bool:
        return self.addr >= self._key(">=", other)

    def __repr__(self) -> str:
        return f"DevicePtr({self.addr:#x})"

    def __format__(self, spec: str) -> str:
        return (
            format(repr(self), spec)
            if not spec or spec[-1] not in "xXdob"
            else format(self.addr, spec)
        )


DevicePtr.NULL = DevicePtr(0)
