"""The core's rules, kept the same everywhere: bounds, mixed address sequences, comparisons,
pooled buffers, number formatting, the public namespace, the table base."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import devptr
from devptr import (
    CapacityError,
    DevicePtr,
    LengthMismatchError,
    PtrBuffer,
    PtrBufferPool,
    PtrTable,
    PtrTypeError,
    SizeBuffer,
    StateError,
    ptr_tensor,
    store,
)
from devptr._errors import describe
from devptr._table_base import TableBase
from devptr.testing import FakeTensor, table_bits

P, Q = DevicePtr(0x1000), DevicePtr(0x2000)


# -- bounds: 0 <= i < capacity, slice bounds in [0, capacity], nothing written on error --
def _filled(n: int = 4) -> PtrBuffer:
    buf = PtrBuffer(n, pin_memory=False)
    buf.fill(0, [DevicePtr(8 * (k + 1)) for k in range(n)])
    return buf


@pytest.mark.parametrize(
    "index", [slice(-2, None), slice(2, 10), slice(None, 5), slice(-1, 4), slice(3, 1), slice(0, 4, 2)]
)
def test_buffer_slices_out_of_bounds_write_nothing(index: slice) -> None:
    buf = _filled()
    before = buf.numpy().copy()
    with pytest.raises((CapacityError, PtrTypeError)):
        buf[index] = [P, P]
    with pytest.raises((CapacityError, PtrTypeError)):
        buf[index]
    assert np.array_equal(buf.numpy(), before)


def test_buffer_slices_within_bounds() -> None:
    buf = _filled()
    assert buf[4:] == [] and buf[0:0] == []
    assert [p.addr for p in buf[2:]] == [24, 32]
    buf[2:4] = [P, Q]
    assert buf[2:4] == [P, Q]
    with pytest.raises(LengthMismatchError):
        buf[0:2] = [P]


@pytest.mark.parametrize("i", [-1, -4, 4, 100])
def test_buffer_index_out_of_range(i: int) -> None:
    buf = _filled()
    with pytest.raises(CapacityError, match=f"index {i} out of range for capacity 4"):
        buf[i] = P
    with pytest.raises(CapacityError):
        buf[i]


def test_fill_bounds() -> None:
    buf = _filled()
    for start in (-1, 5):
        with pytest.raises(CapacityError):
            buf.fill(start, [P])
    with pytest.raises(CapacityError, match="do not fit"):
        buf.fill(3, [P, Q])
    assert buf.fill(4, []) == 4
    assert [p.addr for p in buf[:]] == [8, 16, 24, 32]


@pytest.mark.parametrize("make", [lambda: torch.zeros(4, dtype=torch.int64), lambda: np.zeros(4, np.uint64)])
@pytest.mark.parametrize(
    ("index", "value"),
    [(-1, P), (4, P), (slice(-2, None), [P, P]), (slice(2, 10), [P, P]), ([0, 4], [P, P]), ([-1], [P])],
)
def test_store_bounds_write_nothing(make: object, index: object, value: object) -> None:
    container = make()  # type: ignore[operator]
    with pytest.raises(CapacityError):
        store(container, index, value)  # type: ignore[arg-type]
    assert [int(v) for v in container.tolist()] == [0, 0, 0, 0]


def test_store_2d_bounds() -> None:
    t = torch.zeros(2, 3, dtype=torch.int64)
    store(t, (1, 2), P)
    assert t[1, 2].item() == P.addr
    with pytest.raises(CapacityError, match="dimension 1"):
        store(t, (1, 3), P)
    with pytest.raises(CapacityError):
        store(t, (0, 0, 0), P)


# -- mixed sequences of tensors, DevicePtrs and objects with data_ptr() ---------------------
def test_mixed_sequences_are_addresses_everywhere() -> None:
    ts = [torch.zeros(2), torch.zeros(3)]
    fake = FakeTensor(-8)
    items: list[object] = [ts[0], DevicePtr.NULL, fake, ts[1], P]
    want = [ts[0].data_ptr(), 0, 2**64 - 8, ts[1].data_ptr(), P.addr]
    buf = PtrBuffer(5, pin_memory=False)
    buf.fill(0, items)  # type: ignore[arg-type]
    assert buf.numpy().tolist() == want
    t = torch.zeros(5, dtype=torch.int64)
    store(t, slice(0, 5), items)  # type: ignore[arg-type]
    assert table_bits(t) == want
    assert table_bits(ptr_tensor(items)) == want  # type: ignore[arg-type]
    buf.fill(0, [P, ts[0]])  # DevicePtr first, then a tensor
    assert buf.numpy()[:2].tolist() == [P.addr, ts[0].data_ptr()]


@pytest.mark.parametrize(
    ("items", "pos", "what"),
    [
        ([torch.zeros(1), DevicePtr.NULL, 5], 2, "int 5"),
        ([DevicePtr.NULL, torch.zeros(1), "x"], 2, "str 'x'"),
        ([DevicePtr.NULL, 7], 1, "int 7"),
        ([torch.zeros(1), None], 1, "NoneType None"),
    ],
)
def test_errors_name_the_item_and_its_position(items: list[object], pos: int, what: str) -> None:
    buf = _filled(3)
    before = buf.numpy().copy()
    with pytest.raises(PtrTypeError, match=rf"ptrs\[{pos}\] must be a DevicePtr .*\(got {what}\)"):
        buf.fill(0, items)  # type: ignore[arg-type]
    assert np.array_equal(buf.numpy(), before)
    with pytest.raises(PtrTypeError, match=rf"\[{pos}\]"):
        store(torch.zeros(len(items), dtype=torch.int64), slice(0, len(items)), items)  # type: ignore[arg-type]


# -- DevicePtr compares with DevicePtrs only -------------------------------------------------
@pytest.mark.parametrize("other", [16, 17, np.int64(16), np.uint64(16), True])
def test_devptr_refuses_int_equality_and_ordering_alike(other: object) -> None:
    p = DevicePtr(16)
    for op in (
        lambda: p == other,
        lambda: p != other,
        lambda: other == p,
        lambda: p < other,  # type: ignore[operator]
        lambda: p >= other,  # type: ignore[operator]
    ):
        with pytest.raises(PtrTypeError, match="compares only with a DevicePtr"):
            op()


def test_devptr_comparisons_between_devptrs() -> None:
    a, b = DevicePtr(16), DevicePtr(2**64 - 8)
    assert a == DevicePtr(16) and a != b and a < b and b > a and a <= a and b >= a
    assert sorted([b, a]) == [a, b]
    assert len({a, DevicePtr(16), b}) == 2
    assert a != "16" and a != None  # noqa: E711 - other objects are simply unequal
    assert a in [b, DevicePtr(16)]


# -- pools hand out no address of a previous holder -------------------------------------------
def test_pooled_buffer_reacquired_is_null() -> None:
    pool = PtrBufferPool(8, pin_memory=False)
    a = pool.acquire(8)
    a.fill(0, [DevicePtr(2**64 - 8)] * 8)
    pool.release(a)
    b = pool.acquire(5)
    assert b.numpy().tolist() == [0] * 5
    assert all(p.is_null for p in b[:])
    b.fill(0, [P] * 5)
    pool.release(b)
    c = pool.acquire(8)
    assert c.numpy().tolist() == [0] * 8 and pool.allocated == 1


def test_pooled_descriptor_buffers_reacquired_are_null() -> None:
    from devptr.adapters.ec_connector import DescriptorBufferPool

    pool = DescriptorBufferPool("cpu", backend="xpu")
    a = pool.acquire(2)
    a.add_copies(0, [P, Q], [Q, P], [8, 16])
    pool.release(a)
    b = pool.acquire(2)
    assert [col.tolist() for col in b.numpy()] == [[0, 0], [0, 0], [0, 0]]


# -- numbers: counts and indices in decimal, addresses in hex ----------------------------------
def test_counts_print_in_decimal_addresses_in_hex() -> None:
    assert describe(5) == "int 5"
    with pytest.raises(PtrTypeError, match=r"\(got int 5\)"):
        PtrBuffer(2).fill(0, [5])  # type: ignore[list-item]
    with pytest.raises(CapacityError, match="index 10 out of range for capacity 2"):
        PtrBuffer(2)[10]
    with pytest.raises(ValueError, match=r"got -0x10\)"):
        DevicePtr(-0x10)
    with pytest.raises(ValueError, match="got -3"):
        SizeBuffer(2).fill(0, [1, -3])


# -- the public namespace and the CLI ---------------------------------------------------------
def test_dir_shows_the_public_api_only() -> None:
    names = dir(devptr)
    assert set(devptr.__all__) <= set(names)
    for private in ("Any", "TYPE_CHECKING", "importlib", "annotations", "_HOMES"):
        assert private not in names
    assert set(names) - set(devptr.__all__) == {"__version__"}


def test_cli_version() -> None:
    from devptr.cli import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"devptr {devptr.__version__}"


# -- one table base ----------------------------------------------------------------------------
def _tables() -> list[TableBase]:
    from devptr.adapters.ec_connector import DescriptorBufferPool

    return [
        PtrBuffer(3, pin_memory=False),
        PtrTable(3, {"p": devptr.Column.PTR, "n": devptr.Column.INT}, pin_memory=False),
        SizeBuffer(3, pin_memory=False),
        DescriptorBufferPool("cpu", pin_memory=False).acquire(3),
    ]


@pytest.mark.parametrize("k", range(4), ids=["PtrBuffer", "PtrTable", "SizeBuffer", "DescriptorBuffers"])
def test_the_four_tables_share_one_base(k: int) -> None:
    table = _tables()[k]
    assert isinstance(table, TableBase)
    assert table.capacity == len(table) == 3
    assert repr(table).startswith(type(table).__name__ + "(")
    assert table.device_type is None and table.is_pinned is False
    for bad, err in ((-1, CapacityError), (4, CapacityError), (1.0, PtrTypeError), (True, PtrTypeError)):
        with pytest.raises(err):
            table._count(bad)
    if not isinstance(table, PtrTable):  # a PtrTable's views are 2-D records
        with pytest.raises((StateError, TypeError)):
            table.to_device(2)  # type: ignore[attr-defined]


def test_ptrbuffer_stays_subscriptable_with_a_default() -> None:
    from typing import Literal, get_args

    assert get_args(PtrBuffer[Literal[72]]) == (Literal[72],)
    assert PtrBuffer[int] is not None and PtrBuffer[4] is not None  # type: ignore[valid-type]
    from devptr._buffer import CapT

    assert CapT.__default__ is int  # type: ignore[attr-defined]


def test_a_bad_data_ptr_value_names_its_position() -> None:
    class Odd:
        def data_ptr(self) -> float:
            return 1.5

    with pytest.raises(PtrTypeError, match=r"ptrs\[1\]: data_ptr\(\) must be an int"):
        PtrBuffer(2).fill(0, [torch.zeros(1), Odd()])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"ptrs\[0\]: data_ptr\(\) is not an int64 or uint64"):
        PtrBuffer(2).fill(0, [FakeTensorBeyond()])  # type: ignore[list-item]


class FakeTensorBeyond:
    def data_ptr(self) -> int:
        return 1 << 64
