"""Shared test configuration: GPU markers skip without the hardware."""

from __future__ import annotations

import pytest
import torch

from devptr.testing import high_addresses_mode  # noqa: F401  (fixture)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ngpu = torch.cuda.device_count() if torch.cuda.is_available() else 0
    for item in items:
        if "gpu" in item.keywords and ngpu < 1:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))
        if "multigpu" in item.keywords and ngpu < 2:
            item.add_marker(pytest.mark.skip(reason="needs two CUDA GPUs"))
