"""Where an EC swap's time goes on a GPU: host stages, device timeline, copy-engine streams.

Profiling companion of ``bench_ec_engines.py`` (no results table of its own): for a few
(direction, block size) batches it prints

- the host time of each stage of ``DescriptorBuffers.swap`` (``numpy`` views, ``validate``,
  the dispatcher's ``choose``, the descriptor upload, the kernel launch, the whole call);
- a torch.profiler timeline (CPU runtime calls and device work, microseconds from the
  first event) of 4 back-to-back swaps per variant and of one single swap with each stage
  marked (``record_function``), to see gaps, waits and syncs;
- the copy engines on 1, 2, 4 and 8 streams (GB/s, CUDA events), each checked byte for byte;
- the Mamba adapter's host path split into its stages (``bench_mamba_host.py``'s model).

``--cpu`` (no GPU needed): the host work of ``DescriptorBuffers.swap`` per call on this
machine, for the batches profiled on the GPU, with the kernel launch itself left out (the
compiled kernel's launcher replaced by a no-op; everything before it runs: the swap's
checks, the descriptor views, ``batch_memcpy``'s or the adapter's launch preparation),
through the ``kernel`` path and through a registered no-op platform op, next to what a
caller with host tables pays for the same preparation (``batch_memcpy`` on three tensors).
Run it with ``PYTHONPATH`` at two checkouts to compare before and after.

    python benchmarks/profile_ec_swap.py --out DIR
    TRITON_INTERPRET=1 python benchmarks/profile_ec_swap.py --cpu --out DIR
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
from devptr.adapters.ec_connector import DescriptorBufferPool, calibrate_engines, unregister_swap_op
from devptr.adapters.ec_connector import _descriptors as D
from devptr.adapters.ec_connector import _engines as E
from devptr.adapters.ec_connector import _swap as S
from devptr.kernels import batch_memcpy

KIB, MIB = 1024, 1024 * 1024


def host_us(fn: Callable[[], object], number: int = 50, repeat: int = 5, sync: bool = True) -> float:
    """Median host microseconds per call of ``number`` back-to-back calls."""
    out = []
    for _ in range(repeat):
        if sync:
            torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(number):
            fn()
        out.append((time.perf_counter_ns() - t0) / number / 1e3)
    if sync:
        torch.cuda.synchronize()
    return statistics.median(out)


def timeline(fn: Callable[[], object], label: str, calls: int, log: list[str]) -> None:
    """Print a condensed torch.profiler timeline of ``calls`` calls of ``fn``."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    path = Path("/tmp") / f"trace_{abs(hash(label))}.json"
    prof.export_chrome_trace(str(path))
    ev = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"]
    keep = []
    for e in ev:
        cat = e.get("cat", "")
        if cat in ("kernel", "gpu_memcpy", "gpu_memset") or cat == "cuda_runtime" or cat == "user_annotation":
            keep.append(e)
    if not keep:
        return
    t0 = min(float(e["ts"]) for e in keep)
    log.append(f"--- timeline: {label} ({calls} calls); us from the first event")
    for e in sorted(keep, key=lambda e: float(e["ts"]))[:90]:
        dur = float(e.get("dur", 0))
        cat = e.get("cat", "")
        if cat == "cuda_runtime" and dur < 3 and "ynchron" not in e["name"]:
            continue
        side = (
            "GPU"
            if cat in ("kernel", "gpu_memcpy", "gpu_memset")
            else ("MARK" if cat == "user_annotation" else "CPU")
        )
        log.append(f"{side:4} {float(e['ts']) - t0:9.1f} +{dur:8.1f}  {e['name'][:70]}")


