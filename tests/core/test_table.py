"""PtrTable: pointer columns next to integer columns."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from devptr import (
    AddressRangeError,
    CapacityError,
    Column,
    DevicePtr,
    Encoding,
    LengthMismatchError,
    PtrTable,
    PtrTypeError,
)
from devptr.testing import HIGH_ADDRESSES

COLS = {"src": Column.PTR, "dst": Column.PTR, "nbytes": Column.INT, "flag": Column.INT}


def test_fill_and_views() -> None:
    t = PtrTable(5, COLS, device="cpu", pin_memory=False)
    src = [DevicePtr(a) for a in HIGH_ADDRESSES]
    dst = np.array([1, 2, 3, 2**63 - 1], dtype=np.uint64)
    end = t.fill(1, src=src, dst=dst, nbytes=[4096, 1, 0, 2**40], flag=np.array([-1, 0, 1, 2]))
    assert end == 5
    u = t.host(Encoding.U64)
    i = t.host(Encoding.I64)
    assert u.shape == (5, 4) and u.dtype == torch.uint64 and i.dtype == torch.int64
    assert u[1:, 0].tolist() == list(HIGH_ADDRESSES)
    assert i[1:, 2].tolist() == [4096, 1, 0, 2**40]
    assert i[1:, 3].tolist() == [-1, 0, 1, 2]
    assert t.column("src").tolist()[1:] == list(HIGH_ADDRESSES)
    assert t.column("flag").dtype == np.int64 and t.column("flag")[1] == -1
    assert t[1] == {"src": DevicePtr(HIGH_ADDRESSES[0]), "dst": DevicePtr(1), "nbytes": 4096, "flag": -1}
    assert t.column_index("nbytes") == 2
    dev = t.to_device(encoding=Encoding.I64)
    assert dev.view(torch.uint64)[1:, 0].tolist() == list(HIGH_ADDRESSES)


def test_row_setitem() -> None:
    t = PtrTable(2, COLS, pin_memory=False)
    t[0] = {"src": DevicePtr(2**64 - 8), "dst": DevicePtr(0), "nbytes": 7, "flag": -3}
    assert t[0]["src"] == DevicePtr(2**64 - 8) and t[0]["flag"] == -3
    with pytest.raises(PtrTypeError, match="DevicePtr"):
        t[1] = {"src": 5, "dst": DevicePtr(0), "nbytes": 7, "flag": 0}
    with pytest.raises(PtrTypeError, match="takes an int"):
        t[1] = {"src": DevicePtr(1), "dst": DevicePtr(0), "nbytes": DevicePtr(7), "flag": 0}
    with pytest.raises(CapacityError):
        t[2] = {"src": DevicePtr(1), "dst": DevicePtr(0), "nbytes": 7, "flag": 0}
    assert t.numpy()[1].tolist() == [0, 0, 0, 0]


def test_errors_write_nothing() -> None:
    t = PtrTable(2, COLS, pin_memory=False)
    ok = {"src": [DevicePtr(1)], "dst": [DevicePtr(2)], "nbytes": [3], "flag": [0]}
    with pytest.raises(PtrTypeError, match="missing"):
        t.fill(0, src=[DevicePtr(1)])
    with pytest.raises(LengthMismatchError):
        t.fill(0, **{**ok, "nbytes": [1, 2]})
    with pytest.raises(PtrTypeError):
        t.fill(0, **{**ok, "src": [1]})
    with pytest.raises(PtrTypeError):
        t.fill(0, **{**ok, "nbytes": [1.5]})
    with pytest.raises(AddressRangeError):
        t.fill(0, **{**ok, "nbytes": np.array([2**63], dtype=np.uint64)})
    with pytest.raises(CapacityError):
        t.fill(2, **ok)
    assert t.numpy().tolist() == [[0] * 4, [0] * 4]
    with pytest.raises(PtrTypeError):
        PtrTable(2, {})
    with pytest.raises(PtrTypeError):
        PtrTable(2, {"a": "ptr"})  # type: ignore[dict-item]


def test_empty_batch_writes_nothing_and_returns_start() -> None:
    from devptr.kernels import SEGMENT_COLUMNS

    table = PtrTable(4, SEGMENT_COLUMNS, pin_memory=False)
    table.fill(0, src=[DevicePtr(8)], dst=[DevicePtr(16)], size=[4])
    before = table.numpy().copy()
    assert table.fill(1, src=[], dst=[], size=[]) == 1
    assert table.fill(4, src=[], dst=[], size=()) == 4
    assert (table.numpy() == before).all()
    with pytest.raises(CapacityError):
        table.fill(5, src=[], dst=[], size=[])


def test_row_assignment_takes_a_mapping() -> None:
    import copy
    import pickle

    table = PtrTable(2, {"p": Column.PTR, "n": Column.INT}, pin_memory=False)
    for bad in (5, [DevicePtr(8), 1], "p"):
        with pytest.raises(PtrTypeError, match="mapping"):
            table[0] = bad  # type: ignore[assignment]
    assert (table.numpy() == 0).all()
    table[np.int64(1)] = {"p": DevicePtr(2**63), "n": -1}  # type: ignore[index]
    dup = copy.deepcopy(table)
    dup[0] = {"p": DevicePtr(8), "n": 2}
    assert dup[1] == {"p": DevicePtr(2**63), "n": -1} and table[0] == {"p": DevicePtr(0), "n": 0}
    assert dup.column("n").tolist() == [2, -1]
    with pytest.raises(PtrTypeError, match="cannot be pickled"):
        pickle.dumps(table)


def test_to_device_follows_the_count_and_the_writes() -> None:
    """``to_device`` reuses its views while the count stays the same (the hot path of an
    engine's step); a new count, later host writes and a copied table are each uploaded
    exactly, into their own mirror."""
    t = PtrTable(6, COLS, device="cpu", pin_memory=False)
    t.fill(0, src=[DevicePtr(a + 1) for a in range(6)], dst=np.arange(6, dtype=np.uint64),
           nbytes=[7] * 6, flag=list(range(6)))
    out = t.to_device(3)
    assert out.shape == (3, 4) and out.tolist() == t.host()[:3].tolist()
    assert t.device()[3:].eq(0).all()  # rows past the count are not copied
    t.fill(0, src=[DevicePtr(99)], dst=[DevicePtr(98)], nbytes=[5], flag=[-1])
    assert t.to_device(3)[0].tolist() == [99, 98, 5, -1]  # same count: the new host data
    assert t.to_device(5).tolist() == t.host()[:5].tolist()  # another count
    assert t.to_device().shape == (6, 4) and t.device().tolist() == t.host().tolist()
    assert t.to_device(2, encoding=Encoding.U64).dtype == torch.uint64
    assert t.to_device(0).shape == (0, 4)
    with pytest.raises(CapacityError):
        t.to_device(7)

    import copy

    dup = copy.deepcopy(t)
    dup.fill(0, src=[DevicePtr(1234)], dst=[DevicePtr(1)], nbytes=[1], flag=[1])
    dup.to_device(3)
    assert dup.device()[0, 0].item() == 1234 and t.device()[0, 0].item() == 99
    view = t.to_device(3)
    view.resize_(1, 4)  # a caller's view is its own: the next upload's is whole
    assert t.to_device(3).shape == (3, 4)


def test_to_device_of_a_host_only_table_raises() -> None:
    from devptr import StateError

    t = PtrTable(2, COLS, pin_memory=False)
    with pytest.raises(StateError, match="no device mirror"):
        t.to_device(1)
