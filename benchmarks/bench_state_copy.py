"""Mamba align pre-copy: vLLM 0.33.0's fused kernel against ``copy_state_blocks`` (H200).

One case: ``--layers`` layers of one Mamba group, each with a state-first conv state of
``--conv-kib`` KiB per block and a temporal state of ``--temporal-mib`` MiB per block;
``R`` requests each copy every state from its source block column to its destination
column (token bias 0: the whole conv window and the whole temporal block), the copy of
vLLM's V2 runner before every forward pass that crosses a block boundary
(``MambaSpecDecodeGPUContext.run_fused_precopy``).

Compared in the same run, on the same tensors and block tables:

- ``precopy_mamba_align_fused_kernel`` of vLLM 0.33.0, its source text read at run time from
  the wheel's ``vllm/v1/worker/mamba_utils.py`` (``--vllm-file``, or
  :func:`tools.wheel_sources.vllm_source_root`), launched as ``run_fused_precopy`` launches it
  (grid ``(R, states, 16)``, ``COPY_BLOCK_SIZE=1024``) on vLLM-built int64 tables;
- ``devptr.kernels.copy_state_blocks_planned`` on a ``state_copy_plan`` of the batch's
  tables (one record per busy program);
- ``devptr.kernels.copy_state_blocks`` with the launcher's defaults for this batch
  (:func:`devptr.kernels.state_copy_config`), and (unless ``--no-sweep``) a few other knobs
  of both kernels (tiles, step bytes, warps, step order);
- one ``copy_`` of the same number of bytes between two contiguous buffers (the ceiling for
  this byte count, launch ramp included).

Before timing, every kernel's destination blocks are poisoned, the kernel runs once, and
the blocks are compared bit for bit with a torch reference (and so with each other).
Timing: ``triton.testing.do_bench`` (the L2 cache is flushed before each call), the
variants taking turns over ``--rounds`` rounds; median of all samples.

    python benchmarks/bench_state_copy.py --out DIR [--quick] [--no-sweep]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import _harness as H
from benchmarks.bench_convention_gpu import find_vllm_file, load_vllm_kernels
from devptr import DevicePtr, PtrBuffer, PtrTable
from devptr.kernels import (
    STATE_META_COLUMNS,
    StateCopyPlan,
    copy_state_blocks,
    copy_state_blocks_planned,
    state_copy_config,
    state_copy_plan,
)
from devptr.kernels._state_copy import PLAN_NUM_WARPS, STATE_CHUNK

KIB = 1024
MIB = 1024 * KIB
VLLM_FUNCS = ("_memcpy_u64_tiled", "_copy_mamba_state_block", "precopy_mamba_align_fused_kernel")
VLLM_TILES = 16  # vLLM 0.33.0's _TEMPORAL_TILES
VLLM_COPY_BLOCK = 1024  # run_fused_precopy's COPY_BLOCK_SIZE


def load_vllm_precopy(path: Path) -> Any:
    """vLLM's fused pre-copy kernel and the device functions it calls, from ``path``."""
    return load_vllm_kernels(path, VLLM_FUNCS, "vllm_precopy_kernel").precopy_mamba_align_fused_kernel


