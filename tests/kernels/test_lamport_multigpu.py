"""The Lamport all-reduce across real GPUs: one process per GPU, torch symmetric memory.

Every rank regenerates every rank's input from a seed, so it knows the exact answer (the
float32 sum in rank order, rounded once) and checks its output bit for bit, and against
NCCL's ``all_reduce`` within the dtype's tolerance. Generalises to any world size; each
size skips unless that many GPUs are present. NVLink multicast stays off in every process.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from support.gpu import needs_gpus

from devptr.testing import spawn

pytestmark = pytest.mark.multigpu

SIZES_BYTES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
ROUNDS = 100
MAX_SPINS = 1 << 20  # well under a minute even for the largest size: no hang
TIMEOUT_S = 420  # cold Triton caches: every rank compiles 3 dtypes x 6 sizes (and graph variants) first
TOL = {torch.float32: 1e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}


def _input(rnd: int, rank: int, numel: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    g = torch.Generator(device=device).manual_seed(1_000_003 * rnd + rank)
    x = torch.randn(numel, generator=g, device=device)
    x[::97] = -0.0  # negative zeros must arrive (as +0.0), not read as empty slots
    return x.to(dtype)


def _worker(rank: int, world: int) -> dict[str, Any]:
    """One rank on GPU ``rank``, inside an NCCL group set up by :func:`devptr.testing.spawn`."""
    import torch.distributed as dist

    from devptr import Encoding
    from devptr.adapters.lamport import LamportWorkspace, comm_size_for
    from devptr.kernels import lamport_allreduce

    result: dict[str, Any] = {"rank": rank}
    dev = torch.device("cuda", rank)
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
    # a sequence of calls of different sizes and dtypes (eager first: the launch caches are
    # filled), captured in one CUDA graph and replayed 3 times with new inputs each time
    seq = [(8192, torch.float32), (4096, torch.bfloat16), (100, torch.float32), (3000, torch.float16)]
    bufs = [(torch.empty(n, dtype=dt, device=dev), torch.empty(n, dtype=dt, device=dev)) for n, dt in seq]

    def calls() -> None:
        for x, out in bufs:
            lamport_allreduce(x, ws, out=out, max_spins=MAX_SPINS)

    calls()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        calls()
    graph_ok = True
    for rep in range(3):
        wants = []
        for k, ((n, dt), (x, out)) in enumerate(zip(seq, bufs, strict=True)):
            xs = [_input(100 + 10 * rep + k, r, n, torch.float32, dev) for r in range(world)]
            x.copy_(xs[rank].to(dt))
            out.zero_()
            want = torch.zeros(n, dtype=torch.float32, device=dev)
            for xx in xs:
                want += xx.to(dt).float()
            wants.append(want.to(dt))
        dist.barrier()
        graph.replay()
        torch.cuda.synchronize()
        graph_ok &= all(torch.equal(out, w) for (_, out), w in zip(bufs, wants, strict=True))
    stats["graph_equal"] = graph_ok
    ws.check()
    result["flag"] = ws.flag_buffer.tolist()
    result["stats"] = stats
    ws.close(barrier=True)
    result["closed"] = ws.closed
    return result


@pytest.mark.parametrize("world", [pytest.param(w, marks=needs_gpus(w)) for w in (2, 4, 8)])
def test_lamport_allreduce_matches_nccl(world: int) -> None:
    results = spawn(_worker, world, backend="nccl", timeout_s=TIMEOUT_S)
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
