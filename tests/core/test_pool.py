"""PtrBufferPool: LIFO reuse, stale handles, no double hand-out under threads."""

from __future__ import annotations

import threading

import pytest

from devptr import CapacityError, DevicePtr, PtrBufferPool, StaleBufferError


def test_lifo_reuse_and_new_handles() -> None:
    pool = PtrBufferPool(8, pin_memory=False)
    a = pool.acquire(4)
    b = pool.acquire(8)
    b_addr = b.numpy().ctypes.data
    assert pool.allocated == 2 and pool.held == 2
    pool.release(a)
    pool.release(b)
    c = pool.acquire(2)
    assert c is not b and c.capacity == 2 and pool.allocated == 2
    assert c.numpy().ctypes.data == b_addr  # last released first: c reuses b's storage


def test_stale_handle_every_use() -> None:
    pool = PtrBufferPool(4, pin_memory=False)
    a = pool.acquire(4)
    view = a.host()
    pool.release(a)
    for use in (
        lambda: a[0],
        lambda: a.__setitem__(0, DevicePtr(1)),
        lambda: a.fill(0, [DevicePtr(1)]),
        lambda: a.fill_strided(0, DevicePtr(0), [1], 8),
        lambda: a.host(),
        lambda: a.numpy(),
        lambda: a.clear(),
    ):
        with pytest.raises(StaleBufferError, match="released"):
            use()
    with pytest.raises(StaleBufferError, match="already released"):
        pool.release(a)
    b = pool.acquire(4)  # reuses a's storage through a new handle
    b[0] = DevicePtr(2**63)
    assert view[0].item() == -(2**63)  # old view: plain alias
    with pytest.raises(StaleBufferError):
        a[0] = DevicePtr(5)
    assert b[0] == DevicePtr(2**63)


def test_foreign_buffer_rejected() -> None:
    p1, p2 = PtrBufferPool(pin_memory=False), PtrBufferPool(pin_memory=False)
    a = p1.acquire(2)
    with pytest.raises(StaleBufferError, match="not acquired from this pool"):
        p2.release(a)


def test_capacity_and_limits() -> None:
    pool = PtrBufferPool(4, pin_memory=False, max_buffers=1)
    a = pool.acquire(2)
    with pytest.raises(CapacityError, match="maximum"):
        pool.acquire(2)
    with pytest.raises(CapacityError):
        a[2] = DevicePtr(1)
    with pytest.raises(CapacityError):
        pool.acquire(-1)


def test_threads_never_share_a_buffer() -> None:
    pool = PtrBufferPool(16, pin_memory=False)
    errors: list[str] = []
    owners: dict[int, int] = {}
    lock = threading.Lock()

    def worker(tid: int) -> None:
        for step in range(300):
            buf = pool.acquire(16)
            key = buf.numpy().ctypes.data
            with lock:
                if key in owners:
                    errors.append(f"storage {key:#x} held by {owners[key]} and {tid}")
                owners[key] = tid
            mark = DevicePtr((tid << 32) | step)
            buf.fill(0, [mark] * 16)
            if any(p != mark for p in buf[:]):
                errors.append(f"thread {tid} saw foreign writes")
            with lock:
                del owners[key]
            pool.release(buf)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert pool.held == 0 and pool.free == pool.allocated <= 8