class Model:
    """The layers' state tensors, one block table, and both sides' metadata tables."""

    def __init__(
        self, device: torch.device, layers: int, conv_kib: int, temporal_mib: int, blocks: int, max_reqs: int
    ) -> None:
        self.device = device
        width = 3
        dim = conv_kib * KIB // (width * 2)  # bf16
        t_elems = temporal_mib * MIB // 2
        g = torch.Generator(device=device).manual_seed(0)
        self.states: list[torch.Tensor] = []
        self.kinds: list[str] = []
        for _ in range(layers):
            conv = torch.randint(
                -30000, 30000, (blocks, width, dim), device=device, generator=g, dtype=torch.int16
            )
            temporal = torch.randint(
                -30000,
                30000,
                (blocks, t_elems // 16384, 16384),
                device=device,
                generator=g,
                dtype=torch.int16,
            )
            self.states += [conv.view(torch.bfloat16), temporal.view(torch.bfloat16)]
            self.kinds += ["conv", "temporal"]
        self.copy_bytes = [s[0].numel() * s.element_size() for s in self.states]
        self.max_reqs = max_reqs
        self.max_blocks = 4  # block columns per request: every request has its own blocks
        perm = torch.randperm(blocks, generator=torch.Generator().manual_seed(1))
        need = self.max_reqs * self.max_blocks
        if blocks < need:
            raise ValueError(f"{blocks} blocks for {need} distinct block ids")
        ids = perm[:need]
        self.block_table = ids.to(torch.int32).reshape(self.max_reqs, self.max_blocks).to(device)
        n = len(self.states)
        # vLLM-built tables: int64 device tensors written element by element, as vLLM does
        i64 = dict(dtype=torch.int64, device=device)
        self.v_bases = torch.tensor([s.data_ptr() for s in self.states], **i64)
        self.v_strides = torch.tensor([s.stride(0) * s.element_size() for s in self.states], **i64)
        self.v_elem = torch.tensor([s.element_size() for s in self.states], **i64)
        self.v_inner = torch.tensor(
            [
                s.stride(1) if k == "conv" else s[0].numel()
                for s, k in zip(self.states, self.kinds, strict=True)
            ],
            **i64,
        )
        self.v_width = torch.tensor(
            [s.size(1) if k == "conv" else 0 for s, k in zip(self.states, self.kinds, strict=True)], **i64
        )
        self.v_group = torch.zeros(n, **i64)
        self.v_rows = torch.zeros(n, **i64)
        self.v_row_stride = torch.zeros(n, **i64)
        self.v_tables = torch.tensor([self.block_table.data_ptr()], **i64)
        # devptr tables (host-only on the CPU, where the interpreter reads them)
        dev = device if device.type != "cpu" else None
        self.bases: PtrBuffer[DevicePtr] = PtrBuffer(n, device=dev)
        self.bases.fill(0, [DevicePtr.of(s) for s in self.states])
        self.meta = PtrTable(n, STATE_META_COLUMNS, device=dev)
        for k, (s, kind) in enumerate(zip(self.states, self.kinds, strict=True)):
            es = s.element_size()
            conv = kind == "conv"
            self.meta[k] = {
                "block_stride": s.stride(0) * es,
                "conv_width": s.size(1) if conv else 0,
                "token_bytes": s.stride(1) * es if conv else 0,
                "copy_bytes": s[0].numel() * es,
                "rows": 1,
                "row_stride": 0,
                "group": 0,
            }
        self.tables: PtrBuffer[DevicePtr] = PtrBuffer(1, device=dev)
        self.tables.fill(0, [DevicePtr.of(self.block_table)])
        if dev is not None:
            for t in (self.bases, self.meta, self.tables):
                t.to_device()
        self.plans: dict[int, StateCopyPlan] = {}
        i32 = dict(dtype=torch.int32, device=device)
        self.src_cols = torch.zeros(self.max_reqs, **i32)
        self.dst_cols = torch.ones(self.max_reqs, **i32)
        self.bias = torch.zeros(self.max_reqs, **i32)
        self.idx = torch.arange(self.max_reqs, **i32)

    def bytes_moved(self, reqs: int) -> int:
        return reqs * sum(self.copy_bytes)

    def dst_blocks(self, reqs: int) -> list[int]:
        return [int(b) for b in self.block_table[:reqs, 1].tolist()]

    def src_blocks(self, reqs: int) -> list[int]:
        return [int(b) for b in self.block_table[:reqs, 0].tolist()]

    def poison(self, reqs: int) -> None:
        d = torch.tensor(self.dst_blocks(reqs), device=self.device)
        for s in self.states:
            s.view(torch.int16)[d] = 0x5A5A

    def snapshot(self, reqs: int) -> list[torch.Tensor]:
        d = torch.tensor(self.dst_blocks(reqs), device=self.device)
        return [s.view(torch.int16)[d].clone() for s in self.states]

    def reference(self, reqs: int) -> list[torch.Tensor]:
        sblk = torch.tensor(self.src_blocks(reqs), device=self.device)
        return [s.view(torch.int16)[sblk].clone() for s in self.states]


def vllm_call(kernel: Any, m: Model, reqs: int) -> Callable[[], object]:
    grid = (reqs, len(m.states), VLLM_TILES)

    def run() -> object:
        return kernel[grid](
            m.dst_cols,
            m.src_cols,
            m.bias,
            m.v_tables,
            m.block_table.stride(0),
            m.v_bases,
            m.v_strides,
            m.v_elem,
            m.v_inner,
            m.v_width,
            m.v_group,
            m.v_rows,
            m.v_row_stride,
            m.idx,
            reqs,
            COPY_BLOCK_SIZE=VLLM_COPY_BLOCK,
            CONV_STATE_DIM_FIRST=False,
            HAS_IDX_MAPPING=True,
            TEMPORAL_TILES=VLLM_TILES,
        )

    return run


def devptr_call(m: Model, reqs: int, **kw: Any) -> Callable[[], object]:
    def run() -> object:
        copy_state_blocks(
            m.bases,
            m.meta,
            m.tables,
            m.block_table.stride(0),
            m.src_cols,
            m.dst_cols,
            m.bias,
            reqs,
            idx_mapping=m.idx,
            skip_same_block=True,
            **kw,
        )
        return None

    return run


def planned_call(
    m: Model, reqs: int, chunk: int = STATE_CHUNK, num_warps: int = PLAN_NUM_WARPS, **kw: Any
) -> Callable[[], object]:
    if chunk not in m.plans:
        m.plans[chunk] = state_copy_plan(m.bases, m.meta, m.tables, chunk=chunk)
    plan = m.plans[chunk]

    def run() -> object:
        copy_state_blocks_planned(
            plan,
            m.block_table.stride(0),
            m.src_cols,
            m.dst_cols,
            m.bias,
            reqs,
            idx_mapping=m.idx,
            skip_same_block=True,
            num_warps=num_warps,
            **kw,
        )
        return None

    return run


def contiguous_call(a: torch.Tensor, b: torch.Tensor) -> Callable[[], object]:
    return lambda: b.copy_(a)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def check(m: Model, reqs: int, fn: Callable[[], object]) -> bool:
    m.poison(reqs)
    _sync(m.device)
    fn()
    _sync(m.device)
    got = m.snapshot(reqs)
    want = m.reference(reqs)
    return all(torch.equal(a, b) for a, b in zip(got, want, strict=True))


PLAN_SWEEP = ((2048, 2), (4096, 4), (4096, 8), (8192, 4), (8192, 8), (16384, 8))
"""(chunk, warps) of the planned kernel swept beside its defaults (4 KiB, 2 warps)."""


def configs(sweep: bool) -> list[dict[str, Any]]:
    """Knobs of the table-driven kernel swept beside its defaults (t512 c4K w4 rr)."""
    if not sweep:
        return []
    return [
        {"tiles": 256, "chunk": 4096, "num_warps": 4, "slices": True},
        {"tiles": 256, "chunk": 8192, "num_warps": 8, "slices": False},
    ]


def name_of(kw: dict[str, Any]) -> str:
    order = "slices" if kw["slices"] else "rr"
    return f"devptr t{kw['tiles']} c{kw['chunk'] // KIB}K w{kw['num_warps']} {order}"


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e-3


def run_case(
    kernel: Any, m: Model, reqs: int, sweep: list[dict[str, Any]], rounds: int, rep_ms: int
) -> dict[str, Any]:
    nbytes = m.bytes_moved(reqs)
    a = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=m.device)
    b = torch.empty_like(a)
    default_kw = state_copy_config(m.copy_bytes, reqs, m.device)
    fns: dict[str, Callable[[], object]] = {
        "vLLM precopy_mamba_align_fused_kernel": vllm_call(kernel, m, reqs),
        "devptr copy_state_blocks_planned": planned_call(m, reqs),
        "devptr copy_state_blocks_planned by_class=False": planned_call(m, reqs, by_class=False),
        "devptr copy_state_blocks (defaults)": devptr_call(m, reqs, **default_kw),
        "devptr copy_state_blocks (adapter's tiles=16, before)": devptr_call(m, reqs, tiles=16),
    }
    for kw in sweep:
        fns[name_of(kw)] = devptr_call(m, reqs, **kw)
    if sweep:
        for chunk, warps in PLAN_SWEEP:
            fns[f"devptr planned c{chunk // KIB}K w{warps}"] = planned_call(m, reqs, chunk, warps)
    ok = {k: check(m, reqs, f) for k, f in fns.items()}
    fns["contiguous copy_ of the same bytes"] = contiguous_call(a, b)
    ok["contiguous copy_ of the same bytes"] = True
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            if ok[k]:
                samples[k] += list(H.triton_bench(f, rep_ms=rep_ms).samples_ns)
    rows = []
    vllm_us = median_us(samples["vLLM precopy_mamba_align_fused_kernel"])
    cont_us = median_us(samples["contiguous copy_ of the same bytes"])
    for k in fns:
        if not ok[k]:
            rows.append({"kernel": k, "correct": False})
            continue
        us = median_us(samples[k])
        rows.append(
            {
                "kernel": k,
                "correct": True,
                "us": us,
                "p25": statistics.quantiles(samples[k], n=4)[0] * 1e-3,
                "p75": statistics.quantiles(samples[k], n=4)[2] * 1e-3,
                "GBps": 2 * nbytes / us / 1e3,
                "vllm_over": vllm_us / us,
                "contig_over": cont_us / us,
                "samples": len(samples[k]),
            }
        )
    return {"reqs": reqs, "bytes": nbytes, "default": default_kw, "rows": rows}


