"""The one definition of "needs a GPU": markers, counts and the skip applied at collection.

Mark a test (or a module, with ``pytestmark``) ``@pytest.mark.gpu`` when it needs one CUDA
GPU and ``@pytest.mark.multigpu`` when it needs two or more; the root ``conftest.py`` calls
:func:`apply_skips`, which skips them where the hardware is missing. For a test that needs
``n`` GPUs, use :func:`needs_gpus`.
"""

from __future__ import annotations

from collections.abc import Container

import pytest
import torch

GPU_COUNT: int = torch.cuda.device_count() if torch.cuda.is_available() else 0
"""CUDA GPUs visible to this process."""
HAS_GPU: bool = GPU_COUNT >= 1

MARKERS: dict[str, str] = {
    "gpu": "needs a CUDA GPU (skipped without one)",
    "multigpu": "needs two or more CUDA GPUs (skipped otherwise)",
}
"""Marker name -> description (pyproject.toml declares the same markers for --strict-markers)."""

gpu = pytest.mark.gpu
multigpu = pytest.mark.multigpu


def needs_gpus(n: int) -> pytest.MarkDecorator:
    """A ``skipif`` mark: skip unless at least ``n`` CUDA GPUs are visible."""
    return pytest.mark.skipif(GPU_COUNT < n, reason=f"needs {n} CUDA GPUs (found {GPU_COUNT})")


def skip_reason(keywords: Container[str], gpu_count: int = GPU_COUNT) -> str | None:
    """Why an item with these keywords/markers must skip on ``gpu_count`` GPUs (None: it runs)."""
    if "multigpu" in keywords and gpu_count < 2:
        return f"needs two or more CUDA GPUs (found {gpu_count})"
    if "gpu" in keywords and gpu_count < 1:
        return "needs a CUDA GPU"
    return None


def apply_skips(items: list[pytest.Item], gpu_count: int = GPU_COUNT) -> None:
    """Add a skip mark to every collected ``gpu``/``multigpu`` item the machine cannot run."""
    for item in items:
        reason = skip_reason(item.keywords, gpu_count)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
