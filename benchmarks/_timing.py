"""Deprecated: use :mod:`benchmarks._harness` (kept until ``bench_core.py`` moves over).

Every name here is a thin alias of the harness, so there is one timing implementation.
"""

from __future__ import annotations

from collections.abc import Callable

from benchmarks._harness import command_line, header, host, machine_line

__all__ = ["command_line", "header", "machine", "per_call_us"]


def per_call_us(fn: Callable[[], object], *, number: int, repeat: int = 7) -> float:
    """Median over ``repeat`` runs of the time of one call, in microseconds."""
    return host(fn, number=number, repeat=repeat, warmup=1).median_us


def machine() -> str:
    """A one-line description of this machine and software."""
    return machine_line()
