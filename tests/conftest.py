"""Shared test configuration: GPU markers skip without the hardware (see ``support.gpu``);
devptr.testing as a plugin (the ``high_addresses`` marker, the ``high_addresses_mode`` fixture)."""

from __future__ import annotations

import pytest
from support.gpu import apply_skips

pytest_plugins = ["devptr.testing"]  # the high_addresses marker and fixtures


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    apply_skips(items)
