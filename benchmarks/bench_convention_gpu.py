"""What the convention itself costs on a GPU, and copy engines against SM copies.

Two measurements, each side by side in one process, through ``benchmarks._harness``:

1. **Same kernel, different table** (the convention's own cost). The Mamba state-copy batch
   of ``kernels.md`` (72 x 48 KiB + 72 x 2 MiB) is copied by

   - vLLM 0.33.0's ``batch_memcpy_kernel``, its source taken unmodified from the wheel's
     ``vllm/v1/worker/mamba_utils.py`` at run time (``--vllm-file``; never committed), fed
     (a) the uint64 table built vLLM's way (numpy-alias writes into a pinned uint64 tensor,
     one H2D copy), (b) a devptr ``PtrBuffer`` device view in ``Encoding.U64`` and (c) in
     ``Encoding.I64``;
   - ``devptr.kernels.batch_memcpy`` fed (a), (b) and (c).

   Device time per call from CUDA-graph replays (the launch overhead removed), rounds
   interleaved over the variants; median and spread.

2. **Host transfers: copy engines against SM copies** (the EC connector's saves and loads).
   N blocks of one size (256 MiB per batch) between a device arena and pinned host memory,
   block ``perm[i]`` to slot ``i``:

   - ``cudaMemcpyAsync`` per block (copy engines; called through ``cupy.cuda.runtime``,
     the loop vLLM's CUDA ``swap_blocks`` runs in C++, here with Python's per-call cost);
   - ``cudaMemcpyBatchAsync`` (copy engines, one call; through ``cuda.bindings`` when that
     API is present);
   - torch ``copy_(non_blocking=True)`` per block;
   - devptr: one ``batch_memcpy`` launch on SMs reading the pinned host memory;
   - one contiguous ``copy_`` of the same bytes (the PCIe ceiling).

   CUDA events around one batch (eager: launch costs included), median and spread.

Run on a CUDA machine::

    PYTHONPATH=. python benchmarks/bench_convention_gpu.py --out DIR [--vllm-file PATH]

Writes ``convention_gpu.json`` and ``convention_gpu.md`` into DIR. ``--quick`` runs tiny
sizes on the CPU under the Triton interpreter (a smoke test; numbers mean nothing).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import sys
import tempfile
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
from benchmarks import _workloads as W  # noqa: E402
from devptr import Encoding, PtrBuffer, SizeBuffer  # noqa: E402
from devptr.kernels import batch_memcpy  # noqa: E402

KIB = W.KIB
MIB = W.MIB


# -- vLLM's kernel, from the wheel's source ------------------------------------------------
def load_vllm_kernels(path: Path, names: tuple[str, ...], module: str) -> Any:
    """A module holding vLLM's Triton functions ``names``, their source text copied unmodified
    from ``path`` (Triton needs a file to read the source from)."""
    src = path.read_text(encoding="utf-8")
    lines = src.splitlines()
    tree = ast.parse(src)
    parts = []
    for name in names:
        node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
        start = min(d.lineno for d in node.decorator_list) - 1
        parts.append("\n".join(lines[start : node.end_lineno]))
    text = "import triton\nimport triton.language as tl\n\n\n" + "\n\n\n".join(parts) + "\n"
    mod_path = Path(tempfile.mkdtemp(prefix="vllm_kernel_")) / f"{module}.py"
    mod_path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(module, mod_path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_vllm_batch_memcpy(path: Path) -> Any:
    """vLLM's ``batch_memcpy_kernel``, from the wheel's ``mamba_utils.py`` at ``path``."""
    return load_vllm_kernels(path, ("batch_memcpy_kernel",), "vllm_batch_memcpy_kernel").batch_memcpy_kernel


def find_vllm_file(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    from tools.wheel_sources import vllm_source_root

    return vllm_source_root() / "vllm" / "v1" / "worker" / "mamba_utils.py"


# -- part 1: same kernel, different table ---------------------------------------------------
def vllm_way_tables(
    srcs: list[torch.Tensor], dsts: list[torch.Tensor], sizes: list[int], device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """vLLM 0.33's ``MambaCopyBuffers``: pinned uint64 tensors written through numpy views
    (``collect_mamba_copy_meta``), then one H2D copy each."""
    n = len(sizes)
    pin = device.type == "cuda"
    host_src = torch.zeros(n, dtype=torch.uint64, pin_memory=pin)
    host_dst = torch.zeros(n, dtype=torch.uint64, pin_memory=pin)
    host_sizes = torch.zeros(n, dtype=torch.int32, pin_memory=pin)
    s_np, d_np, z_np = host_src.numpy(), host_dst.numpy(), host_sizes.numpy()
    for i in range(n):
        s_np[i] = srcs[i].data_ptr()  # devptr: ignore[DP006] -- vLLM's way, the baseline
        d_np[i] = dsts[i].data_ptr()  # devptr: ignore[DP006] -- vLLM's way, the baseline
        z_np[i] = sizes[i]
    return host_src.to(device), host_dst.to(device), host_sizes.to(device)


def devptr_tables(
    srcs: list[torch.Tensor], dsts: list[torch.Tensor], sizes: list[int], device: torch.device
) -> tuple[PtrBuffer[int], PtrBuffer[int], SizeBuffer]:
    n = len(sizes)
    src: PtrBuffer[int] = PtrBuffer(n, device=device)
    dst: PtrBuffer[int] = PtrBuffer(n, device=device)
    nb = SizeBuffer(n, device=device)
    src.fill(0, srcs)
    dst.fill(0, dsts)
    nb.fill(0, sizes)
    nb.to_device(non_blocking=False)
    return src, dst, nb


def interleaved_graphs(
    fns: dict[str, Callable[[], object]], *, number: int, rounds: int
) -> dict[str, H.Timing]:
    """Each function captured into its own CUDA graph (``number`` calls); rounds alternate
    over the graphs, one replay per function per round."""
    graphs = {k: H.capture_graph(fn, number=number) for k, fn in fns.items()}
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for g in graphs.values():
        g.replay()
    torch.cuda.synchronize()
    for _ in range(rounds):
        for k, g in graphs.items():
            t = H.time_replays(g, number=number, repeat=1)
            samples[k].extend(t.samples_ns)
    return {k: H.Timing(tuple(v), "cuda-graph", number) for k, v in samples.items()}


def same_kernel(vllm_kernel: Any, device: torch.device, quick: bool, rounds: int) -> dict[str, Any]:
    srcs, dsts, sizes = W.mamba_flat_batch(device, quick)
    n = len(sizes)
    v_src, v_dst, v_sizes = vllm_way_tables(srcs, dsts, sizes, device)
    d_src, d_dst, d_sizes = devptr_tables(srcs, dsts, sizes, device)
    u_src, u_dst = (
        d_src.to_device(encoding=Encoding.U64, non_blocking=False),
        d_dst.to_device(encoding=Encoding.U64, non_blocking=False),
    )
    i_src, i_dst = d_src.device(Encoding.I64), d_dst.device(Encoding.I64)
    sizes_i32 = v_sizes
    tables = {
        "vLLM-built uint64": (v_src, v_dst),
        "devptr view, U64": (u_src, u_dst),
        "devptr view, I64": (i_src, i_dst),
    }
    # the tables hold the same bits
    same = all(
        torch.equal(a.view(torch.int64).cpu(), v_src.view(torch.int64).cpu()) for a, _ in tables.values()
    ) and all(
        torch.equal(b.view(torch.int64).cpu(), v_dst.view(torch.int64).cpu()) for _, b in tables.values()
    )

    def vllm_call(s: torch.Tensor, d: torch.Tensor) -> Callable[[], object]:
        return lambda: vllm_kernel[(n,)](s, d, sizes_i32, BLOCK_SIZE=1024)

    def devptr_call(s: torch.Tensor, d: torch.Tensor) -> Callable[[], object]:
        return lambda: batch_memcpy(s, d, d_sizes, max_size=max(sizes))

    fns: dict[str, Callable[[], object]] = {}
    for label, (s, d) in tables.items():
        fns[f"vLLM batch_memcpy_kernel | {label}"] = vllm_call(s, d)
        fns[f"devptr batch_memcpy | {label}"] = devptr_call(s, d)
    correct: dict[str, bool] = {}
    for k, fn in fns.items():
        for t in dsts:
            t.zero_()
        fn()
        torch.cuda.synchronize()
        correct[k] = all(torch.equal(a, b) for a, b in zip(srcs, dsts, strict=True))
    timings = interleaved_graphs(fns, number=5, rounds=rounds)
    total = sum(sizes)
    rows = []
    for k, t in timings.items():
        kernel, table = k.split(" | ")
        rows.append({"kernel": kernel, "table": table, "correct": correct[k], "bytes": total, **t.summary()})
    return {"segments": n, "bytes": total, "same_bits": same, "rows": rows}


# -- part 2: copy engines against SM copies ---------------------------------------------------
def _cupy_memcpy() -> tuple[Callable[[int, int, int, int, int], None], int, int] | None:
    try:
        import cupy
    except ImportError:
        return None
    rt = cupy.cuda.runtime
    return rt.memcpyAsync, rt.memcpyDeviceToHost, rt.memcpyHostToDevice


def _batch_api() -> Callable[[list[int], list[int], list[int], int], None] | None:
    """``cudaMemcpyBatchAsync`` through cuda.bindings (12.8+ signature with failIdx, or 13.x)."""
    try:
        from cuda.bindings import runtime as cr
    except ImportError:
        return None
    fn = getattr(cr, "cudaMemcpyBatchAsync", None)
    if fn is None:
        return None
    attr = cr.cudaMemcpyAttributes()
    attr.srcAccessOrder = cr.cudaMemcpySrcAccessOrder.cudaMemcpySrcAccessOrderStream

    def call(dsts: list[int], srcs: list[int], sizes: list[int], stream: int) -> None:
        res = fn(dsts, srcs, sizes, len(sizes), [attr], [0], 1, stream)
        err = res[0] if isinstance(res, tuple) else res
        if int(err) != 0:
            raise RuntimeError(f"cudaMemcpyBatchAsync: {err}")

    return call


def transfers(device: torch.device, quick: bool, repeat: int) -> dict[str, Any]:
    total = 8 * MIB if quick else 256 * MIB
    block_sizes = [64 * KIB, 1 * MIB] if quick else [64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB]
    arena = torch.randint(0, 255, (total,), dtype=torch.uint8, device=device)
    host = torch.empty(total, dtype=torch.uint8, pin_memory=True)
    cupy_api = _cupy_memcpy()
    batch_api = _batch_api()
    side = torch.cuda.Stream(device)  # cudaMemcpyBatchAsync refuses the legacy default stream
    with torch.cuda.stream(side):
        return _transfers(device, quick, repeat, total, block_sizes, arena, host, cupy_api, batch_api)


def _transfers(
    device: torch.device,
    quick: bool,
    repeat: int,
    total: int,
    block_sizes: list[int],
    arena: torch.Tensor,
    host: torch.Tensor,
    cupy_api: Any,
    batch_api: Any,
) -> dict[str, Any]:
    stream = torch.cuda.current_stream().cuda_stream
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for bs in block_sizes:
        nblk = total // bs
        perm = np.random.default_rng(0).permutation(nblk)
        dev_blocks = [arena[int(p) * bs : (int(p) + 1) * bs] for p in perm]
        host_blocks = [host[i * bs : (i + 1) * bs] for i in range(nblk)]
        for direction in ("D2H", "H2D"):
            srcs, dsts = (dev_blocks, host_blocks) if direction == "D2H" else (host_blocks, dev_blocks)
            src_addrs = [t.data_ptr() for t in srcs]
            dst_addrs = [t.data_ptr() for t in dsts]
            sb: PtrBuffer[int] = PtrBuffer(nblk, device=device)
            db: PtrBuffer[int] = PtrBuffer(nblk, device=device)
            nb = SizeBuffer(nblk, device=device)
            sb.fill(0, srcs)
            db.fill(0, dsts)
            nb.fill(0, [bs] * nblk)
            nb.to_device(non_blocking=False)
            sb.to_device(non_blocking=False)
            db.to_device(non_blocking=False)

            fns: dict[str, Callable[[], object]] = {}
            if cupy_api is not None:
                memcpy, d2h, h2d = cupy_api
                kind = d2h if direction == "D2H" else h2d

                def per_block(
                    memcpy: Any = memcpy,
                    kind: int = kind,
                    s: list[int] = src_addrs,
                    d: list[int] = dst_addrs,
                    n: int = bs,
                ) -> None:
                    for a, b in zip(d, s, strict=True):
                        memcpy(a, b, n, kind, stream)

                fns["cudaMemcpyAsync per block (copy engine)"] = per_block
            if batch_api is not None:
                sizes_list = [bs] * nblk
                fns["cudaMemcpyBatchAsync (copy engine)"] = lambda s=src_addrs, d=dst_addrs, z=sizes_list: (
                    batch_api(d, s, z, stream)
                )

            def torch_loop(s: list[torch.Tensor] = srcs, d: list[torch.Tensor] = dsts) -> None:
                for a, b in zip(d, s, strict=True):
                    a.copy_(b, non_blocking=True)

            fns["torch copy_ per block (copy engine)"] = torch_loop
            fns["devptr batch_memcpy (SMs)"] = lambda sb=sb, db=db, nb=nb, m=bs: batch_memcpy(
                sb.device(), db.device(), nb, max_size=m
            )
            if direction == "D2H":
                fns["one contiguous copy_ (ceiling)"] = lambda: host.copy_(arena, non_blocking=True)
            else:
                fns["one contiguous copy_ (ceiling)"] = lambda: arena.copy_(host, non_blocking=True)
            # correctness of each scatter path, once
            ok: dict[str, bool | str] = {}
            ref = arena.cpu()
            order = torch.from_numpy(perm)
            permuted = ref.view(-1, bs)[order].reshape(-1)  # host slot i <- arena block perm[i]
            for name, fn in fns.items():
                if "contiguous" in name:
                    ok[name] = True
                    continue
                try:
                    torch.cuda.synchronize()
                    if direction == "D2H":
                        host.zero_()
                        fn()
                        torch.cuda.synchronize()
                        bad = int((host != permuted).sum())
                    else:
                        host.copy_(permuted)
                        arena.zero_()
                        torch.cuda.synchronize()
                        fn()
                        torch.cuda.synchronize()
                        bad = int((arena.cpu() != ref).sum())
                        arena.copy_(ref.to(device))
                        torch.cuda.synchronize()
                    ok[name] = True if bad == 0 else f"{bad} wrong bytes"
                except Exception as exc:  # an API that does not work here is reported, not fatal
                    ok[name] = f"{type(exc).__name__}: {exc}"[:160]
            live = {k: v for k, v in fns.items() if ok[k] is True}
            for k, v in ok.items():
                if v is not True:
                    notes.append(f"{direction} {bs // KIB} KiB, {k}: {v}")
            times = {k: H.cuda_events(fn, number=1, repeat=repeat, warmup=2) for k, fn in live.items()}
            for k, t in times.items():
                rows.append(
                    {
                        "direction": direction,
                        "block": bs,
                        "blocks": nblk,
                        "path": k,
                        "GBps": total / t.median_ns,
                        "GBps_p25": total / t.p75_ns,
                        "GBps_p75": total / t.p25_ns,
                        **t.summary(),
                    }
                )
    return {"total": total, "rows": rows, "notes": notes}


# -- report -------------------------------------------------------------------------------
def markdown(result: dict[str, Any]) -> str:
    out = [
        "# The convention's own cost on a GPU; copy engines against SM copies",
        "",
        H.header(result["meta"]["command"]).rstrip(),
        f"- vLLM kernel source: `{result['vllm_file_name']}` of the vLLM 0.33.0 wheel "
        "(read at run time, not committed)",
        "",
        "## Same kernel, different table",
        "",
        f"{result['same']['segments']} segments, {result['same']['bytes'] / MIB:.1f} MiB per call "
        "(72 x 48 KiB + 72 x 2 MiB, the Mamba batch of kernels.md); device time per call from CUDA-graph "
        "replays (5 calls per graph, rounds interleaved); tables bit-identical: "
        f"{result['same']['same_bits']}.",
        "",
        "| kernel | table | median us | IQR us | min us | vs vLLM-built table, same kernel | correct |",
        "|---|---|---|---|---|---|---|",
    ]
    base = {r["kernel"]: r["median_ns"] for r in result["same"]["rows"] if r["table"] == "vLLM-built uint64"}
    for r in result["same"]["rows"]:
        ratio = r["median_ns"] / base[r["kernel"]]
        out.append(
            f"| {r['kernel']} | {r['table']} | {r['median_ns'] / 1e3:.1f} | "
            f"{r['p25_ns'] / 1e3:.1f}-{r['p75_ns'] / 1e3:.1f} | {r['min_ns'] / 1e3:.1f} | "
            f"{ratio:.2f}x | {r['correct']} |"
        )
    out += [
        "",
        "## Host transfers: copy engines against SM copies",
        "",
        f"{result['transfers']['total'] // MIB} MiB per batch, one descriptor per block (block `perm[i]` to "
        "slot `i`), pinned host memory; CUDA events around one eager batch (launch costs included); "
        "GB/s = payload / median time, spread from the IQR of the times.",
        "",
        "| direction | block | blocks | path | GB/s (median) | GB/s IQR | median ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["transfers"]["rows"]:
        out.append(
            f"| {r['direction']} | {r['block'] // KIB} KiB | {r['blocks']} | {r['path']} | {r['GBps']:.1f} | "
            f"{r['GBps_p25']:.1f}-{r['GBps_p75']:.1f} | {r['median_ns'] / 1e6:.2f} |"
        )
    if result["transfers"]["notes"]:
        out += ["", "Paths that did not run:", ""] + [f"- {n}" for n in result["transfers"]["notes"]]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    parser.add_argument("--vllm-file", default=None, help="vllm/v1/worker/mamba_utils.py of the 0.33.0 wheel")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_convention_gpu: needs a CUDA GPU; nothing measured")
        return 0
    device = torch.device("cuda", 0)
    vfile = find_vllm_file(args.vllm_file)
    kernel = load_vllm_batch_memcpy(vfile)
    result: dict[str, Any] = {
        "meta": H.meta(),
        "vllm_file_name": "vllm/v1/worker/mamba_utils.py",
        "same": same_kernel(kernel, device, args.quick, args.rounds),
        "transfers": transfers(device, args.quick, args.repeat),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "convention_gpu.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    text = markdown(result)
    (args.out / "convention_gpu.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
