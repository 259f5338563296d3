"""devptr.testing: fakes and the high-address mode."""

from __future__ import annotations

import pytest
import torch

from devptr import DevicePtr, PtrBuffer, ptr_tensor
from devptr.testing import (
    HIGH_ADDRESSES,
    TOP_ALIGNED,
    FakeTensor,
    fake_tensors,
    high_addresses,
    real_address,
)


def test_fake_tensor() -> None:
    assert FakeTensor(TOP_ALIGNED).data_ptr() == 2**64 - 8
    assert DevicePtr.of(FakeTensor(-8)).addr == TOP_ALIGNED
    assert all(a >= 2**63 for a in HIGH_ADDRESSES)
    fakes = fake_tensors(count=3, stride=64)
    assert [f.data_ptr() for f in fakes][1] - fakes[0].data_ptr() == 64
    with pytest.raises(ValueError):
        FakeTensor(2**64)
    with pytest.raises(TypeError):
        FakeTensor(1.0)  # type: ignore[arg-type]


def test_high_addresses_mode() -> None:
    t = torch.zeros(4)
    real = t.data_ptr()
    with high_addresses(host=True):
        high = t.data_ptr()
        assert high >= 2**63
        assert t.untyped_storage().data_ptr() >= 2**63
        with high_addresses():  # re-entrant: the outermost block's host=True holds
            assert t.data_ptr() == high
        p = DevicePtr.of(t)
        buf = PtrBuffer(1, pin_memory=False)
        buf.fill(0, [t])
        assert buf[0] == p
        with pytest.raises(ValueError, match="Overflow"):
            torch.tensor([t.data_ptr()], dtype=torch.int64)
        assert ptr_tensor([t]).view(torch.uint64).item() == high
    assert t.data_ptr() == real
    assert real_address(p).addr == real


def test_high_addresses_flips_device_tensors_only() -> None:
    """By default only device tensors move above 2**63 (as on XPU, where host memory stays
    low); a meta tensor stands in for a device one on this CPU-only check (its data_ptr()
    is 0, so flipped it is exactly 2**63)."""
    host, dev = torch.zeros(4), torch.empty(4, device="meta")
    before = host.data_ptr()
    with high_addresses():
        assert host.data_ptr() == before and host.untyped_storage().data_ptr() < 2**63
        assert dev.data_ptr() == 2**63 and dev.untyped_storage().data_ptr() == 2**63
        assert DevicePtr.of(host).addr == before
    assert dev.data_ptr() == 0


def test_fixture(high_addresses_mode: None) -> None:
    assert torch.zeros(1).data_ptr() >= 2**63


@pytest.mark.high_addresses
def test_marker_flips_device_addresses_only() -> None:
    assert torch.empty(1, device="meta").data_ptr() == 2**63
    assert torch.zeros(1).data_ptr() < 2**63


@pytest.mark.high_addresses(host=True)
def test_marker_with_host_flips_cpu_tensors() -> None:
    assert torch.zeros(1).data_ptr() >= 2**63


def test_without_the_marker_nothing_is_flipped() -> None:
    assert torch.empty(1, device="meta").data_ptr() == 0
    assert torch.zeros(1).data_ptr() < 2**63


def test_table_bits_reads_every_encoding_as_unsigned() -> None:
    import numpy as np

    from devptr import PtrTypeError
    from devptr.testing import table_bits

    want = [2**64 - 1, 5, 2**63]
    i64 = torch.tensor([-1, 5, -(2**63)], dtype=torch.int64)
    assert table_bits(i64) == want
    assert table_bits(i64.view(torch.uint64)) == want
    assert table_bits(i64.numpy()) == want
    assert table_bits(i64.numpy().view(np.uint64)) == want
    assert table_bits(i64.reshape(3, 1)[::1]) == want
    assert table_bits([-1, 5, -(2**63)]) == want
    assert table_bits(i64[::2]) == [want[0], want[2]]  # a strided view, read in order
    for bad in (torch.zeros(2, dtype=torch.int32), np.zeros(2, dtype=np.float64), 7):
        with pytest.raises(PtrTypeError):
            table_bits(bad)
