"""Shared test configuration: GPU markers skip without the hardware (``support.gpu``), and
the opt-in tests (vLLM's files, fresh venvs) skip unless asked for (``support.opt_in``)."""

from __future__ import annotations

import pytest
from support import gpu, opt_in

from devptr.testing import high_addresses_mode  # noqa: F401  (fixture)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu.apply_skips(items)
    opt_in.apply_skips(items)
