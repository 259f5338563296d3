"""store / ptr_tensor / addresses: bit-exact on every container and torch version."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from devptr import (
    AddressOverflowError,
    AddressRangeError,
    DevicePtr,
    Encoding,
    LengthMismatchError,
    PtrBuffer,
    PtrTypeError,
    addresses,
    ptr_tensor,
    store,
)
from devptr.testing import PATTERN_ADDRESSES, FakeTensor, table_bits

CONTAINERS = {
    "torch-i64": lambda n: torch.zeros(n, dtype=torch.int64),
    "torch-u64": lambda n: torch.zeros(n, dtype=torch.uint64),
    "numpy-i64": lambda n: np.zeros(n, dtype=np.int64),
    "numpy-u64": lambda n: np.zeros(n, dtype=np.uint64),
}


@pytest.mark.parametrize("kind", CONTAINERS)
def test_scalar_and_slice_patterns(kind: str) -> None:
    n = len(PATTERN_ADDRESSES)
    c = CONTAINERS[kind](n)
    for i, a in enumerate(PATTERN_ADDRESSES):
        store(c, i, DevicePtr(a))
    assert table_bits(c) == list(PATTERN_ADDRESSES)
    c2 = CONTAINERS[kind](n + 2)
    store(c2, slice(1, n + 1), [DevicePtr(a) for a in PATTERN_ADDRESSES])
    assert table_bits(c2) == [0, *PATTERN_ADDRESSES, 0]
    c3 = CONTAINERS[kind](n)
    store(c3, slice(None), np.array(PATTERN_ADDRESSES, dtype=np.uint64))
    assert table_bits(c3) == list(PATTERN_ADDRESSES)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=20), st.sampled_from(list(CONTAINERS)))
def test_random_store(values: list[int], kind: str) -> None:
    c = CONTAINERS[kind](len(values))
    store(c, slice(0, len(values)), [DevicePtr(a) for a in values])
    assert table_bits(c) == values


def test_int64_container_reads_twos_complement() -> None:
    t = torch.zeros(1, dtype=torch.int64)
    store(t, 0, DevicePtr(2**64 - 8))
    assert t.item() == -8
    u = torch.zeros(1, dtype=torch.uint64)
    store(u, 0, DevicePtr(2**64 - 8))
    assert u.item() == 2**64 - 8


def test_2d_and_tuple_index() -> None:
    t = torch.zeros((2, 3), dtype=torch.int64)
    store(t, (1, 2), DevicePtr(2**63))
    store(t, (0, slice(0, 2)), [DevicePtr(1), DevicePtr(2**64 - 1)])
    assert table_bits(t.reshape(-1)) == [1, 2**64 - 1, 0, 0, 0, 2**63]


def test_from_tensors() -> None:
    ts = [torch.zeros(3), torch.zeros(5)]
    c = np.zeros(2, dtype=np.int64)
    store(c, slice(0, 2), ts)
    assert table_bits(c) == [t.data_ptr() for t in ts]


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float64, torch.uint32])
def test_wrong_torch_dtype(dtype: torch.dtype) -> None:
    with pytest.raises(PtrTypeError, match="int64 or uint64 container"):
        store(torch.zeros(2, dtype=dtype), 0, DevicePtr(1))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_wrong_numpy_dtype(dtype: type) -> None:
    with pytest.raises(PtrTypeError, match="int64 or uint64 container"):
        store(np.zeros(2, dtype=dtype), 0, DevicePtr(1))


@pytest.mark.parametrize(
    "bad", [5, 2**63, -8, np.uint64(5), 1.5, None, True, [5], np.array([1], dtype=np.int64)]
)
def test_raw_values_rejected(bad: object) -> None:
    t = torch.zeros(1, dtype=torch.int64)
    with pytest.raises(TypeError):
        store(t, slice(0, 1) if isinstance(bad, (list, np.ndarray)) else 0, bad)
    assert t.item() == 0


def test_non_container_rejected() -> None:
    with pytest.raises(PtrTypeError, match="torch tensor or numpy array"):
        store([0, 0], 0, DevicePtr(1))  # type: ignore[arg-type]


def test_length_mismatch_writes_nothing() -> None:
    t = torch.zeros(4, dtype=torch.uint64)
    with pytest.raises(LengthMismatchError):
        store(t, slice(0, 3), [DevicePtr(1), DevicePtr(2)])
    with pytest.raises(LengthMismatchError):
        store(t, slice(0, 2), DevicePtr(1))
    with pytest.raises(IndexError):
        store(t, 4, DevicePtr(1))
    assert t.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("enc", [Encoding.U64, Encoding.I64])
def test_ptr_tensor(enc: Encoding) -> None:
    ptrs = [DevicePtr(a) for a in PATTERN_ADDRESSES]
    t = ptr_tensor(ptrs, encoding=enc)
    assert t.dtype == enc.torch_dtype
    assert table_bits(t) == list(PATTERN_ADDRESSES)
    assert table_bits(ptr_tensor([FakeTensor(2**64 - 8), FakeTensor(-16)], encoding=enc)) == [
        2**64 - 8,
        2**64 - 16,
    ]


def test_ptr_tensor_default_and_device() -> None:
    ts = [torch.zeros(2), torch.zeros(2)]
    t = ptr_tensor(ts, device="cpu")
    assert t.dtype == torch.int64
    assert t.tolist() == [x.data_ptr() for x in ts]
    with pytest.raises(PtrTypeError):
        ptr_tensor([1, 2])
    with pytest.raises(PtrTypeError):
        ptr_tensor(ts, encoding="U64")  # type: ignore[arg-type]


@pytest.mark.parametrize("idx_dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64])
@pytest.mark.parametrize("stride", [4096, np.int64(4096), np.uint64(4096), np.int32(4096)])
def test_addresses_stay_uint64(idx_dtype: type, stride: object) -> None:
    base = DevicePtr(2**63 + 8)
    out = addresses(base, np.arange(5, dtype=idx_dtype), stride, offset=16)
    assert out.dtype == np.uint64
    assert out.tolist() == [2**63 + 8 + k * 4096 + 16 for k in range(5)]


def test_addresses_high_low_bits_exact() -> None:
    base = DevicePtr(2**64 - 2**20 + 1)  # odd low bit would vanish in float64
    out = addresses(base, [0, 1, 2], 8)
    assert out.tolist() == [base.addr, base.addr + 8, base.addr + 16]


def test_addresses_array_stride_and_offset() -> None:
    out = addresses(DevicePtr(0), [1, 2, 3], np.array([10, 20, 30]), np.array([1, 2, 3], dtype=np.uint32))
    assert out.tolist() == [11, 42, 93]


def test_addresses_overflow() -> None:
    with pytest.raises(AddressOverflowError, match="leaves"):
        addresses(DevicePtr(2**64 - 4096), [0, 1], 4096)
    with pytest.raises(AddressOverflowError):
        addresses(DevicePtr(2**63), [2**62], 4)
    with pytest.raises(AddressOverflowError):
        addresses(DevicePtr(1), [1, 2], np.array([1, 2**63], dtype=np.uint64))
    with pytest.raises(AddressOverflowError):
        addresses(DevicePtr(2**64 - 1), [0], 1, offset=1)
    assert addresses(DevicePtr(2**64 - 4096), [0, 1], 4095).tolist() == [2**64 - 4096, 2**64 - 1]


def test_addresses_bad_input() -> None:
    with pytest.raises(PtrTypeError, match="integers"):
        addresses(DevicePtr(0), np.array([1.0, 2.0]), 8)
    with pytest.raises(AddressRangeError, match="non-negative"):
        addresses(DevicePtr(0), [-1, 2], 8)
    with pytest.raises(AddressRangeError):
        addresses(DevicePtr(0), [1], -8)
    with pytest.raises(PtrTypeError):
        addresses(2**63, [1], 8)  # type: ignore[arg-type]
    with pytest.raises(PtrTypeError):
        addresses(DevicePtr(0), [True, False], 8)
    with pytest.raises(LengthMismatchError):
        addresses(DevicePtr(0), [1, 2], [8, 8, 8])
    assert addresses(DevicePtr(0), np.array([], dtype=np.int64), 8).dtype == np.uint64


def test_read_only_containers_are_refused_and_unchanged() -> None:
    """Issue 22 item 18: ``store(buf.numpy(), 0, p)`` (a read-only view) is a PtrTypeError,
    not numpy's ValueError, and writes nothing; so is any read-only array."""
    buf = PtrBuffer(4, pin_memory=False)
    ro = np.zeros(3, dtype=np.int64)
    ro.flags.writeable = False
    for arr in (buf.numpy(), ro):
        for index, value in ((0, DevicePtr(8)), (slice(0, 2), [DevicePtr(8), DevicePtr(16)])):
            with pytest.raises(PtrTypeError, match="read-only"):
                store(arr, index, value)  # type: ignore[arg-type]
        assert not arr.any()
    assert buf.numpy().tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_tensors_are_refused(layout: str) -> None:
    dense = torch.zeros(2, 2, dtype=torch.int64)
    with warnings.catch_warnings():  # torch: "Sparse CSR tensor support is in beta state"
        warnings.simplefilter("ignore", UserWarning)
        sparse = dense.to_sparse() if layout == "coo" else dense.to_sparse_csr()
    with pytest.raises(PtrTypeError, match="dense"):
        store(sparse, 0, DevicePtr(8))
    with pytest.raises(PtrTypeError):
        store(sparse, (0, 1), DevicePtr(8))
    assert not sparse.to_dense().any()
