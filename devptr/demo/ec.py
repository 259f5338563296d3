"""Demo section: the EC connector adapter, on XPU-like fake addresses and on real tensors.

Part 1 builds one step's save descriptors from encoder outputs whose addresses have bit 63
set, hands them to stand-ins of the two platform ops (CUDA/ROCm: int64 src, dst and sizes;
XPU: uint64) and checks every entry bit by bit. Part 2 saves real outputs into a host
block region and loads them back through ``swap_blocks_batch`` (on the CPU: the host copy
path; on a GPU: the portable kernel path or the platform op) and compares the bytes.
"""

from __future__ import annotations

import math

import torch
from rich.console import Console
from rich.table import Table

from devptr import DevicePtr, PtrTypeError
from devptr.adapters.ec_connector import (
    DescriptorBufferPool,
    ECCPUWorker,
    choose_path,
    coalesce_runs,
    register_swap_op,
    swap_op_for,
    unregister_swap_op,
)
from devptr.adapters.ec_connector._checks import default_device
from devptr.demo._fit import print_table
from devptr.testing import SIGN_BIT_ADDR, XPU_BASE

BLOCK = 4096
REGION = 0x7F3A_0000_0000  # a host region, as mmap would place it


def _fake_part(con: Console) -> None:
    # three encoder outputs on an XPU-like device, their bytes and their region blocks
    outputs = [(XPU_BASE, 3 * BLOCK + 100, [10, 11, 12, 13]), (SIGN_BIT_ADDR, 2 * BLOCK, [20, 21])]
    outputs.append((XPU_BASE + (1 << 30), BLOCK + 7, [14, 30]))
    received: dict[str, list[list[int]]] = {}

    def stand_in(backend: str, dtype: torch.dtype) -> None:
        def op(src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, _any: bool) -> None:
            for t in (src, dst, sizes):  # the C++ op's checks
                if t.dtype != dtype or t.device.type != "cpu":
                    raise PtrTypeError(f"{backend} swap_blocks_batch needs {dtype} CPU tensors")
            received[backend] = [src.tolist(), dst.tolist(), sizes.tolist()]

        register_swap_op(backend, op)

    table = Table(title="Save descriptors: one per run of consecutive region blocks")
    for col in ("run", "src (U64, XPU op)", "src (I64, CUDA op)", "dst", "bytes"):
        table.add_column(col, justify="right", no_wrap=True)
    ok = True
    for backend, dtype in (("xpu", torch.uint64), ("cuda", torch.int64)):
        stand_in(backend, dtype)
        try:
            pool = DescriptorBufferPool("cpu", backend=backend, pin_memory=False)
            bufs = pool.acquire(sum(len(b) for _, _, b in outputs))
            end = 0
            want: list[tuple[int, int, int]] = []
            for base, nbytes, blocks in outputs:
                used = math.ceil(nbytes / BLOCK)
                slots, first, count = coalesce_runs(blocks[:used])
                run_bytes = count * BLOCK
                run_bytes[-1] = nbytes - int(slots[-1]) * BLOCK
                end = bufs.add_strided_copies(
                    end, DevicePtr(base), slots, DevicePtr(REGION), first, BLOCK, run_bytes
                )
                want += [
                    (base + int(s) * BLOCK, REGION + int(f) * BLOCK, int(k))
                    for s, f, k in zip(slots, first, run_bytes, strict=True)
                ]
            bufs.swap(end)
            got = list(zip(*received[backend], strict=True))
            enc = [
                (DevicePtr(s).encode(bufs.encoding), DevicePtr(d).encode(bufs.encoding), k)
                for s, d, k in want
            ]
            ok = ok and got == enc and bufs.src_ptrs.dtype == dtype
            pool.release(bufs)
        finally:
            unregister_swap_op(backend)
    for k, (s, d, n) in enumerate(want):
        table.add_row(str(k), f"{s:#x}", str(DevicePtr(s).signed), f"{d:#x}", str(n))
    print_table(con, table)
    con.print(
        f"{len(want)} descriptors for {sum(len(b) for _, _, b in outputs)} blocks; "
        "XPU op got uint64, CUDA op got int64 (src, dst and sizes): "
        + ("[green]all bit-exact[/]" if ok else "[red]MISMATCH[/]")
    )


def _real_part(con: Console) -> None:
    device = default_device()
    pinned = device.type != "cpu"
    region = torch.zeros(64, BLOCK, dtype=torch.int8, pin_memory=pinned)
    path = choose_path(device.type, device)
    worker = ECCPUWorker(region, dtype=torch.float16, device=device)
    gen = torch.Generator().manual_seed(0)
    outs = {f"mm{k}": torch.randn(3 + 5 * k, 113, generator=gen).half().to(device) for k in range(5)}
    saves: dict[str, list[int]] = {}
    nxt = 1
    for name, t in outs.items():
        nb = math.ceil(t.numel() * t.element_size() / BLOCK)
        saves[name] = list(range(nxt, nxt + nb))
        nxt += nb + (1 if len(saves) % 2 else 0)  # some outputs adjoin: their runs stay apart
    for name in outs:
        worker.save_caches(outs, name, saves)
    worker.flush_saves()
    if device.type != "cpu":
        torch.accelerator.synchronize()
    worker.build_connector_worker_meta()
    loaded: dict[str, torch.Tensor] = {}
    worker.start_load_caches(
        loaded, {n: (i, saves[n], list(t.shape)) for i, (n, t) in enumerate(outs.items())}
    )
    same = all(torch.equal(loaded[n].view(torch.uint8), t.view(torch.uint8)) for n, t in outs.items())
    nbytes = sum(t.numel() * t.element_size() for t in outs.values())
    worker.build_connector_worker_meta()
    worker.shutdown()
    op = "vLLM/registered op" if swap_op_for(device.type) is not None else "none"
    con.print(
        f"Round trip on {device} ({nbytes} bytes in {len(outs)} outputs, odd sizes, partial last blocks; "
        f"path: {path}, platform op: {op}): save device->host region, load region->device: "
        + ("[green]byte-exact[/]" if same else "[red]MISMATCH[/]")
    )
    con.print(
        f"descriptor buffers allocated: {worker.pool.allocated}, held after the step: {worker.pool.held}\n"
    )


def section(con: Console) -> None:
    """Print the EC connector section."""
    con.rule("[bold]EC connector[/] — descriptor buffers and swap_blocks_batch")
    _fake_part(con)
    _real_part(con)


__all__ = ["section"]
