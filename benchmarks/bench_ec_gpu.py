"""EC connector on a GPU: D2H saves and H2D loads through the portable swap path.

For block sizes 64 KiB to 4 MiB, one batch of blocks (``--total`` bytes, default 256 MiB)
moves between a device arena and a pinned host region, block ``perm[i]`` to block ``i``
(a permutation, so every block is its own descriptor, as when the region is fragmented).
Compared, each on the same blocks:

- ``devptr``: ``DescriptorBuffers.swap`` on the kernel path (descriptor upload + one
  ``devptr.kernels.batch_memcpy`` launch; the GPU reads/writes pinned host memory);
- ``torch loop``: ``dst[i].copy_(src[i], non_blocking=True)`` per block;
- ``torch foreach``: one ``torch._foreach_copy_`` over the block lists (when supported);
- ``contiguous``: one ``copy_`` of the whole arena (the copy engine's peak, no scatter).

Throughput is payload bytes / time (one direction; not read + write). Each figure is the
median of ``--iters`` timed iterations (CUDA events around one batch, after warm-up); every
devptr batch is checked byte for byte once. Run::

    PYTHONPATH=. python benchmarks/bench_ec_gpu.py [--out DIR]

Prints a markdown table; writes ``ec_gpu.json`` to ``--out`` or to ``$OUT`` when set.
Without CUDA it exits with a message (status 0); ``--quick`` instead runs tiny sizes on
the CPU under the Triton interpreter (a smoke test of this script; numbers mean nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

QUICK = "--quick" in sys.argv
if QUICK:
    os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import _harness as H  # noqa: E402
from devptr import DevicePtr  # noqa: E402
from devptr.adapters.ec_connector import (  # noqa: E402
    DescriptorBufferPool,
    SwapPath,
    choose_path,
    unregister_swap_op,
)

KiB = 1024
MiB = 1024 * KiB
BLOCKS = (64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB)


def measure(fn: Callable[[], object], device: torch.device, iters: int) -> H.Timing:
    """``iters`` samples of one call (CUDA events on a GPU, the host clock on the CPU)."""
    return H.on_device(device, fn, number=1, repeat=iters, warmup=2)


def run_case(
    direction: str,
    block: int,
    total: int,
    device: torch.device,
    iters: int,
    pool: DescriptorBufferPool,
    path: SwapPath,
) -> dict[str, Any]:
    n = max(1, total // block)
    pinned = device.type == "cuda"
    host = torch.empty(n, block, dtype=torch.uint8, pin_memory=pinned)
    dev = torch.empty(n, block, dtype=torch.uint8, device=device)
    gen = torch.Generator(device="cpu").manual_seed(block)
    payload = torch.randint(0, 256, (n, block), dtype=torch.uint8, generator=gen)
    perm = np.random.default_rng(block).permutation(n)
    if direction == "D2H":
        dev.copy_(payload)
        src, dst = dev, host
    else:
        host.copy_(payload)
        src, dst = host, dev
    src_views = [src[int(p)] for p in perm]
    dst_views = [dst[i] for i in range(n)]

    bufs = pool.acquire(n)
    bufs.add_strided_copies(
        0, DevicePtr.of(src), perm.astype(np.uint64), DevicePtr.of(dst), np.arange(n, dtype=np.uint64),
        block, np.full(n, block, dtype=np.uint64),
    )  # fmt: skip
    dst.zero_()
    bufs.swap(n, path=path)
    if device.type == "cuda":
        torch.cuda.synchronize()
    if not torch.equal(dst.cpu(), payload[torch.from_numpy(perm)]):
        raise SystemExit(f"{direction} {block} B: devptr copy is not byte-exact")

    def torch_loop() -> None:
        for s, d in zip(src_views, dst_views, strict=True):
            d.copy_(s, non_blocking=True)

    def foreach() -> None:
        torch._foreach_copy_(dst_views, src_views, non_blocking=True)

    times = {
        "devptr": measure(lambda: bufs.swap(n, path=path), device, iters),
        "torch loop": measure(torch_loop, device, iters),
        "contiguous": measure(lambda: dst.copy_(src, non_blocking=True), device, iters),
    }
    try:
        times["torch foreach"] = measure(foreach, device, iters)
    except (RuntimeError, NotImplementedError) as exc:  # not every torch supports it across devices
        print(f"# torch._foreach_copy_ skipped for {direction}: {str(exc).splitlines()[0]}", file=sys.stderr)
    pool.release(bufs)
    nbytes = n * block
    return {
        "direction": direction,
        "block_bytes": block,
        "blocks": n,
        "bytes": nbytes,
        "seconds": {k: t.median_s for k, t in times.items()},
        "GBps": {k: nbytes / t.median_s / 1e9 for k, t in times.items()},
        "spread_ns": {k: t.summary() for k, t in times.items()},
    }


def table(rows: list[dict[str, Any]]) -> str:
    cols = ["devptr", "torch loop", "torch foreach", "contiguous"]
    out = [
        "| direction | block | blocks | "
        + " | ".join(f"{c} GB/s" for c in cols)
        + " | devptr / torch loop |",
        "|---|---|---|" + "---|" * len(cols) + "---|",
    ]
    for r in rows:
        g = r["GBps"]
        vals = " | ".join(f"{g[c]:.1f}" if c in g else "n/a" for c in cols)
        blk = f"{r['block_bytes'] // KiB} KiB" if r["block_bytes"] < MiB else f"{r['block_bytes'] // MiB} MiB"
        out.append(
            f"| {r['direction']} | {blk} | {r['blocks']} | {vals} | {g['devptr'] / g['torch loop']:.2f}x |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--total", type=int, default=256 * MiB, help="bytes per batch")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--out", default=os.environ.get("OUT") or None, help="folder for ec_gpu.json")
    ap.add_argument("--quick", action="store_true", help="CPU smoke test under the Triton interpreter")
    args = ap.parse_args()
    if args.quick:
        device, blocks, total, iters = torch.device("cpu"), (4 * KiB, 16 * KiB), 64 * KiB, 2
    elif not torch.cuda.is_available():
        print("bench_ec_gpu: needs a CUDA GPU (torch sees none); nothing measured. "
              "Use --quick for a CPU smoke test of this script.")  # fmt: skip
        return
    else:
        device, blocks, total, iters = torch.device("cuda"), BLOCKS, args.total, args.iters
    unregister_swap_op(device.type)
    path: SwapPath = "kernel" if args.quick else choose_path(device.type, device)
    if path == "op":
        raise SystemExit("a platform swap op is registered (vLLM?): this benchmark measures the kernel path")
    pool = DescriptorBufferPool(device)
    rows = [run_case(d, b, total, device, iters, pool, path) for d in ("D2H", "H2D") for b in blocks]
    md = table(rows)
    print(f"- command: `{H.command_line()}`\n- machine: {H.machine_line()}\n- path: {path}\n")
    print(md)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        doc = {
            "command": H.command_line(),
            "date": H.utc_now(),
            "machine": H.machine_line(),
            "path": path,
            "quick": args.quick,
            "results": rows,
            "table": md,
        }
        (out / "ec_gpu.json").write_text(json.dumps(doc, indent=2))
        print(f"\nwrote {out / 'ec_gpu.json'}")


if __name__ == "__main__":
    main()
