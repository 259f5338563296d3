"""``PtrBuffer``: a fixed-capacity table of device addresses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar, overload

import numpy as np
import torch

from devptr._convert import U64Array, ptr_array
from devptr._encoding import Encoding, encoding_for
from devptr._errors import (
    CapacityError,
    DevPtrError,
    LengthMismatchError,
    PtrTypeError,
    StaleBufferError,
    describe,
)
from devptr._ptr import DevicePtr
from devptr._storage import Storage, as_readonly, check_encoding_arg
from devptr._strided import strided_addresses

CapT = TypeVar("CapT", bound=int)


class PtrBuffer(Generic[CapT]):
    """A table of ``capacity`` device addresses, stored as uint64 on the host.

    Memory: the buffer owns a host uint64 tensor (pinned when ``pin_memory`` is true, or
    when it is None and an accelerator is present) and, when ``device`` is given, a device
    mirror of the same size. :meth:`host`, :meth:`device` and :meth:`numpy` return
    zero-copy views of that memory in the encoding asked for; :meth:`to_device` is the
    only copy. Views taken from a pooled buffer are valid only while it is held.

    Parameters
    ----------
    capacity
        Number of entries, fixed for the buffer's life.
    device
        Where the device mirror lives (``"cuda"``, ``"xpu"``, ``"cpu"`` for tests), or None
        for a host-only buffer.
    pin_memory
        True: pin or raise; False: never pin; None: pin when an accelerator is present.

    Notes
    -----
    Entries are written as DevicePtrs (``buf[i] = p``), from sequences or uint64 arrays
    (:meth:`fill`) or computed (:meth:`fill_strided`). A raw int is a TypeError. A call
    that fails validates first and writes nothing. Indices are ``0 <= i < capacity``
    (no negative indexing: a ``-1`` slot id is a bug, not "the last entry").
    """

    __slots__ = ("__weakref__", "_n", "_np", "_st")

    def __init__(
        self,
        capacity: CapT,
        *,
        device: str | torch.device | None = None,
        pin_memory: bool | None = None,
    ) -> None:
        self._attach(Storage(capacity, device=device, pin_memory=pin_memory), capacity)

    def _attach(self, storage: Storage, n: int) -> None:
        self._st: Storage | None = storage
        self._n = n
        self._np: U64Array = storage.np[:n]

    @staticmethod
    def _over(storage: Storage, n: int) -> PtrBuffer[int]:
        buf: PtrBuffer[int] = object.__new__(PtrBuffer)
        buf._attach(storage, n)
        return buf

    def _storage(self) -> Storage:
        st = self._st
        if st is None:
            raise StaleBufferError("this PtrBuffer was released to its pool; acquire a new one")
        return st

    # -- size -------------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Number of entries."""
        return self._n

    def __len__(self) -> int:
        return self._n

    @property
    def device_type(self) -> torch.device | None:
        """The device of the mirror, or None for a host-only buffer."""
        return self._storage().device

    @property
    def is_pinned(self) -> bool:
        """Whether the host memory is pinned."""
        return self._storage().pinned

    def _default_encoding(self, encoding: Encoding | None) -> Encoding:
        if encoding is not None:
            check_encoding_arg(encoding)
            return encoding
        dev = self._storage().device
        return encoding_for(dev if dev is not None else "cpu")

    def _check_range(self, start: int, count: int) -> None:
        if type(start) is not int or not 0 <= start <= self._n:
            raise CapacityError(f"start must be an int in [0, {self._n}] (got {describe(start)})")
        if start + count > self._n:
            raise CapacityError(f"{count} entries from index {start} exceed capacity {self._n}")

    # -- element access ---------------------------------------------------------------
    @overload
    def __getitem__(self, i: int) -> DevicePtr: ...

    @overload
    def __getitem__(self, i: slice) -> list[DevicePtr]: ...

    def __getitem__(self, i: int | slice) -> DevicePtr | list[DevicePtr]:
        self._storage()
        if type(i) is int:
            if not 0 <= i < self._n:
                raise CapacityError(f"index {i} out of range for capacity {self._n}")
            return DevicePtr(int(self._np[i]))
        if isinstance(i, slice):
            return [DevicePtr(a) for a in self._np[i].tolist()]
        raise PtrTypeError(f"index must be an int or slice (got {describe(i)})")

    def __setitem__(self, i: int | slice, value: DevicePtr | Sequence[DevicePtr]) -> None:
        st = self._st
        if st is None:
            raise StaleBufferError("this PtrBuffer was released to its pool; acquire a new one")
        if type(value) is DevicePtr and type(i) is int and 0 <= i < self._n:
            if st._event is not None:
                st.wait_host()
            self._np[i] = value.addr
            return
        if isinstance(i, slice):
            start, stop, step = i.indices(self._n)
            if step != 1:
                raise PtrTypeError("slice assignment needs step 1")
            arr = ptr_array(value, "value")
            if arr.shape[0] != max(stop - start, 0):
                raise LengthMismatchError(
                    f"{arr.shape[0]} addresses for a slice of {max(stop - start, 0)} entries"
                )
            self.fill(start, arr)
            return
        if type(i) is not int:
            raise PtrTypeError(f"index must be an int or slice (got {describe(i)})")
        if not 0 <= i < self._n:
            raise CapacityError(f"index {i} out of range for capacity {self._n}")
        raise PtrTypeError(
            f"PtrBuffer entries are DevicePtr (got {describe(value)}); "
            "wrap raw addresses with DevicePtr(x) or DevicePtr.of(tensor)"
        )

    # -- bulk writes ------------------------------------------------------------------
    def fill(self, start: int, ptrs: object) -> int:
        """Write addresses from index ``start``; return the index after the last one.

        ``ptrs``: a sequence of DevicePtrs, of objects with ``data_ptr()`` (tensors), or a
        1-D uint64 array. Validated whole before anything is written.
        """
        st = self._storage()
        arr = ptr_array(ptrs)
        n = arr.shape[0]
        self._check_range(start, n)
        if st._event is not None:
            st.wait_host()
        self._np[start : start + n] = arr
        return start + int(n)

    def fill_strided(
        self, start: int, base: DevicePtr, index: object, stride: object, offset: object = 0
    ) -> int:
        """Write ``base + index * stride + offset`` (uint64, overflow-checked) from ``start``.

        ``index``: 1-D non-negative integers of any integer dtype; ``stride``/``offset``:
        non-negative ints or arrays of the same length. Returns the end index. Raises
        :class:`AddressOverflowError` (nothing written) when a result leaves [0, 2**64).
        """
        st = self._storage()
        n = len(index) if isinstance(index, (np.ndarray, list, tuple)) else None
        if n is not None:
            self._check_range(start, n)
            if st._event is not None:
                st.wait_host()
            strided_addresses(base, index, stride, offset, out=self._np[start : start + n])
            return start + n
        res = strided_addresses(base, index, stride, offset)
        self._check_range(start, int(res.shape[0]))
        if st._event is not None:
            st.wait_host()
        end = start + int(res.shape[0])
        self._np[start:end] = res
        return end

    def clear(self) -> None:
        """Set every entry to the null address."""
        st = self._storage()
        st.wait_host()
        self._np[:] = 0

    # -- views --------------------------------------------------------------------------
    def numpy(self) -> U64Array:
        """A read-only uint64 numpy view of the host entries (zero-copy)."""
        self._storage()
        return as_readonly(self._np)

    def host(self, encoding: Encoding | None = None) -> torch.Tensor:
        """The host entries as a tensor of ``encoding``'s dtype (zero-copy view).

        ``encoding`` defaults to :func:`encoding_for` the buffer's device (CPU: I64).
        """
        st = self._storage()
        enc = self._default_encoding(encoding)
        return st.host[: self._n].view(enc.torch_dtype)

    def device(self, encoding: Encoding | None = None) -> torch.Tensor:
        """The device mirror as a tensor of ``encoding``'s dtype (zero-copy view).

        Holds what the last :meth:`to_device` copied, not later host writes.
        """
        st = self._storage()
        if st.mirror is None:
            raise DevPtrError("this buffer has no device mirror: construct it with device=...")
        enc = self._default_encoding(encoding)
        return st.mirror[: self._n].view(enc.torch_dtype)

    def to_device(
        self, n: int | None = None, *, encoding: Encoding | None = None, non_blocking: bool = True
    ) -> torch.Tensor:
        """Copy the first ``n`` entries (default: all) to the device mirror in one copy.

        Returns the device view of those ``n`` entries. With pinned host memory the copy is
        asynchronous; the next host write through this buffer waits for it.
        """
        st = self._storage()
        count = self._n if n is None else n
        if type(count) is not int or not 0 <= count <= self._n:
            raise CapacityError(f"n must be an int in [0, {self._n}] (got {describe(n)})")
        enc = self._default_encoding(encoding)
        st.copy_to_device(count, non_blocking)
        return self.device(enc)[:count]

    def __repr__(self) -> str:
        if self._st is None:
            return "PtrBuffer(<released>)"
        dev = self._st.device
        return f"PtrBuffer(capacity={self._n}, device={str(dev) if dev else None}, pinned={self._st.pinned})"
