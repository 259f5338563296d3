"""Mamba-like state tensors, block tables and a torch reference of the state copies."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from devptr import DevicePtr, PtrBuffer, PtrTable
from devptr.kernels import STATE_META_COLUMNS


@dataclass
class StateSetup:
    states: list[torch.Tensor]
    kinds: list[str]  # "conv" (state-first), "conv_df" (dim-first), "temporal"
    groups: list[int]
    tables: list[torch.Tensor]  # int32 [max_reqs, max_blocks] per group
    bases: PtrBuffer
    meta: PtrTable


def make_setup(device: torch.device, seed: int, *, num_blocks: int = 56, max_reqs: int = 6) -> StateSetup:
    g = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    W = 4
    specs = [
        ("conv", torch.float16, (num_blocks, W, 40), 0),
        ("temporal", torch.float32, (num_blocks, 3, 8, 9), 0),
        ("conv", torch.bfloat16, (num_blocks, W, 24), 1),
        ("temporal", torch.float16, (num_blocks, 2, 33), 1),
        ("conv_df", torch.float16, (num_blocks, 10, W), 0),
        ("conv_df", torch.float32, (num_blocks, 7, W), 1),
    ]
    states, kinds, groups = [], [], []
    for kind, dtype, shape, grp in specs:
        raw = torch.randint(-1000, 1000, shape, generator=g).to(dtype)
        states.append(raw.to(device))
        kinds.append(kind)
        groups.append(grp)
    max_blocks = 8
    tables = []
    for _ in range(2):  # requests never share a block (their copies run concurrently)
        ids = rng.sample(range(num_blocks), max_blocks * max_reqs)
        t = torch.tensor(ids, dtype=torch.int32).reshape(max_reqs, max_blocks)
        tables.append(t.to(device))
    dev = device if device.type != "cpu" else None
    bases: PtrBuffer = PtrBuffer(len(states), device=dev)
    bases.fill(0, [DevicePtr.of(s) for s in states])
    meta = PtrTable(len(states), STATE_META_COLUMNS, device=dev)
    for k, (s, kind, grp) in enumerate(zip(states, kinds, groups, strict=True)):
        es = s.element_size()
        row = {
            "block_stride": s.stride(0) * es,
            "conv_width": 0,
            "token_bytes": 0,
            "copy_bytes": s[0].numel() * es,
            "rows": 1,
            "row_stride": 0,
            "group": grp,
        }
        if kind == "conv":
            row.update(conv_width=s.shape[1], token_bytes=s.stride(1) * es)
        elif kind == "conv_df":
            row.update(conv_width=s.shape[2], token_bytes=es, rows=s.shape[1], row_stride=s.stride(1) * es)
        meta[k] = row
    if dev is not None:
        bases.to_device()
        meta.to_device()
    return StateSetup(states, kinds, groups, tables, bases, meta)


def reference(
    setup: StateSetup,
    src_cols: list[int],
    dst_cols: list[int],
    biases: list[int],
    reqs: list[int],
    skip_same_block: bool,
) -> list[torch.Tensor]:
    """The states after the copies, computed with torch indexing (vLLM's copy specs)."""
    out = [s.clone() for s in setup.states]
    for r in reqs:
        if r < 0:
            continue
        sc, dc, b = src_cols[r], dst_cols[r], biases[r]
        if sc < 0 or (sc == dc and (skip_same_block or b == 0)):
            continue
        for k, (st, kind, grp) in enumerate(zip(out, setup.kinds, setup.groups, strict=True)):
            bt = setup.tables[grp][r].tolist()
            if kind == "conv":
                w = st.shape[1]
                st[bt[dc], : w - b] = st[bt[sc], b:].clone()
            elif kind == "conv_df":
                w = st.shape[2]
                st[bt[dc], :, : w - b] = st[bt[sc], :, b:].clone()
            else:
                st[bt[dc]] = st[bt[sc + b]].clone()
            out[k] = st
    return out
