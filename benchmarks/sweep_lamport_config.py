"""Launch configurations of the Lamport all-reduce under CUDA graphs, on 2 GPUs.

For float32 and bfloat16 messages of 4, 16 and 64 KiB: the default configuration and every
chunk size (``block``: 64..512 words) x program count (``num_programs``: default, 8, 16,
32), each captured as 25 calls in one graph; the configurations of one size take turns in
every round (one replay each, after a barrier and a one-element NCCL all-reduce), median of
15 rounds, the slower rank's. Prints, per dtype and size, the configurations from fastest
to slowest. It chose :func:`devptr.kernels.lamport._block_for`'s smallest chunk.

Run: ``python benchmarks/sweep_lamport_config.py`` (needs 2 CUDA GPUs).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import _harness as H
from devptr.testing import spawn

SIZES = (4096, 16384, 65536)
BLOCKS = (64, 128, 256, 512)
PROGRAMS = (None, 8, 16, 32)


def _worker(rank: int, world: int) -> list[tuple[str, int, str, float]]:
    import torch.distributed as dist

    from devptr.adapters.lamport import LamportWorkspace, comm_size_for
    from devptr.kernels import lamport_allreduce

    dev = torch.device("cuda", rank)
    ws = LamportWorkspace(rank, world, comm_size_for(1 << 21, world), dist.group.WORLD)
    tiny = torch.zeros(1, device=dev)

    def align() -> None:
        dist.barrier()
        dist.all_reduce(tiny)

    rows: list[tuple[str, int, str, float]] = []
    for dtype in (torch.float32, torch.bfloat16):
        for nbytes in SIZES:
            x = torch.randn(nbytes // torch.tensor([], dtype=dtype).element_size(), device=dev).to(dtype)
            out = torch.empty_like(x)
            cfgs: dict[str, dict[str, Any]] = {"default": {}}
            for blk in BLOCKS:
                for progs in PROGRAMS:
                    cfgs[f"block {blk}, programs {progs or 'default'}"] = {
                        "block": blk,
                        "num_programs": progs,
                    }
            graphs = {}
            for name, kw in cfgs.items():

                def fn(kw: dict[str, Any] = kw, x: torch.Tensor = x, out: torch.Tensor = out) -> None:
                    lamport_allreduce(x, ws, out=out, **kw)

                fn()
                torch.cuda.synchronize()
                dist.barrier()
                graphs[name] = H.capture_graph(fn, number=25)
            samples: dict[str, list[float]] = {k: [] for k in graphs}
            for _ in range(15):
                for name, g in graphs.items():
                    samples[name] += H.time_replays(g, number=25, repeat=1, before=align).samples_ns
            for name, got in samples.items():
                t = H.Timing(tuple(got), "cuda-graph", 25)
                rows.append((str(dtype).split(".")[1], nbytes, name, round(t.median_ns / 1e3, 2)))
            del graphs
    ws.check()
    ws.close(barrier=True)
    return rows


def main() -> None:
    if torch.cuda.device_count() < 2:
        raise SystemExit("needs 2 CUDA GPUs")
    results = spawn(_worker, 2, backend="nccl", timeout_s=500)
    worst: dict[tuple[str, int, str], float] = {}
    for rows in results:
        for dtype, nbytes, name, us in rows:
            worst[(dtype, nbytes, name)] = max(us, worst.get((dtype, nbytes, name), 0.0))
    print("\n".join(f"- {k}: {v}" for k, v in H.meta().items()))
    for dtype in ("float32", "bfloat16"):
        for nbytes in SIZES:
            got = sorted((us, name) for (d, b, name), us in worst.items() if d == dtype and b == nbytes)
            print(f"{dtype} {nbytes >> 10} KiB: " + "; ".join(f"{name} {us}" for us, name in got))


if __name__ == "__main__":
    main()
