"""``python -m tools.vllm_suite``: run vLLM's tests, shipped vs migrated; write the table."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from tools.vllm_suite import TEST_PATHS
from tools.vllm_suite._env import TORCH_VERSIONS, SuiteError, sdist_tree, venv
from tools.vllm_suite._gpu import GPU_TESTS, bundle
from tools.vllm_suite._results import VariantResult, exclusions, failures, read_junit, table
from tools.vllm_suite._trees import RECIPE, migrated_tree, overlay
from tools.wheel_sources import VLLM_VERSION

REPO: Final = Path(__file__).resolve().parents[2]
TREES: Final = ("shipped", "migrated")
MODES: Final = ("low", "high")

_HUB = ("builds a scheduler for the Hugging Face hub model facebook/opt-125m "
        "(tests/v1/core/utils.py create_scheduler): needs the network")
EXCLUDED: Final[dict[str, str]] = {
    "tests/v1/ec_connector/unit/test_ec_transfer_params.py"
    "::test_free_request_calls_ec_connector_and_surfaces_params": _HUB,
    "tests/v1/ec_connector/unit/test_ec_transfer_params.py"
    "::test_free_request_without_ec_connector_returns_none": _HUB,
}
"""Tests deselected by exact id, with the reason (network or a model from the hub)."""


def _run_variant(
    cache: Path, torch_version: str, tree: str, mode: str, paths: Sequence[str], timeout: int
) -> VariantResult:
    python = venv(cache, torch_version, REPO)
    tests = sdist_tree(cache, python)
    path: list[str] = []
    if tree == "migrated":
        migrated, _, _ = migrated_tree(cache, REPO)
        path.append(str(overlay(cache, python, migrated)))
    plugin: list[str] = []
    if mode == "high":
        path.append(str(Path(__file__).resolve().parent))
        plugin = ["-p", "pytest_high_addresses"]
    name = f"torch {torch_version} {tree} {mode}"
    xml = cache / "results" / f"{torch_version}-{tree}-{mode}.xml"
    xml.parent.mkdir(parents=True, exist_ok=True)
    deselect = [a for tid in EXCLUDED for a in ("--deselect", tid)]
    cmd = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin,
           f"--timeout={timeout}", f"--junitxml={xml}", *deselect, *paths]  # fmt: skip
    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "PYTHONPATH": os.pathsep.join(path)}
    env.pop("DEVPTR_ENCODING", None)
    print(f"[vllm_suite] {name}: {shlex.join(cmd[1:])}", file=sys.stderr, flush=True)
    start = time.monotonic()
    subprocess.run(cmd, cwd=tests, env=env, check=False, stdout=subprocess.DEVNULL)
    result = VariantResult(name, shlex.join(cmd[1:]), time.monotonic() - start)
    if not xml.is_file():
        raise SuiteError(f"{name}: pytest wrote no {xml}")
    read_junit(xml, tests, TEST_PATHS, result)
    result.save(xml.with_suffix(".json"))
    return result


NOTES: Final = """## What the table shows

- **CPU, low addresses**: the target is that every test passing on vLLM as shipped passes
  migrated, on both torches. The CPU tests reach the migrated modules' host paths (the EC
  worker's save/load descriptor arithmetic and `DescriptorBufferPool`, the Mamba
  spec-decode metadata tables through `_reinterpret_u64_as_i64`'s callers, the helper
  itself); the skipped ones need CUDA (`batch_memcpy`, the precopy and
  `_memcpy_u64_tiled` kernels, the Lamport all-reduce op): see the H200 section.
- **High addresses** (`pytest_high_addresses`: `devptr.testing.high_addresses()` around
  every test, host tensors included, since this machine has no device tensors to flip):
  as shipped, `test_save_path_delegates_transfer_submission` and
  `test_load_path_delegates_transfer_submission` (EC worker) fail with numpy's
  `OverflowError: Python int too large to convert to C long` (int64 address arithmetic,
  `dst_base + first_blocks * block_size`); migrated (`devptr.addresses`) they pass. The
  high runs recorded here cover the paths that reach address code (the EC tests under
  `cpu/`, the Mamba utils, precopy); the rest of `tests/v1/ec_connector/unit/` (proxy,
  registry, scheduler tests) and the two kernel files that skip entirely on CPU were left
  out for time on the shared 2-core machine: `--mode high` without `--path` runs them.
