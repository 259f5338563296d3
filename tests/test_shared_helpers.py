"""The shared test helpers: support.gpu, support.opt_in, devptr.testing's spawn and FakeState
(the benchmark harness has its own tests: benchmarks/test_harness.py)."""

from __future__ import annotations

import pytest
import torch
from support import opt_in
from support.gpu import MARKERS, skip_reason

from devptr import AddressRangeError
from devptr.testing import SIGN_BIT_PLUS_42, TOP_ALIGNED, FakeState, SpawnError, spawn


def test_skip_reason_per_marker_and_gpu_count() -> None:
    assert skip_reason({"gpu"}, 0) == "needs a CUDA GPU"
    assert skip_reason({"gpu"}, 1) is None
    assert skip_reason({"multigpu"}, 1) is not None
    assert skip_reason({"multigpu", "gpu"}, 2) is None
    assert skip_reason({"slow"}, 0) is None


def test_markers_are_declared_for_strict_markers(pytestconfig: pytest.Config) -> None:
    declared = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(MARKERS) | set(opt_in.MARKERS) <= declared


def test_fake_state_reports_meta_layout_at_any_address() -> None:
    s = FakeState(SIGN_BIT_PLUS_42, (4, 3, 5), torch.bfloat16)
    assert s.data_ptr() == SIGN_BIT_PLUS_42
    assert tuple(s.shape) == (4, 3, 5)
    assert s.stride() == (15, 5, 1)
    assert s.element_size() == 2
    assert FakeState(TOP_ALIGNED, (1,), torch.uint8).data_ptr() == TOP_ALIGNED
    with pytest.raises(AddressRangeError, match="0x10000000000000000"):
        FakeState(1 << 64, (1,), torch.uint8)


def _sum_ranks(rank: int, world: int, scale: int) -> list[int]:
    import torch.distributed as dist

    t = torch.tensor([rank * scale, 1])
    dist.all_reduce(t)
    return [rank, world, *t.tolist()]


def _fail_on_rank_one(rank: int, world: int) -> int:
    if rank == 1:
        raise ValueError("rank one fails on purpose")
    return rank


def _hang(rank: int, world: int) -> None:
    import time

    time.sleep(600)


def _die(rank: int, world: int) -> None:
    import os

    os._exit(3)


def test_spawn_kills_ranks_past_the_timeout() -> None:
    with pytest.raises(SpawnError, match=r"ranks \[0, 1\] of 2 did not finish within 3 s"):
        spawn(_hang, 2, timeout_s=3)


def test_spawn_reports_a_rank_that_died_without_a_result() -> None:
    with pytest.raises(SpawnError, match="rank 0 exited with code 3 before reporting a result"):
        spawn(_die, 1)


def test_spawn_runs_a_gloo_group_and_returns_results_in_rank_order() -> None:
    got = spawn(_sum_ranks, 3, backend="gloo", args=(10,), timeout_s=120)
    assert got == [[r, 3, 30, 3] for r in range(3)]


def test_spawn_reports_a_rank_that_raised() -> None:
    with pytest.raises(SpawnError, match=r"(?s)rank 1 of 2 raised:.*rank one fails on purpose"):
        spawn(_fail_on_rank_one, 2, timeout_s=120)


def test_opt_in_rules() -> None:
    assert opt_in.skip_reason({"vllm"}, {}) == opt_in.VLLM_REASON
    assert "DEVPTR_VLLM_TREE" in opt_in.VLLM_REASON and "DEVPTR_NETWORK_TESTS=1" in opt_in.VLLM_REASON
    assert opt_in.skip_reason({"vllm"}, {"DEVPTR_VLLM_TREE": "/x/vllm"}) is None
    assert opt_in.skip_reason({"vllm"}, {"DEVPTR_NETWORK_TESTS": "1"}) is None
    assert opt_in.skip_reason({"vllm"}, {"DEVPTR_NETWORK_TESTS": "0"}) == opt_in.VLLM_REASON
    assert opt_in.skip_reason({"slow"}, {}) == opt_in.SLOW_REASON
    assert "DEVPTR_SLOW_TESTS=1" in opt_in.SLOW_REASON
    assert opt_in.skip_reason({"slow"}, {"DEVPTR_SLOW_TESTS": "1"}) is None
    assert opt_in.skip_reason({"gpu"}, {}) is None

