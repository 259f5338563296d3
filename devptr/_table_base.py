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

import copy
import functools
import threading
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np
import torch

from devptr._convert import index_value
from devptr._encoding import Encoding, encoding_for
from devptr._errors import CapacityError, PtrTypeError, StaleBufferError, describe
from devptr._storage import Storage, check_encoding_arg, no_mirror

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T", bound="TableBase")


def guarded(method: Callable[Concatenate[T, P], R]) -> Callable[Concatenate[T, P], R]:
    """Run ``method`` holding the handle's guard when a pool handed it out.

    A pooled handle's guard is also taken by :meth:`PtrBufferPool.release_handle`, so a
    call's stale-handle check, validation and write happen while the storage is still
    this handle's: a write racing ``release()`` from another thread either completes
    before the release or raises :class:`StaleBufferError`, never lands in the next
    holder's storage. Tables not from a pool have no guard and pay one attribute read.
    """

    @functools.wraps(method)
    def run(self: T, /, *args: P.args, **kwargs: P.kwargs) -> R:
        g = self._guard
        if g is None:
            return method(self, *args, **kwargs)
        with g:
            return method(self, *args, **kwargs)

    return run


def copy_refused(table: object) -> PtrTypeError:
    """The error for copying a pooled handle (``copy.copy``, ``copy.deepcopy``)."""
    return PtrTypeError(
        f"a pooled {type(table).__name__} cannot be copied: a copy would outlive the handle's "
        "release and write into the next holder's storage; copy its entries into a new table"
    )


class TableBase:
    """``capacity`` rows of a :class:`Storage`; the handle a pool can invalidate.

    The storage may hold more rows than the table shows (pooled storage is reused for
    smaller tables); every view is cut to the table's rows. After a pool released the
    handle (``_st`` is None) every method raises :class:`StaleBufferError`.
    """

    __slots__ = ("__weakref__", "_guard", "_n", "_st")

    _st: Storage | None
    _n: int
    _guard: threading.RLock | None
    """Set by a pool on the handles it hands out (see :func:`guarded`); None otherwise."""

    def _attach(self, storage: Storage, n: int) -> None:
        self._st = storage
        self._n = n
        self._guard = None

    def _live(self) -> Storage:
        st = self._st
        if st is None:
            raise StaleBufferError(
                f"this {type(self).__name__} was released to its pool; acquire a new one"
            )
        return st

    # -- copies: a pooled handle is never duplicated; tables never pickle -----------------
    def __copy__(self: T) -> T:
        """A second handle over the same storage (tables not from a pool only)."""
        if self._guard is not None:
            raise copy_refused(self)
        new = object.__new__(type(self))
        for name in _slot_names(type(self)):
            if name != "__weakref__" and hasattr(self, name):
                setattr(new, name, getattr(self, name))
        return new

    def __deepcopy__(self: T, memo: dict[int, Any]) -> T:
        """A new table with its own storage holding a copy of the entries (and mirror)."""
        if self._guard is not None:
            raise copy_refused(self)
        st = self._live()
        new = object.__new__(type(self))
        memo[id(self)] = new
        for name in _slot_names(type(self)):
            if name not in _STORAGE_SLOTS and hasattr(self, name):
                value = getattr(self, name)
                if not isinstance(value, np.ndarray):  # views of the storage: _attach remakes them
                    setattr(new, name, copy.deepcopy(value, memo))
        new._attach(st.clone(), self._n)
        return new

    def __reduce_ex__(self, protocol: object) -> Any:
        raise PtrTypeError(
            f"a {type(self).__name__} cannot be pickled: the device addresses it holds are valid "
            "only in the process that took them; send its entries (numpy()) and build a table "
            "where they are used"
        )

    # -- size and placement -----------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Number of entries (rows), fixed for the table's life."""
        return self._n

    def __len__(self) -> int:
        if self._st is None:
            self._live()
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
        """An entry index ``0 <= i < capacity``; never negative (a -1 is a bug, not "last").

        A Python int or a numpy integer (not a bool)."""
        if type(i) is int and 0 <= i < self._n:
            return i
        if type(i) is not int and isinstance(i, np.integer):
            return self._index(int(i), what)
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

    # -- views and the one copy (guarded: a view or copy is taken while the handle is held) --
    @guarded
    def _host(self, dtype: torch.dtype) -> torch.Tensor:
        return self._live().host[: self._n].view(dtype)

    @guarded
    def _mirror(self, dtype: torch.dtype) -> torch.Tensor:
        st = self._live()
        if st.mirror is None:
            raise no_mirror(type(self).__name__)
        return st.mirror[: self._n].view(dtype)

    def _upload(self, n: object, dtype: torch.dtype, non_blocking: bool, columns: int = 1) -> torch.Tensor:
        """Every table's ``to_device``, called under the guard: copy the first ``n`` rows
        (None: all) to the mirror in one copy and return the mirror's view of them as
        ``dtype`` (the storage's cached views).

        ``columns`` > 1: the storage holds the table as that many contiguous columns of
        ``capacity`` words (the EC descriptor buffers: 3); the one copy covers every column
        but the last whole and the last one's first ``n`` words, and the view returned is
        the whole ``columns * capacity`` words (the caller cuts its columns from it)."""
        st = self._live()
        if st.mirror is None:
            raise no_mirror(type(self).__name__)
        count = self._count(n)
        if columns != 1:
            view = st.mirror_rows(columns * self._n, dtype)
            st.copy_to_device((columns - 1) * self._n + count if count else 0, non_blocking)
            return view
        view = st.mirror_rows(self._n, dtype)
        st.copy_to_device(count, non_blocking)
        return view[:count]

    def __repr__(self) -> str:
        name = type(self).__name__
        st = self._st
        if st is None:
            return f"{name}(<released>)"
        dev = str(st.device) if st.device is not None else None
        return f"{name}(capacity={self._n}, device={dev}, pinned={st.pinned})"


_STORAGE_SLOTS = frozenset({"__weakref__", "_guard", "_n", "_st"})


def _slot_names(cls: type) -> list[str]:
    """Every ``__slots__`` name of ``cls`` and its bases."""
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return names


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
        g = self._guard
        if g is None:
            return self._upload(n, dtype, non_blocking)
        with g:
            return self._upload(n, dtype, non_blocking)
