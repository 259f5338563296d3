"""``PtrBufferPool``: reuse of PtrBuffers, with stale-handle detection."""

from __future__ import annotations

import threading

import torch

from devptr._buffer import PtrBuffer
from devptr._errors import CapacityError, StaleBufferError, describe
from devptr._storage import Storage


class PtrBufferPool:
    """Hands out :class:`PtrBuffer` handles over reusable storage, last released first.

    ``acquire(n)`` returns a *new* handle of capacity ``n`` over free storage of at least
    ``n`` entries (allocating ``max(n, min_capacity)`` when none is free).
    ``release(buf)`` invalidates the handle: every later use of it (indexing, fills,
    views, a second release) raises :class:`StaleBufferError`, also once its storage
    serves a new holder. Tensors and arrays taken from a handle are plain views, valid
    only while the handle is held. Thread-safe.

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
        if type(min_capacity) is not int or min_capacity < 0:
            raise CapacityError(
                f"min_capacity must be a non-negative int (got {describe(min_capacity)})"
            )
        self._min = min_capacity
        self._device = device
        self._pin = pin_memory
        self._max = max_buffers
        self._lock = threading.Lock()
        self._free: list[Storage] = []
        self._held: dict[int, tuple[PtrBuffer[int], Storage]] = {}
        self.allocated = 0
        """Number of storages allocated so far."""

    def acquire(self, n: int) -> PtrBuffer[int]:
        """A buffer of capacity ``n`` that no other holder has."""
        if type(n) is not int or n < 0:
            raise CapacityError(f"n must be a non-negative int (got {describe(n)})")
        with self._lock:
            if self._max is not None and len(self._held) >= self._max:
                raise CapacityError(f"pool holds its maximum of {self._max} buffers")
            storage = None
            for k in range(len(self._free) - 1, -1, -1):
                if self._free[k].rows >= n:
                    storage = self._free.pop(k)
                    break
        if storage is None:
            storage = Storage(max(n, self._min), device=self._device, pin_memory=self._pin)
            with self._lock:
                self.allocated += 1
        buf = PtrBuffer._over(storage, n)
        with self._lock:
            self._held[id(buf)] = (buf, storage)
        return buf

    def release(self, buf: PtrBuffer[int]) -> None:
        """Return ``buf``'s storage to the pool and invalidate the handle."""
        with self._lock:
            entry = self._held.get(id(buf))
            if entry is None or entry[0] is not buf:
                if isinstance(buf, PtrBuffer) and buf._st is None:
                    raise StaleBufferError("this PtrBuffer was already released")
                raise StaleBufferError(f"{describe(buf)} was not acquired from this pool")
            del self._held[id(buf)]
            storage = entry[1]
            buf._st = None
            self._free.append(storage)

    @property
    def held(self) -> int:
        """Number of buffers currently acquired."""
        return len(self._held)

    @property
    def free(self) -> int:
        """Number of storages waiting for reuse."""
        return len(self._free)
