"""Random copy plans for kernel tests: disjoint placements, poisoned outputs, references."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

POISON = 0xA5


@dataclass
class Plan:
    """Segments ``(src_off, dst_off, size)`` into a source arena and a destination arena."""

    src_offs: list[int]
    dst_offs: list[int]
    sizes: list[int]
    src_bytes: int
    dst_bytes: int


def _size(rng: random.Random, max_size: int) -> int:
    r = rng.random()
    if r < 0.1:
        return 0
    if r < 0.35:
        return rng.randint(1, 64)
    if r < 0.7:
        return rng.randint(65, min(4096, max_size))
    return rng.randint(min(4097, max_size), max_size)


def random_plan(seed: int, max_count: int = 24, max_size: int = 64 << 10) -> Plan:
    """Random count, sizes 0..max_size, random alignment offsets, disjoint destinations."""
    rng = random.Random(seed)
    count = rng.randint(1, max_count)
    sizes = [_size(rng, max_size) for _ in range(count)]
    src_offs: list[int] = []
    dst_offs: list[int] = []
    s = d = 0
    for n in sizes:
        s += rng.randint(0, 31)
        d += rng.randint(0, 31)
        src_offs.append(s)
        dst_offs.append(d)
        s += n
        d += n
    order = list(range(count))
    rng.shuffle(order)  # table order differs from memory order
    return Plan(
        [src_offs[k] for k in order],
        [dst_offs[k] for k in order],
        [sizes[k] for k in order],
        s + 64,
        d + 64,
    )


def arenas(plan: Plan, device: torch.device, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A random source arena and a poisoned destination arena (uint8)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, 256, (plan.src_bytes,), dtype=torch.uint8, generator=g).to(device)
    dst = torch.full((plan.dst_bytes,), POISON, dtype=torch.uint8, device=device)
    return src, dst


def reference(plan: Plan, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """What the destination arena must hold after the copies (computed with torch)."""
    want = dst.clone()
    for s, d, n in zip(plan.src_offs, plan.dst_offs, plan.sizes, strict=True):
        want[d : d + n] = src[s : s + n]
    return want


def scattered(sizes: list[int], seed: int, gap: int = 16) -> tuple[list[int], list[int], int, int]:
    """Source and destination offsets for ``sizes``, each segment after the previous one plus
    an independent random gap below ``gap`` on either side (so every segment has its own
    offsets modulo 16): ``(src_offs, dst_offs, src_bytes, dst_bytes)``."""
    rng = random.Random(seed)
    src_offs: list[int] = []
    dst_offs: list[int] = []
    s = d = 0
    for z in sizes:
        s += rng.randrange(gap)
        d += rng.randrange(gap)
        src_offs.append(s)
        dst_offs.append(d)
        s += z
        d += z
    return src_offs, dst_offs, s, d
