"""devptr.adapters.mamba_copy: tables bit-exact for XPU-like addresses, real copies correct."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before any devptr kernel is imported

from support.mamba_cases import FUNCS, GROUPS, MAMBA_GROUPS, fake_context

from devptr import CapacityError, DevicePtr, Encoding
from devptr.adapters.mamba_copy import (
    MambaCopyBuffers,
    collect_mamba_copy_meta,
    do_mamba_copy_block,
    get_conv_copy_spec,
)
from devptr.testing import SIGN_BIT_PLUS_42, TOP_ALIGNED


def _expected(ctx, block_ids, src, dest, bias):  # type: ignore[no-untyped-def]
    """vLLM's collect_mamba_copy_meta in Python integers."""
    out = []
    for gid in MAMBA_GROUPS:
        ids = block_ids[gid]
        for layer in GROUPS[gid]:
            for state, func in zip(ctx[layer], FUNCS[layer], strict=False):
                st, es = state.stride(), state.element_size()
                inner = 1
                for d in state.shape[1:]:
                    inner *= d
                if func is get_conv_copy_spec:
                    tok = inner // state.shape[1]
                    s_addr = state.data_ptr() + (ids[src] * st[0] + bias * st[1]) * es
                    size = (state.shape[1] - bias) * tok * es
                else:
                    s_addr = state.data_ptr() + ids[src + bias] * st[0] * es
                    size = inner * es
                out.append((s_addr, state.data_ptr() + ids[dest] * st[0] * es, size))
    return out


def test_tables_hold_exact_bits_for_high_addresses_in_both_encodings() -> None:
    ctx = fake_context()
    bufs = MambaCopyBuffers.create(4, GROUPS, FUNCS, MAMBA_GROUPS, device="cpu", pin_memory=False)
    assert bufs.entries_per_req == 5 and bufs.src_ptrs.capacity == 20
    reqs = [([[], [3, 7, 9, 11], [0, 0]], 1, 0, 2), ([[], [2, 5, 1, 0], [0, 0]], 0, 0, 1)]
    want = []
    for block_ids, src, dest, bias in reqs:
        collect_mamba_copy_meta(bufs, GROUPS, FUNCS, MAMBA_GROUPS, src, dest, bias, block_ids, ctx)
        want += _expected(ctx, block_ids, src, dest, bias)
    n = bufs.offset
    assert n == 10
    assert TOP_ALIGNED in [w[1] for w in want] and SIGN_BIT_PLUS_42 + 11 * 105 in [w[0] for w in want]
    bufs.src_ptrs.to_device(n)
    bufs.dst_ptrs.to_device(n)
    bufs.sizes.to_device(n)
    for k, buf in ((0, bufs.src_ptrs), (1, bufs.dst_ptrs)):
        expect = [w[k] for w in want]
        assert buf.host(Encoding.U64)[:n].tolist() == expect
        assert buf.host(Encoding.I64)[:n].tolist() == [DevicePtr(a).signed for a in expect]
        assert buf.device(Encoding.U64)[:n].tolist() == expect
        assert buf.device(Encoding.I64)[:n].tolist() == [DevicePtr(a).signed for a in expect]
        assert buf[:n] == [DevicePtr(a) for a in expect]
    assert bufs.sizes.device()[:n].tolist() == [w[2] for w in want]


def test_failing_collect_writes_nothing() -> None:
    ctx = fake_context()
    bufs = MambaCopyBuffers.create(1, GROUPS, FUNCS, MAMBA_GROUPS, pin_memory=False)
    with pytest.raises(CapacityError, match="block id"):
        collect_mamba_copy_meta(bufs, GROUPS, FUNCS, MAMBA_GROUPS, 0, 1, 0, [[], [3, 16], [0, 0]], ctx)
    assert bufs.offset == 0 and bufs.src_ptrs.numpy().tolist() == [0] * 5
    collect_mamba_copy_meta(bufs, GROUPS, FUNCS, MAMBA_GROUPS, 0, 1, 0, [[], [3, 4], [0, 0]], ctx)
    with pytest.raises(CapacityError, match="exceed capacity"):
        collect_mamba_copy_meta(bufs, GROUPS, FUNCS, MAMBA_GROUPS, 0, 1, 0, [[], [3, 4], [0, 0]], ctx)
    assert bufs.offset == 5
    # same block, no bias: nothing to copy (as in vLLM)
    collect_mamba_copy_meta(bufs, GROUPS, FUNCS, MAMBA_GROUPS, 1, 1, 0, [[], [3, 4], [0, 0]], ctx)
    assert bufs.offset == 5


@pytest.mark.parametrize(("src", "dest"), [(2, 0), (0, 2), (-1, 0), (0, -1)])
def test_block_index_past_the_list_is_a_capacity_error(src: int, dest: int) -> None:
    """Issue 22 #18: an index past a request's block list was a bare IndexError (and -1
    silently picked the last block)."""
    ctx = fake_context()
    bufs = MambaCopyBuffers.create(1, GROUPS, FUNCS, MAMBA_GROUPS, pin_memory=False)
    with pytest.raises(CapacityError, match="block index"):
        collect_mamba_copy_meta(bufs, GROUPS, FUNCS, MAMBA_GROUPS, src, dest, 0, [[], [3, 4], [0, 0]], ctx)
    assert bufs.offset == 0 and bufs.src_ptrs.numpy().tolist() == [0] * 5


