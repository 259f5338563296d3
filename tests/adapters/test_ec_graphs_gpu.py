"""The kernel path's replayed CUDA graphs (devptr/adapters/ec_connector/_graphs.py) on a
real GPU: a batch shape's second swap captures, later swaps replay with new descriptors,
byte for byte against torch; the host writes wait for the replayed upload; shapes are
kept per storage and capacity; a caller's own capture and checked mode launch normally.
Skipped without a GPU."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest
import torch

import devptr
from devptr import DevicePtr
from devptr.adapters.ec_connector import (
    DescriptorBufferPool,
    DescriptorBuffers,
    _graphs,
    swap_graphs,
    unregister_swap_op,
)

pytestmark = pytest.mark.gpu

BLOCK = 4096


@pytest.fixture(autouse=True)
def portable() -> Iterator[None]:
    unregister_swap_op("cuda")
    before = swap_graphs()
    swap_graphs(True)
    yield
    swap_graphs(before)


def _graphs_of(b: DescriptorBuffers) -> list[object]:
    kept = b._live().derived.get("ec_swap_graphs", {})
    assert isinstance(kept, dict)
    return [v for v in kept.values() if isinstance(v, _graphs.Captured)]


def _fill(
    b: DescriptorBuffers, src: torch.Tensor, dst: torch.Tensor, perm: np.ndarray, n: int, block: int = BLOCK
) -> None:
    b.add_strided_copies(
        0, DevicePtr.of(src), perm[:n].astype(np.uint64), DevicePtr.of(dst), np.arange(n, dtype=np.uint64),
        block, np.full(n, block, dtype=np.uint64),
    )  # fmt: skip


def test_second_swap_of_a_shape_captures_and_later_swaps_replay_new_descriptors() -> None:
    n = 2048
    src = torch.randint(0, 256, (n, BLOCK), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    pool = DescriptorBufferPool("cuda")
    b = pool.acquire(n)
    rng = np.random.default_rng(1)
    for i in range(5):
        perm = rng.permutation(n)
        dst.fill_(0xA5)
        _fill(b, src, dst, perm, n)
        b.swap(n, path="kernel")
        torch.cuda.synchronize()
        assert torch.equal(dst, src[torch.from_numpy(perm).cuda()]), i
        assert len(_graphs_of(b)) == (0 if i == 0 else 1), i
    pool.release(b)


def test_host_writes_right_after_a_replay_wait_for_its_upload() -> None:
    """Back to back swaps of one shape with new descriptors each time, no sync between:
    each write of the descriptors must wait for the previous replay's upload."""
    n, rounds = 4096, 8
    src = torch.randint(0, 256, (n, BLOCK), dtype=torch.uint8, device="cuda")
    dsts = [torch.empty_like(src) for _ in range(rounds)]
    perms = [np.random.default_rng(i).permutation(n) for i in range(rounds)]
    pool = DescriptorBufferPool("cuda")
    b = pool.acquire(n)
    for dst, perm in zip(dsts, perms, strict=True):
        _fill(b, src, dst, perm, n)
        b.swap(n)
    torch.cuda.synchronize()
    assert _graphs_of(b)
    for i, (dst, perm) in enumerate(zip(dsts, perms, strict=True)):
        assert torch.equal(dst, src[torch.from_numpy(perm).cuda()]), i
    pool.release(b)