- **Tests that compare raw addresses by value**, which fail under high addresses on both
  trees and are not a migration defect:
  `tests/v1/worker/test_mamba_utils.py::test_gpu_context_ignores_auxiliary_cache_tensors`
  asserts `context.state_base_addrs.tolist() == [conv_state.data_ptr(), ...]`: the int64
  table holds the two's complement (what the CUDA kernels read), the expected side the
  unsigned address, so they differ by 2**64 once bit 63 is set. Its expected side would
  need `_reinterpret_u64_as_i64(...)` (as its sibling
  `test_gpu_context_reinterprets_high_data_ptrs_for_int64_metadata` does).
- **Adapters (devptr.adapters) are not drop-in for vLLM's classes**, so the migrated vLLM
  modules above are the reference for adopters: `devptr.adapters.ec_connector`'s
  `DescriptorBuffers` is a pooled handle whose `add_copies` refuses int64 address arrays
  (their sign is ambiguous: the migrated worker passes uint64 from `devptr.addresses`) and
  returns the end index, and it has no `src_np`/`dst_np` aliases (vLLM's test reads
  `src_np`); the Mamba adapter's `numpy()` views are read-only where vLLM writes through
  its aliases. Making them drop-in means giving up those checks on the adapters' own
  paths; not done here.
