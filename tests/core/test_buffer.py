"""PtrBuffer: bit-exact storage, views, fills, errors that write nothing."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from devptr import (
    AddressOverflowError,
    CapacityError,
    DevicePtr,
    DevPtrError,
    Encoding,
    LengthMismatchError,
    PtrBuffer,
    PtrTypeError,
)
from devptr.testing import HIGH_ADDRESSES, PATTERN_ADDRESSES, FakeTensor, encoding_environment, table_bits

addr_lists = st.lists(st.integers(min_value=0, max_value=2**64 - 1), min_size=1, max_size=40)


def _roundtrip(values: list[int]) -> None:
    buf = PtrBuffer(len(values), device="cpu", pin_memory=False)
    for i, a in enumerate(values):
        buf[i] = DevicePtr(a)
    assert [p.addr for p in buf[:]] == values
    u = buf.host(Encoding.U64)
    i64 = buf.host(Encoding.I64)
    assert u.dtype == torch.uint64 and i64.dtype == torch.int64
    assert u.tolist() == values
    assert [DevicePtr.from_signed(v).addr for v in i64.tolist()] == values
    assert buf.numpy().tolist() == values
    dev = buf.to_device(encoding=Encoding.I64)
    assert dev.dtype == torch.int64
    assert table_bits(dev) == values
    assert buf.device(Encoding.U64).tolist() == values


def test_pattern_classes_roundtrip() -> None:
    _roundtrip(list(PATTERN_ADDRESSES))


@settings(max_examples=60, deadline=None)
@given(addr_lists)
def test_random_roundtrip(values: list[int]) -> None:
    _roundtrip(values)


def test_views_are_zero_copy() -> None:
    buf = PtrBuffer(4, pin_memory=False)
    h = buf.host(Encoding.I64)
    buf[1] = DevicePtr(2**64 - 8)
    assert h[1].item() == -8
    assert buf.host(Encoding.U64).data_ptr() == h.data_ptr() == buf.numpy().ctypes.data


def test_default_encoding_follows_device() -> None:
    with encoding_environment(None):
        assert PtrBuffer(2).host().dtype == torch.int64
    with encoding_environment("cpu=U64"):
        assert PtrBuffer(2, device="cpu").host().dtype == torch.uint64


def test_fill_from_ptrs_tensors_and_arrays() -> None:
    ts = [torch.zeros(4) for _ in range(3)]
    buf = PtrBuffer(10, pin_memory=False)
    end = buf.fill(0, ts)
    assert end == 3
    assert buf.numpy()[:3].tolist() == [t.data_ptr() for t in ts]
    end = buf.fill(end, [DevicePtr(a) for a in HIGH_ADDRESSES])
    assert end == 3 + len(HIGH_ADDRESSES)
    end = buf.fill(end, np.array([2**64 - 1], dtype=np.uint64))
    assert buf[end - 1] == DevicePtr(2**64 - 1)
    assert buf.fill(end, [FakeTensor(-8)]) == end + 1
    assert buf[end] == DevicePtr(2**64 - 8)


@pytest.mark.parametrize(
    "bad", [[5], [DevicePtr(1), 5], np.array([1], dtype=np.int64), [1.0], [None], [True]]
)
def test_fill_rejects_raw_values_and_writes_nothing(bad: object) -> None:
    buf = PtrBuffer(4, pin_memory=False)
    with pytest.raises(TypeError):
        buf.fill(0, bad)
    assert buf.numpy().tolist() == [0, 0, 0, 0]


def test_setitem_errors() -> None:
    buf = PtrBuffer(2, pin_memory=False)
    for bad in (5, 2**63, np.uint64(5), 1.0, True, None):
        with pytest.raises(PtrTypeError, match="DevicePtr"):
            buf[0] = bad  # type: ignore[assignment]
    with pytest.raises(CapacityError, match="out of range"):
        buf[2] = DevicePtr(1)
    with pytest.raises(CapacityError):
        buf[-1] = DevicePtr(1)
    with pytest.raises(CapacityError):
        buf[2]
    with pytest.raises(PtrTypeError):
        buf["a"] = DevicePtr(1)  # type: ignore[index]
    with pytest.raises(LengthMismatchError):
        buf[0:2] = [DevicePtr(1)]
    assert buf.numpy().tolist() == [0, 0]
    buf[0:2] = [DevicePtr(7), DevicePtr(2**63)]
    assert buf.numpy().tolist() == [7, 2**63]


def test_fill_capacity_and_length() -> None:
    buf = PtrBuffer(3, pin_memory=False)
    with pytest.raises(CapacityError, match="exceed capacity 3"):
        buf.fill(2, [DevicePtr(1), DevicePtr(2)])
    with pytest.raises(CapacityError):
        buf.fill(4, [])
    with pytest.raises(CapacityError):
        buf.fill(-1, [DevicePtr(1)])
    assert buf.numpy().tolist() == [0, 0, 0]
    with pytest.raises(DevPtrError, match="no device mirror"):
        buf.to_device(1)
    buf2 = PtrBuffer(3, device="cpu", pin_memory=False)
    with pytest.raises(CapacityError):
        buf2.to_device(4)


def test_no_mirror_errors() -> None:
    buf = PtrBuffer(3, pin_memory=False)
    with pytest.raises(DevPtrError, match="no device mirror"):
        buf.device()


def test_to_device_copies_prefix_only() -> None:
    buf = PtrBuffer(4, device="cpu", pin_memory=False)
    buf.fill(0, [DevicePtr(a) for a in (1, 2**63, 3, 4)])
    out = buf.to_device(2)
    assert out.shape == (2,)
    assert buf.device(Encoding.U64).tolist() == [1, 2**63, 0, 0]
    buf[0] = DevicePtr(9)
    assert buf.device(Encoding.U64)[0].item() == 1  # mirror holds what was copied


def test_fill_strided_exact_and_uint64() -> None:
    buf = PtrBuffer(6, pin_memory=False)
    base = DevicePtr(2**63 + 4096)
    for idx in (np.arange(3, dtype=np.int32), np.arange(3, dtype=np.uint64), [0, 1, 2], torch.arange(3)):
        end = buf.fill_strided(1, base, idx, np.int64(4096), offset=8)
        assert end == 4
        assert buf.numpy().dtype == np.uint64
        assert buf.numpy()[1:4].tolist() == [2**63 + 4096 + k * 4096 + 8 for k in range(3)]


def test_fill_strided_overflow_writes_nothing() -> None:
    buf = PtrBuffer(4, pin_memory=False)
    with pytest.raises(AddressOverflowError):
        buf.fill_strided(0, DevicePtr(2**64 - 4096), [0, 1], 4096)
    with pytest.raises(AddressOverflowError):
        buf.fill_strided(0, DevicePtr(2**64 - 8), [0], 0, offset=8)
    with pytest.raises(CapacityError):
        buf.fill_strided(3, DevicePtr(0), [0, 1], 8)
    assert buf.numpy().tolist() == [0, 0, 0, 0]


def test_pinned_request_without_accelerator() -> None:
    if torch.cuda.is_available():
        assert PtrBuffer(2, pin_memory=True).is_pinned
    else:
        with pytest.raises(DevPtrError, match="pinned host memory needs an accelerator"):
            PtrBuffer(2, pin_memory=True)
        assert not PtrBuffer(2).is_pinned  # auto: falls back cleanly


def test_capacity_validation() -> None:
    with pytest.raises(CapacityError):
        PtrBuffer(-1)
    with pytest.raises(PtrTypeError, match="capacity must be an int"):
        PtrBuffer(2.0)  # type: ignore[type-var]
    assert len(PtrBuffer(5)) == PtrBuffer(5).capacity == 5


# -- issue 22 #18 and issue 24: the error taxonomy at construction and indexing ---------
def test_numpy_integer_indices_work_like_ints() -> None:
    buf = PtrBuffer(4, pin_memory=False)
    for k in (np.int64(1), np.int32(2), np.uint64(3), np.uint8(0)):
        buf[k] = DevicePtr(2**63 + int(k))  # type: ignore[index]
        assert buf[k] == DevicePtr(2**63 + int(k))  # type: ignore[call-overload]
    with pytest.raises(CapacityError, match="out of range"):
        buf[np.int64(4)]  # type: ignore[call-overload]
    with pytest.raises(PtrTypeError):
        buf[np.bool_(True)]  # type: ignore[call-overload]


def test_capacity_too_large_to_allocate_is_a_state_error() -> None:
    from devptr import StateError

    for capacity in (2**40, 2**61, 2**63):
        with pytest.raises(StateError, match="could not allocate host memory"):
            PtrBuffer(capacity, pin_memory=False)


@pytest.mark.parametrize(
    ("device", "error"),
    [
        ("gpu", "UnknownBackendError"),
        ("cuda:x", "UnknownBackendError"),
        (0, "PtrTypeError"),
        (1.0, "PtrTypeError"),
    ],
)
def test_bad_device_names_raise_the_same_class_as_ptr_tensor(device: object, error: str) -> None:
    import devptr

    cls = getattr(devptr, error)
    with pytest.raises(cls):
        PtrBuffer(2, device=device)  # type: ignore[arg-type]
    with pytest.raises(cls):
        devptr.ptr_tensor([DevicePtr(8)], device=device)  # type: ignore[arg-type]


def test_deepcopy_owns_its_storage_and_pickling_is_refused() -> None:
    import copy
    import pickle

    buf = PtrBuffer(3, device="cpu", pin_memory=False)
    buf[0] = DevicePtr(2**64 - 8)
    buf.to_device()
    dup = copy.deepcopy(buf)
    dup[1] = DevicePtr(16)
    assert dup.host(Encoding.U64).tolist() == [2**64 - 8, 16, 0]  # the view and the entries agree
    assert buf[1] == DevicePtr(0)  # the original is untouched
    assert dup.device(Encoding.U64).tolist() == [2**64 - 8, 0, 0]  # the mirror was copied too
    alias = copy.copy(buf)  # a second handle over the same storage
    alias[2] = DevicePtr(24)
    assert buf[2] == DevicePtr(24)
    with pytest.raises(PtrTypeError, match="cannot be pickled"):
        pickle.dumps(buf)