def _real_context(device: torch.device) -> dict[str, list[torch.Tensor]]:
    g = torch.Generator().manual_seed(0)

    def rnd(*shape: int, dtype: torch.dtype = torch.float16) -> torch.Tensor:
        return torch.randint(-500, 500, shape, generator=g).to(dtype).to(device)

    return {
        "mamba.0": [rnd(12, 4, 40), rnd(12, 3, 8, 8, dtype=torch.float32)],
        "mamba.1": [rnd(12, 4, 24, dtype=torch.bfloat16), rnd(12, 2, 33)],
        "conv.0": [rnd(6, 4, 10, dtype=torch.float32)],
    }


def _reference(ctx, block_ids, src, dest, bias):  # type: ignore[no-untyped-def]
    out = {k: [t.clone() for t in v] for k, v in ctx.items()}
    for gid in MAMBA_GROUPS:
        ids = block_ids[gid]
        for layer in GROUPS[gid]:
            for state, func in zip(out[layer], FUNCS[layer], strict=False):
                if func is get_conv_copy_spec:
                    w = state.shape[1]
                    state[ids[dest], : w - bias] = state[ids[src], bias:].clone()
                else:
                    state[ids[dest]] = state[ids[src + bias]].clone()
    return out


@pytest.mark.parametrize("generic", [False, True])
def test_real_tensors_copy_the_right_bytes(generic: bool) -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ctx = _real_context(device)
    funcs = FUNCS
    if generic:  # copy functions the adapter does not know: called per entry, as vLLM does
        funcs = {k: tuple((lambda *a, f=f: f(*a)) for f in v) for k, v in FUNCS.items()}
    bufs = MambaCopyBuffers.create(
        3, GROUPS, funcs, MAMBA_GROUPS, device=device if device.type == "cuda" else None
    )
    reqs = [
        ([[], [0, 1, 2, 3], [0, 1]], 0, 1, 0),  # plain move to the next block
        ([[], [4, 5, 6, 7, 8], [2, 3]], 1, 1, 2),  # same block, 2 accepted: conv shifts in place
        ([[], [9, 10, 11], [4, 5]], 0, 1, 1),
    ]
    want = ctx
    for block_ids, src, dest, bias in reqs:
        want = _reference(want, block_ids, src, dest, bias)
        collect_mamba_copy_meta(bufs, GROUPS, funcs, MAMBA_GROUPS, src, dest, bias, block_ids, ctx)
    do_mamba_copy_block(bufs)
    if device.type == "cuda":
        torch.cuda.synchronize()
    for layer, states in ctx.items():
        for got, exp in zip(states, want[layer], strict=True):
            assert torch.equal(got.view(torch.uint8), exp.view(torch.uint8)), layer


def test_one_table_behind_the_three_vllm_names() -> None:
    """src_ptrs, dst_ptrs and sizes are views of one SEGMENT_COLUMNS table: one upload moves all."""
    from devptr import PtrTable, PtrTypeError
    from devptr.kernels import SEGMENT_COLUMNS

    ctx = fake_context()
    bufs = MambaCopyBuffers.create(2, GROUPS, FUNCS, MAMBA_GROUPS, device="cpu", pin_memory=False)
    assert type(bufs.table) is PtrTable and list(bufs.table.columns.items()) == list(SEGMENT_COLUMNS)
    block_ids = [[], [3, 7, 9, 11], [0, 0]]
    collect_mamba_copy_meta(bufs, GROUPS, FUNCS, MAMBA_GROUPS, 1, 0, 2, block_ids, ctx)
    want = _expected(ctx, block_ids, 1, 0, 2)
    n = bufs.offset
    records = bufs.table.numpy()
    for view in (bufs.src_ptrs, bufs.dst_ptrs, bufs.sizes):
        assert view.capacity == 10 and len(view) == 10
        col = records[:n, bufs.table.column_index(view.name)]
        assert np.shares_memory(view.numpy(), records) and view.numpy()[:n].tolist() == col.tolist()
    bufs.sizes.to_device(n)  # one copy of whole records: the address columns arrive too
    assert bufs.src_ptrs.device(Encoding.U64)[:n].tolist() == [w[0] for w in want]
    assert bufs.dst_ptrs.device(Encoding.I64)[:n].tolist() == [DevicePtr(w[1]).signed for w in want]
    assert bufs.sizes.device()[:n].tolist() == [w[2] for w in want]
    assert bufs.dst_ptrs[0] == DevicePtr(want[0][1]) and bufs.sizes[:2] == [w[2] for w in want[:2]]
    with pytest.raises(PtrTypeError, match="holds integers"):
        bufs.sizes.host(Encoding.U64)
    with pytest.raises(CapacityError):
        bufs.src_ptrs[10]
    with pytest.raises(CapacityError):
        bufs.src_ptrs[:11]
