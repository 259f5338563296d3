"""EC swap on a GPU: the engine dispatcher against the SM kernel, the copy engines and torch.

For each direction (H2D, D2H between a device arena and pinned host memory; D2D inside the
device) and block sizes of 4 KiB to 4 MiB, one batch of blocks moves block ``perm[i]`` to
slot ``i`` (one descriptor per block). Compared in the same run, on the same blocks:

- ``EC auto``: ``DescriptorBuffers.swap(n)``, the EC connector's path: validation, the
  dispatcher's choice (crossovers measured by ``calibrate_engines`` at the start of this
  run, timed and reported), then the chosen engine (the descriptor upload included when
  it is the kernel);
- ``EC kernel``: the same call with ``path="kernel"`` (the SM kernel forced; from the
  batch's second swap on, its upload and launch replay as one CUDA graph);
- ``EC kernel, no graph``: the same with the graphs switched off (``swap_graphs(False)``);
- ``SM kernel, tables ready``: ``devptr.kernels.batch_memcpy`` on device tables (a floor:
  no engine given host tables can skip their upload);
- ``SM kernel, host tables``: the same launch after one upload of the host tables (one
  ``copy_`` of the three pinned columns), as a caller holding host descriptors runs it;
- ``copy engines, one native call``: ``cudaMemcpyBatchAsync`` on host uint64 tables that
  are already filled, made the way vLLM's C++ ``swap_blocks_batch`` makes it (one call,
  stream-ordered source access);
- ``copy engines, 4 streams``: the same call on four quarters of the tables, each on its
  own stream (the current one and three that wait for it and that it waits for);
- ``torch per-block loop``: ``dst[i].copy_(src[i], non_blocking=True)``;
- ``contiguous``: one ``copy_`` of the whole batch (the ceiling for these bytes).

Each variant is checked byte for byte (destination poisoned first) before it is timed.
Host time per call (``host_us``): ``EC auto``, ``EC kernel`` (with and without graphs) and
``SM kernel, host tables`` issued 10 at a time back to back (perf_counter, the device left
to drain between samples), median of 3: the host work a swap costs the caller, against a
bare upload and launch.
Payload GB/s (one direction), median of ``--iters`` samples of ``--number`` batches timed
with CUDA events, variants taking turns in every round (a new random order each round),
each sample led in by one untimed call of the same variant (so no variant inherits the state
another left: ``profile_ec_order.py`` shows that a swap issued right after host-bound
work, such as the torch loop, pays a cold host on its first call). Single-batch latency
(``single_us``): the same lead-in, the device drained, one batch timed. Batches: ``--total``
bytes (default 256 MiB), and 64 MiB for blocks below 64 KiB (the per-block torch loop would take seconds).

    python benchmarks/bench_ec_engines.py --out DIR
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _harness as H
from devptr import DevicePtr
from devptr.adapters.ec_connector import (
    DescriptorBufferPool,
    calibrate_engines,
    last_engine_choice,
    swap_graphs,
    unregister_swap_op,
)
from devptr.adapters.ec_connector import _engines as E
from devptr.kernels import batch_memcpy

KIB = 1024
MIB = 1024 * KIB
BLOCKS = (4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB)


def _event_time(fn: Callable[[], object], number: int) -> float:
    """Seconds per call of ``number`` back-to-back calls between CUDA events."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(number):
        fn()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) * 1e-3 / number


def _host_us(fn: Callable[[], object], number: int = 10, repeat: int = 3) -> float:
    """Median host microseconds per call of ``number`` back-to-back calls (device drained
    before each sample, not timed)."""
    out = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(number):
            fn()
        out.append((time.perf_counter_ns() - t0) / number / 1e3)
    torch.cuda.synchronize()
    return statistics.median(out)


def _without_graphs(fn: Callable[[], object]) -> None:
    """``fn()`` with the kernel path's replayed graphs switched off (the launch of before),
    then the setting as it was."""
    before = swap_graphs()
    swap_graphs(False)
    try:
        fn()
    finally:
        swap_graphs(before)


