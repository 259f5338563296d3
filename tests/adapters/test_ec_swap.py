"""swap_blocks_batch: dispatch, the CPU host copy path, validation, vLLM detection."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from devptr import (
    AddressRangeError,
    CapacityError,
    DevicePtr,
    DevPtrError,
    Encoding,
    LengthMismatchError,
    PtrTypeError,
    ptr_tensor,
)
from devptr.adapters.ec_connector import (
    DescriptorBufferPool,
    choose_path,
    register_swap_op,
    swap_blocks_batch,
    swap_op_for,
    unregister_swap_op,
)
from devptr.testing import high_addresses

CPU = torch.device("cpu")


def _ptrs(ts: list[torch.Tensor], dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return ptr_tensor(ts, encoding=Encoding.I64 if dtype == torch.int64 else Encoding.U64)


def _random_items(rng: np.random.Generator, count: int) -> list[torch.Tensor]:
    sizes = rng.integers(0, 5000, size=count)
    return [torch.from_numpy(rng.integers(0, 256, size=int(k), dtype=np.uint8)) for k in sizes]


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint64])
def test_host_path_copies_many_odd_sizes_byte_exact(dtype: torch.dtype) -> None:
    rng = np.random.default_rng(7)
    srcs = _random_items(rng, 200)
    dsts = [torch.full_like(s, 0xAA) for s in srcs]
    sizes = torch.tensor([s.numel() for s in srcs], dtype=dtype)
    swap_blocks_batch(_ptrs(srcs, dtype), _ptrs(dsts, dtype), sizes, device="cpu")
    assert all(torch.equal(s, d) for s, d in zip(srcs, dsts, strict=True))


def test_device_goes_through_the_core_resolver() -> None:
    """Issue 24: one device resolver; torch.device("gpu") raised torch's RuntimeError here."""
    from devptr import PtrTypeError, UnknownBackendError

    srcs = [torch.arange(8, dtype=torch.uint8)]
    dsts = [torch.zeros(8, dtype=torch.uint8)]
    for device, error in (("gpu", UnknownBackendError), (0, PtrTypeError)):
        with pytest.raises(error):
            swap_blocks_batch(_ptrs(srcs), _ptrs(dsts), torch.full((1,), 8), device=device)  # type: ignore[arg-type]
    assert torch.equal(dsts[0], torch.zeros(8, dtype=torch.uint8))


def test_n_limits_the_copies() -> None:
    srcs = [torch.arange(64, dtype=torch.uint8) + k for k in range(4)]
    dsts = [torch.zeros(64, dtype=torch.uint8) for _ in range(4)]
    swap_blocks_batch(_ptrs(srcs), _ptrs(dsts), torch.full((4,), 64), 2, device="cpu")
    assert torch.equal(dsts[0], srcs[0]) and torch.equal(dsts[1], srcs[1])
    assert not dsts[2].any() and not dsts[3].any()


def test_buffers_swap_on_cpu_reuses_buffers_across_steps() -> None:
    pool = DescriptorBufferPool("cpu")
    rng = np.random.default_rng(3)
    for _step in range(5):
        srcs = _random_items(rng, 50)
        dsts = [torch.zeros_like(s) for s in srcs]
        bufs = pool.acquire(50)
        bufs.add_copies(
            0,
            [DevicePtr.of(s) for s in srcs],
            [DevicePtr.of(d) for d in dsts],
            [s.numel() for s in srcs],
        )
        bufs.swap(50)
        pool.release(bufs)
        assert all(torch.equal(s, d) for s, d in zip(srcs, dsts, strict=True))
    assert pool.allocated == 1


def _bad_call(kind: str) -> tuple[Callable[[], None], torch.Tensor, type[Exception], str]:
    src = torch.arange(32, dtype=torch.uint8)
    dst = torch.zeros(32, dtype=torch.uint8)
    s, d = _ptrs([src]), _ptrs([dst])
    calls: dict[str, tuple[Callable[[], None], type[Exception], str]] = {
        "negative": (
            lambda: swap_blocks_batch(s, d, torch.tensor([-1]), device="cpu"),
            AddressRangeError,
            "2\\*\\*63",
        ),
        "null": (
            lambda: swap_blocks_batch(torch.tensor([0]), d, torch.tensor([8]), device="cpu"),
            AddressRangeError,
            "null",
        ),
        "int32": (
            lambda: swap_blocks_batch(s.int(), d, torch.tensor([8]), device="cpu"),
            PtrTypeError,
            "int64 or uint64",
        ),
        "short": (
            lambda: swap_blocks_batch(s, d, torch.tensor([8]), 2, device="cpu"),
            LengthMismatchError,
            "fewer",
        ),
        "n": (
            lambda: swap_blocks_batch(s, d, torch.tensor([8]), -1, device="cpu"),
            CapacityError,
            "non-negative",
        ),
        "2d": (
            lambda: swap_blocks_batch(s.view(1, 1), d, torch.tensor([8]), device="cpu"),
            PtrTypeError,
            "1-D",
        ),
        "wrap": (
            lambda: swap_blocks_batch(torch.tensor([-8]), d, torch.tensor([16]), device="cpu"),
            DevPtrError,
            "2\\*\\*64",
        ),
        "high": (
            lambda: swap_blocks_batch(torch.tensor([-4096]), d, torch.tensor([8]), device="cpu"),
            AddressRangeError,
            "bit 63",
        ),
        "path": (
            lambda: swap_blocks_batch(s, d, torch.tensor([8]), device="cpu", path="op"),
            DevPtrError,
            "no swap",
        ),
    }
    fn, err, match = calls[kind]
    return fn, dst, err, match


