"""``devptr selftest``: the checks an XPU, ROCm or CUDA owner runs on their own machine.

On the accelerator it finds (XPU, then CUDA/HIP, else the CPU with Triton's interpreter) it
exercises real device allocations, bit-exact tables in both encodings, devptr's Triton
kernels compiled for that backend, the scalar-address rule's single compile-cache entry,
and a CUDA/HIP graph capture; then prints a short markdown report to paste into the RFC
discussion. Layer: like :mod:`devptr.demo` (above the adapters; imports core and kernels).
"""

from __future__ import annotations

import platform
from collections.abc import Sequence

import numpy as np
import torch

from devptr.selftest._checks import CHECKS, Result, Target, find_target, interpreter_env


def run_selftest(device: str | None = None) -> tuple[Target, list[Result]]:
    """Run every check on ``device`` (default: the first accelerator torch sees)."""
    target = find_target(device)
    interpreter_env(target)
    return target, [check(target) for check in CHECKS]


def _versions() -> str:
    try:
        import triton

        tri = f"triton {triton.__version__}"
    except ImportError:
        tri = "triton not installed"
    hip = getattr(torch.version, "hip", None)
    cuda = getattr(torch.version, "cuda", None)
    runtime = f", HIP {hip}" if hip else (f", CUDA {cuda}" if cuda else "")
    py = platform.python_version()
    return f"torch {torch.__version__}{runtime}, {tri}, numpy {np.__version__}, Python {py}"


def format_report(target: Target, results: Sequence[Result]) -> str:
    """The markdown report: one header line, then one table row per check."""
    import devptr

    lines = [
        f"devptr {devptr.__version__} selftest on `{target.device}` ({target.backend}: {target.name})",
        f"{_versions()}",
        "",
        "| check | result | detail |",
        "|---|---|---|",
    ]
    lines += [f"| {r.name} | {r.status} | {r.detail.replace('|', '/')} |" for r in results]
    failed = sum(r.status == "FAIL" for r in results)
    lines += ["", f"{len(results) - failed} of {len(results)} checks without failure"]
    return "\n".join(lines) + "\n"


__all__ = ["Result", "Target", "format_report", "run_selftest"]
