"""Batch-copy benchmark: devptr.kernels.batch_memcpy against the ceiling and baselines.

Run on a GPU (one run, everything side by side)::

    PYTHONPATH=. PYTHONUNBUFFERED=1 python benchmarks/bench_kernels_gpu.py --out DIR

writes ``DIR/kernels_bench.json`` (every number, the command, date, machine) and prints a
table. ``--quick`` runs tiny sizes on the CPU under the Triton interpreter (a smoke test
of this script; its numbers mean nothing). Bandwidth counts bytes read plus bytes written.

Timing: CUDA-graph replays (``INNER`` launches captured, median of ``REPLAYS`` replays,
after a warm-up), so per-launch Python overhead is excluded. Inputs rotate over several
table sets when one set would fit in L2.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

QUICK = "--quick" in sys.argv
if QUICK:
    os.environ.setdefault("TRITON_INTERPRET", "1")


from devptr import DevicePtr, PtrBuffer, addresses  # noqa: E402
from devptr.kernels import SizeBuffer, batch_memcpy  # noqa: E402
from devptr.kernels import _memcpy as memcpy_mod  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import _harness as H  # noqa: E402
from benchmarks import _workloads as W  # noqa: E402
from benchmarks.bench_kernels_baselines import vllm_style_batch_memcpy  # noqa: E402

KiB = W.KIB
MiB = W.MIB
GiB = 1024 * MiB
INNER = 10
REPLAYS = 15
L2_SAFE = 200 * MiB


@dataclass
class TableSet:
    """One set of tables and arenas for a case."""

    src_mem: torch.Tensor
    dst_mem: torch.Tensor
    src: PtrBuffer
    dst: PtrBuffer
    sizes: SizeBuffer
    src_views: list[torch.Tensor] = field(default_factory=list)
    dst_views: list[torch.Tensor] = field(default_factory=list)


@dataclass
class Case:
    name: str
    sizes: list[int]
    src_gap: int = 0
    dst_shift: int = 0
    overlap_every: int = 0
    inplace_shift: int = 0
    note: str = ""


def build_set(case: Case, device: torch.device, views: bool) -> TableSet:
    n = len(case.sizes)
    offs = [0] * n
    pos = case.inplace_shift  # room below the first segment for an in-place left shift
    for k, z in enumerate(case.sizes):
        offs[k] = pos
        pos += z + case.src_gap
    total = pos + 64
    src_mem = torch.randint(0, 256, (total,), dtype=torch.uint8, device=device)
    dst_mem = torch.randint(0, 256, (total + 64,), dtype=torch.uint8, device=device)
    pin = None if device.type != "cpu" else False
    dev = device if device.type != "cpu" else None
    src: PtrBuffer = PtrBuffer(n, device=dev, pin_memory=pin)
    dst: PtrBuffer = PtrBuffer(n, device=dev, pin_memory=pin)
    sizes = SizeBuffer(n, device=dev, pin_memory=pin)
    import numpy as np

    o = np.array(offs, dtype=np.uint64)
    src.fill(0, addresses(DevicePtr.of(src_mem), o, 1))
    d_offs = [x + case.dst_shift for x in offs]
    dst_addrs = addresses(DevicePtr.of(dst_mem), np.array(d_offs, dtype=np.uint64), 1)
    s_np = src.numpy()
    if case.overlap_every:
        # every k-th segment copies inside the source arena, shifted right by 1 KiB
        for k in range(0, n, case.overlap_every):
            dst_addrs[k] = s_np[k] + np.uint64(1024)
    if case.inplace_shift:
        # segments below 1 MiB shift left inside their own block (conv window, accepted tokens)
        for k in range(n):
            if case.sizes[k] < MiB:
                dst_addrs[k] = s_np[k] - np.uint64(case.inplace_shift)
    dst.fill(0, dst_addrs)
    sizes.fill(0, case.sizes)
    if dev is not None:
        src.to_device()
        dst.to_device()
        sizes.to_device()
        torch.cuda.synchronize()
    ts = TableSet(src_mem, dst_mem, src, dst, sizes)
    if views:
        ts.src_views = [src_mem[x : x + z] for x, z in zip(offs, case.sizes, strict=True)]
        ts.dst_views = [dst_mem[x : x + z] for x, z in zip(d_offs, case.sizes, strict=True)]
    return ts


def _rotating(fns: list[Callable[[], None]]) -> Callable[[], None]:
    def all_sets() -> None:
        for f in fns:
            f()

    return all_sets


def time_ms(fns: list[Callable[[], None]], device: torch.device, eager: bool = False) -> float:
    """Median per-call time of ``fns`` (rotated), in ms, through ``benchmarks/_harness.py``:
    CUDA-graph replays (``INNER`` rounds captured), or CUDA events around back-to-back
    eager calls when ``eager``; the host clock on the CPU."""
    fn = _rotating(fns)
    per = len(fns)
    if device.type == "cpu":
        return H.host(fn, number=1, repeat=1).median_ms / per
    if eager:
        return H.cuda_events(fn, number=max(1, 20 // per), repeat=5).median_ms / per
    return H.cuda_graph(fn, number=max(1, INNER // per), repeat=REPLAYS).median_ms / per


def ceiling_gbs(device: torch.device) -> dict[str, float]:
    """1 GiB device-to-device ``copy_``: eager with events (the ceiling) and as graph replays."""
    nbytes = 1 * GiB if device.type != "cpu" else 1 * MiB
    a = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=device)
    b = torch.empty_like(a)

    def copy() -> None:
        b.copy_(a)

    gbs = lambda ms: 2 * nbytes / (ms * 1e-3) / 1e9  # noqa: E731
    return {"eager": gbs(time_ms([copy], device, eager=True)), "graph": gbs(time_ms([copy], device))}


def verify(case: Case, sets: list[TableSet]) -> bool:
    ok = True
    for ts in sets:
        for k in range(0, len(case.sizes), max(1, len(case.sizes) // 64)):
            s = int(ts.src.numpy()[k]) - ts.src_mem.data_ptr()
            d = int(ts.dst.numpy()[k]) - ts.dst_mem.data_ptr()
            z = case.sizes[k]
            if case.overlap_every and k % case.overlap_every == 0:
                continue
            if case.inplace_shift and z < MiB:
                continue
            ok &= bool(torch.equal(ts.src_mem[s : s + z], ts.dst_mem[d : d + z]))
    return ok


def sets_for(case: Case, device: torch.device, views: bool) -> list[TableSet]:
    total = sum(case.sizes)
    k = 1 if device.type == "cpu" else max(1, min(8, math.ceil(L2_SAFE / max(total, 1))))
    return [build_set(case, device, views) for _ in range(k)]


def run_case(
    case: Case, device: torch.device, ceiling: float, impls: list[str], configs: list[dict[str, int]]
) -> dict[str, Any]:
    views = "foreach_copy_" in impls or "copy_loop" in impls
    sets = sets_for(case, device, views)
    nbytes = 2 * sum(case.sizes)
    res: dict[str, Any] = {
        "case": case.name,
        "segments": len(case.sizes),
        "bytes_moved": nbytes,
        "note": case.note,
        "table_sets": len(sets),
        "results": {},
    }
    n = len(case.sizes)
    max_size = max(case.sizes)

    def record(name: str, ms: float) -> None:
        gbs = nbytes / (ms * 1e-3) / 1e9
        res["results"][name] = {"us": ms * 1e3, "GBps": gbs, "of_ceiling": gbs / ceiling}

    for cfg in configs:
        label = "devptr" if not cfg else "devptr" + "".join(f"_{k}{v}" for k, v in cfg.items())
        if cfg:
            ppu = cfg.get("ppu", memcpy_mod.PROGRAMS_PER_UNIT)
            chunk = cfg.get("chunk", memcpy_mod.CHUNK)
            warps = cfg.get("warps", memcpy_mod.NUM_WARPS)
            units = memcpy_mod._runtime.multiprocessor_count(device)
            split = max(1, min(units * ppu // n, -(-max_size // chunk), memcpy_mod.MAX_SPLIT))
            fns = [
                (
                    lambda ts=ts, sp=split, ch=chunk, w=warps: batch_memcpy(
                        ts.src, ts.dst, ts.sizes, split=sp, chunk=ch, num_warps=w
                    )
                )
                for ts in sets
            ]
        else:  # what users get: the launcher's own choices
            fns = [(lambda ts=ts: batch_memcpy(ts.src, ts.dst, ts.sizes)) for ts in sets]
        for ts in sets:
            ts.dst_mem.fill_(0xA5)
        record(label, time_ms(fns, device))
        res["results"][label]["correct"] = verify(case, sets)
    if "vllm_style" in impls:
        fns = [
            (lambda ts=ts: vllm_style_batch_memcpy(ts.src.device(), ts.dst.device(), ts.sizes.device()))
            if device.type != "cpu"
            else (lambda ts=ts: vllm_style_batch_memcpy(ts.src.host(), ts.dst.host(), ts.sizes.host()))
            for ts in sets
        ]
        record("vllm_style", time_ms(fns, device))
    if "foreach_copy_" in impls:
        fns = [(lambda ts=ts: torch._foreach_copy_(ts.dst_views, ts.src_views)) for ts in sets]
        record("foreach_copy_", time_ms(fns, device))
    if "copy_loop" in impls:

        def loop(ts: TableSet) -> None:
            for d, s in zip(ts.dst_views, ts.src_views, strict=True):
                d.copy_(s)

        fns = [(lambda ts=ts: loop(ts)) for ts in sets]
        record("copy_loop", time_ms(fns, device, eager=True))
    del sets
    torch.cuda.empty_cache() if device.type == "cuda" else None
    return res


def cases(quick: bool) -> list[Case]:
    if quick:
        return [
            Case("mamba_mixed", W.mamba_segment_sizes(quick=True)),
            Case("4093B_coaligned", [4093] * 4, note="same offset mod 16 in src and dst"),
            Case("4093B_mismatched", [4093] * 4, dst_shift=5, note="src and dst differ mod 16"),
            Case("overlap_1_in_2", [8 * KiB] * 4, src_gap=2 * KiB, overlap_every=2),
            Case("inplace", [3 * KiB] * 3 + [20 * KiB], src_gap=1 * KiB, inplace_shift=1 * KiB),
        ]
    return [
        Case("mamba_mixed", W.mamba_segment_sizes(quick=False), note="72 x 48 KiB + 72 x 2 MiB"),
        Case("64KiB_x4096", [64 * KiB] * 4096),
        Case("1MiB_x256", [1 * MiB] * 256),
        Case("2MiB_x128", [2 * MiB] * 128),
        Case("4KiB_x65536", [4 * KiB] * 65536),
        Case("4093B_x4096_coaligned", [4093] * 4096, note="packed: same offset mod 16 in src and dst"),
        Case("4093B_x4096_agree8", [4093] * 4096, dst_shift=8, note="src and dst agree mod 8, differ mod 16"),
        Case("4093B_x4096_agree4", [4093] * 4096, dst_shift=4, note="agree mod 4, differ mod 8"),
        Case("4093B_x4096_agree2", [4093] * 4096, dst_shift=2, note="agree mod 2, differ mod 4: bytes"),
        Case("4093B_x4096_mismatched", [4093] * 4096, dst_shift=5, note="dst offsets +5: byte path"),
        Case(
            "mamba_mixed_conv_inplace",
            [36 * KiB] * 72 + [2 * MiB] * 72,
            src_gap=12 * KiB,
            inplace_shift=12 * KiB,
            note="72 conv windows shifted in place by one 12 KiB token (36 KiB memmove each) + 72 x 2 MiB",
        ),
        Case(
            "mamba_mixed_conv_moved",
            [36 * KiB] * 72 + [2 * MiB] * 72,
            src_gap=12 * KiB,
            note="the same bytes with the conv windows going to other blocks (no overlap)",
        ),
        Case(
            "2MiB_x128_overlap_1_in_16",
            [2 * MiB] * 128,
            src_gap=4 * KiB,
            overlap_every=16,
            note="8 of 128 segments move inside their source (right shift by 1 KiB)",
        ),
    ]


def sweep_cases(quick: bool) -> list[Case]:
    if quick:
        return [Case(f"sweep_{z}", [z] * 4) for z in (1 * KiB, 16 * KiB)]
    out = []
    for z in (1 * KiB, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB):
        out.append(Case(f"sweep_{z}", [z] * (256 * MiB // z)))
    return out


def compiled_report() -> list[dict[str, Any]]:
    """Registers and spills of the compiled batch_memcpy variants (best effort)."""
    rows: list[dict[str, Any]] = []
    try:
        from devptr.kernels import _copy_jit

        caches = getattr(_copy_jit._batch_memcpy_kernel, "device_caches", {})
        for cache in caches.values():
            kernels = cache[0] if isinstance(cache, tuple) else cache
            for key, k in kernels.items():
                rows.append(
                    {
                        "key": str(key)[-120:],
                        "n_regs": getattr(k, "n_regs", None),
                        "n_spills": getattr(k, "n_spills", None),
                        "num_warps": getattr(getattr(k, "metadata", None), "num_warps", None),
                    }
                )
    except Exception as exc:  # reporting only
        rows.append({"error": repr(exc)})
    return rows


def machine() -> dict[str, Any]:
    """The harness's machine description plus the GPU facts this benchmark reports."""
    info: dict[str, Any] = {**H.machine(), "host": platform.node()}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        info["sms"] = p.multi_processor_count
        info["gpu_mem_GiB"] = round(p.total_memory / GiB, 1)
    return info


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-sweep", action="store_true", help="skip the tuning sweep")
    ap.add_argument("--cases", default="", help="comma-separated case names to run (default: all)")
    ap.add_argument("--no-size-sweep", action="store_true", help="skip the segment-size sweep")
    args = ap.parse_args()
    device = torch.device("cuda") if torch.cuda.is_available() and not args.quick else torch.device("cpu")
    t0 = time.time()
    out: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "defaults": {
            "chunk": memcpy_mod.CHUNK,
            "byte_chunk": memcpy_mod.BYTE_CHUNK,
            "programs_per_unit": memcpy_mod.PROGRAMS_PER_UNIT,
            "num_warps": memcpy_mod.NUM_WARPS,
        },
    }
    ceil = ceiling_gbs(device)
    ceiling = ceil["eager"]
    out["ceiling_GBps"] = ceiling
    out["copy_1GiB_graph_GBps"] = ceil["graph"]
    print(f"ceiling (1 GiB copy_, eager events): {ceiling:,.0f} GB/s; as graph replays {ceil['graph']:,.0f}")
    tuning: list[dict[str, int]] = [{}]
    if not args.no_sweep:
        tuning += [
            {"chunk": 4096, "warps": 4, "ppu": 8},
            {"chunk": 4096, "warps": 4, "ppu": 16},
            {"chunk": 4096, "warps": 4, "ppu": 24},
            {"chunk": 8192, "warps": 4, "ppu": 12},
            {"chunk": 16384, "warps": 8, "ppu": 16},
            {"chunk": 32768, "warps": 8, "ppu": 8},
        ]
    all_impls = ["vllm_style", "foreach_copy_"]
    out["cases"] = []
    wanted = {c for c in args.cases.split(",") if c}
    for c in cases(args.quick):
        if wanted and c.name not in wanted:
            continue
        impls = list(all_impls)
        if c.name in ("mamba_mixed", "2MiB_x128") or args.quick:
            impls.append("copy_loop")
        r = run_case(c, device, ceiling, impls, tuning)
        out["cases"].append(r)
        best = max((v["of_ceiling"], k) for k, v in r["results"].items() if k.startswith("devptr"))
        line = "  ".join(f"{k}={v['of_ceiling']:.0%}" for k, v in r["results"].items())
        print(f"{c.name}: best {best[1]} {best[0]:.0%} | {line}", flush=True)
    out["sweep"] = []
    for c in [] if args.no_size_sweep else sweep_cases(args.quick):
        r = run_case(c, device, ceiling, ["vllm_style", "foreach_copy_"], [{}])
        r["segment_bytes"] = c.sizes[0]
        out["sweep"].append(r)
        print(f"{c.name}: " + "  ".join(f"{k}={v['GBps']:,.0f}" for k, v in r["results"].items()), flush=True)
    out["compiled"] = compiled_report()
    out["seconds"] = time.time() - t0
    path = Path(args.out) / "kernels_bench.json"
    path.write_text(json.dumps(out, indent=1))
    print_table(out)
    print(f"wrote {path} in {out['seconds']:.0f} s")


def print_table(out: dict[str, Any]) -> None:
    print(f"\nceiling {out['ceiling_GBps']:,.0f} GB/s; default config (devptr) vs baselines")
    print(
        f"{'case':30} {'devptr us':>10} {'%ceil':>6} {'vllm us':>9} {'x':>6} "
        f"{'foreach us':>10} {'x':>6} {'loop us':>9}"
    )
    for r in out["cases"]:
        res = r["results"]
        d = res["devptr"]["us"]
        v = res.get("vllm_style", {}).get("us", float("nan"))
        f = res.get("foreach_copy_", {}).get("us", float("nan"))
        lp = res.get("copy_loop", {}).get("us", float("nan"))
        print(
            f"{r['case']:30} {d:10.1f} {res['devptr']['of_ceiling']:6.0%} {v:9.1f} {v / d:6.1f} "
            f"{f:10.1f} {f / d:6.1f} {lp:9.1f}  ok={res['devptr']['correct']}"
        )


if __name__ == "__main__":
    main()
