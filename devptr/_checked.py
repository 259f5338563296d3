"""Checked mode: remember the storage extent of addresses taken from tensors.

Off by default. Turn it on with ``DEVPTR_CHECKED=1`` in the environment or the
:func:`checked` context manager. When on, :meth:`DevicePtr.of` records, for the address it
returns, the byte range ``[start, end)`` of the storage behind the object (a tensor's
untyped storage). Consumers such as ``devptr.kernels.batch_memcpy`` look ranges up with
:func:`devptr.extent_of` (in ``_ptr``, next to DevicePtr) and refuse, before launch, a
segment that leaves its storage. This module is the registry only and imports only
devptr's errors.

When off the cost is one module-attribute read per :meth:`DevicePtr.of`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from devptr._errors import InvalidValueError

_lock = threading.Lock()
_extents: dict[int, tuple[int, int]] = {}

ENV_VAR = "DEVPTR_CHECKED"
"""``1``/``true`` turn checked mode on; ``0``/``false``/empty (or unset) leave it off (any case)."""


def _from_environment() -> bool:
    """``DEVPTR_CHECKED``'s value; anything but the accepted spellings is an error, not "off"."""
    text = os.environ.get(ENV_VAR, "").strip().lower()
    if text not in {"", "0", "1", "false", "true"}:
        raise InvalidValueError(
            f"environment variable {ENV_VAR}={os.environ[ENV_VAR]!r} is invalid: expected 1 or true "
            "(on), 0, false or empty (off)"
        )
    return text in {"1", "true"}


ENABLED: bool = _from_environment()


def is_enabled() -> bool:
    """Whether checked mode is on."""
    return ENABLED


def record(addr: int, start: int, end: int) -> None:
    """Remember that ``addr`` points into the storage ``[start, end)``."""
    with _lock:
        _extents[addr] = (start, end)


def extents_get(addr: int) -> tuple[int, int] | None:
    """The range recorded for the unsigned address ``addr``, or None."""
    return _extents.get(addr)


def extents() -> dict[int, tuple[int, int]]:
    """A snapshot of every recorded ``addr -> (start, end)`` (a copy, safe to keep)."""
    with _lock:
        return dict(_extents)


@contextlib.contextmanager
def checked(enabled: bool = True) -> Iterator[None]:
    """Turn checked mode on (or off) inside a ``with`` block; restores the previous state.

    Recorded extents are kept only for the block: they are cleared on exit.
    """
    global ENABLED
    previous = ENABLED
    ENABLED = enabled
    try:
        yield
    finally:
        ENABLED = previous
        if not previous:
            with _lock:
                _extents.clear()
