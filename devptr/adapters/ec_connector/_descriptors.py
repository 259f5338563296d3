"""EC connector descriptor buffers: ``(src, dst, nbytes)`` triples on the core's table base.

A :class:`DescriptorBuffers` handle holds ``capacity`` copies. It is a table of the core's
one table base (``devptr._table_base.TableBase``: range checks, views, the stale-handle
check) over pooled storage (:class:`devptr.PtrBufferPool`) of ``3 * capacity`` uint64
entries laid out as three contiguous columns: ``[0, cap)`` sources, ``[cap, 2*cap)``
destinations, ``[2*cap, 3*cap)`` byte counts.
Each column is a contiguous 1-D view, which is what ``swap_blocks_batch`` consumers index.

Byte counts are validated to lie in ``[0, 2**63)``, so the int64 and the uint64 view of the
sizes column read the same value: one storage serves the CUDA/ROCm op (int64 src, dst
*and* sizes) and the XPU op (uint64) without a per-platform dtype.

Validated once, when stored: every row of a handle is either zero (the pool hands storage
over zeroed) or was written by ``add_*``, which check what they write; so ``swap`` does not
scan the tables again (:meth:`DescriptorBuffers._batch_facts`). Two things make a handle
*unchecked* for the rest of its life, and then every ``swap`` validates the whole batch as
``swap_blocks_batch`` does: a writable view handed out (``host()``, ``src_ptrs``,
``dst_ptrs``, ``sizes``: a write through it is not seen), and a stored copy with bytes and
a null address (allowed in the table, refused by ``swap`` with the same error as before).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt
import torch

from devptr import (
    DevicePtr,
    Encoding,
    LengthMismatchError,
    PtrBufferPool,
    PtrTypeError,
    StateError,
    addresses,
    encoding_for,
)
from devptr._core_api import (
    ADDR_LIMIT,
    SIGN_BIT,
    U64,
    Addresses,
    Storage,
    TableBase,
    U64Array,
    current_device,
    describe,
    guarded,
    index_value,
    ptr_array,
    resolve_device,
    uint_array,
    uint_value,
)
from devptr.adapters.ec_connector._checks import check_extent
from devptr.adapters.ec_connector._swap import BatchFacts, SwapPath, Views, swap_buffers, validate

_max = np.maximum.reduce
_min = np.minimum.reduce
_sum = np.add.reduce

_Col = TypeVar("_Col", torch.Tensor, U64Array)


def _split(whole: _Col, capacity: int, n: int | None = None) -> tuple[_Col, _Col, _Col]:
    """The src, dst and sizes columns of a descriptor storage (three runs of ``capacity``
    words each, in that order): their first ``n`` entries (None: all)."""
    n = capacity if n is None else n
    return whole[:n], whole[capacity : capacity + n], whole[2 * capacity : 2 * capacity + n]


ByteCounts = Sequence[int] | npt.NDArray[np.integer] | torch.Tensor
"""Byte counts as callers pass them: ints, a 1-D integer array or a CPU integer tensor."""
IndexValues = Sequence[int] | npt.NDArray[np.integer]
"""Block indices: ints or a 1-D integer array (uint64 saves a sign check)."""


def byte_count_array(byte_counts: object, n: int) -> tuple[U64Array, int]:
    """Validate ``n`` byte counts (non-negative integers below 2**63): ``(uint64 array, max)``.

    :func:`devptr._convert.uint_array` with the int64 bound, plus the length check; the
    array may be a zero-copy view of the input.
    """
    arr, hi = uint_array(byte_counts, "byte_counts", below=SIGN_BIT)
    if arr.shape[0] != n:
        raise LengthMismatchError(f"{n} sources and destinations but {arr.shape[0]} byte counts")
    return arr, hi


class DescriptorBuffers(TableBase):
    """Room for ``capacity`` copies ``(source, destination, byte count)``.

    Obtained from :meth:`DescriptorBufferPool.acquire`; valid until released. A table on
    the core's one table base (:class:`devptr._table_base.TableBase`) over pooled storage:
    uint64 host memory, pinned when an accelerator is present, plus a device mirror when
    the pool has a device; the handle does not own it. Every view it returns is a
    zero-copy view of that memory, valid only while the handle is held; after
    :meth:`DescriptorBufferPool.release` every method raises :class:`devptr.StaleBufferError`.
    """

    __slots__ = (
        "_backend",
        "_cols",
        "_device",
        "_kernel_cols",
        "_known",
        "_on_cuda",
        "_read",
        "_stored",
        "_unchecked",
    )

    def __init__(self, storage: Storage, capacity: int, backend: str, device: torch.device) -> None:
        self._attach(storage, capacity)
        self._backend = backend
        self._device = device
        self._on_cuda = device.type == "cuda"  # read per swap; torch.device.type costs ~0.5 us
        # Writable uint64 views of the three columns (zero-copy, over the pooled storage).
        # Writes go here after validation; with a device mirror they first wait for an
        # in-flight to_device copy. Dropped on release, so a stale handle cannot reach them.
        whole = storage.np
        self._cols: tuple[U64Array, U64Array, U64Array] | None = _split(whole, capacity)
        ro = whole.view()
        ro.flags.writeable = False
        # Read-only views of the same columns (numpy(), the swap paths).
        self._read = _split(ro, capacity)
        # The kernel's view of the columns, whole capacity (made at the first launch).
        self._kernel_cols: Views | None = None
        # Validation state (module doc): True once a row may hold what add_* did not check.
        self._unchecked = False
        # (end, largest byte count) of the rows add_* wrote contiguously from 0, or None.
        self._stored: tuple[int, int] | None = (0, 0)
        # (n, facts) of the last swap's batch, until the next write.
        self._known: tuple[int, BatchFacts] | None = None

    # -- state ----------------------------------------------------------------------
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
        return self._st is None

    # -- writes ---------------------------------------------------------------------
    @guarded
    def add_copies(
        self, first: int, sources: Addresses, destinations: Addresses, byte_counts: ByteCounts
    ) -> int:
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
        st = self._live()
        src = ptr_array(sources, "sources")
        dst = ptr_array(destinations, "destinations")
        n = int(src.shape[0])
        if dst.shape[0] != n:
            raise LengthMismatchError(f"{n} sources but {dst.shape[0]} destinations")
        sizes, top = byte_count_array(byte_counts, n)
        first = self._span(first, n, "copies", "first")
        if n == 0:
            return first
        check_extent(src, sizes, "source", top)
        check_extent(dst, sizes, "destination", top)
        if st._event is not None:
            st.wait_host()  # an in-flight to_device copy still reads the host memory
        src_col, dst_col, size_col = self._cols  # type: ignore[misc]  # live handle
        end: int = first + n
        src_col[first:end] = src
        dst_col[first:end] = dst
        size_col[first:end] = sizes
        self._wrote(first, end, top, not (int(_min(src)) and int(_min(dst))))
        return end

    @guarded
    def add_strided_copies(
        self,
        first: int,
        src_base: DevicePtr,
        src_index: IndexValues,
        dst_base: DevicePtr,
        dst_index: IndexValues,
        stride: int,
        byte_counts: ByteCounts,
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
        st = self._live()
        if type(src_base) is not DevicePtr or type(dst_base) is not DevicePtr:
            bad = src_base if type(src_base) is not DevicePtr else dst_base
            raise PtrTypeError(f"src_base and dst_base must be DevicePtrs (got {describe(bad)})")
        stride = uint_value(stride, "stride")
        si, smax = uint_array(src_index, "src_index")
        di, dmax = uint_array(dst_index, "dst_index")
        n = si.shape[0]
        if di.shape[0] != n:
            raise LengthMismatchError(f"{n} source indices but {di.shape[0]} destination indices")
        if type(byte_counts) is np.ndarray and byte_counts.dtype == U64 and byte_counts.shape == (n,) and n:
            sizes, top = byte_counts, int(_max(byte_counts))  # the common case, inline
            if top >= SIGN_BIT:
                byte_count_array(sizes, n)  # raises with the message
        else:
            sizes, top = byte_count_array(byte_counts, n)
        first = self._span(first, int(n), "copies", "first")
        if n == 0:
            return first
        # One bound per side, in Python ints: the largest address plus the largest count
        # (at least 1, so the address itself stays below 2**64). When it passes 2**64
        # some entry may still fit: decide exactly through the core (raises there).
        room = ADDR_LIMIT - (top or 1)
        if src_base.addr + smax * stride > room or dst_base.addr + dmax * stride > room:
            return self.add_copies(
                first, addresses(src_base, si, stride), addresses(dst_base, di, stride), sizes
            )
        # Validated: nothing below can overflow. Same uint64 arithmetic as the core's
        # devptr.addresses (base + index * stride), computed in place into the columns.
        if st._event is not None:
            st.wait_host()  # an in-flight to_device copy still reads the host memory
        src_col, dst_col, size_col = self._cols  # type: ignore[misc]  # live handle
        end: int = first + n
        out = src_col[first:end]
        np.multiply(si, stride, out=out)
        np.add(out, src_base.addr, out=out)
        out = dst_col[first:end]
        np.multiply(di, stride, out=out)
        np.add(out, dst_base.addr, out=out)
        size_col[first:end] = sizes
        # no wrap (checked above): an address is null only where its base is
        if first == 0 and src_base.addr and dst_base.addr:  # the worker's case, inline
            self._known = None
            self._stored = (end, top)
        else:
            self._wrote(first, end, top, not (src_base.addr and dst_base.addr))
        return end

    def _wrote(self, first: int, end: int, top: int, maybe_null: bool) -> None:
        """Keep the validation state after ``add_*`` stored rows ``[first, end)`` whose
        largest byte count is ``top``; ``maybe_null``: some address may be 0 (then a copy
        with bytes and a null address leaves the handle unchecked: ``swap`` refuses it)."""
        self._known = None
        stored = self._stored
        if first == 0:
            self._stored = (end, top)
        elif stored is not None and first == stored[0]:
            self._stored = (end, max(stored[1], top))
        else:
            self._stored = None
        if maybe_null and not self._unchecked:
            s, d, k = (c[first:end] for c in self._read)
            self._unchecked = bool(((k != 0) & ((s == 0) | (d == 0))).any())

    def _batch_facts(self, n: int) -> BatchFacts:
        """The byte-count facts of the first ``n`` copies for ``swap``: no scan of the
        addresses while every row is checked (the sum of the byte counts once per batch
        and write; the largest from ``add_*`` when they stored exactly these rows), else
        :func:`validate` over the batch (which raises on a bad copy)."""
        self._live()
        if self._unchecked:
            return validate(*self._np_views(n))
        known = self._known
        if known is not None and known[0] == n:
            return known[1]
        k = self._read[2][:n]
        stored = self._stored
        top = stored[1] if stored is not None and stored[0] == n else (int(_max(k)) if n else 0)
        # exact while n * top < 2**64 (always, for real batches)
        total = int(_sum(k)) if n * top < ADDR_LIMIT else sum(k.tolist())
        facts = BatchFacts(top, total, None)
        self._known = (n, facts)
        return facts

    def _device_columns(self, n: int) -> Views:
        """The kernel's tables: the first ``n`` copies' descriptors uploaded to the mirror
        in one copy (:meth:`TableBase._upload`), and the mirror's three uint64 columns at
        full capacity (made once; the kernel reads the first ``n`` entries). Without a
        mirror (the CPU, under the interpreter), the host columns."""
        cols = self._kernel_cols
        st = self._live()
        if st.mirror is None:
            if cols is None:
                cols = self._kernel_cols = _split(st.host.view(torch.uint64), self._n)
            return cols
        whole = self._upload(n, torch.uint64, True, columns=3)
        if cols is None:
            cols = self._kernel_cols = _split(whole, self._n)
        return cols

    # -- views ----------------------------------------------------------------------
    @guarded
    def host(
        self, n: int | None = None, encoding: Encoding | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(src, dst, sizes)`` host tensors of the first ``n`` copies (zero-copy views).

        ``encoding`` defaults to :attr:`encoding` (int64 for CUDA/ROCm ops, uint64 for XPU);
        all three tensors share it, sizes included. The views are writable: from this call
        on, every :meth:`swap` of this handle validates its whole batch (a write through them
        bypasses ``add_*``'s checks).
        """
        views = self._host_views(n, encoding)
        self._unchecked = True
        return views

    def _host_views(self, n: int | None, encoding: Encoding | None) -> Views:
        """:meth:`host` for the swap paths, which write nothing through the views."""
        st = self._live()
        count = self._count(n)
        enc = self.encoding if encoding is None else encoding
        return _split(st.host.view(enc.torch_dtype), self._n, count)

    @guarded
    def to_device(
        self, n: int | None = None, encoding: Encoding = Encoding.U64
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Copy the first ``n`` copies' descriptors to the device mirror; return its views.

        One host-to-device copy (asynchronous from pinned memory; the next write to these
        buffers waits for it). Needs a pool with a non-CPU device.
        """
        st = self._live()
        if st.mirror is None:
            raise StateError("these buffers have no device mirror (their pool's device is the CPU)")
        count = self._count(n)
        return _split(self._upload(count, encoding.torch_dtype, True, columns=3), self._n, count)

    @guarded
    def numpy(self, n: int | None = None) -> tuple[U64Array, U64Array, U64Array]:
        """Read-only uint64 numpy views ``(src, dst, sizes)`` of the first ``n`` copies."""
        self._live()
        return self._np_views(self._count(n))

    def _np_views(self, n: int) -> tuple[U64Array, U64Array, U64Array]:
        """:meth:`numpy` for the swap paths (``n`` checked, the handle live)."""
        s, d, k = self._read
        return s[:n], d[:n], k[:n]

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

    @guarded
    def swap(self, n: int, *, is_src_access_order_any: bool = False, path: SwapPath = "auto") -> None:
        """Run the first ``n`` copies: ``swap_blocks_batch`` over these buffers.

        See :func:`devptr.adapters.ec_connector.swap_blocks_batch` for which path runs.
        The buffers must stay held until the copies finished (stream order on a device).
        """
        swap_buffers(self, n, is_src_access_order_any=is_src_access_order_any, path=path)

    def __repr__(self) -> str:
        state = "released" if self._st is None else f"capacity={self._n}"
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
        dev = current_device() if device is None else resolve_device(device)
        self._device = dev
        self._backend = dev.type if backend is None else backend
        encoding_for(self._backend)  # unknown backend: fail here, not at first use
        min_capacity = index_value(min_capacity, "min_capacity", None)
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
        n = index_value(n, "n", None)
        backend, device = self._backend, self._device
        return self._pool.acquire_handle(3 * n, lambda st: DescriptorBuffers(st, n, backend, device))

    def release(self, bufs: DescriptorBuffers) -> None:
        """Return ``bufs`` to the pool and invalidate the handle."""
        if not isinstance(bufs, DescriptorBuffers):
            raise PtrTypeError(f"release() takes DescriptorBuffers (got {describe(bufs)})")
        self._pool.release_handle(bufs)  # stale or another pool's buffers: StaleBufferError
        bufs._cols = bufs._kernel_cols = None
