"""DescriptorBuffers / DescriptorBufferPool: exact tables, consumer encodings, bad input."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from devptr import (
    AddressOverflowError,
    AddressRangeError,
    CapacityError,
    DevicePtr,
    Encoding,
    LengthMismatchError,
    PtrTypeError,
    StaleBufferError,
    addresses,
)
from devptr.adapters.ec_connector import (
    DescriptorBufferPool,
    DescriptorBuffers,
    register_swap_op,
    swap_blocks_batch,
    unregister_swap_op,
)
from devptr.testing import HIGH_ADDRESSES, TOP_ALIGNED, XPU_BASE

SIGNED = [DevicePtr(a).signed for a in HIGH_ADDRESSES]


class OpRejected(RuntimeError):
    """What the stand-in op raises, like the C++ TORCH_CHECK."""


class StandInOp:
    """A fake of vLLM's C++ ``swap_blocks_batch`` argument checks (not of the copy).

    CUDA/ROCm (``cache_kernels.cu``): src, dst and sizes are CPU int64 tensors of one
    length; XPU: the same with uint64. Records what it was handed.
    """

    def __init__(self, dtype: torch.dtype) -> None:
        self.dtype = dtype
        self.calls: list[tuple[list[int], list[int], list[int], bool]] = []

    def __call__(self, src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, any_: bool) -> None:
        for name, t in (("src_ptrs", src), ("dst_ptrs", dst), ("sizes", sizes)):
            if t.device.type != "cpu":
                raise OpRejected(f"{name} must be a CPU tensor")
            if t.dtype != self.dtype:
                raise OpRejected(f"{name} must be {self.dtype} (got {t.dtype})")
            if not t.is_contiguous() or t.ndim != 1:
                raise OpRejected(f"{name} must be 1-D contiguous")
        if not src.numel() == dst.numel() == sizes.numel():
            raise OpRejected("src_ptrs, dst_ptrs and sizes differ in length")
        self.calls.append((src.tolist(), dst.tolist(), sizes.tolist(), any_))


@pytest.fixture
def ops() -> Iterator[dict[str, StandInOp]]:
    made = {"cuda": StandInOp(torch.int64), "xpu": StandInOp(torch.uint64)}
    for k, v in made.items():
        register_swap_op(k, v)
    yield made
    for k in made:
        unregister_swap_op(k)


def _filled(pool: DescriptorBufferPool, n: int = 4) -> DescriptorBuffers:
    b = pool.acquire(n)
    b.add_copies(
        0,
        [DevicePtr(a) for a in HIGH_ADDRESSES],
        [DevicePtr(a) for a in HIGH_ADDRESSES[::-1]],
        [8, 0, 4096, 1],
    )
    return b


# -- exact tables -----------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["cuda", "xpu", "cpu"])
def test_high_addresses_exact_in_both_encodings(backend: str) -> None:
    b = _filled(DescriptorBufferPool("cpu", backend=backend))
    src, dst, sizes = b.numpy()
    assert src.tolist() == list(HIGH_ADDRESSES)
    assert dst.tolist() == list(HIGH_ADDRESSES[::-1])
    assert sizes.tolist() == [8, 0, 4096, 1]
    s64, d64, z64 = b.host(encoding=Encoding.I64)
    assert (s64.dtype, d64.dtype, z64.dtype) == (torch.int64,) * 3
    assert s64.tolist() == SIGNED and d64.tolist() == SIGNED[::-1]
    su, du, zu = b.host(encoding=Encoding.U64)
    assert (su.dtype, du.dtype, zu.dtype) == (torch.uint64,) * 3
    assert su.tolist() == list(HIGH_ADDRESSES) and du.tolist() == list(HIGH_ADDRESSES[::-1])
    assert z64.tolist() == zu.tolist() == [8, 0, 4096, 1]


@pytest.mark.parametrize(
    ("backend", "dtype"), [("cuda", torch.int64), ("xpu", torch.uint64), ("cpu", torch.int64)]
)
def test_default_views_use_the_backend_encoding(backend: str, dtype: torch.dtype) -> None:
    b = _filled(DescriptorBufferPool("cpu", backend=backend))
    assert b.src_ptrs.dtype == b.dst_ptrs.dtype == b.sizes.dtype == dtype
    assert b.src_ptrs.numel() == 4


def test_uint64_arrays_from_addresses_are_exact() -> None:
    b = DescriptorBufferPool("cpu", backend="xpu").acquire(1000)
    idx = np.arange(1000, dtype=np.int64)
    src = addresses(DevicePtr(XPU_BASE), idx, 4096)
    dst = addresses(DevicePtr(0x7F00_0000_0000), idx[::-1].copy(), 4096)
    end = b.add_copies(0, src, dst, np.full(1000, 4096))
    assert end == 1000
    s, d, k = b.host(end)
    assert s.tolist() == [XPU_BASE + 4096 * i for i in range(1000)]
    assert d.tolist() == [0x7F00_0000_0000 + 4096 * (999 - i) for i in range(1000)]
    assert k.tolist() == [4096] * 1000


def test_add_copies_at_offsets_accumulates() -> None:
    b = DescriptorBufferPool("cpu", backend="xpu").acquire(5)
    e = b.add_copies(0, [DevicePtr(TOP_ALIGNED - 8)], [DevicePtr(16)], [8])
    e = b.add_copies(
        e, [DevicePtr(XPU_BASE), DevicePtr(XPU_BASE + 64)], [DevicePtr(32), DevicePtr(48)], [16, 16]
    )
    assert e == 3
    assert b.numpy(e)[0].tolist() == [TOP_ALIGNED - 8, XPU_BASE, XPU_BASE + 64]
    assert b.numpy(e)[2].tolist() == [8, 16, 16]


def test_tensor_sources_are_taken_by_data_ptr() -> None:
    ts = [torch.zeros(4) for _ in range(3)]
    b = DescriptorBufferPool("cpu").acquire(3)
    b.add_copies(0, ts, ts[::-1], torch.tensor([16, 16, 16]))
    assert b.numpy()[0].tolist() == [t.data_ptr() for t in ts]


# -- consumers --------------------------------------------------------------------------
def test_cuda_consumer_gets_int64_src_dst_and_sizes(ops: dict[str, StandInOp]) -> None:
    b = _filled(DescriptorBufferPool("cpu", backend="cuda"))
    b.swap(4, is_src_access_order_any=True)
    ((src, dst, sizes, any_),) = ops["cuda"].calls
    assert src == SIGNED and dst == SIGNED[::-1] and sizes == [8, 0, 4096, 1] and any_
    assert not ops["xpu"].calls


def test_xpu_consumer_gets_uint64(ops: dict[str, StandInOp]) -> None:
    b = _filled(DescriptorBufferPool("cpu", backend="xpu"))
    b.swap(3)
    ((src, dst, sizes, _),) = ops["xpu"].calls
    assert src == list(HIGH_ADDRESSES[:3]) and dst == list(HIGH_ADDRESSES[::-1][:3])
    assert sizes == [8, 0, 4096]


@pytest.mark.parametrize(("backend", "wrong"), [("cuda", Encoding.U64), ("xpu", Encoding.I64)])
def test_stand_in_rejects_the_wrong_encoding(
    ops: dict[str, StandInOp], backend: str, wrong: Encoding
) -> None:
    b = _filled(DescriptorBufferPool("cpu", backend=backend))
    with pytest.raises(OpRejected, match="must be"):
        ops[backend](*b.host(4, wrong), False)
    ops[backend](*b.host(4), False)  # the default encoding passes
    assert len(ops[backend].calls) == 1


@pytest.mark.parametrize("given", [torch.int64, torch.uint64])
@pytest.mark.parametrize("backend", ["cuda", "xpu"])
def test_free_function_converts_to_the_consumer_encoding(
    ops: dict[str, StandInOp], given: torch.dtype, backend: str
) -> None:
    b = _filled(DescriptorBufferPool("cpu", backend=backend))
    enc = Encoding.I64 if given == torch.int64 else Encoding.U64
    swap_blocks_batch(*b.host(4, enc), 2, device="cpu", backend=backend)
    ((src, _, sizes, _),) = ops[backend].calls
    assert src == (SIGNED[:2] if backend == "cuda" else list(HIGH_ADDRESSES[:2]))
    assert sizes == [8, 0]


# -- bad input: clear error, nothing written ---------------------------------------------
GOOD = [DevicePtr(XPU_BASE), DevicePtr(XPU_BASE + 8)]


@pytest.mark.parametrize(
    ("first", "src", "dst", "sizes", "error", "match"),
    [
        (3, GOOD, GOOD, [8, 8], CapacityError, "exceed capacity"),
        (0, GOOD * 3, GOOD * 3, [8] * 6, CapacityError, "exceed capacity"),
        (5, GOOD[:1], GOOD[:1], [8], CapacityError, "first must be"),
        (-1, GOOD[:1], GOOD[:1], [8], CapacityError, "first must be"),
        (0, GOOD, GOOD, [8, -1], AddressRangeError, "non-negative"),
        (0, GOOD, GOOD, np.array([8, -1]), AddressRangeError, "non-negative"),
        (0, GOOD, GOOD, np.array([8, 1 << 63], dtype=np.uint64), AddressRangeError, "below 2\\*\\*63"),
        (0, [DevicePtr(TOP_ALIGNED)], [DevicePtr(64)], [16], AddressOverflowError, "source"),
        (0, [DevicePtr(64)], [DevicePtr(TOP_ALIGNED)], [9], AddressOverflowError, "destination"),
        (0, GOOD, GOOD[:1], [8, 8], LengthMismatchError, "2 sources but 1 destinations"),
        (0, GOOD, GOOD, [8], LengthMismatchError, "byte counts"),
        (0, GOOD, GOOD, [8.0, 8.0], PtrTypeError, "integers"),
        (0, [XPU_BASE], GOOD[:1], [8], PtrTypeError, "DevicePtr"),
        (0, np.array([1, 2], dtype=np.int64), GOOD, [8, 8], PtrTypeError, "uint64"),
    ],
)
def test_bad_input_raises_and_writes_nothing(
    first: int, src: object, dst: object, sizes: object, error: type[Exception], match: str
) -> None:
    b = DescriptorBufferPool("cpu", backend="xpu").acquire(4)
    b.add_copies(0, [DevicePtr(1 << 40)] * 4, [DevicePtr(1 << 41)] * 4, [7] * 4)
    before = [a.copy() for a in b.numpy()]
    with pytest.raises(error, match=match):
        b.add_copies(first, src, dst, sizes)
    assert all(np.array_equal(x, y) for x, y in zip(before, b.numpy(), strict=True))


def test_copy_ending_exactly_at_2_64_is_allowed() -> None:
    b = DescriptorBufferPool("cpu").acquire(1)
    b.add_copies(0, [DevicePtr(TOP_ALIGNED)], [DevicePtr(8)], [8])
    assert b.numpy()[2].tolist() == [8]


# -- pool ---------------------------------------------------------------------------------
def test_pool_reuses_last_released_first() -> None:
    pool = DescriptorBufferPool("cpu")
    a, b = pool.acquire(8), pool.acquire(8)
    pa, pb = a.src_ptrs.data_ptr(), b.src_ptrs.data_ptr()
    pool.release(a)
    pool.release(b)
    c = pool.acquire(8)
    assert c.src_ptrs.data_ptr() == pb  # LIFO
    d = pool.acquire(4)  # smaller requests reuse bigger storage
    assert d.src_ptrs.data_ptr() == pa and d.capacity == 4
    assert pool.allocated == 2 and pool.held == 2
    pool.acquire(100)
    assert pool.allocated == 3


def test_reused_buffers_keep_their_columns_apart() -> None:
    pool = DescriptorBufferPool("cpu", backend="xpu")
    big = pool.acquire(10)
    pool.release(big)
    small = pool.acquire(3)
    small.add_copies(0, GOOD + GOOD[:1], GOOD[::-1] + GOOD[:1], [1, 2, 3])
    s, d, k = small.numpy()
    assert s.tolist() == [XPU_BASE, XPU_BASE + 8, XPU_BASE]
    assert d.tolist() == [XPU_BASE + 8, XPU_BASE, XPU_BASE]
    assert k.tolist() == [1, 2, 3]


def test_released_handle_is_stale_everywhere() -> None:
    pool = DescriptorBufferPool("cpu")
    b = pool.acquire(4)
    pool.release(b)
    assert b.is_released
    for use in (
        lambda: b.add_copies(0, GOOD, GOOD, [8, 8]),
        lambda: b.host(),
        lambda: b.numpy(),
        lambda: b.src_ptrs,
        lambda: b.swap(1),
        lambda: pool.release(b),
    ):
        with pytest.raises(StaleBufferError):
            use()
    again = pool.acquire(4)  # the storage serves a new holder; the old handle stays stale
    again.add_copies(0, GOOD, GOOD, [8, 8])
    with pytest.raises(StaleBufferError):
        b.numpy()
    assert again.numpy()[2][:2].tolist() == [8, 8]


def test_release_into_another_pool_is_refused() -> None:
    p1, p2 = DescriptorBufferPool("cpu"), DescriptorBufferPool("cpu")
    b = p1.acquire(2)
    with pytest.raises(StaleBufferError, match="not acquired from this pool"):
        p2.release(b)
    p1.release(b)
    with pytest.raises(PtrTypeError):
        p1.release("bufs")  # type: ignore[arg-type]


def test_pool_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown backend"):
        DescriptorBufferPool("cpu", backend="nosuch")
    with pytest.raises(CapacityError):
        DescriptorBufferPool("cpu").acquire(-1)
    with pytest.raises(CapacityError):
        DescriptorBufferPool("cpu", min_capacity=-2)


# -- add_strided_copies ---------------------------------------------------------------------
@pytest.mark.parametrize("index_dtype", [np.uint64, np.int64, np.int32])
def test_strided_copies_match_addresses_exactly(index_dtype: type) -> None:
    rng = np.random.default_rng(2)
    si = rng.integers(0, 1 << 20, size=300).astype(index_dtype)
    di = rng.integers(0, 1 << 20, size=300).astype(index_dtype)
    sizes = rng.integers(0, 4097, size=300)
    for base in HIGH_ADDRESSES[:3]:
        b = DescriptorBufferPool("cpu", backend="xpu").acquire(310)
        end = b.add_strided_copies(7, DevicePtr(base), si, DevicePtr(0x7F00_0000_0000), di, 4096, sizes)
        assert end == 307
        s, d, k = b.numpy(307)
        assert s[7:].tolist() == addresses(DevicePtr(base), si, 4096).tolist()
        assert s[7:].tolist() == [base + int(i) * 4096 for i in si]
        assert d[7:].tolist() == [0x7F00_0000_0000 + int(i) * 4096 for i in di]
        assert k[7:].tolist() == sizes.tolist()
        signed = b.host(307, Encoding.I64)[0][7:].tolist()
        assert signed == [DevicePtr(v).signed for v in s[7:].tolist()]


def test_strided_copy_ending_exactly_at_2_64_takes_the_exact_path() -> None:
    b = DescriptorBufferPool("cpu").acquire(2)
    base = DevicePtr(TOP_ALIGNED - 8)
    # entry 1 has the largest index but size 0, entry 0 the largest size: the bound fails,
    # the exact check passes
    b.add_strided_copies(
        0, base, np.array([0, 1], dtype=np.uint64), DevicePtr(64), np.array([0, 1]), 8, [16, 0]
    )
    assert b.numpy()[0].tolist() == [TOP_ALIGNED - 8, TOP_ALIGNED]
    assert b.numpy()[2].tolist() == [16, 0]


U = np.uint64


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (
            (3, DevicePtr(XPU_BASE), np.arange(2, dtype=U), DevicePtr(64), np.arange(2), 8, [8, 8]),
            CapacityError,
            "fit",
        ),
        (
            (0, DevicePtr(XPU_BASE), np.arange(2, dtype=U), DevicePtr(64), np.arange(3), 8, [8, 8]),
            LengthMismatchError,
            "indices",
        ),
        (
            (0, DevicePtr(XPU_BASE), np.arange(2, dtype=U), DevicePtr(64), np.arange(2), 8, [8]),
            LengthMismatchError,
            "byte counts",
        ),
        (
            (0, DevicePtr(XPU_BASE), np.arange(2, dtype=U), DevicePtr(64), np.array([0, -1]), 8, [8, 8]),
            AddressRangeError,
            "non-negative",
        ),
        (
            (0, DevicePtr(XPU_BASE), np.arange(2, dtype=U), DevicePtr(64), np.arange(2), 8, [8, -8]),
            AddressRangeError,
            "non-negative",
        ),
        (
            (
                0,
                DevicePtr(XPU_BASE),
                np.arange(2, dtype=U),
                DevicePtr(64),
                np.arange(2),
                8,
                np.array([1 << 63, 0], dtype=U),
            ),
            AddressRangeError,
            "2\\*\\*63",
        ),
        (
            (0, DevicePtr(TOP_ALIGNED), np.arange(2, dtype=U), DevicePtr(64), np.arange(2), 8, [8, 8]),
            AddressOverflowError,
            "2\\*\\*64",
        ),
        (
            (0, DevicePtr(64), np.arange(2, dtype=U), DevicePtr(TOP_ALIGNED - 8), np.arange(2), 8, [8, 9]),
            AddressOverflowError,
            "2\\*\\*64",
        ),
        (
            (0, XPU_BASE, np.arange(2, dtype=U), DevicePtr(64), np.arange(2), 8, [8, 8]),
            PtrTypeError,
            "DevicePtr",
        ),
        (
            (0, DevicePtr(XPU_BASE), np.arange(2.0), DevicePtr(64), np.arange(2), 8, [8, 8]),
            PtrTypeError,
            "integer",
        ),
        (
            (0, DevicePtr(XPU_BASE), np.arange(2, dtype=U), DevicePtr(64), np.arange(2), -8, [8, 8]),
            AddressRangeError,
            "stride",
        ),
    ],
)
def test_strided_bad_input_raises_and_writes_nothing(
    args: tuple[object, ...], error: type[Exception], match: str
) -> None:
    b = DescriptorBufferPool("cpu", backend="xpu").acquire(4)
    b.add_copies(0, [DevicePtr(1 << 40)] * 4, [DevicePtr(1 << 41)] * 4, [7] * 4)
    before = [a.copy() for a in b.numpy()]
    with pytest.raises(error, match=match):
        b.add_strided_copies(*args)  # type: ignore[arg-type]
    assert all(np.array_equal(x, y) for x, y in zip(before, b.numpy(), strict=True))


def test_strided_on_released_buffers_is_stale() -> None:
    pool = DescriptorBufferPool("cpu")
    b = pool.acquire(2)
    pool.release(b)
    with pytest.raises(StaleBufferError):
        b.add_strided_copies(0, DevicePtr(64), np.arange(2), DevicePtr(64), np.arange(2), 8, [8, 8])


LIMIT = 1 << 64
bases = st.sampled_from(
    [0, 64, 1 << 47, (1 << 63) - 8, 1 << 63, XPU_BASE, LIMIT - (1 << 32), LIMIT - 8, LIMIT - 1]
)


@settings(max_examples=300, deadline=None)
@given(
    sb=bases,
    db=bases,
    idx=st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 2000), st.integers(0, 1 << 20)), max_size=12),
    stride=st.sampled_from([0, 1, 8, 4096, 1 << 20, 1 << 40]),
    signed=st.booleans(),
)
def test_strided_copies_are_exact_or_refused_whole(
    sb: int, db: int, idx: list[tuple[int, int, int]], stride: int, signed: bool
) -> None:
    """Against plain Python ints: every entry exact, or an overflow error and nothing written."""
    dt = np.int64 if signed else np.uint64
    si = np.array([i for i, _, _ in idx], dtype=dt)
    di = np.array([j for _, j, _ in idx], dtype=dt)
    sizes = [k for _, _, k in idx]
    b = DescriptorBufferPool("cpu", backend="xpu").acquire(len(idx) + 1)
    b.add_copies(
        0, [DevicePtr(1 << 12)] * (len(idx) + 1), [DevicePtr(1 << 13)] * (len(idx) + 1), [3] * (len(idx) + 1)
    )
    before = [a.copy() for a in b.numpy()]
    src = [sb + int(i) * stride for i in si]
    dst = [db + int(j) * stride for j in di]
    ok = all(a < LIMIT and a + k <= LIMIT for a, k in zip(src + dst, sizes + sizes, strict=True))
    if ok:
        assert b.add_strided_copies(1, DevicePtr(sb), si, DevicePtr(db), di, stride, sizes) == len(idx) + 1
        s, d, k = b.numpy()
        assert s[1:].tolist() == src and d[1:].tolist() == dst and k[1:].tolist() == sizes
        assert s[0] == 1 << 12  # the entry before `first` is untouched
    else:
        with pytest.raises(AddressOverflowError):
            b.add_strided_copies(1, DevicePtr(sb), si, DevicePtr(db), di, stride, sizes)
        assert all(np.array_equal(x, y) for x, y in zip(before, b.numpy(), strict=True))


def test_add_copies_racing_release_never_reaches_the_next_holder() -> None:
    """Issue 22 #10 for the EC pool: a thread's add_copies validates (its sources' data_ptr()
    blocks half-way) while another releases the handle and the storage goes to a new
    holder. The write must finish before the release (the handle's guard), so the new
    holder starts zeroed."""
    import threading

    pool = DescriptorBufferPool("cpu", backend="cuda")
    bufs = pool.acquire(4)
    validating, go, released = threading.Event(), threading.Event(), threading.Event()

    class Blocking:
        def data_ptr(self) -> int:
            validating.set()
            assert go.wait(10)
            return 0x1000

    errors: list[BaseException] = []
    holder: list[object] = []

    def writer() -> None:
        try:
            bufs.add_copies(0, [Blocking()], [DevicePtr(0x2000)], [64])  # type: ignore[list-item]
        except BaseException as exc:
            errors.append(exc)

    def releaser() -> None:
        pool.release(bufs)
        holder.append(pool.acquire(4))
        released.set()

    w = threading.Thread(target=writer)
    w.start()
    assert validating.wait(10)
    r = threading.Thread(target=releaser)
    r.start()
    released.wait(0.5)  # before the fix: done here, while the write still waits
    go.set()
    w.join(10)
    r.join(10)
    assert errors == [] and holder
    src, dst, sizes = holder[0].numpy()  # type: ignore[attr-defined]
    assert src.tolist() == [0] * 4 and dst.tolist() == [0] * 4 and sizes.tolist() == [0] * 4
