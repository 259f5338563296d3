"""The direct launch path's fence (``devptr.kernels._launch``), on the installed Triton.

- the version gate: which Triton releases may take the direct path, decided by the real
  ``triton`` installed here (no stand-in for it);
- the same kernel launched through :class:`FastKernel` and through Triton's public
  launcher (``kernel[grid]``) gives identical results, call after call (on a GPU with a
  verified Triton the repeated calls go through the direct path; under the interpreter
  both go through ``kernel[grid]``);
- a direct call that Triton's launcher refuses is repeated through ``kernel[grid]`` and
  reported once (a :class:`DirectLaunchWarning` naming the release and the error).
- the identity-keyed caches of the launchers keep no table or workspace alive.
"""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest
import torch

pytest.importorskip("triton")

import triton

from devptr import DevicePtr, PtrBuffer, SizeBuffer, addresses
from devptr.adapters.lamport import local_group
from devptr.kernels import _launch, _runtime, batch_memcpy, lamport, lamport_allreduce
from devptr.kernels._launch import (
    KNOWN_LAUNCHERS,
    DirectLaunchWarning,
    FastKernel,
    direct_path_status,
    triton_release,
)


@pytest.fixture
def fresh_state(monkeypatch: pytest.MonkeyPatch) -> type:
    """The process-wide switches, undecided again (restored after the test)."""
    state = _launch._State
    for name in ("enabled", "reason", "version", "warned", "quiet", "get_stream", "get_device"):
        monkeypatch.setattr(state, name, getattr(state, name))
    state.enabled = None
    state.warned = False
    return state


def test_release_parsing() -> None:
    assert triton_release("3.6.0") == (3, 6)
    assert triton_release("3.6.0+git1a2b3c") == (3, 6)
    assert triton_release("3.10.1") == (3, 10)
    assert triton_release("dev") is None
    assert triton_release("3") is None
    assert KNOWN_LAUNCHERS and all(len(k) == 2 and v for k, v in KNOWN_LAUNCHERS.items())


def test_the_gate_on_the_installed_triton(fresh_state: type) -> None:
    enabled, reason = direct_path_status()
    release = triton_release(triton.__version__)
    if release not in KNOWN_LAUNCHERS:
        assert not enabled
        assert triton.__version__ in reason and "kernel[grid]" in reason
    elif _runtime.interpreting():
        assert not enabled and "TRITON_INTERPRET" in reason
    else:
        assert enabled and triton.__version__ in reason
    assert direct_path_status() == (enabled, reason)  # decided once


def test_the_interpreter_always_takes_the_public_launcher(
    fresh_state: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_runtime.INTERPRET_ENV, "1")
    enabled, reason = direct_path_status()
    assert not enabled
    verified = triton_release(triton.__version__) in KNOWN_LAUNCHERS
    assert ("TRITON_INTERPRET" in reason) if verified else (triton.__version__ in reason)


