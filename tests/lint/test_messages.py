"""Every rule message states what really happens: execute each failing spelling on the
installed torch and numpy (CI runs this under torch 2.13 and 2.14) and compare with the
text the engine prints."""

from __future__ import annotations

import array
import ctypes
import re
from collections.abc import Callable

import numpy as np
import pytest
import torch

from devptr.lint.engine import analyze_source
from devptr.lint.engine.rules import _messages as sinks
from devptr.testing import TOP_ALIGNED

HIGH = TOP_ALIGNED  # 2**64 - 8: bit 63 set, like Intel XPU addresses
SIGNED = HIGH - 2**64
TORCH_214 = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 14)


def _quoted(message: str) -> str:
    """The error text a message quotes (``'ValueError: ...'``) without the type."""
    found = re.search(r"'(\w+): ([^']*)'", message)
    assert found is not None, message
    return found.group(2)


def _raises(fn: Callable[[], object], message: str) -> None:
    found = re.search(r"'(\w+): ", message)
    assert found is not None
    kind = {"ValueError": ValueError, "OverflowError": OverflowError,
            "RuntimeError": RuntimeError}[found.group(1)]
    with pytest.raises(kind) as info:
        fn()
    for part in _quoted(message).split(" ... "):
        assert part.strip() in str(info.value), (str(info.value), message)


def test_int64_tensor_setitem_raises() -> None:
    t = torch.zeros(2, dtype=torch.int64)
    _raises(lambda: t.__setitem__(0, HIGH), sinks.TORCH_SETITEM_I64)


def test_uint64_tensor_setitem_depends_on_torch_version() -> None:
    t = torch.zeros(2, dtype=torch.uint64)
    if TORCH_214:
        t[0] = HIGH  # "2.14 stores it"
        assert int(t.view(torch.int64)[0]) == SIGNED  # the bits of HIGH
        _raises(lambda: t.__setitem__(1, SIGNED), sinks.TORCH_NEG_U64)
    else:
        _raises(lambda: t.__setitem__(0, HIGH), sinks.TORCH_SETITEM_U64)
        t[1] = SIGNED  # the two's complement is what 2.13 accepts
        assert int(t.view(torch.int64)[1]) == SIGNED


def test_fill_and_full_raise() -> None:
    _raises(lambda: torch.zeros(2, dtype=torch.int64).fill_(HIGH), sinks.TORCH_FULL_I64)
    _raises(lambda: torch.full((1,), HIGH, dtype=torch.int64), sinks.TORCH_FULL_I64)


def test_table_constructors() -> None:
    _raises(lambda: torch.tensor([HIGH], dtype=torch.int64), sinks.TORCH_SETITEM_I64)
    _raises(lambda: torch.tensor([HIGH]), sinks.TORCH_SETITEM_I64)  # int64 inferred
    _raises(lambda: torch.tensor([SIGNED], dtype=torch.uint64), sinks.TORCH_NEG_U64)
    kept = torch.tensor([HIGH], dtype=torch.uint64)  # DP006: bits kept
    assert int(kept.view(torch.int64)[0]) == SIGNED
    _raises(lambda: np.array([HIGH], dtype=np.int64), sinks.NUMPY_I64)
    _raises(lambda: np.fromiter([HIGH], dtype=np.int64), sinks.NUMPY_I64)
    _raises(lambda: np.zeros(2, dtype=np.uint64).__setitem__(0, SIGNED), sinks.NUMPY_NEG_U64)
    _raises(lambda: array.array("q", [HIGH]), sinks.ARRAY_Q)
    assert array.array("Q", [HIGH])[0] == HIGH


@pytest.mark.parametrize("build", [
    lambda: np.array([HIGH, 4096]),
    lambda: np.stack([[HIGH], [4096]]),
    lambda: np.column_stack([[HIGH], [4096]]),
    lambda: np.concatenate([[HIGH], [4096]]),
], ids=["array", "stack", "column_stack", "concatenate"])
def test_numpy_without_dtype_loses_low_bits(build: Callable[[], np.ndarray]) -> None:
    assert "float64" in sinks.NUMPY_FLOAT
    table = build()
    assert table.dtype == np.float64
    assert int(table.ravel()[0]) != HIGH  # the low address bits are gone


def test_numpy_int64_arithmetic_raises_and_uint64_int64_mix_is_float() -> None:
    _raises(lambda: np.arange(4, dtype=np.int64) * 64 + HIGH, sinks.NUMPY_I64)
    mixed = np.arange(2, dtype=np.uint64) + np.arange(2, dtype=np.int64)
    assert mixed.dtype == np.float64


def test_torch_int64_arithmetic_wraps_to_the_right_bits() -> None:
    # DP007 (convention): no overflow, the int64 encoding's bits
    out = torch.arange(2, dtype=torch.int64) * 64 + HIGH
    assert out.tolist() == [SIGNED, SIGNED + 64]


def test_ctypes_arrays_keep_bits() -> None:
    assert list((ctypes.c_uint64 * 1)(HIGH)) == [HIGH]
    assert list((ctypes.c_int64 * 1)(HIGH)) == [SIGNED]


SPELLINGS = {
    "DP001": "t = torch.zeros(2, dtype=torch.int64)\nt[0] = x.data_ptr()\n",
    "DP002": "torch.tensor([x.data_ptr()], dtype=torch.int64)\n",
    "DP003": "np.arange(4, dtype=np.int64) * 64 + x.data_ptr()\n",
    "DP007": "torch.arange(4, dtype=torch.int64) * 64 + x.data_ptr()\n",
}


@pytest.mark.parametrize("code", sorted(SPELLINGS))
def test_engine_message_quotes_the_real_error(code: str) -> None:
    """The message the engine prints for each spelling is the one verified above."""
    src = "import numpy as np\nimport torch\n" + SPELLINGS[code]
    found = [f for f in analyze_source(src) if f.code == code]
    assert len(found) == 1, analyze_source(src)
    message = found[0].message
    run_globals = {"np": np, "torch": torch, "x": torch.empty(0)}
    body = SPELLINGS[code].replace("x.data_ptr()", str(HIGH))
    if code == "DP007":
        exec(body, run_globals)  # wraps silently, as the message says
        assert "wraps" in message
        return
    with pytest.raises((ValueError, OverflowError)) as info:
        exec(body, run_globals)
    assert _quoted(message).split(" ... ")[0].strip() in str(info.value)
