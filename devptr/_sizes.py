"""``SizeBuffer``: a fixed-capacity table of byte counts, the partner of two PtrBuffers."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

from devptr._errors import (
    AddressRangeError,
    CapacityError,
    DevPtrError,
    PtrTypeError,
    describe,
)
from devptr._ptr import DevicePtr
from devptr._storage import Storage, as_readonly

I64Array = npt.NDArray[np.int64]
_MAX = (1 << 63) - 1


def size_array(values: object, where: str = "sizes") -> I64Array:
    """Validate byte counts (non-negative ints below 2**63) into a 1-D int64 array.

    Accepts a list of ints, a numpy integer array or a CPU integer tensor. Floats, bools,
    DevicePtrs and negative values raise (a size is never an address).
    """
    if isinstance(values, torch.Tensor):
        if values.device.type != "cpu":
            raise PtrTypeError(f"{where}: expected host values (got a tensor on {values.device})")
        if values.dtype == torch.uint64:
            values = values.view(torch.int64).numpy().view(np.uint64)
        else:
            values = values.numpy()
    if isinstance(values, (DevicePtr, bool, int, str, bytes)):
        raise PtrTypeError(f"{where} must be a sequence of byte counts (got {describe(values)})")
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise PtrTypeError(f"{where} must be 1-D (got shape {arr.shape})")
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype == object:
        if not all(type(v) is int for v in arr):
            raise PtrTypeError(f"{where} must be ints (got {describe(values)})")
        if any(not 0 <= v <= _MAX for v in arr):
            raise AddressRangeError(f"{where} must be in [0, 2**63)")
        return arr.astype(np.int64)
    if arr.dtype.kind == "u":
        if int(arr.max()) > _MAX:
            raise AddressRangeError(f"{where} must be below 2**63 (got {int(arr.max()):#x})")
        return arr.astype(np.int64)
    if arr.dtype.kind == "i":
        if int(arr.min()) < 0:
            raise AddressRangeError(f"{where} must be non-negative (got {int(arr.min())})")
        return arr.astype(np.int64, copy=False)
    raise PtrTypeError(f"{where} must be integers (got dtype {arr.dtype})")


class SizeBuffer:
    """``capacity`` byte counts: int64 host memory plus an optional device mirror.

    Memory: the buffer owns a host int64 tensor (pinned when ``pin_memory`` is true, or when
    it is None and an accelerator is present) and, with ``device``, a device mirror of the
    same size. :meth:`host`, :meth:`device` and :meth:`numpy` are zero-copy views;
    :meth:`to_device` is the only copy. Same rules as :class:`devptr.PtrBuffer`: a failing
    call writes nothing, indices are ``0 <= i < capacity``.

    Parameters
    ----------
    capacity
        Number of entries, fixed for the buffer's life.
    device
        Where the device mirror lives, or None for a host-only buffer.
    pin_memory
        True: pin or raise; False: never pin; None: pin when an accelerator is present.
    """

    __slots__ = ("_n", "_np", "_st")

    def __init__(
        self,
        capacity: int,
        *,
        device: str | torch.device | None = None,
        pin_memory: bool | None = None,
    ) -> None:
        self._st = Storage(capacity, device=device, pin_memory=pin_memory)
        self._n = capacity
        self._np: I64Array = self._st.np.view(np.int64)

    @property
    def capacity(self) -> int:
        """Number of entries."""
        return self._n

    def __len__(self) -> int:
        return self._n

    @property
    def device_type(self) -> torch.device | None:
        """The device of the mirror, or None for a host-only buffer."""
        return self._st.device

    @property
    def is_pinned(self) -> bool:
        """Whether the host memory is pinned."""
        return self._st.pinned

    def _check_range(self, start: object, count: int) -> int:
        if type(start) is not int or not 0 <= start <= self._n:
            raise CapacityError(f"start must be an int in [0, {self._n}] (got {describe(start)})")
        if start + count > self._n:
            raise CapacityError(f"{count} entries from index {start} exceed capacity {self._n}")
        return start

    def __getitem__(self, i: int) -> int:
        if type(i) is not int or not 0 <= i < self._n:
            raise CapacityError(f"index {describe(i)} out of range for capacity {self._n}")
        return int(self._np[i])

    def __setitem__(self, i: int, value: int) -> None:
        if type(i) is not int or not 0 <= i < self._n:
            raise CapacityError(f"index {describe(i)} out of range for capacity {self._n}")
        if type(value) is not int:
            raise PtrTypeError(f"a size must be an int (got {describe(value)})")
        if not 0 <= value <= _MAX:
            raise AddressRangeError(f"a size must be in [0, 2**63) (got {value})")
        self._st.wait_host()
        self._np[i] = value

    def fill(self, start: int, sizes: object) -> int:
        """Write byte counts from ``start``; return the index after the last one.

        ``sizes``: ints, a numpy integer array or a CPU integer tensor, validated whole
        (non-negative, below 2**63) before anything is written.
        """
        arr = size_array(sizes)
        self._check_range(start, arr.shape[0])
        self._st.wait_host()
        end = start + int(arr.shape[0])
        self._np[start:end] = arr
        return end

    def writable(self) -> I64Array:
        """The host entries as a writable int64 array (zero-copy; no validation).

        For vectorised producers that validate on their own. Call it after the last
        :meth:`to_device` has been waited for (:meth:`fill` and item writes wait for you).
        """
        self._st.wait_host()
        return self._np

    def numpy(self) -> I64Array:
        """A read-only int64 view of the host entries (zero-copy)."""
        return as_readonly(self._np)

    def host(self) -> torch.Tensor:
        """The host entries as an int64 tensor (zero-copy)."""
        return self._st.host.view(torch.int64)

    def device(self) -> torch.Tensor:
        """The device mirror as an int64 tensor (what the last :meth:`to_device` copied)."""
        if self._st.mirror is None:
            raise DevPtrError("this buffer has no device mirror: construct it with device=...")
        return self._st.mirror.view(torch.int64)

    def to_device(self, n: int | None = None, *, non_blocking: bool = True) -> torch.Tensor:
        """Copy the first ``n`` entries (default: all) to the device mirror in one copy.

        Returns the device view of those entries. Asynchronous with pinned host memory; the
        next write through this buffer waits for the copy.
        """
        count = self._n if n is None else n
        if type(count) is not int or not 0 <= count <= self._n:
            raise CapacityError(f"n must be an int in [0, {self._n}] (got {describe(n)})")
        self._st.copy_to_device(count, non_blocking)
        return self.device()[:count]

    def __repr__(self) -> str:
        dev = self._st.device
        return f"SizeBuffer(capacity={self._n}, device={str(dev) if dev else None}, pinned={self._st.pinned})"


__all__ = ["SizeBuffer", "size_array"]
