"""Read-only views of one column of a :class:`devptr.PtrTable`, read like a buffer.

The Mamba copy adapter keeps its segments in one table (``src``, ``dst``, ``size``
records: one fill, one upload); vLLM-style callers still read ``src_ptrs``, ``dst_ptrs``
and ``sizes``. A :class:`ColumnView` gives them the reading half of
:class:`devptr.PtrBuffer` / :class:`devptr.kernels.SizeBuffer` (``capacity``, ``numpy``,
``host``, ``device``, ``to_device``, indexing) over the table's memory: nothing is
copied on the host, every tensor returned is a strided view of the table (stride = the
number of columns), and writes go through the table (:meth:`devptr.PtrTable.fill`).
"""

from __future__ import annotations

from typing import overload

import numpy as np
import numpy.typing as npt
import torch

from devptr import CapacityError, Column, DevicePtr, Encoding, PtrTable, PtrTypeError
from devptr._core_api import describe


class ColumnView:
    """Column ``name`` of ``table``; valid as long as the table (it holds a reference).

    Pointer columns read as addresses (``host``/``device`` take an :class:`Encoding`,
    indexing gives :class:`DevicePtr`); INT columns read as int64 (indexing gives int).
    :meth:`to_device` uploads the table's first ``n`` *records* (every column, one copy)
    and returns this column's part of the device mirror.
    """

    __slots__ = ("_index", "_ptr", "name", "table")

    def __init__(self, table: PtrTable, name: str) -> None:
        self.table = table
        self.name = name
        self._index = table.column_index(name)
        self._ptr = table.columns[name] is Column.PTR

    @property
    def capacity(self) -> int:
        """Entries in the column (the table's records)."""
        return self.table.capacity

    def __len__(self) -> int:
        return self.table.capacity

    @property
    def device_type(self) -> torch.device | None:
        """The device of the table's mirror, or None for a host-only table."""
        return self.table.device_type

    def numpy(self) -> npt.NDArray[np.uint64] | npt.NDArray[np.int64]:
        """Read-only host view: uint64 for a pointer column, int64 for an INT column."""
        return self.table.column(self.name)

    def _dtype(self, encoding: Encoding | None) -> Encoding | None:
        if self._ptr:
            return encoding
        if encoding not in (None, Encoding.I64):
            raise PtrTypeError(f"column {self.name!r} holds integers: read it as I64 (got {encoding!r})")
        return Encoding.I64

    def host(self, encoding: Encoding | None = None) -> torch.Tensor:
        """The host entries as a tensor (zero-copy, strided)."""
        return self.table.host(self._dtype(encoding))[:, self._index]

    def device(self, encoding: Encoding | None = None) -> torch.Tensor:
        """The device mirror's entries as a tensor (what the last upload copied)."""
        return self.table.device(self._dtype(encoding))[:, self._index]

    def to_device(
        self, n: int | None = None, *, encoding: Encoding | None = None, non_blocking: bool = True
    ) -> torch.Tensor:
        """Upload the table's first ``n`` records (one copy); return this column's part."""
        rows = self.table.to_device(n, encoding=self._dtype(encoding), non_blocking=non_blocking)
        return rows[:, self._index]

    @overload
    def __getitem__(self, i: int) -> DevicePtr | int: ...

    @overload
    def __getitem__(self, i: slice) -> list[DevicePtr] | list[int]: ...

    def __getitem__(self, i: int | slice) -> DevicePtr | int | list[DevicePtr] | list[int]:
        col = self.numpy()
        n = col.shape[0]
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step != 1 or (i.start is not None and not 0 <= i.start <= n) or (
                i.stop is not None and not 0 <= i.stop <= n
            ):
                raise CapacityError(f"slice {i} outside [0, {n}] or not step 1")
            vals: list[int] = col[start:stop].tolist()
            return [DevicePtr(a) for a in vals] if self._ptr else vals
        if type(i) is not int:
            raise PtrTypeError(f"index must be an int (got {describe(i)})")
        if not 0 <= i < n:
            raise CapacityError(f"index {i} out of range for capacity {n}")
        v = int(col[i])
        return DevicePtr(v) if self._ptr else v

    def __repr__(self) -> str:
        return f"ColumnView({self.name!r} of {self.table!r})"


__all__ = ["ColumnView"]
