"""PtrBufferPool: LIFO reuse, stale handles, no double hand-out under threads."""

from __future__ import annotations

import copy
import pickle
import sys
import threading
from collections.abc import Callable

import numpy as np
import pytest

from devptr import CapacityError, DevicePtr, PtrBuffer, PtrBufferPool, PtrTypeError, StaleBufferError
from devptr._storage import Storage


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


# -- issue 22: calls racing release(), copies of handles, max_buffers under threads ------
class _Blocking:
    """An address whose ``data_ptr()`` blocks: the validating fill stops half-way."""

    def __init__(self, addr: int) -> None:
        self.addr = addr
        self.validating = threading.Event()
        self.go = threading.Event()

    def data_ptr(self) -> int:
        self.validating.set()
        assert self.go.wait(10)
        return self.addr


def _race_release(write: Callable[[PtrBuffer, _Blocking], object]) -> tuple[list[BaseException], PtrBuffer]:
    """``write(buf, blocking)`` in a thread while this thread releases ``buf`` and a new
    holder takes its storage; returns the writer's error (if any) and the new holder."""
    pool = PtrBufferPool(4, pin_memory=False)
    buf = pool.acquire(4)
    blocking = _Blocking(0x1000)
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            write(buf, blocking)
        except BaseException as exc:
            errors.append(exc)

    holder: list[PtrBuffer] = []
    released = threading.Event()

    def releaser() -> None:
        pool.release(buf)
        holder.append(pool.acquire(4))  # the next holder, over the same storage
        released.set()

    w = threading.Thread(target=writer)
    w.start()
    assert blocking.validating.wait(10)
    r = threading.Thread(target=releaser)
    r.start()
    # Before the fix the release and the next acquire finish here while the write waits;
    # after it, release waits for the write (so this wait runs out, bounded).
    released.wait(0.5)
    blocking.go.set()
    w.join(10)
    r.join(10)
    assert not w.is_alive() and not r.is_alive()
    return errors, holder[0]


@pytest.mark.parametrize(
    "write",
    [
        lambda buf, b: buf.fill(0, [b]),
        lambda buf, b: buf.__setitem__(slice(1, 2), [b]),
    ],
    ids=["fill", "slice-setitem"],
)
def test_write_racing_release_never_reaches_the_next_holder(
    write: Callable[[PtrBuffer, _Blocking], object],
) -> None:
    errors, new_holder = _race_release(write)
    assert errors == []  # the write finished before the release took the storage
    assert new_holder.numpy().tolist() == [0, 0, 0, 0]  # ... which the new holder got zeroed


def test_threads_filling_while_others_release_see_only_their_own_data() -> None:
    """Random interleavings: a writer keeps filling a handle that another thread releases;
    the next holder must never see the writer's mark."""
    pool = PtrBufferPool(64, pin_memory=False)
    foreign: list[str] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: many interleavings per trial
    try:
        _fill_release_trials(pool, foreign)
    finally:
        sys.setswitchinterval(interval)
    assert foreign == []


def _fill_release_trials(pool: PtrBufferPool, foreign: list[str]) -> None:
    for trial in range(200):
        buf = pool.acquire(64)
        mark = DevicePtr(0xDEAD0000 + trial)
        filling = threading.Event()
        marks = [mark] * 64

        def writer(
            b: PtrBuffer = buf,
            m: DevicePtr = mark,
            ev: threading.Event = filling,
            ms: list[DevicePtr] = marks,
        ) -> None:
            while True:
                try:
                    b.fill(0, ms)
                    ev.set()
                    b.fill_strided(0, m, np.zeros(64, dtype=np.int64), 0)
                except StaleBufferError:
                    return

        t = threading.Thread(target=writer)
        t.start()
        assert filling.wait(10)
        pool.release(buf)
        nxt = pool.acquire(64)
        t.join(10)  # the writer stops at its first call after the release
        if (nxt.numpy() == mark.addr).any():
            foreign.append(f"trial {trial}: the released handle's fill reached the next holder")
        pool.release(nxt)


def test_copies_of_a_pooled_handle_are_refused() -> None:
    pool = PtrBufferPool(4, pin_memory=False)
    buf = pool.acquire(4)
    for make_copy in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(PtrTypeError, match=r"pooled PtrBuffer cannot be copied|cannot be pickled"):
            make_copy(buf)
    pool.release(buf)
    other = pool.acquire(4)  # the next holder of that storage
    assert other.numpy().tolist() == [0, 0, 0, 0]


def test_released_handle_has_no_length() -> None:
    pool = PtrBufferPool(4, pin_memory=False)
    buf = pool.acquire(3)
    assert len(buf) == 3
    pool.release(buf)
    with pytest.raises(StaleBufferError, match="released"):
        len(buf)


def test_max_buffers_holds_under_concurrent_acquire() -> None:
    """Eight threads acquire at once from a pool of one; exactly one gets a buffer."""
    threads = 8
    pool = PtrBufferPool(4, pin_memory=False, max_buffers=1)
    refused = 0
    got: list[PtrBuffer] = []
    lock = threading.Lock()
    others_done = threading.Event()
    start = threading.Barrier(threads)

    def make(st: Storage) -> PtrBuffer:
        # Hold the hand-out open until every other thread has had its answer (before the
        # fix, all eight were here at once: none had an answer, so this wait runs out).
        others_done.wait(2)
        return PtrBuffer._over(st, 4)

    def worker() -> None:
        nonlocal refused
        start.wait()
        try:
            buf = pool.acquire_handle(4, make)
        except CapacityError:
            with lock:
                refused += 1
                if refused == threads - 1:
                    others_done.set()
            return
        with lock:
            got.append(buf)

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    assert (len(got), refused) == (1, threads - 1)
    assert pool.held == 1


def test_reused_storage_uploads_the_new_holders_rows() -> None:
    """A handle over reused, larger storage uploads and shows its own rows only."""
    pool = PtrBufferPool(8, device="cpu", pin_memory=False)
    a = pool.acquire(8)
    a[:] = [DevicePtr(i + 1) for i in range(8)]
    assert a.to_device(8).shape == (8,)
    pool.release(a)
    b = pool.acquire(3)
    b[0] = DevicePtr(77)
    out = b.to_device()
    assert out.shape == (3,) and out.tolist() == [77, 0, 0] and b.device().shape == (3,)
