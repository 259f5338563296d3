"""Byte segments of odd sizes and mixed alignment: ``batch_memcpy`` against the alternatives.

Cases (one table set per case, sources packed in one arena, destinations in another):

- ``4093B_x4096_random``: 4,096 segments of 4,093 bytes, every source and destination at
  its own random offset modulo 16 (the issue-25 target: >= 0.85x a contiguous copy);
- the aligned cases that must not slow down: the same segments packed (``coaligned``),
  destinations shifted by 8 / 4 / 5 bytes, 4 KiB x 65,536, 2 MiB x 128 and the Mamba batch
  (72 x 48 KiB + 72 x 2 MiB);
- a segment-size sweep, 256 MiB per batch, 1 KiB to 4 MiB (the plot).

Kernels compared in the same run, each checked bit for bit against the source bytes (the
destination arena poisoned first) before it is timed:

- ``devptr``: ``devptr.kernels.batch_memcpy`` (this tree; the launcher's own choices);
- ``devptr before``: the segment kernel of another tree's ``devptr/kernels/_copy_jit.py``
  (``--before-jit``, e.g. main's; launched with the same grid and step);
- ``vLLM batch_memcpy_kernel``: vLLM 0.33.0's generic kernel, its source read at run time
  from the wheel (``--vllm-file`` or :func:`tools.wheel_sources.vllm_source_root`);
- ``contiguous``: one ``copy_`` of the same number of bytes.

Timing: ``triton.testing.do_bench`` (L2 flushed before each call), variants taking turns
over ``--rounds`` rounds, median of all samples. Bytes counted: read + write.

    python benchmarks/bench_copy_align.py --out DIR [--before-jit PATH] [--vllm-file PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _harness as H
from benchmarks.bench_convention_gpu import find_vllm_file, load_vllm_batch_memcpy
from devptr import DevicePtr, PtrBuffer, addresses
from devptr.kernels import SizeBuffer, batch_memcpy
from devptr.kernels import _memcpy as M

KIB = 1024
MIB = 1024 * KIB


def load_before(path: Path) -> Any:
    """``_batch_memcpy_kernel`` of another tree's ``_copy_jit.py`` (imported under its own name)."""
    spec = importlib.util.spec_from_file_location("devptr_before_copy_jit", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod._batch_memcpy_kernel


class Batch:
    """One case's arenas and tables (devptr buffers and vLLM-style int64 device tensors)."""

    def __init__(
        self, device: torch.device, sizes: list[int], src_offs: list[int], dst_offs: list[int]
    ) -> None:
        self.sizes = sizes
        self.src_offs = src_offs
        self.dst_offs = dst_offs
        n = len(sizes)
        self.src_mem = torch.randint(
            0,
            256,
            (max(s + z for s, z in zip(src_offs, sizes, strict=True)) + 64,),
            dtype=torch.uint8,
            device=device,
        )
        self.dst_mem = torch.empty(
            max(d + z for d, z in zip(dst_offs, sizes, strict=True)) + 64, dtype=torch.uint8, device=device
        )
        self.src: PtrBuffer[DevicePtr] = PtrBuffer(n, device=device)
        self.dst: PtrBuffer[DevicePtr] = PtrBuffer(n, device=device)
        self.size_buf = SizeBuffer(n, device=device)
        self.src.fill(0, addresses(DevicePtr.of(self.src_mem), np.array(src_offs, dtype=np.uint64), 1))
        self.dst.fill(0, addresses(DevicePtr.of(self.dst_mem), np.array(dst_offs, dtype=np.uint64), 1))
        self.size_buf.fill(0, sizes)
        for t in (self.src, self.dst, self.size_buf):
            t.to_device(non_blocking=False)
        self.max_size = max(sizes)
        self.chunk = max(M.MIN_CHUNK, min(M.CHUNK, 1 << max(self.max_size - 1, 1).bit_length()))
        self.split = M.split_factor(n, device, self.max_size, self.chunk)
        self.total = sum(sizes)
        # the expected destination: a gather of the source bytes, built once
        self.idx_d = _gather_index(dst_offs, sizes, device)
        self.want = self.src_mem[_gather_index(src_offs, sizes, device)]

    def correct(self, fn: Callable[[], object]) -> bool:
        self.dst_mem.fill_(0xA5)
        torch.cuda.synchronize()
        fn()
        torch.cuda.synchronize()
        return bool(torch.equal(self.dst_mem[self.idx_d], self.want))


def _gather_index(offs: list[int], sizes: list[int], device: torch.device) -> torch.Tensor:
    """The byte positions of every segment, in order (built on the device)."""
    z = torch.tensor(sizes, dtype=torch.int64, device=device)
    o = torch.tensor(offs, dtype=torch.int64, device=device)
    starts = torch.cumsum(z, 0) - z
    within = torch.arange(int(z.sum()), device=device) - torch.repeat_interleave(starts, z)
    return torch.repeat_interleave(o, z) + within


def packed(sizes: list[int], shift: int = 0, gap: int = 0) -> tuple[list[int], list[int]]:
    s, offs = 0, []
    for z in sizes:
        offs.append(s)
        s += z + gap
    return offs, [o + shift for o in offs]


def random_offsets(sizes: list[int], seed: int) -> tuple[list[int], list[int]]:
    """Each segment's source and destination at independent random offsets modulo 16."""
    rng = np.random.default_rng(seed)
    src, dst, s, d = [], [], 0, 0
    for z in sizes:
        s = (s + 15) // 16 * 16 + int(rng.integers(0, 16))
        d = (d + 15) // 16 * 16 + int(rng.integers(0, 16))
        src.append(s)
        dst.append(d)
        s += z
        d += z
    return src, dst


def parse_variant(text: str) -> dict[str, int]:
    """``"num_warps=2,chunk=2048"`` -> launch knobs of ``batch_memcpy`` (ints)."""
    knobs: dict[str, int] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        if key not in ("num_warps", "chunk", "split"):
            raise SystemExit(f"unknown knob {key!r} in --variants (num_warps, chunk, split)")
        knobs[key] = int(value)
    return knobs


def kernels(
    b: Batch, before: Any, vllm: Any, variants: tuple[str, ...] = ()
) -> dict[str, Callable[[], object]]:
    s, d, z = b.src.device(), b.dst.device(), b.size_buf.device()
    grid = (len(b.sizes), b.split)
    fns: dict[str, Callable[[], object]] = {
        "devptr": lambda: batch_memcpy(b.src, b.dst, b.size_buf, max_size=b.max_size),
    }
    for v in variants:
        kw = parse_variant(v)
        fns[f"devptr {v}"] = lambda kw=kw: batch_memcpy(  # type: ignore[misc]
            b.src, b.dst, b.size_buf, max_size=b.max_size, **kw
        )
    if before is not None:
        fns["devptr before"] = lambda: before[grid](
            s, d, z, 1, 1, 1, b.split, CHUNK=b.chunk, BYTE_CHUNK=M.BYTE_CHUNK
        )
    if vllm is not None:
        si, di, zi = s.view(torch.int64), d.view(torch.int64), z.view(torch.int64)
        fns["vLLM batch_memcpy_kernel"] = lambda: vllm[(len(b.sizes),)](si, di, zi, BLOCK_SIZE=1024)
    return fns


def time_batch(
    name: str, b: Batch, before: Any, vllm: Any, rounds: int, rep_ms: int, variants: tuple[str, ...] = ()
) -> dict[str, Any]:
    fns = kernels(b, before, vllm, variants)
    ok = {k: b.correct(f) for k, f in fns.items()}
    a = torch.randint(0, 256, (b.total,), dtype=torch.uint8, device=b.src_mem.device)
    c = torch.empty_like(a)
    fns["contiguous"] = lambda: c.copy_(a)
    ok["contiguous"] = True
    samples: dict[str, list[float]] = {k: [] for k in fns if ok[k]}
    for _ in range(rounds):
        for k in samples:
            samples[k] += list(H.triton_bench(fns[k], rep_ms=rep_ms).samples_ns)
    med = {k: statistics.median(v) * 1e-3 for k, v in samples.items()}
    row: dict[str, Any] = {
        "case": name,
        "segments": len(b.sizes),
        "bytes": b.total,
        "split": b.split,
        "chunk": b.chunk,
        "correct": ok,
        "us": med,
        "GBps": {k: 2 * b.total / us / 1e3 for k, us in med.items()},
    }
    row["devptr_vs_contiguous"] = med["contiguous"] / med["devptr"]
    if "devptr before" in med:
        row["devptr_vs_before"] = med["devptr before"] / med["devptr"]
    return row


Layout = tuple[list[int], list[int], list[int]]


def cases() -> list[tuple[str, Callable[[], Layout]]]:
    odd = [4093] * 4096
    mamba = [48 * KIB] * 72 + [2 * MIB] * 72
    out: list[tuple[str, Callable[[], Layout]]] = [
        ("4093B_x4096_random", lambda: (odd, *random_offsets(odd, 0))),
    ]
    for label, shift in (("coaligned", 0), ("agree8", 8), ("agree4", 4), ("shift5", 5)):
        out.append((f"4093B_x4096_{label}", lambda shift=shift: (odd, *packed(odd, shift))))  # type: ignore[misc]
    for name, sizes in (
        ("4KiB_x65536", [4 * KIB] * 65536),
        ("2MiB_x128", [2 * MIB] * 128),
        ("mamba_mixed", mamba),
    ):
        out.append((name, lambda sizes=sizes: (sizes, *packed(sizes))))  # type: ignore[misc]
    return out


def sweep() -> list[tuple[str, Callable[[], Layout]]]:
    out: list[tuple[str, Callable[[], Layout]]] = []
    for z in (1 * KIB, 4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB, 1 * MIB, 4 * MIB):
        sizes = [z] * (256 * MIB // z)
        out.append((f"sweep_{z}", lambda sizes=sizes: (sizes, *packed(sizes))))  # type: ignore[misc]
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sw = [r for r in rows if r["case"].startswith("sweep_")]
    xs = [int(r["case"].split("_")[1]) for r in sw]
    fig, ax = plt.subplots(figsize=(7, 4))
    for k in sw[0]["GBps"]:
        ax.plot(xs, [r["GBps"].get(k, float("nan")) for r in sw], marker="o", label=k)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("segment size (bytes), 256 MiB per batch")
    ax.set_ylabel("GB/s (read + write)")
    ax.set_title("batch copies on one H200")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def markdown(res: dict[str, Any]) -> str:
    lines = [
        f"- command: `{res['meta']['command']}`",
        f"- date: {res['meta']['date']}",
        f"- machine: {res['meta']['machine']}",
        "",
    ]
    extra = [k for k in res["rows"][0]["us"] if k.startswith("devptr ") and k != "devptr before"]
    names = ["devptr", *extra, "devptr before", "vLLM batch_memcpy_kernel", "contiguous"]
    lines.append(
        "| case | "
        + " | ".join(f"{n} us" for n in names)
        + " | devptr / contiguous | devptr vs before | all bit-identical |"
    )
    lines.append("|---|" + "---:|" * len(names) + "---:|---:|---|")
    for r in res["rows"]:
        us = [f"{r['us'][n]:.1f}" if n in r["us"] else "-" for n in names]
        lines.append(
            f"| {r['case']} | " + " | ".join(us) + f" | {r['devptr_vs_contiguous']:.3f}x | "
            f"{r.get('devptr_vs_before', float('nan')):.3f}x | {all(r['correct'].values())} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--before-jit", type=Path, default=None)
    ap.add_argument("--vllm-file", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=int, default=30)
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument(
        "--variants",
        default="",
        help="extra devptr launches in the same run, ';'-separated knob sets, e.g. 'num_warps=2;num_warps=8'",
    )
    args = ap.parse_args(argv)
    variants = tuple(v for v in args.variants.split(";") if v)
    for v in variants:
        parse_variant(v)
    device = torch.device("cuda")
    before = load_before(args.before_jit) if args.before_jit else None
    vllm = load_vllm_batch_memcpy(find_vllm_file(args.vllm_file))
    res: dict[str, Any] = {"meta": {**H.meta(), "machine": H.machine_line()}, "rows": []}
    todo = cases() + ([] if args.no_sweep else sweep())
    for name, layout in todo:
        b = Batch(device, *layout())
        res["rows"].append(
            time_batch(
                name, b, before, vllm if b.max_size <= 4 * MIB else None, args.rounds, args.rep_ms, variants
            )
        )
        r = res["rows"][-1]
        print(name, {k: round(v, 1) for k, v in r["us"].items()}, r["correct"], flush=True)
        del b
        torch.cuda.empty_cache()
    text = markdown(res)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "copy_align.json").write_text(json.dumps(res, indent=1))
        (args.out / "copy_align.md").write_text(text)
        if not args.no_sweep:
            plot(res["rows"], args.out / "copy_bandwidth.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
