"""Demo section: the two Mamba adapters, on XPU-like fake addresses and on real tensors.

Part 1 builds both adapters' tables from fake state tensors whose addresses have bit 63
set and checks every entry bit by bit in both encodings (no Triton needed). Part 2 runs the
copies on real tensors: compiled kernels on a GPU, the Triton interpreter on the CPU (this
section sets ``TRITON_INTERPRET=1`` for its own kernels when no GPU is present). Without
Triton, part 2 prints a one-line note.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import torch
from rich.console import Console
from rich.table import Table

from devptr import DevicePtr, Encoding, PtrBuffer
from devptr.adapters.mamba_copy import (
    ColumnView,
    MambaCopyBuffers,
    collect_mamba_copy_meta,
    do_mamba_copy_block,
    get_conv_copy_spec,
    get_temporal_copy_spec,
)
from devptr.adapters.mamba_spec_decode import MambaSpecDecodeMetadata
from devptr.demo._fit import print_table
from devptr.testing import SIGN_BIT_ADDR, SIGN_BIT_PLUS_42, TOP_ALIGNED, XPU_BASE, FakeState

GROUPS = [["mamba.0", "mamba.1"]]
FUNCS = {name: (get_conv_copy_spec, get_temporal_copy_spec) for name in GROUPS[0]}


def _exact(buf: PtrBuffer | ColumnView, n: int, want: list[int]) -> bool:
    views = [buf.host(e) for e in Encoding] + [buf.device(e) for e in Encoding]
    signed = [DevicePtr(a).signed for a in want]
    return all(v[:n].tolist() == (want if v.dtype == torch.uint64 else signed) for v in views)


def _fake_part(con: Console) -> None:
    ctx = {
        "mamba.0": [
            FakeState(XPU_BASE, (8, 4, 96), torch.bfloat16),
            FakeState(SIGN_BIT_PLUS_42, (8, 3, 5, 7), torch.uint8),
        ],
        "mamba.1": [
            FakeState(SIGN_BIT_ADDR, (8, 4, 32), torch.float16),
            FakeState(TOP_ALIGNED - 8 * 4096, (8, 4096), torch.uint8),
        ],
    }
    meta = MambaSpecDecodeMetadata.create(4, GROUPS, FUNCS, "cpu", pin_memory=False)
    tables = [FakeState(XPU_BASE + (1 << 32), (4, 16), torch.int32)]
    meta.initialize_from_forward_context(GROUPS, ctx, FUNCS, tables)  # type: ignore[arg-type]
    bases = [s.data_ptr() for layer in GROUPS[0] for s in ctx[layer]]
    t = Table(title="MambaSpecDecodeMetadata from XPU-like fake states (host + device, one copy each)")
    t.add_column("state", no_wrap=True)
    t.add_column("base (U64)", justify="right", no_wrap=True)
    t.add_column("base (I64)", justify="right", no_wrap=True)
    t.add_column("block stride", justify="right")
    t.add_column("conv width", justify="right")
    names = [f"{layer}[{k}]" for layer in GROUPS[0] for k in range(2)]
    for k, (name, a) in enumerate(zip(names, bases, strict=True)):
        row = meta.state_meta_row(k)
        t.add_row(name, f"{a:#x}", str(DevicePtr(a).signed), str(row["block_stride"]), str(row["conv_width"]))
    print_table(con, t)
    ok = _exact(meta.state_base_addrs, 4, bases) and _exact(meta.block_table_ptrs, 1, [tables[0].data_ptr()])
    con.print(
        "state_base_addrs, block_table_ptrs: " + ("[green]all bit-exact[/]" if ok else "[red]MISMATCH[/]")
    )

    bufs = MambaCopyBuffers.create(2, GROUPS, FUNCS, device="cpu", pin_memory=False)
    collect_mamba_copy_meta(bufs, GROUPS, FUNCS, [0], 0, 2, 1, [[5, 6, 7, 0]], ctx)
    n = bufs.offset
    bufs.table.to_device(n)  # src, dst and size records: one copy
    t2 = Table(title="MambaCopyBuffers: one request, 1 accepted token, column 0 -> column 2")
    for col in ("entry", "src (U64)", "dst (U64)", "dst (I64)", "bytes"):
        t2.add_column(col, justify="right", no_wrap=True)
    src, dst, sizes = (
        bufs.src_ptrs.numpy()[:n].tolist(),
        bufs.dst_ptrs.numpy()[:n].tolist(),
        bufs.sizes.numpy()[:n],
    )
    for k in range(n):
        t2.add_row(str(k), f"{src[k]:#x}", f"{dst[k]:#x}", str(DevicePtr(dst[k]).signed), str(int(sizes[k])))
    print_table(con, t2)
    ok = _exact(bufs.src_ptrs, n, src) and _exact(bufs.dst_ptrs, n, dst)
    con.print("copy tables (host and device): " + ("[green]all bit-exact[/]" if ok else "[red]MISMATCH[/]"))


def _real_part(con: Console) -> None:
    gpu = torch.cuda.is_available()
    device = torch.device("cuda" if gpu else "cpu")
    g = torch.Generator().manual_seed(0)
    ctx = {
        name: [
            torch.randn(6, 4, 64, generator=g).to(torch.float16).to(device),
            torch.randn(6, 4, 16, 16, generator=g).to(device),
        ]
        for name in GROUPS[0]
    }
    want = {k: [s.clone() for s in v] for k, v in ctx.items()}
    ids, src, dest, bias = [2, 3, 4, 5], 1, 2, 1  # window shifted by one token, temporal from block 4
    for states in want.values():
        states[0][ids[dest], : 4 - bias] = states[0][ids[src], bias:].clone()
        states[1][ids[dest]] = states[1][ids[src + bias]].clone()
    bufs = MambaCopyBuffers.create(2, GROUPS, FUNCS, device=device if gpu else None)
    collect_mamba_copy_meta(bufs, GROUPS, FUNCS, [0], src, dest, bias, [ids], ctx)
    do_mamba_copy_block(bufs)
    # spec decode: move request 0 from column 2 back to column 0 (same shifts), on the device
    meta = MambaSpecDecodeMetadata.create(1, GROUPS, FUNCS, device if gpu else None)
    table = torch.tensor([ids], dtype=torch.int32, device=device)
    meta.initialize_from_forward_context(GROUPS, ctx, FUNCS, [table])
    cols = [torch.tensor([v], dtype=torch.int32, device=device) for v in (2, 0, 0)]
    meta.copy_state_blocks(1, *cols)
    for states in want.values():
        states[0][ids[0]] = states[0][ids[2]].clone()
        states[1][ids[0]] = states[1][ids[2]].clone()
    if gpu:
        torch.cuda.synchronize()
    ok = all(
        torch.equal(a.view(torch.uint8), b.view(torch.uint8))
        for k in ctx
        for a, b in zip(ctx[k], want[k], strict=True)
    )
    how = "compiled on " + torch.cuda.get_device_name() if gpu else "Triton interpreter on the CPU"
    moved = int(bufs.sizes.numpy()[: bufs.offset].sum())
    con.print(
        f"Real tensors ({how}): batch_memcpy moved {moved} bytes in {bufs.offset} segments, "
        "copy_state_blocks moved request 0's states: "
        + ("[green]bytes match torch[/]" if ok else "[red]MISMATCH[/]")
    )


def section(con: Console) -> None:
    """Print the adapters' tables for fake XPU addresses, then copy real tensors."""
    con.rule("[bold]Mamba adapters[/] (state copy, spec-decode metadata)")
    _fake_part(con)
    if importlib.util.find_spec("triton") is None:
        msg = "Real copies skipped: Triton is not installed (pip install triton: devptr's kernels extra)."
        con.print(msg, markup=False)  # markup would eat "[kernels]" as a style tag
        return
    previous = os.environ.get("TRITON_INTERPRET")
    if not torch.cuda.is_available() and "devptr.kernels._copy_jit" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"  # fixed for devptr's kernels when they are imported
    try:
        _real_part(con)
    finally:
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous
