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
