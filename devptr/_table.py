"""``PtrTable``: mixed records, pointer columns next to plain integer columns."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import torch

from devptr._convert import U64, Addresses, U64Array, ptr_array
from devptr._errors import (
    AddressRangeError,
    LengthMismatchError,
    PtrTypeError,
    describe,
)
from devptr._ptr import SIGN_BIT, DevicePtr
from devptr._storage import Storage, as_readonly
from devptr._table_base import AddressTable, guarded


class Column(enum.Enum):
    """Kind of a table column."""

    PTR = "ptr"
    """A device address: written as DevicePtr / uint64 array, read back as DevicePtr."""
    INT = "int"
    """A plain integer in ``[-2**63, 2**63)`` (sizes, strides, bounds, flags).

    Stored as int64 two's complement, so an I64 view reads it exactly; non-negative values
    read the same in both encodings.
    """


IntValues = Sequence[int] | npt.NDArray[np.integer]
"""What an INT column takes: ints, or a 1-D integer array."""


class PtrTable(AddressTable):
    """``capacity`` records of named 64-bit columns, row-major, as one host uint64 array.

    The 2-D layout ``[capacity, len(columns)]`` is what kernels index
    (``table + row * ncols + col``); :meth:`host`/:meth:`device` are zero-copy views in the
    encoding asked for, :meth:`to_device` is one copy. Same memory rules as PtrBuffer.

    Parameters
    ----------
    capacity
        Number of records.
    columns
        Column names to kinds, in storage order, e.g.
        ``{"src": Column.PTR, "dst": Column.PTR, "nbytes": Column.INT}``.
    device, pin_memory
        As for :class:`PtrBuffer`.
    """

    __slots__ = ("_cols", "_pos")

    def __init__(
        self,
        capacity: int,
        columns: Mapping[str, Column] | Sequence[tuple[str, Column]],
        *,
        device: str | torch.device | None = None,
        pin_memory: bool | None = None,
    ) -> None:
        items = list(columns.items()) if isinstance(columns, Mapping) else list(columns)
        if not items:
            raise PtrTypeError("a PtrTable needs at least one column")
        for name, kind in items:
            if not isinstance(name, str) or not isinstance(kind, Column):
                raise PtrTypeError(
                    f"columns map names to Column kinds (got {name!r}: {describe(kind)})"
                )
        names = [n for n, _ in items]
        if len(set(names)) != len(names):
            raise PtrTypeError(f"duplicate column names in {names}")
        self._cols: dict[str, Column] = dict(items)
        self._pos = {n: k for k, n in enumerate(names)}
        st = Storage(capacity, len(items), device=device, pin_memory=pin_memory)
        self._attach(st, st.rows)

    @property
    def columns(self) -> dict[str, Column]:
        """Column names and kinds, in storage order."""
        return dict(self._cols)

    def column_index(self, name: str) -> int:
        """Position of column ``name`` within a record (for kernels)."""
        try:
            return self._pos[name]
        except KeyError:
            raise PtrTypeError(f"no column {name!r}; columns are {list(self._cols)}") from None

    def _column_values(self, name: str, values: Addresses | IntValues) -> U64Array:
        kind = self._cols[name]
        if kind is Column.PTR:
            return ptr_array(values, f"column {name!r}")
        if isinstance(values, (list, tuple)) and not values:
            return np.empty(0, dtype=U64)  # an empty batch: np.asarray([]) would be float64
        arr = np.asarray(values)
        if arr.dtype == object or arr.dtype.kind not in "iu" or arr.ndim != 1:
            raise PtrTypeError(
                f"column {name!r} takes a 1-D integer array (got {describe(values)})"
            )
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= SIGN_BIT:
            raise AddressRangeError(
                f"column {name!r} values must be below 2**63 (got {int(arr.max())})"
            )
        return (arr if arr.dtype == np.int64 else arr.astype(np.int64)).view(U64)

    @guarded
    def fill(self, /, start: int, **columns: Addresses | IntValues) -> int:
        """Write records from ``start``; every column must be given, all of one length.

        Pointer columns take DevicePtrs, tensors or uint64 arrays; INT columns take 1-D
        integer arrays or lists. Returns the index after the last record written.
        """
        missing = set(self._cols) - set(columns)
        extra = set(columns) - set(self._cols)
        if missing or extra:
            raise PtrTypeError(
                f"fill() needs exactly the columns {list(self._cols)} "
                f"(missing {sorted(missing)}, unknown {sorted(extra)})"
            )
        vals = {n: self._column_values(n, v) for n, v in columns.items()}
        lengths = {n: v.shape[0] for n, v in vals.items()}
        count = next(iter(lengths.values()))
        if any(c != count for c in lengths.values()):
            raise LengthMismatchError(f"columns differ in length: {lengths}")
        first = self._span(start, int(count), "records")
        st = self._live()
        st.wait_host()
        for n, v in vals.items():
            st.np[first : first + count, self._pos[n]] = v
        return first + int(count)

    @guarded
    def __setitem__(self, row: int, record: Mapping[str, DevicePtr | int]) -> None:
        if not isinstance(record, Mapping):
            raise PtrTypeError(
                f"a PtrTable row takes a mapping of column names to values (got {describe(record)})"
            )
        self._index(row, "row")
        wrapped: dict[str, Addresses | IntValues] = {}
        for n, v in record.items():
            if n in self._cols and self._cols[n] is Column.PTR:
                if type(v) is not DevicePtr:
                    raise PtrTypeError(f"column {n!r} takes a DevicePtr (got {describe(v)})")
                wrapped[n] = [v]
            else:
                if type(v) is not int:
                    raise PtrTypeError(f"column {n!r} takes an int (got {describe(v)})")
                if not -SIGN_BIT <= v < SIGN_BIT:
                    raise AddressRangeError(f"column {n!r} value {v} does not fit int64")
                wrapped[n] = [v]
        self.fill(row, **wrapped)

    @guarded
    def __getitem__(self, row: int) -> dict[str, DevicePtr | int]:
        words = self._live().np[self._index(row, "row")].tolist()
        out: dict[str, DevicePtr | int] = {}
        for n, kind in self._cols.items():
            w = words[self._pos[n]]
            out[n] = DevicePtr(w) if kind is Column.PTR else (w - (1 << 64) if w >= SIGN_BIT else w)
        return out

    @guarded
    def column(self, name: str) -> U64Array | npt.NDArray[np.int64]:
        """Read-only view of one column: uint64 for PTR, int64 for INT (zero-copy)."""
        col = self._live().np[:, self.column_index(name)]
        if self._cols[name] is Column.PTR:
            return as_readonly(col)
        return as_readonly(col.view(np.int64))

    @guarded
    def numpy(self) -> U64Array:
        """Read-only uint64 view of the whole ``[capacity, ncols]`` host table."""
        return as_readonly(self._live().np)
