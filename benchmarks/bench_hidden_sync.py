"""The hidden sync of a host write behind a pending upload (RFC review point 12), on a GPU.

``PtrBuffer.to_device()`` from pinned memory is asynchronous and records an event after the
copy; the next host write to that buffer waits on the event, so the copy never reads data
written after it was issued. When the stream is busy (the forward pass of step N queued
ahead of the upload), that wait lasts until the GPU reaches the copy. Measured here:

1. **One write behind a busy stream**: ``buf[0] = p`` right after ``buf.to_device()`` with
   ``--busy-ms`` of GPU work queued ahead of the upload, against the same write on an idle
   stream and against a write into a pinned numpy view with no wait (vLLM's way, which
   has no such guard).
2. **A step loop under async scheduling**: per step, fill 144 addresses, upload, then
   queue ``--busy-ms`` of GPU work (the step's forward pass); the host runs ahead of the
   GPU. With one buffer, each fill waits for the previous step's upload, i.e. for the
   GPU work queued before it; with two buffers used in turn (double buffering), the fill
   waits for the upload of two steps back. Reported: host time blocked in the fills per
   step, and how far the host ran ahead of the GPU (steps queued when the loop ended).

GPU work: ``torch.cuda._sleep`` (a spin kernel), its cycles per millisecond measured first.

    python benchmarks/bench_hidden_sync.py --out DIR
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _harness as H
from devptr import DevicePtr, PtrBuffer

ENTRIES = 144


def cycles_per_ms() -> float:
    torch.cuda._sleep(1_000_000)
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    return 10_000_000 / float(start.elapsed_time(end))


def one_write(busy_cycles: int, repeat: int) -> dict[str, list[float]]:
    buf: PtrBuffer[DevicePtr] = PtrBuffer(ENTRIES, device="cuda")
    host = torch.zeros(ENTRIES, dtype=torch.int64, pin_memory=True)
    dev = torch.zeros(ENTRIES, dtype=torch.int64, device="cuda")
    view = host.numpy()
    p = DevicePtr(0x7F0000001000)
    out: dict[str, list[float]] = {
        "idle stream: devptr buf[0] = p": [],
        "busy stream: devptr buf[0] = p": [],
        "busy stream: numpy-view write (no wait)": [],
    }
    for _ in range(repeat):
        torch.cuda.synchronize()
        buf.to_device()
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        buf[0] = p
        out["idle stream: devptr buf[0] = p"].append((time.perf_counter_ns() - t0) / 1e3)
        torch.cuda._sleep(busy_cycles)
        buf.to_device()
        t0 = time.perf_counter_ns()
        buf[0] = p
        out["busy stream: devptr buf[0] = p"].append((time.perf_counter_ns() - t0) / 1e3)
        torch.cuda.synchronize()
        torch.cuda._sleep(busy_cycles)
        dev.copy_(host, non_blocking=True)
        t0 = time.perf_counter_ns()
        view[0] = p.addr
        out["busy stream: numpy-view write (no wait)"].append((time.perf_counter_ns() - t0) / 1e3)
        torch.cuda.synchronize()
    return out


def step_loop(busy_cycles: int, steps: int, buffers: int) -> dict[str, Any]:
    bufs: list[PtrBuffer[DevicePtr]] = [PtrBuffer(ENTRIES, device="cuda") for _ in range(buffers)]
    addrs = np.arange(ENTRIES, dtype=np.uint64) * np.uint64(4096) + np.uint64(0x7F0000000000)
    done = [torch.cuda.Event() for _ in range(steps)]
    torch.cuda.synchronize()
    blocked: list[float] = []
    t_start = time.perf_counter_ns()
    for k in range(steps):
        b = bufs[k % buffers]
        t0 = time.perf_counter_ns()
        b.fill(0, addrs + np.uint64(k))
        blocked.append((time.perf_counter_ns() - t0) / 1e3)
        b.to_device()
        torch.cuda._sleep(busy_cycles)  # the step's forward pass, reading b's device mirror
        done[k].record()
    t_host = (time.perf_counter_ns() - t_start) / 1e3
    ahead = sum(1 for e in done if not e.query())
    torch.cuda.synchronize()
    t_all = (time.perf_counter_ns() - t_start) / 1e3
    steady = blocked[4:]
    return {
        "buffers": buffers,
        "steps": steps,
        "fill_blocked_us_median": statistics.median(steady),
        "fill_blocked_us_max": max(steady),
        "host_loop_us": t_host,
        "total_us": t_all,
        "steps_queued_at_loop_end": ahead,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--busy-ms", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args(argv)
    cpm = cycles_per_ms()
    busy = int(args.busy_ms * cpm)
    res: dict[str, Any] = {
        "meta": {**H.meta(), "machine": H.machine_line()},
        "busy_ms": args.busy_ms,
        "cycles_per_ms": cpm,
    }
    writes = one_write(busy, args.repeat)
    res["one_write_us"] = {
        k: {"median": statistics.median(v), "min": min(v), "max": max(v)} for k, v in writes.items()
    }
    res["loops"] = [step_loop(busy, args.steps, b) for b in (1, 2, 3)]
    lines = [
        f"- command: `{res['meta']['command']}`",
        f"- date: {res['meta']['date']}",
        f"- machine: {res['meta']['machine']}",
        f"- GPU work per step: {args.busy_ms} ms (torch.cuda._sleep, {cpm:,.0f} cycles/ms)",
        "",
        "| one host write | median us | min us | max us |",
        "|---|---:|---:|---:|",
    ]
    for k, v in res["one_write_us"].items():
        lines.append(f"| {k} | {v['median']:.1f} | {v['min']:.1f} | {v['max']:.1f} |")
    lines += [
        "",
        "| step loop, buffers | fill blocked per step, median us | max us | host loop us | "
        "total us | steps still queued at loop end |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in res["loops"]:
        lines.append(
            f"| {r['buffers']} | {r['fill_blocked_us_median']:.1f} | {r['fill_blocked_us_max']:.1f} | "
            f"{r['host_loop_us']:,.0f} | {r['total_us']:,.0f} | {r['steps_queued_at_loop_end']} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "hidden_sync.json").write_text(json.dumps(res, indent=1))
        (args.out / "hidden_sync.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
