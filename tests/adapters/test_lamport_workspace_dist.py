"""LamportWorkspace over real torch.distributed (gloo) processes, addresses >= 2**63.

Each rank publishes a fake XPU-like Lamport buffer address (FakePeerMemory); the
addresses cross a real gloo all-gather in spawned processes bound to 127.0.0.1, and every
rank's table is checked bit for bit in the parent.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from devptr.testing import PATTERN_ADDRESSES, SIGN_BIT_PLUS_42, TOP_ALIGNED, XPU_BASE, spawn

MASK = (1 << 64) - 1
HIGH_EXTRA = (
    (1 << 63) | 0x10,
    TOP_ALIGNED,
    XPU_BASE,
    SIGN_BIT_PLUS_42,
    (1 << 64) - 1,
    0xFFFF_8000_0000_0000,
    0x8000_7FFF_FFFF_FFF8,
    XPU_BASE + (3 << 30),
)
"""One fake Lamport-buffer address per rank (up to 8), every one >= 2**63."""

COMM_SIZE = 1 << 16
TIMEOUT_S = 120


def fake_address(rank: int) -> int:
    return HIGH_EXTRA[rank]


def pattern_list(rank: int) -> list[int]:
    """Rank ``rank``'s list for the raw exchange: every boundary pattern, rotated, plus a tag."""
    k = rank % len(PATTERN_ADDRESSES)
    rotated = list(PATTERN_ADDRESSES[k:] + PATTERN_ADDRESSES[:k])
    return [*rotated, (XPU_BASE + rank * 0x1000) & MASK]


def _worker(rank: int, world: int) -> dict[str, Any]:
    """One rank, inside a gloo group set up by :func:`devptr.testing.spawn`."""
    import torch

    from devptr import DevicePtr, Encoding
    from devptr._errors import LengthMismatchError
    from devptr.adapters.lamport import (
        FakePeerMemory,
        LamportWorkspace,
        WorkspaceClosedError,
        all_gather_ptrs,
    )

    result: dict[str, Any] = {"rank": rank}
    fakes = [DevicePtr(fake_address(r)) for r in range(world)]

    # 1. the raw exchange: every boundary pattern, different on each rank
    mine = [DevicePtr(a) for a in pattern_list(rank)]
    got = all_gather_ptrs(mine)
    result["gathered"] = [[p.addr for p in row] for row in got]
    try:
        all_gather_ptrs(mine[: 1 + rank % 2])  # ranks disagree on the count
        result["mismatch"] = "no error"
    except LengthMismatchError as exc:
        result["mismatch"] = type(exc).__name__

    # 2. the workspace, consumer encodings I64 (CUDA/ROCm) and U64 (XPU)
    for enc in (Encoding.I64, Encoding.U64):
        ws = LamportWorkspace(
            rank, world, COMM_SIZE, None, device="cpu", peer_memory=FakePeerMemory(fakes), encoding=enc
        )
        dev = ws.workspace
        result[enc.name] = {
            "dtype": str(dev.dtype),
            "device_bits": dev.view(torch.int64).numpy().view(np.uint64).tolist(),
            "device_values": dev.tolist(),
            "host_u64": ws.table.host(Encoding.U64).tolist(),
            "host_i64": ws.table.host(Encoding.I64).tolist(),
            "numpy": ws.table.numpy().tolist(),
            "sections": {n: [p.addr for p in ws.section(n)] for n in ws.layout.sections},
            "flag_ptr": ws.flag_buffer.data_ptr(),
            "layout_ptr": ws.layout_buffer.data_ptr(),
            "layout": ws.layout_buffer.tolist(),
            "flag": ws.flag_buffer.tolist(),
        }
        ws.close(barrier=True)
        errors = []
        for name in ("workspace", "peer_ptrs", "flag_buffer"):
            try:
                getattr(ws, name)
                errors.append("no error")
            except WorkspaceClosedError:
                errors.append("closed")
        ws.close()  # idempotent
        result[enc.name]["after_close"] = errors
    return result


def _run(world: int) -> list[dict[str, Any]]:
    return spawn(
        _worker,
        world,
        backend="gloo",
        env={"GLOO_SOCKET_IFNAME": "lo"},
        timeout_s=TIMEOUT_S,
        preload=("torch", "torch.distributed", "numpy", "devptr.adapters.lamport"),
    )


def _i64(a: int) -> int:
    from devptr import DevicePtr

    return DevicePtr(a).signed


@pytest.mark.parametrize("world", [2, 4, 8])
def test_exchange_and_table_bit_exact(world: int) -> None:
    if sys.platform == "win32":  # pragma: no cover
        pytest.skip("gloo over tcp://127.0.0.1 is what this test exercises")
    results = _run(world)
    expected_lamport = [fake_address(r) for r in range(world)]
    assert all(a >= 1 << 63 for a in expected_lamport)
    for r, res in enumerate(results):
        # the raw exchange returns every rank's list bit for bit, in rank order
        assert res["gathered"] == [pattern_list(q) for q in range(world)], f"rank {r}"
        assert res["mismatch"] == "LengthMismatchError"
        for enc in ("I64", "U64"):
            t = res[enc]
            table = [0] * world + [0] * world + expected_lamport + [t["flag_ptr"], t["layout_ptr"]]
            assert t["numpy"] == table, f"rank {r} {enc}"
            assert t["host_u64"] == table
            assert t["host_i64"] == [_i64(a) for a in table]
            assert t["device_bits"] == table
            if enc == "I64":
                assert t["dtype"] == "torch.int64"
                assert t["device_values"] == [_i64(a) for a in table]
            else:
                assert t["dtype"] == "torch.uint64"
                assert t["device_values"] == table
            assert t["sections"] == {
                "comm": [0] * world,
                "barrier": [0] * world,
                "lamport": expected_lamport,
                "flag": [t["flag_ptr"]],
                "layout": [t["layout_ptr"]],
            }
            assert t["layout"] == [0, COMM_SIZE]
            assert t["flag"] == [0, 0, 0]
            assert t["after_close"] == ["closed"] * 3
    # every rank sees the same peer table
    assert len({tuple(res["I64"]["sections"]["lamport"]) for res in results}) == 1
