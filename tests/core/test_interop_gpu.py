"""devptr.interop on real allocations (CUDA; cupy, cuda-bindings and cuda.core where installed).

Every conversion names the same memory: bytes written through one library's handle are
read back through torch at the converted address.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import torch

from devptr import DevicePtr
from devptr import interop as ip

pytestmark = pytest.mark.gpu


def _tensor(n: int = 4096) -> torch.Tensor:
    return torch.zeros(n, dtype=torch.uint8, device="cuda")


def test_cupy_memory_pointer_round_trip() -> None:
    cupy = pytest.importorskip("cupy")
    t = _tensor()
    p = DevicePtr.of(t, 128)
    mp = ip.to_cupy(p, 256, owner=t)
    assert ip.from_cupy(mp) == p
    arr = cupy.ndarray((256,), dtype=cupy.uint8, memptr=mp)
    arr[:] = 7
    cupy.cuda.runtime.deviceSynchronize()
    assert int(t[128:384].sum()) == 7 * 256 and int(t.sum()) == 7 * 256
    own = cupy.arange(16, dtype=cupy.float32)
    assert ip.from_cupy(own.data) == ip.from_cupy(own) == ip.from_cuda_array_interface(own)
    assert ip.from_dlpack(own) == ip.from_cupy(own)


def test_cudeviceptr_round_trip_through_the_driver() -> None:
    driver = pytest.importorskip("cuda.bindings.driver")
    t = _tensor()
    p = DevicePtr.of(t, 64)
    h = ip.to_cudeviceptr(p)
    assert isinstance(h, driver.CUdeviceptr) and ip.from_cudeviceptr(h) == p
    torch.cuda.synchronize()
    (err,) = driver.cuMemsetD8(h, 9, 32)
    assert err == driver.CUresult.CUDA_SUCCESS
    torch.cuda.synchronize()
    assert t[64:96].tolist() == [9] * 32 and int(t.sum()) == 9 * 32


def test_cuda_core_buffer_round_trip() -> None:
    core = _cuda_core()
    dev = core.Device()
    dev.set_current()
    stream = dev.create_stream()
    try:
        buf = dev.allocate(1024, stream=stream)  # cuda.core >= 1.0: stream is keyword-only
    except TypeError:
        buf = dev.allocate(1024)
    p = ip.from_cuda_core_buffer(buf)
    assert p.addr == int(buf.handle) and not p.is_null
    t = _tensor()
    view = ip.to_cuda_core_buffer(DevicePtr.of(t), t.numel())
    assert ip.from_cuda_core_buffer(view) == DevicePtr.of(t)
    assert ip.from_cuda_core_buffer(view, 100) == DevicePtr.of(t, 100)
    buf.close(stream)


def test_torch_dlpack_and_cai_round_trip() -> None:
    t = torch.arange(100, dtype=torch.float32, device="cuda")[7:]
    assert ip.from_dlpack(t) == DevicePtr.of(t)
    assert ip.from_cuda_array_interface(t) == DevicePtr.of(t)
    iface = ip.to_cuda_array_interface(DevicePtr.of(t), (93,), "<f4")
    holder = type("H", (), {"__cuda_array_interface__": iface})()
    back = torch.as_tensor(holder, device="cuda")
    assert torch.equal(back, t)


def _cuda_core() -> Any:
    for name in ("cuda.core", "cuda.core.experimental"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(mod, "Device"):
            return mod
    pytest.skip("cuda.core is not installed")
