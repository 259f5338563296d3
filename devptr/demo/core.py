"""Demo section: the traps on the installed torch, then devptr storing the same addresses."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from devptr import DevicePtr, Encoding, PtrBuffer, ptr_tensor, store
from devptr.demo._fit import print_table
from devptr.demo.traps import HI, run_traps
from devptr.testing import HIGH_ADDRESSES, FakeTensor


def _bits(x: torch.Tensor | npt.NDArray[Any]) -> list[int]:
    arr = x.cpu().numpy() if isinstance(x, torch.Tensor) else x
    return [int(v) for v in np.ascontiguousarray(arr).view(np.uint64)]


def section(con: Console) -> None:
    """Print both tables."""
    con.rule(f"[bold]devptr demo[/] — torch {torch.__version__}, numpy {np.__version__}")
    con.print(f"HI = {HI:#x}, an Intel XPU-like device address (bit 63 set).\n")
    traps = Table(title="1. Spellings engines use today, run on this torch", show_lines=False)
    traps.add_column("spelling")
    traps.add_column("result")
    traps.add_column("what happened", overflow="fold")
    for o in run_traps():
        traps.add_row(escape(o.spelling), "[green]ok[/]" if o.ok else "[red]fails[/]", escape(o.detail))
    print_table(con, traps)
    con.print(
        "No torch setitem on a uint64 tensor works on both torch 2.13 and 2.14: they accept opposite signs.\n"
    )

    ptrs = [DevicePtr.of(FakeTensor(a)) for a in (*HIGH_ADDRESSES, 0x7F3A_0000_1000)]
    addrs = [p.addr for p in ptrs]
    buf = PtrBuffer(len(ptrs), device="cpu", pin_memory=False)
    buf.fill(0, ptrs)
    targets: dict[str, torch.Tensor | npt.NDArray[Any]] = {
        "torch int64": torch.zeros(len(ptrs), dtype=torch.int64),
        "torch uint64": torch.zeros(len(ptrs), dtype=torch.uint64),
        "numpy int64": np.zeros(len(ptrs), dtype=np.int64),
        "numpy uint64": np.zeros(len(ptrs), dtype=np.uint64),
    }
    for c in targets.values():
        store(c, slice(0, len(ptrs)), ptrs)
    results: dict[str, list[int]] = {
        "PtrBuffer.host(U64)": _bits(buf.host(Encoding.U64)),
        "PtrBuffer.host(I64)": _bits(buf.host(Encoding.I64)),
        "PtrBuffer.to_device(I64)": _bits(buf.to_device(encoding=Encoding.I64)),
        "ptr_tensor(U64)": _bits(ptr_tensor(ptrs, encoding=Encoding.U64)),
        "ptr_tensor(I64)": _bits(ptr_tensor(ptrs, encoding=Encoding.I64)),
        **{f"store -> {k}": _bits(v) for k, v in targets.items()},
    }
    table = Table(title="2. devptr: the same addresses in both encodings")
    table.add_column("DevicePtr", no_wrap=True)
    table.add_column("U64 value (XPU, Triton)", justify="right", no_wrap=True)
    table.add_column("I64 value (CUDA/ROCm C++ ops)", justify="right", no_wrap=True)
    table.add_column(f"bits exact in {len(results)} paths", justify="center")
    for k, p in enumerate(ptrs):
        exact = sum(r[k] == addrs[k] for r in results.values())
        colour = "green" if exact == len(results) else "red"
        table.add_row(repr(p), str(p.addr), str(p.signed), f"[{colour}]{exact}/{len(results)}[/]")
    print_table(con, table)
    con.print("paths: " + ", ".join(results))
    ok = all(r == addrs for r in results.values())
    con.print(
        f"devptr path: {'[green]all bit-exact[/]' if ok else '[red]MISMATCH[/]'} "
        f"({len(ptrs)} addresses x {len(results)} paths)\n"
    )
