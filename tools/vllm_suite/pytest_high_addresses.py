"""pytest plugin: run every test inside :func:`devptr.testing.high_addresses`.

Loaded by the suite's ``high`` variants (``-p pytest_high_addresses`` with this folder on
``PYTHONPATH``): every ``data_ptr()`` a test's code reads reports the address with bit 63
flipped, as on Intel XPU, so each host path that stores or adds addresses meets values at
or above 2**63. Nothing dereferences them on the CPU-only paths these tests take. The runs
are CPU-only (no device tensors), so host tensors are flipped too (``host=True``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devptr.testing import high_addresses


@pytest.fixture(autouse=True)
def _devptr_high_addresses() -> Iterator[None]:
    with high_addresses(host=True):
        yield
