"""Workloads shared by the benchmarks, each defined once.

The Mamba step: a 36-layer hybrid model, every layer with a conv window state (``[blocks,
4, 6144]`` fp16: 48 KiB a block) and a temporal state (``[blocks, 64, 128, 128]`` fp16:
2 MiB a block); one step copies, for each of 2 requests, both states of every layer from
one block to the next: 72 x 48 KiB + 72 x 2 MiB = 144 segments. ``quick`` (the CPU smoke
runs, and host-only timings on a CPU) keeps the 144 segments with small states
(384 B and 64 KiB).
"""

from __future__ import annotations

import torch

KIB = 1024
MIB = 1024 * KIB

LAYERS = 36
REQS = 2
BLOCKS = 6


def _dims(quick: bool) -> tuple[int, int]:
    """``(conv dim, temporal heads)``."""
    return (48, 2) if quick else (6144, 64)


def mamba_layers(layers: int = LAYERS) -> list[str]:
    """The Mamba layers' names (one KV-cache group)."""
    return [f"layer.{k}" for k in range(layers)]


def mamba_states(
    device: torch.device | str,
    quick: bool,
    *,
    blocks: int = BLOCKS,
    layers: int = LAYERS,
    random: bool = False,
) -> dict[str, list[torch.Tensor]]:
    """Per layer, its ``[conv, temporal]`` state tensors (``random``: filled, else empty)."""
    dim, heads = _dims(quick)
    make = torch.randn if random else torch.empty
    return {
        name: [
            make(blocks, 4, dim, dtype=torch.float16, device=device),
            make(blocks, heads, 128, 128, dtype=torch.float16, device=device),
        ]
        for name in mamba_layers(layers)
    }


def mamba_step_views(
    device: torch.device | str, quick: bool
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """One step's segments as views of the states: request ``r`` copies block ``2r`` of every
    state to block ``2r + 1`` (per layer: conv, temporal, for each request)."""
    srcs: list[torch.Tensor] = []
    dsts: list[torch.Tensor] = []
    for conv, temporal in mamba_states(device, quick).values():
        for r in range(REQS):
            srcs += [conv[2 * r], temporal[2 * r]]
            dsts += [conv[2 * r + 1], temporal[2 * r + 1]]
    return srcs, dsts


def mamba_segment_sizes(quick: bool) -> list[int]:
    """The step's byte counts, conv windows first: ``[48 KiB] * 72 + [2 MiB] * 72``."""
    dim, heads = _dims(quick)
    n = LAYERS * REQS
    return [4 * dim * 2] * n + [heads * 128 * 128 * 2] * n


def mamba_flat_batch(
    device: torch.device | str, quick: bool
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[int]]:
    """The step's segments as separate uint8 tensors: ``(sources, destinations, sizes)``."""
    sizes = mamba_segment_sizes(quick)
    srcs = [torch.randint(0, 255, (s,), dtype=torch.uint8, device=device) for s in sizes]
    dsts = [torch.empty(s, dtype=torch.uint8, device=device) for s in sizes]
    return srcs, dsts, sizes
