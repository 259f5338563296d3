"""The vendorable module behaves like devptr's core: the same assertions run on both.

Each test takes ``api``: the ``devptr`` package or ``devptr.vendor.ptrtable``. A last test
checks that the vendorable module imports only the standard library, numpy and torch.
"""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

import devptr
from devptr.testing import HIGH_ADDRESSES, TOP_ALIGNED, FakeTensor, table_bits
from devptr.vendor import ptrtable

HI = HIGH_ADDRESSES[2]


@pytest.fixture(params=["devptr", "vendor"])
def api(request: pytest.FixtureRequest) -> types.ModuleType:
    return devptr if request.param == "devptr" else ptrtable


def test_deviceptr_value_and_encodings(api: types.ModuleType) -> None:
    p = api.DevicePtr(HI)
    assert p.addr == HI and p.signed == HI - 2**64
    assert api.DevicePtr.from_signed(HI - 2**64) == p
    assert api.DevicePtr.of(FakeTensor(HI - 2**64)) == p
    assert p.encode(api.Encoding.I64) == HI - 2**64 and p.encode(api.Encoding.U64) == HI
    assert (p + 16) - p == 16
    assert repr(p) == f"DevicePtr({HI:#x})"


def test_deviceptr_refuses_ints_and_range(api: types.ModuleType) -> None:
    with pytest.raises(TypeError):
        api.DevicePtr(1.0)
    with pytest.raises(TypeError):
        api.DevicePtr(True)
    with pytest.raises(ValueError):
        api.DevicePtr(-16)
    with pytest.raises(OverflowError):
        api.DevicePtr(TOP_ALIGNED) + 16
    with pytest.raises(TypeError):
        int(api.DevicePtr(HI))  # no __int__: it cannot slip into an integer container
    with pytest.raises(TypeError):
        np.zeros(1, dtype=np.uint64)[0] = api.DevicePtr(HI)


def test_buffer_bit_exact_in_both_encodings(api: types.ModuleType) -> None:
    buf = api.PtrBuffer(4, pin_memory=False)
    end = buf.fill(0, [api.DevicePtr(a) for a in HIGH_ADDRESSES])
    assert end == 4 and len(buf) == 4
    for enc in (api.Encoding.I64, api.Encoding.U64):
        view = buf.host(enc)
        assert view.dtype == enc.torch_dtype and table_bits(view) == list(HIGH_ADDRESSES)
    buf[1] = api.DevicePtr(HI)
    assert buf[1] == api.DevicePtr(HI) and table_bits(buf.numpy())[1] == HI
    with pytest.raises(TypeError):
        buf[0] = HI
    with pytest.raises((ValueError, TypeError)):
        buf.numpy()[0] = 1


def test_buffer_views_share_memory(api: types.ModuleType) -> None:
    buf = api.PtrBuffer(2, device="cpu", pin_memory=False)
    i64 = buf.host(api.Encoding.I64)
    buf[0] = api.DevicePtr(HI)
    assert int(i64[0]) == HI - 2**64
    dev = buf.to_device(encoding=api.Encoding.U64, non_blocking=False)
    assert table_bits(dev) == [HI, 0]


def test_failed_write_writes_nothing(api: types.ModuleType) -> None:
    buf = api.PtrBuffer(2, pin_memory=False)
    with pytest.raises(IndexError):
        buf.fill(1, [api.DevicePtr(HI), api.DevicePtr(HI)])
    with pytest.raises(TypeError):
        buf.fill(0, [api.DevicePtr(HI), 5])
    assert table_bits(buf.numpy()) == [0, 0]


