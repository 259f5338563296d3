"""``SizeBuffer``: a fixed-capacity table of byte counts, the partner of two PtrBuffers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import torch

from devptr._convert import uint_array, uint_value
from devptr._ptr import SIGN_BIT
from devptr._storage import Storage, as_readonly
from devptr._table_base import TableBase, guarded

I64Array = npt.NDArray[np.int64]
SizeValues = Sequence[int] | npt.NDArray[np.integer] | torch.Tensor
"""What :meth:`SizeBuffer.fill` takes: ints, a 1-D integer array or a CPU integer tensor."""


def size_array(values: object, where: str = "sizes") -> I64Array:
    """Validate byte counts (non-negative ints below 2**63) into a 1-D int64 array.

    :func:`devptr._convert.uint_array` with the int64 bound; the result may be a
    zero-copy view of the input.
    """
    arr, _ = uint_array(values, where, below=SIGN_BIT)
    return arr.view(np.int64)


class SizeBuffer(TableBase):
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

    __slots__ = ("_np",)

    def __init__(
        self,
        capacity: int,
        *,
        device: str | torch.device | None = None,
        pin_memory: bool | None = None,
    ) -> None:
        st = Storage(capacity, device=device, pin_memory=pin_memory)
        self._attach(st, st.rows)

    def _attach(self, storage: Storage, n: int) -> None:
        super()._attach(storage, n)
        self._np: I64Array = storage.np[:n].view(np.int64)

    @guarded
    def __getitem__(self, i: int) -> int:
        self._live()
        return int(self._np[self._index(i)])

    @guarded
    def __setitem__(self, i: int, value: int) -> None:
        st = self._live()
        k = self._index(i)
        value = uint_value(value, "a size", SIGN_BIT)
        st.wait_host()
        self._np[k] = value

    @guarded
    def fill(self, start: int, sizes: SizeValues) -> int:
        """Write byte counts from ``start``; return the index after the last one.

        ``sizes``: ints, a numpy integer array or a CPU integer tensor, validated whole
        (non-negative, below 2**63) before anything is written.
        """
        st = self._live()
        arr = size_array(sizes)
        first = self._span(start, int(arr.shape[0]))
        st.wait_host()
        end = first + int(arr.shape[0])
        self._np[first:end] = arr
        return end

    @guarded
    def writable(self) -> I64Array:
        """The host entries as a writable int64 array (zero-copy; no validation).

        For vectorised producers that validate on their own. Call it after the last
        :meth:`to_device` has been waited for (:meth:`fill` and item writes wait for you).
        """
        self._live().wait_host()
        return self._np

    @guarded
    def numpy(self) -> I64Array:
        """A read-only int64 view of the host entries (zero-copy)."""
        self._live()
        return as_readonly(self._np)

    def host(self) -> torch.Tensor:
        """The host entries as an int64 tensor (zero-copy)."""
        return self._host(torch.int64)

    def device(self) -> torch.Tensor:
        """The device mirror as an int64 tensor (what the last :meth:`to_device` copied)."""
        return self._mirror(torch.int64)

    @guarded
    def to_device(self, n: int | None = None, *, non_blocking: bool = True) -> torch.Tensor:
        """Copy the first ``n`` entries (default: all) to the device mirror in one copy.

        Returns the device view of those entries. Asynchronous with pinned host memory; the
        next write through this buffer waits for the copy.
        """
        return self._upload(n, torch.int64, non_blocking)


__all__ = ["SizeBuffer", "size_array"]
