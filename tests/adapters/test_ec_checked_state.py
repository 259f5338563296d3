"""DescriptorBuffers validate what add_* store, once; swap re-validates only unchecked handles.

A handle whose rows were all written by ``add_*`` (or are still the pool's zeros) is swapped
without scanning its tables again; one that handed out a writable view (``host()``,
``src_ptrs``, ``dst_ptrs``, ``sizes``) or stored a copy with bytes and a null address is
validated on every swap, and bad rows get the same errors as ``swap_blocks_batch`` gives.
Real tables and real copies on the CPU (the host path; the kernel path under the Triton
interpreter runs in test_ec_kernel_path.py's child process).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

from devptr import AddressOverflowError, AddressRangeError, DevicePtr, DevPtrError, Encoding
from devptr.adapters.ec_connector import DescriptorBufferPool, DescriptorBuffers
from devptr.adapters.ec_connector import _descriptors as D
from devptr.adapters.ec_connector import _swap as S


def _pair(n: int = 4, size: int = 64) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    srcs = [torch.arange(size, dtype=torch.uint8) + 3 * i for i in range(n)]
    return srcs, [torch.zeros(size, dtype=torch.uint8) for _ in range(n)]


def _filled(
    pool: DescriptorBufferPool, srcs: list[torch.Tensor], dsts: list[torch.Tensor]
) -> DescriptorBuffers:
    b = pool.acquire(len(srcs))
    b.add_copies(
        0, [DevicePtr.of(s) for s in srcs], [DevicePtr.of(d) for d in dsts], [s.numel() for s in srcs]
    )
    return b


# Writes through a host view that add_* would have refused, and the error swap gives for each.
BAD_WRITES: dict[str, tuple[Callable[[DescriptorBuffers], None], type[Exception], str]] = {
    "negative count through host()": (
        lambda b: b.host(encoding=Encoding.I64)[2].__setitem__(1, -1),
        AddressRangeError,
        "2\\*\\*63",
    ),
    "null source through src_ptrs": (lambda b: b.src_ptrs.__setitem__(2, 0), AddressRangeError, "null"),
    "copy past 2**64 through dst_ptrs": (
        lambda b: b.dst_ptrs.__setitem__(0, -8),  # 2**64 - 8, and 64 bytes
        AddressOverflowError,
        "2\\*\\*64",
    ),
    "huge count through sizes": (
        lambda b: b.sizes.numpy().view(np.uint64).__setitem__(3, 2**63 + 5),
        AddressRangeError,
        "2\\*\\*63",
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD_WRITES))
def test_a_write_through_a_view_after_a_swap_is_caught(kind: str) -> None:
    """The handle swapped once (validated when stored), then a view writes a bad row: the
    next swap validates again, raises the same error as before and copies nothing."""
    write, err, match = BAD_WRITES[kind]
    pool = DescriptorBufferPool("cpu")
    srcs, dsts = _pair()
    b = _filled(pool, srcs, dsts)
    b.swap(4)
    assert all(torch.equal(s, d) for s, d in zip(srcs, dsts, strict=True))
    for d in dsts:
        d.zero_()
    write(b)
    with pytest.raises(err, match=match):
        b.swap(4)
    assert not any(d.any() for d in dsts)
    pool.release(b)


def test_a_null_address_with_bytes_from_add_copies_is_refused_by_swap() -> None:
    """add_* keep accepting null addresses (an empty copy may have one); a null with bytes
    leaves the handle unchecked, and swap refuses it with validate's message."""
    pool = DescriptorBufferPool("cpu")
    srcs, dsts = _pair(3)
    b = pool.acquire(3)
    b.add_copies(
        0, [DevicePtr.of(s) for s in srcs[:2]] + [DevicePtr(0)], [DevicePtr.of(d) for d in dsts], [64] * 3
    )
    with pytest.raises(AddressRangeError, match="copy 2 of 64 bytes has a null address"):
        b.swap(3)
    assert not any(d.any() for d in dsts)
    pool.release(b)


