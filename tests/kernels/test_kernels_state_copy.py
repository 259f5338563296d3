"""copy_state_blocks: conv windows shifted by accepted tokens, whole temporal states."""

from __future__ import annotations

import pytest
import torch
from support.state_cases import make_setup, reference

pytest.importorskip("triton")

from devptr import CapacityError, InvalidValueError, LengthMismatchError, PtrBuffer, PtrTypeError
from devptr.kernels import (
    copy_state_blocks,
    copy_state_blocks_planned,
    state_copy_config,
    state_copy_plan,
)


def _run(setup, device, src, dst, bias, n, **kw):  # type: ignore[no-untyped-def]
    t = lambda v: torch.tensor(v, dtype=torch.int32, device=device)  # noqa: E731
    copy_state_blocks(
        setup.bases,
        setup.meta,
        _group_ptrs(setup, device),
        setup.tables[0].stride(0),
        t(src),
        t(dst),
        t(bias),
        n,
        **kw,
    )


def _group_ptrs(setup, device):  # type: ignore[no-untyped-def]
    from devptr import DevicePtr

    buf: PtrBuffer = PtrBuffer(2, device=device if device.type != "cpu" else None)
    buf.fill(0, [DevicePtr.of(t) for t in setup.tables])
    if device.type != "cpu":
        buf.to_device()
    return buf


@pytest.mark.parametrize(("tiles", "chunk"), [(3, 512), (16, 256)])  # few programs; many idle
@pytest.mark.parametrize("slices", [False, True])
@pytest.mark.parametrize("skip_same_block", [False, True])
def test_state_copies_match_vllm_copy_specs(
    skip_same_block: bool, slices: bool, tiles: int, chunk: int, kernel_device: torch.device
) -> None:
    setup = make_setup(kernel_device, seed=1)
    # req 0: plain move; 1: shift by 2 across blocks; 2: same-column shift (memmove in place);
    # 3: skipped (src -1); 4: same column, bias 0 (skipped); 5: shift 3 (window of 1 token)
    src = [0, 1, 3, -1, 2, 4]
    dst = [5, 6, 3, 2, 2, 7]
    bias = [0, 2, 1, 0, 0, 3]
    want = reference(setup, src, dst, bias, list(range(6)), skip_same_block)
    _run(setup, kernel_device, src, dst, bias, 6, skip_same_block=skip_same_block, tiles=tiles,
         slices=slices, chunk=chunk, byte_chunk=64)
    for got, exp in zip(setup.states, want, strict=True):
        assert torch.equal(got.view(torch.uint8), exp.view(torch.uint8))


def test_idx_mapping_selects_request_slots(kernel_device: torch.device) -> None:
    setup = make_setup(kernel_device, seed=2)
    src = [1, 0, 2, 3, 0, 1]
    dst = [4, 5, 6, 7, 1, 2]
    bias = [1, 0, 0, 2, 0, 1]
    mapping = [4, -1, 1]
    want = reference(setup, src, dst, bias, mapping, False)
    _run(setup, kernel_device, src, dst, bias, 3,
         idx_mapping=torch.tensor(mapping, dtype=torch.int32, device=kernel_device))
    for got, exp in zip(setup.states, want, strict=True):
        assert torch.equal(got.view(torch.uint8), exp.view(torch.uint8))


def test_launcher_validates(kernel_device: torch.device) -> None:
    setup = make_setup(kernel_device, seed=3)
    ptrs = _group_ptrs(setup, kernel_device)
    cols = torch.zeros(4, dtype=torch.int32, device=kernel_device)
    with pytest.raises(CapacityError):
        copy_state_blocks(setup.bases, setup.meta, ptrs, 8, cols, cols, cols, 5)
    with pytest.raises(LengthMismatchError):
        short: PtrBuffer = PtrBuffer(2)
        copy_state_blocks(short, setup.meta, ptrs, 8, cols, cols, cols, 1)
    with pytest.raises(PtrTypeError):
        copy_state_blocks(setup.bases, setup.meta, ptrs, 8, cols.float(), cols, cols, 1)


def test_launcher_defaults_for_a_batch(kernel_device: torch.device) -> None:
    # one 4 KiB step per program for the largest copy, at most 512 programs per copy
    kib = 1024
    assert state_copy_config([48 * kib, 2048 * kib], 1, kernel_device)["tiles"] == 512
    assert state_copy_config([48 * kib, 64 * kib], 8, kernel_device)["tiles"] == 16
    assert state_copy_config([100], 2, kernel_device)["tiles"] == 1
    assert state_copy_config([], 2, kernel_device)["tiles"] == 1
    setup = make_setup(kernel_device, seed=4)
    src, dst, bias = [0, 1, 3, 2, 0, 4], [5, 6, 3, 1, 2, 7], [1, 0, 2, 0, 3, 1]
    want = reference(setup, src, dst, bias, list(range(6)), True)
    sizes = [s[0].numel() * s.element_size() for s in setup.states]
    knobs = state_copy_config(sizes, 6, kernel_device)
    _run(setup, kernel_device, src, dst, bias, 6, skip_same_block=True, **knobs)
    for got, exp in zip(setup.states, want, strict=True):
        assert torch.equal(got.view(torch.uint8), exp.view(torch.uint8))


def _planned(setup, device, src, dst, bias, n, *, chunk=256, **kw):  # type: ignore[no-untyped-def]
    t = lambda v: torch.tensor(v, dtype=torch.int32, device=device)  # noqa: E731
    plan = state_copy_plan(setup.bases, setup.meta, _group_ptrs(setup, device), chunk=chunk)
    copy_state_blocks_planned(plan, setup.tables[0].stride(0), t(src), t(dst), t(bias), n, **kw)
    return plan


