"""Where the host time of one eager ``lamport_allreduce`` call goes, on one GPU.

A one-rank workspace (``local_group(1, ...)``: the kernel waits on its own slot only), a
64 KiB float32 message, host time per call of 2,000 back-to-back calls (median of 9
rounds, ``benchmarks/_harness.py``), for these pieces of one call:

- the whole call, with ``out`` given and allocating;
- the checks alone (the kernel launcher replaced by a stub that launches nothing);
- ``FastKernel.launch`` with the call's arguments (signature lookup and launch);
- the call's :class:`devptr.kernels._launch.Bound` launch, and the callable it wraps (on
  Triton 3.6, the compiled launcher's C entry point), when the tree has them;
- ways to allocate the result;

and a cProfile of 3,000 calls (top functions by own time). Written to run against an older
devptr tree too (``PYTHONPATH=OLD_TREE``), where pieces it lacks are skipped, for a
before/after in one session.

Run: ``PYTHONPATH=TREE python benchmarks/profile_lamport_host.py LABEL > FILE``.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import _harness as H
from devptr.adapters.lamport import local_group
from devptr.kernels import _launch
from devptr.kernels import lamport as L


def per_call_us(fn: H.Fn) -> float:
    torch.cuda.synchronize()
    t = H.host(fn, number=2000, repeat=9, warmup=3)
    torch.cuda.synchronize()
    return round(t.median_ns / 1e3, 2)


class _Stub:
    """Stands in for the kernel launcher: keeps the launch arguments, launches nothing."""

    def __init__(self) -> None:
        self.args: tuple[Any, ...] = ()

    def launch(self, *args: Any) -> None:
        self.args = args

    def bound(self, key: object) -> None:
        return None


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else "tree"
    dev = torch.device("cuda:0")
    torch.cuda.set_device(dev)
    (ws,) = local_group(1, 1 << 21, device=dev)
    x = torch.randn(16384, device=dev)
    out = torch.empty_like(x)

    def call() -> None:
        L.lamport_allreduce(x, ws, out=out)

    res: dict[str, Any] = {"label": label, "meta": H.meta()}
    res["call, out given"] = per_call_us(call)
    res["call, allocating"] = per_call_us(lambda: L.lamport_allreduce(x, ws))
    plan = L._PLANS.get(ws)
    assert plan is not None
    saved = dict(plan.calls)
    plan.calls.clear()  # the stub must see the launch (no bound launch kept yet)
    real, stub = L._KERNEL, _Stub()
    L._KERNEL = stub  # type: ignore[misc]
    try:
        res["checks only (launch stubbed)"] = per_call_us(call)
    finally:
        L._KERNEL = real  # type: ignore[misc]
        plan.calls.clear()
        plan.calls.update(saved)
    args = stub.args
    res["FastKernel.launch (signature lookup + launch)"] = per_call_us(lambda: real.launch(*args))
    _, grid, key, _, _, _, raw = args
    bound = real.bound(key) if hasattr(real, "bound") else None
    if bound is not None:
        res["Bound launch"] = per_call_us(lambda: bound(grid, raw))
        fn, head, tail = bound._fn, bound._head, bound._tail
        res["Bound wraps"] = getattr(fn, "__qualname__", type(fn).__name__)
        stream = _launch._State.get_stream(dev.index)  # type: ignore[misc]
        res["the wrapped launcher alone"] = per_call_us(lambda: fn(*grid, stream, *head, *raw, *tail))
    res["allocate: empty_like(x)"] = per_call_us(lambda: torch.empty_like(x))
    res["allocate: empty_like(x, memory_format=contiguous)"] = per_call_us(
        lambda: torch.empty_like(x, memory_format=torch.contiguous_format)
    )
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(3000):
        call()
    pr.disable()
    torch.cuda.synchronize()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).strip_dirs().sort_stats("tottime").print_stats(14)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    start = next((k for k, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    print(json.dumps(res, indent=1))
    print("\n".join(lines[start:]))
    ws.close()


if __name__ == "__main__":
    main()
