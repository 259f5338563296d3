"""The vendorable module on a CUDA device: ``store`` into device tensors (int64 and uint64),
the core's device mirror built on it, real device addresses a kernel then dereferences, and
the high-address fixture on device tensors. Run against devptr's API, the module, and a
vendored copy (the same three implementations as ``test_parity.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from vendor_impls import make

from devptr import DevicePtr, Encoding, PtrBuffer, ptr_tensor
from devptr.testing import HIGH_ADDRESSES, PATTERN_ADDRESSES, high_addresses, real_address, table_bits

pytestmark = pytest.mark.gpu

IMPLS = ["core", "vendor", "copy"]
DTYPES = [torch.int64, torch.uint64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("which", IMPLS)
def test_store_into_device_tensors_bit_exact(which: str, dtype: torch.dtype, tmp_path: Path) -> None:
    a = make(which, tmp_path).api
    n = len(PATTERN_ADDRESSES)
    t = torch.zeros(n + 2, dtype=dtype, device="cuda")
    for i, addr in enumerate(PATTERN_ADDRESSES):
        a.store(t, i, a.DevicePtr(addr))
    assert table_bits(t) == [*PATTERN_ADDRESSES, 0, 0]
    a.store(t, slice(2, n + 2), np.array(PATTERN_ADDRESSES, dtype=np.uint64))
    assert table_bits(t)[2:] == list(PATTERN_ADDRESSES)
    a.store(t, [0, 1], [a.DevicePtr(HIGH_ADDRESSES[2]), a.DevicePtr(HIGH_ADDRESSES[3])])
    assert table_bits(t)[:2] == [HIGH_ADDRESSES[2], HIGH_ADDRESSES[3]]
    t2 = torch.zeros((2, 3), dtype=dtype, device="cuda")
    a.store(t2, (1, slice(0, 3)), [a.DevicePtr(x) for x in HIGH_ADDRESSES[:3]])
    a.store(t2, (0, 2), a.DevicePtr(HIGH_ADDRESSES[3]))
    assert table_bits(t2) == [0, 0, HIGH_ADDRESSES[3], *HIGH_ADDRESSES[:3]]
    before = table_bits(t)
    with pytest.raises(a.CapacityError):
        a.store(t, -1, a.DevicePtr(8))
    with pytest.raises(a.CapacityError):
        a.store(t, slice(n, n + 5), [a.DevicePtr(8)] * 5)
    with pytest.raises(a.LengthMismatchError):
        a.store(t, slice(0, 2), [a.DevicePtr(8)])
    assert table_bits(t) == before  # nothing written on error
    if dtype == torch.int64:
        assert t[0].item() == HIGH_ADDRESSES[2] - 2**64  # int64 holds the two's complement


@pytest.mark.parametrize("encoding", [Encoding.I64, Encoding.U64])
@pytest.mark.parametrize("which", IMPLS)
def test_device_mirror_matches_store(which: str, encoding: Encoding, tmp_path: Path) -> None:
    """The core's device mirror (PtrBuffer.to_device, ptr_tensor) and the module's store()
    into a device tensor hold the same bits for real CUDA allocations, in both encodings."""
    a = make(which, tmp_path).api
    tensors = [torch.empty(64, device="cuda") for _ in range(4)]
    want = [x.data_ptr() for x in tensors]
    buf = PtrBuffer(4, device="cuda", pin_memory=True)
    buf.fill(0, tensors)
    mirror = buf.to_device(encoding=encoding, non_blocking=True)
    torch.cuda.synchronize()
    table = torch.zeros(4, dtype=encoding.torch_dtype, device="cuda")
    a.store(table, slice(0, 4), tensors)
    assert mirror.dtype == table.dtype == encoding.torch_dtype
    assert table_bits(mirror) == table_bits(table) == want
    assert table_bits(ptr_tensor(tensors, encoding=encoding, device="cuda")) == want
    assert a.DevicePtr.of(tensors[1], 8).addr == want[1] + 8
    assert a.encoding_for(table) is a.Encoding.I64 and a.encoding_for("cuda:0") is a.Encoding.I64


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("which", IMPLS)
def test_a_kernel_writes_through_a_stored_table(which: str, dtype: torch.dtype, tmp_path: Path) -> None:
    """The stored bits are addresses the device can use: a Triton kernel loads each entry
    of the table (int64 or uint64), casts it to a pointer and writes through it."""
    triton = pytest.importorskip("triton")
    import triton.language as tl

    @triton.jit
    def _write_through_kernel(table_ptr, VALUE: tl.constexpr):
        i = tl.program_id(0)
        target = tl.load(table_ptr + i).to(tl.pointer_type(tl.float32), bitcast=True)
        tl.store(target + i, VALUE)

    a = make(which, tmp_path).api
    targets = [torch.zeros(8, device="cuda") for _ in range(5)]
    table = torch.zeros(5, dtype=dtype, device="cuda")
    a.store(table, slice(0, 5), [a.DevicePtr.of(x) for x in targets])
    _write_through_kernel[(5,)](table, VALUE=7.0)
    torch.cuda.synchronize()
    for i, x in enumerate(targets):
        want = torch.zeros(8, device="cuda")
        want[i] = 7.0
        assert torch.equal(x, want), (i, x)


def test_high_addresses_flip_device_tensors_only() -> None:
    dev, host = torch.zeros(4, device="cuda"), torch.zeros(4)
    real_dev, real_host = dev.data_ptr(), host.data_ptr()
    assert real_dev < 2**63
    with high_addresses():
        assert dev.data_ptr() == real_dev ^ 2**63 and dev.untyped_storage().data_ptr() >= 2**63
        assert host.data_ptr() == real_host
        table = ptr_tensor([dev], encoding=Encoding.U64)
        assert table.item() >= 2**63
    assert real_address(DevicePtr(int(table.item()))).addr == real_dev
