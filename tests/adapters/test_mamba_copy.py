"""devptr.adapters.mamba_copy: tables bit-exact for XPU-like addresses, real copies correct."""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before any devptr kernel is imported

from devptr import CapacityError, DevicePtr, Encoding
from devptr.adapters.mamba_copy import (
    MambaCopyBuffers,
    collect_mamba_copy_meta,
    do_mamba_copy_block,
    get_conv_copy_spec,
    get_temporal_copy_spec,
)
from devptr.testing import SIGN_BIT_ADDR, SIGN_BIT_PLUS_42, TOP_ALIGNED, FakeState

GROUPS = [["attn.0"], ["mamba.0", "mamba.1"], ["conv.0"]]
MAMBA_GROUPS = [1, 2]
FUNCS = {
    "mamba.0": (get_conv_copy_spec, get_temporal_copy_spec),
    "mamba.1": (get_conv_copy_spec, get_temporal_copy_spec),
    "conv.0": (get_conv_copy_spec,),
}


def _fake_context() -> dict[str, list[FakeState]]:
    return {
        "mamba.0": [
            FakeState(SIGN_BIT_ADDR, (16, 4, 96), torch.bfloat16),
            FakeState(SIGN_BIT_PLUS_42, (16, 3, 5, 7), torch.uint8),
        ],
        "mamba.1": [
            FakeState(SIGN_BIT_ADDR + (1 << 30), (16, 4, 32), torch.float32),
            FakeState(SIGN_BIT_ADDR + (1 << 31), (16, 8, 64), torch.float16),
        ],
        "conv.0": [FakeState(TOP_ALIGNED, (1, 4, 2), torch.uint8)],  # one 8-byte block at 2**64-8
    }


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
    ctx = _fake_context()
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
    ctx = _fake_context()
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