def registers(kernel: Any, m: Model) -> dict[str, Any]:
    """Registers and spills of vLLM's kernel and devptr's default state kernel."""
    out: dict[str, Any] = {}
    got = vllm_call(kernel, m, 1)()
    out["vllm"] = {"regs": getattr(got, "n_regs", None), "spills": getattr(got, "n_spills", None)}
    from devptr.kernels import _runtime

    jit = _runtime.jit_module("_state_jit")._copy_state_blocks_kernel
    kw = state_copy_config(m.copy_bytes, 1, m.device)
    k = jit[(1, len(m.states), kw["tiles"])](
        m.src_cols,
        m.dst_cols,
        m.bias,
        m.idx,
        m.tables.device(),
        m.block_table.stride(0),
        m.bases.device(),
        m.meta.device(),
        HAS_IDX_MAPPING=True,
        SKIP_SAME_BLOCK=True,
        NCOLS=7,
        COL_BLOCK_STRIDE=0,
        COL_CONV_WIDTH=1,
        COL_TOKEN_BYTES=2,
        COL_COPY_BYTES=3,
        COL_ROWS=4,
        COL_ROW_STRIDE=5,
        COL_GROUP=6,
        CHUNK=kw["chunk"],
        BYTE_CHUNK=1024,
        ROW_BLOCK=128,
        SLICE=kw["slices"],
        num_warps=kw["num_warps"],
    )
    out["devptr"] = {"regs": getattr(k, "n_regs", None), "spills": getattr(k, "n_spills", None), **kw}
    plan = state_copy_plan(m.bases, m.meta, m.tables)
    p = _runtime.jit_module("_state_jit")._copy_state_plan_kernel[(plan.records.shape[0], 1)](
        plan.records,
        m.src_cols,
        m.dst_cols,
        m.bias,
        m.idx,
        m.block_table.stride(0),
        HAS_IDX_MAPPING=True,
        SKIP_SAME_BLOCK=True,
        CHUNK=plan.chunk,
        BYTE_CHUNK=1024,
        ROW_BLOCK=128,
        num_warps=4,
    )
    out["devptr planned"] = {"regs": getattr(p, "n_regs", None), "spills": getattr(p, "n_spills", None)}
    return out


