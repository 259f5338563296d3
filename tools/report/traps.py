"""The RFC's behaviour tables, executed on the installed torch/numpy: traps and uint64 ops.

Every cell is what the code did here and now: ``ok`` when it ran and the stored 64 bits are
the address's, else the real exception (type and first line) or the wrong result.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import torch

from devptr import DevicePtr, store
from devptr.demo.traps import HI, NEG, TRAPS

Result = torch.Tensor | npt.NDArray[Any] | np.generic | int | None
MAX_DETAIL: Final = 80
"""Error messages are cut to this many characters (first line only)."""


def error_cell(exc: BaseException) -> str:
    """``'ValueError: Overflow when unpacking long long'`` (first line, cut, no addresses)."""
    text = str(exc).strip()
    msg = text.splitlines()[0] if text else ""
    if len(msg) > MAX_DETAIL:
        msg = msg[: MAX_DETAIL - 3].rstrip() + "..."
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def first_bits(x: torch.Tensor | npt.NDArray[Any]) -> int:
    """The first element's 64 bits as an unsigned int."""
    arr = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x
    flat = np.ascontiguousarray(arr).reshape(-1)
    return int(flat[:1].view(np.uint64)[0])


def describe_result(out: Result, want: int = HI) -> str:
    """``ok`` when ``out`` holds ``want``'s bits; otherwise what it holds instead."""
    if isinstance(out, np.generic):
        if out.dtype.kind == "f":
            return f"silently {out.dtype} (low bits lost)"
        got = int(out) & ((1 << 64) - 1)
        return "ok" if got == want else f"wrong value {got:#x}"
    if isinstance(out, int):
        got = out & ((1 << 64) - 1)
        return "ok" if got == want else f"wrong value {got:#x}"
    if out is None:
        return "ok"
    if isinstance(out, np.ndarray) and out.dtype.kind not in "iu":
        return f"silently {out.dtype} (low bits lost)" if out.dtype.kind == "f" else f"dtype {out.dtype}"
    got = first_bits(out)
    return "ok" if got == want else f"wrong bits {got:#x}"


def probe(fn: Callable[[], Result], want: int = HI) -> str:
    """Run ``fn``; its cell: ``ok``, the error, or the wrong result."""
    try:
        out = fn()
    except _Reading as r:
        return str(r)
    except Exception as exc:  # the point is to show the real error
        return error_cell(exc)
    return describe_result(out, want)


# -- custom-op int argument ---------------------------------------------------------------
_OP_NS: Final = "devptr_report"


@functools.cache
def _echo_op() -> Callable[[torch.Tensor, int], torch.Tensor]:
    """A CPU custom op ``(Tensor x, int addr) -> Tensor`` returning ``[addr]`` as int64."""
    lib = torch.library.Library(_OP_NS, "FRAGMENT")  # type: ignore[no-untyped-call]
    lib.define("echo_addr(Tensor x, int addr) -> Tensor")  # type: ignore[no-untyped-call]

    def impl(x: torch.Tensor, addr: int) -> torch.Tensor:
        out = torch.empty(1, dtype=torch.int64)
        store(out, 0, DevicePtr(addr & ((1 << 64) - 1)))
        return out

    lib.impl("echo_addr", impl, "CPU")  # type: ignore[no-untyped-call]
    _KEEP.append(lib)
    op: Callable[[torch.Tensor, int], torch.Tensor] = getattr(torch.ops, _OP_NS).echo_addr
    return op


_KEEP: list[object] = []


def custom_op_int(value: int) -> torch.Tensor:
    """Pass ``value`` as a custom op's ``int`` argument (schema int = int64)."""
    return _echo_op()(torch.zeros(1), value)


# -- the trap table -----------------------------------------------------------------------
def _u() -> torch.Tensor:
    return torch.zeros(2, dtype=torch.uint64)


def _i() -> torch.Tensor:
    return torch.zeros(2, dtype=torch.int64)


def _np_set(
    arr: npt.NDArray[Any], value: object, keep: torch.Tensor | npt.NDArray[Any]
) -> torch.Tensor | npt.NDArray[Any]:
    arr[0] = value
    return keep


def _np_into(target: npt.NDArray[Any], src: npt.NDArray[Any]) -> npt.NDArray[Any]:
    target[:] = src
    return target


