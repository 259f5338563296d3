"""Host-side cost of preparing the Mamba copy tables: devptr adapter vs vLLM's way.

One step = collect the copies of ``REQS`` requests of a 36-layer hybrid model (a conv
window state of 48 KiB and a temporal state of 2 MiB per layer and block: 72 x 48 KiB +
72 x 2 MiB for two requests) and move the tables to the device.

- ``vllm_way``: vLLM v0.33's design, re-implemented here: per entry, the copy function
  indexes the state tensor (``state[blk, off:]``, ``data_ptr()``, ``numel()``), then three
  numpy scalar writes into pinned buffers; three host-to-device copies.
- ``vllm_writes_only``: the same writes and copies with every address precomputed (the
  floor of that design: only the per-element writes and the copies).
- ``devptr``: :func:`devptr.adapters.mamba_copy.collect_mamba_copy_meta` (vectorised) and
  one ``to_device`` per table.

Timed on the host clock, median of ``ITERS`` steps, each ending with a device sync so the
copies are complete. Run: ``PYTHONPATH=. python benchmarks/bench_mamba_host.py --out DIR``.
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

import torch

QUICK = "--quick" in sys.argv
if QUICK:
    import os

    os.environ.setdefault("TRITON_INTERPRET", "1")

from devptr.adapters.mamba_copy import (  # noqa: E402
    MambaCopyBuffers,
    collect_mamba_copy_meta,
    do_mamba_copy_block,
    get_conv_copy_spec,
    get_temporal_copy_spec,
)

LAYERS = 36
REQS = 2
BLOCKS = 6
ITERS = 200


def model(device: torch.device, quick: bool) -> tuple[list[list[str]], dict[str, Any], dict[str, Any]]:
    dim, heads = (6144, 64) if not quick else (48, 2)
    groups = [[f"layer.{k}" for k in range(LAYERS)]]
    funcs = {name: (get_conv_copy_spec, get_temporal_copy_spec) for name in groups[0]}
    ctx: dict[str, Any] = {}
    for name in groups[0]:
        conv = torch.randn(BLOCKS, 4, dim, dtype=torch.float16, device=device)  # 48 KiB a block
        temporal = torch.randn(BLOCKS, heads, 128, 128, dtype=torch.float16, device=device)  # 2 MiB
        ctx[name] = [conv, temporal]
    return groups, funcs, ctx


class VllmBuffers:
    """vLLM's CpuGpuBuffer trio: pinned CPU tensors, numpy aliases, device tensors."""

    def __init__(self, n: int, device: torch.device) -> None:
        pin = device.type == "cuda"
        self.cpu = [
            torch.zeros(n, dtype=torch.uint64, pin_memory=pin),
            torch.zeros(n, dtype=torch.uint64, pin_memory=pin),
            torch.zeros(n, dtype=torch.int32, pin_memory=pin),
        ]
        self.np = [t.numpy() for t in self.cpu]
        self.gpu = [torch.zeros(n, dtype=t.dtype, device=device) for t in self.cpu]

    def copy_to_gpu(self, n: int) -> None:
        for c, g in zip(self.cpu, self.gpu, strict=True):
            g[:n].copy_(c[:n], non_blocking=True)


def _vllm_conv(state: torch.Tensor, ids: list[int], cur: int, accepted: int) -> tuple[int, int]:
    src = state[ids[cur], accepted - 1 :]
    return src.data_ptr(), src.numel()


def _vllm_temporal(state: torch.Tensor, ids: list[int], cur: int, accepted: int) -> tuple[int, int]:
    src = state[ids[cur + accepted - 1]]
    return src.data_ptr(), src.numel()


def vllm_collect(bufs: VllmBuffers, offset: int, groups, ctx, block_ids, src, dest, bias) -> int:  # type: ignore[no-untyped-def]
    src_np, dst_np, sizes_np = bufs.np
    ids = block_ids[0]
    dest_block_id = ids[dest]
    for layer in groups[0]:
        for state, fn in zip(ctx[layer], (_vllm_conv, _vllm_temporal), strict=True):
            start, numel = fn(state, ids, src, bias + 1)
            src_np[offset] = start
            dst_np[offset] = state[dest_block_id].data_ptr()
            sizes_np[offset] = numel * state.element_size()
            offset += 1
    return offset


