"""``PtrBuffer``: a fixed-capacity table of device addresses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, overload

import numpy as np
import numpy.typing as npt
import torch
from typing_extensions import TypeVar

from devptr._convert import Addresses, U64Array, ptr_array
from devptr._errors import LengthMismatchError, PtrTypeError, describe
from devptr._ptr import DevicePtr
from devptr._storage import Storage, as_readonly
from devptr._strided import strided_addresses
from devptr._table_base import AddressTable, guarded

CapT = TypeVar("CapT", bound=int, default=int)
"""The capacity as a type (``PtrBuffer[Literal[72]]``); plain ``PtrBuffer`` means any."""


class PtrBuffer(AddressTable, Generic[CapT]):
    """A table of ``capacity`` device addresses, stored as uint64 on the host.

    Memory: the buffer owns a host uint64 tensor (pinned when ``pin_memory`` is true, or
    when it is None and an accelerator is present) and, when ``device`` is given, a device
    mirror of the same size. :meth:`host`, :meth:`device` and :meth:`numpy` return
    zero-copy views of that memory in the encoding asked for; :meth:`to_device` is the
    only copy. Views taken from a pooled buffer are valid only while it is held.

    Parameters
    ----------
    capacity
        Number of entries, fixed for the buffer's life (an int >= 0: anything else is a
        TypeError, a negative int an IndexError).
    device
        Where the device mirror lives (``"cuda"``, ``"xpu"``, ``"cpu"`` for tests), or None
        for a host-only buffer. A device torch cannot reach raises :class:`StateError`.
    pin_memory
        True: pin or raise; False: never pin; None: pin when an accelerator is present.

    Notes
    -----
    Entries are written as DevicePtrs (``buf[i] = p``), from sequences or uint64 arrays
    (:meth:`fill`) or computed (:meth:`fill_strided`). A raw int is a TypeError. A call
    that fails validates first and writes nothing. Indices are ``0 <= i < capacity`` and
    slice bounds ``0 <= b <= capacity`` (no negative indexing, no clamping: a ``-1`` slot
    id is a bug, not "the last entry"). ``PtrBuffer[N]`` names a capacity for type
    checkers; plain ``PtrBuffer`` means ``PtrBuffer[int]`` (any capacity).
    """

    __slots__ = ("_np",)

    def __init__(
        self,
        capacity: CapT,
        *,
        device: str | torch.device | None = None,
        pin_memory: bool | None = None,
    ) -> None:
        st = Storage(capacity, device=device, pin_memory=pin_memory)
        self._attach(st, st.rows)

    def _attach(self, storage: Storage, n: int) -> None:
        super()._attach(storage, n)
        self._np: U64Array = storage.np[:n]

    @staticmethod
    def _over(storage: Storage, n: int) -> PtrBuffer:
        buf: PtrBuffer = object.__new__(PtrBuffer)
        buf._attach(storage, n)
        return buf

    # -- element access ---------------------------------------------------------------
    @overload
    def __getitem__(self, i: int) -> DevicePtr: ...

    @overload
    def __getitem__(self, i: slice) -> list[DevicePtr]: ...

    def __getitem__(self, i: int | slice) -> DevicePtr | list[DevicePtr]:
        if type(i) is int and self._guard is None and self._st is not None and 0 <= i < self._n:
            return DevicePtr(int(self._np[i]))
        return self._get(i)

    @guarded
    def _get(self, i: int | slice) -> DevicePtr | list[DevicePtr]:
        self._live()
        if isinstance(i, slice):
            start, stop = self._slice(i)
            return [DevicePtr(a) for a in self._np[start:stop].tolist()]
        return DevicePtr(int(self._np[self._index(i)]))

    def __setitem__(self, i: int | slice, value: DevicePtr | Addresses) -> None:
        st = self._st
        if (
            type(value) is DevicePtr
            and type(i) is int
            and 0 <= i < self._n
            and st is not None
            and self._guard is None
        ):
            if st._event is not None:
                st.wait_host()
            self._np[i] = value.addr
            return
        g = self._guard
        if g is not None and type(value) is DevicePtr and type(i) is int:
            with g:  # a pooled handle: the same fast write, while the handle is held
                st = self._st
                if st is not None and 0 <= i < self._n:
                    if st._event is not None:
                        st.wait_host()
                    self._np[i] = value.addr
                    return
        self._set(i, value)

    @guarded
    def _set(self, i: int | slice, value: DevicePtr | Addresses) -> None:
        st = self._live()
        if isinstance(i, slice):
            start, stop = self._slice(i)
            arr = ptr_array(value, "value")
            if arr.shape[0] != stop - start:
                raise LengthMismatchError(
                    f"{arr.shape[0]} addresses for a slice of {stop - start} entries"
                )
            self.fill(start, arr)
            return
        k = self._index(i)
        if type(value) is DevicePtr:
            st.wait_host()
            self._np[k] = value.addr
            return
        raise PtrTypeError(
            f"PtrBuffer entries are DevicePtr (got {describe(value)}); "
            "wrap raw addresses with DevicePtr(x) or DevicePtr.of(tensor)"
        )

    # -- bulk writes ------------------------------------------------------------------
    @guarded
    def fill(self, start: int, ptrs: Addresses) -> int:
        """Write addresses from index ``start``; return the index after the last one.

        ``ptrs``: a sequence mixing DevicePtrs and objects with ``data_ptr()`` (tensors), a
        1-D uint64 array or CPU uint64 tensor. The addresses are copied in; validated whole
        before anything is written.
        """
        st = self._live()
        arr = ptr_array(ptrs)
        n = int(arr.shape[0])
        first = self._span(start, n)
        if st._event is not None:
            st.wait_host()
        self._np[first : first + n] = arr
        return first + n

    @guarded
    def fill_strided(
        self,
        start: int,
        base: DevicePtr,
        index: Sequence[int] | npt.NDArray[np.integer[Any]] | torch.Tensor,
        stride: int | Sequence[int] | npt.NDArray[np.integer[Any]],
        offset: int | Sequence[int] | npt.NDArray[np.integer[Any]] = 0,
    ) -> int:
        """Write ``base + index * stride + offset`` (uint64, overflow-checked) from ``start``.

        ``index``: 1-D non-negative integers of any integer dtype; ``stride``/``offset``:
        non-negative ints or arrays of the same length. Returns the end index. Raises
        :class:`AddressOverflowError` (nothing written) when a result leaves [0, 2**64).
        """
        st = self._live()
        n = len(index) if isinstance(index, (np.ndarray, list, tuple)) else None
        if n is not None:
            first = self._span(start, n)
            if st._event is not None:
                st.wait_host()
            strided_addresses(base, index, stride, offset, out=self._np[first : first + n])
            return first + n
        res = strided_addresses(base, index, stride, offset)
        first = self._span(start, int(res.shape[0]))
        if st._event is not None:
            st.wait_host()
        end = first + int(res.shape[0])
        self._np[first:end] = res
        return end

    @guarded
    def clear(self) -> None:
        """Set every entry to the null address."""
        st = self._live()
        st.wait_host()
        self._np[:] = 0

    # -- views (host/device/to_device: AddressTable) --------------------------------------
    @guarded
    def numpy(self) -> U64Array:
        """A read-only uint64 numpy view of the host entries (zero-copy)."""
        self._live()
        return as_readonly(self._np)
