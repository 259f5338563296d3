"""The corpus ``devptr check`` is developed and judged on: real trees that take device
addresses, split into development trees (the engine may be changed for what they show) and
test trees (scored only, never tuned on).

Usage::

    python benchmarks/lint_corpus.py [--split dev,test] [--trees NAME,...] [--jobs 2]
                                     [--git-mirrors DIR] [--dump DIR | --reports DIR]

Every tree is downloaded at benchmark time into ``$DEVPTR_CACHE_DIR/corpus`` (default:
``<tempdir>/devptr-cache/corpus``), never into the repository: PyPI trees with ``pip
download --no-deps`` (wheel or sdist, pinned version; only the ``.py`` files are unpacked),
GitHub trees at a pinned commit, from a local bare mirror (``--git-mirrors DIR`` holding
``owner+name/repo``) or else ``git clone`` of the public repository. Each tree is checked
with the real CLI (``python -m devptr.cli check ROOT --format json``), default rules and
``--select ALL``. Printed, as Markdown: one row per tree (tree, version, split, files,
findings, precision, recall), then every finding of the scored trees with its hand verdict
(``VERDICTS``; an unreviewed one prints as UNREVIEWED) and every real site (``SITES``,
found by a search that does not use the engine, see ``benchmarks/results/lint.md``) that no
finding points at.

The rule (``benchmarks/results/lint.md``, "Method"): the engine is changed only for what a
development tree shows; when a test tree's result leads to a change, that tree becomes a
development tree and a new test tree replaces it. flashinfer, mooncake-transfer-engine and
vllm-ascend are not in the corpus: they are kept aside to judge the result.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._harness import header
from tools.wheel_sources import vllm_source_root


@dataclass(frozen=True)
class Tree:
    """One tree of the corpus."""

    name: str
    version: str
    kind: str
    split: str
    """``dev`` (the engine may be changed for it) or ``test`` (scored only)."""
    pypi: str = ""
    """``name==version`` on PyPI (wheel or sdist), or empty for a GitHub tree."""
    github: str = ""
    """``owner/name`` at commit ``version`` (40 hex digits)."""
    check: str = "."
    """The folder to check, relative to the unpacked tree."""


TREES: tuple[Tree, ...] = (
    # development trees: tuned on (vLLM, sglang, LMCache before 2026-12-01) or reviewed
    # against the engine before this split (Triton-distributed, lmdeploy)
    Tree("vllm", "0.33.0", "inference engine", "dev", pypi="vllm==0.33.0", check="vllm"),
    Tree("sglang", "0.5.23", "inference engine", "dev", pypi="sglang==0.5.23", check="sglang"),
    Tree("lmcache", "0.5.6", "KV cache / KV transfer", "dev", pypi="lmcache==0.5.6",
         check="lmcache"),
    Tree("triton-distributed", "1512a81189315eca7ba38f884aaf239469a88ba3",
         "communication kernels (NVSHMEM, IPC)", "dev", github="ByteDance-Seed/Triton-distributed"),
    Tree("lmdeploy", "0.18.0", "inference engine (CUDA, Ascend, MACA, Cambricon backends)",
         "dev", pypi="lmdeploy==0.18.0", check="lmdeploy"),
    # moved from test to development on 2026-12-02 00:26 UTC: their false findings and
    # misses led to engine changes (benchmarks/results/lint.md, "Second split")
    Tree("megatron-core", "0.16.1", "training engine (distributed optimizer, comm buffers)",
         "dev", pypi="megatron-core==0.16.1", check="megatron"),
    Tree("deepspeed", "0.19.8", "training/inference engine, XPU/NPU/HPU accelerators",
         "dev", pypi="deepspeed==0.19.8", check="deepspeed-0.19.8"),
    # test trees of the first split (2026-12-01 21:25 UTC), never tuned on
    Tree("lightllm", "fc72ffab9a3455cfb571f22d45ab777cc29de0de", "inference engine", "test",
         github="ModelTC/lightllm"),
    Tree("transformer-engine", "2.20.2", "kernel package (userbuffers, comm overlap)", "test",
         pypi="transformer-engine==2.20.2", check="transformer_engine"),
    Tree("infinistore", "0.2.35", "KV transfer (RDMA registration)", "test",
         pypi="infinistore==0.2.35", check="infinistore"),
    Tree("nvshmem4py", "0.4.1", "communication library (NVSHMEM bindings)", "test",
         pypi="nvshmem4py-cu12==0.4.1", check="nvshmem"),
    Tree("ai-dynamo", "1.6.1", "KV routing / transfer (NIXL)", "test", pypi="ai-dynamo==1.6.1",
         check="dynamo"),
    Tree("xformers", "0.0.35", "kernel package", "test", pypi="xformers==0.0.35",
         check="xformers"),
    # test trees added by the second split (2026-12-02 00:26 UTC), chosen, downloaded and
    # searched for real sites by hand before the engine was run on any of them
    Tree("aiter", "e4048607a535ace3a2b51ded31b1c8c2d45c0879", "ROCm kernel package (MoE, "
         "custom all-reduce, KV cache)", "test", github="ROCm/aiter"),
    Tree("mori", "624002c897a30928ec04c14fc167bf2b8a93f6ce", "ROCm EP / RDMA I/O library",
         "test", github="ROCm/mori"),
    Tree("uccl", "da914a2054c29725464803e379bb3b98de90dfa1", "communication library (EP, "
         "P2P, collectives)", "test", github="uccl-project/uccl"),
    Tree("ktransformers", "95009ea6856c0799e517e93cb12be5e8494bc7ce", "inference engine "
         "(CPU/GPU MoE offload)", "test", github="kvcache-ai/ktransformers"),
    Tree("rtp-llm", "4b8d39cd5cbe4eff0cf0661411e15be21ccc58b9", "inference engine", "test",
         github="alibaba/rtp-llm"),
    Tree("flux", "19831ca2d820e3e782ed1d15d8b52d0898b78b26", "comm-overlap kernel package",
         "test", github="bytedance/flux"),
    Tree("mscclpp", "1f5f065d7b13ab02df32c22568f38785d1eeec01", "communication library",
         "test", github="microsoft/mscclpp"),
    Tree("nixl", "8770b655a6b17b5cdf7d2b56b6e0be5392496df5", "KV transfer library", "test",
         github="ai-dynamo/nixl"),
    Tree("deepep", "dd758caf451848bd150e1046af3d0a73e5fff38d", "MoE expert-parallel comm",
         "test", github="deepseek-ai/DeepEP"),
    Tree("pplx-kernels", "2bd6e30fab358829bd01d1c0907be8088ff9e5e1", "MoE all-to-all kernels",
         "test", github="perplexityai/pplx-kernels"),
    Tree("kvcached", "e8e640638ba79f3ba7ce88d9692342d29d996e6d", "KV cache virtual memory",
         "test", github="ovg-project/kvcached"),
    Tree("cutlass", "7107b05535f8977f5ecb9d01ee203205b1fd9bc4", "kernel library (CuTe DSL "
         "grouped GEMM, Python back end)", "test", github="NVIDIA/cutlass"),
    Tree("nemo-rl", "7ea279abfbeb698b092856d0dab61e7cf39bc909", "RL post-training (vLLM/"
         "SGLang weight transfer)", "test", github="NVIDIA-NeMo/RL"),
    Tree("tilelang", "0.1.15", "kernel DSL and library", "test", pypi="tilelang==0.1.15",
         check="tilelang"),
    Tree("torchao", "0.18.0", "kernel / quantization package", "test", pypi="torchao==0.18.0",
         check="torchao"),
    Tree("torch-memory-saver", "0.0.10", "CUDA virtual-memory pauser", "test",
         pypi="torch-memory-saver==0.0.10", check="torch_memory_saver"),
)

@dataclass(frozen=True)
class RealSite:
    """A place that writes device addresses into an integer table or combines them with an
    integer array, found without the engine."""

    where: tuple[tuple[str, int, int], ...]
    """(path, first line, last line): the table fill, then any other lines a finding may
    point at for the same defect (a helper's callers)."""
    what: str
    category: str = "defect"
    """``defect`` (breaks at addresses >= 2**63 or between torch 2.13 and 2.14: found by
    the default rules), ``convention`` (keeps the bits: uint64 tables) or ``host``."""


def _one(path: str, first: int, last: int, what: str, category: str = "defect") -> RealSite:
    return RealSite(((path, first, last),), what, category)


_TD = "python/little_kernel/design"
_TDK = "python/triton_dist/kernels"
_CUT = "examples/python/CuTeDSL"
_CUTLASS_TABLES: tuple[tuple[str, int], ...] = tuple(
    (f"cute/{folder}", line) for folder, line in (
        ("hopper/kernel/grouped_gemm/grouped_gemm.py", 2193),
        ("hopper/kernel/grouped_gemm/grouped_gemm.py", 2294),
        ("blackwell/kernel/grouped_gemm/grouped_gemm.py", 2005),
        ("blackwell/kernel/grouped_gemm/grouped_gemm.py", 2153),
        *((f"blackwell/kernel/blockscaled_grouped_gemm/{name}", line)
          for name, lines in (("grouped_blockscaled_gemm.py", (2854, 2862, 3051, 3058)),
                              ("sm103_grouped_blockscaled_gemm.py", (2798, 2805, 2976, 2983)))
          for line in lines),
    )
)
"""cutlass's grouped-GEMM pointer tables (per-group data_ptr()s from a helper's tuple)."""
_MEG = "megatron/core/resharding/nvshmem_copy_service/planning/gpu_execution_planner.py"

SITES: dict[str, tuple[RealSite, ...]] = {
    "triton-distributed": (
        _one("FlashComm/python/flash_comm/buffer/symmetric.py", 121, 121,
             "int64 torch.tensor of IPC peer pointers"),
        _one(f"{_TD}/flashcomm_ep_kernels.py", 296, 296, "int64 torch.tensor([data_ptr()])"),
        _one(f"{_TD}/flashcomm_ep_kernels.py", 298, 298, "int64 torch.tensor([data_ptr()])"),
        _one(f"{_TD}/test_flashcomm_compute.py", 277, 277, "int64 torch.tensor of data_ptr()s"),
        _one(f"{_TD}/test_flashcomm_multi_gpu.py", 202, 202, "int64 torch.tensor of peer ptrs"),
        RealSite(((f"{_TD}/test_flashcomm_torchrun.py", 186, 186),
                  (f"{_TD}/test_flashcomm_torchrun.py", 289, 293)),
                 "make_ptr_tensor helper: int64 torch.tensor, called with 5 peer-pointer lists"),
        _one(f"{_TDK}/amd/allgather_gemm.py", 903, 904, "int64 tensor setitem of data_ptr()s"),
        _one(f"{_TDK}/amd/allgather_gemm.py", 940, 940, "torch.tensor of data_ptr()s, no dtype"),
        _one(f"{_TDK}/amd/gemm_allreduce.py", 60, 60, "torch.tensor of data_ptr()s, no dtype"),
        _one(f"{_TDK}/amd/gemm_reduce_scatter.py", 411, 411, "torch.tensor, no dtype"),
        _one(f"{_TDK}/amd/gemm_reduce_scatter.py", 415, 415, "torch.tensor, no dtype"),
        _one(f"{_TDK}/nvidia/sp_ag_attention_inter_node.py", 79, 79, "torch.tensor, no dtype"),
        _one(f"{_TDK}/nvidia/sp_ag_attention_inter_node.py", 88, 88, "torch.tensor, no dtype"),
        _one(f"{_TDK}/nvidia/sp_ag_attention_intra_node.py", 75, 75, "torch.tensor, no dtype"),
        _one(f"{_TDK}/nvidia/sp_ag_attention_intra_node.py", 79, 79, "torch.tensor, no dtype"),
        _one(f"{_TDK}/nvidia/ulysses_sp_infer_gemm_a2a.py", 91, 91, "int64 torch.tensor"),
        _one("python/triton_dist/test/amd/test_bandwidth.py", 222, 222, "int64 setitem"),
        _one("python/triton_dist/test/amd/test_bandwidth.py", 402, 402, "int64 setitem"),
        _one("python/triton_dist/test/amd/test_bandwidth.py", 616, 616, "torch.tensor, no dtype"),
    ),
    "lightllm": (
        _one("lightllm/common/deepseek2_mem_manager.py", 121, 121, "uint64 torch.tensor",
             "convention"),
        _one("lightllm/common/deepseek2_mem_manager.py", 174, 174, "uint64 torch.tensor",
             "convention"),
        _one("unit_tests/common/kv_trans_kernel/test_kv_trans_v2.py", 19, 19,
             "uint64 torch.tensor", "convention"),
        _one("unit_tests/common/kv_trans_kernel/test_kv_trans_v2.py", 53, 53,
             "uint64 torch.tensor", "convention"),
    ),
    "megatron-core": (
        RealSite(((_MEG, 213, 214), (_MEG, 74, 74), (_MEG, 138, 138)),
                 "_plan_kernel_args: int64 torch.tensor of chunk src/dst addresses (data_ptr() "
                 "of user tensors and of the symmetric send/recv slots), called twice"),
    ),
    "deepspeed": (
        _one("deepspeed-0.19.8/deepspeed/inference/v2/ragged/ragged_wrapper.py", 196, 196,
             "torch.tensor (no dtype: int64) of kv_blocks_ptr values (data_ptr() of each "
             "sequence's KV block ids, a property of another module) appended to a list "
             "attribute in another method"),
    ),
    # second split (2026-12-02): found by grep and reading, before the engine ran on them
    "aiter": (
        RealSite((("aiter/ops/flydsl/kernels/flydsl_dispatch_combine_intranode_op.py", 370,
                   370),
                  ("aiter/ops/flydsl/kernels/flydsl_dispatch_combine_intranode_op.py", 502,
                   502),
                  ("aiter/ops/flydsl/kernels/flydsl_dispatch_combine_intranode_op.py", 575,
                   575)),
                 "build_p2p_table: int64 tensor setitem of shmem_ptr_p2p(t.data_ptr(), ...) "
                 "peer pointers (helper, two callers)"),
        _one("aiter/ops/flydsl/kernels/mega_moe/mega_moe_v2.py", 199, 199,
             "int64 torch.tensor of a list filled by subscript with 40 data_ptr()s"),
    ),
    "flux": (
        _one("python/flux/triton/gemm_rs.py", 288, 288,
             "torch.tensor (no dtype: int64) of data_ptr()s of IPC peer barriers"),
        _one("python/flux/triton/gemm_rs.py", 294, 296,
             "torch.tensor (no dtype: int64) of data_ptr()s of IPC peer output buffers"),
        _one("python/flux_triton/kernels/moe_gather_rs.py", 425, 434,
             "np.array(..., dtype=np.int64) of data_ptr()s"),
        _one("test/python/util/copy_utils.py", 175, 175, "np.array(data_ptr(), uint64)",
             "convention"),
        _one("test/python/util/copy_utils.py", 176, 176, "np.array(data_ptr(), uint64)",
             "convention"),
    ),
    "rtp-llm": (
        _one("rtp_llm/models_py/3rdparty/tile_kernels/mhc/multilayer_recompute_kernel.py", 27,
             27, "pinned int64 CPU tensor setitem of device data_ptr()s (copied to the GPU)"),
    ),
    "mscclpp": (
        # in the grep's output (`ctypes.addressof` under `np.array(`) but overlooked in the
        # reading; counted after the one test run pointed at it (DP008), as sglang's
        # pd_dcp_gather.py:63 was
        _one("python/mscclpp/utils.py", 61, 69,
             "uint64 np.array of ctypes.addressof() kernel-launch config (host addresses)",
             "host"),
    ),
    "kvcached": (
        _one("kvcached/integration/sglang/patches.py", 787, 791,
             "uint64 torch.tensor of KV-buffer data_ptr()s", "convention"),
    ),
    "nixl": (
        _one("src/api/python/_api.py", 1075, 1075,
             "uint64 numpy row store of tensor data_ptr()s (GPU or DRAM)", "convention"),
        _one("src/api/python/_api.py", 1193, 1193, "same (second descriptor path)",
             "convention"),
        # in the grep's output, overlooked in the reading; counted after the test run
        _one("examples/python/expanded_two_peers.py", 256, 262,
             "uint64 np.array of data_ptr() + offset descriptor rows", "convention"),
        _one("examples/python/expanded_two_peers.py", 263, 269,
             "uint64 np.array of a peer's base_addr + offset rows", "convention"),
    ),
    "cutlass": (
        *(_one(f"{_CUT}/{path}", line, line,
               "int64 torch.tensor of per-group data_ptr()s, appended from the tuple a "
               "module helper returns (create_tensor_and_stride / "
               "create_tensors_for_all_groups)")
          for path, line in _CUTLASS_TABLES),
        _one(f"{_CUT}/cute/blackwell/kernel/distributed/distributed_all_gather_gemm_blackwell.py",
             2199, 2201, "int64 torch.tensor of symmetric-memory buffer_ptrs"),
        _one(f"{_CUT}/cute_ext/blackwell/dense_gemm_ptr_array.py", 374, 378,
             "int64 torch.tensor of data_ptr()s"),
        RealSite((("python/cutlass_cppgen/backend/memory_manager.py", 97, 97),
                  *(("python/cutlass_cppgen/backend/gemm_operation.py", n, n)
                    for n in (275, 276, 277, 278, 777, 778, 779, 780))),
                 "todevice(list, np.int64): np.array of device pointers (int(ptr_A) of "
                 "tensor_to_ptr), helper called with 8 pointer lists"),
    ),
}
"""Real sites of the trees reviewed for issue 23 (sglang and LMCache: ``bench_check``'s
``REAL_SITES``; vLLM: its ``INVENTORY``). The trees without an entry (Transformer Engine,
InfiniStore, nvshmem4py, ai-dynamo, xformers, lmdeploy; of the second split: mori, uccl,
ktransformers, mscclpp, DeepEP, pplx-kernels, tilelang, torchao, torch-memory-saver, NeMo-RL)
have none: their addresses go to kernels and custom ops, RDMA/NIXL/shmem registration,
DLPack structs, CPU MoE kernels as Python lists, dict keys and equality tests."""

VERDICTS: dict[tuple[str, str, int, str], tuple[bool, str]] = {
    ("megatron-core", "megatron/core/datasets/indexed_dataset.py", 204, "DP002"): (
        False, "sequence_pointers are byte offsets into the .bin file, not addresses"),
    ("megatron-core", _MEG, 74, "DP002"): (
        True, "caller of _plan_kernel_args (int64 table of device addresses, line 213)"),
    ("megatron-core", _MEG, 138, "DP002"): (
        True, "caller of _plan_kernel_args (same defect as line 74)"),
    ("deepspeed", "deepspeed-0.19.8/deepspeed/comm/ccl.py", 53, "DP002"): (
        False, "get_kvs_addr returns oneCCL's key-value-store address bytes, cast to uint8"),
    ("deepspeed", "deepspeed-0.19.8/deepspeed/comm/ccl.py", 161, "DP002"): (
        False, "same (get_sub_kvs_addr)"),
    # second split's test trees, the one run of 2026-12-02 00:39 UTC (engine at 76ae1c7),
    # every default finding read in its function
    ("aiter", "aiter/ops/flydsl/kernels/mega_moe/mega_moe_v2.py", 199, "DP002"): (
        True, "torch.tensor(table, int64): table[slot] = <workspace tensor>.data_ptr() x40"),
    ("rtp-llm", "rtp_llm/models_py/3rdparty/tile_kernels/mhc/multilayer_recompute_kernel.py",
     27, "DP001"): (
        True, "pinned int64 host tensor holding device data_ptr()s (copied to the GPU)"),
    ("flux", "python/flux/triton/gemm_rs.py", 288, "DP002"): (
        True, "torch.tensor([b.data_ptr() ...]) of IPC peer barriers, no dtype: int64"),
    ("flux", "python/flux/triton/gemm_rs.py", 294, "DP002"): (
        True, "torch.tensor([buf.data_ptr() ...]) of IPC peer outputs, no dtype: int64"),
    ("flux", "python/flux_triton/kernels/moe_gather_rs.py", 426, "DP002"): (
        True, "np.array([A.data_ptr() ...] + ..., dtype=np.int64)"),
    **{("cutlass", f"{_CUT}/{path}", line, "DP002"): (
        True, "torch.tensor(ptrs, int64) of per-group device data_ptr()s from the helper's "
              "tuple")
       for path, line in _CUTLASS_TABLES},
    ("cutlass", f"{_CUT}/cute/blackwell/kernel/distributed/distributed_all_gather_gemm_blackwell.py",
     2199, "DP002"): (True, "torch.tensor(hdl.buffer_ptrs, int64): symmetric-memory peers"),
    ("cutlass", f"{_CUT}/cute_ext/blackwell/dense_gemm_ptr_array.py", 374, "DP002"): (
        True, "torch.tensor([t.data_ptr() ...], int64)"),
    **{("cutlass", "python/cutlass_cppgen/backend/gemm_operation.py", line, "DP002"): (
        True, "todevice(ptr_X_array, dtype=np.int64): np.array of int(self.ptr_X) device "
              "pointers in the helper; one defect reported at 4 of its callers (the message "
              "names torch.tensor(), the helper builds np.array)")
       for line in (275, 276, 277, 278)},
}
"""Hand verdicts of the findings of the issue-23 trees: (tree, path, line, code) -> (true
positive?, why). A finding inside a real site's lines is true without an entry here."""


def _known() -> None:
    """sglang and LMCache verdicts and sites from ``bench_check`` (reviewed there), and
    vLLM's inventory (its int64 sites are defects, the others convention)."""
    from benchmarks.bench_check import INVENTORY, REAL_SITES, REVIEWED

    for (path, line, code), verdict in REVIEWED.items():
        tree = "lmcache" if path.startswith("lmcache/") else (
            "sglang" if path.startswith("sglang/") else "vllm")
        VERDICTS.setdefault((tree, path, line, code), verdict)
    for tree, sites in REAL_SITES.items():
        SITES[tree] = tuple(_one(p, line, line, what) for p, line, what in sites)
    SITES["vllm"] = tuple(
        _one(s.path, s.first, s.last, s.what, "defect" if s.kind == "int64" else "convention")
        for s in INVENTORY
    )


def _cache() -> Path:
    root = os.environ.get("DEVPTR_CACHE_DIR") or Path(tempfile.gettempdir()) / "devptr-cache"
    return Path(root) / "corpus"


def _unpack(archive: Path, dest: Path) -> None:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(dest, [m for m in zf.namelist() if m.endswith(".py")])
        return
    with tarfile.open(archive) as tf:
        members = [m for m in tf.getmembers() if m.isfile() and m.name.endswith(".py")]
        tf.extractall(dest, members, filter="data")


def tree_root(tree: Tree, git_mirrors: Path | None = None) -> Path:
    """The unpacked tree (downloaded on first use)."""
    if tree.name == "vllm":
        return vllm_source_root()
    dest = _cache() / f"{tree.name}-{tree.version[:12]}"
    done = dest / ".unpacked"
    if done.exists():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    if tree.pypi:
        dl = dest / ".download"
        dl.mkdir(exist_ok=True)
        if not any(dl.iterdir()):
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            tree.pypi, "-d", str(dl)], check=True)
        _unpack(next(dl.iterdir()), dest)
    else:
        owner_name = tree.github.replace("/", "+")
        git_dir = git_mirrors / owner_name / "repo" if git_mirrors else None
        if git_dir is None or not git_dir.is_dir():
            git_dir = dest / ".git-bare"
            if not git_dir.is_dir():
                subprocess.run(["git", "clone", "--bare", "--filter=blob:none",
                                f"https://github.com/{tree.github}.git", str(git_dir)],
                               check=True)
        archive = dest / ".tree.tar"
        # only the Python files: some mirrors lack large binary blobs (LFS, media)
        subprocess.run(["git", f"--git-dir={git_dir}", "archive", "-o", str(archive),
                        tree.version, "--", ":(glob)**/*.py"], check=True)
        _unpack(archive, dest)
        archive.unlink()
    done.touch()
    return dest


