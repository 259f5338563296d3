"""Latency of the Lamport all-reduce against torch symmetric memory, NCCL and a bare Triton
launch, eager and under CUDA graphs, on real GPUs.

One process per GPU (all GPUs of the host, at least 2; :func:`devptr.testing.spawn`). For
each dtype and size, on the same inputs:

- ``lamport``: ``devptr.kernels.lamport_allreduce`` (out of place, default launch config);
- ``lamport_alloc``: the same without ``out`` (allocates its result, as torch's ops do);
- ``symm_one_shot``: ``torch.ops.symm_mem.one_shot_all_reduce_copy`` (copy in, one-shot;
  the input need not be symmetric memory, like Lamport's);
- ``symm_one_shot_nocopy`` / ``symm_one_shot_out``: ``one_shot_all_reduce`` (allocates the
  result) and ``one_shot_all_reduce_out`` on an input already in symmetric memory (where
  this torch has them);
- ``nccl``: ``torch.distributed.all_reduce`` (NCCL, NVLS off), in place;
- ``bare_triton``: a bare Triton launch (``kernel[grid](...)``, no checks, no wait) of a
  kernel that reads the peer's symmetric buffer and adds it to the input: the floor of a
  Triton launch that touches peer memory.

Two timings per op (``benchmarks/_harness.py``), each the slower rank's median with its
spread:

- **eager**: CUDA events around ``EAGER_CALLS`` back-to-back calls, after a barrier (the
  per-call cost seen by an engine that calls eagerly: host work and launch, or the
  kernel when that is longer); the ops of one size take turns, one sample each per round (graph replays too);
- **graph**: ``GRAPH_CALLS`` calls captured in one CUDA graph, each sample one replay
  started after a barrier and a one-element NCCL all-reduce (so both GPUs start
  together).

Usage: ``python benchmarks/bench_lamport.py --out DIR`` (writes lamport_bench.json and
lamport_bench.md). NVLink multicast stays off (:data:`devptr.testing.NO_MULTICAST`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devptr.testing import NO_MULTICAST, spawn

os.environ.update(NO_MULTICAST)

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import _harness as H

SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
EAGER_CALLS = 50
GRAPH_CALLS = 25
REPEAT = 21
OPS: dict[str, str] = {
    "lamport": "Lamport, out given",
    "lamport_alloc": "Lamport, allocating",
    "symm_one_shot": "symm one-shot copy",
    "symm_one_shot_nocopy": "symm one-shot, symmetric input",
    "symm_one_shot_out": "symm one-shot out, symmetric input",
    "nccl": "NCCL",
    "bare_triton": "bare Triton",
    "lamport_prev_kernel": "previous kernel, bare launch",
}
"""Op name -> column heading (in column order)."""
RATIOS = (
    ("lamport", "symm_one_shot"),
    ("lamport_alloc", "symm_one_shot"),
    ("lamport_alloc", "symm_one_shot_nocopy"),
    ("lamport", "symm_one_shot_out"),
    ("lamport", "bare_triton"),
)
"""(numerator, denominator) ops of the ratio columns."""


@triton.jit
def _peer_add_kernel(x_ptr, peer_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """``out = x + peer`` (the peer's symmetric buffer read over NVLink); no synchronisation."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    b = tl.load(peer_ptr + offs, mask=m).to(tl.float32)
    tl.store(out_ptr + offs, (a + b).to(out_ptr.dtype.element_ty), mask=m)


def _load_jit(path: str) -> Any:
    """A previous version of ``_lamport_jit.py`` as its own module (same-run kernel A/B)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("prev_lamport_jit", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _worker(rank: int, world: int, sizes: list[int], baseline: str | None) -> dict[str, Any]:
    import torch.distributed as dist
    from torch.distributed import _symmetric_memory as symm_mem

    from devptr.adapters.lamport import LamportWorkspace, comm_size_for
    from devptr.kernels import lamport as lamport_mod
    from devptr.kernels import lamport_allreduce

    dev = torch.device("cuda", rank)
    group = dist.group.WORLD
    assert group is not None
    gname = group.group_name
    ws = LamportWorkspace(rank, world, comm_size_for(max(sizes), world), group)
    tiny = torch.zeros(1, device=dev)

    def barrier() -> None:
        dist.barrier(device_ids=[rank])

    def align() -> None:
        barrier()
        dist.all_reduce(tiny)

    rows: list[dict[str, Any]] = []
    prev = _load_jit(baseline)._lamport_allreduce_kernel if baseline is not None else None
    for dtype in (torch.float32, torch.bfloat16):
        for nbytes in sizes:
            numel = nbytes // torch.tensor([], dtype=dtype).element_size()
            g = torch.Generator(device=dev).manual_seed(rank + 17)
            x = torch.randn(numel, generator=g, device=dev).to(dtype)
            lam_out = torch.empty_like(x)
            nccl_buf = torch.zeros_like(x)
            sym_in = symm_mem.empty(numel, dtype=dtype, device=dev)
            hdl = symm_mem.rendezvous(sym_in, group)
            peer = hdl.get_buffer((rank + 1) % world, (numel,), dtype)
            bare_out = torch.empty_like(x)
            grid = (triton.cdiv(numel, 1024),)

            check = x.clone()
            dist.all_reduce(check)
            lamport_allreduce(x, ws, out=lam_out)
            torch.cuda.synchronize()
            err = (lam_out.float() - check.float()).abs().max().item()
            ops: dict[str, Callable[[], object]] = {
                "lamport": lambda x=x, o=lam_out: lamport_allreduce(x, ws, out=o),
                "symm_one_shot": lambda s=sym_in, x=x: torch.ops.symm_mem.one_shot_all_reduce_copy(
                    s, x, "sum", gname
                ),
                "lamport_alloc": lambda x=x: lamport_allreduce(x, ws),
                "nccl": lambda b=nccl_buf: dist.all_reduce(b),
                "bare_triton": lambda x=x, p=peer, o=bare_out, gr=grid, n=numel: _peer_add_kernel[gr](
                    x, p, o, n, BLOCK=1024
                ),
            }
            sym = torch.ops.symm_mem
            if hasattr(sym, "one_shot_all_reduce"):  # input already in symmetric memory
                ops["symm_one_shot_nocopy"] = lambda s=sym_in, f=sym.one_shot_all_reduce: f(s, "sum", gname)
            if hasattr(sym, "one_shot_all_reduce_out"):
                o = torch.empty_like(x)
                ops["symm_one_shot_out"] = lambda s=sym_in, o=o, f=sym.one_shot_all_reduce_out: f(
                    s, "sum", gname, o
                )
            if prev is not None:
                # the previous kernel (layout hard-coded, int32 word views), bare launch
                sms = torch.cuda.get_device_properties(dev).multi_processor_count
                words = nbytes // 4
                blk, warps = lamport_mod._block_for(words, sms)
                pgrid = (min(-(-words // blk), sms),)
                lay = ws.layout
                xw, ow = x.view(torch.int32), lam_out.view(torch.int32)
                kinds = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}

                scalars = (rank, words, lay.comm_size // 4, lay.slot_bytes // 4, 1 << 24)
                meta = {"WORLD": world, "KIND": kinds[dtype], "WRITE": True, "REDUCE": True, "BLOCK": blk}

                def prev_op(
                    xw: torch.Tensor = xw,
                    ow: torch.Tensor = ow,
                    pgrid: tuple[int] = pgrid,
                    scalars: tuple[int, ...] = scalars,
                    meta: dict[str, Any] = meta,
                    warps: int = warps,
                ) -> None:
                    prev[pgrid](ws.workspace, xw, ow, *scalars, **meta, num_warps=warps)

                ops["lamport_prev_kernel"] = prev_op
            size_rows: dict[str, dict[str, Any]] = {}
            graphs: dict[str, torch.cuda.CUDAGraph] = {}
            for name, fn in ops.items():
                row: dict[str, Any] = {"dtype": str(dtype).split(".")[1], "bytes": nbytes, "op": name}
                size_rows[name] = row
                try:
                    fn()
                    torch.cuda.synchronize()
                    barrier()
                    graphs[name] = H.capture_graph(fn, number=GRAPH_CALLS)
                except Exception as exc:  # record and go on: one failing op must not hide the rest
                    row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                    torch.cuda.synchronize()
                if name == "lamport":
                    row["max_abs_err_vs_nccl"] = err
            # The ops of one size take turns in every round, eager and graph alike (a slow
            # stretch of the machine hits them alike); each sample after a barrier (graph:
            # and a one-element NCCL all-reduce, so both GPUs start together).
            ok = [n for n in ops if n in graphs]
            eager: dict[str, list[float]] = {n: [] for n in ok}
            replay: dict[str, list[float]] = {n: [] for n in ok}
            for _ in range(REPEAT):
                for name in ok:
                    barrier()
                    got = H.cuda_events(ops[name], number=EAGER_CALLS, repeat=1, warmup=2)
                    eager[name].extend(got.samples_ns)
                for name in ok:
                    got = H.time_replays(graphs[name], number=GRAPH_CALLS, repeat=1, before=align)
                    replay[name].extend(got.samples_ns)
            for name in ok:
                size_rows[name]["eager"] = H.Timing(tuple(eager[name]), "cuda-event", EAGER_CALLS).summary()
                size_rows[name]["graph"] = H.Timing(tuple(replay[name]), "cuda-graph", GRAPH_CALLS).summary()
            del graphs
            for row in size_rows.values():
                rows.append(row)
                if rank == 0:
                    brief = {k: v for k, v in row.items() if k not in ("eager", "graph")}
                    for k in ("eager", "graph"):
                        if k in row:
                            brief[k + "_us"] = round(row[k]["median_ns"] / 1e3, 2)
                    print(json.dumps(brief), flush=True)
            barrier()
            del sym_in, hdl, peer
    ws.check()
    ws.close(barrier=True)
    return {"rank": rank, "rows": rows}


def _size(nbytes: int) -> str:
    return f"{nbytes >> 10} KiB" if nbytes < 1 << 20 else f"{nbytes >> 20} MiB"


def _worst(
    results: list[dict[str, Any]], dtype: str, nbytes: int, op: str, clock: str
) -> dict[str, float] | None:
    got = [
        r[clock]
        for res in results
        for r in res["rows"]
        if r["dtype"] == dtype and r["bytes"] == nbytes and r["op"] == op and clock in r
    ]
    if len(got) != len(results):
        return None
    return max(got, key=lambda s: s["median_ns"])


def _table(results: list[dict[str, Any]], clock: str) -> list[str]:
    def cell(s: dict[str, float] | None) -> str:
        if s is None:
            return "n/a"
        return f"{s['median_ns'] / 1e3:.2f} ({s['p25_ns'] / 1e3:.1f}-{s['p75_ns'] / 1e3:.1f})"

    present = {r["op"] for r in results[0]["rows"] if clock in r}
    ops = [op for op in OPS if op in present]
    ratios = [(a, b) for a, b in RATIOS if a in present and b in present]
    heads = [f"{OPS[op]} (us)" for op in ops] + [f"{OPS[a]} / {OPS[b]}" for a, b in ratios]
    lines = ["| dtype | size | " + " | ".join(heads) + " |", "|---|---|" + "---|" * len(heads)]

    def ratio(a: dict[str, float] | None, b: dict[str, float] | None) -> str:
        return "n/a" if a is None or b is None else f"{a['median_ns'] / b['median_ns']:.2f}x"

    keys = sorted(
        {(r["dtype"], r["bytes"]) for r in results[0]["rows"]}, key=lambda k: (k[0] != "float32", k[1])
    )
    for dtype, nbytes in keys:
        got = {op: _worst(results, dtype, nbytes, op, clock) for op in ops}
        cells = [cell(got[op]) for op in ops] + [ratio(got[a], got[b]) for a, b in ratios]
        lines.append(f"| {dtype} | {_size(nbytes)} | " + " | ".join(cells) + " |")
    return lines


def _markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [f"- {k}: {v}" for k, v in meta.items()]
    lines += [
        "",
        f"Eager: CUDA events around {EAGER_CALLS} back-to-back calls, the ops of a size taking "
        f"turns, median (p25-p75) over "
        f"{REPEAT} samples, the slower rank:",
        "",
        *_table(results, "eager"),
        "",
        f"Graph: {GRAPH_CALLS} calls captured, one replay per sample after a barrier and a "
        f"one-element NCCL all-reduce, median (p25-p75) over {REPEAT} replays, the slower rank:",
        "",
        *_table(results, "graph"),
    ]
    rows0 = results[0]["rows"]
    errors = [f"{r['dtype']} {_size(r['bytes'])} {r['op']}: {r['error']}" for r in rows0 if "error" in r]
    if errors:
        lines += ["", "Errors (rank 0):", "", *(f"- {e}" for e in errors)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".", help="directory for lamport_bench.json / .md")
    ap.add_argument("--baseline-jit", default=None, help="a previous _lamport_jit.py to time beside")
    args = ap.parse_args()
    world = torch.cuda.device_count()
    if world < 2:
        raise SystemExit(f"needs at least 2 CUDA GPUs (found {world})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    baseline = os.path.abspath(args.baseline_jit) if args.baseline_jit else None
    results = spawn(_worker, world, backend="nccl", args=(SIZES, baseline), timeout_s=480)
    meta = {**H.meta(), "gpus": f"{world} x {torch.cuda.get_device_name(0)}", "env": dict(NO_MULTICAST)}
    (out / "lamport_bench.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    md = _markdown(results, meta)
    (out / "lamport_bench.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
