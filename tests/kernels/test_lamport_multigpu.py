"""The Lamport all-reduce across real GPUs: one process per GPU, torch symmetric memory.

Every rank regenerates every rank's input from a seed, so it knows the exact answer (the
float32 sum in rank order, rounded once) and checks its output bit for bit, and against
NCCL's ``all_reduce`` within the dtype's tolerance. Generalises to any world size; each
size skips unless that many GPUs are present. NVLink multicast stays off in every process.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import traceback
from pathlib import Path
from typing import Any

import pytest
import torch

pytestmark = pytest.mark.multigpu

NO_MULTICAST = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
SIZES_BYTES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
ROUNDS = 100
MAX_SPINS = 1 << 20  # well under a minute even for the largest size: no hang
TIMEOUT_S = 120
TOL = {torch.float32: 1e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _input(rnd: int, rank: int, numel: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    g = torch.Generator(device=device).manual_seed(1_000_003 * rnd + rank)
    x = torch.randn(numel, generator=g, device=device)
    x[::97] = -0.0  # negative zeros must arrive (as +0.0), not read as empty slots
    return x.to(dtype)


def _worker(rank: int, world: int, port: int, out_dir: str) -> None:
    os.environ.update(NO_MULTICAST)
    result: dict[str, Any] = {"rank": rank}
    try:
        import datetime

        import torch.distributed as dist

        from devptr import Encoding
        from devptr.adapters.lamport import LamportWorkspace, comm_size_for
        from devptr.kernels import lamport_allreduce

        torch.cuda.set_device(rank)
        dev = torch.device("cuda", rank)
        dist.init_process_group(
            "nccl",
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=120),
            device_id=dev,
        )
        ws = LamportWorkspace(rank, world, comm_size_for(max(SIZES_BYTES), world), dist.group.WORLD)
        result["encoding"] = ws.encoding.name
        result["lamport_section"] = [p.addr for p in ws.peer_ptrs]
        assert ws.encoding is Encoding.I64 and ws.workspace.dtype == torch.int64
        stats: dict[str, Any] = {}
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            worst_exact = 0
            worst_nccl = 0.0
            for rnd in range(ROUNDS):
                nbytes = SIZES_BYTES[rnd % len(SIZES_BYTES)]
                numel = nbytes // torch.tensor([], dtype=dtype).element_size()
                xs = [_input(rnd, r, numel, dtype, dev) for r in range(world)]
                out = lamport_allreduce(xs[rank], ws, max_spins=MAX_SPINS)
                want = torch.zeros(numel, dtype=torch.float32, device=dev)
                for x in xs:
                    want += x.float()
                want = want.to(dtype)
                bits = torch.int32 if dtype == torch.float32 else torch.int16
                worst_exact += int((out.view(bits) != want.view(bits)).sum().item())
                ref = xs[rank].clone()
                dist.all_reduce(ref)
                scale = max(1.0, ref.float().abs().max().item())
                worst_nccl = max(worst_nccl, (out.float() - ref.float()).abs().max().item() / scale)
            ws.check()
            stats[str(dtype)] = {"mismatched_bits": worst_exact, "max_rel_err_vs_nccl": worst_nccl}
        # captured in a CUDA graph: 10 calls a replay, 3 replays
        x = _input(7, rank, 8192, torch.float32, dev)
        xs = [_input(7, r, 8192, torch.float32, dev) for r in range(world)]
        out = torch.empty_like(x)
        lamport_allreduce(x, ws, out=out)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(10):
                lamport_allreduce(x, ws, out=out, max_spins=MAX_SPINS)
        for _ in range(3):
            out.zero_()
            dist.barrier()
            graph.replay()
        torch.cuda.synchronize()
        want = torch.zeros_like(out)
        for xx in xs:
            want += xx
        stats["graph_equal"] = bool(torch.equal(out, want))
        ws.check()
        result["flag"] = ws.flag_buffer.tolist()
        result["stats"] = stats
        ws.close(barrier=True)
        result["closed"] = ws.closed
        dist.destroy_process_group()
    except BaseException:
        result["error"] = traceback.format_exc()
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))


@pytest.mark.parametrize("world", [2, 4, 8])
def test_lamport_allreduce_matches_nccl(world: int, tmp_path: Path) -> None:
    if torch.cuda.device_count() < world:
        pytest.skip(f"needs {world} CUDA GPUs (found {torch.cuda.device_count()})")
    os.environ.update(NO_MULTICAST)
    ctx = mp.get_context("spawn")
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, world, port, str(tmp_path))) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(TIMEOUT_S)
    hung = [r for r, p in enumerate(procs) if p.is_alive()]
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    assert not hung, f"ranks {hung} hung for {TIMEOUT_S} s"
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(world)]
    for res in results:
        assert "error" not in res, f"rank {res['rank']}:\n{res['error']}"
    print(json.dumps([res["stats"] for res in results], indent=1))
    for res in results:
        for dtype, s in res["stats"].items():
            if dtype == "graph_equal":
                assert s is True, f"rank {res['rank']}: graph replay gave a wrong sum"
                continue
            assert s["mismatched_bits"] == 0, (res["rank"], dtype, s)
            assert s["max_rel_err_vs_nccl"] <= TOL[getattr(torch, dtype.split(".")[1])], (
                res["rank"],
                dtype,
                s,
            )
        assert res["closed"] is True
        assert res["flag"][:2] == [0, 0]
    assert len({res["flag"][2] for res in results}) == 1  # every rank on the same round buffer