def run_check(root: Path, target: str, jobs: int, *extra: str) -> dict[str, Any]:
    """``devptr check TARGET --format json`` in *root* (the real CLI, in a subprocess)."""
    proc = subprocess.run(
        [sys.executable, "-m", "devptr.cli", "check", target, "--format", "json",
         "--jobs", str(jobs), "--no-progress", *extra],
        capture_output=True, text=True, cwd=root, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"devptr check failed ({proc.returncode}): {proc.stderr}")
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def _located(report: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(Path(f["path"]).as_posix(), f["line"], f["code"]) for f in report["findings"]]


@dataclass(frozen=True)
class Score:
    findings: int
    true: int
    unreviewed: int
    sites: int
    found: int


def _hits(site: RealSite, path: str, line: int) -> bool:
    return any(p == path and first <= line <= last for p, first, last in site.where)


def score(tree: Tree, located: list[tuple[str, int, str]], categories: frozenset[str], *,
          print_rows: bool) -> Score:
    """Precision (hand verdicts; a finding inside a real site is true) and recall (real
    sites of *categories* that a finding points into)."""
    sites = [s for s in SITES.get(tree.name, ()) if s.category in categories]
    every = SITES.get(tree.name, ())
    true = unreviewed = 0
    for path, line, code in located:
        verdict = VERDICTS.get((tree.name, path, line, code))
        if verdict is None:
            site = next((s for s in every if _hits(s, path, line)), None)
            verdict = None if site is None else (True, f"real site: {site.what}")
        if verdict is None:
            unreviewed += 1
        else:
            true += verdict[0]
        if print_rows:
            mark = "UNREVIEWED" if verdict is None else ("true" if verdict[0] else "FALSE")
            print(f"| `{path}:{line}` {code} | {mark} | {verdict[1] if verdict else ''} |")
    found = 0
    for site in sites:
        hit = any(_hits(site, p, line) for p, line, _ in located)
        found += hit
        if print_rows and not hit:
            path, first, _ = site.where[0]
            print(f"| `{path}:{first}` | MISSED | {site.what} |")
    return Score(len(located), true, unreviewed, len(sites), found)


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.0f}%" if b else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev,test")
    parser.add_argument("--trees", default="")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--git-mirrors", type=Path, default=None)
    parser.add_argument("--reports", type=Path, default=None,
                        help="Score the JSON reports saved by --dump instead of running.")
    parser.add_argument("--dump", type=Path, default=None,
                        help="Write each tree's JSON reports into this folder.")
    args = parser.parse_args()
    _known()
    splits = set(args.split.split(","))
    names = set(filter(None, args.trees.split(",")))
    chosen = [t for t in TREES if t.split in splits and (not names or t.name in names)]
    print(header())
    rows = []
    for tree in chosen:
        root = tree_root(tree, args.git_mirrors)
        n_files = sum(1 for _ in (root / tree.check).rglob("*.py"))
        if args.reports:
            default = json.loads((args.reports / f"{tree.name}.default.json").read_text())
            every = json.loads((args.reports / f"{tree.name}.all.json").read_text())
        else:
            default = run_check(root, tree.check, args.jobs)
            every = run_check(root, tree.check, args.jobs, "--select", "ALL")
        if args.dump:
            args.dump.mkdir(parents=True, exist_ok=True)
            for label, rep in (("default", default), ("all", every)):
                (args.dump / f"{tree.name}.{label}.json").write_text(json.dumps(rep, indent=1))
        print(f"## {tree.name} {tree.version[:12]} ({tree.split}, {n_files} files)\n")
        print("| finding (default rules) | verdict | why |\n|---|---|---|")
        d = score(tree, _located(default), frozenset({"defect"}), print_rows=True)
        a = score(tree, _located(every), frozenset({"defect", "convention", "host"}),
                  print_rows=False)
        print(f"\n`--select ALL`: {a.findings} findings, {a.unreviewed} unreviewed, "
              f"{a.found} of {a.sites} sites\n")
        rows.append((tree, n_files, d, a, len(default["errors"])))
    for split in ("dev", "test"):
        part = [r for r in rows if r[0].split == split]
        if not part:
            continue
        print(f"## {split} trees\n")
        print("| tree | version | files | findings | true | unreviewed | precision | sites "
              "| found | recall | ALL: sites found | not parsed |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|")
        for tree, n, d, a, errors in part:
            print(f"| {tree.name} | {tree.version[:12]} | {n} | {d.findings} | {d.true} | "
                  f"{d.unreviewed} | {_pct(d.true, d.findings - d.unreviewed)} | {d.sites} | "
                  f"{d.found} | {_pct(d.found, d.sites)} | {a.found} of {a.sites} | {errors} |")
        f = sum(r[2].findings - r[2].unreviewed for r in part)
        t = sum(r[2].true for r in part)
        s = sum(r[2].sites for r in part)
        h = sum(r[2].found for r in part)
        sa = sum(r[3].sites for r in part)
        ha = sum(r[3].found for r in part)
        print(f"| all {split} | | {sum(r[1] for r in part)} | {f} | {t} | | {_pct(t, f)} | {s} "
              f"| {h} | {_pct(h, s)} | {ha} of {sa} ({_pct(ha, sa)}) | |\n")


if __name__ == "__main__":
    main()