def _torch_u_numpy() -> torch.Tensor | npt.NDArray[Any]:
    u = _u()
    return _np_set(u.numpy(), HI, u)


def _torch_i_numpy_view() -> torch.Tensor | npt.NDArray[Any]:
    i = _i()
    return _np_set(i.numpy().view(np.uint64), HI, i)


def _torch_i_numpy() -> torch.Tensor | npt.NDArray[Any]:
    i = _i()
    return _np_set(i.numpy(), HI, i)


def _set_from_tensor() -> torch.Tensor:
    u = _u()
    u[0] = torch.tensor(HI, dtype=torch.uint64)
    return u


class _Reading(Exception):
    """Not an error: carries the cell for a read (which of the two values came back)."""


def _item(t: torch.Tensor) -> Result:
    got = t[0].item()
    if got == HI:
        raise _Reading("returns HI")
    if got == NEG:
        raise _Reading("returns HI - 2**64 (negative)")
    raise _Reading(f"returns {got!r}")


EXTRA_TRAPS: Final[list[tuple[str, Callable[[], Result]]]] = [
    ("uint64_tensor.fill_(HI)", lambda: _u().fill_(HI)),
    ("torch.full((n,), HI, dtype=torch.uint64)", lambda: torch.full((2,), HI, dtype=torch.uint64)),
    ("uint64_tensor[k] = torch.tensor(HI, dtype=torch.uint64)", _set_from_tensor),
    ("torch.tensor([HI - 2**64], dtype=torch.uint64)", lambda: torch.tensor([NEG], dtype=torch.uint64)),
    ("uint64_tensor.numpy()[k] = HI", _torch_u_numpy),
    ("int64_tensor.numpy().view(np.uint64)[k] = HI", _torch_i_numpy_view),
    ("int64_tensor.numpy()[k] = HI", _torch_i_numpy),
    (
        "torch.tensor([HI], dtype=torch.uint64).view(torch.int64)",
        lambda: torch.tensor([HI], dtype=torch.uint64).view(torch.int64),
    ),
    ("custom-op int argument = HI", lambda: custom_op_int(HI)),
    ("custom-op int argument = HI - 2**64", lambda: custom_op_int(NEG)),
    ("int64_tensor[k].item() of a stored address", lambda: _item(torch.tensor([NEG], dtype=torch.int64))),
    ("uint64_tensor[k].item() of a stored address", lambda: _item(torch.tensor([HI], dtype=torch.uint64))),
]
"""Spellings beyond the demo's :data:`devptr.demo.traps.TRAPS`: the writes that work everywhere,
the reads, and the custom-op ``int`` argument."""

NUMPY_PITFALLS: Final[list[tuple[str, Callable[[], Result]]]] = [
    ("np.array([2], dtype=np.int64) * np.uint64(HI)", lambda: np.array([2], dtype=np.int64) * np.uint64(HI)),
    ("np.uint64(HI) + (-1)", lambda: np.uint64(HI) + (-1)),
    ("np.uint64(HI) & np.int64(-8)", lambda: np.uint64(HI) & np.int64(-8)),
    ("np.array([HI, HI - 2**64]) (no dtype)", lambda: np.array([HI, NEG])),
    (
        "int64_array[:] = uint64_array",
        lambda: _np_into(np.zeros(1, dtype=np.int64), np.array([HI], dtype=np.uint64)),
    ),
    (
        "np.array([HI], dtype=np.uint64) + np.uint64(2**63)",
        lambda: np.array([HI], dtype=np.uint64) + np.uint64(2**63),
    ),
]
"""numpy 2 promotions and wraps that lose or corrupt addresses silently."""


def _wrap_cell(name: str, fn: Callable[[], Result]) -> str:
    if name == "np.array([HI], dtype=np.uint64) + np.uint64(2**63)":
        try:
            out = fn()
        except Exception as exc:
            return error_cell(exc)
        want = (HI + 2**63) % 2**64
        return "wraps silently (no error)" if describe_result(out, want) == "ok" else describe_result(out)
    if name == "int64_array[:] = uint64_array":
        cell = probe(fn)
        return "ok (bits kept, no check)" if cell == "ok" else cell
    if name == "np.array([2], dtype=np.int64) * np.uint64(HI)":
        try:
            arr = fn()
        except Exception as exc:
            return error_cell(exc)
        assert isinstance(arr, np.ndarray)
        return f"silently {arr.dtype}" if arr.dtype.kind == "f" else f"dtype {arr.dtype}"
    return probe(fn)


