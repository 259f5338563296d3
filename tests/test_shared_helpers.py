"""The shared test and benchmark helpers: support.gpu, devptr.testing's spawn and FakeState,
and the benchmark timing harness (its statistics; no speed is asserted)."""

from __future__ import annotations

import pytest
import torch
from support.gpu import MARKERS, skip_reason

from benchmarks._harness import Timing, header, host, host_interleaved, machine, paired_ratios
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
    assert set(MARKERS) <= declared


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


def test_spawn_runs_a_gloo_group_and_returns_results_in_rank_order() -> None:
    got = spawn(_sum_ranks, 3, backend="gloo", args=(10,), timeout_s=120)
    assert got == [[r, 3, 30, 3] for r in range(3)]


def test_spawn_reports_a_rank_that_raised() -> None:
    with pytest.raises(SpawnError, match=r"(?s)rank 1 of 2 raised:.*rank one fails on purpose"):
        spawn(_fail_on_rank_one, 2, timeout_s=120)


def test_timing_statistics_on_known_samples() -> None:
    t = Timing((5.0, 1.0, 3.0, 2.0, 4.0), "host", 10)
    assert (t.median_ns, t.min_ns, t.max_ns) == (3.0, 1.0, 5.0)
    assert (t.p25_ns, t.p75_ns, t.iqr_ns) == (2.0, 4.0, 2.0)
    assert t.quantile_ns(0.1) == pytest.approx(1.4)
    assert t.format("ns", 1) == "3.0 ns (IQR 2.0-4.0, min 1.0, n=5)"
    assert t.summary()["number"] == 10
    with pytest.raises(ValueError, match="at least one sample"):
        Timing(())
    r = paired_ratios(Timing((2.0, 9.0, 4.0)), Timing((1.0, 3.0, 4.0)))
    assert r.samples_ns == (2.0, 3.0, 1.0) and r.median_ns == 2.0


def test_host_timing_counts_calls() -> None:
    calls: list[int] = []
    t = host(lambda: calls.append(1), number=4, repeat=3, warmup=2)
    assert len(calls) == 2 + 4 * 3
    assert len(t.samples_ns) == 3 and t.number == 4 and t.min_ns > 0
    order: list[str] = []
    both = host_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeat=2)
    assert order == ["a", "b", "a", "b", "a", "b"]  # warm-up, then alternating rounds
    assert set(both) == {"a", "b"}


def test_machine_description_names_the_software() -> None:
    m = machine()
    assert {"cpu", "cores", "load", "gpu", "python", "torch", "numpy"} <= set(m)
    assert m["torch"] == torch.__version__
    lines = header("python x.py").splitlines()
    assert lines[0] == "- command: `python x.py`"
    assert lines[1].startswith("- date: ") and lines[2].startswith("- machine: ")