@pytest.mark.parametrize("kind", ["negative", "null", "int32", "short", "n", "2d", "wrap", "high", "path"])
def test_bad_calls_raise_and_copy_nothing(kind: str) -> None:
    fn, dst, err, match = _bad_call(kind)
    with pytest.raises(err, match=match):
        fn()
    assert not dst.any()


def test_host_path_refuses_high_addresses_mode() -> None:
    src, dst = torch.ones(16, dtype=torch.uint8), torch.zeros(16, dtype=torch.uint8)
    with high_addresses(host=True):
        s, d = _ptrs([src]), _ptrs([dst])
        with pytest.raises(AddressRangeError, match="bit 63"):
            swap_blocks_batch(s, d, torch.tensor([16]), device="cpu")
    assert not dst.any()


def test_choose_path() -> None:
    assert choose_path("cpu", CPU) == "host"
    assert choose_path("cuda", torch.device("cuda", 0)) == "kernel"  # no vLLM here
    with pytest.raises(DevPtrError, match="only on the CPU"):
        choose_path("cuda", torch.device("cuda", 0), "host")
    with pytest.raises(PtrTypeError):
        choose_path("cpu", CPU, "fast")  # type: ignore[arg-type]
    seen: list[int] = []
    register_swap_op("cpu", lambda s, d, k, a: seen.append(s.numel()))
    try:
        assert choose_path("cpu", CPU) == "op"
        src, dst = torch.ones(8, dtype=torch.uint8), torch.zeros(8, dtype=torch.uint8)
        swap_blocks_batch(_ptrs([src]), _ptrs([dst]), torch.tensor([8]), device="cpu")
        assert seen == [1] and not dst.any()  # the op ran, not the host path
        register_swap_op("cpu", None)  # explicit "no op": portable path
        assert choose_path("cpu", CPU) == "host"
    finally:
        unregister_swap_op("cpu")
    assert swap_op_for("cpu") is None
    with pytest.raises(ValueError, match="device type"):
        register_swap_op("cuda:0", None)
    with pytest.raises(PtrTypeError):
        register_swap_op("cuda", 3)  # type: ignore[arg-type]


FAKE_VLLM = """
import torch
lib = torch.library.Library("_C_cache_ops", "DEF")
lib.define("swap_blocks_batch(Tensor src, Tensor dst, Tensor sizes, bool any_order) -> ()")
CALLS = []
def impl(src, dst, sizes, any_order):
    # the C++ op's checks: CPU int64 src, dst and sizes
    for t in (src, dst, sizes):
        torch._check(t.device.type == "cpu" and t.dtype == torch.int64, lambda: "int64 CPU tensors")
    CALLS.append((src.tolist(), sizes.tolist(), any_order))
lib.impl("swap_blocks_batch", impl, "CPU")
"""

CHILD = """
import sys
import torch
import devptr.adapters.ec_connector as ec
assert "vllm" not in sys.modules, "imported vLLM at module import"
from devptr.adapters.ec_connector import DescriptorBufferPool
from devptr import DevicePtr
from devptr.testing import XPU_BASE
pool = DescriptorBufferPool("cpu", backend="cuda")
b = pool.acquire(2)
b.add_copies(0, [DevicePtr(XPU_BASE)] * 2, [DevicePtr(64)] * 2, [8, 16])
assert ec.choose_path("cuda", torch.device("cpu")) == "op"
b.swap(2, is_src_access_order_any=True)
import vllm._C as C
assert C.CALLS == [([XPU_BASE - 2**64] * 2, [8, 16], True)], C.CALLS
print("ok")
"""


def test_vllm_op_detected_at_first_dispatch_not_at_import(tmp_path: Path) -> None:
    pkg = tmp_path / "vllm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_C.py").write_text(textwrap.dedent(FAKE_VLLM))
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_without_vllm_no_op_is_detected() -> None:
    if "vllm" in sys.modules or __import__("importlib").util.find_spec("vllm") is not None:
        pytest.fail("this environment has vLLM installed; the test expects it absent")
    unregister_swap_op("cuda")
    assert swap_op_for("cuda") is None
