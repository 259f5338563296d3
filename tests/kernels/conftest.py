"""Kernel tests: the Triton interpreter on CPU-only machines, compiled kernels on a GPU.

Without a CUDA GPU, ``TRITON_INTERPRET=1`` is set here, before any devptr kernel module is
imported (the choice is fixed at that import). Tests marked ``gpu`` skip without a GPU
(the root conftest, through ``support.gpu``).
"""

from __future__ import annotations

import os

import pytest
import torch
from support.gpu import HAS_GPU

if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture
def kernel_device() -> torch.device:
    """Where kernel tests put memory and tables: the GPU when present, else the CPU."""
    return torch.device("cuda") if HAS_GPU else torch.device("cpu")
