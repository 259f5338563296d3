"""devptr.interop: every pointer dialect round-trips every address, >= 2**63 included.

The optional libraries are replaced by look-alike modules that keep their types' contracts
(CuPy's ``intptr_t`` rejects unsigned values >= 2**63; ``CUdeviceptr`` is unsigned);
DLPack capsules are real (``torch.utils.dlpack``) or built with ctypes for addresses no
CPU tensor has. Real allocations are round-tripped on the GPU machine (``gpu`` tests).
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import types

import pytest
import torch

from devptr import AddressOverflowError, AddressRangeError, DevicePtr, PtrTypeError
from devptr import interop as ip
from devptr.testing import HIGH_ADDRESSES, PATTERN_ADDRESSES, FakeTensor

ADDRS = sorted(set(PATTERN_ADDRESSES) | set(HIGH_ADDRESSES))
SIGN = 1 << 63


def _signed(a: int) -> int:
    return a - (1 << 64) if a >= SIGN else a


# -- fakes of the optional libraries ----------------------------------------------------------
class CUdeviceptr:
    """cuda.bindings.driver.CUdeviceptr: an unsigned 64-bit handle."""

    def __init__(self, value: int = 0) -> None:
        if not 0 <= value < 1 << 64:
            raise OverflowError("CUdeviceptr is unsigned 64-bit")
        self._v = value

    def __int__(self) -> int:
        return self._v


class FakeBuffer:
    def __init__(self, handle: CUdeviceptr, size: int, mr: object = None) -> None:
        self.handle, self.size, self.memory_resource = handle, size, mr

    @classmethod
    def from_handle(cls, ptr: CUdeviceptr, size: int, mr: object = None) -> FakeBuffer:
        return cls(ptr, size, mr)


class UnownedMemory:
    def __init__(self, ptr: int, size: int, owner: object, device_id: int) -> None:
        if not -SIGN <= ptr < SIGN:
            raise OverflowError("value too large to convert to intptr_t")
        self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id


class MemoryPointer:
    def __init__(self, mem: UnownedMemory, offset: int) -> None:
        self.mem = mem
        self.ptr = mem.ptr + offset  # an intptr_t, as in CuPy


@pytest.fixture
def fake_libs(monkeypatch: pytest.MonkeyPatch) -> None:
    driver = types.ModuleType("cuda.bindings.driver")
    driver.CUdeviceptr = CUdeviceptr  # type: ignore[attr-defined]
    core = types.ModuleType("cuda.core")
    core.Buffer = FakeBuffer  # type: ignore[attr-defined]
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        UnownedMemory=UnownedMemory, MemoryPointer=MemoryPointer,
        runtime=types.SimpleNamespace(getDevice=lambda: 0),
    )
    for name, mod in (("cuda.bindings.driver", driver), ("cuda.core", core), ("cupy", cupy)):
        monkeypatch.setitem(sys.modules, name, mod)


# -- the one decoding rule -------------------------------------------------------------------
@pytest.mark.parametrize("addr", ADDRS)
def test_from_int_decodes_like_devicepointer_of(addr: int) -> None:
    p = DevicePtr(addr)
    assert ip.from_int(addr) == p == DevicePtr.of(FakeTensor(addr))
    assert ip.from_int(_signed(addr)) == p == DevicePtr.of(FakeTensor(_signed(addr)))


@pytest.mark.parametrize("bad", [True, 1.0, "0x10", None])
def test_from_int_rejects_non_ints(bad: object) -> None:
    with pytest.raises(PtrTypeError):
        ip.from_int(bad)


@pytest.mark.parametrize("bad", [1 << 64, -SIGN - 1])
def test_from_int_rejects_out_of_range(bad: int) -> None:
    with pytest.raises(AddressRangeError):
        ip.from_int(bad)


# -- each dialect ----------------------------------------------------------------------------
@pytest.mark.parametrize("addr", ADDRS)
def test_cudeviceptr_round_trip(addr: int, fake_libs: None) -> None:
    p = DevicePtr(addr)
    h = ip.to_cudeviceptr(p)
    assert type(h) is CUdeviceptr and int(h) == addr
    assert ip.from_cudeviceptr(h) == p
    assert ip.from_cudeviceptr(addr) == ip.from_cudeviceptr(_signed(addr)) == p  # runtime API ints


@pytest.mark.parametrize("addr", HIGH_ADDRESSES)
def test_cuda_core_buffer_round_trip(addr: int, fake_libs: None) -> None:
    p = DevicePtr(addr - 4096)
    buf = ip.to_cuda_core_buffer(p, 4096)
    assert isinstance(buf, FakeBuffer) and int(buf.handle) == p.addr and buf.size == 4096
    assert ip.from_cuda_core_buffer(buf) == p
    assert ip.from_cuda_core_buffer(buf, 4096) == p + 4096
    with pytest.raises(AddressRangeError):
        ip.from_cuda_core_buffer(buf, 4097)


@pytest.mark.parametrize("addr", ADDRS)
def test_cupy_round_trip_uses_the_signed_spelling(addr: int, fake_libs: None) -> None:
    p = DevicePtr(addr)
    mp = ip.to_cupy(p, 16, owner="keep")
    assert mp.ptr == _signed(addr)  # intptr_t: negative for addresses >= 2**63
    assert mp.mem.owner == "keep" and mp.mem.device_id == 0
    assert ip.from_cupy(mp) == p
    assert ip.from_cupy(types.SimpleNamespace(data=mp)) == p  # a cupy array's .data
    if addr >= SIGN:  # the unsigned spelling is what CuPy refuses: hence .signed
        with pytest.raises(OverflowError):
            UnownedMemory(addr, 16, None, 0)


@pytest.mark.parametrize("addr", ADDRS)
def test_cuda_array_interface_round_trip(addr: int) -> None:
    p = DevicePtr(addr)
    iface = ip.to_cuda_array_interface(p, (4, 2), "<f4", strides=(8, 4))
    assert iface["data"] == (addr, False) and iface["version"] == 3
    holder = types.SimpleNamespace(__cuda_array_interface__=iface)
    assert ip.from_cuda_array_interface(holder) == ip.from_cuda_array_interface(iface) == p
    signed = dict(iface, data=(_signed(addr), True))
    assert ip.from_cuda_array_interface(signed) == p
    with pytest.raises(PtrTypeError):
        ip.from_cuda_array_interface({"data": addr})


def _capsule(data: int, byte_offset: int, versioned: bool) -> object:
    """A real DLPack capsule (never consumed) for memory that may not exist."""
    t = ip._DLTensor(data=data or None, ndim=1, byte_offset=byte_offset)
    if versioned:
        managed: ctypes.Structure = ip._DLManagedTensorVersioned(major=1, minor=0, dl_tensor=t)
    else:
        managed = t
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    name = b"dltensor_versioned" if versioned else b"dltensor"
    cap = new(ctypes.addressof(managed), name, None)
    _keep.append((managed, name))
    return cap


_keep: list[object] = []


@pytest.mark.parametrize("versioned", [False, True])
@pytest.mark.parametrize("addr", ADDRS)
def test_dlpack_data_plus_offset_round_trip(addr: int, versioned: bool) -> None:
    p = DevicePtr(addr)
    data, off = ip.to_dlpack_fields(p)
    assert data % ip.DLPACK_ALIGNMENT == 0 and data + off == addr and 0 <= off < 256
    assert ip.from_dlpack(_capsule(data, off, versioned)) == p
    if addr > 0:
        assert ip.from_dlpack(_capsule(0, addr, versioned)) == p  # all of it in the offset


def test_dlpack_overflow_and_real_tensors() -> None:
    with pytest.raises(AddressOverflowError):
        ip.from_dlpack(_capsule((1 << 64) - 256, 512, False))
    t = torch.arange(64, dtype=torch.float32)
    view = t[5:]
    assert ip.from_dlpack(view) == DevicePtr.of(view)  # via __dlpack__
    cap = torch.utils.dlpack.to_dlpack(view)
    assert ip.from_dlpack(cap) == DevicePtr.of(view)
    assert torch.equal(torch.utils.dlpack.from_dlpack(cap), view)  # the capsule is still usable
    with pytest.raises(PtrTypeError, match="capsule"):
        ip.from_dlpack(42)


@pytest.mark.parametrize("addr", ADDRS)
def test_ctypes_round_trip(addr: int) -> None:
    p = DevicePtr(addr)
    c = ip.to_ctypes(p)
    assert isinstance(c, ctypes.c_void_p) and (c.value or 0) == addr
    assert ip.from_ctypes(c) == p
    assert ip.from_ctypes(ctypes.c_uint64(addr)) == p
    assert ip.from_ctypes(ctypes.c_int64(_signed(addr))) == p
    with pytest.raises(PtrTypeError):
        ip.from_ctypes(ctypes.c_int32(5))


def test_to_functions_take_only_devicepointers(fake_libs: None) -> None:
    for fn in (ip.to_cudeviceptr, ip.to_ctypes, ip.to_dlpack_fields):
        with pytest.raises(PtrTypeError):
            fn(SIGN)  # type: ignore[arg-type]
    with pytest.raises(PtrTypeError):
        ip.to_cupy(SIGN, 8)  # type: ignore[arg-type]


def test_optional_libraries_are_not_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    # Against what torch itself imports: torch 2.14.1's CUDA build imports cuda.bindings
    # (torch.cuda.gds) when its cuda-bindings dependency is installed.
    code = (
        "import sys, torch;"
        "mine = lambda: {m for m in sys.modules if m.split('.')[0] in ('cupy', 'cuda')};"
        "torch_own = mine();"
        "import devptr.interop as ip, devptr;"
        "ip.from_int(-8); ip.from_ctypes(ip.to_ctypes(devptr.DevicePtr(8)));"
        "bad = sorted(mine() - torch_own);"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    monkeypatch.setitem(sys.modules, "cupy", None)  # "not installed"
    with pytest.raises(ip.MissingDependencyError, match="cupy") as info:
        ip.to_cupy(DevicePtr(8), 8)
    assert isinstance(info.value, ImportError)
