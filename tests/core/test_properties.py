"""Property tests of the core's write paths (issue 22, deliverable 6).

For random addresses (every bit pattern, weighted to the edges: 0, 2**63 - 1, 2**63,
2**64 - 1), random positions and random bad inputs:

- bit-exact: what ``PtrBuffer.fill``/``fill_strided``/``buf[i] = p``, ``PtrTable.fill``,
  ``store()``, ``ptr_tensor()`` and ``addresses()`` write reads back with the same 64
  bits in both encodings (uint64 as is, int64 as two's complement);
- a failing call raises a devptr error and leaves its target byte-identical;
- address arithmetic that leaves ``[0, 2**64)`` always raises (never wraps), checked
  against a Python-integer reference.

The example counts come from a hypothesis settings profile: ``ci`` (the default: the
whole module in well under 30 s on a 2-core machine, both torch versions) or
``thorough`` (``DEVPTR_HYPOTHESIS_PROFILE=thorough``: 8x more examples).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devptr import (
    AddressOverflowError,
    Column,
    DevicePtr,
    DevPtrError,
    Encoding,
    PtrBuffer,
    PtrTable,
    addresses,
    ptr_tensor,
    store,
)

settings.register_profile(
    "devptr-core-ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "devptr-core-thorough", max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
PROFILE = settings.get_profile(f"devptr-core-{os.environ.get('DEVPTR_HYPOTHESIS_PROFILE', 'ci')}")

EDGES = [0, 1, 8, 2**63 - 8, 2**63 - 1, 2**63, 2**63 + 8, 2**64 - 8, 2**64 - 1]
addrs = st.one_of(st.sampled_from(EDGES), st.integers(0, 2**64 - 1))
addr_lists = st.lists(addrs, min_size=0, max_size=24)


def _signed(a: int) -> int:
    return a - 2**64 if a >= 2**63 else a


def _bits(buf: PtrBuffer | PtrTable) -> bytes:
    return buf.numpy().tobytes()


def _reads_back(buf: PtrBuffer, start: int, values: list[int]) -> None:
    end = start + len(values)
    assert buf.host(Encoding.U64)[start:end].tolist() == values
    assert buf.host(Encoding.I64)[start:end].tolist() == [_signed(a) for a in values]
    assert buf.numpy()[start:end].tolist() == values
    assert [p.addr for p in buf[start:end]] == values


# -- PtrBuffer --------------------------------------------------------------------------
@PROFILE
@given(values=addr_lists, start=st.integers(0, 30), capacity=st.integers(0, 30), as_array=st.booleans())
def test_fill_is_bit_exact_or_writes_nothing(
    values: list[int], start: int, capacity: int, as_array: bool
) -> None:
    buf = PtrBuffer(capacity, pin_memory=False)
    buf.fill(0, np.arange(capacity, dtype=np.uint64) * np.uint64(8))  # a known background
    before = _bits(buf)
    src: Any = np.array(values, dtype=np.uint64) if as_array else [DevicePtr(a) for a in values]
    if start + len(values) > capacity:
        with pytest.raises(DevPtrError):
            buf.fill(start, src)
        assert _bits(buf) == before
        return
    assert buf.fill(start, src) == start + len(values)
    _reads_back(buf, start, values)
    rest = np.frombuffer(before, dtype=np.uint64).copy()
    rest[start : start + len(values)] = values
    assert buf.numpy().tolist() == rest.tolist()  # nothing outside the range changed


bad_items = st.sampled_from([5, 2**63, -1, 1.5, None, "0x10", np.uint64(8), np.int64(8), True])


@PROFILE
@given(values=st.lists(addrs, min_size=1, max_size=12), pos=st.integers(0, 11), bad=bad_items)
def test_one_bad_item_anywhere_leaves_the_buffer_identical(values: list[int], pos: int, bad: object) -> None:
    buf = PtrBuffer(16, pin_memory=False)
    buf.fill(0, [DevicePtr(a) for a in values])
    before = _bits(buf)
    items: list[object] = [DevicePtr(a) for a in values]
    items.insert(min(pos, len(items)), bad)
    with pytest.raises(DevPtrError):
        buf.fill(0, items)  # type: ignore[arg-type]
    with pytest.raises(DevPtrError):
        buf[0] = bad  # type: ignore[assignment]
    assert _bits(buf) == before


@PROFILE
@given(values=st.lists(addrs, min_size=1, max_size=16), data=st.data())
def test_item_writes_are_bit_exact(values: list[int], data: st.DataObject) -> None:
    buf = PtrBuffer(len(values), pin_memory=False)
    order = data.draw(st.permutations(range(len(values))))
    for k in order:
        index = data.draw(st.sampled_from([k, np.int64(k), np.uint32(k)]))
        buf[index] = DevicePtr(values[k])  # type: ignore[index]
    _reads_back(buf, 0, values)


index_dtypes = st.sampled_from([np.int64, np.int32, np.uint64, np.uint32, np.uint8])


@PROFILE
@given(
    base=addrs,
    index=st.lists(st.integers(0, 2**40), min_size=0, max_size=12),
    stride=st.one_of(st.sampled_from([0, 1, 8, 4096, 2**32, 2**63]), st.integers(0, 2**64 - 1)),
    offset=st.one_of(st.sampled_from([0, 8, 2**63]), st.integers(0, 2**64 - 1)),
    dtype=index_dtypes,
)
def test_strided_is_exact_or_overflows_without_writing(
    base: int, index: list[int], stride: int, offset: int, dtype: type[np.integer[Any]]
) -> None:
    info = np.iinfo(dtype)
    idx = np.array([i % (int(info.max) + 1) for i in index], dtype=dtype)
    want = [base + int(i) * stride + offset for i in idx.tolist()]
    buf = PtrBuffer(max(len(index), 1), pin_memory=False)
    buf.fill(0, np.full(buf.capacity, 2**64 - 1, dtype=np.uint64))
    before = _bits(buf)
    if any(w >= 2**64 for w in want):
        with pytest.raises(AddressOverflowError):
            buf.fill_strided(0, DevicePtr(base), idx, stride, offset)
        with pytest.raises(AddressOverflowError):
            addresses(DevicePtr(base), idx, stride, offset)
        assert _bits(buf) == before
        return
    assert buf.fill_strided(0, DevicePtr(base), idx, stride, offset) == len(want)
    _reads_back(buf, 0, want)
    assert addresses(DevicePtr(base), idx, stride, offset).tolist() == want
    # per-entry strides and offsets take the general path: same results
    strides = np.full(len(want), stride, dtype=np.uint64)
    offsets = np.full(len(want), offset, dtype=np.uint64)
    assert addresses(DevicePtr(base), idx.tolist(), strides, offsets).tolist() == want


# -- PtrTable ---------------------------------------------------------------------------
int64s = st.one_of(st.sampled_from([0, -1, 2**63 - 1, -(2**63)]), st.integers(-(2**63), 2**63 - 1))


@PROFILE
@given(
    rows=st.lists(st.tuples(addrs, int64s), min_size=0, max_size=10),
    start=st.integers(0, 12),
    bad_int=st.one_of(st.none(), st.sampled_from([2**63, -(2**63) - 1, 2**64])),
)
def test_table_columns_are_exact_or_write_nothing(
    rows: list[tuple[int, int]], start: int, bad_int: int | None
) -> None:
    table = PtrTable(12, {"p": Column.PTR, "n": Column.INT}, pin_memory=False)
    table.fill(0, p=np.full(12, 2**63, dtype=np.uint64), n=np.arange(12))
    before = _bits(table)
    ptrs = [DevicePtr(a) for a, _ in rows]
    ints: list[int] = [n for _, n in rows]
    if bad_int is not None and ints:
        ints[len(ints) // 2] = bad_int
    if start + len(rows) > 12 or (bad_int is not None and ints):
        with pytest.raises(DevPtrError):
            table.fill(start, p=ptrs, n=ints)
        assert _bits(table) == before
        return
    assert table.fill(start, p=ptrs, n=ints) == start + len(rows)
    end = start + len(rows)
    assert table.column("p")[start:end].tolist() == [a for a, _ in rows]
    assert table.column("n")[start:end].tolist() == ints
    assert table.host(Encoding.I64)[start:end, 0].tolist() == [_signed(a) for a, _ in rows]
    for k, (a, n) in enumerate(rows):
        assert table[start + k] == {"p": DevicePtr(a), "n": n}


# -- store() and ptr_tensor() ---------------------------------------------------------
def _container(kind: str, n: int) -> Any:
    if kind == "torch-i64":
        return torch.arange(n, dtype=torch.int64)
    if kind == "torch-u64":
        return torch.arange(n, dtype=torch.int64).view(torch.uint64)
    if kind == "numpy-i64":
        return np.arange(n, dtype=np.int64)
    return np.arange(n, dtype=np.uint64)


def _container_bits(c: Any) -> list[int]:
    arr = c.view(torch.int64).numpy() if isinstance(c, torch.Tensor) else c
    return [int(v) for v in arr.view(np.uint64)]


kinds = st.sampled_from(["torch-i64", "torch-u64", "numpy-i64", "numpy-u64"])


@PROFILE
@given(kind=kinds, values=st.lists(addrs, min_size=1, max_size=10), data=st.data())
def test_store_is_bit_exact_in_every_container(kind: str, values: list[int], data: st.DataObject) -> None:
    n = len(values) + 2
    c = _container(kind, n)
    k = data.draw(st.integers(0, n - 1))
    store(c, k, DevicePtr(values[0]))
    assert _container_bits(c)[k] == values[0]
    lo = data.draw(st.integers(0, n - len(values)))
    store(c, slice(lo, lo + len(values)), [DevicePtr(a) for a in values])
    assert _container_bits(c)[lo : lo + len(values)] == values


@PROFILE
@given(kind=kinds, values=st.lists(addrs, min_size=1, max_size=6), data=st.data())
def test_failing_store_leaves_the_container_identical(
    kind: str, values: list[int], data: st.DataObject
) -> None:
    n = len(values)
    c = _container(kind, n)
    before = _container_bits(c)
    index, ptrs = data.draw(
        st.sampled_from(
            [
                (n, DevicePtr(values[0])),  # past the end
                (-1, DevicePtr(values[0])),  # negative: a bug, not "last"
                (0, values[0]),  # a raw int
                (slice(0, n), [DevicePtr(a) for a in values[:-1]]),  # wrong length
                (slice(0, n + 1), [DevicePtr(a) for a in values] + [DevicePtr(0)]),  # bound past the end
                (slice(0, n), [DevicePtr(a) for a in values[:-1]] + [values[-1]]),  # raw int last
            ]
        )
    )
    with pytest.raises(DevPtrError):
        store(c, index, ptrs)
    assert _container_bits(c) == before


@PROFILE
@given(values=addr_lists, encoding=st.sampled_from([Encoding.U64, Encoding.I64, None]))
def test_ptr_tensor_is_bit_exact(values: list[int], encoding: Encoding | None) -> None:
    t = ptr_tensor([DevicePtr(a) for a in values], encoding=encoding)
    want = Encoding.I64 if encoding is None else encoding  # the CPU's default: I64
    assert t.dtype == want.torch_dtype and t.shape == (len(values),)
    assert _container_bits(t) == values
    assert t.tolist() == (values if want is Encoding.U64 else [_signed(a) for a in values])
