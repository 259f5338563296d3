"""Shared test configuration: GPU markers skip without the hardware (``support.gpu``), the
opt-in tests (vLLM's files, fresh venvs) skip unless asked for (``support.opt_in``), the
selected tests' mypy runs start in the background once collection is done
(``support.mypy_runs``), and devptr.testing is a plugin (the ``high_addresses`` marker, the
``high_addresses_mode`` fixture)."""

from __future__ import annotations

import pytest
from support import gpu, mypy_runs, opt_in

pytest_plugins = ["devptr.testing"]  # the high_addresses marker and fixtures


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu.apply_skips(items)
    opt_in.apply_skips(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    mypy_runs.start_for(item for item in session.items if not item.get_closest_marker("skip"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    mypy_runs.stop()
