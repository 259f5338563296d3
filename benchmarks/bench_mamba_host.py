"""Host cost of the Mamba adapter's real path against the numpy-view floor and vLLM's way.

One step = collect the copies of ``REQS`` requests of a 36-layer hybrid model (a conv
window state of 48 KiB and a temporal state of 2 MiB per layer and block: 72 x 48 KiB +
72 x 2 MiB for two requests, 144 segments) and upload the tables. Timed side by side
(``benchmarks/_harness.py``, ``host_interleaved``: the ways take turns in every round):

- ``numpy_floor``: the source/destination views already made (``state[blk, bias:]``,
  ``state[blk]``), slice writes of their ``data_ptr()``/``nbytes`` lists into pinned numpy
  views + three ``copy_(non_blocking=True)`` (as in ``bench_kernels_host.py``);
- ``vllm_way``: vLLM v0.33's ``collect_mamba_copy_meta`` design, re-implemented here: per
  entry, the copy function indexes the state tensor, then three numpy scalar writes into
  pinned buffers; three host-to-device copies;
- ``adapter``: :func:`devptr.adapters.mamba_copy.collect_mamba_copy_meta` per request and
  the adapter's upload (one ``PtrTable.to_device`` of src/dst/size records; a tree whose
  adapter still has three buffers -- e.g. an older devptr on ``PYTHONPATH`` -- uploads
  three, so the same file gives the before/after).

The tables of all three ways are compared entry by entry first. Without a GPU the device
tables are CPU tensors (the numbers then measure the host work plus three or one CPU
copies). Run: ``PYTHONPATH=. python benchmarks/bench_mamba_host.py --out DIR``
(``--quick``: small tensors, few rounds, Triton interpreter).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
QUICK = "--quick" in sys.argv
if QUICK:
    import os

    os.environ.setdefault("TRITON_INTERPRET", "1")

from benchmarks import _harness as H  # noqa: E402
from benchmarks import _workloads as W  # noqa: E402
from benchmarks._floors import numpy_view_floor  # noqa: E402
from devptr.adapters.mamba_copy import (  # noqa: E402
    MambaCopyBuffers,
    collect_mamba_copy_meta,
    do_mamba_copy_block,
    get_conv_copy_spec,
    get_temporal_copy_spec,
)


def model(device: torch.device, quick: bool) -> tuple[list[list[str]], dict[str, Any], dict[str, Any]]:
    """The Mamba step's model (:mod:`benchmarks._workloads`): one group, random states."""
    groups = [W.mamba_layers()]
    funcs = {name: (get_conv_copy_spec, get_temporal_copy_spec) for name in groups[0]}
    ctx: dict[str, Any] = dict(W.mamba_states(device, quick, random=True))
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
    return [([[0, 1, 2, 3]], 0, 1, 1), ([[4, 5, 2, 1]], 0, 1, 0)][: W.REQS]


def vllm_views(groups, ctx, reqs) -> tuple[list[torch.Tensor], list[torch.Tensor]]:  # type: ignore[no-untyped-def]
    """The source and destination views of every copy, in collect order (made once)."""
    srcs: list[torch.Tensor] = []
    dsts: list[torch.Tensor] = []
    for block_ids, cur, dest, bias in reqs:
        ids = block_ids[0]
        for layer in groups[0]:
            conv, temporal = ctx[layer]
            srcs += [conv[ids[cur], bias:], temporal[ids[cur + bias]]]
            dsts += [conv[ids[dest]], temporal[ids[dest]]]
    return srcs, dsts