def markdown(res: dict[str, Any]) -> str:
    lines = [
        f"- command: `{res['meta']['command']}`",
        f"- date: {res['meta']['date']}",
        f"- machine: {res['meta']['machine']}",
        f"- vLLM source: `{res['vllm_file']}` (read at run time)",
        f"- registers: {res['registers']}",
        "",
    ]
    for case in res["cases"]:
        lines.append(
            f"### {case['reqs']} request(s): {case['bytes'] / MIB:.1f} MiB copied, defaults {case['default']}"
        )
        lines.append("")
        lines.append(
            "| kernel | median us | p25-p75 us | GB/s (r+w) | vLLM / this | contiguous / this "
            "| bit-identical |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---|")
        for r in case["rows"]:
            if not r["correct"]:
                lines.append(f"| {r['kernel']} | - | - | - | - | - | **False** |")
                continue
            lines.append(
                f"| {r['kernel']} | {r['us']:.1f} | {r['p25']:.1f}-{r['p75']:.1f} | {r['GBps']:,.0f} | "
                f"{r['vllm_over']:.3f}x | {r['contig_over']:.3f} | True |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--vllm-file", default=None)
    ap.add_argument("--layers", type=int, default=36)
    ap.add_argument("--conv-kib", type=int, default=48)
    ap.add_argument("--temporal-mib", type=int, default=2)
    ap.add_argument("--reqs", default="1,2,8,32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=int, default=40)
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--check-only",
        action="store_true",
        help="bit-identity checks only, no timing (with TRITON_INTERPRET=1: on the CPU)",
    )
    args = ap.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    path = find_vllm_file(args.vllm_file)
    kernel = load_vllm_precopy(path)
    reqs = [int(x) for x in args.reqs.split(",")]
    layers = 4 if args.quick else args.layers
    m = Model(device, layers, args.conv_kib, args.temporal_mib, blocks=4 * max(reqs), max_reqs=max(reqs))
    if args.check_only:
        for r in reqs:
            kws = [state_copy_config(m.copy_bytes, r, device), {"tiles": 16}, *configs(not args.no_sweep)]
            planned = {f"planned {c}/{w}": planned_call(m, r, c, w) for c, w in PLAN_SWEEP}
            fns = {"vllm": vllm_call(kernel, m, r), "planned": planned_call(m, r), **planned}
            fns["planned records"] = planned_call(m, r, by_class=False)
            fns.update({str(kw): devptr_call(m, r, **kw) for kw in kws})
            bad = [k for k, f in fns.items() if not check(m, r, f)]
            print(f"{r} request(s): {len(fns) - len(bad)} of {len(fns)} kernels bit-identical; wrong: {bad}")
            if bad:
                return 1
        return 0
    res: dict[str, Any] = {
        "meta": {**H.meta(), "machine": H.machine_line()},
        "vllm_file": str(path),
        "cases": [],
    }
    res["registers"] = registers(kernel, m)
    sweep = configs(not args.no_sweep)
    for r in reqs:
        res["cases"].append(run_case(kernel, m, r, sweep, args.rounds, args.rep_ms))
        print(markdown({**res, "cases": res["cases"][-1:]}), flush=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "state_copy.json").write_text(json.dumps(res, indent=1))
        (args.out / "state_copy.md").write_text(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
