"""N Lamport workspaces for N simulated ranks in one process (:func:`local_group`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.distributed as dist

from devptr import Encoding
from devptr.adapters.lamport._peers import HostPeerMemory, PeerAllocation
from devptr.adapters.lamport._workspace import LamportWorkspace, workspace_device
from devptr.kernels._lamport_layout import LamportLayout


class _Preallocated:
    """Hands out allocations made beforehand (for :func:`local_group`)."""

    def __init__(self, allocs: Sequence[PeerAllocation]) -> None:
        self._allocs = list(allocs)

    def allocate(
        self,
        nbytes: int,
        *,
        rank: int,
        world_size: int,
        group: dist.ProcessGroup | None,
        device: torch.device,
    ) -> PeerAllocation:
        return self._allocs[rank]


def local_group(
    world_size: int,
    comm_size: int,
    *,
    device: str | torch.device = "cpu",
    encoding: Encoding | None = None,
) -> list[LamportWorkspace]:
    """N workspaces for N simulated ranks in this process (one address space).

    Every rank's Lamport buffer is a plain tensor on ``device``; the "exchange" hands each
    workspace the addresses directly. For tests of the kernel under ``TRITON_INTERPRET=1``
    (drive the write phase of every rank, then the reduce phase). Memory: each workspace
    owns its rank's buffers, as in the distributed case.
    """
    layout = LamportLayout(world_size, comm_size)
    dev = workspace_device(device)
    host = HostPeerMemory()
    allocs = [
        host.allocate(layout.lamport_bytes, rank=r, world_size=world_size, group=None, device=dev)
        for r in range(world_size)
    ]
    published = [a.local for a in allocs]
    pre = _Preallocated(allocs)
    return [
        LamportWorkspace(
            r,
            world_size,
            comm_size,
            device=dev,
            peer_memory=pre,
            encoding=encoding,
            exchange=lambda _p: published,
        )
        for r in range(world_size)
    ]


__all__ = ["local_group"]
