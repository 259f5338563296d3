"""batch_memcpy on real memory: random plans, overlap, encodings, validation."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from support.segment_cases import Plan, arenas, random_plan, reference, scattered

pytest.importorskip("triton")

from devptr import (
    CapacityError,
    Column,
    DevicePtr,
    Encoding,
    InvalidValueError,
    LengthMismatchError,
    PtrBuffer,
    PtrTypeError,
    addresses,
    ptr_tensor,
)
from devptr.kernels import SizeBuffer, batch_memcpy, batch_memcpy_columns
from devptr.kernels import _memcpy as M


def _tables(
    base_src: torch.Tensor,
    base_dst: torch.Tensor,
    src_offs: list[int],
    dst_offs: list[int],
    sizes: list[int],
    device: torch.device,
) -> tuple[PtrBuffer, PtrBuffer, SizeBuffer]:
    n = len(sizes)
    dev = device if device.type != "cpu" else None
    src = PtrBuffer(n, device=dev)
    dst = PtrBuffer(n, device=dev)
    sz = SizeBuffer(n, device=dev)
    src.fill(0, addresses(DevicePtr.of(base_src), np.array(src_offs, dtype=np.uint64), 1))
    dst.fill(0, addresses(DevicePtr.of(base_dst), np.array(dst_offs, dtype=np.uint64), 1))
    sz.fill(0, sizes)
    if dev is not None:
        src.to_device()
        dst.to_device()
        sz.to_device()
    return src, dst, sz


@pytest.mark.parametrize("seed", range(5))
def test_random_segments_match_torch(seed: int, kernel_device: torch.device) -> None:
    plan = random_plan(seed)
    src_mem, dst_mem = arenas(plan, kernel_device, seed)
    want = reference(plan, src_mem, dst_mem)
    src, dst, sz = _tables(src_mem, dst_mem, plan.src_offs, plan.dst_offs, plan.sizes, kernel_device)
    # small steps and a forced split exercise full steps, remainders and several programs
    batch_memcpy(src, dst, sz, chunk=1024, byte_chunk=256, split=[1, 2, 3, 5, 4][seed])
    assert torch.equal(dst_mem, want)


@pytest.mark.parametrize("shift", [0, 8, 24, 4, 12, 2, 1, 7, 3, 15])  # agree mod 16, 8, 4, 2, none
@pytest.mark.parametrize("base", [0, 3])
def test_every_alignment_class_copies_exactly(shift: int, base: int, kernel_device: torch.device) -> None:
    # 4093-byte segments whose sources and destinations agree modulo 16 (the 16-byte path)
    # or differ modulo 16 (the shifted path: whole words when they agree modulo 8, else a
    # funnel shift of two source words), with head and tail bytes, short segments that are
    # all head, and remainders; split over programs (chunk 1024, split 3).
    sizes = [4093, 4093, 1, 7, 15, 16, 17, 31, 33, 4093 * 2 + 5]
    src_offs, dst_offs, s, d = [], [], base, base + shift
    for z in sizes:
        src_offs.append(s)
        dst_offs.append(d)
        s += z + 16
        d += z + 16
    _copy_and_compare(src_offs, dst_offs, sizes, s, d, kernel_device, shift, chunk=1024, split=3)


def _copy_and_compare(
    src_offs: list[int],
    dst_offs: list[int],
    sizes: list[int],
    src_bytes: int,
    dst_bytes: int,
    device: torch.device,
    seed: int,
    **knobs: int,
) -> None:
    """Random source bytes, a poisoned destination, one launch, and a byte-exact check."""
    g = torch.Generator().manual_seed(seed)
    src_mem = torch.randint(0, 256, (src_bytes + 16,), dtype=torch.uint8, generator=g).to(device)
    dst_mem = torch.full((dst_bytes + 16,), 0xA5, dtype=torch.uint8, device=device)
    want = dst_mem.clone()
    for so, do, z in zip(src_offs, dst_offs, sizes, strict=True):
        want[do : do + z] = src_mem[so : so + z]
    src, dst, sz = _tables(src_mem, dst_mem, src_offs, dst_offs, sizes, device)
    batch_memcpy(src, dst, sz, **knobs)
    assert torch.equal(dst_mem, want)


def test_random_relative_alignment_one_launch(kernel_device: torch.device) -> None:
    # many segments of odd sizes, each at its own source and destination offset modulo
    # 16, in one launch with the launcher's own split and step (the benchmark's case)
    sizes = [random.Random(11 + k).randrange(700) for k in range(64)]
    src_offs, dst_offs, s, d = scattered(sizes, 11)
    _copy_and_compare(src_offs, dst_offs, sizes, s, d, kernel_device, 5)


@pytest.mark.parametrize("encoding", [Encoding.I64, Encoding.U64])
@pytest.mark.parametrize("size_dtype", [torch.int32, torch.int64, torch.uint64])
def test_tensor_tables_either_encoding(
    encoding: Encoding, size_dtype: torch.dtype, kernel_device: torch.device
) -> None:
    plan = random_plan(100 + len(str(size_dtype)), max_count=8, max_size=9000)
    src_mem, dst_mem = arenas(plan, kernel_device, 7)
    want = reference(plan, src_mem, dst_mem)
    src, dst, _ = _tables(src_mem, dst_mem, plan.src_offs, plan.dst_offs, plan.sizes, kernel_device)
    view = "host" if kernel_device.type == "cpu" else "device"
    s_t = getattr(src, view)(encoding)
    d_t = getattr(dst, view)(encoding)
    z_t = torch.tensor(plan.sizes, dtype=torch.int64).to(size_dtype).to(kernel_device)
    assert s_t.dtype == encoding.torch_dtype
    batch_memcpy(s_t, d_t, z_t, chunk=2048, byte_chunk=512)
    assert torch.equal(dst_mem, want)


def test_strided_columns_of_one_table(kernel_device: torch.device) -> None:
    plan = random_plan(42, max_count=6, max_size=5000)
    src_mem, dst_mem = arenas(plan, kernel_device, 3)
    want = reference(plan, src_mem, dst_mem)
    rows = torch.tensor(
        [
            [src_mem.data_ptr() + s, dst_mem.data_ptr() + d, n]
            for s, d, n in zip(plan.src_offs, plan.dst_offs, plan.sizes, strict=True)
        ],
        dtype=torch.int64,
    ).to(kernel_device)
    batch_memcpy(rows[:, 0], rows[:, 1], rows[:, 2], chunk=1024, byte_chunk=256)
    assert torch.equal(dst_mem, want)


def _overlap_cases() -> list[tuple[int, int, int]]:
    """(src_off, dst_off, size) inside one arena, each in its own 16 KiB window."""
    cases: list[tuple[int, int, int]] = []
    window = 0
    for skew in (0, 5):  # 5: head bytes before the first 16-byte boundary
        for size in (1, 15, 16, 17, 255, 256, 1000, 4099):
            for delta in (-1, 1, -3, 5, -16, 16, -17, 32, -(size - 1), size - 1, 0, -size, size):
                base = window * 16384 + 4096 + 64 + skew
                cases.append((base, base + delta, size))
                window += 1
    return cases


@pytest.mark.parametrize("split", [1, 4])
def test_overlapping_segments_have_memmove_semantics(split: int, kernel_device: torch.device) -> None:
    cases = _overlap_cases()
    g = torch.Generator().manual_seed(split)
    mem = torch.randint(0, 256, (len(cases) * 16384 + 16384,), dtype=torch.uint8, generator=g)
    want = mem.clone().numpy()
    for s, d, n in cases:
        want[d : d + n] = want[s : s + n].copy()  # numpy slice copy: memmove
    mem = mem.to(kernel_device)
    src, dst, sz = _tables(
        mem, mem, [c[0] for c in cases], [c[1] for c in cases], [c[2] for c in cases], kernel_device
    )
    batch_memcpy(src, dst, sz, chunk=512, byte_chunk=64, split=split)
    assert np.array_equal(mem.cpu().numpy(), want)


def test_mixed_overlap_and_disjoint_in_one_launch(kernel_device: torch.device) -> None:
    rng = random.Random(5)
    mem = torch.randint(0, 256, (1 << 18,), dtype=torch.uint8, generator=torch.Generator().manual_seed(5))
    want = mem.clone().numpy()
    segs = []
    for k in range(12):
        base = k * 20000
        n = rng.randint(1, 9000)
        delta = rng.choice([-rng.randint(1, n), rng.randint(1, n), n + rng.randint(0, 50)])
        segs.append((base + 9100, base + 9100 + delta, n))
    for s, d, n in segs:
        want[d : d + n] = want[s : s + n].copy()
    mem = mem.to(kernel_device)
    src, dst, sz = _tables(
        mem, mem, [x[0] for x in segs], [x[1] for x in segs], [x[2] for x in segs], kernel_device
    )
    batch_memcpy(src, dst, sz, chunk=1024, byte_chunk=256)
    assert np.array_equal(mem.cpu().numpy(), want)


def test_n_copies_only_a_prefix(kernel_device: torch.device) -> None:
    plan = random_plan(9, max_count=10, max_size=3000)
    src_mem, dst_mem = arenas(plan, kernel_device, 9)
    keep = max(1, len(plan.sizes) // 2)
    cut = random_plan(9, max_count=10, max_size=3000)
    cut.src_offs, cut.dst_offs, cut.sizes = plan.src_offs[:keep], plan.dst_offs[:keep], plan.sizes[:keep]
    want = reference(cut, src_mem, dst_mem)
    src, dst, sz = _tables(src_mem, dst_mem, plan.src_offs, plan.dst_offs, plan.sizes, kernel_device)
    batch_memcpy(src, dst, sz, n=keep)
    assert torch.equal(dst_mem, want)
    batch_memcpy(src, dst, sz, n=0)  # nothing, no launch
    assert torch.equal(dst_mem, want)


def test_validation_happens_before_launch() -> None:
    src = PtrBuffer(4)
    dst = PtrBuffer(4)
    sz = SizeBuffer(3)
    with pytest.raises(LengthMismatchError):
        batch_memcpy(src, dst, sz)
    with pytest.raises(CapacityError):
        batch_memcpy(src, dst, sz, n=4)
    with pytest.raises(CapacityError):
        batch_memcpy(src, dst, sz, n=-1)
    with pytest.raises(PtrTypeError, match="byte counts, not addresses"):
        batch_memcpy(src, dst, PtrBuffer(4))
    with pytest.raises(PtrTypeError, match=r"1-D torch\.int64 or torch\.uint64"):
        batch_memcpy(torch.zeros(4, dtype=torch.int32), dst, sz, n=3)
    with pytest.raises(PtrTypeError, match="PtrBuffer or an address tensor"):
        batch_memcpy([DevicePtr(0)], dst, sz, n=1)
    with pytest.raises(PtrTypeError, match="int32, int64 or uint64"):
        batch_memcpy(src, dst, torch.zeros(4, dtype=torch.float32))
    with pytest.raises(PtrTypeError, match="one device"):
        batch_memcpy(src, dst, torch.zeros(4, dtype=torch.int64, device="meta"))


def test_size_buffer_rejects_bad_counts() -> None:
    sz = SizeBuffer(4)
    with pytest.raises(ValueError, match="non-negative"):
        sz.fill(0, [1, -2])
    with pytest.raises(TypeError):
        sz.fill(0, [1.5])
    with pytest.raises(TypeError):
        sz[0] = DevicePtr(8)  # type: ignore[assignment]
    with pytest.raises(CapacityError):
        sz.fill(3, [1, 2])
    assert sz.numpy().tolist() == [0, 0, 0, 0]  # failed calls wrote nothing
    assert sz.fill(1, np.array([7, 9], dtype=np.uint32)) == 3
    sz[0] = 5
    assert sz.numpy().tolist() == [5, 7, 9, 0]
    assert sz[2] == 9


def test_segment_table_one_upload(kernel_device: torch.device) -> None:
    # the three tables as one PtrTable (src, dst, size records): one fill, one to_device
    from devptr import PtrTable
    from devptr.kernels import SEGMENT_COLUMNS, batch_memcpy_table

    plan = random_plan(11)
    src_mem, dst_mem = arenas(plan, kernel_device, 11)
    want = reference(plan, src_mem, dst_mem)
    n = len(plan.sizes)
    dev = kernel_device if kernel_device.type != "cpu" else None
    table = PtrTable(n + 2, SEGMENT_COLUMNS, device=dev)
    srcs = [src_mem[o : o + max(z, 1)] for o, z in zip(plan.src_offs, plan.sizes, strict=True)]
    dsts = [dst_mem[o : o + max(z, 1)] for o, z in zip(plan.dst_offs, plan.sizes, strict=True)]
    table.fill(0, src=srcs, dst=dsts, size=plan.sizes)
    if dev is not None:
        table.to_device(n)
    batch_memcpy_table(table, n, chunk=1024, split=2)
    assert torch.equal(dst_mem, want)
    batch_memcpy_table(table, n)  # again, through the remembered views: same bytes
    assert torch.equal(dst_mem, want)
    with pytest.raises(CapacityError):
        batch_memcpy_table(table, n + 3)
    with pytest.raises(PtrTypeError):
        batch_memcpy_table(PtrTable(2, {"a": Column.PTR}), 1)


def test_a_segment_table_is_freed_after_its_launch(kernel_device: torch.device) -> None:
    # the launcher's column views of a table are cached weakly: launching never keeps it alive
    import gc
    import weakref

    from devptr import PtrTable
    from devptr.kernels import SEGMENT_COLUMNS, batch_memcpy_table

    a = torch.arange(64, dtype=torch.uint8, device=kernel_device)
    b = torch.zeros(64, dtype=torch.uint8, device=kernel_device)
    dev = kernel_device if kernel_device.type != "cpu" else None
    table = PtrTable(1, SEGMENT_COLUMNS, device=dev)
    table.fill(0, src=[a], dst=[b], size=[64])
    if dev is not None:
        table.to_device(1)
    batch_memcpy_table(table, 1)
    assert torch.equal(a, b)
    ref = weakref.ref(table)
    del table
    gc.collect()
    assert ref() is None


def test_a_buffer_released_to_its_pool_is_refused_after_a_launch(kernel_device: torch.device) -> None:
    # the launcher remembers buffer views by identity; a released buffer must still raise
    from devptr import PtrBufferPool, StaleBufferError

    dev = kernel_device if kernel_device.type != "cpu" else None
    pool = PtrBufferPool(4, device=dev)
    a = torch.arange(64, dtype=torch.uint8, device=kernel_device)
    b = torch.zeros(64, dtype=torch.uint8, device=kernel_device)
    src, dst = pool.acquire(1), pool.acquire(1)
    src[0], dst[0] = DevicePtr.of(a), DevicePtr.of(b)
    sz = SizeBuffer(1, device=dev)
    sz[0] = 64
    for t in (src, dst, sz):
        if dev is not None:
            t.to_device()
    batch_memcpy(src, dst, sz)
    assert torch.equal(a, b)
    pool.release(dst)
    with pytest.raises(StaleBufferError):
        batch_memcpy(src, dst, sz)


@pytest.mark.parametrize(
    ("knob", "bad", "error"),
    [
        ("chunk", 1024.0, PtrTypeError),
        ("chunk", True, PtrTypeError),
        ("chunk", 300, InvalidValueError),
        ("split", "2", PtrTypeError),
        ("split", 0, InvalidValueError),
        ("byte_chunk", 32.0, PtrTypeError),
        ("byte_chunk", 24, InvalidValueError),
        ("num_warps", 2.0, PtrTypeError),
        ("num_warps", 3, InvalidValueError),
        ("num_warps", 0, InvalidValueError),
        ("num_warps", 64, InvalidValueError),
    ],
)
def test_launch_knobs_wrong_type_is_a_type_error(
    kernel_device: torch.device, knob: str, bad: object, error: type[Exception]
) -> None:
    plan = random_plan(5)
    src_mem, dst_mem = arenas(plan, kernel_device, 5)
    before = dst_mem.clone()
    s, d, z = _tables(src_mem, dst_mem, plan.src_offs, plan.dst_offs, plan.sizes, kernel_device)
    with pytest.raises(error, match=knob):
        batch_memcpy(s, d, z, **{knob: bad})
    assert torch.equal(dst_mem, before)  # nothing launched


def test_default_warps_one_warp_only_when_every_segment_fits_one_step() -> None:
    assert M.default_warps(1) == M.ONE_STEP_WARPS
    assert M.default_warps(4093) == M.ONE_STEP_WARPS
    assert M.default_warps(M.CHUNK) == M.ONE_STEP_WARPS
    assert M.default_warps(M.CHUNK + 1) == M.NUM_WARPS
    assert M.default_warps(None) == M.NUM_WARPS  # sizes on the device, no max_size


@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_every_warp_count_copies_the_same_bytes(kernel_device: torch.device, num_warps: int) -> None:
    # segments of at most one step (the one-warp default) and larger ones, each count forced
    for seed, max_size in ((11, 4096), (12, 64 << 10)):
        plan = random_plan(seed, max_size=max_size)
        src_mem, dst_mem = arenas(plan, kernel_device, seed)
        s, d, z = _tables(src_mem, dst_mem, plan.src_offs, plan.dst_offs, plan.sizes, kernel_device)
        want = reference(plan, src_mem, dst_mem)
        batch_memcpy(s, d, z, num_warps=num_warps)
        assert torch.equal(dst_mem, want)


def _columns(plan: Plan, src_mem: torch.Tensor, dst_mem: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Three column views as an adapter would build them (devptr's own table spellings)."""
    dev = src_mem.device
    s = ptr_tensor([DevicePtr.of(src_mem) + o for o in plan.src_offs], encoding=Encoding.U64, device=dev)
    d = ptr_tensor([DevicePtr.of(dst_mem) + o for o in plan.dst_offs], device=dev)
    z = torch.tensor(plan.sizes, dtype=torch.int64, device=dev)
    return s, d, z