def adapter_upload(db: Any) -> Callable[[int], None]:
    """The adapter's own upload of ``n`` collected entries: one table, or (older trees) three."""
    table = getattr(db, "table", None)
    if table is not None:
        return lambda n: table.to_device(n)

    def three(n: int) -> None:
        db.src_ptrs.to_device(n)
        db.dst_ptrs.to_device(n)
        db.sizes.to_device(n)

    return three


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=0, help="rounds (default 15, 3 with --quick)")
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() and not args.quick else "cpu")
    number = 20 if not args.quick else 2
    repeat = args.repeat or (15 if not args.quick else 3)
    groups, funcs, ctx = model(device, args.quick or device.type == "cpu")  # host work: any size
    cap = 8 * 2 * W.LAYERS
    vb = VllmBuffers(cap, device)
    db = MambaCopyBuffers.create(8, groups, funcs, device=device)
    upload = adapter_upload(db)
    reqs = requests()
    srcs, dsts = vllm_views(groups, ctx, reqs)
    n = len(srcs)
    numpy_floor, fdev = numpy_view_floor(srcs, dsts, device)

    def vllm_way() -> None:
        off = 0
        for block_ids, s, d, b in reqs:
            off = vllm_collect(vb, off, groups, ctx, block_ids, s, d, b)
        vb.copy_to_gpu(off)

    def adapter() -> None:
        db.offset = 0  # what vLLM does at every step
        for block_ids, s, d, b in reqs:
            collect_mamba_copy_meta(db, groups, funcs, [0], s, d, b, block_ids, ctx)
        upload(db.offset)

    for fn in (numpy_floor, vllm_way, adapter):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    tables = {
        "numpy_floor": [g[:n].tolist() for g in fdev],
        "vllm_way": [g[:n].tolist() for g in vb.gpu],
        "adapter": [db.src_ptrs.device()[:n].tolist(), db.dst_ptrs.device()[:n].tolist(),
                    db.sizes.device()[:n].tolist()],
    }
    as_u64 = {k: [[a % (1 << 64) for a in col] for col in v] for k, v in tables.items()}
    same = as_u64["numpy_floor"] == as_u64["vllm_way"] == as_u64["adapter"] and db.offset == n
    res: dict[str, Any] = {"meta": H.meta(), "entries": n, "same_tables": same, "device": str(device),
                           "uploads": "one table" if hasattr(db, "table") else "three buffers"}
    ways = {"numpy_floor": numpy_floor, "vllm_way": vllm_way, "adapter": adapter}
    times = H.host_interleaved(ways, number=number, repeat=repeat)
    if device.type == "cuda":
        torch.cuda.synchronize()
    res["times"] = {k: v.summary() for k, v in times.items()}
    res["adapter_over_floor"] = H.paired_ratios(times["adapter"], times["numpy_floor"]).median_ns
    res["vllm_over_floor"] = H.paired_ratios(times["vllm_way"], times["numpy_floor"]).median_ns
    # end to end on a GPU: tables + copies of the state bytes
    if device.type == "cuda":
        from benchmarks.bench_kernels_baselines import vllm_style_batch_memcpy

        def vllm_e2e() -> None:
            vllm_way()
            g = vb.gpu
            vllm_style_batch_memcpy(g[0][:n], g[1][:n], g[2][:n])

        def devptr_e2e() -> None:
            db.offset = 0
            for block_ids, s, d, b in reqs:
                collect_mamba_copy_meta(db, groups, funcs, [0], s, d, b, block_ids, ctx)
            do_mamba_copy_block(db)

        e2e = H.host_interleaved({"vllm": vllm_e2e, "adapter": devptr_e2e}, number=5, repeat=repeat)
        torch.cuda.synchronize()
        res["e2e"] = {k: v.summary() for k, v in e2e.items()}
    lines = [
        "| way | median us (p25-p75) | / floor (median of paired ratios) |",
        "|---|---:|---:|",
    ]
    for name, t in times.items():
        ratio = H.paired_ratios(t, times["numpy_floor"]).median_ns
        spread = f"{t.p25_ns / 1e3:.1f}-{t.p75_ns / 1e3:.1f}"
        lines.append(f"| {name} | {t.median_us:.1f} ({spread}) | {ratio:.2f}x |")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mamba_host_bench.json").write_text(json.dumps(res, indent=1))
    print(H.header(), end="")
    print(f"- {n} entries, device tables on {device}, adapter uploads {res['uploads']}, "
          f"tables identical: {same}\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
