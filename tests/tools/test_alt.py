"""The alternatives are scored the same way: same steps, same compare kernel, fixture-only marked.

``tools.report.alt`` runs each option's rows on the installed torch (the Triton rows in the
interpreter on a CPU). These tests check the fairness rules the RFC states, and that a score
moves when an option's behaviour does.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
import torch

from tools.report import alt
from tools.report.alt import ALTERNATIVES, FIXTURE_ONLY, SCORED_STEPS, alternative_rows, summary_rows


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _summary(title_prefix: str) -> str:
    return next(cell for (title,), cell in summary_rows() if title.startswith(title_prefix))


@pytest.mark.parametrize("option", ALTERNATIVES, ids=lambda a: a.key)
def test_every_option_runs_every_step_and_no_other(option: alt.Alternative) -> None:
    steps = [r.step for r in option.steps()]
    assert set(steps) == set(SCORED_STEPS)
    doubled = {s for s in steps if steps.count(s) > 1}
    # only C spells two platform branches; every other option has one row per step
    assert not doubled or option.key == "per-platform", doubled


@pytest.mark.parametrize("option", ALTERNATIVES, ids=lambda a: a.key)
def test_every_compare_row_uses_the_r6_kernel(
    option: alt.Alternative, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = alt.triton_lt

    def spy(table: torch.Tensor, *, bitcast: bool = False) -> str:
        seen.append(bitcast)
        return real(table, bitcast=bitcast)

    monkeypatch.setattr(alt, "triton_lt", spy)
    for row in option.steps():
        if row.step == alt.COMPARE_STEP:
            row.run()
    assert seen and all(seen), f"{option.key}: compare rows without the bitcast: {seen}"


def test_a_cuda_branch_failure_that_needs_a_high_address_is_fixture_only() -> None:
    cells = alternative_rows(next(a for a in ALTERNATIVES if a.key == "per-platform"))
    cuda_update = [c for (step, code), c in cells if step == "update one entry" and "CUDA" in code]
    assert cuda_update and cuda_update[0].startswith(FIXTURE_ONLY), cuda_update
    assert "update one entry" not in _summary("C.").split("; fails:")[-1].split(";")[0]
    assert f"{FIXTURE_ONLY}: update one entry" in _summary("C.")


def test_f_without_its_range_check_fails_the_overflow_step(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _summary("F.").startswith(f"{len(SCORED_STEPS)} of {len(SCORED_STEPS)}")

    def unchecked(base: int, idx: list[int], stride: int) -> npt.NDArray[np.uint64]:
        return np.uint64(base) + np.asarray(idx, dtype=np.uint64) * np.uint64(stride)

    monkeypatch.setattr(alt, "_h_strided", unchecked)
    assert f"fails: {alt.OVERFLOW_STEP}" in _summary("F.")


def test_e_is_the_vendored_module_not_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    """Breaking the vendored module's ``store`` breaks E's score; devptr's own is not used."""
    from devptr.vendor import ptrtable

    def broken(container: object, index: object, ptrs: object) -> None:
        raise TypeError("broken for the test")

    monkeypatch.setattr(ptrtable, "store", broken)
    assert not _summary("E.").startswith(f"{len(SCORED_STEPS)} of")
