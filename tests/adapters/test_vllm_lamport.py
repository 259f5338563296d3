"""devptr.adapters.lamport's workspace table against vLLM 0.33.0's ``LamportWorkspace``.

vLLM's ``lamport_workspace.py`` runs unmodified over a fake CUDA runtime (peer memory is
either real host buffers or bare addresses; an IPC handle carries its address) with its
``device="cuda"`` tensors placed on the CPU. The adapter gets the same peer addresses
through :class:`FakePeerMemory` and an in-process exchange. Table layout, 3N+2 entries:
N comm placeholders, N barrier placeholders, N Lamport peer buffers, flag, layout.

- below 2**63: comm, barrier and peer sections bit-identical; the flag and layout entries
  point at each workspace's own flag (int32[3], zeros) and layout (int64[2], {0, comm})
  buffers, whose contents are identical;
- a peer address at or above 2**63: vLLM's ``torch.tensor(ptrs, dtype=torch.int64)``
  raises on the host (torch 2.13 and 2.14 alike), while the adapter's table holds the
  exact bits (uint64) and their two's complement (int64).
"""

from __future__ import annotations

import pytest
import torch
from support import vllm_stand_ins as vs

from devptr import DevicePtr, Encoding
from devptr.adapters.lamport import FakePeerMemory, LamportWorkspace
from devptr.testing import HIGH_ADDRESSES

pytestmark = pytest.mark.vllm  # needs vLLM 0.33.0's sources (support.opt_in)

COMM = 4096


def _vllm_workspace(rank: int, peers: list[int], writable=lambda _a: False):  # type: ignore[no-untyped-def]
    cudart = vs.FakeCudaRuntime([peers[rank]], writable)
    mod = vs.load_lamport_workspace(cudart, peers)
    ws = mod.LamportWorkspace(rank, len(peers), COMM)
    ws._lamport._alive = False  # the fake peer memory is not vLLM's to free
    return ws, cudart


def _our_workspace(rank: int, peers: list[int], encoding: Encoding = Encoding.I64) -> LamportWorkspace:
    ptrs = [DevicePtr(a) for a in peers]
    return LamportWorkspace(
        rank, len(peers), COMM, device="cpu", peer_memory=FakePeerMemory(ptrs),
        exchange=lambda _p: ptrs, encoding=encoding,
    )


@pytest.mark.parametrize(("world", "rank"), [(2, 0), (4, 3), (8, 5)])
def test_table_matches_vllm_below_2_63(world: int, rank: int) -> None:
    bufs = [torch.zeros(3 * COMM, dtype=torch.uint8) for _ in range(world)]
    peers = [b.data_ptr() for b in bufs]
    real = set(peers)
    theirs, cudart = _vllm_workspace(rank, peers, writable=lambda a: a in real)
    ours = _our_workspace(rank, peers)
    v = theirs.workspace.tolist()
    o = ours.workspace.tolist()
    assert theirs.workspace.dtype == ours.workspace.dtype == torch.int64
    assert len(v) == len(o) == 3 * world + 2
    assert v[: 3 * world] == o[: 3 * world]  # placeholders and peer buffers: same bits
    assert v[2 * world : 3 * world] == peers
    assert v[3 * world :] == [theirs._flag_buf.data_ptr(), theirs._layout_buf.data_ptr()]
    assert o[3 * world :] == [ours.flag_buffer.data_ptr(), ours.layout_buffer.data_ptr()]
    assert torch.equal(theirs._flag_buf, ours.flag_buffer)
    assert torch.equal(theirs._layout_buf, ours.layout_buffer)
    # vLLM filled its own Lamport buffer with float32 -0.0 through the (fake) runtime
    assert bool((bufs[rank].view(torch.int32) == -(1 << 31)).all())
    assert any(op == "memcpy" and a[0] == peers[rank] and a[2] == 3 * COMM for op, a in cudart.calls)


@pytest.mark.parametrize("high", HIGH_ADDRESSES)
def test_vllm_raises_where_the_adapter_holds_the_bits(high: int) -> None:
    peers = [0x7F00_0000_0000, high - (high % 16), 0x7F00_0020_0000, (high - 4096) & ~15]
    # measured: ValueError "Overflow when unpacking long long" on torch 2.13.0 and 2.14.1
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        _vllm_workspace(0, peers)
    for enc in (Encoding.U64, Encoding.I64):
        ours = _our_workspace(0, peers, enc)
        lamport = ours.workspace[8:12].tolist()
        want = peers if enc is Encoding.U64 else [DevicePtr(a).signed for a in peers]
        assert ours.workspace.dtype == enc.torch_dtype
        assert lamport == want
        assert ours.peer_ptrs == [DevicePtr(a) for a in peers]


def test_vllm_serialize_is_unsigned_and_bit_exact() -> None:
    """vLLM's own peer-pointer serialisation keeps high addresses (the table build fails)."""
    peers = list(HIGH_ADDRESSES)
    cudart = vs.FakeCudaRuntime([peers[1]])
    mod = vs.load_lamport_workspace(cudart, peers)
    buf = mod.IpcBuffer(1, len(peers), 4096)
    buf._alive = False
    assert buf.serialize() == peers
    with pytest.raises(ValueError, match="Overflow"):
        torch.tensor(buf.serialize(), dtype=torch.int64)
