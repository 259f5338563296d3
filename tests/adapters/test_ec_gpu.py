"""EC connector on a CUDA GPU: the portable kernel path D2H / H2D (pinned) / D2D and the
worker round trip, compared byte for byte with torch copies. Skipped without a GPU."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from devptr import DevicePtr, DevPtrError, Encoding, ptr_tensor
from devptr.adapters.ec_connector import (
    DescriptorBufferPool,
    ECCPUWorker,
    choose_path,
    swap_blocks_batch,
    unregister_swap_op,
)
from devptr.testing import HIGH_ADDRESSES

pytestmark = pytest.mark.gpu

SIGNED = [DevicePtr(a).signed for a in HIGH_ADDRESSES]


@pytest.fixture(autouse=True)
def portable() -> None:
    """These tests exercise the portable path: refuse to run on top of a platform op."""
    unregister_swap_op("cuda")
    if choose_path("cuda", torch.device("cuda", 0)) != "kernel":
        pytest.fail("a platform swap op (vLLM?) is present; these tests target the kernel path")


def _items(rng: np.random.Generator, count: int, pinned_host: bool) -> list[torch.Tensor]:
    sizes = rng.integers(1, 300_000, size=count)
    sizes[::7] = rng.integers(0, 17, size=sizes[::7].size)  # tiny and empty ones too
    out = []
    for k in sizes:
        t = torch.from_numpy(rng.integers(0, 256, size=int(k), dtype=np.uint8))
        out.append(t.pin_memory() if pinned_host else t.cuda())
    return out


@pytest.mark.parametrize("direction", ["d2h", "h2d", "d2d"])
def test_free_function_kernel_path_byte_exact(direction: str) -> None:
    rng = np.random.default_rng(21)
    srcs = _items(rng, 150, pinned_host=direction == "h2d")
    if direction == "d2h":
        dsts = [torch.full(s.shape, 0xAB, dtype=torch.uint8).pin_memory() for s in srcs]
    else:
        dsts = [torch.full(s.shape, 0xAB, dtype=torch.uint8, device="cuda") for s in srcs]
    sizes = torch.tensor([s.numel() for s in srcs], dtype=torch.int64).pin_memory()
    src_t = ptr_tensor(srcs).pin_memory()
    dst_t = ptr_tensor(dsts).pin_memory()
    swap_blocks_batch(src_t, dst_t, sizes, device="cuda")
    torch.cuda.synchronize()
    for s, d in zip(srcs, dsts, strict=True):
        assert torch.equal(s.cpu(), d.cpu())


def test_descriptor_mirror_is_exact_in_both_encodings() -> None:
    pool = DescriptorBufferPool("cuda")
    assert pool.backend == "cuda"
    b = pool.acquire(4)
    b.add_copies(
        0, [DevicePtr(a) for a in HIGH_ADDRESSES], [DevicePtr(a) for a in HIGH_ADDRESSES], [1, 2, 3, 4]
    )
    s, d, k = b.to_device(4, Encoding.I64)
    assert s.device.type == "cuda" and s.dtype == torch.int64
    assert s.cpu().tolist() == SIGNED and d.cpu().tolist() == SIGNED and k.cpu().tolist() == [1, 2, 3, 4]
    su, _, _ = b.to_device(4, Encoding.U64)
    assert su.dtype == torch.uint64 and su.cpu().tolist() == list(HIGH_ADDRESSES)
    assert b.src_ptrs.dtype == torch.int64  # what the CUDA C++ op would read
    pool.release(b)


def test_buffers_reused_while_copies_are_in_flight_stay_correct() -> None:
    """Each step rewrites the same pooled descriptors right after launching; the mirror
    copy and the next host write are ordered, so every step copies its own blocks."""
    pool = DescriptorBufferPool("cuda", min_capacity=64)
    rng = np.random.default_rng(4)
    results = []
    for _ in range(6):
        srcs = _items(rng, 40, pinned_host=False)
        dsts = [torch.zeros(s.shape, dtype=torch.uint8).pin_memory() for s in srcs]
        b = pool.acquire(40)
        b.add_copies(
            0, [DevicePtr.of(s) for s in srcs], [DevicePtr.of(d) for d in dsts], [s.numel() for s in srcs]
        )
        b.swap(40)
        pool.release(b)  # reuse at once: the next add_copies waits for the descriptor copy
        results.append((srcs, dsts))
    torch.cuda.synchronize()
    for srcs, dsts in results:
        assert all(torch.equal(s.cpu(), d) for s, d in zip(srcs, dsts, strict=True))
    assert pool.allocated == 1


def test_strided_copies_reused_while_copies_are_in_flight_stay_correct() -> None:
    """The same with add_strided_copies, which writes the columns in place: it too must
    wait for the previous descriptor upload before overwriting the host columns."""
    pool = DescriptorBufferPool("cuda", min_capacity=256)
    block, nblocks = 3000, 256
    src = torch.randint(0, 256, (nblocks, block), dtype=torch.uint8, device="cuda")
    rng = np.random.default_rng(6)
    results = []
    for _ in range(8):
        perm = rng.permutation(nblocks).astype(np.uint64)
        dst = torch.zeros(nblocks, block, dtype=torch.uint8).pin_memory()
        b = pool.acquire(nblocks)
        sizes = rng.integers(0, block + 1, size=nblocks).astype(np.uint64)
        b.add_strided_copies(
            0, DevicePtr.of(src), perm, DevicePtr.of(dst), np.arange(nblocks, dtype=np.uint64), block, sizes
        )
        b.swap(nblocks)
        pool.release(b)
        results.append((perm, dst, sizes))
    torch.cuda.synchronize()
    host_src = src.cpu()
    for perm, dst, sizes in results:
        for i in range(nblocks):
            k = int(sizes[i])
            assert torch.equal(dst[i, :k], host_src[int(perm[i]), :k])
            assert not dst[i, k:].any()
    assert pool.allocated == 1


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_worker_round_trip_on_gpu(dtype: torch.dtype) -> None:
    block = 4000  # not a power of two: runs end mid-page
    num_blocks = 2048
    region = torch.zeros(num_blocks, block, dtype=torch.int8).pin_memory()
    pool = DescriptorBufferPool("cuda", min_capacity=num_blocks)
    worker = ECCPUWorker(region, dtype=dtype, device="cuda", pool=pool)
    rng = np.random.default_rng(8)
    for step in range(5):
        outs = {}
        for i in range(20):  # produced by kernels on the compute stream just before the save
            rows, cols = int(rng.integers(1, 300)), int(rng.integers(1, 200))
            outs[f"s{step}i{i}"] = (torch.randn(rows, cols, device="cuda") * 3).to(dtype)
        expected = {k: v.clone() for k, v in outs.items()}
        saves, nxt = {}, int(rng.integers(0, 10))
        for k, v in outs.items():
            nb = max(1, math.ceil(v.numel() * v.element_size() / block))
            ids = []
            while len(ids) < nb:
                ids.append(nxt)
                nxt += 2 if rng.random() < 0.25 else 1
            saves[k] = ids
        assert nxt < num_blocks
        for k in outs:
            worker.save_caches(outs, k, saves)
        worker.flush_saves()
        del outs  # the worker keeps the sources alive until the copy finished
        scratch = [torch.full((1 << 20,), 7, dtype=torch.uint8, device="cuda") for _ in range(8)]
        torch.cuda.synchronize()
        done = worker.build_connector_worker_meta()  # the scheduler loads only saved entries
        assert done is not None and sorted(done.completed_saves) == sorted(expected)
        for k, v in expected.items():
            raw = v.view(torch.uint8).reshape(-1).cpu()
            assert torch.equal(region[saves[k]].view(torch.uint8).reshape(-1)[: raw.numel()], raw), k
        del scratch
        loaded: dict[str, torch.Tensor] = {}
        loads = {k: (i, saves[k], list(v.shape)) for i, (k, v) in enumerate(expected.items())}
        worker.start_load_caches(loaded, loads)
        for k, v in expected.items():  # read on the compute stream, ordered after the load
            assert loaded[k].dtype == dtype and loaded[k].shape == v.shape
            assert torch.equal(loaded[k].view(torch.uint8), v.view(torch.uint8)), k
        torch.cuda.synchronize()
        done = worker.build_connector_worker_meta()
        assert done is not None and sorted(done.completed_loads) == list(range(20))
    # buffers are reused across steps: 1 or 2 storages, depending on whether the first
    # copy had finished when the second step acquired (GPU timing), never more
    assert 1 <= pool.allocated <= 2 and pool.held == 0
    worker.shutdown()


def test_worker_refuses_a_pageable_region_on_the_kernel_path() -> None:
    with pytest.raises(DevPtrError, match="pin"):
        ECCPUWorker(torch.zeros(4, 64, dtype=torch.int8), dtype=torch.float16, device="cuda")


def test_one_handle_swapped_at_several_lengths_copies_each_prefix() -> None:
    """The lean kernel path uploads ``2 * capacity + n`` words and launches on the mirror's
    whole columns: each ``swap(n)`` copies exactly its first ``n`` copies."""
    cap, block = 96, 5000
    src = torch.randint(0, 256, (cap, block), dtype=torch.uint8, device="cuda")
    pool = DescriptorBufferPool("cuda", min_capacity=cap)
    b = pool.acquire(cap)
    dst = torch.zeros(cap, block, dtype=torch.uint8).pin_memory()
    idx = np.arange(cap, dtype=np.uint64)
    b.add_strided_copies(0, DevicePtr.of(src), idx[::-1].copy(), DevicePtr.of(dst), idx, block,
                         np.full(cap, block, dtype=np.uint64))  # fmt: skip
    want = src.flip(0).cpu()
    for n in (1, 37, 96, 5):
        dst.zero_()
        b.swap(n, path="kernel")
        torch.cuda.synchronize()
        assert torch.equal(dst[:n], want[:n]) and not dst[n:].any(), n
    pool.release(b)


def test_a_view_write_on_a_gpu_handle_is_caught_before_any_copy() -> None:
    src = torch.randint(0, 256, (4, 256), dtype=torch.uint8, device="cuda")
    dst = torch.zeros(4, 256, dtype=torch.uint8, device="cuda")
    pool = DescriptorBufferPool("cuda")
    b = pool.acquire(4)
    b.add_copies(0, [DevicePtr.of(r) for r in src], [DevicePtr.of(r) for r in dst], [256] * 4)
    b.swap(4)
    torch.cuda.synchronize()
    assert torch.equal(dst, src)
    dst.zero_()
    b.sizes[2] = -1  # vLLM's attribute: a writable host view
    with pytest.raises(DevPtrError, match="2\\*\\*63"):
        b.swap(4)
    torch.cuda.synchronize()
    assert not dst.any()
    pool.release(b)


def test_auto_choice_is_remembered_with_the_crossovers() -> None:
    from devptr.adapters.ec_connector import _engines as E
    from devptr.adapters.ec_connector import calibrate_engines, last_engine_choice

    cross = calibrate_engines("cuda", block_sizes=(4 * 1024, 1024 * 1024), total=8 << 20, repeat=1)
    src = torch.randint(0, 256, (64, 4096), dtype=torch.uint8, device="cuda")
    dst = torch.zeros(64, 4096, dtype=torch.uint8).pin_memory()
    pool = DescriptorBufferPool("cuda")
    b = pool.acquire(64)
    idx = np.arange(64, dtype=np.uint64)
    b.add_strided_copies(
        0, DevicePtr.of(src), idx, DevicePtr.of(dst), idx, 4096, np.full(64, 4096, dtype=np.uint64)
    )
    with torch.cuda.stream(torch.cuda.Stream()):
        b.swap(64)
        first = last_engine_choice()
        b.swap(64)
        torch.cuda.synchronize()
    assert first is not None and last_engine_choice() is first  # the second batch: one look-up
    best = cross.best("D2H", 4096)
    assert best is not None and first.engine == best[0] and first.direction == "D2H"
    assert torch.equal(dst, src.cpu())
    again = calibrate_engines("cuda", block_sizes=(4 * 1024,), total=8 << 20, repeat=1)
    assert again is E.crossovers(torch.device("cuda")) and not again._picked  # a new table starts afresh
    pool.release(b)
