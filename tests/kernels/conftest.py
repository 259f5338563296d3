"""Kernel tests: the Triton interpreter on CPU-only machines, compiled kernels on a GPU.

Without a CUDA GPU, ``TRITON_INTERPRET=1`` is set here, before any devptr kernel module is
imported (the choice is fixed at that import). Tests marked ``gpu`` skip without a GPU.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU and _HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))


@pytest.fixture
def kernel_device() -> torch.device:
    """Where kernel tests put memory and tables: the GPU when present, else the CPU."""
    return torch.device("cuda") if HAS_GPU else torch.device("cpu")
