"""The memmove decision on fake addresses at and above 2**63 (nothing is dereferenced),
checked mode, and the lazy Triton import."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

pytest.importorskip("triton")

import devptr
from devptr import CheckedModeError, DevicePtr, Encoding, PtrBuffer
from devptr.kernels import MemmoveKind, SizeBuffer, batch_memcpy, memmove_kinds
from devptr.testing import SIGN_BIT_ADDR, SIGN_BIT_PLUS_42, TOP_ALIGNED, XPU_BASE

I64_MAX = (1 << 63) - 1


def _expected(src: int, dst: int, size: int) -> MemmoveKind:
    """The decision in exact Python integers (unbounded, so never wrong about sign)."""
    if size == 0 or src == dst:
        return MemmoveKind.NONE
    if dst < src:
        return MemmoveKind.FORWARD if src - dst < size else MemmoveKind.PARALLEL
    return MemmoveKind.BACKWARD if dst - src < size else MemmoveKind.PARALLEL


CASES = [
    # straddling 2**63: a signed compare sees dst (negative) below src and picks FORWARD
    (SIGN_BIT_ADDR - 0x1000, SIGN_BIT_ADDR, 0x2000),
    (SIGN_BIT_ADDR, SIGN_BIT_ADDR - 0x1000, 0x2000),
    (I64_MAX - 7, SIGN_BIT_ADDR, 16),
    (SIGN_BIT_ADDR, I64_MAX - 7, 16),
    (SIGN_BIT_ADDR - 8, SIGN_BIT_ADDR, 8),  # touching, disjoint
    (SIGN_BIT_PLUS_42, SIGN_BIT_PLUS_42 + 5, 6),
    (SIGN_BIT_PLUS_42 + 5, SIGN_BIT_PLUS_42, 6),
    (XPU_BASE, XPU_BASE + 4096, 4096),
    (XPU_BASE, XPU_BASE + 4095, 4096),
    (TOP_ALIGNED - 64, TOP_ALIGNED, 8),  # a segment ending exactly at 2**64: no wrap
    (TOP_ALIGNED, TOP_ALIGNED - 64, 8),
    (TOP_ALIGNED - 4, TOP_ALIGNED, 8),
    (0x1000, TOP_ALIGNED, 8),  # far apart: an "addr + size" wrap would mislead
    (TOP_ALIGNED, 0x1000, 8),
    (XPU_BASE, XPU_BASE, 100),
    (XPU_BASE, XPU_BASE + 1, 0),
    (1 << 47, (1 << 47) + 64, 128),
]


@pytest.mark.parametrize("encoding", [Encoding.U64, Encoding.I64])
def test_decision_is_unsigned_for_high_addresses(encoding: Encoding, kernel_device: torch.device) -> None:
    n = len(CASES)
    src, dst, sz = PtrBuffer(n), PtrBuffer(n), SizeBuffer(n)
    src.fill(0, [DevicePtr(s) for s, _, _ in CASES])
    dst.fill(0, [DevicePtr(d) for _, d, _ in CASES])
    sz.fill(0, [z for *_, z in CASES])
    got = memmove_kinds(*(t.to(kernel_device) for t in (src.host(encoding), dst.host(encoding), sz.host())))
    got = got.tolist()
    want = [int(_expected(*c)) for c in CASES]
    assert got == want
    # the straddling cases really are the ones a signed comparison gets wrong
    signed = [DevicePtr(s).signed < DevicePtr(d).signed for s, d, _ in CASES[:2]]
    unsigned = [s < d for s, d, _ in CASES[:2]]
    assert signed != unsigned


def test_decision_on_random_high_addresses(kernel_device: torch.device) -> None:
    rng = np.random.default_rng(0)
    n = 500
    src = rng.integers(SIGN_BIT_ADDR - (1 << 20), SIGN_BIT_ADDR + (1 << 20), n, dtype=np.uint64)
    delta = rng.integers(-(1 << 16), 1 << 16, n)
    dst = np.array([(int(s) + int(d)) % (1 << 64) for s, d in zip(src, delta, strict=True)], dtype=np.uint64)
    sizes = rng.integers(0, 1 << 17, n)
    s_buf, d_buf, z_buf = PtrBuffer(n), PtrBuffer(n), SizeBuffer(n)
    s_buf.fill(0, src)
    d_buf.fill(0, dst)
    z_buf.fill(0, sizes)
    tables = (s_buf.host(Encoding.I64), d_buf.host(Encoding.I64), z_buf.host())
    got = memmove_kinds(*(t.to(kernel_device) for t in tables)).tolist()
    want = [int(_expected(int(s), int(d), int(z))) for s, d, z in zip(src, dst, sizes, strict=True)]
    assert got == want
    assert {1, 2, 3} <= set(got)


def test_checked_mode_refuses_out_of_storage_segments(kernel_device: torch.device) -> None:
    a = torch.arange(256, dtype=torch.uint8).to(kernel_device)
    b = torch.full((256,), 0xA5, dtype=torch.uint8, device=kernel_device)
    with devptr.checked():
        src, dst, sz = PtrBuffer(3), PtrBuffer(3), SizeBuffer(3)
        src.fill(0, [DevicePtr.of(a), DevicePtr.of(a[100:]), DevicePtr.of(a[200:])])
        dst.fill(0, [DevicePtr.of(b), DevicePtr.of(b[100:]), DevicePtr.of(b[200:])])
        sz.fill(0, [64, 64, 57])  # the last one reads and writes one byte past the end
        src_t, dst_t, sz_t = (t.to(kernel_device) for t in (src.host(), dst.host(), sz.host()))
        with pytest.raises(CheckedModeError, match=r"segment 2: src .* 1 bytes past its storage"):
            batch_memcpy(src_t, dst_t, sz_t)
        assert bool((b == 0xA5).all())  # refused before launch: nothing written
        batch_memcpy(src_t, dst_t, sz_t, n=2)  # the in-bounds prefix runs
        # an address computed inside a storage is checked against that storage too
        inner = PtrBuffer(1)
        inner.fill(0, [DevicePtr.of(b) + 250])
        with pytest.raises(CheckedModeError, match="segment 0: dst"):
            batch_memcpy(src_t[:1], inner.host().to(kernel_device), torch.tensor([8]).to(kernel_device))
        with pytest.raises(CheckedModeError, match="negative size"):
            batch_memcpy(src_t[:1], dst_t[:1], torch.tensor([-1]).to(kernel_device))
    assert torch.equal(b[:64], a[:64]) and torch.equal(b[100:164], a[100:164])
    assert bool((b[64:100] == 0xA5).all()) and bool((b[200:] == 0xA5).all())
    # off: the same out-of-storage segment is not inspected: no error, the kernel runs and
    # copies (its 57th byte comes from past ``a``'s 256 bytes, inside the allocator's block)
    assert not devptr._checked.ENABLED
    c = torch.full((512,), 0xA5, dtype=torch.uint8, device=kernel_device)
    dst_c = PtrBuffer(1)
    dst_c.fill(0, [DevicePtr.of(c)])
    batch_memcpy(src_t[2:3], dst_c.host().to(kernel_device), torch.tensor([57]).to(kernel_device))
    assert torch.equal(c[:56], a[200:])
    assert bool((c[57:] == 0xA5).all())


def test_importing_kernels_without_triton_fails_only_on_use(tmp_path: object) -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["triton"] = None  # import triton -> ImportError
        import torch
        import devptr.kernels as k
        buf = k.SizeBuffer(1)
        t = torch.zeros(1, dtype=torch.int64)
        try:
            k.batch_memcpy(t, t, t)
        except k.TritonUnavailableError as exc:
            print("OK", isinstance(exc, ImportError), exc)
        """
    )
    env = dict(os.environ, TRITON_INTERPRET="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.startswith("OK True devptr.kernels needs Triton"), out.stdout + out.stderr
