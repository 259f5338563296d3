"""The switch of the kernel path's replayed CUDA graphs (devptr.adapters.ec_connector.swap_graphs);
the graphs themselves need a GPU: test_ec_graphs_gpu.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devptr import PtrTypeError
from devptr.adapters.ec_connector import swap_graphs


@pytest.fixture(autouse=True)
def restore() -> Iterator[None]:
    before = swap_graphs()
    yield
    swap_graphs(before)


def test_the_switch_reads_and_sets_the_process_setting() -> None:
    assert swap_graphs() is True  # on by default
    assert swap_graphs(False) is False
    assert swap_graphs() is False
    assert swap_graphs(True) is True


@pytest.mark.parametrize("bad", [1, 0, "yes", 1.0])
def test_the_switch_refuses_what_is_not_a_bool(bad: object) -> None:
    with pytest.raises(PtrTypeError, match="enabled must be a bool"):
        swap_graphs(bad)  # type: ignore[arg-type]
    assert swap_graphs() is True
