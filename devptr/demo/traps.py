"""The pointer-storing spellings engines use, executed on the installed torch/numpy.

Shared by ``devptr demo`` and the RFC's table generator: each trap runs for real and
reports what happened (the real exception, or whether the stored bits are right).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs
import numpy as np
import numpy.typing as npt
import torch

HI: Final = 0xFFFF81AB54E01000
"""An Intel XPU-like device address (bit 63 set)."""
NEG: Final = HI - (1 << 64)
"""Its int64 two's-complement value."""


@attrs.frozen
class Outcome:
    """What one spelling did: ``ok`` means it ran AND stored HI's exact bits."""

    spelling: str
    ok: bool
    detail: str


def _bits(x: torch.Tensor | npt.NDArray[Any]) -> int:
    arr = x.numpy() if isinstance(x, torch.Tensor) else x
    return int(np.ascontiguousarray(arr).reshape(-1).view(np.uint64)[0])


def _run(spelling: str, fn: Callable[[], torch.Tensor | npt.NDArray[Any] | np.generic]) -> Outcome:
    try:
        out = fn()
    except Exception as exc:  # the point is to show the real error
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return Outcome(spelling, False, f"{type(exc).__name__}: {msg}")
    if isinstance(out, np.generic):
        if out.dtype.kind == "f":
            lost = int(out) - (HI + 1)
            return Outcome(spelling, False, f"silently {out.dtype} = {float(out):.17g} (off by {lost})")
        return Outcome(spelling, int(out) == HI + 1, f"{out.dtype} {int(out):#x}")
    got = _bits(out)
    if got == HI:
        return Outcome(spelling, True, f"stored {got:#x}")
    return Outcome(spelling, False, f"WRONG bits {got:#x}")


def _u() -> torch.Tensor:
    return torch.zeros(2, dtype=torch.uint64)


def _i() -> torch.Tensor:
    return torch.zeros(2, dtype=torch.int64)


def _set(t: torch.Tensor, value: object) -> torch.Tensor:
    t[0] = value  # type: ignore[assignment]
    return t


def _set_np(a: npt.NDArray[Any], value: object) -> npt.NDArray[Any]:
    a[0] = value
    return a


def _index_put(value: int) -> torch.Tensor:
    u = _u()
    u[torch.tensor([0])] = value
    return u


TRAPS: Final[list[tuple[str, Callable[[], torch.Tensor | npt.NDArray[Any] | np.generic]]]] = [
    ("torch.tensor([HI], dtype=torch.int64)", lambda: torch.tensor([HI], dtype=torch.int64)),
    ("int64_tensor[k] = HI", lambda: _set(_i(), HI)),
    ("int64_tensor[k] = HI - 2**64", lambda: _set(_i(), NEG)),
    ("uint64_tensor[k] = HI", lambda: _set(_u(), HI)),
    ("uint64_tensor[k] = HI - 2**64", lambda: _set(_u(), NEG)),
    ("uint64_tensor[k] = np.uint64(HI)", lambda: _set(_u(), np.uint64(HI))),
    ("uint64_tensor[idx_tensor] = HI", lambda: _index_put(HI)),
    ("torch.tensor([HI], dtype=torch.uint64)", lambda: torch.tensor([HI], dtype=torch.uint64)),
    ("np.zeros(n, np.int64)[k] = HI", lambda: _set_np(np.zeros(2, dtype=np.int64), HI)),
    ("np.array([HI], dtype=np.int64)", lambda: np.array([HI], dtype=np.int64)),
    ("np.uint64(HI) + np.int64(1)", lambda: np.uint64(HI) + np.int64(1)),
]


def run_traps() -> list[Outcome]:
    """Execute every spelling in :data:`TRAPS` on the installed torch and numpy."""
    return [_run(s, f) for s, f in TRAPS]