"""
"""What the table means beyond its numbers (kept with the generator, so a rerun keeps it)."""


def _paths_of(command: str) -> str:
    """The test paths and options of a recorded pytest command, without the deselections."""
    words = shlex.split(command)
    kept: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
        elif w == "--deselect":
            skip = True
        elif not w.startswith("--junitxml"):
            kept.append(w)
    return shlex.join(kept)


def _report(cache: Path, paths: Sequence[str], argv: Sequence[str]) -> str:
    order = [(t, tr, m) for t in TORCH_VERSIONS for tr in TREES for m in MODES]
    found = [cache / "results" / f"{t}-{tr}-{m}.json" for t, tr, m in order]
    results = [VariantResult.load(p) for p in found if p.is_file()]
    gpu = []
    for tree in TREES:
        xml = cache / "results" / f"h200-{tree}.xml"
        if xml.is_file():
            r = VariantResult(f"H200 {tree}", "bash run_gpu.sh", 0.0)
            read_junit(xml, cache / f"vllm-{VLLM_VERSION}-sdist", GPU_TESTS, r)
            gpu.append(r)
    _, summary, patch = migrated_tree(cache, REPO)
    changed = sorted({line[6:] for line in patch.splitlines() if line.startswith("+++ b/")})
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    return "\n".join([
        "# vLLM 0.33.0's own tests: shipped vs migrated by `devptr migrate`",
        "",
        f"Written by `python -m tools.vllm_suite {shlex.join(argv)}` (date {now}; machine: "
        f"{machine}, shared with other jobs; CPU only, `VLLM_TARGET_DEVICE=cpu`) from the "
        "runs listed under the table, each made by `python -m tools.vllm_suite` with "
        "`--torch`, `--mode` and (for the high runs) `--path` selecting it.",
        "",
        "Each cell is passed / failed / skipped. *shipped* is vLLM 0.33.0's wheel; *migrated* "
        f"is the same sources after `devptr migrate vllm {' '.join(RECIPE)}` (the adopter "
        f"recipe of docs/migrate.md; {len(changed)} files changed). *low*: addresses as the "
        "machine gives them; *high*: every test inside `devptr.testing.high_addresses()` "
        "(bit 63 of every `data_ptr()` flipped), through the plugin "
        "`tools/vllm_suite/pytest_high_addresses.py`.",
        "",
        table(results, paths),
        "",
        "Runs (the pytest command of each, run in the sdist's root; a `-` cell: that path "
        "was not part of the run):",
        "",
        *[f"- {r.variant} ({r.seconds:.0f} s): `{_paths_of(r.command)}`" for r in results],
        "",
        NOTES,
        "",
        "## CUDA (H200)",
        "",
        "`python -m tools.vllm_suite --gpu-bundle DIR` writes the folder run there "
        "(`bash run_gpu.sh`; its JUnit files go to `<cache>/results/h200-<tree>.xml`). "
        "The H200 has torch 2.11 and triton 3.6 and no vLLM: vLLM 0.33.0 pins torch 2.14.0 "
        "and ~90 packages, so it cannot be imported whole there. The two Mamba kernel test "
        "files run unchanged against vLLM's own `v1/worker/mamba_utils.py` and "
        "`model_executor/layers/mamba/mamba_utils.py` (shipped, then migrated), executed "
        "with `tests/support/vllm_stand_ins.py` for the configuration modules they import "
        "(`tools/vllm_suite/pytest_vllm_stand_ins.py`); vLLM's root conftest is not "
        "carried. Last run: 2026-12-01 22:20 UTC, one NVIDIA H200 (driver 580.159.04), "
        "torch 2.11.0+cu130, triton 3.6.0, pytest 9.1.1 (shipped 18.6 s, migrated 14.8 s).",
        "",
        "Not runnable there, and why: the 36 CUDA tests of `test_mamba_utils.py` build "
        "`BlockTables` and `MambaHybridModelState` (vLLM's config, scheduler and model-state "
        "packages: the whole import graph); the EC worker's accelerator tests need "
        "`vllm._custom_ops.swap_blocks_batch` (vLLM's `_C` extension, built against torch "
        "2.14.0, does not load on 2.11) and vLLM's config; `test_minimax_reduce_rms.py` needs "
        "`torch.ops._C.minimax_allreduce_rms_qk` (the same extension) and several GPUs for "
        "most cases.",
        "",
        table(gpu, GPU_TESTS) if gpu else "(not run)",
        "",
        "## Failed tests",
        "",
        failures(results),
        "",
        "## Excluded by exact id",
        "",
        exclusions(EXCLUDED) or "- none",
        "",
        "## The migration",
        "",
        "Files changed: " + ", ".join(f"`{c}`" for c in changed) + ".",
        "",
        "```text",
        summary.strip(),
        "```",
        "",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m tools.vllm_suite", description=__doc__)
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "devptr-cache" / "vllm-suite",
                        help="folder for downloads, venvs, the migrated tree and results")
    parser.add_argument("--torch", action="append", choices=TORCH_VERSIONS)
    parser.add_argument("--tree", action="append", choices=TREES)
    parser.add_argument("--mode", action="append", choices=MODES)
    parser.add_argument("--path", action="append",
                        help="run only these test paths (counted under the entry of "
                             "TEST_PATHS holding them)")
    parser.add_argument("--timeout", type=int, default=120, help="per-test limit (seconds)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/vllm_suite.md")
    parser.add_argument("--report-only", action="store_true",
                        help="write the table from the results already in the cache")
    parser.add_argument("--gpu-bundle", type=Path,
                        help="write the folder for the CUDA half to this path and stop")
    args = parser.parse_args(args_in)
    if args.gpu_bundle is not None:
        tests = sdist_tree(args.cache, venv(args.cache, TORCH_VERSIONS[0], REPO))
        migrated, _, _ = migrated_tree(args.cache, REPO)
        bundle(args.gpu_bundle, tests, migrated, REPO)
        return 0
    paths = list(args.path or TEST_PATHS)
    cache: Path = args.cache
    if not args.report_only:
        for t in args.torch or TORCH_VERSIONS:
            for tree in args.tree or TREES:
                for mode in args.mode or MODES:
                    r = _run_variant(cache, t, tree, mode, paths, args.timeout)
                    print(f"[vllm_suite] {r.variant}: {r.counts} ({r.seconds:.0f} s)",
                          file=sys.stderr, flush=True)
    args.out.write_text(_report(cache, TEST_PATHS, args_in))
    print(f"[vllm_suite] wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
