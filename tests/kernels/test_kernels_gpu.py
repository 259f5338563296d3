"""Compiled kernels on a CUDA GPU: large segments, pinned host memory, graphs, high addresses."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.segment_cases import arenas, random_plan, reference
from support.state_cases import make_setup
from support.state_cases import reference as state_reference

pytest.importorskip("triton")

from devptr import DevicePtr, Encoding, PtrBuffer, addresses
from devptr.kernels import SizeBuffer, batch_memcpy, copy_state_blocks, memmove_kinds
from devptr.testing import SIGN_BIT_ADDR

pytestmark = pytest.mark.gpu


def _tables(src_mem, dst_mem, src_offs, dst_offs, sizes):  # type: ignore[no-untyped-def]
    n = len(sizes)
    s, d, z = PtrBuffer(n, device="cuda"), PtrBuffer(n, device="cuda"), SizeBuffer(n, device="cuda")
    s.fill(0, addresses(DevicePtr.of(src_mem), np.array(src_offs, dtype=np.uint64), 1))
    d.fill(0, addresses(DevicePtr.of(dst_mem), np.array(dst_offs, dtype=np.uint64), 1))
    z.fill(0, sizes)
    s.to_device()
    d.to_device()
    z.to_device()
    return s, d, z


@pytest.mark.parametrize("seed", range(4))
def test_large_random_segments_default_config(seed: int) -> None:
    plan = random_plan(1000 + seed, max_count=300, max_size=4 << 20)
    src_mem, dst_mem = arenas(plan, torch.device("cuda"), seed)
    want = reference(plan, src_mem, dst_mem)
    s, d, z = _tables(src_mem, dst_mem, plan.src_offs, plan.dst_offs, plan.sizes)
    batch_memcpy(s, d, z)
    torch.cuda.synchronize()
    assert torch.equal(dst_mem, want)


def test_device_to_pinned_host_and_back_in_one_launch() -> None:
    dev = torch.randint(0, 256, (3 << 20,), dtype=torch.uint8, device="cuda")
    host = torch.full((3 << 20,), 0xA5, dtype=torch.uint8).pin_memory()
    back = torch.full((1 << 20,), 0xA5, dtype=torch.uint8, device="cuda")
    # D2H: dev[0:2 MiB] -> host[5:] (misaligned), dev[2 MiB + 3:] -> host[2 MiB + 100:];
    # then H2D: 64 bytes of host[2 MiB + 16:], a range neither D2H segment writes
    host[(2 << 20) + 16 : (2 << 20) + 80] = 7
    s, d, z = _tables(
        dev, host, [0, (2 << 20) + 3], [5, (2 << 20) + 100], [2 << 20, (1 << 20) - 200]
    )
    batch_memcpy(s, d, z)
    s2, d2, z2 = _tables(host, back, [(2 << 20) + 16], [0], [64])
    batch_memcpy(s2, d2, z2)
    torch.cuda.synchronize()
    assert torch.equal(host[5 : 5 + (2 << 20)], dev[: 2 << 20].cpu())
    assert torch.equal(host[(2 << 20) + 100 : (3 << 20) - 100], dev[(2 << 20) + 3 : (3 << 20) - 197].cpu())
    assert bool((back[:64] == 7).all()) and bool((back[64:] == 0xA5).all())


def test_overlap_on_hardware_with_many_warps() -> None:
    mem = torch.randint(0, 256, (1 << 22,), dtype=torch.uint8, device="cuda")
    want = mem.cpu().numpy().copy()
    segs = []
    for k, (n, delta) in enumerate(
        [(300_000, 1), (300_000, -1), (200_000, 16), (200_000, -16), (100_000, 4099), (100_000, -4099),
         (65_536, 65_535), (65_536, -65_535), (50_000, 0), (70_000, 70_000)]
    ):
        base = k * 400_000 + 100_000
        segs.append((base, base + delta, n))
    for s, d, n in segs:
        want[d : d + n] = want[s : s + n].copy()
    s, d, z = _tables(mem, mem, [x[0] for x in segs], [x[1] for x in segs], [x[2] for x in segs])
    batch_memcpy(s, d, z)
    torch.cuda.synchronize()
    assert np.array_equal(mem.cpu().numpy(), want)


def test_cuda_graph_replay_copies_again() -> None:
    plan = random_plan(77, max_count=50, max_size=256 << 10)
    src_mem, dst_mem = arenas(plan, torch.device("cuda"), 77)
    s, d, z = _tables(src_mem, dst_mem, plan.src_offs, plan.dst_offs, plan.sizes)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        batch_memcpy(s, d, z)  # compile outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        batch_memcpy(s, d, z)
    dst_mem.fill_(0xA5)
    src_mem.copy_(torch.randint(0, 256, src_mem.shape, dtype=torch.uint8, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(dst_mem, reference(plan, src_mem, torch.full_like(dst_mem, 0xA5)))


@pytest.mark.parametrize("encoding", [Encoding.I64, Encoding.U64])
def test_compiled_decision_is_unsigned(encoding: Encoding) -> None:
    cases = [
        (SIGN_BIT_ADDR - 0x1000, SIGN_BIT_ADDR, 0x2000, 3),
        (SIGN_BIT_ADDR, SIGN_BIT_ADDR - 0x1000, 0x2000, 2),
        (0x7FFF_0000_0000, SIGN_BIT_ADDR, 1 << 20, 1),
        (SIGN_BIT_ADDR, 0x7FFF_0000_0000, 1 << 20, 1),
        ((1 << 64) - 64, (1 << 64) - 8, 8, 1),
    ]
    n = len(cases)
    s, d, z = PtrBuffer(n, device="cuda"), PtrBuffer(n, device="cuda"), SizeBuffer(n, device="cuda")
    s.fill(0, [DevicePtr(c[0]) for c in cases])
    d.fill(0, [DevicePtr(c[1]) for c in cases])
    z.fill(0, [c[2] for c in cases])
    s.to_device()
    d.to_device()
    z.to_device()
    got = memmove_kinds(s.device(encoding), d.device(encoding), z).tolist()
    assert got == [c[3] for c in cases]


def test_state_copies_compiled() -> None:
    dev = torch.device("cuda")
    setup = make_setup(dev, seed=11)
    src = [0, 1, 3, -1, 2, 4]
    dst = [5, 6, 3, 2, 2, 7]
    bias = [0, 2, 1, 0, 0, 3]
    want = state_reference(setup, src, dst, bias, list(range(6)), False)
    ptrs: PtrBuffer = PtrBuffer(2, device=dev)
    ptrs.fill(0, [DevicePtr.of(t) for t in setup.tables])
    ptrs.to_device()
    t = lambda v: torch.tensor(v, dtype=torch.int32, device=dev)  # noqa: E731
    copy_state_blocks(setup.bases, setup.meta, ptrs, setup.tables[0].stride(0), t(src), t(dst), t(bias), 6,
                      tiles=4)
    torch.cuda.synchronize()
    for got, exp in zip(setup.states, want, strict=True):
        assert torch.equal(got.view(torch.uint8), exp.view(torch.uint8))


def test_graph_captures_a_sequence_of_fast_path_calls() -> None:
    # eager calls first (they fill the launch caches), then the same calls captured in one
    # graph: batch_memcpy on buffers, on a segment table, and state-block copies between
    # them; new source bytes after capture must come out of each replay.
    from devptr import PtrTable
    from devptr.kernels import SEGMENT_COLUMNS, batch_memcpy_table

    plan = random_plan(77, max_count=40, max_size=1 << 16)
    src_mem, dst_mem = arenas(plan, torch.device("cuda"), 77)
    s, d, z = _tables(src_mem, dst_mem, plan.src_offs, plan.dst_offs, plan.sizes)
    dst2 = torch.zeros_like(dst_mem)
    n = len(plan.sizes)
    table = PtrTable(n, SEGMENT_COLUMNS, device="cuda")
    table.fill(
        0,
        src=addresses(DevicePtr.of(src_mem), np.array(plan.src_offs, dtype=np.uint64), 1),
        dst=addresses(DevicePtr.of(dst2), np.array(plan.dst_offs, dtype=np.uint64), 1),
        size=plan.sizes,
    )
    table.to_device()
    dev = torch.device("cuda")
    setup = make_setup(dev, seed=5)
    ptrs: PtrBuffer[int] = PtrBuffer(2, device=dev)
    ptrs.fill(0, [DevicePtr.of(t) for t in setup.tables])
    ptrs.to_device()
    per_req = ([0, 1, 3, -1, 2, 4], [5, 6, 3, 2, 2, 7], [0, 2, 1, 0, 0, 3])
    cols = [torch.tensor(v, dtype=torch.int32, device=dev) for v in per_req]

    def step() -> None:
        batch_memcpy(s, d, z)
        batch_memcpy_table(table)
        copy_state_blocks(setup.bases, setup.meta, ptrs, setup.tables[0].stride(0), *cols, 6, tiles=2)

    step()
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    for _round in range(3):
        src_mem.random_(0, 256)
        dst_mem.zero_()
        dst2.zero_()
        want_states = state_reference(setup, *(c.tolist() for c in cols), list(range(6)), False)
        graph.replay()
        torch.cuda.synchronize()
        want = reference(plan, src_mem, torch.zeros_like(dst_mem))
        assert torch.equal(dst_mem, want)
        assert torch.equal(dst2, want)
        for got, exp in zip(setup.states, want_states, strict=True):
            assert torch.equal(got.view(torch.uint8), exp.view(torch.uint8))


def test_fast_path_follows_alignment_of_each_call() -> None:
    # a kernel compiled for 16-byte aligned tables/data must not be reused for unaligned
    # ones (Triton specialises on it): alternate aligned and unaligned calls.
    from devptr.adapters.lamport import local_group
    from devptr.kernels import lamport_allreduce

    base = torch.randint(0, 256, (1 << 16,), dtype=torch.uint8, device="cuda")
    out = torch.zeros_like(base)
    sizes = torch.tensor([4096, 4093, 3000], dtype=torch.int64, device="cuda")
    for shift in (0, 8, 0, 8, 0):
        words = torch.empty(8, dtype=torch.int64, device="cuda")
        s_tab = words[shift // 8 : shift // 8 + 3]
        d_words = torch.empty(8, dtype=torch.int64, device="cuda")
        d_tab = d_words[shift // 8 : shift // 8 + 3]
        s_tab.copy_(torch.tensor([0, 5000, 10000], device="cuda") + base.data_ptr())
        d_tab.copy_(torch.tensor([0, 5000, 10000], device="cuda") + out.data_ptr())
        out.zero_()
        batch_memcpy(s_tab, d_tab, sizes)
        torch.cuda.synchronize()
        for o, sz in ((0, 4096), (5000, 4093), (10000, 3000)):
            assert torch.equal(out[o : o + sz], base[o : o + sz])
    (ws,) = local_group(1, 1 << 16, device="cuda")
    arena = torch.randn(4096, device="cuda")
    for off in (0, 1, 0, 3, 0):  # fp32 data at 16-byte and 4-byte alignment
        x = arena[off : off + 1000]
        y = torch.empty(1004, device="cuda")[off : off + 1000]
        lamport_allreduce(x, ws, out=y)
        torch.cuda.synchronize()
        assert torch.equal(y, x)
    ws.check()
    ws.close()
