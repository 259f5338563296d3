"""The error taxonomy: one base class, each concrete error also a standard Python exception.

Every error devptr raises is a :class:`DevPtrError` *and* one built-in family, so callers
catch either: ``TypeError`` for a wrong type, ``ValueError`` for a bad value or length,
``IndexError`` for an index or capacity, ``OverflowError`` for address arithmetic leaving
``[0, 2**64)``, ``RuntimeError`` for an object or runtime in the wrong state (released,
closed, no device). :class:`DevPtrError` itself is never raised (``tests/test_errors.py``
walks the package source and fails on a ``raise`` of a built-in, a third-party or the bare
base class). Messages print addresses in hex and counts and indices in decimal.

This module imports nothing (the checker and the mypy plugin use it without torch or numpy).
The vendorable module (:mod:`devptr.vendor.ptrtable`) declares the same names for engines
that copy it; inside devptr, ``devptr.vendor`` installs these classes in it, so there is
one taxonomy (``tests/vendor/test_parity.py`` checks the names are the same objects).
"""

from __future__ import annotations


class DevPtrError(Exception):
    """Base class of every error devptr raises (never raised itself)."""


class PtrTypeError(DevPtrError, TypeError):
    """A value or container of the wrong type (a raw int where a DevicePtr is required...)."""


class AddressRangeError(DevPtrError, ValueError):
    """A value outside the range it must lie in: an address outside ``[0, 2**64)``, a
    negative index array, a byte count of ``2**63`` or more."""


class InvalidValueError(DevPtrError, ValueError):
    """A value of the right type that the call cannot use (a chunk that is not a power of
    two, a message larger than a workspace slot, a tensor of the wrong shape...)."""


class LengthMismatchError(DevPtrError, ValueError):
    """Sequences that must have the same length (or shape) do not."""


class UnknownBackendError(DevPtrError, ValueError):
    """A backend (device type) or encoding name devptr does not know."""


class CheckedModeError(DevPtrError, ValueError):
    """Checked mode found an access outside the storage an address came from."""


class CapacityError(DevPtrError, IndexError):
    """An index, slice or count outside ``[0, capacity]`` (nothing is written)."""


class AddressOverflowError(DevPtrError, OverflowError):
    """Address arithmetic would leave [0, 2**64); devptr never wraps silently."""


class StateError(DevPtrError, RuntimeError):
    """An object or the runtime is not in the state the call needs (no device mirror, no
    accelerator or driver for the device asked for, not initialised yet)."""


class StaleBufferError(StateError):
    """Use of a pooled buffer handle after it was released."""


class MissingDependencyError(DevPtrError, ImportError):
    """A conversion needs an optional library that is not installed (exported as
    ``devptr.interop.MissingDependencyError``)."""


class SpawnError(DevPtrError, RuntimeError):
    """A rank started by :func:`devptr.testing.spawn` raised, hung past the timeout, or
    died (exported as ``devptr.testing.SpawnError``)."""


def hexaddr(value: int) -> str:
    """Format an address in hex for messages: ``0x10``, ``-0x10``."""
    return hex(value)


def describe(value: object) -> str:
    """Short description of an unexpected value for messages.

    Integers print in decimal (``int 5``): most unexpected ints are counts or indices.
    Where an int is an address, the message formats it with :func:`hexaddr` itself.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return f"int {value}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


__all__ = [
    "AddressOverflowError",
    "AddressRangeError",
    "CapacityError",
    "CheckedModeError",
    "DevPtrError",
    "InvalidValueError",
    "LengthMismatchError",
    "MissingDependencyError",
    "PtrTypeError",
    "SpawnError",
    "StaleBufferError",
    "StateError",
    "UnknownBackendError",
    "describe",
    "hexaddr",
]