def host_table_rival(
    hs: np.ndarray, hd: np.ndarray, hk: np.ndarray, block: int, device: torch.device
) -> Callable[[], None]:
    """The SM-kernel rival of the EC path: the three host columns in one pinned table,
    uploaded in one copy, then ``batch_memcpy`` (no validation, no descriptor views)."""
    n = int(hk.shape[0])
    host_tab = torch.from_numpy(np.concatenate([hs, hd, hk]).view(np.int64)).pin_memory()
    dev_tab = torch.empty_like(host_tab, device=device)
    ts, td, tk = (dev_tab[j * n : (j + 1) * n].view(torch.uint64) for j in range(3))

    def run() -> None:
        dev_tab.copy_(host_tab, non_blocking=True)
        batch_memcpy(ts, td, tk, n, max_size=block)

    return run


def run_case(
    direction: str,
    block: int,
    total: int,
    iters: int,
    pool: DescriptorBufferPool,
    arenas: dict[str, torch.Tensor],
    number: int,
    profile: bool,
) -> dict[str, Any]:
    device = arenas["D"].device
    n = max(1, total // block)
    nbytes = n * block
    src_all = arenas[direction[0]] if direction != "D2D" else arenas["D"]
    dst_all = arenas["H"] if direction[2] == "H" else arenas["D2"]
    src = src_all[:nbytes].view(n, block)
    dst = dst_all[:nbytes].view(n, block)
    perm = np.random.default_rng(block).permutation(n)
    src_views = [src[int(p)] for p in perm]
    dst_views = [dst[i] for i in range(n)]
    want = src.cpu()[torch.from_numpy(perm)]
    bufs = pool.acquire(n)
    bufs.add_strided_copies(
        0, DevicePtr.of(src), perm.astype(np.uint64), DevicePtr.of(dst), np.arange(n, dtype=np.uint64),
        block, np.full(n, block, dtype=np.uint64),
    )  # fmt: skip
    hs, hd, hk = (np.ascontiguousarray(a) for a in bufs.numpy(n))
    ds, dd, dk = (torch.from_numpy(a.view(np.int64)).to(device).view(torch.uint64) for a in (hs, hd, hk))
    sm_host_tables = host_table_rival(hs, hd, hk, block, device)

    rt = E.cuda_runtime()
    stream = torch.cuda.current_stream().cuda_stream

    def torch_loop() -> None:
        for s, d in zip(src_views, dst_views, strict=True):
            d.copy_(s, non_blocking=True)

    fns: dict[str, Callable[[], object]] = {
        "EC auto": lambda: bufs.swap(n),
        "EC kernel": lambda: bufs.swap(n, path="kernel"),
        "EC kernel, no graph": lambda: _without_graphs(lambda: bufs.swap(n, path="kernel")),
        "SM kernel, tables ready": lambda: batch_memcpy(ds, dd, dk, n, max_size=block),
        "SM kernel, host tables": sm_host_tables,
    }
    if rt is not None and rt.has_batch:
        fns["copy engines, one native call"] = lambda: rt.batch(hd, hs, hk, stream, False)
        fns["copy engines, 4 streams"] = lambda: E.copy_engines(
            hs, hd, hk, device, streams=4, has_empty=False
        )
        if direction != "D2D":
            fns["SM + copy engines, half each"] = lambda: E.split_copy(hs, hd, hk, (ds, dd, dk), device, 0.5)
    fns["torch per-block loop"] = torch_loop
    ok: dict[str, bool | str] = {}
    for k, f in fns.items():
        try:  # EC swaps three times: the graph's capture (2nd swap) and a replay checked too
            for _ in range(3 if k.startswith("EC") else 1):
                dst.fill_(0xA5)
                torch.cuda.synchronize()
                f()
                torch.cuda.synchronize()
                ok[k] = bool(torch.equal(dst.cpu(), want))
                if not ok[k]:
                    break
        except Exception as exc:  # an engine that does not run here is reported, not fatal
            ok[k] = f"{type(exc).__name__}: {exc}"[:200]
    fns["contiguous"] = lambda: dst.copy_(src, non_blocking=True)
    ok["contiguous"] = True
    live = {k: f for k, f in fns.items() if ok[k] is True}
    for f in live.values():
        f()
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {k: [] for k in live}
    single: dict[str, list[float]] = {k: [] for k in SINGLE if k in live}
    names = list(live)
    order_rng = np.random.default_rng(block)
    for it in range(iters):
        # each variant's sample is led in by one untimed call of its own: the host has just
        # run that variant's code and the device queue holds its work, whichever variant
        # came before (the torch per-block loop, host-bound, leaves the device idle and the
        # host's caches full of other code: profile_ec_order.py); the order is shuffled
        # every round, so no variant always follows the same one (a rotation keeps each
        # one's predecessor: EC auto always ran after the contiguous copy)
        for k in [names[i] for i in order_rng.permutation(len(names))]:
            live[k]()
            samples[k].append(_event_time(live[k], number))
        for k in list(single)[it % len(single) :] + list(single)[: it % len(single)]:
            live[k]()  # the same lead-in, then the device drains: one batch's latency
            torch.cuda.synchronize()
            single[k].append(_event_time(live[k], 1))
    host_us: dict[str, float] = {}
    for k in ("EC auto", "EC kernel", "EC kernel, no graph", "SM kernel, host tables"):
        if k in live:
            host_us[k] = _host_us(live[k])
    bufs.swap(n)
    choice = last_engine_choice()
    if profile:
        timer = time.perf_counter_ns
        parts: dict[str, Callable[[], object]] = {
            "choose()": lambda: E.choose(device, hs, hd, hk),
            "direction() (2 x cudaPointerGetAttributes)": lambda: E.direction(rt, int(hs[0]), int(hd[0])),
            "is_current_stream_capturing()": torch.cuda.is_current_stream_capturing,
            "validate()": lambda: __import__(
                "devptr.adapters.ec_connector._swap", fromlist=["validate"]
            ).validate(hs, hd, hk),
        }
        for label, fn in parts.items():
            fn()
            t0 = timer()
            for _ in range(200):
                fn()
            print(
                f"-- host time of {label}: {(timer() - t0) / 200 / 1e3:.1f} us ({direction} {block} B x {n})"
            )
        import cProfile
        import pstats

        for label, fn in (("auto", lambda: bufs.swap(n)), ("kernel", lambda: bufs.swap(n, path="kernel"))):
            torch.cuda.synchronize()
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(20):
                fn()
            pr.disable()
            torch.cuda.synchronize()
            print(f"-- cProfile, 20 x bufs.swap {label}, {direction} {block} B x {n}", flush=True)
            pstats.Stats(pr).sort_stats("tottime").print_stats(14)
    pool.release(bufs)
    gbps = {k: nbytes / statistics.median(v) / 1e9 for k, v in samples.items()}
    rivals = [gbps[k] for k in RIVALS if k in gbps]
    floor = [gbps[k] for k in (*RIVALS, "SM kernel, tables ready") if k in gbps]
    return {
        "direction": direction,
        "block": block,
        "blocks": n,
        "bytes": nbytes,
        "correct": ok,
        "GBps": gbps,
        "median_ms": {k: statistics.median(v) * 1e3 for k, v in samples.items()},
        "single_GBps": {k: nbytes / statistics.median(v) / 1e9 for k, v in single.items()},
        "single_us": {k: statistics.median(v) * 1e6 for k, v in single.items()},
        "calls_per_sample": number,
        "host_us": host_us,
        "auto_engine": None if choice is None else choice.engine,
        "auto_reason": None if choice is None else choice.reason,
        "auto_fraction": None if choice is None else choice.fraction,
        "auto_vs_best": gbps.get("EC auto", 0.0) / max(rivals) if rivals else None,
        "auto_vs_best_with_ready_tables": gbps.get("EC auto", 0.0) / max(floor) if floor else None,
        "auto_streams": None if choice is None else choice.streams,
        "auto_vs_contiguous": gbps.get("EC auto", 0.0) / gbps["contiguous"],
    }


RIVALS = (
    "SM kernel, host tables",
    "copy engines, one native call",
    "copy engines, 4 streams",
    "torch per-block loop",
)
"""The engines a caller holding host descriptor tables could run instead (the target's rivals)."""

SINGLE = ("EC auto", "EC kernel", "EC kernel, no graph", "SM kernel, host tables", "SM kernel, tables ready")
"""The variants whose single-batch latency is timed (device drained, host warm)."""

COLS = [
    "EC auto",
    "EC kernel",
    "EC kernel, no graph",
    "SM kernel, tables ready",
    "SM kernel, host tables",
    "copy engines, one native call",
    "copy engines, 4 streams",
    "SM + copy engines, half each",
    "torch per-block loop",
    "contiguous",
]


def _blk(row: dict[str, Any]) -> str:
    b = int(row["block"])
    return f"{b // KIB} KiB" if b < MIB else f"{b // MIB} MiB"


def _heading(intro: str, columns: list[str], align: str | None = None) -> list[str]:
    """The lines that open a per-row table: a blank line, ``intro``, the header row (direction,
    block, then ``columns``) and its alignment row (numbers right-aligned by default)."""
    rule = align if align is not None else "|---|---|" + "---:|" * len(columns)
    return ["", *intro.splitlines(), "", "| direction | block | " + " | ".join(columns) + " |", rule]


def _again(res: dict[str, Any]) -> str:
    """Which contested cells the calibration timed again, and on what batches."""
    cells = [f"{d} {int(b) // KIB} KiB" for d, t in res.get("crossovers_large", {}).items() for b in t]
    big = res.get("calibration_batches", {}).get("large_total", 0) >> 20
    return f"contested cells timed again on {big} MiB batches: {', '.join(cells) or 'none'}"


def markdown(res: dict[str, Any]) -> str:
    out = [
        f"- command: `{res['meta']['command']}`",
        f"- date: {res['meta']['date']}",
        f"- machine: {res['meta']['machine']}",
        f"- CUDA runtime: {res['runtime']}",
        f"- calibration: {res['calibration_s']:.2f} s; notes: {res['calibration_notes']}; {_again(res)}",
        f"- GB/s: payload / median time per batch, {res['rows'][0]['calls_per_sample']} batches back to back "
        "per sample (single-batch figures in the JSON)",
        "",
        "| direction | block | blocks | "
        + " | ".join(f"{c} GB/s" for c in COLS)
        + " | auto chose | auto / best rival | auto / best incl. ready tables"
        + " | auto / contiguous | all correct |",
        "|---|---|---:|" + "---:|" * len(COLS) + "---|---:|---:|---:|---|",
    ]
    for r in res["rows"]:
        g = r["GBps"]
        blk = _blk(r)
        vals = " | ".join(f"{g[c]:.1f}" if c in g else "n/a" for c in COLS)
        best = r["auto_vs_best"]
        chose = r["auto_engine"] if r["auto_engine"] != "split" else f"split ({r['auto_fraction']:.2f} CE)"
        if r.get("auto_streams", 1) and r.get("auto_streams", 1) > 1:
            chose += f" x{r['auto_streams']}"
        out.append(
            f"| {r['direction']} | {blk} | {r['blocks']} | {vals} | {chose} | "
            f"{best:.3f} | {r['auto_vs_best_with_ready_tables']:.3f} | {r['auto_vs_contiguous']:.3f} | "
            f"{all(v is True for v in r['correct'].values())} |"
        )
    out += _heading(
        "Host time per call (us; 10 calls back to back, median of 3): the EC path against a bare\n"
        "upload of the host tables + `batch_memcpy` (the SM-kernel rival):",
        ["EC auto host us", "EC kernel host us", "EC kernel, no graph host us",
         "SM kernel, host tables host us", "EC kernel / rival"],
    )  # fmt: skip
    for r in res["rows"]:
        h = r.get("host_us", {})
        if "EC kernel" in h and "SM kernel, host tables" in h:
            a, g = (f"{h[c]:.1f}" if c in h else "n/a" for c in ("EC auto", "EC kernel, no graph"))
            k, v = h["EC kernel"], h["SM kernel, host tables"]
            out.append(f"| {r['direction']} | {_blk(r)} | {a} | {k:.1f} | {g} | {v:.1f} | {k / v:.2f} |")
    out += _heading(
        "Single batches (each after an untimed call of its own, the device drained: the host\n"
        "work exposed), median us per batch:",
        [f"{c} us" for c in SINGLE],
    )
    for r in res["rows"]:
        u = r.get("single_us", {})
        if u:
            vals = " | ".join(f"{u[c]:.1f}" if c in u else "n/a" for c in SINGLE)
            out.append(f"| {r['direction']} | {_blk(r)} | {vals} |")
    return "\n".join(out)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dirs = sorted({r["direction"] for r in rows})
    fig, axes = plt.subplots(1, len(dirs), figsize=(5 * len(dirs), 4))
    for ax, d in zip(np.atleast_1d(axes), dirs, strict=True):
        rs = [r for r in rows if r["direction"] == d]
        xs = [r["block"] for r in rs]
        for c in COLS:
            ax.plot(xs, [r["GBps"].get(c, float("nan")) for r in rs], marker="o", label=c)
        ax.set_xscale("log", base=2)
        ax.set_title(f"EC swap {d}")
        ax.set_xlabel("block bytes")
        ax.set_ylabel("GB/s (payload)")
        ax.grid(True, alpha=0.3)
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--total", type=int, default=256 * MIB)
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--directions", default="H2D,D2H,D2D")
    ap.add_argument("--number", type=int, default=4, help="back-to-back batches per timed sample")
    ap.add_argument(
        "--profile", action="store_true", help="host-time and cProfile breakdowns (H2D 4 KiB, 4 MiB)"
    )
    args = ap.parse_args(argv)
    device = torch.device("cuda")
    unregister_swap_op("cuda")
    side = torch.cuda.Stream(device)  # the copy engines' batched call refuses the legacy default stream
    res: dict[str, Any] = {"meta": {**H.meta(), "machine": H.machine_line()}, "rows": []}
    rt = E.cuda_runtime()
    res["runtime"] = None if rt is None else {"version": rt.version, "batch": rt.has_batch}
    with torch.cuda.stream(side):
        t0 = time.perf_counter()
        cross = calibrate_engines(device)
        res["calibration_s"] = time.perf_counter() - t0
        res["crossovers"] = {d: {str(b): v for b, v in t.items()} for d, t in cross.rates.items()}
        res["crossovers_large"] = {d: {str(b): v for b, v in t.items()} for d, t in cross.large.items()}
        res["calibration_batches"] = {"total": cross.total, "large_total": cross.large_total}
        res["calibration_notes"] = cross.notes
        res["split_fractions"] = {d: {str(b): v for b, v in t.items()} for d, t in cross.fractions.items()}
        big = args.total
        arenas = {
            "D": torch.randint(0, 256, (big,), dtype=torch.uint8, device=device),
            "D2": torch.empty(big, dtype=torch.uint8, device=device),
            "H": torch.randint(0, 256, (big,), dtype=torch.uint8).pin_memory(),
        }
        pool = DescriptorBufferPool(device)
        for direction in args.directions.split(","):
            for block in BLOCKS:
                total = args.total if block >= 64 * KIB else min(args.total, 64 * MIB)
                prof = args.profile and direction == "H2D" and block in (4 * KIB, 4 * MIB)
                res["rows"].append(
                    run_case(direction, block, total, args.iters, pool, arenas, args.number, prof)
                )
                r = res["rows"][-1]
                print(
                    direction,
                    block,
                    {k: round(v, 1) for k, v in r["GBps"].items()},
                    r["auto_engine"],
                    flush=True,
                )
    text = markdown(res)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "ec_engines.json").write_text(json.dumps(res, indent=1, default=str))
        (args.out / "ec_engines.md").write_text(text)
        plot(res["rows"], args.out / "ec_engines.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
