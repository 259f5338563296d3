"""What torch 2.13/2.14 and numpy 2 do with an address >= 2**63: the clauses several units'
messages (and the mypy plugin's) quote. ``tests/lint/test_messages.py`` executes each
spelling on the installed versions."""

from __future__ import annotations

from typing import Final

TORCH_SETITEM_I64: Final = "torch raises 'ValueError: Overflow when unpacking long long'"
TORCH_SETITEM_U64: Final = (
    "torch 2.13 raises 'ValueError: Overflow when unpacking long long' (2.14 stores it)"
)
TORCH_NEG_U64: Final = "torch 2.14 raises 'OverflowError: can't convert negative int to unsigned'"
TORCH_FULL_I64: Final = "torch raises 'RuntimeError: value cannot be converted to type int64_t'"
NUMPY_I64: Final = "numpy raises 'OverflowError: Python int too large to convert to C long'"
NUMPY_NEG_U64: Final = "numpy raises 'OverflowError: Python integer ... out of bounds for uint64'"
NUMPY_FLOAT: Final = "numpy builds float64 when an address >= 2**63 meets other values: low bits lost"
ARRAY_Q: Final = "array('q') raises 'OverflowError: int too big to convert'"
BITS_KEPT: Final = "the bits are kept, but nothing checks the values"
