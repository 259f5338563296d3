"""Demo section: the Lamport all-reduce workspace table with XPU-like peer addresses."""

from __future__ import annotations

import torch
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from devptr import DevicePtr, Encoding
from devptr.adapters.lamport import FakePeerMemory, LamportWorkspace
from devptr.demo._fit import print_table
from devptr.testing import XPU_BASE

WORLD = 4
COMM_SIZE = 8 << 20


def _vllm_way(ptrs: list[int]) -> str:
    """What vLLM's LamportWorkspace does with these addresses today."""
    try:
        torch.tensor(ptrs, dtype=torch.int64)  # devptr: ignore[DP002] -- shows vLLM's failing line
    except (ValueError, OverflowError, RuntimeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def section(con: Console) -> None:
    """Build rank 0's table from four fake XPU peer buffers; show both encodings."""
    con.rule("[bold]Lamport all-reduce workspace[/] (vLLM minimax_rms_norm, TRT-LLM layout)")
    peers = [DevicePtr(XPU_BASE + r * (3 * COMM_SIZE + (2 << 20))) for r in range(WORLD)]
    raw = [0] * (2 * WORLD) + [p.addr for p in peers] + [0x7F00_0000_1000, 0x7F00_0000_2000]
    con.print(
        f"{WORLD} ranks, comm_size {COMM_SIZE >> 20} MiB: each rank's Lamport buffer is 3 x comm_size "
        "(triple buffering); the table is 3N+2 addresses."
    )
    con.print(
        f"vLLM today: [bold]torch.tensor(ptrs, dtype=torch.int64)[/] -> [red]{escape(_vllm_way(raw))}[/]\n"
    )
    ws = LamportWorkspace(
        0,
        WORLD,
        COMM_SIZE,
        device="cpu",
        peer_memory=FakePeerMemory(peers),
        exchange=lambda _local: peers,  # in-process stand-in for all_gather_ptrs
    )
    i64 = ws.workspace.tolist()  # the consumer's encoding on CPU/CUDA: I64
    u64 = ws.table.host(Encoding.U64).tolist()  # what an XPU consumer reads
    table = Table(title=f"rank 0's workspace table ({ws.layout.capacity} entries)")
    table.add_column("index", justify="right")
    table.add_column("section")
    table.add_column("DevicePtr", no_wrap=True)
    table.add_column("I64 (CUDA/ROCm kernels)", justify="right", no_wrap=True)
    table.add_column("U64 (XPU kernels)", justify="right", no_wrap=True)
    for name, rng in ws.layout.sections.items():
        for i in rng:
            p = ws.table[i]
            table.add_row(str(i), f"{name}[{i - rng.start}]", repr(p), str(i64[i]), str(u64[i]))
    print_table(con, table)
    exact = all(
        DevicePtr.from_signed(a) == ws.table[i] and DevicePtr(b) == ws.table[i]
        for i, (a, b) in enumerate(zip(i64, u64, strict=True))
    )
    con.print(
        f"slot per rank {ws.max_message_bytes >> 10} KiB; flag buffer int32[3] (arrivals, timeout, round); "
        f"layout buffer int64[2] (clear_size, comm_size) = {ws.layout_buffer.tolist()}"
    )
    con.print(f"both encodings decode to the same addresses: {'[green]yes[/]' if exact else '[red]NO[/]'}\n")
    ws.close()
