"""The Lamport all-reduce workspace on the DevicePtr API (port of vLLM's ``LamportWorkspace``).

vLLM builds this 3N+2-entry address table with ``torch.tensor(ptrs, dtype=torch.int64)``,
which raises on the host as soon as an address has bit 63 set (Intel XPU). Here every
address is a :class:`~devptr.DevicePtr`, peers' addresses travel bit-exactly
(:func:`all_gather_ptrs`), the table is a :class:`~devptr.PtrBuffer` with named sections
(:class:`LamportLayout`), and the consumer gets it in its backend's encoding (int64 two's
complement for CUDA/ROCm, uint64 for XPU).

Typical use, one process per GPU::

    ws = LamportWorkspace(rank, world_size, comm_size=8 << 20, group=tp_group)
    y = devptr.kernels.lamport_allreduce(x, ws)   # every rank: the sum, in rank order
    ws.close()

Modules: ``_workspace`` (:class:`LamportWorkspace`, :func:`comm_size_for`), ``_local``
(:func:`local_group`), ``_peers`` (the peer-memory mechanisms), ``_exchange``
(:func:`all_gather_ptrs`); the layout is the kernel's (``devptr.kernels._lamport_layout``),
the errors the adapter layer's (``devptr.adapters._errors``). This module only re-exports.
"""

from __future__ import annotations

from devptr.adapters._errors import WorkspaceClosedError
from devptr.adapters.lamport._exchange import all_gather_ptrs
from devptr.adapters.lamport._local import local_group
from devptr.adapters.lamport._peers import (
    FakePeerMemory,
    HostPeerMemory,
    PeerAllocation,
    PeerMemory,
    SymmetricMemoryPeers,
)
from devptr.adapters.lamport._workspace import Exchange, LamportWorkspace, comm_size_for
from devptr.kernels._lamport_layout import (
    FLAG_ROUND,
    FLAG_TIMEOUT,
    FLAG_WORDS,
    LAYOUT_CLEAR,
    LAYOUT_COMM,
    LAYOUT_WORDS,
    ROUNDS,
    SECTION_NAMES,
    SENTINEL_BITS,
    LamportLayout,
)
from devptr.kernels.lamport import LamportTimeoutError

__all__ = [
    "FLAG_ROUND",
    "FLAG_TIMEOUT",
    "FLAG_WORDS",
    "LAYOUT_CLEAR",
    "LAYOUT_COMM",
    "LAYOUT_WORDS",
    "ROUNDS",
    "SECTION_NAMES",
    "SENTINEL_BITS",
    "Exchange",
    "FakePeerMemory",
    "HostPeerMemory",
    "LamportLayout",
    "LamportTimeoutError",
    "LamportWorkspace",
    "PeerAllocation",
    "PeerMemory",
    "SymmetricMemoryPeers",
    "WorkspaceClosedError",
    "all_gather_ptrs",
    "comm_size_for",
    "local_group",
]
