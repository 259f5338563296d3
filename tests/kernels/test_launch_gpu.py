"""The direct launch path (``devptr.kernels._launch``) on a CUDA GPU.

A bound launch must give the same results as Triton's generic launcher, step aside when a
launch hook is installed (a profiler must see every launch) and when another device is
current (the launch must still land on the tables' device).
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton")

from support.gpu import needs_gpus

from devptr.adapters.lamport import local_group
from devptr.kernels import batch_memcpy, lamport
from devptr.kernels._launch import Bound

pytestmark = pytest.mark.gpu


def _copy_case(device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    src = torch.randint(0, 256, (1 << 14,), dtype=torch.uint8, device=device)
    dst = torch.zeros_like(src)
    offs = torch.tensor([0, 4096, 9000], dtype=torch.int64, device=device)
    sizes = torch.tensor([4096, 4093, 3000], dtype=torch.int64, device=device)
    return src, dst, offs + src.data_ptr(), offs + dst.data_ptr(), sizes


def test_repeated_calls_use_one_bound_launch_and_stay_exact() -> None:
    (ws,) = local_group(1, 1 << 16, device="cuda")
    x = torch.randn(2048, device="cuda")
    out = torch.empty_like(x)
    for k in range(5):
        x.add_(1.0)
        lamport.lamport_allreduce(x, ws, out=out)
        torch.cuda.synchronize()
        assert torch.equal(out, x), k
    plan = lamport._PLANS.get(ws)
    assert plan is not None
    calls = list(plan.calls.values())
    bound = [b for c in calls for b in c.bound if b is not None]
    assert len(bound) == 1 and isinstance(bound[0], Bound)
    ws.check()
    ws.close()


def test_a_launch_hook_sees_every_launch() -> None:
    from triton import knobs

    chain = knobs.runtime.launch_enter_hook
    if not hasattr(chain, "add"):
        pytest.skip("this Triton has no launch hook chains")
    src, dst, s_tab, d_tab, sizes = _copy_case("cuda")
    (ws,) = local_group(1, 1 << 16, device="cuda")
    x = torch.randn(1024, device="cuda")
    out = torch.empty_like(x)
    for _ in range(2):  # signatures launched and bound before the hook is installed
        batch_memcpy(s_tab, d_tab, sizes)
        lamport.lamport_allreduce(x, ws, out=out)
    seen: list[object] = []
    chain.add(seen.append)
    try:
        dst.zero_()
        batch_memcpy(s_tab, d_tab, sizes)
        lamport.lamport_allreduce(x, ws, out=out)
        torch.cuda.synchronize()
    finally:
        chain.remove(seen.append)
    assert len(seen) == 2
    for o, n in ((0, 4096), (4096, 4093), (9000, 3000)):
        assert torch.equal(dst[o : o + n], src[o : o + n])
    assert torch.equal(out, x)
    seen.clear()
    batch_memcpy(s_tab, d_tab, sizes)  # the hook is gone: the bound path again
    assert seen == []
    ws.check()
    ws.close()


@needs_gpus(2)
@pytest.mark.multigpu
def test_launches_land_on_the_tables_device_when_another_is_current() -> None:
    src, dst, s_tab, d_tab, sizes = _copy_case("cuda:1")
    (ws,) = local_group(1, 1 << 16, device="cuda:1")
    x = torch.randn(1024, device="cuda:1")
    out = torch.empty_like(x)
    with torch.cuda.device(1):  # bind both signatures on cuda:1
        batch_memcpy(s_tab, d_tab, sizes)
        lamport.lamport_allreduce(x, ws, out=out)
    torch.cuda.synchronize(1)
    with torch.cuda.device(0):
        dst.zero_()
        out.zero_()
        batch_memcpy(s_tab, d_tab, sizes)
        lamport.lamport_allreduce(x, ws, out=out)
        assert torch.cuda.current_device() == 0
    torch.cuda.synchronize(1)
    for o, n in ((0, 4096), (4096, 4093), (9000, 3000)):
        assert torch.equal(dst[o : o + n], src[o : o + n])
    assert torch.equal(out, x)
    ws.check()
    ws.close()
