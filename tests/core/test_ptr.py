"""DevicePtr: construction, decoding, arithmetic, no implicit conversion."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from devptr import (
    AddressOverflowError,
    AddressRangeError,
    DevicePtr,
    DevPtrError,
    Encoding,
    PtrTypeError,
)
from devptr.testing import PATTERN_ADDRESSES, FakeTensor

addrs = st.integers(min_value=0, max_value=2**64 - 1)


@pytest.mark.parametrize("bad", [True, False, 1.0, 2.5, None, "0x10", np.int64(5), np.uint64(5), [1]])
def test_constructor_rejects_non_int(bad: object) -> None:
    with pytest.raises(TypeError, match="address must be an int"):
        DevicePtr(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, -16, 2**64, 2**64 + 8, -(2**63)])
def test_constructor_rejects_out_of_range(bad: int) -> None:
    with pytest.raises(ValueError, match=r"\[0, 2\*\*64\)") as info:
        DevicePtr(bad)
    assert isinstance(info.value, DevPtrError)
    assert hex(bad) in str(info.value)


def test_error_message_in_hex() -> None:
    with pytest.raises(AddressRangeError) as info:
        DevicePtr(-0x10)
    assert str(info.value) == "address must be in [0, 2**64) (got -0x10)"


@pytest.mark.parametrize("addr", PATTERN_ADDRESSES)
def test_signed_roundtrip_patterns(addr: int) -> None:
    p = DevicePtr(addr)
    assert -(2**63) <= p.signed < 2**63
    assert p.signed % 2**64 == addr
    assert DevicePtr.from_signed(p.signed) == p
    assert p.encode(Encoding.U64) == addr
    assert p.encode(Encoding.I64) == p.signed


@given(addrs)
def test_signed_roundtrip_random(addr: int) -> None:
    p = DevicePtr(addr)
    assert DevicePtr.from_signed(p.signed).addr == addr
    assert np.array([p.signed], dtype=np.int64).view(np.uint64)[0] == addr


def test_from_signed_range() -> None:
    with pytest.raises(AddressRangeError):
        DevicePtr.from_signed(2**63)
    with pytest.raises(AddressRangeError):
        DevicePtr.from_signed(-(2**63) - 1)
    with pytest.raises(PtrTypeError):
        DevicePtr.from_signed(1.0)  # type: ignore[arg-type]


def test_of_decodes_negative_and_offset() -> None:
    assert DevicePtr.of(FakeTensor(-8)) == DevicePtr(2**64 - 8)
    assert DevicePtr.of(FakeTensor(2**63), 16) == DevicePtr(2**63 + 16)
    with pytest.raises(AddressOverflowError):
        DevicePtr.of(FakeTensor(2**64 - 8), 8)
    with pytest.raises(PtrTypeError, match="data_ptr"):
        DevicePtr.of(5)  # type: ignore[arg-type]


def test_of_real_tensor() -> None:
    t = torch.arange(8, dtype=torch.float32)
    assert DevicePtr.of(t).addr == t.data_ptr()
    assert DevicePtr.of(t[2:]).addr == t.data_ptr() + 8


def test_arithmetic_checked() -> None:
    p = DevicePtr(2**64 - 16)
    assert p + 8 == DevicePtr(2**64 - 8)
    assert 8 + p == DevicePtr(2**64 - 8)
    assert p - 16 == DevicePtr(2**64 - 32)
    assert (p + 8) - p == 8
    assert p - (p + 8) == -8
    with pytest.raises(AddressOverflowError, match="leaves"):
        p + 16
    with pytest.raises(AddressOverflowError):
        DevicePtr(8) - 9
    with pytest.raises(TypeError):
        p + 1.0  # type: ignore[operator]
    with pytest.raises(TypeError):
        p + True  # type: ignore[operator]


def test_comparisons_unsigned() -> None:
    assert DevicePtr(2**63 - 1) < DevicePtr(2**63)
    assert sorted([DevicePtr(2**64 - 8), DevicePtr(1)])[0] == DevicePtr(1)


def test_alignment_null_repr() -> None:
    assert DevicePtr(2**64 - 8).is_aligned(8)
    assert not DevicePtr(2**63 + 42).is_aligned(8)
    with pytest.raises(AddressRangeError):
        DevicePtr(0).is_aligned(0)
    assert DevicePtr.NULL.is_null and not DevicePtr(1).is_null
    assert repr(DevicePtr(0xFFFF81AB54E01000)) == "DevicePtr(0xffff81ab54e01000)"
    assert hash(DevicePtr(5)) == hash(DevicePtr(5))


def test_no_implicit_int_conversion() -> None:
    p = DevicePtr(2**63)
    assert not hasattr(p, "__index__") and not hasattr(p, "__int__")
    with pytest.raises(TypeError):
        int(p)  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        np.zeros(2, dtype=np.int64)[0] = p  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        np.zeros(2, dtype=np.uint64)[0] = p  # type: ignore[call-overload]
    with pytest.raises((TypeError, ValueError)):
        np.array([p], dtype=np.int64)
    t = torch.zeros(2, dtype=torch.int64)
    with pytest.raises(TypeError):
        t[0] = p  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        torch.tensor([p], dtype=torch.int64)


def test_frozen() -> None:
    p = DevicePtr(1)
    with pytest.raises(AttributeError):
        p.addr = 2  # type: ignore[misc]
