"""The one table implementation every devptr table is built on.

:class:`TableBase` holds a :class:`~devptr._storage.Storage` (host uint64 memory plus an
optional device mirror) and a length, and writes once what every table needs: capacity
and length, device and pinning, index/slice/range checks (``0 <= i <= capacity``, an
:class:`~devptr.CapacityError` otherwise, nothing written), host and device views,
``to_device``, ``repr`` and the stale-handle check of pooled tables.
:class:`AddressTable` adds the encoding-taking views of tables that hold addresses.

Built on it: :class:`devptr.PtrBuffer`, :class:`devptr.PtrTable`, :class:`devptr.SizeBuffer`
and the EC connector's ``DescriptorBuffers``.
"""

from __future__ import annotations

import torch

from devptr._convert import index_value
from devptr._encoding import Encoding, encoding_for
from devptr._errors import CapacityError, PtrTypeError, StaleBufferError, StateError, describe
from devptr._storage import Storage, check_encoding_arg


class TableBase:
    """``capacity`` rows of a :class:`Storage`; the handle a pool can invalidate.

    The storage may hold more rows than the table shows (pooled storage is reused for
    smaller tables); every view is cut to the table's rows. After a pool released the
    handle (``_st`` is None) every method raises :class:`StaleBufferError`.
    """

    __slots__ = ("__weakref__", "_n", "_st")

    _st: Storage | None
    _n: int

    def _attach(self, storage: Storage, n: int) -> None:
        self._st = storage
        self._n = n

    def _live(self) -> Storage:
        st = self._st
        if st is None:
            raise StaleBufferError(
                f"this {type(self).__name__} was released to its pool; acquire a new one"
            )
        return st

    # -- size and placement -----------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Number of entries (rows), fixed for the table's life."""
        return self._n

    def __len__(self) -> int:
        return self._n

    @property
    def device_type(self) -> torch.device | None:
        """The device of the mirror, or None for a host-only table."""
        return self._live().device

    @property
    def is_pinned(self) -> bool:
        """Whether the host memory is pinned."""
        return self._live().pinned

    # -- checks (one place: indices are 0 <= i < capacity, ranges within [0, capacity]) --
    def _index(self, i: object, what: str = "index") -> int:
        """An entry index ``0 <= i < capacity``; never negative (a -1 is a bug, not "last")."""
        if type(i) is int and 0 <= i < self._n:
            return i
        if type(i) is int:
            raise CapacityError(f"{what} {i} out of range for capacity {self._n}")
        raise PtrTypeError(f"{what} must be an int (got {describe(i)})")

    def _slice(self, s: slice) -> tuple[int, int]:
        """``(start, stop)`` of a slice whose bounds lie in ``[0, capacity]``, step 1.

        No clamping and no negative bounds: ``buf[2:10]`` on capacity 4 and ``buf[-2:]``
        are :class:`CapacityError`, as an out-of-range index is.
        """
        if s.step is not None and s.step != 1:
            raise PtrTypeError(f"slices need step 1 (got {describe(s.step)})")
        start = 0 if s.start is None else index_value(s.start, "slice start", self._n)
        stop = self._n if s.stop is None else index_value(s.stop, "slice stop", self._n)
        if stop < start:
            raise CapacityError(f"slice stop {stop} is below its start {start}")
        return start, stop

    def _span(self, start: object, count: int, what: str = "entries", name: str = "start") -> int:
        """Check that ``count`` rows from ``start`` fit; return ``start``."""
        first = index_value(start, name, self._n)
        if first + count > self._n:
            raise CapacityError(
                f"{count} {what} from index {first} do not fit: they exceed capacity {self._n}"
            )
        return first

    def _count(self, n: object) -> int:
        """``n`` rows (None: all) for views and copies, within ``[0, capacity]``."""
        return self._n if n is None else index_value(n, "n", self._n)

    # -- views and the one copy ---------------------------------------------------------
    def _host(self, dtype: torch.dtype) -> torch.Tensor:
        return self._live().host[: self._n].view(dtype)

    def _mirror(self, dtype: torch.dtype) -> torch.Tensor:
        st = self._live()
        if st.mirror is None:
            raise StateError(
                f"this {type(self).__name__} has no device mirror: construct it with device=..."
            )
        return st.mirror[: self._n].view(dtype)

    def _copy(self, n: object, non_blocking: bool) -> int:
        """Copy the first ``n`` rows (None: all) to the mirror; return how many."""
        st = self._live()
        count = self._count(n)
        st.copy_to_device(count, non_blocking)
        return count

    def __repr__(self) -> str:
        name = type(self).__name__
        st = self._st
        if st is None:
            return f"{name}(<released>)"
        dev = str(st.device) if st.device is not None else None
        return f"{name}(capacity={self._n}, device={dev}, pinned={st.pinned})"


class AddressTable(TableBase):
    """A table of 64-bit words read in an :class:`Encoding` (PtrBuffer, PtrTable)."""

    __slots__ = ()

    def _encoding(self, encoding: Encoding | None) -> Encoding:
        if encoding is not None:
            check_encoding_arg(encoding)
            return encoding
        dev = self._live().device
        return encoding_for(dev if dev is not None else "cpu")

    def host(self, encoding: Encoding | None = None) -> torch.Tensor:
        """The host entries as a tensor of ``encoding``'s dtype (zero-copy view).

        ``encoding`` defaults to :func:`encoding_for` the table's device (CPU: I64).
        """
        return self._host(self._encoding(encoding).torch_dtype)

    def device(self, encoding: Encoding | None = None) -> torch.Tensor:
        """The device mirror as a tensor of ``encoding``'s dtype (zero-copy view).

        Holds what the last :meth:`to_device` copied, not later host writes.
        """
        return self._mirror(self._encoding(encoding).torch_dtype)

    def to_device(
        self, n: int | None = None, *, encoding: Encoding | None = None, non_blocking: bool = True
    ) -> torch.Tensor:
        """Copy the first ``n`` entries (default: all) to the device mirror in one copy.

        Returns the device view of those ``n`` entries. With pinned host memory the copy is
        asynchronous; the next host write through this table waits for it.
        """
        dtype = self._encoding(encoding).torch_dtype
        count = self._copy(n, non_blocking)
        return self._mirror(dtype)[:count]
