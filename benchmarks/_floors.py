"""The numpy-view floor: how vLLM-style code prepares a copy batch's three tables at best.

Addresses and sizes are written through numpy views of pinned host tensors (one slice write
per table), then each table is copied to the device (three copies). Benchmarks compare
devptr's table preparation against this one definition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch


def numpy_view_floor(
    srcs: Sequence[torch.Tensor], dsts: Sequence[torch.Tensor], device: torch.device
) -> tuple[Callable[[], None], list[torch.Tensor]]:
    """A call that fills src/dst address and size tables for ``srcs``/``dsts`` and uploads
    them, and the three device tables it fills (for checking what it wrote).

    Host tables are pinned when ``device`` is a CUDA device; they and the device tables are
    allocated here, once, so the returned call times only the writes and the copies.
    """
    n = len(srcs)
    pin = device.type == "cuda"
    host = [torch.zeros(n, dtype=torch.uint64, pin_memory=pin) for _ in range(2)] + [
        torch.zeros(n, dtype=torch.int64, pin_memory=pin)
    ]
    views = [t.numpy() for t in host]
    dev = [torch.zeros(n, dtype=t.dtype, device=device) for t in host]

    def floor() -> None:
        views[0][:n] = [t.data_ptr() for t in srcs]
        views[1][:n] = [t.data_ptr() for t in dsts]
        views[2][:n] = [t.nbytes for t in srcs]
        for c, g in zip(host, dev, strict=True):
            g[:n].copy_(c[:n], non_blocking=True)

    return floor, dev
