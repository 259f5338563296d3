"""Host-side table preparation against vLLM's precomputed-write floor (CPU only).

One Mamba step's tables: 144 addresses (72 x 2 entries of a 36-layer hybrid model), already
computed (the floor vLLM's ``collect_mamba_copy_meta`` reaches when its addresses are
precomputed), written into a host table by each spelling, timed side by side in
interleaved rounds through ``benchmarks._harness`` (median, IQR, and the median of the
per-round ratios to the floor):

- floor: one numpy slice write of a precomputed uint64 array (no per-entry work);
- vLLM today: per-entry writes through a numpy uint64 alias (``t.numpy()[i] = addr``);
- F, the small-helper option: per-entry ``set_ptr`` (mask to 64 bits, numpy-view write);
- devptr: ``buf[i] = p`` per entry, ``buf.fill(0, ptrs)`` from DevicePtrs, ``buf.fill(0, array)``,
  and ``store(t, i, p)`` per entry into a torch int64 tensor;
- the vendorable module (``devptr.vendor.ptrtable``, devptr's own ``store``): ``store`` per entry
  and as one slice into a numpy uint64 alias, the way an engine without devptr's tables writes.

Run::

    PYTHONPATH=. python benchmarks/bench_convention_host.py [--out FILE.md] [--append]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import _harness as H
from devptr import DevicePtr, PtrBuffer, store
from devptr.vendor import ptrtable

N = 144
BASE = 0x7F3A_0000_1000
MASK = (1 << 64) - 1


def cases() -> dict[str, Callable[[], object]]:
    addrs = [BASE + k * 0x20_0000 for k in range(N)]
    arr = np.asarray(addrs, dtype=np.uint64)  # devptr: ignore[DP006] -- the baseline
    ptrs = [DevicePtr(a) for a in addrs]
    vptrs = [ptrtable.DevicePtr(a) for a in addrs]
    table = torch.zeros(N, dtype=torch.uint64)
    alias = table.numpy()
    i64 = torch.zeros(N, dtype=torch.int64)
    buf: PtrBuffer[int] = PtrBuffer(N, pin_memory=False)

    def floor() -> None:
        alias[:] = arr

    def vllm_alias() -> None:
        for i, a in enumerate(addrs):
            alias[i] = a  # devptr: ignore[DP006] -- vLLM today, the baseline

    def helper() -> None:
        for i, a in enumerate(addrs):
            alias[i] = a & MASK  # devptr: ignore[DP006] -- option F, the baseline

    def devptr_set() -> None:
        for i, p in enumerate(ptrs):
            buf[i] = p

    def devptr_store() -> None:
        for i, p in enumerate(ptrs):
            store(i64, i, p)

    def vendor_slice() -> None:
        ptrtable.store(alias, slice(None), vptrs)

    def vendor_store() -> None:
        for i, p in enumerate(vptrs):
            ptrtable.store(alias, i, p)

    return {
        "floor: one slice write of a precomputed uint64 array": floor,
        "vLLM today: `t.numpy()[i] = addr` per entry": vllm_alias,
        "F small helper: `set_ptr(t, i, addr)` per entry": helper,
        "devptr: `buf[i] = p` per entry": devptr_set,
        "devptr: `buf.fill(0, ptrs)` (144 DevicePtrs)": lambda: buf.fill(0, ptrs),
        "devptr: `buf.fill(0, uint64_array)`": lambda: buf.fill(0, arr),
        "devptr: `store(t, i, p)` per entry (torch int64)": devptr_store,
        "vendored ptrtable: `store(alias, i, p)` per entry": vendor_store,
        "vendored ptrtable: `store(alias, slice(None), ptrs)`": vendor_slice,
    }


def run(repeat: int) -> str:
    fns = cases()
    number = 100
    times = H.host_interleaved(fns, number=number, repeat=repeat, warmup=2)
    floor_key = next(iter(fns))
    lines = [
        f"### torch {torch.__version__}",
        "",
        f"{N} entries per call; {repeat} interleaved rounds of {number} calls; us per call.",
        "",
        "| spelling | median us | IQR us | per entry ns | / floor (median of paired ratios) |",
        "|---|---|---|---|---|",
    ]
    for k, t in times.items():
        ratio = H.paired_ratios(t, times[floor_key]).median_ns
        lines.append(
            f"| {k} | {t.median_us:.2f} | {t.p25_ns / 1e3:.2f}-{t.p75_ns / 1e3:.2f} | "
            f"{t.median_ns / N:.0f} | {ratio:.1f}x |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--append", action="store_true", help="add this torch's table to --out")
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args(argv)
    table = run(args.repeat)
    text = (
        f"\n- command: `{H.command_line()}`\n- date: {H.utc_now()}\n- machine: {H.machine_line()}\n\n{table}"
    )
    print(text)
    if args.out is not None:
        if args.append and args.out.exists():
            args.out.write_text(args.out.read_text(encoding="utf-8") + text, encoding="utf-8")
        else:
            head = (
                "# Host-side table preparation against vLLM's precomputed-write floor\n\n"
                "One Mamba step's 144 addresses, precomputed, written by each spelling "
                "(`benchmarks/bench_convention_host.py`; CPU only, each torch in its own run).\n\n"
                "## Results\n"
            )
            args.out.write_text(head + text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
