"""Which EC swap pays after unrelated work (issue 25 item 3: the fourth run's open question).

One D2D batch of 16,384 copies of 4 KiB (the case where ``EC auto`` lost most when the
benchmark's order was rotated, ``benchmarks/results/ec_connector.md``). For every pair
(work before, swap timed): the work before runs and the device drains, then 4 swaps are
timed back to back between CUDA events (device us per batch) and on the host (host us per
call); median of 9. Work before: nothing, a 64 MiB or a 256 MiB ``copy_``, a 1 ms host
sleep, or one of the timed swaps. Swaps: ``bufs.swap(n)`` (``auto``), ``path="kernel"`` and
the bare rival (one upload of the pinned host tables + ``batch_memcpy``).

    python benchmarks/profile_ec_order.py [--out DIR]

Needs a CUDA GPU. Not yet run (the session that wrote it had no device time left).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _harness as H
from benchmarks.bench_ec_engines import host_table_rival
from devptr import DevicePtr
from devptr.adapters.ec_connector import DescriptorBufferPool, calibrate_engines

BEFORE = ("none", "copy64M", "copy256M", "sleep1ms", "auto", "kernel", "rival")
TIMED = ("auto", "kernel", "rival")


def _timed(fn: Callable[[], object], number: int = 4) -> tuple[float, float]:
    """(device us per call between CUDA events, host us per call) of ``number`` calls."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter_ns()
    start.record()
    for _ in range(number):
        fn()
    host = (time.perf_counter_ns() - t0) / 1e3 / number
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) * 1e3 / number, host


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--samples", type=int, default=9)
    args = ap.parse_args(argv)
    dev = torch.device("cuda", 0)
    calibrate_engines(dev)
    block, n = 4096, 16384
    src = torch.randint(0, 255, (n * block,), dtype=torch.uint8, device=dev).view(n, block)
    dst = torch.empty_like(src)
    big_a = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    big_b = torch.empty_like(big_a)
    perm = np.random.default_rng(0).permutation(n)
    pool = DescriptorBufferPool(dev)
    bufs = pool.acquire(n)
    bufs.add_strided_copies(
        0, DevicePtr.of(src), perm.astype(np.uint64), DevicePtr.of(dst), np.arange(n, dtype=np.uint64),
        block, np.full(n, block, dtype=np.uint64),
    )  # fmt: skip
    hs, hd, hk = (np.ascontiguousarray(a) for a in bufs.numpy(n))
    rival = host_table_rival(hs, hd, hk, block, dev)
    fns: dict[str, Callable[[], object]] = {
        "auto": lambda: bufs.swap(n),
        "kernel": lambda: bufs.swap(n, path="kernel"),
        "rival": rival,
        "copy64M": lambda: dst.copy_(src),
        "copy256M": lambda: big_b.copy_(big_a),
        "sleep1ms": lambda: time.sleep(0.001),
        "none": lambda: None,
    }
    for f in fns.values():
        f()
    torch.cuda.synchronize()
    rows = []
    for before in BEFORE:
        for timed in TIMED:
            dev_us, host_us = [], []
            for _ in range(args.samples):
                fns[before]()
                torch.cuda.synchronize()
                d, h = _timed(fns[timed])
                dev_us.append(d)
                host_us.append(h)
            row = {
                "before": before,
                "timed": timed,
                "device_us_per_batch": statistics.median(dev_us),
                "host_us_per_call": statistics.median(host_us),
            }
            rows.append(row)
            print(
                f"before={before:9s} timed={timed:7s} us/batch {row['device_us_per_batch']:7.1f}"
                f"  host us/call {row['host_us_per_call']:6.1f}",
                flush=True,
            )
    pool.release(bufs)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        meta = {**H.meta(), "machine": H.machine_line()}
        (args.out / "ec_order.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
