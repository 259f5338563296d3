"""EC connector descriptor buffers: ``(src, dst, nbytes)`` triples over one PtrBuffer.

A :class:`DescriptorBuffers` handle holds ``capacity`` copies. Its memory is one pooled
:class:`devptr.PtrBuffer` of ``3 * capacity`` uint64 entries laid out as three contiguous
columns: ``[0, cap)`` sources, ``[cap, 2*cap)`` destinations, ``[2*cap, 3*cap)`` byte counts.
Each column is a contiguous 1-D view, which is what ``swap_blocks_batch`` consumers index.

Byte counts are validated to lie in ``[0, 2**63)``, so the int64 and the uint64 view of the
sizes column read the same value: one storage serves the CUDA/ROCm op (int64 src, dst
*and* sizes) and the XPU op (uint64) without a per-platform dtype.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from devptr import DevicePtr, Encoding, PtrBuffer, PtrBufferPool, addresses, encoding_for
from devptr._convert import U64, U64Array, ptr_array
from devptr._errors import (
    AddressRangeError,
    CapacityError,
    LengthMismatchError,
    PtrTypeError,
    StaleBufferError,
    describe,
)
from devptr._ptr import ADDR_LIMIT, SIGN_BIT
from devptr.adapters.ec_connector._checks import check_extent, default_device

if TYPE_CHECKING:
    from devptr.adapters.ec_connector._swap import SwapPath



_max = np.maximum.reduce
_min = np.minimum.reduce


def byte_count_array(byte_counts: object, n: int) -> tuple[U64Array, int]:
    """Validate ``n`` byte counts (non-negative integers below 2**63): ``(uint64 array, max)``.

    Accepts a 1-D integer numpy array, a CPU integer tensor or a sequence of ints.
    Floats, bools and raw objects raise :class:`PtrTypeError`; negative values and values
    that do not fit an int64 raise :class:`AddressRangeError`. The array may be a
    zero-copy view of the input (non-negative int64 values have the same bits).
    """
    if isinstance(byte_counts, torch.Tensor):
        if byte_counts.device.type != "cpu":
            raise PtrTypeError(f"byte_counts must be on the CPU (got {byte_counts.device})")
        byte_counts = byte_counts.numpy()
    arr = byte_counts if isinstance(byte_counts, np.ndarray) else np.asarray(byte_counts)
    if arr.ndim != 1:
        raise PtrTypeError(f"byte_counts must be 1-D (got shape {arr.shape})")
    if arr.shape[0] != n:
        raise LengthMismatchError(f"{n} sources and destinations but {arr.shape[0]} byte counts")
    if n == 0:
        return np.empty(0, dtype=U64), 0
    kind = arr.dtype.kind
    if kind == "i":
        # One reduction: viewed as uint64, a negative int64 reads >= 2**63, and
        # non-negative values keep their bits (so the view is also the result, no copy).
        u = arr.view(U64) if arr.dtype == np.int64 else arr.astype(np.int64).view(U64)
        hi = int(_max(u))
        if hi >= SIGN_BIT:
            raise AddressRangeError(f"byte counts must be non-negative (got {int(_min(arr))})")
        return u, hi
    if kind == "u":
        hi = int(_max(arr))
        if hi >= SIGN_BIT:
            raise AddressRangeError(
                f"byte counts must be below 2**63 to fit the int64 sizes column (got {hi:#x})"
            )
        return (arr if arr.dtype == U64 else arr.astype(U64)), hi
    if kind == "O" and all(type(v) is int for v in arr.tolist()):
        vals = arr.tolist()
        if min(vals) < 0:
            raise AddressRangeError(f"byte counts must be non-negative (got {min(vals)})")
        if max(vals) >= SIGN_BIT:
            raise AddressRangeError(f"byte counts must be below 2**63 (got {max(vals):#x})")
        return np.array(vals, dtype=U64), max(vals)
    raise PtrTypeError(f"byte_counts must be integers (got dtype {arr.dtype})")


def _index_array(values: object, name: str) -> np.ndarray:
    arr = values if isinstance(values, np.ndarray) else np.asarray(values)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise PtrTypeError(f"{name} must be a 1-D integer array (got {describe(values)})")
    return arr


_EMPTY: U64Array = np.empty(0, dtype=U64)


def _as_u64(idx: np.ndarray) -> U64Array:
    """A validated non-negative integer index as uint64 (int64: a zero-copy view).

    Never multiply an int64 array by a uint64 scalar: numpy 2 promotes that to float64.
    """
    if idx.dtype == U64:
        return idx
    if idx.dtype == np.int64:
        return idx.view(U64)
    return idx.astype(U64)


def _max_index(arr: np.ndarray, name: str) -> int:
    """The largest index; raises for a negative one (one extra reduction for signed input)."""
    if arr.dtype.kind == "i":
        lo = int(_min(arr))
        if lo < 0:
            raise AddressRangeError(f"{name} must be non-negative (got {lo})")
    return int(_max(arr))


class DescriptorBuffers:
    """Room for ``capacity`` copies ``(source, destination, byte count)``.

    Obtained from :meth:`DescriptorBufferPool.acquire`; valid until released. The handle
    does not own memory: its pooled :class:`devptr.PtrBuffer` does (uint64 host memory,
    pinned when an accelerator is present, plus a device mirror when the pool has a
    device). Every view it returns is a zero-copy view of that memory, valid only while
    the handle is held; after :meth:`DescriptorBufferPool.release` every method raises
    :class:`devptr.StaleBufferError`.
    """

    __slots__ = ("_backend", "_buf", "_cap", "_cols", "_device", "_mirror")

    def __init__(self, buf: PtrBuffer[int], capacity: int, backend: str, device: torch.device) -> None:
        self._buf: PtrBuffer[int] | None = buf
        self._cap = capacity
        self._backend = backend
        self._device = device
        self._mirror = device.type != "cpu"
        # Writable uint64 views of the three columns (zero-copy, over the pooled storage).
        # Writes go here after validation; with a device mirror they first wait for an
        # in-flight to_device copy (a zero-length PtrBuffer.fill, which does that wait).
        # Dropped on release, so a stale handle cannot reach the storage.
        whole = buf.host(Encoding.U64).numpy()
        self._cols: tuple[U64Array, U64Array, U64Array] | None = (
            whole[:capacity],
            whole[capacity : 2 * capacity],
            whole[2 * capacity : 3 * capacity],
        )

    # -- state ----------------------------------------------------------------------
    def _live(self) -> PtrBuffer[int]:
        buf = self._buf
        if buf is None:
            raise StaleBufferError("these DescriptorBuffers were released to their pool; acquire new ones")
        return buf

    @property
    def capacity(self) -> int:
        """Number of copies these buffers hold."""
        return self._cap

    @property
    def backend(self) -> str:
        """Device type whose ``swap_blocks_batch`` op consumes the descriptors."""
        return self._backend

    @property
    def device(self) -> torch.device:
        """Where the copies run (``cpu`` on hosts without an accelerator)."""
        return self._device

    @property
    def encoding(self) -> Encoding:
        """The encoding the backend's op reads: :func:`devptr.encoding_for` ``backend``."""
        return encoding_for(self._backend)

    @property
    def is_released(self) -> bool:
        """Whether the handle went back to its pool."""
        return self._buf is None

    # -- writes ---------------------------------------------------------------------
    def add_copies(self, first: int, sources: object, destinations: object, byte_counts: object) -> int:
        """Store a batch of copies, the first at index ``first``; return the end index.

        Parameters
        ----------
        first
            Index of the first copy, ``0 <= first <= capacity``.
        sources, destinations
            Addresses: sequences of :class:`devptr.DevicePtr` (or of tensors), or 1-D uint64
            arrays (as :func:`devptr.addresses` returns). int64 arrays are refused: their
            sign is ambiguous.
        byte_counts
            Non-negative integers below 2**63, one per copy.

        Notes
        -----
        The inputs are copied into the buffers (no reference is kept). Everything is
        validated first: lengths, capacity, byte counts, and that no copy runs past 2**64;
        on any error nothing is written.
        """
        buf = self._live()
        src = ptr_array(sources, "sources")
        dst = ptr_array(destinations, "destinations")
        n = int(src.shape[0])
        if dst.shape[0] != n:
            raise LengthMismatchError(f"{n} sources but {dst.shape[0]} destinations")
        sizes, top = byte_count_array(byte_counts, n)
        cap = self._cap
        if type(first) is not int or not 0 <= first <= cap:
            raise CapacityError(f"first must be an int in [0, {cap}] (got {describe(first)})")
        if first + n > cap:
            raise CapacityError(f"{n} copies from index {first} exceed the capacity of {cap} copies")
        if n == 0:
            return first
        check_extent(src, sizes, "source", top)
        check_extent(dst, sizes, "destination", top)
        if self._mirror:
            buf.fill(first, _EMPTY)  # a host write through the buffer: waits for to_device
        src_col, dst_col, size_col = self._cols  # type: ignore[misc]  # live handle
        end: int = first + n
        src_col[first:end] = src
        dst_col[first:end] = dst
        size_col[first:end] = sizes
        return end

    def add_strided_copies(
        self,
        first: int,
        src_base: DevicePtr,
        src_index: object,
        dst_base: DevicePtr,
        dst_index: object,
        stride: int,
        byte_counts: object,
    ) -> int:
        """Store copies ``src_base + src_index[i] * stride -> dst_base + dst_index[i] * stride``.

        The block-run form of :meth:`add_copies`, for the hot path: the addresses are
        computed in uint64 directly into the buffers (no temporary address arrays), the
        same arithmetic as :func:`devptr.addresses`. Same validation, same guarantee: on
        any error nothing is written. Returns the end index.

        ``src_index``/``dst_index``: 1-D non-negative integer arrays of one length (uint64,
        as :func:`coalesce_runs` returns, saves a sign check); ``stride``: a non-negative
        int (the block size); ``byte_counts``: as for :meth:`add_copies`.
        """
        buf = self._buf
        if buf is None:
            raise StaleBufferError("these DescriptorBuffers were released to their pool; acquire new ones")
        if type(src_base) is not DevicePtr or type(dst_base) is not DevicePtr:
            bad = src_base if type(src_base) is not DevicePtr else dst_base
            raise PtrTypeError(f"src_base and dst_base must be DevicePtrs (got {describe(bad)})")
        if type(stride) is not int or stride < 0:
            raise AddressRangeError(f"stride must be a non-negative int (got {describe(stride)})")
        si = src_index if type(src_index) is np.ndarray else _index_array(src_index, "src_index")
        di = dst_index if type(dst_index) is np.ndarray else _index_array(dst_index, "dst_index")
        n = si.shape[0]
        if si.ndim != 1 or di.shape != (n,) or si.dtype.kind not in "iu" or di.dtype.kind not in "iu":
            _index_array(si, "src_index")
            _index_array(di, "dst_index")
            raise LengthMismatchError(f"{n} source indices but {di.shape[0]} destination indices")
        if type(byte_counts) is np.ndarray and byte_counts.dtype == U64 and byte_counts.shape == (n,) and n:
            sizes, top = byte_counts, int(_max(byte_counts))  # the common case, inline
            if top >= SIGN_BIT:
                byte_count_array(sizes, n)  # raises with the message
        else:
            sizes, top = byte_count_array(byte_counts, n)
        cap = self._cap
        if type(first) is not int or first < 0 or first + n > cap:
            raise CapacityError(
                f"{n} copies from index {describe(first)} do not fit the capacity of {cap} copies"
            )
        if n == 0:
            return first
        # One bound per side, in Python ints: the largest address plus the largest count
        # (at least 1, so the address itself stays below 2**64). When it passes 2**64
        # some entry may still fit: decide exactly through the core (raises there).
        room = ADDR_LIMIT - (top or 1)
        smax = int(_max(si)) if si.dtype == U64 else _max_index(si, "src_index")
        dmax = int(_max(di)) if di.dtype == U64 else _max_index(di, "dst_index")
        if src_base.addr + smax * stride > room or dst_base.addr + dmax * stride > room:
            return self.add_copies(
                first, addresses(src_base, si, stride), addresses(dst_base, di, stride), sizes
            )
        # Validated: nothing below can overflow. Same uint64 arithmetic as the core's
        # devptr.addresses (base + index * stride), computed in place into the columns.
        if self._mirror:
            buf.fill(first, _EMPTY)  # a host write through the buffer: waits for to_device
        src_col, dst_col, size_col = self._cols  # type: ignore[misc]  # live handle
        end: int = first + n
        out = src_col[first:end]
        np.multiply(si if si.dtype == U64 else _as_u64(si), stride, out=out)
        np.add(out, src_base.addr, out=out)
        out = dst_col[first:end]
        np.multiply(di if di.dtype == U64 else _as_u64(di), stride, out=out)
        np.add(out, dst_base.addr, out=out)
        size_col[first:end] = sizes
        return end

    # -- views ----------------------------------------------------------------------
    def host(
        self, n: int | None = None, encoding: Encoding | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(src, dst, sizes)`` host tensors of the first ``n`` copies (zero-copy views).

        ``encoding`` defaults to :attr:`encoding` (int64 for CUDA/ROCm ops, uint64 for XPU);
        all three tensors share it, sizes included.
        """
        buf = self._live()
        count = self._count(n)
        enc = self.encoding if encoding is None else encoding
        cap = self._cap
        t = buf.host(enc)
        return t[:count], t[cap : cap + count], t[2 * cap : 2 * cap + count]

    def to_device(
        self, n: int | None = None, encoding: Encoding = Encoding.U64
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Copy the first ``n`` copies' descriptors to the device mirror; return its views.

        One host-to-device copy (asynchronous from pinned memory; the next write to these
        buffers waits for it). Needs a pool with a non-CPU device.
        """
        buf = self._live()
        count = self._count(n)
        cap = self._cap
        if buf.device_type is None:
            raise PtrTypeError("these buffers have no device mirror (their pool's device is the CPU)")
        buf.to_device(2 * cap + count if count else 0, encoding=encoding)
        t = buf.device(encoding)
        return t[:count], t[cap : cap + count], t[2 * cap : 2 * cap + count]

    def numpy(self, n: int | None = None) -> tuple[U64Array, U64Array, U64Array]:
        """Read-only uint64 numpy views ``(src, dst, sizes)`` of the first ``n`` copies."""
        buf = self._live()
        count = self._count(n)
        cap = self._cap
        a = buf.numpy()
        return a[:count], a[cap : cap + count], a[2 * cap : 2 * cap + count]

    def _count(self, n: int | None) -> int:
        if n is None:
            return self._cap
        if type(n) is not int or not 0 <= n <= self._cap:
            raise CapacityError(f"n must be an int in [0, {self._cap}] (got {describe(n)})")
        return n

    @property
    def src_ptrs(self) -> torch.Tensor:
        """All sources, as a host tensor in :attr:`encoding` (vLLM's attribute name)."""
        return self.host()[0]

    @property
    def dst_ptrs(self) -> torch.Tensor:
        """All destinations, as a host tensor in :attr:`encoding`."""
        return self.host()[1]

    @property
    def sizes(self) -> torch.Tensor:
        """All byte counts, as a host tensor in :attr:`encoding` (same values either way)."""
        return self.host()[2]

    def swap(self, n: int, *, is_src_access_order_any: bool = False, path: SwapPath = "auto") -> None:
        """Run the first ``n`` copies: ``swap_blocks_batch`` over these buffers.

        See :func:`devptr.adapters.ec_connector.swap_blocks_batch` for which path runs.
        The buffers must stay held until the copies finished (stream order on a device).
        """
        from devptr.adapters.ec_connector._swap import swap_buffers

        swap_buffers(self, n, is_src_access_order_any=is_src_access_order_any, path=path)

    def _release(self) -> PtrBuffer[int]:
        buf = self._live()
        self._buf = None
        self._cols = None
        return buf

    def __repr__(self) -> str:
        state = "released" if self._buf is None else f"capacity={self._cap}"
        return f"DescriptorBuffers({state}, backend={self._backend!r}, device={self._device})"


class DescriptorBufferPool:
    """Reusable :class:`DescriptorBuffers`, the most recently released first.

    Built on :class:`devptr.PtrBufferPool`: ``acquire(n)`` reuses released storage of at
    least ``3 * n`` entries (LIFO) or allocates new; ``release(bufs)`` invalidates the
    handle (a second release or any later use raises :class:`devptr.StaleBufferError`).

    Parameters
    ----------
    device
        Where the copies run. Default: the current accelerator, else the CPU. A non-CPU
        device gives every buffer a device mirror for the portable kernel path.
    backend
        Device type of the consumer op (``"cuda"``, ``"xpu"``...), which fixes the
        encoding handed out (:func:`devptr.encoding_for`) and the registered op
        dispatched to. Default: ``device``'s type. Set it to build another backend's
        descriptors on this host (tests, demos).
    pin_memory
        As for :class:`devptr.PtrBuffer` (None: pin when an accelerator is present).
    min_capacity
        Smallest number of copies a new buffer holds.
    """

    def __init__(
        self,
        device: str | torch.device | None = None,
        *,
        backend: str | None = None,
        pin_memory: bool | None = None,
        min_capacity: int = 0,
    ) -> None:
        dev = default_device() if device is None else torch.device(device)
        if dev.type == "cuda" and dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        self._device = dev
        self._backend = dev.type if backend is None else backend
        encoding_for(self._backend)  # unknown backend: fail here, not at first use
        if type(min_capacity) is not int or min_capacity < 0:
            raise CapacityError(f"min_capacity must be a non-negative int (got {describe(min_capacity)})")
        self._pool = PtrBufferPool(
            3 * min_capacity,
            device=None if dev.type == "cpu" else dev,
            pin_memory=pin_memory,
        )

    @property
    def device(self) -> torch.device:
        """Where the copies run."""
        return self._device

    @property
    def backend(self) -> str:
        """Device type of the consumer op."""
        return self._backend

    @property
    def allocated(self) -> int:
        """Number of storages allocated so far (stays flat when buffers are reused)."""
        return self._pool.allocated

    @property
    def held(self) -> int:
        """Number of buffers currently acquired."""
        return self._pool.held

    def acquire(self, n: int) -> DescriptorBuffers:
        """Buffers for ``n`` copies that no other holder has."""
        if type(n) is not int or n < 0:
            raise CapacityError(f"n must be a non-negative int (got {describe(n)})")
        return DescriptorBuffers(self._pool.acquire(3 * n), n, self._backend, self._device)

    def release(self, bufs: DescriptorBuffers) -> None:
        """Return ``bufs`` to the pool and invalidate the handle."""
        if not isinstance(bufs, DescriptorBuffers):
            raise PtrTypeError(f"release() takes DescriptorBuffers (got {describe(bufs)})")
        if bufs._buf is None:
            raise StaleBufferError("these DescriptorBuffers were already released")
        self._pool.release(bufs._buf)  # raises for buffers of another pool
        bufs._release()