def test_strided_addresses_checked(api: types.ModuleType) -> None:
    base = api.DevicePtr(HI)
    got = api.addresses(base, np.array([0, 3, 1]), 0x200000, 8)
    assert got.dtype == np.uint64 and table_bits(got) == [HI + 8 + i * 0x200000 for i in (0, 3, 1)]
    with pytest.raises(OverflowError):
        api.addresses(api.DevicePtr(TOP_ALIGNED), [1], 16)
    buf = api.PtrBuffer(3, pin_memory=False)
    assert buf.fill_strided(0, base, np.array([0, 1, 2]), 64) == 3
    assert table_bits(buf.numpy()) == [HI, HI + 64, HI + 128]


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint64])
def test_store_into_tensors_and_arrays(api: types.ModuleType, dtype: torch.dtype) -> None:
    t = torch.zeros(4, dtype=dtype)
    api.store(t, 2, api.DevicePtr(HI))
    api.store(t, slice(0, 2), [api.DevicePtr(HIGH_ADDRESSES[0]), api.DevicePtr(HIGH_ADDRESSES[3])])
    assert table_bits(t) == [HIGH_ADDRESSES[0], HIGH_ADDRESSES[3], HI, 0]
    arr = np.zeros(2, dtype=np.int64)
    api.store(arr, 1, api.DevicePtr(HI))
    assert table_bits(arr) == [0, HI]
    with pytest.raises(TypeError):
        api.store(torch.zeros(2, dtype=torch.int32), 0, api.DevicePtr(HI))
    with pytest.raises(TypeError):
        api.store(t, 0, HI)


def test_ptr_tensor(api: types.ModuleType) -> None:
    fakes = [FakeTensor(a) for a in HIGH_ADDRESSES]
    for enc in (api.Encoding.I64, api.Encoding.U64):
        t = api.ptr_tensor(fakes, encoding=enc)
        assert t.dtype == enc.torch_dtype and table_bits(t) == list(HIGH_ADDRESSES)


def test_encoding_defaults(api: types.ModuleType) -> None:
    assert api.encoding_for("xpu") is api.Encoding.U64
    assert api.encoding_for("cuda") is api.Encoding.I64
    assert api.encoding_for("cpu") is api.Encoding.I64


def test_vendor_configure_reads_once() -> None:
    try:
        ptrtable.configure("U64")
        assert ptrtable.encoding_for("cuda") is ptrtable.Encoding.U64
        ptrtable.configure("xpu=U64,cuda=I64")
        assert ptrtable.encoding_for("cuda") is ptrtable.Encoding.I64
        with pytest.raises(ValueError):
            ptrtable.configure("cuda=U32")
    finally:
        ptrtable.configure("")
    assert ptrtable.encoding_for("xpu") is ptrtable.Encoding.U64


def test_vendor_errors_share_one_base() -> None:
    for exc in (
        ptrtable.PtrTypeError,
        ptrtable.AddressRangeError,
        ptrtable.AddressOverflowError,
        ptrtable.CapacityError,
    ):
        assert issubclass(exc, ptrtable.PtrTableError)


def test_vendor_module_imports_only_torch_numpy_stdlib() -> None:
    tree = ast.parse(Path(ptrtable.__file__).read_text(encoding="utf-8"))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports"
            roots.add((node.module or "").split(".")[0])
    allowed = {"torch", "numpy", "__future__"} | set(sys.stdlib_module_names)
    assert roots <= allowed, roots - allowed
    assert "devptr" not in roots


def test_torch_compile_graph_breaks_around_table_writes(api: types.ModuleType) -> None:
    """Inside ``torch.compile`` the helpers graph-break and write the right bits; with
    ``fullgraph=True`` Dynamo refuses them (numpy, ``data_ptr()``): build tables outside."""
    import torch._dynamo

    buf = api.PtrBuffer(2, pin_memory=False)
    x = torch.zeros(4)

    def step(t: torch.Tensor) -> torch.Tensor:
        buf.fill(0, [t, t])
        return t + 1

    torch._dynamo.reset()
    out = torch.compile(step, backend="eager")(x)
    assert torch.equal(out, x + 1) and table_bits(buf.numpy()) == [x.data_ptr()] * 2
    torch._dynamo.reset()
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(step, backend="eager", fullgraph=True)(x)
    torch._dynamo.reset()