def _segments(device: torch.device, seed: int) -> tuple[torch.Tensor, ...]:
    """Source memory, a destination and the three address/size columns of three segments."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, 256, (1 << 13,), dtype=torch.uint8, generator=gen).to(device)
    dst = torch.zeros_like(src)
    offs = torch.tensor([0, 2048 + seed, 5000 - seed], dtype=torch.int64)
    sizes = torch.tensor([2048, 2000 - seed, 3000 + seed], dtype=torch.int64)
    cols = torch.stack([offs + src.data_ptr(), offs + dst.data_ptr(), sizes]).to(device)
    return src, dst, cols, offs


def _launch_args(cols: torch.Tensor) -> tuple[tuple[object, ...], tuple[object, ...]]:
    s, d, z = cols[0], cols[1], cols[2]
    args = (s, d, z, 1, 1, 1, 1)
    raw = (s.data_ptr(), d.data_ptr(), z.data_ptr(), 1, 1, 1, 1)
    return args, raw


META = {"CHUNK": 1024, "BYTE_CHUNK": 256}


def _want(src: torch.Tensor, offs: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    want = torch.zeros_like(src)
    for o, n in zip(offs.tolist(), sizes, strict=True):
        want[o : o + n] = src[o : o + n]
    return want


def test_fast_launch_matches_the_public_launcher(kernel_device: torch.device) -> None:
    if kernel_device.type == "cuda":  # as the launchers pass it: a table's device has an index
        kernel_device = torch.device("cuda", torch.cuda.current_device())
    fast = FastKernel("_copy_jit", "_batch_memcpy_kernel")
    public = fast.jit_module()._batch_memcpy_kernel
    key = ("test_launch", kernel_device.index, 1)
    for seed in range(4):  # the first call compiles; later ones may take the direct path
        src, dst_fast, cols, offs = _segments(kernel_device, seed)
        dst_public = torch.zeros_like(dst_fast)
        sizes = cols[2].tolist()
        args, raw = _launch_args(cols)
        fast.launch(kernel_device, (3, 1, 1), key, args, META, 4, raw)
        cols_public = cols.clone()
        cols_public[1] += dst_public.data_ptr() - dst_fast.data_ptr()
        public[(3, 1, 1)](*_launch_args(cols_public)[0], **META, num_warps=4)
        if kernel_device.type == "cuda":
            torch.cuda.synchronize()
        assert torch.equal(dst_fast, dst_public), seed
        assert torch.equal(dst_fast, _want(src, offs, sizes)), seed
    direct, _reason = direct_path_status()
    assert (fast.bound(key) is not None) == (kernel_device.type == "cuda" and direct)


def _refusing_launcher(*_args: object) -> None:
    raise TypeError("function takes exactly 12 arguments (20 given)")


def test_a_refused_direct_call_is_relaunched_and_reported_once(
    fresh_state: type, monkeypatch: pytest.MonkeyPatch, kernel_device: torch.device
) -> None:
    """Triton's launcher is replaced by one of another shape (it raises TypeError, as a
    changed C entry point does); FastKernel, the thing under test, is real."""
    device = kernel_device
    if device.type == "cuda":  # as the launchers pass it: a table's device has an index
        device = torch.device("cuda", torch.cuda.current_device())
    fresh_state.enabled, fresh_state.version = True, triton.__version__
    monkeypatch.setattr(fresh_state, "get_device", lambda: device.index or 0)
    monkeypatch.setattr(fresh_state, "quiet", staticmethod(lambda: True))
    monkeypatch.setattr(fresh_state, "get_stream", lambda _index: 0)
    kernels = [FastKernel("_copy_jit", "_batch_memcpy_kernel") for _ in range(2)]
    for k, fast in enumerate(kernels):
        src, dst, cols, offs = _segments(device, k)
        args, raw = _launch_args(cols)
        fast._bound["key"] = _launch.Bound(0, _refusing_launcher, (), ())
        if k == 0:
            with pytest.warns(DirectLaunchWarning, match=r"12 arguments") as got:
                fast.launch(device, (3, 1, 1), "key", args, META, 4, raw)
            assert triton.__version__ in str(got[0].message)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # once per process: no second warning
                fast.launch(device, (3, 1, 1), "key", args, META, 4, raw)
        assert torch.equal(dst, _want(src, offs, cols[2].tolist())), k  # the launch happened
        assert fast.bound("key") is None
        enabled, reason = direct_path_status()
        assert not enabled and "refused" in reason and "12 arguments" in reason


def test_the_table_view_cache_keeps_no_table_alive(kernel_device: torch.device) -> None:
    mem = torch.arange(64, dtype=torch.uint8, device=kernel_device)
    out = torch.zeros_like(mem)
    dev = kernel_device if kernel_device.type != "cpu" else None
    src, dst, sizes = PtrBuffer(1, device=dev), PtrBuffer(1, device=dev), SizeBuffer(1, device=dev)
    src.fill(0, addresses(DevicePtr.of(mem), np.zeros(1, dtype=np.uint64), 1))
    dst.fill(0, addresses(DevicePtr.of(out), np.zeros(1, dtype=np.uint64), 1))
    sizes.fill(0, [64])
    if dev is not None:
        src.to_device()
        dst.to_device()
        sizes.to_device()
    before = len(_launch._VIEWS)
    batch_memcpy(src, dst, sizes)
    batch_memcpy(src, dst, sizes)  # the second call finds the views
    assert torch.equal(out, mem)
    assert len(_launch._VIEWS) == before + 3
    refs = [weakref.ref(t) for t in (src, dst, sizes)]
    del src, dst, sizes
    gc.collect()
    assert all(r() is None for r in refs)
    assert len(_launch._VIEWS) == before


def test_the_plan_cache_keeps_no_workspace_alive(kernel_device: torch.device) -> None:
    (ws,) = local_group(1, 1 << 10, device=kernel_device)
    x = torch.ones(64, device=kernel_device)
    before = len(lamport._PLANS)
    assert torch.equal(lamport_allreduce(x, ws), x)
    assert len(lamport._PLANS) == before + 1
    ref = weakref.ref(ws)
    ws.close()
    del ws
    gc.collect()
    assert ref() is None
    assert len(lamport._PLANS) == before