def test_a_null_base_in_add_strided_copies_is_refused_by_swap() -> None:
    pool = DescriptorBufferPool("cpu")
    region = torch.zeros(4, 64, dtype=torch.uint8)
    b = pool.acquire(2)
    idx = np.array([0, 1], dtype=np.uint64)
    b.add_strided_copies(
        0, DevicePtr(0), idx, DevicePtr.of(region), idx, 64, np.array([64, 64], dtype=np.uint64)
    )
    with pytest.raises(AddressRangeError, match="copy 0 of 64 bytes has a null address"):
        b.swap(2)
    assert not region.any()
    pool.release(b)


def test_null_addresses_of_empty_copies_keep_the_handle_checked() -> None:
    pool = DescriptorBufferPool("cpu")
    srcs, dsts = _pair(2)
    b = pool.acquire(3)
    b.add_copies(
        0,
        [DevicePtr.of(s) for s in srcs] + [DevicePtr(0)],
        [DevicePtr.of(d) for d in dsts] + [DevicePtr(0)],
        [64, 64, 0],
    )
    assert not b._unchecked
    b.swap(3)
    assert all(torch.equal(s, d) for s, d in zip(srcs, dsts, strict=True))
    pool.release(b)


def test_swap_scans_only_unchecked_handles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counts the validation passes swap makes: none for a handle only add_* wrote, one per
    swap once a writable view was handed out, and a new handle over the same storage starts
    checked again."""
    calls: list[int] = []
    real = S.validate

    def counting(s: np.ndarray, d: np.ndarray, k: np.ndarray) -> S.BatchFacts:
        calls.append(int(k.shape[0]))
        return real(s, d, k)

    monkeypatch.setattr(D, "validate", counting)
    pool = DescriptorBufferPool("cpu")
    srcs, dsts = _pair()
    b = _filled(pool, srcs, dsts)
    b.swap(4)
    b.swap(2)
    b.numpy(4)  # read-only views: still checked
    b.swap(4)
    assert calls == []
    b.host(2)
    b.swap(4)
    b.swap(3)
    assert calls == [4, 3]
    pool.release(b)
    b2 = _filled(pool, srcs, dsts)
    b2.swap(4)
    assert calls == [4, 3] and pool.allocated == 1
    pool.release(b2)


def _reference(b: DescriptorBuffers, n: int) -> tuple[int, int]:
    f = S.validate(*b.numpy(n))
    return f.top, f.total


def test_batch_facts_match_a_full_validation_after_any_write_pattern() -> None:
    """The byte-count facts swap uses (largest, total) equal validate's over the batch after
    writes from 0, appends, overwrites inside, writes past a gap and the other add_ method,
    for every batch length."""
    rng = np.random.default_rng(11)
    pool = DescriptorBufferPool("cpu")
    cap = 40
    b = pool.acquire(cap)
    base_s, base_d = DevicePtr(1 << 40), DevicePtr(1 << 41)
    for step in range(60):
        first = int(rng.choice([0, 0, int(b._stored[0]) if b._stored else 0, int(rng.integers(0, cap))]))
        n = int(rng.integers(0, cap - first + 1))
        sizes = rng.integers(0, 1 << int(rng.integers(1, 30)), size=n).astype(np.uint64)
        idx = rng.integers(0, 1000, size=n).astype(np.uint64)
        if step % 3:
            b.add_strided_copies(first, base_s, idx, base_d, idx, 1 << 20, sizes)
        else:
            b.add_copies(first, [DevicePtr(base_s.addr + int(i) * 64) for i in idx], [base_d] * n, sizes)
        for m in (cap, 0, first, first + n, int(rng.integers(0, cap + 1)), cap):  # cap first: after a write
            facts = b._batch_facts(m)
            assert (facts.top, facts.total) == _reference(b, m), (step, first, n, m)
            assert b._batch_facts(m) is facts  # remembered until the next write
    pool.release(b)


def test_a_released_handle_cannot_swap_through_its_cached_views() -> None:
    pool = DescriptorBufferPool("cpu")
    srcs, dsts = _pair()
    b = _filled(pool, srcs, dsts)
    b.swap(4)
    pool.release(b)
    with pytest.raises(DevPtrError, match="released"):
        b.swap(4)
    with pytest.raises(DevPtrError, match="released"):
        b._batch_facts(4)