def requests() -> list[tuple[list[list[int]], int, int, int]]:
    return [([[0, 1, 2, 3]], 0, 1, 1), ([[4, 5, 2, 1]], 0, 1, 0)][:REQS]


def time_steps(step: Callable[[], None], device: torch.device, iters: int) -> float:
    for _ in range(10):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() and not args.quick else "cpu")
    iters = 20 if args.quick else ITERS
    groups, funcs, ctx = model(device, args.quick)
    cap = 8 * 2 * LAYERS
    vb = VllmBuffers(cap, device)
    db = MambaCopyBuffers.create(8, groups, funcs, device=device if device.type == "cuda" else None)
    reqs = requests()

    def vllm_step() -> None:
        off = 0
        for block_ids, s, d, b in reqs:
            off = vllm_collect(vb, off, groups, ctx, block_ids, s, d, b)
        vb.copy_to_gpu(off)

    pre: list[tuple[int, int, int]] = []
    off = 0
    for block_ids, s, d, b in reqs:
        off = vllm_collect(vb, off, groups, ctx, block_ids, s, d, b)
    pre = list(zip(vb.np[0][:off].tolist(), vb.np[1][:off].tolist(), vb.np[2][:off].tolist(), strict=True))

    def vllm_writes_only() -> None:
        src_np, dst_np, sizes_np = vb.np
        for k, (s, d, z) in enumerate(pre):
            src_np[k] = s
            dst_np[k] = d
            sizes_np[k] = z
        vb.copy_to_gpu(len(pre))

    def devptr_step() -> None:
        db.offset = 0
        for block_ids, s, d, b in reqs:
            collect_mamba_copy_meta(db, groups, funcs, [0], s, d, b, block_ids, ctx)
        if db.src_ptrs.device_type is not None:
            n = db.offset
            db.src_ptrs.to_device(n)
            db.dst_ptrs.to_device(n)
            db.sizes.to_device(n)

    devptr_step()
    vllm_step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    # same tables both ways
    n = db.offset
    same = (
        db.src_ptrs.numpy()[:n].tolist() == vb.np[0][:n].tolist()
        and db.dst_ptrs.numpy()[:n].tolist() == vb.np[1][:n].tolist()
        and db.sizes.numpy()[:n].tolist() == vb.np[2][:n].tolist()
    )
    res: dict[str, Any] = {"entries": n, "same_tables": same, "device": str(device)}
    order = [("vllm_way", vllm_step), ("vllm_writes_only", vllm_writes_only), ("devptr", devptr_step)]
    for _round in range(2):  # interleaved twice: drift shows up as a spread
        for name, fn in order:
            res.setdefault(name + "_us", []).append(time_steps(fn, device, iters))
    for name, _ in order:
        res[name + "_us"] = min(res[name + "_us"])
    res["ratio_devptr_over_vllm"] = res["devptr_us"] / res["vllm_way_us"]
    res["ratio_devptr_over_writes_only"] = res["devptr_us"] / res["vllm_writes_only_us"]
    # end to end: tables + copies of the state bytes
    if device.type == "cuda":
        from bench_kernels_baselines import vllm_style_batch_memcpy

        def vllm_e2e() -> None:
            vllm_step()
            g = vb.gpu
            vllm_style_batch_memcpy(g[0][:n], g[1][:n], g[2][:n])

        def devptr_e2e() -> None:
            db.offset = 0
            for block_ids, s, d, b in reqs:
                collect_mamba_copy_meta(db, groups, funcs, [0], s, d, b, block_ids, ctx)
            do_mamba_copy_block(db)

        res["e2e_vllm_us"] = time_steps(vllm_e2e, device, iters // 2)
        res["e2e_devptr_us"] = time_steps(devptr_e2e, device, iters // 2)
    path = Path(args.out) / "mamba_host_bench.json"
    path.write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
