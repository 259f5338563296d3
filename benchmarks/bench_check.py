"""``devptr check`` on real trees it was not written on: vLLM 0.33.0, sglang 0.5.23 and
LMCache 0.5.6. Speed, and every finding scored against a hand review.

Usage::

    python benchmarks/bench_check.py [--repeat 3] [--jobs 2] [--trees vllm,sglang,lmcache]

The trees come from :func:`tools.wheel_sources.source_root` (``DEVPTR_VLLM_SRC`` /
``DEVPTR_VLLM_TREE`` to reuse a vLLM copy; otherwise each wheel is fetched with ``pip
download --no-deps`` into ``$DEVPTR_CACHE_DIR``, default ``<tempdir>/devptr-cache``, and
unzipped there, never into the repository). Printed, as Markdown:

- wall and CPU time of the real CLI (``devptr check PKG --format json``, default rules) in a
  subprocess, and files per CPU-second of a one-process run;
- vLLM: the inventory of store sites (built by reading vLLM, see ``INVENTORY``) found with
  ``--select ALL``, and the other findings with their review;
- sglang, LMCache: every default-rule finding with its hand review (``REVIEWED``; an
  unreviewed finding prints as UNREVIEWED) and the real sites found by a separate search
  (``REAL_SITES``) that no finding points at (missed).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import _harness as H
from tools.wheel_sources import source_root


@dataclass(frozen=True)
class Site:
    """One place in vLLM 0.33.0 that writes device addresses into an integer table."""

    path: str
    first: int
    last: int
    kind: str  # u64 | per-platform | twos-helper | int64
    what: str


_EC = "vllm/distributed/ec_transfer/ec_connector/cpu/worker"
_KVO = "vllm/v1/kv_offload/cpu/gpu_worker.py"
_HIS = "vllm/distributed/kv_transfer/kv_connector/v1/hisparse/worker.py"
_K3 = "vllm/models/kimi_k3/nvidia"
_LORA = "vllm/lora/ops/triton_ops"

INVENTORY: tuple[Site, ...] = (
    # already uint64
    Site("vllm/v1/worker/gpu/block_table.py", 99, 103, "u64", "block-table pointer tensor"),
    Site("vllm/v1/worker/gpu/pcp_manager.py", 123, 127, "u64", "PCP local block-table ptrs"),
    Site("vllm/v1/worker/utils.py", 170, 226, "u64", "KV segment base addresses"),
    Site("vllm/v1/worker/gpu/model_states/prompt_embeds.py", 58, 59, "u64",
         "prompt-embeds/mask pointers (UVA numpy alias)"),
    Site("vllm/v1/worker/mamba_utils.py", 1379, 1380, "u64", "Mamba copy src/dst ptrs"),
    Site("vllm/model_executor/warmup/mamba_triton_warmup.py", 36, 37, "u64",
         "batch_memcpy warm-up tables"),
    Site(f"{_LORA}/utils.py", 47, 54, "u64", "LoRA A pointer table"),
    Site(f"{_LORA}/utils.py", 100, 111, "u64", "LoRA B pointer table"),
    Site(f"{_LORA}/fused_moe_lora_op.py", 876, 877, "u64", "fused-MoE LoRA pointers"),
    Site(f"{_LORA}/fused_moe_lora_fp8_op.py", 91, 92, "u64", "fused-MoE LoRA fp8 pointers"),
    Site(f"{_LORA}/lora_expand_fp8_op.py", 37, 38, "u64", "LoRA expand scale pointers"),
    Site(f"{_LORA}/lora_shrink_fp8_op.py", 52, 65, "u64", "LoRA shrink scale pointers"),
    Site("vllm/v1/simple_kv_offload/cuda_mem_ops.py", 208, 216, "u64", "simple KV offload bases"),
    Site("vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py", 2149, 2158, "u64",
         "NIXL Nx5 strided descriptors"),
    Site("vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/data.py", 413, 421, "u64",
         "Mooncake TP-shared segment templates (addresses appended in another method)"),
    # per-platform dtype
    Site(f"{_EC}/__init__.py", 266, 284, "per-platform", "EC save descriptors"),
    Site(f"{_EC}/__init__.py", 380, 395, "per-platform", "EC load descriptors"),
    Site(f"{_EC}/descriptor_buffers.py", 18, 52, "per-platform",
         "EC descriptor buffers (_PTR_DTYPE) and add_copies"),
    Site(_KVO, 271, 281, "per-platform", "KV offload descriptor buffers (ptr_dtype)"),
    Site(_KVO, 109, 127, "per-platform", "KV offload compute_sub_block_ptrs into the buffers"),
    Site(_KVO, 517, 529, "per-platform", "KV offload canonical fill (np.add out= u64 view)"),
    # two's-complement helper
    Site("vllm/v1/worker/mamba_utils.py", 1008, 1010, "twos-helper", "Mamba state_base_addrs"),
    Site("vllm/v1/worker/mamba_utils.py", 1099, 1099, "twos-helper", "Mamba block_table_ptrs"),
    Site("vllm/v1/worker/mamba_utils.py", 1100, 1102, "twos-helper",
         "Mamba aligned_index_block_table_ptrs"),
    # int64, no workaround
    Site("vllm/model_executor/layers/minimax_rms_norm/lamport_workspace.py", 215, 225, "int64",
         "Lamport workspace (3N+2 pointers)"),
    Site("vllm/v1/attention/ops/cp_common.py", 119, 126, "int64", "context-parallel peer ptrs"),
    Site("vllm/distributed/kv_transfer/kv_connector/v1/hf3fs/hf3fs_connector.py", 568, 572,
         "int64", "hf3fs KV-cache pointers"),
    Site(_HIS, 701, 708, "int64", "hisparse row-DMA descriptors"),
    Site(_HIS, 829, 835, "int64", "hisparse transfer descriptors"),
    Site(f"{_K3}/ops/recoverssm.py", 835, 839, "int64", "KDA recoverssm _base_addrs"),
    Site(f"{_K3}/dspark_mla.py", 402, 406, "int64", "DSpark MLA context KV cache ptrs"),
    Site("vllm/models/beam/nvidia/dflash2.py", 493, 498, "int64", "DFlash2 cache/scale ptrs"),
    Site(f"{_K3}/ops/cute_dsl/latent_moe_tail/allreduce_rmsnorm_reduce_scatter_early_exit.py",
         1127, 1129, "int64", "latent-MoE shared peer ptrs"),
    Site(f"{_K3}/specialized_decode/runtime/prefetch.py", 80, 83, "int64",
         "weight prefetch (ptr, size) table"),
    Site("vllm/models/deepseek_v41/nvidia/ops/engram_peer.py", 104, 125, "int64",
         "Engram peer metadata (ptrs + vocab bounds) and peer ptrs"),
    Site("vllm/models/deepseek_v41/common/engram.py", 1102, 1105, "int64", "Engram peer_ptrs"),
    Site("vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/data.py", 317, 317,
         "int64", "Mooncake store base addresses"),
    Site(f"{_K3}/specialized_decode/cutedsl/common/twoshot.py", 58, 60, "int64",
         "two-shot all-reduce peer bases"),
    Site(f"{_K3}/specialized_decode/cutedsl/mla/dcp.py", 77, 78, "int64", "MLA DCP peer tables"),
    Site(f"{_K3}/specialized_decode/cutedsl/moe/tail_runtime.py", 91, 92, "int64",
         "MoE tail peer table"),
    Site("vllm/models/deepseek_v4/amd/mono/common/peer_memory.py", 70, 93, "int64",
         "IPC peer addresses (DeepSeek V4 AMD)"),
    Site("vllm/models/deepseek_v41/amd/mono/common/peer_memory.py", 70, 93, "int64",
         "IPC peer addresses (DeepSeek V4.1 AMD)"),
    Site("vllm/models/kimi_k3/amd/specialized_decode/runtime/peer.py", 58, 81, "int64",
         "IPC peer addresses (Kimi K3 AMD)"),
)

REVIEWED: dict[tuple[str, int, str], tuple[bool, str]] = {
    # vLLM, outside the inventory (--select ALL)
    ("vllm/device_allocator/xpumem.py", 55, "DP004"): (
        True, "_to_i64_ptr: hand-written two's complement of an XPU address (convention)"),
    ("vllm/models/minimax_m3/amd/indexer_cp.py", 41, "DP002"): (
        True, "IPC peer addresses from create_shared_buffer into an int64 tensor"),
    # LMCache 0.5.6, default rules
    ("lmcache/v1/gpu_connector/gpu_connectors.py", 257, "DP001"): (
        True, "kv_cache_pointers (int64) .numpy()[:] = [t.data_ptr() ...]"),
    ("lmcache/v1/gpu_connector/gpu_connectors.py", 541, "DP001"): (
        True, "int64 cpu.numpy()[:] = get_group_data_ptrs(...) (device KV pointers)"),
    ("lmcache/v1/gpu_connector/gpu_connectors.py", 1514, "DP001"): (
        True, "int64 kv_cache_pointers.numpy()[:] = ptrs (SGLang connector)"),
    ("lmcache/v1/gpu_connector/gpu_connectors.py", 2101, "DP002"): (
        True, "torch.tensor(get_group_data_ptrs(...), dtype=int64) (TRT-LLM connector)"),
    ("lmcache/v1/multiprocess/modules/blend/retrieve.py", 470, "DP002"): (
        True, "np.asarray([[buf.data_ptr() ...]], dtype=np.int64) of device staging buffers"),
    # LMCache 0.5.6, --select ALL (host and convention findings)
    ("lmcache/v1/platform/devices/cpu/cache_context.py", 137, "DP008"): (
        True, "CPU platform (class declares device_type='cpu'): host KV-cache pointers, "
              "int64 cannot overflow"),
    ("lmcache/v1/platform/devices/cpu/cache_context.py", 148, "DP008"): (
        True, "CPU platform (class declares device_type='cpu'): host KV-cache pointers, "
              "int64 cannot overflow"),
    ("lmcache/v1/platform/devices/musa/cache_context.py", 360, "DP002"): (
        True, "torch.tensor(ptrs, dtype=int64) of MUSA KV cache pointers"),
    ("lmcache/v1/platform/devices/npu/cache_context.py", 341, "DP002"): (
        True, "torch.tensor(ptrs, dtype=int64) of NPU KV cache pointers"),
    # sglang 0.5.23, default rules
    ("sglang/multimodal_gen/runtime/models/dits/wanvideo.py", 833, "DP002"): (
        True, "torch.tensor([block[i].data_ptr() ...], dtype=int64)"),
    ("sglang/srt/disaggregation/mooncake/conn.py", 1757, "DP003"): (
        True, "layer address (Python int) + int64 page-index array: numpy OverflowError"),
    ("sglang/srt/layers/moe/paged_experts/store.py", 62, "DP002"): (
        True, "torch.tensor(v, dtype=int64) for v in (hosts, gpus, sizes): gpus are data_ptr()s"),
    ("sglang/kernels/ops/kvcache/pd_dcp_gather.py", 63, "DP002"): (
        True, "kv_data_ptrs (parameter) extended into an int64 metadata tensor"),
}
"""Findings reviewed by hand: (true positive?, why)."""

REAL_SITES: dict[str, tuple[tuple[str, int, str], ...]] = {
    "lmcache": (
        ("lmcache/v1/gpu_connector/gpu_connectors.py", 257, "int64 numpy slice store"),
        ("lmcache/v1/gpu_connector/gpu_connectors.py", 541, "int64 numpy slice store"),
        ("lmcache/v1/gpu_connector/gpu_connectors.py", 1514, "int64 numpy slice store"),
        ("lmcache/v1/gpu_connector/gpu_connectors.py", 2101, "int64 torch.tensor"),
        ("lmcache/v1/multiprocess/modules/blend/retrieve.py", 470, "int64 np.asarray"),
        ("lmcache/v1/platform/devices/musa/cache_context.py", 360, "int64 torch.tensor"),
        ("lmcache/v1/platform/devices/npu/cache_context.py", 341, "int64 torch.tensor"),
    ),
    "sglang": (
        ("sglang/multimodal_gen/runtime/models/dits/wanvideo.py", 833, "int64 torch.tensor"),
        ("sglang/srt/disaggregation/mooncake/conn.py", 1757, "address + int64 numpy array"),
        ("sglang/srt/layers/moe/paged_experts/store.py", 62, "int64 torch.tensor"),
        ("sglang/kernels/ops/kvcache/pd_dcp_gather.py", 63, "int64 torch.tensor"),
    ),
}
"""Device-address stores that break for addresses >= 2**63, found by a separate search
(see benchmarks/results/lint.md: every function holding an address source and a table
spelling, and every int64/untyped table built from pointer-named values, read by hand)."""


@dataclass(frozen=True)
class Run:
    """One ``devptr check`` subprocess: seconds and its JSON report."""

    wall: float
    cpu: float
    """user + sys of every process it ran (workers included)."""
    user: float
    report: dict[str, Any]


def _run_check(tree: Path, pkg: str, jobs: int, *extra: str) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "devptr.cli", "check", pkg, "--format", "json",
         "--jobs", str(jobs), "--no-progress", *extra],
        capture_output=True, text=True, cwd=tree, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"devptr check failed ({proc.returncode}): {proc.stderr}")
    user = after.ru_utime - before.ru_utime
    return Run(wall, user + after.ru_stime - before.ru_stime, user, json.loads(proc.stdout))


def _located(report: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(Path(f["path"]).as_posix(), f["line"], f["code"]) for f in report["findings"]]


def _review(name: str, located: list[tuple[str, int, str]]) -> None:
    print("| finding | verdict | why |\n|---|---|---|")
    true = 0
    for key in located:
        verdict = REVIEWED.get(key)
        if verdict is None:
            print(f"| `{key[0]}:{key[1]}` {key[2]} | UNREVIEWED | |")
            continue
        true += verdict[0]
        print(f"| `{key[0]}:{key[1]}` {key[2]} | {'true' if verdict[0] else 'FALSE'} | "
              f"{verdict[1]} |")
    if located:
        print(f"\nPrecision: {true} of {len(located)} ({100.0 * true / len(located):.0f}%).\n")
    sites = REAL_SITES.get(name, ())
    found = [s for s in sites if any(p == s[0] and line == s[1] for p, line, _ in located)]
    for s in sites:
        if s not in found:
            print(f"- MISSED `{s[0]}:{s[1]}` {s[2]}")
    if sites:
        print(f"\nRecall: {len(found)} of {len(sites)} real sites "
              f"({100.0 * len(found) / len(sites):.0f}%).\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--trees", default="vllm,sglang,lmcache")
    args = parser.parse_args()
    print(H.header())
    for name in args.trees.split(","):
        tree = source_root(name)
        n_files = sum(1 for _ in (tree / name).rglob("*.py"))
        runs = [_run_check(tree, name, args.jobs) for _ in range(args.repeat)]
        walls = [r.wall for r in runs]
        cpus = [r.cpu for r in runs]
        one = _run_check(tree, name, 1)
        one_cpu, one_user = one.cpu, one.user
        start_cpu = _run_check(tree, "__init__.py" if (tree / "__init__.py").exists()
                               else f"{name}/__init__.py", 1).cpu
        report = runs[-1].report
        print(f"## {name} ({n_files} .py files)\n")
        print(f"- `devptr check {name} --format json --jobs {args.jobs}`, {args.repeat} runs: "
              f"wall median {statistics.median(walls):.2f} s (min {min(walls):.2f} s), "
              f"CPU (user+sys) median {statistics.median(cpus):.2f} s")
        print(f"- one process (`--jobs 1`): CPU {one_cpu:.2f} s (user {one_user:.2f} s), of "
              f"which start-up (checking "
              f"one file) {start_cpu:.2f} s: {n_files / max(one_cpu - start_cpu, 1e-9):.0f} "
              "files per CPU-second")
        print(f"- load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print(f"- files not analyzed: {len(report['errors'])}\n")
        located = _located(report)
        print(f"Default rules: {dict(sorted(Counter(c for _, _, c in located).items()))}\n")
        if name == "vllm":
            every = _located(_run_check(tree, name, args.jobs, "--select", "ALL").report)
            _inventory(every)
        else:
            _review(name, located)


def _inventory(located: list[tuple[str, int, str]]) -> None:
    used: set[int] = set()
    print("### Inventory of store sites (`--select ALL`)\n")
    print("| # | site | kind | found by |\n|---|---|---|---|")
    found_sites = 0
    for i, site in enumerate(INVENTORY, start=1):
        hits = [k for k, (p, line, _) in enumerate(located)
                if p == site.path and site.first <= line <= site.last]
        used.update(hits)
        codes = ", ".join(sorted({f"{located[k][2]}@{located[k][1]}" for k in hits})) or "MISSED"
        found_sites += bool(hits)
        print(f"| {i} | `{site.path}:{site.first}` {site.what} | {site.kind} | {codes} |")
    pct = 100.0 * found_sites / len(INVENTORY)
    print(f"\nFound {found_sites} of {len(INVENTORY)} sites ({pct:.0f}%).\n")
    print("### Other findings (`--select ALL`)\n")
    _review("vllm", [located[k] for k in range(len(located)) if k not in used])


if __name__ == "__main__":
    main()