def trap_rows() -> list[tuple[tuple[str], str]]:
    """One row per spelling: (``spelling``,), cell."""
    rows: list[tuple[tuple[str], str]] = []
    for name, fn in [*TRAPS, *EXTRA_TRAPS]:
        rows.append(((f"`{name}`",), probe(fn)))
    return rows


def numpy_rows() -> list[tuple[tuple[str], str]]:
    """numpy pitfalls: (``expression``,), cell."""
    return [((f"`{name}`",), _wrap_cell(name, fn)) for name, fn in NUMPY_PITFALLS]


# -- uint64 as a torch dtype --------------------------------------------------------------
def _uops() -> list[tuple[str, Callable[[torch.Tensor], object]]]:
    idx = torch.tensor([0, 1])
    mask = torch.tensor([True, False, True, False])
    return [
        ("torch.arange(n, dtype=torch.uint64)", lambda u: torch.arange(4, dtype=torch.uint64)),
        ("u + u, u - u", lambda u: (u + u, u - u)),
        ("u // 2", lambda u: u // 2),
        ("u >> 3", lambda u: u >> 3),
        ("u < v, u > v", lambda u: (u < u, u > u)),
        ("u.max()", lambda u: u.max()),
        ("u.masked_fill(mask, 0)", lambda u: u.masked_fill(mask, 0)),
        ("u.index_copy_(0, idx, v)", lambda u: u.index_copy_(0, idx, u[:2].clone())),
        ("u.index_put_((idx,), v)", lambda u: u.index_put_((idx,), u[:2].clone())),
        ("u.index_select(0, idx)", lambda u: u.index_select(0, idx)),
        ("u.scatter_(0, idx, v)", lambda u: u.scatter_(0, idx, u[:2].clone())),
        ("u.flip(0)", lambda u: u.flip(0)),
        ("u.copy_(v), u.clone(), u[a:b]", lambda u: (u.clone().copy_(u), u.clone(), u[1:3])),
        ("u[idx], u[mask]", lambda u: (u[idx], u[mask])),
        ("u == v", lambda u: u == u),
        ("torch.cat / torch.stack", lambda u: (torch.cat([u, u]), torch.stack([u, u]))),
        ("torch.where(mask, u, v)", lambda u: torch.where(mask, u, u)),
        ("u.sort() (unsigned order)", _sort_check),
        ("u.tolist() (unsigned ints)", _tolist_check),
        ("u.view(torch.int64) + 8 (the add workaround)", _add_via_view),
    ]


def _sort_check(u: torch.Tensor) -> object:
    vals = u.sort().values.tolist()
    if vals != sorted(vals):
        raise AssertionError("wrong order (signed?)")
    return vals


def _tolist_check(u: torch.Tensor) -> object:
    if u.tolist()[0] != HI:
        raise AssertionError(f"wrong value {u.tolist()[0]:#x}")
    return None


def _add_via_view(u: torch.Tensor) -> object:
    out = (u.view(torch.int64) + 8).view(torch.uint64)
    if out.tolist()[0] != HI + 8:
        raise AssertionError("wrong bits")
    return out


def _short(exc: BaseException) -> str:
    if isinstance(exc, AssertionError):
        return f"wrong result: {exc}"
    return type(exc).__name__


def uint64_op_rows() -> list[tuple[tuple[str], str]]:
    """What a CPU ``torch.uint64`` tensor supports: (``op``,), ``ok`` or the exception type."""
    rows: list[tuple[tuple[str], str]] = []
    for name, fn in _uops():
        u = torch.tensor([HI, 1, HI + 16, 7], dtype=torch.uint64)
        try:
            fn(u)
            cell = "ok"
        except Exception as exc:
            cell = _short(exc)
        rows.append(((f"`{name}`",), cell))
    return rows


def provenance() -> str:
    """``torch 2.13.0+cpu, numpy 2.4.6, Python 3.11``."""
    py = ".".join(str(x) for x in sys.version_info[:2])
    return f"torch {torch.__version__}, numpy {np.__version__}, Python {py}"