# the planned kernels: one program per record, or the class kernel (state and step from the
# program id: 3 classes at chunk 256, 1 at 4096)
KERNELS: dict[str, dict[str, bool]] = {"records": {"by_class": False}, "classes": {}}


@pytest.mark.parametrize("kernel", list(KERNELS))
@pytest.mark.parametrize("chunk", [256, 4096])  # several programs per copy; one
@pytest.mark.parametrize("skip_same_block", [False, True])
def test_planned_copies_match_vllm_copy_specs(
    skip_same_block: bool, chunk: int, kernel: str, kernel_device: torch.device
) -> None:
    # the plan's records carry each state's facts: same copies as the table-driven kernel
    # (shifts across blocks and in place, skipped requests, dim-first windows, two groups)
    setup = make_setup(kernel_device, seed=5)
    src, dst, bias = [0, 1, 3, -1, 2, 4], [5, 6, 3, 2, 2, 7], [0, 2, 1, 0, 0, 3]
    want = reference(setup, src, dst, bias, list(range(6)), skip_same_block)
    plan = _planned(setup, kernel_device, src, dst, bias, 6, chunk=chunk,
                    skip_same_block=skip_same_block, byte_chunk=64, **KERNELS[kernel])
    for got, exp in zip(setup.states, want, strict=True):
        assert torch.equal(got.view(torch.uint8), exp.view(torch.uint8))
    # one record per busy program: whole-window/-block copies over chunk-byte steps,
    # dim-first windows one program each
    want_programs = 0
    for s, kind in zip(setup.states, setup.kinds, strict=True):
        nbytes = s[0].numel() * s.element_size()
        want_programs += 1 if kind == "conv_df" else -(-nbytes // chunk)
    assert plan.records.shape == (want_programs, 8)
    assert plan.records.device.type == kernel_device.type
    # the class kernel's view: one facts row per state (its record head), sorted by tiles
    tiles = [int(r[7]) >> 32 for r in plan.records.tolist() if int(r[7]) & 0xFFFFFFFF == 0]
    heads = [r[:7] for r in plan.records.tolist() if int(r[7]) & 0xFFFFFFFF == 0]
    order = sorted(range(len(tiles)), key=lambda k: tiles[k])
    assert plan.facts.tolist() == [[*heads[k], 0] for k in order]
    assert [c[2] for c in plan.classes] == sorted(set(tiles))
    assert sum(tiles) == want_programs and plan.classes[0][:2] == (0, 0)


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_planned_with_idx_mapping(kernel: str, kernel_device: torch.device) -> None:
    setup = make_setup(kernel_device, seed=6)
    src, dst, bias = [1, 0, 2, 3, 0, 1], [4, 5, 6, 7, 1, 2], [1, 0, 0, 2, 0, 1]
    mapping = [4, -1, 1]
    want = reference(setup, src, dst, bias, mapping, False)
    _planned(setup, kernel_device, src, dst, bias, 3, **KERNELS[kernel],
             idx_mapping=torch.tensor(mapping, dtype=torch.int32, device=kernel_device))
    for got, exp in zip(setup.states, want, strict=True):
        assert torch.equal(got.view(torch.uint8), exp.view(torch.uint8))


def test_plan_validates(kernel_device: torch.device) -> None:
    setup = make_setup(kernel_device, seed=7)
    ptrs = _group_ptrs(setup, kernel_device)
    with pytest.raises(InvalidValueError):
        state_copy_plan(setup.bases, setup.meta, ptrs, chunk=1000)
    with pytest.raises(LengthMismatchError):
        state_copy_plan(PtrBuffer(2), setup.meta, ptrs)
    one: PtrBuffer = PtrBuffer(1, device=kernel_device if kernel_device.type != "cpu" else None)
    with pytest.raises(InvalidValueError, match="group 1"):  # states of group 1, one table
        state_copy_plan(setup.bases, setup.meta, one)
    plan = state_copy_plan(setup.bases, setup.meta, ptrs)
    cols = torch.zeros(4, dtype=torch.int32, device=kernel_device)
    with pytest.raises(CapacityError):
        copy_state_blocks_planned(plan, 8, cols, cols, cols, 5)
    with pytest.raises(PtrTypeError):
        copy_state_blocks_planned(plan.records, 8, cols, cols, cols, 1)  # type: ignore[arg-type]


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_planned_copy_replays_in_a_cuda_graph(kernel: str) -> None:
    # compiled path: captured once, replayed after the request columns change on the device
    device = torch.device("cuda")
    setup = make_setup(device, seed=8)
    plan = state_copy_plan(setup.bases, setup.meta, _group_ptrs(setup, device))
    t = lambda v: torch.tensor(v, dtype=torch.int32, device=device)  # noqa: E731
    src, dst, bias = t([0, 1, 3, -1, 2, 4]), t([5, 6, 3, 2, 2, 7]), t([0, 2, 1, 0, 0, 3])
    stride = setup.tables[0].stride(0)
    copy_state_blocks_planned(plan, stride, src, dst, bias, 6, **KERNELS[kernel])  # compile first
    setup = make_setup(device, seed=8)
    plan = state_copy_plan(setup.bases, setup.meta, _group_ptrs(setup, device))
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        copy_state_blocks_planned(plan, stride, src, dst, bias, 6, **KERNELS[kernel])
    new = ([1, 0, 2, 3, 0, 1], [4, 5, 6, 7, 1, 2], [1, 0, 0, 2, 0, 1])
    want = reference(setup, *new, list(range(6)), False)
    for d, v in zip((src, dst, bias), new, strict=True):
        d.copy_(t(v))
    graph.replay()
    torch.cuda.synchronize()
    for got, exp in zip(setup.states, want, strict=True):
        assert torch.equal(got.view(torch.uint8), exp.view(torch.uint8))
