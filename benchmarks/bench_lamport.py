"""Latency of the Lamport all-reduce against NCCL and torch symmetric memory, on real GPUs.

One process per GPU (all GPUs of the host, at least 2). For each dtype and size, every
op's 25 calls are captured in one CUDA graph; a replay is timed with CUDA events after a
barrier, and the per-op latency is the median replay time / 25 (eager timing adds 15-23 us
of launch cost per op on the benchmark VM and hides the kernels). Ops, on the same inputs:

- ``nccl``: ``torch.distributed.all_reduce`` (NCCL, NVLS off), in place;
- ``symm_one_shot``: ``torch.ops.symm_mem.one_shot_all_reduce_copy`` (copy in, one-shot);
- ``symm_two_shot``: ``torch.ops.symm_mem.two_shot_all_reduce_`` (in place, symmetric tensor);
- ``lamport``: ``devptr.kernels.lamport_allreduce`` (out of place, default launch config);
  for float32, also a sweep of its chunk size (``lamport[b=N]``).

Usage: ``python benchmarks/bench_lamport.py --out DIR`` (writes lamport_bench.json and
lamport_bench.md there). NVLink multicast stays off (NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1, set here for every process).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import socket
import statistics
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

NO_MULTICAST = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
os.environ.update(NO_MULTICAST)

import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 8 << 20, 16 << 20]
"""The asked sizes (4 KiB..4 MiB), then 8 and 16 MiB to find where two-shot overtakes."""
SWEEP_SIZES = [16 << 10, 64 << 10, 1 << 20]
SWEEP_BLOCKS = [256, 512, 1024, 2048, 4096]
OPS_PER_GRAPH = 25
REPLAYS = 40
WARM_REPLAYS = 3


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _time_graph(
    fn: Callable[[], object], barrier: Callable[[], None], align: Callable[[], None]
) -> dict[str, float]:
    """Capture OPS_PER_GRAPH calls of fn; per-op replay times in us, two ways.

    ``barrier_*``: a host barrier, then the replay (the method of the earlier measurements;
    the ranks' hosts leave the barrier some microseconds apart, and the first op of the
    later rank's replay absorbs that skew). ``median_us``/``min_us``: the same, plus a
    one-element NCCL all-reduce enqueued just before the timed replay: the start event
    fires on each GPU when that all-reduce completes, i.e. at the same moment on every
    rank, so host skew drops out.
    """
    fn()
    torch.cuda.synchronize()
    barrier()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(OPS_PER_GRAPH):
            fn()
    for _ in range(WARM_REPLAYS):
        barrier()
        graph.replay()
        torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out: dict[str, float] = {}
    for method in ("barrier", "aligned"):
        times = []
        for _ in range(REPLAYS):
            barrier()
            if method == "aligned":
                align()
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0 / OPS_PER_GRAPH)
        prefix = "" if method == "aligned" else "barrier_"
        out[prefix + "median_us"] = statistics.median(times)
        out[prefix + "min_us"] = min(times)
    del graph
    return out


def _worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(NO_MULTICAST)
    import torch.distributed as dist
    from torch.distributed import _symmetric_memory as symm_mem

    from devptr.adapters.lamport import LamportWorkspace, comm_size_for
    from devptr.kernels import lamport_allreduce

    result: dict[str, Any] = {"rank": rank, "rows": [], "errors": []}
    try:
        torch.cuda.set_device(rank)
        dev = torch.device("cuda", rank)
        dist.init_process_group(
            "nccl",
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=120),
            device_id=dev,
        )
        group = dist.group.WORLD
        assert group is not None
        gname = group.group_name
        ws = LamportWorkspace(rank, world, comm_size_for(max(SIZES), world), group)

        def barrier() -> None:
            dist.barrier(device_ids=[rank])

        tiny = torch.zeros(1, device=dev)

        def align() -> None:
            dist.all_reduce(tiny)

        for dtype in (torch.float32, torch.bfloat16):
            for nbytes in SIZES:
                numel = nbytes // torch.tensor([], dtype=dtype).element_size()
                g = torch.Generator(device=dev).manual_seed(rank + 17)
                x = torch.randn(numel, generator=g, device=dev).to(dtype)
                lam_out = torch.empty_like(x)
                nccl_buf = torch.zeros_like(x)
                sym_in = symm_mem.empty(numel, dtype=dtype, device=dev)
                symm_mem.rendezvous(sym_in, group)
                sym_two = symm_mem.empty(numel, dtype=dtype, device=dev)
                symm_mem.rendezvous(sym_two, group)
                sym_two.zero_()

                # correctness on these inputs: Lamport vs NCCL
                check = x.clone()
                dist.all_reduce(check)
                lamport_allreduce(x, ws, out=lam_out)
                torch.cuda.synchronize()
                err = (lam_out.float() - check.float()).abs().max().item()
                ops: dict[str, Callable[[], object]] = {
                    "nccl": lambda b=nccl_buf: dist.all_reduce(b),
                    "symm_one_shot": lambda s=sym_in, x=x: torch.ops.symm_mem.one_shot_all_reduce_copy(
                        s, x, "sum", gname
                    ),
                    "symm_two_shot": lambda s=sym_two: torch.ops.symm_mem.two_shot_all_reduce_(
                        s, "sum", gname
                    ),
                    "lamport": lambda x=x, o=lam_out: lamport_allreduce(x, ws, out=o),
                }
                if dtype == torch.float32 and nbytes in SWEEP_SIZES:
                    for blk in SWEEP_BLOCKS:
                        if blk <= numel:
                            ops[f"lamport[b={blk}]"] = lambda x=x, o=lam_out, blk=blk: lamport_allreduce(
                                x, ws, out=o, block=blk
                            )
                for name, fn in ops.items():
                    row: dict[str, Any] = {"dtype": str(dtype).split(".")[1], "bytes": nbytes, "op": name}
                    try:
                        row.update(_time_graph(fn, barrier, align))
                    except Exception as exc:  # record and go on: one failing op must not hide the rest
                        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                        torch.cuda.synchronize()
                    if name == "lamport":
                        row["max_abs_err_vs_nccl"] = err
                    result["rows"].append(row)
                    if rank == 0:
                        print(json.dumps(row), flush=True)
                del sym_in, sym_two
        ws.check()
        ws.close(barrier=True)
        dist.destroy_process_group()
    except BaseException:
        result["errors"].append(traceback.format_exc())
        print(f"rank {rank}:", traceback.format_exc(), file=sys.stderr, flush=True)
    Path(out, f"bench_rank{rank}.json").write_text(json.dumps(result))


def _size(nbytes: int) -> str:
    return f"{nbytes >> 10} KiB" if nbytes < 1 << 20 else f"{nbytes >> 20} MiB"


def _table(results: list[dict[str, Any]], key: str) -> list[str]:
    """One row per (dtype, size): each op's ``key`` on the slower rank, and the ratios."""

    def worst(dtype: str, nbytes: int, op: str) -> float | None:
        vals = [
            r[key]
            for res in results
            for r in res["rows"]
            if r["dtype"] == dtype and r["bytes"] == nbytes and r["op"] == op and key in r
        ]
        return max(vals) if len(vals) == len(results) else None

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.2f}"

    def ratio(a: float | None, b: float | None) -> str:
        return "n/a" if a is None or b is None else f"{a / b:.2f}x"

    lines = [
        "| dtype | size | NCCL (us) | symm one-shot (us) | symm two-shot (us) | Lamport (us) | "
        "Lamport / one-shot | Lamport / NCCL | Lamport / two-shot |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted(
        {(r["dtype"], r["bytes"]) for r in results[0]["rows"]}, key=lambda k: (k[0] != "float32", k[1])
    )
    for dtype, nbytes in keys:
        n, o, t, lam = (
            worst(dtype, nbytes, op) for op in ("nccl", "symm_one_shot", "symm_two_shot", "lamport")
        )
        lines.append(
            f"| {dtype} | {_size(nbytes)} | {fmt(n)} | {fmt(o)} | {fmt(t)} | {fmt(lam)} | "
            f"{ratio(lam, o)} | {ratio(lam, n)} | {ratio(lam, t)} |"
        )
    return lines


