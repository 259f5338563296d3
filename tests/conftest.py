"""Shared test configuration: GPU markers skip without the hardware (``support.gpu``), the
opt-in tests (vLLM's files, fresh venvs) skip unless asked for (``support.opt_in``), and
devptr.testing is a plugin (the ``high_addresses`` marker, the ``high_addresses_mode`` fixture)."""

from __future__ import annotations

import pytest
from support import gpu, opt_in

pytest_plugins = ["devptr.testing"]  # the high_addresses marker and fixtures


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu.apply_skips(items)
    opt_in.apply_skips(items)
