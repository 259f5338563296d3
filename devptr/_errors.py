"""The error hierarchy: one base class, each error also a standard Python exception."""

from __future__ import annotations


class DevPtrError(Exception):
    """Base class of every error devptr raises."""


class AddressRangeError(DevPtrError, ValueError):
    """A value is not a valid address (outside [0, 2**64))."""


class AddressOverflowError(DevPtrError, OverflowError):
    """Address arithmetic would leave [0, 2**64); devptr never wraps silently."""


class PtrTypeError(DevPtrError, TypeError):
    """A value or container of the wrong type (a raw int where a DevicePtr is required...)."""


class UnknownBackendError(DevPtrError, ValueError):
    """A backend (device type) name devptr does not know."""


class CapacityError(DevPtrError, IndexError):
    """An index or count beyond a buffer's capacity."""


class LengthMismatchError(DevPtrError, ValueError):
    """Sequences that must have the same length do not."""


class StaleBufferError(DevPtrError, RuntimeError):
    """Use of a pooled buffer handle after it was released."""


class CheckedModeError(DevPtrError, ValueError):
    """Checked mode found an access outside the storage an address came from."""


def hexaddr(value: int) -> str:
    """Format an address (or any int) in hex for messages: ``0x10``, ``-0x10``."""
    return hex(value)


def describe(value: object) -> str:
    """Short description of an unexpected value for messages."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"int {hexaddr(value)}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"
