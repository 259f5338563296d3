"""devptr.adapters.mamba_spec_decode: metadata bit-exact for XPU-like addresses, copies correct."""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before any devptr kernel is imported

from support.mamba_cases import FUNCS, GROUPS, MAMBA_GROUPS, fake_context

from devptr import DevicePtr, Encoding
from devptr.adapters.mamba_spec_decode import MambaSpecDecodeGPUContext, MambaSpecDecodeMetadata
from devptr.testing import SIGN_BIT_PLUS_42, TOP_ALIGNED, XPU_BASE, FakeState


def _bits(buf, n, want):  # type: ignore[no-untyped-def]
    for view in (buf.host, buf.device):
        assert view(Encoding.U64)[:n].tolist() == want
        assert view(Encoding.I64)[:n].tolist() == [DevicePtr(a).signed for a in want]


def test_metadata_holds_exact_bits_for_high_addresses() -> None:
    ctx = fake_context()
    i32 = torch.int32
    tables = [FakeState(XPU_BASE, (8, 32), i32), FakeState(TOP_ALIGNED - 4096, (8, 32), i32)]
    aligned = [FakeState(SIGN_BIT_PLUS_42 + 6, (8, 32), i32), FakeState(XPU_BASE + 8, (8, 32), i32)]
    meta = MambaSpecDecodeMetadata.create(
        8, GROUPS, FUNCS, "cpu", mamba_group_ids=MAMBA_GROUPS, pin_memory=False
    )
    assert meta.num_states == 5 and meta.num_groups == 2
    meta.initialize_from_forward_context(GROUPS, ctx, FUNCS, tables, aligned)  # type: ignore[arg-type]
    bases = [s.data_ptr() for layer in ("mamba.0", "mamba.1", "conv.0") for s in ctx[layer]]
    _bits(meta.state_base_addrs, 5, bases)
    _bits(meta.block_table_ptrs, 2, [t.data_ptr() for t in tables])
    assert not hasattr(meta, "aligned_index_block_table_ptrs")  # no reader here: not built
    assert meta.block_table_stride_req == 32
    conv0 = meta.state_meta_row(0)
    assert conv0 == {
        "block_stride": 4 * 96 * 2,
        "conv_width": 4,
        "token_bytes": 96 * 2,
        "copy_bytes": 4 * 96 * 2,
        "rows": 1,
        "row_stride": 0,
        "group": 0,
    }
    assert meta.state_meta_row(1)["conv_width"] == 0 and meta.state_meta_row(1)["copy_bytes"] == 105
    assert meta.state_meta_row(4)["group"] == 1
    assert meta.state_meta.device(Encoding.I64)[:, 0].tolist() == [768, 105, 512, 1024, 8]
    assert MambaSpecDecodeGPUContext is MambaSpecDecodeMetadata


def _setup(device: torch.device, dim_first: bool):  # type: ignore[no-untyped-def]
    g = torch.Generator().manual_seed(3)

    def rnd(*shape: int, dtype: torch.dtype = torch.float16) -> torch.Tensor:
        return torch.randint(-500, 500, shape, generator=g).to(dtype).to(device)

    conv = (lambda n, w, d, dt=torch.float16: rnd(n, d, w, dtype=dt)) if dim_first else (
        lambda n, w, d, dt=torch.float16: rnd(n, w, d, dtype=dt)
    )
    ctx = {
        "mamba.0": [conv(20, 4, 40), rnd(20, 3, 8, 8, dtype=torch.float32)],
        "mamba.1": [conv(20, 4, 24, torch.bfloat16), rnd(20, 2, 33)],
        "conv.0": [conv(20, 4, 10, torch.float32)],
    }
    tables = [
        torch.randperm(20, generator=g)[:18].reshape(3, 6).to(torch.int32).to(device),
        torch.randperm(20, generator=g)[:18].reshape(3, 6).to(torch.int32).to(device),
    ]
    return ctx, tables


def _reference(ctx, tables, src, dst, bias, skip_same, dim_first):  # type: ignore[no-untyped-def]
    out = {k: [t.clone() for t in v] for k, v in ctx.items()}
    for r in range(len(src)):
        if src[r] < 0 or (src[r] == dst[r] and (skip_same or bias[r] == 0)):
            continue
        for pos, gid in enumerate(MAMBA_GROUPS):
            bt = tables[pos][r].tolist()
            for layer in GROUPS[gid]:
                for st, func in zip(out[layer], FUNCS[layer], strict=False):
                    b = bias[r]
                    if func.__name__ == "get_conv_copy_spec":
                        if dim_first:
                            w = st.shape[2]
                            st[bt[dst[r]], :, : w - b] = st[bt[src[r]], :, b:].clone()
                        else:
                            w = st.shape[1]
                            st[bt[dst[r]], : w - b] = st[bt[src[r]], b:].clone()
                    else:
                        st[bt[dst[r]]] = st[bt[src[r] + b]].clone()
    return out


@pytest.mark.parametrize("dim_first", [False, True])
@pytest.mark.parametrize("precopy", [False, True])
def test_state_copies_with_real_tensors(dim_first: bool, precopy: bool) -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ctx, tables = _setup(device, dim_first)
    meta = MambaSpecDecodeMetadata.create(
        3, GROUPS, FUNCS, device if device.type == "cuda" else None,
        mamba_group_ids=MAMBA_GROUPS, conv_state_dim_first=dim_first,
    )
    meta.initialize_from_forward_context(GROUPS, ctx, FUNCS, tables)
    src, dst, bias = [0, 2, -1], [1, 2, 3], [1, 2, 0]
    want = _reference(ctx, tables, src, dst, bias, precopy, dim_first)
    t = lambda v: torch.tensor(v, dtype=torch.int32, device=device)  # noqa: E731
    if precopy:
        meta.run_fused_precopy(3, t(dst), t(src), t(bias), None)
    else:
        meta.copy_state_blocks(3, t(src), t(dst), t(bias))
    if device.type == "cuda":
        torch.cuda.synchronize()
    for layer, states in ctx.items():
        for got, exp in zip(states, want[layer], strict=True):
            assert torch.equal(got.view(torch.uint8), exp.view(torch.uint8)), layer
