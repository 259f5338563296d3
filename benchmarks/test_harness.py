"""The benchmark timing harness: its statistics and machine description (no speed is
asserted; speeds live in benchmarks/results). Collected by the README's test command
(``testpaths`` in pyproject.toml); the tests under tests/ do not import benchmarks."""

from __future__ import annotations

import pytest
import torch

from benchmarks import _harness as H


def test_timing_statistics_on_known_samples() -> None:
    t = H.Timing((5.0, 1.0, 3.0, 2.0, 4.0), "host", 10)
    assert (t.median_ns, t.min_ns, t.max_ns) == (3.0, 1.0, 5.0)
    assert (t.p25_ns, t.p75_ns, t.iqr_ns) == (2.0, 4.0, 2.0)
    assert t.quantile_ns(0.1) == pytest.approx(1.4)
    assert t.format("ns", 1) == "3.0 ns (IQR 2.0-4.0, min 1.0, n=5)"
    assert t.summary()["number"] == 10
    with pytest.raises(ValueError, match="at least one sample"):
        H.Timing(())
    r = H.paired_ratios(H.Timing((2.0, 9.0, 4.0)), H.Timing((1.0, 3.0, 4.0)))
    assert r.samples_ns == (2.0, 3.0, 1.0) and r.median_ns == 2.0


def test_host_timing_counts_calls() -> None:
    calls: list[int] = []
    t = H.host(lambda: calls.append(1), number=4, repeat=3, warmup=2)
    assert len(calls) == 2 + 4 * 3
    assert len(t.samples_ns) == 3 and t.number == 4 and t.min_ns > 0
    order: list[str] = []
    both = H.host_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeat=2)
    assert order == ["a", "b", "a", "b", "a", "b"]  # warm-up, then alternating rounds
    assert set(both) == {"a", "b"}


def test_machine_description_names_the_software() -> None:
    m = H.machine()
    assert {"cpu", "cores", "load", "gpu", "python", "torch", "numpy"} <= set(m)
    assert m["torch"] == torch.__version__
    lines = H.header("python x.py").splitlines()
    assert lines[0] == "- command: `python x.py`"
    assert lines[1].startswith("- date: ") and lines[2].startswith("- machine: ")
