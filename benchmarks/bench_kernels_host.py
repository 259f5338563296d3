"""Host cost of the kernel launchers and of preparing the Mamba batch's tables.

Written so that the same file runs against an older devptr tree (``PYTHONPATH`` picks the
tree; features the old tree lacks are skipped), which gives the before/after profile in
one run on one machine. Everything times through ``benchmarks/_harness.py``.

Measured, on one GPU (or on the CPU under ``TRITON_INTERPRET=1`` with ``--quick``, where
the numbers mean nothing):

- ``lamport_allreduce`` of 4 KiB, 64 KiB and 1 MiB (fp32, bf16) on a one-rank workspace
  (``local_group(1, ...)`` on the GPU: the kernel waits on its own slot only), host time
  per call and CUDA-event time of back-to-back calls;
- ``batch_memcpy`` on the Mamba batch (72 x 48 KiB + 72 x 2 MiB) with its tables ready:
  host time per launch, against a bare Triton launch (``kernel[grid](...)``, no checks)
  of the same kernel with the same arguments;
- ``copy_state_blocks`` host time per launch;
- preparing the Mamba batch's tables from tensor lists and uploading them: numpy-view
  floor (slice writes into pinned numpy views + three ``copy_``), three devptr buffers
  (``PtrBuffer.fill`` x2 + ``SizeBuffer.fill`` + three ``to_device``), one devptr
  ``PtrTable`` of src/dst/size records (one ``fill`` + one ``to_device``);
- a cProfile table (top functions by own time) of each launcher and of the table paths.

Run: ``PYTHONPATH=TREE python benchmarks/bench_kernels_host.py --label after --out DIR``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

QUICK = "--quick" in sys.argv
if QUICK:
    os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import _harness as H  # noqa: E402
from benchmarks import _workloads as W  # noqa: E402
from benchmarks._floors import numpy_view_floor  # noqa: E402
from devptr import Column, PtrBuffer, PtrTable  # noqa: E402
from devptr.adapters.lamport import local_group  # noqa: E402
from devptr.kernels import SizeBuffer, batch_memcpy, copy_state_blocks, lamport_allreduce  # noqa: E402

KiB = 1024


def host_synced_interleaved(
    fns: dict[str, Callable[[], object]], *, number: int, repeat: int, dev: torch.device
) -> dict[str, H.Timing]:
    """Host time per call of ``number`` back-to-back calls, the device idle at each start
    (so a launch never waits for a full queue); the functions take turns in every round,
    so a drifting machine hits them alike."""
    for fn in fns.values():
        for _ in range(3):
            fn()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter_ns() - t0) / number)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return {k: H.Timing(tuple(v), "host", number) for k, v in samples.items()}


def host_synced(fn: Callable[[], object], *, number: int, repeat: int, dev: torch.device) -> H.Timing:
    """:func:`host_synced_interleaved` of one function."""
    return host_synced_interleaved({"fn": fn}, number=number, repeat=repeat, dev=dev)["fn"]


def profile(fn: Callable[[], object], calls: int, top: int = 14) -> str:
    """cProfile of ``calls`` calls: the ``top`` functions by own time (text table)."""
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        fn()
    pr.disable()
    buf = io.StringIO()
    st = pstats.Stats(pr, stream=buf)
    st.strip_dirs().sort_stats("tottime").print_stats(top)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    start = next((k for k, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    return "\n".join(lines[start:])


def lamport_rows(dev: torch.device, quick: bool) -> tuple[list[dict[str, Any]], str]:
    (ws,) = local_group(1, 1 << 21, device=dev)
    rows = []
    prof = ""
    for dtype in (torch.float32, torch.bfloat16):
        for nbytes in (4 * KiB, 64 * KiB, 1 << 20) if not quick else (4 * KiB,):
            n = nbytes // torch.tensor([], dtype=dtype).element_size()
            x = torch.randn(n, device=dev).to(dtype)
            out = torch.empty_like(x)
            fn = lambda x=x, out=out: lamport_allreduce(x, ws, out=out)  # noqa: E731
            row: dict[str, Any] = {"dtype": str(dtype).split(".")[1], "bytes": nbytes}
            number, repeat = (50, 15) if not quick else (2, 2)
            row["host"] = host_synced(fn, number=number, repeat=repeat, dev=dev).summary()
            if dev.type == "cuda":
                row["eager_events"] = H.cuda_events(fn, number=50, repeat=15).summary()
                row["graph"] = H.cuda_graph(fn, number=25, repeat=15).summary()
            rows.append(row)
            if dtype == torch.float32 and nbytes == 64 * KiB:
                prof = profile(fn, 2000 if not quick else 3)
    ws.close()
    return rows, prof


def memcpy_rows(dev: torch.device, quick: bool) -> tuple[dict[str, Any], dict[str, str]]:
    import devptr.kernels as K
    from devptr.kernels import _runtime

    srcs, dsts = W.mamba_step_views(dev, quick)
    n = len(srcs)
    mirror = dev if dev.type == "cuda" else "cpu"
    pin = dev.type == "cuda"
    res: dict[str, Any] = {"segments": n, "bytes": int(sum(t.nbytes for t in srcs))}
    profs: dict[str, str] = {}
    number, repeat = (50, 15) if not quick else (2, 2)

    # -- table preparation + upload ------------------------------------------------
    floor, _ = numpy_view_floor(srcs, dsts, dev)

    s_buf: PtrBuffer[int] = PtrBuffer(n, device=mirror, pin_memory=pin)
    d_buf: PtrBuffer[int] = PtrBuffer(n, device=mirror, pin_memory=pin)
    z_buf = SizeBuffer(n, device=mirror, pin_memory=pin)

    def three() -> None:
        s_buf.fill(0, srcs)
        d_buf.fill(0, dsts)
        z_buf.fill(0, [t.nbytes for t in srcs])
        s_buf.to_device(n)
        d_buf.to_device(n)
        z_buf.to_device(n)

    cols = {"src": Column.PTR, "dst": Column.PTR, "size": Column.INT}
    table = PtrTable(n, cols, device=mirror, pin_memory=pin)

    def fused() -> None:
        table.fill(0, src=srcs, dst=dsts, size=[t.nbytes for t in srcs])
        table.to_device(n)

    prep = H.host_interleaved(
        {"numpy_floor": floor, "three_buffers": three, "one_table": fused}, number=number, repeat=repeat
    )
    if dev.type == "cuda":
        torch.cuda.synchronize()
    res["prep"] = {k: v.summary() for k, v in prep.items()}
    profs["prep_three_buffers"] = profile(three, 300 if not quick else 2)
    profs["prep_one_table"] = profile(fused, 300 if not quick else 2)
    profs["prep_numpy_floor"] = profile(floor, 300 if not quick else 2)

    # -- launch with tables ready ------------------------------------------------------
    if dev.type == "cuda":
        torch.cuda.synchronize()
    jit = _runtime.jit_module("_copy_jit")
    s_t, d_t, z_t = s_buf.device(), d_buf.device(), z_buf.device()
    split = max(1, min(_runtime.multiprocessor_count(dev) * 12 // n, 256))

    def devptr_launch() -> None:
        batch_memcpy(s_buf, d_buf, z_buf, n)

    def bare_launch() -> None:
        jit._batch_memcpy_kernel[(n, split)](
            s_t, d_t, z_t, 1, 1, 1, split, CHUNK=4096, BYTE_CHUNK=1024, num_warps=4
        )

    launches: dict[str, Callable[[], object]] = {"batch_memcpy": devptr_launch, "bare_triton": bare_launch}
    if hasattr(K, "batch_memcpy_table"):
        t_dev = table.device()[:n]

        def table_launch() -> None:
            K.batch_memcpy_table(table, n)

        launches["batch_memcpy_table"] = table_launch
        del t_dev
    got = host_synced_interleaved(launches, number=20 if not quick else 1, repeat=repeat, dev=dev)
    res["launch"] = {k: v.summary() for k, v in got.items()}
    profs["batch_memcpy"] = profile(devptr_launch, 300 if not quick else 2)
    if dev.type == "cuda":
        torch.cuda.synchronize()

    # -- end to end: prepare, upload, launch ---------------------------------------------
    def e2e_three() -> None:
        three()
        batch_memcpy(s_buf, d_buf, z_buf, n)

    e2e: dict[str, Callable[[], object]] = {"three_buffers": e2e_three}
    if hasattr(K, "batch_memcpy_table"):

        def e2e_table() -> None:
            fused()
            K.batch_memcpy_table(table, n)

        e2e["one_table"] = e2e_table
    got = host_synced_interleaved(e2e, number=10 if not quick else 1, repeat=repeat, dev=dev)
    res["e2e_host"] = {k: v.summary() for k, v in got.items()}
    return res, profs


def state_rows(dev: torch.device, quick: bool) -> tuple[dict[str, Any], str]:
    """``copy_state_blocks`` host cost: 3 small Mamba layers (6 states) in 2 groups, tables
    built by the spec-decode adapter, 3 requests; the kernel launched directly."""
    from devptr.adapters.mamba_copy import get_conv_copy_spec, get_temporal_copy_spec
    from devptr.adapters.mamba_spec_decode import MambaSpecDecodeMetadata

    states = W.mamba_states(dev, quick=True, blocks=56, layers=3)
    names = list(states)
    groups = [names[:2], names[2:]]
    funcs = {n: (get_conv_copy_spec, get_temporal_copy_spec) for n in names}
    g = torch.Generator().manual_seed(3)
    tables = [torch.randperm(56, generator=g)[:48].reshape(6, 8).to(torch.int32).to(dev) for _ in groups]
    meta = MambaSpecDecodeMetadata.create(6, groups, funcs, dev, mamba_group_ids=[0, 1])
    meta.initialize_from_forward_context(groups, states, funcs, tables)
    cols = [torch.tensor(v, dtype=torch.int32, device=dev) for v in ([0, 1, 3], [5, 6, 3], [0, 2, 1])]

    def fn() -> None:
        copy_state_blocks(meta.state_base_addrs, meta.state_meta, meta.block_table_ptrs,
                          meta.block_table_stride_req, *cols, 3)

    t = host_synced(fn, number=50 if not quick else 1, repeat=15 if not quick else 2, dev=dev)
    return {"host": t.summary()}, profile(fn, 1000 if not quick else 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--label", default="after")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda") if torch.cuda.is_available() and not args.quick else torch.device("cpu")
    out: dict[str, Any] = {"label": args.label, "meta": H.meta(), "device": str(dev)}
    import devptr

    out["devptr_file"] = os.path.relpath(devptr.__file__)
    out["lamport"], prof_l = lamport_rows(dev, args.quick)
    out["memcpy"], profs = memcpy_rows(dev, args.quick)
    out["state_copy"], prof_s = state_rows(dev, args.quick)
    out["profiles"] = {"lamport_64KiB_fp32": prof_l, **profs, "copy_state_blocks": prof_s}
    path = Path(args.out) / f"host_{args.label}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    for r in out["lamport"]:
        print(args.label, "lamport", r["dtype"], r["bytes"], f"host {r['host']['median_ns'] / 1e3:.1f} us",
              f"events {r.get('eager_events', {}).get('median_ns', 0) / 1e3:.1f} us")
    for k, v in out["memcpy"]["prep"].items():
        print(args.label, "prep", k, f"{v['median_ns'] / 1e3:.1f} us")
    for k, v in out["memcpy"]["launch"].items():
        print(args.label, "launch", k, f"{v['median_ns'] / 1e3:.1f} us")
    for k, v in out["memcpy"]["e2e_host"].items():
        print(args.label, "e2e", k, f"{v['median_ns'] / 1e3:.1f} us")
    print(args.label, "copy_state_blocks", f"{out['state_copy']['host']['median_ns'] / 1e3:.1f} us")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