def test_a_host_write_waits_for_a_delayed_replay_s_upload_and_not_for_its_copies() -> None:
    """The replay sits behind a long device sleep, so its upload has not run when the
    host rewrites the descriptors: the write must wait for the upload (else the first
    swap would copy with the new descriptors), and only for it (the graph's event-record
    node after the upload, not an event after the whole swap)."""
    n = 1024
    src = torch.randint(0, 256, (n, BLOCK), dtype=torch.uint8, device="cuda")
    first, second = torch.zeros_like(src), torch.zeros_like(src)
    pool = DescriptorBufferPool("cuda")
    b = pool.acquire(n)
    p1, p2 = np.random.default_rng(7).permutation(n), np.random.default_rng(8).permutation(n)
    _fill(b, src, first, p1, n)
    for _ in range(3):  # capture, then replay
        b.swap(n, path="kernel")
    torch.cuda.synchronize()
    assert len(_graphs_of(b)) == 1
    first.zero_()
    torch.cuda._sleep(200_000_000)  # about 0.1 s of device time before the replay
    b.swap(n, path="kernel")
    _fill(b, src, second, p2, n)  # waits for the replay's upload
    b.swap(n, path="kernel")
    torch.cuda.synchronize()
    assert torch.equal(first, src[torch.from_numpy(p1).cuda()])
    assert torch.equal(second, src[torch.from_numpy(p2).cuda()])
    # the wait ends at the upload: 1,024 blocks of 1 MiB (about 0.5 ms of copies behind a
    # 24 KiB upload), so the swap is still copying when the write has returned
    big, mib = 1024, 1 << 20
    src2 = torch.randint(0, 256, (big, mib), dtype=torch.uint8, device="cuda")
    dst2 = torch.zeros_like(src2)
    b2 = pool.acquire(big)
    perm = np.random.default_rng(9).permutation(big)
    _fill(b2, src2, dst2, perm, big, mib)
    for _ in range(3):
        b2.swap(big, path="kernel")
    torch.cuda.synchronize()
    swapped = torch.cuda.Event()
    b2.swap(big, path="kernel")
    swapped.record()
    _fill(b2, src2, dst2, perm, big, mib)
    assert not swapped.query(), "the host write waited for the copies, not for the upload"
    torch.cuda.synchronize()
    assert torch.equal(dst2, src2[torch.from_numpy(perm).cuda()])
    pool.release(b)
    pool.release(b2)


def test_graphs_follow_the_storage_and_its_capacity_across_hand_overs() -> None:
    """A storage reused by a handle of another capacity (other column offsets) must not
    replay the first handle's graph; the first capacity's graph still serves it later."""
    src = torch.randint(0, 256, (512, BLOCK), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    pool = DescriptorBufferPool("cuda")
    perm = np.random.default_rng(2).permutation(512)
    for cap, n in ((512, 300), (400, 300), (512, 300), (400, 300)):
        for _ in range(3):
            b = pool.acquire(cap)
            dst.zero_()
            _fill(b, src, dst, perm, n)
            b.swap(n, path="kernel")
            torch.cuda.synchronize()
            assert torch.equal(dst[:n], src[torch.from_numpy(perm[:n]).cuda()]), (cap, n)
            assert not dst[n:].any()
            pool.release(b)
    assert pool.allocated == 1


def test_at_most_per_storage_graphs_are_kept() -> None:
    src = torch.randint(0, 256, (64, BLOCK), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    pool = DescriptorBufferPool("cuda")
    b = pool.acquire(64)
    perm = np.random.default_rng(3).permutation(64)
    _fill(b, src, dst, perm, 64)
    for n in range(1, 2 * _graphs.PER_STORAGE + 3):
        for _ in range(2):
            dst.zero_()
            b.swap(n, path="kernel")
            torch.cuda.synchronize()
            assert torch.equal(dst[:n], src[torch.from_numpy(perm[:n]).cuda()]), n
    assert len(_graphs_of(b)) == _graphs.PER_STORAGE
    pool.release(b)


def test_a_swap_inside_the_callers_capture_becomes_part_of_that_graph() -> None:
    n = 256
    src = torch.randint(0, 256, (n, BLOCK), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    pool = DescriptorBufferPool("cuda")
    b = pool.acquire(n)
    perm = np.random.default_rng(4).permutation(n)
    _fill(b, src, dst, perm, n)
    for _ in range(3):  # the shape's own graph exists before the caller captures
        b.swap(n, path="kernel")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        g.capture_begin()
        b.swap(n, path="kernel")
        g.capture_end()
    torch.cuda.current_stream().wait_stream(side)
    dst.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(dst, src[torch.from_numpy(perm).cuda()])
    pool.release(b)


def test_checked_mode_and_the_switch_launch_without_graphs() -> None:
    n = 128
    src = torch.randint(0, 256, (n, BLOCK), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    pool = DescriptorBufferPool("cuda")
    perm = np.random.default_rng(5).permutation(n)
    for ctx in ("checked", "off"):
        b = pool.acquire(n)
        b._live().derived.clear()
        _fill(b, src, dst, perm, n)
        if ctx == "off":
            swap_graphs(False)
        with devptr.checked() if ctx == "checked" else contextlib.nullcontext():
            for _ in range(3):
                dst.zero_()
                b.swap(n, path="kernel")
                torch.cuda.synchronize()
                assert torch.equal(dst, src[torch.from_numpy(perm).cuda()])
        assert not _graphs_of(b), ctx
        pool.release(b)

