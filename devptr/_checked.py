"""Checked mode: remember the storage extent of addresses taken from tensors.

Off by default. Turn it on with ``DEVPTR_CHECKED=1`` in the environment or the
:func:`checked` context manager. When on, :meth:`DevicePtr.of` records, for the address it
returns, the byte range ``[start, end)`` of the storage behind the object (a tensor's
untyped storage). Consumers such as ``devptr.kernels.batch_memcpy`` look ranges up with
:func:`find` (and :func:`devptr.extent_of`, in ``_ptr`` next to DevicePtr, for the exact
address) and refuse, before launch, a segment that leaves its storage. This module is the
registry only and imports only devptr's errors (which import nothing).

Per context: :func:`checked` sets a :mod:`contextvars` variable, so a block turns checked
mode on (or off) for its own thread or asyncio task only; one thread leaving its block
never changes another's. ``DEVPTR_CHECKED`` gives every context's default.

Forgotten with the storage: each extent holds a weak reference to the storage object it
was measured on (torch keeps one Python object per storage), and a finalizer drops the
extent when that storage is freed. So the registry holds live storages only, and an
address that a new tensor reuses after the old one was freed never meets the old extent.
Storage objects that cannot be weakly referenced (test fakes) are not recorded.

When off the cost is one module-attribute read per :meth:`DevicePtr.of`.
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
import os
import threading
import weakref
from collections.abc import Iterator

from devptr._errors import InvalidValueError

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
"""Whether checked mode may be on in some context (the environment's default, or a
:func:`checked` block open in some thread): the one attribute read of the "off" path.
:func:`is_enabled` says whether it is on in the calling context."""

_ENV_DEFAULT: bool = ENABLED
_on: contextvars.ContextVar[bool] = contextvars.ContextVar("devptr_checked", default=_ENV_DEFAULT)
_open_blocks = 0  # checked(True) blocks open in any context



class _Storage:
    """One live storage recorded: its span, the finalizer that forgets it, its addresses."""

    __slots__ = ("addrs", "end", "fin", "start")

    def __init__(self, start: int, end: int, fin: weakref.finalize[[int], object]) -> None:
        self.start = start
        self.end = end
        self.fin = fin
        self.addrs: set[int] = set()


_lock = threading.Lock()
_by_addr: dict[int, int] = {}  # address -> key of the storage it was taken from
_storages: dict[int, _Storage] = {}  # key (the storage object's id) -> what was recorded
_spans: list[tuple[int, int, int]] = []  # (start, end, key), sorted: "which storage contains"
_freed: list[int] = []  # keys whose storage was freed, dropped at the next registry call


def is_enabled() -> bool:
    """Whether checked mode is on in the calling thread or task."""
    return ENABLED and _on.get()


def record(addr: int, start: int, end: int, storage: object) -> None:
    """Remember that ``addr`` points into ``storage``, which spans ``[start, end)``.

    Kept until ``storage`` is freed (a weak-reference finalizer), or until the last
    :func:`checked` block closes with the environment's default off. Nothing is recorded
    when checked mode is off in this context, or when ``storage`` cannot be weakly
    referenced (its lifetime cannot be followed, so its extent could go stale).
    """
    if not is_enabled():
        return
    key = id(storage)
    with _lock:
        _purge()
        entry = _storages.get(key)
        if entry is not None and (entry.start, entry.end) != (start, end):  # resized in place
            _drop(key)
            entry = None
        if entry is None:
            try:
                fin = weakref.finalize(storage, _forget, key)
            except TypeError:
                return
            fin.atexit = False
            entry = _storages[key] = _Storage(start, end, fin)
            bisect.insort(_spans, (start, end, key))
        old = _by_addr.get(addr)
        if old is not None and old != key and old in _storages:
            _storages[old].addrs.discard(addr)
        _by_addr[addr] = key
        entry.addrs.add(addr)


def _forget(key: int) -> None:
    # A finalizer may run inside any allocation, also one made while ``_lock`` is held:
    # it only queues the key (list.append is atomic), registry calls drop it under the lock.
    _freed.append(key)


def _purge() -> None:
    """Drop the storages freed since the last call (``_lock`` held)."""
    while _freed:
        _drop(_freed.pop())


def _drop(key: int) -> None:
    """Forget storage ``key`` and its addresses (``_lock`` held)."""
    entry = _storages.pop(key, None)
    if entry is None:
        return
    entry.fin.detach()
    for a in entry.addrs:
        if _by_addr.get(a) == key:
            del _by_addr[a]
    span = (entry.start, entry.end, key)
    k = bisect.bisect_left(_spans, span)
    if k < len(_spans) and _spans[k] == span:
        del _spans[k]


def extents_get(addr: int) -> tuple[int, int] | None:
    """The range recorded for exactly the unsigned address ``addr``, or None."""
    with _lock:
        _purge()
        key = _by_addr.get(addr)
        entry = None if key is None else _storages.get(key)
        return None if entry is None else (entry.start, entry.end)


def find(addr: int) -> tuple[int, int] | None:
    """The recorded storage ``[start, end)`` that holds ``addr``: the one it was recorded
    for, else a live storage whose range contains it; None when none does.

    O(log n) in the live storages recorded (a sorted list kept as they come and go).
    """
    with _lock:
        _purge()
        key = _by_addr.get(addr)
        if key is not None:
            entry = _storages[key]
            return entry.start, entry.end
        k = bisect.bisect_right(_spans, (addr, 1 << 64, 0)) - 1
        while k >= 0:  # spans of live storages do not overlap; zero-length ones may share a start
            start, end, _ = _spans[k]
            if addr < end:
                return start, end
            if start < addr:
                return None
            k -= 1
        return None


def extents() -> dict[int, tuple[int, int]]:
    """A snapshot of every recorded ``addr -> (start, end)`` (a copy, safe to keep)."""
    with _lock:
        _purge()
        return {a: (_storages[k].start, _storages[k].end) for a, k in _by_addr.items()}


def clear() -> None:
    """Forget every recorded extent."""
    with _lock:
        _freed.clear()
        for key in list(_storages):
            _drop(key)


@contextlib.contextmanager
def checked(enabled: bool = True) -> Iterator[None]:
    """Turn checked mode on (or off) for this thread or task inside a ``with`` block.

    Restores the previous state of this context on exit; other threads keep theirs.
    Extents are kept while their storage lives; when the last open block closes and the
    environment's default is off, all of them are forgotten.
    """
    global ENABLED, _open_blocks
    token = _on.set(enabled)
    if enabled:
        with _lock:
            _open_blocks += 1
            ENABLED = True
    try:
        yield
    finally:
        _on.reset(token)
        if enabled:
            with _lock:
                _open_blocks -= 1
                ENABLED = _ENV_DEFAULT or _open_blocks > 0
                if not ENABLED:
                    _freed.clear()
                    for key in list(_storages):
                        _drop(key)
