"""Checked mode records storage extents of addresses taken from tensors."""

from __future__ import annotations

import torch

from devptr import DevicePtr, PtrBuffer, checked, extent_of
from devptr._checked import is_enabled


def test_off_by_default_records_nothing() -> None:
    t = torch.zeros(16)
    assert not is_enabled()
    p = DevicePtr.of(t, 8)
    assert extent_of(p) is None


def test_records_storage_extent_of_views() -> None:
    base = torch.zeros(64, dtype=torch.uint8)
    view = base[16:32]
    with checked():
        assert is_enabled()
        p = DevicePtr.of(view)
        start = base.data_ptr()
        assert extent_of(p) == (start, start + 64)  # the whole storage, not the view
        others = [torch.zeros(3), torch.zeros(5)]
        buf = PtrBuffer(2, pin_memory=False)
        buf.fill(0, others)
        for t in others:
            assert extent_of(DevicePtr(t.data_ptr())) == (t.data_ptr(), t.data_ptr() + t.nbytes)
    assert not is_enabled()
    assert extent_of(p) is None  # cleared on exit


def test_extent_of_refuses_what_is_not_an_address() -> None:
    import pytest

    from devptr import PtrTypeError

    t = torch.zeros(4)
    with checked():
        p = DevicePtr.of(t)
        assert extent_of(p) is not None
        for bad in (t.data_ptr(), t, None, "0x10"):
            with pytest.raises(PtrTypeError, match="DevicePtr"):
                extent_of(bad)  # type: ignore[arg-type]


# -- issue 22 #12, #15, #20 ---------------------------------------------------------------
def test_one_thread_leaving_its_block_leaves_the_others_on() -> None:
    """A enters, B enters, A leaves: B is still on; C, with no block, never was."""
    import threading

    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def thread_a() -> None:
        with checked():
            a_in.set()
            assert b_in.wait(10)
        a_out.set()

    def thread_b() -> None:
        assert a_in.wait(10)
        with checked():
            b_in.set()
            assert a_out.wait(10)
            seen["b after a left"] = is_enabled()
            t = torch.zeros(8)
            seen["b records"] = extent_of(DevicePtr.of(t)) is not None

    def thread_c() -> None:
        assert b_in.wait(10)
        seen["c without a block"] = is_enabled()
        t = torch.zeros(8)
        seen["c records"] = extent_of(DevicePtr.of(t)) is not None

    threads = [threading.Thread(target=f) for f in (thread_a, thread_b, thread_c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == {
        "b after a left": True,
        "b records": True,
        "c without a block": False,
        "c records": False,
    }
    assert not is_enabled()


def test_extent_is_forgotten_when_its_storage_is_freed() -> None:
    import gc

    from devptr import _checked

    with checked():
        big = torch.zeros(4096, dtype=torch.uint8)
        view = big[1024:]
        p = DevicePtr.of(big)
        inside = p.addr + 2048
        assert extent_of(p) == (p.addr, p.addr + 4096)
        assert _checked.find(inside) == (p.addr, p.addr + 4096)
        del big
        gc.collect()
        assert extent_of(p) == (p.addr, p.addr + 4096)  # a view still holds the storage
        del view
        gc.collect()
        # freed: a tensor allocated there next must never be checked against 4096 bytes
        assert extent_of(p) is None
        assert _checked.find(inside) is None and _checked.find(p.addr) is None


def test_registry_holds_live_storages_only() -> None:
    """A steady loop (allocate, take addresses, free) keeps the registry at its live size."""
    from devptr import _checked

    with checked():
        keep = [torch.zeros(16) for _ in range(4)]
        buf = PtrBuffer(4, pin_memory=False)
        buf.fill(0, keep)
        for _ in range(3000):
            step = torch.zeros(32)
            DevicePtr.of(step)
            buf.fill(0, [step, torch.zeros(2)])
        assert len(_checked.extents()) <= 16
        for t in keep:
            assert extent_of(DevicePtr(t.data_ptr())) == (t.data_ptr(), t.data_ptr() + t.nbytes)


def test_fakes_under_checked_mode() -> None:
    from devptr.testing import FakeTensor

    with checked():
        fake = FakeTensor(2**64 - 8, nbytes=8)
        assert DevicePtr.of(fake) == DevicePtr(2**64 - 8)
        buf = PtrBuffer(2, pin_memory=False)
        assert buf.fill(0, [fake, FakeTensor(-16)]) == 2
        assert buf[1] == DevicePtr(2**64 - 16)


def test_checked_environment_runs_the_demo() -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "DEVPTR_CHECKED": "1", "COLUMNS": "100"}
    proc = subprocess.run(
        [sys.executable, "-m", "devptr.cli", "demo"], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "bit-exact" in proc.stdout
