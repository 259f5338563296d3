"""Run ``devptr check`` and the mypy plugin on vLLM 0.33.0; score them against an inventory.

Usage::

    python benchmarks/bench_check_vllm.py [--repeat 3] [--jobs 2] [--no-mypy]

The vLLM tree comes from :func:`benchmarks.vllm_tree.vllm_source_tree` (set
``DEVPTR_VLLM_SRC`` to an unzipped copy to skip the download). Printed, as Markdown:

- wall and CPU time of ``devptr check vllm/`` (the real CLI, in a subprocess);
- findings per rule;
- the inventory of store sites (built by reading the vLLM tree, see ``INVENTORY``) and which
  ones a finding points into;
- every other finding with its hand review (``REVIEWED``); a finding nobody reviewed yet is
  printed as UNREVIEWED, so a checker change that adds findings shows up here;
- the mypy plugin's ``devptr-*`` errors on the files that hold inventory sites.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.vllm_tree import vllm_source_tree


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
    ("vllm/device_allocator/xpumem.py", 55, "DP004"): (
        True, "_to_i64_ptr: hand-written two's complement for custom-op int args"),
    ("vllm/v1/worker/mamba_utils.py", 187, "DP004"): (
        True, "_reinterpret_u64_as_i64: the helper behind the 3 Mamba int64 stores"),
}
"""Findings outside the inventory, reviewed by hand: (true positive?, why)."""


def _run_check(tree: Path, jobs: int) -> tuple[float, float, dict[str, object]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "devptr.cli", "check", str(tree / "vllm"), "--format", "json",
         "--jobs", str(jobs), "--no-progress"],
        capture_output=True, text=True, cwd=tree, check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"devptr check failed ({proc.returncode}): {proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(proc.stdout)


def _rel(path: str, tree: Path) -> str:
    p = Path(path)
    return (p.relative_to(tree) if p.is_absolute() else p).as_posix()


def _run_mypy(tree: Path, files: list[str]) -> tuple[float, list[str]]:
    repo = Path(__file__).resolve().parents[1]
    config = tree / ".devptr-bench-mypy.ini"
    config.write_text(
        "[mypy]\nplugins = devptr.mypy_plugin\n"
        f"mypy_path = {repo}\nignore_missing_imports = True\nfollow_imports = silent\n"
        "check_untyped_defs = True\n"
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--no-error-summary",
         "--show-error-codes", "--cache-dir", str(tree / ".devptr-bench-mypy-cache"), *files],
        capture_output=True, text=True, cwd=tree, check=False,
    )
    wall = time.perf_counter() - start
    hits = [line for line in proc.stdout.splitlines() if "[devptr-" in line]
    return wall, hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-mypy", action="store_true")
    args = parser.parse_args()

    tree = vllm_source_tree()
    n_files = sum(1 for _ in (tree / "vllm").rglob("*.py"))
    runs = [_run_check(tree, args.jobs) for _ in range(args.repeat)]
    walls = [w for w, _, _ in runs]
    cpus = [c for _, c, _ in runs]
    report = runs[-1][2]
    findings = report["findings"]
    assert isinstance(findings, list)

    print(f"## devptr check on vllm {tree.name} ({n_files} .py files)\n")
    print(f"- command: `devptr check vllm --format json --jobs {args.jobs}` (cwd: the tree)")
    print(f"- wall time over {args.repeat} runs: median {statistics.median(walls):.1f} s, "
          f"min {min(walls):.1f} s; CPU (user+sys) median {statistics.median(cpus):.1f} s")
    print(f"- load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"- files not analyzed: {len(report['errors'])}\n")  # type: ignore[arg-type]

    per_rule = Counter(f["code"] for f in findings)
    print("| rule | findings |\n|---|---|")
    for code in sorted(per_rule):
        print(f"| {code} | {per_rule[code]} |")
    print(f"| total | {len(findings)} |\n")

    located = [(_rel(f["path"], tree), f["line"], f["code"]) for f in findings]
    used: set[int] = set()
    print("### Inventory of store sites\n")
    print("| # | site | kind | found by |\n|---|---|---|---|")
    found_sites = 0
    for i, site in enumerate(INVENTORY, start=1):
        hits = [
            k for k, (p, line, _) in enumerate(located)
            if p == site.path and site.first <= line <= site.last
        ]
        used.update(hits)
        codes = ", ".join(sorted({f"{located[k][2]}@{located[k][1]}" for k in hits})) or "MISSED"
        found_sites += bool(hits)
        print(f"| {i} | `{site.path}:{site.first}` {site.what} | {site.kind} | {codes} |")
    pct = 100.0 * found_sites / len(INVENTORY)
    print(f"\nFound {found_sites} of {len(INVENTORY)} sites ({pct:.0f}%).\n")

    others = [located[k] for k in range(len(located)) if k not in used]
    print("### Other findings (hand review)\n")
    print("| finding | verdict | why |\n|---|---|---|")
    false = 0
    for key in others:
        verdict = REVIEWED.get(key)
        if verdict is None:
            print(f"| `{key[0]}:{key[1]}` {key[2]} | UNREVIEWED | |")
            continue
        false += not verdict[0]
        print(f"| `{key[0]}:{key[1]}` {key[2]} | {'true' if verdict[0] else 'FALSE'} | "
              f"{verdict[1]} |")
    if others:
        print(f"\n{false} of {len(others)} other findings false "
              f"({100.0 * false / len(others):.0f}%).\n")

    if not args.no_mypy:
        files = sorted({s.path for s in INVENTORY})
        wall, hits = _run_mypy(tree, files)
        print(f"## mypy plugin on the {len(files)} inventory files ({wall:.0f} s)\n")
        per_code = Counter(h.rsplit("[", 1)[1].rstrip("]") for h in hits)
        print("| code | errors |\n|---|---|")
        for code in sorted(per_code):
            print(f"| {code} | {per_code[code]} |")
        hit_sites = 0
        for site in INVENTORY:
            prefix = f"{site.path}:"
            if any(
                h.startswith(prefix) and site.first <= int(h.split(":")[1]) <= site.last
                for h in hits
            ):
                hit_sites += 1
        print(f"\nSites with a plugin error: {hit_sites} of {len(INVENTORY)}.\n")
        for h in hits:
            print(f"    {h}")


if __name__ == "__main__":
    main()
