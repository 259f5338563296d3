"""Which EC swap pays after unrelated work (issue 25 item 3: the fourth run's open question).

One D2D batch of 16,384 copies of 4 KiB (the case where ``EC auto`` lost most when the
benchmark's order was rotated, ``benchmarks/results/ec_connector.md``). For every pair
(work before, swap timed): the work before runs and the device drains, then 4 swaps are
timed back to back between CUDA events (device us per batch) and on the host (host us per
call); median of 9. Work before: nothing, a 64 MiB or a 256 MiB ``copy_``, a 1 ms host
sleep, a torch per-block loop over the batch (host-bound: the device idles at its end, as
in ``bench_ec_engines`` when a variant follows it), or one of the timed swaps. Swaps:
``bufs.swap(n)`` (``auto``), ``path="kernel"`` (a replayed graph from the second swap
on), ``plain`` (``path="kernel"`` with ``swap_graphs(False)``), the bare rival (one upload of the pinned
host tables + ``batch_memcpy``) and ``ready`` (``batch_memcpy`` on device tables: no
upload, no host path); ``hostcols`` is an experiment: the same launch reading the three
columns straight from pinned host memory (no upload; the GPU reads them over the bus).
Each of the 4 calls has its own pair of events and host clock reads, so the first call
after the work is told apart from the calls behind it.

``--trace FILE`` also writes a torch.profiler (Kineto) chrome trace of a few pairs, each
inside a ``record_function`` named ``before->timed``: where the host and the device spend
the first call.

    python benchmarks/profile_ec_order.py [--out DIR] [--trace FILE]

Needs a CUDA GPU.
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
from benchmarks.bench_ec_engines import _without_graphs, host_table_rival
from devptr import DevicePtr
from devptr.adapters.ec_connector import DescriptorBufferPool, calibrate_engines
from devptr.kernels import batch_memcpy
from devptr.kernels._memcpy import BYTE_CHUNK, _launch_segments

BEFORE = ("none", "copy64M", "copy256M", "sleep1ms", "torchloop", "auto", "kernel", "rival")
TIMED = ("auto", "kernel", "plain", "rival", "ready", "hostcols")
TRACED = (("copy256M", "auto"), ("copy256M", "rival"), ("sleep1ms", "auto"), ("auto", "auto"))
"""Pairs in the trace (the torch loop would fill it with 16,384 copies a sample)."""


def _timed(fn: Callable[[], object], number: int = 4) -> tuple[list[float], list[float]]:
    """Device us of each of ``number`` back-to-back calls (between CUDA events recorded
    around each) and host us of each call (perf_counter)."""
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(number + 1)]
    host = []
    ev[0].record()
    for i in range(number):
        t0 = time.perf_counter_ns()
        fn()
        host.append((time.perf_counter_ns() - t0) / 1e3)
        ev[i + 1].record()
    ev[-1].synchronize()
    return [float(ev[i].elapsed_time(ev[i + 1])) * 1e3 for i in range(number)], host


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--samples", type=int, default=9)
    ap.add_argument("--trace", type=Path, default=None, help="write a chrome trace of a few pairs here")
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
    ts, td, tk = (torch.from_numpy(a.view(np.int64)).to(dev).view(torch.uint64) for a in (hs, hd, hk))
    pinned = torch.from_numpy(np.concatenate([hs, hd, hk]).view(np.int64)).pin_memory().view(torch.uint64)
    hcols = tuple(pinned[j * n : (j + 1) * n] for j in range(3))
    assert hcols[0].data_ptr() % 16 == 0

    def hostcols() -> None:  # the private launcher: batch_memcpy refuses host tables
        _launch_segments(*hcols, n, dev, lambda: block, block, None, None, BYTE_CHUNK, None)

    src_views, dst_views = [src[int(p)] for p in perm], [dst[i] for i in range(n)]

    def torchloop() -> None:
        for a, b in zip(src_views, dst_views, strict=True):
            b.copy_(a, non_blocking=True)
    fns: dict[str, Callable[[], object]] = {
        "auto": lambda: bufs.swap(n),
        "kernel": lambda: bufs.swap(n, path="kernel"),
        "plain": lambda: _without_graphs(lambda: bufs.swap(n, path="kernel")),
        "rival": rival,
        "ready": lambda: batch_memcpy(ts, td, tk, n, max_size=block),
        "torchloop": torchloop,
        "hostcols": hostcols,
        "copy64M": lambda: dst.copy_(src),
        "copy256M": lambda: big_b.copy_(big_a),
        "sleep1ms": lambda: time.sleep(0.001),
        "none": lambda: None,
    }
    for name in TIMED:
        for i in range(3):  # the graph's capture (2nd swap) and a replay (3rd) checked too
            dst.fill_(0)
            fns[name]()
            torch.cuda.synchronize()
            assert torch.equal(dst, src[torch.from_numpy(perm).to(dev)]), f"{name} call {i}: wrong bytes"
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
            med = statistics.median
            row = {
                "before": before,
                "timed": timed,
                "device_us_first": med(d[0] for d in dev_us),
                "device_us_later": med(statistics.mean(d[1:]) for d in dev_us),
                "host_us_first": med(h[0] for h in host_us),
                "host_us_later": med(statistics.mean(h[1:]) for h in host_us),
            }
            rows.append(row)
            print(
                f"before={before:9s} timed={timed:6s} device us first {row['device_us_first']:7.1f}"
                f" later {row['device_us_later']:7.1f}  host us first {row['host_us_first']:6.1f}"
                f" later {row['host_us_later']:6.1f}",
                flush=True,
            )
    if args.trace:
        from torch.profiler import ProfilerActivity, profile, record_function

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for before, timed in TRACED:
                for _ in range(2):
                    fns[before]()
                    torch.cuda.synchronize()
                    with record_function(f"{before}->{timed}"):
                        _timed(fns[timed])
        args.trace.parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(args.trace))
    pool.release(bufs)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        meta = {**H.meta(), "machine": H.machine_line()}
        (args.out / "ec_order.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
