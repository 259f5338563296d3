"""Where Lamport buffers come from: pluggable peer-memory mechanisms.

A :class:`PeerMemory` allocates this rank's Lamport buffer and says which address it
*publishes* to the other ranks; after the exchange, :meth:`PeerAllocation.peer` turns a
peer's published address into the address under which this rank reaches that peer's
buffer. Three mechanisms:

- :class:`SymmetricMemoryPeers`: torch symmetric memory (CUDA, any GPUs that reach each
  other): real peer memory, mapped by ``symm_mem.rendezvous``.
- :class:`HostPeerMemory`: plain tensors in one process (every "rank" shares one address
  space): simulated ranks for tests, under ``TRITON_INTERPRET=1`` on the CPU.
- :class:`FakePeerMemory`: no memory, chosen addresses (e.g. XPU-like, >= 2**63): for
  testing the exchange and the table over gloo without a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch
import torch.distributed as dist

from devptr import AddressRangeError, CapacityError, DevicePtr, InvalidValueError, PtrTypeError, StateError
from devptr._core_api import describe


class PeerAllocation(Protocol):
    """One rank's Lamport buffer, as a mechanism allocated it."""

    @property
    def local(self) -> DevicePtr:
        """The address this rank publishes for its buffer."""
        ...

    @property
    def tensor(self) -> torch.Tensor | None:
        """The buffer's bytes (uint8) when this process can write them, else None (fakes)."""
        ...

    def peer(self, rank: int, published: DevicePtr) -> DevicePtr:
        """The address under which this rank reaches ``rank``'s buffer, ``published`` by it."""
        ...

    def close(self) -> None:
        """Release the buffer and every peer mapping (idempotent)."""
        ...


class PeerMemory(Protocol):
    """Allocates Lamport buffers that the other ranks of a group can reach."""

    def allocate(
        self,
        nbytes: int,
        *,
        rank: int,
        world_size: int,
        group: dist.ProcessGroup | None,
        device: torch.device,
    ) -> PeerAllocation:
        """Allocate ``nbytes`` for this rank; collective over ``group`` if the mechanism is."""
        ...


class _IdentityAllocation:
    """An allocation reached at the same address by every rank (also the base that holds
    ``local`` and ``tensor`` for the other allocations)."""

    __slots__ = ("_local", "_tensor")

    def __init__(self, local: DevicePtr, tensor: torch.Tensor | None) -> None:
        self._local = local
        self._tensor = tensor

    @property
    def local(self) -> DevicePtr:
        return self._local

    @property
    def tensor(self) -> torch.Tensor | None:
        return self._tensor

    def peer(self, rank: int, published: DevicePtr) -> DevicePtr:
        return published

    def close(self) -> None:
        self._tensor = None


# -- torch symmetric memory -------------------------------------------------------------
class _SymmetricAllocation(_IdentityAllocation):
    __slots__ = ("_handle", "_peers", "_rank")

    def __init__(self, tensor: torch.Tensor, handle: object, rank: int) -> None:
        ptrs = getattr(handle, "buffer_ptrs", None)
        if not isinstance(ptrs, (list, tuple)):
            raise PtrTypeError(f"symmetric-memory handle has no buffer_ptrs list (got {describe(ptrs)})")
        bases = [DevicePtr(int(a)) for a in ptrs]
        local = DevicePtr.of(tensor)
        # The tensor may start inside its allocation block: reach each peer at the same offset.
        offset = local - bases[rank]
        if offset < 0:
            raise InvalidValueError(f"symmetric tensor {local!r} lies below its block {bases[rank]!r}")
        super().__init__(local, tensor)
        self._handle: object | None = handle
        self._peers = [b + offset for b in bases]
        self._rank = rank

    def peer(self, rank: int, published: DevicePtr) -> DevicePtr:
        if not 0 <= rank < len(self._peers):
            raise CapacityError(f"rank {rank} outside a group of {len(self._peers)}")
        if rank == self._rank and published != self._local:
            raise InvalidValueError(f"own buffer published as {published!r}, allocated at {self._local!r}")
        return self._peers[rank]

    def close(self) -> None:
        # Dropping the last references frees the buffer and unmaps the peers' memory
        # (torch's symmetric-memory allocator owns both).
        self._handle = None
        super().close()


class SymmetricMemoryPeers:
    """Peer memory from torch symmetric memory (``symm_mem.empty`` + ``rendezvous``).

    Uses the default backend (``set_backend`` is never called) and no multicast object.
    ``allocate`` is collective over the group. Memory: the symmetric-memory allocator owns
    the buffer; the allocation keeps it (and the peer mappings) alive until ``close``.
    """

    def allocate(
        self,
        nbytes: int,
        *,
        rank: int,
        world_size: int,
        group: dist.ProcessGroup | None,
        device: torch.device,
    ) -> PeerAllocation:
        from torch.distributed import _symmetric_memory as symm_mem

        if device.type != "cuda":
            raise PtrTypeError(f"SymmetricMemoryPeers needs a CUDA device (got {device})")
        tensor = symm_mem.empty(nbytes, dtype=torch.uint8, device=device)
        pg = group if group is not None else dist.group.WORLD
        if pg is None:
            raise StateError("torch.distributed is not initialised")
        handle = symm_mem.rendezvous(tensor, pg)
        if int(handle.world_size) != world_size or int(handle.rank) != rank:
            raise InvalidValueError(
                f"symmetric memory sees rank {handle.rank} of {handle.world_size}, "
                f"the workspace was given rank {rank} of {world_size}"
            )
        return _SymmetricAllocation(tensor, handle, rank)


# -- one process, plain tensors -------------------------------------------------------
class HostPeerMemory:
    """Plain tensors on ``device``, for ranks that share one process (simulation).

    A peer's published address is used as is, which is right only while every rank lives
    in this process: tests drive N simulated ranks in one process (``TRITON_INTERPRET=1``
    on CPU tensors). Memory: the allocation owns its tensor until ``close``.
    """

    def allocate(
        self,
        nbytes: int,
        *,
        rank: int,
        world_size: int,
        group: dist.ProcessGroup | None,
        device: torch.device,
    ) -> PeerAllocation:
        tensor = torch.empty(nbytes, dtype=torch.uint8, device=device)
        return _IdentityAllocation(DevicePtr.of(tensor), tensor)


class FakePeerMemory:
    """No memory: rank ``r`` publishes ``addresses[r]`` (e.g. XPU-like, >= 2**63).

    For testing the exchange and the table without peer memory; a workspace built on it
    has no Lamport memory to write (``tensor`` is None) and must not reach a kernel.
    """

    def __init__(self, addresses: Sequence[DevicePtr]) -> None:
        addrs = list(addresses)
        for a in addrs:
            if type(a) is not DevicePtr:
                raise PtrTypeError(f"FakePeerMemory takes DevicePtrs (got {describe(a)})")
        self._addresses = addrs

    def allocate(
        self,
        nbytes: int,
        *,
        rank: int,
        world_size: int,
        group: dist.ProcessGroup | None,
        device: torch.device,
    ) -> PeerAllocation:
        if len(self._addresses) != world_size:
            raise AddressRangeError(
                f"FakePeerMemory has {len(self._addresses)} addresses for {world_size} ranks"
            )
        return _IdentityAllocation(self._addresses[rank], None)
