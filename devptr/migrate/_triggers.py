"""Text patterns that every site of a rule contains.

They let the engine skip whole files, and each codemod skip whole statements, without
walking syntax trees: walking a large module with libcst costs seconds, searching its text
microseconds. A rule may only rewrite or flag code that matches its pattern.
"""

from __future__ import annotations

import re
from typing import Final

DATA_PTR: Final = re.compile(r"data_ptr")
"""DP002, DP003: every address they handle comes from ``.data_ptr()``."""

DATA_PTR_OR_DEVICEPTR: Final = re.compile(r"data_ptr|DevicePtr")
"""DP001: ``.data_ptr()`` values, or already-migrated ``DevicePtr(...).signed`` values."""

TWOS_COMPLEMENT: Final = re.compile(
    r"(<<|\*\*)\s*6[34]\b|c_int64|c_longlong|0x(7fff|8000|1_?0000)[0-9a-f_]{12,}"
    r"|9_?223_?372_?036_?854_?775_?80[78]|18_?446_?744_?073_?709_?551_?61[56]",
    re.IGNORECASE,
)
"""DP004: the 2**63 / 2**64 constants of a two's-complement spelling, or ctypes."""

UINT64: Final = re.compile(r"uint64")
"""DP005: a pointer dtype branch names uint64 ..."""

XPU: Final = re.compile(r"xpu", re.IGNORECASE)
"""... and tests for XPU."""
