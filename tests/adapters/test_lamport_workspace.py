"""LamportWorkspace in one process: layout, table, encodings, sentinel fill, lifetime, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from devptr import CapacityError, DevicePtr, DevPtrError, Encoding, InvalidValueError, PtrTypeError
from devptr.adapters.lamport import (
    FLAG_TIMEOUT,
    SECTION_NAMES,
    SENTINEL_BITS,
    FakePeerMemory,
    LamportLayout,
    LamportTimeoutError,
    LamportWorkspace,
    WorkspaceClosedError,
    comm_size_for,
    local_group,
)
from devptr.testing import HIGH_ADDRESSES


def test_layout_sections_cover_3n_plus_2() -> None:
    lay = LamportLayout(4, 4096)
    assert lay.capacity == 14
    assert list(lay.sections) == list(SECTION_NAMES)
    covered = [i for name in SECTION_NAMES for i in lay.section(name)]
    assert covered == list(range(14))
    assert lay.section("lamport") == range(8, 12)
    assert lay.slot_bytes == 1024
    assert lay.status_offset == 3 * 4096  # the round buffers, then the status block
    assert lay.lamport_bytes == 3 * 4096 + 16
    assert LamportLayout(3, 4096).slot_bytes == 1360  # 1365 rounded down to 16


@pytest.mark.parametrize(
    ("world", "comm", "error"),
    [
        (0, 1024, InvalidValueError),
        (2, 0, InvalidValueError),
        (2, 1000, InvalidValueError),
        (4, 48, InvalidValueError),
        (True, 1024, PtrTypeError),
        (2, 1024.0, PtrTypeError),
    ],
)
def test_layout_rejects_bad_sizes(world: object, comm: object, error: type[DevPtrError]) -> None:
    with pytest.raises(error):
        LamportLayout(world, comm)  # type: ignore[arg-type]


def test_layout_unknown_section() -> None:
    with pytest.raises(InvalidValueError, match="no section 'comms'"):
        LamportLayout(2, 1024).section("comms")


def test_comm_size_for() -> None:
    assert comm_size_for(4096, 2) == 8192
    assert comm_size_for(4097, 2) == 2 * 4112
    assert LamportLayout(2, comm_size_for(4097, 2)).slot_bytes >= 4097
    with pytest.raises(InvalidValueError):
        comm_size_for(0, 2)
    with pytest.raises(PtrTypeError):
        comm_size_for(1.5, 2)  # type: ignore[arg-type]


def test_local_group_table_points_at_real_buffers() -> None:
    group = local_group(3, 3 * 256)
    bufs = [ws.lamport_buffer for ws in group]
    assert all(b is not None for b in bufs)
    addrs = [DevicePtr.of(b) for b in bufs if b is not None]
    for r, ws in enumerate(group):
        assert ws.rank == r and ws.world_size == 3
        assert ws.section("comm") == [DevicePtr.NULL] * 3
        assert ws.section("barrier") == [DevicePtr.NULL] * 3
        assert ws.peer_ptrs == addrs
        assert ws.section("flag") == [DevicePtr.of(ws.flag_buffer)]
        assert ws.section("layout") == [DevicePtr.of(ws.layout_buffer)]
        assert ws.layout_buffer.tolist() == [0, 3 * 256]
        assert ws.flag_buffer.tolist() == [0, 0, 0]
        assert ws.encoding is Encoding.I64
        assert ws.workspace.dtype == torch.int64
        assert ws.workspace.numpy().view(np.uint64).tolist() == ws.table.numpy().tolist()
        assert ws.max_message_bytes == 256
    # every 32-bit word of every Lamport buffer starts as the empty-slot word (float32 -0.0),
    # the poison word too (healthy)
    for b in bufs:
        assert b is not None and b.numel() == 3 * 3 * 256 + 16  # + the status block
        words = b.view(torch.int32).numpy().view(np.uint32)
        assert (words == SENTINEL_BITS).all()
        f = b.view(torch.float32)
        assert bool((f == 0).all()) and bool(torch.signbit(f).all())


def test_fake_high_addresses_encode_per_consumer() -> None:
    fakes = [DevicePtr(a) for a in HIGH_ADDRESSES]
    tables = {}
    for enc in (Encoding.I64, Encoding.U64):
        group = [
            LamportWorkspace(
                r,
                4,
                4096,
                device="cpu",
                peer_memory=FakePeerMemory(fakes),
                encoding=enc,
                exchange=lambda _p: fakes,
            )
            for r in range(4)
        ]
        for ws in group:
            assert ws.peer_ptrs == fakes
            assert ws.lamport_buffer is None
            assert ws.workspace.dtype == enc.torch_dtype
        tables[enc] = group[0].workspace
    lamport = slice(8, 12)
    assert tables[Encoding.U64][lamport].tolist() == list(HIGH_ADDRESSES)
    assert tables[Encoding.I64][lamport].tolist() == [DevicePtr(a).signed for a in HIGH_ADDRESSES]
    assert torch.equal(tables[Encoding.I64][lamport].view(torch.uint64), tables[Encoding.U64][lamport])


def test_close_frees_and_later_use_raises() -> None:
    group = local_group(2, 512)
    ws = group[0]
    with ws:
        assert not ws.closed
    assert ws.closed
    assert "closed" in repr(ws)
    for use in (
        lambda: ws.workspace,
        lambda: ws.table,
        lambda: ws.section("lamport"),
        lambda: ws.peer_ptrs,
        lambda: ws.flag_buffer,
        lambda: ws.layout_buffer,
        lambda: ws.lamport_buffer,
        ws.check,
    ):
        with pytest.raises(WorkspaceClosedError):
            use()
    ws.close()  # idempotent
    group[1].cleanup()  # vLLM's name
    assert group[1].closed
    with pytest.raises(WorkspaceClosedError), group[1]:
        pass


def test_check_reports_a_timed_out_kernel() -> None:
    ws = local_group(2, 512)[0]
    ws.check()
    ws.flag_buffer[FLAG_TIMEOUT] = 1  # what the kernel writes when a spin runs out
    with pytest.raises(LamportTimeoutError, match="timed out"):
        ws.check()
    assert isinstance(LamportTimeoutError("x"), TimeoutError)


def test_construction_errors() -> None:
    fakes = [DevicePtr(a) for a in HIGH_ADDRESSES[:2]]
    with pytest.raises(CapacityError, match="rank"):
        LamportWorkspace(
            2, 2, 1024, device="cpu", peer_memory=FakePeerMemory(fakes), exchange=lambda p: fakes
        )
    with pytest.raises(DevPtrError, match="peer_memory"):
        LamportWorkspace(0, 2, 1024, device="cpu", exchange=lambda p: fakes)
    with pytest.raises(DevPtrError, match="not initialised"):
        LamportWorkspace(0, 2, 1024, device="cpu", peer_memory=FakePeerMemory(fakes))
    with pytest.raises(DevPtrError, match="addresses for 3 ranks"):
        LamportWorkspace(
            0, 3, 1536, device="cpu", peer_memory=FakePeerMemory(fakes), exchange=lambda p: fakes
        )
    with pytest.raises(DevPtrError, match="which published"):
        LamportWorkspace(
            0, 2, 1024, device="cpu", peer_memory=FakePeerMemory(fakes), exchange=lambda p: fakes[::-1]
        )
    with pytest.raises(PtrTypeError):
        FakePeerMemory([HIGH_ADDRESSES[0]])  # type: ignore[list-item]
    with pytest.raises(PtrTypeError, match="encoding"):
        LamportWorkspace(
            0,
            2,
            1024,
            device="cpu",
            peer_memory=FakePeerMemory(fakes),
            encoding="U64",  # type: ignore[arg-type]
            exchange=lambda p: fakes,
        )


def test_devices_go_through_the_core_resolver() -> None:
    """Issue 24: the adapter used torch.device() itself (torch's RuntimeError for "gpu")."""
    from devptr import StateError, UnknownBackendError

    fakes = [DevicePtr(a) for a in HIGH_ADDRESSES[:2]]

    def build(device: object) -> LamportWorkspace:
        return LamportWorkspace(
            0, 2, 1024, device=device, peer_memory=FakePeerMemory(fakes), exchange=lambda p: fakes  # type: ignore[arg-type]
        )

    with pytest.raises(UnknownBackendError, match="gpu"):
        build("gpu")
    with pytest.raises(PtrTypeError, match="device"):
        build(0)
    if not torch.cuda.is_available():
        with pytest.raises(StateError, match="not available"):
            build("cuda:0")
    with pytest.raises(UnknownBackendError):
        local_group(2, 512, device="gpu")
