"""Shared test configuration: GPU markers skip without the hardware (see ``support.gpu``)."""

from __future__ import annotations

import pytest
from support.gpu import apply_skips

from devptr.testing import high_addresses_mode  # noqa: F401  (fixture)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    apply_skips(items)
