"""Worker-level save/load of encoder outputs through a host region of fixed-size blocks.

The same flow as vLLM's EC CPU worker, on devptr: encoder outputs are cut into blocks of
the region; each run of consecutive region blocks becomes one descriptor; addresses are
computed in uint64 (``base + index * block_size``: the arithmetic of
:func:`devptr.addresses`, done in place by :meth:`DescriptorBuffers.add_strided_copies`);
saves copy device -> host region, loads host region -> device, each step's copies in one
``swap_blocks_batch``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from devptr import AddressRangeError, CapacityError, DevicePtr, PtrTypeError, StateError
from devptr._core_api import describe
from devptr.adapters.ec_connector._descriptors import DescriptorBufferPool, DescriptorBuffers
from devptr.adapters.ec_connector._swap import SwapPath, choose_path

U64 = np.dtype(np.uint64)
U64Array = npt.NDArray[np.uint64]


def coalesce_runs(block_ids: Sequence[int] | npt.NDArray[Any]) -> tuple[U64Array, U64Array, U64Array]:
    """Split block ids into runs of consecutive ids: ``(slots, first_blocks, num_blocks)``.

    One element per run: ``slots`` is the run's position in ``block_ids`` (the offset on
    the side that is contiguous, in blocks), ``first_blocks`` its first id, ``num_blocks``
    its length. Ids must be non-negative integers. Returns new uint64 arrays (unsigned
    like the addresses they index, so :func:`devptr.addresses` needs no sign check); the
    input is not kept.
    """
    ids = np.asarray(block_ids)
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        raise PtrTypeError(f"block ids must be a 1-D integer sequence (got {describe(block_ids)})")
    if ids.size == 0:
        empty = np.empty(0, dtype=U64)
        return empty, empty.copy(), empty.copy()
    if ids.dtype.kind == "i":
        if int(ids.min()) < 0:
            raise AddressRangeError(f"block ids must be non-negative (got {int(ids.min())})")
        ids = ids.astype(np.int64, copy=False).view(U64)  # same bits when non-negative
    else:
        ids = ids.astype(U64, copy=False)
    starts = np.flatnonzero(np.diff(ids) != 1)  # uint64 diff wraps on a step down: still != 1
    slots = np.empty(starts.size + 1, dtype=U64)
    slots[0] = 0
    np.add(starts, 1, out=slots[1:], casting="unsafe")
    ends = np.empty_like(slots)
    ends[:-1] = slots[1:]
    ends[-1] = ids.size
    return slots, ids[slots], ends - slots


@dataclass
class Transfer:
    """One batched copy in flight; its buffers and sources stay held until it finished."""

    completions: list[str] | list[int]
    bufs: DescriptorBuffers
    num_bytes: int
    end_event: Any = None
    stream: Any = None
    keepalive: list[torch.Tensor] = field(default_factory=list)

    def done(self) -> bool:
        return self.end_event is None or bool(self.end_event.query())


@dataclass(frozen=True)
class TransfersDone:
    """What finished since the last poll: saved mm_hashes and loaded transfer ids."""

    completed_saves: list[str]
    completed_loads: list[int]


class ECCPUWorker:
    """Save encoder outputs to a host block region and load them back, in batches.

    Parameters
    ----------
    region
        The host region: a contiguous 2-D ``(num_blocks, block_size_bytes)`` tensor of
        int8/uint8 on the CPU. Owned by the caller; the worker writes saved blocks into it.
        Pinned when copies run on an accelerator through the portable kernel path.
    dtype
        Element type the loaded outputs are reinterpreted as.
    device
        Where encoder outputs live (default: the current accelerator, else the CPU).
    is_save_rank
        False on ranks that hold the same outputs as the saving rank: saves are skipped.
    pool
        Descriptor buffers to use (default: a new pool on ``device``).
    path
        Forwarded to ``swap_blocks_batch`` (``"auto"``: platform op, else the portable path).

    Notes
    -----
    Saves and loads run on a side stream of the device (CPU: synchronously). Every
    descriptor buffer, stream and source tensor of a copy stays held by the worker until
    the copy finished, which :meth:`build_connector_worker_meta` observes.
    """

    def __init__(
        self,
        region: torch.Tensor,
        *,
        dtype: torch.dtype,
        device: str | torch.device | None = None,
        is_save_rank: bool = True,
        pool: DescriptorBufferPool | None = None,
        path: SwapPath = "auto",
    ) -> None:
        if (
            not isinstance(region, torch.Tensor)
            or region.ndim != 2
            or region.device.type != "cpu"
            or region.dtype not in (torch.int8, torch.uint8)
            or not region.is_contiguous()
        ):
            raise PtrTypeError(
                "region must be a contiguous 2-D int8/uint8 CPU tensor "
                f"(num_blocks, block_size_bytes) (got {describe(region)})"
            )
        self._pool = pool if pool is not None else DescriptorBufferPool(device)
        self._device = self._pool.device
        chosen = choose_path(self._pool.backend, self._device, path)
        if chosen == "kernel" and self._device.type != "cpu" and not region.is_pinned():
            raise StateError(
                "the portable kernel path reads and writes the region from the device: "
                "pin it (tensor.pin_memory() or cudaHostRegister) or register a platform op"
            )
        self._region = region
        self._base = DevicePtr.of(region)
        self._num_blocks, self._block = int(region.shape[0]), int(region.shape[1])
        self._dtype = dtype
        self._is_save_rank = is_save_rank
        self._path: SwapPath = path
        self._mod: Any = None if self._device.type == "cpu" else torch.get_device_module(self._device)
        self._streams: list[Any] = []
        self._save_bufs: DescriptorBuffers | None = None
        self._save_stream: Any = None
        self._save_count = 0
        self._save_bytes = 0
        self._save_hashes: list[str] = []
        self._save_keep: list[torch.Tensor] = []
        self._inflight_saves: deque[Transfer] = deque()
        self._inflight_loads: deque[Transfer] = deque()

    @property
    def pool(self) -> DescriptorBufferPool:
        """The descriptor buffer pool (shared by saves and loads)."""
        return self._pool

    @property
    def block_size_bytes(self) -> int:
        """Bytes per region block."""
        return self._block

    # -- helpers ----------------------------------------------------------------------
    def _stream(self) -> Any:
        if self._mod is None:
            return None
        return self._streams.pop() if self._streams else self._mod.Stream(self._device)

    def _check_blocks(self, ids: U64Array) -> None:
        if ids.size and int(ids.max()) + 1 > self._num_blocks:
            raise CapacityError(
                f"block id {int(ids.max())} is outside the region of {self._num_blocks} blocks"
            )

    def _submit(self, bufs: DescriptorBuffers, n: int, stream: Any, any_order: bool) -> Any:
        if self._mod is None:
            bufs.swap(n, is_src_access_order_any=any_order, path=self._path)
            return None
        end = self._mod.Event()
        with self._mod.stream(stream):
            bufs.swap(n, is_src_access_order_any=any_order, path=self._path)
            end.record(stream)
        return end

    # -- saves ------------------------------------------------------------------------
    def save_caches(
        self, encoder_cache: Mapping[str, torch.Tensor], mm_hash: str, saves: Mapping[str, Sequence[int]]
    ) -> None:
        """Add the copies of ``encoder_cache[mm_hash]`` into ``saves[mm_hash]``'s blocks.

        ``saves`` maps every mm_hash saved this step to its region block ids (ascending
        ids coalesce). The copies run at :meth:`flush_saves`. Only the output's bytes are
        copied (the last block may be partial). The output must be contiguous on the
        worker's device; the worker keeps a reference until the copy finished.
        """
        if not self._is_save_rank:
            return
        block_ids = saves.get(mm_hash)
        if block_ids is None:
            return
        src = encoder_cache[mm_hash]
        if src.device.type != self._device.type or not src.is_contiguous():
            raise PtrTypeError(
                f"encoder output {mm_hash!r} must be contiguous on {self._device} "
                f"(got {src.device}, contiguous={src.is_contiguous()})"
            )
        total = src.numel() * src.element_size()
        bs = self._block
        if total > len(block_ids) * bs:
            raise CapacityError(
                f"encoder output {mm_hash!r} has {total} bytes but {len(block_ids)} blocks "
                f"of {bs} bytes hold {len(block_ids) * bs}"
            )
        used = math.ceil(total / bs)
        slots, first, count = coalesce_runs(np.asarray(block_ids[:used], dtype=np.int64))
        self._check_blocks(first + count - 1)
        if self._save_bufs is None:
            self._save_bufs = self._pool.acquire(sum(len(v) for v in saves.values()))
            self._save_stream = self._stream()
        if used == 0:
            self._save_hashes.append(mm_hash)
            return
        run_bytes = count * bs
        run_bytes[-1] = total - int(slots[-1]) * bs
        if self._save_stream is not None:
            src.record_stream(self._save_stream)
        # src + slot * bs -> region + block * bs, in uint64 (see add_strided_copies)
        self._save_count = self._save_bufs.add_strided_copies(
            self._save_count, DevicePtr.of(src), slots, self._base, first, bs, run_bytes
        )
        self._save_bytes += total
        self._save_hashes.append(mm_hash)
        self._save_keep.append(src)

    def flush_saves(self) -> None:
        """Run this step's saves in one batched copy (after the current stream's work)."""
        bufs, stream = self._save_bufs, self._save_stream
        if bufs is None:
            return
        if self._mod is not None:
            stream.wait_stream(self._mod.current_stream(self._device))
        end = self._submit(bufs, self._save_count, stream, False)
        self._inflight_saves.append(
            Transfer(self._save_hashes, bufs, self._save_bytes, end, stream, self._save_keep)
        )
        self._save_bufs, self._save_stream = None, None
        self._save_count = self._save_bytes = 0
        self._save_hashes, self._save_keep = [], []

    # -- loads ------------------------------------------------------------------------
    def start_load_caches(
        self,
        encoder_cache: dict[str, torch.Tensor],
        loads: Mapping[str, tuple[int, Sequence[int], Sequence[int]]],
    ) -> None:
        """Copy ``loads`` (mm_hash -> (transfer id, block ids, shape)) region -> device.

        Allocates one device buffer for all loads (owned by the tensors put in
        ``encoder_cache``: views of ``shape`` and the worker's dtype), copies whole blocks
        in one batched copy on a side stream, and makes the current stream wait for it.
        """
        if not loads:
            return
        items = sorted(loads.items(), key=lambda kv: kv[1][1][0] if len(kv[1][1]) else -1)
        ids = np.fromiter((b for _, (_, blocks, _) in items for b in blocks), dtype=np.int64)
        slots, first, count = coalesce_runs(ids)
        self._check_blocks(first + count - 1)
        bs = self._block
        elem = torch.empty(0, dtype=self._dtype).element_size()
        for mm_hash, (_, blocks, shape) in items:
            need = math.prod(shape) * elem
            if need > len(blocks) * bs:
                raise CapacityError(
                    f"load {mm_hash!r}: shape {tuple(shape)} needs {need} bytes, "
                    f"{len(blocks)} blocks hold {len(blocks) * bs}"
                )
        stream = self._stream()
        dst = torch.empty(ids.size, bs, dtype=torch.uint8, device=self._device)
        bufs = self._pool.acquire(int(slots.size))
        end_n = bufs.add_strided_copies(0, self._base, first, DevicePtr.of(dst), slots, bs, count * bs)
        if stream is not None:  # allocated on the compute stream, written on the copy stream
            dst.record_stream(stream)
        end = self._submit(bufs, end_n, stream, True)
        self._inflight_loads.append(
            Transfer([tid for _, (tid, _, _) in items], bufs, int(ids.size) * bs, end, stream, [dst])
        )
        offset = 0
        for mm_hash, (_, blocks, shape) in items:
            k = len(blocks)
            flat = dst[offset : offset + k].view(self._dtype).reshape(-1)
            encoder_cache[mm_hash] = flat[: math.prod(shape)].view(tuple(shape))
            offset += k
        if self._mod is not None:
            self._mod.current_stream(self._device).wait_stream(stream)

    # -- completion -------------------------------------------------------------------
    def _collect(self, inflight: deque[Transfer]) -> list[Any]:
        done: list[Any] = []
        while inflight and inflight[0].done():
            t = inflight.popleft()
            done.extend(t.completions)
            self._pool.release(t.bufs)
            if t.stream is not None:
                self._streams.append(t.stream)
        return done

    def build_connector_worker_meta(self) -> TransfersDone | None:
        """Copies finished since the last call (buffers go back to the pool), or None."""
        saves = self._collect(self._inflight_saves)
        loads = self._collect(self._inflight_loads)
        if not saves and not loads:
            return None
        return TransfersDone(saves, loads)

    def shutdown(self) -> None:
        """Wait for every copy in flight and give every buffer back."""
        for t in (*self._inflight_saves, *self._inflight_loads):
            if t.end_event is not None:
                t.end_event.synchronize()
        self._collect(self._inflight_saves)
        self._collect(self._inflight_loads)
        if self._save_bufs is not None:
            self._pool.release(self._save_bufs)
        self._save_bufs, self._save_stream = None, None
        self._save_count = self._save_bytes = 0
        self._save_hashes, self._save_keep = [], []
