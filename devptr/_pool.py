"""``PtrBufferPool``: reuse of PtrBuffers, with stale-handle detection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import torch

from devptr._buffer import PtrBuffer
from devptr._convert import index_value
from devptr._errors import CapacityError, StaleBufferError, describe
from devptr._storage import Storage
from devptr._table_base import TableBase

H = TypeVar("H", bound=TableBase)


class PtrBufferPool:
    """Hands out :class:`PtrBuffer` handles over reusable storage, last released first.

    ``acquire(n)`` returns a *new* handle of capacity ``n`` over free storage of at least
    ``n`` entries (allocating ``max(n, min_capacity)`` when none is free), its entries
    zeroed: a buffer never shows an address of a previous holder (reused storage is
    cleared on acquire: a memset of the ``n`` entries, plus one of the device mirror).
    ``release(buf)`` invalidates the handle: every later use of it (indexing, fills,
    views, a second release, ``len()``) raises :class:`StaleBufferError`, also once its
    storage serves a new holder. Tensors and arrays taken from a handle are plain views,
    valid only while the handle is held.

    Thread-safe: ``max_buffers`` holds under concurrent ``acquire``; a handle's calls and
    its ``release`` exclude each other (a fill racing ``release()`` in another thread
    either completes first or raises :class:`StaleBufferError`, never writes into the
    next holder's storage). A pooled handle cannot be copied (``copy.copy``,
    ``copy.deepcopy``) or pickled: :class:`PtrTypeError`.

    Parameters
    ----------
    min_capacity
        Smallest storage allocated.
    device, pin_memory
        As for :class:`PtrBuffer`; every buffer of the pool shares them.
    max_buffers
        Most buffers held at once (None: unbounded); beyond it ``acquire`` raises.
    """

    def __init__(
        self,
        min_capacity: int = 0,
        *,
        device: str | torch.device | None = None,
        pin_memory: bool | None = None,
        max_buffers: int | None = None,
    ) -> None:
        self._min = index_value(min_capacity, "min_capacity", None)
        self._device = device
        self._pin = pin_memory
        self._max = max_buffers
        self._lock = threading.Lock()
        self._free: list[Storage] = []
        self._held: dict[int, tuple[TableBase, Storage]] = {}
        self._pending = 0  # acquires between their capacity check and their hand-out
        self.allocated = 0
        """Number of storages allocated so far."""

    def acquire(self, n: int) -> PtrBuffer:
        """A buffer of capacity ``n`` that no other holder has, every entry null."""
        return self.acquire_handle(n, lambda st: PtrBuffer._over(st, n))

    def release(self, buf: PtrBuffer) -> None:
        """Return ``buf``'s storage to the pool and invalidate the handle."""
        self.release_handle(buf)

    # -- for other tables built on TableBase over pooled storage (the EC descriptor buffers) --
    def acquire_handle(self, rows: int, make: Callable[[Storage], H]) -> H:
        """A new handle ``make(storage)`` over free storage of at least ``rows`` rows.

        For tables of a layer above the core that keep their words in pooled storage
        (``devptr.adapters.ec_connector.DescriptorBuffers``): ``make`` wraps the storage
        (zeroed for its first ``rows`` rows) in a :class:`TableBase` subclass. Release the
        handle with :meth:`release_handle`.
        """
        rows = index_value(rows, "n", None)
        with self._lock:  # the slot is counted before the lock is let go: max_buffers holds
            if self._max is not None and len(self._held) + self._pending >= self._max:
                raise CapacityError(f"pool holds its maximum of {self._max} buffers")
            self._pending += 1
            storage = None
            for k in range(len(self._free) - 1, -1, -1):
                if self._free[k].rows >= rows:
                    storage = self._free.pop(k)
                    break
        try:
            if storage is None:
                storage = Storage(max(rows, self._min), device=self._device, pin_memory=self._pin)
                with self._lock:
                    self.allocated += 1
            else:
                storage.clear(rows)  # no address of the previous holder
            handle = make(storage)
            handle._guard = threading.RLock()  # shared with release_handle: see guarded()
        except BaseException:
            with self._lock:
                self._pending -= 1
                if storage is not None:
                    self._free.append(storage)
            raise
        with self._lock:
            self._pending -= 1
            self._held[id(handle)] = (handle, storage)
        return handle

    def release_handle(self, handle: TableBase) -> None:
        """Return a handle's storage to the pool and invalidate the handle (every later use
        raises :class:`StaleBufferError`); a handle this pool did not hand out, or one
        already released, is a :class:`StaleBufferError`.

        Waits for a call in progress on the handle in another thread (a fill, a view, a
        copy to the device) to finish first, so that call never writes into the storage
        once it serves a new holder.
        """
        guard = handle._guard if isinstance(handle, TableBase) else None
        if guard is None:
            raise StaleBufferError(f"{describe(handle)} was not acquired from this pool")
        with guard, self._lock:
            entry = self._held.get(id(handle))
            if entry is None or entry[0] is not handle:
                if handle._st is None:
                    raise StaleBufferError(f"this {type(handle).__name__} was already released")
                raise StaleBufferError(f"{describe(handle)} was not acquired from this pool")
            del self._held[id(handle)]
            handle._st = None
            self._free.append(entry[1])

    @property
    def held(self) -> int:
        """Number of buffers currently acquired."""
        return len(self._held)

    @property
    def free(self) -> int:
        """Number of storages waiting for reuse."""
        return len(self._free)