def test_batch_memcpy_columns_copies_like_batch_memcpy(kernel_device: torch.device) -> None:
    plan = random_plan(13)
    src_mem, dst_mem = arenas(plan, kernel_device, 13)
    want = reference(plan, src_mem, dst_mem)
    s, d, z = _columns(plan, src_mem, dst_mem)
    batch_memcpy_columns(s, d, z, len(plan.sizes), max_size=max(plan.sizes))  # uint64 src, int64 dst
    assert torch.equal(dst_mem, want)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (lambda s, d, z, n, m: (s.view(torch.float64), d, z, n, m), PtrTypeError, "src"),
        (lambda s, d, z, n, m: (s, d.view(1, -1), z, n, m), PtrTypeError, "dst"),
        (lambda s, d, z, n, m: (s, d, z.to(torch.int16), n, m), PtrTypeError, "sizes"),
        (lambda s, d, z, n, m: (s, d, z, str(n), m), PtrTypeError, "n must be an int"),
        (lambda s, d, z, n, m: (s, d, z[:-1], n, m), CapacityError, "n"),
        (lambda s, d, z, n, m: (s, d, z, n, -1), CapacityError, "max_size"),
        (lambda s, d, z, n, m: (s, d, z, n, float(m)), PtrTypeError, "max_size"),
    ],
)
def test_batch_memcpy_columns_refuses_bad_views(
    kernel_device: torch.device, change: object, error: type[Exception], match: str
) -> None:
    plan = random_plan(14)
    src_mem, dst_mem = arenas(plan, kernel_device, 14)
    before = dst_mem.clone()
    s, d, z = _columns(plan, src_mem, dst_mem)
    args = change(s, d, z, len(plan.sizes), max(plan.sizes))  # type: ignore[operator]
    with pytest.raises(error, match=match):
        batch_memcpy_columns(args[0], args[1], args[2], args[3], max_size=args[4])
    assert torch.equal(dst_mem, before)  # nothing launched


def test_batch_memcpy_columns_checks_other_views_after_a_checked_call(kernel_device: torch.device) -> None:
    # a first call remembers its three views; a later call with another dst, or n beyond
    # the capacity, is checked again, never trusted on src's identity alone
    plan = random_plan(15)
    src_mem, dst_mem = arenas(plan, kernel_device, 15)
    s, d, z = _columns(plan, src_mem, dst_mem)
    n, top = len(plan.sizes), max(plan.sizes)
    batch_memcpy_columns(s, d, z, n, max_size=top)
    assert torch.equal(dst_mem, reference(plan, src_mem, dst_mem))
    with pytest.raises(PtrTypeError, match="dst"):
        batch_memcpy_columns(s, d.view(torch.float64), z, n, max_size=top)
    with pytest.raises(CapacityError, match="n"):
        batch_memcpy_columns(s, d, z, n + 1, max_size=top)
    with pytest.raises(PtrTypeError, match="max_size"):
        batch_memcpy_columns(s, d, z, n, max_size=True)
