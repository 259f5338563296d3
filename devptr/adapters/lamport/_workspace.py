"""The Lamport workspace: this rank's buffers and the 3N+2-entry table that addresses them.

See :mod:`devptr.adapters.lamport` for the whole adapter; :class:`LamportWorkspace` is
what a rank builds (collectively) and hands to :func:`devptr.kernels.lamport_allreduce`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType

import torch
import torch.distributed as dist

from devptr import (
    CapacityError,
    DevicePtr,
    Encoding,
    InvalidValueError,
    LengthMismatchError,
    PtrBuffer,
    StateError,
    encoding_for,
)
from devptr._core_api import check_encoding_arg, index_value, positive_int, reachable_device
from devptr.adapters._errors import WorkspaceClosedError
from devptr.adapters.lamport._exchange import all_gather_ptrs
from devptr.adapters.lamport._peers import PeerAllocation, PeerMemory, SymmetricMemoryPeers
from devptr.kernels._lamport_layout import (
    FLAG_TIMEOUT,
    FLAG_WORDS,
    LAYOUT_COMM,
    LAYOUT_WORDS,
    POISON_BITS,
    SENTINEL_BITS,
    SLOT_ALIGN,
    LamportLayout,
)
from devptr.kernels.lamport import LamportTimeoutError

Exchange = Callable[[DevicePtr], Sequence[DevicePtr]]
"""Publishes this rank's address and returns every rank's, in rank order."""


def comm_size_for(max_message_bytes: int, world_size: int) -> int:
    """The smallest ``comm_size`` whose slots hold messages of ``max_message_bytes``."""
    positive_int(max_message_bytes, "max_message_bytes")
    positive_int(world_size, "world_size")
    slot = -(-max_message_bytes // SLOT_ALIGN) * SLOT_ALIGN
    return slot * world_size


def workspace_device(device: str | torch.device | None) -> torch.device:
    """The core's resolver; None: the current CUDA device (the default peer memory's)."""
    if device is None:
        if not torch.cuda.is_available():
            raise StateError("no CUDA device: pass device= (and peer_memory= off CUDA)")
        device = "cuda"
    return reachable_device(device)


def _dist_exchange(rank: int, world_size: int, group: dist.ProcessGroup | None) -> Exchange:
    if not dist.is_available() or not dist.is_initialized():
        raise StateError("torch.distributed is not initialised: init it, or pass exchange=")
    got_rank, got_size = dist.get_rank(group), dist.get_world_size(group)
    if (got_rank, got_size) != (rank, world_size):
        raise InvalidValueError(
            f"the group has this process as rank {got_rank} of {got_size}; "
            f"the workspace was given rank {rank} of {world_size}"
        )

    def exchange(local: DevicePtr) -> list[DevicePtr]:
        return [row[0] for row in all_gather_ptrs([local], group)]

    return exchange


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class LamportWorkspace:
    """This rank's Lamport buffer, flag and layout buffers, and the table addressing them.

    Parameters
    ----------
    rank, world_size
        This process's rank in ``group`` and the group's size N.
    comm_size
        Bytes of one round buffer (multiple of 16). The Lamport buffer is
        ``3 * comm_size`` bytes; each rank's slot in a round buffer holds
        ``comm_size // N`` bytes (rounded down to 16), the largest message.
    group
        The ``torch.distributed`` group the addresses are exchanged over (None: world).
    device
        Where buffers and the device table live (default: the current CUDA device).
    peer_memory
        The mechanism that allocates the Lamport buffer so peers can reach it (default on
        CUDA: :class:`SymmetricMemoryPeers`; off CUDA, pass one).
    encoding
        The encoding of the table's consumer (default: :func:`devptr.encoding_for` the
        device: I64 on CUDA/ROCm, U64 on XPU).
    exchange
        Replaces the ``torch.distributed`` exchange (simulated ranks in one process).

    Notes
    -----
    Construction is collective over ``group``. The Lamport buffer is filled with the
    empty-slot word (float32 ``-0.0``) and the device synchronised *before* the exchange,
    so no peer can write into it before it is ready.

    Memory: the workspace owns the Lamport buffer (through its peer-memory allocation),
    the flag buffer (int32[3]), the layout buffer (int64[2]) and the table (host uint64 +
    device mirror, copied once at construction). :meth:`close` releases all of them;
    every later use raises :class:`WorkspaceClosedError`. Tensors taken from it before
    are views of memory that close frees: drop them first.
    """

    def __init__(
        self,
        rank: int,
        world_size: int,
        comm_size: int,
        group: dist.ProcessGroup | None = None,
        *,
        device: str | torch.device | None = None,
        peer_memory: PeerMemory | None = None,
        encoding: Encoding | None = None,
        exchange: Exchange | None = None,
    ) -> None:
        layout = LamportLayout(world_size, comm_size)
        if index_value(rank, "rank", world_size) == world_size:
            raise CapacityError(f"rank must be in [0, {world_size}) (got {rank})")
        check_encoding_arg(encoding)
        dev = workspace_device(device)
        if peer_memory is None:
            if dev.type != "cuda":
                raise StateError(f"no default peer memory on {dev.type}: pass peer_memory=")
            peer_memory = SymmetricMemoryPeers()
        if exchange is None:
            exchange = _dist_exchange(rank, world_size, group)
        self._rank = rank
        self._layout = layout
        self._device = dev
        self._group = group
        self._encoding = encoding if encoding is not None else encoding_for(dev)

        alloc = peer_memory.allocate(
            layout.lamport_bytes, rank=rank, world_size=world_size, group=group, device=dev
        )
        try:
            self._build(alloc, exchange)
        except BaseException:
            alloc.close()
            raise

    def _build(self, alloc: PeerAllocation, exchange: Exchange) -> None:
        layout, dev, rank = self._layout, self._device, self._rank
        mem = alloc.tensor
        if mem is not None:
            if mem.dtype != torch.uint8 or mem.numel() < layout.lamport_bytes:
                raise InvalidValueError(
                    f"peer memory gave {mem.numel()} x {mem.dtype}, need {layout.lamport_bytes} bytes"
                )
            # the round buffers empty, and the status block's poison word too (healthy)
            mem[: layout.lamport_bytes].view(torch.int32).fill_(SENTINEL_BITS - (1 << 32))
        flag = torch.zeros(FLAG_WORDS, dtype=torch.int32, device=dev)
        lay = torch.zeros(LAYOUT_WORDS, dtype=torch.int64, device=dev)
        lay[LAYOUT_COMM] = layout.comm_size
        _sync(dev)

        published = list(exchange(alloc.local))
        if len(published) != layout.world_size:
            raise LengthMismatchError(
                f"the exchange returned {len(published)} addresses for {layout.world_size} ranks"
            )
        if published[rank] != alloc.local:
            raise InvalidValueError(
                f"the exchange returned {published[rank]!r} for this rank, which published {alloc.local!r}"
            )
        peers = [alloc.peer(r, p) for r, p in enumerate(published)]

        table: PtrBuffer = PtrBuffer(layout.capacity, device=dev, pin_memory=False)
        # comm and barrier stay null: the placeholders vLLM's layout carries.
        table.fill(layout.section("lamport").start, peers)
        table[layout.section("flag").start] = DevicePtr.of(flag)
        table[layout.section("layout").start] = DevicePtr.of(lay)
        table.to_device(encoding=self._encoding, non_blocking=False)

        self._alloc: PeerAllocation | None = alloc
        self._poisoned = False
        self._flag: torch.Tensor | None = flag
        self._lay: torch.Tensor | None = lay
        self._table: PtrBuffer | None = table

    # -- state ------------------------------------------------------------------------
    def _open_table(self) -> PtrBuffer:
        table = self._table
        if table is None:
            raise WorkspaceClosedError("this LamportWorkspace was closed; build a new one")
        return table

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._table is None

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._layout.world_size

    @property
    def comm_size(self) -> int:
        """Bytes of one round buffer."""
        return self._layout.comm_size

    @property
    def layout(self) -> LamportLayout:
        """Sections of the table and the division of the Lamport buffer."""
        return self._layout

    @property
    def max_message_bytes(self) -> int:
        """The largest all-reduce input, in bytes (one slot)."""
        return self._layout.slot_bytes

    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def encoding(self) -> Encoding:
        """The encoding of :attr:`workspace` (the consumer's)."""
        return self._encoding

    @property
    def group(self) -> dist.ProcessGroup | None:
        return self._group

    # -- the table --------------------------------------------------------------------
    @property
    def table(self) -> PtrBuffer:
        """The table (host uint64 + device mirror). Owned by the workspace."""
        return self._open_table()

    @property
    def workspace(self) -> torch.Tensor:
        """The device table in :attr:`encoding` (zero-copy view; what vLLM passes as ``void**``)."""
        return self._open_table().device(self._encoding)

    def section(self, name: str) -> list[DevicePtr]:
        """The addresses in section ``name`` (``comm``, ``barrier``, ``lamport``, ``flag``, ``layout``)."""
        rng = self._layout.section(name)
        return self._open_table()[rng.start : rng.stop]

    @property
    def peer_ptrs(self) -> list[DevicePtr]:
        """Every rank's Lamport buffer, as this rank reaches it (the ``lamport`` section)."""
        return self.section("lamport")

    # -- buffers ----------------------------------------------------------------------
    @property
    def flag_buffer(self) -> torch.Tensor:
        """int32[3]: arrival counter, timeout flag, round buffer index. Owned by the workspace."""
        self._open_table()
        assert self._flag is not None
        return self._flag

    @property
    def layout_buffer(self) -> torch.Tensor:
        """int64[2]: clear_size (bytes per slot of the last round), comm_size."""
        self._open_table()
        assert self._lay is not None
        return self._lay

    @property
    def lamport_buffer(self) -> torch.Tensor | None:
        """This rank's Lamport buffer as uint8 (None for fake peer memory)."""
        self._open_table()
        assert self._alloc is not None
        return self._alloc.tensor

    @property
    def poisoned(self) -> bool:
        """Whether a timeout (on this rank or any other) poisoned the workspace, as far as
        the host knows without a device synchronisation.

        On the CPU the flag and poison words are read every time (no synchronisation
        needed); on a GPU this turns True once :meth:`check` has seen the timeout. Every
        :func:`devptr.kernels.lamport_allreduce` call on a poisoned workspace raises
        :class:`LamportTimeoutError`. Rebuild the workspace on every rank.
        """
        if not self._poisoned and self._device.type == "cpu" and self._table is not None:
            self._read_fault()
        return self._poisoned

    def _read_fault(self) -> bool:
        """Read the timeout flag and this rank's poison word (synchronises on a GPU)."""
        flag = self.flag_buffer
        mem = self.lamport_buffer
        off = self._layout.status_offset
        poison = mem is not None and int(mem[off : off + 4].view(torch.int32).item()) == POISON_BITS
        if poison or int(flag[FLAG_TIMEOUT].item()) != 0:
            self._poisoned = True
        return self._poisoned

    def check(self) -> None:
        """Raise :class:`LamportTimeoutError` if a kernel gave up waiting for a peer, on this
        rank or on another (each timing-out rank poisons every rank's Lamport buffer).

        Synchronises with the device (reads the flag buffer and the poison word). After a
        timeout the workspace stays poisoned: every later call raises (or, on a GPU before
        the host knew, wrote NaN). Close it and build a new one on every rank.
        """
        if self._poisoned or self._read_fault():
            raise LamportTimeoutError(
                f"rank {self._rank}: a Lamport all-reduce timed out waiting for a peer's data "
                "(a rank skipped a call, or sizes/dtypes differed between ranks); the workspace "
                "is poisoned on every rank: rebuild it"
            )

    # -- lifetime ---------------------------------------------------------------------
    def close(self, *, barrier: bool = False) -> None:
        """Free the Lamport buffer (unmapping peers), the flag/layout buffers and the table.

        Waits for this device's queued work first. ``barrier=True`` also waits for every
        rank of the group to reach close (a collective), for callers that cannot otherwise
        tell that peers are done. Idempotent.
        """
        if self._table is None:
            return
        _sync(self._device)
        if barrier:
            dist.barrier(group=self._group)
        alloc = self._alloc
        self._alloc = self._flag = self._lay = self._table = None
        if alloc is not None:
            alloc.close()

    cleanup = close
    """vLLM's name for :meth:`close`."""

    def __enter__(self) -> LamportWorkspace:
        self._open_table()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"device={self._device}, encoding={self._encoding.name}"
        return (
            f"LamportWorkspace(rank={self._rank}, world_size={self.world_size}, "
            f"comm_size={self.comm_size}, {state})"
        )


__all__ = ["Exchange", "LamportWorkspace", "comm_size_for", "workspace_device"]