def marked(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def run(*a: Any, **k: Any) -> Any:
        with torch.profiler.record_function(name):
            return fn(*a, **k)

    return run


def ec_case(
    direction: str,
    block: int,
    total: int,
    arenas: dict[str, torch.Tensor],
    pool: DescriptorBufferPool,
    log: list[str],
    res: dict[str, Any],
) -> None:
    device = arenas["D"].device
    n = total // block
    src_all = arenas[direction[0]]
    dst_all = arenas["H"] if direction[2] == "H" else arenas["D2"]
    src = src_all[: n * block].view(n, block)
    dst = dst_all[: n * block].view(n, block)
    perm = np.random.default_rng(block).permutation(n)
    bufs = pool.acquire(n)
    bufs.add_strided_copies(
        0,
        DevicePtr.of(src),
        perm.astype(np.uint64),
        DevicePtr.of(dst),
        np.arange(n, dtype=np.uint64),
        block,
        np.full(n, block, dtype=np.uint64),
    )
    hs, hd, hk = (np.ascontiguousarray(a) for a in bufs.numpy(n))
    ds, dd, dk = (torch.from_numpy(a.view(np.int64)).to(device).view(torch.uint64) for a in (hs, hd, hk))
    want = src.cpu()[torch.from_numpy(perm)]
    for path in ("auto", "kernel"):
        dst.fill_(0xA5)
        bufs.swap(n, path=path)  # type: ignore[arg-type]
        torch.cuda.synchronize()
        assert torch.equal(dst.cpu(), want), (direction, block, path)
    facts = S.validate(hs, hd, hk)
    rt = E.cuda_runtime()
    assert rt is not None
    cols = bufs._device_columns(n)
    host_tab = torch.from_numpy(np.concatenate([hs, hd, hk]).view(np.int64)).pin_memory()
    dev_tab = torch.empty_like(host_tab, device=device)
    ts, td, tk = (dev_tab[j * n : (j + 1) * n].view(torch.uint64) for j in range(3))

    def rival() -> None:  # bench_ec_engines.py's "SM kernel, host tables"
        dev_tab.copy_(host_tab, non_blocking=True)
        batch_memcpy(ts, td, tk, n, max_size=block)

    st = bufs._live()
    cuda_event, torch_event = torch.cuda.Event(), torch.Event(device)
    stages = {
        "torch.cuda.Event().record()": cuda_event.record,
        "torch.Event(device).record()": torch_event.record,
        "torch.cuda.current_stream()": torch.cuda.current_stream,
        "torch.cuda.get_device_properties": lambda: torch.cuda.get_device_properties(device),
        "Storage.copy_to_device (copy_ + event)": lambda: st.copy_to_device(3 * n, True),
        "bufs.numpy": lambda: bufs.numpy(n),
        "validate (unchecked handles only)": lambda: S.validate(hs, hd, hk),
        "bufs._batch_facts (checked handle)": lambda: bufs._batch_facts(n),
        "choose": lambda: E.choose(device, hs, hd, hk, facts.total),
        "direction": lambda: E.direction(rt, int(hs[0]), int(hd[0])),
        "is_current_stream_capturing": torch.cuda.is_current_stream_capturing,
        "bufs.to_device": lambda: bufs.to_device(n),
        "bufs._device_columns (the swap's upload)": lambda: bufs._device_columns(n),
        "bare copy_ of the tables": lambda: dev_tab.copy_(host_tab, non_blocking=True),
        "batch_memcpy launch, tables ready": lambda: batch_memcpy(ds, dd, dk, n, max_size=block),
        "table_copy launch (the swap's)": lambda: E.table_copy(cols[0], cols[1], cols[2], n, block),
        "rival: bare copy_ + batch_memcpy": rival,
        "swap auto": lambda: bufs.swap(n),
        "swap kernel": lambda: bufs.swap(n, path="kernel"),
    }
    slow = ("swap", "launch", "upload", "copy_", "rival", "Storage")
    row = {k: host_us(f, number=20 if any(w in k for w in slow) else 200) for k, f in stages.items()}
    res[f"{direction} {block}"] = row
    log.append(
        f"=== {direction} {block} B x {n}: host us per call "
        + json.dumps({k: round(v, 1) for k, v in row.items()})
    )
    for label, fn in (
        ("auto", lambda: bufs.swap(n)),
        ("kernel", lambda: bufs.swap(n, path="kernel")),
        ("tables ready", lambda: batch_memcpy(ds, dd, dk, n, max_size=block)),
    ):
        timeline(fn, f"{direction} {block} B: 4 x {label}", 4, log)
    # one swap with each stage marked
    Buf = D.DescriptorBuffers
    saved = (Buf._batch_facts, E.choose, Buf._device_columns, S.table_copy, E.copy_engines)
    Buf._batch_facts = marked(Buf._batch_facts, "batch_facts")  # type: ignore[method-assign]
    E.choose = marked(E.choose, "choose")  # type: ignore[assignment]
    Buf._device_columns = marked(Buf._device_columns, "upload")  # type: ignore[method-assign]
    S.table_copy = marked(S.table_copy, "table_copy")  # type: ignore[assignment]
    E.copy_engines = marked(E.copy_engines, "copy_engines")  # type: ignore[assignment]
    try:
        for label, fn in (("auto", lambda: bufs.swap(n)), ("kernel", lambda: bufs.swap(n, path="kernel"))):
            timeline(
                marked(fn, f"swap {label}"), f"{direction} {block} B: 1 x {label}, stages marked", 1, log
            )
    finally:
        Buf._batch_facts, E.choose, Buf._device_columns, S.table_copy, E.copy_engines = saved  # type: ignore[method-assign,assignment]
    pool.release(bufs)


def ce_streams(
    direction: str,
    block: int,
    total: int,
    arenas: dict[str, torch.Tensor],
    log: list[str],
    res: dict[str, Any],
) -> None:
    device = arenas["D"].device
    n = total // block
    src = arenas[direction[0]][: n * block].view(n, block)
    dst = (arenas["H"] if direction[2] == "H" else arenas["D2"])[: n * block].view(n, block)
    perm = np.random.default_rng(block + 1).permutation(n)
    s = (np.uint64(src.data_ptr()) + perm.astype(np.uint64) * np.uint64(block)).astype(np.uint64)
    d = (np.uint64(dst.data_ptr()) + np.arange(n, dtype=np.uint64) * np.uint64(block)).astype(np.uint64)
    k = np.full(n, block, dtype=np.uint64)
    want = src.cpu()[torch.from_numpy(perm)]
    row = {}
    for m in (1, 2, 4, 8):
        dst.fill_(0x5A)
        E.copy_engines(s, d, k, device, streams=m)
        torch.cuda.synchronize()
        ok = bool(torch.equal(dst.cpu(), want))
        t = H.cuda_events(
            lambda m=m: E.copy_engines(s, d, k, device, streams=m, has_empty=False),
            number=2,
            repeat=5,
            warmup=1,
        )
        row[m] = (n * block / (t.median_ns * 1e-9) / 1e9, ok)
    c = H.cuda_events(lambda: dst.copy_(src, non_blocking=True), number=2, repeat=5, warmup=1)
    cont = n * block / (c.median_ns * 1e-9) / 1e9
    res[f"CE {direction} {block}"] = {"streams": {str(m): v for m, v in row.items()}, "contiguous": cont}
    log.append(
        f"CE streams {direction} {block:>8} B x {n:>5}: "
        + ", ".join(f"{m}: {v[0]:.1f}{'' if v[1] else ' WRONG'}" for m, v in row.items())
        + f"; contiguous {cont:.1f} GB/s"
    )


def mamba(log: list[str], res: dict[str, Any]) -> None:
    sys.argv = sys.argv[:1]
    from benchmarks import bench_mamba_host as B
    from benchmarks._floors import numpy_view_floor
    from devptr.adapters.mamba_copy import MambaCopyBuffers, collect_mamba_copy_meta

    device = torch.device("cuda")
    groups, funcs, ctx = B.model(device, False)
    db = MambaCopyBuffers.create(8, groups, funcs, device=device)
    reqs = B.requests()
    srcs, dsts = B.vllm_views(groups, ctx, reqs)
    floor, _ = numpy_view_floor(srcs, dsts, device)

    def adapter() -> None:
        db.offset = 0
        for block_ids, s, d, b in reqs:
            collect_mamba_copy_meta(db, groups, funcs, [0], s, d, b, block_ids, ctx)
        db.table.to_device(db.offset)

    adapter()
    plan = db._plan
    assert plan is not None
    r0 = reqs[0]
    s0, d0, z0 = plan.compute(r0[0], r0[1], r0[2], r0[3], ctx)
    st = db.table._live()
    parts: dict[str, Callable[[], object]] = {
        "floor": floor,
        "adapter": adapter,
        "plan.current": lambda: plan.current(groups, funcs, [0], ctx),
        "plan.compute (1 request)": lambda: plan.compute(r0[0], r0[1], r0[2], r0[3], ctx),
        "write (1 request, no upload pending)": lambda: db.write(0, s0, d0, z0),
        "table.to_device(144)": lambda: db.table.to_device(144),
        "to_device + write (waits for it)": lambda: (db.table.to_device(144), db.write(0, s0, d0, z0)),
        "wait_host on a done event": st.wait_host,
    }
    out = {}
    for k, f in parts.items():
        f()
        torch.cuda.synchronize()
        out[k] = host_us(f, number=100, repeat=7)
    res["mamba"] = out
    log.append("=== Mamba host parts, us per call: " + json.dumps({k: round(v, 1) for k, v in out.items()}))
    import cProfile
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    for _ in range(500):
        adapter()
    pr.disable()
    torch.cuda.synchronize()
    import io

    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(16)
    log.append(buf.getvalue())


class _NoLaunch:
    """Stands in for ``devptr.kernels._memcpy._KERNEL`` in ``--cpu``: every launch a no-op."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def launch(self, *args: object, **kwargs: object) -> None:
        return None

    def jit_module(self) -> Any:
        return self.real.jit_module()


def _cpu_case(pool: DescriptorBufferPool, block: int, n: int) -> dict[str, float]:
    """``--cpu``: one batch's host microseconds per call (the launch left out)."""
    from devptr import Encoding

    bufs = pool.acquire(n)
    bufs.add_strided_copies(
        0, DevicePtr(1 << 40), np.random.default_rng(block).permutation(n).astype(np.uint64),
        DevicePtr(1 << 41), np.arange(n, dtype=np.uint64), block, np.full(n, block, dtype=np.uint64),
    )  # fmt: skip
    ts, td, tk = (torch.from_numpy(a.copy().view(np.int64)).view(torch.uint64) for a in bufs.numpy(n))

    def timed(fn: Callable[[], object]) -> float:
        return host_us(fn, number=200, repeat=7, sync=False)

    row = {
        "swap, kernel path (launch left out)": timed(lambda: bufs.swap(n, path="kernel")),
        "swap, no-op platform op": timed(lambda: bufs.swap(n, path="op")),
        "rival: batch_memcpy on 3 tensors (launch left out)": timed(
            lambda: batch_memcpy(ts, td, tk, n, max_size=block)
        ),
    }
    bufs.host(n, Encoding.U64)  # a writable view: from now on every swap validates
    row["swap, kernel path, after host() (validates)"] = timed(lambda: bufs.swap(n, path="kernel"))
    pool.release(bufs)
    return row


def cpu_host_work(out: Path) -> int:
    """``--cpu``: host microseconds per swap call with the launch left out (module doc)."""
    from devptr.adapters.ec_connector import register_swap_op
    from devptr.kernels import _memcpy as M

    log: list[str] = [H.header()]
    res: dict[str, Any] = {"meta": H.meta()}
    pool = DescriptorBufferPool("cpu")
    register_swap_op("cpu", lambda s, d, k, a: None)
    real = M._KERNEL
    M._KERNEL = _NoLaunch(real)  # type: ignore[assignment]
    try:
        for block, n in ((16 * KIB, 4096), (4 * KIB, 16384), (4 * MIB, 64)):
            row = _cpu_case(pool, block, n)
            res[f"{block} B x {n}"] = row
            log.append(
                f"=== {block} B x {n}: host us per call "
                + json.dumps({k: round(v, 1) for k, v in row.items()})
            )
            print(log[-1], flush=True)
    finally:
        M._KERNEL = real
        unregister_swap_op("cpu")
        out.mkdir(parents=True, exist_ok=True)
        (out / "profile_ec_cpu.log").write_text("\n".join(log))
        (out / "profile_ec_cpu.json").write_text(json.dumps(res, indent=1, default=str))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("."))
    ap.add_argument("--cpu", action="store_true", help="host work per swap on this machine, no GPU")
    args = ap.parse_args()
    if args.cpu:
        return cpu_host_work(args.out)
    log: list[str] = [H.header()]
    res: dict[str, Any] = {"meta": H.meta()}
    device = torch.device("cuda")
    unregister_swap_op("cuda")
    side = torch.cuda.Stream(device)
    try:
        with torch.cuda.stream(side):
            big = 256 * MIB
            arenas = {
                "D": torch.randint(0, 256, (big,), dtype=torch.uint8, device=device),
                "D2": torch.empty(big, dtype=torch.uint8, device=device),
                "H": torch.randint(0, 256, (big,), dtype=torch.uint8).pin_memory(),
            }
            t0 = time.perf_counter()
            cross = calibrate_engines(device)
            log.append(
                f"calibrate_engines: {time.perf_counter() - t0:.2f} s; rates "
                + json.dumps(
                    {
                        d: {str(b): {e: round(v, 1) for e, v in r.items()} for b, r in t.items()}
                        for d, t in cross.rates.items()
                    }
                )
            )
            pool = DescriptorBufferPool(device)
            for direction in ("H2D", "D2H"):
                for block in (4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB):
                    ce_streams(direction, block, 64 * MIB, arenas, log, res)
                    print(log[-1], flush=True)
            for direction, block, total in (
                ("D2D", 16 * KIB, 64 * MIB),
                ("D2D", 4 * KIB, 64 * MIB),
                ("H2D", 4 * MIB, 256 * MIB),
                ("H2D", 64 * KIB, 256 * MIB),
            ):
                ec_case(direction, block, total, arenas, pool, log, res)
                print(log[-1][:300], flush=True)
        mamba(log, res)
    finally:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "profile_ec.log").write_text("\n".join(log))
        (args.out / "profile_ec.json").write_text(json.dumps(res, indent=1, default=str))
    print("\n".join(x for x in log if x.startswith(("===", "CE", "calib"))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