def _markdown(results: list[dict[str, Any]], meta: dict[str, str]) -> str:
    lines = [f"- {k}: {v}" for k, v in meta.items()]
    lines += [
        "",
        f"Per-op latency = median over {REPLAYS} replays of (replay time / {OPS_PER_GRAPH}), "
        "the slower rank's median.",
        "",
        "Device-aligned start (a one-element NCCL all-reduce just before each timed replay):",
        "",
        *_table(results, "median_us"),
        "",
        "Host barrier only before each replay (the method of the earlier measurements; "
        "includes the ranks' host skew):",
        "",
        *_table(results, "barrier_median_us"),
    ]
    sweep = [r for r in results[0]["rows"] if r["op"].startswith("lamport[")]
    if sweep:
        lines += ["", "Lamport chunk-size sweep (float32, rank 0, device-aligned, us per op):", ""]
        lines += ["| size | op | median | min |", "|---|---|---|---|"]
        for r in sweep:
            med, mn = r.get("median_us"), r.get("min_us")
            lines.append(
                f"| {_size(r['bytes'])} | {r['op']} | "
                f"{'n/a' if med is None else f'{med:.2f}'} | {'n/a' if mn is None else f'{mn:.2f}'} |"
            )
    errors = [
        f"{r['dtype']} {_size(r['bytes'])} {r['op']}: {r['error']}"
        for r in results[0]["rows"]
        if "error" in r
    ]
    if errors:
        lines += ["", "Errors (rank 0):", "", *(f"- {e}" for e in errors)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".", help="directory for lamport_bench.json / .md")
    args = ap.parse_args()
    world = torch.cuda.device_count()
    if world < 2:
        raise SystemExit(f"needs at least 2 CUDA GPUs (found {world})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    mp.spawn(_worker, args=(world, port, str(out)), nprocs=world, join=True)
    results = [json.loads((out / f"bench_rank{r}.json").read_text()) for r in range(world)]
    import triton

    meta = {
        "command": "python " + " ".join([os.path.relpath(sys.argv[0]), *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{world} x {torch.cuda.get_device_name(0)}",
        "software": f"torch {torch.__version__}, triton {triton.__version__}, CUDA {torch.version.cuda}",
        "env": ", ".join(f"{k}={v}" for k, v in NO_MULTICAST.items()),
    }
    (out / "lamport_bench.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    md = _markdown(results, meta)
    (out / "lamport_bench.md").write_text(md)
    print(md)
    for res in results:
        for e in res["errors"]:
            print(f"rank {res['rank']} error:\n{e}", file=sys.stderr)


if __name__ == "__main__":
    main()
